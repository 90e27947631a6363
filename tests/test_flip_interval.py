"""The flip rate's interval with tie-averaged flips (methods 17, issue 39 §4).

A candidate tied at the top-K cutoff counts the share of its tie orders in which it flips, not a whole flip, so the
flipped share varies less than a binomial proportion: Wilson's interval on the candidates covered up to 97.9% of
simulated audits with ties. The interval is now Wilson's at the effective number of candidates ``n / deff``,
``deff = 1 − mean(f(1 − f)) / (p(1 − p))``; without ties it is Wilson's on the candidates, as before. Expected values are
computed by hand and with statsmodels.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from statsmodels.stats.proportion import proportion_confint

from compiler import catalog
from runtime.analysis import analyse, stats


def _wilson(x: float, n: float) -> tuple[float, float]:
    lo, hi = proportion_confint(x, n, alpha=0.05, method="wilson")
    return float(lo), float(hi)


def test_whole_flips_read_wilson_on_the_candidates():
    got = stats.tie_averaged_interval(np.array([1.0] * 10 + [0.0] * 90))
    assert (got.low, got.high) == pytest.approx(_wilson(10, 100), rel=1e-12)
    assert got.notes == ()


def test_tie_averaged_flips_read_wilson_at_the_effective_sample_size():
    # 8 whole flips, 4 half flips, 88 none: p = 10/100; sum f(1 - f) = 4 x 1/4 = 1; p(1 - p) = 0.09
    shares = np.array([1.0] * 8 + [0.5] * 4 + [0.0] * 88)
    deff = 1 - 1 / (100 * 0.09)                                  # 8/9, by hand
    assert deff == pytest.approx(float(np.var(shares)) / 0.09, rel=1e-12)  # = population variance / p(1 - p)
    n_eff = 100 / deff                                           # 112.5
    got = stats.tie_averaged_interval(shares)
    assert (got.low, got.high) == pytest.approx(_wilson(0.1 * n_eff, n_eff), rel=1e-12)
    # narrower than Wilson on the 100 candidates, and still around p
    whole = _wilson(10, 100)
    assert whole[0] < got.low < 0.1 < got.high < whole[1]
    assert got.notes == (stats.NOTE_TIE_DEFF.format(n_eff=112.5, n=100, deff=8 / 9),)
    assert "112.5 of 100 candidates" in got.notes[0] and "design effect 0.889" in got.notes[0]


def test_shares_without_spread_or_candidates():
    # every candidate flips half the time: no spread to read a design effect from, Wilson on the candidates
    got = stats.tie_averaged_interval(np.full(40, 0.5))
    assert (got.low, got.high) == pytest.approx(_wilson(20, 40), rel=1e-12) and got.notes == ()
    assert stats.tie_averaged_interval(np.zeros(30)).high == pytest.approx(_wilson(0, 30)[1], rel=1e-12)
    empty = stats.tie_averaged_interval(np.array([]))
    assert math.isnan(empty.low) and math.isnan(empty.high)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from([0.0, 0.25, 0.5, 1.0 / 3, 0.75, 1.0]), min_size=2, max_size=60))
def test_the_interval_holds_the_share_and_is_never_wider_than_wilsons(shares):
    x = np.array(shares)
    got = stats.tie_averaged_interval(x)
    p = float(x.mean())
    whole = _wilson(float(x.sum()), x.size)
    assert 0.0 <= got.low <= p + 1e-12 and p - 1e-12 <= got.high <= 1.0
    if 0.0 < p < 1.0:  # fewer effective candidates never: deff <= 1, so never wider than Wilson on the candidates
        assert got.high - got.low <= whole[1] - whole[0] + 1e-12


def test_a_flip_row_with_a_tie_at_the_cutoff():
    """One job of 6, K = 3, swap-in. BASE scores 5, 4, 3, 3, 2, 1: the two 3s share places 3-4, each inside with
    probability 1/2. V01 moves cv0 from 5 to 1 (out: a whole flip) and cv2 from 3 to 9 (inside for sure: in the
    reference top 3 half the time, so it flips half the time); the rest keep their scores and their tie order.
    Shares 1, 0, 1/2, 0, 0, 0: p = 1.5/6 = 1/4, sum f(1 - f) = 1/4, deff = 1 - (1/4)/(6 x 3/16) = 7/9."""
    rows = []
    for variant, scores in (("BASE", [5, 4, 3, 3, 2, 1]), ("V01", [1, 4, 9, 3, 2, 1])):
        for i, s in enumerate(scores):
            rows.append({"system": "s", "condition": "c", "replicate": 0, "job_id": "j0", "cv_id": f"cv{i}",
                         "variant": variant, "score": float(s), "rank": i + 1, "is_true_match": i % 2})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = analyse(pd.DataFrame(rows), reference="BASE", k={"counterfactual": 3, "group": 3, "merit": 3},
                    alpha=0.05, n_bootstrap=50, seed=3, thresholds=catalog.default_thresholds(),
                    score_range={"s": (0.0, 10.0)}, ranking="swap_in").metrics
    flip = m[(m["metric"] == "flip_rate") & (m["variant"] == "V01")].iloc[0]
    assert flip["value"] == pytest.approx(0.25, abs=1e-12)
    n_eff = 6 / (7 / 9)
    assert (flip["ci_low"], flip["ci_high"]) == pytest.approx(_wilson(0.25 * n_eff, n_eff), rel=1e-9)
    assert "design effect 0.778" in flip["notes"]
    base = m[(m["metric"] == "flip_rate") & (m["variant"] == "BASE")].iloc[0]
    # the reference compared with itself flips nothing in any sample: [0, 0], not Wilson's [0, 3.84/9.84]
    assert (base["value"], base["ci_low"], base["ci_high"]) == (0.0, 0.0, 0.0)
    assert "design effect" not in base["notes"]
