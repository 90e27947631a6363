"""Independent verification of a run after countersigning (issue 27 §4).

scripts/verify_dsse.py (securesystemslib and hashlib only) is run as a user runs it, in a fresh
interpreter: it passes a fresh run and a countersigned run, and fails each tampered copy naming the file.
The countersigned run with the project's test PKI and TSA is checked in tests/test_sign_pki.py (its
session fixture lives there); here a reviewer with a self-signed key countersigns the tests' signed run.
"""

from __future__ import annotations

import ast
import base64
import json
import shutil
from pathlib import Path

import pytest

from compiler.hashing import canonical_json, file_digest
from conftest import run_cli
from independent import VERIFY_DSSE, dsse_problems, tampered_copies, verify_dsse_cli
from runtime.provenance import keys as K
from runtime.provenance.keygen import keygen
from runtime.provenance.sign import ENVELOPE, MANIFEST, pae, render_json
from runtime.provenance.verify import resolve_trust, verify_run


@pytest.fixture(scope="module")
def reviewer_keys(tmp_path_factory) -> Path:
    kd = tmp_path_factory.mktemp("reviewer") / "keys"
    keygen(kd, signer="Rob Reviewer", role="Reviewer", organisation="Acme Review")
    return kd


@pytest.fixture(scope="module")
def countersigned_bb(signed_run, key_dir, reviewer_keys, tmp_path_factory) -> Path:
    """A copy of the tests' signed run countersigned by a reviewer (``audit sign``, auditor pinned by key)."""
    run = tmp_path_factory.mktemp("countersigned-bb") / signed_run.name
    shutil.copytree(signed_run, run)
    proc = run_cli("sign", str(run), "--key-dir", str(reviewer_keys), "--role", "Reviewer",
                   "--pubkey", str(key_dir / K.MANIFEST_PUB), cwd=run.parent)
    assert proc.returncode == 0, proc.stderr
    return run


#: Tampered copies also checked with ``audit verify`` (runtime.provenance.verify.check_artifacts' sealed-revision rule).
AGREES = {"sealed-revision-last-byte", "truncated-report", "length-claim-whole-file", "length-claim-in-manifest-json"}


def _trust(key_dir: Path, *others: Path):
    """The auditor pinned by key and certificate, and each key directory of ``others`` (reviewers) by its
    certificate: what ``audit verify --pubkey --cert --cert`` trusts."""
    certs = [key_dir / K.SIGNER_CRT, *(kd / K.SIGNER_CRT for kd in others)]
    return resolve_trust(pubkey=key_dir / K.MANIFEST_PUB, cert=certs, key_dir=None, run_dir=None)


def _statement(run: Path) -> dict:
    return json.loads(base64.b64decode(json.loads((run / ENVELOPE).read_text())["payload"]))


def test_the_statement_binds_each_file_by_length_and_report_pdf_by_its_sealed_revision(countersigned_bb, signed_run):
    stmt = _statement(countersigned_bb)
    manifest = json.loads((countersigned_bb / MANIFEST).read_text())
    sealed = next(a["bytes"] for a in manifest["artifacts"] if a["path"] == "report.pdf")
    pdf = (countersigned_bb / "report.pdf").read_bytes()
    assert len(pdf) > sealed and pdf[:sealed] == (signed_run / "report.pdf").read_bytes()  # an appended revision
    by_name = {s["name"]: s for s in stmt["subject"]}
    assert by_name["report.pdf"] == {"name": "report.pdf", "annotations": {"bytes": sealed, "sealedRevision": True},
                                     "digest": {"sha256": file_digest(signed_run / "report.pdf")["digest"]}}
    for name, s in by_name.items():
        if name != "report.pdf":
            data = (countersigned_bb / name).read_bytes()
            assert s["annotations"] == {"bytes": len(data)}, name
            assert s["digest"]["sha256"] == file_digest(countersigned_bb / name)["digest"], name
    # the envelope still signs the Statement audit-compiler sealed (countersigning adds a signature only)
    assert _statement(signed_run) == stmt and len(json.loads((countersigned_bb / ENVELOPE).read_text())["signatures"]) == 2


def test_the_reference_verifier_passes_a_fresh_run(signed_run, key_dir, tmp_path):
    proc = verify_dsse_cli(signed_run, key_dir / K.MANIFEST_PUB, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    keyid = K.key_id(K.load_public_key(key_dir / K.MANIFEST_PUB))
    assert proc.stdout.strip() == f"verified: {signed_run} (DSSE signature by {keyid[:16]}...; every subject's sha256)"
    assert proc.stderr == ""


def test_the_reference_verifier_passes_a_countersigned_run_and_fails_every_tampered_copy(
        countersigned_bb, key_dir, reviewer_keys, tmp_path):
    pub, rev = key_dir / K.MANIFEST_PUB, reviewer_keys / K.MANIFEST_PUB
    manifest = json.loads((countersigned_bb / MANIFEST).read_text())
    sealed = next(a["bytes"] for a in manifest["artifacts"] if a["path"] == "report.pdf")
    later = (countersigned_bb / "report.pdf").stat().st_size - sealed
    proc = verify_dsse_cli(countersigned_bb, pub, rev, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert f"report.pdf: sealed revision of {sealed} bytes verified; {later} bytes of later revisions follow" in proc.stdout
    assert dsse_problems(countersigned_bb, pub, (rev,)) == []
    assert verify_run(countersigned_bb, trust=_trust(key_dir, reviewer_keys)).ok
    cases = 0
    for case, file, copy in tampered_copies(countersigned_bb, tmp_path / "t"):
        proc = verify_dsse_cli(copy, pub, cwd=tmp_path)
        assert proc.returncode == 6, (case, proc.stdout, proc.stderr)
        assert f"FAIL {file}: " in proc.stderr, (case, proc.stderr)
        assert "Traceback" not in proc.stderr, case
        assert dsse_problems(copy, pub), case
        if case in AGREES:  # audit verify agrees (the cases its sealed-revision rule decides; ~3 s each)
            assert file in {f.file for f in verify_run(copy, trust=_trust(key_dir, reviewer_keys)).failures}, case
        cases += 1
    assert cases == 10


def test_a_countersigner_key_that_did_not_sign_fails(countersigned_bb, signed_run, key_dir, reviewer_keys, tmp_path):
    proc = verify_dsse_cli(signed_run, key_dir / K.MANIFEST_PUB, reviewer_keys / K.MANIFEST_PUB, cwd=tmp_path)
    assert proc.returncode == 6 and "FAIL manifest.dsse.json: no valid signature by countersigner's key" in proc.stderr


def test_bytes_appended_after_the_sealed_revision_are_left_to_the_pdf_signatures(countersigned_bb, key_dir, reviewer_keys,
                                                                                  tmp_path):
    """The rule's limit, on purpose: the Statement binds the sealed revision; what follows it is the PDF
    signatures' to cover. An appended non-signature passes the DSSE check (with a note) and fails
    ``audit verify``, which validates the PDF."""
    copy = tmp_path / countersigned_bb.name
    shutil.copytree(countersigned_bb, copy)
    with open(copy / "report.pdf", "ab") as fh:
        fh.write(b"\n% appended by someone\n")
    proc = verify_dsse_cli(copy, key_dir / K.MANIFEST_PUB, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "check them with a PDF signature validator" in proc.stdout
    assert verify_run(countersigned_bb, trust=_trust(key_dir, reviewer_keys)).ok
    report = verify_run(copy, trust=_trust(key_dir, reviewer_keys))
    failures = [str(f) for f in report.failures]
    assert "report.pdf: bytes were appended after its last revision's %%EOF (not the entire file is signed)" in failures


def test_a_key_file_inside_the_run_folder_is_refused(signed_run, tmp_path):
    proc = verify_dsse_cli(signed_run, signed_run / K.MANIFEST_PUB, cwd=tmp_path)
    assert proc.returncode == 2
    assert proc.stderr.strip() == (f"FAIL {signed_run / K.MANIFEST_PUB}: inside the run folder: evidence, not a pin; "
                                   "give the signer's public key obtained by another channel")


def test_a_statement_written_before_issue_27_still_verifies(countersigned_bb, key_dir, reviewer_keys, tmp_path):
    """Old runs: subjects without annotations (name + sha256 only), re-signed by the same auditor and
    reviewer; audit verify and the reference verifier take report.pdf's sealed length from the
    predicate's artifacts[].bytes. A changed byte of the sealed revision still fails."""
    run = tmp_path / countersigned_bb.name
    shutil.copytree(countersigned_bb, run)
    env = json.loads((run / ENVELOPE).read_text())
    stmt = json.loads(base64.b64decode(env["payload"]))
    for s in stmt["subject"]:
        del s["annotations"]
    payload = canonical_json(stmt)
    env["payload"] = base64.b64encode(payload).decode()
    for sig, kd in zip(env["signatures"], (key_dir, reviewer_keys)):
        keys = K.load_keys(kd)
        assert sig["keyid"] == keys.keyid
        sig["sig"] = base64.b64encode(keys.manifest_key.sign(pae(env["payloadType"], payload))).decode()
    (run / ENVELOPE).write_bytes(render_json(env))
    report = verify_run(run, trust=_trust(key_dir, reviewer_keys))
    assert report.ok, [str(f) for f in report.failures]
    assert any(n.startswith("report.pdf: its first ") for n in report.notes)
    proc = verify_dsse_cli(run, key_dir / K.MANIFEST_PUB, reviewer_keys / K.MANIFEST_PUB, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    sealed = next(a["bytes"] for a in stmt["predicate"]["artifacts"] if a["path"] == "report.pdf")
    data = bytearray((run / "report.pdf").read_bytes())
    data[sealed // 2] ^= 0x01
    (run / "report.pdf").write_bytes(bytes(data))
    assert verify_dsse_cli(run, key_dir / K.MANIFEST_PUB, cwd=tmp_path).returncode == 6
    assert "report.pdf" in {f.file for f in verify_run(run, trust=_trust(key_dir, reviewer_keys)).failures}


def test_audit_verify_refuses_a_length_annotation_the_manifest_does_not_record(signed_run, key_dir, tmp_path):
    """The Statement's length and the manifest's must agree (both signed; re-signed here by the auditor's
    own key, so only that rule can fail), and only report.pdf may bind a sealed revision."""
    keys = K.load_keys(key_dir)
    for case in ("length", "sealed-elsewhere", "bytes-not-int"):
        run = tmp_path / case / signed_run.name
        shutil.copytree(signed_run, run)
        env = json.loads((run / ENVELOPE).read_text())
        stmt = json.loads(base64.b64decode(env["payload"]))
        subject = next(s for s in stmt["subject"] if s["name"] == "metrics.csv")
        if case == "length":
            subject["annotations"]["bytes"] += 1
        elif case == "sealed-elsewhere":
            subject["annotations"]["sealedRevision"] = True
        else:
            subject["annotations"]["bytes"] = True
        payload = canonical_json(stmt)
        env["payload"] = base64.b64encode(payload).decode()
        env["signatures"][0]["sig"] = base64.b64encode(keys.manifest_key.sign(pae(env["payloadType"], payload))).decode()
        (run / ENVELOPE).write_bytes(render_json(env))
        failures = [str(f) for f in verify_run(run, trust=_trust(key_dir)).failures]
        assert any(f.startswith(f"{ENVELOPE}: ") for f in failures), (case, failures)
        proc = verify_dsse_cli(run, key_dir / K.MANIFEST_PUB, cwd=tmp_path)
        assert proc.returncode == 6 and "FAIL metrics.csv: " in proc.stderr, (case, proc.stderr)


def test_the_reference_verifier_imports_only_securesystemslib_hashlib_and_the_standard_library():
    """Issue 27 §4: a verifier without this tool; `cryptography` only parses the PEM for securesystemslib
    (its own dependency), which has no loader for a bare public key file."""
    tree = ast.parse(VERIFY_DSSE.read_text())
    modules = {alias.name.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.Import)
               for alias in node.names}
    modules |= {node.module.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    assert modules == {"__future__", "argparse", "hashlib", "json", "os", "stat", "sys", "pathlib",
                       "securesystemslib", "cryptography"}


def test_bytes_appended_to_a_run_nobody_countersigned_fail_the_reference_verifier(signed_run, key_dir, tmp_path):
    """Found by a hostile trial: the rule says that without countersignatures report.pdf is exactly its
    sealed length; an appended revision (an "ALL PASS" annotation, say) on such a run fails (exit 6)."""
    copy = tmp_path / "run"
    shutil.copytree(signed_run, copy)
    size = (copy / "report.pdf").stat().st_size
    with open(copy / "report.pdf", "ab") as fh:
        fh.write(b"\n% an incremental update nobody countersigned\n")
    proc = verify_dsse_cli(copy, key_dir / K.MANIFEST_PUB, cwd=tmp_path)
    assert proc.returncode == 6, proc.stdout + proc.stderr
    assert (f"FAIL report.pdf: {size + 46} bytes, longer than its sealed revision of {size} bytes, and nobody "
            "countersigned the envelope (appended to after sealing)") in proc.stderr
