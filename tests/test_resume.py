"""Killed runs and ``--resume`` (issue 11): a SIGKILL at a chosen point of each stage leaves a
``run.json`` that parses and reads as interrupted; ``verify`` refuses the run (exit 6); ``audit
execute --resume`` completes it in place with the result bytes of an uninterrupted run. A warm re-run
of the same locked spec reuses every finished task (no encode). Kills come from the test-only hook
``AUDIT_TEST_KILL_AT`` (runtime.testhooks)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import run_cli

pytestmark = pytest.mark.slow

RESULTS = ("metrics.csv", "metrics_by_job.csv", "paired.csv", "effects.csv", "sesoi.csv", "power.csv", "resumes.csv",
           "risk.csv", "drift.csv")

TEMPLATE_SPEC = """\
audit: kill-template
title: Kill and resume, template generator and the real embedding model
seed: 3
axes:
  sex_gender:
    slot: name
    levels: [Male-FR, Female-NA]
    cues: {Male-FR: [Julien Moreau, Thomas Girard], Female-NA: [Nadia Brahimi, Leila Bensaid]}
variants:
  design: one_at_a_time
jobs:
  - {id: accountant, description: "Accountant: prepares financial statements, reconciles accounts, files taxes."}
candidates: {base_per_job: 40, matching_per_job: 6}
systems: [{id: minilm, kind: embedding}]
analysis:
  k: {counterfactual: 4, group: 4, merit: 6}
  bootstrap: 100
  effect_size: {sesoi: 0.2}
"""

PRECOMPUTED_SPEC = """\
audit: kill-precomputed
title: Kill and resume, a vendor's score file
seed: 9
axes:
  sex_gender:
    slot: name
    levels: [M, F]
    cues: {M: [Paul Martin], F: [Anne Martin]}
variants:
  reference: BASE
  table:
    BASE: {sex_gender: M}
    V01: {sex_gender: F}
jobs:
  - {id: j1, title: Analyst}
systems:
  - {id: vendor, kind: precomputed, path: scores.csv, score_range: [0, 100]}
analysis:
  k: {counterfactual: 3, group: 3, merit: 3}
  bootstrap: 100
"""


def _scores_csv() -> str:
    rows = ["job_id,cv_id,variant,score,is_true_match"]
    for i in range(12):
        rows += [f"j1,c{i:02d},BASE,{40 + 3 * i},{i % 2}", f"j1,c{i:02d},V01,{41 + 3 * i - (i % 3)},{i % 2}"]
    return "\n".join(rows) + "\n"


def _setup(folder: Path, which: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    if which == "template":
        (folder / "spec.yaml").write_text(TEMPLATE_SPEC)
    else:
        (folder / "spec.yaml").write_text(PRECOMPUTED_SPEC)
        (folder / "scores.csv").write_text(_scores_csv())
    proc = run_cli("compile", "spec.yaml", cwd=folder)
    assert proc.returncode == 0, proc.stderr
    return folder


def _execute(folder: Path, *extra: str, kill: str | None = None, pdf: bool = False) -> subprocess.CompletedProcess:
    """``audit execute --unsigned`` of ``folder``'s spec into ``out/``; a trial run without the PDF unless ``pdf``."""
    env = dict(os.environ, PYTHONHASHSEED="0", COLUMNS="200")
    env.pop("AUDIT_TEST_KILL_AT", None)
    if kill:
        env["AUDIT_TEST_KILL_AT"] = kill
    return subprocess.run([sys.executable, "-c", "from runtime.cli import main; main()", "execute", "--unsigned",
                           *(() if pdf else ("--no-pdf",)), "spec.yaml", "--quiet", "--out", "out", *extra],
                          cwd=folder, env=env, capture_output=True, text=True, timeout=900)


def _run_dirs(folder: Path) -> list[Path]:
    return sorted(p for p in (folder / "out").glob("*/*") if p.is_dir())


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """Uninterrupted runs of both specs, each with a store of its own: the bytes a resume must give."""
    out = {}
    for which in ("template", "precomputed"):
        folder = _setup(tmp_path_factory.mktemp(f"ref-{which}"), which)
        proc = _execute(folder)
        assert proc.returncode == 0, proc.stderr
        out[which] = (folder, _run_dirs(folder)[0])
    return out


#: Every stage is killed at least once. The template spec (the real model: two model loads a kill) is killed where
#: a score file cannot be (generate, encode, score, and the effects family it alone enables); the stages after the
#: scores (the metric suite, the report, the seal) are the same code for both specs and are killed on the score file.
KILLS = [
    ("template", "generate"), ("template", "encode:minilm:1"), ("template", "score:minilm"),
    ("template", "family:effects"),
    ("precomputed", "score:vendor"), ("precomputed", "family:metric_suite"), ("precomputed", "report"),
    ("precomputed", "seal"),
]


@pytest.mark.parametrize("which,point", KILLS, ids=[f"{w}-{p}" for w, p in KILLS])
def test_a_killed_run_resumes_to_the_same_bytes(which, point, reference, tmp_path):
    folder = _setup(tmp_path / which, which)
    proc = _execute(folder, kill=point)
    assert proc.returncode == -signal.SIGKILL, (proc.returncode, proc.stderr[-2000:])
    (run_dir,) = _run_dirs(folder)
    run = json.loads((run_dir / "run.json").read_text())  # parses: written atomically at each stage
    assert run["status"] == "running"  # what the killed process last wrote ...
    st = run_cli("status", str(run_dir), cwd=folder)  # ... and what a reader concludes: its process is gone
    assert st.returncode == 0 and f"{run_dir}: interrupted" in st.stdout, st.stdout + st.stderr
    assert json.loads((run_dir / "run.json").read_text())["status"] == "interrupted"
    ver = run_cli("verify", str(run_dir), cwd=folder)
    assert ver.returncode == 6 and "interrupted" in ver.stderr, ver.stderr
    assert "Traceback" not in ver.stderr
    proc = _execute(folder, "--resume", str(run_dir))
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert _run_dirs(folder) == [run_dir]  # completed in place
    run = json.loads((run_dir / "run.json").read_text())
    assert run["status"] == "done" and run["resumed"][0]["previous_status"] == "interrupted"
    if point.startswith("encode:"):  # killed after the plan's first score batch (32 bases x 2 variants)
        info = run["systems_info"]["minilm"]
        assert (info["score_batches"], info["resumes_from_store"], info["encoded_texts"]) == (2, 64, 16), info
    ref_dir = reference[which][1]
    for name in RESULTS:
        if (ref_dir / name).exists():
            assert (run_dir / name).read_bytes() == (ref_dir / name).read_bytes(), name
    assert not list(run_dir.glob(".*"))  # no lock file, no temporary file left
    assert "completed in place with <code>audit execute --resume</code>" in (run_dir / "report.html").read_text()
    assert set(json.loads((run_dir / "manifest.json").read_text())["artifacts"][0]) >= {"path", "sha256"}


def test_a_resume_renders_the_pdf_as_its_own_call_says(tmp_path):
    """``--no-pdf`` (a trial run) is the resuming call's choice: a run killed after its PDF (at the seal) and
    resumed with ``--no-pdf`` drops that PDF, lists it nowhere and says so in ``run.json`` and its report. (The
    other way, a trial run resumed with its PDF: tests/test_http_system.py, which reads that PDF.)"""
    folder = _setup(tmp_path / "full", "precomputed")
    assert _execute(folder, kill="seal", pdf=True).returncode == -signal.SIGKILL
    (run_dir,) = _run_dirs(folder)
    assert (run_dir / "report.pdf").exists()  # rendered before the kill
    proc = _execute(folder, "--resume", str(run_dir))
    assert proc.returncode == 0, proc.stderr[-3000:]
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert not (run_dir / "report.pdf").exists() and json.loads((run_dir / "run.json").read_text())["report_pdf"] is False
    assert "report.pdf" not in {a["path"] for a in manifest["artifacts"]}
    assert "Trial run without a PDF" in (run_dir / "report.html").read_text()


def test_no_pdf_is_refused_for_a_signed_run(tmp_path):
    """A signed run's report is its signed PDF: ``--no-pdf`` without ``--unsigned`` exits 2 before any work
    (no run folder), one line, no traceback."""
    folder = _setup(tmp_path / "signed", "precomputed")
    env = dict(os.environ, PYTHONHASHSEED="0", COLUMNS="200")
    proc = subprocess.run([sys.executable, "-c", "from runtime.cli import main; main()", "execute", "--no-pdf",
                           "spec.yaml", "--quiet", "--out", "out"], cwd=folder, env=env, capture_output=True,
                          text=True, timeout=900)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.strip() == ("error: --no-pdf writes a trial run without its PDF report, and a signed run's "
                                   "report is its signed PDF: give --no-pdf with --unsigned, or drop it")
    assert not (folder / "out").exists()


def test_a_warm_rerun_reuses_every_finished_task(reference, tmp_path):
    folder = tmp_path / "warm"
    shutil.copytree(reference["template"][0], folder, ignore=shutil.ignore_patterns("out"))
    proc = _execute(folder)
    assert proc.returncode == 0, proc.stderr
    (run_dir,) = _run_dirs(folder)
    run = json.loads((run_dir / "run.json").read_text())
    assert run["computed_tasks"] == []  # nothing generated, nothing encoded
    assert [t.split("-")[0] for t in run["reused_tasks"]] == ["generate", "score"]
    assert "reused 2 finished task(s)" in proc.stdout
    assert "Taken from the task store" in (run_dir / "report.html").read_text()
    for name in RESULTS:
        assert (run_dir / name).read_bytes() == (reference["template"][1] / name).read_bytes(), name


def test_resume_refuses_a_finished_run_and_a_folder_that_is_not_a_run(reference, tmp_path):
    folder, run_dir = reference["precomputed"]
    proc = _execute(folder, "--resume", str(run_dir))
    assert proc.returncode == 2 and "nothing to resume" in proc.stderr and "Traceback" not in proc.stderr
    proc = _execute(folder, "--resume", str(tmp_path))
    assert proc.returncode == 2 and "no readable run.json" in proc.stderr


def test_a_changed_store_blob_is_never_reused(reference, tmp_path):
    """Every blob is checked against its sha256 on read: a corrupted entry is recomputed."""
    folder = tmp_path / "corrupt"
    shutil.copytree(reference["precomputed"][0], folder, ignore=shutil.ignore_patterns("out"))
    blobs = sorted((folder / ".audit-store" / "objects").glob("*/*"))
    assert blobs
    for b in blobs:
        b.write_bytes(b.read_bytes()[:-1] + b"\0")
    proc = _execute(folder)
    assert proc.returncode == 0, proc.stderr
    (run_dir,) = _run_dirs(folder)
    run = json.loads((run_dir / "run.json").read_text())
    assert run["reused_tasks"] == [] and [t.split("-")[0] for t in run["computed_tasks"]] == ["score"]
    assert (run_dir / "metrics.csv").read_bytes() == (reference["precomputed"][1] / "metrics.csv").read_bytes()
    proc = _execute(folder)  # the damaged blob was rewritten: the next run reuses the entry
    assert proc.returncode == 0, proc.stderr
    run = json.loads((_run_dirs(folder)[-1] / "run.json").read_text())
    assert [t.split("-")[0] for t in run["reused_tasks"]] == ["score"] and run["computed_tasks"] == []


def test_a_sealed_run_missing_its_manifest_is_not_resumed(reference, tmp_path):
    """Removing manifest.json from a sealed run is tampering for verify to report, not an interruption
    that --resume could paper over by sealing again."""
    folder = tmp_path / "sealed"
    shutil.copytree(reference["precomputed"][0], folder)
    (run_dir,) = _run_dirs(folder)
    (run_dir / "manifest.dsse.json").write_text("{}")  # stands for the envelope of a signed run
    (run_dir / "manifest.json").unlink()
    proc = _execute(folder, "--resume", str(run_dir))
    assert proc.returncode == 2 and "nothing to resume" in proc.stderr, proc.stderr


def test_the_store_never_makes_a_repository_dirty(reference):
    store = reference["precomputed"][0] / ".audit-store"
    assert (store / ".gitignore").read_text().splitlines()[-1] == "*"


def test_a_store_that_cannot_be_written_is_a_clear_error(tmp_path):
    folder = _setup(tmp_path / "badstore", "precomputed")
    (folder / ".audit-store").write_text("not a folder")
    proc = _execute(folder)
    assert proc.returncode == 2 and "cannot write the task store" in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr


def test_gc_keeps_what_a_lock_refers_to(reference, tmp_path):
    folder = tmp_path / "gc"
    shutil.copytree(reference["precomputed"][0], folder, ignore=shutil.ignore_patterns("out"))
    store = folder / ".audit-store"
    n = len(list((store / "tasks").glob("*.json")))
    assert n >= 1
    dry = run_cli("gc", ".", cwd=folder)
    assert dry.returncode == 0 and "0 of" in dry.stdout, dry.stdout + dry.stderr
    for wrong in (["./no-such-folder", "--delete"], ["spec.yaml", "--delete"]):  # a typo never empties the store
        proc = run_cli("gc", *wrong, cwd=folder)
        assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    (folder / "spec.lock.json").rename(folder / "old.json")
    proc = run_cli("gc", ".", "--delete", cwd=folder)  # no lock at all: refused, not "remove everything"
    assert proc.returncode == 2 and "no *.lock.json" in proc.stderr
    (folder / "other").mkdir()
    resolved = json.loads((folder / "old.json").read_text())["resolved_spec"]
    resolved["jobs"][0]["title"] = "Another job"  # the score task hashes its job: another task id
    (folder / "other" / "x.lock.json").write_text(json.dumps({"resolved_spec": resolved}))
    dry = run_cli("gc", ".", cwd=folder)  # a lock that refers to other tasks: these are unused
    assert f"{n} of {n} task(s)" in dry.stdout and len(list((store / "tasks").glob("*.json"))) == n
    done = run_cli("gc", ".", "--delete", cwd=folder)
    assert done.returncode == 0 and not list((store / "tasks").glob("*.json"))
    assert not [p for p in (store / "objects").rglob("*") if p.is_file()]
