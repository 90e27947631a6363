"""The ``descriptives`` audit family (n, mean, SD and quantiles of the scores per variant): values
against the standard library's ``statistics``, its spec block and checks (located, golden), its
refusal on a design without paired candidates, and a run through the real CLI."""

from __future__ import annotations

import json
import os
import statistics
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from conftest import run_cli

GOLDEN = Path(__file__).parent / "golden" / "errors"

SPEC = """\
audit: descriptives-check
title: Descriptive statistics of a vendor's scores
seed: 5
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
  k: {counterfactual: 2, group: 2, merit: 2}
  bootstrap: 100
"""
BASE = [42, 51, 31, 15, 43, 61, 46, 74, 37, 60]
V01 = [47, 55, 33, 12, 48, 64, 50, 77, 39, 57]


def _scores_csv() -> str:
    rows = ["job_id,cv_id,variant,score,is_true_match"]
    for i, (b, v) in enumerate(zip(BASE, V01)):
        rows += [f"j1,c{i:02d},BASE,{b},{i % 2}", f"j1,c{i:02d},V01,{v},{i % 2}"]
    return "\n".join(rows) + "\n"


def _expected(scores: list[float]) -> dict[str, float]:
    q25, q50, q75 = statistics.quantiles(scores, n=4, method="inclusive")  # Hyndman & Fan type 7
    return {"n": len(scores), "mean": statistics.fmean(scores), "sd": statistics.stdev(scores),
            "min": min(scores), "q25": q25, "q50": q50, "q75": q75, "max": max(scores)}


def test_describe_matches_the_statistics_module():
    from runtime.families.descriptives import describe

    frame = pd.DataFrame({"system": "s", "condition": "default", "replicate": 0, "job_id": "j1",
                          "cv_id": [f"c{i}" for i in range(10)] * 2, "variant": ["V01"] * 10 + ["BASE"] * 10,
                          "score": [float(x) for x in V01 + BASE]})
    out = describe(frame, quantiles=[0.25, 0.5, 0.75], reference="BASE")
    assert list(out["variant"]) == ["BASE", "V01"]  # the reference first, whatever the frame's order
    for row, scores in zip(out.to_dict(orient="records"), (BASE, V01)):
        for col, want in _expected([float(x) for x in scores]).items():
            assert row[col] == pytest.approx(want, rel=1e-12), col


def test_replicates_are_averaged_per_candidate_first():
    from runtime.families.descriptives import describe

    frame = pd.DataFrame({"system": "s", "condition": "c", "job_id": "j1", "cv_id": ["a", "a", "b", "b"],
                          "replicate": [0, 1, 0, 1], "variant": "BASE", "score": [1.0, 3.0, 10.0, 10.0]})
    row = describe(frame, quantiles=[0.5], reference="BASE").iloc[0]
    assert (row["n"], row["mean"], row["q50"]) == (2, 6.0, 6.0)  # candidates (2.0, 10.0), not 4 answers
    assert row["sd"] == pytest.approx(statistics.stdev([2.0, 10.0]))


def test_run_writes_the_table_and_the_report_section(write_spec, tmp_path):
    spec = write_spec(SPEC + "  descriptives: {quantiles: [0.25, 0.5, 0.75]}\n", **{"scores.csv": _scores_csv()})
    assert run_cli("compile", spec.name, cwd=tmp_path).returncode == 0
    proc = run_cli("execute", "--unsigned", "--no-pdf", spec.name, "--quiet", "--out", "out", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    run_dir = next((tmp_path / "out" / "descriptives-check").iterdir())
    table = pd.read_csv(run_dir / "descriptives.csv")
    assert list(table.columns) == ["system", "condition", "variant", "n", "mean", "sd", "min", "q25", "q50", "q75",
                                   "max"]
    for row, scores in zip(table.to_dict(orient="records"), (BASE, V01)):
        for col, want in _expected([float(x) for x in scores]).items():
            assert row[col] == pytest.approx(want, rel=1e-12), col  # on the file's own 0-100 scale
    html = (run_dir / "report.html").read_text()
    assert 'id="descriptives"' in html and "Descriptive statistics of the scores" in html
    assert "descriptives.csv" in json.loads((run_dir / "run.json").read_text())["artifacts"]


def test_without_the_block_nothing_is_written(write_spec, tmp_path):
    spec = write_spec(SPEC, **{"scores.csv": _scores_csv()})
    assert run_cli("compile", spec.name, cwd=tmp_path).returncode == 0
    proc = run_cli("execute", "--unsigned", "--no-pdf", spec.name, "--quiet", "--out", "out", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    run_dir = next((tmp_path / "out" / "descriptives-check").iterdir())
    assert not (run_dir / "descriptives.csv").exists()
    assert 'id="descriptives"' not in (run_dir / "report.html").read_text()


POP_SPEC = """\
audit: pop-audit
title: Population audit
seed: 11
jobs:
  - {id: accountant, title: Accountant, description: Prepare and examine financial records.}
candidates:
  generator: population
  profiles_per_job: 120
  roles:
    x: {attribute: gender, x0: female, x1: male}
    z: [age, race]
    b: [education, experience]
    r: [first_name, surname, region]
systems:
  - {id: minilm, kind: embedding}
analysis:
  descriptives: {}
"""

CASES = {
    "descriptives_on_population": (POP_SPEC, {}),
    "descriptives_quantiles_order": (SPEC + "  descriptives: {quantiles: [0.5, 0.25]}\n", {"scores.csv": _scores_csv()}),
    "descriptives_quantile_range": (SPEC + "  descriptives: {quantiles: [0.5, 1.5]}\n", {"scores.csv": _scores_csv()}),
    "descriptives_unknown_key": (SPEC + "  descriptives: {quantile: [0.5]}\n", {"scores.csv": _scores_csv()}),
    "descriptives_quantile_decimals": (SPEC + "  descriptives: {quantiles: [0.5, 0.50000001]}\n",
                                       {"scores.csv": _scores_csv()}),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_spec_errors_golden(case, write_spec, tmp_path):
    """Located errors: the family's needs (a population design has no paired candidates) and its block."""
    text, files = CASES[case]
    spec = write_spec(text, **files)
    proc = run_cli("validate", spec.name, cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    golden = GOLDEN / f"{case}.txt"
    if os.environ.get("UPDATE_GOLDEN"):
        golden.write_text(proc.stderr)
    assert proc.stderr == golden.read_text()
