"""Validate the paired frame and align every variant with the reference (seed 000 §3.3).

The paired frame (``DESIGN.md``, "Analysis contracts") is long: one row per scored resume. For
each system x condition this module pivots it into one array per variant, every array ordered by
base candidate ``(job_id, cv_id)``, which is the layout every metric works on.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass

import numpy as np
import pandas as pd

from runtime.analysis import stats
from runtime.analysis.classify import meets_threshold

#: Columns :func:`cohorts` reads; ``replicate`` and the axis columns are ignored.
REQUIRED_COLUMNS = ("system", "condition", "job_id", "cv_id", "variant", "score", "rank",
                    "is_true_match")
KEY = ("job_id", "cv_id")

ERR_MISSING_COLUMNS = "paired frame lacks column(s): {missing}"
ERR_EMPTY = "paired frame has no rows"
ERR_NO_REFERENCE = ("reference variant {reference!r} has no rows for system {system!r}, "
                    "condition {condition!r}; variants present: {present}")
ERR_DUPLICATE = ("paired frame has {count} duplicate row(s) for system {system!r}, condition "
                 "{condition!r} (one row per job_id, cv_id, variant is expected; averaging "
                 "replicates is the caller's job), first: {first}")
ERR_UNPAIRED = ("variant {variant!r} of system {system!r}, condition {condition!r} is not paired "
                "with reference {reference!r}: {count} base candidate(s) are missing from one "
                "side, first: {first}")
ERR_NAN_VALUE = ("column {column!r} has {count} missing value(s) for system {system!r}, "
                 "condition {condition!r}")
ERR_MATCH_VALUES = "is_true_match must be 0, 1 or missing; system {system!r} has {values}"
ERR_SCORE_RANGE_MISSING = "score_range has no entry for system {system!r}"
ERR_SCORE_RANGE_BAD = "score_range of system {system!r} must be (lo, hi) with lo < hi, got {got!r}"


@dataclass(frozen=True, eq=False)
class Cohort:
    """One system x condition, pivoted: one aligned array per variant.

    Attributes
    ----------
    system, condition, reference : str
    variants : tuple of str
        The reference first, then the other variants sorted.
    job_ids, cv_ids : numpy.ndarray
        The base candidate of each position, sorted by ``(job_id, cv_id)``.
    job : numpy.ndarray of int
        Job code of each position (index into the sorted distinct job ids).
    n_jobs : int
    score : dict of str to numpy.ndarray
        Normalised score ``(score - lo) / (hi - lo)`` per variant.
    rank : dict of str to numpy.ndarray
        Rank per variant within its (job, variant) pool: the **mid-rank** of the score, recomputed
        here (1 = best; tied scores share the mean of their positions), whatever the frame's
        ``rank`` column says.
    match : numpy.ndarray of float
        ``is_true_match`` taken from the reference rows; ``nan`` for all candidates of a job with
        any unknown label.
    n_unlabelled_jobs : int
    tie : dict of str to numpy.ndarray
        Per variant, the size of each candidate's tie group within its (job, variant) pool (1 when
        its score is not tied); with the mid-rank it gives the positions the group occupies.
    resolution : float
        The system's score grid in its own units (declared ``score_resolution`` or inferred with
        :func:`runtime.analysis.stats.infer_resolution`; 0 = continuous).
    step : float
        The same grid on the normalised scale: ``resolution / (hi - lo)``.
    ranking : str
        ``per_variant`` or ``swap_in`` (see :func:`cohorts`); ``rank`` and ``tie`` of the variants follow it.
    pool_rank, pool_tie : dict of str to numpy.ndarray
        Each variant's mid-rank and tie size in its own pool, whatever ``ranking`` says: the ranking
        whose quality the merit metrics measure (Recall@K, nDCG@K and the TPR/FPR gaps).
    threshold : float, optional
        The decision threshold in the system's own units (``analysis.decision.threshold``), or None
        under a top-K rule.
    selected : dict of str to numpy.ndarray, optional
        Under a threshold rule, per variant, 1.0 where the raw score is at or above the threshold
        (compared on the system's own scale, before normalisation), else 0.0; None under top-K.
    """

    system: str
    condition: str
    reference: str
    variants: tuple[str, ...]
    job_ids: np.ndarray
    cv_ids: np.ndarray
    job: np.ndarray
    n_jobs: int
    score: dict[str, np.ndarray]
    rank: dict[str, np.ndarray]
    match: np.ndarray
    n_unlabelled_jobs: int
    tie: dict[str, np.ndarray]
    resolution: float = 0.0
    step: float = 0.0
    ranking: str = "per_variant"
    pool_rank: dict[str, np.ndarray] | None = None
    pool_tie: dict[str, np.ndarray] | None = None
    threshold: float | None = None
    selected: dict[str, np.ndarray] | None = None


def tie_sizes(job: np.ndarray, rank: np.ndarray) -> np.ndarray:
    """Size of each candidate's tie group: how many candidates of its job share its (mid-)rank."""
    key = np.stack([np.asarray(job, dtype=float), np.asarray(rank, dtype=float)], axis=1)
    _, inverse, counts = np.unique(key, axis=0, return_inverse=True, return_counts=True)
    return counts[inverse.ravel()].astype(float)


#: Ranking modes (``analysis.ranking``).
PER_VARIANT, SWAP_IN = "per_variant", "swap_in"
ERR_RANKING = "ranking must be 'per_variant' or 'swap_in', got {got!r}"


def swap_in_ranks(ref: np.ndarray, var: np.ndarray, job: np.ndarray, n_jobs: int) -> tuple[np.ndarray, np.ndarray]:
    """Swap-in rank and tie size of each variant resume: candidate i's variant score ranked against the
    reference scores of the *other* candidates of its job (higher = better; mid-rank on a tie).

    ``rank_i = 1 + #{j ≠ i: ref_j > var_i} + #{j ≠ i: ref_j = var_i} / 2``, tie size
    ``1 + #{j ≠ i: ref_j = var_i}``. The reference's own rank is the same formula with var = ref.
    """
    rank = np.empty(var.shape[0])
    tie = np.empty(var.shape[0])
    for j in range(n_jobs):
        idx = np.flatnonzero(job == j)
        r, v = ref[idx], var[idx]
        srt = np.sort(r)
        above = srt.size - np.searchsorted(srt, v, side="right") - (r > v)
        same = np.searchsorted(srt, v, side="right") - np.searchsorted(srt, v, side="left") - (r == v)
        rank[idx] = 1 + above + same / 2
        tie[idx] = 1 + same
    return rank, tie


def check_columns(paired: pd.DataFrame) -> None:
    """Raise ``ValueError`` (``ERR_MISSING_COLUMNS`` / ``ERR_EMPTY``) for an unusable frame."""
    missing = [c for c in REQUIRED_COLUMNS if c not in paired.columns]
    if missing:
        raise ValueError(ERR_MISSING_COLUMNS.format(missing=", ".join(missing)))
    if paired.empty:
        raise ValueError(ERR_EMPTY)


def groups(paired: pd.DataFrame) -> Iterator[tuple[str, str, pd.DataFrame]]:
    """Yield ``(system, condition, rows)`` sorted by system then condition."""
    for (system, condition), sub in paired.groupby(["system", "condition"], sort=True, observed=True):
        yield str(system), str(condition), sub


def variants_of(sub: pd.DataFrame, *, system: str, condition: str, reference: str) -> tuple[str, ...]:
    """Variants of one system x condition: the reference first, then the others sorted.

    Raises
    ------
    ValueError
        ``ERR_NO_REFERENCE`` when the reference has no rows.
    """
    present = sorted(str(v) for v in sub["variant"].unique())
    if reference not in present:
        raise ValueError(ERR_NO_REFERENCE.format(reference=reference, system=system,
                                                 condition=condition, present=", ".join(present)))
    return (reference, *[v for v in present if v != reference])


def _score_range(score_range: Mapping[str, tuple[float, float]], system: str) -> tuple[float, float]:
    if system not in score_range:
        raise ValueError(ERR_SCORE_RANGE_MISSING.format(system=system))
    got = score_range[system]
    try:
        lo, hi = (float(x) for x in got)
    except (TypeError, ValueError):
        raise ValueError(ERR_SCORE_RANGE_BAD.format(system=system, got=got)) from None
    if not (np.isfinite(lo) and np.isfinite(hi) and lo < hi):
        raise ValueError(ERR_SCORE_RANGE_BAD.format(system=system, got=got))
    return lo, hi


def cohorts(paired: pd.DataFrame, *, reference: str,
            score_range: Mapping[str, tuple[float, float]],
            score_resolution: Mapping[str, float | None] | None = None,
            ranking: str = PER_VARIANT, threshold: float | Mapping[str, float] | None = None) -> list[Cohort]:
    """Validate ``paired`` and pivot it into one :class:`Cohort` per system x condition.

    Parameters
    ----------
    paired : pandas.DataFrame
        The paired frame (one row per scored resume).
    reference : str
        The reference variant (``BASE``).
    score_range : Mapping[str, tuple of float]
        ``(lo, hi)`` of each system's score scale.
    score_resolution : Mapping[str, float or None], optional
        Each system's declared score grid (``systems[].score_resolution``); a system without one has
        its grid inferred from its scores (:func:`runtime.analysis.stats.infer_resolution`).
    ranking : {"per_variant", "swap_in"}
        ``per_variant`` (seed 000 §3.3): a variant's rank is its mid-rank in its own pool.
        ``swap_in``: a variant's rank is that of its resume swapped into the reference pool
        (:func:`swap_in_ranks`). The reference's rank is the same either way.
    threshold : float or Mapping[str, float], optional
        Decision threshold on every system's own score scale, or one per system id
        (``analysis.decision.threshold``):
        each cohort's ``selected`` marks the scores at or above it. None: a top-K rule.

    Returns
    -------
    list of Cohort
        Sorted by system, then condition.

    Raises
    ------
    ValueError
        ``ERR_MISSING_COLUMNS``, ``ERR_EMPTY``, ``ERR_NO_REFERENCE``, ``ERR_DUPLICATE``,
        ``ERR_UNPAIRED``, ``ERR_NAN_VALUE``, ``ERR_MATCH_VALUES``, ``ERR_SCORE_RANGE_MISSING``,
        ``ERR_SCORE_RANGE_BAD``.
    """
    check_columns(paired)
    if ranking not in (PER_VARIANT, SWAP_IN):
        raise ValueError(ERR_RANKING.format(got=ranking))
    out: list[Cohort] = []
    for system, condition, sub in groups(paired):
        lo, hi = _score_range(score_range, system)
        variants = variants_of(sub, system=system, condition=condition, reference=reference)
        sub = sub.assign(variant=sub["variant"].astype(str))
        dup = sub.duplicated(["job_id", "cv_id", "variant"], keep=False)
        if dup.any():
            first = sub.loc[dup, ["job_id", "cv_id", "variant"]].iloc[0].to_dict()
            raise ValueError(ERR_DUPLICATE.format(count=int(dup.sum()), system=system,
                                                  condition=condition, first=first))
        for column in ("score", "rank"):
            bad = int(sub[column].isna().sum())
            if bad:
                raise ValueError(ERR_NAN_VALUE.format(column=column, count=bad, system=system,
                                                      condition=condition))
        # every metric reads mid-ranks of the scores (methods version 3): a caller's tie-break (by
        # cv_id, say) never reaches a metric
        sub = sub.assign(rank=sub.groupby(["job_id", "variant"], sort=False)["score"]
                         .rank(method="average", ascending=False).astype(float))
        wide = sub.pivot(index=list(KEY), columns="variant", values=["score", "rank"])
        wide = wide.sort_index()
        rank_wide = wide["rank"]
        for variant in variants[1:]:
            hole = rank_wide[variant].isna() | rank_wide[reference].isna()
            if hole.any():
                raise ValueError(ERR_UNPAIRED.format(
                    variant=variant, system=system, condition=condition, reference=reference,
                    count=int(hole.sum()), first=dict(zip(KEY, rank_wide.index[hole.to_numpy()][0]))))
        job_ids = wide.index.get_level_values("job_id").to_numpy()
        cv_ids = wide.index.get_level_values("cv_id").to_numpy()
        job, uniques = pd.factorize(job_ids, sort=True)
        score = {v: (wide["score"][v].to_numpy(dtype=float) - lo) / (hi - lo) for v in variants}
        rank = {v: rank_wide[v].to_numpy(dtype=float) for v in variants}
        match, n_unlabelled = _match(sub, reference=reference, index=wide.index, job=job,
                                     n_jobs=len(uniques), system=system)
        tie = {v: tie_sizes(job, rank[v]) for v in variants}
        pool_rank, pool_tie = dict(rank), dict(tie)
        if ranking == SWAP_IN:
            raw = {v: wide["score"][v].to_numpy(dtype=float) for v in variants}
            for v in variants[1:]:
                rank[v], tie[v] = swap_in_ranks(raw[reference], raw[v], job, len(uniques))
        resolution = stats.score_grid((score_resolution or {}).get(system), sub["score"].to_numpy(float))
        t = threshold.get(system) if isinstance(threshold, Mapping) else threshold
        selected = None if t is None else {
            v: meets_threshold(wide["score"][v].to_numpy(dtype=float), t).astype(float) for v in variants}
        out.append(Cohort(system=system, condition=condition, reference=reference,
                          variants=variants, job_ids=job_ids, cv_ids=cv_ids, job=job,
                          n_jobs=len(uniques), score=score, rank=rank, match=match,
                          n_unlabelled_jobs=n_unlabelled, tie=tie,
                          resolution=resolution, step=resolution / (hi - lo), ranking=ranking,
                          pool_rank=pool_rank, pool_tie=pool_tie, threshold=t, selected=selected))
    return out


def _match(sub: pd.DataFrame, *, reference: str, index: pd.MultiIndex, job: np.ndarray,
           n_jobs: int, system: str) -> tuple[np.ndarray, int]:
    """``is_true_match`` of each base candidate, from the reference rows; whole jobs go unknown."""
    ref = sub[sub["variant"] == reference].set_index(list(KEY))["is_true_match"]
    y = pd.to_numeric(ref, errors="coerce").reindex(index).to_numpy(dtype=float)
    known = y[~np.isnan(y)]
    if known.size and not np.isin(known, (0.0, 1.0)).all():
        raise ValueError(ERR_MATCH_VALUES.format(system=system,
                                                 values=sorted(set(known.tolist()) - {0.0, 1.0})))
    unknown_in_job = np.bincount(job, weights=np.isnan(y), minlength=n_jobs) > 0
    y = np.where(unknown_in_job[job], np.nan, y)
    return y, int(unknown_in_job.sum())
