"""``kind: http`` end to end against a real HTTP server (issue 35 §2, Must show): a stdlib vendor API
(``tests/http_stub.py``, a subprocess on 127.0.0.1) that marks one level down by 8 points, answers 429
(Retry-After 1) and 503 on a fixed schedule, stalls once past the client's timeout, shuffles its answers
and logs every request. The audit finds the planted level, matches a score-file audit of the same scores
byte for byte, resends nothing it was answered (re-run, kill and ``--resume``), sends no cv_id, variant or
job id, and writes the secret header's value nowhere."""

from __future__ import annotations

import json
import re
import socket
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from conftest import run_cli

STUB = Path(__file__).parent / "http_stub.py"
SECRET = "Bearer s3cr3t-4f9e1c7a"

SPEC = """\
audit: http-vendor
title: A vendor API that marks one level down
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
{system}
analysis:
  k: {{counterfactual: 4, group: 4, merit: 6}}
  bootstrap: 200
execution:
  store: store
  systems:
    vendor: {{concurrency: 1, timeout_s: 2, retries: 6}}
"""

KNOBS = "  systems:\n    vendor: {concurrency: 1, timeout_s: 2, retries: 6}\n"

HTTP_SYSTEM = """\
  - id: vendor
    kind: http
    url: {url}
    version: "kw-matcher 2.3"
    score_range: [0, 100]
    score_resolution: 1
    batch_size: 4
    request:
      body: {{items: $items}}
      item: {{id: $id, job: $job, resume: $resume}}
    response: {{items: scores, id: id, score: score, version: model}}
    version_headers: [X-Model-Version]
    headers: {{Accept: application/json}}
    headers_from_env: {{Authorization: VENDOR_AUTH}}"""

SCORE_FILE_SYSTEM = """\
  - {id: vendor, kind: precomputed, path: scores.csv, score_range: [0, 100], score_resolution: 1}"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def vendor(tmp_path_factory):
    """The stub vendor API: 429 on the 1st, 6th, 11th ... POST, 503 on the 3rd, 10th ..., the 4th stalls 3 s."""
    port, log = _free_port(), tmp_path_factory.mktemp("vendor") / "requests.jsonl"
    proc = subprocess.Popen([sys.executable, str(STUB), "--port", str(port), "--log", str(log),
                             "--penalise", "Fatima Rahmani", "--every-429", "5", "--every-503", "7",
                             "--stall-at", "4", "--stall-s", "3", "--auth", SECRET])
    try:
        for _ in range(100):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                time.sleep(0.1)
        yield {"url": f"http://127.0.0.1:{port}/v1/score", "log": log}
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def _log(vendor) -> list[dict]:
    path = vendor["log"]
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def _spec(folder: Path, system: str, *, knobs: bool = True) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    spec = folder / "spec.yaml"
    text = SPEC.format(system=system)
    spec.write_text(text if knobs else text.replace(KNOBS, ""))
    proc = run_cli("compile", "spec.yaml", cwd=folder)
    assert proc.returncode == 0, proc.stderr
    return spec


def _runs(folder: Path) -> list[Path]:
    return sorted(p for p in (folder / "reports").glob("*/*") if p.is_dir())


def test_a_vendor_api_is_audited_resumed_and_never_asked_twice(tmp_path, vendor, monkeypatch):
    work = tmp_path / "http"
    _spec(work, HTTP_SYSTEM.format(url=vendor["url"]))
    monkeypatch.setenv("VENDOR_AUTH", SECRET)
    outputs = []

    # killed after the third stored answer, then resumed: nothing answered 2xx before the kill is sent again
    monkeypatch.setenv("AUDIT_TEST_KILL_AT", "request:vendor:3")
    proc = run_cli("execute", "--unsigned", "--no-pdf", "spec.yaml", "--quiet", cwd=work)
    assert proc.returncode == -9, proc.stderr[-3000:]
    outputs.append(proc)
    monkeypatch.delenv("AUDIT_TEST_KILL_AT")
    before = _log(vendor)
    answered = {r["sha256"] for r in before if r["status"] == 200}
    assert len(answered) == 3 and {r["status"] for r in before} >= {200, 429, 503, 599}
    (run_dir,) = _runs(work)
    proc = run_cli("execute", "--unsigned", "spec.yaml", "--quiet", "--resume", str(run_dir), cwd=work)  # its PDF is read
    assert proc.returncode == 0, proc.stderr[-3000:]
    outputs.append(proc)
    after = _log(vendor)[len(before):]
    assert after and not answered & {r["sha256"] for r in after}
    run = json.loads((run_dir / "run.json").read_text())
    info = run["systems_info"]["vendor"]
    req = info["requests"]
    assert req["from_cache"] == 3 and req["made"] == len(after)
    assert req["retries"] > 0 and req["rate_limited"] > 0 and req["server_errors"] > 0
    assert req["waited_s"] >= 1.0  # at least one Retry-After: 1, recorded, not wall time
    assert req["invalid"] == 0 and info["answers"]["valid"] == 24
    # every answer of the run (stored or new) names the version, in the header and in the body
    assert info["observed_versions"] == {"header:X-Model-Version": {"kw-matcher 2.3": 6},
                                         "body:model": {"kw-matcher 2.3": 6}}

    # the planted -8 points: F is the disadvantaged level, and -0.08 lies inside the interval
    metrics = pd.read_csv(run_dir / "metrics.csv", keep_default_na=False)
    row = metrics[(metrics["metric"] == "score_delta") & (metrics["variant"] == "V01")].iloc[0]
    assert row["disadvantaged"] == "F"
    assert float(row["ci_low"]) <= -0.08 <= float(row["ci_high"])

    # no id sent names a résumé, a variant or a job: opaque ids, one per résumé, the sealed key maps them
    ids = [i for r in _log(vendor) for i in r["ids"]]
    key = pd.read_csv(run_dir / "request_key_vendor.csv")
    assert set(ids) == set(key["resume_id"]) and len(key) == 24
    forbidden = set(key["cv_id"]) | set(key["variant"]) | set(key["job_id"]) | {"cv0", "data-analyst"}
    assert all(re.fullmatch(r"R[0-9A-F]{10}", i) for i in ids)
    assert not [i for i in ids for f in forbidden if f.lower() in i.lower()]
    answers = pd.read_csv(run_dir / "answers_vendor.csv")
    assert len(answers) == 24 and answers["valid"].all() and answers["cached"].sum() == 12

    # a second run sends nothing: every answer comes from the store (0 requests counted at the server)
    n = len(_log(vendor))
    proc = run_cli("execute", "--unsigned", "--no-pdf", "spec.yaml", "--quiet", cwd=work)
    assert proc.returncode == 0, proc.stderr[-3000:]
    outputs.append(proc)
    assert len(_log(vendor)) == n
    second = _runs(work)[-1]
    req2 = json.loads((second / "run.json").read_text())["systems_info"]["vendor"]["requests"]
    assert req2["made"] == 0 and req2["from_cache"] == 6
    assert (second / "metrics.csv").read_bytes() == (run_dir / "metrics.csv").read_bytes()

    # the same scores as a score file (generator ids, same system id): the same metrics.csv, byte for byte
    scored = pd.read_csv(run_dir / "paired.csv")[["job_id", "cv_id", "variant", "score"]]
    files = tmp_path / "file"
    files.mkdir()
    scored.to_csv(files / "scores.csv", index=False)
    _spec(files, SCORE_FILE_SYSTEM, knobs=False)  # execution.systems tunes remote systems only
    proc = run_cli("execute", "--unsigned", "--no-pdf", "spec.yaml", "--quiet", cwd=files)
    assert proc.returncode == 0, proc.stderr[-3000:]
    (file_run,) = _runs(files)
    assert (file_run / "metrics.csv").read_bytes() == (run_dir / "metrics.csv").read_bytes()

    # the secret is in no file of the run folders, store, lock or plan, nor the PDF's text, stdout or stderr
    leaks = [p for p in work.rglob("*") if p.is_file() and SECRET.encode() in p.read_bytes()]
    assert leaks == []
    assert len(list((work / "store" / "tasks").glob("http-*.json"))) == 7  # 6 answers and the key were scanned
    pdf = subprocess.run(["pdftotext", str(run_dir / "report.pdf"), "-"], capture_output=True, text=True, check=True)
    assert SECRET not in pdf.stdout
    words = " ".join(pdf.stdout.split())
    assert "Declared version: kw-matcher 2.3; observed: kw-matcher 2.3 (body:model, 6 answers)" in words
    assert "A remote system cannot be fingerprinted beyond what it declares." in words
    assert not [p for p in outputs if SECRET in p.stdout or SECRET in p.stderr]
    # the answers are reported (the llm_validity family covers http: issue 35 §2), not appended to metrics.csv
    assert "Answers of the systems under test" in words
    table = words[words.find("Answers of the systems sent résumés"):]
    assert "System Kind Answers Valid Invalid Valid-response rate" in table and "vendor http 24 24 0 100.0% 0" in table
    assert "Model calls" not in table[:table.find("Amendments")]  # no LLM was called
    assert "llm_validity" not in set(metrics["family"])


def test_a_refused_request_exits_7_and_an_unset_variable_exits_2(tmp_path, vendor, monkeypatch):
    work = tmp_path / "refused"
    n = len(_log(vendor))
    _spec(work, HTTP_SYSTEM.format(url=vendor["url"]))
    assert len(_log(vendor)) == n  # validate and compile never contact the URL
    monkeypatch.delenv("VENDOR_AUTH", raising=False)
    proc = run_cli("execute", "--unsigned", "--no-pdf", "spec.yaml", "--quiet", cwd=work)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert ("system 'vendor' (http): environment variable VENDOR_AUTH (named by headers_from_env.Authorization) "
            "is not set") in proc.stderr
    assert len(_log(vendor)) == n  # before any request
    wrong = "Bearer wrong-7d1e0b"
    monkeypatch.setenv("VENDOR_AUTH", wrong)
    proc = run_cli("execute", "--unsigned", "--no-pdf", "spec.yaml", "--quiet", cwd=work)
    assert proc.returncode == 7 and "Traceback" not in proc.stderr, proc.stderr
    assert (f"system 'vendor' (http): POST {vendor['url']} answered 401: unauthorized: token *** is not valid"
            in proc.stderr)
    assert "see the docs" not in proc.stderr  # the first line only
    assert _log(vendor)[-1]["auth"] == wrong  # the server saw it; the run wrote it nowhere
    assert wrong not in proc.stderr + proc.stdout
    assert not [p for p in work.rglob("*") if p.is_file() and wrong.encode() in p.read_bytes()]


def _resolved(**change):
    r = {"url": "https://v.example/score", "version": "kw 2.3", "batch_size": 4,
         "request": {"body": {"items": "$items"}, "item": {"id": "$id", "resume": "$resume"}},
         "response": {"items": "scores", "id": "id", "score": "score", "version": None},
         "headers": {"Accept": "application/json"}, "headers_from_env": {"Authorization": "VENDOR_AUTH"}}
    r.update(change)
    return r


def test_the_fingerprint_covers_what_the_vendor_is_asked_and_no_execution_knob(tmp_path):
    from compiler.systems import http_fingerprint

    base = http_fingerprint(_resolved())["digest"]
    changed = [_resolved(url="https://v.example/score2"), _resolved(version="kw 2.4"), _resolved(batch_size=8),
               _resolved(request={"body": {"items": "$items"}, "item": {"id": "$id", "r": "$resume"}}),
               _resolved(response={"items": "scores", "id": "id", "score": "value", "version": None}),
               _resolved(headers={"Accept": "application/json", "X-Trace": "1"}),
               _resolved(headers_from_env={"X-Vendor-Token": "VENDOR_AUTH"})]
    digests = {http_fingerprint(r)["digest"] for r in changed}
    assert base not in digests and len(digests) == len(changed)
    # a header's literal value and the variable's name are not the vendor's system: same fingerprint
    assert http_fingerprint(_resolved(headers={"Accept": "*/*"}))["digest"] == base
    assert http_fingerprint(_resolved(headers_from_env={"Authorization": "OTHER_VAR"}))["digest"] == base
    # execution.systems.<id> is not hashed: the spec digest does not move
    got = []
    for knobs in ("{concurrency: 1, timeout_s: 2, retries: 6}", "{concurrency: 8, requests_per_s: 2.5}"):
        folder = tmp_path / str(len(got))
        folder.mkdir()
        (folder / "spec.yaml").write_text(SPEC.format(system=HTTP_SYSTEM.format(url="https://v.example/score"))
                                          .replace("{concurrency: 1, timeout_s: 2, retries: 6}", knobs))
        proc = run_cli("compile", "spec.yaml", cwd=folder)
        assert proc.returncode == 0, proc.stderr
        got.append(re.search(r"spec digest (sha256:[0-9a-f]{64})", proc.stdout).group(1))
    assert got[0] == got[1]
    lock = json.loads((folder / "spec.lock.json").read_text())
    assert "VENDOR_AUTH" in json.dumps(lock) and SECRET not in json.dumps(lock)


def test_each_bad_answer_is_invalid_with_its_reason():
    from runtime.systems.http import Item, read_answer, retry_after_seconds

    items = [Item("RA", "j", "c1", "BASE", "t"), Item("RB", "j", "c1", "V01", "t"), Item("RC", "j", "c2", "BASE", "t")]
    response = {"items": "scores", "id": "id", "score": "score", "version": "model"}

    def reasons(body: str) -> dict[str, str]:
        got, _ = read_answer(body, items, response, lo=0, hi=100)
        return {rid: (p.score if p.valid else p.reason) for rid, (p, _) in got.items()}

    assert reasons("<html>busy</html>") == {"RA": "body is not JSON", "RB": "body is not JSON", "RC": "body is not JSON"}
    assert reasons('{"scores": {"id": "RA"}}')["RA"] == "response.items 'scores' is not a list in the body"
    body = json.dumps({"model": "m1", "scores": [{"id": "RB", "score": "80/100"}, {"id": "RA", "score": 8},
                                                 {"id": "RA", "score": 9}, {"id": "RZ", "score": 50}]})
    assert reasons(body) == {"RA": "id answered more than once", "RB": 80.0, "RC": "no answer for this id"}
    body = json.dumps({"scores": [{"id": "RA", "score": "high"}, {"id": "RB", "score": "8/10"}, {"id": "RC"}]})
    assert reasons(body) == {"RA": "score is not a number: 'high'", "RB": "score 8/10 is on another scale than [0, 100]",
                             "RC": "score is not a number: None"}
    _, version = read_answer(json.dumps({"model": "m1", "scores": []}), items, response, lo=0, hi=100)
    assert version == "m1"
    assert retry_after_seconds("1") == 1.0 and retry_after_seconds(None) is None and retry_after_seconds("soon") is None
    assert retry_after_seconds("Thu, 03 Dec 2026 17:00:30 GMT", now=1796317200.0) == 30.0


def test_the_systems_table_names_declared_and_observed_versions_and_warns_on_two():
    from runtime.report.core import REMOTE_NOTE, remote_text

    assert remote_text({"rows": 24}) is None  # not a remote system: nothing added to its row
    info = {"version": "kw 2.3", "observed_versions": {"header:X-Model-Version": {"kw 2.3": 5, "kw 2.4": 1}},
            "version_warning": "warning: system 'vendor' (http): 2 versions observed in one run: ..."}
    got = remote_text(info)
    assert got == {"declared": "kw 2.3", "observed": "kw 2.3 (header:X-Model-Version, 5 answers); kw 2.4 "
                   "(header:X-Model-Version, 1 answers)", "note": REMOTE_NOTE, "warning": info["version_warning"]}
    assert remote_text({"version": "kw 2.3", "observed_versions": {}})["observed"] == "none named"


def _caller(retries: int = 2):
    from runtime.systems.http import RequestCounters, _Caller

    resolved = {"url": "http://vendor.test/score", "version": "v1", "headers": {}, "version_headers": [],
                "headers_from_env": {"Authorization": "VENDOR_AUTH"}}
    settings = {"concurrency": 1, "requests_per_s": None, "timeout_s": 5.0, "retries": retries}
    return _Caller("vendor", resolved, {"Authorization": "tok-8c1f"}, ["tok-8c1f"], settings, RequestCounters(), None)


def _answer(caller, handler):
    import asyncio

    import httpx

    async def go():
        async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as client:
            caller.client = client
            return await caller.answer({"items": []}, attempt=0, refs=[])

    return asyncio.run(go())


def test_spent_retries_a_long_retry_after_and_a_refusal_stop_with_exit_7_secrets_scrubbed(monkeypatch):
    import httpx

    from runtime.systems.http import HttpUnavailable, _Caller

    monkeypatch.setattr(_Caller, "_wait", lambda self, state: 0.0 if state.outcome.exception().retry_after is None
                        else state.outcome.exception().retry_after)
    caller = _caller(retries=2)
    with pytest.raises(HttpUnavailable) as err:
        _answer(caller, lambda req: httpx.Response(503, text=f"busy, {req.headers['Authorization']}"))
    assert err.value.exit_code == 7
    assert str(err.value).startswith("system 'vendor' (http): POST http://vendor.test/score failed after 3 attempt(s): "
                                     "answered 503. Every answer received so far is in the task store")
    assert (caller.counters.made, caller.counters.server_errors, caller.counters.retries) == (3, 3, 2)

    caller = _caller()
    with pytest.raises(HttpUnavailable) as err:
        _answer(caller, lambda req: httpx.Response(429, headers={"Retry-After": "600"}))
    assert str(err.value).startswith("system 'vendor' (http): POST http://vendor.test/score answered 429 with "
                                     "Retry-After '600' (600 s), more than 300 s")
    assert caller.counters.made == 1 and caller.counters.rate_limited == 1

    caller = _caller()
    with pytest.raises(HttpUnavailable) as err:
        _answer(caller, lambda req: httpx.Response(403, text=f"no access for {req.headers['Authorization']}\nmore"))
    assert str(err.value) == "system 'vendor' (http): POST http://vendor.test/score answered 403: no access for ***"

    answers = iter([httpx.Response(429, headers={"Retry-After": "0"}), httpx.Response(200, text='{"s": 1}',
                                                                                       headers={"X": "1"})])
    caller = _caller()
    text, meta, cached = _answer(caller, lambda req: next(answers))
    assert (text, meta, cached) == ('{"s": 1}', {"status": 200, "headers": {}}, False)
    assert (caller.counters.made, caller.counters.rate_limited, caller.counters.retries) == (2, 1, 1)
