"""The results of a metric-suite run per system × condition: one unit per pair, each metric's rows by
variant with its chart, test and interval in words, and the tables built from the units (variants with
FAIL, INCONCLUSIVE or INVESTIGATE findings, qualification drift). Seed 000 §3.4, §3.5, §3.8; seed 002
Figures 2–10; issue 31 §3 (a status whose interval crosses a bound says so; score deltas in points)."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

import pandas as pd

from compiler.catalog import CLASSIFY_SIGNIFICANT_DIGITS, METRICS
from runtime.analysis import SELECTION_METRICS, coverage
from runtime.analysis.classify import crossable_bounds, pass_band, round_significant
from runtime.report.charts import metric_chart_svg
from runtime.report.formatting import (
    MISSING,
    fmt_bound,
    fmt_ci,
    fmt_int,
    fmt_num,
    fmt_p,
    with_points,
    with_points_ci,
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
    NOT_TESTED,
    TEST_TEXT,
    THRESHOLD_CI,
    THRESHOLD_LABELS,
    readable_note,
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


def crossed(low: Any, high: Any, bounds_: list[float]) -> list[float]:
    """The bounds that lie strictly inside the interval ``[low, high]`` (issue 31 §3).

    Endpoints and bounds are rounded to ``CLASSIFY_SIGNIFICANT_DIGITS`` significant digits first, as
    :func:`runtime.analysis.classify.decide` rounds them, so an endpoint equal to a bound (inside a
    closed band) does not cross it. Empty when an endpoint is missing.

    >>> crossed(0.0098, 0.0222, [-0.05, -0.02, 0.02, 0.05])
    [0.02]
    """
    lo, hi = to_float(low), to_float(high)
    if not (math.isfinite(lo) and math.isfinite(hi)):
        return []
    lo, hi = round_significant(lo), round_significant(hi)
    return [b for b in bounds_ if math.isfinite(b) and lo < round_significant(b) < hi]


def with_crossing(st: str, bounds_crossed: list[float], what: str = "interval") -> str:
    """A status cell that says which bounds a 95% interval crosses: "PASS (interval crosses 0.02)";
    ``what`` names the interval when it is not the row's own decision interval ("the selection ratio's
    interval", "point estimate; its interval")."""
    if not bounds_crossed or st == "N/A":
        return st
    return f"{st} ({what} crosses {' and '.join(fmt_bound(b) for b in bounds_crossed)})"


def decided_on_text(r: Mapping[str, Any], metric: str) -> str:
    """Which interval a row's status was decided on, for :func:`with_crossing`: "interval" for its own,
    "the selection ratio's interval" for a row decided on another statistic (issue 30 §2: flip rate,
    retention and the shortlist retention ratio are decided on the selection ratio at the same cutoff)."""
    on = r.get("decision_on")
    if not isinstance(on, str) or on in ("", "value", metric):
        return "interval"
    info = METRICS.get(on)
    name = info.label.split(" (")[0].lower() if info is not None else on.replace("_", " ")
    return f"the {name}'s interval"


def _tier_bounds(metric: str, tier_bounds: Mapping[str, float]) -> list[float]:
    """Seed 000 Table 3's bounds of one tier that a row's interval can cross: those of the PASS band at the
    tier's pass bound and at its investigate bound (:func:`runtime.analysis.classify.crossable_bounds`: both
    signs for ``score_delta``'s |Δ|, ``pass`` and ``1/pass`` for the selection ratio, else the bound itself)."""
    b = [to_float(tier_bounds.get(k)) for k in ("pass", "investigate")]
    return sorted({x for v in b if math.isfinite(v) for x in crossable_bounds(metric, {"pass": v})})


def _band_bounds(r: Mapping[str, Any], metric: str, tier: str, thresholds: Mapping[str, Any]) -> list[float]:
    """The ends of the PASS band a row's interval status was decided on (issue 29 §1, issue 30 §2): the
    research tier's is the row's ``pass_low`` / ``pass_high``; the operational tier's is the band of
    the statistic in ``decision_on`` under that tier (a SESOI margin, visible as a research ``pass_low``
    other than the tier's pass bound, is the selection ratio's bound in both tiers). The band's ends 0,
    1 of a rate are not crossed by a rate's interval and are dropped."""
    on = r.get("decision_on")
    d = metric if not isinstance(on, str) or on in ("", "value") else on
    research = (to_float(r.get("pass_low")), to_float(r.get("pass_high")))
    if tier == "research" and all(math.isfinite(x) for x in research):
        band = research
    else:
        tb = (thresholds.get(tier) or {}).get(d) or {}
        if is_missing(tb.get("pass")):
            return []
        rb = (thresholds.get("research") or {}).get(d) or {}
        if (d == "selection_ratio" and math.isfinite(research[0]) and not is_missing(rb.get("pass"))
                and round_significant(research[0]) != round_significant(float(rb["pass"]))):
            tb = {**tb, "pass": research[0]}
        band = pass_band(d, tb)
    info = METRICS.get(d)
    ends = [float(band[0]), float(band[1])]
    if info is not None and not info.classify_abs and d != "selection_ratio":
        ends = [x for x in ends if x not in (0.0, 1.0)]
    return ends


def _metric_rows(
    rows: list[dict[str, Any]], info: Mapping[str, Any], variant_order: list[str], reference: str,
    alpha: float, thresholds: Mapping[str, Any] | None = None, score_range: Any = None,
    label: Callable[[Any], str] = fmt_text,
) -> tuple[list[dict[str, Any]], list[str]]:
    by_variant = {str(r.get("variant")): r for r in rows}
    order = unique(list(by_variant), [reference, *variant_order])
    diags = [d for d in DIAGNOSTICS.get(info["id"], [])
             if any(not is_missing(r.get(c)) for r in rows for c in d[2])]
    signed = info["id"] == "score_delta"
    thresholds = thresholds or {}
    out = []
    for v in order:
        r = by_variant[v]
        p_adj = to_float(r.get("p_adj"))
        uninformative = NOT_INFORMATIVE in str(r.get("notes") or "")
        # shown at the precision it was classified with, so a value beside a boundary reads right
        value = fmt_sig(r.get("value"), CLASSIFY_SIGNIFICANT_DIGITS, signed=signed)
        ci = fmt_ci(r.get("ci_low"), r.get("ci_high"), signed=signed)
        if signed:  # the normalised score delta on the system's own scale too (issue 31 §3)
            value = with_points(value, r.get("value"), score_range)
            ci = with_points_ci(ci, r.get("ci_low"), r.get("ci_high"), score_range)
        # interval statuses: the decision interval against the PASS band of its tier (issue 29 §1)
        dlo = r.get("decision_low") if not is_missing(r.get("decision_low")) else r.get("ci_low")
        dhi = r.get("decision_high") if not is_missing(r.get("decision_high")) else r.get("ci_high")
        st = {tier: with_crossing(status(r.get(col)), crossed(dlo, dhi, _band_bounds(r, info["id"], tier, thresholds)),
                                  decided_on_text(r, info["id"]))
              for tier, col in (("research", "status"), ("operational", "status_operational"))}
        # seed 000 Table 3's statuses of the point estimate, when the run has them: the row's own interval
        # against the tier's pass and investigate bounds (|Δ| for score_delta)
        seed000 = None
        if "status_seed000" in r:
            seed000 = {tier: with_crossing(status(r.get(col)), crossed(
                r.get("ci_low"), r.get("ci_high"),
                _tier_bounds(info["id"], (thresholds.get(tier) or {}).get(info["id"]) or {})),
                "point estimate; its interval")
                for tier, col in (("research", "status_seed000"), ("operational", "status_seed000_operational"))}
        out.append({
            "variant": v,
            "is_reference": v == reference,
            "value": value,
            "ci": ci,
            "p": "not informative" if uninformative else fmt_p(r.get("p_value")),
            # a test the hierarchical procedure did not reach has no adjusted p: say so, not "—" (its raw p is shown)
            "p_adj": "not tested" if NOT_TESTED in str(r.get("notes") or "") else fmt_p(p_adj),
            "significant": math.isfinite(p_adj) and math.isfinite(alpha) and p_adj < alpha,
            "status": status(r.get("status")),
            "status_operational": status(r.get("status_operational")),
            "status_text": st["research"],
            "status_operational_text": st["operational"],
            "status_seed000": status(r.get("status_seed000")) if seed000 else None,
            "status_seed000_operational": status(r.get("status_seed000_operational")) if seed000 else None,
            "seed000_text": seed000,
            "n": fmt_int(r.get("n")),
            "diagnostics": [d[1](r) for d in diags],
            "notes": readable_note(fmt_text(r.get("notes"), "")),
            "disadvantaged": label(r.get("disadvantaged")),
            "_raw": r,
        })
    return out, [d[0] for d in diags]


def _ci_key(metric: str, ci: str, ranking: str | None) -> str:
    """The :data:`CI_TEXT` key of ``metric``'s interval under ``ranking``: MARC's analytic interval holds under swap-in
    ranking only (methods 14); per-variant ranking keeps the re-ranked candidate bootstrap, and the flip rate its
    tie-averaged Wilson interval (methods 17; methods 19's resampled design effect is swap-in's)."""
    if metric == "marc" and ranking == "per_variant":
        return "candidate bootstrap within jobs, re-ranked"
    if metric == "flip_rate" and ranking == "per_variant":  # methods 19's resamples are swap-in's
        return "wilson, at the effective sample size of tied flips"
    return ci


def _metric_entry(metric: str, mrecs: list[dict[str, Any]], *, meta: ReportMeta, system: str, condition: str,
                  variant_order: list[str], reference: str) -> dict[str, Any]:
    """One metric of a unit: its rows by variant, its chart, its test, interval and thresholds in words."""
    info = metric_info(metric)
    thr = threshold_of(meta.threshold, system)
    if thr is not None:
        info = {**info, "label": THRESHOLD_LABELS.get(metric, info["label"]),
                "ci": THRESHOLD_CI.get(metric, info["ci"])}
    sm = next((s for s in meta.systems if s.id == system), None)
    rows, diag_headers = _metric_rows(mrecs, info, variant_order, reference, to_float(meta.alpha),
                                      meta.thresholds or {}, sm.score_range if sm else None, meta.with_level_labels)
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
        reciprocal=metric == "selection_ratio",
        seed000=bool(getattr(METRICS.get(metric), "seed000", True)),
        decides=not (on_ratio and metric != "selection_ratio"),
    )
    for r in rows:
        del r["_raw"]
    has_seed000 = any(r["seed000_text"] for r in rows)
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
        "ci_text": CI_TEXT.get(_ci_key(metric, info["ci"], meta.ranking), info["ci"]),
        "ci_coverage": ci_coverage,
        "ci_approximate": ci_coverage.startswith("approximate"),
        "direction_text": ("1 is best: a ratio below pass disfavours the variant, above 1/pass the reference"
                           if metric == "selection_ratio"
                           else "0 is best: judged on |Δ|, a shift either way counts (lower |Δ| is better)"
                           if info["classify_abs"]
                           else "lower is better" if info["direction"] == "lower" else "higher is better"),
        "research_text": criteria(info["direction"], research, info["classify_abs"],
                                  ratio_bounds=_ratio_bounds(meta, "research", metric, research) if on_ratio else None),
        "operational_text": criteria(info["direction"], operational, info["classify_abs"],
                                     ratio_bounds=_ratio_bounds(meta, "operational", metric, operational)
                                     if on_ratio else None),
        "tiers_differ": dict(research) != dict(operational),
        "chart_svg": chart,
        # the dashed lines are this metric's thresholds; a row deciding on the selection ratio is coloured by that
        # ratio's interval, not by them (the regulator's read of stop 58: "PASS ≤ 0.05" above INCONCLUSIVE bars)
        "lines_text": ("this metric's research-tier thresholds, grey because the bars' statuses do not read them: they "
                       "are decided on the selection ratio's interval (its chart)"
                       + ("; the table's Seed 000 Table 3 column reads them on the point estimate" if has_seed000 else "")
                       if on_ratio and metric != "selection_ratio" else "research-tier thresholds"),
        "rows": rows,
        "has_seed000": has_seed000,
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


#: Statuses that put a row in the ``fail-variants`` table (issue 31 §3): an interval status of either tier,
#: or seed 000 Table 3's status of the point estimate (``status_seed000``).
FLAGGED = ("FAIL", "INCONCLUSIVE", "INVESTIGATE")


def flagged_by(r: Mapping[str, Any]) -> list[str]:
    """What flags a unit row (:func:`_metric_rows`): its research and operational interval statuses and
    seed 000's point-estimate statuses that are FAIL, INCONCLUSIVE or INVESTIGATE, in words
    ("research FAIL", "seed 000 INVESTIGATE"); empty for a row that is PASS or N/A everywhere."""
    out = [f"{tier} {s}" for tier, s in (("research", r["status"]), ("operational", r["status_operational"]))
           if s in FLAGGED]
    s000 = {s for s in (r.get("status_seed000"), r.get("status_seed000_operational")) if s in FLAGGED}
    out += [f"seed 000 {s}" for s in ("FAIL", "INVESTIGATE") if s in s000]
    return out


def fail_table(unit_list: list[dict[str, Any]], meta: ReportMeta, variant_order: list[str]) -> list[dict]:
    """Every variant with a FAIL or INCONCLUSIVE status (either tier) or a seed-000 INVESTIGATE or FAIL, per
    unit, with the flagged metrics, their status cells and what flags each, and the variant's levels
    (issue 31 §3). The reference's rows are left out (it is compared with itself)."""
    found: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
    for u in unit_list:
        for m in u["metrics"]:
            for r in m["rows"]:
                why = [] if r["is_reference"] else flagged_by(r)
                if why:
                    found.setdefault((u["system"], u["condition"], r["variant"]), []).append({
                        "label": m["label"], "anchor": m["anchor"], "value": r["value"], "ci": r["ci"],
                        "p_adj": r["p_adj"], "status": r["status"], "status_text": r["status_text"],
                        "operational": r["status_operational"],
                        "operational_text": r["status_operational_text"],
                        "seed000": r["status_seed000"], "seed000_operational": r["status_seed000_operational"],
                        "seed000_text": r["seed000_text"],
                        "flagged_by": why, "disadvantaged": r["disadvantaged"],
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
