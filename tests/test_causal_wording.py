"""Issues 31 §4 and 39 §7: the population report says what its facts say.

``causal_sections`` on hand-built ``causal.csv`` rows (one unit per case C1-C5, cases withheld because an
effect they need ≃ 0 is undetermined, no case with PASS and with INCONCLUSIVE, and a unit that is
INCONCLUSIVE for positivity alone): the status sentence names the significant, equivalent and undetermined
effects, the margin, the MDEs and the positivity failure; no sentence, reading, caption or chart legend
calls an effect "negligible", and "≃ 0" is said only of an effect whose 90% interval lies inside the margin.
"""

from __future__ import annotations

import pandas as pd
import pytest

from runtime.analysis.causal import EFFECTS, QUANTITIES
from runtime.report.render import _environment
from runtime.report.sections.causal import causal_sections, status_sentence

CANDIDATES = {
    "roles": {"x": {"attribute": "gender", "x0": "male", "x1": "female"}, "z": ["age"], "b": ["education"],
              "r": ["first_name"]},
    "estimation": {"folds": 2, "bootstrap": 200, "alpha": 0.05},
    "experience": {"share": 0.5, "sd": 2.0},
}
#: Margin (score units) of every hand-built unit.
MARGIN = 0.2


def unit(job: str, significant: set[str], equivalent: set[str], status: str, *, est: dict[str, float] | None = None,
         positivity: str = "ok") -> list[dict]:
    """The rows of one system x job: effects significant exactly in ``significant`` (estimate 0.3, band
    [0.18, 0.42]), equivalent in ``equivalent`` (estimate 0.01, 90% interval [-0.07, 0.09] inside ±0.2), the
    others undetermined (estimate 0.1, band [-0.02, 0.22], 90% interval [-0.1, 0.3], not inside ±0.2);
    MDE 0.14 each."""
    val = {t: (0.3 if t in significant else 0.01 if t in equivalent else 0.1) for t in EFFECTS} | (est or {})
    base = {"system": "vendor", "job_id": job, "attribute": "gender", "x0": "male", "x1": "female", "n": 400,
            "n_x0": 200, "n_x1": 200, "cases": "", "verdict": "", "status": status, "positivity": positivity,
            "clipped_p_x_rz": 0.4 if positivity == "violated" else 0.0, "clipped_p_x_brz": 0.0, "repeats": 1}
    rows = []
    for t in EFFECTS:
        e = val[t]
        half = 0.08 if t in equivalent else 0.2
        decision = "significant" if t in significant else "equivalent" if t in equivalent else "undetermined"
        rows.append({**base, "kind": "effect", "term": t, "estimate": e, "se": 0.05, "ci_low": e - 0.1,
                     "ci_high": e + 0.1, "sim_low": e - 0.12, "sim_high": e + 0.12,
                     "significant": t in significant, "eq_low": e - half, "eq_high": e + half,
                     "equivalent": t in equivalent, "decision": decision, "mde": 0.14, "margin": MARGIN})
    for q in QUANTITIES:
        rows.append({**base, "kind": "quantity", "term": q, "estimate": 50.0, "se": 1.0, "ci_low": 48.0,
                     "ci_high": 52.0, "sim_low": None, "sim_high": None, "significant": "", "eq_low": None,
                     "eq_high": None, "equivalent": "", "decision": "", "mde": None, "margin": None})
    return rows


#: job -> (significant, equivalent, status, estimate overrides, positivity, expected cases, status sentence)
UNITS = {
    "c1": ({"NDE", "TE"}, {"RIE"}, "FAIL", None, "ok", ["C1"],
           "FAIL: the direct effect NDE is significant, an impermissible path (direct); also significant: TE"),
    "c2": ({"NDE", "NIE", "BIE"}, {"TE", "RIE"}, "FAIL", {"NDE": 0.3, "NIE": -0.3, "BIE": -0.3, "TE": 0.0}, "ok",
           ["C1", "C2"],
           "FAIL: the direct effect NDE is significant, an impermissible path (direct); also significant: NIE, BIE"),
    # the same pattern with TE undetermined: no cancellation is named (C2 needs TE ≃ 0)
    "c2-te-undetermined": ({"NDE", "NIE", "BIE"}, {"RIE"}, "FAIL", {"NDE": 0.3, "NIE": -0.3, "BIE": -0.3}, "ok",
                           ["C1"],
                           "FAIL: the direct effect NDE is significant, an impermissible path (direct); "
                           "also significant: NIE, BIE"),
    "c3": ({"TE", "NIE", "BIE"}, {"NDE", "RIE"}, "PASS", None, "ok", ["C3"],
           "PASS: NDE and RIE are equivalent to 0 (90% intervals inside ±0.200); TE, NIE and BIE are significant: "
           "the gap runs through qualifications (business necessity)"),
    # business necessity is not named while RIE is only not significant
    "c3-rie-undetermined": ({"TE", "NIE", "BIE"}, {"NDE"}, "INCONCLUSIVE", None, "ok", [],
                            "INCONCLUSIVE: NDE is equivalent to 0 (90% interval inside ±0.200); RIE is undetermined "
                            "(not significant, and not inside ±0.200; MDE RIE 0.140); also significant: TE, NIE, BIE"),
    "c4": ({"TE", "NIE", "RIE"}, {"NDE", "BIE"}, "FAIL", None, "ok", ["C4"],
           "FAIL: the proxy effect RIE is significant, an impermissible path (proxy); also significant: TE, NIE"),
    "c4-bie-undetermined": ({"TE", "NIE", "RIE"}, {"NDE"}, "FAIL", None, "ok", [],
                            "FAIL: the proxy effect RIE is significant, an impermissible path (proxy); "
                            "also significant: TE, NIE"),
    "c5": ({"NIE", "BIE", "RIE"}, set(), "FAIL", None, "ok", ["C5"],
           "FAIL: the proxy effect RIE is significant, an impermissible path (proxy); also significant: NIE, BIE"),
    "none-pass": (set(), set(EFFECTS), "PASS", None, "ok", [],
                  "PASS: NDE and RIE are equivalent to 0 (90% intervals inside ±0.200)"),
    "none-undetermined": (set(), set(), "INCONCLUSIVE", None, "ok", [],
                          "INCONCLUSIVE: NDE and RIE are undetermined (not significant, and not inside ±0.200; "
                          "MDE NDE 0.140, RIE 0.140)"),
    "positivity": (set(), set(EFFECTS), "INCONCLUSIVE", None, "violated", [],
                   "INCONCLUSIVE: positivity fails, so the path split is extrapolated; NDE and RIE are equivalent to 0 "
                   "(90% intervals inside ±0.200)"),
}


@pytest.fixture(scope="module")
def sections():
    rows = [r for job, (sig, eq, status, est, pos, _, _) in UNITS.items()
            for r in unit(job, sig, eq, status, est=est, positivity=pos)]
    profiles = pd.DataFrame([{"job_id": j, "gender": g, "race": "white", "age": 30 + i, "education": "bachelor",
                              "experience": 5.0, "p1_source": "bundled (test)"}
                             for j in UNITS for i, g in enumerate(["male", "female"] * 3)])
    return causal_sections(causal=pd.DataFrame(rows), profiles=profiles, candidates=CANDIDATES)


def test_status_sentences_come_from_the_facts(sections):
    units = {u["job"]: u for u in next(s for s in sections if s.id == "causal").context["units"]}
    for job, (_, _, status, _, _, cases, sentence) in UNITS.items():
        assert units[job]["status_text"] == sentence, job
        assert units[job]["cases"] == cases, job


def test_readings_and_verdicts_per_case(sections):
    units = {u["job"]: u for u in next(s for s in sections if s.id == "causal").context["units"]}
    reading = {job: " ".join(r["text"] for r in u["readings"]) for job, u in units.items()}
    assert "The total effect is equivalent to 0 (within the margin), but the direct and indirect effects are " \
           "both significant and of opposite sign" in reading["c2"]
    assert "BIE is significant while NDE and RIE are equivalent to 0 (their 90% intervals lie inside the margin)" \
        in reading["c3"]
    assert "RIE is significant while NDE and BIE are equivalent to 0 (their 90% intervals lie inside the margin)" \
        in reading["c4"]
    assert "(BIE) and the proxy path (RIE) are significant" in reading["c5"]
    assert reading["none-pass"].startswith("No effect's simultaneous 95% band excludes 0 at this sample size")
    for job in ("c3-rie-undetermined", "c4-bie-undetermined"):
        assert "an effect a case needs to be equivalent to 0 is undetermined" in reading[job], job
    assert units["positivity"]["positivity_violated"] and not units["none-pass"]["positivity_violated"]


def test_results_table_gives_the_decision_interval_and_mde(sections):
    units = {u["job"]: u for u in next(s for s in sections if s.id == "causal").context["units"]}
    rie = {e["term"]: e for e in units["c3-rie-undetermined"]["effects"]}
    assert rie["RIE"]["decision"] == "undetermined" and rie["NDE"]["decision"] == "≃ 0 (equivalent)"
    assert rie["BIE"]["decision"] == "≠ 0 (significant)"
    assert rie["NDE"]["eq"] == "[−0.07000, +0.09000]" and rie["RIE"]["mde"] == "0.140"
    assert units["c3"]["margin"] == "0.200"
    facts = {f["label"]: f["value"] for f in next(s for s in sections if s.id == "causal-facts").context["facts"]}
    assert facts["Equivalence margin"] == ("±0.02 of the score range (methods default): an effect is ≃ 0 only when "
                                           "its 90% interval lies inside it")


def test_no_negligible_anywhere_in_the_population_report(sections):
    env = _environment()
    html = "".join(env.get_template(s.template).render(section=s.context, core={"systems": []}) for s in sections)
    assert "negligible" not in html.lower()
    assert html.count("not significant (the band contains 0)") >= 2 * len(UNITS)  # caption and legend per unit
    assert "INCONCLUSIVE: positivity fails, so the path split is extrapolated; NDE and RIE are equivalent to 0" in html
    assert "90% interval (TOST, margin ±0.200)" in html
    # "≃ 0" names an equivalent effect only: one per equivalent effect in the tables, and the prose
    n_equivalent = sum(len(eq) for _, eq, *_ in UNITS.values())
    assert html.count("≃ 0 (equivalent)") == n_equivalent


def test_status_sentence_with_positivity_and_both_impermissible_paths():
    sig = dict.fromkeys(EFFECTS, True)
    assert status_sentence("FAIL", sig, "violated") == (
        "FAIL: the direct effect NDE and the proxy effect RIE are significant, an impermissible path (direct and "
        "proxy); also significant: TE, NIE, BIE; positivity fails, so the path split is extrapolated")


def test_status_sentence_without_decisions_never_says_equivalent():
    """causal.csv files written before issue 39 §7 carry no decision: nothing is read as ≃ 0."""
    text = status_sentence("INVESTIGATE", dict.fromkeys(EFFECTS, False), "ok")
    assert text == "INVESTIGATE: NDE and RIE are undetermined (not significant, and not inside ±margin)"
