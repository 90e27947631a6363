"""The ``ll144`` audit family (NYC Local Law 144 selection or scoring rates and impact ratios from the
audit's own test data; issue 33): its block and checks (located, golden, all at once), the any-of need,
``ll144.csv`` through the real CLI against an independent pandas computation (1e-12), the pure
computation's cases and invariants (hypothesis), and what the block leaves unchanged (shipped spec
digests, ``metrics.csv`` bytes, the words "four-fifths" and "statutory" outside ``#ll144``)."""

from __future__ import annotations

import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from conftest import run_cli

GOLDEN = Path(__file__).parent / "golden" / "errors"
REPO = Path(__file__).resolve().parents[1]

SPEC = """\
audit: ll144-check
title: LL144 rates of a vendor's scores
seed: 5
axes:
  sex_gender:
    slot: name
    levels: [Male-FR, Female-FR]
    cues: {Male-FR: [Paul Martin], Female-FR: [Anne Martin]}
  persona:
    slot: name
    levels: [p1, p2, p3]
    cues: {p1: [A], p2: [B], p3: [C]}
variants:
  reference: BASE
  table:
    BASE: {sex_gender: Male-FR, persona: p1}
    V01: {sex_gender: Female-FR, persona: p1}
    V02: {sex_gender: Male-FR, persona: p2}
    V03: {sex_gender: Female-FR, persona: p3}
jobs:
  - {id: j1, title: Analyst}
systems:
  - {id: vendor, kind: precomputed, path: scores.csv, score_range: [0, 100]}
analysis:
  k: {counterfactual: 2, group: 2, merit: 2}
  bootstrap: 100
"""
SEX = "    sex: {axis: sex_gender, levels: {Male-FR: male, Female-FR: female}}\n"
RACE = "    race_ethnicity: {axis: persona, levels: {p1: white, p2: black_or_african_american, p3: unknown}}\n"
WHY = "    why_test_data: The tool has not screened any applicant yet.\n"
SCORES = "job_id,cv_id,variant,score,is_true_match\n" + "".join(
    f"j1,c{i},{v},{50 + i + d},{i % 2}\n" for i in range(6) for v, d in (("BASE", 0), ("V01", -2), ("V02", 1), ("V03", 0)))

POP_SPEC = """\
audit: pop-audit
title: Population audit
seed: 11
jobs:
  - {id: accountant, title: Accountant, description: Prepare and examine financial records.}
candidates:
  generator: population
  profiles_per_job: 120
  roles:
    x: {attribute: gender, x0: female, x1: male}
    z: [age, race]
    b: [education, experience]
    r: [first_name, surname, region]
systems:
  - {id: minilm, kind: embedding}
analysis:
  ll144:
    why_test_data: Not yet deployed.
"""

ERROR_CASES = {
    "ll144_unknown_key": SPEC + "  ll144:\n" + WHY + SEX + "    rates: scoring\n",
    "ll144_unmapped_level": SPEC + "  ll144:\n" + WHY + "    sex: {axis: sex_gender, levels: {Male-FR: male}}\n",
    "ll144_not_a_level": SPEC + "  ll144:\n" + WHY + "    sex: {axis: sex_gender, levels: {Male-FR: male, Female-FR: "
                         "female, Femme: female}}\n",
    "ll144_unknown_axis": SPEC + "  ll144:\n" + WHY + "    sex: {axis: gender, levels: {Male-FR: male, Female-FR: female}}\n",
    "ll144_bad_category": SPEC + "  ll144:\n" + WHY + "    race_ethnicity: {axis: persona, levels: {p1: white, p2: "
                          "black, p3: unknown}}\n",
    "ll144_no_key": SPEC + "  ll144:\n" + WHY,
    "ll144_why_missing": SPEC + "  ll144:\n" + SEX,
    "ll144_why_blank": SPEC + "  ll144:\n    why_test_data: '  '\n" + SEX,
    "ll144_population_keys": POP_SPEC + SEX.replace("sex_gender", "gender"),
    "ll144_selection_without_rule": SPEC + "  ll144:\n" + WHY + SEX + "    rate: selection\n",
    "ll144_selection_per_variant": SPEC.replace("  k: {counterfactual: 2, group: 2, merit: 2}\n", "  decision: {top_k: 2}\n"
                                                "  ranking: per_variant\n") + "  ll144:\n" + WHY + SEX
                                   + "    rate: selection\n",
    "ll144_investigate_above_pass": SPEC + "  ll144:\n" + WHY + SEX
                                    + "    thresholds: {research: {pass: 0.7, investigate: 0.8}}\n",
    "ll144_all_at_once": SPEC + "  ll144:\n    why_test_data: ''\n    rate: selection\n"
                         "    sex: {axis: sex_gender, levels: {Male-FR: male, Woman: female}}\n"
                         "    race_ethnicity: {axis: origin, levels: {p1: white}}\n"
                         "    thresholds: {research: {pass: 0.8, investigate: 0.9}, operational: {pass: 0.8, "
                         "investigate: 0.7}}\n",
}


@pytest.mark.parametrize("case", sorted(ERROR_CASES))
def test_spec_errors_golden(case, write_spec, tmp_path):
    """Exit 2, every problem at once, each at file:line:col with its key path and what is allowed; no
    traceback and nothing locked."""
    spec = write_spec(ERROR_CASES[case], **{"scores.csv": SCORES})
    proc = run_cli("validate", spec.name, cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    golden = GOLDEN / f"{case}.txt"
    if os.environ.get("UPDATE_GOLDEN"):
        golden.write_text(proc.stderr)
    assert proc.stderr == golden.read_text()
    assert run_cli("compile", spec.name, cwd=tmp_path).returncode == 2
    assert not list(tmp_path.glob("*.lock.json"))


def test_needs_are_any_of_paired_or_unpaired(write_spec, tmp_path):
    """The any-of need (issue 33 §2): met by paired candidates or by unpaired profiles; a design giving
    neither is refused at the block, naming both alternatives (no built-in design gives neither, so the
    design's provides are emptied here)."""
    from compiler.designs import PROVIDES_WORDS, Parts, parts_of
    from compiler.families import FAMILIES
    from compiler.load import load_spec
    from compiler.registry import Needs
    from compiler.validate import _family_issues

    assert FAMILIES["ll144"].needs == Needs.of("paired") | Needs.of("unpaired")
    assert FAMILIES["ll144"].needs.met({"paired"}) and FAMILIES["ll144"].needs.met({"unpaired", "tool_text"})
    assert not FAMILIES["ll144"].needs.met({"llm_answers"})
    ls = load_spec(write_spec(SPEC + "  ll144:\n" + WHY + SEX, **{"scores.csv": SCORES}))
    parts = parts_of(ls)
    bare = type("Bare", (type(parts.design),), {"provides": frozenset()})()
    found = _family_issues(ls, Parts(bare, ()))
    msgs = [f.message for f in found if "ll144" in f.message]
    words = f"{PROVIDES_WORDS['paired']} or {PROVIDES_WORDS['unpaired']}"
    assert msgs == [f"family 'll144' needs {words}; design 'score_file' provides "], msgs
    assert [f.loc for f in found if "ll144" in f.message] == [("analysis", "ll144")]
