"""The design of a metric-suite run in the report: the facts at a glance, the decision rule in words, the
variants and how their levels were signalled, the jobs and counts, and a score-file audit's source
(seed 000 §3.8; issue 15)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd

from compiler.onet import ATTRIBUTION
from runtime.report.formatting import MISSING, fmt_int, fmt_num, fmt_text, fmt_threshold, is_missing, to_float
from runtime.report.meta import ReportMeta
from runtime.report.sections.metric_suite.common import unique
from runtime.report.sections.metric_suite.texts import COUNT_LABELS, GENERATION_COUNTS
from runtime.report.sections.metric_suite.thresholds import threshold_text

#: Cue options shown per level in the design section (the rest are counted).
CUES_SHOWN = 3


def decision_rule_text(meta: ReportMeta) -> str:
    """The decision rule in words, for the design facts (issue 15)."""
    t = threshold_text(meta.threshold)
    if t is not None:
        return (f"a candidate is selected when its score is at or above {t}, on each system's own scale "
                "(analysis.decision.threshold)")
    if (meta.decision or {}).get("top_k") is not None:
        return "the K best-scored candidates of each job are selected (analysis.decision.top_k)"
    return ("the K best-scored candidates of each job are selected: the tool's default rule (the spec does "
            "not state the system's own decision rule in analysis.decision)")


def k_text(meta: ReportMeta) -> str:
    """K per metric family as the design facts print it ("counterfactual 10 · group 10 · merit 20")."""
    return " · ".join(f"{f} {fmt_text(v)}" for f, v in meta.k.items()) or MISSING


def selection_rule_text(meta: ReportMeta) -> str:
    """What "selected" means in this run, for page 1's verdict: :func:`decision_rule_text` and, under a top-K
    rule, K ("K = 10" when every metric family reads the same K, else :func:`k_text`)."""
    rule = decision_rule_text(meta)
    if threshold_text(meta.threshold) is not None or not meta.k:
        return rule
    ks = {fmt_text(v) for v in meta.k.values()}
    return f"{rule}; K = {ks.pop()}" if len(ks) == 1 else f"{rule}; K per metric family: {k_text(meta)}"


def facts(meta: ReportMeta, reference: str) -> list[dict[str, Any]]:
    """The design at a glance (front matter): decision rule, K, reference variant, α, bootstrap."""
    thr = threshold_text(meta.threshold)
    return [
        {"label": "Decision rule", "value": decision_rule_text(meta), "code": False},
        {"label": "Shortlist size K" + (" (MARC and nDCG@K only)" if thr is not None else ""),
         "value": k_text(meta), "code": False},
        {"label": "Reference variant", "value": reference, "code": True},
        {"label": "Significance level", "value": f"α = {fmt_threshold(meta.alpha)} (BH-adjusted)",
         "code": False},
        {"label": "Bootstrap resamples", "value": fmt_int(meta.n_bootstrap), "code": False},
    ]


def levels(meta: ReportMeta, variant: str) -> list[dict[str, str]]:
    """The levels of ``variant``, one per axis in the spec's axis order, each with its label when the spec
    writes one (:meth:`ReportMeta.level_text`, issue 31 §3)."""
    lv = meta.variants.get(variant) or {}
    axes = unique(list(lv), meta.axes)
    return [{"axis": a, "level": meta.level_text(lv.get(a), a)} for a in axes]


def design(meta: ReportMeta, variant_order: list[str], reference: str) -> dict[str, Any]:
    """The "Audit design" section: variants and their levels, signals, jobs, counts, blind systems."""
    variants = meta.variants
    axes = unique([a for v in variants.values() for a in (v or {})], meta.axes)
    ref_levels = variants.get(reference) or {}
    rows = []
    for v in unique(list(variants), variant_order):
        lv = variants.get(v) or {}
        rows.append({
            "variant": v,
            "is_reference": v == reference,
            "cells": [{"level": meta.level_text(lv.get(a), a),
                       "differs": v != reference and lv.get(a) != ref_levels.get(a)} for a in axes],
        })
    score_file = meta.score_file
    counts = [{"label": ("Variant résumés scored" if score_file and k == "resumes"
                         else COUNT_LABELS.get(k, k.replace("_", " ").capitalize())),
               "value": f"{to_float(v):,.2f}" if "cost" in k and not is_missing(v) else fmt_num(v)}
              for k, v in meta.counts.items()
              if not (score_file and k in GENERATION_COUNTS)]  # nothing was generated, embedded or asked
    jobs = [{"id": fmt_text(j.id), "title": fmt_text(j.title), "source": j.source} for j in meta.jobs]
    return {"axes": axes, "variants": rows, "jobs": jobs, "counts": counts, "reference": reference,
            "market": meta.market, "job_sources": any(j.source for j in meta.jobs),
            "onet_attribution": ATTRIBUTION if any(j.source.startswith("O*NET") for j in meta.jobs) else "",
            "signals": signals(meta), "score_file": score_file,
            "source": source_facts(meta.source),
            "blind": [{"system": s.id, "resumes": fmt_int(s.blind.get("resumes")),
                       "file_sha256": s.blind.get("file_sha256") or MISSING,
                       "key_file": s.blind.get("key_file") or "blind_key.csv",
                       "sealed_file": s.blind.get("sealed_file") or MISSING,
                       "history": s.blind.get("history") or []}
                      for s in meta.systems if s.blind is not None]}


def signals(meta: ReportMeta) -> list[dict[str, Any]]:
    """How each axis's levels were signalled: the slot and cues the tool wrote, or a score-file audit's
    description and example cues (issue 15). One row per axis x level."""
    out = []
    for axis, a in meta.signals.items():
        cues, examples = a.get("cues") or {}, a.get("examples") or {}
        drawn = (a.get("names") or {}).get("levels") or {}
        for i, level in enumerate(a.get("levels") or []):
            texts = [c for c in (cues.get(level) or []) if c] or list(examples.get(level) or [])
            shown = ", ".join(f"“{t}”" for t in texts[:CUES_SHOWN])
            if len(texts) > CUES_SHOWN:
                shown += f" and {len(texts) - CUES_SHOWN} more"
            if level in drawn:  # issue 32 §3: every drawn name with its two measured signals
                lv = drawn[level]
                shown = ", ".join(f"“{d['name']}” ({lv['sex']} {d['sex_signal']:.2f}, {lv['race']} "
                                  f"{d['race_signal']:.2f})" for d in lv["names"])
            if not texts and level in cues:
                shown = "(nothing written)"
            out.append({"axis": axis if i == 0 else "", "rows": len(a.get("levels") or []) if i == 0 else 0,
                        "slot": a.get("slot") or "" if i == 0 else "",
                        "description": (a.get("description") or _names_text(a.get("names"))) if i == 0 else "",
                        "level": meta.level_text(level, axis), "texts": shown,
                        "kind": "cues written by the tool" if cues else ("examples given by the auditor" if examples else "")})
    return out


def _names_text(names: Mapping[str, Any] | None) -> str:
    """How a ``names`` axis drew its cues, in words (issue 32 §3); "" for other axes."""
    if not names:
        return ""
    return (f"{names['per_level']} names per level drawn from the bundled tables ({names['table']}: SSA first "
            f"names of the {names['decade']}s, Census 2010 surnames), each with a sex signal (share of the "
            f"level's sex among births with the first name) and a race signal (share of the level's race among "
            f"people with the surname) of at least {names['floor']:g}; every name and signal is in cues.csv")


def source_context(meta: ReportMeta, metrics: pd.DataFrame) -> dict[str, Any]:
    """The first-page box of a score-file audit (issue 15): the source facts, the systems, whether the
    export had match labels, and what the lock's time does and does not show."""
    source = meta.source or {}
    merit = metrics[metrics["family"] == "merit"] if metrics is not None and "family" in metrics else None
    unlabelled = merit is not None and len(merit) > 0 and bool((merit["status"] == "N/A").all())
    return {"facts": source_facts(source), "systems": [s.id for s in meta.systems],
            "unlabelled": unlabelled, "locked": str(meta.lock_created_at or "")[:10],
            "exported": str(source.get("exported") or "")}


def source_facts(source: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    """The ``source`` block of a score-file audit as label/value facts (issue 15); empty without one."""
    if not source:
        return []
    labels = [("producer", "Scores produced by"), ("system", "System"), ("version", "Version"),
              ("exported", "Exported"), ("contact", "Contact"), ("variants_made", "How the variants were made")]
    return [{"label": label, "value": str(source[k]), "wide": k == "variants_made", "code": False}
            for k, label in labels if source.get(k)]
