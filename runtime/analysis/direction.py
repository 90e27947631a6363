"""Who a metric row disadvantages: the sign of its statistic, and the side it names (issue 12).

Shared by :func:`runtime.analysis.analyse` (``metrics.csv`` column ``disadvantaged``) and
:mod:`runtime.analysis.by_job` (the per-job rows and their ``opposite sign`` flag).
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np
import pandas as pd

#: ``disadvantaged`` of a FAIL/INCONCLUSIVE row whose evidence establishes no side (issue 29 §3).
NO_DIRECTION = "direction not established"
REFERENCE_LOSES = "reference"


def names_a_side(side: object) -> bool:
    """Whether a ``disadvantaged`` value names a side (a level, or :data:`REFERENCE_LOSES`): a non-empty
    string other than :data:`NO_DIRECTION`. Missing values (``None``, NaN) name nobody."""
    return isinstance(side, str) and side.strip() not in ("", NO_DIRECTION)


def level_label(variant: str, reference: str, levels: Mapping[str, Mapping[str, str]] | None) -> str:
    """The level(s) a variant changes from the reference: ``Female-NA``, or ``sex_gender=Female-NA;
    age=older`` when it changes several axes; the variant id when the levels are unknown."""
    if not levels or variant not in levels or reference not in levels:
        return variant
    diff = {a: lv for a, lv in levels[variant].items() if levels[reference].get(a) != lv}
    if len(diff) == 1:
        return next(iter(diff.values()))
    return "; ".join(f"{a}={lv}" for a, lv in diff.items()) or variant


def row_leans(frame: pd.DataFrame, leans: np.ndarray, *, reference: str,
              by: tuple[str, ...] = ("system", "condition", "variant")) -> np.ndarray:
    """Who each row's statistic disfavours: +1 the variant, -1 the reference, 0 or nan untold.

    A row's lean is its own signed statistic (score shift, swap-in rank shift, flips out minus in,
    selection change, TPR/FPR difference); Recall@K and nDCG@K lean against the reference's value of
    the same ``by`` group with the variant's id replaced by the reference; where the statistic has no
    sign (per-variant ranking balances rank and selection changes by construction) the group's score
    shift decides, i.e. the side whose scores the system lowered. ``by`` names the columns of a
    cell (``job_id`` added for the per-job frame) and must include ``variant``.
    """
    lean = np.asarray(leans, dtype=float).copy()
    key = list(zip(*(frame[c] for c in by)))
    value = frame["value"].to_numpy(dtype=float)
    by_metric = {(k, m): v for k, m, v in zip(key, frame["metric"], value)}
    vi = by.index("variant")
    for i, (k, m) in enumerate(zip(key, frame["metric"])):
        if m in ("recall_at_k", "ndcg_at_k"):
            ref_key = (*k[:vi], reference, *k[vi + 1:])
            ref_value = by_metric.get((ref_key, m), math.nan)
            lean[i] = np.sign(ref_value - value[i]) if math.isfinite(ref_value) and math.isfinite(value[i]) else math.nan
    shift = {k: -np.sign(v) for (k, m), v in by_metric.items() if m == "score_delta" and math.isfinite(v)}
    out = np.zeros(len(key))
    for i, k in enumerate(key):
        out[i] = lean[i] if math.isfinite(lean[i]) and lean[i] != 0 else shift.get(k, 0.0)
    return out


def side_label(lean: float, variant: str, reference: str, levels: Mapping[str, Mapping[str, str]] | None) -> str:
    """The disadvantaged side of a lean: the variant's level, ``reference``, or no direction."""
    return level_label(variant, reference, levels) if lean > 0 else REFERENCE_LOSES if lean < 0 else NO_DIRECTION
