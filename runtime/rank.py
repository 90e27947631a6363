"""Ranking and the paired frame (seed 000 §3.3; DESIGN.md "Analysis contracts").

Ranks are computed within ``(system, condition, replicate, job_id, variant)``: score descending, rank
1 = best, and tied scores share their **mid-rank** (the mean of the positions they occupy; methods
version 3), so no metric depends on how candidates are labelled. Rows are sorted by ``cv_id`` within
a tie for display only. A variant's rank is therefore its position within its own otherwise-identical
cohort, never a cross-variant comparison.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

GROUP = ["system", "condition", "replicate", "job_id", "variant"]
PAIRED_COLUMNS = ["system", "condition", "replicate", "job_id", "cv_id", "variant", "score", "rank",
                  "is_true_match"]


def rank_within_groups(frame: pd.DataFrame) -> pd.DataFrame:
    """Return ``frame`` sorted by group then rank, with a ``rank`` column (1 = best, mid-ranks for ties).

    ``rank`` is int64 when no score ties within a group, else float64 (a tie of t candidates at
    positions a..a+t-1 gives each ``a + (t - 1) / 2``). The row order within a tie (by ``cv_id``) is
    for display only.

    Parameters
    ----------
    frame : pandas.DataFrame
        Columns ``system, condition, replicate, job_id, cv_id, variant, score`` (+ any others).
    """
    out = frame.sort_values(GROUP + ["score", "cv_id"], ascending=[True] * len(GROUP) + [False, True],
                            kind="mergesort").reset_index(drop=True)
    rank = out.groupby(GROUP, sort=False)["score"].rank(method="average", ascending=False)
    integral = bool(np.all(rank.to_numpy() == np.floor(rank.to_numpy())))
    out["rank"] = rank.astype("int64") if integral else rank.astype("float64")
    return out


def paired_frame(scores: pd.DataFrame, axes: dict[str, dict[str, str]], variant_levels: dict[str, dict[str, str]]) -> pd.DataFrame:
    """Build the ranked paired frame: DESIGN.md columns plus one column per axis (the variant's level).

    Parameters
    ----------
    scores : pandas.DataFrame
        ``system, condition, replicate, job_id, cv_id, variant, score, is_true_match``.
    axes : dict
        Axis names (keys) of the resolved spec.
    variant_levels : dict
        variant id -> {axis: level}.
    """
    ranked = rank_within_groups(scores)
    for axis in axes:
        ranked[axis] = ranked["variant"].map({v: lv[axis] for v, lv in variant_levels.items()})
    return ranked[PAIRED_COLUMNS + list(axes)]
