"""One trust rule for `audit verify` and `audit sign` (issue 27 §1), and a run folder that holds only
regular files (§5).

A forger who holds none of the auditor's keys copies a signed run, re-signs the report's first revision
with a self-signed certificate bearing the auditor's name and organisation (made by ``audit keygen``
into another key directory), and re-seals the folder. Key material inside the checked folder is
evidence, never a pin, however it is named (``--key-dir RUN``, ``$AUDIT_KEY_DIR``, ``--cert RUN/...``),
so the forgery verifies only as "not pinned", fails ``--require-pinned``, and fails against the real
auditor's keys. The signed run and its keys are conftest's session fixtures (shared with test_sign.py).
"""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from pyhanko.pdf_utils import generic
from pyhanko.pdf_utils.incremental_writer import IncrementalPdfFileWriter

from conftest import SIGNER, run_cli
from runtime.provenance import keys as K
from runtime.provenance.sign import MANIFEST, TIMESTAMPS, build_manifest, render_json, sign_pdf, signing_record, write_seal

pytestmark = pytest.mark.slow
ORG = "Acme Audits"


@pytest.fixture(autouse=True)
def _no_default_keys(tmp_path, monkeypatch):
    """No key directory of the machine running the tests is a pin: no $AUDIT_KEY_DIR (a named one that holds
    nothing is an error, issue 41), and the default one under an empty $XDG_CONFIG_HOME."""
    monkeypatch.delenv(K.KEY_DIR_ENV, raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "no-default-config"))


@pytest.fixture(scope="module")
def forged(signed_run, tmp_path_factory) -> Path:
    """A copy of the signed run re-signed by a forger (self-signed certificate, same name and organisation)
    and re-sealed: its first revision, naming the forger's manifest key, signed again; manifest.pub and
    signer.crt replaced; the manifest and its envelope written again."""
    work = tmp_path_factory.mktemp("forgery")
    forger = work / "forger-keys"
    proc = run_cli("keygen", "--key-dir", str(forger), "--signer", SIGNER, "--organisation", ORG, cwd=work)
    assert proc.returncode == 0, proc.stderr
    keys = K.load_keys(forger)
    run = work / signed_run.name
    shutil.copytree(signed_run, run)
    real = K.key_id(K.load_public_key(run / K.MANIFEST_PUB))
    data = (run / "report.pdf").read_bytes()
    end = data.index(b"%%EOF") + len(b"%%EOF")
    first = data[:end] + (b"\n" if data[end:end + 1] == b"\n" else b"")  # the first revision, as rendered
    writer = IncrementalPdfFileWriter(io.BytesIO(first), strict=False)
    info = writer.trailer["/Info"]
    assert f"manifest-ed25519:{real}" in str(info["/Keywords"])
    info["/Keywords"] = generic.TextStringObject(str(info["/Keywords"]).replace(real, keys.keyid))
    writer.update_container(info)  # the report now names the forger's manifest key
    out = io.BytesIO()
    writer.write(out)
    (run / "report.pdf").write_bytes(out.getvalue())
    sign_pdf(run / "report.pdf", keys, reason="audit tiny-audit: report as generated")
    K.copy_public(keys, run)
    manifest = json.loads((run / MANIFEST).read_text())
    record = json.loads((run / "run.json").read_text())
    lock = {k: manifest["lock"][k] for k in ("spec_digest", "plan_digest", "created_at")}
    write_seal(run, build_manifest(run, run=record, lock=lock, resolved=manifest["resolved_spec"], git=None,
                                   signing=signing_record(keys)), keys)
    return run


def _signer_lines(proc: subprocess.CompletedProcess) -> list[str]:
    return [ln for ln in proc.stdout.splitlines() if ln.startswith("signer ")]


def _ways(run: Path, root: Path) -> dict[str, tuple[list[str], dict[str, str]]]:
    """The three ways the report's own advice leads a verifier to the run folder's key material."""
    return {"--key-dir RUN": (["--key-dir", str(run)], {}),
            "AUDIT_KEY_DIR=RUN": ([], {K.KEY_DIR_ENV: str(run)}),
            "--cert RUN/signer.crt --cert ROOT": (["--cert", str(run / K.SIGNER_CRT), "--cert", str(root)], {})}


def test_the_forgery_is_not_pinned_by_key_material_inside_the_run_folder(forged, test_pki, tmp_path, monkeypatch):
    for way, (args, env) in _ways(forged, test_pki.root_pem).items():
        for k, v in env.items():
            monkeypatch.setenv(k, v)
        proc = run_cli("verify", str(forged), *args, cwd=tmp_path)
        assert proc.returncode == 0, (way, proc.stdout + proc.stderr)
        (line,) = _signer_lines(proc)
        assert line.startswith(f"signer 1: {SIGNER} ({ORG}) (role not stated)") and "; not pinned (" in line, (way, line)
        assert proc.stdout.splitlines()[-1] == f"verified: {forged}, but nothing was pinned", (way, proc.stdout)
        assert "note: signer not pinned" in proc.stderr, way
        strict = run_cli("verify", str(forged), *args, "--require-pinned", cwd=tmp_path)
        assert strict.returncode == 6, (way, strict.stdout + strict.stderr)
        assert "FAIL manifest.pub: not pinned (nothing was pinned; --require-pinned)" in strict.stderr, way
        assert "Traceback" not in strict.stderr
        monkeypatch.delenv(K.KEY_DIR_ENV, raising=False)


def test_the_forgery_fails_against_the_real_auditors_keys(forged, key_dir, tmp_path):
    for args in (["--key-dir", str(key_dir)], ["--pubkey", str(key_dir / K.MANIFEST_PUB)],
                 ["--cert", str(key_dir / K.SIGNER_CRT)]):
        proc = run_cli("verify", str(forged), *args, cwd=tmp_path)
        assert proc.returncode == 6, (args, proc.stdout + proc.stderr)
        assert "Traceback" not in proc.stderr


def test_the_genuine_run_is_pinned_and_says_against_what(signed_run, key_dir, tmp_path):
    proc = run_cli("verify", str(signed_run), "--key-dir", str(key_dir), "--require-pinned", cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (line,) = _signer_lines(proc)
    assert line.endswith("; PAdES B-B; pinned"), line
    kid = K.key_id(K.load_public_key(key_dir / K.MANIFEST_PUB))
    assert proc.stdout.splitlines()[-1] == f"verified: {signed_run} against pinned key {kid[:16]}..."


def test_a_lone_pdf_is_not_pinned_by_a_certificate_beside_it(signed_run, key_dir, tmp_path):
    folder = tmp_path / "handed-over"
    folder.mkdir()
    for name in ("report.pdf", K.SIGNER_CRT):
        shutil.copy(signed_run / name, folder / name)
    beside = ["--cert", str(folder / K.SIGNER_CRT)]
    proc = run_cli("verify", str(folder / "report.pdf"), *beside, cwd=tmp_path)
    assert proc.returncode == 0 and "; not pinned (" in _signer_lines(proc)[0], proc.stdout + proc.stderr
    assert run_cli("verify", str(folder / "report.pdf"), *beside, "--require-pinned", cwd=tmp_path).returncode == 6
    pinned = run_cli("verify", str(folder / "report.pdf"), "--cert", str(key_dir / K.SIGNER_CRT), "--require-pinned",
                     cwd=tmp_path)
    assert pinned.returncode == 0, pinned.stdout + pinned.stderr
    assert pinned.stdout.splitlines()[-1].endswith(f"against the pinned certificate of {SIGNER} ({ORG})")


def test_a_forged_reviewer_countersignature_does_not_satisfy_require_role(signed_run, key_dir, tmp_path):
    run = tmp_path / "run"
    shutil.copytree(signed_run, run)
    forger = tmp_path / "forged-reviewer"
    proc = run_cli("keygen", "--key-dir", str(forger), "--signer", "Rob Reviewer", "--role", "Reviewer",
                   "--organisation", ORG, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    # audit sign refuses a run whose auditor it cannot pin ...
    refused = run_cli("sign", str(run), "--key-dir", str(forger), "--role", "Reviewer", cwd=tmp_path)
    assert refused.returncode == 6, refused.stdout + refused.stderr
    assert "its auditor is not pinned (nothing was pinned)" in refused.stderr and "--unpinned" in refused.stderr
    assert "Traceback" not in refused.stderr and not (run / "countersignatures.json").exists()
    inside = run_cli("sign", str(run), "--key-dir", str(forger), "--pubkey", str(run / K.MANIFEST_PUB), cwd=tmp_path)
    assert inside.returncode == 6, inside.stdout + inside.stderr  # the run's own copy pins nothing
    # ... unless told so, which the countersignature records
    proc = run_cli("sign", str(run), "--key-dir", str(forger), "--role", "Reviewer", "--unpinned", cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (entry,) = json.loads((run / "countersignatures.json").read_text())["countersignatures"]
    assert entry["auditor_pinned"] is False and entry["role"] == "Reviewer"
    # the auditor pinned: the reviewer's certificate comes only from countersignatures.json and the PDF
    args = ["verify", str(run), "--pubkey", str(key_dir / K.MANIFEST_PUB)]
    ok = run_cli(*args, cwd=tmp_path)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    lines = _signer_lines(ok)
    assert lines[0].endswith("; pinned") and "Rob Reviewer (Reviewer, Acme Audits)" in lines[1], lines
    assert "; not pinned (" in lines[1], lines
    proc = run_cli(*args, "--require-role", "Reviewer", cwd=tmp_path)
    assert proc.returncode == 6, proc.stdout + proc.stderr
    assert "FAIL report.pdf: no signer with the role 'Reviewer' chains to a pinned certificate" in proc.stderr
    both = ["--cert", str(key_dir / K.SIGNER_CRT), "--cert", str(forger / K.SIGNER_CRT)]
    proc = run_cli(*args, *both, "--require-role", "Reviewer", cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr  # the reviewer pinned on purpose: the role counts


# -------------------------------------------------------------- what a run folder may hold (§5)

def _verify_within_10s(run: Path, key_dir: Path, cwd: Path) -> subprocess.CompletedProcess:
    return run_cli("verify", str(run), "--key-dir", str(key_dir), cwd=cwd, timeout=10)


def test_a_fifo_a_symlink_and_an_empty_timestamp_list_fail_within_10_seconds(signed_run, key_dir, tmp_path):
    fifo = tmp_path / "fifo"
    shutil.copytree(signed_run, fifo)
    (fifo / ".run.lock").unlink(missing_ok=True)
    os.mkfifo(fifo / ".run.lock")  # read by the run-state check: opening it would block
    proc = _verify_within_10s(fifo, key_dir, tmp_path)
    assert proc.returncode == 6, proc.stdout + proc.stderr
    assert ("FAIL .run.lock: a FIFO (named pipe), not a regular file; a run folder holds only regular files and "
            "folders (not opened)") in proc.stderr
    link = tmp_path / "link"
    shutil.copytree(signed_run, link)
    outside = tmp_path / "outside"
    outside.mkdir()
    (link / "extra").symlink_to(outside, target_is_directory=True)
    proc = _verify_within_10s(link, key_dir, tmp_path)
    assert proc.returncode == 6, proc.stdout + proc.stderr
    assert f"FAIL extra: a symbolic link (to {outside}); a run folder holds only regular files" in proc.stderr
    empty = tmp_path / "empty"
    shutil.copytree(signed_run, empty)
    (empty / TIMESTAMPS).write_bytes(render_json({"tsa": "http://127.0.0.1:9/tsa", "timestamps": []}))
    proc = _verify_within_10s(empty, key_dir, tmp_path)
    assert proc.returncode == 6, proc.stdout + proc.stderr
    assert f"FAIL {TIMESTAMPS}: holds no timestamp (an empty list)" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_lone_pdf_mode_fails_an_embedded_certificate_altered_after_signing(signed_run, tmp_path):
    """Issue 27 §5: the ESS signing-certificate hash binds the embedded certificate; the same key under an
    altered name (the hex of the signature's /Contents edited) fails, naming the certificate and serial."""
    data = (signed_run / "report.pdf").read_bytes()
    old = SIGNER.encode().hex().upper().encode()
    assert data.count(old) >= 2  # the certificate's subject and issuer (self-signed), and the signer id
    forged = tmp_path / "report.pdf"
    forged.write_bytes(data.replace(old, "Jane Auditer".encode().hex().upper().encode()))
    proc = run_cli("verify", str(forged), cwd=tmp_path)
    assert proc.returncode == 6 and "Traceback" not in proc.stderr, proc.stdout + proc.stderr
    assert "the embedded certificate 'Jane Auditer' (serial " in proc.stderr
    assert "is not the one it was signed with" in proc.stderr and "altered after signing" in proc.stderr
    ok = run_cli("verify", str(signed_run / "report.pdf"), cwd=tmp_path)
    assert ok.returncode == 0, ok.stdout + ok.stderr


@pytest.mark.parametrize("trial", [False, True], ids=["pdf-removed", "marked-trial"])
def test_a_run_sealed_without_its_pdf_never_verifies(signed_run, key_dir, tmp_path, trial):
    """Verification a forger cannot satisfy (stop 59): a signed run whose report.pdf is removed and whose manifest
    is sealed again without it, by the auditor's own key (or one marked a trial run in run.json, as
    ``--unsigned --no-pdf`` marks one), holds no signed report: verify fails naming report.pdf, pinned or not."""
    run = tmp_path / signed_run.name
    shutil.copytree(signed_run, run)
    (run / "report.pdf").unlink()
    record = json.loads((run / "run.json").read_text())
    record["artifacts"] = [a for a in record["artifacts"] if a != "report.pdf"]
    if trial:
        record["report_pdf"] = False
    (run / "run.json").write_bytes(render_json(record))
    keys = K.load_keys(key_dir)
    manifest = json.loads((run / MANIFEST).read_text())
    lock = {k: manifest["lock"][k] for k in ("spec_digest", "plan_digest", "created_at")}
    write_seal(run, build_manifest(run, run=record, lock=lock, resolved=manifest["resolved_spec"], git=None,
                                   signing=signing_record(keys)), keys)
    assert "report.pdf" not in {a["path"] for a in json.loads((run / MANIFEST).read_text())["artifacts"]}
    proc = run_cli("verify", str(run), "--key-dir", str(key_dir), cwd=tmp_path)
    assert proc.returncode == 6, proc.stdout + proc.stderr
    expected = ("FAIL report.pdf: not rendered: a trial run" if trial else
                "FAIL report.pdf: missing: a sealed run's report is its signed PDF")
    assert expected in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
