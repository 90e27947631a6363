"""Merit-aware family: Recall@K, nDCG@K, equal opportunity and equalized odds gaps (seed 000 §3.4.3).

These need the ground-truth ``is_true_match`` label of each base candidate. Jobs whose labels are
unknown are left out (with a note); when no job is labelled every merit metric is N/A. They judge a
ranked list, so they always read each variant's ranking in its own pool (seed 000 §3.3), also under
``analysis.ranking: swap_in``, where each variant resume is ranked alone against the others'
reference resumes and there is no single list to judge.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from runtime.analysis import stats
from runtime.analysis.cell import CellResult, Pairing, dense_codes, exact_sum, job_sums, rank_counts, top_share
from runtime.analysis.registry import metric

NOTE_LABELS_UNKNOWN = "is_true_match unknown: merit metrics undefined"
NOTE_UNLABELLED_JOBS = "{n} job(s) with unknown is_true_match excluded"
NOTE_NO_MATCH_JOBS = "{n} job(s) without a true match excluded"
NOTE_NO_MATCH = "no true match in any labelled job: undefined"
NOTE_MAX_ATTAINABLE = ("max attainable = {cap:.6g} (Eq. 4 caps a job's recall at K/P when its P "
                       "true matches exceed K={k})")
NOTE_NO_NEGATIVES = "no non-match in any labelled job: FPR term undefined, gap = |ΔTPR|"
#: A merit interval whose every resample gave the estimate, a count seen 0 times (methods 13).
NOTE_ZERO_EVENTS = ("every bootstrap resample gave the estimate ({what}: 0 of {nobs:.4g}): Wilson's interval on that "
                    "count instead, as a percentile interval of a count seen 0 times is a point")


def _point(low: float, high: float, value: float) -> bool:
    """Whether a bootstrap interval collapsed onto its estimate (every resample gave the value)."""
    tol = 1e-12 * max(1.0, abs(value))
    return abs(high - low) <= tol and abs(low - value) <= tol


#: Wilson's 95% upper bound on a count seen 0 times (:func:`runtime.analysis.stats.zero_event_bound`; methods 13 defined
#: it here for Recall@K, and MARC and the selection ratio read it too).
zero_event_bound = stats.zero_event_bound


@dataclass(frozen=True)
class _Labelled:
    """The labelled candidates of a pairing."""

    y: np.ndarray          # 0/1 as int8
    job: np.ndarray
    rank_var: np.ndarray
    rank_ref: np.ndarray
    tie_var: np.ndarray    # tie-group size in the variant's pool (1 = untied)
    n_jobs: int
    labelled_job: np.ndarray  # bool per job code
    in_var: np.ndarray     # probability of being in the variant's top-K
    in_ref: np.ndarray     # ... in the reference's top-K
    score_var: np.ndarray  # normalised scores: re-ranked in each bootstrap resample
    score_ref: np.ndarray


def _labelled(p: Pairing, k: int) -> _Labelled | None:
    mask = ~np.isnan(p.match)
    if not mask.any():
        return None
    job = p.job[mask]
    in_ref, in_var = p.in_top_pool(k)  # the variant's own ranked list, in either ranking mode
    rank_var, tie_all = p.pool_var
    tie_var = tie_all[mask] if tie_all is not None else np.ones(int(mask.sum()))
    return _Labelled(y=p.match[mask].astype(np.int8), job=job, rank_var=rank_var[mask],
                     rank_ref=p.rank_ref[mask], tie_var=tie_var, n_jobs=p.n_jobs,
                     labelled_job=np.bincount(job, minlength=p.n_jobs) > 0,
                     in_var=in_var[mask], in_ref=in_ref[mask], score_var=p.score_var[mask],
                     score_ref=p.score_ref[mask])


def _label_notes(p: Pairing) -> list[str]:
    return [NOTE_UNLABELLED_JOBS.format(n=p.n_unlabelled_jobs)] if p.n_unlabelled_jobs else []


def _per_job(lab: _Labelled, k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per-job true matches P_j, (expected) true positives TP_j in the variant's top-K, and the jobs used."""
    pos = np.bincount(lab.job, weights=lab.y, minlength=lab.n_jobs)
    tp = job_sums(lab.job, lab.y * lab.in_var, lab.n_jobs)
    used = lab.labelled_job & (pos > 0)
    return pos, tp, used


def _strata(lab: _Labelled) -> np.ndarray:
    """Bootstrap strata of the merit metrics: job x label, so that every resample keeps each job's
    number of true matches P_j (a design constant: ``candidates.matching_per_job``)."""
    return 2 * lab.job + lab.y


def _rerank(code: np.ndarray, job: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Top-K share, mid-rank and tie size of every candidate of resampled pools (1 = best).

    ``code`` is ``(b, n)``: b resamples of the labelled candidates' scores, coded once by
    :func:`runtime.analysis.cell.dense_codes`, each position kept in its job
    (:func:`runtime.analysis.stats.stratified_bootstrap`); each row's candidates are ranked again
    within their job by counting (:func:`runtime.analysis.cell.rank_counts`), a candidate drawn
    twice tying with itself (tie-averaged, as the originals).
    """
    above, equal = rank_counts(code, code, job)
    mid = 1.0 + above + (equal - 1) / 2
    tie = equal.astype(float)
    return top_share(mid, tie, k), mid, tie


def _onehot_used(lab: _Labelled, used: np.ndarray) -> np.ndarray:
    """``(n, jobs used)`` indicator of each labelled candidate's job."""
    return np.eye(lab.n_jobs)[lab.job][:, used]


def _job_notes(lab: _Labelled, used: np.ndarray) -> list[str]:
    no_match = int(np.sum(lab.labelled_job & ~used))
    return [NOTE_NO_MATCH_JOBS.format(n=no_match)] if no_match else []


def _merit_start(p: Pairing, metric_id: str):
    """What Recall@K and nDCG@K share before their own computation: K, the labelled frame, per job the
    true matches, the true matches in the top-K and whether the job is used (it has a true match), and
    the notes; or the cell's result when the metric is undefined (no labels) or has no job to average."""
    k = p.k_of(metric_id)
    lab = _labelled(p, k)
    if lab is None:
        return CellResult.undefined(NOTE_LABELS_UNKNOWN)
    pos, tp, used = _per_job(lab, k)
    notes = _label_notes(p) + _job_notes(lab, used)
    if not used.any():
        return CellResult(value=math.nan, notes=[*notes, NOTE_NO_MATCH], diagnostics={"jobs_used": 0})
    return k, lab, pos, tp, used, notes


@metric("recall_at_k")
def recall_at_k(p: Pairing) -> CellResult:
    """Recall@K, macro-averaged over jobs with at least one true match (seed 000 §3.4.3, Eq. 4).

    ``Recall@K_v = (1/|J'|) Σ_{j∈J'} |{i: rank_v,i ≤ K, y_i = 1}| / |{i: y_i = 1}|`` with
    ``K = k.merit``; range [0, 1], higher is better. Taken literally, a job with P > K true
    matches cannot exceed K/P; the note gives the attainable maximum when it is below 1.
    Tied scores at the cutoff count each tied true match by its probability of being inside
    (tie-averaged, McSherry & Najork 2008), so the value does not depend on candidate labels.
    Diagnostics ``tp``/``p``: pooled over the jobs used.

    CI: candidate-level percentile bootstrap within job x label strata
    (:func:`runtime.analysis.stats.stratified_bootstrap`; each job keeps its P true matches),
    defined from one job on; where every resample gives the estimate at its maximum (or 0), Wilson's interval
    on the count seen 0 times (:func:`_merit_zero_events`, methods 13). No test.

    Under a threshold rule (``analysis.decision.threshold``, issue 15) "rank ≤ K" reads "score at or
    above the threshold": the value is the share of each job's true matches whose variant resume is
    selected (the true-positive rate of the vendor's decision), with no K/P cap.
    """
    start = _merit_start(p, "recall_at_k")
    if isinstance(start, CellResult):
        return start
    k, lab, pos, tp, used, notes = start
    rec = tp[used] / pos[used]
    value = float(np.mean(rec))
    if not p.thresholded:  # a threshold may select every true match
        cap = float(np.mean(np.minimum(k, pos[used]) / pos[used]))
        if cap < 1:
            notes.append(NOTE_MAX_ATTAINABLE.format(cap=cap, k=k))
    diag = {"tp": float(tp[used].sum()), "p": float(pos[used].sum()), "jobs_used": int(used.sum())}
    per_job = _onehot_used(lab, used) / pos[used]

    if p.thresholded:  # each resume is selected on its own score: nothing to rank again
        def stat(sel_b: np.ndarray, y_b: np.ndarray) -> np.ndarray:
            return ((y_b * sel_b) @ per_job).mean(axis=-1)

        first = lab.in_var
    else:
        def stat(s_b: np.ndarray, y_b: np.ndarray) -> np.ndarray:
            return ((y_b * _rerank(s_b, lab.job, k)[0]) @ per_job).mean(axis=-1)

        first = dense_codes(lab.score_var, lab.score_var, lab.job)[0]
    ci = stats.stratified_bootstrap((first, lab.y), stat, strata=_strata(lab), value=value,
                                    n_resamples=p.n_bootstrap, rng=p.rng("recall_at_k"))
    notes.extend(ci.notes)
    diag["ci_mc_se"] = ci.mc_se
    slots = pos[used] if p.thresholded else np.minimum(k, pos[used])
    hits = float(tp[used].sum())
    low, high = _merit_zero_events(float(ci.low), float(ci.high), value, slots=float(slots.sum()),
                                   at_cap=hits >= float(slots.sum()) - 1e-9, at_zero=hits <= 1e-9,
                                   cap=float(np.mean(slots / pos[used])), notes=notes, diag=diag)
    return CellResult(value=value, ci_low=low, ci_high=high, notes=notes, diagnostics=diag)


def _merit_zero_events(low: float, high: float, value: float, *, slots: float, at_cap: bool, at_zero: bool,
                       cap: float, notes: list[str], diag: dict) -> tuple[float, float]:
    """Recall@K's and nDCG@K's interval when every resample gave the estimate (methods 13).

    The stratified bootstrap keeps each job's true matches and non-matches apart; when every true match of
    the sample outranks every non-match at the cutoff (a matcher that separates the two, as the example's,
    match d = 4.26), no resample can put a non-match into a top-K slot, and the percentile interval is the
    point ``[1, 1]``, although the population's expected recall is below 1 (0.996 in the example's resampled
    settings, where that point covered 33% of audits). The count behind it is 0 non-matches in the
    ``S = Σ_j min(K, P_j)`` attainable top slots of the jobs used (``P_j`` under a threshold rule): the
    interval becomes ``[value · (1 − u), value]`` with ``u`` Wilson's upper bound on 0 of S
    (:func:`zero_event_bound`). Symmetrically, no true match in any slot gives ``[0, u · cap]``, ``cap`` the
    attainable maximum. For nDCG@K the same share bounds the gain lost: a non-match at a uniformly drawn top
    position costs on average ``1 / min(K, P_j)`` of the ideal DCG, as one slot of recall; near the cutoff,
    where a non-match most often enters, it costs less. ``ci_mc_se`` is then 0 (no bootstrap end is read).
    Any other interval is returned unchanged.
    """
    if not _point(low, high, value) or slots <= 0:
        return low, high
    u = zero_event_bound(slots)
    if at_cap:
        low, what = value * (1.0 - u), "non-matches in the attainable top slots"
    elif at_zero:
        high, what = u * cap, "true matches in the attainable top slots"
    else:
        return low, high
    notes.append(NOTE_ZERO_EVENTS.format(what=what, nobs=slots))
    diag["ci_mc_se"] = 0.0
    return low, high


def ideal_dcg(n_relevant: np.ndarray, k: int) -> np.ndarray:
    """IDCG@K of jobs with ``n_relevant`` true matches: ``Σ_{r=1}^{min(K, P)} 1 / log2(r + 1)``."""
    cum = np.concatenate(([0.0], np.cumsum(1.0 / np.log2(np.arange(2, k + 2)))))
    return cum[np.minimum(n_relevant.astype(np.int64), k)]


def tie_averaged_gain(y: np.ndarray, rank: np.ndarray, tie: np.ndarray, k: int) -> np.ndarray:
    """Each candidate's share of DCG@K: ``y / log2(rank + 1)`` for an untied candidate inside the
    top-K; for a tie group at positions ``a .. b``, ``y / t · Σ_{r=a}^{min(b, K)} 1 / log2(r + 1)``."""
    rank = np.asarray(rank, dtype=float)
    tie = np.asarray(tie, dtype=float)
    gain = np.zeros(y.shape[0])
    single = (tie == 1) & (rank <= k)
    gain[single] = y[single] / np.log2(rank[single] + 1.0)
    tied = tie > 1
    if tied.any():
        cum = np.concatenate(([0.0], np.cumsum(1.0 / np.log2(np.arange(2, k + 2)))))
        first = np.rint(rank[tied] - (tie[tied] - 1) / 2).astype(np.int64)
        last = np.rint(rank[tied] + (tie[tied] - 1) / 2).astype(np.int64)
        lo, hi = np.minimum(first - 1, k), np.minimum(last, k)
        gain[tied] = y[tied] / tie[tied] * (cum[hi] - cum[lo])
    return gain


@metric("ndcg_at_k")
def ndcg_at_k(p: Pairing) -> CellResult:
    """nDCG@K with binary relevance, mean over jobs with a true match (seed 000 §3.4.3).

    Per job, with ``rel`` the labels ordered by variant rank,
    ``DCG@K = Σ_{r=1}^{K} rel_r / log2(r + 1)`` (so a true match at rank r ≤ K contributes
    ``1 / log2(r + 1)``) and ``IDCG@K`` is the DCG of the ideal ordering (all true matches first);
    value = mean of ``DCG@K / IDCG@K`` over jobs with at least one true match; range [0, 1],
    higher is better. Tied scores use the tie-averaged DCG of McSherry & Najork (2008): a tie group
    occupying positions ``a .. b`` contributes its mean relevance times
    ``Σ_{r=a}^{min(b, K)} 1 / log2(r + 1)``, the expectation over the orders of the tied candidates.

    CI: candidate-level percentile bootstrap within job x label strata, each resampled candidate
    keeping its tie-averaged gain (as :func:`recall_at_k`), defined from one job on; at 1 (or 0) in every
    resample, Wilson's interval on the count seen 0 times, as Recall@K's (:func:`_merit_zero_events`). No test.
    """
    start = _merit_start(p, "ndcg_at_k")
    if isinstance(start, CellResult):
        return start
    k, lab, pos, _, used, notes = start
    gain = tie_averaged_gain(lab.y, lab.rank_var, lab.tie_var, k)
    order = np.lexsort((lab.rank_var, lab.job))  # summed in rank order: no label decides the rounding
    dcg = np.bincount(lab.job[order], weights=gain[order], minlength=lab.n_jobs)
    nd = dcg[used] / ideal_dcg(pos[used], k)
    value = float(np.mean(nd))
    per_job = _onehot_used(lab, used) / ideal_dcg(pos[used], k)

    def stat(s_b: np.ndarray, y_b: np.ndarray) -> np.ndarray:
        _, mid, tie = _rerank(s_b, lab.job, k)
        g = tie_averaged_gain(y_b.ravel(), mid.ravel(), tie.ravel(), k).reshape(s_b.shape)
        return (g @ per_job).mean(axis=-1)

    code = dense_codes(lab.score_var, lab.score_var, lab.job)[0]
    ci = stats.stratified_bootstrap((code, lab.y), stat, strata=_strata(lab), value=value,
                                    n_resamples=p.n_bootstrap, rng=p.rng("ndcg_at_k"))
    notes.extend(ci.notes)
    diag = {"jobs_used": int(used.sum()), "ci_mc_se": ci.mc_se}
    # nDCG@K is 1 exactly when each job's top min(K, P_j) places hold true matches, 0 when they hold none
    low, high = _merit_zero_events(float(ci.low), float(ci.high), value, slots=float(np.minimum(k, pos[used]).sum()),
                                   at_cap=value >= 1.0 - 1e-12, at_zero=value <= 1e-12, cap=1.0, notes=notes,
                                   diag=diag)
    return CellResult(value=value, ci_low=low, ci_high=high, notes=notes, diagnostics=diag)


def abs_interval(low: float, high: float) -> tuple[float, float]:
    """Map a CI ``[a, b]`` of a signed difference to a CI of its absolute value.

    ``[0, max(|a|, |b|)]`` when ``a ≤ 0 ≤ b``, else ``[min(|a|, |b|), max(|a|, |b|)]``.
    """
    if not (math.isfinite(low) and math.isfinite(high)):
        return math.nan, math.nan
    if low <= 0.0 <= high:
        return 0.0, max(abs(low), abs(high))
    return min(abs(low), abs(high)), max(abs(low), abs(high))


def _ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    """``num / den``, nan where ``den`` is 0 (a rate of an empty base is undefined, not 0)."""
    num = np.asarray(num, dtype=float)
    den = np.asarray(den, dtype=float)
    return np.divide(num, den, out=np.full(np.broadcast(num, den).shape, np.nan), where=den > 0)


def _tpr_diff(y: np.ndarray, tpd: np.ndarray, axis: int = -1) -> np.ndarray:
    """Signed TPR_v − TPR_ref of a (resampled) set of candidates; nan when it holds no true match."""
    return _ratio(tpd.sum(axis=axis), y.sum(axis=axis))


def _rate_diffs(y: np.ndarray, tpd: np.ndarray, fpd: np.ndarray, axis: int = -1) -> np.ndarray:
    """Stack of signed (TPR_v − TPR_ref, FPR_v − FPR_ref); nan for a rate with an empty base."""
    pos = y.sum(axis=axis)
    neg = y.shape[axis] - pos
    return np.stack([_ratio(tpd.sum(axis=axis), pos), _ratio(fpd.sum(axis=axis), neg)])


@dataclass(frozen=True)
class _Rates:
    y: np.ndarray
    tpd: np.ndarray   # y * (in_v - in_ref): expected change of each candidate's true-positive count
    fpd: np.ndarray   # (1 - y) * (in_v - in_ref)
    tp_v: float
    tp_r: float
    fp_v: float
    fp_r: float
    pos: int
    neg: int


def _rates(lab: _Labelled) -> _Rates:
    in_v, in_r = lab.in_var, lab.in_ref
    y = lab.y.astype(float)
    neg_y = 1.0 - y
    return _Rates(y=lab.y, tpd=y * (in_v - in_r), fpd=neg_y * (in_v - in_r),
                  tp_v=exact_sum(y * in_v), tp_r=exact_sum(y * in_r),
                  fp_v=exact_sum(neg_y * in_v), fp_r=exact_sum(neg_y * in_r),
                  pos=int(lab.y.sum()), neg=int(neg_y.sum()))


@metric("equal_opportunity_gap")
def equal_opportunity_gap(p: Pairing) -> CellResult:
    """Top-K true-positive-rate gap to the reference (seed 000 §3.4.3, Eq. 5).

    Pooling the labelled candidates of every job, ``TPR_v = TP_v / P`` with
    ``TP_v = |{i: rank_v,i ≤ K, y_i = 1}|`` (``K = k.merit``; under a threshold rule, issue 15:
    ``score_v,i ≥ threshold``) and P the number of true matches;
    value ``|TPR_v − TPR_ref|`` in [0, 1], lower is better. Diagnostics ``tp``, ``p``, ``tpr``
    are the variant's.

    CI: the signed difference ``TPR_v − TPR_ref`` is bootstrapped (percentile, paired resample of
    base candidates: each resampled candidate brings its variant and reference ranks and its label),
    and its interval ``[a, b]`` is mapped to ``|·|``: ``[0, max(|a|, |b|)]`` when it contains 0,
    else ``[min(|a|, |b|), max(|a|, |b|)]``. A percentile interval of ``|TPR_v − TPR_ref|``
    itself would be biased away from 0: every resample's absolute gap is ≥ 0 and almost all are
    > 0, so its 2.5th percentile sits above a gap of exactly 0 and the interval would exclude the
    estimate it belongs to. When no true match changes top-K membership (the signed interval is the point 0)
    and the variant is not scored exactly as its reference, ``[0, u]``, Wilson's upper bound on 0 of P
    (:func:`_gap_zero_events`, methods 13). No test.
    """
    k = p.k_of("equal_opportunity_gap")
    lab = _labelled(p, k)
    if lab is None:
        return CellResult.undefined(NOTE_LABELS_UNKNOWN)
    r = _rates(lab)
    notes = _label_notes(p)
    if r.pos == 0:
        return CellResult(value=math.nan, notes=[*notes, NOTE_NO_MATCH],
                          diagnostics={"tp": 0, "p": 0})
    signed = (r.tp_v - r.tp_r) / r.pos
    value = abs(signed)
    ci = stats.percentile_bootstrap((r.y, r.tpd), _tpr_diff, value=signed,
                                    n_resamples=p.n_bootstrap, rng=p.rng("equal_opportunity_gap"),
                                    paired=True)
    low, high = abs_interval(float(ci.low), float(ci.high))
    diag = {"tp": r.tp_v, "p": r.pos, "tpr": r.tp_v / r.pos, "lean": -float(np.sign(round(signed, 12))),
            "ci_mc_se": ci.mc_se}
    notes = [*notes, *ci.notes]
    zero = _gap_zero_events(float(ci.low), float(ci.high), signed, lab, r.pos, TPR_EVENTS, notes)
    if zero is not None:
        (low, high), diag["ci_mc_se"] = zero, 0.0
    return CellResult(value=value, ci_low=low, ci_high=high, notes=notes, diagnostics=diag)


#: What a zero-event gap interval counted (:data:`NOTE_ZERO_EVENTS`).
TPR_EVENTS = "true matches entering or leaving the top-K"
FPR_EVENTS = "non-matches entering or leaving the top-K"


def _gap_zero_events(low: float, high: float, signed: float, lab: _Labelled, nobs: int, what: str,
                     notes: list[str]) -> tuple[float, float] | None:
    """The interval of ``|TPR_v − TPR_ref|`` (or of the FPR term) when its signed bootstrap interval collapsed on 0
    (methods 13), else None.

    The signed difference is ``(entering − leaving) / P`` over the true matches: when none of the sample's
    ``P`` true matches changes top-K membership between its reference and variant resumes, every resample gives
    0 and the percentile interval is ``[0, 0]``, although the population's expected gap is above 0 (0.002 in the
    example's resampled settings, where that point covered 55% of audits). The gap is at most the share of true
    matches that change membership, seen 0 times in ``P``: the interval becomes ``[0, u]``, ``u`` Wilson's upper
    bound on 0 of P (:func:`zero_event_bound`). A variant scored exactly as its reference (every labelled paired
    difference 0, e.g. the reference compared with itself) cannot change any membership: its ``[0, 0]`` is exact
    and kept."""
    if not (_point(low, high, signed) and abs(signed) <= 1e-12 and nobs > 0):
        return None
    if np.array_equal(lab.score_var, lab.score_ref):
        return None
    notes.append(NOTE_ZERO_EVENTS.format(what=what, nobs=nobs))
    return 0.0, zero_event_bound(nobs)


@metric("equalized_odds_gap")
def equalized_odds_gap(p: Pairing) -> CellResult:
    """Top-K equalized-odds gap: ``max(|TPR_v − TPR_ref|, |FPR_v − FPR_ref|)`` (seed 000 §3.4.3).

    TPR as in :func:`equal_opportunity_gap`; ``FPR_v = FP_v / N`` with
    ``FP_v = |{i: rank_v,i ≤ K, y_i = 0}|`` (or ``score_v,i ≥ threshold``) and N the number of non-matches, pooled over the
    labelled jobs; range [0, 1], lower is better. Diagnostics ``tp, p, fp, negatives, tpr, fpr``
    are the variant's.

    CI: one paired bootstrap of base candidates gives signed intervals of both differences; each is
    mapped to its absolute value as in :func:`equal_opportunity_gap` (same reason) and the two are
    combined as ``[max(lo_tpr, lo_fpr), max(hi_tpr, hi_fpr)]``, which contains the max of two
    values each inside its own interval. A term whose signed interval is the point 0 while the variant's
    scores differ from its reference's reads ``[0, u]`` on P (or N) (:func:`_gap_zero_events`, methods 13). No test.
    """
    k = p.k_of("equalized_odds_gap")
    lab = _labelled(p, k)
    if lab is None:
        return CellResult.undefined(NOTE_LABELS_UNKNOWN)
    r = _rates(lab)
    notes = _label_notes(p)
    diag: dict[str, float] = {"tp": r.tp_v, "p": r.pos, "fp": r.fp_v, "negatives": r.neg}
    if r.pos == 0:
        return CellResult(value=math.nan, notes=[*notes, NOTE_NO_MATCH], diagnostics=diag)
    d_tpr = (r.tp_v - r.tp_r) / r.pos
    diag["tpr"] = r.tp_v / r.pos
    diag["lean"] = -float(np.sign(round(d_tpr, 12)))
    rng = p.rng("equalized_odds_gap")
    if r.neg == 0:
        ci = stats.percentile_bootstrap((r.y, r.tpd), _tpr_diff, value=d_tpr,
                                        n_resamples=p.n_bootstrap, rng=rng, paired=True)
        low, high = abs_interval(float(ci.low), float(ci.high))
        diag["ci_mc_se"] = ci.mc_se
        notes = [*notes, NOTE_NO_NEGATIVES, *ci.notes]
        zero = _gap_zero_events(float(ci.low), float(ci.high), d_tpr, lab, r.pos, TPR_EVENTS, notes)
        if zero is not None:
            (low, high), diag["ci_mc_se"] = zero, 0.0
        return CellResult(value=abs(d_tpr), ci_low=low, ci_high=high, notes=notes, diagnostics=diag)
    d_fpr = (r.fp_v - r.fp_r) / r.neg
    diag["fpr"] = r.fp_v / r.neg
    if abs(d_fpr) > abs(d_tpr):  # the larger gap decides: being selected more is the advantage
        diag["lean"] = -float(np.sign(round(d_fpr, 12)))
    ci = stats.percentile_bootstrap((r.y, r.tpd, r.fpd), _rate_diffs,
                                    value=np.array([d_tpr, d_fpr]), n_resamples=p.n_bootstrap,
                                    rng=rng, paired=True)
    lo_t, hi_t = abs_interval(float(ci.low[0]), float(ci.high[0]))
    lo_f, hi_f = abs_interval(float(ci.low[1]), float(ci.high[1]))
    diag["ci_mc_se"] = ci.mc_se  # |·| and max(·, ·) move an end by no more than the ends they read
    notes = [*notes, *ci.notes]
    zero_t = _gap_zero_events(float(ci.low[0]), float(ci.high[0]), d_tpr, lab, r.pos, TPR_EVENTS, notes)
    zero_f = _gap_zero_events(float(ci.low[1]), float(ci.high[1]), d_fpr, lab, r.neg, FPR_EVENTS, notes)
    lo_t, hi_t = zero_t or (lo_t, hi_t)
    lo_f, hi_f = zero_f or (lo_f, hi_f)
    return CellResult(value=max(abs(d_tpr), abs(d_fpr)), ci_low=max(lo_t, lo_f),
                      ci_high=max(hi_t, hi_f), notes=notes, diagnostics=diag)
