"""The vendor's decision rule (issue 15, part 5): ``analysis.decision: {top_k: K} | {threshold: t}``.

Under a threshold the selection metrics are read at the vendor's cut-off (score >= t): the values
below are computed by hand from the eight candidates of ``SCORES``.
"""

from __future__ import annotations

import csv
import io
import json
import re

import pytest

from conftest import run_cli

SPEC = """\
audit: vendor-threshold
title: Audit of a vendor that advances everyone scoring at least 70
seed: 3
axes:
  race:
    levels: [white, black]
    description: First names chosen by the vendor.
variants:
  reference: white
  design: explicit
  table:
    white: {race: white}
    black: {race: black}
jobs: [{id: job-a}, {id: job-b}]
systems:
  - id: vendor
    kind: precomputed
    path: scores.csv
    score_range: [0, 100]
source:
  producer: Acme Talent Ltd
  system: Acme Match
  variants_made: The vendor replaced the first name.
analysis:
  k: {counterfactual: 2, group: 2, merit: 2}
  bootstrap: 200
"""
THRESHOLD = "  decision: {threshold: 70}\n"
#: job, candidate, reference score, variant score, is_true_match
SCORES = [
    ("job-a", "c1", 80, 75, 1),  # both selected
    ("job-a", "c2", 72, 65, 1),  # flips out
    ("job-a", "c3", 60, 70, 0),  # flips in: 70 is at the threshold, selected
    ("job-a", "c4", 50, 40, 0),  # both out
    ("job-b", "c1", 90, 69, 1),  # flips out
    ("job-b", "c2", 71, 70, 0),  # both selected
    ("job-b", "c3", 30, 20, 0),  # both out
    ("job-b", "c4", 69, 69, 1),  # both out, one point short
]


def scores_csv() -> str:
    rows = ["job_id,cv_id,variant,score,is_true_match"]
    for job, cv, ref, var, match in SCORES:
        rows += [f"{job},{cv},white,{ref},{match}", f"{job},{cv},black,{var},{match}"]
    return "\n".join(rows) + "\n"


def run_audit(tmp_path, spec: str) -> dict[str, dict]:
    (tmp_path / "spec.yaml").write_text(spec)
    (tmp_path / "scores.csv").write_text(scores_csv())
    proc = run_cli("compile", "spec.yaml", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    proc_exec = run_cli("execute", "--unsigned", "--no-pdf", "spec.yaml", "--quiet", cwd=tmp_path)
    assert proc_exec.returncode in (0, 4), proc_exec.stderr
    run = next((tmp_path / "reports" / "vendor-threshold").iterdir())
    rows = csv.DictReader(io.StringIO((run / "metrics.csv").read_text()))
    out = {r["metric"]: r for r in rows if r["variant"] == "black"}
    out["_compile"] = proc.stdout
    out["_run"] = run
    return out


def test_a_threshold_rule_gives_hand_computed_selection_rates_and_flips(tmp_path):
    m = run_audit(tmp_path, SPEC + THRESHOLD)
    assert "decision rule: selected = score >= 70 on each system's scale" in m["_compile"]
    # flips: A-c2 and B-c1 leave the selection, A-c3 enters it: 3 of 8
    flip = m["flip_rate"]
    assert float(flip["value"]) == pytest.approx(3 / 8)
    assert (flip["n_in_out"], flip["n_out_in"]) == ("2", "1")
    assert float(flip["flip_out_rate"]) == pytest.approx(2 / 4) and float(flip["flip_in_rate"]) == pytest.approx(1 / 4)
    # McNemar is informative under a threshold, even though nothing fixes the number selected: it is a level-2
    # test of the category's family (methods 7, hierarchical), not tested here because the score test at level 1
    # does not reject
    assert "not informative" not in flip["notes"] and flip["adj_family"].endswith("/level2")
    assert float(m["score_delta"]["p_adj"]) >= 0.05
    assert flip["p_adj"] == "" and "not tested: level 1 did not reject" in flip["notes"]
    assert float(flip["p_value"]) == pytest.approx(1.0)  # exact binomial, 2 vs 1 discordant pairs
    # retention: A keeps c1 of {c1, c2}, B keeps c2 of {c1, c2}: 1/2 in each job
    assert float(m["retention_rate"]["value"]) == pytest.approx(0.5)
    assert (m["retention_rate"]["retained"], m["retention_rate"]["slots"]) == ("2", "4")
    assert float(m["impact_ratio"]["value"]) == pytest.approx(0.5)
    # Recall at the threshold: A selects c1 of its true matches {c1, c2}, B none of {c1, c4}
    assert float(m["recall_at_k"]["value"]) == pytest.approx((1 / 2 + 0 / 2) / 2)
    # TPR 1/4 (variant) against 3/4 (reference); FPR 2/4 against 1/4
    assert float(m["equal_opportunity_gap"]["value"]) == pytest.approx(0.5)
    assert float(m["equalized_odds_gap"]["value"]) == pytest.approx(0.5)
    assert float(m["equalized_odds_gap"]["fpr"]) == pytest.approx(0.5)
    for metric in ("flip_rate", "retention_rate", "impact_ratio", "recall_at_k", "equal_opportunity_gap",
                   "equalized_odds_gap"):
        assert m[metric]["k"] == "" and "selected = score >= 70 (analysis.decision.threshold)" in m[metric]["notes"]
        assert m[metric]["ties_at_cutoff"] == "0"
    # the ranking metrics keep K = 2
    assert m["marc"]["k"] == "2" and m["ndcg_at_k"]["k"] == "2"
    html = (m["_run"] / "report.html").read_text()
    assert "selected when its score is at or above 70" in html
    assert "Flip rate (threshold crossings)" in html and "macro top-K retention" not in html
    assert "measured under a top-K rule, not at a threshold" in html
    # the page reads the notes out (a regulator's read): the flip row's p_adj cell says "not tested" beside its raw
    # p, its note names no family key, the McNemar test it shares with the selection ratio is named, not its id
    flip_section = html[html.index('id="m-vendor-default-flip_rate"'):html.index('id="m-vendor-default-retention_rate"')]
    black = flip_section[flip_section.index("<strong>black</strong>"):]
    black = black[:black.index("</tr>")]
    assert re.findall(r'<td class="num">([^<]*)</td><td class="num">([^<]*)</td>', black)[0] == ("1", "not tested")
    assert ("not tested: level 1 did not reject (this category&#39;s score test, adjusted over system vendor&#39;s "
            "categories)") in black
    assert "/level1" not in html and "mcnemar_exact" not in html and "as flip_rate" not in html
    assert "McNemar&#39;s exact (binomial) test counted once in BH (the same McNemar table as the flip rate" in html
    # its chart draws its own thresholds grey, named by the rule that reads them (seed 000 Table 3's, on the point
    # estimate): its bars' status is the selection ratio's
    labels = re.findall(r"<text[^>]*>([^<]*[≤≥][^<]*)</text>", flip_section)
    assert labels == ["Table 3 PASS ≤ 0.05", "Table 3 INVESTIGATE ≤ 0.1"]
    assert "#666666" in flip_section and "#1b5e20" not in flip_section.split("</svg>")[0].split("<svg")[1]
    sel = html[html.index('id="m-vendor-default-selection_ratio"'):]
    assert "PASS ≥ 0.8</text>" in sel and ">Table 3 " not in sel.split("</svg>")[0]


def test_the_same_scores_under_top_k_give_the_top_k_values(tmp_path):
    """The control: under top-2 the variant's Recall@K is 1/2 in both jobs (B: c1 and c4 tie at 69 for
    the second place, each inside with probability 1/2), not the threshold's 1/4."""
    m = run_audit(tmp_path, SPEC.replace("  bootstrap: 200\n", "  bootstrap: 200\n"))
    assert float(m["recall_at_k"]["value"]) == pytest.approx(0.5)
    assert m["recall_at_k"]["k"] == "2"
    assert "decision rule: top-K, K = 2 (counterfactual), 2 (group), 2 (merit) (analysis.k)" in m["_compile"]


def test_decision_top_k_sets_every_family_and_is_locked(tmp_path):
    spec = SPEC.replace("  k: {counterfactual: 2, group: 2, merit: 2}\n", "  decision: {top_k: 3}\n")
    (tmp_path / "spec.yaml").write_text(spec)
    (tmp_path / "scores.csv").write_text(scores_csv())
    proc = run_cli("compile", "spec.yaml", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "decision rule: top-K, K = 3 (counterfactual), 3 (group), 3 (merit) (analysis.decision.top_k)" in proc.stdout
    analysis = json.loads((tmp_path / "spec.lock.json").read_text())["resolved_spec"]["analysis"]
    assert analysis["decision"] == {"top_k": 3}
    assert analysis["k"] == {"counterfactual": 3, "group": 3, "merit": 3}


@pytest.mark.parametrize("decision, key, message", [
    ("{}", "analysis.decision", "analysis.decision takes exactly one rule"),
    ("{top_k: 2, threshold: 70}", "analysis.decision", "got top_k, threshold"),
    ("{top_k: 2}", "analysis.k", "give the shortlist size in one place"),
    ("{threshold: 120}", "analysis.decision.threshold",
     "threshold 120 lies outside the score scale of system 'vendor' (score_range [0, 100])"),
    ("{threshold: 0}", "analysis.decision.threshold", "low < t <= high"),
])
def test_a_bad_decision_rule_is_a_located_error(tmp_path, decision, key, message):
    (tmp_path / "spec.yaml").write_text(SPEC + f"  decision: {decision}\n")
    (tmp_path / "scores.csv").write_text(scores_csv())
    proc = run_cli("validate", "spec.yaml", cwd=tmp_path)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert key in proc.stderr and message in proc.stderr, proc.stderr
    assert not (tmp_path / "spec.lock.json").exists()


def test_one_threshold_for_systems_on_different_scales_is_refused_and_a_mapping_is_read_per_system(tmp_path):
    two = SPEC.replace("    score_range: [0, 100]\n", "    score_range: [0, 100]\n  - id: rescaled\n    kind: precomputed\n"
                       "    path: rescaled.csv\n    score_range: [0, 1]\n")
    (tmp_path / "scores.csv").write_text(scores_csv())
    (tmp_path / "rescaled.csv").write_text("\n".join(
        line if i == 0 else ",".join(p if j != 3 else f"{int(p) / 100:g}" for j, p in enumerate(line.split(",")))
        for i, line in enumerate(scores_csv().strip().split("\n"))) + "\n")
    (tmp_path / "spec.yaml").write_text(two + "  decision: {threshold: 0.7}\n")
    proc = run_cli("validate", "spec.yaml", cwd=tmp_path)
    assert proc.returncode == 2 and "the systems have different score scales ([0, 1], [0, 100])" in proc.stderr
    (tmp_path / "spec.yaml").write_text(two + "  decision: {threshold: {vendor: 70, rescaled: 0.7}}\n")
    assert run_cli("compile", "spec.yaml", cwd=tmp_path).returncode == 0
    proc = run_cli("execute", "--unsigned", "--no-pdf", "spec.yaml", "--quiet", cwd=tmp_path)
    assert proc.returncode in (0, 4), proc.stderr
    run = next((tmp_path / "reports" / "vendor-threshold").iterdir())
    rows = list(csv.DictReader(io.StringIO((run / "metrics.csv").read_text())))
    flips = {r["system"]: float(r["value"]) for r in rows if r["metric"] == "flip_rate" and r["variant"] == "black"}
    assert flips == {"vendor": pytest.approx(3 / 8), "rescaled": pytest.approx(3 / 8)}  # the same data, the same rule
    ir = next(r for r in rows if r["metric"] == "impact_ratio" and r["variant"] == "black" and r["system"] == "vendor")
    # the ratio of selection rates (the selection ratio) beside the seed's retention ratio: 3 of 8 against 4 of 8
    assert "selection rates at the threshold: reference 4/8, variant 3/8; their ratio 0.75 is the selection ratio, not the value above" \
        in ir["notes"]


def test_a_threshold_no_score_reaches_is_a_warning_and_gives_n_a_not_pass(tmp_path):
    (tmp_path / "spec.yaml").write_text(SPEC + "  decision: {threshold: 95}\n")
    (tmp_path / "scores.csv").write_text(scores_csv())
    proc = run_cli("validate", "spec.yaml", cwd=tmp_path)
    assert proc.returncode == 0 and "warning:" in proc.stderr and "no score reaches it" in proc.stderr, proc.stderr
    assert run_cli("compile", "spec.yaml", cwd=tmp_path).returncode == 0
    proc = run_cli("execute", "--unsigned", "--no-pdf", "spec.yaml", "--quiet", cwd=tmp_path)
    run = next((tmp_path / "reports" / "vendor-threshold").iterdir())
    rows = list(csv.DictReader(io.StringIO((run / "metrics.csv").read_text())))
    for r in rows:
        if r["metric"] in ("flip_rate", "retention_rate", "impact_ratio", "recall_at_k", "equal_opportunity_gap",
                           "equalized_odds_gap"):
            assert r["value"] == "" and r["status"] == "N/A" and "compare nothing" in r["notes"], r
