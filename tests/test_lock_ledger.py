"""The ledger of locks beside the lock (issue 27 §5): a lock deleted and compiled again is caught even
when the task store was moved away, and `audit verify` fails the run that used the re-created lock."""

from __future__ import annotations

import json
import shutil
import subprocess

from conftest import TINY_SCORES, TINY_SPEC, run_cli


def test_a_recreated_lock_is_caught_from_the_ledger_beside_the_lock_with_the_store_moved(tmp_path, key_dir):
    work = tmp_path / "audit"
    work.mkdir()
    (work / "spec.yaml").write_text(TINY_SPEC)
    (work / "scores.csv").write_text(TINY_SCORES)
    assert run_cli("compile", "spec.yaml", "--key-dir", str(key_dir), cwd=work).returncode == 0
    first_lock = json.loads((work / "spec.lock.json").read_text())
    ledger = [json.loads(x) for x in (work / "spec.locks.jsonl").read_text().splitlines()]
    assert ledger == [{"audit": "tiny-audit", "created_at": first_lock["created_at"],
                       "spec_digest": first_lock["spec_digest"]["digest"], "event": "compiled"}]
    assert run_cli("compile", "spec.yaml", "--key-dir", str(key_dir), cwd=work).returncode == 0  # unchanged
    assert len((work / "spec.locks.jsonl").read_text().splitlines()) == 1  # written once per lock
    proc = run_cli("execute", "spec.yaml", "--quiet", "--key-dir", str(key_dir), cwd=work)
    assert proc.returncode == 0, proc.stderr
    # the pre-registration deleted and compiled again, and the task store (the other witness) moved away
    (work / "spec.lock.json").unlink()
    (work / "spec.lock.sig.json").unlink()
    shutil.move(work / ".audit-store", tmp_path / "elsewhere")
    assert run_cli("compile", "spec.yaml", "--key-dir", str(key_dir), cwd=work).returncode == 0
    proc = run_cli("execute", "spec.yaml", "--quiet", "--key-dir", str(key_dir), cwd=work)
    assert proc.returncode == 0 and "the lock was re-created" in proc.stderr, proc.stderr
    second = sorted((work / "reports" / "tiny-audit").iterdir())[-1]
    run = json.loads((second / "run.json").read_text())
    assert run["lock_recreated"] == [{"created_at": first_lock["created_at"],
                                      "spec_digest": first_lock["spec_digest"]["digest"],
                                      "source": "the ledger beside the lock, spec.locks.jsonl"}]
    proc = run_cli("verify", str(second), "--key-dir", str(key_dir), cwd=work)
    assert proc.returncode == 6, proc.stdout + proc.stderr
    assert (f"FAIL run.json: the lock was re-created: an earlier lock of this audit (created "
            f"{first_lock['created_at']}, known from the ledger beside the lock, spec.locks.jsonl)") in proc.stderr
    page1 = " ".join(subprocess.run(["pdftotext", "-f", "1", "-l", "1", str(second / "report.pdf"), "-"],
                                    capture_output=True, text=True, check=True).stdout.split())
    assert "Lock re-created. This run's lock is not the first pre-registration of this audit" in page1, page1
