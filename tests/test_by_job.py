"""metrics_by_job.csv: per-job values, flags and heterogeneity across jobs (issue 12)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from compiler import catalog
from runtime.analysis import analyse, n_bootstrap_cells
from runtime.analysis.by_job import ALL_JOBS, BY_JOB_COLUMNS, heterogeneity

from test_analysis import tiny_frame

K2 = {"counterfactual": 2, "group": 2, "merit": 2}


def _run(df: pd.DataFrame, **kw):
    args = dict(reference="BASE", k=K2, alpha=0.05, n_bootstrap=400, seed=7,
                thresholds=catalog.default_thresholds(), score_range={"sys": (0, 100)}, ranking="per_variant",
                per_job=True)
    args.update(kw)
    return analyse(df, **args)


def _cell(frame: pd.DataFrame, metric: str, variant: str, job: str) -> pd.Series:
    rows = frame[(frame["metric"] == metric) & (frame["variant"] == variant) & (frame["job_id"] == job)]
    assert len(rows) == 1
    return rows.iloc[0]


def test_per_job_values_by_hand_and_the_pooled_row():
    # tiny_frame: J1 differences (80-90, 40-70, 56-50, 18-30)/100 -> mean -0.115; J2 (49-80, 64-60,
    # 35-40, 13-20)/100 -> mean -0.0975; pooled over the 8 candidates -0.10625 (metrics.csv).
    res = _run(tiny_frame())
    b = res.by_job
    assert list(b.columns) == list(BY_JOB_COLUMNS)
    assert _cell(b, "score_delta", "V1", "J1")["value"] == pytest.approx(-0.115)
    assert _cell(b, "score_delta", "V1", "J2")["value"] == pytest.approx(-0.0975)
    pooled = _cell(b, "score_delta", "V1", ALL_JOBS)
    m = res.metrics
    row = m[(m["metric"] == "score_delta") & (m["variant"] == "V1")].iloc[0]
    assert pooled["value"] == row["value"] == pytest.approx(-0.10625)
    assert (pooled["ci_low"], pooled["ci_high"], pooled["status"]) == (row["ci_low"], row["ci_high"], row["status"])
    # Recall@2 per job (hand, as test_analysis): V1 J1 {a, c} both matches -> 1, J2 {b, a} -> 1/2.
    assert _cell(b, "recall_at_k", "V1", "J1")["value"] == pytest.approx(1.0)
    assert _cell(b, "recall_at_k", "V1", "J2")["value"] == pytest.approx(0.5)
    # Both jobs shift the V1 scores down: the variant loses in each job, as pooled.
    for job in ("J1", "J2"):
        c = _cell(b, "score_delta", "V1", job)
        # a job row names a side only when its own interval lies wholly beyond the PASS band (issue 29 §3)
        assert c["disadvantaged"] == ("V1" if c["status"] == "FAIL" else "")
    # Every job row has an interval around its value; no p-value column exists.
    jobs = b[b["job_id"] != ALL_JOBS]
    ok = jobs["ci_low"].notna()
    assert (jobs.loc[ok, "ci_low"] <= jobs.loc[ok, "value"] + 1e-12).all()
    assert "p_value" not in b.columns and "p_adj" not in b.columns


def test_crossing_and_opposite_sign_are_flagged():
    # A constant shift within each job (10 candidates each): every bootstrap resample of a job repeats its
    # value, so each job's interval is that one point; the pooled interval (a bootstrap of all 30 paired
    # differences) straddles the band's -0.02.
    # J1: -10 points (score delta -0.10, FAIL under the research PASS band [-0.02, 0.02]: the variant loses);
    # J2: +4 (+0.04, FAIL: the reference loses, the opposite of the pooled sign); J3: -1 (-0.01, PASS).
    # Pooled: (-0.10 + 0.04 - 0.01) / 3 = -0.0233, INCONCLUSIVE. J1 and J3 cross (decisive in the job, not
    # pooled); J2's side, established by its FAIL interval, is the other one (issue 29 §1, §3).
    rows = []
    for job, shift in (("J1", -10.0), ("J2", 4.0), ("J3", -1.0)):
        for i in range(10):
            base = 40.0 + 5 * i
            for variant, score in (("BASE", base), ("V1", base + shift)):
                rows.append({"system": "sys", "condition": "c", "replicate": 0, "job_id": job, "cv_id": f"c{i}",
                             "variant": variant, "score": score, "rank": 0, "is_true_match": int(i >= 5)})
    res = _run(pd.DataFrame(rows), variant_levels={"BASE": {"a": "x"}, "V1": {"a": "y"}})
    b = res.by_job
    j1, j2, j3, pooled = (_cell(b, "score_delta", "V1", j) for j in ("J1", "J2", "J3", ALL_JOBS))
    assert (j1["value"], j2["value"], j3["value"], pooled["value"]) == (
        pytest.approx(-0.10), pytest.approx(0.04), pytest.approx(-0.01), pytest.approx(-0.07 / 3))
    assert (j1["ci_low"], j1["ci_high"], j2["ci_low"], j2["ci_high"]) == pytest.approx((-0.10, -0.10, 0.04, 0.04))
    assert pooled["ci_low"] < -0.02 < pooled["ci_high"]
    assert (j1["status"], j2["status"], j3["status"], pooled["status"]) == ("FAIL", "FAIL", "PASS", "INCONCLUSIVE")
    assert j1["flag"] == "crosses threshold: FAIL in this job, INCONCLUSIVE pooled"
    assert j2["flag"] == ("crosses threshold: FAIL in this job, INCONCLUSIVE pooled; "
                          "opposite sign: the reference loses in this job, the variant pooled")
    assert j3["flag"] == "crosses threshold: PASS in this job, INCONCLUSIVE pooled"
    assert (j1["disadvantaged"], j2["disadvantaged"], j3["disadvantaged"]) == ("y", "reference", "")
    # the pooled row names what metrics.csv names: the Wilcoxon test of 10 x -0.10, 10 x +0.04 and 10 x -0.01
    # (ranks 1-10 for |-0.01|, 11-20 for |0.04|, 21-30 for |-0.10|: W+ = 155 of 465) decides
    row = res.metrics.query("metric == 'score_delta' and variant == 'V1'").iloc[0]
    assert pooled["disadvantaged"] == row["disadvantaged"]
    assert row["disadvantaged"] == ("y" if row["p_adj"] < 0.05 else "direction not established")
    # the jobs' SEs are 0: they cannot be weighed, Q is left empty, with jobs_in_q = 0
    assert pooled["jobs_in_q"] == 0 and math.isnan(pooled["q"])


def test_heterogeneity_matches_cochran_by_formula():
    # Q = Σ w (x − x̄_w)², w = 1/SE²; I² = (Q − df)/Q. Three jobs: values 0.1, 0.3, 0.2 with SE 0.05, 0.1, 0.05.
    sub = pd.DataFrame({"value": [0.1, 0.3, 0.2], "ci_low": [np.nan] * 3, "ci_high": [np.nan] * 3,
                        "bootstrap_se": [0.05, 0.1, 0.05]})
    w = 1 / np.array([0.05, 0.1, 0.05]) ** 2
    x = np.array([0.1, 0.3, 0.2])
    q = float(np.sum(w * (x - np.sum(w * x) / np.sum(w)) ** 2))
    h = heterogeneity(sub)
    assert h["q"] == pytest.approx(q) and h["q_df"] == 2 and h["jobs_in_q"] == 3
    assert h["i2"] == pytest.approx(max(0.0, (q - 2) / q))
    from scipy.stats import chi2
    assert h["q_p"] == pytest.approx(chi2.sf(q, 2))
    # Without a bootstrap SE, the 95% interval's half-width / 1.96 stands in; a degenerate job is left out.
    sub = pd.DataFrame({"value": [0.1, 0.3, 0.2], "ci_low": [0.1 - 1.96 * 0.05, 0.3 - 1.96 * 0.1, 0.2],
                        "ci_high": [0.1 + 1.96 * 0.05, 0.3 + 1.96 * 0.1, 0.2], "bootstrap_se": [np.nan] * 3})
    h = heterogeneity(sub)
    assert h["jobs_in_q"] == 2 and h["q_df"] == 1


def test_progress_counts_the_job_cells():
    df = tiny_frame()
    seen: list[int] = []
    _run(df, progress=seen.append)
    assert sum(seen) == n_bootstrap_cells(df, "BASE", per_job=True) == 2 * 10 * 3  # 2 variants x 10 metrics x (pooled + 2 jobs)


def test_the_report_shows_every_job_worse_than_pooled():
    # 45 flagged job rows, 41 of them worse than pooled: all 41 are shown, though the table's default
    # length is 40 (a regulator found the 41st missing from the example).
    import pandas as pd

    from runtime.report.sections.metric_suite.by_job import JOB_ROWS_SHOWN, by_job_context

    rows = []
    for i in range(45):
        rows.append({"system": "s", "condition": "c", "metric": "score_delta", "variant": f"V{i % 9 + 1:02d}",
                     "job_id": f"job{i:02d}", "flag": "crosses threshold", "status": "FAIL" if i < 41 else "PASS",
                     "pooled_status": "PASS" if i < 41 else "FAIL", "value": 0.1, "ci_low": 0.0, "ci_high": 0.2,
                     "pooled_value": 0.01, "disadvantaged": "", "q": float("nan"), "q_p": float("nan"),
                     "i2": float("nan"), "q_df": float("nan")})
    ctx = by_job_context(pd.DataFrame(rows), "BASE", ["BASE"] + [f"V{i:02d}" for i in range(1, 10)])
    assert JOB_ROWS_SHOWN == 40 and ctx["n_worse"] == 41
    assert ctx["shown"] == 41 and len(ctx["flagged"]) == 41
    assert sorted(r["job"] for r in ctx["flagged"]) == [f"job{i:02d}" for i in range(41)]  # the worse ones
