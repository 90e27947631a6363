"""Confidence intervals and significance tests used by the metric suite (seed 000 §3.4, §3.5, Table 4).

Thin wrappers around scipy and statsmodels that pin the options seed 000 prescribes and turn the
libraries' edge cases (undefined tests, degenerate bootstrap distributions, warnings) into plain
values: a test that is undefined returns ``nan`` and a note, never an exception or a warning.
"""

from __future__ import annotations

import inspect
import math
import warnings
from contextvars import ContextVar
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import numpy as np
from scipy import stats as sps
from scipy.special import expit, logit
from scipy.stats.mstats import mjci
from statsmodels.stats.contingency_tables import mcnemar as _sm_mcnemar
from statsmodels.stats.proportion import proportion_confint

#: Level of every confidence interval (seed 000 §3.4: 95%, empirical 2.5/97.5 percentiles).
CONFIDENCE_LEVEL = 0.95
#: McNemar switches from the exact binomial to the continuity-corrected chi-square at this many
#: discordant pairs (seed 000 §3.4.1: exact when n_in,out + n_out,in < 25).
MCNEMAR_EXACT_BELOW = 25

TEST_WILCOXON = "wilcoxon"
TEST_MCNEMAR_EXACT = "mcnemar_exact"
TEST_MCNEMAR_CHI2 = "mcnemar_chi2_cc"
TEST_FISHER = "fisher_exact"

NOTE_TEST_UNDEFINED = "{test} undefined ({why}); p-value left empty"
NOTE_ALL_ZERO = "all paired differences are zero"
NOTE_TOO_FEW = "bootstrap needs at least 2 observations, got {n}; CI left empty"
NOTE_DROPPED = ("{n} of {b} bootstrap resamples left the statistic undefined (e.g. no true match drawn) "
                "and were dropped, not counted as 0")
NOTE_WIDENED = "percentile CI [{low:.6g}, {high:.6g}] did not contain the estimate; widened to include it"
#: The transform of each ratio's bootstrap interval in this methods version (issue 39 §2); ``None`` is the
#: percentile interval. The logit / log intervals of :data:`CANDIDATE_RATIO_TRANSFORMS` were measured against it
#: on the same resamples and not adopted: 2 jobs, effects 0, 1 and 3 SE, 1,000 audits each
#: (``bench/coverage_ratios_quick.py``, ``bench/results/coverage_ratios_quick.json``), retention covered
#: 92.9-97.8% (percentile 93.2-94.5%), the impact ratio 90.1-96.1% with up to 9.6% of misses above the truth
#: (92.9-94.6%), the selection ratio 96.3-98.2% (92.7-93.9%): worse in range, and the impact ratio's misses
#: would fall against the system. A transform is adopted only once the bench shows it in 93-97%.
RATIO_TRANSFORMS: dict[str, str | None] = {"retention_rate": None, "impact_ratio": None, "selection_ratio": None}
#: The transforms ``bench/coverage_ratios_quick.py`` compares with the percentile interval.
CANDIDATE_RATIO_TRANSFORMS: dict[str, str] = {"retention_rate": "logit", "impact_ratio": "log",
                                              "selection_ratio": "log"}
#: Rows whose interval is the transformed bootstrap interval (:func:`transformed_interval`).
NOTE_TRANSFORMED = "{transform}-transformed bootstrap interval (normal on the {transform} scale, bootstrap SE there)"
#: The estimate lies on the edge of the transformed scale (retention 0 or 1, a ratio of 0): the percentile interval.
NOTE_TRANSFORM_EDGE = "the estimate {value:.6g} lies on the edge of the {transform} scale: percentile interval"
#: The log-transformed interval of a ratio that cannot exceed 1 (seed 000's impact ratio) is cut at 1.
NOTE_CAPPED = "upper end {high:.6g} cut to the ratio's maximum {cap:g}"

#: Transforms of :func:`transformed_interval`: (forward, inverse, derivative of the inverse at a value of it).
TRANSFORMS: dict[str, tuple[Callable[[np.ndarray], np.ndarray], Callable[[np.ndarray], np.ndarray],
                            Callable[[np.ndarray], np.ndarray]]] = {
    "logit": (logit, expit, lambda y: y * (1.0 - y)),
    "log": (np.log, np.exp, lambda y: y),
}
#: Normal quantile of the transformed interval (two-sided 95%).
Z_975 = float(sps.norm.ppf(0.5 + CONFIDENCE_LEVEL / 2))

# scipy >= 1.15 names the generator argument ``rng``; older releases only know ``random_state``.
# Both use a passed ``numpy.random.Generator`` as it is, so the draws are identical.
_RNG_KW = "rng" if "rng" in inspect.signature(sps.bootstrap).parameters else "random_state"
_WIDEN_TOL = 1e-9


#: Where :func:`percentile_bootstrap` reports the standard error of each bootstrap distribution it
#: draws (a list, set by :func:`runtime.analysis.analyse` around each metric cell; None: nowhere).
BOOTSTRAP_SE: ContextVar[list[float] | None] = ContextVar("BOOTSTRAP_SE", default=None)


@dataclass(frozen=True)
class Interval:
    """A confidence interval; ``low``/``high`` are floats (or arrays for vector statistics)."""

    low: np.ndarray | float
    high: np.ndarray | float
    notes: tuple[str, ...] = ()
    #: Monte Carlo standard error of ``low`` / ``high`` (:func:`endpoint_mc_se`); nan when not a bootstrap
    #: interval, or when too few resamples lie beyond an end for it to be estimated.
    mc_low: np.ndarray | float = math.nan
    mc_high: np.ndarray | float = math.nan

    @property
    def mc_se(self) -> float:
        """``ci_mc_se``: the larger Monte Carlo SE of the two ends (over every statistic of a stack); nan
        when neither is known. One number per row: a status reads both ends, so the larger bounds both."""
        both = np.concatenate([np.ravel(np.asarray(self.mc_low, dtype=float)),
                               np.ravel(np.asarray(self.mc_high, dtype=float))])
        both = both[np.isfinite(both)]
        return float(both.max()) if both.size else math.nan


def contain(value: np.ndarray | float, low: np.ndarray | float,
            high: np.ndarray | float) -> tuple[np.ndarray, np.ndarray, bool]:
    """Widen ``[low, high]`` so that it contains ``value``; return (low, high, materially_widened).

    A percentile interval of a mean contains the mean except for floating-point noise (the
    resampled means are summed in another order); it can miss a non-linear statistic (a ratio) in
    rare, very skewed samples. Either way the report must never show an estimate outside its own
    interval, so the interval is widened, and ``materially_widened`` says whether the change was
    more than rounding noise (the caller then adds a note).
    """
    value = np.asarray(value, dtype=float)
    low = np.asarray(low, dtype=float)
    high = np.asarray(high, dtype=float)
    finite = np.isfinite(value) & np.isfinite(low) & np.isfinite(high)
    new_low = np.where(finite, np.minimum(low, value), low)
    new_high = np.where(finite, np.maximum(high, value), high)
    scale = np.maximum(1.0, np.abs(value))
    widened = bool(np.any(finite & ((low - new_low > _WIDEN_TOL * scale)
                                    | (new_high - high > _WIDEN_TOL * scale))))
    return new_low, new_high, widened


def percentile_bootstrap(data: Sequence[np.ndarray], statistic: Callable[..., np.ndarray], *,
                         value: np.ndarray | float, n_resamples: int, rng: np.random.Generator,
                         paired: bool = False) -> Interval:
    """Percentile bootstrap interval of ``statistic`` (seed 000 §3.4, §3.5).

    Calls ``scipy.stats.bootstrap(data, statistic, method="percentile", confidence_level=0.95,
    n_resamples=n_resamples, paired=paired, vectorized=True)`` with ``rng`` as its generator.

    Parameters
    ----------
    data : sequence of 1-D arrays
        The samples; with ``paired=True`` they are resampled with the same indices.
    statistic : callable
        ``statistic(*samples, axis=-1)``, vectorised over leading axes; it may return a stack of
        several statistics along a new first axis (then ``low``/``high`` are arrays).
    value : float or array
        The statistic on the original data; the interval is widened to contain it (:func:`contain`).
    n_resamples : int
        Number of bootstrap resamples (``analysis.bootstrap``, default 1000).
    rng : numpy.random.Generator
        From ``runtime.seeding.rng(seed, "bootstrap", system, condition, metric, variant)``.
    paired : bool
        Resample the samples jointly (multi-sample statistics).

    Returns
    -------
    Interval
        ``[value, value]`` when every sample is constant (every resample then gives the same
        statistic, so the percentile interval is that point; scipy is not called). ``nan`` bounds
        and a note when a sample has fewer than two observations.
    """
    arrays = [np.asarray(d) for d in data]
    n = min(a.shape[-1] for a in arrays)
    if n < 2:
        nan = np.full_like(np.asarray(value, dtype=float), np.nan)
        return Interval(nan, nan, (NOTE_TOO_FEW.format(n=n),))
    if all(a.min() == a.max() for a in arrays):
        v = np.asarray(value, dtype=float)
        return Interval(v, v, (), 0.0, 0.0)
    with warnings.catch_warnings():
        # A degenerate bootstrap distribution is a valid percentile interval (a point); scipy only
        # warns about it because BCa would be undefined. A resample whose statistic is undefined
        # (nan) is dropped below, and counted.
        warnings.simplefilter("ignore", sps.DegenerateDataWarning)
        warnings.simplefilter("ignore", RuntimeWarning)
        res = sps.bootstrap(tuple(arrays), statistic, n_resamples=n_resamples, vectorized=True,
                            paired=paired, method="percentile",
                            confidence_level=CONFIDENCE_LEVEL, **{_RNG_KW: rng})
    return _percentile_interval(np.asarray(res.bootstrap_distribution, dtype=float), value,
                                (res.confidence_interval.low, res.confidence_interval.high))


def _percentile_interval(dist: np.ndarray, value: np.ndarray | float,
                         ci: tuple[np.ndarray | float, np.ndarray | float] | None = None, *,
                         transform: str | None = None, floor: float = math.nan,
                         cap: float = math.inf) -> Interval:
    """The 95% percentile interval of a bootstrap distribution ``dist`` (resamples on the last axis).

    Reports the distribution's SE to :data:`BOOTSTRAP_SE`; drops and counts resamples whose statistic is
    undefined (nan), never reading them as 0; uses ``ci`` (scipy's own percentiles) when every resample
    is defined; widens the interval to contain ``value``, with a note; gives each end its Monte Carlo
    SE (:func:`endpoint_mc_se`). With ``transform`` (a scalar statistic) the interval is
    :func:`transformed_interval` of the defined resamples instead.
    """
    notes: tuple[str, ...] = ()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        sink = BOOTSTRAP_SE.get()
        if sink is not None:
            sink.append(float(np.nanmax(np.nanstd(dist.reshape(-1, dist.shape[-1]), axis=-1, ddof=1))))
        undefined = np.isnan(dist).reshape(-1, dist.shape[-1]).any(axis=0)
        if undefined.any():
            notes = (NOTE_DROPPED.format(n=int(undefined.sum()), b=dist.shape[-1]),)
            if undefined.all():
                nan = np.full_like(np.asarray(value, dtype=float), np.nan)
                return Interval(nan, nan, notes)
            ci = None
        defined = dist[..., ~undefined] if undefined.any() else dist
        if transform is not None and np.ndim(value) == 0:
            out = transformed_interval(defined, float(value), transform=transform, floor=floor, cap=cap)
            if out is not None:
                return replace(out, notes=(*notes, *out.notes))
            if not np.all(defined == value):  # a point interval (the reference against itself) needs no word
                notes = (*notes, NOTE_TRANSFORM_EDGE.format(value=float(value), transform=transform))
        if ci is None:
            tail = (1 - CONFIDENCE_LEVEL) / 2 * 100
            ci = (np.nanpercentile(dist, tail, axis=-1), np.nanpercentile(dist, 100 - tail, axis=-1))
            if np.ndim(value) == 0:
                ci = (float(ci[0]), float(ci[1]))
        mc_low, mc_high = endpoint_mc_se(defined)
    low, high, widened = contain(value, *ci)
    if widened:
        notes = (*notes, NOTE_WIDENED.format(low=float(np.nanmin(ci[0])), high=float(np.nanmax(ci[1]))))
    if np.ndim(value) == 0:
        mc_low, mc_high = float(np.ravel(mc_low)[0]), float(np.ravel(mc_high)[0])
    return Interval(low, high, notes, mc_low, mc_high)


#: Quantile levels of the 95% percentile interval's ends.
_TAILS = ((1 - CONFIDENCE_LEVEL) / 2, (1 + CONFIDENCE_LEVEL) / 2)


def endpoint_mc_se(dist: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Monte Carlo standard error of the 2.5% and 97.5% quantiles of bootstrap resamples (issue 39 §3).

    Maritz–Jarrett: ``scipy.stats.mstats.mjci(dist, prob=[0.025, 0.975])``, the SE of the order statistic
    at each level, estimated from the resamples themselves (Maritz & Jarrett 1978; Wilcox, *Introduction to
    Robust Estimation*, §3.3). It is what redrawing the bootstrap with another seed would move each end of a
    percentile interval by (SD over reseeded draws; ``tests/test_intervals.py``). It shrinks as
    ``1/sqrt(B)``: a row whose end lies within two of them of a PASS-band bound is redrawn with more
    resamples (:func:`runtime.analysis.analyse`).

    Parameters
    ----------
    dist : numpy.ndarray
        Defined resamples on the last axis, shape ``(B,)`` or ``(m, B)``.

    Returns
    -------
    (numpy.ndarray, numpy.ndarray)
        SE of the lower and of the upper end, shape ``dist.shape[:-1]``, in the statistic's units; 0 for
        a constant row; nan when ``B`` puts an end on the first or last order statistic (fewer than
        60 resamples: mjci's beta weights are undefined there).
    """
    rows = np.asarray(dist, dtype=float).reshape(-1, np.shape(dist)[-1])
    out = np.full((rows.shape[0], 2), np.nan)
    b = rows.shape[1]
    if b and min(int(q * b + 0.5) for q in _TAILS) >= 2 and max(int(q * b + 0.5) for q in _TAILS) < b:
        for i, row in enumerate(rows):
            if row.min() == row.max():
                out[i] = 0.0
                continue
            with warnings.catch_warnings(), np.errstate(invalid="ignore"):
                warnings.simplefilter("ignore", RuntimeWarning)
                out[i] = np.asarray(mjci(row, prob=list(_TAILS)), dtype=float)
    shape = np.shape(dist)[:-1]
    return out[:, 0].reshape(shape), out[:, 1].reshape(shape)


def transformed_interval(dist: np.ndarray, value: float, *, transform: str, floor: float,
                         cap: float = math.inf) -> Interval | None:
    """95% bootstrap interval of a ratio or a bounded proportion, normal on a transformed scale (issue 39 §2).

    ``t = g(value)``, ``s = SD(g(x*_b))`` over the resamples ``x*_b`` (ddof 1), interval
    ``[g⁻¹(t − z·s), g⁻¹(t + z·s)]`` with ``z = Φ⁻¹(0.975)``: ``g = logit`` for a macro retention in
    (0, 1), ``g = log`` for a ratio > 0 (Efron & Tibshirani 1993, §12.6: a transformation that makes the
    statistic's sampling distribution symmetric; Newcombe 2001 for the logit of a proportion).

    Why not the percentile interval: seed 000's retention and impact ratio (§3.4.2) rest on about ten top-K
    slots per job. With two jobs the resampled retention takes a few dozen values and is skewed against its
    ceiling of 1, and its percentile interval, which reads that skew the wrong way round, missed above the
    truth in 5.0–8.6% of simulated audits (covering 89.0–94.6%, ``bench/results/coverage_counterfactual.json``,
    methods 9): not a centring problem (BCa, basic and studentized intervals assume a bias the statistic does
    not have). On the logit / log scale the interval is the estimate ± z SE there, back-transformed: it stays
    inside the statistic's range and is asymmetric on the original scale. It is **not yet shown to fix the
    misses**: ``bench/coverage_ratios_quick.py`` (2 jobs, no ties, effects 0, 1, 3 SE, 1,000 audits each, the
    same resamples read both ways) measured retention 92.9–97.8% (percentile 93.2–94.5%), the impact ratio
    90.1–96.1% (92.9–94.6%) with misses above up to 9.6% and below at most 0.3%, the selection ratio 96.3–98.2%
    (92.7–93.9%). It is reported as **approximate** until the coverage bench
    measures it in range (:mod:`runtime.analysis.coverage`).

    Resamples on the edge of the scale (a retention of 0 or 1, a ratio of 0: every slot kept, or none)
    are clamped to ``[floor, 1 − floor]`` (logit) or ``≥ floor`` (log) before ``g``: ``floor`` is half a
    count of the pooled denominator (``0.5 / slots``), the empirical-logit convention, so one extreme
    resample cannot make ``s`` infinite. An interval of a ratio that cannot exceed ``cap`` is cut there.

    Parameters
    ----------
    dist : numpy.ndarray of shape (B,)
        Defined bootstrap resamples of the statistic.
    value : float
        The statistic on the original data.
    transform : {"logit", "log"}
    floor : float
        Half a count of the denominator, in the statistic's units (> 0).
    cap : float
        Largest value the statistic can take (``inf``: none).

    Returns
    -------
    Interval or None
        With ``mc_low`` / ``mc_high``: the Monte Carlo SE of each end, by the delta method on the SE of
        ``s`` (``sqrt((μ₄ − s⁴) / B) / (2 s)``) times ``z`` and the slope of ``g⁻¹`` at the end: the ends
        are not quantiles of the resamples, so Maritz–Jarrett does not apply (an end cut at ``cap``: 0 when
        the uncut end lies more than 2 of its SEs above it). None when ``value`` lies
        on the edge of the scale (logit: 0 or 1; log: ≤ 0), where the caller keeps the percentile interval.
    """
    fwd, inv, slope = TRANSFORMS[transform]
    if not math.isfinite(value) or value <= 0 or (transform == "logit" and value >= 1):
        return None
    x = np.asarray(dist, dtype=float).reshape(-1)
    lo = min(floor, value) if math.isfinite(floor) and floor > 0 else value
    x = np.clip(x, lo, max(1.0 - lo, value)) if transform == "logit" else np.maximum(x, lo)
    t, y = float(fwd(value)), fwd(x)
    notes: tuple[str, ...] = (NOTE_TRANSFORMED.format(transform=transform),)
    if x.size < 2 or np.all(y == y[0]):
        return Interval(value, value, notes, 0.0, 0.0)
    s = float(np.std(y, ddof=1))
    low, high = float(inv(t - Z_975 * s)), float(inv(t + Z_975 * s))
    mu4 = float(np.mean((y - y.mean()) ** 4))
    se_s = math.sqrt(max(mu4 - s ** 4, 0.0) / x.size) / (2 * s)
    mc_low, mc_high = float(slope(low)) * Z_975 * se_s, float(slope(high)) * Z_975 * se_s
    if high > cap:
        notes = (*notes, NOTE_CAPPED.format(high=high, cap=cap))
        # the cut end moves only when a redraw could bring the uncut one below the cap
        mc_high = mc_high if high - cap <= 2 * mc_high else 0.0
        high = cap
    return Interval(low, high, notes, mc_low, mc_high)


#: Resamples drawn at once by :func:`stratified_bootstrap`, and the most resampled values held at once
#: (block x n): bounds its memory for a large audit (100,000 candidates per job: 40 resamples a block).
_BLOCK = 256
_BLOCK_VALUES = 4_000_000


def stratified_bootstrap(data: Sequence[np.ndarray], statistic: Callable[..., np.ndarray], *,
                         strata: np.ndarray, value: np.ndarray | float, n_resamples: int,
                         rng: np.random.Generator, transform: str | None = None, floor: float = math.nan,
                         cap: float = math.inf) -> Interval:
    """Percentile bootstrap resampling base candidates within strata (candidate-level cluster bootstrap).

    Each resample draws, in every stratum (a job, or a job x label), as many positions as it has,
    with replacement (positions taken in the order of their data, so that relabelling the candidates
    draws the same resamples), and keeps them in the stratum's slots, so ``strata`` (and any job code) still
    describes the resampled arrays; every array of ``data`` is resampled with the same indices (a
    base candidate brings its reference and variant values and its label: the cluster). The
    estimand is the metric's expectation over candidates for the audited jobs, which the auditor
    chose: the jobs are not resampled, so the interval stays defined, and calibrated, with one or
    two jobs, where a bootstrap over jobs covered about half the time with two jobs
    (``bench/results/coverage_counterfactual_methods3.md``).
    ``scipy.stats.bootstrap`` has no strata; this draws the indices itself and otherwise follows
    :func:`percentile_bootstrap` (2.5/97.5 percentiles, undefined resamples dropped and counted,
    the interval widened to contain ``value``, the bootstrap SE reported to :data:`BOOTSTRAP_SE`).

    Parameters
    ----------
    data : sequence of 1-D arrays, all of length n
    statistic : callable
        ``statistic(*resampled)`` with each resampled array of shape ``(b, n)``; returns ``(b,)``, or
        ``(m, b)`` for m statistics at once (``nan`` where a resample leaves it undefined).
    strata : 1-D array of length n
        Stratum label of each position.
    value : float or array of shape (m,)
        The statistic on the original data.
    n_resamples : int
    rng : numpy.random.Generator
    transform : {"logit", "log"}, optional
        Give the interval of :func:`transformed_interval` on that scale (a scalar ratio or retention)
        instead of the percentile interval; ``floor`` and ``cap`` as there.

    Returns
    -------
    Interval
        As :func:`percentile_bootstrap` (``mc_low`` / ``mc_high``: :func:`endpoint_mc_se`, or the
        transformed interval's); ``[value, value]`` when no stratum has two positions with different data.
    """
    arrays = [np.asarray(d) for d in data]
    strata = np.asarray(strata)
    # Within a stratum, positions in the order of their data (the first array first), not of their
    # labels: relabelling the candidates then draws the same resamples, so the interval does not
    # depend on cv_id (candidates with equal data are interchangeable).
    groups = []
    for s in np.unique(strata):
        g = np.flatnonzero(strata == s)
        groups.append(g[np.lexsort(tuple(a[g] for a in reversed(arrays)))])
    if all(g.size < 2 or all(a[g].min() == a[g].max() for a in arrays) for g in groups):
        v = np.asarray(value, dtype=float)
        return Interval(v, v, (), 0.0, 0.0)
    n = strata.shape[0]
    parts = []
    block = max(1, min(_BLOCK, _BLOCK_VALUES // n))
    for start in range(0, n_resamples, block):
        b = min(block, n_resamples - start)
        idx = np.empty((b, n), dtype=np.int64)
        for g in groups:
            idx[:, g] = g[rng.integers(0, g.size, size=(b, g.size))]
        parts.append(np.asarray(statistic(*(a[idx] for a in arrays)), dtype=float))
    return _percentile_interval(np.concatenate(parts, axis=-1), value, transform=transform, floor=floor, cap=cap)


def wilson_interval(count: float, nobs: float) -> Interval:
    """Wilson score interval of ``count / nobs`` at 95% (seed 000 §3.4.1, Table 4).

    ``statsmodels.stats.proportion.proportion_confint(count, nobs, alpha=0.05, method="wilson")``,
    clamped to [0, 1] (statsmodels 0.14 returns ``1.0000000000000002`` for ``count == nobs``);
    ``nan`` bounds when ``nobs`` is 0. ``count`` may be fractional (an expected count over tied
    orderings). The interval always contains ``count / nobs``; it is passed through :func:`contain`
    only to absorb floating-point noise at 0 and 1.
    """
    if nobs <= 0:
        return Interval(math.nan, math.nan)
    lo, hi = proportion_confint(count, nobs, alpha=1 - CONFIDENCE_LEVEL, method="wilson")
    low, high, _ = contain(count / nobs, lo, hi)
    return Interval(float(min(max(low, 0.0), 1.0)), float(min(max(high, 0.0), 1.0)))


#: Decimal places tried when a system's score grid is inferred (:func:`infer_resolution`).
GRID_DECIMALS = 6
#: Divisors tried with each decimal grid (an average of r replicates of integer scores lies on 1/r).
GRID_DIVISORS = tuple(range(1, 11))
_GRID_TOL = 1e-6


def infer_resolution(values: np.ndarray) -> float:
    """The coarsest grid ``10^-d / r`` (d = 0..6, r = 1..10) every finite value lies on, else 0.

    An LLM or a vendor's scores are integers on 0-100 (grid 1), a rating to one decimal has grid
    0.1, the mean of 3 integer replicates grid 1/3; a float embedding's cosines lie on no such grid
    (0: continuous). A value lies on grid g when ``|x/g - round(x/g)| <= 1e-6``.
    """
    x = np.asarray(values, dtype=float)
    x = x[np.isfinite(x)]
    if x.size == 0:
        return 0.0
    grids = sorted({10.0 ** -d / r for d in range(GRID_DECIMALS + 1) for r in GRID_DIVISORS}, reverse=True)
    for g in grids:
        q = x / g
        if np.all(np.abs(q - np.round(q)) <= _GRID_TOL):
            return float(g)
    return 0.0


def score_grid(declared: float | None, values: np.ndarray) -> float:
    """A system's score grid: its declared ``score_resolution``, else :func:`infer_resolution` of its scores."""
    return float(declared) if declared is not None else infer_resolution(values)


def on_grid(d: np.ndarray, step: float) -> np.ndarray:
    """Differences ``d`` as integer multiples of ``step`` (float64 integers), or ``d`` unchanged when
    ``step`` is 0 (continuous scores): floating-point noise can no longer split a tie or a zero."""
    d = np.asarray(d, dtype=float)
    return np.round(d / step) if step > 0 else d


#: Largest number of non-zero differences for which the exact null distribution of T+ with mid-ranks is
#: used when ties or zeros make scipy's exact (untied) distribution inapplicable; beyond it, the normal
#: approximation with the tie correction (as scipy's own ``wilcoxon`` switches at 50).
EXACT_FLIPS_UP_TO = 50
TEST_WILCOXON_EXACT_TIES = "wilcoxon_exact_midranks"
TEST_WILCOXON_NORMAL_TIES = "wilcoxon_normal_ties"


def signed_rank_exact_p(d: np.ndarray) -> float:
    """Two-sided p of the Wilcoxon T+ with mid-ranks over all ``2^n`` equally likely sign flips of the
    non-zero differences ``d``: ``2 · min(P(T+ ≤ t), P(T+ ≥ t))``, at most 1.

    The null distribution is counted exactly by dynamic programming over the doubled mid-ranks (each
    flip adds its rank to T+ or not): O(n · n(n+1)) integer additions, where
    ``scipy.stats.permutation_test`` would enumerate the 2^n flips (15 s for n = 20). For n ≤ 20 a test
    checks both agree.
    """
    d = np.asarray(d, dtype=float)
    w = np.rint(2 * sps.rankdata(np.abs(d))).astype(np.int64)  # mid-ranks are multiples of 1/2
    counts = np.zeros(int(w.sum()) + 1, dtype=np.int64)
    counts[0] = 1
    for wi in w:
        shifted = np.zeros_like(counts)
        shifted[wi:] = counts[:-wi]
        counts = counts + shifted
    t = int(w[d > 0].sum())
    total = float(2 ** d.size)
    p_le, p_ge = counts[: t + 1].sum() / total, counts[t:].sum() / total
    return float(min(1.0, 2 * min(p_le, p_ge)))


def wilcoxon_p(x: np.ndarray, y: np.ndarray | None = None, *, step: float = 0.0) -> tuple[float, tuple[str, ...], str]:
    """Two-sided Wilcoxon signed-rank p-value of paired differences on the score grid (seed 000 §3.4.1).

    The differences ``d = x - y`` (or ``x``) are first put on the grid ``step`` (:func:`on_grid`;
    0 = continuous), so the test is the same on any scale of the same scores. Zeros are dropped
    (``zero_method="wilcox"``). Then:

    - no ties among ``|d|`` and no zero: ``scipy.stats.wilcoxon(d)`` with scipy's defaults (exact
      null distribution up to 50 pairs, normal beyond), test ``wilcoxon``;
    - ties or zeros, at most :data:`EXACT_FLIPS_UP_TO` non-zero pairs: the exact distribution of T+
      with mid-ranks over all ``2^n`` sign flips (:func:`signed_rank_exact_p`), test
      ``wilcoxon_exact_midranks``;
    - ties or zeros, more pairs: ``scipy.stats.wilcoxon(d, method="asymptotic")``, the normal
      approximation with the tie correction of the variance, test ``wilcoxon_normal_ties``.

    Returns
    -------
    (float, tuple of str, str)
        The p-value in [0, 1] (``nan`` when undefined: every difference is zero), notes, the test.
    """
    d = np.asarray(x, dtype=float) if y is None else np.asarray(x, dtype=float) - np.asarray(y, dtype=float)
    d = on_grid(d, step)
    nonzero = d[d != 0]
    if d.size == 0 or nonzero.size == 0:
        return math.nan, (NOTE_TEST_UNDEFINED.format(test=TEST_WILCOXON, why=NOTE_ALL_ZERO),), TEST_WILCOXON
    ties = np.unique(np.abs(nonzero)).size < nonzero.size
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            if not ties and nonzero.size == d.size:
                p, test = float(sps.wilcoxon(d).pvalue), TEST_WILCOXON
            elif nonzero.size <= EXACT_FLIPS_UP_TO:
                p, test = signed_rank_exact_p(nonzero), TEST_WILCOXON_EXACT_TIES
            else:
                p, test = float(sps.wilcoxon(nonzero, method="asymptotic").pvalue), TEST_WILCOXON_NORMAL_TIES
        except ValueError as exc:
            return math.nan, (NOTE_TEST_UNDEFINED.format(test=TEST_WILCOXON, why=str(exc)),), TEST_WILCOXON
    if not math.isfinite(p):
        return math.nan, (NOTE_TEST_UNDEFINED.format(test=TEST_WILCOXON, why="scipy returned nan"),), test
    return p, (), test


def mcnemar_p(table: np.ndarray) -> tuple[float, str]:
    """McNemar p-value of a 2x2 paired table and the test's name (seed 000 §3.4.1, Table 4).

    ``statsmodels.stats.contingency_tables.mcnemar``: exact binomial (``mcnemar_exact``) when the
    discordant count ``table[0,1] + table[1,0]`` is below 25, else the continuity-corrected
    chi-square (``mcnemar_chi2_cc``).
    """
    table = np.asarray(table)
    discordant = int(table[0, 1] + table[1, 0])
    exact = discordant < MCNEMAR_EXACT_BELOW
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = _sm_mcnemar(table, exact=exact, correction=True)
    p = float(res.pvalue)
    return (p if math.isfinite(p) else math.nan), (TEST_MCNEMAR_EXACT if exact else TEST_MCNEMAR_CHI2)


def fisher_p(table: np.ndarray) -> float:
    """Two-sided Fisher exact p-value of a 2x2 table (seed 000 §3.4.2, Table 4)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        p = float(sps.fisher_exact(np.asarray(table)).pvalue)
    return p if math.isfinite(p) else math.nan
