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

Interval, drawn from the ``selection_ratio`` stream of the cell, so every row that decides on the ratio at one
cutoff reads the same interval. Under swap-in top-K (methods 18, :func:`smoothed_swap_in_interval`): normal, with the
SD of a smoothed, re-ranked candidate bootstrap within jobs (and ``is_true_match`` where labelled), so that the
cutoff moves with the candidates drawn while each job's reference keeps its K places, as in the design. Methods
8-17 resampled the memberships computed on the full pool, whose percentile interval (continuity-corrected in
methods 16) covered 93.2-98.2% on the coverage bench, 97.0-98.2% on the example's resampled candidates: it kept the
cutoff fixed and let the reference's own count vary. Under a threshold rule (no cutoff to move) the candidate
bootstrap of the memberships stays, its percentile interval widened by half a selected place at each end (methods
16, :func:`continuity_corrected`: the ratio moves in steps of ``1/selected``; the plain percentile interval covered
92.0-94.3% of simulated 2-job audits, the corrected one 94.7-97.2%). A log-scale interval and Tang's score interval
for a ratio of paired proportions at the bootstrap's design effect were measured (issue 39 §2) and not adopted, as
they over-covered (95.2-98.0% and 95.6-98.0%; :data:`runtime.analysis.stats.RATIO_TRANSFORMS`). Approximate where
its coverage was measured outside 93-97% (:mod:`runtime.analysis.coverage`). ``mc_se``: the Monte Carlo SE of its
ends, which decides whether a row reading it is redrawn (:func:`runtime.analysis.analyse`). Test: McNemar on the
paired in/out table (exact below 25 discordant pairs), the flip rate's table when both read one cutoff. Under
per-variant top-K ranking each variant's own top-K has K resumes per job, so the ratio is 1 by construction: undefined.
"""

from __future__ import annotations

import math
import weakref
from collections.abc import Iterator
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
    pv, test = stats.mcnemar_p(np.rint(np.array(cells)).astype(np.int64))
    if p.thresholded:
        ci = stats.stratified_bootstrap((in_ref, in_var), _ratio, strata=p.job, value=value,
                                        n_resamples=p.n_bootstrap, rng=p.rng(DECISION), floor=0.5 / selected)
        low, high, mc_se, notes = float(ci.low), float(ci.high), ci.mc_se, list(ci.notes)
    else:
        low, high, mc_se, notes = smoothed_swap_in_interval(p, k, value, selected)
    if low == high == value and lost == gained == 0 and not p.scored_as_reference:
        low, high, mc_se, notes = _zero_churn(value, selected, notes)
    elif p.thresholded and low < high:
        low, high, notes = continuity_corrected(low, high, selected, notes)
    return Selection(value=value, low=low, high=high, p_value=pv, test=test, lean=lean,
                     lost=lost, gained=gained, selected=selected, mc_se=mc_se, notes=notes)


def smoothed_swap_in_interval(p: Pairing, k: int, value: float,
                               selected: float) -> tuple[float, float, float, list[str]]:
    """The selection ratio's 95% interval under a swap-in top-K rule (methods 18, issue 39 §2): normal, from the
    SD of a smoothed, re-ranked candidate bootstrap of the variant's selected count.

    Under swap-in top-K the reference keeps exactly ``min(K, n_j)`` places in job ``j`` and the ratio is
    ``1 + S / selected`` with ``S = Σ_j (Σ_i P(variant i in the top K against the other candidates' reference
    resumes) − min(K, n_j))``. Its spread over audits comes from the candidates drawn *and* from the cutoff they
    set, which moves with them. Each resample therefore

    1. draws, in every stratum (a job, or a job × ``is_true_match`` where the labels are known: the design fixes
       how many of each a job has), as many candidates as it has, with replacement;
    2. moves each drawn reference score by a Gaussian kernel (Silverman's bandwidth of the stratum's reference
       scores), shrunk towards the stratum's mean so that its variance is kept (the smoothed bootstrap, Silverman
       & Young 1987, "The bootstrap: to smooth or not to smooth?", Biometrika 74: 469-479; Efron & Tibshirani 1993
       §16.5), and gives the variant the drawn candidate's own paired difference; scores on a grid (the system's
       ``score_resolution``, declared or inferred: :attr:`runtime.analysis.frame.Cohort.step`) are put back on it,
       so ties at the cutoff occur as often as in the data;
    3. ranks again: each variant against the other drawn candidates' reference resumes, ties tie-averaged as
       :meth:`runtime.analysis.cell.Pairing.in_top` does.

    The interval is ``value ± z · SD(S*) / selected`` (``z`` = :data:`runtime.analysis.stats.Z_975`; the lower end
    not below 0). Why not the candidate bootstrap of the memberships computed on the full pool (methods 8-17): it
    keeps each candidate's membership while resampling, so it drops the cutoff's variance and adds the spread of the
    reference's own count, which the design fixes; ``bench/selection_variance.py`` measured its variance 0.97-1.23x
    the truth, and its continuity-corrected percentile interval covered 93.2-98.2%. A plain re-ranked bootstrap puts
    copies of one candidate against each other (exact ties, a variant against its own reference) and read 1.3-1.6x;
    a Hajek projection of the count (binomial cutoff probabilities on the empirical distribution) 0.71-1.02x. As
    shipped, on the 42 cells of ``bench/coverage_shortlist.py`` (1,000 audits each): 93.3-96.9%, 39 of 42 cells in
    93.5-96.5%, misses 2.45% below and 2.20% above pooled, width 0.96-1.07x the estimate's spread. A normal
    interval, not percentiles: the smoothed resamples' mean sits slightly off ``S`` (kernel and grid), which a
    symmetric interval around the estimate does not inherit.

    Returns
    -------
    tuple
        ``(low, high, mc_se, notes)``: ``mc_se`` the Monte Carlo SE of either end, ``1.96 · SD / selected /
        sqrt(2 (B − 1))`` (the SE of a normal SD from B resamples); ``(value, value, 0, [])`` when no resample
        moves ``S`` (the caller's zero-churn rule then applies).
    """
    n_res = int(p.n_bootstrap)
    total = np.zeros(n_res)
    for n_job, ref, var in smoothed_resamples(p, DECISION):
        total += swap_in_count(ref, var, k) - min(k, n_job)
    sd = float(np.std(total, ddof=1)) if n_res > 1 else 0.0
    if not sd > 0:
        return value, value, 0.0, []
    half = stats.Z_975 * sd / selected
    return (max(value - half, 0.0), value + half, half / math.sqrt(2.0 * (n_res - 1)),
            [stats.NOTE_SMOOTHED.format(sd=sd / selected, resamples=n_res)])


def smoothed_resamples(p: Pairing, stream: str) -> Iterator[tuple[int, np.ndarray, np.ndarray]]:
    """``(n_job, ref, var)`` for each job of ``p``: its smoothed resamples, each ``(p.n_bootstrap, n_job)``
    (:func:`smoothed_swap_in_interval`, steps 1-2), drawn from ``p.rng(stream)``; on a score grid the scores are
    whole grid steps from the lowest reference score, so ties stay exact through the draws."""
    rng = p.rng(stream)
    n_res = int(p.n_bootstrap)
    labels = np.where(np.isnan(p.match), -1.0, p.match)
    step = float(p.step or 0.0)
    origin = float(np.min(p.score_ref)) if step > 0 else 0.0
    score_ref, score_var = stats.on_grid(p.score_ref - origin, step), stats.on_grid(p.score_var - origin, step)
    for job in np.unique(p.job):
        idx = np.flatnonzero(p.job == job)
        # within a stratum, positions in the order of their data, not of their labels: relabelling the candidates
        # draws the same resamples (as runtime.analysis.stats.stratified_bootstrap)
        strata = [g[np.lexsort((score_var[g], score_ref[g]))]
                  for g in (idx[labels[idx] == lab] for lab in np.unique(labels[idx]))]
        ref, var = _smoothed_draw(rng, score_ref, score_var, strata, n_res, step > 0)
        yield idx.size, ref, var


def _smoothed_draw(rng: np.random.Generator, score_ref: np.ndarray, score_var: np.ndarray,
                   strata: list[np.ndarray], n_res: int, on_grid: bool) -> tuple[np.ndarray, np.ndarray]:
    """``(ref, var)``, each ``(n_res, n_job)``: one job's smoothed resamples (:func:`smoothed_swap_in_interval`);
    ``on_grid``: the scores are whole grid steps (:func:`runtime.analysis.stats.on_grid`), and so are the draws."""
    refs, variants = [], []
    for g in strata:
        x, d = score_ref[g], score_var[g] - score_ref[g]
        draw = rng.integers(0, g.size, size=(n_res, g.size))
        noise = rng.standard_normal(size=(n_res, g.size))
        sd = float(np.std(x, ddof=1)) if g.size > 1 else 0.0
        ref = x[draw]
        if sd > 0:
            iqr = float(np.subtract(*np.percentile(x, [75, 25])))
            h = 0.9 * min(sd, iqr / 1.34 if iqr > 0 else sd) * g.size ** -0.2  # Silverman's rule
            mean = float(x.mean())
            ref = mean + (ref - mean + h * noise) / math.sqrt(1.0 + (h / sd) ** 2)
            if on_grid:
                ref = np.round(ref)
        refs.append(ref)
        variants.append(ref + d[draw])
    return np.concatenate(refs, axis=1), np.concatenate(variants, axis=1)


def smoothed_flip_interval(p: Pairing, k: int, flips: float) -> stats.Interval | None:
    """The flip rate's 95% interval under swap-in top-K (methods 19, issue 39 §4): normal, from the SD of the flip
    count over the smoothed, re-ranked candidate resamples of :func:`smoothed_resamples` (stream ``flip_rate``).

    Wilson's interval on the ``n`` candidates (methods 1-16; at the tie-averaged effective number since methods 17)
    treats their flips as independent; they are not: each job's reference top-K holds K places and the competitors
    set the cutoff, so a candidate that flips in moves the cut for the others. The resamples carry that dependence
    (the cutoff moves with the candidates drawn, as for the selection ratio, :func:`smoothed_swap_in_interval`), and
    ties: a resampled candidate's flip is ``r + q − 2 j`` from its tie-averaged reference and variant shares ``r``,
    ``q`` (:func:`swap_in_shares`), ``j`` their joint share, ``min(r, q)`` where both are split by ties (one tie order
    per candidate, comonotone, :meth:`runtime.analysis.cell.Pairing.joint_in`) and ``r · q`` otherwise.

    The interval is ``value ± z · SD(F*) / n`` (``z`` = :data:`runtime.analysis.stats.Z_975`, clipped to [0, 1]).
    Measured before adopting (experiment, 1,000 audits x 42 cells of ``bench/coverage_shortlist.py``'s settings,
    B = 199): the resamples' variance of the flip count was 0.95-1.03x its spread over audits; Wilson's interval at
    the resamples' design effect (``n / deff``, ``deff`` = that variance over the binomial's, at the estimate or at
    the resamples' mean) missed above the truth in 3.2-4.2% of audits against 0.5-1.7% below (the flip count's
    variance grows with it less than a binomial's), the logit and square-root scales likewise, while the normal
    interval missed 2.6% below and 2.3% above. As shipped: ``bench/results/coverage_shortlist.md``.

    Parameters
    ----------
    p : Pairing
        A variant not scored as the reference, under swap-in top-K.
    k : int
        The flip rate's cutoff.
    flips : float
        The expected flip count on the data (``n_in,out + n_out,in``).

    Returns
    -------
    Interval or None
        The normal interval with :data:`runtime.analysis.stats.NOTE_SMOOTHED` and Monte Carlo SEs ``z · SD / n /
        sqrt(2 (B − 1))`` (the SE of a normal SD from B resamples); ``None`` when no candidate flips, every one does,
        or no resample moves the count (the caller keeps :func:`runtime.analysis.stats.tie_averaged_interval`:
        Wilson's bound on 0 flips is no resample's).
    """
    n = p.n
    value = flips / n
    n_res = int(p.n_bootstrap)
    if not 0.0 < value < 1.0 or n_res < 2:
        return None
    total = np.zeros(n_res)
    for _, ref, var in smoothed_resamples(p, "flip_rate"):
        r, q = swap_in_shares(ref, var, k)
        split = (r > 0) & (r < 1) & (q > 0) & (q < 1)
        total += (r + q - 2.0 * np.where(split, np.minimum(r, q), r * q)).sum(axis=1)
    sd = float(np.std(total, ddof=1))
    if not sd > 0:
        return None
    half = stats.Z_975 * sd / n
    mc = half / math.sqrt(2.0 * (n_res - 1))
    return stats.Interval(max(value - half, 0.0), min(value + half, 1.0),
                          (stats.NOTE_SMOOTHED.format(sd=sd / n, resamples=n_res),), mc, mc)


def swap_in_shares(ref: np.ndarray, var: np.ndarray, k: int, *,
                   reference: bool = True) -> tuple[np.ndarray | None, np.ndarray]:
    """Tie-averaged top-``k`` shares of each reference resume (in the pool of reference resumes) and of each
    variant resume (against the other candidates' reference resumes: swap-in), per row.

    Parameters
    ----------
    ref, var : numpy.ndarray, shape (B, n)
        Reference and variant scores of one job's ``n`` candidates, in ``B`` rows (resamples); higher is better.
    k : int
        Shortlist size.
    reference : bool
        Compute the reference shares (False: ``None`` in their place, for :func:`swap_in_count`).

    Returns
    -------
    (numpy.ndarray, numpy.ndarray), each (B, n)
        ``clip((k − g) / e, 0, 1)`` for a reference resume (``g`` reference scores above it, ``e`` equal to it, itself
        included) and ``clip((k − g_i) / (e_i + 1), 0, 1)`` for variant ``i`` (``g_i`` / ``e_i`` the other candidates'
        reference scores above / equal to it), as :meth:`runtime.analysis.cell.Pairing.in_top`. Scores are compared
        by their order codes (``numpy.unique``), so no offset arithmetic can merge two close floats.
    """
    rows, n = ref.shape
    codes = np.unique(np.concatenate([ref.ravel(), var.ravel()]), return_inverse=True)[1].reshape(2, rows, n)
    width = int(codes.max()) + 1
    shift = (np.arange(rows, dtype=np.int64) * width)[:, None]
    flat_ref = np.sort((codes[0] + shift).ravel())
    ends = np.arange(1, rows + 1, dtype=np.int64)[:, None] * n

    def above_equal(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        x = (x + shift).ravel()
        hi, lo = np.searchsorted(flat_ref, x, "right"), np.searchsorted(flat_ref, x, "left")
        return ends - hi.reshape(rows, n), (hi - lo).reshape(rows, n)

    gv, ev = above_equal(codes[1])
    own, tie_own = codes[0] > codes[1], codes[0] == codes[1]
    shares_var = np.clip((k - (gv - own)) / (ev - tie_own + 1.0), 0.0, 1.0)
    if not reference:
        return None, shares_var
    g, e = above_equal(codes[0])
    return np.clip((k - g) / e, 0.0, 1.0), shares_var


def swap_in_count(ref: np.ndarray, var: np.ndarray, k: int) -> np.ndarray:
    """Tie-averaged number of variant resumes in the top ``k`` under swap-in ranking, per row.

    Parameters
    ----------
    ref, var : numpy.ndarray, shape (B, n)
        Reference and variant scores of one job's ``n`` candidates, in ``B`` rows (resamples); higher is better.
    k : int
        Shortlist size.

    Returns
    -------
    numpy.ndarray, shape (B,)
        ``Σ_i clip((k − g_i) / (e_i + 1), 0, 1)``, ``g_i`` / ``e_i`` the other candidates' reference scores above /
        equal to variant ``i``'s (:meth:`runtime.analysis.cell.Pairing.in_top`, swap-in). Scores are compared by
        their order codes (``numpy.unique``), so no offset arithmetic can merge two close floats.
    """
    return swap_in_shares(ref, var, k, reference=False)[1].sum(axis=1)


def continuity_corrected(low: float, high: float, selected: float,
                         notes: list[str]) -> tuple[float, float, list[str]]:
    """The percentile interval ``[low, high]`` widened by half a selected place at each end (methods 16, issue 39 §2;
    since methods 18 under a threshold rule only, :func:`smoothed_swap_in_interval` under swap-in top-K).

    Given the reference's ``selected`` places (K per job under swap-in top-K), the selection ratio moves in steps of
    ``1 / selected`` (the variant's count is an integer; tie-averaged counts move in finer steps, where the
    correction is conservative), while its bootstrap resamples, a ratio of two resampled counts,
    are spread almost continuously: read against a continuous approximation a lattice statistic needs half its span
    at each end (Hall 1987, "On the bootstrap and continuity correction", JRSS B 49: 82-89). Measured on the same
    resamples (``bench/ratio_interval_families.py``, candidate ``percentile_cc``): 2 jobs (20 places) 94.7-97.2%
    where the plain percentile interval covered 92.0-94.3%; 5 jobs (50 places) 95.0-96.7% (93.8-96.3%). As shipped
    in methods 16-17, on every setting of the coverage bench (``bench/coverage_shortlist.py``, 1,000 audits each,
    top-K): 2 jobs 95.1-96.8%, 5 jobs 94.8-96.8%, 20 jobs 93.2-96.6%, 50 jobs 95.2-96.1%, and 97.0-98.2% on the
    example's resampled candidates, where the bootstrap was already wider than the estimate's spread. No bench
    measures a threshold rule: such rows are noted approximate.

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
