"""The engagement's history, an honest dirty flag, unsigned runs and the compile table (issue 37 §3-§4).

- three signed runs, an amendment, a fourth run: the fourth report lists the three earlier run ids under the
  superseded lock (read from the PDF with ``pdftotext``), ``run.json`` keeps the list, and the second and
  third runs say "this lock already has sealed run(s)" and "run N under this lock";
- two runs in a clean git repository (no ``.gitignore`` for the run folders or the store) are both clean;
  editing a tracked input makes the next one dirty, naming the file;
- every file of those run folders follows the umask (0644 under 022);
- ``audit compile`` prints the pre-registered thresholds in one table.

The CLI runs in this process (``runtime.cli.main``) to keep the file fast; the unsigned exit code (8) is
tested through a subprocess in ``tests/test_sign.py``.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
from pathlib import Path

import pytest

from tests.conftest import SIGNER, TINY_SCORES, TINY_SPEC


def _cli(capsys, *args: str) -> tuple[int, str, str]:
    """``audit ARGS`` in this process: (exit code, stdout, stderr)."""
    from runtime.cli import main

    with pytest.raises(SystemExit) as info:
        main(list(args))
    out = capsys.readouterr()
    return int(info.value.code or 0), out.out, out.err


def _runs(root: Path) -> list[Path]:
    """The run folders under ``root``, in the order they were made (run ids sort by time)."""
    return sorted(p for p in (root / "tiny-audit").iterdir() if p.is_dir())


@pytest.fixture
def work(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("AUDIT_KEY_DIR", raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))  # an empty default key directory
    monkeypatch.setenv("COLUMNS", "200")
    (tmp_path / "spec.yaml").write_text(TINY_SPEC)
    (tmp_path / "scores.csv").write_text(TINY_SCORES)
    return tmp_path


@pytest.fixture
def umask_022():
    old = os.umask(0o022)
    yield
    os.umask(old)


def test_the_fourth_report_lists_the_runs_sealed_under_the_superseded_lock(work, capsys, key_dir, umask_022):
    assert _cli(capsys, "compile", "spec.yaml")[0] == 0
    errs = []
    for _ in range(3):
        code, _out, err = _cli(capsys, "execute", "spec.yaml", "--quiet", "--key-dir", str(key_dir))
        assert code == 0, err
        errs.append(err)
    first = _runs(work / "reports")
    ids = [p.name for p in first]
    assert len(ids) == 3
    # not an error: said on stderr, and on the report's first page
    assert "this lock already has sealed run(s)" not in errs[0]
    assert f"this lock already has sealed run(s) (1: {ids[0]}); this is run 2 under this lock" in errs[1]
    assert f"this lock already has sealed run(s) (2: {ids[0]}, {ids[1]}); this is run 3 under this lock" in errs[2]
    third = (first[2] / "report.html").read_text()
    hero = third[third.index('id="hero-run-number"'):third.index("</dd>", third.index('id="hero-run-number"'))]
    assert "run 3 under this lock" in hero and ids[0] in hero and ids[1] in hero
    assert "run 1 under this lock: no earlier sealed run" in (first[0] / "report.html").read_text()

    spec = work / "spec.yaml"
    spec.write_text(spec.read_text().replace("pass: 0.03", "pass: 0.04"))
    assert _cli(capsys, "compile", "spec.yaml", "--amend", "--reason", "threshold reviewed")[0] == 0
    code, _out, err = _cli(capsys, "execute", "spec.yaml", "--quiet", "--key-dir", str(key_dir))
    assert code == 0, err
    assert "this lock already has sealed run(s)" not in err  # the first run under the amended lock
    fourth = _runs(work / "reports")[-1]
    run = json.loads((fourth / "run.json").read_text())
    lock = json.loads((work / "spec.lock.json").read_text())
    old_created = lock["amendments"][0]["previous"]["created_at"]
    (superseded,) = run["engagement"]["superseded"]
    assert (superseded["amendment"], superseded["created_at"]) == (1, old_created)
    assert [r["run_id"] for r in superseded["runs"]] == ids
    assert all(r["signer"].startswith(SIGNER) and r["sealed_at"] for r in superseded["runs"])
    assert run["engagement"]["this_lock"] == {"created_at": lock["created_at"], "runs": [], "run_number": 1}
    # the signed PDF says so under Amendments (pdftotext -raw keeps a table row on one line)
    text = subprocess.run(["pdftotext", "-raw", str(fourth / "report.pdf"), "-"], capture_output=True, text=True,
                          check=True).stdout
    text = " ".join(text.split())
    section = text[text.index("Runs of this audit before this one"):]
    assert f"Superseded lock 1 (created {old_created}" in section and "3 sealed run(s)" in section
    for rid, rec in zip(ids, superseded["runs"]):
        assert f"{rid} {rec['sealed_at']} {rec['signer']}" in section.replace("\u00ad", "")
    assert "This lock: No earlier run: this is the first run sealed under it." in section
    # the sealed run verifies with its new run.json fields
    code, _out, err = _cli(capsys, "verify", str(fourth), "--key-dir", str(key_dir))
    assert code == 0, err
    # issue 37 §4: every file of every run follows the umask, 0644 under 022 (none 0600, which a shared
    # folder or an upload tool cannot read)
    files = [p for run_dir in _runs(work / "reports") for p in run_dir.rglob("*") if p.is_file()]
    assert {"run.json", "report.pdf", "manifest.json", "manifest.dsse.json", "lock.json", "signer.crt",
            "metrics.csv", "summary.json"} <= {p.name for p in files}
    modes = {p.relative_to(work).as_posix(): oct(stat.S_IMODE(p.stat().st_mode)) for p in files}
    assert modes == dict.fromkeys(modes, "0o644")
    # a run folder carried elsewhere keeps its list: the report reads run.json, not the store
    shutil.rmtree(work / ".audit-store")
    assert json.loads((fourth / "run.json").read_text())["engagement"]["superseded"][0]["runs"] == \
        superseded["runs"]


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.org", *args], cwd=cwd,
                          check=True, capture_output=True, text=True).stdout.strip()


def test_dirty_counts_tracked_changes_and_named_inputs_only(work, capsys):
    """Issue 37 §3: run folders and the task store (no .gitignore names them here) never make the tree
    dirty; an edited tracked input does, and is named."""
    (work / "notes.md").write_text("kept out of git on purpose\n")
    assert _cli(capsys, "compile", "spec.yaml")[0] == 0
    _git(work, "init", "-q")
    _git(work, "add", "spec.yaml", "scores.csv", "spec.lock.json", "spec.plan.json")
    _git(work, "commit", "-qm", "pre-register")
    head = _git(work, "rev-parse", "HEAD")
    for _ in range(2):
        assert _cli(capsys, "execute", "spec.yaml", "--quiet", "--unsigned", "--no-pdf")[0] == 0
    runs = [json.loads((p / "run.json").read_text())["spec_git"] for p in _runs(work / "reports")]
    assert runs == [{"commit": head, "dirty": False, "changed": [], "spec_path": "spec.yaml"}] * 2
    # an untracked input the spec names is not in the commit: dirty (git_info itself: no run needed)
    from runtime.provenance.sign import git_info

    (work / "jobs.md").write_text("a job description not yet committed\n")
    assert git_info(work / "spec.yaml", ["jobs.md", "scores.csv"], exclude=[work / "reports"]) == \
        {"commit": head, "dirty": True, "changed": ["jobs.md"], "spec_path": "spec.yaml"}
    assert git_info(work / "spec.yaml", ["scores.csv"])["dirty"] is False  # an untracked file no one names
    (work / "jobs.md").unlink()
    # an edited tracked input: the lock refuses changed data, so the edit is one that keeps the digest
    # out of play: a tracked file the spec names (the spec itself) gains a comment
    (work / "spec.yaml").write_text((work / "spec.yaml").read_text() + "# reviewed\n")
    assert _cli(capsys, "execute", "spec.yaml", "--quiet", "--unsigned", "--no-pdf")[0] == 0
    last = _runs(work / "reports")[-1]
    git = json.loads((last / "run.json").read_text())["spec_git"]
    assert (git["dirty"], git["changed"]) == (True, ["spec.yaml"])
    html = (last / "report.html").read_text()
    assert '<span id="git-changed"><code class="wrap">spec.yaml</code></span>' in html


def test_compile_prints_the_pre_registered_thresholds_in_one_table(work, capsys):
    """Issue 37 §3: every (tier, metric) of the lock, once, with its bands in the direction the
    classifier reads them (seed 000 Table 3)."""
    code, out, _err = _cli(capsys, "compile", "spec.yaml")
    assert code == 0
    lock = json.loads((work / "spec.lock.json").read_text())
    table = out[out.index("pre-registered thresholds"):out.index("spec digest")]
    header, *rows = ([c.strip() for c in line.strip("│┃ ").split("│" if "│" in line else "┃")]
                     for line in table.splitlines() if line.startswith(("│", "┃")))
    assert header == ["tier", "metric", "PASS", "INVESTIGATE", "FAIL"]
    expected = [(t, m) for t, ms in lock["thresholds"].items() for m in ms]
    assert [(r[0], r[1]) for r in rows] == expected and len(expected) == 18
    bands = {(r[0], r[1]): r[2:] for r in rows}
    assert bands["research", "score_delta"] == ["|v| ≤ 0.03", "|v| ≤ 0.05", "|v| > 0.05"]  # the spec's own
    assert bands["operational", "score_delta"] == ["|v| ≤ 0.04", "|v| ≤ 0.05", "|v| > 0.05"]  # Table 3's
    assert bands["research", "impact_ratio"] == ["v ≥ 0.8", "v ≥ 0.7", "v < 0.7"]  # higher is better


def test_the_ledger_lists_sealed_runs_once_per_lock_and_audit(tmp_path):
    """Started-but-never-sealed runs are not listed, a resumed run sealed twice is listed once (its first
    seal), other audits' runs and torn lines are ignored, and this run is not its own earlier run."""
    from runtime.provenance.locksign import LEDGER, engagement, sealed_runs

    def line(**kw):
        return json.dumps({"audit": "a", "spec_digest": "d", **kw})

    old, new = "2026-01-01T00:00:00Z", "2026-02-01T00:00:00Z"
    (tmp_path / LEDGER).write_text("\n".join([
        line(created_at=old, run_id="r1"),  # started ...
        line(created_at=old, run_id="r1", event="sealed", sealed_at="2026-01-02T00:00:00Z", signer="Jane"),
        line(created_at=old, run_id="r2"),  # started, never sealed (failed)
        line(created_at=old, run_id="r3", event="sealed", sealed_at="2026-01-03T00:00:00Z", signer=None),
        line(created_at=old, run_id="r3", event="sealed", sealed_at="2026-01-04T00:00:00Z", signer=None),
        json.dumps({"audit": "b", "created_at": old, "run_id": "x", "event": "sealed", "sealed_at": "t"}),
        line(created_at=new, run_id="r4", event="sealed", sealed_at="2026-02-02T00:00:00Z", signer="Jane"),
        '{"audit": "a", "created_at": "2026-02-01T00:00:00Z", "run_id": "torn', ""]))
    assert sealed_runs(tmp_path, "a") == {
        old: [{"run_id": "r1", "sealed_at": "2026-01-02T00:00:00Z", "signer": "Jane"},
              {"run_id": "r3", "sealed_at": "2026-01-03T00:00:00Z", "signer": None}],
        new: [{"run_id": "r4", "sealed_at": "2026-02-02T00:00:00Z", "signer": "Jane"}]}
    lock = {"audit": "a", "created_at": new,
            "amendments": [{"previous": {"created_at": old, "spec_digest": {"algorithm": "sha256", "digest": "d"}}}]}
    got = engagement(lock, store_root=tmp_path, run_id="r5")
    assert [r["run_id"] for r in got["superseded"][0]["runs"]] == ["r1", "r3"]
    assert (got["superseded"][0]["amendment"], got["superseded"][0]["spec_digest"]) == (1, "d")
    assert got["this_lock"]["run_number"] == 2 and [r["run_id"] for r in got["this_lock"]["runs"]] == ["r4"]
    assert engagement(lock, store_root=tmp_path, run_id="r4")["this_lock"]["run_number"] == 1  # not its own
    assert engagement(lock, store_root=tmp_path / "none", run_id="r5")["superseded"][0]["runs"] == []
