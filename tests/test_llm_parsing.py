"""Parsing of LLM answers: recorded raw outputs, malformed ones included, replayed (no server); the score
reader's rules (issue 35 §1: reasoning first, the last score of the strongest form, one scale)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from hypothesis import given, strategies as st

from runtime.llm.parsing import extract_array, is_clarifying_question, parse_object
from runtime.systems.answers import parse_score, score_value, strip_reasoning

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


def test_a_fraction_or_percentage_reads_only_on_the_systems_own_scale():
    # the high end of score_range is the only scale a fraction may name; nothing is converted
    assert parse_score("4 out of 5", lo=0, hi=5).score == 4
    assert parse_score("4/5", lo=1, hi=5).score == 4
    assert parse_score("Score: 8/10.", lo=0, hi=10).score == 8
    got = parse_score("80%", lo=0, hi=1)
    assert not got.valid and got.reason == "score 80% is on another scale than [0, 1]"
    assert parse_score("0.8", lo=0, hi=1).score == 0.8
    assert parse_score('{"score": "7 out of 7"}', lo=1, hi=7).score == 7


def test_http_values_read_by_the_same_rules():
    assert score_value(80, lo=0, hi=100) == score_value("80", lo=0, hi=100)
    assert score_value("80/100", lo=0, hi=100).score == 80
    assert score_value("8/10", lo=0, hi=100).reason == "score 8/10 is on another scale than [0, 100]"
    assert score_value(None, lo=0, hi=100).reason == "score is not a number: None"
    assert score_value("high", lo=0, hi=100).reason == "score is not a number: 'high'"
    assert score_value(101, lo=0, hi=100).reason == "score 101 outside [0, 100]"
    assert score_value(True, lo=0, hi=1).valid is False  # a JSON boolean is not a score


def test_reasoning_blocks_are_removed_in_either_syntax():
    assert strip_reasoning("a<think>b</think>c[THINK]d[/think]e") == ("ace", True)
    assert strip_reasoning("drafts</think>answer") == ("answer", True)
    assert strip_reasoning("x<think>y") == ("x", False)


# -- the final answer wins (hypothesis) --------------------------------------------------------------------
_DRAFT_NUMBER = st.integers(min_value=-50, max_value=500)
_DRAFT = st.one_of(
    _DRAFT_NUMBER.map(str),
    st.tuples(_DRAFT_NUMBER, st.sampled_from([5, 10, 100])).map(lambda t: f"{t[0]}/{t[1]}"),
    _DRAFT_NUMBER.map(lambda n: f"{n}%"),
    _DRAFT_NUMBER.map(lambda n: f"{n} out of 10"),
    _DRAFT_NUMBER.map(lambda n: json.dumps({"score": n})),
    _DRAFT_NUMBER.map(lambda n: f"score: {n}"),
    st.text(alphabet="abc xyz.,:;\n", max_size=20),
)
_BLOCK = st.tuples(st.sampled_from([("<think>", "</think>"), ("[THINK]", "[/THINK]"), ("<Think>", "</THINK>"),
                                    ("[think]", "[/think]")]),
                   st.lists(_DRAFT, max_size=5)).map(lambda t: t[0][0] + " ".join(t[1]) + t[0][1])
_FINAL = st.sampled_from(["{x}", '{{"score": {x}}}', '{{"score": "{x}"}}', "score: {x}", "Score = {x}",
                          "{x}/100", "{x} out of 100", "{x}%", '```json\n{{"score": {x}}}\n```',
                          'Final answer: {{"score": {x}}}'])


@given(st.lists(_BLOCK, min_size=1, max_size=3), st.integers(min_value=0, max_value=100), _FINAL,
       st.sampled_from(["", "\n", " "]))
def test_reasoning_never_supplies_the_score(blocks, x, final, sep):
    got = parse_score(sep.join(blocks) + sep + final.format(x=x), lo=0, hi=100)
    assert got.score is None or got.score == x
    assert got.valid, got.reason  # every final form here is on the 0-100 scale


@given(st.lists(_DRAFT, min_size=1, max_size=4), st.integers(min_value=0, max_value=100))
def test_the_last_json_score_decides(drafts, x):
    objects = [d for d in drafts if d.startswith("{")]
    text = " ".join(drafts) + " " + json.dumps({"score": x})
    got = parse_score(text, lo=0, hi=100)
    assert got.valid and got.score == x, (objects, got)
