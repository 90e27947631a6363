"""The selection ratio at a decision rule, the statistic the selection metrics decide on (issues 29 §2, 30 §2).

``selection ratio = Σ P(variant resume selected) / Σ P(reference resume selected)``, pooled over jobs,
at the decision rule in force: the top-K of each job (swap-in: each variant resume against the other
candidates' reference resumes; ties at the cutoff tie-averaged, :meth:`Pairing.in_top`) or
``score >= t``. Its null expectation is 1 whatever the churn: a system that moves as many candidates
out of the shortlist as into it has ratio 1, however many it moves. That is why the flip rate (churn,
0.11 under a planted null in ``bench/results/coverage_counterfactual.json``), retention (falls under
symmetric churn) and the impact ratio decide on it: the net share of the reference's selected places
lost, ``(n_out − n_in) / selected``, is ``1 − selection ratio``, and retention divided by the reverse
retention is the selection ratio. Thresholds scaled by K/n were not used: churn is flat in a uniform
shift (``bench/results/power_swap_in.md``: 21.5 flips of 200 under the null and at a 3-SE demotion),
so no bound on it separates a fair system from an unfair one.

Interval: candidate bootstrap within jobs of the two membership arrays (as retention;
:func:`runtime.analysis.stats.stratified_bootstrap`), drawn from the ``selection_ratio`` stream of the
cell, so every row that decides on the ratio at one cutoff reads the same interval. The resamples keep
each candidate's memberships as computed on the full pool (not re-ranked). The percentile interval, widened by half
a selected place at each end (methods 16, :func:`continuity_corrected`: the ratio moves in steps of ``1/selected``;
the plain percentile interval covered 92.0-94.3% of simulated 2-job audits, the corrected one 94.7-97.2%): a
log-scale interval and Tang's score interval for a ratio of paired proportions at the
bootstrap's design effect were measured on the same resamples (issue 39 §2) and not adopted, as they over-covered
(95.2-98.0% and 95.6-98.0%, the score interval 14-18% wider; :data:`runtime.analysis.stats.RATIO_TRANSFORMS`). Approximate where
its coverage was measured outside 93-97% (:mod:`runtime.analysis.coverage`). ``mc_se``: the Monte Carlo SE of its ends, which
decides whether a row reading it is redrawn (:func:`runtime.analysis.analyse`). Test: McNemar on the paired in/out table (exact
below 25 discordant pairs), the flip rate's table when both read one cutoff. Under per-variant top-K
ranking each variant's own top-K has K resumes per job, so the ratio is 1 by construction: undefined.
"""

from __future__ import annotations

import math
import weakref
from dataclasses import dataclass, field

import numpy as np

from runtime.analysis import stats
from runtime.analysis.cell import Pairing, exact_sum

#: ``decision_on`` of the rows that decide on the selection ratio.
DECISION = "selection_ratio"
#: Why the selection ratio is undefined under per-variant top-K ranking.
NOTE_PER_VARIANT = ("per-variant ranking with a top-K rule: every variant's own top-K holds K resumes per job, "
                    "so the selection ratio is 1 by construction (N/A); the rows decide on their own values")
#: The rule selects no reference resume.
NOTE_NONE = "the rule selects no reference resume: the selection ratio is undefined"


@dataclass(frozen=True)
class Selection:
    """The selection ratio of one cell at one cutoff.

    Attributes
    ----------
    value, low, high : float
        The ratio (≥ 0; 1 = selected as often as the reference; below 1 the variant loses) and its 95%
        interval; nan when undefined.
    p_value : float
        McNemar on the paired in/out table (nan for the reference row).
    test : str
        The test's name.
    lean : float
        +1 when the variant resumes are selected less often than the reference's, -1 more, 0 as often.
    lost, gained, selected : float
        Expected ``n_in,out`` (reference in, variant out), ``n_out,in`` and reference resumes selected.
    mc_se : float
        Monte Carlo SE of the interval's ends, the larger of the two (:attr:`runtime.analysis.stats.Interval.mc_se`;
        0 for the reference's point interval, nan when undefined).
    notes : list of str
    """

    value: float
    low: float = math.nan
    high: float = math.nan
    p_value: float = math.nan
    test: str = ""
    lean: float = math.nan
    lost: float = math.nan
    gained: float = math.nan
    selected: float = math.nan
    mc_se: float = math.nan
    notes: list[str] = field(default_factory=list)

    @property
    def defined(self) -> bool:
        return math.isfinite(self.value)


def _ratio(in_ref: np.ndarray, in_var: np.ndarray) -> np.ndarray:
    den = in_ref.sum(axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, in_var.sum(axis=-1) / np.where(den > 0, den, 1.0), np.nan)


#: Pairing -> {cutoff: Selection}: up to four rows of a cell (the flip rate, retention, the impact ratio and the
#: selection ratio) decide on one selection ratio; its bootstrap runs once per cell and cutoff. Keyed on the
#: Pairing object (identity), released with it.
_MEMO: weakref.WeakKeyDictionary[Pairing, dict[int, Selection]] = weakref.WeakKeyDictionary()


def selection(p: Pairing, k: int) -> Selection:
    """The selection ratio of ``p`` at cutoff ``k`` (or at the decision threshold), with its interval,
    McNemar test and direction (module docstring).

    Parameters
    ----------
    p : Pairing
        One system x condition x variant.
    k : int
        The top-K of the row deciding on it (ignored under a threshold rule).

    Returns
    -------
    Selection
        Undefined (nan, with a note) under per-variant top-K ranking or when no reference resume is
        selected. Computed once per pairing and cutoff (the same stream would draw the same interval).
    """
    memo = _MEMO.setdefault(p, {})
    if k not in memo:
        memo[k] = _selection(p, k)
    return memo[k]


def _selection(p: Pairing, k: int) -> Selection:
    if p.fixed_shortlist:
        return Selection(value=math.nan, notes=[NOTE_PER_VARIANT])
    in_ref, in_var = p.in_top(k)
    selected = exact_sum(in_ref)
    if selected <= 0:
        return Selection(value=math.nan, notes=[NOTE_NONE])
    both = p.joint_in(k)
    lost, gained = exact_sum(in_ref - both), exact_sum(in_var - both)
    value = exact_sum(in_var) / selected
    lean = float(np.sign(round(selected - exact_sum(in_var), 9)))
    if p.is_reference:
        return Selection(value=value, low=value, high=value, lean=0.0, lost=lost, gained=gained, selected=selected,
                         mc_se=0.0)
    cells = [[exact_sum(both), lost], [gained, exact_sum(1 - in_ref - in_var + both)]]
    method = stats.RATIO_TRANSFORMS["selection_ratio"]
    ci = stats.stratified_bootstrap((in_ref, in_var), _ratio, strata=p.job, value=value,
                                    n_resamples=p.n_bootstrap, rng=p.rng(DECISION),
                                    transform=None if method == stats.PERCENTILE_CC else method,
                                    floor=0.5 / selected, counts=(cells[0][0], cells[0][1], cells[1][0], cells[1][1]))
    pv, test = stats.mcnemar_p(np.rint(np.array(cells)).astype(np.int64))
    low, high, mc_se, notes = float(ci.low), float(ci.high), ci.mc_se, list(ci.notes)
    if low == high == value and lost == gained == 0 and not p.scored_as_reference:
        low, high, mc_se, notes = _zero_churn(value, selected, notes)
    elif method == stats.PERCENTILE_CC and low < high:
        low, high, notes = continuity_corrected(low, high, selected, notes)
    return Selection(value=value, low=low, high=high, p_value=pv, test=test, lean=lean,
                     lost=lost, gained=gained, selected=selected, mc_se=mc_se, notes=notes)


def continuity_corrected(low: float, high: float, selected: float,
                         notes: list[str]) -> tuple[float, float, list[str]]:
    """The percentile interval ``[low, high]`` widened by half a selected place at each end (methods 16, issue 39 §2).

    Given the reference's ``selected`` places (K per job under swap-in top-K), the selection ratio moves in steps of
    ``1 / selected`` (the variant's count is an integer; tie-averaged counts move in finer steps, where the
    correction is conservative), while its bootstrap resamples, a ratio of two resampled counts,
    are spread almost continuously: read against a continuous approximation a lattice statistic needs half its span
    at each end (Hall 1987, "On the bootstrap and continuity correction", JRSS B 49: 82-89). Measured on the same
    resamples (``bench/ratio_interval_families.py``, candidate ``percentile_cc``): 2 jobs (20 places) 94.7-97.2%
    where the plain percentile interval covered 92.0-94.3%; 5 jobs (50 places) 95.0-96.7% (93.8-96.3%). As shipped,
    on every setting of the coverage bench (``bench/coverage_shortlist.py``, 1,000 audits each): 2 jobs 95.1-96.8%,
    5 jobs 94.8-96.8%, 20 jobs 93.2-96.6%, 50 jobs 95.2-96.1%, and 97.0-98.2% on the example's resampled candidates,
    where the bootstrap is already wider than the estimate's spread (conservative, and so called approximate).

    Returns
    -------
    tuple
        ``(low, high, notes)``: ``low`` not below 0 (a ratio of counts), ``notes`` with
        :data:`runtime.analysis.stats.NOTE_CONTINUITY` added.
    """
    half = 0.5 / selected
    return (max(low - half, 0.0), high + half,
            [*notes, stats.NOTE_CONTINUITY.format(half=half, selected=selected)])


def _zero_churn(value: float, selected: float, notes: list[str]) -> tuple[float, float, float, list[str]]:
    """The selection ratio's interval when no selected place changed hands and so no resample moves it from 1
    although the variant's scores differ (methods 14): ``[1 − u, 1 + u]``, ``u`` Wilson's 95% upper bound on 0
    places lost (or gained) of the ``selected`` reference places (:func:`runtime.analysis.stats.wilson_interval`),
    the rule methods 13 gave Recall@K (:func:`runtime.analysis.stats.zero_event_bound`). The percentile point
    ``[1, 1]`` claimed that ``selected`` places certify the ratio exactly; 20 places give ``[0.839, 1.161]``."""
    u = stats.zero_event_bound(selected)
    note = stats.NOTE_ZERO_CHURN.format(what="selected place", value=value, nobs=selected)
    return value * (1.0 - u), value * (1.0 + u), 0.0, [*notes, note]


def same_cut(p: Pairing, k: int) -> bool:
    """Whether a selection table at cutoff ``k`` is the flip rate's (one threshold, or ``k`` equal to
    ``k.counterfactual``): then its McNemar test is counted once, on the ``flip_rate`` row."""
    return p.thresholded or k == p.k_of("flip_rate")
