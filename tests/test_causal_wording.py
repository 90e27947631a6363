"""Issue 31 §4: the population report says what its facts say.

``causal_sections`` on hand-built ``causal.csv`` rows (one unit per case C1-C5, no case, "other" and a
unit that is INVESTIGATE for positivity alone): the status sentence names the significant effects and
the positivity failure; no sentence, reading, caption or chart legend calls an effect "negligible" (the
causal family runs no equivalence test, so an effect whose band contains 0 is only not significant).
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


def unit(job: str, significant: set[str], status: str, *, est: dict[str, float] | None = None,
         positivity: str = "ok") -> list[dict]:
    """The rows of one system x job: effects significant exactly in ``significant`` (band [e-0.1, e+0.1]
    around a nonzero estimate, else [-0.1, +0.1] around 0.01)."""
    est = {t: (0.3 if t in significant else 0.01) for t in EFFECTS} | (est or {})
    base = {"system": "vendor", "job_id": job, "attribute": "gender", "x0": "male", "x1": "female", "n": 400,
            "n_x0": 200, "n_x1": 200, "cases": "", "verdict": "", "status": status, "positivity": positivity,
            "clipped_p_x_rz": 0.4 if positivity == "violated" else 0.0, "clipped_p_x_brz": 0.0, "repeats": 1}
    rows = []
    for t in EFFECTS:
        e = est[t]
        rows.append({**base, "kind": "effect", "term": t, "estimate": e, "se": 0.05, "ci_low": e - 0.1,
                     "ci_high": e + 0.1, "sim_low": e - 0.12, "sim_high": e + 0.12,
                     "significant": t in significant})
    for q in QUANTITIES:
        rows.append({**base, "kind": "quantity", "term": q, "estimate": 50.0, "se": 1.0, "ci_low": 48.0,
                     "ci_high": 52.0, "sim_low": None, "sim_high": None, "significant": ""})
    return rows


#: job -> (significant effects, status, estimate overrides, positivity, expected cases, status sentence)
UNITS = {
    "c1": ({"NDE", "TE"}, "FAIL", None, "ok", ["C1"],
           "FAIL: the direct effect NDE is significant, an impermissible path (direct); also significant: TE"),
    "c2": ({"NDE", "NIE", "BIE"}, "FAIL", {"NDE": 0.3, "NIE": -0.3, "BIE": -0.3, "TE": 0.0}, "ok", ["C1", "C2"],
           "FAIL: the direct effect NDE is significant, an impermissible path (direct); also significant: NIE, BIE"),
    "c3": ({"TE", "NIE", "BIE"}, "INVESTIGATE", None, "ok", ["C3"],
           "INVESTIGATE: TE, NIE and BIE are significant: the gap runs through qualifications only "
           "(neither NDE nor RIE is significant)"),
    "c4": ({"TE", "NIE", "RIE"}, "FAIL", None, "ok", ["C4"],
           "FAIL: the proxy effect RIE is significant, an impermissible path (proxy); also significant: TE, NIE"),
    "c5": ({"NIE", "BIE", "RIE"}, "FAIL", None, "ok", ["C5"],
           "FAIL: the proxy effect RIE is significant, an impermissible path (proxy); also significant: NIE, BIE"),
    "none": (set(), "PASS", None, "ok", [], "PASS: no effect's simultaneous 95% band excludes 0"),
    "other": ({"TE"}, "INVESTIGATE", None, "ok", [],
              "INVESTIGATE: TE is significant but not attributable to a path (none of NDE, BIE and RIE is significant)"),
    "positivity": (set(), "INVESTIGATE", None, "violated", [],
                   "INVESTIGATE: positivity fails, so the path split is extrapolated; no effect is significant"),
}


@pytest.fixture(scope="module")
def sections():
    rows = [r for job, (sig, status, est, pos, _, _) in UNITS.items() for r in unit(job, sig, status, est=est, positivity=pos)]
    profiles = pd.DataFrame([{"job_id": j, "gender": g, "race": "white", "age": 30 + i, "education": "bachelor",
                              "experience": 5.0, "p1_source": "bundled (test)"}
                             for j in UNITS for i, g in enumerate(["male", "female"] * 3)])
    return causal_sections(causal=pd.DataFrame(rows), profiles=profiles, candidates=CANDIDATES)


def test_status_sentences_come_from_the_facts(sections):
    units = {u["job"]: u for u in next(s for s in sections if s.id == "causal").context["units"]}
    for job, (_, status, _, _, cases, sentence) in UNITS.items():
        assert units[job]["status_text"] == sentence, job
        assert units[job]["cases"] == cases, job


def test_readings_and_verdicts_per_case(sections):
    units = {u["job"]: u for u in next(s for s in sections if s.id == "causal").context["units"]}
    reading = {job: " ".join(r["text"] for r in u["readings"]) for job, u in units.items()}
    assert "The total effect is not significant (the band contains 0), but the direct and indirect effects are " \
           "both significant and of opposite sign" in reading["c2"]
    assert "BIE is significant while NDE and RIE are not significant (their bands contain 0)" in reading["c3"]
    assert "RIE is significant while NDE and BIE are not significant (their bands contain 0)" in reading["c4"]
    assert "(BIE) and the proxy path (RIE) are significant" in reading["c5"]
    assert reading["none"].startswith("No effect's simultaneous 95% band excludes 0 at this sample size")
    assert "whose B and R parts are each not significant: their bands contain 0" in reading["other"]
    assert units["positivity"]["positivity_violated"] and not units["none"]["positivity_violated"]


def test_no_negligible_anywhere_in_the_population_report(sections):
    env = _environment()
    html = "".join(env.get_template(s.template).render(section=s.context, core={"systems": []}) for s in sections)
    assert "negligible" not in html.lower()
    assert html.count("not significant (the band contains 0)") >= 2 * len(UNITS)  # caption and legend per unit
    assert "INVESTIGATE: positivity fails, so the path split is extrapolated; no effect is significant." in html


def test_status_sentence_with_positivity_and_both_impermissible_paths():
    sig = dict.fromkeys(EFFECTS, True)
    assert status_sentence("FAIL", sig, "violated") == (
        "FAIL: the direct effect NDE and the proxy effect RIE are significant, an impermissible path (direct and "
        "proxy); also significant: TE, NIE, BIE; positivity fails, so the path split is extrapolated")
