"""The results of a metric-suite run per system × condition: one unit per pair, each metric's rows by
variant with its chart, test and interval in words, and the tables built from the units (variants
triggering FAIL, qualification drift). Seed 000 §3.4, §3.5, §3.8; seed 002 Figures 2–10."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

import pandas as pd

from compiler.catalog import CLASSIFY_SIGNIFICANT_DIGITS, METRICS
from runtime.analysis import SELECTION_METRICS, coverage
from runtime.report.charts import metric_chart_svg
from runtime.report.formatting import (
    MISSING,
    fmt_ci,
    fmt_int,
    fmt_num,
    fmt_p,
    fmt_sig,
    fmt_text,
    is_missing,
    to_float,
)
from runtime.report.meta import ReportMeta
from runtime.report.sections.metric_suite.common import counts, metric_info, records, slug, status, unique
from runtime.report.sections.metric_suite.design import levels
from runtime.report.sections.metric_suite.texts import (
    CI_TEXT,
    FAMILY_TEXT,
    MCNEMAR_RULE,
    METRIC_SHORT,
    NOT_INFORMATIVE,
    TEST_TEXT,
    THRESHOLD_CI,
    THRESHOLD_LABELS,
)
from runtime.report.sections.metric_suite.thresholds import bounds, criteria, threshold_of


def _rate_count(rate_col: str, count_col: str) -> Callable[[Mapping[str, Any]], str]:
    def f(r: Mapping[str, Any]) -> str:
        rate, count = r.get(rate_col), r.get(count_col)
        if is_missing(rate) and is_missing(count):
            return MISSING
        if is_missing(count):
            return fmt_sig(rate)
        if is_missing(rate):
            return fmt_int(count)
        return f"{fmt_sig(rate)} ({fmt_int(count)})"

    return f


def _ratio(num_col: str, den_col: str, rate_col: str | None = None) -> Callable[[Mapping[str, Any]], str]:
    def f(r: Mapping[str, Any]) -> str:
        num, den = r.get(num_col), r.get(den_col)
        rate = r.get(rate_col) if rate_col else math.nan
        frac = f"{fmt_int(num)} / {fmt_int(den)}" if not (is_missing(num) or is_missing(den)) else ""
        if rate_col and not is_missing(rate):
            return f"{fmt_sig(rate)} ({frac})" if frac else fmt_sig(rate)
        return frac or MISSING

    return f


def _plain(col: str) -> Callable[[Mapping[str, Any]], str]:
    return lambda r: fmt_num(r.get(col))


def _decided_on(r: Mapping[str, Any]) -> str:
    """The interval a row's status decides on when it is not the row's own (issue 30 §2)."""
    on = r.get("decision_on")
    if not isinstance(on, str) or on in ("", "value"):
        return "its value"
    return f"{METRIC_SHORT.get(str(on), str(on)).lower()} {fmt_ci(r.get('decision_low'), r.get('decision_high'))}"


#: Shown on every row deciding on the selection ratio (issue 30 §2).
_DECIDED = ("Status decided on", _decided_on, ("decision_low",))

#: Diagnostic columns per metric: (header, formatter, columns that must be present for it to show).
DIAGNOSTICS: dict[str, list[tuple[str, Callable[[Mapping[str, Any]], str], tuple[str, ...]]]] = {
    "marc": [("MARC (rank units)", _plain("marc_raw"), ("marc_raw",))],
    "flip_rate": [
        ("Flip-in rate (out→in)", _rate_count("flip_in_rate", "n_out_in"), ("flip_in_rate", "n_out_in")),
        ("Flip-out rate (in→out)", _rate_count("flip_out_rate", "n_in_out"), ("flip_out_rate", "n_in_out")),
        _DECIDED,
    ],
    "retention_rate": [("Retained / slots", _ratio("retained", "slots"), ("retained", "slots")), _DECIDED],
    "impact_ratio": [("Retained / slots", _ratio("retained", "slots"), ("retained", "slots")), _DECIDED],
    "selection_ratio": [("Lost / gained / reference selected",
                         lambda r: " / ".join(fmt_num(r.get(c)) for c in ("n_in_out", "n_out_in", "slots")),
                         ("slots",))],
    "recall_at_k": [("Jobs used", _plain("jobs_used"), ("jobs_used",))],
    "ndcg_at_k": [("Jobs used", _plain("jobs_used"), ("jobs_used",))],
    "equal_opportunity_gap": [("TPR (TP / P)", _ratio("tp", "p", "tpr"), ("tpr", "tp", "p"))],
    "equalized_odds_gap": [
        ("TPR (TP / P)", _ratio("tp", "p", "tpr"), ("tpr", "tp", "p")),
        ("FPR (FP / negatives)", _ratio("fp", "negatives", "fpr"), ("fpr", "fp", "negatives")),
    ],
}


def _metric_rows(
    rows: list[dict[str, Any]], info: Mapping[str, Any], variant_order: list[str], reference: str,
    alpha: float,
) -> tuple[list[dict[str, Any]], list[str]]:
    by_variant = {str(r.get("variant")): r for r in rows}
    order = unique(list(by_variant), [reference, *variant_order])
    diags = [d for d in DIAGNOSTICS.get(info["id"], [])
             if any(not is_missing(r.get(c)) for r in rows for c in d[2])]
    signed = info["id"] == "score_delta"
    out = []
    for v in order:
        r = by_variant[v]
        p_adj = to_float(r.get("p_adj"))
        uninformative = NOT_INFORMATIVE in str(r.get("notes") or "")
        out.append({
            "variant": v,
            "is_reference": v == reference,
            # shown at the precision it was classified with, so a value beside a boundary reads right
            "value": fmt_sig(r.get("value"), CLASSIFY_SIGNIFICANT_DIGITS, signed=signed),
            "ci": fmt_ci(r.get("ci_low"), r.get("ci_high"), signed=signed),
            "p": "not informative" if uninformative else fmt_p(r.get("p_value")),
            "p_adj": fmt_p(p_adj),
            "significant": math.isfinite(p_adj) and math.isfinite(alpha) and p_adj < alpha,
            "status": status(r.get("status")),
            "status_operational": status(r.get("status_operational")),
            "n": fmt_int(r.get("n")),
            "diagnostics": [d[1](r) for d in diags],
            "notes": fmt_text(r.get("notes"), ""),
            "disadvantaged": fmt_text(r.get("disadvantaged"), "—"),
            "_raw": r,
        })
    return out, [d[0] for d in diags]


def _metric_entry(metric: str, mrecs: list[dict[str, Any]], *, meta: ReportMeta, system: str, condition: str,
                  variant_order: list[str], reference: str) -> dict[str, Any]:
    """One metric of a unit: its rows by variant, its chart, its test, interval and thresholds in words."""
    info = metric_info(metric)
    thr = threshold_of(meta.threshold, system)
    if thr is not None:
        info = {**info, "label": THRESHOLD_LABELS.get(metric, info["label"]),
                "ci": THRESHOLD_CI.get(metric, info["ci"])}
    rows, diag_headers = _metric_rows(mrecs, info, variant_order, reference, to_float(meta.alpha))
    ci_coverage = coverage.statement(metric, len(meta.jobs) or None)
    if ci_coverage and thr is not None and metric in SELECTION_METRICS:
        ci_coverage += " (measured under a top-K rule, not at a threshold)"
    ks = [r.get("k") for r in mrecs if not is_missing(r.get("k"))]
    k = fmt_int(ks[0]) if ks else fmt_text(meta.k.get(info["family"]))
    tests = unique(str(r.get("test")) for r in mrecs if isinstance(r.get("test"), str) and r.get("test"))
    if not tests and info["test"]:
        tests = [info["test"]]
    test_text = "; ".join(TEST_TEXT.get(t, t) for t in tests) or TEST_TEXT[""]
    if any(t.startswith("mcnemar_") for t in tests):
        test_text += f" ({MCNEMAR_RULE})"
    research = bounds(meta.thresholds, "research", metric)
    operational = bounds(meta.thresholds, "operational", metric)
    # the selection ratio, and the rows that decide on it (issue 30 §2)
    on_ratio = metric == "selection_ratio" or any(r.get("decision_on") == "selection_ratio" for r in mrecs)
    anchor = slug("m", system, condition, metric)
    short = info["short"].replace("@K", f"@{k}") if k != MISSING else info["short"]
    if thr is not None and metric == "recall_at_k":
        short = f"Recall at score ≥ {thr:g}"
    chart = metric_chart_svg(
        chart_id=anchor,
        title=f"{info['label']} by variant, system {system}, condition {condition}",
        ylabel=short,
        variants=[r["variant"] for r in rows],
        values=[to_float(r["_raw"].get("value")) for r in rows],
        ci_low=[to_float(r["_raw"].get("ci_low")) for r in rows],
        ci_high=[to_float(r["_raw"].get("ci_high")) for r in rows],
        statuses=[r["status"] for r in rows],
        reference=reference,
        pass_threshold=to_float(research.get("pass")),
        investigate_threshold=to_float(research.get("investigate")),
        direction=info["direction"],
        symmetric=info["classify_abs"],
        signed_scale=info["id"] == "score_delta",
    )
    for r in rows:
        del r["_raw"]
    return {
        **info,
        "anchor": anchor,
        "short": short,
        "family_label": FAMILY_TEXT.get(info["family"], info["family"]),
        "k": k,
        "cutoff": (f"selected = score ≥ {thr:g}"
                   if thr is not None and metric in SELECTION_METRICS else f"K = {k}"),
        "threshold": thr if metric in SELECTION_METRICS else None,
        "test_text": test_text,
        "has_test": bool(tests) or any(not is_missing(r.get("p_value")) for r in mrecs),
        "ci_text": CI_TEXT.get(info["ci"], info["ci"]),
        "ci_coverage": ci_coverage,
        "ci_approximate": ci_coverage.startswith("approximate"),
        "direction_text": ("1 is best: a ratio below pass disfavours the variant, above 1/pass the reference"
                           if metric == "selection_ratio"
                           else "lower is better" if info["direction"] == "lower" else "higher is better"),
        "research_text": criteria(info["direction"], research, info["classify_abs"],
                                  ratio_bounds=_ratio_bounds(meta, "research", metric, research) if on_ratio else None),
        "operational_text": criteria(info["direction"], operational, info["classify_abs"],
                                     ratio_bounds=_ratio_bounds(meta, "operational", metric, operational)
                                     if on_ratio else None),
        "tiers_differ": dict(research) != dict(operational),
        "chart_svg": chart,
        "rows": rows,
        "diag_headers": diag_headers,
        "counts": counts(r["status"] for r in rows),
    }


def _ratio_bounds(meta: ReportMeta, tier: str, metric: str, own: Mapping[str, float]) -> Mapping[str, float]:
    """The selection ratio's bounds of ``tier``: ``own`` (the same object) for the selection ratio itself."""
    return own if metric == "selection_ratio" else bounds(meta.thresholds, tier, "selection_ratio")


def units(metrics: pd.DataFrame, meta: ReportMeta, variant_order: list[str], reference: str) -> list[dict[str, Any]]:
    """One unit per system × condition (systems in spec order), each metric in catalogue order."""
    recs = records(metrics)
    systems = {s.id: s for s in meta.systems}
    out = []
    for system in unique([str(r.get("system")) for r in recs], list(systems)):
        srecs = [r for r in recs if str(r.get("system")) == system]
        for condition in unique([fmt_text(r.get("condition")) for r in srecs]):
            crecs = [r for r in srecs if fmt_text(r.get("condition")) == condition]
            entries = [_metric_entry(metric, [r for r in crecs if str(r.get("metric")) == metric], meta=meta,
                                     system=system, condition=condition, variant_order=variant_order,
                                     reference=reference)
                       for metric in unique([str(r.get("metric")) for r in crecs], METRICS)]
            sm = systems.get(system)
            out.append({
                "system": system,
                "condition": condition,
                "kind": fmt_text(sm.kind if sm else None, ""),
                "model": fmt_text(sm.model if sm else None, ""),
                "anchor": slug("u", system, condition),
                "metrics": entries,
            })
    return out


def fail_table(unit_list: list[dict[str, Any]], meta: ReportMeta, variant_order: list[str]) -> list[dict]:
    """Every variant with a research-tier FAIL, per unit, with the metrics that fail and its levels."""
    found: dict[tuple[str, str, str], list[dict[str, str]]] = {}
    for u in unit_list:
        for m in u["metrics"]:
            for r in m["rows"]:
                if r["status"] == "FAIL":
                    found.setdefault((u["system"], u["condition"], r["variant"]), []).append({
                        "label": m["label"], "anchor": m["anchor"], "value": r["value"], "ci": r["ci"],
                        "p_adj": r["p_adj"], "operational": r["status_operational"],
                        "disadvantaged": r["disadvantaged"],
                    })
    out = []
    for (system, condition, variant), failing in found.items():
        out.append({"system": system, "condition": condition, "variant": variant,
                    "levels": levels(meta, variant), "failing": failing})
    pos = {v: i for i, v in enumerate(variant_order)}
    unit_pos = {(u["system"], u["condition"]): i for i, u in enumerate(unit_list)}
    out.sort(key=lambda r: (unit_pos[(r["system"], r["condition"])], pos.get(r["variant"], 10**6), r["variant"]))
    return out


def drift_rows(drift: pd.DataFrame | None, unit_list: list[dict], variant_order: list[str]) -> list[dict[str, Any]]:
    """Qualification drift per system × condition × variant (seed 000 §3.1.2), in unit and variant order."""
    recs = records(drift)
    pos = {v: i for i, v in enumerate(variant_order)}
    unit_pos = {(u["system"], u["condition"]): i for i, u in enumerate(unit_list)}
    recs.sort(key=lambda r: (unit_pos.get((str(r.get("system")), fmt_text(r.get("condition"))), 10**6),
                             str(r.get("system")), fmt_text(r.get("condition")),
                             pos.get(str(r.get("variant")), 10**6), str(r.get("variant"))))
    return [{
        "system": fmt_text(r.get("system")),
        "condition": fmt_text(r.get("condition")),
        "variant": fmt_text(r.get("variant")),
        "n": fmt_int(r.get("n")),
        "mean": fmt_sig(r.get("mean_abs_delta")),
        "median": fmt_sig(r.get("median_abs_delta")),
        "p95": fmt_sig(r.get("p95_abs_delta")),
        "max": fmt_sig(r.get("max_abs_delta")),
    } for r in recs]
