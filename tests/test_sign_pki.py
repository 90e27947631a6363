"""Signatures a regulator can rely on (issue 16), against a local test PKI with a time-stamping authority.

The PKI (tests/pki.py, built with certomancer) has a root CA, an intermediate CA with OCSP and CRLs,
an RFC 3161 TSA, and signers: an auditor and a reviewer (valid for ``SIGNER_DAYS`` days), and signers
that are expired, not yet valid or revoked. Independent verifiers: poppler's ``pdfsig`` (NSS) for the
PDF, securesystemslib's DSSE for the envelope.
"""

from __future__ import annotations

import base64
import datetime as dt
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import TINY_SCORES, TINY_SPEC, run_cli
from conftest import latest_run as _latest, pki_key_dir as _key_dir, pki_run as _run
from independent import nss_db, pdfsig, pdfsig_cades
from pki import SIGNER_DAYS
from runtime.provenance import keys as K
from runtime.provenance.keygen import keygen
from runtime.provenance.verify import resolve_trust, verify_run

pytestmark = pytest.mark.slow
DAY = dt.timedelta(days=1)


@pytest.fixture(scope="session")
def offline_run(test_pki, tmp_path_factory) -> Path:
    """A run sealed with the same auditor certificate and no TSA (PAdES B-B)."""
    work = tmp_path_factory.mktemp("bb-run")
    kd = _key_dir(test_pki, "auditor", work)
    proc = _run(work / "spec", kd)
    assert proc.returncode == 0, proc.stderr
    assert "PAdES B-B, dated by this machine's clock" in proc.stderr
    return _latest(work / "spec")


def _trust(pki):
    return resolve_trust(pubkey=None, cert=[pki.root_pem], key_dir=Path("/nonexistent"), run_dir=None)


def _verify(run_dir: Path, pki, now=None, **kw):
    trust = resolve_trust(pubkey=run_dir / K.MANIFEST_PUB, cert=[pki.root_pem], key_dir=None, run_dir=None)
    return verify_run(run_dir, trust=trust, now=now, **kw)


def test_a_tsa_run_is_pades_b_lta_with_a_timestamped_manifest_and_names_the_signer(tsa_run, test_pki):
    proc = run_cli("verify", str(tsa_run), "--pubkey", str(tsa_run / "manifest.pub"), "--cert",
                   str(test_pki.root_pem), "--require-role", "Lead auditor", cwd=tsa_run)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = proc.stdout
    assert ("signer 1: Alice Auditor (Lead auditor, Audit Test PKI); signed " in out
            and "(trusted timestamp, Audit Test Time Stamping Authority); PAdES B-LTA" in out), out
    assert "PDF document timestamp (report.pdf): valid, by Audit Test Time Stamping Authority" in out
    assert "timestamped" in out and "by Audit Test Time Stamping Authority" in out
    assert re.search(r"ok  lock: signed by Ed25519 key \w+\.\.\., timestamped [\d-]+ [\d:]+ UTC by Audit Test Time "
                     r"Stamping Authority, before the seal's trusted time", out), out
    m = json.loads((tsa_run / "manifest.json").read_text())
    assert m["signing"]["pdf"]["profile"] == "PAdES B-LTA" and m["signing"]["tsa"] == test_pki.tsa_url
    assert m["signing"]["signer"] == {"name": "Alice Auditor", "role": "Lead auditor", "organisation": "Audit Test PKI"}
    assert (tsa_run / "tsa.crt").is_file() and "tsa.crt" in {a["path"] for a in m["artifacts"]}
    # the first page names who signed at sealing, the profile and the TSA
    hero = re.search(r'<dd class="hero-signer" id="hero-signer">(.*?)</dd>', (tsa_run / "report.html").read_text(), re.S)
    text = re.sub(r"<[^>]+>|\s+", " ", hero.group(1))
    assert "Alice Auditor (Lead auditor, Audit Test PKI) , PAdES B-LTA signature with a trusted timestamp" in text, text
    assert "identity asserted by the signer, not certified" not in text  # a CA-issued certificate
    assert test_pki.tsa_url in text
    # the lock's trusted time stands beside its machine time on the first page
    assert re.search(r"Spec locked \(UTC, compiling machine's clock\)</dt><dd>[\dT:Z-]+<br><span class=\"small\">trusted "
                     r"timestamp [\d-]+ [\d:]+ UTC</span>", (tsa_run / "report.html").read_text())
    # the signed run is sealed at a time the TSA vouches for, after the run's start
    tokens = json.loads((tsa_run / "manifest.timestamps.json").read_text())["timestamps"]
    assert len(tokens) == 1
    from runtime.provenance.trusted_time import token_time

    run = json.loads((tsa_run / "run.json").read_text())
    assert token_time(base64.b64decode(tokens[0]["token"])) >= dt.datetime.fromisoformat(run["generated_at"])


def test_after_the_signers_expiry_b_lta_still_validates_and_b_b_fails_saying_why(tsa_run, offline_run, test_pki):
    later = test_pki.built_at + (SIGNER_DAYS + 30) * DAY  # the signer expired 30 days ago; CAs and TSA valid
    now = _verify(tsa_run, test_pki)
    assert now.ok, now.failures
    after = _verify(tsa_run, test_pki, now=later)
    assert after.ok, after.failures
    assert after.signers[0]["level"] == "PAdES B-LTA" and after.signers[0]["time_source"] == "trusted timestamp"
    bb_now = _verify(offline_run, test_pki)
    assert bb_now.ok, bb_now.failures
    assert bb_now.signers[0]["level"] == "PAdES B-B" and bb_now.signers[0]["time_source"] == "signer's clock"
    bb_after = _verify(offline_run, test_pki, now=later)
    reasons = " ".join(f.reason for f in bb_after.failures)
    assert not bb_after.ok
    assert "certificate 'Alice Auditor' had expired at" in reasons
    assert "without a trusted timestamp (PAdES B-B) the certificate must still be valid" in reasons


@pytest.mark.parametrize("label,word", [("expired", "had expired"), ("notyet", "is not yet valid")])
def test_keygen_refuses_an_expired_or_not_yet_valid_pki_signer(test_pki, tmp_path, label, word):
    chain, key = test_pki.signer_files(label)
    proc = run_cli("keygen", "--key-dir", str(tmp_path / "kd"), "--cert", str(chain), "--key", str(key), cwd=tmp_path)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert word in proc.stderr and "valid from" in proc.stderr


def test_an_unreachable_tsa_stops_execute_before_any_work(test_pki, tmp_path):
    kd = _key_dir(test_pki, "auditor", tmp_path)
    proc = _run(tmp_path / "spec", kd, "--tsa", "http://127.0.0.1:9/tsa")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert "the time-stamping authority http://127.0.0.1:9/tsa did not answer" in proc.stderr
    assert not (tmp_path / "spec" / "reports").exists()


def test_require_role_fails_when_that_role_did_not_sign(tsa_run, test_pki):
    proc = run_cli("verify", str(tsa_run), "--cert", str(test_pki.root_pem), "--require-role", "Reviewer",
                   cwd=tsa_run)
    assert proc.returncode == 6, proc.stdout + proc.stderr
    assert ("report.pdf: no valid signature by a signer with the role 'Reviewer' "
            "(signers: Alice Auditor (Lead auditor, Audit Test PKI))") in proc.stderr


def test_a_removed_or_altered_manifest_timestamp_fails(tsa_run, test_pki, tmp_path):
    gone = tmp_path / "gone"
    shutil.copytree(tsa_run, gone)
    (gone / "manifest.timestamps.json").unlink()
    r = _verify(gone, test_pki)
    assert [(f.file, f.reason) for f in r.failures] == [
        ("manifest.timestamps.json", "missing: the signed manifest says the envelope was timestamped")]
    other = tmp_path / "other"
    shutil.copytree(tsa_run, other)
    ts = json.loads((other / "manifest.timestamps.json").read_text())
    ts["timestamps"][0]["signature_sha256"] = "0" * 64  # not read: verify recomputes it from the envelope
    # a token over another digest: the TSA's genuine answer for different bytes
    from runtime.provenance.trusted_time import request_token

    ts["timestamps"][0]["token"] = base64.b64encode(request_token(test_pki.tsa_url, b"\0" * 32)).decode()
    (other / "manifest.timestamps.json").write_text(json.dumps(ts))
    r = _verify(other, test_pki)
    assert any(f.file == "manifest.timestamps.json" and "does not cover this signature" in f.reason
               for f in r.failures), r.failures


# ------------------------------------------------------------------ independent verifiers: pdfsig (NSS)

def test_pdfsig_validates_and_trusts_every_signature_of_a_b_lta_report(tsa_run, test_pki, tmp_path):
    sigs = pdfsig(tsa_run / "report.pdf", nss_db(tmp_path, test_pki.root_pem))
    cades = [s for s in sigs if s.get("Signature Type") == "ETSI.CAdES.detached"]
    assert len(cades) == 1 and len(sigs) == 2, sigs  # the auditor's signature and the document timestamp
    assert cades[0]["Signer Certificate Common Name"] == "Alice Auditor"
    assert cades[0]["Signature Validation"] == "Signature is Valid."
    assert cades[0]["Certificate Validation"] == "Certificate is Trusted."  # OCSP checked online, not revoked
    # poppler 22.12 has no RFC 3161 document-timestamp validation: it lists it and leaves it unverified
    # (pyHanko validates it: the test above)
    doc_ts = [s for s in sigs if s not in cades][0]
    assert doc_ts["Signer Certificate Common Name"] == "Audit Test Time Stamping Authority"


def test_pdfsig_trusts_a_default_self_signed_report_and_rejects_a_tampered_one(tmp_path):
    """The keygen certificate (self-signed, pinned as a trusted peer in NSS) passes pdfsig; one flipped
    byte in the signed range fails it."""
    from conftest import TINY_SCORES as scores, TINY_SPEC as spec

    kd = tmp_path / "kd"
    keygen(kd, signer="Jane Auditor", role="Lead auditor", organisation="Acme Audits")
    work = tmp_path / "w"
    work.mkdir()
    (work / "spec.yaml").write_text(spec)
    (work / "scores.csv").write_text(scores)
    assert run_cli("compile", "spec.yaml", cwd=work).returncode == 0
    assert run_cli("execute", "spec.yaml", "--quiet", "--key-dir", str(kd), cwd=work).returncode == 0
    pdf = _latest(work) / "report.pdf"
    db = nss_db(tmp_path, kd / "signer.crt", trust="P,P,P")
    (sig,) = pdfsig(pdf, db)
    assert sig["Signature Validation"] == "Signature is Valid." and sig["Certificate Validation"] == "Certificate is Trusted."
    assert sig["Signer full Distinguished Name"] == "O=Acme Audits,title=Lead auditor,CN=Jane Auditor"
    data = bytearray(pdf.read_bytes())
    data[len(data) // 3] ^= 0x01  # inside the first signed byte range (the signature sits near the end)
    bad = tmp_path / "tampered.pdf"
    bad.write_bytes(bytes(data))
    sigs = pdfsig(bad, db)
    assert not sigs or sigs[0].get("Signature Validation") != "Signature is Valid.", sigs


# ------------------------------------------------------------------------ countersignatures (audit sign)

def test_verify_lists_the_auditor_and_the_reviewer_with_their_roles(countersigned_run, test_pki, tmp_path):
    proc = run_cli("verify", str(countersigned_run), "--cert", str(test_pki.root_pem), "--require-role", "Lead auditor",
                   "--require-role", "reviewer", cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("signer ")]
    assert len(lines) == 2, proc.stdout
    assert lines[0].startswith("signer 1: Alice Auditor (Lead auditor, Audit Test PKI); signed ")
    assert lines[1].startswith("signer 2: Rob Reviewer (Reviewer, Audit Test PKI); signed ")
    assert all(ln.endswith("; PAdES B-LTA; pinned") and "(trusted timestamp, Audit Test Time Stamping Authority)" in ln
               for ln in lines)
    m = json.loads((countersigned_run / "manifest.json").read_text())
    pdf = next(a for a in m["artifacts"] if a["path"] == "report.pdf")
    assert (countersigned_run / "report.pdf").stat().st_size > pdf["bytes"]  # the sealed bytes, then the increment
    assert f"report.pdf: its first {pdf['bytes']} bytes are the sealed report" in proc.stdout
    env = json.loads((countersigned_run / "manifest.dsse.json").read_text())
    assert len(env["signatures"]) == 2
    # poppler validates both CAdES signatures, the auditor's still valid after the increment
    # (poppler 22.12's catch-all certificate line settled by OpenSSL: independent.pdfsig_cades)
    rows = pdfsig_cades(countersigned_run / "report.pdf", nss_db(tmp_path, test_pki.root_pem), test_pki.root_pem)
    assert [n for n, _, _ in rows] == ["Alice Auditor", "Rob Reviewer"]
    assert all(v == "Signature is Valid." and c.startswith("Certificate is Trusted.") for _, v, c in rows), rows


def test_without_the_reviewers_signature_require_role_reviewer_exits_6(countersigned_run, test_pki, tmp_path):
    run = tmp_path / "run"
    shutil.copytree(countersigned_run, run)
    m = json.loads((run / "manifest.json").read_text())
    sealed = next(a for a in m["artifacts"] if a["path"] == "report.pdf")["bytes"]
    with open(run / "report.pdf", "r+b") as fh:  # the reviewer's increment removed: the PDF as sealed
        fh.truncate(sealed)
    env = json.loads((run / "manifest.dsse.json").read_text())
    reviewer = env["signatures"].pop()
    from runtime.provenance.sign import render_json

    (run / "manifest.dsse.json").write_bytes(render_json(env))
    (run / "countersignatures.json").unlink()
    ts = json.loads((run / "manifest.timestamps.json").read_text())
    ts["timestamps"] = [t for t in ts["timestamps"] if t["keyid"] != reviewer["keyid"]]
    (run / "manifest.timestamps.json").write_bytes(render_json(ts))
    ok = run_cli("verify", str(run), "--cert", str(test_pki.root_pem), cwd=tmp_path)
    assert ok.returncode == 0, ok.stderr  # the auditor's seal alone is intact
    proc = run_cli("verify", str(run), "--cert", str(test_pki.root_pem), "--require-role", "Reviewer", cwd=tmp_path)
    assert proc.returncode == 6, proc.stdout + proc.stderr
    assert "no valid signature by a signer with the role 'Reviewer'" in proc.stderr
    # the PDF increment removed but the envelope's countersignature kept: it has nothing vouching for it
    half = tmp_path / "half"
    shutil.copytree(countersigned_run, half)
    with open(half / "report.pdf", "r+b") as fh:
        fh.truncate(sealed)
    proc = run_cli("verify", str(half), "--cert", str(test_pki.root_pem), cwd=tmp_path)
    assert proc.returncode == 6 and "has no valid PDF countersignature vouching for it" in proc.stderr, proc.stderr


def test_any_changed_byte_of_the_sealed_revision_fails_a_countersigned_run(countersigned_run, test_pki, tmp_path):
    m = json.loads((countersigned_run / "manifest.json").read_text())
    sealed = next(a for a in m["artifacts"] if a["path"] == "report.pdf")["bytes"]
    for pos in (100, sealed // 2, sealed - 10):
        run = tmp_path / f"run{pos}"
        shutil.copytree(countersigned_run, run)
        data = bytearray((run / "report.pdf").read_bytes())
        data[pos] ^= 0x01
        (run / "report.pdf").write_bytes(bytes(data))
        proc = run_cli("verify", str(run), "--cert", str(test_pki.root_pem), cwd=tmp_path)
        assert proc.returncode == 6, (pos, proc.stdout)
        assert "report.pdf: sha256" in proc.stderr and "(modified after signing)" in proc.stderr


def test_the_reference_dsse_verifier_passes_the_countersigned_run_and_fails_its_tampered_copies(
        countersigned_run, tsa_keys, tmp_path):
    """Issue 27 §4: scripts/verify_dsse.py (securesystemslib and hashlib only), run as a user runs it, checks
    the B-LTA run the reviewer countersigned (auditor's and reviewer's keys from their key directories,
    outside the run folder): report.pdf by its sealed revision; every tampered copy fails, naming the file."""
    from independent import tampered_copies, verify_dsse_cli

    pub, rev = tsa_keys / K.MANIFEST_PUB, countersigned_run.parent / "keys-reviewer" / K.MANIFEST_PUB
    proc = verify_dsse_cli(countersigned_run, pub, rev, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "report.pdf: sealed revision of " in proc.stdout and proc.stdout.rstrip().endswith("every subject's sha256)")
    failed = {}
    for case, file, copy in tampered_copies(countersigned_run, tmp_path / "t"):
        proc = verify_dsse_cli(copy, pub, cwd=tmp_path)
        failed[case] = proc.returncode == 6 and f"FAIL {file}: " in proc.stderr and "Traceback" not in proc.stderr
    assert failed == dict.fromkeys(failed, True) and len(failed) == 10, failed


def test_countersigning_refuses_a_role_the_certificate_does_not_name(tsa_run, test_pki, tmp_path):
    run = tmp_path / "run"
    shutil.copytree(tsa_run, run)
    kd = _key_dir(test_pki, "reviewer", tmp_path)
    proc = run_cli("sign", str(run), "--key-dir", str(kd), "--role", "Lead auditor", cwd=tmp_path)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert "names the role 'Reviewer'" in proc.stderr
    assert not (run / "countersignatures.json").exists()


# ------------------------------------------------------------------------- the signed pre-registration

def test_a_lock_compiled_again_after_the_run_fails_verify_and_is_flagged_in_the_next_report(test_pki, tsa_keys, tmp_path):
    work = tmp_path / "spec"
    proc = _run(work, tsa_keys)
    assert proc.returncode == 0, proc.stderr
    first = _latest(work)
    sig = json.loads((work / "spec.lock.sig.json").read_text())
    assert sig["timestamp"]["tsa"] == test_pki.tsa_url and (first / "lock.sig.json").is_file()
    ok = run_cli("verify", str(first), "--cert", str(test_pki.root_pem), "--spec", str(work / "spec.yaml"), cwd=work)
    assert ok.returncode == 0, ok.stderr
    # the pre-registration deleted and compiled again: same spec, a new lock without the history
    (work / "spec.lock.json").unlink()
    (work / "spec.lock.sig.json").unlink()
    assert run_cli("compile", "spec.yaml", "--key-dir", str(tsa_keys), cwd=work).returncode == 0
    proc = run_cli("verify", str(first), "--cert", str(test_pki.root_pem), "--spec", str(work / "spec.yaml"), cwd=work)
    assert proc.returncode == 6, proc.stdout + proc.stderr
    assert "spec.lock.json: was created" in proc.stderr and "the lock was re-created after this run" in proc.stderr
    # the next run under the new lock: the task store's ledger knows the earlier lock
    proc = run_cli("execute", "spec.yaml", "--quiet", "--key-dir", str(tsa_keys), cwd=work)
    assert proc.returncode == 0 and "the lock was re-created" in proc.stderr, proc.stderr
    second = _latest(work)
    run = json.loads((second / "run.json").read_text())
    old_lock = json.loads((first / "lock.json").read_text())
    assert [e["created_at"] for e in run["lock_recreated"]] == [old_lock["created_at"]]
    assert run["lock_recreated"][0]["source"] == f"task store: run {first.name}"
    html = (second / "report.html").read_text()
    assert 'id="lock-recreated"' in html and "Lock re-created." in html
    # the signed run.json records it: verify fails the run, and the first page says so in red
    proc = run_cli("verify", str(second), "--cert", str(test_pki.root_pem), cwd=work)
    assert proc.returncode == 6, proc.stdout + proc.stderr
    assert (f"FAIL run.json: the lock was re-created: an earlier lock of this audit (created {old_lock['created_at']}, "
            f"known from task store: run {first.name}) is not in the run's amendment chain") in proc.stderr, proc.stderr
    assert '<div class="callout fail" id="hero-lock-recreated">' in html
    page1 = " ".join(subprocess.run(["pdftotext", "-f", "1", "-l", "1", str(second / "report.pdf"), "-"],
                                    capture_output=True, text=True, check=True).stdout.split())
    assert "Lock re-created. This run's lock is not the first pre-registration of this audit" in page1, page1
    assert "audit verify fails this run" in page1
    # the first run's report names the lock's key and says it is the manifest's (the same key directory)
    first_html = " ".join((first / "report.html").read_text().split())
    assert f"Ed25519 key id <code class=\"wrap small\">{run['lock_signature']['keyid']}</code>" in first_html
    assert "the key is the one that signs this run's manifest." in first_html
    assert 'id="hero-lock-recreated"' not in first_html


def test_an_earlier_lock_in_git_history_is_found(tmp_path):
    """The lock's git history is the other witness of a re-created pre-registration (no task store here)."""
    import subprocess as sp

    from runtime.provenance.locksign import earlier_locks

    work = tmp_path / "repo"
    work.mkdir()
    (work / "spec.yaml").write_text(TINY_SPEC)
    (work / "scores.csv").write_text(TINY_SCORES)
    git = ["git", "-c", "user.email=a@b", "-c", "user.name=t", "-C", str(work)]
    sp.run([*git, "init", "-q"], check=True)
    proc = run_cli("compile", "spec.yaml", "--key-dir", str(tmp_path / "none"), cwd=work)
    assert proc.returncode == 2 and "no signing keys in" in proc.stderr  # a named key directory must hold keys
    assert run_cli("compile", "spec.yaml", cwd=work).returncode == 0
    sp.run([*git, "add", "spec.yaml", "scores.csv", "spec.lock.json"], check=True)
    sp.run([*git, "commit", "-q", "-m", "lock"], check=True)
    first = json.loads((work / "spec.lock.json").read_text())
    (work / "spec.lock.json").unlink()
    import time

    time.sleep(1.1)  # lock times have whole seconds
    assert run_cli("compile", "spec.yaml", cwd=work).returncode == 0
    new = json.loads((work / "spec.lock.json").read_text())
    found = earlier_locks(new, store_root=None, lock_path=work / "spec.lock.json")
    assert len(found) == 1 and found[0]["created_at"] == first["created_at"]
    assert re.fullmatch(r"git: commit [0-9a-f]{12}", found[0]["source"]), found
    assert earlier_locks(first, store_root=None, lock_path=work / "spec.lock.json") == []  # nothing before the first
    # a repository that stops versioning the lock by a commit (git rm + .gitignore) leaves that decision
    # in its history; the older versions no longer count (the task store's ledger remains the witness)
    (work / ".gitignore").write_text("*.lock.json\n")
    sp.run([*git, "rm", "-q", "--cached", "spec.lock.json"], check=True)
    sp.run([*git, "add", ".gitignore"], check=True)
    sp.run([*git, "commit", "-q", "-m", "stop versioning the lock"], check=True)
    # the ledger beside the lock (issue 27 §5) still names the first lock: compile wrote it there
    found = earlier_locks(new, store_root=None, lock_path=work / "spec.lock.json")
    assert [(e["created_at"], e["source"]) for e in found] == [
        (first["created_at"], "the ledger beside the lock, spec.locks.jsonl")]
    (work / "spec.locks.jsonl").unlink()  # with that ledger gone too, nothing is left to tell
    assert earlier_locks(new, store_root=None, lock_path=work / "spec.lock.json") == []
