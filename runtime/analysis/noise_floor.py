"""Each system's noise floor from its negative controls (issue 38 §4): how far placebo variants of the
reference résumé (:mod:`runtime.generate.perturb`, or a vendor's re-scored placebo rows) move the
metrics, to read the demographic variants' deviations against. The complement of seed 003's positive
control (the planted-bias self-test).

Pure: frames in, frames out (no I/O, no report, no pipeline imports).

Deviation from no effect, per metric of seed 000 (§3.4-3.6):

- ``|value|`` for ``score_delta``, ``marc``, ``flip_rate``, ``equal_opportunity_gap``, ``equalized_odds_gap``
  (no effect = 0);
- ``|1 - value|`` for ``retention_rate`` and ``impact_ratio`` (no effect = 1);
- none for ``recall_at_k`` and ``ndcg_at_k``: they rate a shortlist, not a change.

The floor of a system × condition × metric is the largest placebo deviation over the controls the
system reads (``window_share`` > 0, or no window: NaN); a demographic row ``exceeds_floor`` when its
deviation is larger. Smaller is better for every deviation.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

#: No effect is 0: deviation ``|value|``.
ZERO_METRICS: tuple[str, ...] = ("score_delta", "marc", "flip_rate", "equal_opportunity_gap", "equalized_odds_gap")
#: No effect is 1: deviation ``|1 - value|``.
ONE_METRICS: tuple[str, ...] = ("retention_rate", "impact_ratio")
#: The seven change metrics that have a deviation (the floor's metrics).
CHANGE_METRICS: tuple[str, ...] = ZERO_METRICS + ONE_METRICS
#: Columns of ``noise_floor.csv``.
NOISE_FLOOR_COLUMNS: tuple[str, ...] = ("system", "condition", "metric", "variant", "deviation", "floor",
                                        "floor_control", "exceeds_floor")


def deviation(metric: str, value: float) -> float:
    """Distance of ``value`` from no effect for ``metric`` (NaN for a shortlist-quality metric, an
    unknown metric or a missing value).

    Parameters
    ----------
    metric : str
        A metric id of ``metrics.csv``.
    value : float
        Its value (``score_delta`` normalised to [0, 1] by the system's ``score_range``).

    Returns
    -------
    float
        ``|value|`` (:data:`ZERO_METRICS`), ``|1 - value|`` (:data:`ONE_METRICS`), else NaN; >= 0, smaller is better.
    """
    try:
        v = float(value)
    except (TypeError, ValueError):
        return math.nan
    if not math.isfinite(v):
        return math.nan
    if metric in ZERO_METRICS:
        return abs(v)
    if metric in ONE_METRICS:
        return abs(1.0 - v)
    return math.nan


def floors(controls: pd.DataFrame) -> pd.DataFrame:
    """The floor per system × condition × metric: the largest deviation over the controls the system reads.

    Parameters
    ----------
    controls : pandas.DataFrame
        ``negative_controls.csv``: ``system, condition, metric, variant, value`` and optionally
        ``window_share`` (share of placebo résumés that differ inside the system's token window; NaN or
        absent: the system has no window). A control with ``window_share == 0`` is not read and gives
        no floor.

    Returns
    -------
    pandas.DataFrame
        ``system, condition, metric, floor, floor_control`` (the control that sets it; the first in table
        order on a tie), for the :data:`CHANGE_METRICS` with a finite placebo deviation.
    """
    cols = ["system", "condition", "metric", "floor", "floor_control"]
    if controls is None or len(controls) == 0:
        return pd.DataFrame(columns=cols)
    c = controls.copy()
    c["deviation"] = [deviation(m, v) for m, v in zip(c["metric"], c["value"])]
    share = pd.to_numeric(c["window_share"], errors="coerce") if "window_share" in c else pd.Series(np.nan, c.index)
    c = c[(share.isna() | (share > 0)) & c["deviation"].notna()]
    rows = []
    for (system, condition, metric), g in c.groupby(["system", "condition", "metric"], sort=False):
        best = g.loc[g["deviation"].idxmax()]
        rows.append({"system": system, "condition": condition, "metric": metric, "floor": float(best["deviation"]),
                     "floor_control": str(best["variant"])})
    return pd.DataFrame(rows, columns=cols)


def noise_floor(metrics: pd.DataFrame, controls: pd.DataFrame, *, reference: str) -> pd.DataFrame:
    """``noise_floor.csv``: one row per demographic row of ``metrics.csv`` (a change metric, reference
    excluded) with its deviation, the floor of its system × condition × metric and whether it exceeds it.

    Parameters
    ----------
    metrics : pandas.DataFrame
        ``metrics.csv`` (``system, condition, metric, variant, value``).
    controls : pandas.DataFrame
        ``negative_controls.csv`` (see :func:`floors`).
    reference : str
        The reference variant (its rows have no deviation and are left out).

    Returns
    -------
    pandas.DataFrame
        :data:`NOISE_FLOOR_COLUMNS`, in the order of ``metrics``; ``floor`` NaN and ``floor_control`` empty
        where no read control gives one; ``exceeds_floor`` is ``deviation > floor`` (False where either is NaN).
    """
    fl = floors(controls).set_index(["system", "condition", "metric"])
    rows = []
    for r in metrics.itertuples():
        if r.metric not in CHANGE_METRICS or r.variant == reference:
            continue
        dev = deviation(r.metric, r.value)
        key = (r.system, r.condition, r.metric)
        floor = float(fl.loc[key, "floor"]) if key in fl.index else math.nan
        rows.append({"system": r.system, "condition": r.condition, "metric": r.metric, "variant": r.variant,
                     "deviation": dev, "floor": floor,
                     "floor_control": str(fl.loc[key, "floor_control"]) if key in fl.index else "",
                     "exceeds_floor": bool(dev > floor) if not (math.isnan(dev) or math.isnan(floor)) else False})
    return pd.DataFrame(rows, columns=list(NOISE_FLOOR_COLUMNS))


#: One failed line of the validity check ``noise_floor`` (issue 38 §5).
MSG_FLOOR_FAILED = ("noise_floor ({system}, {condition}): placebo {control} {metric} = {value:.4g} is {status} under "
                    "the research tier (PASS bound {bound:g}); a change that signals no protected characteristic "
                    "moves this system as far as a finding would")


def floor_check(controls: pd.DataFrame, thresholds, *, classify) -> list[str]:
    """The validity check ``noise_floor`` (issue 38 §5): one failed line per placebo row of a
    :data:`CHANGE_METRICS` metric that the system reads (``window_share`` > 0 or NaN) and whose value is not
    PASS under the research tier.

    Parameters
    ----------
    controls : pandas.DataFrame
        ``negative_controls.csv`` (``system, condition, metric, variant, value``, optionally ``window_share``).
    thresholds : mapping
        The run's thresholds: ``tier -> metric -> {"pass", "investigate"}``; the ``research`` tier is read.
    classify : callable
        ``classify(value, metric_id=..., bounds=...)`` -> PASS / INVESTIGATE / FAIL / N/A
        (:func:`runtime.analysis.classify.classify`; passed in so this module stays free of the catalogue).

    Returns
    -------
    list of str
        The failed lines, in table order; empty when every read placebo row is PASS (or N/A).
    """
    out = []
    research = thresholds["research"]
    for r in controls.itertuples():
        share = pd.to_numeric(getattr(r, "window_share", np.nan), errors="coerce")
        if r.metric not in CHANGE_METRICS or r.metric not in research or share == 0:
            continue
        try:
            value = float(r.value)
        except (TypeError, ValueError):
            continue
        status = classify(value, metric_id=r.metric, bounds=research[r.metric])
        if status in ("INVESTIGATE", "FAIL"):
            out.append(MSG_FLOOR_FAILED.format(system=r.system, condition=r.condition, control=r.variant,
                                               metric=r.metric, value=value, status=status,
                                               bound=research[r.metric]["pass"]))
    return out
