"""Ratio intervals when no top-K slot changes hands (methods 14, issue 39 §4), and MARC when no rank changes (methods 17).

A variant whose scores differ from the reference's but move no candidate across the top-K cut gives a retention, an
impact ratio and a selection ratio of 1 in every bootstrap resample: the interval was the point ``[1, 1]``, a
certainty that 20 slots cannot give. It is now Wilson's interval on 0 slots lost of the pooled slots; a variant
scored exactly as the reference keeps ``[1, 1]``. Expected bounds are computed by hand (``n / (n + z²)``) and with
statsmodels.
"""

from __future__ import annotations

import numpy as np
import pytest
from statsmodels.stats.proportion import proportion_confint

from compiler import catalog
from runtime.analysis import analyse, stats
from runtime.analysis.counterfactual_sim import SCORE_RANGE, CorrespondenceSim

Z2 = 1.959963984540054 ** 2


@pytest.fixture(scope="module")
def rows():
    """2 jobs x 40 candidates, K = 10 (20 pooled slots); V01 = every reference score + 1e-6 (no candidate crosses
    another), V02 = the reference scores exactly."""
    f = CorrespondenceSim(n_jobs=2, effect_se=0.0).frame(np.random.default_rng(8), 1)
    base = f[f["variant"] == "BASE"].set_index(["job_id", "cv_id"])["score"]
    for variant, shift in (("V01", 1e-6), ("V02", 0.0)):
        m = f["variant"] == variant
        f.loc[m, "score"] = base.reindex(list(zip(f.loc[m, "job_id"], f.loc[m, "cv_id"]))).to_numpy() + shift
    res = analyse(f, reference="BASE", k={"counterfactual": 10, "group": 10, "merit": 20}, alpha=0.05,
                  n_bootstrap=200, seed=1, thresholds=catalog.default_thresholds(),
                  score_range={"sim": SCORE_RANGE}, ranking="swap_in")
    return res.metrics.set_index(["metric", "variant"])


def test_retention_and_impact_ratio_read_wilson_on_zero_slots_lost(rows):
    low = 20 / (20 + Z2)                                       # Wilson's lower bound at 20 of 20, by hand
    assert low == pytest.approx(proportion_confint(20, 20, alpha=0.05, method="wilson")[0], rel=1e-12)
    for metric in ("retention_rate", "impact_ratio"):
        r = rows.loc[(metric, "V01")]
        assert (r["value"], r["ci_high"]) == (1.0, 1.0) and r["ci_low"] == pytest.approx(low, rel=1e-9)
        assert "no top-K slot changed" in r["notes"] and r["ci_mc_se"] == 0
        exact = rows.loc[(metric, "V02")]
        assert (exact["ci_low"], exact["ci_high"]) == (1.0, 1.0) and "no top-K slot changed" not in exact["notes"]


def test_the_selection_ratio_reads_one_plus_or_minus_wilsons_bound(rows):
    u = Z2 / (20 + Z2)                                         # 0.1611: 0 of 20 selected places lost
    r = rows.loc[("selection_ratio", "V01")]
    assert r["value"] == 1.0
    assert (r["ci_low"], r["ci_high"]) == pytest.approx((1 - u, 1 + u), rel=1e-9)
    assert "no selected place changed" in r["notes"]
    # the rows that decide on the selection ratio read that interval (issue 30 §2)
    for metric in ("flip_rate", "retention_rate", "impact_ratio"):
        d = rows.loc[(metric, "V01")]
        assert (d["decision_low"], d["decision_high"]) == pytest.approx((1 - u, 1 + u), rel=1e-9)
    exact = rows.loc[("selection_ratio", "V02")]
    assert (exact["ci_low"], exact["ci_high"]) == (1.0, 1.0)


def test_wilson_deff_interval_without_spread():
    point = stats.wilson_deff_interval(np.ones(50), 1.0, nobs=30, exact=True)
    assert (point.low, point.high) == (1.0, 1.0)
    got = stats.wilson_deff_interval(np.ones(50), 1.0, nobs=30)
    assert (got.low, got.high) == pytest.approx((30 / (30 + Z2), 1.0)) and got.mc_se == 0


def test_marc_at_zero_reads_wilsons_bound_on_zero_candidates_moved(rows):
    """MARC 0 with differing scores (V01: no candidate crosses another) is [0, u / K], u Wilson's upper bound on 0 of
    the 80 candidates moved, one rank each, K = 10 (methods 17); the point [0, 0] claimed that 80 candidates certify
    that none moves. A variant scored exactly as the reference keeps [0, 0]."""
    u = Z2 / (80 + Z2)                                         # 0.04583, by hand
    assert u == pytest.approx(proportion_confint(0, 80, alpha=0.05, method="wilson")[1], rel=1e-12)
    r = rows.loc[("marc", "V01")]
    assert r["value"] == 0.0
    assert (r["ci_low"], r["ci_high"]) == (0.0, pytest.approx(u / 10, rel=1e-9))
    assert "no candidate's rank changed" in r["notes"] and "0 of 80 candidates" in r["notes"]
    assert r["ci_mc_se"] == 0
    exact = rows.loc[("marc", "V02")]
    assert (exact["value"], exact["ci_low"], exact["ci_high"]) == (0.0, 0.0, 0.0)
    assert "no candidate's rank changed" not in exact["notes"]
