"""Score intervals of the ratio metrics on pooled counts at the bootstrap's design effect (issue 39 §2).

Checked against hand computations with the standard library (Wilson's closed form; McNemar's statistic, which is the
paired-ratio score statistic at θ = 1), against statsmodels' Wilson interval, against an independent restricted
maximum likelihood (scipy's SLSQP on the constrained multinomial likelihood), and on one simulated audit, where the
metric rows are recomputed from their own resamples.
"""

from __future__ import annotations

import math
import statistics

import numpy as np
import pytest
from scipy import optimize
from statsmodels.stats.proportion import proportion_confint

from runtime.analysis import _pairing, stats
from runtime.analysis.counterfactual_sim import SCORE_RANGE, CorrespondenceSim
from runtime.analysis.frame import cohorts
from runtime.analysis.registry import get_metric

K = {"counterfactual": 10, "group": 10, "merit": 20}
Z = statistics.NormalDist().inv_cdf(0.975)


def _wilson(p: float, n: float) -> tuple[float, float]:
    """Wilson (1927) by hand: (p + z²/2n ± z sqrt(p(1-p)/n + z²/4n²)) / (1 + z²/n)."""
    centre = (p + Z * Z / (2 * n)) / (1 + Z * Z / n)
    half = Z * math.sqrt(p * (1 - p) / n + Z * Z / (4 * n * n)) / (1 + Z * Z / n)
    return centre - half, centre + half


def test_wilson_at_the_effective_sample_size_by_hand():
    dist = [0.6, 0.7, 0.75, 0.8, 0.8, 0.85, 0.9, 0.95, 1.0, 0.65]
    value, nobs = 0.8, 20.0
    deff = statistics.variance(dist) / (value * (1 - value) / nobs)
    got = stats.wilson_deff_interval(np.array(dist), value, nobs=nobs)
    assert (got.low, got.high) == pytest.approx(_wilson(value, nobs / deff), rel=1e-12)
    # the same as statsmodels' Wilson interval of 0.8·n_eff successes in n_eff trials
    assert (got.low, got.high) == pytest.approx(
        proportion_confint(value * nobs / deff, nobs / deff, alpha=0.05, method="wilson"), rel=1e-12)
    assert got.notes[0].startswith("Wilson score interval") and f"{deff:.3g}" in got.notes[0]
    assert got.low < value < got.high
    assert 0 < got.mc_low and 0 < got.mc_high


def test_wilson_is_longer_below_an_estimate_near_one():
    """The skew the percentile interval lacked: at 0.8 on 20 slots the lower arm is longer than the upper."""
    got = stats.wilson_deff_interval(np.random.default_rng(0).binomial(20, 0.8, 999) / 20, 0.8, nobs=20)
    assert 0.8 - got.low > 1.5 * (got.high - 0.8)


def test_wilson_at_the_edge_uses_the_slots_and_a_constant_bootstrap_a_point():
    # every slot retained: every resample 1 (or undefined): no spread to read a design effect from
    got = stats.wilson_deff_interval(np.array([1.0, 1.0, 0.95]), 1.0, nobs=20)
    assert (got.low, got.high) == pytest.approx((20 / (20 + Z * Z), 1.0), rel=1e-12)
    assert (got.mc_low, got.mc_high) == (0.0, 0.0)
    point = stats.wilson_deff_interval(np.full(50, 0.75), 0.75, nobs=20)
    assert (point.low, point.high) == (0.75, 0.75)


def test_wilson_mc_se_by_the_delta_method_on_the_design_effect():
    rng = np.random.default_rng(3)
    dist = rng.binomial(20, 0.75, 400) / 20
    value, nobs = 0.75, 20.0
    s2 = statistics.variance(dist.tolist())
    mean = statistics.fmean(dist.tolist())
    mu4 = statistics.fmean([(d - mean) ** 4 for d in dist.tolist()])
    deff = s2 / (value * (1 - value) / nobs)
    se_deff = deff * math.sqrt((mu4 - s2 * s2) / dist.size) / s2
    h = 1e-6
    lo_a, hi_a = _wilson(value, nobs / (deff - h))
    lo_b, hi_b = _wilson(value, nobs / (deff + h))
    got = stats.wilson_deff_interval(dist, value, nobs=nobs)
    assert got.mc_low == pytest.approx(abs(lo_b - lo_a) / (2 * h) * se_deff, rel=1e-5)
    assert got.mc_high == pytest.approx(abs(hi_b - hi_a) / (2 * h) * se_deff, rel=1e-5)


@pytest.mark.parametrize("table", [(15.6, 4.4, 4.4, 55.6), (18, 2, 6, 54), (10, 10, 3, 57)])
def test_paired_ratio_score_at_one_is_mcnemars_statistic(table):
    n11, n12, n21, n22 = table
    assert stats.paired_ratio_score(table, 1.0) == pytest.approx((n21 - n12) / math.sqrt(n12 + n21), rel=1e-12)


def _slsqp_score(table, theta):
    """Z(θ) with the restricted MLE found by scipy's SLSQP on the constrained log-likelihood (independent of the
    Lagrange root the module solves)."""
    x = np.asarray(table, dtype=float)
    n = x.sum()
    best = None
    for start in (x / n + 0.01, np.full(4, 0.25)):
        r = optimize.minimize(lambda p: -np.sum(x[x > 0] * np.log(np.maximum(p[x > 0], 1e-300))), start / start.sum(),
                              method="SLSQP", bounds=[(0, 1)] * 4,
                              constraints=[{"type": "eq", "fun": lambda p: (1 - theta) * p[0] - theta * p[1] + p[2]},
                                           {"type": "eq", "fun": lambda p: p.sum() - 1}],
                              options={"ftol": 1e-15, "maxiter": 2000})
        best = r if best is None or r.fun < best.fun else best
    p = best.x
    var = (1 - theta) ** 2 * p[0] + p[2] + theta ** 2 * p[1]
    return (x[0] + x[2] - theta * (x[0] + x[1])) / math.sqrt(n * var)


@pytest.mark.parametrize("table, want", [
    ((15.6, 4.4, 4.4, 55.6), (0.720256, 1.388396)),
    ((18, 2, 6, 54), (0.919036, 1.632822)),
    ((3, 1, 2, 10), (0.525605, 3.090466)),
    ((16, 4, 0, 60), (0.583983, 0.992073)),     # no variant gained a slot: the empty cell takes the constraint's mass
    ((16, 0, 3, 61), (0.957591, 1.601678)),     # none lost one
])
def test_paired_ratio_score_interval_inverts_an_independent_score_test(table, want):
    low, high = stats.paired_ratio_score_interval(table)
    assert (low, high) == pytest.approx(want, abs=2e-6)
    assert _slsqp_score(table, low) == pytest.approx(Z, abs=1e-5)
    assert _slsqp_score(table, high) == pytest.approx(-Z, abs=1e-5)


def test_a_design_effect_divides_every_count():
    table = (15.6, 4.4, 4.4, 55.6)
    assert stats.paired_ratio_score_interval(table, deff=2.0) == pytest.approx(
        stats.paired_ratio_score_interval(tuple(c / 2 for c in table)), rel=1e-9)
    wide, narrow = stats.paired_ratio_score_interval(table, deff=2.0), stats.paired_ratio_score_interval(table)
    assert wide[0] < narrow[0] and wide[1] > narrow[1]


def test_paired_score_deff_reads_the_delta_variance():
    table = (15.6, 4.4, 4.4, 55.6)
    value = 20 / 20
    dist = np.random.default_rng(2).normal(1.0, 0.17, 499)
    model = ((1 - value) ** 2 * 15.6 + 4.4 + value ** 2 * 4.4) / 20 ** 2
    deff = statistics.variance(dist.tolist()) / model
    got = stats.paired_score_deff_interval(dist, value, table=table)
    assert (got.low, got.high) == pytest.approx(stats.paired_ratio_score_interval(table, deff=deff), rel=1e-12)
    assert f"{deff:.3g}" in got.notes[0]


@pytest.fixture(scope="module")
def cohort():
    frame = CorrespondenceSim(n_jobs=2, effect_se=1, ties=False).frame(np.random.default_rng(5), 1)
    (c,) = list(cohorts(frame, reference="BASE", score_range={"sim": SCORE_RANGE}, ranking="swap_in"))
    return c


@pytest.mark.parametrize("metric", ["retention_rate", "impact_ratio"])
def test_the_row_reads_wilson_at_its_own_resamples(cohort, monkeypatch, metric):
    monkeypatch.setitem(stats.RATIO_TRANSFORMS, metric, "wilson_deff")
    seen = []
    real = stats.wilson_deff_interval

    def spy(dist, value, **kw):
        seen.append((np.array(dist), value, kw))
        return real(dist, value, **kw)

    monkeypatch.setattr(stats, "wilson_deff_interval", spy)
    res = get_metric(metric)(_pairing(cohort, "V01", k=K, n_bootstrap=400, seed=11))
    (dist, value, kw), = seen
    assert value == res.value == 0.85 and kw["nobs"] == res.diagnostics["slots"] == 20.0
    assert dist.shape == (400,)
    deff = statistics.variance(dist.tolist()) / (0.85 * 0.15 / 20)
    assert (res.ci_low, res.ci_high) == pytest.approx(_wilson(0.85, 20 / deff), rel=1e-12)
    assert any(n.startswith("Wilson score interval") for n in res.notes)
    assert res.diagnostics["ci_mc_se"] > 0


def test_the_paired_score_candidate_reads_the_selection_table(cohort, monkeypatch):
    """Tang's score interval for the selection ratio (measured in issue 39 §2, not adopted: it over-covered;
    ``bench/ratio_interval_families.py`` reads it through :func:`runtime.analysis.stats.stratified_bootstrap`) on the
    paired in/out table of the memberships, at the design effect of their candidate bootstrap."""
    from runtime.analysis import selection

    seen = []
    real = stats.paired_score_deff_interval

    def spy(dist, value, **kw):
        seen.append((np.array(dist), value, kw))
        return real(dist, value, **kw)

    monkeypatch.setattr(stats, "paired_score_deff_interval", spy)
    p = _pairing(cohort, "V01", k=K, n_bootstrap=400, seed=11)
    in_ref, in_var = p.in_top(10)
    both = p.joint_in(10)
    table = (both.sum(), (in_ref - both).sum(), (in_var - both).sum(), (1 - in_ref - in_var + both).sum())
    value = in_var.sum() / in_ref.sum()
    ci = stats.stratified_bootstrap((in_ref, in_var), selection._ratio, strata=p.job, value=value, n_resamples=400,
                                    rng=p.rng("selection_ratio"), transform="paired_score_deff", counts=table)
    (dist, seen_value, kw), = seen
    n11, n12, n21, n22 = kw["table"]
    assert n11 + n12 + n21 + n22 == 80 and n11 + n12 == 20    # 2 jobs x 40 candidates, 2 x 10 reference slots
    assert seen_value == value == (n11 + n21) / 20
    model = ((1 - value) ** 2 * n11 + n21 + value ** 2 * n12) / 400
    want = stats.paired_ratio_score_interval(kw["table"], deff=statistics.variance(dist.tolist()) / model)
    assert (ci.low, ci.high) == pytest.approx(want, rel=1e-12)


def test_the_quick_bench_imports_numpy_scipy_pandas_statsmodels_only():
    """``bench/coverage_ratios_quick.py`` runs on a bare many-core machine: its imports (and so its forked workers')
    reach ``compiler.catalog`` without the compiler package's spec models (pydantic)."""
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    code = ("import importlib.util, sys\n"
            "spec = importlib.util.spec_from_file_location('b', 'bench/coverage_ratios_quick.py')\n"
            "m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)\n"
            "top = {k.split('.')[0] for k in sys.modules} - set(sys.stdlib_module_names)\n"
            "print(' '.join(sorted(t for t in top if not t.startswith('_'))))\n"
            "print(' '.join(sorted(k for k in sys.modules if k.startswith('compiler'))))\n")
    out = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True, check=True,
                         env={"PYTHONPATH": str(root), "PATH": "/usr/bin:/bin"}).stdout.splitlines()
    top, compiler_modules = set(out[0].split()), out[1].split()
    assert {"numpy", "scipy", "pandas", "statsmodels", "runtime", "compiler"} <= top
    assert not top & {"pydantic", "pydantic_core", "jinja2", "yaml", "torch"}
    assert compiler_modules == ["compiler", "compiler.catalog"]


def _jeffreys(x: float, n: float) -> tuple[float, float]:
    """Jeffreys' equal-tailed interval from scipy's Beta quantiles (independent of statsmodels)."""
    from scipy.stats import beta
    return float(beta.ppf(0.025, x + 0.5, n - x + 0.5)), float(beta.ppf(0.975, x + 0.5, n - x + 0.5))


def test_jeffreys_at_the_design_effect_by_hand():
    # a spread above the binomial one: deff > 1, n_eff = 20 / deff trials, Beta(x + 1/2, n - x + 1/2) quantiles
    dist = [0.6, 0.7, 0.75, 0.8, 0.8, 0.85, 0.9, 0.95, 1.0, 0.65]
    value, nobs = 0.8, 20.0
    deff = statistics.variance(dist) / (value * (1 - value) / nobs)
    assert deff > 1
    got = stats.jeffreys_deff_interval(np.array(dist), value, nobs=nobs)
    assert (got.low, got.high) == pytest.approx(_jeffreys(value * nobs / deff, nobs / deff), rel=1e-9)
    assert got.notes[0].startswith("Jeffreys interval") and "truncated" not in got.notes[0]
    assert 0 < got.mc_low and 0 < got.mc_high
    # less pulled towards 1/2 than Wilson's at the same n_eff: both ends higher for an estimate of 0.8
    wilson = stats.wilson_deff_interval(np.array(dist), value, nobs=nobs)
    assert got.low > wilson.low and got.high > wilson.high


def test_jeffreys_truncates_a_design_effect_under_one_at_the_slots():
    # resamples tighter than the binomial (deff ~ 0.25): the interval is Jeffreys' on the 20 slots themselves
    dist = np.array([0.75, 0.8, 0.85] * 100)
    value, nobs = 0.8, 20.0
    assert statistics.variance(dist.tolist()) / (value * (1 - value) / nobs) < 1
    got = stats.jeffreys_deff_interval(dist, value, nobs=nobs)
    assert (got.low, got.high) == pytest.approx(_jeffreys(16.0, 20.0), rel=1e-9)
    assert "truncated at 1" in got.notes[0] and (got.mc_low, got.mc_high) == pytest.approx((0.0, 0.0), abs=1e-9)
    # Wilson's (methods 12-14) read the same resamples at n_eff = 20 / deff: far narrower
    assert stats.wilson_deff_interval(dist, value, nobs=nobs).low > got.low + 0.1


def test_jeffreys_keeps_the_edge_and_exact_rules():
    edge = stats.jeffreys_deff_interval(np.array([1.0, 1.0, 0.95]), 1.0, nobs=20)
    assert (edge.low, edge.high) == pytest.approx((20 / (20 + Z * Z), 1.0), rel=1e-12)   # Wilson on the slots
    point = stats.jeffreys_deff_interval(np.full(50, 0.75), 0.75, nobs=20)
    assert (point.low, point.high) == (0.75, 0.75)
    exact = stats.jeffreys_deff_interval(np.ones(5), 1.0, nobs=20, exact=True)
    assert (exact.low, exact.high) == (1.0, 1.0)
