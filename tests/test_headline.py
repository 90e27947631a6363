"""The first page by protected category (issue 29 §5): ``headline.csv`` and the report's first section.

A synthetic metrics frame of 10 variants (the reference and nine categories) x 9 metrics in which one
category fails every metric: seed 000 Eq. 6 averages it away (9 FAIL of 90 rows: (3·9) / (3·90) = 0.10,
"low"), the headline says FAIL and names it, in the CSV and on page 1 of the PDF.
"""

from __future__ import annotations

import math
import shutil
import subprocess

import pandas as pd
import pytest

from compiler import catalog
from runtime.analysis.classify import risk_table
from runtime.analysis.headline import HEADLINE_COLUMNS, headline_frame

REF = "BASE"
CATS = [f"V{i:02d}" for i in range(1, 10)]
LEVELS = {REF: {"sex_gender": "Male-FR"}, **{v: {"sex_gender": f"L{v}"} for v in CATS}}
LOSER = "V03"


def synthetic_metrics() -> pd.DataFrame:
    """One row per variant x metric: PASS everywhere (interval inside the PASS band), except every metric
    of ``LOSER``, FAIL (interval wholly outside), with its side named (as the evidence rule would)."""
    rows = []
    for variant in [REF, *CATS]:
        for metric, info in catalog.METRICS.items():
            if not info.seed000:  # seed 000's nine metrics (methods 8's selection_ratio is not one)
                continue
            p = catalog.METRICS[metric].research[0]
            if info.classify_abs:
                good, bad = (0.0, -0.005, 0.005), (-0.1, -0.12, -0.08)
            elif info.direction == "lower":
                good, bad = (p / 4, 0.0, p / 2), (p * 3, p * 2, p * 4)
            else:
                good, bad = (0.95, 0.9, 1.0), (p / 2, p / 3, p * 0.6)
            value, lo, hi = bad if variant == LOSER else good
            fail = variant == LOSER
            rows.append({"system": "minilm", "condition": "default", "metric": metric, "variant": variant,
                         "value": value, "ci_low": lo, "ci_high": hi,
                         "status": "FAIL" if fail else "PASS", "status_operational": "FAIL" if fail else "PASS",
                         "status_seed000": "FAIL" if fail else "PASS",
                         "status_seed000_operational": "FAIL" if fail else "PASS",
                         "disadvantaged": f"L{LOSER}" if fail and metric not in ("recall_at_k", "ndcg_at_k") else ""})
    return pd.DataFrame(rows)


def test_one_category_failing_every_metric_is_fail_on_the_headline_and_low_under_eq6():
    m = synthetic_metrics()
    assert len(m) == 90 and (m["status"] == "FAIL").sum() == 9
    risk = risk_table(m)
    total = risk[(risk["system"] == "ALL") & (risk["tier"] == "research")].iloc[0]
    assert total["risk_score"] == pytest.approx(0.10, abs=1e-12) and total["band"] == "low"
    h = headline_frame(m, reference=REF, levels=LEVELS)
    assert list(h.columns) == list(HEADLINE_COLUMNS)
    assert list(h["category"]) == [f"L{v}" for v in CATS] + ["ALL", "ranking quality"]
    row = h.set_index("category").loc[f"L{LOSER}"]
    assert row["status"] == "FAIL" and row["variants"] == LOSER and row["disadvantaged"] == f"L{LOSER}"
    # the deciding metrics: every category metric at FAIL, catalogue order; value and interval of the first
    assert row["deciding_metrics"] == ("score_delta; marc; flip_rate; retention_rate; impact_ratio; "
                                       "equal_opportunity_gap; equalized_odds_gap")
    assert (row["value"], row["ci_low"], row["ci_high"]) == (-0.1, -0.12, -0.08)
    others = h[h["category"].isin([f"L{v}" for v in CATS if v != LOSER])]
    assert (others["status"] == "PASS").all() and (others["disadvantaged"] == "").all()
    verdict = h.set_index("category").loc["ALL"]
    assert verdict["status"] == "FAIL" and verdict["deciding_metrics"] == f"L{LOSER}"
    assert verdict["disadvantaged"] == f"L{LOSER}"
    ranking = h.set_index("category").loc["ranking quality"]
    assert ranking["status"] == "FAIL" and ranking["deciding_metrics"] == f"recall_at_k {LOSER}; ndcg_at_k {LOSER}"
    assert ranking["disadvantaged"] == ""


def test_worst_status_wins_inconclusive_names_no_side_and_na_is_ignored():
    m = synthetic_metrics()
    m.loc[(m["variant"] == "V05") & (m["metric"] == "marc"), ["status", "ci_high"]] = ["INCONCLUSIVE", 0.6]
    m.loc[(m["variant"] == "V06"), "status"] = catalog.STATUS_NA
    m.loc[m["variant"] == LOSER, ["status", "disadvantaged"]] = ["PASS", ""]
    h = headline_frame(m, reference=REF, levels=LEVELS).set_index("category")
    assert h.loc["LV05", "status"] == "INCONCLUSIVE" and h.loc["LV05", "deciding_metrics"] == "marc"
    assert h.loc["LV05", "disadvantaged"] == "direction not established"
    assert h.loc["LV06", "status"] == catalog.STATUS_NA and math.isnan(h.loc["LV06", "value"])
    assert h.loc["ALL", "status"] == "INCONCLUSIVE" and h.loc["ALL", "deciding_metrics"] == "LV05"
    assert h.loc["ALL", "disadvantaged"] == "direction not established"


@pytest.mark.slow
def test_page_one_of_the_pdf_says_fail_and_names_the_category(tmp_path):
    from test_report import make_inputs

    from runtime.report import build_core, metric_suite_sections, render_pdf, render_report

    _, _, drift, meta = make_inputs()
    m = synthetic_metrics()
    levels = {**LEVELS}
    meta = meta.__class__(**{**meta.__dict__, "variants": levels, "axes": ("sex_gender",), "reference": REF})
    for col in ("reference", "n", "p_value", "p_adj", "test", "notes", "k", "family", "direction"):
        m[col] = {"reference": REF, "n": 200, "p_value": math.nan, "p_adj": math.nan, "test": "", "notes": "",
                  "k": 10, "family": "counterfactual", "direction": "lower"}[col]
    m["family"] = [catalog.METRICS[x].family for x in m["metric"]]
    m["direction"] = [catalog.METRICS[x].direction for x in m["metric"]]
    sections = metric_suite_sections(metrics=m, risk=risk_table(m), drift=drift.iloc[0:0], meta=meta,
                                     headline=headline_frame(m, reference=REF, levels=LEVELS))
    core = build_core(meta)
    pdf = tmp_path / "report.pdf"
    render_pdf(core, pdf, html=render_report(core, sections))
    if shutil.which("pdftotext") is None:
        pytest.skip("pdftotext (poppler-utils) is not installed")
    page1 = subprocess.run(["pdftotext", "-f", "1", "-l", "1", "-layout", str(pdf), "-"], capture_output=True,
                           check=True).stdout.decode()
    assert "Findings by protected category" in page1
    line = next(ln for ln in page1.splitlines() if ln.strip().startswith(f"L{LOSER}") and "FAIL" in ln)
    assert "Score delta" in line, line
    assert "System minilm: FAIL : 1 of 9 categories FAIL; who loses: LV03" in " ".join(page1.split()), page1
    assert "Eq. 6" not in page1 and "Risk score" not in page1


def test_a_side_only_a_non_deciding_metric_establishes_is_named_with_its_metrics():
    """A regulator's read of the example: V03's score test rejected (it scores lower) while its deciding
    selection metric established no direction; the category read "direction not established". The cell now
    names the side and the metrics that establish it; the system line lists such categories; without
    ``metrics.csv`` the cell is the headline's alone."""
    from runtime.report.sections.metric_suite.headline import headline_context

    m = synthetic_metrics()
    m.loc[m["variant"] == LOSER, ["status", "disadvantaged"]] = ["PASS", ""]
    m.loc[(m["variant"] == "V05") & (m["metric"] == "marc"), ["status", "ci_high"]] = ["INCONCLUSIVE", 0.6]
    m.loc[(m["variant"] == "V05") & (m["metric"] == "score_delta"), "disadvantaged"] = "LV05"  # PASS, significant
    m.loc[(m["variant"] == "V07") & (m["metric"] == "marc"), ["status", "ci_high", "disadvantaged"]] = [
        "INCONCLUSIVE", 0.6, "LV07"]
    m.loc[(m["variant"] == "V07") & (m["metric"] == "score_delta"), "disadvantaged"] = "reference"  # the other way
    h = headline_frame(m, reference=REF, levels=LEVELS)
    assert h.set_index("category").loc["LV05", "disadvantaged"] == "direction not established"
    (s,) = headline_context(h, metrics=m)["systems"]
    cells = {c["variants"]: c["disadvantaged"] for c in s["categories"]}
    assert cells["V05"] == ("this category on Score delta (a test rejects after adjustment); on the deciding "
                            "metric: direction not established")
    assert cells["V07"] == "LV07; also the reference on Score delta (a test rejects after adjustment)"
    assert cells["V01"] == "—"  # nothing established anywhere: as before
    # a bare "reference" read as a category (the regulator's read of stop 58): the reference loses, the category gains
    from runtime.report.sections.metric_suite.headline import _who_loses

    assert _who_loses({"disadvantaged": "reference", "category": "LV03", "status": "INCONCLUSIVE"}, {}, str) == \
        "the reference (this category gains)"
    assert s["also"] == "V05 loses on Score delta"
    (plain,) = headline_context(h)["systems"]
    assert {c["variants"]: c["disadvantaged"] for c in plain["categories"]}["V05"] == "direction not established"
    assert plain["also"] == ""


def test_page_one_says_which_rows_were_redrawn_and_with_how_many_resamples():
    """A regulator's read of the example: V06's status came from a redrawn bootstrap (issue 39 §3) and page 1
    did not say so. The system's line names the redrawn rows and the resamples; none redrawn, nothing said."""
    from runtime.analysis import NOTE_REDRAWN
    from runtime.report import ReportMeta, ReportSystem, build_core, render_report
    from runtime.report.sections import Section
    from runtime.report.sections.metric_suite.headline import headline_context

    m = synthetic_metrics().assign(notes="")
    note = NOTE_REDRAWN.format(b=2000, b0=500)
    m.loc[(m["variant"] == "V06") & (m["metric"] == "score_delta"), "notes"] = note
    m.loc[(m["variant"] == "V06") & (m["metric"] == "marc"), "notes"] = "binary scores; " + note
    h = headline_frame(m, reference=REF, levels=LEVELS)
    (s,) = headline_context(h, metrics=m)["systems"]
    assert s["redrawn"] == {"rows": "V06 Score delta; V06 MARC / K", "resamples": "2,000"}
    (plain,) = headline_context(h, metrics=synthetic_metrics().assign(notes=""))["systems"]
    assert plain["redrawn"] == {}
    meta = ReportMeta(audit="redraw", reference=REF, alpha=0.05, thresholds=catalog.default_thresholds(),
                      k={"counterfactual": 10, "group": 10, "merit": 10},
                      systems=(ReportSystem(id="minilm", kind="precomputed", score_range=(0, 1)),),
                      variants=LEVELS, axes=("sex_gender",))
    section = Section(id="headline", title="Findings by protected category",
                      template="sections/metric_suite_headline.html.j2", context=headline_context(h, metrics=m), order=0)
    text = " ".join(render_report(build_core(meta), [section]).split())
    assert "Redrawn with 2,000 bootstrap resamples: V06 Score delta; V06 MARC / K." in text
