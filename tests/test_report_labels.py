"""Issue 31 §3: the report's labels say what they compute, from hand-built ``metrics.csv`` rows.

- a status whose 95% interval crosses a bound of its tier says so ("PASS (interval crosses 0.02)"), one
  whose interval crosses none gets nothing;
- a score delta is also given on the system's own scale ("−4.2 points on 0–100");
- a variant whose only finding is seed 000's INVESTIGATE of the point estimate is in ``fail-variants``;
- the impact ratio is named for what it is (seed 000's shortlist retention ratio), and "four-fifths" is
  said only in the ``#ll144`` section (issue 33 §7), of a ratio of selection rates.
"""

from __future__ import annotations

import math
import re
from dataclasses import replace

import pandas as pd
import pytest

from compiler.catalog import METRICS, default_thresholds
from runtime.report import ReportMeta, ReportSystem, build_core, metric_suite_sections, render_report
from runtime.report.formatting import fmt_points

NAN = math.nan
COLUMNS = ("metric", "variant", "value", "ci_low", "ci_high", "decision_on", "decision_low", "decision_high",
           "pass_low", "pass_high", "status", "status_operational", "status_seed000", "status_seed000_operational")
#: Thresholds of the default tiers: score_delta research (0.02, 0.05), operational (0.04, 0.05);
#: impact_ratio and selection_ratio (0.8, 0.7) in both.
ROWS = [
    # the reference, compared with itself
    ("score_delta", "BASE", 0.0, 0.0, 0.0, "value", 0.0, 0.0, -0.02, 0.02, "PASS", "PASS", "PASS", "PASS"),
    ("impact_ratio", "BASE", 1.0, 1.0, 1.0, "selection_ratio", 1.0, 1.0, 0.8, 1.25, "PASS", "PASS", "PASS", "PASS"),
    # V01 loses exactly 4.2 of 100 points: research FAIL; operational band ±0.04 crossed at −0.04
    ("score_delta", "V01", -0.042, -0.06, -0.03, "value", -0.06, -0.03, -0.02, 0.02,
     "FAIL", "INCONCLUSIVE", "INVESTIGATE", "INVESTIGATE"),
    ("impact_ratio", "V01", 0.9, 0.78, 0.97, "selection_ratio", 0.9, 1.1, 0.8, 1.25, "PASS", "PASS", "PASS", "PASS"),
    # V02: seed 000 Table 3 reads PASS on the point estimate 0.016, but its interval crosses 0.02
    ("score_delta", "V02", 0.016, 0.0098, 0.0222, "value", 0.0098, 0.0222, -0.02, 0.02,
     "INCONCLUSIVE", "PASS", "PASS", "PASS"),
    ("impact_ratio", "V02", 0.95, 0.85, 1.0, "selection_ratio", 0.9, 1.1, 0.8, 1.25, "PASS", "PASS", "PASS", "PASS"),
    # V03: every interval status PASS (the impact ratio decides on the selection ratio's interval), but
    # seed 000's point estimate of the retention ratio is INVESTIGATE: an INVESTIGATE-only variant
    ("score_delta", "V03", 0.005, 0.001, 0.009, "value", 0.001, 0.009, -0.02, 0.02, "PASS", "PASS", "PASS", "PASS"),
    ("impact_ratio", "V03", 0.75, 0.71, 0.79, "selection_ratio", 0.85, 1.1, 0.8, 1.25,
     "PASS", "PASS", "INVESTIGATE", "INVESTIGATE"),
]


def _metrics() -> pd.DataFrame:
    df = pd.DataFrame([dict(zip(COLUMNS, r)) for r in ROWS])
    df["family"] = [METRICS[m].family for m in df["metric"]]
    df["system"], df["condition"], df["reference"], df["n"] = "vendor", "default", "BASE", 200
    df["p_value"] = df["p_adj"] = NAN
    df["notes"] = ""
    return df


def _meta(score_range=(0, 100)) -> ReportMeta:
    levels = {"BASE": "Male-FR", "V01": "Female-FR", "V02": "Male-NA", "V03": "Female-NA"}
    return ReportMeta(audit="labels", reference="BASE", alpha=0.05, thresholds=default_thresholds(),
                      k={"counterfactual": 10, "group": 10, "merit": 10},
                      systems=(ReportSystem(id="vendor", kind="precomputed", score_range=score_range),),
                      variants={v: {"sex_gender": lv} for v, lv in levels.items()}, axes=("sex_gender",))


@pytest.fixture(scope="module")
def sections():
    return {s.id: s for s in metric_suite_sections(metrics=_metrics(), risk=pd.DataFrame(), drift=pd.DataFrame(),
                                                   meta=_meta())}


def _rows(sections, metric: str) -> dict[str, dict]:
    (unit,) = [s.context for s in sections.values() if s.id.startswith("u-")]
    (m,) = [m for m in unit["metrics"] if m["id"] == metric]
    return {r["variant"]: r for r in m["rows"]}


def test_an_interval_straddling_a_bound_says_so_and_one_inside_gets_nothing(sections):
    sd = _rows(sections, "score_delta")
    # seed 000's point-estimate PASS of V02, interval [0.0098, 0.0222] against 0.02 (the issue's V04)
    assert sd["V02"]["seed000_text"] == {"research": "PASS (point estimate; its interval crosses 0.02)", "operational": "PASS"}
    # the interval status INCONCLUSIVE names the bound it straddles; the operational PASS crosses none
    assert sd["V02"]["status_text"] == "INCONCLUSIVE (interval crosses 0.02)"
    assert sd["V02"]["status_operational_text"] == "PASS"
    # |Δ|: a negative interval crosses the negative bounds, both tiers
    assert sd["V01"]["status_text"] == "FAIL"
    assert sd["V01"]["status_operational_text"] == "INCONCLUSIVE (interval crosses −0.04)"
    assert sd["V01"]["seed000_text"] == {"research": "INVESTIGATE (point estimate; its interval crosses −0.05)",
                                         "operational": "INVESTIGATE (point estimate; its interval crosses −0.05 and −0.04)"}
    # inside every band: nothing added
    assert sd["V03"]["status_text"] == "PASS"
    assert sd["V03"]["seed000_text"] == {"research": "PASS", "operational": "PASS"}
    ir = _rows(sections, "impact_ratio")
    # the impact ratio's interval status decides on the selection ratio's [0.85, 1.1] inside [0.8, 1.25]
    assert ir["V03"]["status_text"] == "PASS"
    # its own interval [0.71, 0.79] lies between seed 000's bounds 0.7 and 0.8: a bare INVESTIGATE
    assert ir["V03"]["seed000_text"]["research"] == "INVESTIGATE"
    # V01's [0.78, 0.97] straddles 0.8 while its point estimate 0.9 reads PASS
    assert ir["V01"]["seed000_text"]["research"] == "PASS (point estimate; its interval crosses 0.8)"


def test_a_status_decided_on_the_selection_ratio_names_that_interval():
    """A regulator read "flip rate 0.120 [0.082, 0.172]: INCONCLUSIVE (interval crosses 1.25)": the interval that
    crosses 1.25 is the selection ratio's, on which issue 30 §2 decides the flip rate; the cell says so."""
    from runtime.report.sections.metric_suite.units import decided_on_text, with_crossing

    row = {"decision_on": "selection_ratio"}
    assert with_crossing("INCONCLUSIVE", [1.25], decided_on_text(row, "flip_rate")) == \
        "INCONCLUSIVE (the selection ratio's interval crosses 1.25)"
    assert decided_on_text({"decision_on": ""}, "score_delta") == "interval"
    assert decided_on_text({"decision_on": "value"}, "marc") == "interval"


def test_the_rendered_cells_read_crosses(sections):
    html = render_report(build_core(_meta()), list(sections.values()))
    unit = html.split('id="m-vendor-default-score_delta"', 1)[1].split("</table>", 1)[0]
    v02 = re.search(r"<strong>V02</strong>.*?</tr>", unit, re.S).group(0)
    text = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", v02))
    assert "INCONCLUSIVE (interval crosses 0.02)" in text
    assert "research PASS (point estimate; its interval crosses 0.02) operational PASS" in text
    v03 = re.search(r"<strong>V03</strong>.*?</tr>", unit, re.S).group(0)
    assert "crosses" not in v03


def test_a_loss_of_4_2_of_100_prints_minus_4_2_points(sections):
    sd = _rows(sections, "score_delta")
    assert sd["V01"]["value"] == "−0.0420000 (−4.2 points on 0–100)"
    assert sd["V01"]["ci"] == "[−0.06000, −0.03000] ([−6, −3] points on 0–100)"
    assert sd["V02"]["value"] == "+0.0160000 (+1.6 points on 0–100)"
    assert fmt_points(-0.042, (0, 100)) == "−4.2 points on 0–100"
    assert fmt_points(0.25, (-1, 1)) == "+0.5 points on −1 to 1"
    # a [0, 1] system's normalised value is on its own scale already; nothing to add
    assert fmt_points(-0.042, (0, 1)) == ""
    assert fmt_points(NAN, (0, 100)) == "" and fmt_points(0.1, None) == ""
    cosine = {s.id: s for s in metric_suite_sections(metrics=_metrics(), risk=pd.DataFrame(), drift=pd.DataFrame(),
                                                     meta=_meta((0, 1)))}
    assert _rows(cosine, "score_delta")["V01"]["value"] == "−0.0420000"


def test_an_investigate_only_variant_is_in_fail_variants(sections):
    fv = sections["fail-variants"]
    assert fv.title == "Variants with FAIL, INCONCLUSIVE or INVESTIGATE findings"
    rows = {f["variant"]: f for f in fv.context["rows"]}
    assert list(rows) == ["V01", "V02", "V03"]  # V03: seed 000 INVESTIGATE only
    (v03,) = rows["V03"]["failing"]
    assert v03["label"] == "Shortlist retention ratio (seed 000's impact ratio)"
    assert v03["flagged_by"] == ["seed 000 INVESTIGATE"]
    assert (v03["status"], v03["operational"], v03["seed000"]) == ("PASS", "PASS", "INVESTIGATE")
    (v02,) = rows["V02"]["failing"]
    assert v02["flagged_by"] == ["research INCONCLUSIVE"]
    (v01,) = rows["V01"]["failing"]
    assert v01["flagged_by"] == ["research FAIL", "operational INCONCLUSIVE", "seed 000 INVESTIGATE"]
    html = render_report(build_core(_meta()), list(sections.values()))
    section = html.split('id="fail-variants"', 1)[1].split("</section>", 1)[0]
    assert section.count("<tr>") == 1 + 3  # the header and one row per flagged metric
    v03_row = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", section.split("<strong>V03</strong>", 1)[1]))
    # the status cell says which rule flags it: research and operational PASS, seed 000 INVESTIGATE
    assert "research PASS operational PASS seed 000 (point estimate) INVESTIGATE" in v03_row


def test_with_no_flagged_variant_the_fail_variants_title_and_contents_say_none():
    """A regulator's read: the contents listed "Variants with FAIL ... findings" for a table that was empty."""
    passing = _metrics()
    passing = passing[passing["variant"].isin(["BASE", "V03"]) & (passing["metric"] == "score_delta")]
    secs = {s.id: s for s in metric_suite_sections(metrics=passing, risk=pd.DataFrame(), drift=pd.DataFrame(),
                                                  meta=_meta())}
    fv = secs["fail-variants"]
    assert fv.context["rows"] == []
    assert fv.title == "Variants with FAIL, INCONCLUSIVE or INVESTIGATE findings: none"
    html = render_report(build_core(_meta()), list(secs.values()))
    assert html.count("Variants with FAIL, INCONCLUSIVE or INVESTIGATE findings: none") == 2  # contents and heading
    assert "No variant has a FAIL or INCONCLUSIVE status" in html


def assert_four_fifths_only_beside_selection_rates(html: str) -> None:
    """Outside the ``#ll144`` section (issue 33 §7) the report never says "four-fifths" (or "four fifths")
    nor "statutory"; inside it, every "four-fifths" sits in a sentence (a cell, a list item, or a sentence
    of a paragraph) that speaks of a ratio of selection rates."""
    inside = re.findall(r'<section id="ll144".*?</section>', html, re.S)
    outside = re.sub(r'<section id="ll144".*?</section>', "", html, flags=re.S)
    plain = re.sub(r"<[^>]+>", " ", outside).lower()
    assert "four-fifths" not in plain and "four fifths" not in plain and "statutory" not in plain
    for part in inside:
        text = re.sub(r"</?(td|th|li|p|dd|dt|h[1-6]|caption|figcaption)\b[^>]*>", "\n", part)
        text = re.sub(r"<[^>]+>", " ", text).lower().replace("four fifths", "four-fifths")
        sentences = [s for chunk in text.split("\n") for s in re.split(r"(?<=[.;])\s", chunk) if "four-fifths" in s]
        for s in sentences:
            assert "selection rate" in s, s


def test_the_impact_ratio_is_named_for_what_it_computes(sections):
    ir = [m for s in sections.values() if s.id.startswith("u-") for m in s.context["metrics"]
          if m["id"] == "impact_ratio"][0]
    assert ir["label"] == "Shortlist retention ratio (seed 000's impact ratio)"
    html = render_report(build_core(_meta()), list(sections.values()))
    assert_four_fifths_only_beside_selection_rates(html)
    at_threshold = {s.id: s for s in metric_suite_sections(
        metrics=_metrics(), risk=pd.DataFrame(), drift=pd.DataFrame(),
        meta=replace(_meta(), decision={"threshold": 70.0}))}
    ir = [m for s in at_threshold.values() if s.id.startswith("u-") for m in s.context["metrics"]
          if m["id"] == "impact_ratio"][0]
    assert ir["label"] == "Retention ratio at the threshold (seed 000's impact ratio)"
    (row,) = [r for r in at_threshold["appendix"].context["thresholds"] if r["label"] == ir["label"]]
    assert row["basis"].startswith("Seed 000 Table 3's 0.8 bound on the ratio of retentions at the decision threshold")
    assert_four_fifths_only_beside_selection_rates(render_report(build_core(_meta()), list(at_threshold.values())))


# ---------------------------------------------------------------------------- axes.<axis>.labels
SIGNALS = {"sex_gender": {"slot": "name", "levels": ["Male-FR", "Female-FR", "Male-NA", "Female-NA"],
                          "cues": {"Male-FR": ["Julien Moreau"], "Female-FR": ["Camille Roux"],
                                   "Male-NA": ["Karim Benali"], "Female-NA": ["Samira Haddad"]},
                          "labels": {"Male-NA": "North African man", "Female-NA": "North African woman"}}}


def test_a_level_is_printed_with_its_label_wherever_it_appears():
    metrics = _metrics()
    metrics.loc[(metrics["variant"] == "V01") & (metrics["metric"] == "score_delta"), "disadvantaged"] = "Female-FR"
    metrics.loc[(metrics["variant"] == "V03") & (metrics["metric"] == "impact_ratio"), "disadvantaged"] = \
        "sex_gender=Female-NA"
    headline = pd.DataFrame([
        {"system": "vendor", "category": "sex_gender=Female-NA", "variants": "V03", "status": "INCONCLUSIVE",
         "deciding_metrics": "selection_ratio", "value": 0.9, "ci_low": 0.7, "ci_high": 1.1,
         "disadvantaged": "sex_gender=Female-NA"},
        {"system": "vendor", "category": "ALL", "variants": "", "status": "INCONCLUSIVE",
         "deciding_metrics": "selection_ratio", "value": NAN, "ci_low": NAN, "ci_high": NAN,
         "disadvantaged": "sex_gender=Female-NA | sex_gender=Male-NA"}])
    meta = replace(_meta(), signals=SIGNALS)
    by_id = {s.id: s for s in metric_suite_sections(metrics=metrics, risk=pd.DataFrame(), drift=pd.DataFrame(),
                                                    meta=meta, headline=headline)}
    rows = {f["variant"]: f for f in by_id["fail-variants"].context["rows"]}
    assert rows["V03"]["levels"] == [{"axis": "sex_gender", "level": "Female-NA (North African woman)"}]
    assert rows["V03"]["failing"][0]["disadvantaged"] == "sex_gender=Female-NA (North African woman)"
    assert rows["V01"]["levels"] == [{"axis": "sex_gender", "level": "Female-FR"}]  # no label written
    design = by_id["design"].context
    assert [c["level"] for v in design["variants"] for c in v["cells"]] == [
        "Male-FR", "Female-FR", "Male-NA (North African man)", "Female-NA (North African woman)"]
    assert [r["level"] for r in design["signals"]] == [
        "Male-FR", "Female-FR", "Male-NA (North African man)", "Female-NA (North African woman)"]
    (system,) = by_id["headline"].context["systems"]
    assert system["categories"][0]["category"] == "sex_gender=Female-NA (North African woman)"
    assert system["disadvantaged"] == "sex_gender=Female-NA (North African woman) | sex_gender=Male-NA (North African man)"
    html = render_report(build_core(meta), list(by_id.values()))
    assert "Female-NA (North African woman)" in html
    # without labels nothing is added
    plain = {s.id: s for s in metric_suite_sections(metrics=metrics, risk=pd.DataFrame(), drift=pd.DataFrame(),
                                                    meta=replace(meta, signals={}), headline=headline)}
    assert plain["headline"].context["systems"][0]["categories"][0]["category"] == "sex_gender=Female-NA"


def test_labels_enter_the_resolved_spec_only_when_written(tmp_path):
    from compiler import compile_spec
    from conftest import TINY_SCORES, TINY_SPEC

    (tmp_path / "scores.csv").write_text(TINY_SCORES)
    (tmp_path / "plain.yaml").write_text(TINY_SPEC)
    (tmp_path / "labelled.yaml").write_text(TINY_SPEC.replace(
        "    cues: {M: [John Smith], F: [Jane Smith]}",
        "    cues: {M: [John Smith], F: [Jane Smith]}\n    labels: {F: woman}"))
    assert "labels" not in compile_spec(tmp_path / "plain.yaml").resolved["axes"]["sex_gender"]
    assert compile_spec(tmp_path / "labelled.yaml").resolved["axes"]["sex_gender"]["labels"] == {"F": "woman"}


def test_the_headline_and_per_job_score_deltas_are_in_points_too():
    headline = pd.DataFrame([{"system": "vendor", "category": "sex_gender=Female-FR", "variants": "V01",
                              "status": "FAIL", "deciding_metrics": "score_delta", "value": -0.042,
                              "ci_low": -0.06, "ci_high": -0.03, "disadvantaged": "sex_gender=Female-FR"}])
    by_job = pd.DataFrame([{"system": "vendor", "condition": "default", "metric": "score_delta", "variant": "V01",
                            "job_id": "job-1", "value": -0.042, "ci_low": -0.06, "ci_high": -0.03, "status": "FAIL",
                            "pooled_value": -0.042, "pooled_status": "FAIL", "flag": "crossing",
                            "disadvantaged": "variant", "q": NAN, "q_df": NAN, "q_p": NAN, "i2": NAN}])
    by_id = {s.id: s for s in metric_suite_sections(metrics=_metrics(), risk=pd.DataFrame(), drift=pd.DataFrame(),
                                                    meta=_meta(), headline=headline, by_job=by_job)}
    (cat,) = by_id["headline"].context["systems"][0]["categories"]
    assert cat["value"] == "−0.04200 (−4.2 points on 0–100)"
    assert cat["ci"] == "[−0.06000, −0.03000] ([−6, −3] points on 0–100)"
    flagged = by_id["by-job"].context["flagged"]
    assert [(f["value"], f["ci"]) for f in flagged] == [
        ("−0.0420000 (−4.2 points on 0–100)", "[−0.06000, −0.03000] ([−6, −3] points on 0–100)")]


def test_an_axis_contrast_of_the_effects_tables_names_its_levels_labels():
    meta = replace(_meta(), signals=SIGNALS)
    assert meta.with_level_labels("sex_gender: Female-NA vs Male-FR") == \
        "sex_gender: Female-NA (North African woman) vs Male-FR"
    assert meta.with_level_labels("V01 vs BASE") == "V01 vs BASE"


def test_the_llm_manipulation_check_names_the_intended_levels_label():
    from runtime.report import llm_sections

    llm = {"validity": [], "calls": {}, "replicates": {},
           "generator": {"model": "m", "flags": 0, "followups": 0, "phase_a": {},
                         "manipulation_check": [{"variant": "V03", "axis": "sex_gender", "intended": "Female-NA",
                                                 "n": 10, "classified_as_intended": 9, "rate": 0.9, "defaulted": 0}]}}
    meta = replace(_meta(), signals=SIGNALS)
    (section,) = llm_sections(llm, label=meta.level_text)
    assert [m["intended"] for m in section.context["manipulation"]] == ["Female-NA (North African woman)"]
    (plain,) = llm_sections(llm)
    assert [m["intended"] for m in plain.context["manipulation"]] == ["Female-NA"]


def test_every_interval_the_catalogue_names_has_its_words_in_the_report():
    # the report prints CI_TEXT[key], else the raw key: MARC's key lost its words when methods 17 renamed it
    from runtime.report.sections.metric_suite.texts import CI_TEXT, THRESHOLD_CI
    from runtime.report.sections.metric_suite.units import _ci_key

    keys = {m.ci for m in METRICS.values() if m.ci} | set(THRESHOLD_CI.values())
    keys |= {_ci_key(m, METRICS[m].ci, r) for m in METRICS for r in ("swap_in", "per_variant")}
    assert keys - set(CI_TEXT) == set()
    assert "inverse-square-root" in CI_TEXT[METRICS["marc"].ci]
    # the flip rate's fallback is Wilson's on the candidates, not the selection ratio's "0 lost"
    assert "spread of the flip rate" in CI_TEXT[METRICS["flip_rate"].ci] and "0 lost" not in CI_TEXT[METRICS["flip_rate"].ci]
    assert "0 lost" in CI_TEXT[METRICS["selection_ratio"].ci]


def test_the_notes_are_read_out_on_the_page_and_kept_as_ids_in_the_csv():
    """metrics.csv's notes carry ids (a data contract); the report's notes column reads them out: test ids by their
    names, metric ids by their short names, a hierarchical level-1 family in words. Other text is left as is."""
    from runtime.report.sections.metric_suite.texts import readable_note

    assert readable_note("mcnemar_chi2_cc counted once in BH (the same McNemar table as flip_rate, which carries it "
                         "in BH); p_adj empty here") == (
        "McNemar's χ² test with continuity correction counted once in BH (the same McNemar table as the flip rate, "
        "which carries it in BH); p_adj empty here")
    assert readable_note("not tested: level 1 did not reject (the category's score test, sys-2.b/level1)") == (
        "not tested: level 1 did not reject (this category's score test, adjusted over system sys-2.b's categories)")
    assert readable_note("see acme/level1") == "see system acme's level-1 family (its categories' score tests)"
    assert readable_note("recall_at_k, ndcg_at_k, impact_ratio") == "the recall@K, the nDCG@K, the retention ratio"
    # ids inside longer words, bare words and unknown ids stay
    for note in ("flip_rates", "marc and mcnemar", "my_flip_rate", "level1", "wilcoxon", ""):
        assert readable_note(note) == note
