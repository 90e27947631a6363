"""Spec keys of the effect-size family (seed 003 §3.5, §3.7): golden error messages, factorial
designs, resolution, and the experience-controlled age cues (§3.6).

Set UPDATE_GOLDEN=1 to rewrite the golden files after a deliberate message change, then review the diff.
"""

from __future__ import annotations

import math

import os
from pathlib import Path

import pytest

from conftest import TINY_SCORES, TINY_SPEC, complete_scores, run_cli

GOLDEN = Path(__file__).parent / "golden" / "errors"
TWO_AXES = TINY_SPEC.replace(
    "axes:\n", "axes:\n  age_signal:\n    slot: age\n    levels: [Young, Older]\n"
    "    cues: {Young: 'Graduation year: 2018', Older: 'Graduation year: 1993'}\n").replace(
    "  reference: BASE\n  table:\n    BASE: {sex_gender: M}\n    V01: {sex_gender: F}",
    "  reference: BASE\n  design: factorial")


def _with_analysis(extra: str, base: str = TWO_AXES) -> str:
    return base.replace("analysis:\n", "analysis:\n" + extra)


CASES = {
    "effects_contrast_unknown_axis": _with_analysis(
        "  effect_size:\n    contrasts:\n      - {axis: religion, level: X}\n"),
    "effects_contrast_undefined_level": _with_analysis(
        "  effect_size:\n    contrasts:\n      - {axis: sex_gender, level: X}\n"),
    "effects_contrast_is_reference": _with_analysis(
        "  effect_size:\n    contrasts:\n      - {axis: sex_gender, level: M}\n"),
    "effects_contrast_shape": _with_analysis(
        "  effect_size:\n    contrasts:\n      - {axis: sex_gender, variant: V01}\n"),
    "effects_contrast_unknown_variant": _with_analysis(
        "  effect_size:\n    contrasts:\n      - {variant: V09}\n"),
    "effects_contrast_duplicate": _with_analysis(
        "  effect_size:\n    contrasts:\n      - {variant: V01}\n      - {variant: V01}\n"),
    "effects_sesoi_negative": _with_analysis("  effect_size: {sesoi: -0.2}\n"),
    "effects_unknown_control": _with_analysis("  effect_size: {controls: [job, weather]}\n"),
    "effects_unknown_key": _with_analysis("  effect_size: {sesio: 0.2}\n"),
    "validity_positive_control_axis_missing": _with_analysis(
        "  validity:\n    positive_control: {contrast: axis, axis: sex_gender}\n"),
    "validity_manipulation_same_condition": _with_analysis(
        "  validity:\n    positive_control: {contrast: match}\n    manipulation_checks:\n"
        "      - {condition: default, direction: lower}\n"),
    "factorial_with_table": TINY_SPEC.replace("  reference: BASE\n", "  reference: BASE\n  design: factorial\n"),
    "factorial_id_clash": TWO_AXES.replace("  reference: BASE\n  design: factorial",
                                           "  reference: V02\n  design: factorial"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_invalid_effects_spec_golden(case, write_spec, tmp_path):
    spec = write_spec(CASES[case], **{"scores.csv": TINY_SCORES})
    complete_scores(spec)  # the data matches the spec's variants: the golden is about the effects block
    proc = run_cli("validate", spec.name, cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    golden = GOLDEN / f"{case}.txt"
    got = proc.stderr.replace(str(tmp_path.resolve()), "<SPEC_DIR>")
    if os.environ.get("UPDATE_GOLDEN"):
        golden.write_text(got)
    assert got == golden.read_text()


def test_factorial_design_is_the_full_cross(write_spec, tmp_path):
    from compiler import compile_spec

    text = TWO_AXES.replace("levels: [M, F]", "levels: [M, F, X]").replace(
        "cues: {M: [John Smith], F: [Jane Smith]}", "cues: {M: [John Smith], F: [Jane Smith], X: [Alex Smith]}")
    spec = write_spec(_with_analysis("  effect_size: {}\n", text), **{"scores.csv": TINY_SCORES})
    complete_scores(spec)
    c = compile_spec(spec)
    table = c.resolved["variants"]["table"]
    assert list(table)[0] == "BASE" and table["BASE"] == {"age_signal": "Young", "sex_gender": "M"}
    assert len(table) == 2 * 3
    combos = {(v["age_signal"], v["sex_gender"]) for v in table.values()}
    assert combos == {(a, g) for a in ("Young", "Older") for g in ("M", "F", "X")}
    assert list(table)[1:] == [f"V{i:02d}" for i in range(1, 6)]
    es = c.resolved["analysis"]["effect_size"]
    assert es["sesoi"] == 0.2 and es["controls"] == ["job", "system", "condition"]
    kinds = [(x["kind"], x["family"]) for x in es["contrasts"]]
    # seed 003 Table 1: one BH family across every pre-registered contrast by default
    assert es["bh_families"] == "all"
    assert kinds.count(("axis", "contrasts")) == 3 and kinds.count(("variant", "contrasts")) == 5
    # per_axis: one family per axis and one for the variants; a contrast's own family wins either way
    per_axis = compile_spec(write_spec(_with_analysis("  effect_size: {bh_families: per_axis}\n", text))
                            ).resolved["analysis"]["effect_size"]  # (the complete scores.csv stays)
    kinds = [(x["kind"], x["family"]) for x in per_axis["contrasts"]]
    assert kinds.count(("axis", "sex_gender")) == 2 and kinds.count(("axis", "age_signal")) == 1
    assert kinds.count(("variant", "variants")) == 5


def test_spec_without_effect_keys_keeps_its_resolved_analysis(write_spec, tmp_path):
    from compiler import compile_spec

    c = compile_spec(write_spec(TINY_SPEC, **{"scores.csv": TINY_SCORES}))
    assert set(c.resolved["analysis"]) == {"k", "alpha", "bootstrap"}
    assert "sensitivity" not in c.plan


def test_graduation_year_cues_change_only_the_age_line():
    from runtime.generate import generate_job_matrix
    from runtime.generate.age_controlled import graduation_year_axis

    axis = graduation_year_axis()
    assert axis["levels"] == ["Grad-2018", "Grad-2008", "Grad-1993"]
    variants = {v: {"age_signal": v} for v in axis["levels"]}
    frame = generate_job_matrix(job_id="data-analyst", family="data-analyst", k=6, m=3, seed=5,
                                axes={"age_signal": axis}, variants=variants)
    for _cv, sub in frame.groupby("cv_id"):
        texts = [t.splitlines() for t in sub["text"]]
        assert len({len(t) for t in texts}) == 1  # same layout: experience, education, skills
        differing = [i for i in range(len(texts[0])) if len({t[i] for t in texts}) > 1]
        assert len(differing) == 1
        assert {t[differing[0]] for t in texts} == {"Graduation year: 2018", "Graduation year: 2008",
                                                    "Graduation year: 1993"}


def test_a_power_not_above_alpha_is_refused_not_a_crash(write_spec, tmp_path):
    """Found by the spec fuzzer once compile computed the MDE of score-file audits (issue 15): a power at
    or below alpha has no detectable effect size; statsmodels' root finder raised instead."""
    spec = write_spec(_with_analysis("  effect_size: {power: 0.04}\n", TINY_SPEC), **{"scores.csv": TINY_SCORES})
    proc = run_cli("validate", spec.name, cwd=tmp_path)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert ("analysis.effect_size.power: power 0.04 must be greater than analysis.alpha (0.05): a two-sided test "
            "rejects with probability alpha when there is no effect") in proc.stderr
    from compiler.power import level_one_power

    res = level_one_power(1, 0.03, 0.01, level=0.05)  # one pair: nothing to report, no exception
    assert all(math.isnan(v) for v in res.values())
