"""A spec and a CSV the engine has never seen, run through the real CLI, against an independent
computation from seed 000's definitions (tests/test_analysis_reference.py, which ranks nothing and
calls none of runtime.analysis): values, p-values, BH-adjusted p-values, statuses and risk score
agree to 1e-9; every CI contains its value.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest

import test_analysis_reference as ref
from compiler import catalog
from conftest import run_cli

SPEC = """\
audit: vendor-ranker-check
title: Audit of a vendor's precomputed scores
seed: 424242
axes:
  sex_gender:
    slot: name
    levels: [M, F, X]
    cues: {M: [Paul Martin], F: [Anne Martin], X: [Sam Martin]}
  age_signal:
    slot: age
    levels: [Young, Older]
    cues: {Young: "", Older: "Born 1961"}
variants:
  reference: BASE
  table:
    BASE: {sex_gender: M, age_signal: Young}
    V1: {sex_gender: F, age_signal: Young}
    V2: {sex_gender: X, age_signal: Older}
    V3: {sex_gender: M, age_signal: Older}
jobs: [{id: job0}, {id: job1}, {id: job2}, {id: job3}]
systems:
  - {id: vendor, kind: precomputed, path: data/vendor.csv, score_range: [0, 100]}
analysis:
  k: {counterfactual: 5, group: 6, merit: 8}
  bootstrap: 300
  multiplicity: run          # seed 000 §3.5: one BH family, as the independent computation adjusts
thresholds:
  research:
    score_delta: {pass: 0.01, investigate: 0.03}
    flip_rate: {pass: 0.08, investigate: 0.2}
  operational:
    score_delta: {pass: 0.05, investigate: 0.08}
"""


def make_csv(seed: int) -> pd.DataFrame:
    g = np.random.default_rng(seed)
    rows = []
    for j in range(4):
        n = 30
        base = g.integers(10, 95, size=n).astype(float)          # integer scores: ties happen
        match = (g.random(n) < 0.35).astype(int)
        for v, name in enumerate(ref.VARIANTS):
            score = base if name == "BASE" else np.clip(base + g.integers(-8, 9, size=n) - v, 0, 100)
            for i in range(n):
                rows.append({"job_id": f"job{j}", "cv_id": f"c{i:03d}", "variant": name,
                             "score": float(score[i]), "is_true_match": int(match[i])})
    df = pd.DataFrame(rows)
    return df.sample(frac=1.0, random_state=seed).reset_index(drop=True)   # row order must not matter


def independent_ranks(csv: pd.DataFrame) -> pd.DataFrame:
    out = []
    for (job, variant), sub in csv.groupby(["job_id", "variant"]):
        order = sorted(sub.itertuples(), key=lambda r: (-r.score, r.cv_id))
        for rank, r in enumerate(order, start=1):
            out.append({"job_id": job, "cv_id": r.cv_id, "variant": variant, "score": r.score,
                        "rank": rank, "is_true_match": r.is_true_match})
    return pd.DataFrame(out)


@pytest.mark.parametrize("data_seed", [11, 2026])
def test_precomputed_audit_matches_independent_computation(tmp_path, monkeypatch, data_seed):
    (tmp_path / "data").mkdir()
    csv = make_csv(data_seed)
    csv.to_csv(tmp_path / "data" / "vendor.csv", index=False)
    (tmp_path / "spec.yaml").write_text(SPEC)
    assert run_cli("compile", "spec.yaml", cwd=tmp_path).returncode == 0
    proc = run_cli("execute", "--unsigned", "--no-pdf", "spec.yaml", "--quiet", "--out", "out", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    run_dir = next((tmp_path / "out" / "vendor-ranker-check").iterdir())
    metrics = pd.read_csv(run_dir / "metrics.csv")
    risk = pd.read_csv(run_dir / "risk.csv")

    monkeypatch.setattr(ref, "K", {"counterfactual": 5, "group": 6, "merit": 8})
    monkeypatch.setattr(ref, "LO", 0.0)
    monkeypatch.setattr(ref, "HI", 100.0)
    expected = ref.reference_metrics(independent_ranks(csv), "swap_in")  # the default ranking
    thresholds = catalog.default_thresholds()
    thresholds["research"]["score_delta"] = {"pass": 0.01, "investigate": 0.03}
    thresholds["research"]["flip_rate"] = {"pass": 0.08, "investigate": 0.2}
    thresholds["operational"]["score_delta"] = {"pass": 0.05, "investigate": 0.08}

    assert len(metrics) == 10 * 4  # ten metrics (methods 8)
    p_adj = ref.bh([expected[(r.metric, r.variant)]["p_value"] if expected[(r.metric, r.variant)]["in_bh"]
                    else math.nan for r in metrics.itertuples()])
    for row, exp_adj in zip(metrics.itertuples(), p_adj):
        exp = expected[(row.metric, row.variant)]
        where = (row.metric, row.variant)
        assert row.value == pytest.approx(exp["value"], abs=1e-9, rel=0), where
        for got, want in ((row.p_value, exp["p_value"]), (row.p_adj, exp_adj)):
            assert (math.isnan(got) and math.isnan(want)) or got == pytest.approx(want, abs=1e-9, rel=0), where
        assert row.status_seed000 == ref.status(exp["value"], row.metric, thresholds["research"][row.metric]), where
        assert row.status_seed000_operational == ref.status(exp["value"], row.metric,
                                                            thresholds["operational"][row.metric]), where
        assert row.status == ref.interval_status(row, thresholds["research"]), where
        assert row.status_operational == ref.interval_status(row, thresholds["operational"]), where
        if not math.isnan(row.ci_low):
            assert row.ci_low <= row.value + 1e-12 and row.value <= row.ci_high + 1e-12, where
    assert metrics["ci_low"].notna().sum() >= 30
    for tier, col in (("research", "status_seed000"), ("operational", "status_seed000_operational")):
        s = list(metrics.loc[metrics["metric"] != "selection_ratio", col])  # Eq. 6: seed 000's nine metrics
        f, i, p = s.count("FAIL"), s.count("INVESTIGATE"), s.count("PASS")
        total = risk[(risk.system == "ALL") & (risk.tier == tier)].iloc[0]
        assert total.risk_score == pytest.approx((3 * f + i) / (3 * (f + i + p)), abs=1e-9, rel=0)
    run = json.loads((run_dir / "run.json").read_text())
    assert run["status"] == "done" and run["seed"] == 424242
    # a trial run (--unsigned --no-pdf): report.html, no PDF rendered, listed or left (run.json says so)
    assert {"paired.csv", "metrics.csv", "report.html"} <= set(run["artifacts"]) and run["report_pdf"] is False
    assert "report.pdf" not in run["artifacts"] and not (run_dir / "report.pdf").exists()
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert "report.pdf" not in {a["path"] for a in manifest["artifacts"]}
    assert "Trial run without a PDF" in (run_dir / "report.html").read_text()
    # page 1 states what the intervals are about (issue 39 §5): the 4 jobs of make_csv
    assert ("Inference scope: these 4 jobs and their candidates; other requisitions: see the prediction intervals"
            in (run_dir / "report.html").read_text())


def test_same_spec_and_seed_give_byte_identical_metrics(tmp_path):
    (tmp_path / "data").mkdir()
    make_csv(5).to_csv(tmp_path / "data" / "vendor.csv", index=False)
    (tmp_path / "spec.yaml").write_text(SPEC)
    assert run_cli("compile", "spec.yaml", cwd=tmp_path).returncode == 0
    outs = []
    for out in ("a", "b"):
        assert run_cli("execute", "--unsigned", "--no-pdf", "spec.yaml", "--quiet", "--out", out, cwd=tmp_path).returncode == 0
        run_dir = next((tmp_path / out / "vendor-ranker-check").iterdir())
        outs.append([(run_dir / f).read_bytes()
                     for f in ("metrics.csv", "metrics_by_job.csv", "paired.csv", "risk.csv")])
    assert outs[0] == outs[1]


def test_fail_on_gate_exits_4(tmp_path):
    (tmp_path / "data").mkdir()
    make_csv(11).to_csv(tmp_path / "data" / "vendor.csv", index=False)
    (tmp_path / "spec.yaml").write_text(SPEC)
    assert run_cli("compile", "spec.yaml", cwd=tmp_path).returncode == 0
    proc = run_cli("execute", "--unsigned", "--no-pdf", "spec.yaml", "--quiet", "--fail-on", "INCONCLUSIVE", "--out", "o", cwd=tmp_path)
    assert proc.returncode == 4, proc.stderr
    assert "--fail-on INCONCLUSIVE (research tier) tripped by" in proc.stderr
    proc = run_cli("execute", "--unsigned", "--no-pdf", "spec.yaml", "--quiet", "--fail-on", "MAYBE", "--out", "o", cwd=tmp_path)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
