"""The smallest effect of interest at the decision rule (issue 30 §1).

An auditor states what matters on the scale a hiring decision is taken on: "a selection ratio below
0.8". This module turns that margin into the score shift it implies for the system under audit,
exactly, from the order statistics of its reference scores:

- ``ratio(δ)``: the selection ratio of the reference scores lowered by δ ≥ 0, each lowered resume
  swapped into its job's reference pool (the other candidates keep their reference scores), at the
  decision rule in force: top-K per job (ties at the cutoff tie-averaged, as every top-K metric), or
  score ≥ t. Numerator: expected selected lowered resumes; denominator: expected selected reference
  resumes (``min(K, n_j)`` per job under top-K).
- the implied shift ``δ* = inf{δ ≥ 0 : ratio(δ) ≤ m}``.

Both are exact, without a grid. A lowered resume i leaves the selection once δ exceeds its
**breakpoint** ``b_i``: under top-K, its score minus the K-th highest score of the other candidates of
its job (the job's (K+1)-th when i is in the reference top-K; 0 for a resume that is in only through
a tie at the cutoff: any demotion drops it below its tie mates); under a threshold, ``s_i − t``. A
resume that is never selected has no breakpoint, and one in a job of at most K candidates none either
(it stays selected whatever δ). Between breakpoints the ratio is ``#{i : b_i > δ} / S`` (S the
selected reference resumes), so with ``c = ⌊m·S⌋`` the infimum is the (c + 1)-th largest breakpoint;
when fewer than c + 1 resumes can leave, no shift reaches the margin (``inf``).

Pooled, the same δ lowers every job (breakpoints and S summed over jobs); per job, each job on its own.
No I/O; arrays in, numbers out.
"""

from __future__ import annotations

import math

import numpy as np

#: Relative tolerance of ``m · S`` before the floor (``0.8 * 10`` must count as 8).
_FLOOR_TOL = 1e-9


def breakpoints(scores: np.ndarray, job: np.ndarray, *, k: int | None = None,
                threshold: float | None = None) -> tuple[np.ndarray, float]:
    """Each reference resume's breakpoint and the expected number of selected reference resumes.

    Parameters
    ----------
    scores : numpy.ndarray of float, shape (n,)
        Reference scores, any scale (higher = better).
    job : numpy.ndarray, shape (n,)
        Job of each resume (any hashable codes).
    k : int, optional
        Top-K rule: the shortlist size per job (≥ 1).
    threshold : float, optional
        Threshold rule: selected when ``score >= threshold``. Exactly one of ``k`` and ``threshold``.

    Returns
    -------
    breakpoints : numpy.ndarray of float, shape (n,)
        ``b_i ≥ 0`` (score units): the lowered resume i is selected for ``δ < b_i`` and not for
        ``δ > b_i``; ``nan`` for a resume never selected; ``inf`` for one that stays selected at any
        shift (a job of at most K candidates).
    selected : float
        S: selected reference resumes (top-K: Σ_j min(K, n_j); threshold: #{score ≥ t}).

    Raises
    ------
    ValueError
        Neither or both of ``k`` and ``threshold``; ``k < 1``; arrays of different lengths.
    """
    s = np.asarray(scores, dtype=float)
    j = np.asarray(job)
    if (k is None) == (threshold is None):
        raise ValueError("give exactly one decision rule: k (top-K) or threshold")
    if s.shape != j.shape:
        raise ValueError(f"scores and job differ in length: {s.shape} and {j.shape}")
    out = np.full(s.shape, np.nan)
    if threshold is not None:
        sel = s >= threshold
        out[sel] = s[sel] - threshold
        return out, float(sel.sum())
    if int(k) < 1:
        raise ValueError(f"k must be at least 1, got {k}")
    k = int(k)
    selected = 0.0
    for code in np.unique(j):
        idx = np.flatnonzero(j == code)
        selected += min(k, idx.size)
        if idx.size <= k:
            out[idx] = math.inf
            continue
        desc = np.sort(s[idx])[::-1]
        cut = desc[k - 1]                    # the job's K-th highest score
        for i in idx:
            if s[i] < cut:
                continue                     # outside the reference top-K
            # the K-th highest of the others is the job's (K+1)-th: i is at or above the cut
            out[i] = max(0.0, s[i] - desc[k])
    return out, selected


def ratio_at_shift(scores: np.ndarray, job: np.ndarray, shift: float, *, k: int | None = None,
                   threshold: float | None = None) -> float:
    """The selection ratio of the reference scores lowered by ``shift``, each swapped into its job's
    reference pool, at the rule (top-K, ties at the cutoff tie-averaged; or score ≥ t).

    Parameters
    ----------
    scores, job, k, threshold
        As :func:`breakpoints`.
    shift : float
        δ ≥ 0, score units.

    Returns
    -------
    float
        In [0, 1]; 1 at δ = 0; non-increasing in δ; nan when the rule selects no reference resume.

    Raises
    ------
    ValueError
        As :func:`breakpoints`; ``shift < 0``.
    """
    if not shift >= 0:
        raise ValueError(f"shift must be >= 0, got {shift}")
    s = np.asarray(scores, dtype=float)
    j = np.asarray(job)
    b, selected = breakpoints(s, j, k=k, threshold=threshold)
    if selected == 0:
        return math.nan
    if threshold is not None:
        return float(np.sum(s - shift >= threshold)) / selected
    kept = 0.0
    for code in np.unique(j):
        idx = np.flatnonzero(j == code)
        if idx.size <= k:
            kept += idx.size
            continue
        for i in idx:
            if np.isnan(b[i]):
                continue
            others = s[idx[idx != i]]
            x = s[i] - shift
            above = int(np.sum(others > x))
            tied = int(np.sum(others == x))
            # tie-averaged membership of x among the others (seed 000 §3.4; cell.top_share)
            kept += float(np.clip((k - above) / (tied + 1), 0.0, 1.0))
    return kept / selected


def implied_shift(scores: np.ndarray, job: np.ndarray, margin: float, *, k: int | None = None,
                  threshold: float | None = None) -> float:
    """δ* = inf{δ ≥ 0 : ratio(δ) ≤ margin}, the score shift the SESOI ``{selection_ratio: margin}``
    implies (issue 30 §1), exact from the breakpoints.

    Parameters
    ----------
    scores, job, k, threshold
        As :func:`breakpoints` (pass one job's arrays for a per-job shift).
    margin : float
        m, 0 < m < 1.

    Returns
    -------
    float
        δ* ≥ 0 in score units; ``inf`` when no shift brings the ratio to m (too few resumes can leave
        the selection); nan when the rule selects no reference resume.

    Raises
    ------
    ValueError
        As :func:`breakpoints`; margin outside (0, 1).
    """
    if not 0 < margin < 1:
        raise ValueError(f"margin must lie in (0, 1), got {margin}")
    b, selected = breakpoints(scores, job, k=k, threshold=threshold)
    if selected == 0:
        return math.nan
    allowed = math.floor(margin * selected * (1 + _FLOOR_TOL))   # c: resumes that may stay selected
    finite = np.sort(b[~np.isnan(b)])[::-1]                     # inf first: never leave
    if allowed + 1 > finite.size or not math.isfinite(finite[allowed]):
        return math.inf
    return float(finite[allowed])
