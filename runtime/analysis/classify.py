"""Status classification, Benjamini-Hochberg adjustment and the composite risk score.

seed 000 Table 3 (thresholds and directions), §3.4.4 (round before comparing), §3.5 (BH across
every computed p-value), §3.6 Eq. 6 (risk score and bands).
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np
import pandas as pd

from compiler import catalog
from runtime.analysis.multiplicity import benjamini_hochberg

ERR_THRESHOLD_MISSING = "thresholds lack tier {tier!r}, metric {metric!r} (need 'pass' and 'investigate')"

RISK_COLUMNS = ("system", "condition", "tier", "n_total", "n_fail", "n_investigate", "n_pass",
                "n_na", "risk_score", "band")

#: ``metrics.csv`` column ``depends_on``: the row a metric is a function of (empty: none).
DEPENDS_ON = {"impact_ratio": "retention_rate", "flip_rate": "retention_rate",
              "equalized_odds_gap": "equal_opportunity_gap"}
#: system/condition of the run-wide risk rows.
ALL = "ALL"


def round_significant(value: float, digits: int = catalog.CLASSIFY_SIGNIFICANT_DIGITS) -> float:
    """Round ``value`` to ``digits`` significant digits (seed 000 §3.4.4); nan/inf unchanged.

    ``0.05000000000000004`` becomes ``0.05``, so floating-point noise cannot move a value across a
    threshold.
    """
    if not math.isfinite(value) or value == 0:
        return value
    return float(f"{value:.{digits - 1}e}")


def _round_significant_array(x, digits: int) -> np.ndarray:
    """:func:`round_significant` elementwise (numpy; nan, inf and 0 unchanged)."""
    x = np.asarray(x, dtype=float)
    out = x.copy()
    finite = np.isfinite(x) & (x != 0)
    e = np.floor(np.log10(np.abs(x[finite])))
    scale = 10.0 ** (digits - 1 - e)
    out[finite] = np.round(x[finite] * scale) / scale
    return out


def meets_threshold(scores, threshold, digits: int = catalog.CLASSIFY_SIGNIFICANT_DIGITS):
    """``score >= threshold`` after rounding both to ``digits`` significant digits (seed 000 §3.4.4),
    elementwise: a score one float step below the threshold (``60 - 7e-15``) meets it, as it would
    have had it been computed another way (methods 10). ``threshold``: a number, or one per score (a
    per-system threshold mapped onto the rows). Returns a boolean array of the scores' shape; nan never
    meets."""
    return _round_significant_array(scores, digits) >= _round_significant_array(threshold, digits)


def classify(value: float, *, metric_id: str, bounds: Mapping[str, float]) -> str:
    """PASS / INVESTIGATE / FAIL of one value under one tier (seed 000 Table 3).

    Parameters
    ----------
    value : float
        The metric value at full precision; ``|value|`` is used for metrics the catalogue marks
        ``classify_abs`` (score_delta). It is rounded to
        ``catalog.CLASSIFY_SIGNIFICANT_DIGITS`` significant digits before comparing.
    metric_id : str
        Catalogue id; gives the direction.
    bounds : Mapping[str, float]
        ``{"pass": x, "investigate": y}``.

    Returns
    -------
    str
        Lower-is-better: PASS if ``v ≤ pass``, INVESTIGATE if ``v ≤ investigate``, else FAIL;
        higher-is-better: the same with ``≥``; ``selection_ratio`` (not in Table 3): PASS inside
        ``[pass, 1/pass]``, INVESTIGATE inside ``[investigate, 1/investigate]``, else FAIL.
        ``catalog.STATUS_NA`` for a nan value.
    """
    info = catalog.METRICS[metric_id]
    if value is None or not math.isfinite(value):
        return catalog.STATUS_NA
    v = round_significant(abs(value) if info.classify_abs else value)
    if metric_id == "selection_ratio":  # two-sided around 1 (issue 29 §2): [b, 1/b] for each bound b
        for status, bound in (("PASS", bounds["pass"]), ("INVESTIGATE", bounds["investigate"])):
            if bound > 0 and bound <= v <= round_significant(1.0 / bound):
                return status
        return "FAIL"
    lower = info.direction == "lower"
    for status, bound in (("PASS", bounds["pass"]), ("INVESTIGATE", bounds["investigate"])):
        if (v <= bound) if lower else (v >= bound):
            return status
    return "FAIL"


#: Status of a row whose 95% interval neither lies inside its PASS band nor misses it (issue 29 §1).
INCONCLUSIVE = "INCONCLUSIVE"


def pass_band(metric_id: str, bounds: Mapping[str, float]) -> tuple[float, float]:
    """The closed PASS band of a metric under one tier (issue 29 §1).

    Lower-is-better metrics: ``[0, pass]`` (``score_delta``, judged on its signed mean:
    ``[-pass, pass]``); higher-is-better: ``[pass, 1]``; ``selection_ratio``: ``[pass, 1/pass]``
    (a ratio far above 1 disfavours the reference as much as one below ``pass`` the variant).
    """
    info = catalog.METRICS.get(metric_id)
    bound = float(bounds["pass"])
    if metric_id == "selection_ratio":
        return bound, 1.0 / bound
    if info is not None and info.classify_abs:
        return -bound, bound
    if info is not None and info.direction == "higher":
        return bound, 1.0
    return 0.0, bound


def crossable_bounds(metric_id: str, bounds: Mapping[str, float]) -> tuple[float, ...]:
    """The bounds of :func:`pass_band` an interval can cross: both for ``score_delta`` (``±pass``) and
    ``selection_ratio`` (``pass``, ``1/pass``), else ``pass`` alone (the band's other end is the statistic's
    own limit: 0 for lower-is-better metrics, 1 for higher-is-better ones). Issue 39 §3 redraws a cell whose
    interval ends near one of them."""
    low, high = pass_band(metric_id, bounds)
    info = catalog.METRICS.get(metric_id)
    if metric_id == "selection_ratio" or (info is not None and info.classify_abs):
        return low, high
    return (low,) if info is not None and info.direction == "higher" else (high,)


def decide(low: float, high: float, band: tuple[float, float]) -> str:
    """PASS / FAIL / INCONCLUSIVE of a 95% interval against a PASS band (issue 29 §1).

    Parameters
    ----------
    low, high : float
        The interval of the statistic the row decides on (``low <= high``).
    band : tuple of float
        The closed PASS band ``(a, b)`` (:func:`pass_band`).

    Returns
    -------
    str
        PASS when ``a <= low`` and ``high <= b`` (the whole interval inside), FAIL when ``high < a`` or
        ``low > b`` (wholly outside), :data:`INCONCLUSIVE` otherwise; ``catalog.STATUS_NA`` when an
        endpoint is nan. Endpoints and bounds are rounded to ``catalog.CLASSIFY_SIGNIFICANT_DIGITS``
        significant digits first (seed 000 §3.4.4), so float noise cannot move a status.
    """
    if low is None or high is None or math.isnan(low) or math.isnan(high):
        return catalog.STATUS_NA
    lo, hi = round_significant(float(low)), round_significant(float(high))
    a, b = (round_significant(float(x)) for x in band)
    if a <= lo and hi <= b:
        return "PASS"
    if hi < a or lo > b:
        return "FAIL"
    return INCONCLUSIVE


def interval_status(low: float, high: float, *, metric_id: str, bounds: Mapping[str, float]) -> str:
    """Status of one row under one tier from its 95% interval (issue 29 §1): :func:`decide` of
    ``[low, high]`` against :func:`pass_band` of ``metric_id`` under ``bounds``.

    PASS only when the whole interval lies in the PASS band, FAIL only when it lies wholly outside,
    :data:`INCONCLUSIVE` when it straddles a bound; ``catalog.STATUS_NA`` when an endpoint is nan (no
    interval, no decision). Seed 000 Table 3 compares the point estimate instead (:func:`classify`,
    kept as ``status_seed000``).
    """
    return decide(low, high, pass_band(metric_id, bounds))


def tier_bounds(thresholds: Mapping[str, Mapping[str, Mapping[str, float]]], tier: str,
                metric_id: str) -> Mapping[str, float]:
    """``thresholds[tier][metric_id]``; raises ``ValueError`` (``ERR_THRESHOLD_MISSING``)."""
    try:
        bounds = thresholds[tier][metric_id]
        float(bounds["pass"]), float(bounds["investigate"])
    except (KeyError, TypeError, ValueError):
        raise ValueError(ERR_THRESHOLD_MISSING.format(tier=tier, metric=metric_id)) from None
    return bounds


def bh_adjust(p_values: np.ndarray, *, alpha: float) -> np.ndarray:
    """Benjamini-Hochberg adjusted p-values over every defined p-value (seed 000 §3.5).

    :func:`runtime.analysis.multiplicity.benjamini_hochberg` (statsmodels' ``fdr_bh`` over the non-nan
    entries; nan stays nan); ``alpha`` does not change an adjusted value and is kept for the callers.
    """
    return benjamini_hochberg(p_values)


def risk_band(score: float) -> str:
    """Band of a risk score (seed 000 §3.6): ``catalog.RISK_BANDS``; N/A for nan."""
    if not math.isfinite(score):
        return catalog.STATUS_NA
    score = round_significant(score)
    for bound, label in catalog.RISK_BANDS:
        if score >= bound:
            return label
    return catalog.RISK_BANDS[-1][1]


def _risk_row(statuses: pd.Series) -> dict[str, float | int | str]:
    counts = statuses.value_counts()
    n_fail = int(counts.get("FAIL", 0))
    n_inv = int(counts.get("INVESTIGATE", 0))
    n_pass = int(counts.get("PASS", 0))
    n_total = n_fail + n_inv + n_pass
    score = (3 * n_fail + n_inv) / (3 * n_total) if n_total else math.nan
    return {"n_total": n_total, "n_fail": n_fail, "n_investigate": n_inv, "n_pass": n_pass,
            "n_na": int(len(statuses) - n_total), "risk_score": score, "band": risk_band(score)}


def risk_table(metrics: pd.DataFrame) -> pd.DataFrame:
    """Composite risk score per system x condition x tier, plus run-wide rows (seed 000 §3.6, Eq. 6).

    ``RiskScore = (3·n_FAIL + n_INVESTIGATE) / (3·n_total)`` in [0, 1], lower is better, where
    ``n_total`` counts the (metric, variant) rows of seed 000's nine metrics (``MetricInfo.seed000``; not the
    selection ratio) with a PASS/INVESTIGATE/FAIL status (N/A rows are counted in ``n_na`` only); band ``high`` at ≥ 0.30, ``medium`` at ≥ 0.15, else ``low``.
    Eq. 6 counts seed 000's statuses on point estimates: the ``research`` tier reads column
    ``status_seed000``, ``operational`` reads ``status_seed000_operational`` (the interval statuses of
    issue 29 §1, ``status``, have no INVESTIGATE and are not what Eq. 6 was defined on).
    The run-wide rows have system and condition ``ALL``.

    Eq. 6 averages statuses over rows, so it dilutes (one category failing every metric among ten variants
    scores 0.10, "low"): it is reported for fidelity to seed 000, in the report's appendix, and is not a
    verdict; :mod:`runtime.analysis.headline` gives the verdict by protected category (issue 29 §5).
    """
    column = {"research": "status_seed000", "operational": "status_seed000_operational"}
    seed000 = [m for m, info in catalog.METRICS.items() if info.seed000]
    metrics = metrics[metrics["metric"].isin(seed000)]  # Eq. 6 is seed 000's nine metrics
    rows: list[dict[str, object]] = []
    for (system, condition), sub in metrics.groupby(["system", "condition"], sort=True):
        for tier in catalog.TIERS:
            rows.append({"system": system, "condition": condition, "tier": tier,
                         **_risk_row(sub[column[tier]])})
    for tier in catalog.TIERS:
        rows.append({"system": ALL, "condition": ALL, "tier": tier,
                     **_risk_row(metrics[column[tier]])})
    out = pd.DataFrame(rows, columns=list(RISK_COLUMNS))
    return out.astype({c: "int64" for c in RISK_COLUMNS if c.startswith("n_")})
