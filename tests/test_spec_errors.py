"""Invalid specs exit 2 with ``file:line:col: key.path: message`` and no traceback (golden files).

Set UPDATE_GOLDEN=1 to rewrite the golden files after a deliberate message change, then review the diff.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from conftest import TINY_SCORES, TINY_SPEC, run_cli

GOLDEN = Path(__file__).parent / "golden" / "errors"

CASES = {
    "syntax_error": (TINY_SPEC.replace("levels: [M, F]", "levels: [M, F"), {}),
    "unknown_key": (TINY_SPEC.replace("seed: 7", "seed: 7\ncolour: blue"), {}),
    "wrong_type": (TINY_SPEC.replace("seed: 7", "seed: seven"), {}),
    "undefined_level": (TINY_SPEC.replace("V01: {sex_gender: F}", "V01: {sex_gender: X}"), {}),
    "inverted_thresholds": (TINY_SPEC.replace("{pass: 0.03, investigate: 0.05}", "{pass: 0.05, investigate: 0.03}"), {}),
    "missing_file": (TINY_SPEC.replace("path: scores.csv", "path: vendor/scores.csv"), {}),
    "path_escapes": (TINY_SPEC.replace("path: scores.csv", "path: ../outside.csv"), {}),
    "duplicate_key": (TINY_SPEC.replace("seed: 7", "seed: 7\nseed: 8"), {}),
    "unknown_metric": (TINY_SPEC.replace("score_delta: {pass", "score_gap: {pass"), {}),
    "missing_axis_in_variant": (TINY_SPEC.replace("sex_gender:\n    slot", "age_signal:\n    slot: age\n    levels: [Young, Older]\n    cues: {Young: '', Older: 'Born 1960'}\n  sex_gender:\n    slot"), {}),
    "m_greater_than_k": (TINY_SPEC.replace("jobs:", "candidates: {base_per_job: 20, matching_per_job: 30}\njobs:").replace("- {id: j1}", "- {id: data-analyst, description: Analyse data}"), {}),
    "k_smaller_than_shortlist": (TINY_SPEC.replace("jobs:", "candidates: {base_per_job: 1, matching_per_job: 1}\njobs:").replace("- {id: j1}", "- {id: data-analyst, description: Analyse data}"), {}),
    "unknown_system_kind": (TINY_SPEC.replace("kind: precomputed", "kind: oracle"), {}),
    "missing_reference": (TINY_SPEC.replace("BASE: {sex_gender: M}", "REF: {sex_gender: M}"), {}),
    "nested_duplicate_key": (TINY_SPEC.replace("    slot: name\n", "    slot: name\n    slot: age\n"), {}),
    "missing_system_kind": (TINY_SPEC.replace("kind: precomputed, ", ""), {}),
    "path_is_a_folder": (TINY_SPEC.replace("path: scores.csv", "path: ."), {}),
    "empty_cue_list": (TINY_SPEC.replace("F: [Jane Smith]", "F: []"), {}),
    "two_axes_one_slot": (TINY_SPEC.replace("    BASE: {sex_gender: M}", "    BASE: {sex_gender: M, other: a}").replace(
        "    V01: {sex_gender: F}", "    V01: {sex_gender: F, other: b}").replace(
        "axes:\n", "axes:\n  other:\n    slot: name\n    levels: [a, b]\n    cues: {a: A, b: B}\n"), {}),
    "generated_id_clash": (TINY_SPEC.replace("  reference: BASE\n  table:\n    BASE: {sex_gender: M}\n    V01: {sex_gender: F}",
                                             "  reference: V01\n  design: one_at_a_time"), {}),
    "seed_too_large": (TINY_SPEC.replace("seed: 7", "seed: 9007199254740993"), {}),
    "infinite_threshold": (TINY_SPEC.replace("investigate: 0.05}", "investigate: .inf}"), {}),
    "boolean_seed": (TINY_SPEC.replace("seed: 7", "seed: true"), {}),
    "not_utf8_description": (TINY_SPEC.replace("- {id: j1}", "- {id: j1, description_file: jd.md}"), {"jd.md": "caf\udce9"}),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_invalid_spec_golden(case, write_spec, tmp_path):
    text, files = CASES[case]
    spec = write_spec(text, **{"scores.csv": TINY_SCORES, **files})
    (tmp_path.parent / "outside.csv").write_text(TINY_SCORES)
    proc = run_cli("validate", spec.name, cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    golden = GOLDEN / f"{case}.txt"
    got = proc.stderr.replace(str(tmp_path.resolve()), "<SPEC_DIR>").replace(str(tmp_path.parent.resolve()), "<TMP>")
    if os.environ.get("UPDATE_GOLDEN"):
        golden.parent.mkdir(parents=True, exist_ok=True)
        golden.write_text(got)
    assert got == golden.read_text()


def test_every_compile_error_names_file_line_col(write_spec, tmp_path):
    spec = write_spec(CASES["wrong_type"][0], **{"scores.csv": TINY_SCORES})
    proc = run_cli("compile", spec.name, cwd=tmp_path)
    assert proc.returncode == 2
    assert proc.stderr.startswith("error: spec.yaml:3:7: seed: ")
    assert not (tmp_path / "spec.lock.json").exists()
