"""LLM plumbing without a server: replicate averaging, exclusion of unscored cells, manipulation
check, cache keys, model families, compile-time estimate (hand-computed values)."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from compiler.llm import model_family
from runtime.generate.llm import _match_variants, manipulation_check
from runtime.llm.cache import ResponseCache, request_key
from runtime.store import TaskStore
from runtime.llm.client import Endpoint, LlmClient
from runtime.systems.llm import RESPONSE_COLUMNS, aggregate


def _resp(rows):
    out = []
    for cond, job, cv, var, rep, att, valid, score in rows:
        out.append({"system": "s", "condition": cond, "job_id": job, "cv_id": cv, "variant": var,
                    "replicate": rep, "attempt": att, "cached": False, "valid": valid,
                    "score": score if valid else None, "reason": "" if valid else "no score found",
                    "method": "json", "raw_text": "x"})
    return pd.DataFrame(out, columns=list(RESPONSE_COLUMNS))


RESUMES = pd.DataFrame({"job_id": ["j"] * 4, "cv_id": ["c1", "c1", "c2", "c2"],
                        "variant": ["BASE", "V01"] * 2, "is_true_match": [1, 1, 0, 0]})


def test_replicates_are_averaged_and_invalid_answers_never_defaulted():
    resp = _resp([
        ("a", "j", "c1", "BASE", 0, 0, True, 60), ("a", "j", "c1", "BASE", 1, 0, False, None),
        ("a", "j", "c1", "BASE", 1, 1, True, 70),                       # retry after an invalid answer
        ("a", "j", "c1", "V01", 0, 0, True, 50), ("a", "j", "c1", "V01", 1, 0, True, 40),
        ("a", "j", "c2", "BASE", 0, 0, True, 20), ("a", "j", "c2", "BASE", 1, 0, True, 30),
        ("a", "j", "c2", "V01", 0, 0, False, None), ("a", "j", "c2", "V01", 0, 1, False, None),
        ("a", "j", "c2", "V01", 1, 0, False, None), ("a", "j", "c2", "V01", 1, 1, False, None),
    ])
    scores, validity = aggregate(resp, RESUMES, system_id="s", conditions=["a"], replicates=2)
    # c1: BASE mean(60, 70) = 65, V01 mean(50, 40) = 45; c2/V01 has no valid answer: c2 is excluded
    assert scores[["cv_id", "variant", "score"]].values.tolist() == [["c1", "BASE", 65.0], ["c1", "V01", 45.0]]
    assert (scores["replicate"] == 0).all() and (scores["condition"] == "a").all()
    (v,) = validity
    assert (v["answers"], v["valid"], v["invalid"]) == (11, 6, 5)
    assert v["valid_response_rate"] == pytest.approx(6 / 11)
    assert v["cells_without_valid_answer"] == 1 and v["excluded_base_candidates"] == ["j/c2"]
    assert v["min_valid_replicates"] == 2


def test_manipulation_check_rates_by_hand():
    table = {"BASE": {"sex": "M", "age": "Y"}, "V01": {"sex": "F", "age": "Y"}}
    rows = [
        {"variant": "BASE", "classified": {"sex": "M", "age": "Y"}, "defaulted": []},
        {"variant": "BASE", "classified": {"sex": "M", "age": "Y"}, "defaulted": ["sex", "age"]},
        {"variant": "V01", "classified": {"sex": "F", "age": "O"}, "defaulted": []},
        {"variant": "V01", "classified": {"sex": "M", "age": "Y"}, "defaulted": ["sex"]},
    ]
    m = manipulation_check(rows, table).set_index(["variant", "axis"])
    assert m.loc[("BASE", "sex"), ["n", "classified_as_intended", "defaulted"]].tolist() == [2, 2, 1]
    assert m.loc[("V01", "sex"), "rate"] == 0.5 and m.loc[("V01", "sex"), "defaulted"] == 1
    assert m.loc[("V01", "age"), "rate"] == 0.5


def test_phase_b_items_matched_by_label_then_position():
    table = ["BASE", "V01"]
    assert _match_variants([{"candidate_type": "V01", "full_resume_text": "b"},
                            {"candidate_type": "BASE", "full_resume_text": "a"}], table) == {"BASE": "a", "V01": "b"}
    assert _match_variants([{"header": "Resume 1", "full_resume_text": "a"},
                            {"header": "Resume 2", "full_resume_text": "b"}], table) == {"BASE": "a", "V01": "b"}
    # one unlabelled item short: no guessing by position
    assert _match_variants([{"full_resume_text": "a"}], table) == {}


def test_cache_key_covers_replicate_attempt_and_messages_but_never_the_key(tmp_path, monkeypatch):
    monkeypatch.setenv("MY_KEY", "sk-secret-123")
    ep = Endpoint(model="openai/x", api_base="http://h/v1", api_key_env="MY_KEY")
    client = LlmClient(ep, ResponseCache(TaskStore(tmp_path / "store")))
    msgs = [{"role": "user", "content": "hi"}]
    base = client.request_record(msgs, replicate=0, attempt=0, seed=1, schema=None, temperature=None,
                                 max_tokens=None)
    keys = {request_key(base)}
    for kw in ({"replicate": 1}, {"attempt": 1}, {"seed": 2}, {"temperature": 0.0}):
        rec = client.request_record(msgs, **{**dict(replicate=0, attempt=0, seed=1, schema=None,
                                                    temperature=None, max_tokens=None), **kw})
        keys.add(request_key(rec))
    keys.add(request_key(client.request_record([{"role": "user", "content": "hi!"}], replicate=0, attempt=0,
                                               seed=1, schema=None, temperature=None, max_tokens=None)))
    assert len(keys) == 6
    assert "sk-secret-123" not in repr(base)
    client.cache.put(base, '{"score": 5}', {})
    assert client.cache.get(base) == ('{"score": 5}', {}) and len(client.cache) == 1
    for f in (tmp_path / "store").rglob("*"):
        assert not f.is_file() or f.read_bytes().find(b"sk-secret-123") == -1, f


@pytest.mark.parametrize("model, family", [
    ("openai/gpt-4o-mini", "OpenAI GPT"), ("gpt-4.1", "OpenAI GPT"), ("anthropic/claude-3-5-haiku", "Anthropic Claude"),
    ("gemini/gemini-2.5-flash-lite", "Google Gemini"), ("ollama/llama3.1:8b", "Meta Llama"),
    ("openai/smollm2-135m", "SmolLM"), ("together_ai/mistralai/Mixtral-8x7B", "Mistral"),
    ("openai/my-own-model", "my-own-model"),
])
def test_model_family(model, family):
    assert model_family(model) == family


def test_default_descriptor_names_levels_and_first_cue():
    from runtime.generate.llm import default_descriptor

    cues = {"sex": {"F": ["Fatima Rahmani", "Nadia B"], "M": ["John"]}, "dis": {"No": [""], "Yes": ["RQTH"]}}
    assert default_descriptor({"sex": "F", "dis": "No"}, cues) == \
        'sex = F (for example: "Fatima Rahmani"); dis = No (no signal)'


def test_validity_rows_join_metrics_without_a_status():
    from runtime.analysis import COLUMNS
    from runtime.families.llm_validity import with_validity_rows

    metrics = pd.DataFrame([{c: None for c in COLUMNS}]).astype({"n": "Int64"})
    meta = {"validity": [{"system": "s", "condition": "baseline", "answers": 11, "valid": 6, "invalid": 5,
                          "valid_response_rate": 6 / 11, "cells_without_valid_answer": 1,
                          "excluded_base_candidates": ["j/c2"]}]}
    out = with_validity_rows(metrics, meta)
    row = out.iloc[-1]
    assert list(out.columns) == list(COLUMNS)
    assert (row["family"], row["metric"], row["variant"], int(row["n"]), row["status"]) == \
        ("llm_validity", "valid_response_rate", "ALL", 11, "")
    assert row["value"] == pytest.approx(6 / 11) and "1 base candidate(s) excluded" in row["notes"]
    assert with_validity_rows(metrics, None) is metrics


LLM_SPEC = """\
audit: llm-errors
title: LLM spec checks
seed: 3
axes:
  sex_gender:
    slot: name
    levels: [M, F]
    cues: {M: [John Smith], F: [Jane Smith]}
variants:
  reference: BASE
  table:
    BASE: {sex_gender: M}
    V01: {sex_gender: F}
jobs:
  - {id: data-analyst, title: Data Analyst, description: SQL and dashboards.}
candidates: {base_per_job: 4, matching_per_job: 2}
systems:
  - id: cmp
    kind: llm_compare
    model: openai/gpt-4o-mini
    api_key_env: OPENAI_API_KEY
    conditions: [baseline, {id: mine, prompt_file: mine.j2}%s]
    references: {data-analyst: ref.txt%s}
analysis:
  k: {counterfactual: 2, group: 2, merit: 2}
"""


def test_custom_condition_and_reference_are_locked_by_content(write_spec):
    from compiler import compile_spec
    from compiler.hashing import digest

    spec = write_spec(LLM_SPEC % ("", ""), **{"mine.j2": "Rate {{ resume }} for {{ job_title }}.",
                                              "ref.txt": "Reference resume."})
    r = compile_spec(spec).resolved["systems"][0]
    assert [c["id"] for c in r["conditions"]] == ["baseline", "mine"]
    assert r["conditions"][1]["sha256"] == digest("Rate {{ resume }} for {{ job_title }}.")["digest"]
    assert r["references"]["data-analyst"]["text"] == "Reference resume."
    assert r["endpoint"]["api_key_env"] == "OPENAI_API_KEY" and "api_key" not in r["endpoint"]


def test_llm_spec_errors_are_located(write_spec):
    from compiler import compile_spec
    from compiler.errors import SpecError

    spec = write_spec(LLM_SPEC % (", baseline", ", nurse: ref.txt"),
                      **{"mine.j2": "Rate {{ resume ", "ref.txt": "Reference resume."})
    with pytest.raises(SpecError) as err:
        compile_spec(spec)
    msg = str(err.value)
    assert "spec.yaml:22:62: systems[0].conditions[2]: condition 'baseline' is listed twice" in msg
    assert "spec.yaml:22:52: systems[0].conditions[1].prompt_file: prompt template 'mine.j2' does not parse as jinja2" in msg
    assert "spec.yaml:23:41: systems[0].references.nurse: references names job 'nurse', which is not a job of the spec; jobs: data-analyst" in msg


class _ScriptedClient:
    """Our own plumbing's stand-in for the litellm client: answers from a script, records messages."""

    def __init__(self, answers):
        self.answers, self.seen = list(answers), []

    async def complete(self, messages, **kw):
        self.seen.append([dict(m) for m in messages])
        return self.answers[len(self.seen) - 1], False


def _agents(client, trail):
    from types import SimpleNamespace

    from compiler import llm as compiler_llm
    from runtime.generate.llm import _Agents

    followup = compiler_llm.template_text(compiler_llm.GENERATOR_TEMPLATES["followup"])
    compiled = SimpleNamespace(resolved={"seed": 5, "candidates": {"templates": {"followup": followup}}})
    return _Agents(compiled, client, None, trail), followup


def test_clarifying_question_gets_exactly_one_scripted_follow_up():
    """Seed 000 §3.1.1: an agent that asks instead of answering gets one scripted follow-up, with its
    question kept in the conversation and in the audit trail; a second question is not chased."""
    import asyncio

    from jinja2 import Environment

    question = "Which seniority level should these resumes have?"
    answer = '[{"full_resume_text": "Jane Doe, analyst", "match": 1}]'
    client = _ScriptedClient([question, answer])
    trail = {"calls": []}
    agents, followup = _agents(client, trail)
    rec = asyncio.run(agents.ask("phase_a", "Write one resume.", ("data-analyst",)))
    assert rec["followup"] is True and rec["question"] == question and rec["raw_text"] == answer
    assert len(client.seen) == 2
    first, second = client.seen
    assert first == [{"role": "user", "content": "Write one resume."}]
    rendered = Environment().from_string(followup).render()
    assert second == [{"role": "user", "content": "Write one resume."},
                      {"role": "assistant", "content": question},
                      {"role": "user", "content": rendered}]
    assert trail["calls"] == [rec]

    # an answer, not a question: no follow-up
    client = _ScriptedClient([answer])
    agents, _ = _agents(client, {"calls": []})
    rec = asyncio.run(agents.ask("phase_a", "Write one resume.", ("data-analyst",)))
    assert rec["followup"] is False and len(client.seen) == 1

    # asked twice: exactly one follow-up, and the second question is what the trail records as the answer
    client = _ScriptedClient([question, "Could you tell me the country first?", answer])
    agents, _ = _agents(client, {"calls": []})
    rec = asyncio.run(agents.ask("phase_a", "Write one resume.", ("data-analyst",)))
    assert len(client.seen) == 2 and rec["raw_text"] == "Could you tell me the country first?"
