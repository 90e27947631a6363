"""The Ray engine (issue 40 part B): the same result bytes as the local engine, a worker killed mid-run, and the
engine's bad input.

A small spec (:func:`small_spec`: the reduced example cut to 2 jobs x 30 base candidates x 3 variants, one negative
control, the real embedding model, effects and validity) runs once locally (``local_run``, shared by the module)
and on Ray twice, each in an empty store of its own: a private instance with 1 worker (resuming a run whose
workers died past the retries), and a cluster started by ``ray start --head`` (a subprocess on 127.0.0.1, ended by
terminating it) with 2 workers, whose encoding actor is SIGKILLed mid-run. Never ``ray stop``: it ends every Ray
process of the user on the machine.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import REPO, reduced_example_spec, run_cli
from engine_cases import result_digests

ray = pytest.importorskip("ray", reason="the ray extra (audit-compiler[ray]) is not installed")

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("ray")]

#: Ray's token authentication off for the test clusters (127.0.0.1 only): Ray 2.60 keeps its token in the user's
#: ~/.ray, which other Ray users of the machine may rewrite.
RAY_ENV = {"RAY_AUTH_MODE": "disabled", "RAY_USAGE_STATS_ENABLED": "0"}


def small_spec() -> str:
    """:func:`conftest.reduced_example_spec` cut to BASE, V01, V02, 30 base candidates (15 matching) per job,
    the negative control P01 only and no positive control (validity reads the match contrast)."""
    text = reduced_example_spec()
    text = "".join(line for line in text.splitlines(keepends=True)
                   if not re.match(r"    V0[3-9]:", line) and not line.startswith(("    - {id: P02", "    - {id: P03")))
    cuts = [("base_per_job: 20, matching_per_job: 10", "base_per_job: 30, matching_per_job: 15"),
            ("merit: 10}", "merit: 15}"),
            ("  positive_controls:      # issue 39 §6: a weakened copy of BASE the audit must detect (its sensitivity, "
             "tested)\n    - {id: C01, perturbation: drop_required_skill}  # the first required tool listed (e.g. SQL) "
             "taken out\n", "")]
    for old, new in cuts:
        assert text.count(old) == 1, f"the reduced example changed: {old.strip()!r} not found once"
        text = text.replace(old, new)
    return text


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def small(tmp_path_factory) -> Path:
    """The small spec's folder, compiled (locked) once."""
    root = tmp_path_factory.mktemp("ray-small")
    shutil.copytree(REPO / "specs" / "jobs", root / "jobs")
    (root / "spec.yaml").write_text(small_spec(), encoding="utf-8")
    proc = run_cli("compile", "spec.yaml", cwd=root)
    assert proc.returncode == 0, proc.stderr
    return root


def execute(root: Path, name: str, *args: str, env: dict[str, str] | None = None, popen: bool = False):
    """``audit execute`` of the small spec into ``out-<name>`` with the empty store ``store-<name>``."""
    argv = [sys.executable, "-c", "from runtime.cli import main; main()", "execute", "spec.yaml", "--quiet",
            "--unsigned", "--no-pdf", "--store", f"store-{name}", "--out", f"out-{name}", *args]
    env = dict(env or os.environ, PYTHONHASHSEED="0", COLUMNS="200", **RAY_ENV)
    if popen:
        return subprocess.Popen(argv, cwd=root, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    return subprocess.run(argv, cwd=root, env=env, capture_output=True, text=True, timeout=900)


def run_dir(root: Path, name: str) -> Path:
    (run,) = [p for p in (root / f"out-{name}").glob("*/*") if p.is_dir()]
    return run


def engine_of(run: Path) -> dict:
    return json.loads((run / "run.json").read_text())["engine"]


@pytest.fixture(scope="module")
def local_run(small) -> Path:
    """The local engine's run of the small spec (the bytes every Ray run must give)."""
    proc = execute(small, "local")
    assert proc.returncode == 0, proc.stderr[-3000:]
    return run_dir(small, "local")


@pytest.fixture(scope="module")
def ray_head():
    """``ray start --head --block`` on 127.0.0.1 and a free port (2 CPUs), a subprocess in a session of its own,
    with this process attached to it as a driver (``ray.init(address=...)``: the tests read its named actors and
    run probes there); its address. Ended by detaching and terminating the subprocess (never ``ray stop``)."""
    port = _free_port()
    temp = Path("/tmp") / f"acrh-{os.getpid()}"  # Ray's socket paths must stay under 107 characters
    ray_bin = Path(sys.executable).parent / "ray"
    proc = subprocess.Popen([str(ray_bin), "start", "--head", "--block", "--node-ip-address", "127.0.0.1",
                             "--port", str(port), "--num-cpus", "2", "--include-dashboard", "false",
                             "--temp-dir", str(temp), "--disable-usage-stats"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
                            env=dict(os.environ, **RAY_ENV))
    try:
        deadline = time.monotonic() + 120
        while True:
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    break
            assert proc.poll() is None, "ray start --head exited"
            assert time.monotonic() < deadline, "ray start --head did not listen within 120 s"
            time.sleep(0.5)
        address = f"127.0.0.1:{port}"
        os.environ.update(RAY_ENV)  # read by ray.init here
        ray.init(address=address, log_to_driver=False)
        yield address
    finally:
        if ray.is_initialized():
            ray.shutdown()
        os.killpg(proc.pid, signal.SIGTERM)  # its own session: the head and the processes it started
        try:
            proc.wait(timeout=3)  # a --block head can ignore SIGTERM for over 10 s: killed after 3
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=30)
        shutil.rmtree(temp, ignore_errors=True)


def test_a_ray_start_cluster_with_2_workers_replaces_a_killed_actor_and_gives_the_local_bytes(small, local_run,
                                                                                              ray_head):
    """One run on a cluster started by ``ray start --head``, 2 workers; the encoding actor ``audit:minilm:0`` is
    SIGKILLed once a first batch is in the store (mid-run: its own batches in flight). Ray restarts it, the driver
    sends its batches again, and the result bytes are the local engine's."""
    proc = execute(small, "ray2", "--engine", "ray", "--ray-address", ray_head, "--workers", "2", popen=True)
    try:
        deadline = time.monotonic() + 300
        actor = None
        while actor is None:
            found = [a for a in ray.util.list_named_actors(all_namespaces=True) if a["name"] == "audit:minilm:0"]
            if found:
                actor = ray.get_actor(found[0]["name"], namespace=found[0]["namespace"])
            assert proc.poll() is None, proc.communicate()[1][-3000:]
            assert time.monotonic() < deadline, "no encoding actor within 300 s"
            time.sleep(0.1)
        pid = ray.get(actor.pid.remote(), timeout=120)
        tasks = small / "store-ray2" / "tasks"
        while not any(json.loads(p.read_text())["kind"] == "score_batch" for p in tasks.glob("*.json")):
            assert proc.poll() is None, proc.communicate()[1][-3000:]  # mid-run: one batch stored, not all
            assert time.monotonic() < deadline, "no finished batch within 300 s"
            time.sleep(0.05)
        os.kill(pid, signal.SIGKILL)
        out, err = proc.communicate(timeout=600)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err[-3000:]
    run = run_dir(small, "ray2")
    assert result_digests(run) == result_digests(local_run)
    engine = engine_of(run)
    assert engine["address"] == ray_head and engine["workers"] == 2
    assert engine["retried_tasks"], engine  # the batches in flight on the killed actor ran again
    # the batches ran in at least two processes besides the killed one (its own pid may be missing: the answer
    # of a batch it finished and stored can die with it before reaching the driver)
    assert len(set(engine["worker_pids"]) - {pid}) >= 2, engine
    # run.json records the threads the workers' torch ran with (1-CPU actors), not the driver's
    systems = json.loads((run / "run.json").read_text())["systems_info"]
    assert systems["minilm"]["torch_threads"] == 1, systems["minilm"]
    # finished batches are in the store (kept by the workers): a warm re-run encodes nothing
    batches = [json.loads(p.read_text()) for p in tasks.glob("*.json")]
    assert sum(b["kind"] == "score_batch" for b in batches) == 6
    with socket.socket() as s:  # attached, not owned: the cluster is still running after the run
        assert s.connect_ex(("127.0.0.1", int(ray_head.rsplit(":", 1)[1]))) == 0


def test_a_worker_that_dies_past_the_retries_fails_the_run_at_score_and_resume_completes_it(small, local_run):
    env = dict(os.environ, AUDIT_TEST_KILL_AT="batch:minilm")  # every worker dies at its first batch
    proc = execute(small, "dies", "--engine", "ray", "--workers", "1", env=env)
    assert proc.returncode == 7, proc.stderr[-3000:]
    (first,) = [line for line in proc.stderr.splitlines() if line.startswith("error:")]
    assert re.fullmatch(r"error: score batch score-[0-9a-f]+ of system 'minilm': its worker died 4 time\(s\), past the 3 "
                        r"retries \(last on node \S+: .+\); the finished batches are in the task store: complete the "
                        r"run with --resume", first), proc.stderr[-3000:]
    run = run_dir(small, "dies")
    record = json.loads((run / "run.json").read_text())
    assert (record["status"], record["stage"]) == ("failed", "score")
    assert record["engine"]["retried_tasks"] and record["error"].startswith("EngineTaskFailed: score batch ")
    # a private Ray with 1 worker completes what the dying workers began (the kill hook off): the local bytes
    resumed = execute(small, "dies", "--engine", "ray", "--workers", "1", "--resume", str(run))
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert result_digests(run) == result_digests(local_run)
    engine = engine_of(run)
    assert engine["name"] == "ray" and engine["address"] is None and engine["workers"] == 1
    assert os.getpid() not in engine["worker_pids"] and engine["worker_pids"]
    local = engine_of(local_run)
    assert local["name"] == "local" and local["address"] is None and len(local["worker_pids"]) == 1


def test_a_worker_that_cannot_see_the_store_is_named(ray_head, tmp_path):
    """The store check a worker runs before its first batch: a folder missing on its node, or one that is not the
    driver's (no marker), is refused naming execution.store."""
    from runtime.pipeline.engine import MSG_STORE_UNSEEN, EngineError, RayEngine, probe_store

    probe = ray.remote(num_cpus=0)(probe_store)
    assert ray.get(probe.remote(str(tmp_path / "absent"), ".m"))[:2] == (False, "no such folder on this node")
    (tmp_path / "other").mkdir()
    assert ray.get(probe.remote(str(tmp_path / "other"), ".m"))[:2] == (False, "the folder there is not the driver's")
    (tmp_path / "other" / ".m").write_text("")
    assert ray.get(probe.remote(str(tmp_path / "other"), ".m"))[:2] == (True, "")
    engine = RayEngine(store_root=tmp_path / "store")  # Ray already runs here: used as it is
    _, marker_path = engine._marker()
    with pytest.raises(EngineError) as err:
        engine._check_store([probe.remote(str(tmp_path / "absent"), ".m")], marker_path)
    assert str(err.value).startswith(f"execution.store {tmp_path / 'store'}: a Ray worker (node ")
    assert "no such folder on this node" in str(err.value) and not Path(marker_path).exists()
    assert MSG_STORE_UNSEEN.startswith("execution.store {store}")


# --- bad input (issue 40 "Bad input"): exit 2 before any work, golden messages ------------------------------------
def test_engine_ray_without_ray_installed_exits_2_before_any_work(small):
    code = "import sys; sys.modules['ray'] = None; from runtime.cli import main; main()"
    proc = subprocess.run([sys.executable, "-c", code, "execute", "spec.yaml", "--quiet", "--unsigned", "--no-pdf", "--engine",
                           "ray", "--out", "out-noray"], cwd=small, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.splitlines()[0] == ("error: --engine ray needs Ray, which is not installed: install "
                                           "audit-compiler[ray] (pip install 'audit-compiler[ray]'); "
                                           "execution.engine: local needs nothing")
    assert not (small / "out-noray").exists()


def test_an_unreachable_ray_address_exits_2_naming_it_before_the_run_folder(small):
    address = f"127.0.0.1:{_free_port()}"
    proc = run_cli("execute", "spec.yaml", "--quiet", "--unsigned", "--no-pdf", "--engine", "ray", "--ray-address", address,
                   "--out", "out-unreachable", cwd=small)
    assert proc.returncode == 2, proc.stderr
    assert re.fullmatch(rf"error: Ray cluster {re.escape(address)}: not reachable \(.+\); start its head there "
                        r"\(`ray start --head --port PORT`\) or give the address of a running one; without "
                        r"--ray-address the run starts a private Ray on this machine", proc.stderr.splitlines()[0])
    assert not (small / "out-unreachable").exists()


def test_a_ray_address_with_the_local_engine_exits_2(small):
    proc = run_cli("execute", "spec.yaml", "--quiet", "--unsigned", "--no-pdf", "--ray-address", "127.0.0.1:6379",
                   "--out", "out-addr", cwd=small)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.splitlines()[0] == ("error: --ray-address 127.0.0.1:6379: a Ray address needs --engine ray "
                                           "(the engine is local); pass --engine ray, or leave the address out")
    assert not (small / "out-addr").exists()


def test_an_unknown_engine_in_the_spec_exits_2_at_execution_engine(small, tmp_path):
    spec = tmp_path / "spec.yaml"
    shutil.copytree(REPO / "specs" / "jobs", tmp_path / "jobs")
    spec.write_text(small_spec() + "execution:\n  engine: spark\n", encoding="utf-8")
    proc = run_cli("validate", "spec.yaml", cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    line = len(small_spec().splitlines()) + 2
    assert proc.stderr.splitlines() == [f"error: spec.yaml:{line}:11: execution.engine: Input should be 'local' or "
                                        "'ray' (got 'spark')"]


def test_the_engine_keys_are_not_hashed(small, tmp_path):
    """execution.engine, ray_address and workers change no digest: the lock of the spec without them holds."""
    from compiler import compile_spec
    from compiler.hashing import digest
    from compiler.plan import plan_digest

    shutil.copytree(REPO / "specs" / "jobs", tmp_path / "jobs")
    plain, ray_spec = tmp_path / "plain.yaml", tmp_path / "ray.yaml"
    plain.write_text(small_spec(), encoding="utf-8")
    ray_spec.write_text(small_spec() + "execution:\n  engine: ray\n  ray_address: 10.0.0.1:6379\n  workers: 8\n",
                        encoding="utf-8")
    a, b = compile_spec(plain), compile_spec(ray_spec)
    assert digest(a.resolved) == digest(b.resolved) and plan_digest(a.plan) == plan_digest(b.plan)
