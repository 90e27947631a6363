"""Report sections of the ``metric_suite`` family: seed 000's nine metrics (no I/O).

:func:`metric_suite_sections` is the only public function. Each section's context is plain data
(strings, numbers, booleans, lists and dicts, charts as SVG strings), already formatted for display
and in report order, so that the templates (``templates/sections/metric_suite_*.html.j2``) contain
no logic beyond loops and conditionals and the same inputs always give the same sections. Method
prose (metric definitions, tier notes, method notes) lives in those templates.

Sources: seed 000 §3.4 (metrics), §3.5 (tests, BH), §3.6 (Eq. 6 and the risk bands), §3.7 (the two
threshold tiers, always shown together and labelled as distinct policy choices), §3.8 (report
sections), §3.1.2 (qualification drift); seed 002 Figures 2–10 (what each chart shows).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import pandas as pd

from compiler.catalog import METRICS, RISK_BANDS, CLASSIFY_SIGNIFICANT_DIGITS, default_thresholds
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
    fmt_threshold,
    is_missing,
    to_float,
)
from runtime.report.sections import ORDER, Section

STATUSES = ("PASS", "INVESTIGATE", "FAIL", "N/A")

#: Short name per metric (chart axis, tables); the one-line definitions are in
#: ``templates/sections/metric_suite_text.html.j2`` (seed 000 §3.4.1–3.4.3).
METRIC_SHORT: dict[str, str] = {
    "score_delta": "Score delta", "marc": "MARC / K", "flip_rate": "Flip rate",
    "retention_rate": "Retention rate", "impact_ratio": "Impact ratio", "recall_at_k": "Recall@K",
    "ndcg_at_k": "nDCG@K", "equal_opportunity_gap": "Equal opportunity gap",
    "equalized_odds_gap": "Equalized odds gap",
}

#: Statistical basis of each threshold (seed 000 Table 3, last column).
THRESHOLD_BASIS: dict[str, str] = {
    "score_delta": "Pre-registered tolerance on the normalised score scale (policy choice)",
    "marc": "Pre-registered rank-churn tolerance, scale-invariant to K (policy choice)",
    "flip_rate": "Pre-registered boundary-crossing tolerance (policy choice)",
    "retention_rate": "Four-fifths rule applied to shortlist retention (statutory analogue)",
    "impact_ratio": "Direct transposition of the four-fifths rule (statutory)",
    "recall_at_k": "Four-fifths bound extended by analogy to ranking quality",
    "ndcg_at_k": "Four-fifths bound extended by analogy to ranking quality",
    "equal_opportunity_gap": "Pre-registered gap tolerance, equal-opportunity criterion (policy choice)",
    "equalized_odds_gap": "Pre-registered gap tolerance, equalized-odds criterion (policy choice)",
}

#: The words of a metrics row whose test cannot reject in this design (runtime.analysis).
NOT_INFORMATIVE = "not informative in this design"

#: How each test id of ``metrics.test`` is described (seed 000 §3.4, Table 4).
TEST_TEXT: dict[str, str] = {
    "wilcoxon": "Wilcoxon signed-rank test (paired, two-sided)",
    "wilcoxon_exact_midranks": ("Wilcoxon signed-rank test with mid-ranks, exact over every sign flip "
                                "(ties or zeros on the score grid)"),
    "wilcoxon_normal_ties": "Wilcoxon signed-rank test, normal approximation with the tie correction",
    "mcnemar": "McNemar's test (exact binomial below 25 discordant pairs, else continuity-corrected χ²)",
    "mcnemar_exact": "McNemar's exact (binomial) test",
    "mcnemar_chi2_cc": "McNemar's χ² test with continuity correction",
    "fisher_exact": "Fisher's exact test on retained / not retained, variant vs. reference",
    "": "none (descriptive statistic, no p-value)",
}
#: Added after the test names when the McNemar variant depends on the row (seed 000 §3.4.1).
MCNEMAR_RULE = "exact when fewer than 25 candidates flip, χ² otherwise"

CI_TEXT: dict[str, str] = {
    "bootstrap percentile": "bootstrap percentile interval",
    "wilson": "Wilson score interval",
    "candidate bootstrap within jobs": ("bootstrap of the base candidates within each job (the audited "
                                        "jobs are kept; each candidate brings its reference and variant)"),
    "candidate bootstrap within jobs, re-ranked": ("bootstrap of the base candidates within each job, every "
                                                   "resampled pool ranked again"),
    "candidate bootstrap within jobs and labels, re-ranked": ("bootstrap of the base candidates within each "
                                                              "job and match label, every resampled pool "
                                                              "ranked again"),
    "paired bootstrap over candidates": "paired bootstrap over candidates",
    "candidate bootstrap within jobs and labels": ("bootstrap of the base candidates within each job and match "
                                                   "label (each keeps its selection at the threshold)"),
}

#: Label of each threshold tier; what each tier means is in ``metric_suite_text.html.j2`` (seed 000 §3.7).
TIER_LABELS: dict[str, str] = {"research": "Research tier", "operational": "Operational tier"}

BAND_TEXT = {"low": "Low risk", "medium": "Medium risk", "high": "High risk"}

#: Labels of ``meta["counts"]`` keys (others are shown with underscores as spaces).
COUNT_LABELS = {
    "jobs": "Jobs", "base_candidates": "Base candidates", "variants": "Variants", "resumes": "Résumés",
    "scored": "Scored résumé × job pairs", "systems": "Systems", "texts_to_embed": "Texts embedded",
    "model_calls": "Model calls", "estimated_tokens": "Estimated tokens",
    "estimated_cost_usd": "Estimated cost (USD)", "tasks": "Plan tasks", "metric_rows": "Metric rows",
    "paired_candidates_per_variant": "Paired candidates per variant",
}

#: Counts of what the tool generates and asks models, left out of a score-file audit's design section.
GENERATION_COUNTS = ("texts_to_embed", "model_calls", "estimated_tokens", "estimated_cost_usd")

_FAMILY_TEXT = {"counterfactual": "Counterfactual", "group": "Group fairness", "merit": "Merit-aware"}


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


#: Diagnostic columns per metric: (header, formatter, columns that must be present for it to show).
DIAGNOSTICS: dict[str, list[tuple[str, Callable[[Mapping[str, Any]], str], tuple[str, ...]]]] = {
    "marc": [("MARC (rank units)", _plain("marc_raw"), ("marc_raw",))],
    "flip_rate": [
        ("Flip-in rate (out→in)", _rate_count("flip_in_rate", "n_out_in"), ("flip_in_rate", "n_out_in")),
        ("Flip-out rate (in→out)", _rate_count("flip_out_rate", "n_in_out"), ("flip_out_rate", "n_in_out")),
    ],
    "retention_rate": [("Retained / slots", _ratio("retained", "slots"), ("retained", "slots"))],
    "impact_ratio": [("Retained / slots", _ratio("retained", "slots"), ("retained", "slots"))],
    "recall_at_k": [("Jobs used", _plain("jobs_used"), ("jobs_used",))],
    "ndcg_at_k": [("Jobs used", _plain("jobs_used"), ("jobs_used",))],
    "equal_opportunity_gap": [("TPR (TP / P)", _ratio("tp", "p", "tpr"), ("tpr", "tp", "p"))],
    "equalized_odds_gap": [
        ("TPR (TP / P)", _ratio("tp", "p", "tpr"), ("tpr", "tp", "p")),
        ("FPR (FP / negatives)", _ratio("fp", "negatives", "fpr"), ("fpr", "fp", "negatives")),
    ],
}


# --------------------------------------------------------------------------------------- helpers


def _status(x: Any) -> str:
    """Normalise a status cell; a missing cell (pandas reads ``N/A`` as NaN) is ``N/A``."""
    if isinstance(x, str) and x.strip().upper() in ("PASS", "INVESTIGATE", "FAIL"):
        return x.strip().upper()
    return "N/A"


def _slug(*parts: Any) -> str:
    s = "-".join(str(p) for p in parts)
    return re.sub(r"[^A-Za-z0-9_-]+", "-", s).strip("-").lower() or "x"


def _ordered(items: Iterable[Any], preferred: Iterable[Any] = ()) -> list[Any]:
    """Unique items: those in ``preferred`` first (in that order), then the rest by first appearance."""
    seen = list(dict.fromkeys(items))
    pref = [p for p in dict.fromkeys(preferred) if p in seen]
    return pref + [x for x in seen if x not in pref]


def _records(df: pd.DataFrame | None) -> list[dict[str, Any]]:
    if df is None or len(df) == 0:
        return []
    return [dict(r) for r in df.to_dict(orient="records")]


def resolved_thresholds(meta: Mapping[str, Any]) -> dict[str, dict[str, dict[str, float]]]:
    """The run's thresholds: seed 000's defaults (:func:`compiler.catalog.default_thresholds`) updated with
    the spec's ``meta["thresholds"]``; ``{tier: {metric: {"pass": x, "investigate": y}}}``."""
    out = default_thresholds()
    given = meta.get("thresholds") or {}
    for tier, metrics in given.items():
        for metric, bounds in (metrics or {}).items():
            out.setdefault(tier, {}).setdefault(metric, {}).update(
                {k: to_float(v) for k, v in (bounds or {}).items()}
            )
    return out


def _threshold_text(direction: str, bounds: Mapping[str, float] | None, classify_abs: bool) -> str:
    if not bounds:
        return MISSING
    cmp = "≤" if direction == "lower" else "≥"
    x = "|value|" if classify_abs else "value"
    return (f"PASS if {x} {cmp} {fmt_threshold(bounds.get('pass'))}; "
            f"INVESTIGATE if {x} {cmp} {fmt_threshold(bounds.get('investigate'))}; otherwise FAIL")


def _metric_info(metric: str) -> dict[str, Any]:
    info = METRICS.get(metric)
    short = METRIC_SHORT.get(metric, metric)
    return {
        "id": metric,
        "label": info.label if info else metric,
        "short": short,
        "family": info.family if info else "",
        "direction": info.direction if info else "lower",
        "classify_abs": bool(info.classify_abs) if info else False,
        "test": info.test if info else "",
        "ci": info.ci if info else "",
    }


def _counts(statuses: Iterable[str]) -> dict[str, int]:
    c = {s: 0 for s in STATUSES}
    for s in statuses:
        c[_status(s)] += 1
    return c


# -------------------------------------------------------------------------------------- sections




#: Labels and interval descriptions that name a top-K, as they read under a threshold rule (issue 15).
THRESHOLD_LABELS = {"flip_rate": "Flip rate (threshold crossings)",
                    "retention_rate": "Retention rate (macro retention at the threshold)",
                    "recall_at_k": "Recall at the threshold (Recall@K under a top-K rule)",
                    "impact_ratio": "Impact ratio (retention ratio at the threshold; not LL144's ratio of selection rates)"}
THRESHOLD_CI = {"recall_at_k": "candidate bootstrap within jobs and labels"}
THRESHOLD_BASIS_AT_THRESHOLD = {"retention_rate": "Four-fifths rule applied to retention at the decision threshold "
                                                  "(statutory analogue)",
                                "impact_ratio": "Four-fifths rule applied to retention at the decision threshold "
                                                "(seed 000 Eq. 3); the ratio of selection rates (LL144) is in the notes"}


def threshold_of(meta: Mapping[str, Any], system: str | None = None) -> float | None:
    """The decision threshold of ``analysis.decision`` (issue 15) for ``system`` (a per-system mapping is
    read at its entry), or None under a top-K rule."""
    t = (meta.get("decision") or {}).get("threshold")
    if isinstance(t, Mapping):
        return float(t[system]) if system in t else None
    return None if t is None else float(t)


def threshold_text(meta: Mapping[str, Any]) -> str | None:
    """The decision threshold in words ("70", or "vendor-a: 70, vendor-b: 0.7"); None under top-K."""
    t = (meta.get("decision") or {}).get("threshold")
    if isinstance(t, Mapping):
        return ", ".join(f"{s}: {float(v):g}" for s, v in t.items())
    return None if t is None else f"{float(t):g}"


def decision_rule_text(meta: Mapping[str, Any]) -> str:
    """The decision rule in words, for the design facts (issue 15)."""
    t = threshold_text(meta)
    if t is not None:
        return (f"a candidate is selected when its score is at or above {t}, on each system's own scale "
                "(analysis.decision.threshold)")
    if (meta.get("decision") or {}).get("top_k") is not None:
        return "the K best-scored candidates of each job are selected (analysis.decision.top_k)"
    return ("the K best-scored candidates of each job are selected: the tool's default rule (the spec does "
            "not state the system's own decision rule in analysis.decision)")


def _facts(meta: Mapping[str, Any], reference: str) -> list[dict[str, Any]]:
    k = meta.get("k") or {}
    thr = threshold_text(meta)
    return [
        {"label": "Decision rule", "value": decision_rule_text(meta), "code": False},
        {"label": "Shortlist size K" + (" (MARC and nDCG@K only)" if thr is not None else ""),
         "value": " · ".join(f"{f} {fmt_text(v)}" for f, v in k.items()) or MISSING, "code": False},
        {"label": "Reference variant", "value": reference, "code": True},
        {"label": "Significance level", "value": f"α = {fmt_threshold(meta.get('alpha'))} (BH-adjusted)",
         "code": False},
        {"label": "Bootstrap resamples", "value": fmt_int(meta.get("n_bootstrap")), "code": False},
    ]


def _risk(risk: pd.DataFrame | None) -> dict[str, Any]:
    rows = _records(risk)
    bands = " · ".join(
        f"{name} ≥ {fmt_threshold(lo)}" if lo > 0 else f"{name} otherwise" for lo, name in RISK_BANDS
    )

    def fmt_row(r: Mapping[str, Any]) -> dict[str, Any]:
        tier = fmt_text(r.get("tier"), "research")
        band = fmt_text(r.get("band"), "").lower()
        label = TIER_LABELS.get(tier, tier.capitalize())
        score = to_float(r.get("risk_score"))
        n_fail, n_inv = r.get("n_fail"), r.get("n_investigate")
        n_total = r.get("n_total")
        filled = (f"(3 × {fmt_int(n_fail)} + 1 × {fmt_int(n_inv)}) / (3 × {fmt_int(n_total)}) "
                  f"= {fmt_sig(score)}")
        return {
            "tier": tier,
            "tier_label": label,
            "system": fmt_text(r.get("system")),
            "condition": fmt_text(r.get("condition")),
            "band": band if band in BAND_TEXT else "unknown",
            "band_label": BAND_TEXT.get(band, "Risk band not given"),
            "score": fmt_sig(score),
            "score_pct": MISSING if math.isnan(score) else f"{score * 100:.1f}%",
            "n_total": fmt_int(n_total),
            "n_fail": fmt_int(n_fail),
            "n_investigate": fmt_int(n_inv),
            "n_pass": fmt_int(r.get("n_pass")),
            "n_na": fmt_int(r.get("n_na")),
            "formula_filled": filled,
            "independent_score": fmt_sig(to_float(r.get("risk_score_independent"))),
            "independent_band": BAND_TEXT.get(fmt_text(r.get("band_independent"), "").lower(), "not computed"),
            "n_quantities": fmt_int(r.get("n_quantities")),
        }

    tier_order = {"research": 0, "operational": 1}
    overall = [fmt_row(r) for r in rows if str(r.get("system")) == "ALL"]
    overall.sort(key=lambda r: (tier_order.get(r["tier"], 9), r["condition"]))
    units = [fmt_row(r) for r in rows if str(r.get("system")) != "ALL"]
    units.sort(key=lambda r: (r["system"], r["condition"], tier_order.get(r["tier"], 9)))
    present = {r["tier"] for r in overall}
    for tier in ("research", "operational"):
        if tier not in present:  # always show both tiers (seed 000 §3.7), even when one is missing
            overall.append({"tier": tier, "tier_label": TIER_LABELS[tier], "band": "unknown",
                            "band_label": "Not computed", "score": MISSING, "score_pct": MISSING,
                            "system": "ALL", "condition": MISSING, "n_total": MISSING,
                            "n_fail": MISSING, "n_investigate": MISSING, "n_pass": MISSING,
                            "n_na": MISSING, "formula_filled": "no risk row for this tier",
                            "independent_score": MISSING, "independent_band": "not computed",
                            "n_quantities": MISSING})
    overall.sort(key=lambda r: tier_order.get(r["tier"], 9))
    return {
        "overall": overall,
        "units": units,
        "formula": "RiskScore = (3 · n_FAIL + 1 · n_INVESTIGATE) / (3 · n_total)",
        "bands": bands,
    }


def _levels(meta: Mapping[str, Any], variant: str) -> list[dict[str, str]]:
    levels = (meta.get("variants") or {}).get(variant) or {}
    axes = _ordered(list(levels), meta.get("axes") or [])
    return [{"axis": a, "level": fmt_text(levels.get(a))} for a in axes]


def _design(meta: Mapping[str, Any], variant_order: list[str], reference: str) -> dict[str, Any]:
    variants = meta.get("variants") or {}
    axes = _ordered([a for v in variants.values() for a in (v or {})], meta.get("axes") or [])
    ref_levels = variants.get(reference) or {}
    rows = []
    for v in _ordered(list(variants), variant_order):
        levels = variants.get(v) or {}
        rows.append({
            "variant": v,
            "is_reference": v == reference,
            "cells": [{"level": fmt_text(levels.get(a)),
                       "differs": v != reference and levels.get(a) != ref_levels.get(a)} for a in axes],
        })
    score_file = meta.get("design") == "score_file"
    counts = [{"label": ("Variant résumés scored" if score_file and k == "resumes"
                         else COUNT_LABELS.get(k, k.replace("_", " ").capitalize())),
               "value": f"{to_float(v):,.2f}" if "cost" in k and not is_missing(v) else fmt_num(v)}
              for k, v in (meta.get("counts") or {}).items()
              if not (score_file and k in GENERATION_COUNTS)]  # nothing was generated, embedded or asked
    jobs = [{"id": fmt_text(j.get("id")), "title": fmt_text(j.get("title"))} for j in meta.get("jobs") or []]
    return {"axes": axes, "variants": rows, "jobs": jobs, "counts": counts, "reference": reference,
            "signals": _signals(meta), "score_file": meta.get("design") == "score_file",
            "source": source_facts(meta.get("source")),
            "blind": [{"system": s["id"], "resumes": fmt_int((s.get("blind") or {}).get("resumes")),
                       "file_sha256": (s.get("blind") or {}).get("file_sha256") or MISSING,
                       "key_file": (s.get("blind") or {}).get("key_file") or "blind_key.csv",
                       "sealed_file": (s.get("blind") or {}).get("sealed_file") or MISSING,
                       "history": (s.get("blind") or {}).get("history") or []}
                      for s in meta.get("systems") or [] if "blind" in s]}


#: Cue options shown per level in the design section (the rest are counted).
CUES_SHOWN = 3


def _signals(meta: Mapping[str, Any]) -> list[dict[str, Any]]:
    """How each axis's levels were signalled: the slot and cues the tool wrote, or a score-file audit's
    description and example cues (issue 15). One row per axis x level."""
    out = []
    for axis, a in (meta.get("signals") or {}).items():
        cues, examples = a.get("cues") or {}, a.get("examples") or {}
        for i, level in enumerate(a.get("levels") or []):
            texts = [c for c in (cues.get(level) or []) if c] or list(examples.get(level) or [])
            shown = ", ".join(f"“{t}”" for t in texts[:CUES_SHOWN])
            if len(texts) > CUES_SHOWN:
                shown += f" and {len(texts) - CUES_SHOWN} more"
            if not texts and level in cues:
                shown = "(nothing written)"
            out.append({"axis": axis if i == 0 else "", "rows": len(a.get("levels") or []) if i == 0 else 0,
                        "slot": a.get("slot") or "" if i == 0 else "",
                        "description": a.get("description") or "" if i == 0 else "",
                        "level": level, "texts": shown,
                        "kind": "cues written by the tool" if cues else ("examples given by the auditor" if examples else "")})
    return out


def _source_context(meta: Mapping[str, Any], metrics: pd.DataFrame) -> dict[str, Any]:
    """The first-page box of a score-file audit (issue 15): the source facts, the systems, whether the
    export had match labels, and what the lock's time does and does not show."""
    source = meta.get("source") or {}
    merit = metrics[metrics["family"] == "merit"] if metrics is not None and "family" in metrics else None
    unlabelled = merit is not None and len(merit) > 0 and bool((merit["status"] == "N/A").all())
    return {"facts": source_facts(source), "systems": [s.get("id") for s in meta.get("systems") or []],
            "unlabelled": unlabelled, "locked": str(meta.get("lock_created_at") or "")[:10],
            "exported": str(source.get("exported") or "")}


def source_facts(source: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    """The ``source`` block of a score-file audit as label/value facts (issue 15); empty without one."""
    if not source:
        return []
    labels = [("producer", "Scores produced by"), ("system", "System"), ("version", "Version"),
              ("exported", "Exported"), ("contact", "Contact"), ("variants_made", "How the variants were made")]
    return [{"label": label, "value": str(source[k]), "wide": k == "variants_made", "code": False}
            for k, label in labels if source.get(k)]


def _metric_rows(
    rows: list[dict[str, Any]], info: Mapping[str, Any], variant_order: list[str], reference: str,
    alpha: float,
) -> tuple[list[dict[str, Any]], list[str]]:
    by_variant = {str(r.get("variant")): r for r in rows}
    order = _ordered(list(by_variant), [reference, *variant_order])
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
            "status": _status(r.get("status")),
            "status_operational": _status(r.get("status_operational")),
            "n": fmt_int(r.get("n")),
            "diagnostics": [d[1](r) for d in diags],
            "notes": fmt_text(r.get("notes"), ""),
            "disadvantaged": fmt_text(r.get("disadvantaged"), "—"),
            "_raw": r,
        })
    return out, [d[0] for d in diags]


def _units(
    metrics: pd.DataFrame, meta: Mapping[str, Any], thresholds: Mapping[str, Any],
    variant_order: list[str], reference: str,
) -> list[dict[str, Any]]:
    recs = _records(metrics)
    alpha = to_float(meta.get("alpha"))
    n_jobs = len(meta.get("jobs") or []) or None
    systems_meta = {str(s.get("id")): s for s in meta.get("systems") or []}
    system_order = _ordered([str(r.get("system")) for r in recs], list(systems_meta))
    units = []
    for system in system_order:
        srecs = [r for r in recs if str(r.get("system")) == system]
        for condition in _ordered([fmt_text(r.get("condition")) for r in srecs]):
            crecs = [r for r in srecs if fmt_text(r.get("condition")) == condition]
            metric_ids = _ordered([str(r.get("metric")) for r in crecs], METRICS)
            entries = []
            for metric in metric_ids:
                info = _metric_info(metric)
                thr = threshold_of(meta, system)
                if thr is not None:
                    info = {**info, "label": THRESHOLD_LABELS.get(metric, info["label"]),
                            "ci": THRESHOLD_CI.get(metric, info["ci"])}
                mrecs = [r for r in crecs if str(r.get("metric")) == metric]
                rows, diag_headers = _metric_rows(mrecs, info, variant_order, reference, alpha)
                ci_coverage = coverage.statement(metric, n_jobs)
                if ci_coverage and thr is not None and metric in SELECTION_METRICS:
                    ci_coverage += " (measured under a top-K rule, not at a threshold)"
                ks = [r.get("k") for r in mrecs if not is_missing(r.get("k"))]
                k = fmt_int(ks[0]) if ks else fmt_text((meta.get("k") or {}).get(info["family"]))
                tests = _ordered(str(r.get("test")) for r in mrecs if isinstance(r.get("test"), str) and r.get("test"))
                if not tests and info["test"]:
                    tests = [info["test"]]
                test_text = "; ".join(TEST_TEXT.get(t, t) for t in tests) or TEST_TEXT[""]
                if any(t.startswith("mcnemar_") for t in tests):
                    test_text += f" ({MCNEMAR_RULE})"
                research = thresholds.get("research", {}).get(metric) or {}
                operational = thresholds.get("operational", {}).get(metric) or {}
                anchor = _slug("m", system, condition, metric)
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
                entries.append({
                    **info,
                    "anchor": anchor,
                    "short": short,
                    "family_label": _FAMILY_TEXT.get(info["family"], info["family"]),
                    "k": k,
                    "cutoff": (f"selected = score ≥ {thr:g}"
                               if thr is not None and metric in SELECTION_METRICS else f"K = {k}"),
                    "threshold": thr if metric in SELECTION_METRICS else None,
                    "test_text": test_text,
                    "has_test": bool(tests) or any(not is_missing(r.get("p_value")) for r in mrecs),
                    "ci_text": CI_TEXT.get(info["ci"], info["ci"]),
                    "ci_coverage": ci_coverage,
                    "ci_approximate": ci_coverage.startswith("approximate"),
                    "direction_text": "lower is better" if info["direction"] == "lower" else "higher is better",
                    "research_text": _threshold_text(info["direction"], research, info["classify_abs"]),
                    "operational_text": _threshold_text(info["direction"], operational, info["classify_abs"]),
                    "tiers_differ": dict(research) != dict(operational),
                    "chart_svg": chart,
                    "rows": rows,
                    "diag_headers": diag_headers,
                    "counts": _counts(r["status"] for r in rows),
                })
            sm = systems_meta.get(system, {})
            units.append({
                "system": system,
                "condition": condition,
                "kind": fmt_text(sm.get("kind"), ""),
                "model": fmt_text(sm.get("model"), ""),
                "anchor": _slug("u", system, condition),
                "metrics": entries,
            })
    return units


def _fail_table(units: list[dict[str, Any]], meta: Mapping[str, Any], variant_order: list[str]) -> list[dict]:
    found: dict[tuple[str, str, str], list[dict[str, str]]] = {}
    for u in units:
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
                    "levels": _levels(meta, variant), "failing": failing})
    pos = {v: i for i, v in enumerate(variant_order)}
    unit_pos = {(u["system"], u["condition"]): i for i, u in enumerate(units)}
    out.sort(key=lambda r: (unit_pos[(r["system"], r["condition"])], pos.get(r["variant"], 10**6), r["variant"]))
    return out


def _kpis(metrics: pd.DataFrame) -> dict[str, Any]:
    statuses = [] if metrics is None or len(metrics) == 0 else list(metrics["status"])
    c = _counts(statuses)
    ops = [] if metrics is None or len(metrics) == 0 or "status_operational" not in metrics else list(
        metrics["status_operational"])
    co = _counts(ops)
    return {
        "total": fmt_int(len(statuses)),
        "fail": fmt_int(c["FAIL"]),
        "investigate": fmt_int(c["INVESTIGATE"]),
        "pass": fmt_int(c["PASS"]),
        "na": fmt_int(c["N/A"]),
        "has_na": c["N/A"] > 0,
        "operational": {k: fmt_int(v) for k, v in co.items()},
    }


def _drift(drift: pd.DataFrame | None, units: list[dict], variant_order: list[str]) -> list[dict[str, Any]]:
    recs = _records(drift)
    pos = {v: i for i, v in enumerate(variant_order)}
    unit_pos = {(u["system"], u["condition"]): i for i, u in enumerate(units)}
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


def _threshold_table(thresholds: Mapping[str, Any], metric_ids: list[str],
                     decision_threshold: str | None = None) -> list[dict[str, Any]]:
    rows = []
    for metric in metric_ids:
        info = _metric_info(metric)
        if decision_threshold is not None:
            info["label"] = THRESHOLD_LABELS.get(metric, info["label"])
        res = thresholds.get("research", {}).get(metric) or {}
        ops = thresholds.get("operational", {}).get(metric) or {}
        cmp = "≤" if info["direction"] == "lower" else "≥"
        x = "|Δ| " if info["classify_abs"] else ""
        rows.append({
            "label": info["label"],
            "direction": "lower is better" if info["direction"] == "lower" else "higher is better",
            "research_pass": f"{x}{cmp} {fmt_threshold(res.get('pass'))}",
            "research_investigate": f"{x}{cmp} {fmt_threshold(res.get('investigate'))}",
            "operational_pass": f"{x}{cmp} {fmt_threshold(ops.get('pass'))}",
            "operational_investigate": f"{x}{cmp} {fmt_threshold(ops.get('investigate'))}",
            "differs_pass": res.get("pass") != ops.get("pass"),
            "differs_investigate": res.get("investigate") != ops.get("investigate"),
            "basis": (THRESHOLD_BASIS_AT_THRESHOLD.get(metric) if decision_threshold is not None else None)
            or THRESHOLD_BASIS.get(metric, ""),
        })
    return rows


# ------------------------------------------------------------------------------------ public API


#: Rows shown in each per-job table of the report (the rest are in ``metrics_by_job.csv``).
JOB_ROWS_SHOWN = 40
_SEVERITY = {"FAIL": 0, "INVESTIGATE": 1, "PASS": 2}


def _by_job(by_job: pd.DataFrame | None, reference: str, variant_order: list[str]) -> dict[str, Any]:
    """Context of the per-job section: flagged jobs (worst first) and heterogeneous cells (Cochran's Q p < 0.05).

    A flagged job is sorted by how much it changes the reading: a job whose status is worse than the
    pooled one first, then by the job's status (FAIL first), then catalogue, variant and job order.
    """
    if by_job is None or len(by_job) == 0:
        return {"present": False}
    rows = [r for r in _records(by_job) if str(r.get("variant")) != reference]
    metric_order = {m: i for i, m in enumerate(METRICS)}
    variant_rank = {v: i for i, v in enumerate(variant_order)}
    pooled = [r for r in rows if str(r.get("job_id")) == "ALL"]
    het = [r for r in pooled if math.isfinite(to_float(r.get("q_p"))) and to_float(r.get("q_p")) < 0.05]
    het.sort(key=lambda r: (-to_float(r.get("i2")), metric_order.get(r["metric"], 99), variant_rank.get(r["variant"], 99)))
    flagged = [r for r in rows if str(r.get("job_id")) != "ALL" and isinstance(r.get("flag"), str) and r["flag"]]

    def worse(r: Mapping[str, Any]) -> bool:
        return _SEVERITY.get(str(r.get("status")), 3) < _SEVERITY.get(str(r.get("pooled_status")), 3)

    flagged.sort(key=lambda r: (not worse(r), _SEVERITY.get(str(r.get("status")), 3), metric_order.get(r["metric"], 99),
                                variant_rank.get(r["variant"], 99), str(r.get("job_id"))))
    units = {(r["system"], r["condition"]) for r in rows}

    def label(metric: str) -> str:  # "Flip rate", not "Flip rate (top-K boundary crossings)"
        return METRICS[metric].label.split(" (")[0] if metric in METRICS else metric

    def why(r: Mapping[str, Any]) -> str:
        parts = []
        if "crosses threshold" in r["flag"]:
            parts.append("threshold")
        if "opposite sign" in r["flag"]:
            parts.append("opposite sign")
        return ", ".join(parts)

    def loses(r: Mapping[str, Any]) -> str:
        d = fmt_text(r.get("disadvantaged"), "")
        return "" if not d else "reference" if d == "reference" else str(r["variant"])

    signed = lambda r: r["metric"] == "score_delta"  # noqa: E731
    # every job whose status is worse than pooled is shown (they come first), at least JOB_ROWS_SHOWN rows
    shown = max(JOB_ROWS_SHOWN, sum(1 for r in flagged if worse(r)))
    return {
        "present": True,
        "multi_unit": len(units) > 1,
        "n_cells": len(pooled),
        "n_tested": sum(1 for r in pooled if math.isfinite(to_float(r.get("q")))),
        "n_heterogeneous": len(het),
        "heterogeneous": [{"system": r["system"], "condition": r["condition"], "metric": label(r["metric"]),
                           "variant": r["variant"], "pooled": fmt_sig(r.get("value"), CLASSIFY_SIGNIFICANT_DIGITS, signed=signed(r)),
                           "status": _status(r.get("status")), "q": fmt_num(r.get("q"), 2), "df": fmt_int(r.get("q_df")),
                           "p": fmt_p(r.get("q_p")), "i2": f"{100 * to_float(r.get('i2')):.0f}%"}
                          for r in het[:JOB_ROWS_SHOWN]],
        "n_flagged": len(flagged),
        "n_worse": sum(1 for r in flagged if worse(r)),
        "flagged": [{"system": r["system"], "condition": r["condition"], "metric": label(r["metric"]),
                     "variant": r["variant"], "job": r["job_id"],
                     "value": fmt_sig(r.get("value"), CLASSIFY_SIGNIFICANT_DIGITS, signed=signed(r)),
                     "ci": fmt_ci(r.get("ci_low"), r.get("ci_high"), signed=signed(r)),
                     "status": _status(r.get("status")),
                     "pooled": fmt_sig(r.get("pooled_value"), CLASSIFY_SIGNIFICANT_DIGITS, signed=signed(r)),
                     "pooled_status": _status(r.get("pooled_status")),
                     "loses": loses(r), "why": why(r)}
                    for r in flagged[:shown]],
        "shown": shown,
        "shown_het": JOB_ROWS_SHOWN,
    }


def metric_suite_sections(
    *,
    metrics: pd.DataFrame,
    risk: pd.DataFrame,
    drift: pd.DataFrame,
    meta: Mapping[str, Any],
    by_job: pd.DataFrame | None = None,
) -> list[Section]:
    """The report sections of the nine-metric suite (seed 000 §3.8).

    Parameters
    ----------
    metrics : pandas.DataFrame
        ``metrics.csv``: one row per system × condition × metric × variant (reference included)
        with at least ``metric, system, condition, variant, n, value, ci_low, ci_high, p_value,
        p_adj, status, status_operational, notes``; family diagnostics (``marc_raw``,
        ``flip_in_rate``, ``retained``, ``tpr``, ...) are shown where present. A missing status
        (pandas reads the string ``N/A`` as NaN) is shown as N/A.
    risk : pandas.DataFrame
        Risk rows per system × condition × tier; rows with ``system == "ALL"`` are the run totals
        shown in the risk banner (seed 000 Eq. 6).
    drift : pandas.DataFrame
        Qualification drift per system × condition × variant (seed 000 §3.1.2); may be empty.
    meta : Mapping
        Run metadata (reference, K, α, bootstrap, thresholds, variants, axes, jobs, systems, counts).
    by_job : pandas.DataFrame, optional
        ``metrics_by_job.csv`` (:mod:`runtime.analysis.by_job`); adds the ``by-job`` section.

    Returns
    -------
    list of Section
        ``at-a-glance`` (front matter), ``risk`` (with the key figures), ``fail-variants``,
        ``design``, one results section per system × condition (anchor ``u-<system>-<condition>``;
        every metric's chart is an inline SVG string under ``context["metrics"][j]["chart_svg"]``),
        ``by-job`` (when ``by_job`` is given), ``drift`` and ``appendix`` (thresholds and method notes).
        Deterministic in the inputs.
    """
    reference = fmt_text(meta.get("reference"), "BASE")
    thresholds = resolved_thresholds(meta)
    data_variants = [] if metrics is None or len(metrics) == 0 else [str(v) for v in metrics["variant"]]
    variant_order = _ordered([reference, *(meta.get("variants") or {}), *data_variants],
                             [reference])
    units = _units(metrics, meta, thresholds, variant_order, reference)
    metric_ids = _ordered([m["id"] for u in units for m in u["metrics"]] + list(METRICS), METRICS)
    research = thresholds.get("research", {})
    score_file = meta.get("design") == "score_file"
    return [
        *([Section(id="score-source", title="Where the scores come from", template="sections/metric_suite_source.html.j2",
                   context=_source_context(meta, metrics), order=ORDER["source"], toc=False)] if score_file else []),
        Section(id="at-a-glance", title="Design at a glance", template="_glance.html.j2",
                context={"anchor": "at-a-glance", "facts": _facts(meta, reference)}, order=ORDER["facts"], toc=False),
        Section(id="risk", title="Risk summary", template="sections/metric_suite_risk.html.j2",
                context={**_risk(risk), "kpis": _kpis(metrics), "threshold": threshold_text(meta)},
                order=ORDER["summary"]),
        Section(id="fail-variants", title="Variants triggering FAIL",
                template="sections/metric_suite_fail_variants.html.j2",
                context={"rows": _fail_table(units, meta, variant_order), "reference": reference},
                order=ORDER["fail"]),
        Section(id="design", title="Audit design", template="sections/metric_suite_design.html.j2",
                context=_design(meta, variant_order, reference), order=ORDER["design"]),
        *[Section(id=u["anchor"], title=f"Results: system {u['system']}, condition {u['condition']}",
                  template="sections/metric_suite_unit.html.j2", context={**u, "reference": reference},
                  order=ORDER["results"]) for u in units],
        *([Section(id="by-job", title="Per-job results", template="sections/metric_suite_by_job.html.j2",
                   context={**_by_job(by_job, reference, variant_order), "reference": reference},
                   order=ORDER["results"] + 50)] if by_job is not None else []),
        *([] if score_file else [
            Section(id="drift", title="Qualification drift", template="sections/metric_suite_drift.html.j2",
                    context={"rows": _drift(drift, units, variant_order), "reference": reference,
                             "score_delta_pass": fmt_threshold(research.get("score_delta", {}).get("pass"))},
                    order=ORDER["drift"])]),
        Section(id="appendix", title="Thresholds and method", template="sections/metric_suite_appendix.html.j2",
                context={"thresholds": _threshold_table(thresholds, metric_ids, threshold_text(meta)), "reference": reference,
                         "alpha": fmt_threshold(meta.get("alpha")), "n_bootstrap": fmt_int(meta.get("n_bootstrap")),
                         "digits": CLASSIFY_SIGNIFICANT_DIGITS, "ranking": meta.get("ranking") or "swap_in",
                         "threshold": threshold_text(meta)},
                order=ORDER["appendix"]),
    ]
