"""What a received spec or a vendor's file can make the tool write (issue 41): the task store stays
inside the spec's folder, scores are read in one strict form, CSV cells never run as spreadsheet
formulas, run.json spells no path outside the spec's folder, and a full disk at ``execute`` or
``export`` is an exit 2 that leaves the run resumable and no partial vendor file.

A full disk is a small tmpfs when this process may mount one (real ``ENOSPC``); otherwise the CLI runs
under ``RLIMIT_FSIZE`` (``EFBIG`` from the same ``write`` calls, so the same code path).
"""

from __future__ import annotations

import csv
import io
import json
import os
import resource
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from compiler.paths import recorded
from compiler.score_file import parse_number
from conftest import TINY_SCORES, TINY_SPEC, run_cli
from runtime.csvsafe import NUMBER, TRIGGERS, csv_bytes, neutralise, restore

LINK = '=HYPERLINK("http://example.invalid/x","click")'
SUM = "@SUM(1+1)"
YEARS = "-5 years"


def tree(root: Path) -> dict[str, int]:
    """Every file and folder under ``root`` (relative path -> size, -1 for a folder)."""
    return {p.relative_to(root).as_posix(): (-1 if p.is_dir() else p.stat().st_size) for p in sorted(root.rglob("*"))}


def store_spec(store: str) -> str:
    return TINY_SPEC.replace("analysis:", f"execution:\n  store: '{store}'\nanalysis:")


def test_a_store_outside_or_at_the_spec_folder_is_refused_and_nothing_is_written(tmp_path):
    """``store: '..'`` and ``store: '.'``: located errors at validate; execute writes nothing anywhere
    (no .gitignore above or in the spec's folder, no run folder, no store); the operator's --store above
    the spec is refused too, before any write."""
    from conftest import TINY_SCORES

    folder = tmp_path / "repo" / "audit"
    folder.mkdir(parents=True)
    (folder / "scores.csv").write_text(TINY_SCORES)
    before = tree(tmp_path)
    messages = {
        "..": "task store '..' leaves the spec's folder; a spec keeps its task store in a folder inside its own "
              "folder, e.g. .audit-store (to keep it elsewhere, the operator passes `audit execute --store DIR`)",
        ".": "task store '.' is the spec's folder itself; name a folder inside it, e.g. .audit-store (the store "
             "ignores its whole folder in git)",
    }
    for store, message in messages.items():
        (folder / "spec.yaml").write_text(store_spec(store))
        before["repo/audit/spec.yaml"] = (folder / "spec.yaml").stat().st_size
        commands = [("validate", "spec.yaml")] + ([("execute", "--unsigned", "--no-pdf", "spec.yaml", "--quiet", "--out", "out")]
                                                  if store == ".." else [])
        for args in commands:
            proc = run_cli(*args, cwd=folder)
            assert proc.returncode == 2, (args, proc.stderr)
            assert f"error: spec.yaml:19:10: execution.store: {message}\n" in proc.stderr
            assert "Traceback" not in proc.stderr
        assert tree(tmp_path) == before
    (folder / "spec.yaml").write_text(TINY_SPEC)
    proc = run_cli("execute", "--unsigned", "--no-pdf", "spec.yaml", "--quiet", "--out", "out", "--store", str(tmp_path / "repo"), cwd=folder)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert (f"error: --store {tmp_path / 'repo'}: the task store cannot be the spec's folder or a folder above it "
            "(the store ignores its whole folder in git); name a folder of its own, e.g. a new folder beside the "
            "spec") in proc.stderr
    assert sorted(tree(tmp_path)) == sorted(before)


@pytest.mark.parametrize("cell, value", [
    ("45", 45.0), (" -0.5 ", -0.5), ("+1.5e-3", 0.0015), ("1E2", 100.0), ("007", 7.0),
    ("4_5", None), ("1_0.5", None), ("٤٥", None), ("４５", None), ("nan", None), ("inf", None), ("-inf", None),
    ("1e999", None), (".5", None), ("5.", None), ("0x10", None), ("1,5", None), ("", None), ("4 5", None),
    ("\t0.5", 0.5), ("0.5\u00a0", None), ("\u20030.5", None),
])
def test_a_number_is_read_only_in_its_strict_form(cell, value):
    assert parse_number(cell) == value


def test_lenient_numbers_are_refused_with_their_lines(write_spec, tmp_path):
    scores = ("job_id,cv_id,variant,score,is_true_match\n"
              "j1,c1,BASE,0.9,1\nj1,c1,V01,4_5,1\n"
              "j1,c2,BASE,0.7,1\nj1,c2,V01,٤٥,1\n"
              "j1,c3,BASE,0.5,0\nj1,c3,V01,1_0.5,0\n"
              "j1,c4,BASE,0.3,0\nj1,c4,V01,４５,0\n")
    write_spec(TINY_SPEC.replace("path: scores.csv}", "path: scores.csv, score_range: [0, 100]}"),
               **{"scores.csv": scores})
    proc = run_cli("validate", "spec.yaml", cwd=tmp_path)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert ("spec.yaml:17:43: systems[0].path: scores.csv: score is not a number ('4_5', '٤٥', '1_0.5', '４５') at "
            "lines 3, 5, 7, 9 (column 'score'); a score is written with ASCII digits as "
            "[+-]digits[.digits][e[+-]digits], e.g. 72, 0.85 or -1.5e-3") in proc.stderr


@pytest.mark.parametrize("cell, written", [
    (LINK, "'" + LINK), (SUM, "'@SUM(1+1)"), ("+33 1 23", "'+33 1 23"), ("\tx", "'\tx"), ("\rx", "'\rx"),
    (YEARS, "'-5 years"), ("'quoted", "''quoted"), ("-5", "-5"), ("+1.5e-3", "+1.5e-3"), ("c1", "c1"),
    ("a=b", "a=b"), ("", ""),
])
def test_the_spreadsheet_rule(cell, written):
    assert neutralise(cell) == written and restore(written) == cell


@settings(max_examples=60, deadline=None)
@given(st.text(max_size=12))
def test_the_rule_is_undone_exactly_and_leaves_no_trigger(text):
    safe = neutralise(text)
    assert restore(safe) == text
    assert not safe.startswith(TRIGGERS) or NUMBER.fullmatch(safe)  # only a number keeps a leading sign


def test_numbers_keep_their_form_and_text_cells_are_neutralised():
    frame = pd.DataFrame({"cv_id": [LINK, "-5", YEARS], "score": [-0.5, 1.0, 2.5], "rank": [1, 2, 3],
                          "flag": [True, False, True], "=col": ["a", "b", "c"]})
    rows = list(csv.reader(io.StringIO(csv_bytes(frame).decode("utf-8"))))
    assert rows == [["cv_id", "score", "rank", "flag", "'=col"], ["'" + LINK, "-0.5", "1", "True", "a"],
                    ["-5", "1.0", "2", "False", "b"], ["'-5 years", "2.5", "3", "True", "c"]]
    assert frame["cv_id"].tolist() == [LINK, "-5", YEARS]  # the caller's frame is not changed


def test_out_root_is_recorded_only_inside_the_spec_folder(tmp_path):
    (tmp_path / "audit" / "reports").mkdir(parents=True)
    assert recorded(tmp_path / "audit" / "reports", tmp_path / "audit", outside="operator's --out") == "reports"
    assert recorded(tmp_path / "elsewhere", tmp_path / "audit", outside="operator's --out") == "operator's --out"
    assert recorded(tmp_path, tmp_path / "audit", outside="operator's --out") == "operator's --out"


class SmallDisk:
    """A folder on which writes fail: a tmpfs of ``kb`` KiB (``ENOSPC``) when mounting is allowed,
    else a plain folder and a CLI under ``RLIMIT_FSIZE`` of ``kb`` KiB (``EFBIG``)."""

    def __init__(self, path: Path, kb: int):
        self.path, self.kb = path, kb
        path.mkdir()
        self.tmpfs = (os.geteuid() == 0 and subprocess.run(
            ["mount", "-t", "tmpfs", "-o", f"size={kb}k", "tmpfs", str(path)], capture_output=True).returncode == 0)

    def cli(self, *args: str, cwd: Path) -> subprocess.CompletedProcess:
        """The real CLI (as conftest.run_cli), under the file-size limit when there is no tmpfs."""
        limit = self.kb * 1024

        def small() -> None:
            resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

        env = dict(os.environ, PYTHONHASHSEED="0", COLUMNS="200")
        return subprocess.run([sys.executable, "-c", "from runtime.cli import main; main()", *args], cwd=cwd, env=env,
                              capture_output=True, text=True, timeout=600,
                              preexec_fn=None if self.tmpfs else small)

    def close(self) -> None:
        if self.tmpfs:
            subprocess.run(["umount", "-l", str(self.path)], check=False)


@pytest.fixture
def small_disk(tmp_path):
    disks: list[SmallDisk] = []

    def make(kb: int) -> SmallDisk:
        disks.append(SmallDisk(tmp_path / "disk", kb))
        return disks[-1]

    yield make
    for d in disks:
        d.close()


HOSTILE_SCORES = f"""\
job_id,cv_id,variant,score,is_true_match
j1,"{LINK.replace('"', '""')}",BASE,0.9,1
j1,"{LINK.replace('"', '""')}",V01,0.8,1
j1,{SUM},BASE,0.7,1
j1,{SUM},V01,0.75,1
j1,{YEARS},BASE,0.5,0
j1,{YEARS},V01,-0.5,0
j1,c4,BASE,0.3,0
j1,c4,V01,0.6,0
"""


def test_a_full_disk_at_execute_exits_2_leaving_a_resumable_run_with_safe_cells(tmp_path, small_disk):
    """ENOSPC while writing the report: exit 2 naming the path and the --resume command, no traceback, the
    run failed at its stage (``audit status`` offers the resume; tests/test_resume.py resumes failed runs);
    the paired.csv written before holds the vendor's ids neutralised (each maps back to its candidate)
    and the scores as numbers; run.json spells no path outside the spec's folder."""
    folder = tmp_path / "audit"
    folder.mkdir()
    (folder / "spec.yaml").write_text(TINY_SPEC.replace("path: scores.csv}", "path: scores.csv, score_range: [-1, 1]}")
                                      .replace("analysis:\n", "analysis:\n  bootstrap: 200\n"))
    (folder / "scores.csv").write_text(HOSTILE_SCORES)
    assert run_cli("compile", "spec.yaml", cwd=folder).returncode == 0
    disk = small_disk(64)
    proc = disk.cli("execute", "--unsigned", "--no-pdf", "spec.yaml", "--quiet", "--out", str(disk.path), cwd=folder)
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    run_dir = next((disk.path / "tiny-audit").iterdir())
    assert f"error: cannot write {run_dir}/" in proc.stderr
    assert ("No space left on device" if disk.tmpfs else "File too large") in proc.stderr
    assert (f"free space on that disk (or make it writable), then complete the run with `audit execute spec.yaml "
            f"--resume {run_dir}`") in proc.stderr
    assert not list(run_dir.glob(".*.tmp")) and not (run_dir / "report.html").exists()  # no half-written file
    run = json.loads((run_dir / "run.json").read_text())
    assert run["status"] == "failed" and run["stage"] == "report" and "report.html" in run["error"]
    assert run["execution"]["out_root"] == "operator's --out" and run["store"] == ".audit-store"
    proc = run_cli("status", str(run_dir), cwd=folder)
    assert proc.returncode == 0 and f"complete it with: audit execute spec.yaml --resume {run_dir} " in proc.stdout
    raw = (run_dir / "paired.csv").read_text(encoding="utf-8")
    rows = list(csv.DictReader(io.StringIO(raw)))
    assert {r["cv_id"] for r in rows} == {"'" + LINK, "'@SUM(1+1)", "'-5 years", "c4"}
    assert '"\'=HYPERLINK(""http://example.invalid/x"",""click"")"' in raw
    scores = {(restore(r["cv_id"]), r["variant"]): r["score"] for r in rows}
    assert scores[(YEARS, "V01")] == "-0.5" and scores[(LINK, "BASE")] == "0.9" and scores[(SUM, "V01")] == "0.75"


BLIND_SPEC = """\
audit: blind-hostile
title: A vendor scores the tool's résumés blind
seed: 21
axes:
  sex_gender:
    slot: name
    levels: [M, F]
    cues: {M: [John Smith, David Miller], F: [Jane Smith, Mary Miller]}
variants:
  reference: BASE
  table:
    BASE: {sex_gender: M}
    V01: {sex_gender: F}
jobs:
  - {id: data-analyst, title: '=HYPERLINK("http://example.invalid/x","click")', description: Writes SQL.}
candidates: {generator: template, base_per_job: 8, matching_per_job: 4}
systems:
  - {id: vendor, kind: precomputed, path: vendor-scores.csv, blind: true, score_range: [0, 100]}
analysis:
  k: {counterfactual: 3, group: 3, merit: 3}
"""


def test_a_full_disk_at_export_leaves_no_partial_vendor_file(tmp_path, small_disk):
    folder = tmp_path / "audit"
    folder.mkdir()
    (folder / "spec.yaml").write_text(BLIND_SPEC)
    assert run_cli("compile", "spec.yaml", cwd=folder).returncode == 0
    proc = run_cli("export", "spec.yaml", "--for-vendor", "to-vendor", "--quiet", cwd=folder)
    assert proc.returncode == 0, proc.stderr
    jobs = list(csv.DictReader(io.StringIO((folder / "to-vendor" / "jobs.csv").read_text(encoding="utf-8"))))
    assert jobs[0]["title"] == "'" + LINK and jobs[0]["job_id"] == "data-analyst"
    size = (folder / "to-vendor" / "resumes.csv").stat().st_size
    disk = small_disk(16)
    assert size > 16 * 1024  # the file cannot fit
    target = disk.path / "to-vendor"
    proc = disk.cli("export", "spec.yaml", "--for-vendor", str(target), "--quiet", cwd=folder)
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    why = "No space left on device" if disk.tmpfs else "File too large"
    assert f"error: cannot write the vendor's files into {target}: {why} (" in proc.stderr
    assert ("); nothing was written there: free space on that disk (or make it writable), or choose another "
            "--for-vendor folder") in proc.stderr
    assert tree(disk.path) == {}  # neither the vendor's folder nor the temporary one


def test_symbolic_links_in_a_received_spec_folder_never_lead_writes_outside(tmp_path):
    """Issue 41, found by a hostile trial: a link planted as the default store, as the lock's ledger or as
    the run's audit folder is refused (exit 2, named); nothing is written where it points."""
    folder, outside = tmp_path / "received", tmp_path / "outside"
    folder.mkdir()
    outside.mkdir()
    (folder / "spec.yaml").write_text(TINY_SPEC)
    (folder / "scores.csv").write_text(TINY_SCORES)
    (folder / "spec.locks.jsonl").symlink_to(outside / "ledger")
    proc = run_cli("compile", "spec.yaml", cwd=folder)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert f"spec.locks.jsonl is a symbolic link (to {outside / 'ledger'}); audit compile never writes through a link" \
        in proc.stderr
    assert not (folder / "spec.lock.json").exists() and not (folder / "spec.plan.json").exists()
    (folder / "spec.locks.jsonl").unlink()
    assert run_cli("compile", "spec.yaml", cwd=folder).returncode == 0
    (folder / ".audit-store").symlink_to(outside)
    proc = run_cli("execute", "--unsigned", "--no-pdf", "spec.yaml", "--quiet", cwd=folder)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert f"the task store .audit-store resolves to {outside}, outside the spec's folder (a symbolic link)" in proc.stderr
    (folder / ".audit-store").unlink()
    (folder / "reports").mkdir()
    (folder / "reports" / "tiny-audit").symlink_to(outside)
    proc = run_cli("execute", "--unsigned", "--no-pdf", "spec.yaml", "--quiet", cwd=folder)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert "reports/tiny-audit is a symbolic link" in proc.stderr and "never written through a link" in proc.stderr
    assert list(outside.iterdir()) == []


def test_verify_refuses_a_named_key_dir_that_holds_nothing_and_never_opens_a_fifo_cert(signed_run, tmp_path,
                                                                                         monkeypatch):
    """A typo in --key-dir (or $AUDIT_KEY_DIR) must not downgrade verification to "nothing was pinned";
    a FIFO or a device given as --cert or --pubkey is named, never opened (exit 6 within seconds)."""
    proc = run_cli("verify", str(signed_run), "--key-dir", str(tmp_path / "typo"), cwd=tmp_path)
    assert proc.returncode == 6 and "Traceback" not in proc.stderr, proc.stdout + proc.stderr
    assert f"FAIL {tmp_path / 'typo'} (named by --key-dir) is not a folder: nothing there to pin" in proc.stderr
    monkeypatch.setenv("AUDIT_KEY_DIR", str(tmp_path))  # a folder, but no manifest.pub or signer.crt
    proc = run_cli("verify", str(signed_run), cwd=tmp_path)
    assert proc.returncode == 6 and "Traceback" not in proc.stderr, proc.stdout + proc.stderr
    assert "(named by $AUDIT_KEY_DIR) holds neither manifest.pub nor signer.crt" in proc.stderr
    monkeypatch.delenv("AUDIT_KEY_DIR")
    os.mkfifo(tmp_path / "fifo.pem")
    for opt, path in (("--cert", tmp_path / "fifo.pem"), ("--pubkey", tmp_path / "fifo.pem"), ("--cert", "/dev/zero")):
        proc = run_cli("verify", str(signed_run), opt, str(path), cwd=tmp_path, timeout=20)
        assert proc.returncode == 6 and "Traceback" not in proc.stderr, proc.stdout + proc.stderr
        assert "not a regular file" in proc.stderr
