"""Fixed score requests, one per system kind, and the sha256 of what each adapter returns on it (issue 40 A §5).

:func:`cases` compiles one spec holding every kind (``embedding``, ``lexical``, ``llm_score`` against
``tests/openai_stub.py``, ``http`` against ``tests/http_stub.py``, ``command`` and ``python`` running
``tests/data/exec/kw_match.py``, ``precomputed``) and builds, for each, a request over the same hand-made résumés:
2 jobs x 3 base candidates x 2 variants, in plan score batches of 2 and 1 base candidates per job.
:func:`digests` scores every case and returns ``{kind: {"scores": sha256, "artifact:<name>": sha256}}``: the
sha256 of the scores' CSV (``DataFrame.to_csv``: floats written with ``repr``, so exact) plus their dtypes, and of
each extra file the adapter made (``answers_<id>.csv`` without its ``resume_id`` and ``raw_text`` columns and no
``request_key_<id>.csv``: the opaque ids are drawn afresh for an empty store). ``tests/golden/adapter_digests.json`` holds the digests ``SystemAdapter.score()``
gave before the per-batch contract, recorded on ``5497cf7`` (a ``git archive`` of it in ``/tmp/base``) with
``PYTHONPATH=/tmp/base python tests/engine_cases.py --record [KIND ...]`` (``score()`` exists there only);
``tests/golden/engine_results.json`` the reduced example's result CSVs, with
``python tests/engine_cases.py --record-results /tmp/base``;
``tests/test_engine.py`` asserts that ``setup`` / ``score_batch`` / ``finish`` in plan order give the same bytes.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import socket
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

import pandas as pd

HERE = Path(__file__).parent
GOLDEN = HERE / "golden" / "adapter_digests.json"
KINDS = ("embedding", "lexical", "llm_score", "http", "command", "python", "precomputed")

JOBS = {"data-analyst": "Writes SQL and builds dashboards. Needs three years of analysis experience.",
        "nurse": "Registered nurse for a surgical ward: patient care, medication, night shifts."}

SPEC = """\
audit: engine-cases
title: Every system kind on one fixed request
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
  - {{id: data-analyst, title: Data Analyst, family: data-analyst, description: "{j1}"}}
  - {{id: nurse, title: Registered Nurse, family: registered-nurse, description: "{j2}"}}
candidates: {{generator: template, base_per_job: 12, matching_per_job: 6}}
systems:
  - {{id: embedding, kind: embedding}}
  - {{id: lexical, kind: lexical, method: bm25}}
  - id: llm-score
    kind: llm_score
    model: openai/stub
    api_base: {llm}
    response_format: none
    replicates: 1
    max_tokens: 64
    conditions: [baseline]
  - id: http
    kind: http
    url: {http}
    version: "kw-matcher 2.3"
    score_range: [0, 100]
    score_resolution: 1
    batch_size: 2
    request:
      body: {{items: $items}}
      item: {{id: $id, job: $job, resume: $resume}}
    response: {{items: scores, id: id, score: score, version: model}}
  - id: command
    kind: command
    argv: [{python}, tools/kw_match.py]
    version: "kw-match 1.4"
    batch_size: 3
    score_range: [0, 100]
    score_resolution: 1
  - id: python
    kind: python
    function: tools/kw_match.py:score_batch
    version: "kw-match 1.4"
    batch_size: 3
    score_range: [0, 100]
    score_resolution: 1
  - {{id: precomputed, kind: precomputed, path: scores.csv, score_range: [0, 100], score_resolution: 1}}
analysis:
  k: {{counterfactual: 2, group: 2, merit: 2}}
  bootstrap: 200
execution:
  store: store
"""


def resumes() -> pd.DataFrame:
    """2 jobs x 3 base candidates x (BASE: John Smith, V01: Fatima Rahmani), texts that differ by job and cv."""
    rows = []
    for job in JOBS:
        for c in range(3):
            body = (f"PROFESSIONAL SUMMARY\n{'Analyst' if job == 'data-analyst' else 'Nurse'} {c} who "
                    f"{'writes SQL and builds dashboards' if c != 1 else 'cares for patients on wards'}; {3 + c} years.\n")
            for variant, name in (("BASE", "John Smith"), ("V01", "Fatima Rahmani")):
                rows.append({"job_id": job, "cv_id": f"cv{c}", "variant": variant, "is_true_match": int(c != 1),
                             "text": f"{name}\n{body}"})
    return pd.DataFrame(rows)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait(port: int) -> None:
    for _ in range(200):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"stub on port {port} did not start")


@contextmanager
def stubs():
    """The OpenAI-compatible stub (always means 80) and the vendor API stub (penalises Fatima Rahmani), on
    127.0.0.1; yields ``{"llm": base url, "http": score url}``."""
    llm_port, http_port = _free_port(), _free_port()
    procs = [subprocess.Popen([sys.executable, str(HERE / "openai_stub.py"), "--port", str(llm_port), "--score", "80"]),
             subprocess.Popen([sys.executable, str(HERE / "http_stub.py"), "--port", str(http_port),
                               "--penalise", "Fatima Rahmani"])]
    try:
        _wait(llm_port)
        _wait(http_port)
        yield {"llm": f"http://127.0.0.1:{llm_port}/v1", "http": f"http://127.0.0.1:{http_port}/v1/score"}
    finally:
        for p in procs:
            p.terminate()
            p.wait(timeout=10)


def cases(folder: Path, urls: dict[str, str]) -> dict[str, tuple[dict, object]]:
    """kind -> (resolved system, ScoreRequest) over :func:`resumes`, each with a task store of its own."""
    from compiler import compile_spec
    from runtime.llm import response_cache
    from runtime.store import TaskStore
    from runtime.systems.base import JobInfo, LlmSettings, ScoreBatch, ScoreRequest

    folder.mkdir(parents=True, exist_ok=True)
    (folder / "tools").mkdir(exist_ok=True)
    shutil.copy(HERE / "data" / "exec" / "kw_match.py", folder / "tools" / "kw_match.py")
    frame = resumes()
    lines = ["job_id,cv_id,variant,score,is_true_match"]
    lines += [f"{r.job_id},{r.cv_id},{r.variant},{40 + 7 * n % 50},{r.is_true_match}"
              for n, r in enumerate(frame.itertuples())]
    (folder / "scores.csv").write_text("\n".join(lines) + "\n")
    (folder / "spec.yaml").write_text(SPEC.format(j1=JOBS["data-analyst"], j2=JOBS["nurse"], python=sys.executable,
                                                  **urls))
    compiled = compile_spec(folder / "spec.yaml")
    ex = compiled.loaded.spec.execution
    job_info = {"data-analyst": JobInfo("Data Analyst", "data-analyst"), "nurse": JobInfo("Registered Nurse",
                                                                                          "registered-nurse")}
    out = {}
    for s in compiled.resolved["systems"]:
        store = TaskStore(folder / f"store-{s['id']}")
        batches = [] if s["kind"] == "precomputed" else [
            ScoreBatch(f"score-{s['id']}-{job}-{n}", job, cvs)
            for job in JOBS for n, cvs in enumerate((("cv0", "cv1"), ("cv2",)))]
        llm = None
        if s["kind"] == "llm_score":
            llm = LlmSettings(cache=response_cache(ex, folder, store), concurrency={s["id"]: 2}, retries=1,
                              timeout_s=20.0)
        out[s["kind"]] = (s, ScoreRequest(
            jobs=dict(JOBS), resumes=frame.copy(), variants=["BASE", "V01"], spec_folder=folder, seed=5,
            job_info=job_info, llm=llm, store=store, plan_tasks=[f"score-{s['id']}"], batches=batches,
            variant_table={"BASE": {"sex_gender": "M"}, "V01": {"sex_gender": "F"}}))
    return out


def sha256_frame(frame: pd.DataFrame) -> str:
    """sha256 of a frame's dtypes and its CSV (floats as ``repr``: exact)."""
    head = json.dumps([[str(c), str(t)] for c, t in frame.dtypes.items()]).encode()
    return hashlib.sha256(head + b"\n" + frame.to_csv(index=False).encode()).hexdigest()


def digests(score, folder: Path, urls: dict[str, str], kinds=KINDS) -> dict[str, dict[str, str]]:
    """kind -> {"scores": sha256, "artifact:<name>": sha256}, scoring each case of ``kinds`` with
    ``score(adapter, request)``."""
    from runtime.systems import adapter_for

    out = {}
    for kind, (resolved, request) in cases(folder, urls).items():
        if kind not in kinds:
            continue
        scored = score(adapter_for(kind)(resolved), request)
        rec = {"scores": sha256_frame(scored)}
        for name, data in sorted(request.artifacts.items()):
            if name.startswith("request_key_"):  # opaque ids drawn afresh for a new store (runtime.blind.new_key)
                continue
            if name.startswith("answers_"):
                data = data.drop(columns=["resume_id", "raw_text"])
            rec[f"artifact:{name}"] = (sha256_frame(data) if isinstance(data, pd.DataFrame)
                                       else hashlib.sha256(data).hexdigest())
        out[kind] = rec
    return out


#: The embedding model's bytes recorded on other machines (``{environment: {"embedding": scores digest,
#: "results": {csv: digest}}}``). torch's CPU kernels differ by instruction set (AVX2 / AVX512) and so may the
#: libraries' versions that ``pyproject.toml`` leaves as ranges: the same code then gives other float bits.
#: ``adapter_digests.json`` and ``engine_results.json`` hold the first recording (environment not kept). A methods
#: change re-records ``engine_results.json`` (``UPDATE_GOLDEN=1``) and this file's ``results`` in the environment
#: that ran it: methods 13 did so on ``torch 2.13.0+cpu AVX512``, so another environment skips until recorded.
#: Methods 15 re-recorded ``engine_results.json`` on an AVX2 machine and dropped the AVX512 entry's ``results`` (stale
#: under methods 15, not re-computable there): an environment without a ``results`` entry skips. Methods 17 re-recorded
#: ``engine_results.json`` on an AVX512 machine (``torch 2.13.0+cpu AVX512``): an AVX2 machine now skips.
MODEL_GOLDEN = HERE / "golden" / "model_digests_by_env.json"


def model_env() -> str:
    """The environment the embedding model's bytes depend on: torch's version and CPU capability, and the
    versions of transformers and sentence-transformers."""
    from importlib.metadata import version

    import torch

    return (f"torch {torch.__version__} {torch.backends.cpu.get_cpu_capability()}; transformers {version('transformers')};"
            f" sentence-transformers {version('sentence-transformers')}")


def check_model_bytes(what: str, got: object, first: object) -> None:
    """Assert that ``got`` (the embedding scores' digest, ``what = "embedding"``, or the reduced example's result
    digests, ``what = "results"``) is a recorded one: ``first`` (the first recording) or one of
    :data:`MODEL_GOLDEN`. Fails when this environment has a recording and ``got`` differs from every recording;
    skips, naming the environment and how to record it, when this environment has none (another CPU or
    library version: the bytes may legitimately differ, and the plan-order and resume checks still run)."""
    import pytest

    recorded = json.loads(MODEL_GOLDEN.read_text()) if MODEL_GOLDEN.exists() else {}
    known = [first, *(r[what] for r in recorded.values() if what in r)]
    if got in known:
        return
    env = model_env()
    if what in recorded.get(env, {}):
        assert got == recorded[env][what]
    pytest.skip(f"no {what} digest recorded for this environment ({env}); got {got}: add it to "
                f"{MODEL_GOLDEN.relative_to(HERE.parent)} after checking that the code did not change them")


#: The result CSVs a run of :func:`reduced_example` is compared on (issue 40, "Must show").
RESULT_CSVS = ("metrics.csv", "paired.csv", "effects.csv", "metrics_by_job.csv", "risk.csv")
RESULTS_GOLDEN = HERE / "golden" / "engine_results.json"


def reduced_example(folder: Path) -> Path:
    """``specs/example.yaml`` reduced: its first 2 jobs, K = 12 (M = 6), k = 4/4/6, 200 bootstrap draws; the
    real embedding model, the 10 variants, the 3 negative controls, effects and validity as shipped."""
    repo = HERE.parent
    text = (repo / "specs" / "example.yaml").read_text()
    drop = ("registered-nurse", "accountant", "marketing-specialist")
    text = "\n".join(line for line in text.splitlines()
                     if not any(line.startswith(f"  - {{id: {j},") for j in drop)) + "\n"
    for old, new in (("base_per_job: 40, matching_per_job: 20", "base_per_job: 12, matching_per_job: 6"),
                     ("k: {counterfactual: 10, group: 10, merit: 20}", "k: {counterfactual: 4, group: 4, merit: 6}"),
                     ("bootstrap: 1000", "bootstrap: 200")):
        assert old in text, old
        text = text.replace(old, new)
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copytree(repo / "specs" / "jobs", folder / "jobs", dirs_exist_ok=True)
    (folder / "spec.yaml").write_text(text)
    return folder / "spec.yaml"


def run_reduced(folder: Path, code: Path, *extra: str) -> subprocess.CompletedProcess:
    """``audit compile`` then ``audit execute --unsigned --quiet --out out`` of :func:`reduced_example` in ``folder``,
    importing the checkout at ``code`` (``PYTHONPATH``); returns the execute's process."""
    import os

    spec = reduced_example(folder)
    env = {**os.environ, "PYTHONPATH": str(code), "PYTHONHASHSEED": "0", "COLUMNS": "200", "HF_HUB_OFFLINE": "1",
           "TRANSFORMERS_OFFLINE": "1"}
    env.pop("AUDIT_TEST_KILL_AT", None)
    cli = [sys.executable, "-c", "from runtime.cli import main; main()"]
    proc = subprocess.run([*cli, "compile", spec.name], cwd=folder, env=env, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return subprocess.run([*cli, "execute", "--unsigned", "--no-pdf", spec.name, "--quiet", "--out", "out", *extra], cwd=folder,
                          env=env, capture_output=True, text=True, timeout=900)


def result_digests(run: Path) -> dict[str, str]:
    """csv name -> sha256 of the file, for :data:`RESULT_CSVS`."""
    return {name: hashlib.sha256((run / name).read_bytes()).hexdigest() for name in RESULT_CSVS}


if __name__ == "__main__" and sys.argv[1:2] == ["--record-results"]:  # the code before issue 40 A: its folder
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        proc = run_reduced(Path(tmp), Path(sys.argv[2]))
        assert proc.returncode in (0, 5), proc.stderr
        (run,) = [p for p in (Path(tmp) / "out").glob("*/*") if p.is_dir()]
        got = {"exit_code": proc.returncode, **result_digests(run)}
    RESULTS_GOLDEN.write_text(json.dumps(got, indent=2, sort_keys=True) + "\n")
    print(json.dumps(got, indent=2, sort_keys=True))
elif __name__ == "__main__":  # --record: the digests of SystemAdapter.score() (the code before issue 40 A)
    import tempfile

    assert sys.argv[1] == "--record", "usage: python tests/engine_cases.py --record [KIND ...]"
    kinds = tuple(sys.argv[2:]) or KINDS
    with stubs() as urls, tempfile.TemporaryDirectory() as tmp:
        got = digests(lambda adapter, request: adapter.score(request), Path(tmp) / "cases", urls, kinds)
    old = json.loads(GOLDEN.read_text()) if GOLDEN.exists() else {}
    got = {**old, **got}
    GOLDEN.write_text(json.dumps(got, indent=2, sort_keys=True) + "\n")
    print(json.dumps(got, indent=2, sort_keys=True))
