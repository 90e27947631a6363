"""Ranking and the paired frame (seed 000 §3.3; DESIGN.md "Analysis contracts").

Ranks are computed within ``(system, condition, replicate, job_id, variant)``: score descending,
ties broken by ``cv_id`` ascending, rank 1 = best. A variant's rank is therefore its position within
its own otherwise-identical cohort, never a cross-variant comparison.
"""

from __future__ import annotations

import pandas as pd

GROUP = ["system", "condition", "replicate", "job_id", "variant"]
PAIRED_COLUMNS = ["system", "condition", "replicate", "job_id", "cv_id", "variant", "score", "rank",
                  "is_true_match"]


def rank_within_groups(frame: pd.DataFrame) -> pd.DataFrame:
    """Return ``frame`` sorted by group then rank, with an integer ``rank`` column (1 = best).

    Parameters
    ----------
    frame : pandas.DataFrame
        Columns ``system, condition, replicate, job_id, cv_id, variant, score`` (+ any others).
    """
    out = frame.sort_values(GROUP + ["score", "cv_id"], ascending=[True] * len(GROUP) + [False, True],
                            kind="mergesort").reset_index(drop=True)
    out["rank"] = out.groupby(GROUP, sort=False).cumcount().astype("int64") + 1
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
