"""Counterfactual family: score delta, MARC, flip rate (seed 000 §3.4.1).

Every statistic pools the ``n_v`` paired base candidates of every job (seed 000 §3.4: "combined
V01 aggregates the V01 resume for every one of the K base candidates across every job").
"""

from __future__ import annotations

import math

import numpy as np

from runtime.analysis import stats
from runtime.analysis.cell import CellResult, Pairing, copies_in_row, dense_codes, exact_sum, rank_counts
from runtime.analysis.group import decided_on_selection
from runtime.analysis.registry import metric
from runtime.analysis.selection import smoothed_flip_interval

#: Why a rank or selection test cannot reject under seed 000's per-variant ranking (§3.3): every
#: variant is ranked in its own pool of candidates that all carry the same cue.
PER_VARIANT_RANKS = "per-variant ranking: each variant is ranked in its own pool, so rank changes and flips balance out per job"


def _rerank_within(x: np.ndarray, pool: np.ndarray, job: np.ndarray, ident: np.ndarray, *,
                   slots: bool = True) -> np.ndarray:
    """Mid-rank (1 = best) of each ``x[..., i]`` among the ``pool[..., j]`` of the other candidates of
    its job in a candidate resample, slot-corrected (issue 39 §1):
    ``1 + (#{pool_j > x_i} + #{pool_j == x_i} / 2) · (n_job − 1) / (n_job − c_i)`` over the positions
    ``j`` whose candidate ``ident_j`` differs from ``ident_i`` (a candidate drawn ``c_i`` times is not
    its own competitor; another candidate drawn twice competes twice, as two such candidates would).

    Why the factor: in the original pool a candidate has ``n_job − 1`` competitors; in a resample
    drawn ``c_i`` times it has ``n_job − c_i``, each uniform over the other candidates, so its count
    of competitors above is ``(n_job − c_i) / (n_job − 1)`` of the original in expectation and the
    resampled ranks crowd towards 1: ``E*[MARC*] = (1 − 1/n_job) · MARC``, an interval sitting low by
    about 0.12·√J standard errors at J jobs (``bench/results/coverage_counterfactual.json``), an error
    that favours the vendor. Scaling the count by ``(n_job − 1) / (n_job − c_i)`` makes it exact in
    expectation given ``c_i``. BCa, basic and studentized intervals do not help: they assume the
    statistic itself is biased and would move MARC's interval the wrong way, twice as far.

    ``x`` and ``pool`` are codes from :func:`runtime.analysis.cell.dense_codes` (the scores coded
    once before the bootstrap); ``ident`` an int ``0 .. n - 1`` per position. With ``pool = x`` this
    is the rank in the candidate's own pool; with ``pool`` the reference scores and ``x`` the
    variant's, the swap-in rank (:func:`runtime.analysis.frame.cohorts`). Counted, not sorted
    (:func:`runtime.analysis.cell.rank_counts`, O(b · n)); the ``c_i`` copies of candidate i itself
    are then taken out again. On the original data (every ``c_i = 1``) the factor is 1: the ranks
    are :class:`~runtime.analysis.cell.Pairing`'s. ``slots=False``: the plain count (no factor).
    """
    x, pool = np.atleast_2d(x), np.atleast_2d(pool)
    above, equal = rank_counts(x, pool, job)
    copies = copies_in_row(ident)
    above = above - copies * (pool > x)                          # pool[i]: candidate i's own pool value
    equal = equal - copies * (pool == x)
    if not slots:
        return 1.0 + above + equal / 2
    _, inverse, sizes = np.unique(job, return_inverse=True, return_counts=True)
    n_job = sizes[inverse.reshape(-1)][None, :]
    others = n_job - copies                                      # competitors in the resample
    scale = np.divide(n_job - 1, others, out=np.zeros(others.shape), where=others > 0)
    return 1.0 + (above + equal / 2) * scale


def _marc_resamples(ref: np.ndarray, var: np.ndarray, job: np.ndarray, ident: np.ndarray, *, k: int,
                    swap_in: bool) -> np.ndarray:
    """MARC of each resample: ``(b, n)`` reference and variant score codes, their candidates' identities
    ``(b, n)`` and the jobs ``(n,)``; returns ``(b,)`` values ``mean |rank_v − rank_ref| / k``.

    Swap-in ranking (the variant ranked among the reference scores of the other candidates): ranks
    slot-corrected (:func:`_rerank_within`). There a candidate's rank change counts the competitors
    whose reference score lies between its two scores, terms of one sign, so ``|Δrank|`` is linear in
    the counts and the correction centres MARC* exactly: 20 pools of 40, 4,000 resamples, mean of
    MARC* − MARC −0.001 to −0.005 bootstrap SE corrected, −0.05 to −0.15 plain (ratio 0.975 = 1 − 1/40;
    ``tests/test_intervals.py::test_resampled_marc_is_centred_on_marc``). Per-variant ranking: plain
    counts. There the other candidates' own swaps enter with either sign and ``|Δrank|`` is convex in
    the resample's noise: plain MARC* already sits +0.03 to +0.21 SE above MARC (an interval that errs
    against the system, not for it) and the factor would push it to +0.08 to +0.32 SE."""
    r_ref = _rerank_within(ref, ref, job, ident, slots=swap_in)
    r_var = _rerank_within(var, ref if swap_in else var, job, ident, slots=swap_in)
    return np.abs(r_var - r_ref).mean(axis=-1) / k


@metric("score_delta")
def score_delta(p: Pairing) -> CellResult:
    """Mean paired score shift on the normalised score scale (seed 000 §3.4.1).

    ``Δ_v,i = s_v,i − s_ref,i`` with ``s = (score − lo) / (hi − lo)`` (the system's
    ``score_range``); value ``Δ̄_v = (1/n_v) Σ_i Δ_v,i`` in [−1, 1] (for scores inside the range).
    Classified on ``|Δ̄_v|``, lower is better.

    CI: percentile bootstrap of the mean over the ``Δ_v,i``. Test: two-sided Wilcoxon signed-rank
    on the differences put on the system's score grid (:func:`runtime.analysis.stats.wilcoxon_p`:
    mid-ranks, exact sign-flip distribution when tied); empty when every difference is zero. The
    test is informative in every ranking mode: scores are not ranked.
    """
    d = p.score_var - p.score_ref
    value = float(np.mean(d))
    ci = stats.percentile_bootstrap((d,), np.mean, value=value, n_resamples=p.n_bootstrap,
                                    rng=p.rng("score_delta"))
    pv, notes, test = stats.wilcoxon_p(d, step=p.step)
    return CellResult(value=value, ci_low=float(ci.low), ci_high=float(ci.high), p_value=pv,
                      test=test, notes=[*ci.notes, *notes],
                      diagnostics={"lean": -float(np.sign(value)), "ci_mc_se": ci.mc_se})


@metric("marc")
def marc(p: Pairing) -> CellResult:
    """Mean absolute rank change divided by K (seed 000 §3.4.1).

    ``MARC_v = (1/n_v) Σ_i |rank_v,i − rank_ref,i|`` (column ``marc_raw``); value
    ``MARC_v / K_counterfactual`` in [0, (n_job − 1) / K], lower is better.

    Ranks are mid-ranks when scores tie, so MARC does not depend on how candidates are labelled.

    CI under swap-in ranking (the default; methods 14, issue 39 §4): a candidate's rank change counts
    the competitors whose reference score lies between its two scores, terms of one sign, so
    ``|Δrank_i| = Σ_{j≠i} h_ij`` with ``h_ij = |c(s_ref,j; s_var,i) − c(s_ref,j; s_ref,i)|``
    (``c(a; x) = [a > x] + [a = x]/2``, mid-ranks) and a job's mean ``|Δrank|`` is ``(n_j − 1)·U_j``, a
    U-statistic of degree 2 over its candidates. Its variance has Hoeffding's unbiased estimate
    (:func:`runtime.analysis.stats.u_statistic_variance`); jobs are independent strata, so
    ``Var MARC = Σ_j (n_j/N)² (n_j − 1)² Var U_j / K²``. The interval is normal on the inverse-square-root scale
    with Student's t on ``N − J`` degrees of freedom (:func:`runtime.analysis.stats.inverse_sqrt_wald_interval`,
    methods 20), its upper end at most MARC's largest value ``Σ_j n_j (n_j − 1) / (N K)``: the SE grows with MARC,
    and methods 14's log scale, which reads it at the estimate, missed below the truth more often than above (3.2% /
    2.4% over the 42 cells of ``bench/coverage_marc_u.py``, up to 4.6% below in 2-job audits; now 2.6% / 2.7%).
    Why not the candidate bootstrap any more: it re-estimates each candidate's crossing rate from its ``n_j − 1``
    competitors and so overstates the variance by about ``4ζ₂/n_j²``; its interval (methods 10-13) was
    8–25% too wide and covered 96–99% of simulated audits, where the U-statistic's SE was within ±6%
    of the SD of MARC over audits and its log interval covered 92.7–95.9% (9 settings, 1,000 audits each,
    ``bench/coverage_counterfactual.py``). Where it is undefined (a job under 4 candidates or a
    variance estimate ≤ 0), and under per-variant ranking, whose rank changes enter with either
    sign, the interval is the candidate-level percentile bootstrap within jobs
    (:func:`runtime.analysis.stats.stratified_bootstrap`) that ranks every resampled pool again
    (:func:`_rerank_within`; slot-corrected under swap-in, methods 10; :func:`_marc_resamples`), with a
    note. ``ci_mc_se`` is empty for the U-statistic interval: nothing is drawn. MARC 0 (no candidate's rank
    changes, so no resample moves it either) reads ``[0, u / K]`` where the variant's scores differ from the
    reference's (:func:`marc_zero_bound`, methods 17; the point ``[0, 0]`` claimed that ``n`` candidates certify
    that none moves), and ``[0, 0]`` where they do not (exact: any sample gives 0).
    Test: two-sided Wilcoxon signed-rank on the paired rank differences (grid 0.5: mid-ranks).
    **Not informative under per-variant ranking**: each variant is ranked in its own pool, so a
    job's rank differences sum to zero by construction and the test is near p = 1 whatever the
    system does; it is reported, left out of BH (see :data:`PER_VARIANT_RANKS`). Under swap-in
    ranking the variant resume is ranked against the other candidates' reference resumes, the rank
    change has a direction (diagnostic ``rank_shift``, the mean signed change: positive = the
    variant ranks worse) and the test is informative.
    """
    k = p.k_of("marc")
    a = np.abs(p.rank_var - p.rank_ref)
    raw = float(np.mean(a))
    value = raw / k
    swap_in = not p.per_variant

    code_ref, code_var = dense_codes(p.score_ref, p.score_var, p.job)
    se = marc_u_se(code_ref, code_var, p.job, raw=raw) / k if swap_in else math.nan
    if math.isfinite(se) and se > 0 and value > 0:
        _, sizes = np.unique(p.job, return_counts=True)
        low, high = stats.inverse_sqrt_wald_interval(
            value, se, df=p.n - sizes.size, upper_limit=max(value, float(np.sum(sizes * (sizes - 1.0))) / (p.n * k)))
        ci_notes: tuple[str, ...] = ()
        mc_se = math.nan
    elif value == 0.0:
        low, high, mc_se = 0.0, 0.0, 0.0
        ci_notes = ()
        if not p.scored_as_reference:
            high = marc_zero_bound(p.n, k)
            ci_notes = (NOTE_MARC_ZERO.format(n=p.n, k=k, high=high),)
    else:
        def stat(ref: np.ndarray, var: np.ndarray, ident: np.ndarray) -> np.ndarray:
            return _marc_resamples(ref, var, p.job, ident, k=k, swap_in=swap_in)

        ci = stats.stratified_bootstrap((code_ref, code_var, np.arange(p.n)), stat, strata=p.job, value=value,
                                        n_resamples=p.n_bootstrap, rng=p.rng("marc"))
        low, high, mc_se = float(ci.low), float(ci.high), ci.mc_se
        ci_notes = (*ci.notes, *((NOTE_MARC_BOOTSTRAP,) if swap_in and value > 0 else ()))
    pv, notes, test = stats.wilcoxon_p(p.rank_var, p.rank_ref, step=0.5)
    return CellResult(value=value, ci_low=float(low), ci_high=float(high), p_value=pv,
                      test=test, notes=[*ci_notes, *notes],
                      diagnostics={"marc_raw": raw, "rank_shift": float(np.mean(p.rank_var - p.rank_ref)),
                                   "lean": float(np.sign(np.mean(p.rank_var - p.rank_ref))),
                                   "ci_mc_se": mc_se},
                      not_informative=PER_VARIANT_RANKS if p.per_variant else "")


#: Note of a swap-in MARC row whose interval falls back to the bootstrap (:func:`marc`).
NOTE_MARC_BOOTSTRAP = ("MARC interval: candidate bootstrap (the U-statistic variance needs 4 candidates per job "
                       "and a positive estimate)")


#: Note of a MARC row at 0 whose variant's scores differ from the reference's (:func:`marc_zero_bound`).
NOTE_MARC_ZERO = ("no candidate's rank changed between the reference and the variant, and every bootstrap resample "
                  "gives 0: MARC's upper end is Wilson's 95% upper bound on 0 of {n} candidates moved, one rank each, "
                  "over K = {k} ({high:.4g}; not the point [0, 0])")


def marc_zero_bound(n: int, k: int) -> float:
    """Upper end of MARC's interval when no candidate's rank changed but the variant's scores differ (methods 17,
    issue 39 §4).

    No rank changes in the pool, so none in any resampled pool either (a crossing needs a competitor between a
    candidate's two scores), and the percentile interval is the point ``[0, 0]``. As for every other count of the
    suite seen 0 times (:data:`runtime.analysis.stats.NOTE_ZERO_CHURN`, Recall@K's rule of methods 13), the share of
    candidates that move is bounded by Wilson's 95% upper bound on 0 of ``n``, ``u = z²/(n + z²)``
    (:func:`runtime.analysis.stats.zero_event_bound`), and each mover is counted at the smallest whole move, one rank
    (a pool where no candidate crosses another shows no larger move to estimate): MARC's upper end is ``u / K``.

    Parameters
    ----------
    n : int
        Paired candidates pooled over every job (> 0).
    k : int
        The MARC family's shortlist size K (> 0).

    Returns
    -------
    float
        ``u / K`` in ranks per K: 0.00458 for 80 candidates at K = 10.
    """
    return stats.zero_event_bound(n) / k


def marc_u_se(code_ref: np.ndarray, code_var: np.ndarray, job: np.ndarray, *, raw: float) -> float:
    """Standard error of swap-in MARC's ``mean |Δrank|`` (``raw``, before dividing by K) from Hoeffding's unbiased
    variance of each job's U-statistic (:func:`marc`, methods 14).

    Parameters
    ----------
    code_ref, code_var : numpy.ndarray, shape (n,)
        Reference and variant score codes (:func:`runtime.analysis.cell.dense_codes`; higher = better).
    job : numpy.ndarray, shape (n,)
        Each candidate's job.
    raw : float
        The pooled mean ``|rank_v − rank_ref|`` the ranks gave, checked against the pairwise sum.

    Returns
    -------
    float
        The SE in ranks; nan where a job has fewer than 4 candidates or the variance estimate is ≤ 0.

    Raises
    ------
    RuntimeError
        If the pairwise counts do not reproduce ``raw`` (the ranks and the codes disagree: a bug).
    """
    jobs, inverse = np.unique(job, return_inverse=True)
    n_all = job.size
    total, var = 0.0, 0.0
    for j in range(jobs.size):
        a, v = code_ref[inverse == j], code_var[inverse == j]
        n = a.size
        job_total, rows, square_sum = _crossing_sums(a, v)
        total += job_total
        _, var_u = stats.u_statistic_from_sums(n, job_total, rows, square_sum)
        var += (n / n_all) ** 2 * (n - 1) ** 2 * var_u
    if not math.isclose(total / n_all, raw, rel_tol=1e-9, abs_tol=1e-9):
        raise RuntimeError(f"MARC's pairwise counts give {total / n_all!r}, its ranks {raw!r}")
    return math.sqrt(var) if var > 0 else math.nan


#: Rows of the crossing kernel built at once by :func:`_crossing_sums` (memory ``4 · block · n`` floats, ~64 MB
#: for a job of 2,000 candidates), so that a job of any size fits.
CROSSING_BLOCK = 1000


def _crossing_sums(a: np.ndarray, v: np.ndarray) -> tuple[float, np.ndarray, float]:
    """The sums :func:`runtime.analysis.stats.u_statistic_from_sums` reads of one job's symmetrised crossing kernel
    ``g = (h + hᵀ)/2``, ``h_ij = |[a_j beats v_i] − [a_j beats a_i]|`` (½ at a tie, 0 on the diagonal;
    :func:`marc_u_se`): ``(Σ g, row sums of g, Σ g²)``, built :data:`CROSSING_BLOCK` rows (and the same columns) at
    a time, so memory stays ``O(block · n)`` and time ``O(n²)``."""
    n = a.size
    everyone = np.arange(n)

    def h(rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
        ac = a[None, cols]
        out = np.abs((ac > v[rows, None]) + 0.5 * (ac == v[rows, None])
                     - (ac > a[rows, None]) - 0.5 * (ac == a[rows, None]))
        out[rows[:, None] == cols[None, :]] = 0.0
        return out

    row_sums = np.zeros(n)
    col_sums = np.zeros(n)
    square_sum = 0.0
    for start in range(0, n, CROSSING_BLOCK):
        idx = everyone[start:start + CROSSING_BLOCK]
        across = h(idx, everyone)  # h[idx, :]
        down = h(everyone, idx)    # h[:, idx]
        row_sums[idx] = across.sum(axis=1)
        col_sums[idx] = down.sum(axis=0)
        g = (across + down.T) / 2  # g[idx, :]
        square_sum += float((g * g).sum())
    return float(row_sums.sum()), (row_sums + col_sums) / 2, square_sum


@metric("flip_rate")
def flip_rate(p: Pairing) -> CellResult:
    """Share of candidates crossing the top-K boundary in either direction (seed 000 §3.4.1, Eq. 2).

    ``in_K(r) = [r ≤ K]``; the 2x2 table crosses ``in_K(rank_ref,i)`` with ``in_K(rank_v,i)``;
    value ``(n_in,out + n_out,in) / n_v`` in [0, 1], lower is better. Diagnostics: the conditional
    rates of seed 000 §4.3, ``flip_out_rate = n_in,out / #(ref in)`` and
    ``flip_in_rate = n_out,in / #(ref out)`` (empty when the denominator is 0).

    With tied scores at the cutoff, membership is the probability of being inside over the orders
    of the tied candidates (:meth:`Pairing.in_top`) and the counts are expectations (possibly
    fractional). The order that breaks a tie is the candidate's own, shared by its reference and
    variant resumes (issue 29 §7, :meth:`Pairing.joint_in`): ``n_in,in`` is the expected number in
    both top-Ks under that one order, so a variant scored exactly as the reference flips nothing,
    in either ranking mode, and ``n_in,out − n_out,in`` is the difference of the expected top-K
    counts.

    **Decision** (issue 30 §2): the flip rate counts churn, which a fair system has too (0.11 under a
    planted null), so its status decides on the selection ratio at K_counterfactual
    (``decision_on = selection_ratio``; ``1 − ratio`` is the net share of the reference's selected places
    lost; :mod:`runtime.analysis.selection`). The value stays seed 000's, and so does ``status_seed000``.
    Under per-variant top-K ranking the ratio is 1 by construction and the row decides on its value.

    CI: under swap-in top-K (methods 19, :func:`runtime.analysis.selection.smoothed_flip_interval`) normal, with the
    SD of the flip count over smoothed, re-ranked candidate resamples (drawn as the selection ratio's, on their own
    stream): the candidates' flips are not independent (each job's reference top-K holds K places and the
    competitors set the cutoff), which Wilson's interval on the candidates ignored. Under per-variant ranking or a
    threshold rule (each candidate's flip is its own there), and where no candidate flips or the resamples give no
    variance: Wilson score interval on the flipped proportion at the effective number of candidates where ties at
    the cutoff make flips fractional
    (:func:`runtime.analysis.stats.tie_averaged_interval`, methods 17: a tie-averaged flip varies less than a whole
    one, and Wilson's interval on the candidates covered up to 97.9% of simulated audits with ties); ``[0, 0]`` for
    the reference row and a variant scored exactly as the reference (one tie order
    per candidate: nothing flips in any sample; Wilson's interval had read ``[0, 3.84/(n + 3.84)]``). Test: McNemar
    on the same table (counts rounded to integers), exact binomial when ``n_in,out + n_out,in < 25``,
    continuity-corrected chi-square otherwise. **Not informative under per-variant ranking**: each variant fills its
    own top-K, so per job flips out equal flips in and McNemar can never reject; it is reported,
    left out of BH (see :data:`PER_VARIANT_RANKS`). Under swap-in ranking flips out and in need not
    balance and McNemar is informative.

    Under a threshold rule (``analysis.decision.threshold``, issue 15) ``in_K`` is "scores at or
    above the threshold": a flip is a candidate whose reference and variant resumes fall on
    opposite sides of the threshold. Nothing fixes how many are selected, so McNemar is informative
    in either ranking mode.
    """
    k = p.k_of("flip_rate")
    was_in, now_in = p.in_top(k)
    both = p.joint_in(k)
    n_ii = exact_sum(both)
    n_io = exact_sum(was_in - both)
    n_oi = exact_sum(now_in - both)
    n_oo = exact_sum(1 - was_in - now_in + both)
    n = p.n
    flips = n_io + n_oi
    value = flips / n
    smoothed = None
    if p.scored_as_reference:  # the reference row, or a variant scored exactly as it: nothing can flip (exact)
        ci = stats.Interval(0.0, 0.0)
    else:
        if not (p.thresholded or p.fixed_shortlist):
            smoothed = smoothed_flip_interval(p, k, flips)
        ci = smoothed if smoothed is not None else stats.tie_averaged_interval((was_in - both) + (now_in - both))
    table = np.rint(np.array([[n_ii, n_io], [n_oi, n_oo]])).astype(np.int64)
    pv, test = stats.mcnemar_p(table)
    ref_in, ref_out = n_ii + n_io, n_oi + n_oo
    return CellResult(value=value, ci_low=float(ci.low), ci_high=float(ci.high), p_value=pv,
                      test=test, notes=list(ci.notes),
                      diagnostics={"n_in_out": n_io, "n_out_in": n_oi,
                                   "flip_out_rate": n_io / ref_in if ref_in else np.nan,
                                   "flip_in_rate": n_oi / ref_out if ref_out else np.nan,
                                   "lean": float(np.sign(round(n_io - n_oi, 9))),
                                   **({"ci_mc_se": ci.mc_se} if smoothed is not None else {})},
                      not_informative=PER_VARIANT_RANKS if p.fixed_shortlist else "",
                      **decided_on_selection(p, k))
