"""Issue 39 §6 (first half): positive controls, weakened copies of the reference résumé that the validity
protocol must detect at the audit's own n (sensitivity tested, not assumed; seed 003 §3.7's positive control).

§1 the spec block and its resolution; §2 the template perturbations (:mod:`runtime.generate.perturb`); §3 the
check (:func:`runtime.analysis.validity.control_sensitivity`); §4 the real CLI on score files; §5 the plan."""

from __future__ import annotations

import json
import math
import re

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings, strategies as st

from compiler.load import load_spec
from compiler.resolve import resolve
from conftest import TINY_SCORES, TINY_SPEC, run_cli

POSITIVE = ("    V01: {sex_gender: F}\n  positive_controls:\n"
            "    - {id: C01, description: BASE without its first required tool}\n")
C01_ROWS = "".join(f"j1,c{i},C01,{s},{m}\n" for i, s, m in ((1, 0.8, 1), (2, 0.6, 1), (3, 0.5, 0), (4, 0.3, 0)))


# §1 ----------------------------------------------------------------------------------------------------------
def test_positive_controls_are_absent_from_the_resolved_spec_unless_written(write_spec):
    validity = "  k: {counterfactual: 2, group: 2, merit: 2}\n  validity: {}"
    plain = resolve(load_spec(write_spec(TINY_SPEC.replace("  k: {counterfactual: 2, group: 2, merit: 2}", validity),
                                         **{"scores.csv": TINY_SCORES})))
    assert "positive_controls" not in plain["variants"]
    # the validity block's positive control gains no key when contrast: control is not written (digests stay)
    assert plain["analysis"]["validity"]["positive_control"] == {"contrast": "match", "axis": None, "level": None,
                                                                 "min_d": 0.5, "direction": "higher"}
    spec = write_spec(TINY_SPEC.replace("    V01: {sex_gender: F}\n", POSITIVE).replace(
        "  k: {counterfactual: 2, group: 2, merit: 2}", "  k: {counterfactual: 2, group: 2, merit: 2}\n  validity:\n"
        "    positive_control: {contrast: control, control: C01, direction: lower}"),
        **{"scores.csv": TINY_SCORES + C01_ROWS})
    r = resolve(load_spec(spec))
    assert r["variants"]["positive_controls"] == [
        {"id": "C01", "description": "BASE without its first required tool"}]
    assert r["variants"]["table"] == plain["variants"]["table"]  # no category: the table is the plain spec's
    assert r["analysis"]["validity"]["positive_control"]["control"] == "C01"


# §2 ----------------------------------------------------------------------------------------------------------
from compiler.spec import POSITIVE_PERTURBATIONS as SPEC_POSITIVE  # noqa: E402
from runtime.generate import FAMILY_IDS, generate_base_candidates, render_resume  # noqa: E402
from runtime.generate.families import FAMILIES  # noqa: E402
from runtime.generate.perturb import (GENERIC_TOOLS, JUNIOR, POSITIVE_PERTURBATIONS, dropped_tool,  # noqa: E402
                                      job_required_tools, positive_resume)

CUES = {"name": "Nadia Benali", "age": "Born 14/03/1992", "residence": "Lives in Saint-Denis, 45 min commute"}


def test_the_spec_and_the_generator_list_the_same_positive_perturbations():
    assert tuple(SPEC_POSITIVE) == POSITIVE_PERTURBATIONS


def _lines(text: str) -> list[str]:
    return text.split("\n")


@settings(max_examples=60, deadline=None)
@given(family=st.sampled_from(FAMILY_IDS), seed=st.integers(0, 2**32), idx=st.integers(0, 5),
       perturbation=st.sampled_from(POSITIVE_PERTURBATIONS),
       control=st.from_regex(r"[A-Za-z0-9_-]{1,6}", fullmatch=True),
       cues=st.sampled_from([CUES, {}, {"name": "Julien Moreau"}]))
def test_positive_perturbations_keep_the_cue_block_and_weaken_the_resume(family, seed, idx, perturbation, control, cues):
    base = generate_base_candidates(job_id=family, family=family, k=6, m=3, seed=seed)[idx]
    s = base.sections
    ref = render_resume(base, cues)
    text = positive_resume(base, cues, perturbation, seed=seed, control_id=control)
    assert text == positive_resume(base, cues, perturbation, seed=seed, control_id=control)  # deterministic
    head = ref[:ref.index("PROFESSIONAL SUMMARY")]
    assert text[:len(head)] == head  # the cue block, byte for byte
    # what stays: dates, years, employers, cities, degrees, certifications, competencies, the number of roles
    for fact in [*s.education, *s.competencies, *s.certifications, f"{s.years_experience} years",
                 *(f" — {r.employer}, {r.city}" for r in s.experience), *(f"{r.start} – {r.end}" for r in s.experience)]:
        assert fact in text, (perturbation, fact)
    ref_lines, lines = _lines(ref), _lines(text)
    assert len(lines) == len(ref_lines)
    if perturbation == "drop_required_skill":
        tool = dropped_tool(base)
        required = job_required_tools(family)
        # a matching résumé of a hand-written family names one tool of every core group: it always loses one
        assert tool is not None or not base.is_true_match
        assert (tool is None) == (text == ref)
        if tool is not None:
            assert tool in required and tool == next(t for t in s.tools if t in required)
            skills = next(line for line in lines if line.startswith("Tools and technologies: "))
            assert skills == "Tools and technologies: " + ", ".join(t for t in s.tools if t != tool)
            mention = re.compile(r"(?<![A-Za-z0-9])" + re.escape(tool) + r"(?![A-Za-z0-9])")
            changed = [(a, b) for a, b in zip(ref_lines, lines) if a != b]
            for a, b in changed:  # summary and bullets: the tool's name replaced by a generic phrase, nothing else
                if not a.startswith("Tools and technologies: "):
                    assert mention.search(a) and not mention.search(b) and any(g in b for g in GENERIC_TOOLS)
    else:
        fam = FAMILIES[base.profile_family]
        above = [r.title for r in s.experience if r.title not in fam.titles["junior"]]
        assert (not above) == (text == ref)
        for role in s.experience:
            at = ref_lines.index(f"{role.title} — {role.employer}, {role.city}")
            new_title = lines[at].split(" — ")[0]
            assert lines[at] == f"{new_title} — {role.employer}, {role.city}"
            if role.title in fam.titles["junior"]:
                assert new_title == role.title
            else:  # one stage down: a mid title (the lower of two listings) becomes a junior one, a senior a mid
                # one, never one also listed under the stage left (a lower title may also be listed lower still)
                stage = "mid" if role.title in fam.titles["mid"] else "senior"
                lower = {"mid": "junior", "senior": "mid"}[stage]
                assert new_title in fam.titles[lower], (role.title, new_title)
                assert new_title not in fam.titles[stage] or set(fam.titles[lower]) <= set(fam.titles[stage])


def test_onet_resumes_lose_a_technology_of_the_job_and_read_junior():
    bases = generate_base_candidates(job_id="bi", family=None, onet="15-2051.01", k=6, m=3, seed=5)
    for base in bases:
        text = positive_resume(base, {}, "drop_required_skill", seed=5, control_id="C01")
        tool = dropped_tool(base)
        if base.is_true_match:  # a matching résumé draws its tools from the job's occupation
            assert tool is not None and tool in job_required_tools("15-2051.01")
        assert (tool is None) == (text == render_resume(base, {}))
        titles = [line.split(" — ")[0] for line in positive_resume(base, {}, "seniority_down", seed=5,
                                                                  control_id="C01").split("\n") if " — " in line
                  and line.split(" — ")[0] in {JUNIOR + " " + r.title for r in base.sections.experience}]
        assert len(titles) == len(base.sections.experience)  # every title of no stage reads "Junior ..."


def test_the_positive_and_negative_streams_differ():
    """A positive control draws from rng(seed, "positive_control", ...): not the stream of a negative control of the
    same id (a placebo and a positive control never share draws)."""
    from runtime.generate.perturb import draws, positive_draws

    assert positive_draws(3, "j", "c", "X").integers(2**62) != draws(3, "j", "c", "X").integers(2**62)


def test_control_resumes_of_a_template_job_hold_the_positive_controls_rows():
    from runtime.generate.matrix import generate_job_controls

    axes = {"sex_gender": {"slot": "name", "levels": ["M", "F"], "cues": {"M": ["John Smith"], "F": ["Jane Smith"]}}}
    frame = generate_job_controls(job_id="data-analyst", family="data-analyst", k=6, m=3, seed=11, axes=axes,
                                  reference={"sex_gender": "M"},
                                  controls=[{"id": "P01", "perturbation": "summary_synonyms"},
                                            {"id": "C01", "perturbation": "drop_required_skill"}])
    assert list(frame["variant"]) == ["P01", "C01"] * 6
    bases = generate_base_candidates(job_id="data-analyst", family="data-analyst", k=6, m=3, seed=11)
    c01 = frame[frame["variant"] == "C01"].reset_index(drop=True)
    for base, row in zip(bases, c01.itertuples()):
        assert row.is_true_match == base.is_true_match  # the base candidate's label, not re-judged
        assert row.text == positive_resume(base, {"name": "John Smith"}, "drop_required_skill", seed=11,
                                           control_id="C01")


# §3 ----------------------------------------------------------------------------------------------------------
from runtime.analysis.validity import (INCONCLUSIVE, MSG_CONTROL_NOT_READ, VALID, check_validity,  # noqa: E402
                                       control_sensitivity)


def _paired(ref: list[float], ctl: list[float], system: str = "s"):
    n = len(ref)
    paired = pd.DataFrame({"system": system, "condition": "default", "replicate": 0, "job_id": "j",
                           "cv_id": [f"c{i}" for i in range(n)], "variant": "BASE", "score": ref,
                           "is_true_match": [int(i < n // 2) for i in range(n)], "sex_gender": "M"})
    controls = paired.assign(variant="C01", score=ctl)
    return paired, controls


def test_the_control_check_equals_a_hand_computed_one_sided_paired_t():
    ref = [0.9, 0.8, 0.7, 0.6, 0.5, 0.4]
    diff = np.array([-0.02, -0.05, 0.0, -0.03, -0.01, -0.04])  # on a 0.01 grid
    paired, controls = _paired(ref, list(np.round(np.array(ref) + diff, 2)))
    (row,) = control_sensitivity(paired, controls, control="C01", direction="lower", reference="BASE", alpha=0.05,
                                 score_step={"s": 0.01}, shifts={("s", "default"): 0.04})
    # by hand: mean -0.025, sd sqrt(sum((d - mean)^2) / 5) = sqrt(0.00175 / 5), t = mean / (sd / sqrt 6)
    mean, sd = -0.025, math.sqrt(0.00175 / 5)
    t = mean / (sd / math.sqrt(6))
    from scipy.stats import t as student

    assert row["p_value"] == pytest.approx(student.cdf(t, 5), rel=1e-9)  # one-sided, lower
    assert row["value"] == pytest.approx(mean / 0.04, rel=1e-12)        # shift in SESOI units (δ* = 0.04)
    half = student.ppf(0.95, 5) * sd / math.sqrt(6)                     # the (1 - 2 alpha) interval
    assert (row["ci_low"], row["ci_high"]) == pytest.approx(((mean - half) / 0.04, (mean + half) / 0.04), rel=1e-9)
    assert row["passed"] and row["n"] == 6 and row["check"] == "positive_control"
    # the wrong direction: the same data cannot pass a test of 'higher'
    (up,) = control_sensitivity(paired, controls, control="C01", direction="higher", reference="BASE", alpha=0.05,
                                score_step={"s": 0.01}, shifts={("s", "default"): 0.04})
    assert up["p_value"] == pytest.approx(1 - student.cdf(t, 5), rel=1e-9) and not up["passed"]


def test_without_a_score_shift_the_sesoi_is_a_d_on_the_pooled_sd():
    ref = [0.9, 0.8, 0.7, 0.6, 0.5, 0.4]
    ctl = [0.85, 0.78, 0.7, 0.55, 0.49, 0.36]
    paired, controls = _paired(ref, ctl)
    (row,) = control_sensitivity(paired, controls, control="C01", direction="lower", reference="BASE", alpha=0.05,
                                 score_step={"s": 0.01}, sesoi=0.2)
    sp = math.sqrt((np.var(ctl, ddof=1) + np.var(ref, ddof=1)) / 2)
    assert row["value"] == pytest.approx(np.mean(np.round((np.array(ctl) - ref) / 0.01)) * 0.01 / (0.2 * sp), rel=1e-9)


def test_a_control_the_system_does_not_read_fails_and_a_constant_shift_passes():
    ref = [0.9, 0.8, 0.7, 0.6]
    paired, same = _paired(ref, ref)
    (row,) = control_sensitivity(paired, same, control="C01", direction="lower", reference="BASE", alpha=0.05)
    assert not row["passed"] and row["detail"] == MSG_CONTROL_NOT_READ and row["value"] == 0.0
    _, lower = _paired(ref, [x - 0.05 for x in ref])
    (row,) = control_sensitivity(paired, lower, control="C01", direction="lower", reference="BASE", alpha=0.05,
                                 score_step={"s": 0.01})
    assert row["passed"] and row["p_value"] == 0.0  # every pair 0.05 lower: detected exactly
    (row,) = control_sensitivity(paired, None, control="C01", direction="lower", reference="BASE", alpha=0.05)
    assert not row["passed"] and row["n"] == 0 and "cannot be verified" in row["detail"]


def test_with_a_control_the_match_contrast_stays_as_the_relevance_check():
    ref = [0.9, 0.85, 0.8, 0.3, 0.25, 0.2]
    paired, controls = _paired(ref, [x - 0.03 for x in ref])
    config = {"positive_control": {"contrast": "control", "control": "C01", "direction": "lower",
                                   "min_d": 0.5, "axis": None, "level": None},
              "manipulation_checks": [], "distribution": {"min_sd": 0.01, "ceiling": 0.95, "max_ceiling_share": 0.1}}
    res = check_validity(paired, config=config, reference="BASE", axes=["sex_gender"], score_range={"s": (0, 1)},
                         alpha=0.05, score_step={"s": 0.01}, controls=controls)
    assert list(res.checks["check"]) == ["positive_control", "relevance", "distribution_sd", "distribution_ceiling"]
    assert res.verdict == VALID
    # matching résumés scoring lower: relevance fails, though the control is detected
    flipped, controls = _paired(ref[::-1], [x - 0.03 for x in ref[::-1]])
    res = check_validity(flipped, config=config, reference="BASE", axes=["sex_gender"], score_range={"s": (0, 1)},
                         alpha=0.05, score_step={"s": 0.01}, controls=controls)
    assert res.verdict == INCONCLUSIVE and [f.split(" (")[0] for f in res.failed] == ["relevance"]


def test_page_one_says_sensitivity_not_tested_without_a_control():
    from runtime.families.effects import MSG_SENSITIVITY_NOT_TESTED, sensitivity_notes

    match = pd.DataFrame({"check": ["positive_control"], "statistic": ["cohens_d"]})
    assert sensitivity_notes(match) == [MSG_SENSITIVITY_NOT_TESTED]
    assert "sensitivity not tested" in MSG_SENSITIVITY_NOT_TESTED
    rows = pd.DataFrame([{"check": "positive_control", "statistic": "shift_sesoi", "system": "s", "condition": "default",
                          "passed": False, "value": -0.1, "p_value": 0.3, "n": 40}])
    assert sensitivity_notes(rows) == ["Sensitivity (s, default): the positive control was NOT detected (shift -0.1 "
                                       "SESOI units, one-sided p = 0.3, n = 40)."]


# §4 ----------------------------------------------------------------------------------------------------------
#: A 2-job x 10-candidate score file on a 0.01 grid: matching résumés (c1-c5) score 0.6-0.9, the others 0.1-0.4;
#: V01 moves each score by at most one step.
def _scores(control: str) -> str:
    rng = np.random.default_rng(39)
    rows = ["job_id,cv_id,variant,score,is_true_match"]
    for j in ("j1", "j2"):
        for i in range(1, 11):
            m = int(i <= 5)
            b = round(float(rng.uniform(0.6, 0.9) if m else rng.uniform(0.1, 0.4)), 2)
            v = round(b + float(rng.choice([-0.01, 0.0, 0.01])), 2)
            c = {"read": round(b - 0.03 + float(rng.choice([-0.01, 0.0, 0.01])), 2), "ignored": b}[control]
            rows += [f"{j},c{i},BASE,{b},{m}", f"{j},c{i},V01,{v},{m}", f"{j},c{i},C01,{c},{m}"]
    return "\n".join(rows) + "\n"


CLI_SPEC = TINY_SPEC.replace("  - {id: j1}", "  - {id: j1}\n  - {id: j2}").replace(
    "    V01: {sex_gender: F}\n", POSITIVE).replace(
    "path: scores.csv}", "path: scores.csv, score_resolution: 0.01}").replace(
    "  k: {counterfactual: 2, group: 2, merit: 2}", "  k: {counterfactual: 2, group: 2, merit: 2}\n  validity:\n"
    "    positive_control: {contrast: control, control: C01, direction: lower}")


@pytest.fixture(scope="module")
def cli_runs(tmp_path_factory):
    """The real CLI on two score files: a control the system reads (every C01 score 0.02-0.04 below BASE) and one it
    ignores (C01 = BASE)."""
    out = {}
    for name in ("read", "ignored"):
        root = tmp_path_factory.mktemp(name)
        (root / "spec.yaml").write_text(CLI_SPEC)
        (root / "scores.csv").write_text(_scores(name))
        assert run_cli("compile", "spec.yaml", cwd=root).returncode == 0
        proc = run_cli("execute", "--unsigned", "--no-pdf", "spec.yaml", "--quiet", cwd=root)
        (run,) = (root / "reports" / "tiny-audit").iterdir()
        out[name] = {"proc": proc, "run": run}
    return out


def test_a_control_the_system_reads_is_valid(cli_runs):
    r = cli_runs["read"]
    assert r["proc"].returncode == 0, r["proc"].stderr[-2000:]
    validity = json.loads((r["run"] / "run.json").read_text())["validity"]
    assert validity["verdict"] == "VALID" and validity["failed"] == []
    effects = pd.read_csv(r["run"] / "effects.csv")
    row = effects[(effects["section"] == "validity") & (effects["check"] == "positive_control")].iloc[0]
    assert row["statistic"] == "shift_sesoi" and bool(row["passed"]) and row["n"] == 20
    assert float(row["value"]) < 0 and float(row["p_value"]) < 0.05
    assert "relevance" in set(effects["check"].dropna())
    html = (r["run"] / "report.html").read_text(encoding="utf-8")
    assert "Sensitivity (vendor, default): the positive control was detected" in html


def test_a_control_the_system_ignores_is_inconclusive(cli_runs):
    r = cli_runs["ignored"]
    assert r["proc"].returncode == 5, r["proc"].stderr[-2000:]
    validity = json.loads((r["run"] / "run.json").read_text())["validity"]
    assert validity["verdict"] == "INCONCLUSIVE"
    assert len(validity["failed"]) == 1 and validity["failed"][0].startswith(
        "positive_control (vendor, default): positive control C01 vs BASE: scores lower, paired t one-sided "
        "p < 0.05 at n = 20"), validity["failed"]
    assert validity["failed"][0].endswith("observed shift_sesoi = 0; " + MSG_CONTROL_NOT_READ)


def test_controls_are_no_categories(cli_runs):
    """No metric row, no family, no headline: the control's rows reach none of the demographic tables."""
    run = cli_runs["read"]["run"]
    for name in ("metrics.csv", "metrics_by_job.csv", "risk.csv", "paired.csv", "headline.csv"):
        frame = pd.read_csv(run / name, keep_default_na=False)
        assert "C01" not in set(frame.astype(str).to_numpy().ravel()), name
    assert set(pd.read_csv(run / "paired.csv")["variant"]) == {"BASE", "V01"}
    assert set(pd.read_csv(run / "metrics.csv")["variant"]) == {"BASE", "V01"}
    assert not (run / "negative_controls.csv").exists()


# §5 ----------------------------------------------------------------------------------------------------------
def test_positive_controls_are_scored_in_batches_of_their_own(write_spec):
    """A template spec: the positive control's résumés get score tasks of their own (``positive: true``), so the
    demographic and placebo tasks keep their ids."""
    from compiler.plan import expand

    gen = TINY_SPEC.replace("jobs:\n  - {id: j1}", "candidates: {base_per_job: 4, matching_per_job: 2}\njobs:\n"
                            "  - {id: data-analyst, description: Analyse data}").replace(
        "{id: vendor, kind: precomputed, path: scores.csv}", "{id: minilm, kind: embedding}")
    placebo = gen.replace("    V01: {sex_gender: F}\n", "    V01: {sex_gender: F}\n  negative_controls:\n"
                          "    - {id: P01, perturbation: summary_synonyms}\n")
    both = placebo + ""
    both = both.replace("  negative_controls:\n", "  positive_controls:\n    - {id: C01, perturbation: "
                        "drop_required_skill}\n  negative_controls:\n")
    plans = {}
    for name, text in (("placebo", placebo), ("both", both)):
        plans[name] = expand(resolve(load_spec(write_spec(text))))
    ids = {n: [t["id"] for t in p["tasks"] if t["kind"] == "score"] for n, p in plans.items()}
    assert set(ids["placebo"]) < set(ids["both"])
    extra = [t for t in plans["both"]["tasks"] if t["kind"] == "score" and t["id"] not in ids["placebo"]]
    assert [(t["inputs"]["batch"], t["inputs"]["controls"]) for t in extra] == [
        ({"index": 0, "controls": [0, 4], "positive": True}, [{"id": "C01", "perturbation": "drop_required_skill"}])]
    assert plans["both"]["counts"]["positive_controls"] == 4 and plans["both"]["counts"]["controls"] == 4
