"""An LLM screener whose every answer means 80, written with reasoning drafts, fractions and a separate
``reasoning_content`` (``tests/openai_stub.py``, a stdlib OpenAI-compatible server on 127.0.0.1), audited
end to end through ``llm_score`` and litellm (issue 35 §1): the reader takes no draft for the answer, so
the variant's score delta is exactly 0 and PASS. Reading the first JSON object (methods 8) recorded the
``[THINK]`` draft, 35, for some résumés and not others.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from conftest import run_cli
from runtime.llm import serve

STUB = Path(__file__).parent / "openai_stub.py"

SPEC = """\
audit: stub-llm
title: A screener that always means 80
seed: 5
axes:
  sex_gender:
    slot: name
    levels: [M, F]
    cues: {{M: [John Smith], F: [Fatima Rahmani]}}
variants:
  reference: BASE
  table:
    BASE: {{sex_gender: M}}
    V01: {{sex_gender: F}}
jobs:
  - {{id: data-analyst, title: Data Analyst, family: data-analyst,
     description: Writes SQL and builds dashboards. Needs three years of analysis experience.}}
candidates: {{generator: template, base_per_job: 12, matching_per_job: 6}}
systems:
  - id: stub
    kind: llm_score
    model: openai/stub
    api_base: {url}
    response_format: none
    replicates: 1
    max_tokens: 64
    conditions: [baseline]
analysis:
  k: {{counterfactual: 4, group: 4, merit: 4}}
  bootstrap: 200
execution:
  store: store
"""


@pytest.fixture
def stub_server(tmp_path):
    port = serve.free_port()
    log = tmp_path / "requests.jsonl"
    proc = subprocess.Popen([sys.executable, str(STUB), "--port", str(port), "--score", "80", "--log", str(log)])
    url = f"http://127.0.0.1:{port}/v1"
    try:
        serve.wait_ready(url, timeout=30, proc=proc)
        yield {"url": url, "log": log}
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_drafts_and_fractions_never_become_the_score(tmp_path, stub_server, monkeypatch):
    monkeypatch.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    monkeypatch.setenv("LITELLM_TELEMETRY", "False")
    spec = tmp_path / "spec.yaml"
    spec.write_text(SPEC.format(url=stub_server["url"]))
    assert run_cli("compile", str(spec), cwd=tmp_path).returncode == 0
    run = run_cli("execute", "--unsigned", "--no-pdf", str(spec), "--quiet", cwd=tmp_path)
    assert run.returncode == 0, run.stderr[-3000:]
    (run_dir,) = [d for d in (tmp_path / "reports").glob("*/*") if d.is_dir()]

    sent = [json.loads(line)["content"] for line in stub_server["log"].read_text().splitlines()]
    assert len(sent) == 12 * 2  # one answer per résumé, none asked again
    assert sum("[THINK]" in c for c in sent) > 0 and sum("/100" in c for c in sent) > 0  # the forms were used

    answers = pd.read_csv(run_dir / "llm_responses_stub.csv")
    assert answers["valid"].all() and (answers["score"] == 80).all()
    assert (answers["attempt"] == 0).all()
    # the separate reasoning field is counted, never read: 37 characters where the stub sent it (litellm
    # also moves a <think> block there); a [THINK] block stays in the content and is read past
    with_field = answers["raw_text"] == '{"score": 80}'
    assert with_field.any()
    assert (answers.loc[with_field, "reasoning_chars"] == len("I would say 35 at first, then 20/100.")).all()
    think = answers["raw_text"].str.startswith("[THINK]")
    assert think.any() and (answers.loc[think, "reasoning_chars"] == 0).all()

    metrics = pd.read_csv(run_dir / "metrics.csv", keep_default_na=False)
    delta = metrics[(metrics["metric"] == "score_delta") & (metrics["variant"] == "V01")].iloc[0]
    assert float(delta["value"]) == 0.0
    assert delta["status"] == "PASS"
