"""Tests of runtime.report: the self-contained HTML report and its PDF (seed 000 §3.8).

The report is the shared core (header, amendments, timings, versions, provenance) plus the sections
the audit families contribute; these tests render the metric_suite family's sections through the
one base template.
"""

from __future__ import annotations

import math
import os
from dataclasses import replace
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from compiler.catalog import DEFAULT_K, METRIC_IDS, METRICS, default_thresholds
from compiler.methods import RANKING
from runtime.report import (
    ReportJob,
    ReportMeta,
    ReportSystem,
    Section,
    build_core,
    metric_suite_sections,
    render_pdf,
    render_report,
)
from runtime.report.formatting import fmt_ci, fmt_p, fmt_sig

AUDIT = "ats-ranker-q4"
DIGEST = "9f2c4e1a7b3d5f6e8a0c2b4d6f8e0a1c3b5d7f9e1a2c4b6d8f0e2a4c6b8d0f1e"
REFERENCE = "BASE"
AXES = ["sex_gender", "age_signal", "place_of_residence", "language_signal", "disability_signal"]
VARIANTS = {
    "BASE": ("Male-FR", "Young", "Close", "FR only", "No"),
    "V01": ("Female-FR", "Older", "Far", "FR+EN", "No"),
    "V02": ("Female-FR", "Young", "Very far", "FR+AR", "Yes"),
    "V03": ("Male-FR", "Older", "Close", "FR+AR", "Yes"),
    "V04": ("Female-NA", "Young", "Far", "FR+AR", "Yes"),
    "V05": ("Male-NA", "Older", "Very far", "FR+EN", "No"),
    "V06": ("Female-FR", "Older", "Close", "FR only", "Yes"),
    "V07": ("Male-NA", "Young", "Far", "FR only", "No"),
    "V08": ("Female-NA", "Older", "Close", "FR+EN", "No"),
    "V09": ("Male-FR", "Young", "Very far", "FR+EN", "Yes"),
}
#: The variant whose impact ratio FAILs, and the metric × variant that is N/A.
FAIL_VARIANT = "V04"
NA_CELL = ("recall_at_k", "V09")

SECTION_HEADINGS = [
    "Variants with FAIL, INCONCLUSIVE or INVESTIGATE findings",
    "Audit design",
    "Variants (treatments) and their levels",
    "Jobs",
    "Systems under test",
    "Results: system",
    "Qualification drift",
    "Amendments",
    "Seed 000 Eq. 6 on point estimates, not a verdict",
    "Key figures (research tier)",
    "Thresholds and method",
    "Thresholds (both tiers, as locked)",
    "Method notes",
    "Timings",
    "Software versions",
]


def _classify(value: float, bounds: dict[str, float], direction: str, classify_abs: bool) -> str:
    if not math.isfinite(value):
        return "N/A"
    v = float(f"{abs(value) if classify_abs else value:.6g}")
    if direction == "lower":
        return "PASS" if v <= bounds["pass"] else "INVESTIGATE" if v <= bounds["investigate"] else "FAIL"
    return "PASS" if v >= bounds["pass"] else "INVESTIGATE" if v >= bounds["investigate"] else "FAIL"


def make_inputs(*, fail: bool = True) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame, ReportMeta]:
    """A realistic run: 1 system, 1 condition, BASE + 9 variants, all 9 metrics (seed 002 §4)."""
    thresholds = default_thresholds()
    gen = np.random.default_rng(20261129)
    n_pairs, jobs = 500, 5
    rows = []
    for metric in METRIC_IDS:
        info = METRICS[metric]
        if not info.seed000:  # seed 000's nine metrics (tests/test_selection_ratio.py renders the selection ratio)
            continue
        for v in VARIANTS:
            ref = v == REFERENCE
            k = DEFAULT_K[info.family]
            row: dict = {c: math.nan for c in (
                "marc_raw", "flip_in_rate", "flip_out_rate", "n_in_out", "n_out_in", "retained", "slots",
                "tp", "p", "fp", "negatives", "tpr", "fpr", "jobs_used")}
            p_value = math.nan
            notes = ""
            if metric == "score_delta":
                value = 0.0 if ref else float(gen.uniform(0.0013, 0.0074))
                if v == "V06":
                    value = 0.0074
                half = 0.0 if ref else 0.0021
                lo, hi = value - half, value + half
                p_value = math.nan if ref else (7.96e-5 if v == "V06" else float(gen.uniform(0.02, 0.9)))
                if ref:
                    notes = "reference: all paired differences are zero; Wilcoxon undefined"
            elif metric == "marc":
                raw = 0.0 if ref else float(gen.uniform(2.1, 4.6))
                if v == "V06":
                    raw = 5.63
                value = raw / k
                row["marc_raw"] = raw
                lo, hi = (value, value) if ref else (value - 0.04, value + 0.04)
                p_value = math.nan if ref else float(gen.uniform(1e-4, 0.5))
            elif metric == "flip_rate":
                n_in_out = 0 if ref else int(gen.integers(3, 10))
                n_out_in = n_in_out
                value = (n_in_out + n_out_in) / n_pairs
                row.update(n_in_out=n_in_out, n_out_in=n_out_in, flip_in_rate=n_out_in / n_pairs,
                           flip_out_rate=n_in_out / n_pairs)
                lo, hi = max(0.0, value - 0.012), value + 0.015
                p_value = 1.0
            elif metric in ("retention_rate", "impact_ratio"):
                retained = 50 if ref else int(gen.integers(43, 50))
                if v == FAIL_VARIANT:
                    retained = 33
                value = retained / 50
                row.update(retained=retained, slots=50)
                lo, hi = value - 0.05, min(1.0, value + 0.04) if metric == "retention_rate" else value + 0.04
                if metric == "impact_ratio":
                    p_value = 1.0 if ref else (0.00041 if v == FAIL_VARIANT else float(gen.uniform(0.2, 1.0)))
                if v == FAIL_VARIANT and metric == "impact_ratio":
                    notes = "shortlist retention of this variant is 66% of the reference's"
            elif metric == "recall_at_k":
                value = 0.84 if ref else float(gen.uniform(0.81, 0.86))
                row["jobs_used"] = jobs
                lo, hi = value - 0.06, min(1.0, value + 0.05)
                if v == NA_CELL[1]:
                    value = lo = hi = math.nan
                    row["jobs_used"] = 0
                    notes = "no job has a true match in this variant's scored pool"
            elif metric == "ndcg_at_k":
                value = 0.78 if v in ("BASE", "V04", "V07") else float(gen.uniform(0.80, 0.83))
                row["jobs_used"] = jobs
                lo, hi = value - 0.05, value + 0.05
                if ref:
                    notes = "baseline ranking quality, not a bias effect"
            else:
                tpr_ref = 0.84
                tpr = tpr_ref if ref else float(np.round(gen.uniform(0.80, 0.88), 2))
                fpr = 0.0 if ref else 0.004
                row.update(tp=round(tpr * 250), p=250, tpr=tpr)
                value = abs(tpr - tpr_ref)
                if metric == "equalized_odds_gap":
                    row.update(fp=round(fpr * 250), negatives=250, fpr=fpr)
                    value = max(value, fpr)
                lo, hi = max(0.0, value - 0.03), value + 0.03
            research = _classify(value, thresholds["research"][metric], info.direction, info.classify_abs)
            operational = _classify(value, thresholds["operational"][metric], info.direction, info.classify_abs)
            rows.append({
                "family": info.family, "metric": metric, "system": "minilm", "condition": "neutral",
                "variant": v, "reference": REFERENCE, "n": n_pairs if info.family == "counterfactual" else jobs,
                "value": value, "ci_low": lo, "ci_high": hi, "p_value": p_value, "p_adj": math.nan,
                "test": info.test, "direction": info.direction, "status": research,
                "status_operational": operational, "notes": notes, "k": k, **row,
            })
    metrics = pd.DataFrame(rows)
    tested = metrics["p_value"].notna()
    # Benjamini–Hochberg by hand (the report only displays it)
    p = metrics.loc[tested, "p_value"].to_numpy()
    order = np.argsort(p)
    adj = np.empty_like(p)
    adj[order] = np.minimum.accumulate((p[order] * len(p) / np.arange(1, len(p) + 1))[::-1])[::-1]
    metrics.loc[tested, "p_adj"] = np.minimum(adj, 1.0)
    if not fail:
        metrics.loc[metrics["status"] == "FAIL", "status"] = "INVESTIGATE"
        metrics.loc[metrics["status_operational"] == "FAIL", "status_operational"] = "INVESTIGATE"

    risk_rows = []
    for tier, col in (("research", "status"), ("operational", "status_operational")):
        c = metrics[col].value_counts()
        n_fail, n_inv, n_pass = int(c.get("FAIL", 0)), int(c.get("INVESTIGATE", 0)), int(c.get("PASS", 0))
        n_total = n_fail + n_inv + n_pass
        score = (3 * n_fail + n_inv) / (3 * n_total)
        band = "high" if score >= 0.30 else "medium" if score >= 0.15 else "low"
        for system in ("minilm", "ALL"):
            risk_rows.append({"system": system, "condition": "neutral", "tier": tier, "n_total": n_total,
                              "n_fail": n_fail, "n_investigate": n_inv, "n_pass": n_pass,
                              "n_na": int(c.get("N/A", 0)), "risk_score": score, "band": band})
    risk = pd.DataFrame(risk_rows)

    drift_rows = []
    for v in VARIANTS:
        if v == REFERENCE:
            continue
        d = np.abs(gen.normal(0.004, 0.003, 200))
        drift_rows.append({"system": "minilm", "condition": "neutral", "variant": v, "n": 200,
                           "mean_abs_delta": d.mean(), "median_abs_delta": float(np.median(d)),
                           "p95_abs_delta": float(np.quantile(d, 0.95)), "max_abs_delta": d.max()})
    drift = pd.DataFrame(drift_rows)

    meta = ReportMeta(
        audit=AUDIT,
        title="Counterfactual audit of the semantic ranker",
        seed=20261129,
        spec_path="specs/ats-ranker-q4.yaml",
        spec_digest={"algorithm": "sha256", "digest": DIGEST},
        lock_created_at="2026-11-29T09:12:44Z",
        generated_at="2026-11-29T10:03:17Z",
        run_id="20261129T100117Z-9f2c4e1a",
        tool_version="0.1.0",
        reference=REFERENCE,
        k=dict(DEFAULT_K),
        alpha=0.05,
        n_bootstrap=1000,
        ranking=RANKING,
        thresholds=thresholds,
        systems=(ReportSystem(id="minilm", kind="embedding", model="sentence-transformers/all-MiniLM-L6-v2",
                              fingerprint="sha256:3c9d1e0f5a7b2c4d6e8f0a1b3c5d7e9f1a2b4c6d8e0f2a3b5c7d9e1f3a5b7c9d",
                              score_range=(0, 1)),),
        jobs=(ReportJob("data-analyst", "Data Analyst"), ReportJob("backend-dev", "Backend Developer (Python)"),
              ReportJob("hr-officer", "HR Officer"), ReportJob("accountant", "Accountant"),
              ReportJob("sales-rep", "Field Sales Representative")),
        variants={v: dict(zip(AXES, levels)) for v, levels in VARIANTS.items()},
        axes=tuple(AXES),
        counts={"jobs": 5, "base_candidates": 500, "variants": 10, "resumes": 5000, "scored": 5000},
        amendments=(),
        timings={"generate": 12.41, "score": 48.2, "rank": 0.31, "analyse": 95.7, "report": 3.2},
        versions={"audit-compiler": "0.1.0", "numpy": "2.1.3", "pandas": "2.2.3", "scipy": "1.14.1",
                  "statsmodels": "0.14.4", "sentence-transformers": "3.3.1", "matplotlib": "3.9.2"},
    )
    return metrics, risk, drift, meta


@pytest.fixture(scope="module")
def inputs():
    return make_inputs()


def report_parts(*, metrics, risk, drift, meta) -> dict:
    """The shared core and the metric_suite sections, with the sections' data by name."""
    core = build_core(meta)
    sections = metric_suite_sections(metrics=metrics, risk=risk, drift=drift, meta=meta)
    by_id = {s.id: s.context for s in sections}
    return {"core": core, "sections": sections,
            "units": [s.context for s in sections if s.template == "sections/metric_suite_unit.html.j2"],
            "fail_variants": by_id["fail-variants"]["rows"], "risk": by_id["risk"], "kpis": by_id["risk"]["kpis"]}


def render_html_of(context: dict) -> str:
    return render_report(context["core"], context["sections"])


@pytest.fixture(scope="module")
def context(inputs):
    metrics, risk, drift, meta = inputs
    return report_parts(metrics=metrics, risk=risk, drift=drift, meta=meta)


@pytest.fixture(scope="module")
def html(context):
    return render_html_of(context)


def _headings(html: str) -> list[str]:
    return [re.sub(r"<[^>]+>", "", h).strip() for h in re.findall(r"<h[1-4][^>]*>(.*?)</h[1-4]>", html, re.S)]


def _text(html: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html))


# ------------------------------------------------------------------------------------------ HTML


def test_fixture_has_the_required_mix(inputs):
    metrics = inputs[0]
    assert set(metrics["status"]) == {"PASS", "INVESTIGATE", "FAIL", "N/A"}
    assert metrics["p_value"].isna().any() and metrics["p_value"].notna().any()
    assert len(metrics) == 90


def test_every_section_heading_is_present_in_order(html):
    heads = _headings(html)
    positions = []
    for wanted in SECTION_HEADINGS:
        hits = [i for i, h in enumerate(heads) if h.startswith(wanted)]
        assert hits, f"missing heading {wanted!r}"
        positions.append(hits[0])
    main = [positions[SECTION_HEADINGS.index(h)] for h in (
        "Variants with FAIL, INCONCLUSIVE or INVESTIGATE findings", "Audit design", "Results: system", "Qualification drift", "Amendments",
        "Seed 000 Eq. 6 on point estimates, not a verdict", "Key figures (research tier)", "Thresholds and method",
        "Timings")]
    assert main == sorted(main)


def test_contents_list_every_section_in_order_and_front_matter_comes_first(html, context):
    toc = html.split('<nav class="toc">', 1)[1].split("</nav>", 1)[0]
    anchors = re.findall(r'href="#([^"]+)"', toc)
    assert anchors == ["fail-variants", "design", "u-minilm-neutral", "drift", "amendments", "risk", "appendix",
                       "glossary", "run-record"]
    body = html.split("</nav>", 1)[1]
    assert [a for a in re.findall(r'<section[^>]* id="([^"]+)"', body) if a in anchors] == anchors
    # the design's key settings are front matter: between the header and the contents, not listed
    top = html[: html.index('<nav class="toc">')]
    assert 'id="at-a-glance"' in top and "at-a-glance" not in anchors
    assert "Shortlist size K" in top and "Bootstrap resamples" in top


def test_two_sections_with_one_anchor_are_refused(context):
    twin = Section(id="risk", title="Another risk", template="sections/metric_suite_drift.html.j2")
    with pytest.raises(ValueError, match="share the anchor 'risk'"):
        render_report(context["core"], [*context["sections"], twin])


def test_one_chart_per_metric_in_catalogue_order(html):
    shown = [m for m in METRIC_IDS if METRICS[m].seed000]  # the fixture's nine metrics
    assert html.count("<svg") == len(shown) == 9
    ids = re.findall(r'<section class="metric" id="m-minilm-neutral-([a-z_]+)"', html)
    assert ids == shown
    for metric in shown:
        assert METRICS[metric].label in _text(html).replace("&amp;", "&") or METRICS[metric].label in html


def test_self_contained(html):
    assert "http://" not in html and "https://" not in html
    assert "<script" not in html
    assert not re.search(r"""<link\b|@import|url\((?!#)|src=""", html)


def test_charts_mark_thresholds_reference_and_status_colours(context):
    unit = context["units"][0]
    chart = {m["id"]: m["chart_svg"] for m in unit["metrics"]}
    assert "PASS ≤ 0.5" in chart["marc"] and "INVESTIGATE ≤ 0.7" in chart["marc"]
    assert "PASS ≥ 0.8" in chart["impact_ratio"]
    assert "PASS |Δ| ≤ 0.02" in chart["score_delta"]
    assert "(reference)" in chart["ndcg_at_k"]
    assert "#c62828" in chart["impact_ratio"]  # the FAIL bar
    assert "#e0a526" in chart["ndcg_at_k"]  # INVESTIGATE bars
    assert "N/A" in chart["recall_at_k"]
    assert "stroke-dasharray" in chart["marc"]  # dashed threshold lines


def test_fail_variant_is_in_the_fail_table(html, context, inputs):
    metrics = inputs[0]
    flagged = metrics[(metrics["variant"] != REFERENCE) & metrics["status"].isin(["FAIL", "INVESTIGATE"])]
    # every variant with a FAIL or INVESTIGATE row, in variant order, each with exactly its flagged rows
    assert [f["variant"] for f in context["fail_variants"]] == sorted(set(flagged["variant"]))
    assert {(f["variant"], len(f["failing"])) for f in context["fail_variants"]} == set(
        flagged.groupby("variant").size().items())
    section = html.split('id="fail-variants"', 1)[1].split("</section>", 1)[0]
    assert f"<strong>{FAIL_VARIANT}</strong>" in section
    assert "Shortlist retention ratio (seed 000&#39;s impact ratio)" in section
    assert "four-fifths" not in section
    assert "sex_gender: Female-NA" in section
    assert "No variant has a FAIL" not in section


def test_no_flagged_row_says_so():
    metrics, risk, drift, meta = make_inputs(fail=False)
    metrics["status"] = metrics["status_operational"] = "PASS"
    html = render_html_of(report_parts(metrics=metrics, risk=risk, drift=drift, meta=meta))
    assert "No variant has a FAIL or INCONCLUSIVE status under either tier, nor a seed-000 INVESTIGATE." in html


def test_both_risk_tiers_are_shown_and_labelled(html, context):
    tiers = [r["tier"] for r in context["risk"]["overall"]]
    assert tiers == ["research", "operational"]
    text = _text(html)
    assert "Research tier (primary)" in text and "Operational tier" in text
    assert "RiskScore = (3 · n_FAIL + 1 · n_INVESTIGATE) / (3 · n_total)" in text
    # seed 000's band is named as Eq. 6's, in plain text: no status colour, no "Low risk" headline
    assert re.search(r"Eq\. 6 band: (low|medium|high)", text)
    assert "band-low" not in html and "Low risk" not in text and "High risk" not in text


def test_kpis_count_research_statuses(context, inputs):
    metrics = inputs[0]
    k = context["kpis"]
    assert k["total"] == "90"
    assert k["fail"] == str((metrics["status"] == "FAIL").sum())
    assert k["inconclusive"] == str((metrics["status"] == "INCONCLUSIVE").sum())
    assert k["pass"] == str((metrics["status"] == "PASS").sum())


def test_header_shows_configuration_and_full_digest(html):
    text = _text(html)
    for s in (AUDIT, "20261129T100117Z-9f2c4e1a", DIGEST, "specs/ats-ranker-q4.yaml", "2026-11-29T09:12:44Z",
              "2026-11-29T10:03:17Z", "20261129", "audit-compiler 0.1.0", "counterfactual 10", "merit 15"):
        assert s in text, s


def test_tables_show_numbers_formatted_and_missing_as_dash(context):
    marc = next(m for m in context["units"][0]["metrics"] if m["id"] == "marc")
    v06 = next(r for r in marc["rows"] if r["variant"] == "V06")
    # values are shown at the 6 significant digits they are classified with
    assert v06["value"] == "0.563000" and v06["status"] == "INVESTIGATE"
    assert marc["diag_headers"] == ["MARC (rank units)"] and v06["diagnostics"] == ["5.630"]
    assert marc["rows"][0]["variant"] == REFERENCE and marc["rows"][0]["p"] == "—"
    recall = next(m for m in context["units"][0]["metrics"] if m["id"] == "recall_at_k")
    na = next(r for r in recall["rows"] if r["variant"] == NA_CELL[1])
    assert (na["value"], na["ci"], na["status"]) == ("—", "—", "N/A")
    assert not recall["has_test"]
    flip = next(m for m in context["units"][0]["metrics"] if m["id"] == "flip_rate")
    assert flip["diag_headers"] == ["Flip-in rate (out→in)", "Flip-out rate (in→out)"]
    sd = next(m for m in context["units"][0]["metrics"] if m["id"] == "score_delta")
    assert next(r for r in sd["rows"] if r["variant"] == "V06")["p"] == "7.96×10⁻⁵"


def test_formatters():
    assert fmt_sig(0.0074) == "0.007400"
    assert fmt_sig(0.0074, signed=True) == "+0.007400"
    assert fmt_sig(-0.0123, signed=True) == "−0.01230"
    assert fmt_sig(float("nan")) == "—"
    assert fmt_sig(None) == "—"
    assert fmt_p(7.96e-5) == "7.96×10⁻⁵"
    assert fmt_p(0.0032) == "0.0032"
    assert fmt_p(float("nan")) == "—"
    assert fmt_ci(0.1, float("nan")) == "—"
    assert fmt_ci(0.1, 0.2) == "[0.1000, 0.2000]"


def test_status_read_back_from_csv_as_nan_is_na(inputs):
    metrics, risk, drift, meta = inputs
    m = metrics.copy()
    m.loc[m["status"] == "N/A", "status"] = math.nan  # what pd.read_csv does with "N/A"
    ctx = report_parts(metrics=m, risk=risk, drift=drift, meta=meta)
    recall = next(x for x in ctx["units"][0]["metrics"] if x["id"] == "recall_at_k")
    assert next(r for r in recall["rows"] if r["variant"] == NA_CELL[1])["status"] == "N/A"


def test_amendments_listed_or_none(inputs, html):
    assert "None: the run uses the spec as locked." in html
    metrics, risk, drift, meta = inputs
    amended = replace(meta, amendments=({"at": "2026-11-29T09:40:00Z", "reason": "widen <score_delta>",
                                         "changed": {"thresholds.operational.score_delta.pass": [0.04, 0.05]}},))
    out = render_html_of(report_parts(metrics=metrics, risk=risk, drift=drift, meta=amended))
    assert re.search(r"Amendment 1</strong>\s*<dl><dt>reason</dt><dd>widen &lt;score_delta&gt;</dd>", out)
    assert "thresholds.operational.score_delta.pass: 0.04, 0.05" in out
    assert "None: the run uses the spec as locked." not in out


def test_every_kind_of_report_lists_amendments_with_their_reasons(inputs):
    """The amendments are a shared part of the base template: a population run (no metric_suite
    sections) lists each one with its reason, as the README promises."""
    meta = replace(inputs[3], amendments=(
        {"reason": "more bootstrap draws", "amended at (UTC)": "2026-11-29T09:40:00Z",
         "superseded lock": "2026-11-29T09:12:44Z, sha256 00ff",
         "changed keys": ["candidates.estimation.bootstrap: 100 -> 200"]},
        {"amended at (UTC)": "2026-11-29T09:50:00Z", "changed keys": ["title: a -> b"]}))
    out = render_report(build_core(meta, kind="Population audit report (causal decomposition)"), [])
    assert re.search(r"Amendment 1</strong>\s*<dl><dt>reason</dt><dd>more bootstrap draws</dd>", out)
    assert "candidates.estimation.bootstrap: 100 -&gt; 200" in out and "2026-11-29T09:40:00Z" in out
    assert re.search(r"Amendment 2</strong>\s*<dl><dt>reason</dt><dd>\(none recorded\)</dd>", out)
    toc = out.split('<nav class="toc">', 1)[1].split("</nav>", 1)[0]
    assert re.findall(r'href="#([^"]+)"', toc) == ["amendments", "glossary", "run-record"]
    assert "Population audit report (causal decomposition)" in out


def test_llm_section_after_drift_with_rates_calls_and_manipulation_check(inputs, context):
    from runtime.report import llm_sections

    llm = {"validity": [{"system": "judge", "condition": "neutral", "answers": 40, "valid": 38, "invalid": 2,
                         "valid_response_rate": 0.95, "replicates": 2, "cells_without_valid_answer": 1,
                         "excluded_base_candidates": ["j1-cv003"]}],
           "calls": {"judge": {"calls": 40, "from_cache": 0, "retries": 1, "invalid": 2, "tokens_in": 12000,
                               "tokens_out": 400}},
           "generator": {"model": "smollm2", "flags": 1, "followups": 0,
                         "manipulation_check": [{"variant": "V01", "axis": "sex_gender", "intended": "Female-FR",
                                                 "n": 10, "classified_as_intended": 7, "rate": 0.7, "defaulted": 1}],
                         "phase_a": {"data-analyst": {"requested_matching": 5, "labelled_matching": 4}}},
           "replicates": {"judge": 2}}
    assert llm_sections(None) == [] and llm_sections({}) == []
    out = render_report(context["core"], [*context["sections"], *llm_sections(llm)])
    heads = _headings(out)
    assert heads.index("Qualification drift") < heads.index("LLM screeners and generation agents") < heads.index(
        "Amendments")
    for text in ("Valid-response rate", "Manipulation check (axis classifier)",
                 "Replicates\n  are averaged per candidate before ranking", "Model calls", "<strong>95.0%</strong>",
                 "<strong>70.0%</strong>", "j1-cv003", "data-analyst: 4 labelled matching of 5 requested"):
        assert text in out, text
    assert 'href="#llm"' in out.split("</nav>", 1)[0]


def test_a_family_outside_the_report_package_brings_its_own_template(context, tmp_path, monkeypatch):
    """A new family touches only its own files: its section template can live beside its code."""
    pkg = tmp_path / "demo_family"
    (pkg / "templates").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "templates" / "demo.html.j2").write_text(
        '{% import "_macros.html.j2" as m %}<section id="demo"><h2>Demo family</h2>'
        '<p>{{ section.n }} rows for {{ core.header.audit }} {{ m.badge("PASS") }}</p></section>\n')
    monkeypatch.syspath_prepend(str(tmp_path))
    demo = Section(id="demo", title="Demo family", template="demo_family:demo.html.j2", context={"n": 3}, order=650)
    out = render_report(context["core"], [*context["sections"], demo])
    assert f"<p>3 rows for {AUDIT} " in out and 'href="#demo"' in out
    heads = _headings(out)
    assert heads.index("Qualification drift") < heads.index("Demo family") < heads.index("Amendments")


def test_autoescape(inputs):
    metrics, risk, drift, meta = inputs
    m = metrics.copy()
    m.loc[0, "notes"] = "<script>alert(1)</script>"
    out = render_html_of(report_parts(metrics=m, risk=risk, drift=drift,
                                    meta=replace(meta, title="A & B <i>audit</i>")))
    assert "<script>" not in out and "&lt;script&gt;" in out
    assert "A &amp; B &lt;i&gt;audit&lt;/i&gt;" in out


def test_empty_drift_is_explained(inputs):
    metrics, risk, drift, meta = inputs
    out = render_html_of(report_parts(metrics=metrics, risk=risk, drift=drift.iloc[0:0], meta=meta))
    assert "No qualification-drift statistics were computed for this run." in out


def test_deterministic(inputs, html):
    metrics, risk, drift, meta = inputs
    again = render_html_of(report_parts(metrics=metrics.copy(), risk=risk.copy(), drift=drift.copy(), meta=meta))
    assert again == html


def test_deterministic_across_processes(html, tmp_path):
    """SVG ids and text must not depend on process state (hash seeds, figure counters)."""
    import sys

    script = (
        "import sys, importlib.util\n"
        f"spec = importlib.util.spec_from_file_location('t', {str(Path(__file__))!r})\n"
        "t = importlib.util.module_from_spec(spec); spec.loader.exec_module(t)\n"
        "m, r, d, meta = t.make_inputs()\n"
        "sys.stdout.write(t.render_html_of(t.report_parts(metrics=m, risk=r, drift=d, meta=meta)))\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, check=True,
                         cwd=Path(__file__).resolve().parents[1],
                         env={"PYTHONHASHSEED": "123", "PATH": "/usr/bin:/bin"})
    assert out.stdout.decode() == html


# ------------------------------------------------------------------------------------------- PDF


@pytest.mark.slow
def test_pdf_renders_with_page_numbers_and_ids(context, tmp_path):
    pdf = tmp_path / "report.pdf"
    render_pdf(context["core"], pdf, html=render_html_of(context))
    data = pdf.read_bytes()
    assert data.startswith(b"%PDF")
    if shutil.which("pdftotext") is None:
        pytest.skip("pdftotext (poppler-utils) is not installed")
    text = subprocess.run(["pdftotext", "-layout", str(pdf), "-"], capture_output=True, check=True).stdout.decode()
    assert "Page 1 of" in text
    assert AUDIT in text
    assert DIGEST in text.replace("\n", "")
    pages = int(re.search(r"Page 1 of (\d+)", text).group(1))
    assert pages >= 5
    assert f"Page {pages} of {pages}" in text


def test_element_ids_unique_and_every_internal_reference_resolves(html):
    ids = re.findall(r'\sid="([^"]*)"', html)
    assert len(ids) == len(set(ids))
    refs = set(re.findall(r'(?:href="#|url\(#)([^")]+)', html))
    assert refs and refs <= set(ids)


def test_several_systems_conditions_and_many_variants(inputs):
    metrics, risk, drift, meta = inputs
    frames = []
    for system in ("minilm", "vendor"):
        for condition in ("neutral", "blind"):
            f = metrics.copy()
            f["system"], f["condition"] = system, condition
            frames.append(f)
    extra = metrics[metrics["variant"] == "V01"].copy()
    many = [extra.assign(variant=f"V{i:02d}") for i in range(10, 31)]
    big = pd.concat([*frames, *many], ignore_index=True)
    meta2 = replace(meta, systems=(*meta.systems, ReportSystem(id="vendor", kind="precomputed", model="vendor-v3",
                                                               fingerprint="sha256:00", score_range=(0, 100))))
    ctx = report_parts(metrics=big, risk=risk, drift=drift, meta=meta2)
    assert [(u["system"], u["condition"]) for u in ctx["units"]] == [
        ("minilm", "neutral"), ("minilm", "blind"), ("vendor", "neutral"), ("vendor", "blind")]
    out = render_html_of(ctx)
    assert out.count("<svg") == 4 * 9
    ids = re.findall(r'\sid="([^"]*)"', out)
    assert len(ids) == len(set(ids))
    first = ctx["units"][0]["metrics"][0]["rows"]
    assert [r["variant"] for r in first][:3] == ["BASE", "V01", "V02"] and first[-1]["variant"] == "V30"


@pytest.mark.slow
def test_pdf_is_deterministic(context, tmp_path, monkeypatch):
    """Two renders a minute apart give the same bytes: the PDF's clock is the run's start time.

    The second render runs under a wall clock moved 61 s ahead (what fontTools stamps into every font
    subset when HarfBuzz's subsetter is missing), with no ``SOURCE_DATE_EPOCH`` in the environment.
    """
    import time

    monkeypatch.delenv("SOURCE_DATE_EPOCH", raising=False)
    html = render_html_of(context)
    render_pdf(context["core"], tmp_path / "a.pdf", html=html)
    real_time = time.time
    monkeypatch.setattr(time, "time", lambda: real_time() + 61.0)
    render_pdf(context["core"], tmp_path / "sub" / "b.pdf", html=html)
    monkeypatch.undo()
    assert (tmp_path / "a.pdf").read_bytes() == (tmp_path / "sub" / "b.pdf").read_bytes()
    assert "SOURCE_DATE_EPOCH" not in os.environ  # set for the render only


def test_pdf_clock_is_the_run_start():
    from runtime.report.render import FALLBACK_EPOCH, source_date_epoch

    assert source_date_epoch({"header": {"generated_at": "2026-11-29T10:03:17Z"}}) == 1795946597
    assert source_date_epoch({"header": {"generated_at": "—"}}) == FALLBACK_EPOCH
    assert source_date_epoch({}) == FALLBACK_EPOCH


def test_a_value_beside_a_boundary_reads_as_classified():
    from runtime.report.formatting import fmt_sig

    # 0.020004 rounds (6 s.d.) to 0.020004 > 0.02: INVESTIGATE; 4 digits would have shown 0.02000
    assert fmt_sig(0.020004, 6) == "0.0200040"
    assert fmt_sig(0.79996, 6) == "0.799960"


# ------------------------------------------------------------------- a real run (reduced example)


@pytest.mark.slow
@pytest.mark.xdist_group("report")
def test_a_real_runs_report_counts_its_metrics_and_resolves_every_reference(reduced_example):
    """The report of a finished template run with the real model (``reduced_example``: specs/example.yaml
    cut to 2 jobs and K = 20): every section of the synthetic report in order, the key figures of both
    tiers equal to metrics.csv counted by hand, the locked K and jobs, self-contained, links resolve."""
    run_dir = reduced_example["run_dir"]
    html = (run_dir / "report.html").read_text(encoding="utf-8")
    heads = _headings(html)
    positions = []
    for wanted in SECTION_HEADINGS:
        hits = [i for i, h in enumerate(heads) if h.startswith(wanted)]
        assert hits, f"missing heading {wanted!r}"
        positions.append(hits[0])
    assert positions == sorted(positions)
    assert "Results: system minilm, condition default" in heads
    metrics = pd.read_csv(run_dir / "metrics.csv", keep_default_na=False)
    assert len(metrics) == 10 * 10  # 10 metrics (seed 000's nine and the selection ratio) x (BASE + V01-V09)
    # a chart whose rows decide on the selection ratio says that its dashed lines (its own thresholds) are not
    # what colours its bars; every other chart's lines are the thresholds its statuses read
    on_ratio = sorted(set(metrics.loc[metrics["decision_on"] == "selection_ratio", "metric"]))
    assert on_ratio == ["flip_rate", "impact_ratio", "retention_rate"]
    captions = [c for c in re.findall(r"<figcaption>([^<]*)</figcaption>", html) if "dashed lines: " in c]
    unread = [c for c in captions if "grey because the bars&#39; statuses do not read them: they are decided on the "
                                     "selection ratio&#39;s interval (its chart); the table&#39;s Seed 000 Table 3 "
                                     "column reads them on the point estimate" in c]
    assert [c.split(" per variant.")[0] for c in unread] == ["Flip rate", "Retention rate", "Retention ratio"]
    assert len(captions) == 10 and sum("dashed lines: research-tier thresholds;" in c for c in captions) == 7
    assert html.count(">Table 3 PASS ≤ ") + html.count(">Table 3 PASS ≥ ") == 3  # those three charts' grey lines
    assert html.count(">Table 3 INVESTIGATE ") == 3 and html.count("#666666") >= 3 * 2
    text = _text(html)
    seed000 = metrics[metrics["metric"] != "selection_ratio"]  # Eq. 6 counts seed 000's nine metrics
    for col in ("status_seed000", "status_seed000_operational"):  # on their point statuses
        n = seed000[col].value_counts()
        assert (f"On point estimates: FAIL {n.get('FAIL', 0)} · INVESTIGATE {n.get('INVESTIGATE', 0)} · "
                f"PASS {n.get('PASS', 0)} · N/A {n.get('N/A', 0)} · n_total {len(seed000) - n.get('N/A', 0)}") in text, col
    # the first section: findings by protected category, one row per category of headline.csv
    head = pd.read_csv(run_dir / "headline.csv", keep_default_na=False)
    first = html.split('<nav class="toc">', 1)[0]
    assert first.index('id="headline"') < first.index('id="at-a-glance"')
    cats = head[~head["category"].isin(["ALL", "ranking quality"])]
    # each category's levels with the labels of specs/example.yaml beside them (issue 31 §3)
    def unlabelled(s: str) -> str:  # labels may hold parentheses: "Yes (recognised disabled worker (RQTH))"
        while (t := re.sub(r" ?\([^()]*\)", "", s)) != s:
            s = t
        return s

    strong = {unlabelled(s) for s in re.findall(r"<strong>(.*?)</strong>", first)}
    assert len(cats) == 9 and set(cats["category"]) <= strong
    assert "sex_gender=Female-NA (North African name, woman)" in first
    verdict = head.loc[head["category"] == "ALL", "status"].iloc[0]
    assert f"System <code>minilm</code>: <span class=\"badge" in first and f">{verdict}</span>" in first
    top = _text(html[: html.index('<nav class="toc">')].split("</style>", 1)[-1])
    assert "Shortlist size K counterfactual 10 · group 10 · merit 10" in top
    jobs = _text(html.split('id="design"', 1)[1].split("</section>", 1)[0])
    assert "data-analyst" in jobs and "software-developer" in jobs and "accountant" not in jobs
    assert "http://" not in html and "https://" not in html and "<script" not in html
    ids = re.findall(r'\sid="([^"]*)"', html)
    assert len(ids) == len(set(ids))
    refs = set(re.findall(r'(?:href="#|url\(#)([^")]+)', html))
    assert refs and refs <= set(ids)
    assert (run_dir / "report.pdf").read_bytes()[:4] == b"%PDF"



def test_the_point_status_of_a_selection_ratio_names_the_upper_bound_its_interval_crosses():
    """The selection ratio's point-estimate statuses read the bands [0.8, 1.25] and [0.7, 1/0.7]: an interval
    [0.97, 1.39] crosses 1.25 and says so, as one crossing 0.8 does (the regulator's read of stop 58: V01's
    "PASS" beside [0.9696, 1.385] said nothing, V03's beside [0.6839, 1.029] named 0.8 and 0.7)."""
    from runtime.report.sections.metric_suite.units import _tier_bounds, crossed, with_crossing

    bounds = _tier_bounds("selection_ratio", {"pass": 0.8, "investigate": 0.7})
    assert bounds == pytest.approx([0.7, 0.8, 1.25, 1 / 0.7])
    assert with_crossing("PASS", crossed(0.9696, 1.385, bounds), "point estimate; its interval") == (
        "PASS (point estimate; its interval crosses 1.25)")
    assert with_crossing("PASS", crossed(0.6839, 1.029, bounds), "point estimate; its interval") == (
        "PASS (point estimate; its interval crosses 0.7 and 0.8)")
    # 1/0.7 prints as the tier table and the chart print it (1.43), not 1.42857 (the regulator's read, stop 58)
    assert with_crossing("INVESTIGATE", crossed(1.1, 1.6, bounds), "point estimate; its interval") == (
        "INVESTIGATE (point estimate; its interval crosses 1.25 and 1.43)")
    assert _tier_bounds("impact_ratio", {"pass": 0.8, "investigate": 0.7}) == [0.7, 0.8]
