"""Confidence intervals and significance tests used by the metric suite (seed 000 §3.4, §3.5, Table 4).

Thin wrappers around scipy and statsmodels that pin the options seed 000 prescribes and turn the
libraries' edge cases (undefined tests, degenerate bootstrap distributions, warnings) into plain
values: a test that is undefined returns ``nan`` and a note, never an exception or a warning.
"""

from __future__ import annotations

import inspect
import math
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats as sps
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
NOTE_WIDENED = "percentile CI [{low:.6g}, {high:.6g}] did not contain the estimate; widened to include it"

# scipy >= 1.15 names the generator argument ``rng``; older releases only know ``random_state``.
# Both use a passed ``numpy.random.Generator`` as it is, so the draws are identical.
_RNG_KW = "rng" if "rng" in inspect.signature(sps.bootstrap).parameters else "random_state"
_WIDEN_TOL = 1e-9


@dataclass(frozen=True)
class Interval:
    """A confidence interval; ``low``/``high`` are floats (or arrays for vector statistics)."""

    low: np.ndarray | float
    high: np.ndarray | float
    notes: tuple[str, ...] = ()


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
        return Interval(v, v)
    with warnings.catch_warnings():
        # A degenerate bootstrap distribution is a valid percentile interval (a point); scipy only
        # warns about it because BCa would be undefined.
        warnings.simplefilter("ignore", sps.DegenerateDataWarning)
        res = sps.bootstrap(tuple(arrays), statistic, n_resamples=n_resamples, vectorized=True,
                            paired=paired, method="percentile",
                            confidence_level=CONFIDENCE_LEVEL, **{_RNG_KW: rng})
    low, high, widened = contain(value, res.confidence_interval.low, res.confidence_interval.high)
    notes: tuple[str, ...] = ()
    if widened:
        notes = (NOTE_WIDENED.format(low=float(np.min(res.confidence_interval.low)),
                                     high=float(np.max(res.confidence_interval.high))),)
    return Interval(low, high, notes)


def wilson_interval(count: float, nobs: float) -> Interval:
    """Wilson score interval of ``count / nobs`` at 95% (seed 000 §3.4.1, Table 4).

    ``statsmodels.stats.proportion.proportion_confint(count, nobs, alpha=0.05, method="wilson")``;
    ``nan`` bounds when ``nobs`` is 0. The interval always contains ``count / nobs``; it is passed
    through :func:`contain` only to absorb floating-point noise at 0 and 1.
    """
    if nobs <= 0:
        return Interval(math.nan, math.nan)
    lo, hi = proportion_confint(count, nobs, alpha=1 - CONFIDENCE_LEVEL, method="wilson")
    low, high, _ = contain(count / nobs, lo, hi)
    return Interval(float(low), float(high))


def wilcoxon_p(x: np.ndarray, y: np.ndarray) -> tuple[float, tuple[str, ...]]:
    """Two-sided Wilcoxon signed-rank p-value of the paired samples (seed 000 §3.4.1, Table 4).

    ``scipy.stats.wilcoxon(x, y)`` with scipy's defaults. Returns ``(nan, note)`` when the test is
    undefined (every difference is zero, fewer than one non-zero pair, scipy raising or returning
    nan); scipy's warnings are not passed on.
    """
    d = np.asarray(x, dtype=float) - np.asarray(y, dtype=float)
    if d.size == 0 or not np.any(d != 0):
        return math.nan, (NOTE_TEST_UNDEFINED.format(test=TEST_WILCOXON, why=NOTE_ALL_ZERO),)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            p = float(sps.wilcoxon(x, y).pvalue)
        except ValueError as exc:
            return math.nan, (NOTE_TEST_UNDEFINED.format(test=TEST_WILCOXON, why=str(exc)),)
    if not math.isfinite(p):
        return math.nan, (NOTE_TEST_UNDEFINED.format(test=TEST_WILCOXON, why="scipy returned nan"),)
    return p, ()


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
