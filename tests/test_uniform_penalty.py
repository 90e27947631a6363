"""A uniform penalty is not "low risk" (issue 12): a vendor's score file where every non-reference
variant scores exactly 30 points (of 100) below its reference. Per-variant ranking (seed 000 §3.3)
cannot see a shift that every resume of a pool shares: 3 FAIL (the score deltas) and 33 PASS, risk
0.083, "low". Under the default ranking (swap-in) the score, rank and selection metrics FAIL, each
naming the disadvantaged level, and the dependence-aware score is not "low". Through the CLI."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from conftest import run_cli

SPEC = """\
audit: uniform-penalty
title: A uniform 30-point penalty on every non-reference variant
seed: 5
axes:
  origin:
    slot: name
    levels: [FR, NA, SSA, EA]
    cues: {FR: [Paul Martin], NA: [Karim Benali], SSA: [Moussa Diallo], EA: [Minh Nguyen]}
variants: {design: one_at_a_time}
jobs:
  - {id: j1, title: Analyst}
  - {id: j2, title: Nurse}
systems:
  - {id: vendor, kind: precomputed, path: scores.csv, score_range: [0, 100]}
analysis:
  k: {counterfactual: 5, group: 5, merit: 5}
  bootstrap: 200
"""
LEVELS = {"V01": "NA", "V02": "SSA", "V03": "EA"}


def _scores() -> str:
    g = np.random.default_rng(7)
    rows = []
    for job in ("j1", "j2"):
        base = g.choice(np.arange(40, 100), size=20, replace=False)  # integers, no ties
        top4 = set(np.argsort(-base)[:4])  # the true matches are the system's top 4
        for i, s in enumerate(base):
            for v in ("BASE", "V01", "V02", "V03"):
                rows.append({"job_id": job, "cv_id": f"c{i:02d}", "variant": v,
                             "score": int(s) - (0 if v == "BASE" else 30), "is_true_match": int(i in top4)})
    return pd.DataFrame(rows).to_csv(index=False)


def _run(tmp_path, ranking: str | None):
    (tmp_path / "spec.yaml").write_text(SPEC + (f"  ranking: {ranking}\n" if ranking else ""))
    (tmp_path / "scores.csv").write_text(_scores())
    assert run_cli("compile", "spec.yaml", cwd=tmp_path).returncode == 0
    proc = run_cli("execute", "--unsigned", "--no-pdf", "spec.yaml", "--quiet", "--out", "out", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    run_dir = next((tmp_path / "out" / "uniform-penalty").iterdir())
    # keep_default_na=False: the level "NA" (North African) is a level, not a missing value
    read = dict(keep_default_na=False, na_values=[""])
    return pd.read_csv(run_dir / "metrics.csv", **read), pd.read_csv(run_dir / "risk.csv", **read), run_dir


@pytest.mark.slow
def test_the_default_ranking_sees_a_uniform_penalty(tmp_path):
    m, risk, run_dir = _run(tmp_path, None)
    for v, level in LEVELS.items():
        for metric in ("score_delta", "marc", "flip_rate", "retention_rate", "impact_ratio"):
            row = m[(m.metric == metric) & (m.variant == v)].iloc[0]
            assert row.status == "FAIL", (metric, v, row.value)
            assert row.disadvantaged == level, (metric, v, row.disadvantaged)
        # the rank and selection tests now reject, and say who loses
        for metric in ("marc", "flip_rate"):
            row = m[(m.metric == metric) & (m.variant == v)].iloc[0]
            assert row.p_adj < 0.05, (metric, v, row.p_adj)
    overall = risk[(risk.system == "ALL") & (risk.tier == "research")].iloc[0]
    assert overall.band != "low"
    # the headline: every category FAIL, naming its level; the system's verdict FAIL naming all three
    head = pd.read_csv(run_dir / "headline.csv", keep_default_na=False).set_index("category")
    for v, level in LEVELS.items():
        assert head.loc[level, "status"] == "FAIL" and head.loc[level, "disadvantaged"] == level
    assert head.loc["ALL", "status"] == "FAIL" and set(head.loc["ALL", "deciding_metrics"].split(" | ")) == set(LEVELS.values())
    html = (run_dir / "report.html").read_text()
    assert "Findings by protected category" in html and '<td class="dis">NA</td>' in html


@pytest.mark.slow
def test_per_variant_ranking_cannot_see_it(tmp_path):
    """seed 000 fidelity: the same file under per-variant ranking gives the figures of the issue."""
    m, risk, _ = _run(tmp_path, "per_variant")
    assert (m.status_seed000 == "FAIL").sum() == 3 and (m.status_seed000 == "PASS").sum() == 33
    assert set(m.loc[m.status_seed000 == "FAIL", "metric"]) == {"score_delta"}
    # on intervals (methods 7) the score shifts FAIL too, and nothing else does
    assert set(m.loc[m.status == "FAIL", "metric"]) == {"score_delta"} and (m.status == "FAIL").sum() == 3
    assert list(m.loc[m.status == "FAIL", "disadvantaged"]) == ["NA", "SSA", "EA"]
    overall = risk[(risk.system == "ALL") & (risk.tier == "research")].iloc[0]
    assert overall.risk_score == pytest.approx(9 / 108) and overall.band == "low"
    # the rank and selection tests cannot reject here: reported, never in BH
    assert m.loc[m.metric.isin(["marc", "flip_rate", "impact_ratio"]) & (m.variant != "BASE"), "p_adj"].isna().all()
