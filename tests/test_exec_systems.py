"""``kind: command`` and ``kind: python`` (issue 36 §1-§3, Must show): a vendor's program or Python function runs
only under ``audit execute --allow-exec``; validate, compile, ``verify --spec``, export and gc never run or import
it. A seeded keyword matcher (``tests/data/exec/kw_match.py``: 8 points less for one level, answers written in
reverse order) is audited end to end: the planted level is named with -0.08 in its interval, ``metrics.csv`` is
byte-identical to the same scores as a score file, a second execute starts no process and an edited program is
exit 3. Each broken protocol is exit 7 with its exact message; answers stored before it are kept and a re-run
continues. The python kind runs the same matcher from a file and from a package on ``PYTHONPATH`` (a ``dist-info``
made here) whose version bump is exit 3 naming the key."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sys
from pathlib import Path

import pandas as pd
import pytest

from conftest import run_cli

MATCHER = Path(__file__).parent / "data" / "exec" / "kw_match.py"
JOB = "Writes SQL and builds dashboards. Needs three years of analysis experience."

SPEC = """\
audit: command-vendor
title: A vendor program that marks one level down
seed: 5
axes:
  sex_gender:
    slot: name
    levels: [M, F]
    cues: {{M: [John Smith], F: [Fatima Rahmani]}}
variants:
  reference: BASE
  table:
    BASE: {{sex_gender: M}}
    V01: {{sex_gender: F}}
jobs:
  - {{id: data-analyst, title: Data Analyst, family: data-analyst,
     description: {job}}}
candidates: {{generator: template, base_per_job: 12, matching_per_job: 6}}
systems:
{system}
analysis:
  k: {{counterfactual: 4, group: 4, merit: 6}}
  bootstrap: 200
execution:
  store: store
"""

COMMAND = """\
  - id: vendor
    kind: command
    argv: [{python}, tools/kw_match.py, --marker, {marker}{extra}]
    version: "kw-match 1.4"
    batch_size: 8
    score_range: [0, 100]
    score_resolution: 1"""

SCORE_FILE = "  - {id: vendor, kind: precomputed, path: scores.csv, score_range: [0, 100], score_resolution: 1}"

PYTHON = """\
  - id: vendor
    kind: python
    function: {function}{package}
    version: "kw-match 1.4"
    batch_size: 8
    score_range: [0, 100]
    score_resolution: 1"""


def _folder(folder: Path, system: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "tools").mkdir(exist_ok=True)
    shutil.copy(MATCHER, folder / "tools" / "kw_match.py")
    (folder / "spec.yaml").write_text(SPEC.format(job=JOB, system=system))
    return folder


def _runs(folder: Path) -> list[Path]:
    return sorted(p for p in (folder / "reports").glob("*/*") if p.is_dir())


def _cmd(marker: Path, extra: str = "") -> str:
    """:data:`COMMAND` with this interpreter and a marker file outside the spec's folder (a file inside it that
    argv names is locked by its sha256: one the program writes would change the spec's digest)."""
    return COMMAND.format(python=sys.executable, marker=marker, extra=extra)


def _starts(marker: Path) -> int:
    """How many times the matcher started (lines of its marker file)."""
    return len(marker.read_text().splitlines()) if marker.exists() else 0


def test_a_vendor_program_runs_only_with_allow_exec_and_is_audited_end_to_end(tmp_path):
    marker = tmp_path / "marker.txt"
    work = _folder(tmp_path / "cmd", _cmd(marker))

    # validate and compile never run the program: digests only
    for args in (("validate", "spec.yaml"), ("compile", "spec.yaml")):
        proc = run_cli(*args, cwd=work)
        assert proc.returncode == 0, proc.stderr
    assert _starts(marker) == 0
    lock = json.loads((work / "spec.lock.json").read_text())
    sha = __import__("hashlib").sha256(MATCHER.read_bytes()).hexdigest()
    assert sha in json.dumps(lock)

    # execute without the flag: exit 2 before any work, naming the system, its program, sha256 and the flag
    proc = run_cli("execute", "spec.yaml", "--quiet", "--unsigned", "--no-pdf", cwd=work)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.startswith("error: spec.yaml runs vendor code on this machine, which `audit execute` does "
                                  "only with --allow-exec (nothing was run):\n")
    assert (f"system 'vendor' (command): argv: {sys.executable} tools/kw_match.py --marker {marker} (kw-match 1.4); "
            f"tools/kw_match.py sha256 {sha}; {sys.executable} known by name only") in proc.stderr
    assert "then run `audit execute --allow-exec spec.yaml`" in proc.stderr
    assert _starts(marker) == 0 and not (work / "reports").exists() and not (work / "store").exists()

    proc = run_cli("execute", "spec.yaml", "--quiet", "--unsigned", "--no-pdf", "--allow-exec", cwd=work)
    assert proc.returncode == 0, proc.stderr[-3000:]
    (run_dir,) = _runs(work)
    assert _starts(marker) == 3  # 24 résumés, batch_size 8: one process per request batch
    run = json.loads((run_dir / "run.json").read_text())
    assert run["allow_exec"] is True
    assert run["reproduce"][-1] == "audit compile spec.yaml && audit execute --allow-exec spec.yaml"
    info = run["systems_info"]["vendor"]
    assert info["processes"] == {"started": 3, "from_cache": 0, "invalid": 0}
    assert info["settings"] == {"concurrency": 1, "timeout_s": 60.0} and info["answers"]["valid"] == 24
    # the planted -8 points: F is the disadvantaged level, and -0.08 lies inside the interval
    metrics = pd.read_csv(run_dir / "metrics.csv", keep_default_na=False)
    row = metrics[(metrics["metric"] == "score_delta") & (metrics["variant"] == "V01")].iloc[0]
    assert row["disadvantaged"] == "F" and row["status"] == "FAIL"
    assert float(row["ci_low"]) <= -0.08 <= float(row["ci_high"]) and float(row["ci_low"]) < float(row["ci_high"])
    # stderr is kept, one part per request batch; opaque ids only
    stderr = (run_dir / "stderr_vendor.txt").read_text()
    assert stderr.count("kw-match 1.4: 8 request lines") == 3 and stderr.count("# plan task ") == 3
    key = pd.read_csv(run_dir / "request_key_vendor.csv")
    answers = pd.read_csv(run_dir / "answers_vendor.csv")
    assert len(answers) == 24 and answers["valid"].all() and set(answers["resume_id"]) == set(key["resume_id"])
    assert answers["resume_id"].str.fullmatch(r"R[0-9A-F]{10}").all()
    assert f"{sys.executable} known by name only" in (run_dir / "report.html").read_text()

    # verify --spec never runs it either (digests only)
    run_cli("verify", str(run_dir), "--spec", "spec.yaml", cwd=work)
    assert _starts(marker) == 3

    # a second execute starts no process: every batch's answer comes from the store
    proc = run_cli("execute", "spec.yaml", "--quiet", "--unsigned", "--no-pdf", "--allow-exec", cwd=work)
    assert proc.returncode == 0, proc.stderr[-3000:]
    second = _runs(work)[-1]
    assert _starts(marker) == 3
    info2 = json.loads((second / "run.json").read_text())["systems_info"]["vendor"]
    assert info2["processes"] == {"started": 0, "from_cache": 3, "invalid": 0}
    assert (second / "metrics.csv").read_bytes() == (run_dir / "metrics.csv").read_bytes()

    # the same scores as a score file: the same metrics.csv, byte for byte
    files = tmp_path / "file"
    files.mkdir()
    pd.read_csv(run_dir / "paired.csv")[["job_id", "cv_id", "variant", "score"]].to_csv(files / "scores.csv", index=False)
    (files / "spec.yaml").write_text(SPEC.format(job=JOB, system=SCORE_FILE))
    assert run_cli("compile", "spec.yaml", cwd=files).returncode == 0
    proc = run_cli("execute", "spec.yaml", "--quiet", "--unsigned", "--no-pdf", cwd=files)
    assert proc.returncode == 0, proc.stderr[-3000:]
    (file_run,) = _runs(files)
    assert (file_run / "metrics.csv").read_bytes() == (run_dir / "metrics.csv").read_bytes()

    # the program edited after compile: the spec no longer matches its lock (exit 3), nothing runs
    with open(work / "tools" / "kw_match.py", "a") as fh:
        fh.write("# tuned\n")
    proc = run_cli("execute", "spec.yaml", "--quiet", "--unsigned", "--no-pdf", "--allow-exec", cwd=work)
    assert proc.returncode == 3 and "Traceback" not in proc.stderr, proc.stderr
    flat = " ".join(proc.stderr.split())  # the console wraps long lines
    assert f"- systems[0].files[0].sha256: the input file tools/kw_match.py changed (sha256 locked {sha}, now " in flat
    assert _starts(marker) == 3


def test_a_program_that_fails_is_exit_7_naming_the_plan_task_and_stderr(tmp_path):
    marker = tmp_path / "marker.txt"
    work = _folder(tmp_path / "fails", _cmd(marker, ", --exit, '4'"))
    assert run_cli("compile", "spec.yaml", cwd=work).returncode == 0
    proc = run_cli("execute", "spec.yaml", "--quiet", "--unsigned", "--no-pdf", "--allow-exec", cwd=work)
    assert proc.returncode == 7 and "Traceback" not in proc.stderr, proc.stderr[-3000:]
    plan = json.loads((work / "spec.plan.json").read_text())
    task = next(t["id"] for t in plan["tasks"] if t["id"].startswith("score"))
    (run_dir,) = _runs(work)
    first = pd.read_csv(run_dir / "request_key_vendor.csv")
    assert (f"error: system 'vendor' (command): plan task {task}: {sys.executable} exited with status 4 on request "
            "lines 1-8 (request line 1: id ") in proc.stderr
    assert "stderr's last line: kw-match: model file models/v2.bin not found." in proc.stderr
    assert len(first) == 24 and _starts(marker) == 1
    assert "kw-match: model file models/v2.bin not found" in (run_dir / "stderr_vendor.txt").read_text()


# --------------------------------------------------------------------- the protocol, in process (no report)

def _request(folder: Path, store_dir: Path, n_base: int = 4):
    """A ScoreRequest of ``n_base`` base candidates under BASE (John Smith) and V01 (Fatima Rahmani), one job."""
    from runtime.store import TaskStore
    from runtime.systems.base import ScoreRequest

    rows = []
    for c in range(n_base):
        body = f"PROFESSIONAL SUMMARY\nAnalyst {c} who writes SQL and builds dashboards; {3 + c} years.\n"
        for variant, name in (("BASE", "John Smith"), ("V01", "Fatima Rahmani")):
            rows.append({"job_id": "data-analyst", "cv_id": f"cv{c}", "variant": variant, "is_true_match": c % 2,
                         "text": f"{name}\n{body}"})
    return ScoreRequest(jobs={"data-analyst": JOB}, resumes=pd.DataFrame(rows), variants=["BASE", "V01"],
                        spec_folder=folder, seed=5, store=TaskStore(store_dir), plan_tasks=["score-data-analyst-0"])


def _resolve(folder: Path, system_yaml: str) -> dict:
    from compiler import compile_spec

    (folder / "spec.yaml").write_text(SPEC.format(job=JOB, system=system_yaml))
    return compile_spec(folder / "spec.yaml").resolved["systems"][0]


def _command(folder: Path, extra: str = "", batch: int = 4) -> dict:
    _folder(folder, "")
    return _resolve(folder, _cmd(folder.parent / f"{folder.name}-marker.txt", extra).replace("batch_size: 8",
                                                                                       f"batch_size: {batch}"))


def _score(kind_adapter, resolved, request, settings=None):
    from dataclasses import replace

    from runtime.pipeline.engine import score_system

    return score_system(kind_adapter(resolved), replace(request, system_settings={"vendor": settings or {}}))


PROTOCOL = {
    # flag -> (the message after "system 'vendor' (command): plan task score-data-analyst-0: ", stderr's last line)
    "--garbage, '3'": "stdout line 2 is not a JSON object with an id: 'score for {r3}: {s3}'",
    "--unknown, '3'": "stdout line 2 answers id 'RUNKNOWN0', which no request line of this batch carries",
    "--dup, '3'": "request line 3 (id {r3}) is answered more than once (stdout lines 2 and 3)",
    "--drop, '3'": "request line 3 (id {r3}) has no answer on stdout (3 of 4 request lines answered)",
    "--exit, '2'": "{python} exited with status 2 on request lines 1-4 (request line 1: id {r1})",
    "--sleep, '5'": "{python} gave no answer within timeout_s 1 s to request lines 1-4 (request line 1: id {r1}) and was "
                  "stopped",
}
TAIL = ("; stderr's last line: {last}. Every answer received so far is kept in the task store; re-run "
        "`audit execute --allow-exec` to continue from there")


@pytest.mark.parametrize("flag", list(PROTOCOL))
def test_each_broken_protocol_is_exit_7_with_its_message(tmp_path, flag):
    from runtime.systems.command import CommandSystem, ProgramFailed

    resolved = _command(tmp_path, extra=", " + flag)
    request = _request(tmp_path, tmp_path / "store")
    with pytest.raises(ProgramFailed) as err:
        _score(CommandSystem, resolved, request, {"timeout_s": 1} if "sleep" in flag else None)
    assert err.value.exit_code == 7
    key = request.artifacts["request_key_vendor.csv"]
    first = _first_batch(request)
    r1, r3 = first[0].rid, first[2].rid
    s3 = _matcher().score_of(JOB, first[2].text)
    last = {"--exit, '2'": "kw-match: model file models/v2.bin not found", "--sleep, '5'": "kw-match 1.4: 4 request lines"}
    want = ("system 'vendor' (command): plan task score-data-analyst-0: "
            + PROTOCOL[flag].format(r1=r1, r3=r3, s3=s3, python=sys.executable)
            + TAIL.format(last=last.get(flag, "kw-match 1.4: 4 request lines")))
    assert str(err.value) == want
    assert len(key) == 8


def _matcher():
    import importlib.util

    spec = importlib.util.spec_from_file_location("kw_match_for_tests", MATCHER)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _first_batch(request):
    """The items of the first request batch, in the request key's order."""
    from runtime.store import frame_from
    from runtime.systems.requests import Item

    stored = request.store.get(next(p.stem for p in (request.store.root / "tasks").glob("command-key-*.json")))
    key = frame_from(stored["key"])
    texts = {(r.cv_id, r.variant): r.text for r in request.resumes.itertuples()}
    return [Item(k.resume_id, k.job_id, k.cv_id, k.variant, texts[(k.cv_id, k.variant)])
            for k in key.itertuples()][:4]


def test_answers_stored_before_a_failure_are_kept_and_a_re_run_continues(tmp_path):
    from runtime.systems.command import CommandSystem, ProgramFailed

    resolved = _command(tmp_path, extra=", --fail-on-start, '2'")
    request = _request(tmp_path, tmp_path / "store")
    with pytest.raises(ProgramFailed, match="exited with status 5 on request lines 1-4 .*stderr's last line: "
                                            "kw-match: licence server unreachable"):
        _score(CommandSystem, resolved, request)
    assert _starts(tmp_path.parent / f"{tmp_path.name}-marker.txt") == 2 and request.info["vendor"]["processes"]["started"] == 2
    answers = request.artifacts["answers_vendor.csv"]
    assert len(answers) == 4 and answers["valid"].all()  # the first batch's answers are in the run folder too
    again = _request(tmp_path, tmp_path / "store")
    scores = _score(CommandSystem, resolved, again)
    assert _starts(tmp_path.parent / f"{tmp_path.name}-marker.txt") == 3  # the answered batch is read from the store; only the failed one runs again
    assert again.info["vendor"]["processes"] == {"started": 1, "from_cache": 1, "invalid": 0}
    assert len(scores) == 8 and set(scores.columns) >= {"job_id", "cv_id", "variant", "score"}


def test_an_invalid_score_is_an_invalid_answer_not_asked_again(tmp_path):
    from runtime.systems.command import CommandSystem

    resolved = _command(tmp_path, extra=", --invalid, '2'")
    request = _request(tmp_path, tmp_path / "store")
    scores = _score(CommandSystem, resolved, request)
    answers = request.artifacts["answers_vendor.csv"]
    bad = answers[~answers["valid"]]
    assert len(bad) == 2 and set(bad["reason"]) == {"score is not a number: 'high'"}  # line 2 of each batch
    assert _starts(tmp_path.parent / f"{tmp_path.name}-marker.txt") == 2  # max_invalid_retries 0: not asked again
    # a base candidate without a valid answer in some cell is excluded with all its variants
    assert len(scores) == 8 - 2 * len(set(bad["cv_id"]))
    assert sorted(request.info["vendor"]["answers"]["excluded_base_candidates"]) == sorted(
        f"data-analyst/{c}" for c in set(bad["cv_id"]))


# --------------------------------------------------------------------- kind: python

def _site(root: Path, version: str) -> Path:
    """A package ``vendor-sdk`` (module ``vendor_sdk.scoring``, the matcher) with a dist-info of ``version``."""
    site = root / "site"
    shutil.rmtree(site, ignore_errors=True)
    (site / "vendor_sdk").mkdir(parents=True)
    (site / "vendor_sdk" / "__init__.py").write_text("")
    shutil.copy(MATCHER, site / "vendor_sdk" / "scoring.py")
    info = site / f"vendor_sdk-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: vendor-sdk\nVersion: {version}\n")
    (info / "RECORD").write_text(f"vendor_sdk/__init__.py,,\nvendor_sdk/scoring.py,,\n"
                                 f"vendor_sdk-{version}.dist-info/METADATA,,\nvendor_sdk-{version}.dist-info/RECORD,,\n")
    return site


def test_a_python_function_from_a_file_scores_as_the_program_and_is_never_imported_at_compile(tmp_path):
    from runtime.systems.command import CommandSystem
    from runtime.systems.python_function import PythonSystem

    work = _folder(tmp_path / "py", "")
    # a module that leaves a marker when imported: validate and compile read its AST only
    (work / "tools" / "vendor.py").write_text(
        "open('imported.txt', 'a').write('imported\\n')\nfrom kw_match import score_batch as _s\n\n\n"
        "def score_batch(items):\n    return _s(items)\n")
    (work / "tools" / "raises.py").write_text("def score_batch(items):\n    raise ValueError('licence expired')\n")
    (work / "spec.yaml").write_text(SPEC.format(job=JOB, system=PYTHON.format(function="tools/vendor.py:score_batch",
                                                                              package="")))
    for args in (("validate", "spec.yaml"), ("compile", "spec.yaml")):
        proc = run_cli(*args, cwd=work)
        assert proc.returncode == 0, proc.stderr
    proc = run_cli("execute", "spec.yaml", "--quiet", "--unsigned", "--no-pdf", cwd=work)
    assert proc.returncode == 2 and "system 'vendor' (python): function: tools/vendor.py:score_batch (kw-match 1.4); " \
        "tools/vendor.py sha256 " in proc.stderr
    # export and gc read the lock and digests only (whatever they answer for this spec)
    run_cli("export", "spec.yaml", "--for-vendor", "out", cwd=work)
    run_cli("gc", ".", cwd=work)
    assert not (work / "imported.txt").exists()

    shutil.copy(MATCHER, work / "kw_match.py")  # the vendor module imports it from the spec's folder (its cwd)
    resolved = _resolve(work, PYTHON.format(function="tools/kw_match.py:score_batch", package="").replace(
        "batch_size: 8", "batch_size: 4"))
    assert resolved["file"]["path"] == "tools/kw_match.py" and resolved["package"] is None
    got = _score(PythonSystem, resolved, _request(work, tmp_path / "store-py"))
    want = _score(CommandSystem, _command(tmp_path / "cmd"), _request(tmp_path / "cmd", tmp_path / "store-cmd"))
    key = ["job_id", "cv_id", "variant"]
    pd.testing.assert_frame_equal(got.sort_values(key).reset_index(drop=True), want.sort_values(key).reset_index(drop=True))
    # the planted 8 points, computed in a child process (never in this one)
    wide = got.pivot(index="cv_id", columns="variant", values="score")
    assert ((wide["BASE"] - wide["V01"]) >= 6).all() and "vendor_score_module" not in sys.modules

    from runtime.systems.command import ProgramFailed

    resolved = _resolve(work, PYTHON.format(function="tools/raises.py:score_batch", package=""))
    with pytest.raises(ProgramFailed) as err:
        _score(PythonSystem, resolved, _request(work, tmp_path / "store-raises"))
    assert str(err.value).startswith("system 'vendor' (python): plan task score-data-analyst-0: tools/raises.py:"
                                     "score_batch raised on request lines 1-8 (request line 1: id R")
    assert str(err.value).endswith("): ValueError: licence expired. Every answer received so far is kept in the task "
                                   "store; re-run `audit execute --allow-exec` to continue from there")


def test_the_spec_folders_modules_a_python_file_imports_are_locked(tmp_path):
    """The vendor's code runs in the spec's folder, so ``tools/vendor.py`` can import ``kw_match`` (and what that
    imports) from it: those modules are locked with the file (read from the ASTs); editing one is exit 3 naming
    the system, like editing the file; the standard library and installed packages are not the folder's."""
    from compiler.systems.python_function import local_modules

    work = _folder(tmp_path / "py", "")
    (work / "helpers").mkdir()
    (work / "helpers" / "__init__.py").write_text("")
    (work / "helpers" / "weights.py").write_text("WEIGHT = 1.0\n")
    shutil.copy(MATCHER, work / "kw_match.py")
    (work / "kw_match.py").write_text((work / "kw_match.py").read_text() + "\nfrom helpers import weights  # noqa\n")
    (work / "tools" / "vendor.py").write_text(
        "import json, os.path\nimport numpy\nfrom kw_match import score_batch as _s\n\n\n"
        "def score_batch(items):\n    return _s(items)\n")
    assert local_modules(work, (work / "tools" / "vendor.py").read_bytes(), own="tools/vendor.py") == [
        "helpers/__init__.py", "helpers/weights.py", "kw_match.py"]
    resolved = _resolve(work, PYTHON.format(function="tools/vendor.py:score_batch", package=""))
    assert [m["path"] for m in resolved["modules"]] == ["helpers/__init__.py", "helpers/weights.py", "kw_match.py"]
    assert resolved["modules"][1]["sha256"] == hashlib.sha256(b"WEIGHT = 1.0\n").hexdigest()
    proc = run_cli("compile", "spec.yaml", cwd=work)
    assert proc.returncode == 0, proc.stderr
    (work / "helpers" / "weights.py").write_text("WEIGHT = 2.0\n")  # the vendor's helper changed after the lock
    proc = run_cli("execute", "spec.yaml", "--quiet", "--unsigned", "--no-pdf", "--allow-exec", cwd=work)
    assert proc.returncode == 3, proc.stderr
    assert "systems[0].modules[1].sha256: the input file helpers/weights.py changed" in proc.stderr
    # a file that imports nothing of the folder keeps the resolved form (and digest) it had before
    plain = _resolve(work, PYTHON.format(function="tools/kw_match.py:score_batch", package=""))
    assert "modules" not in plain


def test_a_python_package_is_found_in_its_file_list_and_its_upgrade_is_exit_3(tmp_path, monkeypatch):
    from runtime.systems.command import CommandSystem
    from runtime.systems.python_function import PythonSystem

    site = _site(tmp_path, "3.1")
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")]))
    work = _folder(tmp_path / "pkg", "")
    system = PYTHON.format(function="vendor_sdk.scoring:score_batch", package="\n    package: vendor-sdk")
    (work / "spec.yaml").write_text(SPEC.format(job=JOB, system=system))
    proc = run_cli("compile", "spec.yaml", cwd=work)
    assert proc.returncode == 0, proc.stderr
    lock = json.loads((work / "spec.lock.json").read_text())
    assert lock["resolved_spec"]["systems"][0]["package"] == {"name": "vendor-sdk", "version": "3.1"}
    assert "vendor_sdk" not in sys.modules

    resolved = _resolve(work, system.replace("batch_size: 8", "batch_size: 4"))
    assert resolved["package"] == {"name": "vendor-sdk", "version": "3.1"} and resolved["file"] is None
    got = _score(PythonSystem, resolved, _request(work, tmp_path / "store-py"))
    want = _score(CommandSystem, _command(tmp_path / "cmd"), _request(tmp_path / "cmd", tmp_path / "store-cmd"))
    key = ["job_id", "cv_id", "variant"]
    pd.testing.assert_frame_equal(got.sort_values(key).reset_index(drop=True), want.sort_values(key).reset_index(drop=True))
    assert "vendor_sdk" not in sys.modules  # scored in a child process

    # a module the distribution's file list lacks: a located error naming the modules it installs
    from compiler import compile_spec
    from compiler.errors import SpecError

    (work / "spec.yaml").write_text(SPEC.format(job=JOB, system=system.replace("vendor_sdk.scoring", "vendor_sdk.rank")))
    with pytest.raises(SpecError) as err:
        compile_spec(work / "spec.yaml")
    assert str(err.value).endswith("systems[0].package: package 'vendor-sdk' 3.1 has no module 'vendor_sdk.rank' in "
                                   "its file list (looked for vendor_sdk/rank.py or vendor_sdk/rank/__init__.py); "
                                   "modules it installs: vendor_sdk, vendor_sdk.scoring")
    assert "vendor_sdk" not in sys.modules

    (work / "spec.yaml").write_text(SPEC.format(job=JOB, system=system))
    _site(tmp_path, "3.2")  # the vendor upgrades its SDK: the spec no longer matches its lock
    proc = run_cli("execute", "spec.yaml", "--quiet", "--unsigned", "--no-pdf", "--allow-exec", cwd=work)
    assert proc.returncode == 3 and "Traceback" not in proc.stderr, proc.stderr
    assert "systems[0].package.version" in proc.stderr and "3.1" in proc.stderr and "3.2" in proc.stderr
