"""The pre-registered thresholds and the decision threshold, looked up and put in words (seed 000 Table 3,
§3.7; issue 15), for the metric suite's sections and the effects section (:func:`sesoi_and_thresholds`).

``thresholds`` is always the run's own, as resolved (:attr:`runtime.run.settings.RunSettings.thresholds`:
every default of seed 000 Table 3 made explicit at compile time, the spec's bounds over them); nothing
here merges defaults again.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd
from markupsafe import escape

from runtime.report.formatting import MISSING, fmt_sig, fmt_threshold, to_float
from runtime.report.sections.metric_suite.common import metric_info, truthy
from runtime.report.sections.metric_suite.texts import (
    THRESHOLD_BASIS,
    THRESHOLD_BASIS_AT_THRESHOLD,
    THRESHOLD_LABELS,
)

#: Metrics of the counterfactual and group families that read the ranking (a cut-off or rank
#: positions) rather than the mean score.
RANK_METRICS = ("marc", "flip_rate", "retention_rate", "impact_ratio")


def bounds(thresholds: Mapping[str, Any], tier: str, metric: str) -> Mapping[str, float]:
    """``{"pass": x, "investigate": y}`` of ``metric`` in ``tier``; empty when the run has none."""
    return (thresholds.get(tier) or {}).get(metric) or {}


def criteria(direction: str, tier_bounds: Mapping[str, float] | None, classify_abs: bool, *,
             ratio_bounds: Mapping[str, float] | None = None) -> str:
    """A tier's rule in words (issue 29 §1): "PASS if the 95% interval lies in [-0.02, 0.02]; FAIL if it lies
    wholly outside; otherwise INCONCLUSIVE (seed 000 Table 3 on the value: INVESTIGATE if |value| ≤ 0.05)".

    ``ratio_bounds``: the row decides on the selection ratio (issue 30 §2; the selection ratio itself, or the
    flip rate, retention and impact ratio under swap-in or a threshold): its band ``[pass, 1/pass]`` decides,
    and seed 000's bound on the value is quoted for what it was."""
    if not tier_bounds:
        return MISSING
    cmp = "≤" if direction == "lower" else "≥"
    x = "|value|" if classify_abs else "value"
    p = fmt_threshold(tier_bounds.get("pass"))
    seed000 = (f"seed 000 Table 3 on the value: PASS if {x} {cmp} {p}, "
               f"INVESTIGATE if {x} {cmp} {fmt_threshold(tier_bounds.get('investigate'))}")
    if ratio_bounds:
        m = to_float(ratio_bounds.get("pass"))
        band = f"[{fmt_threshold(m)}, {fmt_sig(1 / m, 3)}]" if m and m > 0 else MISSING
        if ratio_bounds is tier_bounds:  # the selection ratio itself: not in Table 3, two-sided on the value too
            i = to_float(tier_bounds.get("investigate"))
            wide = f"[{fmt_threshold(i)}, {fmt_sig(1 / i, 3)}]" if i and i > 0 else MISSING
            seed000 = f"on the point estimate: PASS inside {band}, INVESTIGATE inside {wide}"
        return (f"PASS if the 95% interval of the selection ratio lies in {band}; FAIL if it lies wholly outside; "
                f"otherwise INCONCLUSIVE ({seed000})")
    band = f"[−{p}, {p}]" if classify_abs else f"[0, {p}]" if direction == "lower" else f"[{p}, 1]"
    return (f"PASS if the 95% interval lies in {band}; FAIL if it lies wholly outside; otherwise INCONCLUSIVE "
            f"({seed000})")


def threshold_of(decision_threshold: Any, system: str | None = None) -> float | None:
    """The decision threshold of ``analysis.decision`` (issue 15; :attr:`ReportMeta.threshold`) for
    ``system`` (a per-system mapping is read at its entry), or None under a top-K rule."""
    t = decision_threshold
    if isinstance(t, Mapping):
        return float(t[system]) if system in t else None
    return None if t is None else float(t)


def threshold_text(decision_threshold: Any) -> str | None:
    """The decision threshold in words ("70", or "vendor-a: 70, vendor-b: 0.7"); None under top-K."""
    t = decision_threshold
    if isinstance(t, Mapping):
        return ", ".join(f"{s}: {float(v):g}" for s, v in t.items())
    return None if t is None else f"{float(t):g}"


def threshold_table(thresholds: Mapping[str, Any], metric_ids: list[str],
                    decision_threshold: str | None = None) -> list[dict[str, Any]]:
    """The appendix's table: every metric's bounds in both tiers, its direction and statistical basis."""
    rows = []
    for metric in metric_ids:
        info = metric_info(metric)
        if decision_threshold is not None:
            info["label"] = THRESHOLD_LABELS.get(metric, info["label"])
        res = bounds(thresholds, "research", metric)
        ops = bounds(thresholds, "operational", metric)
        cmp = "≤" if info["direction"] == "lower" else "≥"
        x = "|Δ| " if info["classify_abs"] else ""
        def show(b: Mapping[str, Any], key: str) -> str:
            if metric == "selection_ratio":  # two-sided around 1 (issue 29 §2)
                v = to_float(b.get(key))
                return f"within [{fmt_threshold(v)}, {fmt_sig(1 / v, 3)}]" if v > 0 else MISSING
            return f"{x}{cmp} {fmt_threshold(b.get(key))}"

        rows.append({
            "label": info["label"],
            "direction": ("1 is best (two-sided)" if metric == "selection_ratio"
                          else "0 is best (two-sided: |Δ| lower is better)" if info["classify_abs"]
                          else "lower is better" if info["direction"] == "lower" else "higher is better"),
            "research_pass": show(res, "pass"),
            "research_investigate": show(res, "investigate"),
            "operational_pass": show(ops, "pass"),
            "operational_investigate": show(ops, "investigate"),
            "differs_pass": res.get("pass") != ops.get("pass"),
            "differs_investigate": res.get("investigate") != ops.get("investigate"),
            "basis": (THRESHOLD_BASIS_AT_THRESHOLD.get(metric) if decision_threshold is not None else None)
            or THRESHOLD_BASIS.get(metric, ""),
        })
    return rows


def sesoi_and_thresholds(contrasts: pd.DataFrame | None, metrics: pd.DataFrame | None, *,
                         thresholds: Mapping[str, Any], score_range: Mapping[str, tuple[float, float]],
                         sesoi: float) -> list[str]:
    """Sentences that relate the SESOI to the pre-registered thresholds, per system (issue 13).

    The SESOI (seed 003 §3.7, |d| = ``sesoi``) is a standardised effect; its size on the score scale
    is ``sesoi · s_p`` (the ``sesoi_score`` column). The research-tier ``score_delta`` threshold
    (seed 000 Table 3) is on the normalised score scale, so the SESOI is divided by the width of the
    system's ``score_range`` before the two are compared. A second sentence names the rank-based
    results (MARC, flip rate, retention, impact ratio) that are INCONCLUSIVE or FAIL for a system whose
    variant contrasts are equivalent: equivalence on the mean score says nothing about candidates
    crossing the selection cut-off.

    Parameters
    ----------
    contrasts : DataFrame or None
        ``EffectsResult.contrasts`` (columns system, kind, sesoi_score, equivalent).
    metrics : DataFrame or None
        The metric suite's table (columns metric, system, variant, reference, status).
    thresholds : mapping
        The run's ``{tier: {metric: {"pass": x, "investigate": y}}}`` (:attr:`RunSettings.thresholds`).
    score_range : mapping
        System id -> (low, high) of its scores.
    sesoi : float
        The SESOI on the d scale.

    Returns
    -------
    list of str
        Plain-language sentences; empty when there are no contrasts.
    """
    if contrasts is None or not len(contrasts) or "sesoi_score" not in contrasts:
        return []
    out = []
    score_gap = bounds(thresholds, "research", "score_delta")
    t_pass, t_inv = to_float(score_gap.get("pass")), to_float(score_gap.get("investigate"))
    for system, sub in contrasts.groupby("system", sort=True):
        lo, hi = score_range.get(system, (0.0, 1.0))
        scale = pd.to_numeric(sub["sesoi_score"], errors="coerce").dropna()
        if scale.empty or not hi > lo:
            continue
        norm = float(scale.median()) / (hi - lo)
        code = f"<code>{escape(system)}</code>"
        who = f"For {code}" if contrasts["system"].nunique() > 1 else "Here"
        if t_pass == t_pass and norm > t_pass:
            out.append(f"{who} the SESOI of ±{sesoi:g} SD is ±{fmt_sig(norm, 3)} on the normalised score scale, "
                       f"wider than the pre-registered score-gap threshold (|Δ| ≤ {t_pass:g} to PASS, "
                       f"its 95% interval inside). A variant can be equivalent within the SESOI in this "
                       f"section and still be INCONCLUSIVE or FAIL on the score gap. The pre-registered "
                       f"thresholds decide the audit's result; the SESOI only decides whether this section "
                       f"calls an effect meaningful or negligible.")
        elif t_pass == t_pass:
            out.append(f"{who} the SESOI of ±{sesoi:g} SD is ±{fmt_sig(norm, 3)} on the normalised score scale, "
                       f"no wider than the pre-registered score-gap threshold (|Δ| ≤ {t_pass:g} to PASS): a "
                       f"contrast can be meaningful in this section and still PASS the score gap. The "
                       f"pre-registered thresholds decide the audit's result.")
        if metrics is None or not len(metrics) or not (sub["kind"] == "variant").any():
            continue
        if not sub.loc[sub["kind"] == "variant", "equivalent"].map(truthy).any():
            continue
        m = metrics[(metrics["system"] == system) & metrics["metric"].isin(RANK_METRICS)
                    & metrics["status"].isin(["FAIL", "INCONCLUSIVE"])]
        if len(m):
            counts = ", ".join(f"{int((m['metric'] == k).sum())} {k.replace('_', ' ')}" for k in RANK_METRICS
                               if (m["metric"] == k).any())
            out.append(f"Equivalence in this section concerns the mean score. It does not cover rankings: a shift "
                       f"too small to matter on average can still move candidates across the selection cut-off. "
                       f"{len(m)} rank-based result{'s are' if len(m) > 1 else ' is'} INCONCLUSIVE or FAIL for "
                       f"{code} in the counterfactual and group results ({counts}).")
    return out
