"""The embedding system with the real packaged all-MiniLM-L6-v2 model (offline)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from compiler.resolve import model_fingerprint, packaged_model_dir
from conftest import run_cli
from runtime.pipeline.engine import score_system
from runtime.systems import ScoreBatch, ScoreRequest, adapter_for
from runtime.systems import embedding as emb_mod

pytestmark = pytest.mark.slow

RESOLVED = {"id": "minilm", "kind": "embedding", "model": {"source": "package"}, "score_range": [0.0, 1.0]}


@pytest.fixture(scope="module")
def model():
    return emb_mod.load_model(packaged_model_dir())


def test_scores_are_clipped_cosines_and_each_batch_is_one_encoder_call(model, monkeypatch, tmp_path):
    calls: list[tuple[list[str], int]] = []
    real_encode = model.encode

    def counting_encode(texts, **kw):
        calls.append((list(texts), kw["batch_size"]))
        return real_encode(texts, **kw)

    monkeypatch.setattr(model, "encode", counting_encode)
    monkeypatch.setattr(emb_mod, "load_model", lambda path: model)
    jobs = {"j1": "Data analyst: SQL, dashboards, statistics.", "j2": "Registered nurse for a surgical ward."}
    texts = ["SQL and Power BI analyst with five years of reporting.", "Staff nurse, intensive care.",
             "SQL and Power BI analyst with five years of reporting.", "zzzz qqqq"]
    resumes = pd.DataFrame({"job_id": ["j1", "j1", "j2", "j2"], "cv_id": ["a", "b", "a", "b"],
                            "variant": ["BASE"] * 4, "is_true_match": [1, 0, 0, 1], "text": texts})
    info: dict = {}
    batches = [ScoreBatch("score-1", "j1", ("a", "b")), ScoreBatch("score-2", "j2", ("a", "b"))]
    out = score_system(adapter_for("embedding")(RESOLVED),
                       ScoreRequest(jobs=jobs, resumes=resumes, variants=["BASE"], spec_folder=tmp_path, info=info,
                                    batches=batches))
    # each job description alone, then each plan batch's distinct texts (longest first) in one call
    assert calls == [([jobs["j1"]], 1), ([texts[0], texts[1]], 2), ([jobs["j2"]], 1), ([texts[2], texts[3]], 2)]
    # independent computation: sentence-transformers' own cosine similarity
    from sentence_transformers import util

    for row, text in zip(out.itertuples(), texts):
        a = real_encode([text], convert_to_tensor=True)
        b = real_encode([jobs[row.job_id]], convert_to_tensor=True)
        expected = float(np.clip(util.cos_sim(a, b).item(), 0, 1))
        assert row.score == pytest.approx(expected, abs=2e-6)
        assert 0.0 <= row.score <= 1.0
    assert out.loc[0, "score"] > out.loc[1, "score"]          # the analyst matches the analyst job
    assert info["minilm"]["distinct_texts"] == 5 and info["minilm"]["max_seq_length"] == 256
    assert (info["minilm"]["score_batches"], info["minilm"]["encoded_texts"]) == (2, 4)


def test_model_fingerprint_is_sha256_of_the_weights():
    import hashlib

    weights = packaged_model_dir() / "model.safetensors"
    assert model_fingerprint(packaged_model_dir())["digest"] == hashlib.sha256(weights.read_bytes()).hexdigest()


SPEC = """\
audit: tiny-embedding-audit
title: Tiny embedding audit
seed: 3
axes:
  sex_gender:
    slot: name
    levels: [Male-FR, Female-NA]
    cues: {Male-FR: [Julien Moreau, Thomas Girard], Female-NA: [Nadia Brahimi, Leila Bensaid]}
  disability_signal:
    slot: disability
    levels: ["No", "Yes"]
    cues: {"No": "", "Yes": "Recognised disabled worker status (RQTH)"}
variants:
  design: one_at_a_time
jobs:
  - {id: accountant, description_file: jobs/accountant.md}
candidates: {base_per_job: 12, matching_per_job: 6}
systems: [{id: minilm, kind: embedding}]
analysis: {k: {counterfactual: 4, group: 4, merit: 6}, bootstrap: 200}
"""


def test_tiny_embedding_audit_end_to_end(tmp_path):
    from runtime.generate import job_family

    (tmp_path / "jobs").mkdir()
    (tmp_path / "jobs" / "accountant.md").write_text(job_family("accountant").description)
    (tmp_path / "spec.yaml").write_text(SPEC)
    proc = run_cli("compile", "spec.yaml", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    proc = run_cli("execute", "--unsigned", "spec.yaml", "--quiet", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    run_dir = next((tmp_path / "reports" / "tiny-embedding-audit").iterdir())
    metrics = pd.read_csv(run_dir / "metrics.csv")
    assert len(metrics) == 10 * 3 and set(metrics["variant"]) == {"BASE", "V01", "V02"}
    paired = pd.read_csv(run_dir / "paired.csv")
    assert len(paired) == 12 * 3 and paired["score"].between(0, 1).all()
    # the matching half ranks above the non-matching half under the reference variant
    base = paired[paired.variant == "BASE"].sort_values("rank")
    assert base.head(6)["is_true_match"].mean() > base.tail(6)["is_true_match"].mean()
    assert (run_dir / "report.pdf").read_bytes()[:4] == b"%PDF"
    run = json.loads((run_dir / "run.json").read_text())
    assert run["status"] == "done" and set(run["timings"]) >= {"generate", "score", "analyse", "report"}
