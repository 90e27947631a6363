"""A population audit of an LLM screener (seed 001 §5.1 scores LLM screeners on population résumés),
end to end with the real local model's answers (llama-cpp-python serving SmolLM2-135M), replayed from
tests/data/llm-answers/ (``llm_replay`` fixture: no server, the port closed; re-recorded by
``python scripts/record_llm_answers.py``). What must hold (pipeline issue): compile estimates
profiles x conditions x replicates model calls; the run writes ``causal.csv`` with one decomposition
per system x condition x job.
"""

from __future__ import annotations

import json
import textwrap

import pandas as pd
import pytest

from conftest import run_cli

pytestmark = [pytest.mark.slow]

PROFILES = 50  # the smallest profiles_per_job a population design accepts


def population_llm_spec(url: str, *, conditions: tuple[str, ...] = ("baseline",), replicates: int = 1,
                        retries: int | None = None) -> str:
    """One job, 50 profiles, one ``llm_score`` system; ``retries`` sets ``execution.llm_retries``
    (0 in a replay: a request missing from the recording fails at once)."""
    return textwrap.dedent(f"""\
        audit: population-llm
        title: Population audit of an LLM screener
        seed: 7
        jobs:
          - {{id: accountant, title: Accountant, description: Prepares financial statements and reconciles accounts.}}
        candidates:
          generator: population
          profiles_per_job: {PROFILES}
          age: [18, 44]
          roles:
            x: {{attribute: gender, x0: female, x1: male}}
            z: [age, race]
            b: [education, experience]
            r: [first_name, surname, region]
          estimation: {{folds: 2, bootstrap: 100}}
        systems:
          - id: smol
            kind: llm_score
            model: openai/smollm2-135m
            api_base: {url}
            response_format: json_object_schema
            replicates: {replicates}
            max_tokens: 16
            conditions: [{", ".join(conditions)}]
        execution:
          store: cache
          llm_concurrency: {{smol: 2}}
        """) + ("" if retries is None else f"  llm_retries: {retries}\n")


def test_compile_counts_profiles_times_conditions_times_replicates(tmp_path):
    """No server is needed to compile: 50 profiles x 2 conditions x 3 replicates = 300 calls."""
    (tmp_path / "spec.yaml").write_text(population_llm_spec("http://127.0.0.1:9/v1",
                                                            conditions=("baseline", "fairness"), replicates=3))
    proc = run_cli("compile", "spec.yaml", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    plan = json.loads((tmp_path / "spec.plan.json").read_text())
    assert plan["counts"]["model_calls"] == PROFILES * 2 * 3
    for condition in ("baseline", "fairness"):  # the per-stage table: 50 profiles x 3 replicates each
        line = next(x for x in proc.stdout.splitlines() if f"smol / {condition}" in x)
        assert "150" in line.split("│")[3]


@pytest.mark.llm_replay
def test_population_llm_run_writes_causal_per_condition(tmp_path, llm_replay):
    (tmp_path / "spec.yaml").write_text(population_llm_spec(llm_replay.url, retries=0))
    llm_replay.store(tmp_path / "cache")
    assert run_cli("compile", "spec.yaml", cwd=tmp_path).returncode == 0
    proc = llm_replay.cli("execute", "--unsigned", "--no-pdf", "spec.yaml", "--quiet", "--out", "out", cwd=tmp_path)
    llm_replay.check(proc)
    assert proc.returncode == 0, proc.stderr[-3000:]
    run_dir = next((tmp_path / "out" / "population-llm").iterdir())
    causal = pd.read_csv(run_dir / "causal.csv")
    assert list(causal.columns[:2]) == ["system", "condition"]
    assert set(causal["condition"]) == {"baseline"}
    te = causal[causal["term"] == "TE"]
    assert len(te) == 1  # one decomposition per system x condition x job
    assert set(causal["term"]) >= {"TE", "NDE", "NIE", "BIE", "RIE"}
    answers = pd.read_csv(run_dir / "llm_responses_smol.csv")
    assert len(answers[answers["attempt"] == 0]) == PROFILES  # one condition, one replicate
    scores = pd.read_csv(run_dir / "scores.csv")
    assert list(scores.columns) == ["system", "condition", "job_id", "cv_id", "score"]
    run = json.loads((run_dir / "run.json").read_text())
    assert run["status"] == "done"
    assert "LLM" in (run_dir / "report.html").read_text()
    if not llm_replay.recording:  # zero model calls: every answer is the recording's
        calls = run["systems_info"]["smol"]["llm_calls"]
        assert calls["calls"] == 0 and calls["from_cache"] == len(answers)
