"""The flip rate's interval with tie-averaged flips (methods 17, issue 39 §4), and under swap-in top-K normal with the SD
of its smoothed, re-ranked resamples (methods 19).

A candidate tied at the top-K cutoff counts the share of its tie orders in which it flips, not a whole flip, so the
flipped share varies less than a binomial proportion: Wilson's interval on the candidates covered up to 97.9% of
simulated audits with ties. The interval is now (under per-variant ranking and a threshold rule) Wilson's at the effective number of candidates ``n / deff``,
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
from runtime.analysis import analyse, counterfactual, stats


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


def test_a_flip_row_with_a_tie_at_the_cutoff(monkeypatch):
    """One job of 6, K = 3, swap-in. BASE scores 5, 4, 3, 3, 2, 1: the two 3s share places 3-4, each inside with
    probability 1/2. V01 moves cv0 from 5 to 1 (out: a whole flip) and cv2 from 3 to 9 (inside for sure: in the
    reference top 3 half the time, so it flips half the time); the rest keep their scores and their tie order.
    Shares 1, 0, 1/2, 0, 0, 0: p = 1.5/6 = 1/4, sum f(1 - f) = 1/4, deff = 1 - (1/4)/(6 x 3/16) = 7/9."""
    rows = []
    for variant, scores in (("BASE", [5, 4, 3, 3, 2, 1]), ("V01", [1, 4, 9, 3, 2, 1])):
        for i, s in enumerate(scores):
            rows.append({"system": "s", "condition": "c", "replicate": 0, "job_id": "j0", "cv_id": f"cv{i}",
                         "variant": variant, "score": float(s), "rank": i + 1, "is_true_match": i % 2})
    # the tie-averaged interval, which a swap-in row reads where the smoothed resamples give none (methods 19)
    monkeypatch.setattr(counterfactual, "smoothed_flip_interval", lambda *a, **kw: None)
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


def _sim_flip_rows(ties: bool, audits: int, seed: int):
    from runtime import seeding
    from runtime.analysis import _pairing
    from runtime.analysis.counterfactual_sim import CorrespondenceSim
    from runtime.analysis.frame import cohorts

    sim = CorrespondenceSim(n_jobs=5, effect_se=1.0, ties=ties)
    frame = sim.frame(seeding.rng(seed, "flip-deff", int(ties)), audits)
    for cohort in cohorts(frame, reference="BASE", score_range={"sim": (0.0, 100.0)}, ranking="swap_in"):
        yield _pairing(cohort, "V01", k={"counterfactual": 10, "group": 10, "merit": 10}, n_bootstrap=199, seed=3)


def test_under_swap_in_the_flip_rate_reads_a_normal_interval_from_the_smoothed_resamples():
    """Methods 19 (issue 39 §4): ``value ± z · SD / n``, SD that of the flip count over the smoothed, re-ranked
    resamples (the row's note prints it to 4 significant digits), its Monte Carlo SE that of a normal SD from B
    resamples; the same seed gives the same interval; a different stream from the selection ratio's."""
    from runtime.analysis.registry import get_metric

    p = next(_sim_flip_rows(True, 1, 20261207))
    res = get_metric("flip_rate")(p)
    note = next(n for n in res.notes if n.startswith("normal interval, SD "))
    sd = float(note.split("SD ")[1].split(" ")[0])
    assert "from 199 smoothed, re-ranked candidate resamples" in note
    assert 0 < res.value < 1 and res.ci_low > 0
    assert (res.ci_low, res.ci_high) == pytest.approx((res.value - stats.Z_975 * sd, res.value + stats.Z_975 * sd),
                                                      rel=1e-3)
    half = (res.ci_high - res.ci_low) / 2
    assert res.diagnostics["ci_mc_se"] == pytest.approx(half / math.sqrt(2 * 198), rel=1e-12)
    again = get_metric("flip_rate")(next(_sim_flip_rows(True, 1, 20261207)))
    assert (again.ci_low, again.ci_high) == (res.ci_low, res.ci_high)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 6), st.integers(-2, 2)), min_size=3, max_size=9), st.integers(1, 4))
def test_a_resamples_flip_count_is_the_pairings_own_on_the_data(cands, k):
    """On whole-point scores (ties everywhere, a variant tied with its own reference) the shares of
    :func:`runtime.analysis.selection.swap_in_shares` and their joint share give the flip count that
    ``Pairing.in_top`` / ``Pairing.joint_in`` give under swap-in ranking, candidate by candidate."""
    from runtime.analysis import _pairing
    from runtime.analysis.frame import cohorts
    from runtime.analysis.selection import swap_in_shares

    ref = np.array([c[0] for c in cands], dtype=float)
    var = ref + np.array([c[1] for c in cands], dtype=float)
    rows = [{"system": "s", "condition": "c", "replicate": 0, "job_id": "j0", "cv_id": f"cv{i}", "variant": v,
             "score": float(s), "rank": i + 1, "is_true_match": i % 2}
            for v, scores in (("BASE", ref), ("V01", var)) for i, s in enumerate(scores)]
    cohort = next(iter(cohorts(pd.DataFrame(rows), reference="BASE", score_range={"s": (-2.0, 10.0)},
                               ranking="swap_in")))
    p = _pairing(cohort, "V01", k={"counterfactual": k, "group": k, "merit": k}, n_bootstrap=10, seed=1)
    r, q = swap_in_shares(p.score_ref[None], p.score_var[None], k)
    split = (r > 0) & (r < 1) & (q > 0) & (q < 1)
    flips = (r + q - 2 * np.where(split, np.minimum(r, q), r * q))[0]
    was, now = p.in_top(k)
    both = p.joint_in(k)
    assert r[0] == pytest.approx(was, abs=1e-12)
    assert q[0] == pytest.approx(now, abs=1e-12)
    assert flips == pytest.approx(was + now - 2 * both, abs=1e-12)


def test_the_flip_rates_sd_matches_the_spread_over_simulated_audits():
    """The interval's SD against the flip rate's SD over 150 simulated audits of 5 jobs x 40 candidates (a 1-SE
    demotion; continuous and whole-point scores): the mean SD within 12% of the spread (the spread's own sampling
    error over 150 audits is about 6%)."""
    from runtime.analysis.registry import get_metric

    for ties in (False, True):
        values, sds = [], []
        for p in _sim_flip_rows(ties, 150, 20261208):
            res = get_metric("flip_rate")(p)
            values.append(res.value)
            sds.append((res.ci_high - res.value) / stats.Z_975)
        ratio = float(np.mean(sds) / np.std(values, ddof=1))
        assert 0.88 <= ratio <= 1.12, (ties, ratio)


def test_per_variant_and_threshold_rows_keep_the_tie_averaged_wilson_interval():
    """Each candidate's flip is its own under per-variant ranking and a threshold rule: Wilson's interval at the
    tie-averaged effective number (methods 17; no tie here, so Wilson's on the 8 candidates), no resampled SD. Top 3
    (or scores from 6.5): the reference holds cv0-cv2, V01 cv0, cv2 and cv7: cv1 flips out, cv7 in."""
    scores = {"BASE": [9, 8, 7, 6, 5, 4, 3, 2], "V01": [9, 5, 7, 6, 4.5, 2, 3, 8]}
    rows = [{"system": "s", "condition": "c", "replicate": 0, "job_id": "j0", "cv_id": f"cv{i}", "variant": v,
             "score": float(x), "rank": i + 1, "is_true_match": i % 2}
            for v, xs in scores.items() for i, x in enumerate(xs)]
    for kw in ({"ranking": "per_variant"}, {"ranking": "swap_in", "threshold": 6.5}):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            m = analyse(pd.DataFrame(rows), reference="BASE", k={"counterfactual": 3, "group": 3, "merit": 3},
                        alpha=0.05, n_bootstrap=50, seed=1, thresholds=catalog.default_thresholds(),
                        score_range={"s": (0.0, 10.0)}, **kw).metrics
        flip = m[(m["metric"] == "flip_rate") & (m["variant"] == "V01")].iloc[0]
        assert "smoothed" not in flip["notes"], kw
        assert flip["value"] == 2 / 8, kw
        assert (flip["ci_low"], flip["ci_high"]) == pytest.approx(_wilson(2, 8), abs=1e-12), kw
