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
from scipy import optimize
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
#: The interval of each ratio in this methods version (issue 39 §2); ``None`` is the percentile interval.
#: Retention and the impact ratio read Wilson's score interval on their pooled slots at the candidate bootstrap's
#: design effect (``"wilson_deff"``, :func:`wilson_deff_interval`; Newcombe 1998, Korn & Graubard 1998). Measured
#: against the percentile interval and the logit / log intervals on the same resamples
#: (``bench/coverage_ratios_quick.py``; ``bench/results/coverage_ratios_quick*.json``): with 2 jobs (ties and none,
#: effects 0, 1 and 3 SE, 1,000 audits each) retention covered 93.3-96.5% (percentile 90.5-94.6%, logit
#: 91.6-97.0%) and the impact ratio 94.0-96.3% (percentile 90.8-94.7%, log 89.5-95.8%), missing above the truth in at
#: most 3.1% (percentile 7.6%, log 10.2%); with 5 jobs (400 audits) 93.0-95.8% (percentile 91.8-94.8%). The selection
#: ratio keeps the percentile interval (92.0-94.3% with 2 jobs): its score candidate (Tang's paired-ratio score
#: interval) covered 95.6-98.0%, its log interval 95.2-98.0%.
#: Methods 15: retention and the impact ratio read the Jeffreys interval at the design effect truncated at 1
#: (``"jeffreys_deff"``, :func:`jeffreys_deff_interval`): on the same 12 two-job settings x 1,000 audits
#: (``bench/ratio_interval_families.py``) Wilson's interval, pulled towards 1/2, missed below the truth in 3.4% and
#: above in 1.8% (pooled; up to 4.2% below in one setting); the Jeffreys interval with Korn & Graubard's truncation
#: missed 2.2% below and 2.7% above, covering 93.1-96.1%.
#: Methods 16: the selection ratio reads its percentile interval continuity-corrected by half a selected place
#: (``"percentile_cc"``, :data:`PERCENTILE_CC`, :func:`runtime.analysis.selection.continuity_corrected`); methods 18:
#: only under a threshold rule; under swap-in top-K its interval is normal with the SD of a smoothed, re-ranked
#: candidate bootstrap (``"smoothed_swap_in"``, :func:`runtime.analysis.selection.smoothed_swap_in_interval`).
RATIO_TRANSFORMS: dict[str, str | None] = {"retention_rate": "jeffreys_deff", "impact_ratio": "jeffreys_deff",
                                           "selection_ratio": "smoothed_swap_in"}
#: The percentile interval widened at each end by half the span of the statistic's lattice (the selection ratio:
#: ``1 / selected``), the continuity correction of a lattice statistic read against a continuous approximation
#: (Hall 1987, "On the bootstrap and continuity correction", JRSS B 49: 82-89). Handled by the metric, not by
#: :func:`_percentile_interval`, which sees the plain percentile interval.
PERCENTILE_CC = "percentile_cc"
#: The transforms ``bench/coverage_ratios_quick.py`` compares with the percentile interval (measured, not adopted).
CANDIDATE_RATIO_TRANSFORMS: dict[str, str] = {"retention_rate": "logit", "impact_ratio": "log",
                                              "selection_ratio": "log"}
#: Score intervals on pooled counts with the design effect of the candidate bootstrap (issue 39 §2), measured by
#: ``bench/coverage_ratios_quick.py`` against the percentile interval on the same resamples: Wilson's interval of
#: the retention at the effective number of slots (:func:`wilson_deff_interval`; adopted for retention and the
#: impact ratio, :data:`RATIO_TRANSFORMS`), Tang's score interval of a ratio of paired proportions at the
#: effective number of candidates (:func:`paired_ratio_score_interval`; measured, not adopted: it over-covered).
CANDIDATE_RATIO_SCORES: dict[str, str] = {"retention_rate": "wilson_deff", "impact_ratio": "wilson_deff",
                                          "selection_ratio": "paired_score_deff"}
#: The score intervals :func:`_percentile_interval` dispatches to (``transform`` names one; ``counts`` gives the
#: pooled counts: ``(slots,)`` for ``wilson_deff``, the paired table ``(n11, n12, n21, n22)`` for ``paired_score_deff``).
SCORE_INTERVALS = ("wilson_deff", "jeffreys_deff", "paired_score_deff")
#: Rows whose interval is a score interval with the bootstrap's design effect.
#: Note of a ratio row whose every bootstrap resample equals its estimate although the variant's scores differ
#: from the reference's (no slot changed hands, methods 14): the interval is Wilson's on the count seen 0 times.
NOTE_ZERO_CHURN = ("no {what} changed between the reference and the variant, and every bootstrap resample gives "
                   "{value:.4g}: Wilson's interval on 0 of {nobs:.4g} (not the point [{value:.4g}, {value:.4g}])")
NOTE_SCORE = ("{method} interval on pooled counts at the effective sample size {n_eff:.4g} "
              "(design effect {deff:.3g} of the candidate bootstrap)")
#: Added to :data:`NOTE_SCORE` where the design effect was under 1 and the interval used the pooled counts
#: (:func:`jeffreys_deff_interval`, Korn & Graubard 1998).
NOTE_TRUNCATED = ", truncated at 1: the effective sample size is the pooled count"
#: Note of a selection-ratio row whose percentile interval is continuity-corrected (methods 16, :data:`PERCENTILE_CC`).
NOTE_CONTINUITY = ("percentile interval widened by half a selected place at each end (±{half:.4g}: the ratio moves "
                   "in steps of 1/{selected:.4g}; continuity correction, Hall 1987)")
#: Note of a selection-ratio row (methods 18, :func:`runtime.analysis.selection.smoothed_swap_in_interval`) and of a
#: flip-rate row (methods 19, :func:`runtime.analysis.selection.smoothed_flip_interval`) under a swap-in top-K rule.
NOTE_SMOOTHED = ("normal interval, SD {sd:.4g} from {resamples} smoothed, re-ranked candidate resamples (the cutoff "
                 "moves with the candidates drawn)")
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
                         cap: float = math.inf, counts: Sequence[float] = (), exact: bool = False) -> Interval:
    """The 95% percentile interval of a bootstrap distribution ``dist`` (resamples on the last axis).

    Reports the distribution's SE to :data:`BOOTSTRAP_SE`; drops and counts resamples whose statistic is
    undefined (nan), never reading them as 0; uses ``ci`` (scipy's own percentiles) when every resample
    is defined; widens the interval to contain ``value``, with a note; gives each end its Monte Carlo
    SE (:func:`endpoint_mc_se`). With ``transform`` (a scalar statistic) the interval is
    :func:`transformed_interval` of the defined resamples instead, or with a score method of
    :data:`SCORE_INTERVALS` that score interval on ``counts`` at the resamples' design effect.
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
        if transform in SCORE_INTERVALS and np.ndim(value) == 0:
            if transform in ("wilson_deff", "jeffreys_deff"):
                interval = wilson_deff_interval if transform == "wilson_deff" else jeffreys_deff_interval
                out = interval(defined, float(value), nobs=float(counts[0]), cap=min(cap, 1.0), exact=exact)
            else:
                out = paired_score_deff_interval(defined, float(value), table=counts)
            return replace(out, notes=(*notes, *out.notes))
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
    inside the statistic's range and is asymmetric on the original scale. It **did not fix the misses** and is not
    adopted: ``bench/coverage_ratios_quick.py`` (2 jobs, ties and none, effects 0, 1, 3 SE, 1,000 audits each, the
    same resamples read every way) measured retention 91.6–97.0%, the impact ratio 89.5–95.8% with misses above
    up to 10.2% and below at most 0.5%, the selection ratio 95.2–98.0%. Retention and the impact ratio read
    :func:`wilson_deff_interval` instead (:data:`RATIO_TRANSFORMS`).

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


def design_effect(dist: np.ndarray, model_var: float) -> float:
    """Kish's design effect of a bootstrap: ``Var*(x*_b) / model_var`` (issue 39 §2).

    ``Var*`` is the variance of the defined resamples (ddof 1); ``model_var`` the variance of the estimate
    under the simple model its score interval assumes (binomial slots, a multinomial paired table). Returns
    nan when ``model_var`` is not positive or fewer than two resamples are given.
    """
    x = np.asarray(dist, dtype=float).reshape(-1)
    if x.size < 2 or not math.isfinite(model_var) or model_var <= 0:
        return math.nan
    return float(np.var(x, ddof=1)) / model_var


def _deff_mc_se(x: np.ndarray, deff: float) -> float:
    """Monte Carlo SE of a bootstrap's design effect ``deff = Var* / model_var``: ``Var*`` is a sample variance,
    whose Monte Carlo SE is ``sqrt((μ₄ − s⁴) / B)``; times ``deff / s²`` it is ``deff``'s. nan with fewer than two
    resamples or no spread."""
    s2 = float(np.var(x, ddof=1)) if x.size >= 2 else 0.0
    if s2 <= 0:
        return math.nan
    mu4 = float(np.mean((x - x.mean()) ** 4))
    return deff * math.sqrt(max(mu4 - s2 ** 2, 0.0) / x.size) / s2


def _deff_mc_ends(x: np.ndarray, deff: float, ends: Callable[[float], tuple[float, float]]) -> tuple[float, float]:
    """Monte Carlo SE of a score interval's ends through its design effect: the ends depend on the resamples only
    through ``Var*`` (:func:`_deff_mc_se`), and the slope of each end in ``deff`` (central difference) carries
    ``deff``'s Monte Carlo SE to the end."""
    se_deff = _deff_mc_se(x, deff)
    if math.isnan(se_deff):
        return math.nan, math.nan
    step = 1e-4 * deff
    (lo_a, hi_a), (lo_b, hi_b) = ends(deff - step), ends(deff + step)
    return float(abs(lo_b - lo_a) / (2 * step) * se_deff), float(abs(hi_b - hi_a) / (2 * step) * se_deff)


def _deff_mc_ends_truncated(x: np.ndarray, deff: float,
                            ends: Callable[[float], tuple[float, float]]) -> tuple[float, float]:
    """Monte Carlo SE of the ends of an interval read at ``max(deff, 1)`` (:func:`jeffreys_deff_interval`): the ends
    stop moving below 1, so the slope of :func:`_deff_mc_ends` is 0 or full on either side of the kink. Taking the
    estimated ``deff`` as normal with its Monte Carlo SE (as :func:`_deff_mc_ends`), the SD of each end over it by
    Gauss–Hermite quadrature (20 nodes), which is the delta method's away from 1 and smooth across it."""
    se_deff = _deff_mc_se(x, deff)
    if math.isnan(se_deff):
        return math.nan, math.nan
    if se_deff == 0:
        return 0.0, 0.0
    nodes, weights = np.polynomial.hermite.hermgauss(20)
    weights = weights / math.sqrt(math.pi)
    pts = np.array([ends(max(deff + math.sqrt(2.0) * se_deff * t, 1.0)) for t in nodes])
    mean = weights @ pts
    sd = np.sqrt(np.maximum(weights @ (pts - mean) ** 2, 0.0))
    return float(sd[0]), float(sd[1])


def wilson_deff_interval(dist: np.ndarray, value: float, *, nobs: float, cap: float = 1.0,
                         exact: bool = False) -> Interval:
    """Wilson score interval of a pooled proportion at the bootstrap's effective sample size (issue 39 §2).

    The macro retention ``p`` rests on ``nobs`` reference top-K slots (pooled over jobs). Its candidate bootstrap
    has variance ``v*``; a binomial proportion on ``nobs`` trials would have ``p(1 − p)/nobs``. The design effect
    ``deff = v* / (p(1 − p)/nobs)`` (:func:`design_effect`; Kish 1965) gives the effective number of slots
    ``n_eff = nobs / deff``, and the interval is Wilson's (Wilson 1927; Newcombe 1998, method 3) of
    ``p`` on ``n_eff`` trials: ``statsmodels.stats.proportion.proportion_confint(p·n_eff, n_eff,
    method="wilson")``, the effective-sample-size Wilson interval of complex surveys (Korn & Graubard 1998;
    Dean & Pagano 2015). Unlike the percentile interval, whose quantiles of a ratio of ~10 slots per job reproduce
    the Wald interval's shape (short when the estimate lies near 1 by chance, so it misses *above* the truth), it is
    pulled towards 1/2: longer below an estimate near 1. The candidate bootstrap's variance is about the binomial
    one (``deff`` ≈ 1 without ties: the ratio estimator's linearised variance is ``p(1 − p)/slots``), so the design
    effect mostly carries ties, unequal jobs and the macro mean. Measured (``bench/coverage_ratios_quick.py``,
    same resamples): 2 jobs, ties and none, effects 0, 1, 3 SE, 1,000 audits each: retention 93.3–96.5%, the
    impact ratio 94.0–96.3%, misses above 0.6–3.1% and below 2.5–4.2% (percentile 90.5–94.7%, above up to 7.6%);
    5 jobs (400 audits): 93.0–95.8% (percentile 91.8–94.8%); 20 jobs (200 audits): 91.0–97.0%, as the percentile
    interval (91.0–96.0%), the two nearly equal there.

    Parameters
    ----------
    dist : numpy.ndarray of shape (B,)
        Defined bootstrap resamples of the proportion.
    value : float
        The proportion on the original data, in [0, 1].
    nobs : float
        The pooled slots it rests on (> 0; fractional with ties at the cutoff).
    cap : float
        Upper end cut here (1: the proportion's maximum).
    exact : bool
        The variant is scored exactly as the reference (the reference row, or identical scores): the estimate has no
        sampling error.

    Returns
    -------
    Interval
        ``[value, value]`` when ``exact``, or when every resample equals a ``value`` inside (0, 1); when every
        resample equals ``value`` 0 or 1 otherwise (no slot changed hands:
        the retention is 1 in every resample although the scores differ, methods 14) or at ``value`` 0 or 1 (no
        spread to read a design effect from), the Wilson interval on ``nobs`` itself, with
        :data:`NOTE_ZERO_CHURN` in the first case (the point ``[1, 1]`` of methods 12-13 claimed a certainty that
        ``nobs`` slots cannot give); ``mc_low``/``mc_high`` (the ends are not quantiles of the
        resamples: their Monte Carlo error is that of ``deff``, carried to each end by its slope in ``deff``; 0 where
        ``deff`` is not read from the resamples).
    """
    return _deff_proportion_interval(dist, value, nobs=nobs, cap=cap, exact=exact, method="wilson", truncate=False)


def jeffreys_deff_interval(dist: np.ndarray, value: float, *, nobs: float, cap: float = 1.0,
                           exact: bool = False) -> Interval:
    """Jeffreys interval of a pooled proportion at the bootstrap's effective sample size, the design effect truncated
    at 1 (methods 15, issue 39 §2; adopted for retention and the impact ratio, :data:`RATIO_TRANSFORMS`).

    As :func:`wilson_deff_interval` (the same design effect from the candidate bootstrap, the same edge and
    zero-churn rules, which read Wilson's interval on ``nobs``), with two changes:

    - the interval is Jeffreys' equal-tailed Beta(x + ½, n − x + ½) quantiles at ``x = p · n_eff`` successes in
      ``n_eff`` trials (``statsmodels.stats.proportion.proportion_confint(..., method="jeffreys")``), whose two tails
      each miss close to 2.5% (Brown, Cai & DasGupta 2001; Cai 2005 on one-sided coverage), where Wilson's interval,
      pulled towards 1/2, missed below a retention near 0.8 about twice as often as above;
    - ``n_eff = nobs / max(deff, 1)``: never more trials than the pooled slots (Korn & Graubard 1998's truncation;
      Dean & Pagano 2015). A design effect under 1 comes from ties at the cutoff (fractional memberships) and from
      the resamples keeping each candidate's membership as computed on the full pool, so they miss the variance
      of the cutoff itself: measured widths were 4-13% short of 2·1.96·SD over audits.

    Measured (``bench/ratio_interval_families.py``, 2 jobs, ties and none, effects 0, 1 and 3 SE, 1,000 audits each,
    the same resamples for every candidate): retention 93.1-96.1% (Wilson 93.3-96.5%), missing above the truth in
    1.6-4.8% (pooled 2.7%) and below in 1.6-2.8% (pooled 2.2%); Wilson 0.6-3.1% (1.8%) above and 2.5-4.2% (3.4%)
    below. Parameters, returns: as :func:`wilson_deff_interval`; the note names the Jeffreys interval.
    """
    return _deff_proportion_interval(dist, value, nobs=nobs, cap=cap, exact=exact, method="jeffreys", truncate=True)


def _deff_proportion_interval(dist: np.ndarray, value: float, *, nobs: float, cap: float, exact: bool, method: str,
                              truncate: bool) -> Interval:
    """The interval of :func:`wilson_deff_interval` (``method="wilson"``) and :func:`jeffreys_deff_interval`
    (``"jeffreys"``, ``truncate``: the design effect at least 1)."""
    x = np.asarray(dist, dtype=float).reshape(-1)
    if not (math.isfinite(value) and nobs > 0):
        return Interval(math.nan, math.nan)
    if exact:
        return Interval(value, value, (), 0.0, 0.0)
    if x.size == 0 or np.all(x == value):
        if 0.0 < value < 1.0:  # a constant bootstrap inside (0, 1): slots changed hands, none could move
            return Interval(value, value, (), 0.0, 0.0)
        lo, hi = proportion_confint(value * nobs, nobs, alpha=1 - CONFIDENCE_LEVEL, method="wilson")
        low, high, _ = contain(value, float(lo), float(hi))
        note = NOTE_ZERO_CHURN.format(what="top-K slot", value=value, nobs=nobs)
        return Interval(max(float(low), 0.0), min(float(high), cap), (note,), 0.0, 0.0)
    deff = design_effect(x, value * (1.0 - value) / nobs)
    fitted = math.isfinite(deff) and deff > 0
    deff = deff if fitted else 1.0
    if value in (0.0, 1.0):  # no binomial variance to compare with: Wilson on the slots, as a constant bootstrap's
        method = "wilson"
    truncated = truncate and deff < 1.0
    used = 1.0 if truncated else deff
    n_eff = nobs / used

    def ends(d: float) -> tuple[float, float]:
        lo, hi = proportion_confint(value * nobs / d, nobs / d, alpha=1 - CONFIDENCE_LEVEL, method=method)
        low, high, _ = contain(value, float(lo), float(hi))
        return max(float(low), 0.0), min(float(high), cap)

    low, high = ends(used)
    if not fitted:
        mc_low, mc_high = 0.0, 0.0
    elif truncate:
        mc_low, mc_high = _deff_mc_ends_truncated(x, deff, ends)
    else:
        mc_low, mc_high = _deff_mc_ends(x, deff, ends)
    note = NOTE_SCORE.format(method={"wilson": "Wilson score", "jeffreys": "Jeffreys"}[method], n_eff=n_eff, deff=deff)
    if truncated:
        note += NOTE_TRUNCATED
    return Interval(low, high, (note,), mc_low, mc_high)


def _paired_restricted_mle(table: Sequence[float], theta: float) -> np.ndarray | None:
    """Cell probabilities of a paired 2x2 table maximising the multinomial likelihood under ``p2 = theta · p1``.

    ``table = (n11, n12, n21, n22)``: reference in and variant in, reference in only, variant in only, neither;
    ``p1 = p11 + p12`` (reference), ``p2 = p11 + p21`` (variant). The constraint is ``Σ g_ij p_ij = 0`` with
    ``g = (1 − θ, −θ, 1, 0)``. The Karush–Kuhn–Tucker conditions give ``p_ij = n_ij / (n + λ g_ij)`` for the
    cells with a count, λ the root of ``h(λ) = Σ g_ij n_ij / (n + λ g_ij)`` (decreasing in λ) subject to
    ``n + λ g_ij ≥ 0`` in every cell; where the root would break that bound for an empty cell, λ sits on the
    bound and that cell takes the mass the constraint needs (Nam & Blackwelder 2002 and Tang, Tang & Chan 2003
    solve the same problem in closed form). None when no probability vector meets the constraint with
    positive likelihood.
    """
    x = np.asarray(table, dtype=float)
    n = float(x.sum())
    g = np.array([1.0 - theta, -theta, 1.0, 0.0])
    live = x > 0
    pos, neg = g > 0, g < 0
    lo = max((-n / gi for gi in g[pos]), default=-math.inf)
    hi = min((-n / gi for gi in g[neg]), default=math.inf)
    lo_live = bool((live & pos).any()) and math.isclose(lo, max(-n / gi for gi in g[live & pos]))
    hi_live = bool((live & neg).any()) and math.isclose(hi, min(-n / gi for gi in g[live & neg]))

    def h(lam: float) -> float:
        return float(np.sum(g[live] * x[live] / (n + lam * g[live])))

    def cells(lam: float, empty: int | None) -> np.ndarray:
        with np.errstate(divide="ignore", invalid="ignore"):
            p = np.where(live, x / (n + lam * g), 0.0)
        if empty is not None:
            p[empty] = -float(np.sum(g * p)) / g[empty]
        return p

    if not lo_live and math.isfinite(lo) and h(lo) <= 0:   # an empty cell with g > 0 takes the slack
        return cells(lo, int(np.flatnonzero(pos & ~live & np.isclose(-n / np.where(pos, g, 1.0), lo))[0]))
    if not hi_live and math.isfinite(hi) and h(hi) >= 0:   # an empty cell with g < 0 takes it
        return cells(hi, int(np.flatnonzero(neg & ~live & np.isclose(-n / np.where(neg, g, -1.0), hi))[0]))
    if not (math.isfinite(lo) and math.isfinite(hi)):
        return None
    span = hi - lo
    a, b = lo + span * 1e-12 if lo_live else lo, hi - span * 1e-12 if hi_live else hi
    while h(a) < 0:  # only rounding can leave the bracket without a sign change
        a = lo + (a - lo) * 1e-3
        if a - lo <= 0:
            return None
    while h(b) > 0:
        b = hi - (hi - b) * 1e-3
        if hi - b <= 0:
            return None
    lam = optimize.brentq(h, a, b, xtol=1e-14 * max(1.0, abs(lo), abs(hi)), rtol=1e-15, maxiter=500)
    return cells(lam, None)


def paired_ratio_score(table: Sequence[float], theta: float) -> float:
    """Score statistic of ``H0: p2 / p1 = theta`` for a paired 2x2 table (Nam & Blackwelder 2002; Tang, Tang & Chan
    2003): ``Z(θ) = (n11 + n21 − θ (n11 + n12)) / sqrt(n · V(θ))``, ``V(θ) = (1 − θ)² p̃11 + p̃21 + θ² p̃12`` at the
    restricted maximum likelihood (:func:`_paired_restricted_mle`). ``±inf`` where ``V(θ) = 0`` with a non-zero
    numerator (θ impossible under the table), 0 where both are 0."""
    x = np.asarray(table, dtype=float)
    num = float(x[0] + x[2] - theta * (x[0] + x[1]))
    p = _paired_restricted_mle(x, theta)
    var = 0.0 if p is None else float((1.0 - theta) ** 2 * p[0] + p[2] + theta ** 2 * p[1])
    if var <= 0:
        return 0.0 if num == 0 else math.copysign(math.inf, num)
    return num / math.sqrt(float(x.sum()) * var)


def paired_ratio_score_interval(table: Sequence[float], *, deff: float = 1.0,
                                level: float = CONFIDENCE_LEVEL) -> tuple[float, float]:
    """Score interval of the ratio ``p2 / p1`` of two paired proportions, at an effective sample size (issue 39 §2).

    ``{θ : |Z(θ)| ≤ z · sqrt(deff)}`` for :func:`paired_ratio_score` (Nam & Blackwelder 2002; Tang, Tang & Chan
    2003): the score test inverted. With ``deff`` every count is divided by it, which divides ``Z`` by
    ``sqrt(deff)`` (Z is of degree 1/2 in the counts). ``Z`` decreases in θ; each end is found by ``brentq``
    between the estimate and a bracket grown until ``|Z|`` passes the critical value.

    Parameters
    ----------
    table : (n11, n12, n21, n22)
        Reference and variant in, reference in only, variant in only, neither (expected counts with ties).
    deff : float
        Design effect (1: the multinomial table of independent pairs).

    Returns
    -------
    (float, float)
        nan ends when the reference count ``n11 + n12`` is 0; the lower end 0 when ``n11 + n21`` is 0.
    """
    x = np.asarray(table, dtype=float)
    ref, var = float(x[0] + x[1]), float(x[0] + x[2])
    if ref <= 0:
        return math.nan, math.nan
    est = var / ref
    crit = float(sps.norm.ppf(0.5 + level / 2)) * math.sqrt(deff)

    def f(theta: float) -> float:
        return paired_ratio_score(x, theta)

    if var <= 0:
        low = 0.0
    else:
        low_b = est / 2
        while f(low_b) <= crit:
            low_b /= 2
            if low_b < est * 1e-12:
                break
        low = 0.0 if f(low_b) <= crit else optimize.brentq(lambda t: f(t) - crit, low_b, est, xtol=1e-12 * est)
    high_b = max(est, 1e-3) * 2
    while f(high_b) >= -crit:
        high_b *= 2
        if high_b > 1e12:
            return low, math.inf
    high = optimize.brentq(lambda t: f(t) + crit, est, high_b, xtol=1e-12 * high_b)
    return float(low), float(high)


def paired_score_deff_interval(dist: np.ndarray, value: float, *, table: Sequence[float]) -> Interval:
    """The selection ratio's score interval at the bootstrap's design effect (issue 39 §2).

    ``deff = Var*(θ*_b) / Var_δ(θ̂)`` (:func:`design_effect`), with ``Var_δ(θ̂) = ((1 − θ̂)² n11 + n21 + θ̂² n12) /
    (n11 + n12)²`` the delta-method variance of the ratio of paired proportions under the multinomial table;
    then :func:`paired_ratio_score_interval` at that ``deff``. ``[value, value]`` when every resample equals it;
    ``deff`` 1 where the delta variance is 0 and the resamples spread (not seen: both come from the
    discordant pairs). ``mc_low``/``mc_high``: as :func:`wilson_deff_interval`.
    """
    x = np.asarray(dist, dtype=float).reshape(-1)
    t = np.asarray(table, dtype=float)
    if not math.isfinite(value):
        return Interval(math.nan, math.nan)
    if x.size == 0 or np.all(x == value):
        return Interval(value, value, (), 0.0, 0.0)
    ref = float(t[0] + t[1])
    model = ((1.0 - value) ** 2 * t[0] + t[2] + value ** 2 * t[1]) / ref ** 2 if ref > 0 else math.nan
    deff = design_effect(x, model)
    fitted = math.isfinite(deff) and deff > 0
    deff = deff if fitted else 1.0

    def ends(d: float) -> tuple[float, float]:
        low, high, _ = contain(value, *paired_ratio_score_interval(t, deff=d))
        return float(low), float(high)

    low, high = ends(deff)
    mc_low, mc_high = _deff_mc_ends(x, deff, ends) if fitted else (0.0, 0.0)
    return Interval(low, high,
                    (NOTE_SCORE.format(method="Tang paired-ratio score", n_eff=float(t.sum()) / deff, deff=deff),),
                    mc_low, mc_high)


#: Resamples drawn at once by :func:`stratified_bootstrap`, and the most resampled values held at once
#: (block x n): bounds its memory for a large audit (100,000 candidates per job: 40 resamples a block).
_BLOCK = 256
_BLOCK_VALUES = 4_000_000


def stratified_bootstrap(data: Sequence[np.ndarray], statistic: Callable[..., np.ndarray], *,
                         strata: np.ndarray, value: np.ndarray | float, n_resamples: int,
                         rng: np.random.Generator, transform: str | None = None, floor: float = math.nan,
                         cap: float = math.inf, counts: Sequence[float] = (), exact: bool = False) -> Interval:
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
    transform : {"logit", "log", "wilson_deff", "paired_score_deff"}, optional
        Give the interval of :func:`transformed_interval` on that scale (a scalar ratio or retention)
        instead of the percentile interval; ``floor`` and ``cap`` as there. The score methods
        (:data:`SCORE_INTERVALS`) give :func:`wilson_deff_interval` or :func:`paired_score_deff_interval`.
    counts : sequence of float
        The pooled counts of a score method: ``(slots,)`` or the paired table ``(n11, n12, n21, n22)``.
    exact : bool
        For ``wilson_deff``: the variant is scored exactly as the reference (:func:`wilson_deff_interval`).

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
    return _percentile_interval(np.concatenate(parts, axis=-1), value, transform=transform, floor=floor, cap=cap,
                                counts=counts, exact=exact)


def u_statistic_variance(kernel: np.ndarray) -> tuple[float, float]:
    """A degree-2 U-statistic and the unbiased estimate of its variance (Hoeffding 1948).

    ``U = Σ_{a≠b} g_ab / (n (n − 1))`` over the ordered pairs of ``n`` iid units, ``g`` the symmetric kernel
    ``(n, n)`` (its diagonal ignored). ``Var U = E[U²] − θ²``, and ``θ²`` has the unbiased estimate
    ``Σ_{a,b,c,d distinct} g_ab g_cd / (n (n − 1)(n − 2)(n − 3)) = (S² − 4 Σ_a r_a² + 2 Σ_{a≠b} g_ab²) / (n)_4``
    (``S = Σ_{a≠b} g_ab``, ``r_a = Σ_{b≠a} g_ab``; inclusion–exclusion over the pairs of pairs that share a unit),
    so ``U² −`` that estimate is unbiased for ``Var U`` (Hoeffding 1948, §5; Lee 1990, *U-Statistics*, §1.4).

    Why not the bootstrap: a resample estimates the first-order term ``ζ₁ = Cov(g_ab, g_ac)`` from each unit's
    mean over only ``n − 1`` partners, ``E ζ̂₁ ≈ ζ₁ + ζ₂/n``, so its variance overstates ``Var U`` by about
    ``4ζ₂/n²``, which is not small when the kernel is a rare event (``ζ₂ = Var g``): MARC's percentile interval
    was 8–25% too wide and covered 96–99% (issue 39 §4, ``bench/results/coverage_counterfactual.json``).
    No maintained Python library computes this estimator; it is five array sums.

    Parameters
    ----------
    kernel : numpy.ndarray, shape (n, n)
        ``g_ab``; made symmetric as ``(g + gᵀ)/2`` (a kernel given for ordered pairs), its diagonal set to 0.

    Returns
    -------
    (float, float)
        ``U`` and its variance estimate (it can be ≤ 0 in a small or degenerate sample; nan when n < 4).
    """
    g = np.asarray(kernel, dtype=float)
    n = g.shape[0]
    if g.ndim != 2 or g.shape[1] != n:
        raise ValueError(f"kernel must be square, got shape {g.shape}")
    g = (g + g.T) / 2
    np.fill_diagonal(g, 0.0)
    rows = g.sum(axis=1)
    return u_statistic_from_sums(n, float(g.sum()), rows, float((g * g).sum()))


def u_statistic_from_sums(n: int, total: float, rows: np.ndarray, square_sum: float) -> tuple[float, float]:
    """:func:`u_statistic_variance` from the sums it reads, for a kernel too large to hold whole (a caller adds them
    up block by block, as :func:`runtime.analysis.counterfactual.marc_u_se` does).

    Parameters
    ----------
    n : int
        Units.
    total : float
        ``S = Σ_{a≠b} g_ab`` of the symmetric kernel (diagonal 0).
    rows : numpy.ndarray, shape (n,)
        ``r_a = Σ_{b≠a} g_ab``.
    square_sum : float
        ``Σ_{a≠b} g_ab²``.

    Returns
    -------
    (float, float)
        ``U`` and its unbiased variance estimate, as :func:`u_statistic_variance` (nan below 2 / 4 units).
    """
    if n < 2:
        return math.nan, math.nan
    u = total / (n * (n - 1))
    if n < 4:
        return u, math.nan
    r = np.asarray(rows, dtype=float)
    theta2 = (total ** 2 - 4 * float(r @ r) + 2 * square_sum) / (n * (n - 1) * (n - 2) * (n - 3))
    return u, u * u - theta2


def inverse_sqrt_wald_interval(value: float, se: float, *, df: float = math.inf,
                               upper_limit: float = math.inf) -> tuple[float, float]:
    """95% interval of a positive statistic with standard error ``se``, normal on the inverse-square-root scale
    (the delta method for ``θ^(−1/2)``, Box & Cox 1964's power −½; MARC under swap-in ranking, methods 20).

    ``θ^(−1/2)`` has SE ``(c / 2) · value^(−1/2)`` with ``c = se / value``, so
    ``√θ ∈ [√value / (1 + q c / 2), √value / (1 − q c / 2)]`` and the interval is the square of that,
    ``q`` the 97.5% quantile of Student's t on ``df`` degrees of freedom (the normal's at ``df = inf``). Why this
    power: MARC's U-statistic SE grows with MARC (over simulated audits, corr ≈ 0.75, elasticity 0.98-1.08). The log
    scale (power 0, ``value · exp(∓q c)``, methods 14-19) reads that SE at the estimate: the studentized error is then
    left-skewed (quantiles about −2.2 and +1.9 in 2-job audits) and the interval missed below more often than above
    (3.2% / 2.4% over ``bench/coverage_marc_u.py``'s 42 cells). Power −1, ``θ ∈ [value / (1 + q c), value / (1 − q c)]``,
    reads it at the hypothesised value, as a score interval does, and missed above instead (2.2% / 3.3%). Power −½ lies
    between (2.6% / 2.7%). The upper end is ``upper_limit`` where ``q c / 2 ≥ 1`` (the scale has no upper end there) or
    where the square exceeds it.

    Parameters
    ----------
    value : float
        The estimate, > 0.
    se : float
        Its standard error, ≥ 0 and finite.
    df : float, optional
        Degrees of freedom of ``q`` (> 0; default: the normal quantile).
    upper_limit : float, optional
        The largest value the statistic can take (≥ ``value``; default: none).

    Returns
    -------
    tuple of float
        ``(low, high)``, ``0 < low ≤ value ≤ high ≤ upper_limit``: ``(0.3393, 0.4786)`` for ``value`` 0.4, ``se``
        0.035 and the normal quantile.

    Raises
    ------
    ValueError
        If ``value`` is not positive and finite, ``se`` is negative or not finite, ``df`` is not positive or
        ``upper_limit`` is below ``value``.
    """
    if not (value > 0 and math.isfinite(value)) or not (se >= 0 and math.isfinite(se)):
        raise ValueError(f"inverse_sqrt_wald_interval needs value > 0 and a finite se >= 0, got {value!r}, {se!r}")
    if not df > 0 or not upper_limit >= value:
        raise ValueError(f"inverse_sqrt_wald_interval needs df > 0 and upper_limit >= value, got {df!r}, "
                         f"{upper_limit!r} for value {value!r}")
    q = Z_975 if math.isinf(df) else float(sps.t.ppf(0.5 + CONFIDENCE_LEVEL / 2, df))
    half = q * (se / value) / 2
    low = value / (1 + half) ** 2
    high = value / (1 - half) ** 2 if half < 1 else math.inf
    return low, min(high, upper_limit)


def zero_event_bound(nobs: float) -> float:
    """Wilson's 95% upper bound on a proportion seen 0 times in ``nobs`` trials, ``z²/(nobs + z²)``
    (:func:`wilson_interval`; the rule of three's regime, Hanley & Lippman-Hand 1983, with Wilson's interval as for
    every other count of the suite): 0.0370 for 100 trials. Read by every interval of a count that no resample moves:
    Recall@K, nDCG@K and the TPR/FPR gaps (methods 13), the selection statistics (methods 14), MARC (methods 17)."""
    return float(wilson_interval(0.0, nobs).high)


#: Note of a flip-rate row whose candidates' flipped shares are tie-averaged (:func:`tie_averaged_interval`).
NOTE_TIE_DEFF = ("Wilson score interval at the effective sample size {n_eff:.4g} of {n:d} candidates (design effect "
                 "{deff:.3g}: tie-averaged flips vary less than whole ones)")


def tie_averaged_interval(shares: np.ndarray) -> Interval:
    """95% interval of the mean of per-candidate shares in [0, 1] that are 0/1 outcomes averaged over tie orders
    (the flip rate, seed 000 §3.4.1; methods 17, issue 39 §4).

    A candidate tied at the cutoff flips with probability ``f_i`` over the orders of its tie group and counts
    ``f_i``, not a Bernoulli draw of it: its variance is ``E[f²] − p²``, less than the binomial ``p(1 − p)`` by
    ``mean f(1 − f)``. Kish's design effect ``deff = (mean(f²) − p²) / (p(1 − p)) = 1 − mean(f(1 − f)) / (p(1 −
    p))`` (1 when every share is 0 or 1) gives the effective number of candidates ``n_eff = n / deff``, and the
    interval is Wilson's on ``p · n_eff`` of ``n_eff`` (``statsmodels.stats.proportion.proportion_confint``; Korn &
    Graubard 1998's effective-sample-size interval). Only ties move it: the dependence of the candidates through the
    cutoff (each job's reference top-K holds K, and the competitors set the cut) is left to the binomial model, whose
    coverage without ties was measured 93.3-95.5% (``bench/coverage_shortlist.py``).

    Measured on the 42 cells of ``bench/coverage_shortlist.py`` (1,000 audits each, the bench's own audits):
    92.9-97.2% (Wilson on the candidates: 93.3-97.9%), misses pooled 2.41% below and 2.90% above (1.96% / 2.60%), every setting's
    misses per side in 1-4% (jobs02-ties-effect0 missed below in 0.7%). Jeffreys' interval at ``n_eff`` (92.2-97.2%)
    and a design effect that also stratifies each job by reference top-K membership (91.7-96.1%: it drops the
    variance of the cutoff, which the binomial model's excess carries) were measured worse.

    Parameters
    ----------
    shares : numpy.ndarray of shape (n,)
        Each candidate's share in [0, 1] (fractional where a tie straddles the cutoff).

    Returns
    -------
    Interval
        nan bounds for no candidate; Wilson's interval on the ``n`` candidates (no note) when every share is 0 or 1,
        the mean is 0 or 1, or the shares do not vary (no spread to read a design effect from); else the interval at
        ``n_eff`` with :data:`NOTE_TIE_DEFF`. No Monte Carlo error: nothing is drawn.
    """
    x = np.asarray(shares, dtype=float).reshape(-1)
    n = x.size
    if n == 0:
        return Interval(math.nan, math.nan)
    total = float(np.sum(x))
    value = total / n
    tied = float(np.sum(x * (1.0 - x)))
    binomial = value * (1.0 - value)
    deff = 1.0 - tied / (n * binomial) if binomial > 0 else math.nan
    if not (tied > 0 and math.isfinite(deff) and deff > 1e-12):
        return wilson_interval(total, n)
    n_eff = n / deff
    return replace(wilson_interval(value * n_eff, n_eff), notes=(NOTE_TIE_DEFF.format(n_eff=n_eff, n=n, deff=deff),))


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
