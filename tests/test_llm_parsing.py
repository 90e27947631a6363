"""Parsing of LLM answers: recorded raw outputs, malformed ones included, replayed (no server)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from hypothesis import given, strategies as st

from runtime.llm.parsing import extract_array, is_clarifying_question, parse_object, parse_score

DATA = Path(__file__).parent / "data" / "llm_raw"


def _cases(name):
    return json.loads((DATA / name).read_text(encoding="utf-8"))["cases"]


@pytest.mark.parametrize("case", _cases("scores.json"), ids=lambda c: repr(c["raw"])[:40])
def test_recorded_score_answers(case):
    got = parse_score(case["raw"], lo=0, hi=100)
    if case["expected"] is None:
        assert not got.valid and got.score is None
        assert got.reason.startswith(case["reason"]), got.reason
    else:
        assert got.valid, got.reason
        assert got.score == case["expected"]


@pytest.mark.parametrize("case", _cases("arrays.json"), ids=lambda c: repr(c["raw"])[:40])
def test_recorded_generator_arrays(case):
    items, method = extract_array(case["raw"])
    assert (len(items), method) == (case["n"], case["method"])


def test_header_split_keeps_the_variant_labels():
    items, method = extract_array("**BASE**\nJohn, analyst\n**V01**\nJane, analyst")
    assert method == "header-split"
    assert [(i["header"], i["full_resume_text"]) for i in items] == [("BASE", "John, analyst"),
                                                                      ("V01", "Jane, analyst")]


@pytest.mark.parametrize("case", _cases("questions.json"), ids=lambda c: repr(c["raw"])[:40])
def test_clarifying_question_heuristic(case):
    assert is_clarifying_question(case["raw"]) is case["question"]


def test_range_is_the_systems_score_range():
    assert parse_score('{"score": 7}', lo=1, hi=7).score == 7
    assert not parse_score('{"score": 8}', lo=1, hi=7).valid
    assert parse_score('{"score": 8}', lo=1, hi=7).reason == "score 8 outside [1, 7]"


def test_parse_object_first_object():
    assert parse_object('noise {"a": 1} {"b": 2}') == {"a": 1}
    assert parse_object("no json") is None


@given(st.integers(min_value=-1000, max_value=1000))
def test_json_integer_scores_valid_exactly_inside_the_range(x):
    got = parse_score(json.dumps({"score": x}), lo=0, hi=100)
    assert got.valid is (0 <= x <= 100)
    assert (got.score == x) if got.valid else (got.score is None)


@given(st.floats(allow_nan=True, allow_infinity=True))
def test_no_float_is_ever_defaulted(x):
    got = parse_score(json.dumps({"score": x}), lo=0, hi=100)
    if got.valid:
        assert math.isfinite(x) and 0 <= x <= 100 and got.score == x
    else:
        assert got.score is None and got.reason
