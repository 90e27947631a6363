"""Merit intervals of a count seen 0 times (methods 13).

A matcher that separates true matches from non-matches (the example's, match d = 4.26) leaves no resample of the
stratified bootstrap able to move Recall@K, nDCG@K or a TPR/FPR gap: the percentile interval was the point
``[1, 1]`` or ``[0, 0]``, which covered 33-55% of the example's resampled audits. The interval is then Wilson's on
the count seen 0 times. Expected bounds are computed here by hand (``z² / (n + z²)``) and with statsmodels.
"""

from __future__ import annotations

import math

import pandas as pd
import pytest
from statsmodels.stats.proportion import proportion_confint

from runtime.analysis.merit import NOTE_ZERO_EVENTS, zero_event_bound
from test_analysis import _rank, cell, run

Z2 = 1.959963984540054 ** 2


def separated_frame() -> pd.DataFrame:
    """2 jobs x 6 base candidates (3 true matches, scored far above the 3 non-matches) x BASE, V1 (every score
    moved a little, no top-3 membership changes) and V2 (scored exactly as BASE)."""
    base = [90.0, 85.0, 80.0, 40.0, 35.0, 30.0]
    var = [89.0, 86.0, 79.0, 41.0, 34.0, 31.0]
    rows = []
    for job in ("J1", "J2"):
        for i, cv in enumerate("abcdef"):
            for variant, scores in (("BASE", base), ("V1", var), ("V2", base)):
                rows.append({"system": "sys", "condition": "plain", "replicate": 0, "job_id": job, "cv_id": cv,
                             "variant": variant, "score": scores[i], "is_true_match": int(i < 3), "sex_gender": "x"})
    df = pd.DataFrame(rows)
    df["rank"] = _rank(df)
    return df


K3 = {"counterfactual": 3, "group": 3, "merit": 3}


@pytest.fixture(scope="module")
def separated():
    return run(separated_frame(), k=K3, n_bootstrap=400)


def test_the_wilson_bound_on_zero_events_by_hand():
    for n in (6, 100, 250):
        assert zero_event_bound(n) == pytest.approx(Z2 / (n + Z2), rel=1e-12)
        assert zero_event_bound(n) == pytest.approx(proportion_confint(0, n, method="wilson")[1], rel=1e-12)
    assert zero_event_bound(100) == pytest.approx(0.0370, abs=1e-4)


@pytest.mark.parametrize("variant", ["BASE", "V1", "V2"])
def test_recall_and_ndcg_at_their_maximum_get_wilsons_interval_on_the_slots(separated, variant):
    """Every job's top 3 holds its 3 true matches: 0 non-matches in S = 2 x min(3, 3) = 6 attainable slots, so
    [1 - 3.8415/9.8415, 1] = [0.60967, 1] for Recall@3 and nDCG@3 alike, of every variant (the reference too:
    a ranking's quality is no comparison), with the note and no Monte Carlo error."""
    for metric in ("recall_at_k", "ndcg_at_k"):
        r = cell(separated, metric, variant)
        assert r["value"] == pytest.approx(1.0)
        assert r["ci_low"] == pytest.approx(1 - Z2 / (6 + Z2), rel=1e-9)
        assert r["ci_low"] == pytest.approx(0.609666, abs=1e-6)
        assert r["ci_high"] == pytest.approx(1.0)
        assert NOTE_ZERO_EVENTS.format(what="non-matches in the attainable top slots", nobs=6) in r["notes"]
        assert r["ci_mc_se"] == 0.0


def test_gaps_without_a_membership_change_get_wilsons_bound_unless_the_scores_are_identical(separated):
    """V1 moves every score but no true match (nor non-match) enters or leaves a top 3: 0 of P = 6 true matches
    change, so the equal-opportunity gap reads [0, 3.8415/9.8415]; equalized odds adds 0 of N = 6 non-matches,
    the same bound. V2 (and BASE) are scored exactly as the reference: no membership can change, [0, 0] is exact
    and kept."""
    u6 = Z2 / (6 + Z2)
    for metric in ("equal_opportunity_gap", "equalized_odds_gap"):
        r = cell(separated, metric, "V1")
        assert r["value"] == 0.0
        assert (r["ci_low"], r["ci_high"]) == (0.0, pytest.approx(u6, rel=1e-9))
        assert NOTE_ZERO_EVENTS.format(what="true matches entering or leaving the top-K", nobs=6) in r["notes"]
        for same in ("V2", "BASE"):
            s = cell(separated, metric, same)
            assert (s["value"], s["ci_low"], s["ci_high"]) == (0.0, 0.0, 0.0)
            assert "every bootstrap resample gave the estimate" not in str(s["notes"])
    odds = cell(separated, "equalized_odds_gap", "V1")
    assert NOTE_ZERO_EVENTS.format(what="non-matches entering or leaving the top-K", nobs=6) in odds["notes"]


def test_a_resample_that_can_move_the_value_keeps_the_percentile_interval():
    """One non-match (J1 d, 82) between the true matches: resamples can draw it twice or not at all, so Recall@3
    varies and its percentile interval is kept (no zero-event note); its low end is a resampled value, not the
    Wilson bound."""
    df = separated_frame()
    df.loc[(df["job_id"] == "J1") & (df["cv_id"] == "d"), "score"] = 82.0
    df["rank"] = _rank(df)
    r = cell(run(df, k=K3, n_bootstrap=400), "recall_at_k", "BASE")
    assert r["value"] == pytest.approx((2 / 3 + 1) / 2)
    assert r["ci_low"] < r["value"] and "every bootstrap resample gave the estimate" not in str(r["notes"])
    assert not math.isclose(r["ci_low"], r["value"] * (1 - zero_event_bound(6)))
    assert r["ci_mc_se"] > 0
