"""Tie-safe statistics (issue 12, methods version 3): tests on the score grid, mid-ranks, top-K
membership and nDCG/Recall averaged over the orders of tied candidates, results that do not depend on
candidate labels nor on the scale of the scores."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_analysis_properties import paired_frames

from compiler import catalog
from runtime.analysis import analyse, stats

THRESHOLDS = catalog.default_thresholds()


def _frame(rows: list[tuple[str, str, str, float, int]], system: str = "s") -> pd.DataFrame:
    """(job, cv, variant, score, is_true_match) rows; the rank column is a cv_id tie-break on purpose
    (the analysis must not read it)."""
    df = pd.DataFrame(rows, columns=["job_id", "cv_id", "variant", "score", "is_true_match"])
    df = df.assign(system=system, condition="c", replicate=0)
    df = df.sort_values(["job_id", "variant", "score", "cv_id"], ascending=[True, True, False, True])
    df["rank"] = df.groupby(["job_id", "variant"]).cumcount() + 1
    return df


def _analyse(df: pd.DataFrame, k: dict, score_range=(0.0, 100.0), **kw) -> pd.DataFrame:
    return analyse(df, reference="BASE", k=k, alpha=0.05, n_bootstrap=200, seed=5, thresholds=THRESHOLDS,
                   score_range={"s": score_range}, **kw).metrics


def _cell(m: pd.DataFrame, metric: str, variant: str) -> pd.Series:
    return m[(m["metric"] == metric) & (m["variant"] == variant)].iloc[0]


# ---------------------------------------------------------------------------------- the two inputs

BASE = [42, 51, 31, 15, 43, 61, 46, 74, 37, 60]
V01 = [47, 55, 33, 12, 48, 64, 50, 77, 39, 57]


@pytest.mark.parametrize("ranking", ["per_variant", "swap_in"])
def test_wilcoxon_runs_on_the_integer_grid(ranking):
    """Integer scores on 0-100: the differences 5, 4, 2, -3, 5, 3, 4, 3, 2, -3 tie. Divided by the range,
    floating-point noise split the ties (p = 0.0488); on the grid, the exact distribution of T+ with
    mid-ranks over the 2^10 sign flips gives p = 64/1024 = 0.0625."""
    rows = [("j", f"c{i:02d}", v, float(s), i % 2) for v, col in (("BASE", BASE), ("V01", V01))
            for i, s in enumerate(col)]
    m = _analyse(_frame(rows), {"counterfactual": 3, "group": 3, "merit": 3}, ranking=ranking)
    row = _cell(m, "score_delta", "V01")
    assert row["p_value"] == 0.0625 and row["test"] == "wilcoxon_exact_midranks"
    if ranking == "per_variant":
        assert row["p_adj"] == 0.0625  # the only informative test of the run
    # the old computation crossed alpha
    assert stats.sps.wilcoxon(np.array(V01) / 100, np.array(BASE) / 100).pvalue == pytest.approx(0.048828125)


def _ties_frame(order: tuple[str, str, str, str]) -> pd.DataFrame:
    """c1 90 (match), c2 90 (no match), c3 70 (match), c4 50 (no match), under labels ``order``."""
    data = [(90.0, 1), (90.0, 0), (70.0, 1), (50.0, 0)]
    return _frame([("j", cv, v, s, y) for v in ("BASE", "V01") for cv, (s, y) in zip(order, data)])


@pytest.mark.parametrize("ranking", ["per_variant", "swap_in"])
@pytest.mark.parametrize("order", [("c1", "c2", "c3", "c4"), ("c2", "c1", "c3", "c4"), ("c4", "c3", "c2", "c1")])
@pytest.mark.parametrize("k, ndcg, recall", [(1, 0.5, 0.25), (2, 0.5, 0.5)])
def test_ties_in_the_ranking_are_averaged_over_their_orders(order, k, ndcg, recall, ranking):
    """McSherry & Najork (2008): nDCG@1 = 0.5, Recall@1 = 0.25, nDCG@2 = 0.5, Recall@2 = 0.5, whatever
    the labels of the two tied candidates (swap-in: c1's variant resume against c2's reference resume
    ties the same way)."""
    m = _analyse(_ties_frame(order), {"counterfactual": k, "group": k, "merit": k}, ranking=ranking)
    for variant in ("BASE", "V01"):
        assert _cell(m, "ndcg_at_k", variant)["value"] == pytest.approx(ndcg, abs=1e-15)
        assert _cell(m, "recall_at_k", variant)["value"] == pytest.approx(recall, abs=1e-15)
    assert _cell(m, "ndcg_at_k", "V01")["ties_at_cutoff"] == (2 if k == 1 else 0)
    # the reference against itself is one order: nothing flips, everything is retained
    assert _cell(m, "flip_rate", "BASE")["value"] == 0 and _cell(m, "retention_rate", "BASE")["value"] == 1
    # V01 scores as BASE: one tie order per candidate, shared by its two resumes (issue 29 §7), so at
    # K = 1 each tied candidate is inside both top-1s or neither (independent orders gave flip rate
    # 2 x (1/2 x 1/2) / 4 = 0.25 and retention 0.5)
    assert _cell(m, "flip_rate", "V01")["value"] == 0 and _cell(m, "retention_rate", "V01")["value"] == 1
    assert _cell(m, "impact_ratio", "V01")["value"] == 1


# ---------------------------------------------------------------------------------- invariances

def _relabel(df: pd.DataFrame, perm_seed: int) -> pd.DataFrame:
    """A bijection of each job's cv_id labels (the rank column keeps its cv_id tie-break)."""
    rng = np.random.default_rng(perm_seed)
    out = df.copy()
    for job, sub in df.groupby("job_id"):
        labels = sorted(sub["cv_id"].unique())
        mapping = dict(zip(labels, rng.permutation(labels)))
        out.loc[sub.index, "cv_id"] = sub["cv_id"].map(mapping)
    return _frame([(r.job_id, r.cv_id, r.variant, r.score, r.is_true_match) for r in out.itertuples()])


#: (the interval statuses of methods 7 move with the intervals, within their bootstrap error: not compared)
SCALAR = ("value", "p_value", "p_adj", "status_seed000", "status_seed000_operational", "test", "ties_at_cutoff")


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(paired_frames(), st.integers(0, 2**16), st.sampled_from(["per_variant", "swap_in"]))
def test_relabelling_candidates_changes_nothing(frame_k, perm_seed, ranking):
    df, k = frame_k
    args = dict(reference="BASE", k=k, alpha=0.05, n_bootstrap=200, seed=1, thresholds=THRESHOLDS,
                score_range={"s": (0.0, 4.0)}, ranking=ranking)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        a = analyse(df, **args).metrics
        b = analyse(_relabel(df, perm_seed), **args).metrics
    for col in SCALAR:  # bit-identical
        assert a[col].astype(str).tolist() == b[col].astype(str).tolist(), col
    # an interval is a bootstrap estimate: its endpoints move by less than 3 bootstrap standard errors
    # the standard error of each cell's bootstrap distribution (column bootstrap_se; 0 for a Wilson
    # interval, which involves no resampling and must not move at all)
    se = np.fmax(a["bootstrap_se"].to_numpy(float), b["bootstrap_se"].to_numpy(float))
    se = np.where(np.isnan(se), 0.0, se)
    for col in ("ci_low", "ci_high"):
        x, y = a[col].to_numpy(float), b[col].to_numpy(float)
        same = (np.isnan(x) & np.isnan(y)) | (np.abs(x - y) <= 3 * se + 1e-12)
        assert same.all(), (col, a.loc[~same, ["metric", "variant", col]], y[~same])


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(paired_frames(), st.sampled_from([10.0, 0.01]), st.sampled_from(["per_variant", "swap_in"]))
def test_the_scale_of_the_scores_changes_no_p_value(frame_k, factor, ranking):
    """Scores and score_range times 10 or 0.01: the grid scales with them, every p-value is unchanged."""
    df, k = frame_k
    args = dict(reference="BASE", k=k, alpha=0.05, n_bootstrap=50, seed=1, thresholds=THRESHOLDS, ranking=ranking)
    a = analyse(df, score_range={"s": (0.0, 4.0)}, **args).metrics
    b = analyse(df.assign(score=df["score"] * factor), score_range={"s": (0.0, 4.0 * factor)}, **args).metrics
    assert a["p_value"].astype(str).tolist() == b["p_value"].astype(str).tolist()
    assert a["test"].tolist() == b["test"].tolist()


# ---------------------------------------------------------------------------------- units

@pytest.mark.parametrize("values, grid", [
    ([42.0, 51.0, 15.0], 1.0), ([0.5, 0.25, 1.75], 0.25), ([7.1, 3.4], 0.1), ([71 + 1 / 3, 72.0, 70 + 2 / 3], 1 / 3),
    ([0.5847293841, 0.6120934812], 0.0), ([40.0, 60.0], 1.0), ([], 0.0)])
def test_the_score_grid_is_inferred(values, grid):
    assert stats.infer_resolution(np.array(values)) == pytest.approx(grid, abs=1e-15)


def test_a_declared_resolution_wins_over_the_inferred_grid():
    """Scores 40, 42, ... on a declared grid of 2: differences 2 and 4 are 1 and 2 steps; the same test
    as on a grid of 1, the p-value is unchanged; a coarser grid of 10 makes every difference 0."""
    rows = [("j", f"c{i}", v, float(40 + 2 * i + (2 * (i % 2) + 2 if v == "V01" else 0)), 1)
            for v in ("BASE", "V01") for i in range(8)]
    k = {"counterfactual": 2, "group": 2, "merit": 2}
    inferred = _cell(_analyse(_frame(rows), k), "score_delta", "V01")
    declared = _cell(_analyse(_frame(rows), k, score_resolution={"s": 2.0}), "score_delta", "V01")
    assert declared["p_value"] == inferred["p_value"]
    coarse = _cell(_analyse(_frame(rows), k, score_resolution={"s": 10.0}), "score_delta", "V01")
    assert math.isnan(coarse["p_value"]) and "all paired differences are zero" in coarse["notes"]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(-4, 4).filter(lambda x: x != 0), min_size=2, max_size=12))
def test_the_exact_tied_distribution_agrees_with_scipy_permutation_test(d):
    """The dynamic-programming count of T+ equals scipy's enumeration of every sign flip."""
    x = np.array(d, dtype=float)
    ranks = stats.sps.rankdata(np.abs(x))
    res = stats.sps.permutation_test((x,), lambda v, axis=-1: np.sum(ranks * (v > 0), axis=axis),
                                     permutation_type="samples", n_resamples=np.inf, vectorized=True)
    assert stats.signed_rank_exact_p(x) == pytest.approx(min(1.0, float(res.pvalue)), abs=1e-12)


def test_wilson_bounds_stay_inside_0_1():
    iv = stats.wilson_interval(5, 5)
    assert iv.high == 1.0 and 0 < iv.low < 1
    assert stats.wilson_interval(0, 7).low == 0.0


def test_a_resample_without_a_true_match_is_dropped_not_counted_as_no_gap():
    """One true match in 20 candidates: about (19/20)^20 = 36% of resamples draw none. Their TPR gap
    is undefined; they are dropped and counted, not read as a gap of 0."""
    rows = []
    for v, shift in (("BASE", 0.0), ("V01", -30.0)):
        for i in range(20):
            y = 1 if i == 0 else 0
            rows.append(("j", f"c{i:02d}", v, (90.0 + shift if i == 0 else 80.0 - i), y))
    m = _analyse(_frame(rows), {"counterfactual": 3, "group": 3, "merit": 3})
    row = _cell(m, "equal_opportunity_gap", "V01")
    assert row["value"] == 1.0  # the match leaves the top 3 under V01
    assert "bootstrap resamples left the statistic undefined" in row["notes"]
    n_dropped = int(row["notes"].split(" of 200 bootstrap")[0].split()[-1])
    assert 40 <= n_dropped <= 110
    assert row["ci_low"] == 1.0  # every resample that drew the match sees the whole gap
