"""Signed runs (issue 5): DSSE/in-toto manifest, PAdES-signed PDF, `audit verify`, keys, provenance.

One signed run is made per test session (precomputed scores, so no model is loaded); tests that
tamper with it work on copies.
"""

from __future__ import annotations

import base64
import json
import os
import random
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from compiler.hashing import canonical_json, file_digest
from conftest import SIGNER, TINY_SCORES, TINY_SPEC, run_cli
from runtime.provenance import keys as K
from runtime.provenance.keygen import keygen
from runtime.provenance.sign import ENVELOPE, MANIFEST, PAYLOAD_TYPE, PREDICATE_TYPE, pae
from runtime.provenance.verify import resolve_trust, verify_run



def _cli_env(**extra: str) -> dict[str, str]:
    return {**os.environ, **extra}


def _trust(key_dir: Path):
    return resolve_trust(pubkey=key_dir / K.MANIFEST_PUB, cert=key_dir / K.SIGNER_CRT, key_dir=None, run_dir=None)


# ------------------------------------------------------------------------------------------ DSSE

#: DSSE protocol.md "Test Vectors" (secure-systems-lab/dsse v1.0.2): ECDSA P-256 key and the
#: signature another implementation made over the PAE of ("http://example.com/HelloWorld", "hello world").
SPEC_X = 46950820868899156662930047687818585632848591499744589407958293238635476079160
SPEC_Y = 5640078356564379163099075877009565129882514886557779369047442380624545832820
SPEC_D = 97358161215184420915383655311931858321456579547487070936769975997791359926199
SPEC_SIG = "A3JqsQGtVsJ2O2xqrI5IcnXip5GToJ3F+FnZ+O88SjtR6rDAajabZKciJTfUiHqJPcIAriEGAHTVeCUjW2JIZA=="


def test_pae_matches_the_dsse_spec_vector():
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature

    got = pae("http://example.com/HelloWorld", b"hello world")
    assert got == b"DSSEv1 29 http://example.com/HelloWorld 11 hello world"
    # the spec's signature, made by the reference implementation, verifies over our PAE bytes
    pub = ec.EllipticCurvePublicNumbers(SPEC_X, SPEC_Y, ec.SECP256R1()).public_key()
    assert ec.derive_private_key(SPEC_D, ec.SECP256R1()).public_key().public_numbers() == pub.public_numbers()
    raw = base64.b64decode(SPEC_SIG)
    sig = encode_dss_signature(int.from_bytes(raw[:32], "big"), int.from_bytes(raw[32:], "big"))
    pub.verify(sig, got, ec.ECDSA(hashes.SHA256()))
    # lengths count UTF-8 bytes, not characters
    assert pae("t\u00e9", "\u00e9".encode()) == b"DSSEv1 3 t\xc3\xa9 2 \xc3\xa9"


# ----------------------------------------------------------------------------------- fresh run

def test_verify_passes_on_a_fresh_run(signed_run, key_dir):
    proc = run_cli("verify", str(signed_run), "--key-dir", str(key_dir), cwd=signed_run.parent)
    assert proc.returncode == 0, proc.stderr
    assert "DSSE signature: valid" in proc.stdout and "PDF signature (report.pdf): intact, valid, trusted" in proc.stdout
    assert f"verified: {signed_run}" in proc.stdout
    assert "not pinned" not in proc.stderr


def test_manifest_lists_every_file_and_the_provenance(signed_run, key_dir):
    files = sorted(p.name for p in signed_run.iterdir())
    assert files == sorted(["headline.csv", "lock.json", "manifest.dsse.json", "manifest.json", "manifest.pub", "metrics.csv",
                            "metrics_by_job.csv", "paired.csv", "report.html", "report.pdf", "risk.csv", "run.json", "signer.crt",
                            "summary.json"])
    env = json.loads((signed_run / ENVELOPE).read_text())
    assert env["payloadType"] == PAYLOAD_TYPE == "application/vnd.in-toto+json"
    payload = base64.b64decode(env["payload"])
    stmt = json.loads(payload)
    assert canonical_json(stmt) == payload
    assert stmt["_type"] == "https://in-toto.io/Statement/v1" and stmt["predicateType"] == PREDICATE_TYPE
    assert {s["name"]: s["digest"]["sha256"] for s in stmt["subject"]} == {
        f: file_digest(signed_run / f)["digest"] for f in files if f not in (MANIFEST, ENVELOPE)}
    manifest = json.loads((signed_run / MANIFEST).read_text())
    assert manifest == stmt["predicate"]
    lock = json.loads((signed_run.parents[2] / "spec.lock.json").read_text())
    assert manifest["lock"]["spec_digest"] == lock["spec_digest"] and manifest["seed"] == 7
    assert manifest["lock"]["amendments"] == []
    assert manifest["models"] == lock["models"] and manifest["versions"]["numpy"]
    assert manifest["spec_git"] is None  # a temporary folder is not in a git repository
    assert manifest["generated_at"].endswith("Z")
    keys = K.load_keys(key_dir)
    assert manifest["signing"]["manifest"]["keyid"] == keys.keyid == env["signatures"][0]["keyid"]
    assert manifest["signing"]["pdf"]["signer"] == SIGNER
    run = json.loads((signed_run / "run.json").read_text())
    assert run["status"] == "done" and run["signed"] is True
    # the public material in the run folder is the key directory's
    assert (signed_run / "manifest.pub").read_bytes() == (key_dir / "manifest.pub").read_bytes()
    assert (signed_run / "signer.crt").read_bytes() == (key_dir / "signer.crt").read_bytes()


def test_the_first_page_names_the_signer_and_says_what_is_missing(signed_run):
    """Issue 16: the first page says who signed at sealing; a certificate without a role is called out,
    and an offline (B-B) signature gives the certificate's expiry as the end of its verifiability."""
    import datetime as dt

    html = (signed_run / "report.html").read_text()
    hero = re.search(r'<dd class="hero-signer" id="hero-signer">(.*?)</dd>', html, re.S).group(1)
    text = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", "", hero))
    assert text.startswith("Jane Auditor (Acme Audits): identity asserted by the signer, not certified (the certificate "
                           "is self-signed) (no role stated in the certificate"), text
    cert = K.load_certs(signed_run / "signer.crt")[0]
    assert f"verifiable until the certificate expires on {cert.not_valid_after_utc:%Y-%m-%d}" in text, text
    assert cert.not_valid_after_utc > dt.datetime.now(dt.timezone.utc)
    proc = run_cli("verify", str(signed_run), "--pubkey", str(signed_run / "manifest.pub"), cwd=signed_run)
    assert "signer 1: Jane Auditor (Acme Audits) (role not stated); signed " in proc.stdout, proc.stdout
    assert "Run started (UTC)" in html and "Spec locked (UTC, compiling machine's clock)" in html


def test_no_private_key_bytes_in_the_run_folder(signed_run, key_dir):
    from cryptography.hazmat.primitives import serialization as ser

    keys = K.load_keys(key_dir)
    secrets = [
        (key_dir / "manifest.key").read_bytes(), (key_dir / "signer.key").read_bytes(),
        keys.manifest_key.private_bytes(ser.Encoding.Raw, ser.PrivateFormat.Raw, ser.NoEncryption()),
        keys.manifest_key.private_bytes(ser.Encoding.DER, ser.PrivateFormat.PKCS8, ser.NoEncryption()),
        keys.pdf_key.private_bytes(ser.Encoding.DER, ser.PrivateFormat.PKCS8, ser.NoEncryption()),
        keys.pdf_key.private_numbers().d.to_bytes(384, "big").lstrip(b"\0"),
        keys.pdf_key.private_numbers().p.to_bytes(192, "big").lstrip(b"\0"),
    ]
    secrets += [base64.b64encode(s) for s in secrets[2:]] + [s.hex().encode() for s in secrets[2:]]
    for path in signed_run.rglob("*"):
        data = path.read_bytes()
        for s in secrets:
            assert s not in data, path.name
        assert b"PRIVATE KEY" not in data, path.name
    assert oct((key_dir / "manifest.key").stat().st_mode & 0o777) == "0o600"
    assert oct((key_dir / "signer.key").stat().st_mode & 0o777) == "0o600"


def test_pyhanko_validation_of_the_pdf_is_intact_and_valid(signed_run, key_dir):
    from pyhanko.pdf_utils.reader import PdfFileReader
    from pyhanko.sign.validation import validate_pdf_signature
    from pyhanko.sign.validation.status import SignatureCoverageLevel
    from pyhanko.keys import load_cert_from_pemder
    from pyhanko_certvalidator import ValidationContext

    root = load_cert_from_pemder(str(key_dir / "signer.crt"))
    with open(signed_run / "report.pdf", "rb") as fh:
        reader = PdfFileReader(fh)
        (sig,) = reader.embedded_signatures
        status = validate_pdf_signature(sig, ValidationContext(trust_roots=[root], allow_fetching=False))
        assert status.intact and status.valid and status.trusted and status.bottom_line
        assert status.coverage == SignatureCoverageLevel.ENTIRE_FILE
        assert sig.sig_object["/SubFilter"] == "/ETSI.CAdES.detached"  # PAdES
        assert status.signing_cert.subject.native["common_name"] == SIGNER
        # visible: a widget with a real rectangle on the last page, whose appearance names signer and time
        field = sig.sig_field
        x1, y1, x2, y2 = (float(v) for v in field["/Rect"])
        assert x2 - x1 > 200 and y2 - y1 > 60
        n_pages = int(reader.root["/Pages"]["/Count"])
        pages = [p.idnum for p in __import__("runtime.provenance.sign", fromlist=["_page_refs"])._page_refs(
            reader.root.raw_get("/Pages"))]
        assert pages.index(field.raw_get("/P").idnum) == n_pages - 1
        appearance = re.sub(rb"\\([0-7]{3})", lambda m: bytes([int(m.group(1), 8)]), field["/AP"]["/N"].data)
        assert f"({SIGNER}) Tj".encode() in appearance and b"(Digitally signed (PAdES B-B) by) Tj" in appearance and b"signer's clock" in appearance
        assert re.search(rb"\(Time: 20\d\d-\d\d-\d\d \d\d:\d\d:\d\d", appearance)
        info = reader.trailer["/Info"]
        lock = json.loads((signed_run.parents[2] / "spec.lock.json").read_text())
        digest = lock["spec_digest"]["digest"]
        assert f"spec-sha256:{digest}" in str(info["/Keywords"]) and "seed:7" in str(info["/Keywords"])
        assert digest in str(info["/Subject"])
        assert f"manifest-ed25519:{K.load_keys(key_dir).keyid}" in str(info["/Keywords"])
    # the footer of every page carries the digest and the seed
    text = subprocess.run(["pdftotext", "-layout", str(signed_run / "report.pdf"), "-"], capture_output=True,
                          text=True, check=True).stdout
    pages_text = text.split("\f")[:-1]
    assert len(pages_text) == n_pages
    assert all(f"{digest} · seed 7" in p for p in pages_text)
    # page 1 does not present a self-signed certificate's name as certified
    page1 = " ".join(pages_text[0].split())
    assert f"{SIGNER} (Acme Audits): identity asserted by the signer, not certified (the certificate is self" in page1, page1


def test_the_report_names_the_key_that_signed_the_lock_and_says_it_is_not_the_manifests(key_dir, tmp_path):
    """A lock signed with another key directory than the run's: the report gives both key ids."""
    other = tmp_path / "other-keys"
    keygen(other, signer="Someone Else")
    work = tmp_path / "work"
    work.mkdir()
    (work / "spec.yaml").write_text(TINY_SPEC)
    (work / "scores.csv").write_text(TINY_SCORES)
    assert run_cli("compile", "spec.yaml", "--key-dir", str(other), cwd=work).returncode == 0
    proc = run_cli("execute", "spec.yaml", "--quiet", "--key-dir", str(key_dir), cwd=work)
    assert proc.returncode == 0, proc.stderr
    run_dir = next((work / "reports" / "tiny-audit").iterdir())
    html = " ".join((run_dir / "report.html").read_text().split())
    lock_kid, manifest_kid = K.load_keys(other).keyid, K.load_keys(key_dir).keyid
    assert f"The lock is signed (Ed25519 key id <code class=\"wrap small\">{lock_kid}</code>, Someone Else)" in html, html
    assert ("<strong class=\"fail-text\">the key is not the one that signs this run's manifest</strong> (Ed25519 key id "
            f"<code class=\"wrap small\">{manifest_kid}</code>): another key signed the pre-registration.") in html
    assert "the key is the one that signs this run's manifest" not in html
    proc = run_cli("verify", str(run_dir), "--pubkey", str(key_dir / K.MANIFEST_PUB), cwd=work)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"lock: signed by Ed25519 key {lock_kid[:16]}... (not the run's manifest key)" in proc.stdout


# ---------------------------------------------------------------------------------- tampering

def _flip(path: Path, pos: int, rng: random.Random) -> None:
    data = bytearray(path.read_bytes())
    data[pos] ^= rng.randrange(1, 256)
    path.write_bytes(bytes(data))


def test_flipping_any_byte_of_any_file_fails_naming_that_file(signed_run, key_dir, tmp_path):
    """Seeded loop: every file of the run folder (the manifest and envelope included), its first and
    last byte and random positions; each case on a fresh copy of the folder."""
    rng = random.Random(20261129)
    trust = _trust(key_dir)
    names = sorted(p.name for p in signed_run.iterdir())
    cases = 0
    for name in names:
        size = (signed_run / name).stat().st_size
        for pos in sorted({0, size - 1, *(rng.randrange(size) for _ in range(24))}):
            copy = tmp_path / f"{name}-{pos}"
            shutil.copytree(signed_run, copy)
            _flip(copy / name, pos, rng)
            report = verify_run(copy, trust=trust)
            assert not report.ok, (name, pos)
            assert name in {f.file for f in report.failures}, (name, pos, [str(f) for f in report.failures])
            shutil.rmtree(copy)
            cases += 1
    assert cases >= 20 * len(names)


def test_independent_verifiers_pass_the_fresh_run_and_fail_every_tampered_copy(signed_run, key_dir, tmp_path):
    """Issue 16: securesystemslib's DSSE with hashlib (tests/independent.py, none of our code) passes the
    fresh run and fails each case of the tampering loop above (same seed, same cases); poppler's pdfsig
    trusts the fresh report.pdf and fails every copy whose report.pdf changed inside the signature's byte
    range (a byte of the /Contents gap is covered by the manifest, not by the PDF signature)."""
    from independent import dsse_problems, nss_db, pdfsig_trusts_all

    pub = key_dir / K.MANIFEST_PUB
    db = nss_db(tmp_path, key_dir / K.SIGNER_CRT, trust="P,P,P")
    assert dsse_problems(signed_run, pub) == []
    assert pdfsig_trusts_all(signed_run / "report.pdf", db)
    (byte_range,) = re.findall(rb"/ByteRange\s*\[\s*(\d+) (\d+) (\d+) (\d+)\s*\]", (signed_run / "report.pdf").read_bytes())
    a, b, c, d = map(int, byte_range)
    rng = random.Random(20261129)
    pdf_cases = 0
    for name in sorted(p.name for p in signed_run.iterdir()):
        size = (signed_run / name).stat().st_size
        for pos in sorted({0, size - 1, *(rng.randrange(size) for _ in range(24))}):
            copy = tmp_path / f"{name}-{pos}"
            shutil.copytree(signed_run, copy)
            _flip(copy / name, pos, rng)
            assert dsse_problems(copy, pub), (name, pos)
            if name == "report.pdf" and (a <= pos < a + b or c <= pos < c + d):
                assert not pdfsig_trusts_all(copy / name, db), pos
                pdf_cases += 1
            shutil.rmtree(copy)
    assert pdf_cases >= 20


def test_verify_cli_exit_6_names_each_failing_file(signed_run, key_dir, tmp_path):
    copy = tmp_path / "run"
    shutil.copytree(signed_run, copy)
    with open(copy / "metrics.csv", "a") as fh:
        fh.write("score_delta,x\n")
    (copy / "notes.txt").write_text("added later")
    (copy / "risk.csv").unlink()
    proc = run_cli("verify", str(copy), "--key-dir", str(key_dir), cwd=tmp_path)
    assert proc.returncode == 6
    assert "Traceback" not in proc.stderr
    assert "FAIL metrics.csv: sha256" in proc.stderr and "(modified after signing)" in proc.stderr
    assert "FAIL notes.txt: not in the signed manifest (added after signing)" in proc.stderr
    assert "FAIL risk.csv: missing (listed in the signed manifest)" in proc.stderr
    assert "3 problem(s)" in proc.stderr


def test_verify_works_on_a_copy_with_only_the_public_key_and_certificate(signed_run, tmp_path):
    """Another machine: no key directory, only manifest.pub and signer.crt handed over."""
    copy = tmp_path / "elsewhere" / "run"
    shutil.copytree(signed_run, copy)
    given = tmp_path / "given"
    given.mkdir()
    shutil.copy(signed_run / "manifest.pub", given / "manifest.pub")
    shutil.copy(signed_run / "signer.crt", given / "signer.crt")
    env = _cli_env(AUDIT_KEY_DIR=str(tmp_path / "no-keys-here"))
    proc = subprocess.run([os.sys.executable, "-c", "from runtime.cli import main; main()", "verify", str(copy),
                           "--pubkey", str(given / "manifest.pub"), "--cert", str(given / "signer.crt")],
                          cwd=tmp_path, env=env, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert "not pinned" not in proc.stderr
    # either one is enough: the manifest signs signer.crt's hash; the signed PDF names the manifest key
    for given_one in (["--pubkey", str(given / "manifest.pub")], ["--cert", str(given / "signer.crt")]):
        proc = subprocess.run([os.sys.executable, "-c", "from runtime.cli import main; main()", "verify", str(copy),
                               *given_one], cwd=tmp_path, env=env, capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr
        assert "not pinned" not in proc.stderr, given_one
        assert ("authenticated by the pinned manifest signature" in proc.stdout if given_one[0] == "--pubkey"
                else "the key named in the signed report.pdf" in proc.stdout)
    # a named key directory that holds no key pins nothing: a failure, not a quiet "not pinned" (issue 41)
    proc = subprocess.run([os.sys.executable, "-c", "from runtime.cli import main; main()", "verify", str(copy)],
                          cwd=tmp_path, env=env, capture_output=True, text=True)
    assert proc.returncode == 6 and "(named by $AUDIT_KEY_DIR) is not a folder" in proc.stderr, proc.stderr
    # without any key directory, the folder's own copies are used and the output says it is not pinned
    env = {k: v for k, v in env.items() if k != "AUDIT_KEY_DIR"} | {"XDG_CONFIG_HOME": str(tmp_path / "no-config")}
    proc = subprocess.run([os.sys.executable, "-c", "from runtime.cli import main; main()", "verify", str(copy)],
                          cwd=tmp_path, env=env, capture_output=True, text=True)
    assert proc.returncode == 0 and "signer not pinned" in proc.stderr
    # the same copies named explicitly (the command a reader may copy from the report) pin nothing either
    proc = subprocess.run([os.sys.executable, "-c", "from runtime.cli import main; main()", "verify", str(copy),
                           "--pubkey", str(copy / "manifest.pub"), "--cert", str(copy / "signer.crt")],
                          cwd=tmp_path, env=env, capture_output=True, text=True)
    assert proc.returncode == 0 and "signer not pinned" in proc.stderr, proc.stderr
    assert "(inside the run folder)" in proc.stdout


def test_verify_with_another_signers_key_fails(signed_run, tmp_path):
    other = tmp_path / "other"
    keygen(other, signer="Mallory")
    proc = run_cli("verify", str(signed_run), "--key-dir", str(other), cwd=tmp_path)
    assert proc.returncode == 6
    assert "FAIL manifest.dsse.json: the signature does not verify with the Ed25519 key" in proc.stderr
    assert "FAIL report.pdf: signature 'AuditSignature': signer certificate not trusted" in proc.stderr


def test_resigned_folder_with_a_substituted_key_fails_against_the_pinned_key(signed_run, key_dir, tmp_path):
    """An attacker edits metrics.csv, re-signs with their own key and ships their manifest.pub."""
    from runtime.provenance.sign import build_manifest, write_seal

    copy = tmp_path / "run"
    shutil.copytree(signed_run, copy)
    mallory = keygen(tmp_path / "mallory", signer=SIGNER)
    (copy / "metrics.csv").write_text("forged\n")
    K.copy_public(mallory, copy)
    manifest = json.loads((copy / MANIFEST).read_text())
    run = json.loads((copy / "run.json").read_text())
    lock = {"spec_digest": manifest["lock"]["spec_digest"], "plan_digest": manifest["lock"]["plan_digest"],
            "created_at": manifest["lock"]["created_at"]}
    write_seal(copy, build_manifest(copy, run=run, lock=lock, resolved=manifest["resolved_spec"], git=None,
                                    signing=None), mallory)
    assert verify_run(copy, trust=resolve_trust(pubkey=None, cert=None, key_dir=tmp_path / "none",
                                                run_dir=copy)).failures  # the old PDF signature is Jane's
    report = verify_run(copy, trust=_trust(key_dir))
    assert {f.file for f in report.failures} >= {"manifest.dsse.json"}
    # holding only Jane's certificate is enough to catch it: her signed PDF names her manifest key
    only_cert = resolve_trust(pubkey=None, cert=key_dir / "signer.crt", key_dir=tmp_path / "none", run_dir=copy)
    report = verify_run(copy, trust=only_cert)
    assert any(f.file == "manifest.pub" and "the signed report.pdf names manifest key" in f.reason
               for f in report.failures), [str(f) for f in report.failures]


def test_verify_a_lone_pdf_and_appended_bytes(signed_run, key_dir, tmp_path, monkeypatch):
    pdf = tmp_path / "report.pdf"
    shutil.copy(signed_run / "report.pdf", pdf)
    proc = run_cli("verify", str(pdf), "--cert", str(key_dir / "signer.crt"), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "PDF metadata: spec sha256" in proc.stdout and "seed 7" in proc.stdout
    assert "not pinned" not in proc.stderr
    proc = run_cli("verify", str(pdf), "--key-dir", str(tmp_path / "none"), cwd=tmp_path)
    assert proc.returncode == 6 and "(named by --key-dir) is not a folder" in proc.stderr  # issue 41
    monkeypatch.delenv("AUDIT_KEY_DIR", raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "no-config"))  # no default key directory
    proc = run_cli("verify", str(pdf), cwd=tmp_path)
    assert proc.returncode == 0 and "signer not pinned: checked against the certificate embedded in the PDF" in proc.stderr
    with open(pdf, "ab") as fh:
        fh.write(b"\n% appended\n")
    proc = run_cli("verify", str(pdf), "--cert", str(key_dir / "signer.crt"), cwd=tmp_path)
    assert proc.returncode == 6, proc.stdout
    assert "not the entire file" in proc.stderr


def test_verify_spec_option(signed_run, key_dir, tmp_path):
    spec_dir = signed_run.parents[2]
    proc = run_cli("verify", str(signed_run), "--key-dir", str(key_dir), "--spec", str(spec_dir / "spec.yaml"),
                   cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "matches the run's locked digest" in proc.stdout
    other = tmp_path / "edited"
    other.mkdir()
    (other / "spec.yaml").write_text(TINY_SPEC.replace("{pass: 0.03, investigate: 0.05}", "{pass: 0.04, investigate: 0.05}"))
    (other / "scores.csv").write_text(TINY_SCORES)
    proc = run_cli("verify", str(signed_run), "--key-dir", str(key_dir), "--spec", str(other / "spec.yaml"),
                   cwd=tmp_path)
    assert proc.returncode == 6
    assert "the run was locked at" in proc.stderr
    assert "thresholds.research.score_delta.pass: run 0.03, spec 0.04" in proc.stderr
    proc = run_cli("verify", str(signed_run / "report.pdf"), "--key-dir", str(key_dir), "--spec",
                   str(other / "spec.yaml"), cwd=tmp_path)
    assert proc.returncode == 6 and "the run was locked at" in proc.stderr


# -------------------------------------------------------------------------------------- unsigned

def test_execute_without_keys_writes_an_unsigned_run_and_says_so(tmp_path, write_spec):
    """Issue 37 §3: a run sealed without keys exits 8 (sealed but unsigned) unless --unsigned says it is
    meant; summary.json records the same code; --unsigned with --key-dir or --tsa is a usage error."""
    write_spec(TINY_SPEC, **{"scores.csv": TINY_SCORES})
    env = _cli_env(XDG_CONFIG_HOME=str(tmp_path / "config"))  # an empty default key directory
    env.pop("AUDIT_KEY_DIR", None)
    cli = [os.sys.executable, "-c", "from runtime.cli import main; main()"]
    assert subprocess.run([*cli, "compile", "spec.yaml"], cwd=tmp_path, env=env).returncode == 0
    # a key directory named on purpose but empty is an error, not an unsigned run
    for extra, named in ((["--key-dir", "nokeys"], "--key-dir"), ([], "$AUDIT_KEY_DIR")):
        e = env if extra else {**env, "AUDIT_KEY_DIR": "nokeys"}
        proc = subprocess.run([*cli, "execute", "spec.yaml", "--quiet", *extra], cwd=tmp_path, env=e,
                              capture_output=True, text=True)
        assert proc.returncode == 2 and f"error: no signing keys in nokeys (named by {named})" in proc.stderr
        assert not (tmp_path / "reports").exists()
    for extra in (["--key-dir", "nokeys"], ["--tsa", "http://tsa.example"]):
        proc = subprocess.run([*cli, "execute", "spec.yaml", "--quiet", "--unsigned", *extra], cwd=tmp_path, env=env,
                              capture_output=True, text=True)
        assert proc.returncode == 2 and f"it cannot be given with {extra[0]}" in proc.stderr, proc.stderr
        assert not (tmp_path / "reports").exists()
    # without keys and without --unsigned: sealed, unsigned, exit 8
    proc = subprocess.run([*cli, "execute", "spec.yaml", "--quiet", "--out", "a"], cwd=tmp_path, env=env,
                          capture_output=True, text=True)
    assert proc.returncode == 8, proc.stderr
    assert "UNSIGNED run" in proc.stderr and "audit keygen" in proc.stderr
    assert "sealed but UNSIGNED (exit 8)" in proc.stderr and "Traceback" not in proc.stderr
    run_a = next((tmp_path / "a" / "tiny-audit").iterdir())
    assert json.loads((run_a / "summary.json").read_text())["exit_code"] == 8
    # --unsigned: the same run on purpose, exit 0
    proc = subprocess.run([*cli, "execute", "spec.yaml", "--quiet", "--unsigned", "--no-pdf"], cwd=tmp_path, env=env,
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert "UNSIGNED run (--unsigned)" in proc.stderr and "sealed but UNSIGNED" not in proc.stderr
    run_dir = next((tmp_path / "reports" / "tiny-audit").iterdir())
    assert json.loads((run_dir / "summary.json").read_text())["exit_code"] == 0
    assert (run_dir / MANIFEST).exists() and not (run_dir / ENVELOPE).exists()
    assert json.loads((run_dir / "run.json").read_text())["signed"] is False
    assert "This run is not signed" in (run_dir / "report.html").read_text()
    assert "Nobody: this run is not signed" in (run_dir / "report.html").read_text()  # on the first page
    proc = subprocess.run([*cli, "verify", str(run_dir)], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert proc.returncode == 6
    assert "FAIL manifest.dsse.json: missing: the run is not signed" in proc.stderr
    assert ("FAIL report.pdf: not rendered: a trial run (`audit execute --unsigned --no-pdf`) writes report.html "
            "only") in proc.stderr
    proc = subprocess.run([*cli, "verify", str(run_a)], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert proc.returncode == 6 and "FAIL report.pdf: has no signature" in proc.stderr  # rendered, unsigned


# ------------------------------------------------------------------------------------------ keys

@pytest.mark.parametrize("damage", ["{not json", "[]", "changed-lock"])
def test_a_damaged_lock_signature_or_a_changed_lock_stops_execute_with_exit_3(tmp_path, key_dir, damage):
    """Issue 16: a lock signed by `audit compile --key-dir` that no longer matches its signature (or whose
    signature file is not the JSON we write) stops execute before any work, naming the file, no traceback."""
    work = tmp_path / "w"
    work.mkdir()
    (work / "spec.yaml").write_text(TINY_SPEC)
    (work / "scores.csv").write_text(TINY_SCORES)
    proc = run_cli("compile", "spec.yaml", "--key-dir", str(key_dir), cwd=work)
    assert proc.returncode == 0 and "signed the lock: spec.lock.sig.json" in proc.stdout, proc.stdout + proc.stderr
    if damage == "changed-lock":
        lock = json.loads((work / "spec.lock.json").read_text())
        lock["created_at"] = "2026-01-01T00:00:00Z"
        (work / "spec.lock.json").write_text(json.dumps(lock, indent=2))
        expected = "spec.lock.json: the signed lock is not this lock"
    else:
        (work / "spec.lock.sig.json").write_text(damage)
        expected = "spec.lock.sig.json: the lock's signature file cannot be read"
    proc = run_cli("execute", "spec.yaml", "--quiet", "--key-dir", str(key_dir), cwd=work)
    assert proc.returncode == 3, proc.stderr
    assert expected in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
    assert not list((work / "reports").rglob("metrics.csv")) if (work / "reports").exists() else True


def test_keygen_cli_refuses_to_overwrite_and_forces(tmp_path):
    kd = tmp_path / "k"
    proc = run_cli("keygen", "--key-dir", str(kd), "--signer", "Ann Example", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert {p.name for p in kd.iterdir()} == {"manifest.key", "manifest.pub", "signer.key", "signer.crt"}
    first = (kd / "manifest.pub").read_bytes()
    proc = run_cli("keygen", "--key-dir", str(kd), cwd=tmp_path)
    assert proc.returncode == 2 and "already has manifest.key" in proc.stderr and "--force" in proc.stderr
    assert (kd / "manifest.pub").read_bytes() == first
    assert run_cli("keygen", "--key-dir", str(kd), "--force", cwd=tmp_path).returncode == 0
    assert (kd / "manifest.pub").read_bytes() != first
    cert = K.load_keys(kd).pdf_cert
    from cryptography import x509

    ku = cert.extensions.get_extension_for_class(x509.KeyUsage).value
    assert ku.digital_signature and ku.content_commitment


def test_incomplete_key_directory_stops_execute_before_any_work(tmp_path, write_spec):
    write_spec(TINY_SPEC, **{"scores.csv": TINY_SCORES})
    kd = tmp_path / "k"
    keygen(kd, signer="x")
    (kd / "signer.key").unlink()
    assert run_cli("compile", "spec.yaml", cwd=tmp_path).returncode == 0
    proc = run_cli("execute", "spec.yaml", "--quiet", "--key-dir", str(kd), cwd=tmp_path)
    assert proc.returncode == 2 and "is incomplete" in proc.stderr and "Traceback" not in proc.stderr
    assert not (tmp_path / "reports").exists()


def _org_material(tmp_path: Path):
    """An organisation's CA and a signing certificate it issued (PEM files and a PKCS#12 file)."""
    import datetime as dt

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization as ser
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.hazmat.primitives.serialization import pkcs12
    from cryptography.x509.oid import NameOID

    now = dt.datetime.now(dt.timezone.utc)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "Acme Root CA")])
    ca = (x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name).public_key(ca_key.public_key())
          .serial_number(1).not_valid_before(now - dt.timedelta(days=1)).not_valid_after(now + dt.timedelta(days=30))
          .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
          .add_extension(x509.KeyUsage(digital_signature=False, content_commitment=False, key_encipherment=False,
                                       data_encipherment=False, key_agreement=False, key_cert_sign=True,
                                       crl_sign=True, encipher_only=False, decipher_only=False), critical=True)
          .sign(ca_key, hashes.SHA256()))
    key = ec.generate_private_key(ec.SECP256R1())
    leaf = (x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "Acme Compliance Office")]))
            .issuer_name(ca_name).public_key(key.public_key()).serial_number(2)
            .not_valid_before(now - dt.timedelta(days=1)).not_valid_after(now + dt.timedelta(days=30))
            .add_extension(x509.KeyUsage(digital_signature=True, content_commitment=True, key_encipherment=False,
                                         data_encipherment=False, key_agreement=False, key_cert_sign=False,
                                         crl_sign=False, encipher_only=False, decipher_only=False), critical=True)
            .sign(ca_key, hashes.SHA256()))
    files = {
        "ca.pem": ca.public_bytes(ser.Encoding.PEM),
        "org.crt": leaf.public_bytes(ser.Encoding.PEM) + ca.public_bytes(ser.Encoding.PEM),
        "org.key": key.private_bytes(ser.Encoding.PEM, ser.PrivateFormat.TraditionalOpenSSL, ser.NoEncryption()),
        "org.p12": pkcs12.serialize_key_and_certificates(b"org", key, leaf, [ca],
                                                         ser.BestAvailableEncryption(b"s3cret")),
    }
    for name, data in files.items():
        (tmp_path / name).write_bytes(data)
    return {name: tmp_path / name for name in files}


@pytest.mark.parametrize("form", ["p12", "pem"])
def test_an_organisations_certificate_signs_the_pdf(tmp_path, write_spec, form):
    org = _org_material(tmp_path)
    kd = tmp_path / "k"
    env = _cli_env(AUDIT_P12_PASSWORD="s3cret")
    cli = [os.sys.executable, "-c", "from runtime.cli import main; main()"]
    args = ["--p12", str(org["org.p12"])] if form == "p12" else ["--cert", str(org["org.crt"]), "--key", str(org["org.key"])]
    proc = subprocess.run([*cli, "keygen", "--key-dir", str(kd), *args], cwd=tmp_path, env=env,
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert "Acme Compliance Office" in proc.stdout
    write_spec(TINY_SPEC, **{"scores.csv": TINY_SCORES})
    assert subprocess.run([*cli, "compile", "spec.yaml"], cwd=tmp_path, env=env, capture_output=True).returncode == 0
    proc = subprocess.run([*cli, "execute", "spec.yaml", "--quiet", "--key-dir", str(kd)], cwd=tmp_path, env=env,
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    run_dir = next((tmp_path / "reports" / "tiny-audit").iterdir())
    # the organisation's CA is the trust root; the run folder carries the chain
    proc = subprocess.run([*cli, "verify", str(run_dir), "--pubkey", str(kd / "manifest.pub"), "--cert",
                           str(org["ca.pem"])], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert "Acme Compliance Office" in proc.stdout
    chain = K.load_certs(run_dir / "signer.crt")
    assert [K.subject_name(c) for c in chain] == ["Acme Compliance Office", "Acme Root CA"]
    assert not any(b"PRIVATE KEY" in p.read_bytes() for p in run_dir.iterdir())


def test_keygen_rejects_a_key_that_does_not_match_the_certificate(tmp_path):
    org = _org_material(tmp_path)
    other = tmp_path / "other.key"
    keygen(tmp_path / "k0", signer="x")
    shutil.copy(tmp_path / "k0" / "signer.key", other)
    proc = run_cli("keygen", "--key-dir", str(tmp_path / "k"), "--cert", str(org["org.crt"]), "--key", str(other),
                   cwd=tmp_path)
    assert proc.returncode == 2 and "is not the private key of the certificate" in proc.stderr
    assert not (tmp_path / "k").exists()
    proc = run_cli("keygen", "--key-dir", str(tmp_path / "k"), "--cert", str(org["org.crt"]), cwd=tmp_path)
    assert proc.returncode == 2 and "--cert and --key go together" in proc.stderr


# ------------------------------------------------------------------------------------------ git

def test_git_commit_and_dirty_flag_are_recorded(tmp_path, write_spec):
    """An untracked file the spec does not name leaves the tree clean (issue 37 §3); a changed tracked
    file makes it dirty, named in spec_git.changed and in the report (trial runs: the manifest records the
    same with or without a signature)."""
    write_spec(TINY_SPEC, **{"scores.csv": TINY_SCORES})
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.org"]
    subprocess.run([*git, "init", "-q"], cwd=tmp_path, check=True)
    (tmp_path / ".gitignore").write_text("reports/\n")
    assert run_cli("compile", "spec.yaml", cwd=tmp_path).returncode == 0
    subprocess.run([*git, "add", "-A"], cwd=tmp_path, check=True)
    subprocess.run([*git, "commit", "-qm", "pre-register"], cwd=tmp_path, check=True)
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=tmp_path, capture_output=True, text=True).stdout.strip()
    assert run_cli("execute", "spec.yaml", "--quiet", "--unsigned", "--no-pdf", "--out", "reports/a",
                   cwd=tmp_path).returncode == 0
    (tmp_path / "notes.md").write_text("uncommitted")  # untracked, not named by the spec: still clean
    assert run_cli("execute", "spec.yaml", "--quiet", "--unsigned", "--no-pdf", "--out", "reports/b",
                   cwd=tmp_path).returncode == 0
    (tmp_path / ".gitignore").write_text("reports/\n.keys/\n")  # a tracked file changed: dirty
    assert run_cli("execute", "spec.yaml", "--quiet", "--unsigned", "--no-pdf", "--out", "reports/c",
                   cwd=tmp_path).returncode == 0
    clean, notes, dirty = (json.loads(next((tmp_path / f"reports/{x}/tiny-audit").glob("*/manifest.json")).read_text())
                           for x in "abc")
    assert clean["spec_git"] == notes["spec_git"] == {"commit": head, "dirty": False, "changed": [],
                                                      "spec_path": "spec.yaml"}
    assert dirty["spec_git"] == {"commit": head, "dirty": True, "changed": [".gitignore"], "spec_path": "spec.yaml"}
    assert clean["reproduce"][-2:] == [f"git checkout {head}   # from the root of the spec's repository",
                                       "audit compile spec.yaml && audit execute spec.yaml"]
    html = next((tmp_path / "reports/c/tiny-audit").glob("*/report.html")).read_text()
    assert "uncommitted changes" in html and head[:12] in html
    assert '<span id="git-changed"><code class="wrap">.gitignore</code></span>' in html
    assert "working tree clean" in next((tmp_path / "reports/b/tiny-audit").glob("*/report.html")).read_text()


def _verify_exit(run_dir: Path, key_dir: Path) -> int:
    """``audit verify RUN --key-dir KEYS`` in this process (the CLI's own main): its exit code."""
    import contextlib
    import io

    from runtime.cli import main

    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        try:
            main(["verify", str(run_dir), "--key-dir", str(key_dir)])
        except SystemExit as exit_:
            return int(exit_.code)
    return 0


@pytest.mark.parametrize("name", ["report.pdf", "manifest.dsse.json"])
def test_every_flipped_byte_class_exits_6_never_1(signed_run, key_dir, tmp_path, name):
    # The first byte, the last, and 50 seeded random positions: each flipped (xor 0xff) in a copy of the
    # signed run; verify must answer FAIL (exit 6) for every one, never crash (exit 1).
    import random
    import shutil

    size = (signed_run / name).stat().st_size
    positions = sorted({0, size - 1, *random.Random(14).sample(range(size), 50)})
    work = tmp_path / signed_run.name
    shutil.copytree(signed_run, work)
    original = (signed_run / name).read_bytes()
    codes = {}
    for pos in positions:
        damaged = bytearray(original)
        damaged[pos] ^= 0xFF
        (work / name).write_bytes(bytes(damaged))
        codes[pos] = _verify_exit(work, key_dir)
    (work / name).write_bytes(original)
    assert _verify_exit(work, key_dir) == 0
    assert set(codes.values()) == {6}, {p: c for p, c in codes.items() if c != 6}


@pytest.mark.parametrize("edit", ["extra_field", "bogus_second_signature", "missing_keyid", "signatures_not_list",
                                  "payload_not_base64", "top_level_list", "subject_not_list"])
def test_malformed_envelopes_fail_with_a_reason(signed_run, key_dir, tmp_path, edit):
    import base64
    import shutil

    from compiler.hashing import canonical_json
    from runtime.provenance.sign import ENVELOPE, render_json

    work = tmp_path / signed_run.name
    shutil.copytree(signed_run, work)
    env = json.loads((work / ENVELOPE).read_text())
    if edit == "extra_field":
        env["comment"] = "hello"
    elif edit == "bogus_second_signature":
        env["signatures"].append({"keyid": env["signatures"][0]["keyid"], "sig": base64.b64encode(b"x" * 64).decode()})
    elif edit == "missing_keyid":
        del env["signatures"][0]["keyid"]
    elif edit == "signatures_not_list":
        env["signatures"] = env["signatures"][0]
    elif edit == "payload_not_base64":
        env["payload"] = "%%%"
    elif edit == "top_level_list":
        env = [env]
    elif edit == "subject_not_list":
        stmt = json.loads(base64.b64decode(env["payload"]))
        stmt["subject"] = "everything"
        env["payload"] = base64.b64encode(canonical_json(stmt)).decode()
    (work / ENVELOPE).write_bytes(render_json(env))
    report = verify_run(work, trust=_trust(key_dir))
    assert not report.ok and any(f.file == ENVELOPE for f in report.failures), report.failures
    assert _verify_exit(work, key_dir) == 6


def test_a_renamed_run_folder_verifies_and_names_its_signed_run_id(signed_run, key_dir, tmp_path):
    import shutil

    work = tmp_path / "renamed-by-recipient"
    shutil.copytree(signed_run, work)
    report = verify_run(work, trust=_trust(key_dir))
    assert report.ok, report.failures
    assert any(f"signed run id {signed_run.name!r} (the folder is named 'renamed-by-recipient')" in n
               for n in report.notes)


@pytest.mark.parametrize("flag", ["--pubkey", "--cert"])
def test_a_malformed_key_or_certificate_is_a_verification_failure(signed_run, tmp_path, flag):
    bad = tmp_path / "bad.pem"
    bad.write_text("-----BEGIN PUBLIC KEY-----\nnot base64\n-----END PUBLIC KEY-----\n")
    proc = run_cli("verify", str(signed_run), flag, str(bad), cwd=tmp_path)
    assert proc.returncode == 6 and "Traceback" not in proc.stderr
    assert f"FAIL cannot read {bad}" in proc.stderr


# ---------------------------------------------------------------------------------- validity dates (issue 16)

def _cert_pair(tmp_path, name: str, start, end):
    """A self-signed RSA certificate valid from ``start`` to ``end`` and its key, as PEM files."""
    import datetime as dt

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import rsa
    from cryptography.x509.oid import NameOID

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    now = dt.datetime.now(dt.timezone.utc).replace(microsecond=0)
    cert = (x509.CertificateBuilder().subject_name(subject).issuer_name(subject).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now + start).not_valid_after(now + end)
            .sign(key, hashes.SHA256()))
    crt, pem = tmp_path / f"{name}.crt", tmp_path / f"{name}.key"
    crt.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    pem.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                      serialization.NoEncryption()))
    return crt, pem, cert


def test_keygen_refuses_an_expired_or_future_certificate_and_warns_before_the_end(tmp_path):
    import datetime as dt

    day = dt.timedelta(days=1)
    for name, start, end, word in (("Old Signer", -400 * day, -30 * day, "had expired"),
                                   ("Future Signer", 10 * day, 400 * day, "is not yet valid")):
        crt, pem, cert = _cert_pair(tmp_path, name, start, end)
        proc = run_cli("keygen", "--key-dir", str(tmp_path / name), "--cert", str(crt), "--key", str(pem),
                       cwd=tmp_path)
        assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
        assert f"certificate '{name}' {word}" in proc.stderr
        assert f"valid from {cert.not_valid_before_utc:%Y-%m-%d %H:%M:%S} UTC to {cert.not_valid_after_utc:%Y-%m-%d %H:%M:%S} UTC" \
            in proc.stderr
        assert not (tmp_path / name).exists()
    proc = run_cli("keygen", "--key-dir", str(tmp_path / "short"), "--signer", "Short Lived", "--days", "30",
                   cwd=tmp_path)
    assert proc.returncode == 0 and "warning: certificate 'Short Lived' expires on" in proc.stderr, proc.stderr


def test_execute_refuses_to_sign_with_an_expired_certificate(tmp_path, write_spec, key_dir):
    import datetime as dt

    kd = tmp_path / "keys"
    shutil.copytree(key_dir, kd)
    crt, pem, cert = _cert_pair(tmp_path, "Jane Auditor", -800 * dt.timedelta(days=1), -5 * dt.timedelta(days=1))
    shutil.copy(crt, kd / "signer.crt")
    shutil.copy(pem, kd / "signer.key")
    write_spec(TINY_SPEC, **{"scores.csv": TINY_SCORES})
    assert run_cli("compile", "spec.yaml", cwd=tmp_path).returncode == 0
    proc = run_cli("execute", "spec.yaml", "--quiet", "--key-dir", str(kd), cwd=tmp_path)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "cannot sign with the keys of" in proc.stderr and "certificate 'Jane Auditor' had expired at" in proc.stderr
    assert f"to {cert.not_valid_after_utc:%Y-%m-%d %H:%M:%S} UTC" in proc.stderr
    assert not (tmp_path / "reports").exists()  # refused before any work


def test_verify_fails_a_pdf_signed_outside_the_certificates_validity(signed_run, key_dir, tmp_path):
    """pyHanko alone calls such a signature trusted when the expired certificate is its own trust root."""
    import datetime as dt

    from runtime.provenance.sign import sign_pdf

    crt, pem, cert = _cert_pair(tmp_path, "Lapsed Signer", -800 * dt.timedelta(days=1), -5 * dt.timedelta(days=1))
    kd = tmp_path / "lapsed"
    shutil.copytree(key_dir, kd)
    shutil.copy(crt, kd / "signer.crt")
    shutil.copy(pem, kd / "signer.key")
    keys = K.load_keys(kd)
    with pytest.raises(K.KeyMaterialError, match="had expired"):
        keys.check_valid()
    pdf = tmp_path / "report.pdf"
    shutil.copy(signed_run / "report.pdf", pdf)
    unsigned = tmp_path / "unsigned.pdf"
    from weasyprint import HTML

    HTML(string="<h1>A report</h1>").write_pdf(unsigned)
    sign_pdf(unsigned, keys, reason="test")  # with the lapsed key, bypassing execute's refusal
    proc = run_cli("verify", str(unsigned), "--cert", str(crt), cwd=tmp_path)
    assert proc.returncode == 6, proc.stdout + proc.stderr
    assert "certificate 'Lapsed Signer' had expired at" in proc.stderr
    assert "the signing time claimed by the signer (no trusted timestamp)" in proc.stderr
    proc = run_cli("verify", str(pdf), "--cert", str(key_dir / "signer.crt"), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr  # a valid certificate still passes


# ---------------------------------------------------------------------- independent verifiers (issue 16)

def test_an_independent_dsse_implementation_verifies_the_manifest_envelope(signed_run, key_dir, tmp_path):
    """securesystemslib's DSSE Envelope (secure-systems-lab, not our code) verifies manifest.dsse.json
    with the run's Ed25519 public key; its payload is the in-toto Statement whose predicate is
    manifest.json and whose subjects are the run's files; a changed payload fails there too."""
    from cryptography.hazmat.primitives.serialization import load_pem_public_key
    from securesystemslib.dsse import Envelope
    from securesystemslib.exceptions import VerificationError
    from securesystemslib.signer import SSlibKey

    pub = load_pem_public_key((key_dir / K.MANIFEST_PUB).read_bytes())
    key = SSlibKey.from_crypto(pub, keyid=K.key_id(pub), scheme="ed25519")
    raw = json.loads((signed_run / ENVELOPE).read_text())
    envelope = Envelope.from_dict(raw)
    assert envelope.payload_type == PAYLOAD_TYPE
    assert set(envelope.verify([key], threshold=1)) == {K.key_id(pub)}
    stmt = json.loads(envelope.payload)
    assert stmt["predicateType"] == PREDICATE_TYPE
    assert stmt["predicate"] == json.loads((signed_run / MANIFEST).read_text())  # the manifest, as signed
    subjects = {s["name"]: s["digest"]["sha256"] for s in stmt["subject"]}
    assert subjects["report.pdf"] == file_digest(signed_run / "report.pdf")["digest"]
    tampered = json.loads((signed_run / ENVELOPE).read_text())  # from_dict consumes its input's signatures
    tampered["payload"] = base64.b64encode(envelope.payload.replace(b"tiny-audit", b"tiny-audiT")).decode()
    with pytest.raises(VerificationError):
        Envelope.from_dict(tampered).verify([key], threshold=1)


def test_a_signer_field_from_someone_elses_file_is_described_never_raised():
    """A lock signature's ``signer`` is whatever its writer put there: shown, never a traceback."""
    from runtime.provenance.keys import describe_person

    assert describe_person({"name": "Alice", "role": "Lead auditor", "organisation": "Org"}) == "Alice (Lead auditor, Org)"
    assert describe_person({"name": "Alice"}) == "Alice"
    assert describe_person("Mallory") == "Mallory"
    assert describe_person(None) == "?" and describe_person({}) == "?"
    assert describe_person({"name": ["x"], "role": {"a": 1}, "organisation": "Org"}) == "? (Org)"
