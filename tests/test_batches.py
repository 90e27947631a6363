"""Score batches are plan tasks (issue 11, methods version 2): their boundaries are fixed by the plan,
never by the order of execution nor by an execution setting; and the LLM answers are one case of the
task store (an SQLite cache of an earlier release is imported once)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from conftest import TINY_SCORES, TINY_SPEC, run_cli

from compiler import compile_spec
from compiler.methods import SCORE_BATCH_RESUMES
from compiler.plan import score_batches

REPO = Path(__file__).resolve().parent.parent


def _score_tasks(plan: dict) -> list[dict]:
    return [t for t in plan["tasks"] if t["kind"] == "score"]


def test_the_example_plan_batches_whole_base_candidates():
    """specs/example.yaml: K = 40 bases x 10 variants per job; 64 // 10 = 6 bases (60 resumes) a batch."""
    c = compile_spec(REPO / "specs" / "example.yaml")
    assert SCORE_BATCH_RESUMES == 64
    assert score_batches(c.resolved) == [(0, 6), (6, 12), (12, 18), (18, 24), (24, 30), (30, 36), (36, 40)]
    tasks = [t for t in _score_tasks(c.plan) if "base_candidates" in t["inputs"]["batch"]]
    assert len(tasks) == 5 * 7  # 5 jobs x 7 batches, one system
    # its three negative controls (issue 38) are scored in batches of their own: 64 // 3 = 21 bases a batch;
    # its positive control C01 (issue 39 §6) in batches of its own again: 64 // 1 = 64 >= 40 bases, one a job
    controls = [t for t in _score_tasks(c.plan) if "controls" in t["inputs"]["batch"]]
    assert [(t["inputs"]["batch"]["controls"], t["inputs"]["batch"].get("positive", False)) for t in controls] == [
        ([0, 21], False), ([21, 40], False), ([0, 40], True)] * 5
    assert len(_score_tasks(c.plan)) == 5 * 7 + 5 * 3  # demographic, placebo (2 a job) and positive (1 a job)
    by_job: dict[str, list] = {}
    for t in tasks:
        by_job.setdefault(t["inputs"]["job"]["id"], []).append(t["inputs"]["batch"])
    for batches in by_job.values():
        assert [b["index"] for b in batches] == list(range(7))
        assert [tuple(b["base_candidates"]) for b in batches] == score_batches(c.resolved)
    # a batch's id hashes its positions and the generation it depends on: every id is distinct
    assert len({t["id"] for t in tasks}) == len(tasks)
    assert all(t["deps"] for t in tasks)
    assert [t["kind"] for t in c.plan["tasks"]][-2:] == ["report", "seal"]


def test_a_population_plan_batches_64_profiles():
    c = compile_spec(REPO / "specs" / "population.yaml")  # 1,000 profiles, one resume each
    batches = score_batches(c.resolved)
    assert batches[0] == (0, 64) and batches[-1] == (960, 1000) and len(batches) == 16
    assert len(_score_tasks(c.plan)) == 16


def test_a_score_file_is_not_batched(write_spec, tmp_path):
    write_spec(TINY_SPEC, **{"scores.csv": TINY_SCORES})
    c = compile_spec(tmp_path / "spec.yaml")
    assert score_batches(c.resolved) is None
    tasks = _score_tasks(c.plan)
    assert len(tasks) == 1 and "batch" not in tasks[0]["inputs"]


TEMPLATE = """\
audit: batches
title: Score batches of a template audit
seed: 3
axes:
  sex_gender:
    slot: name
    levels: [M, F, X]
    cues: {M: [Paul Martin], F: [Anne Martin], X: [Alex Martin]}
variants: {design: one_at_a_time}
jobs:
  - {id: accountant, description: "Accountant: prepares financial statements."}
candidates: {base_per_job: 50, matching_per_job: 6}
systems: [{id: minilm, kind: embedding}]
analysis:
  k: {counterfactual: 4, group: 4, merit: 6}
"""


def test_execution_settings_never_move_a_batch(write_spec, tmp_path):
    """3 variants: 64 // 3 = 21 bases a batch. execution.batch_size is not hashed and no longer splits
    a batch: the plan is the same, and the key gets a warning saying so."""
    path = write_spec(TEMPLATE)
    c = compile_spec(path)
    assert score_batches(c.resolved) == [(0, 21), (21, 42), (42, 50)]
    before = c.plan["tasks"]
    path.write_text(path.read_text() + "execution: {batch_size: 8}\n")
    assert compile_spec(path).plan["tasks"] == before
    proc = run_cli("compile", "spec.yaml", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "execution.batch_size" in proc.stderr and "has no effect since methods version 2" in proc.stderr


def test_an_earlier_sqlite_cache_is_imported_into_the_store(tmp_path):
    from runtime.llm.cache import ResponseCache, request_key
    from runtime.store import TaskStore

    request = {"model": "openai/m", "api_base": "http://127.0.0.1:1/v1",
               "messages": [{"role": "user", "content": "score this"}],
               "params": {"temperature": 0.7, "max_tokens": 16, "response_format": None, "seed": 3},
               "replicate": 1, "attempt": 0}
    legacy = tmp_path / "llm.sqlite"
    with sqlite3.connect(legacy) as db:  # the schema of releases before methods version 2
        db.execute("CREATE TABLE responses (key TEXT PRIMARY KEY, model TEXT NOT NULL, request TEXT NOT NULL, "
                   "text TEXT, usage TEXT, created_at REAL NOT NULL)")
        db.execute("INSERT INTO responses VALUES (?, ?, ?, ?, ?, ?)",
                   (request_key(request), "openai/m", json.dumps(request), '{"score": 71}',
                    json.dumps({"prompt_tokens": 9}), 0.0))
    store = TaskStore(tmp_path / "store")
    cache = ResponseCache(store, refs=["score-abc"], legacy=legacy)
    assert cache.imported == 1 and len(cache) == 1
    assert cache.get(request) == ('{"score": 71}', {"prompt_tokens": 9})
    assert cache.get({**request, "replicate": 2}) is None  # keyed by replicate
    (record,) = store.tasks()
    assert record["task"] == f"llm-{request_key(request)}" and record["refs"] == ["score-abc"]
    assert ResponseCache(store, legacy=legacy).imported == 0  # once
