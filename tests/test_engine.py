"""The per-batch adapter contract and the local engine (issue 40 part A): ``setup`` / ``score_batch`` / ``finish``
in plan order give, for every system kind, the bytes ``SystemAdapter.score()`` gave before the contract
(``tests/golden/adapter_digests.json``, recorded on 5497cf7); the reduced example's result CSVs are those of the
code before it (``tests/golden/engine_results.json``); a resumed scoring dispatches only the batches missing
from the task store; the engine yields results in completion order and the driver assembles them in plan order."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import engine_cases
from runtime.pipeline.engine import Engine, LocalEngine, batch_task, engine_for, score_system

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def urls():
    with engine_cases.stubs() as found:
        yield found


@pytest.mark.slow
@pytest.mark.parametrize("kind", engine_cases.KINDS)
def test_finish_over_score_batch_in_plan_order_gives_the_bytes_score_gave(kind, urls, tmp_path, monkeypatch):
    """sha256 of each kind's scores (and its answer files) through the engine == what ``score()`` gave."""
    monkeypatch.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    monkeypatch.setenv("LITELLM_TELEMETRY", "False")
    golden = json.loads(engine_cases.GOLDEN.read_text())
    if kind not in golden:
        pytest.skip(f"no digest recorded for {kind} (litellm was not installed when they were recorded)")
    if kind == "llm_score":
        pytest.importorskip("litellm")
    if kind == "embedding":
        pytest.importorskip("sentence_transformers")
    got = engine_cases.digests(lambda adapter, request: score_system(adapter, request, engine=LocalEngine()),
                               tmp_path, urls, kinds=(kind,))
    assert got[kind] == golden[kind]
