"""MARC's U-statistic interval under swap-in ranking (methods 14, issue 39 §4; the inverse-square-root scale, methods 20).

Checked against independent computations: the U-statistic variance estimator against a brute-force sum over every
quadruple of distinct units and against the variance of U over simulated samples; MARC's pairwise counts against
the ranks of :func:`runtime.analysis.frame.cohorts` (via ``analyse``) and a count by hand.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy.stats import norm
from scipy.stats import t as student_t

from compiler import catalog
from runtime.analysis import analyse, stats
from runtime.analysis.cell import dense_codes
from runtime.analysis.counterfactual import NOTE_MARC_BOOTSTRAP, marc_u_se
from runtime.analysis.counterfactual_sim import SCORE_RANGE, CorrespondenceSim


def test_u_statistic_variance_equals_the_brute_force_sum_over_distinct_quadruples():
    g = np.random.default_rng(14).random((7, 7))
    sym = (g + g.T) / 2
    np.fill_diagonal(sym, 0.0)
    n = 7
    pairs = [(a, b) for a in range(n) for b in range(n) if a != b]
    u = sum(sym[a, b] for a, b in pairs) / len(pairs)
    quads = [q for q in itertools.permutations(range(n), 4)]
    theta2 = sum(sym[a, b] * sym[c, d] for a, b, c, d in quads) / len(quads)
    got_u, got_var = stats.u_statistic_variance(g)   # asymmetric on purpose: symmetrised inside
    assert got_u == pytest.approx(u, rel=1e-12)
    assert got_var == pytest.approx(u * u - theta2, rel=1e-10)


def test_u_statistic_variance_is_unbiased_for_the_variance_of_u():
    # Gini's mean difference: kernel |x_a - x_b| of n = 8 standard normals, 20,000 samples. The mean of the estimates
    # must equal the variance of U over the samples within 4 Monte Carlo SEs of that difference.
    rng = np.random.default_rng(1948)
    us, vs = [], []
    for _ in range(20_000):
        x = rng.normal(size=8)
        u, v = stats.u_statistic_variance(np.abs(x[:, None] - x[None, :]))
        us.append(u)
        vs.append(v)
    us, vs = np.asarray(us), np.asarray(vs)
    diff = vs - (us - us.mean()) ** 2 * len(us) / (len(us) - 1)
    assert abs(diff.mean()) < 4 * diff.std(ddof=1) / math.sqrt(len(diff))
    # and the estimate is not the plug-in: the bootstrap-like V-statistic variance would be larger
    assert vs.mean() == pytest.approx(us.var(ddof=1), rel=0.05)


def test_u_statistic_variance_needs_four_units_and_a_square_kernel():
    assert math.isnan(stats.u_statistic_variance(np.ones((3, 3)))[1])
    with pytest.raises(ValueError, match="square"):
        stats.u_statistic_variance(np.ones((3, 4)))


def test_inverse_sqrt_wald_interval_by_hand():
    # value 0.4, se 0.05: c = 0.125, half = z c / 2; sqrt(theta) in [sqrt(0.4) / (1 + half), sqrt(0.4) / (1 - half)]
    z = norm.ppf(0.975)
    half = z * 0.125 / 2
    low, high = stats.inverse_sqrt_wald_interval(0.4, 0.05)
    assert low == pytest.approx(0.4 / (1 + half) ** 2, rel=1e-12) and high == pytest.approx(0.4 / (1 - half) ** 2,
                                                                                             rel=1e-12)
    assert (low, high) == pytest.approx((0.31746, 0.51947), abs=5e-6)
    # the ends sit above the log scale's: low > 0.4 exp(-z c), high > 0.4 exp(z c)
    assert low > 0.4 * math.exp(-z * 0.125) and high > 0.4 * math.exp(z * 0.125)
    # Student's t on 10 degrees of freedom (2.228) instead of z
    q = student_t.ppf(0.975, 10)
    assert stats.inverse_sqrt_wald_interval(0.4, 0.05, df=10) == pytest.approx(
        (0.4 / (1 + q * 0.0625) ** 2, 0.4 / (1 - q * 0.0625) ** 2), rel=1e-12)
    # capped at the statistic's largest value, and there where the scale has no upper end (q c / 2 >= 1)
    assert stats.inverse_sqrt_wald_interval(0.4, 0.05, upper_limit=0.45)[1] == 0.45
    assert stats.inverse_sqrt_wald_interval(0.4, 0.5, upper_limit=3.0) == pytest.approx((0.4 / (1 + z * 1.25 / 2) ** 2, 3.0))
    assert stats.inverse_sqrt_wald_interval(0.4, 0.0) == (0.4, 0.4)
    for bad in ({"value": 0.0, "se": 0.1}, {"value": 0.4, "se": -0.1}, {"value": 0.4, "se": math.inf},
                {"value": 0.4, "se": 0.1, "df": 0}, {"value": 0.4, "se": 0.1, "upper_limit": 0.3}):
        with pytest.raises(ValueError, match="inverse_sqrt_wald_interval"):
            stats.inverse_sqrt_wald_interval(**bad)


def test_marc_pairwise_counts_by_hand():
    # one job, reference scores 4 3 2 1 (ranks 1-4), variant scores 4 1.5 2 1: candidate b's variant (1.5) passes the
    # reference scores 2 of c ... below b's own 3: it lies below c (2) and above d (1): |Δrank| = 1 (c); a, c, d
    # keep their places. h_bc = 1, every other h = 0; raw = 1/4.
    ref = np.array([4.0, 3.0, 2.0, 1.0])
    var = np.array([4.0, 1.5, 2.0, 1.0])
    job = np.zeros(4, dtype=int)
    code_ref, code_var = dense_codes(ref, var, job)
    # U = 1/12 (one pair of 12 ordered ones, symmetrised: g_bc = g_cb = 1/2); theta^2's estimate: S = 1,
    # r = (0, 1/2, 1/2, 0), sum g^2 = 1/2: (1 - 4 * 1/2 + 2 * 1/2) / 24 = 0; Var U = 1/144; SE of raw = 3 * 1/12
    assert marc_u_se(code_ref, code_var, job, raw=0.25) == pytest.approx(3 / 12)
    with pytest.raises(RuntimeError, match="pairwise counts"):
        marc_u_se(code_ref, code_var, job, raw=0.5)


def test_analyse_reads_the_u_statistic_interval_for_swap_in_marc():
    sim = CorrespondenceSim(n_jobs=3, effect_se=1.0)
    frame = sim.frame(np.random.default_rng(3), 1)
    k = {"counterfactual": 10, "group": 10, "merit": 20}
    res = analyse(frame, reference="BASE", k=k, alpha=0.05, n_bootstrap=50, seed=1,
                  thresholds=catalog.default_thresholds(), score_range={"sim": SCORE_RANGE}, ranking="swap_in")
    m = res.metrics[(res.metrics["metric"] == "marc") & (res.metrics["variant"] == "V01")].iloc[0]
    wide = frame.pivot_table(index=["job_id", "cv_id"], columns="variant", values="score").reset_index()
    jobs = wide["job_id"].astype("category").cat.codes.to_numpy()
    code_ref, code_var = dense_codes(wide["BASE"].to_numpy(), wide["V01"].to_numpy(), jobs)
    se = marc_u_se(code_ref, code_var, jobs, raw=m["value"] * 10) / 10
    # t on N - J degrees of freedom; the cap, MARC's largest value, is sum n_j (n_j - 1) / (N K)
    sizes = np.bincount(jobs)
    n_all = int(sizes.sum())
    half = student_t.ppf(0.975, n_all - 3) * se / m["value"] / 2
    assert (m["ci_low"], m["ci_high"]) == pytest.approx(
        (m["value"] / (1 + half) ** 2, m["value"] / (1 - half) ** 2), rel=1e-12)
    assert (m["ci_low"], m["ci_high"]) == pytest.approx(stats.inverse_sqrt_wald_interval(
        m["value"], se, df=n_all - 3, upper_limit=float((sizes * (sizes - 1)).sum()) / (n_all * 10)), rel=1e-12)
    assert math.isnan(m["ci_mc_se"]) and NOTE_MARC_BOOTSTRAP not in m["notes"]
    # per-variant ranking keeps the candidate bootstrap (rank changes of either sign), without the note
    pv = analyse(frame, reference="BASE", k=k, alpha=0.05, n_bootstrap=50, seed=1,
                 thresholds=catalog.default_thresholds(), score_range={"sim": SCORE_RANGE}, ranking="per_variant")
    row = pv.metrics[(pv.metrics["metric"] == "marc") & (pv.metrics["variant"] == "V01")].iloc[0]
    assert math.isfinite(row["bootstrap_se"]) and row["resamples"] == 50 and NOTE_MARC_BOOTSTRAP not in row["notes"]


def test_a_job_of_three_candidates_falls_back_to_the_bootstrap_with_a_note():
    sim = CorrespondenceSim(n_jobs=1, effect_se=1.0)
    frame = sim.frame(np.random.default_rng(4), 1)
    keep = sorted(frame["cv_id"].unique())[:3]
    frame = frame[frame["cv_id"].isin(keep)].copy()
    # the lowest-scored candidate's V01 resume rises above every reference score: a rank change of 2
    ref = frame[frame["variant"] == "BASE"].set_index("cv_id")["score"]
    frame.loc[(frame["cv_id"] == ref.idxmin()) & (frame["variant"] == "V01"), "score"] = ref.max() + 1.0
    res = analyse(frame, reference="BASE", k={"counterfactual": 1, "group": 1, "merit": 1}, alpha=0.05,
                  n_bootstrap=50, seed=1, thresholds=catalog.default_thresholds(),
                  score_range={"sim": SCORE_RANGE}, ranking="swap_in")
    rows = res.metrics[(res.metrics["metric"] == "marc") & (res.metrics["variant"] != "BASE")]
    v01 = rows[rows["variant"] == "V01"].iloc[0]
    assert v01["value"] > 0 and NOTE_MARC_BOOTSTRAP in v01["notes"]


@pytest.mark.parametrize("block", [1, 7, 1000])
def test_crossing_sums_block_by_block_equal_the_whole_kernel(monkeypatch, block):
    # a job too large for its n x n kernel is summed CROSSING_BLOCK rows at a time: the sums, and so U and its
    # variance, must not depend on the block size (ties included: integer scores)
    from runtime.analysis import counterfactual as cf
    rng = np.random.default_rng(11)
    a = rng.integers(0, 30, 61).astype(float)
    v = a + rng.integers(-3, 4, 61)
    above_var = (a[None, :] > v[:, None]) + 0.5 * (a[None, :] == v[:, None])
    above_ref = (a[None, :] > a[:, None]) + 0.5 * (a[None, :] == a[:, None])
    h = np.abs(above_var - above_ref)
    np.fill_diagonal(h, 0.0)
    monkeypatch.setattr(cf, "CROSSING_BLOCK", block)
    total, rows, square_sum = cf._crossing_sums(a, v)
    assert total == pytest.approx(h.sum())
    assert stats.u_statistic_from_sums(61, total, rows, square_sum) == pytest.approx(stats.u_statistic_variance(h))
