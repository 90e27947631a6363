"""The report's first section: one status per system x protected category (issue 29 §5).

Reads ``headline.csv`` (:func:`runtime.analysis.headline.headline_frame`) and formats it for
``templates/sections/metric_suite_headline.html.j2``: per system its verdict, then each category's status
from the 95% intervals, the deciding metric with its value and interval, and who loses; Recall@K and
nDCG@K rate the ranking on their own line.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import pandas as pd

from runtime.analysis import NOTE_REDRAWN
from runtime.analysis.direction import NO_DIRECTION, names_a_side
from runtime.analysis.headline import ALL, CATEGORY_METRICS, RANKING, SEP
from runtime.report.formatting import MISSING, fmt_ci, fmt_sig, fmt_text, with_points, with_points_ci
from runtime.report.sections.metric_suite.common import status
from runtime.report.sections.metric_suite.texts import METRIC_SHORT


def _metrics_text(deciding: Any, status_: str = "") -> str:
    """The deciding metrics in words: short names, at most three then "and N more"; a PASS category's
    rows are all inside their bands, and the first (shown with its value) is named as such."""
    text = fmt_text(deciding, "")
    for metric_id, short in METRIC_SHORT.items():
        text = text.replace(metric_id, short)
    parts = [p for p in text.split("; ") if p]
    if status_ == "PASS" and parts:
        return f"all inside their PASS bands ({parts[0]} shown)"
    if len(parts) > 3:
        return "; ".join(parts[:3]) + f"; and {len(parts) - 3} more"
    return "; ".join(parts)


def other_sides(metrics: pd.DataFrame | None, system: str, variants: Any, deciding: Any) -> dict[str, list[str]]:
    """The sides a category's metrics that do not decide its status establish (``metrics.csv`` rows of
    ``system`` and the category's variants, among :data:`~runtime.analysis.headline.CATEGORY_METRICS`, whose
    ``disadvantaged`` names a side: their test rejected after adjustment, issue 29 §3), each with its metrics'
    short names in catalogue order. A score shift inside its PASS band can be significant while the deciding
    selection ratio establishes no direction: the reader is told, not left with "direction not established"."""
    if metrics is None or len(metrics) == 0 or "disadvantaged" not in metrics.columns:
        return {}
    skip = {d.split(" ")[0] for d in fmt_text(deciding, "").split("; ") if d}
    wanted = set(fmt_text(variants, "").split("; "))
    rows = metrics[(metrics["system"].astype(str) == str(system)) & metrics["variant"].astype(str).isin(wanted)
                   & metrics["metric"].isin([m for m in CATEGORY_METRICS if m not in skip])]
    sides: dict[str, list[str]] = {}
    for metric in CATEGORY_METRICS:
        for side in rows.loc[rows["metric"] == metric, "disadvantaged"]:
            if names_a_side(side):
                names = sides.setdefault(str(side), [])
                if METRIC_SHORT.get(metric, metric) not in names:
                    names.append(METRIC_SHORT.get(metric, metric))
    return sides


def _who(side: str, category: Any, label: Callable[[Any], str]) -> str:
    if side == "reference":
        return "the reference"
    return "this category" if side == str(category) else label(side)


#: "Who loses" when the reference does: the category is favoured (a bare "reference" read as a category name).
REFERENCE_LOSES = "the reference (this category gains)"


def _side(own: Any, label: Callable[[Any], str], reference: str = REFERENCE_LOSES) -> str:
    """The side a row's ``disadvantaged`` names, as shown: ``reference`` spelled out, a level by its label."""
    return reference if str(own) == "reference" else label(own)


def _who_loses(r: Mapping[str, Any], others: Mapping[str, list[str]], label: Callable[[Any], str]) -> str:
    """A category's "Who loses" cell: the side its deciding rows establish ("the reference (this category
    gains)" when it is the reference), then the sides its other rows establish, each with the metrics that
    establish it."""
    own = r["disadvantaged"]
    named = names_a_side(own)
    extra = [f"{_who(side, r['category'], label)} on {', '.join(names)}" for side, names in others.items()
             if not (named and side in str(own).split(SEP))]
    if not extra:
        return _side(own, label)
    also = "; ".join(extra) + " (a test rejects after adjustment)"
    if named:
        return f"{_side(own, label)}; also {also}"
    if str(r["status"]) == "PASS":
        return f"{also}, inside the PASS band"
    return f"{also}; on the deciding metric: {NO_DIRECTION}"


def _value_ci(r: Mapping[str, Any], score_range: Any) -> dict[str, str]:
    """A category's value and interval as shown; a score delta also on the system's own scale (issue 31 §3)."""
    delta = str(r["deciding_metrics"]).startswith("score_delta")
    value, ci = fmt_sig(r["value"], signed=delta), fmt_ci(r["ci_low"], r["ci_high"], signed=delta)
    if delta:
        value = with_points(value, r["value"], score_range)
        ci = with_points_ci(ci, r["ci_low"], r["ci_high"], score_range)
    return {"value": value, "ci": ci}


#: How ``metrics.csv``'s ``notes`` start on a row whose bootstrap was redrawn (issue 39 §3,
#: :data:`runtime.analysis.NOTE_REDRAWN`).
REDRAWN_PREFIX = NOTE_REDRAWN.split("{b}", 1)[0]


def redrawn_rows(metrics: pd.DataFrame | None, system: str) -> dict[str, Any]:
    """The rows of ``system`` whose interval was redrawn with more bootstrap resamples because an end lay within
    2 Monte Carlo SEs of a PASS-band bound (issue 39 §3): ``{"rows": "V06 Score delta; V06 MARC / K", "resamples":
    "2,000"}``, or empty when none was. Page 1 says so: such a status was close to turning on resampling noise."""
    if metrics is None or len(metrics) == 0 or "notes" not in metrics.columns:
        return {}
    sub = metrics[(metrics["system"].astype(str) == str(system))
                  & metrics["notes"].fillna("").astype(str).str.contains(REDRAWN_PREFIX, regex=False)]
    if sub.empty:
        return {}
    names = [f"{r.variant} {METRIC_SHORT.get(r.metric, r.metric)}" + ("" if str(getattr(r, "condition", "default"))
             in ("default", "", "nan") else f" ({r.condition})") for r in sub.itertuples()]
    counts = sorted({n.split(REDRAWN_PREFIX, 1)[1].split(" ", 1)[0]
                     for note in sub["notes"].astype(str) for n in note.split("; ") if n.startswith(REDRAWN_PREFIX)})
    return {"rows": "; ".join(dict.fromkeys(names)), "resamples": " or ".join(
        f"{int(c):,}" if c.isdigit() else c for c in counts)}


def headline_context(headline: pd.DataFrame | None,
                     detectable: pd.DataFrame | None = None, *,
                     label: Callable[[Any], str] = fmt_text,
                     score_ranges: Mapping[str, Any] | None = None,
                     metrics: pd.DataFrame | None = None) -> dict[str, Any]:
    """Plain data of the headline section: ``systems``, one dict per system with ``system``, ``verdict``
    (status), ``failing`` (the categories at the verdict's status), ``disadvantaged``, ``categories`` (one
    dict per category: ``category, variants, status, metrics, value, ci, disadvantaged``) and ``ranking``
    (the ranking-quality row, or None).

    ``detectable``: :func:`runtime.analysis.power.smallest_detectable_ratio` (``power.csv``, issue 30 §3;
    columns ``system, category`` = a variant id, ``mde_ratio``, ``level``): each category's ``detectable``
    is the lowest over its variants, the selection ratio the audit's score test detects with the declared
    power at its family level (a ratio between it and 1 may go unseen); empty without power.

    ``metrics``: ``metrics.csv``; when given, a category's ``disadvantaged`` also names the sides its
    non-deciding rows establish (:func:`other_sides`), the system's ``also`` lists the categories where
    only those rows establish one, and its ``redrawn`` names the rows whose bootstrap was redrawn
    (:func:`redrawn_rows`)."""
    systems: list[dict[str, Any]] = []
    if headline is None or len(headline) == 0:
        return {"systems": systems, "power": False}
    mde = {} if detectable is None or len(detectable) == 0 else {
        (str(r.system), str(r.category)): float(r.mde_ratio) for r in detectable.itertuples()}

    def smallest(system: str, variants: Any) -> str:
        got = [mde[(system, v)] for v in fmt_text(variants, "").split("; ") if (system, v) in mde]
        got = [x for x in got if x == x]
        return f"≤ {fmt_sig(min(got), 3)}" if got else MISSING
    for system, sub in headline.groupby("system", sort=False):
        rows = sub.to_dict("records")
        verdict = next((r for r in rows if r["category"] == ALL), None)
        ranking = next((r for r in rows if r["category"] == RANKING), None)
        cats, also = [], []
        for r in rows:
            if r["category"] in (ALL, RANKING):
                continue
            others = other_sides(metrics, str(system), r["variants"], r["deciding_metrics"])
            if others and not names_a_side(r["disadvantaged"]):
                v = fmt_text(r["variants"], "")
                also.extend(f"{v} loses on {', '.join(n)}" if side == str(r["category"])
                            else f"{v}: {_who(side, r['category'], label)} loses on {', '.join(n)}"
                            for side, n in others.items())
            cats.append({
                "category": label(r["category"]), "variants": fmt_text(r["variants"], ""),
                "status": status(r["status"]), "metrics": _metrics_text(r["deciding_metrics"], status(r["status"])) or MISSING,
                **_value_ci(r, (score_ranges or {}).get(str(system))),
                "disadvantaged": _who_loses(r, others, label),
                "detectable": smallest(str(system), r["variants"]),
            })
        systems.append({
            "system": str(system),
            "verdict": status(verdict["status"]) if verdict else "N/A",
            "failing": (f"{len([c for c in rows if c['category'] not in (ALL, RANKING) and c['status'] == verdict['status']])}"
                        f" of {len(cats)} categories {verdict['status']}")
                       if verdict and fmt_text(verdict["deciding_metrics"], "") else "",
            "disadvantaged": _side(verdict["disadvantaged"], label, "the reference (the flagged categories gain)")
                             if verdict and fmt_text(verdict["disadvantaged"], "") else "",
            "also": "; ".join(also),
            "redrawn": redrawn_rows(metrics, str(system)),
            "categories": cats,
            "ranking": None if ranking is None else {
                "status": status(ranking["status"]),
                "metrics": _metrics_text(ranking["deciding_metrics"], status(ranking["status"])) or MISSING,
                "value": fmt_sig(ranking["value"]), "ci": fmt_ci(ranking["ci_low"], ranking["ci_high"])},
        })
    return {"systems": systems, "power": bool(mde)}
