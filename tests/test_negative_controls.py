"""Issue 38: negative controls (placebo variants of the reference résumé) that measure each system's noise
floor. §1 the spec block; §2 the perturbations (:mod:`runtime.generate.perturb`)."""

from __future__ import annotations

from compiler.load import load_spec
from compiler.resolve import resolve
from compiler.score_file import read_score_file
from conftest import TINY_SCORES, TINY_SPEC, run_cli

CONTROLS = ("    V01: {sex_gender: F}\n  negative_controls:\n"
            "    - {id: P01, description: 'BASE with dates as MM/YYYY, re-scored by the vendor'}\n"
            "    - {id: P_2, description: BASE with bullet glyphs changed}\n")
PLACEBO_ROWS = "".join(f"j1,c{i},{p},{s},{m}\n" for p in ("P01", "P_2")
                       for i, s, m in ((1, 0.9, 1), (2, 0.7, 1), (3, 0.5, 0), (4, 0.3, 0)))


def test_controls_are_absent_from_the_resolved_spec_unless_written(write_spec):
    plain = resolve(load_spec(write_spec(TINY_SPEC, **{"scores.csv": TINY_SCORES})))
    assert "negative_controls" not in plain["variants"]
    spec = write_spec(TINY_SPEC.replace("    V01: {sex_gender: F}\n", CONTROLS), **{"scores.csv": TINY_SCORES + PLACEBO_ROWS})
    with_controls = resolve(load_spec(spec))
    assert with_controls["variants"]["negative_controls"] == [
        {"id": "P01", "description": "BASE with dates as MM/YYYY, re-scored by the vendor"},
        {"id": "P_2", "description": "BASE with bullet glyphs changed"}]
    # the controls are no variants: the table, and so the demographic plan, are those of the plain spec
    assert with_controls["variants"]["table"] == plain["variants"]["table"]


def test_a_score_file_with_a_row_per_control_validates(write_spec, tmp_path):
    spec = write_spec(TINY_SPEC.replace("    V01: {sex_gender: F}\n", CONTROLS), **{"scores.csv": TINY_SCORES + PLACEBO_ROWS})
    proc = run_cli("validate", spec.name, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    found = read_score_file(tmp_path / "scores.csv", jobs=["j1"], variants=["BASE", "V01"], score_range=(0, 1),
                            controls=["P01", "P_2"])
    assert found.problems == [] and found.base_per_job == {"j1": 4}
    assert [r["variant"] for r in found.rows].count("P_2") == 4 and len(found.rows) == 16
    # without the controls declared, the placebo rows are unknown variants, every line named
    found = read_score_file(tmp_path / "scores.csv", jobs=["j1"], variants=["BASE", "V01"], score_range=(0, 1))
    assert found.problems == ["unknown variant 'P01', 'P_2' at lines 10, 11, 12, 13, 14, 15, 16, 17; "
                              "variants in the spec: BASE, V01"]
