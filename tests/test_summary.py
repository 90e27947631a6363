"""``summary.json``, sealed, and ``audit execute --json`` (issue 26 §4).

- a signed run writes summary.json: it validates against schema/summary.schema.json, the manifest
  hashes it, ``audit verify`` passes, and its status counts and risk rows are metrics.csv's and
  risk.csv's, counted by hand; ``--json`` prints exactly the file and nothing else on stdout;
- a run that fails mid-way stays "failed" with no summary; resumed with ``--fail-on FAIL --json`` over
  a planted FAIL it exits 4 and prints the file's object, the gate taken from the resuming call;
- an INCONCLUSIVE run records exit code 5, before the tripped gate's 4;
- ``--json`` with an error before the run folder exists: nothing on stdout, the usual exit code.

Every run is a precomputed score file (no model is loaded).
"""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pandas as pd
import pytest

from compiler.artifacts import SUMMARY_SCHEMA_VERSION, read_summary
from compiler.hashing import file_digest
from compiler.schema import SCHEMA_DIR
from conftest import TINY_SCORES, TINY_SPEC, run_cli

STATUSES = ("PASS", "INCONCLUSIVE", "INVESTIGATE", "FAIL", "N/A")


def _schema() -> dict:
    return json.loads((SCHEMA_DIR / "summary.schema.json").read_text())


def _gate_rows_of(metrics_csv: Path) -> pd.DataFrame:
    """The metric rows the gate reads: those with a research status ("N/A" read as text, not NaN)."""
    m = pd.read_csv(metrics_csv, keep_default_na=False, na_values=[""])
    return m[m["status"].notna()]


def _by_hand(rows: pd.DataFrame, column: str) -> dict[str, int]:
    counted = rows[column].fillna("N/A").where(rows[column].isin(["PASS", "INCONCLUSIVE", "INVESTIGATE", "FAIL"]), "N/A")
    counts = counted.value_counts()
    return {s: int(counts.get(s, 0)) for s in STATUSES}


# ------------------------------------------------------------------------------- a signed run

@pytest.fixture(scope="module")
def signed(tmp_path_factory):
    """A signed run of the tiny precomputed spec with ``--json``, keys made by ``audit keygen``:
    (process, run folder, key folder, spec folder)."""
    work = tmp_path_factory.mktemp("summary-signed")
    kd = work / "keys"
    proc = run_cli("keygen", "--key-dir", str(kd), "--signer", "Sam Summary", cwd=work)
    assert proc.returncode == 0, proc.stderr
    (work / "spec.yaml").write_text(TINY_SPEC)
    (work / "scores.csv").write_text(TINY_SCORES)
    assert run_cli("compile", "spec.yaml", cwd=work).returncode == 0
    proc = run_cli("execute", "spec.yaml", "-q", "--json", "--key-dir", str(kd), cwd=work)
    assert proc.returncode == 0, proc.stderr
    return proc, next((work / "reports" / "tiny-audit").iterdir()), kd, work


def test_summary_validates_against_its_schema_and_is_what_json_prints(signed):
    proc, run_dir, _kd, work = signed
    text = (run_dir / "summary.json").read_text()
    assert proc.stdout == text  # stdout is exactly the file: no progress, note or "run folder:" line
    assert f"run folder: {run_dir.relative_to(work)}" in proc.stderr
    summary = json.loads(text)
    validator = jsonschema.Draft202012Validator(_schema())
    validator.validate(summary)
    # the schema is not vacuous
    for bad in ({**summary, "exit_code": 3}, {**summary, "kind": "audit-run"},
                {**summary, "status_counts": {**summary["status_counts"], "research": {"PASS": 1, "FAIL": 0,
                                                                                        "INVESTIGATE": 0}}},
                {k: v for k, v in summary.items() if k != "gate"}):
        with pytest.raises(jsonschema.ValidationError):
            validator.validate(bad)
    run = json.loads((run_dir / "run.json").read_text())
    lock = json.loads((work / "spec.lock.json").read_text())
    assert summary["schema_version"] == SUMMARY_SCHEMA_VERSION == "1.2" and summary["kind"] == "audit-summary"
    assert (summary["audit"], summary["run_id"]) == ("tiny-audit", run["run_id"]) and run["run_id"] == run_dir.name
    assert summary["spec_digest"] == lock["spec_digest"] == run["spec_digest"]
    assert summary["methods_version"] == run["methods_version"] == lock["methods_version"]
    assert summary["signed"] is True and run["signed"] is True
    assert summary["validity"] is None  # the tiny spec runs no validity protocol
    assert summary["gate"] == {"fail_on": None, "tier": "research", "tripped": False, "rows": []}
    assert summary["exit_code"] == 0
    assert read_summary(run_dir / "summary.json").dump() == summary  # the reader gives back the file


def test_summary_is_in_the_manifest_and_the_run_verifies(signed, tmp_path):
    _proc, run_dir, kd, work = signed
    manifest = json.loads((run_dir / "manifest.json").read_text())
    entry = {a["path"]: a for a in manifest["artifacts"]}["summary.json"]
    assert entry["sha256"] == file_digest(run_dir / "summary.json")["digest"]
    assert entry["bytes"] == (run_dir / "summary.json").stat().st_size
    assert "summary.json" in json.loads((run_dir / "run.json").read_text())["artifacts"]
    proc = run_cli("verify", str(run_dir), "--key-dir", str(kd), cwd=work)
    assert proc.returncode == 0, proc.stderr
    assert f"verified: {run_dir}" in proc.stdout
    # an edited summary fails verify, naming it
    import shutil

    copy = tmp_path / "edited"
    shutil.copytree(run_dir, copy)
    edited = json.loads((copy / "summary.json").read_text())
    edited["exit_code"] = 0 if edited["exit_code"] else 4
    (copy / "summary.json").write_text(json.dumps(edited, indent=2) + "\n")
    proc = run_cli("verify", str(copy), "--key-dir", str(kd), cwd=work)
    assert proc.returncode == 6
    assert "FAIL summary.json: sha256" in proc.stderr and "modified after signing" in proc.stderr


def test_status_counts_and_risk_equal_the_csv_files_counted_by_hand(signed):
    _proc, run_dir, _kd, _work = signed
    summary = json.loads((run_dir / "summary.json").read_text())
    rows = _gate_rows_of(run_dir / "metrics.csv")
    research, operational = _by_hand(rows, "status"), _by_hand(rows, "status_operational")
    assert summary["status_counts"] == {"research": research, "operational": operational}
    # the tiny spec's known outcome: 20 classified rows (10 metrics, methods 8); on point estimates (seed 000)
    # one INVESTIGATE (score_delta of V01); on intervals (methods 7) no row is FAIL
    seed000 = _by_hand(rows, "status_seed000")
    assert seed000 == {"PASS": 19, "INCONCLUSIVE": 0, "INVESTIGATE": 1, "FAIL": 0, "N/A": 0}
    assert research["FAIL"] == 0 and research["INVESTIGATE"] == 0 and sum(research.values()) == 20
    risk = pd.read_csv(run_dir / "risk.csv")
    got = pd.DataFrame(summary["risk"])
    assert list(got.columns) == list(risk.columns) and len(got) == len(risk) == 4
    pd.testing.assert_frame_equal(got, risk, check_dtype=False, rtol=1e-15)
    total = risk[(risk["system"] == "ALL") & (risk["tier"] == "research")].iloc[0]
    eq6 = _by_hand(rows[rows["metric"] != "selection_ratio"], "status_seed000")  # seed 000's nine metrics
    assert (total["n_pass"], total["n_investigate"], total["n_fail"]) == (  # Eq. 6 reads seed 000's statuses
        eq6["PASS"], eq6["INVESTIGATE"], eq6["FAIL"])


# ------------------------------------------------------------------ a failed run, resumed with a gate

def _gap_scores(n: int = 10, gap: float = 0.4) -> str:
    """Every V01 resume scores ``gap`` below its BASE twin (on [0, 1]): score_delta FAILs."""
    rows = ["job_id,cv_id,variant,score,is_true_match"]
    for c in range(1, n + 1):
        base = 0.95 - 0.05 * c
        rows += [f"j1,c{c},BASE,{base:.2f},{int(c <= n // 2)}", f"j1,c{c},V01,{base - gap:.2f},{int(c <= n // 2)}"]
    return "\n".join(rows) + "\n"


def test_a_failed_run_has_no_summary_and_its_resume_with_fail_on_fail_json_exits_4(write_spec, tmp_path,
                                                                                     monkeypatch):
    import runtime.pipeline.report as report_stage
    from runtime.pipeline import execute

    spec = write_spec(TINY_SPEC, **{"scores.csv": _gap_scores()})
    assert run_cli("compile", spec.name, cwd=tmp_path).returncode == 0

    def renderer_down(ctx):
        raise RuntimeError("renderer down")

    monkeypatch.delenv("AUDIT_KEY_DIR", raising=False)  # an unsigned run wherever the test runs
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    with monkeypatch.context() as m, pytest.raises(RuntimeError, match="renderer down"):
        m.setattr(report_stage, "write_report", renderer_down)
        execute(spec, out=tmp_path / "reports", quiet=True, fail_on="INVESTIGATE")  # the resume's gate counts
    run_dir = next((tmp_path / "reports" / "tiny-audit").iterdir())
    run = json.loads((run_dir / "run.json").read_text())
    assert run["status"] == "failed" and run["error"] == "RuntimeError: renderer down" and run["stage"] == "report"
    assert (run_dir / "metrics.csv").is_file()  # what was computed is kept ...
    assert not (run_dir / "summary.json").exists() and "summary.json" not in run["artifacts"]  # ... no outcome

    proc = run_cli("execute", "--unsigned", "--no-pdf", spec.name, "-q", "--resume", str(run_dir), "--fail-on", "FAIL", "--tier", "operational",
                   "--json", cwd=tmp_path)
    assert proc.returncode == 4, proc.stderr
    text = (run_dir / "summary.json").read_text()
    assert proc.stdout == text
    summary = json.loads(text)
    jsonschema.Draft202012Validator(_schema()).validate(summary)
    assert summary["exit_code"] == 4 and summary["signed"] is False
    assert summary["gate"]["fail_on"] == "FAIL" and summary["gate"]["tier"] == "operational"  # this call's gate
    assert summary["gate"]["tripped"] is True
    assert {"family": "metric_suite", "system": "vendor", "condition": "default", "item": "score_delta V01",
            "status": "FAIL"} in summary["gate"]["rows"]
    rows = _gate_rows_of(run_dir / "metrics.csv")
    assert summary["status_counts"] == {"research": _by_hand(rows, "status"),
                                        "operational": _by_hand(rows, "status_operational")}
    failing = rows[rows["status_operational"] == "FAIL"]
    assert [r["item"] for r in summary["gate"]["rows"]] == [f"{m.metric} {m.variant}" for m in failing.itertuples()]
    assert len(failing) == summary["status_counts"]["operational"]["FAIL"] >= 1
    # the CLI's messages, all on stderr
    assert f"--fail-on FAIL (operational tier) tripped by {len(failing)} row(s):" in proc.stderr
    assert "  vendor/default score_delta V01: FAIL" in proc.stderr and "UNSIGNED run" in proc.stderr
    assert "run folder:" in proc.stderr and "run folder:" not in proc.stdout
    # the resumed run is sealed with its summary (unsigned: manifest.json only)
    run = json.loads((run_dir / "run.json").read_text())
    assert run["status"] == "done" and len(run["resumed"]) == 1 and run["resumed"][0]["previous_status"] == "failed"
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert {a["path"]: a["sha256"] for a in manifest["artifacts"]}["summary.json"] == \
        file_digest(run_dir / "summary.json")["digest"]
    assert not (run_dir / "manifest.dsse.json").exists()


# ------------------------------------------------------------------------------ INCONCLUSIVE

def test_an_inconclusive_run_records_exit_code_5_before_the_gate(write_spec, tmp_path, monkeypatch):
    """A content-blind system (every score 50): the validity protocol says INCONCLUSIVE, and its flat
    ranks trip ``--fail-on INCONCLUSIVE`` too; 5 takes precedence. Run in process with the PDF renderer
    stubbed (the summary does not depend on it; the CLI path is the test above)."""
    import runtime.report
    from runtime.pipeline import execute
    from test_effects_cli import SPEC, scores_csv

    spec = write_spec(SPEC, **{"scores.csv": scores_csv("constant", seed=1, k=20)})
    assert run_cli("compile", spec.name, cwd=tmp_path).returncode == 0
    monkeypatch.setattr(runtime.report, "render_pdf", lambda *a, **k: None)
    result = execute(spec, out=tmp_path / "out", quiet=True, fail_on="INCONCLUSIVE")
    summary = json.loads((result.run_dir / "summary.json").read_text())
    jsonschema.Draft202012Validator(_schema()).validate(summary)
    assert summary == result.outcome and result.exit_code == 5
    assert summary["exit_code"] == 5
    assert summary["validity"]["verdict"] == "INCONCLUSIVE"
    assert any(f.startswith("positive_control (vendor, default)") for f in summary["validity"]["failed"])
    assert any(f.startswith("distribution_sd (vendor, default)") for f in summary["validity"]["failed"])
    run = json.loads((result.run_dir / "run.json").read_text())
    assert run["validity"]["verdict"] == "INCONCLUSIVE" and run["status"] == "done"
    assert summary["gate"]["tripped"] is True  # the gate tripped as well: INCONCLUSIVE comes first
    rows = _gate_rows_of(result.run_dir / "metrics.csv")
    hand = _by_hand(rows, "status")
    assert summary["status_counts"]["research"] == hand
    assert len(summary["gate"]["rows"]) == hand["INCONCLUSIVE"] + hand["INVESTIGATE"] + hand["FAIL"]


# ------------------------------------------------------------------------------ bad input

def test_fail_on_pass_is_a_usage_error_and_investigate_reads_as_inconclusive(write_spec, tmp_path, monkeypatch):
    """``--fail-on PASS`` names no gate: a usage error (exit 2) before anything runs; ``INVESTIGATE`` is the
    old name of ``INCONCLUSIVE`` (issue 29 §1), said in a note, and trips on the same rows."""
    monkeypatch.delenv("AUDIT_KEY_DIR", raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    write_spec(TINY_SPEC, **{"scores.csv": TINY_SCORES})
    assert run_cli("compile", "spec.yaml", cwd=tmp_path).returncode == 0
    proc = run_cli("execute", "--unsigned", "--no-pdf", "spec.yaml", "-q", "--fail-on", "PASS", cwd=tmp_path)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "Invalid value for '--fail-on'" in proc.stderr and "'FAIL', 'INCONCLUSIVE'" in proc.stderr, proc.stderr
    assert not (tmp_path / "reports").exists()
    proc = run_cli("execute", "--unsigned", "--no-pdf", "spec.yaml", "-q", "--json", "--fail-on", "INVESTIGATE", cwd=tmp_path)
    assert "note: --fail-on INVESTIGATE is read as --fail-on INCONCLUSIVE" in proc.stderr, proc.stderr
    summary = json.loads(proc.stdout)
    assert summary["gate"]["fail_on"] == "INCONCLUSIVE"
    research = summary["status_counts"]["research"]
    assert summary["gate"]["tripped"] == (research["INCONCLUSIVE"] + research["FAIL"] > 0)
    assert proc.returncode == (4 if summary["gate"]["tripped"] else 0)


def test_json_with_an_error_before_the_run_folder_prints_nothing_on_stdout(write_spec, tmp_path, monkeypatch):
    monkeypatch.delenv("AUDIT_KEY_DIR", raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    write_spec(TINY_SPEC, **{"scores.csv": TINY_SCORES})  # never compiled: no lock
    proc = run_cli("execute", "--unsigned", "--no-pdf", "spec.yaml", "-q", "--json", "--fail-on", "FAIL", cwd=tmp_path)
    assert proc.returncode == 3
    assert proc.stdout == ""
    assert proc.stderr.endswith("\nerror: no lock at spec.lock.json; run `audit compile spec.yaml` first (the lock "
                                "pre-registers the spec)\n")
    assert "Traceback" not in proc.stderr
    assert not (tmp_path / "reports").exists()
    empty = tmp_path / "no-keys"
    empty.mkdir()
    assert run_cli("compile", "spec.yaml", cwd=tmp_path).returncode == 0
    proc = run_cli("execute", "spec.yaml", "-q", "--json", "--key-dir", str(empty), cwd=tmp_path)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr == (f"error: no signing keys in {empty} (named by --key-dir); create them with "
                           f"`audit keygen --key-dir {empty}`\n")
    assert not (tmp_path / "reports").exists()


# ------------------------------------------------------------------------------ the gate's rules

def test_status_counts_gate_and_exit_code_rules():
    from runtime import cli
    from runtime.pipeline import gate

    assert (gate.EXIT_OK, gate.EXIT_GATE, gate.EXIT_INCONCLUSIVE) == (cli.EXIT_OK, cli.EXIT_GATE,
                                                                      cli.EXIT_INCONCLUSIVE) == (0, 4, 5)
    status = pd.DataFrame({"family": ["metric_suite"] * 4 + ["causal"] * 2, "system": ["a"] * 6,
                           "condition": ["default"] * 6, "item": ["m1", "m2", "m3", "m4", "j1", "j2"],
                           "status": ["PASS", "INCONCLUSIVE", "FAIL", "N/A", "", "INVESTIGATE"],
                           "status_operational": ["PASS", "PASS", "INCONCLUSIVE", "", "FAIL", "INVESTIGATE"]})
    assert gate.status_counts(status) == {
        "research": {"PASS": 1, "INCONCLUSIVE": 1, "INVESTIGATE": 1, "FAIL": 1, "N/A": 2},
        "operational": {"PASS": 2, "INCONCLUSIVE": 1, "INVESTIGATE": 1, "FAIL": 1, "N/A": 1}}
    assert gate.gate_tripped(status, "FAIL") == ["a/default m3: FAIL"]
    # INCONCLUSIVE trips on every row that is not PASS (the causal family's INVESTIGATE too); its old name
    # INVESTIGATE means the same
    for name in ("INCONCLUSIVE", "INVESTIGATE"):
        assert gate.gate_tripped(status, name, "operational") == ["a/default m3: INCONCLUSIVE", "a/default j1: FAIL",
                                                                  "a/default j2: INVESTIGATE"]
    assert gate.gate_tripped(status, "INCONCLUSIVE") == ["a/default m2: INCONCLUSIVE", "a/default m3: FAIL",
                                                         "a/default j2: INVESTIGATE"]
    assert gate.gate_rows(status, "FAIL", "operational").to_dict("records") == [
        {"family": "causal", "system": "a", "condition": "default", "item": "j1", "status": "FAIL"}]
    assert gate.gate_tripped(status, None) == [] and len(gate.gate_rows(status, None)) == 0
    assert gate.exit_code(tripped=False, verdict=None) == 0
    # issue 37 §3: sealed but unsigned is 8, after the gate's codes (--fail-on keeps 4 and 5)
    assert gate.exit_code(tripped=False, verdict=None, unsigned=True) == gate.EXIT_UNSIGNED == 8
    assert gate.exit_code(tripped=True, verdict=None, unsigned=True) == 4
    assert gate.exit_code(tripped=True, verdict="INCONCLUSIVE", unsigned=True) == 5
    assert gate.exit_code(tripped=True, verdict="VALID") == 4
    assert gate.exit_code(tripped=True, verdict="INCONCLUSIVE") == gate.exit_code(tripped=False,
                                                                                   verdict="INCONCLUSIVE") == 5
