"""Issue 31 §6: page 1 leads with findings.

Hand-built ``metrics.csv`` rows give page 1's lines (who loses, how much on the score scale, selection
terms), worst first, at most 8 then "N more"; a status flipped changes them. Through the CLI, the
30-point uniform loss of ``tests/test_uniform_penalty.py`` under ``ranking: per_variant`` (Eq. 6: 0.083,
"low") names on page 1 of the PDF each level, spelled out, with its loss in points, and never "low risk".
"""

from __future__ import annotations

import math
import re
import subprocess

import pandas as pd
import pytest

from conftest import run_cli
from runtime.families.causal import causal_findings
from runtime.families.metric_suite import composite_note, metric_findings, selection_text
from runtime.report.render import _environment
from runtime.report.sections.findings import MAX_FINDINGS, finding_line, findings_section

LEVELS = {"BASE": {"origin": "FR"}, "V01": {"origin": "NA"}, "V02": {"origin": "SSA"}, "V03": {"origin": "EA"}}


def row(metric, variant, value, lo, hi, status, dis="", **diag):
    return {"family": "x", "metric": metric, "system": "vendor", "condition": "default", "variant": variant,
            "value": value, "ci_low": lo, "ci_high": hi, "status": status, "disadvantaged": dis, **diag}


def metrics() -> pd.DataFrame:
    return pd.DataFrame([
        row("score_delta", "BASE", 0.0, 0.0, 0.0, "PASS"),
        row("score_delta", "V01", -0.042, -0.06, -0.03, "FAIL", "NA"),
        row("score_delta", "V02", -0.01, -0.03, 0.01, "INCONCLUSIVE", "direction not established"),
        row("score_delta", "V03", 0.001, -0.01, 0.012, "PASS"),
        row("retention_rate", "V01", 0.7, 0.5, 0.85, "INCONCLUSIVE", "NA", retained=7, slots=10, k=10, jobs_used=1),
        row("impact_ratio", "V01", 0.6, 0.4, 0.7, "FAIL", "NA", retained=12, slots=20, k=10, jobs_used=2),
        row("selection_ratio", "V01", 0.7, 0.5, 0.9, "PASS", "", slots=10, n_in_out=4, n_out_in=1, n=40),
    ])


def sect(m, **kw):
    found = metric_findings(m, reference="BASE", variant_levels=LEVELS, score_ranges={"vendor": (0, 100)}, **kw)
    labels = {"NA": "North African name", "SSA": "Sub-Saharan African name"}

    def label(text):
        s = str(text)
        s = re.sub(r"=(\w+)$", lambda g: f"={g.group(1)} ({labels[g.group(1)]})" if g.group(1) in labels else g.group(0), s)
        return f"{s} ({labels[s]})" if s in labels else s
    return found, findings_section(found, ["note"], label=label, reference="BASE")


def test_each_line_says_who_loses_how_much_and_in_selection_terms():
    found, s = sect(metrics())
    # reference rows and PASS rows are never findings; the three FAIL/INCONCLUSIVE V01 rows and V02's
    assert [(f.metric, f.variant) for f in found] == [("score_delta", "V01"), ("score_delta", "V02"),
                                                       ("retention_rate", "V01"), ("impact_ratio", "V01")]
    lines = s.context["lines"]
    # one line per variant (issue 39, a regulator's read: V01's four rows read one effect): V01's worst row
    # leads (FAIL, the score loss 0.042), its other flagged rows follow in "also"; then V02
    assert [(x["status"], x["metric"].split(" ")[0]) for x in lines] == [("FAIL", "Score"), ("INCONCLUSIVE", "Score")]
    first = lines[0]
    assert first["who"] == "NA (North African name) loses" and first["disadvantaged"] == "NA"
    assert first["loss"] == "V01's mean score −4.2 points on 0–100 against BASE"
    assert first["metric"] == "Score delta −0.04200, 95% CI [−0.06000, −0.03000]"
    assert first["also"] == ("Retention ratio 0.6000 [0.4000, 0.7000] FAIL, "
                             "Retention rate 0.7000 [0.5000, 0.8500] INCONCLUSIVE")
    assert first["where"] == "system vendor, variant V01 (origin=NA (North African name)) against BASE"
    assert first["anchor"] == "m-vendor-default-score_delta"
    # each finding keeps its selection terms (the impact ratio pooled over 2 jobs, the retention in one job)
    by_metric = {f.metric: finding_line(f) for f in found if f.variant == "V01"}
    assert by_metric["impact_ratio"]["selection"] == "12 of the reference's 20 top-10 places stay (2 jobs)"
    assert by_metric["retention_rate"]["selection"] == "7 of the reference's top-10 stay"
    assert lines[1]["who"] == "V02: direction not established" and lines[1]["also"] == ""
    assert lines[1]["loss"] == "V02's mean score −1 points on 0–100 against BASE"
    assert "origin=SSA (Sub-Saharan African name)" in lines[1]["where"]
    assert s.context["counts"] == "2 FAIL, 2 INCONCLUSIVE" and s.context["more"] == 0 and s.context["groups"] == 2
    html = _environment().get_template("_findings.html.j2").render(section=s.context, core={})
    assert "2 FAIL, 2 INCONCLUSIVE (research tier, decided on the 95% intervals) on 2 variants or units" in html
    assert html.count("<li>") == 2 and "; also Retention ratio 0.6000 [0.4000, 0.7000] FAIL, Retention rate" in html
    assert s.order == -120 and not s.toc


def test_under_a_threshold_both_selection_rates():
    found, _ = sect(metrics(), threshold=True)
    # the impact ratio row of V01 reads the selection ratio's in/out table: reference selects 10 of 40; the
    # variant 10 - 4 + 1 = 7 of 40
    impact = next(f for f in found if f.metric == "impact_ratio")
    assert finding_line(impact)["selection"] == "selected: reference 10 of 40 (25%), variant 7 of 40 (18%)"
    assert selection_text({"metric": "score_delta"}, None, threshold=True) == ""
    assert selection_text({"metric": "flip_rate", "k": 5, "n_in_out": 3, "n_out_in": 0}, None,
                          threshold=False) == "3 leave the reference's top-5 and 0 enter"
    # several jobs (the example's 5 jobs x top-10): the count names the pooled places, not one top-10 list
    flip = {"metric": "flip_rate", "k": 10, "n_in_out": 8, "n_out_in": 16}
    sel = {"slots": 50, "n_in_out": 8, "n_out_in": 16, "n": 200}
    assert selection_text(flip, sel, threshold=False) == (
        "8 leave the reference's 50 top-10 places (pooled over jobs) and 16 enter")
    assert selection_text(flip, {"slots": 10, "n_in_out": 8, "n_out_in": 16, "n": 40},
                          threshold=False) == "8 leave the reference's top-10 and 16 enter"


def test_flipping_one_status_changes_page_one():
    m = metrics()
    html = _environment().get_template("_findings.html.j2").render(section=sect(m)[1].context, core={})
    m.loc[(m.metric == "score_delta") & (m.variant == "V02"), "status"] = "PASS"
    flipped = _environment().get_template("_findings.html.j2").render(section=sect(m)[1].context, core={})
    assert html != flipped
    assert "V02: direction not established" in html
    assert "SSA" not in flipped and "V02" not in flipped and "2 FAIL, 1 INCONCLUSIVE" in flipped


def test_at_most_eight_then_how_many_more():
    many = pd.DataFrame([row("score_delta", f"V{i:02d}", -0.1 - i / 100, -0.2, -0.05, "FAIL", f"L{i}")
                         for i in range(1, 12)])
    found = metric_findings(many, reference="BASE", variant_levels={}, score_ranges={"vendor": (0, 1)})
    s = findings_section(found)
    assert len(s.context["lines"]) == MAX_FINDINGS == 8 and s.context["more"] == 3
    # worst first: the largest loss (V11, 0.21) leads
    assert [x["disadvantaged"] for x in s.context["lines"]][:3] == ["L11", "L10", "L9"]
    html = _environment().get_template("_findings.html.j2").render(section=s.context, core={})
    assert "… and 3 more lines (variants or units with findings)" in html
    empty = findings_section([])
    assert empty.context["none"].startswith("No finding")


def test_composite_note_and_causal_findings():
    risk = pd.DataFrame([{"system": "ALL", "condition": "ALL", "tier": "research", "n_total": 36, "n_fail": 3,
                          "n_investigate": 0, "n_pass": 33, "n_na": 0, "risk_score": 9 / 108, "band": "low"}])
    note = composite_note(risk)[0]
    assert "0.083, from 3 FAIL and 0 INVESTIGATE among 36 metric × variant statuses" in note
    assert "low" not in note.split(";")[0]
    eff = [{"system": "s", "job_id": "j", "attribute": "gender", "x0": "male", "x1": "female", "kind": "effect",
            "term": t, "estimate": e, "sim_low": e - 0.5, "sim_high": e + 0.5, "significant": sig,
            "status": "FAIL", "positivity": "ok"}
           for t, e, sig in [("TE", -2.0, True), ("NDE", -1.5, True), ("NIE", -0.5, False), ("BIE", -0.2, False),
                             ("RIE", -0.3, False)]]
    (f,) = causal_findings(pd.DataFrame(eff))
    assert (f.metric, f.value, f.disadvantaged, f.score_loss, f.anchor) == ("NDE", -1.5, "female", -2.0, "causal-s-j")
    line = findings_section([f]).context["lines"][0]
    assert line["who"] == "female loses" and line["note"] == ""
    assert line["loss"] == "total effect −2.00 on the score scale (gender: female vs male)"
    assert line["metric"] == "direct effect NDE −1.500, simultaneous 95% band [−2.000, −1.000]"
    # positivity alone: INVESTIGATE, nobody named, the caveat said
    pos = [{**r, "significant": False, "status": "INVESTIGATE", "positivity": "violated"} for r in eff]
    (g,) = causal_findings(pd.DataFrame(pos))
    line = findings_section([g]).context["lines"][0]
    assert (g.metric, g.disadvantaged) == ("TE", "")
    assert line["who"] == "gender: female vs male: no effect is significant"
    assert line["note"] == "positivity fails, so the path split is extrapolated"
    # PASS units are no findings
    assert causal_findings(pd.DataFrame([{**r, "significant": False, "status": "PASS"} for r in eff])) == []
    # issue 39 §7: INCONCLUSIVE because RIE is undetermined (NDE equivalent): the finding is RIE, with its MDE
    und = [{**r, "significant": False, "status": "INCONCLUSIVE", "margin": 0.1, "mde": 0.35,
            "decision": "undetermined" if r["term"] == "RIE" else "equivalent"} for r in eff]
    (h,) = causal_findings(pd.DataFrame(und))
    assert (h.metric, h.status, h.disadvantaged) == ("RIE", "INCONCLUSIVE", "")
    assert h.note == "RIE undetermined: not significant, not within ±0.1 (MDE 0.35)"


LABELS = ("    labels: {FR: French name, NA: North African name, SSA: Sub-Saharan African name, "
          "EA: East Asian name}\n")


@pytest.mark.slow
def test_uniform_loss_under_per_variant_page_one(tmp_path):
    from test_uniform_penalty import SPEC, _scores

    spec = SPEC.replace("    cues: {FR:", LABELS + "    cues: {FR:", 1) + "  ranking: per_variant\n"
    (tmp_path / "spec.yaml").write_text(spec)
    (tmp_path / "scores.csv").write_text(_scores())
    assert run_cli("compile", "spec.yaml", cwd=tmp_path).returncode == 0
    proc = run_cli("execute", "--unsigned", "spec.yaml", "--quiet", "--out", "out", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    run_dir = next((tmp_path / "out" / "uniform-penalty").iterdir())
    m = pd.read_csv(run_dir / "metrics.csv", keep_default_na=False, na_values=[""])
    risk = pd.read_csv(run_dir / "risk.csv")
    assert risk.loc[(risk.system == "ALL") & (risk.tier == "research"), "band"].item() == "low"
    page1 = subprocess.run(["pdftotext", "-f", "1", "-l", "1", "-enc", "UTF-8", str(run_dir / "report.pdf"), "-"],
                           check=True, capture_output=True, text=True).stdout
    flat = " ".join(page1.split())
    assert "low risk" not in flat.lower() and "(low)" not in flat
    names = {"V01": "NA (North African name)", "V02": "SSA (Sub-Saharan African name)", "V03": "EA (East Asian name)"}
    for v, name in names.items():
        r = m[(m.metric == "score_delta") & (m.variant == v)].iloc[0]
        assert r.status == "FAIL" and math.isclose(r.value, -0.3)
        # the level named is the row's disadvantaged, spelled out, with its loss in points
        assert f"{r.disadvantaged} ({name.split(' (')[1]} loses: {v}'s mean score −30 points on 0–100 against BASE" in flat, v
    # 3 INCONCLUSIVE flip rates (0 of 40 flips, Wilson [0, 0.0876] straddles 0.05), and since methods 13 the merit
    # rows: 0 misses in the 2 x min(5, 4) = 8 attainable slots give Recall@K and nDCG@K [1 - 3.8415/11.8415, 1] =
    # [0.6756, 1] across the PASS bound 0.8, and no true match changing membership the gaps [0, 0.3244] across 0.1
    assert "3 FAIL, 15 INCONCLUSIVE" in flat
    assert "Recall@K 1.000 [0.6756, 1.000] INCONCLUSIVE" in flat and "Equal opportunity gap 0.000 [0.000, 0.3244]" in flat
    assert "0.083, from 3 FAIL and 0 INVESTIGATE among 36 metric × variant statuses" in flat


def test_a_cosine_scale_and_the_reference_losing():
    m = pd.DataFrame([row("score_delta", "V01", 0.0163, 0.0054, 0.0272, "INCONCLUSIVE", "reference")])
    (f,) = metric_findings(m, reference="BASE", variant_levels=LEVELS, score_ranges={"vendor": (0, 1)})
    line = findings_section([f], reference="BASE").context["lines"][0]
    # the variant scores higher: the reference's levels lose; on [0, 1] the normalised value is the score
    assert line["who"] == "the reference BASE loses"
    assert line["loss"] == "V01's mean score +0.0163 on 0–1 against BASE"


def test_a_line_led_by_a_selection_metric_says_the_direction_of_selection_is_not_established():
    """The flip rate, retention and both ratios read one in/out table: when its McNemar test names nobody, the
    line says so of selection only (a regulator's read: the variant's score test may reject, see the headline)."""
    m = pd.DataFrame([row("flip_rate", "V02", 0.11, 0.07, 0.16, "INCONCLUSIVE", "direction not established", k=10,
                          n_in_out=15, n_out_in=7)])
    (line,) = sect(m)[1].context["lines"]
    assert line["who"] == "V02: direction not established for selection"


def headline_rows(system, statuses, verdict):
    """A hand-made ``headline.csv`` of one system: one category per status, its ``ALL`` verdict row and its
    ranking-quality row (which the verdict does not count)."""
    rows = [{"system": system, "category": f"origin={lv}", "variants": f"V{i:02d}", "status": st,
             "deciding_metrics": "selection_ratio", "value": 1.0, "ci_low": 0.7, "ci_high": 1.3,
             "disadvantaged": "direction not established"} for i, (lv, st) in enumerate(statuses.items(), 1)]
    rows.append({"system": system, "category": "ALL", "variants": "", "status": verdict,
                 "deciding_metrics": " | ".join(f"origin={lv}" for lv, st in statuses.items() if st == verdict),
                 "value": None, "ci_low": None, "ci_high": None, "disadvantaged": ""})
    rows.append({"system": system, "category": "ranking quality", "variants": "BASE", "status": "FAIL",
                 "deciding_metrics": "recall_at_k BASE", "value": 0.5, "ci_low": 0.4, "ci_high": 0.6,
                 "disadvantaged": ""})
    return rows


def test_page_one_leads_with_each_systems_verdict_from_the_headline():
    """Page 1 verdict: one sentence per system from its ``ALL`` row of ``headline.csv``, its categories counted
    by status, the decision rule and Eq. 6's scope once; without a headline (LL144, a population design) none."""
    headline = pd.DataFrame(
        headline_rows("minilm", {"NA": "INCONCLUSIVE", "SSA": "INCONCLUSIVE", "EA": "PASS"}, "INCONCLUSIVE")
        + headline_rows("vendor", {"NA": "FAIL", "SSA": "PASS"}, "FAIL"))
    found, _ = sect(metrics())
    rule = "the K best-scored candidates of each job are selected (analysis.decision.top_k); K = 10"
    s = findings_section(found, composite_note(pd.DataFrame([{
        "system": "ALL", "condition": "ALL", "tier": "research", "n_total": 36, "n_fail": 3, "n_investigate": 0,
        "n_pass": 33, "n_na": 0, "risk_score": 9 / 108, "band": "low"}])), headline=headline, decision_rule=rule)
    assert s.context["verdicts"] == [
        {"system": "minilm", "status": "INCONCLUSIVE",
         "counts": "2 of 3 protected categories INCONCLUSIVE, 0 FAIL, 1 PASS"},
        {"system": "vendor", "status": "FAIL", "counts": "1 of 2 protected categories FAIL, 0 INCONCLUSIVE, 1 PASS"}]
    html = _environment().get_template("_findings.html.j2").render(section=s.context, core={})
    flat = " ".join(re.sub(r"<[^>]+>", "", html).split())
    assert ("Verdict, system minilm: INCONCLUSIVE (research tier, decided on 95% intervals): 2 of 3 protected "
            "categories INCONCLUSIVE, 0 FAIL, 1 PASS; the status of each category is in Findings by protected "
            "category. Verdict, system vendor: FAIL (research tier, decided on 95% intervals): 1 of 2 protected "
            "categories FAIL, 0 INCONCLUSIVE, 1 PASS; the status of each category is in Findings by protected "
            f"category. Decision rule: {rule}. Seed 000's Eq. 6 risk score and the point-estimate FAIL and "
            "INVESTIGATE counts below describe point estimates only; they do not change these verdicts.") in flat
    # before the list, each status a badge, the link to the headline section
    assert html.count('<p class="verdict"') == 2 and html.index('class="verdict"') < html.index("<ol")
    assert '<span class="badge b-fail">FAIL</span>' in html and html.count('href="#headline"') == 2
    assert flat.count("Decision rule:") == 1
    # one system: "this verdict"; without a headline (or an empty one) no paragraph, no empty box
    one = findings_section(found, ["Seed 000's composite risk score (Eq. 6, …)"],
                           headline=headline[headline.system == "vendor"], decision_rule=rule)
    html = _environment().get_template("_findings.html.j2").render(section=one.context, core={})
    assert html.count('class="verdict"') == 1 and "do not change this verdict." in html
    for none in (None, headline.iloc[0:0]):
        bare = findings_section(found, ["note"], headline=none, decision_rule=rule)
        html = _environment().get_template("_findings.html.j2").render(section=bare.context, core={})
        assert bare.context["verdicts"] == [] and "verdict" not in html and "Decision rule" not in html
