"""Property tests of runtime.analysis (hypothesis): invariants that hold for any paired frame."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from compiler import catalog
from runtime.analysis import analyse


@st.composite
def paired_frames(draw):
    """Small paired frames: 1-3 jobs, 2-8 candidates, 1-3 variants besides BASE, tied scores,
    0/1 or unknown labels, K between 1 and 5 per family."""
    n_jobs = draw(st.integers(1, 3))
    n_cv = draw(st.integers(2, 8))
    n_var = draw(st.integers(1, 3))
    labels = draw(st.sampled_from(["random", "unknown", "none_match", "all_match"]))
    names = ["BASE"] + [f"V{i}" for i in range(1, n_var + 1)]
    scores = draw(st.lists(st.integers(0, 4), min_size=n_jobs * n_cv * len(names),
                           max_size=n_jobs * n_cv * len(names)))
    flags = draw(st.lists(st.integers(0, 1), min_size=n_jobs * n_cv, max_size=n_jobs * n_cv))
    rows = []
    it = iter(scores)
    for j in range(n_jobs):
        for name in names:
            block = [(f"cv{i}", float(next(it))) for i in range(n_cv)]
            order = sorted(block, key=lambda t: (-t[1], t[0]))
            rank = {cv: r + 1 for r, (cv, _) in enumerate(order)}
            for i, (cv, score) in enumerate(block):
                y = {"random": flags[j * n_cv + i], "unknown": math.nan, "none_match": 0,
                     "all_match": 1}[labels]
                rows.append({"system": "s", "condition": "c", "replicate": 0, "job_id": f"j{j}",
                             "cv_id": cv, "variant": name, "score": score, "rank": rank[cv],
                             "is_true_match": y})
    k = {f: draw(st.integers(1, 5)) for f in catalog.FAMILIES}
    return pd.DataFrame(rows), k


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(paired_frames(), st.integers(0, 2**32 - 1), st.sampled_from(["per_variant", "swap_in"]))
def test_invariants(frame_k, seed, ranking):
    df, k = frame_k
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no warning may leak out of the analysis
        res = analyse(df, reference="BASE", k=k, alpha=0.05, n_bootstrap=40, seed=seed, ranking=ranking,
                      thresholds=catalog.default_thresholds(), score_range={"s": (0.0, 4.0)})
    m = res.metrics

    # every finite CI contains its value, and low <= high
    finite = m[m["ci_low"].notna() & m["ci_high"].notna()]
    assert (finite["ci_low"] <= finite["value"]).all()
    assert (finite["value"] <= finite["ci_high"]).all()
    # a value that is defined has a status; an undefined one is N/A
    assert ((m["value"].isna()) == (m["status_seed000"] == catalog.STATUS_NA)).all()
    # the interval status (issue 29 §1): PASS => [decision_low, decision_high] inside [pass_low, pass_high],
    # FAIL => disjoint, INCONCLUSIVE => neither; N/A exactly when an endpoint is missing
    lo, hi = m["decision_low"].to_numpy(float), m["decision_high"].to_numpy(float)
    a, b = m["pass_low"].to_numpy(float), m["pass_high"].to_numpy(float)
    r = lambda x: np.array([float(f"{v:.5e}") if np.isfinite(v) and v != 0 else v for v in x])  # noqa: E731
    lo, hi, a, b = r(lo), r(hi), r(a), r(b)
    inside, disjoint = (a <= lo) & (hi <= b), (hi < a) | (lo > b)
    expect = np.where(np.isnan(lo) | np.isnan(hi), catalog.STATUS_NA,
                      np.where(inside, "PASS", np.where(disjoint, "FAIL", "INCONCLUSIVE")))
    assert (m["status"].to_numpy() == expect).all()
    # a row decides on its value, except the flip rate, retention and impact ratio under swap-in: on the
    # selection ratio at their cutoff (issue 30 §2); at K group that is the selection_ratio row's interval
    own = m["decision_on"] == "value"
    assert m.loc[own, "decision_low"].equals(m.loc[own, "ci_low"])
    assert m.loc[own, "decision_high"].equals(m.loc[own, "ci_high"])
    sel_metrics = m["metric"].isin(["flip_rate", "retention_rate", "impact_ratio"])
    sel = m[m["metric"] == "selection_ratio"].set_index("variant")
    if ranking == "per_variant":
        assert own.all() and sel["value"].isna().all()
        assert sel["notes"].str.contains("1 by construction").all()
    else:
        assert set(m.loc[~own, "metric"]) <= {"flip_rate", "retention_rate", "impact_ratio"}
        assert (m.loc[~own, "decision_on"] == "selection_ratio").all()
        assert (~own[sel_metrics]).all() == sel["value"].notna().all()
        assert sel.loc["BASE", "value"] == 1.0
        for r in m[m["metric"].isin(["retention_rate", "impact_ratio"]) & ~own].itertuples():
            assert (r.decision_low, r.decision_high) == (sel.loc[r.variant, "ci_low"], sel.loc[r.variant, "ci_high"])
        assert (sel["value"].dropna() >= 0).all()
    # p_adj is empty where p_value is, or where the test cannot reject in this design (then the notes
    # say so); never below p_value
    notes = m["notes"].fillna("").astype(str)
    out_of_bh = (notes.str.contains("not informative in this design") | notes.str.contains("counted once in BH")
                 | notes.str.contains("not tested: level 1 did not reject")).to_numpy(bool)
    assert (m["p_adj"].isna().to_numpy() == (m["p_value"].isna().to_numpy() | out_of_bh)).all()
    adj = m[m["p_adj"].notna()]
    assert (adj["p_adj"] >= adj["p_value"] - 1e-15).all()

    by = m.set_index(["metric", "variant"])["value"]
    flips = m[m["metric"] == "flip_rate"]["value"]
    assert ((flips >= 0) & (flips <= 1)).all()
    for variant in m["variant"].unique():
        ratio = by[("impact_ratio", variant)]
        assert math.isclose(ratio, by[("retention_rate", variant)] / by[("retention_rate", "BASE")],
                            rel_tol=1e-12, abs_tol=1e-12)
        for metric_id in ("retention_rate", "impact_ratio", "recall_at_k", "ndcg_at_k",
                          "equal_opportunity_gap", "equalized_odds_gap"):
            v = by[(metric_id, variant)]
            assert math.isnan(v) or -1e-12 <= v <= 1 + 1e-12
        if not math.isnan(by[("equalized_odds_gap", variant)]):
            assert by[("equalized_odds_gap", variant)] >= by[("equal_opportunity_gap", variant)]
    # the reference compared with itself
    assert by[("score_delta", "BASE")] == 0 and by[("marc", "BASE")] == 0
    assert by[("flip_rate", "BASE")] == 0 and by[("impact_ratio", "BASE")] == 1
    risk = res.risk
    scores = risk["risk_score"].dropna()
    assert ((scores >= 0) & (scores <= 1)).all()


@settings(max_examples=40, deadline=None)
@given(st.lists(st.floats(-1, 1, allow_nan=False), min_size=2, max_size=30),
       st.integers(0, 2**32 - 1))
def test_bootstrap_interval_contains_mean(values, seed):
    from runtime.analysis.stats import percentile_bootstrap

    x = np.array(values)
    value = float(np.mean(x))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ci = percentile_bootstrap((x,), np.mean, value=value, n_resamples=50,
                                  rng=np.random.default_rng(seed))
    assert ci.low <= value <= ci.high
