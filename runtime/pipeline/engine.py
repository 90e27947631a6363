"""Engines: where a run's batches and jobs are computed (issue 40 §2).

An engine maps a function over a run's units of work and yields each result **as it finishes**; the driver
(:func:`score_system`, the score stage) looks each batch up in the task store first, dispatches only the
missing ones, keeps each result in the store as it arrives, and assembles the results in **plan order**,
never in completion order. Every draw derives from the spec's seed and the batch's labels
(:mod:`runtime.seeding`), never from the process or the order, so an engine changes where the work runs,
not its bytes.

- :class:`Engine`: the interface.
- :class:`LocalEngine`: this process, one unit after the other (today's bytes and today's order).
- :class:`RayEngine` (issue 40 part B, the ``ray`` extra): a Ray cluster, a private one on this machine or one
  attached to. :meth:`Engine.map_batches` ships the system's id, kind and resolved block, the request (without
  its driver-only parts) once into the object store and each :class:`~runtime.systems.base.BatchInput` to a
  worker, by the adapter's ``placement``: actors (1 CPU each, ``setup()`` once: the embedding system), tasks
  (CPU systems) or the driver (systems that send requests: their limits stay in one process). A worker that
  dies is replaced and its batches run again (``retried_tasks``); the families stay on the driver.

Ray is imported only inside :class:`RayEngine` (``audit`` starts without it; ``local`` never needs it).
"""

from __future__ import annotations

import os
from abc import ABC, abstractmethod
from collections import deque
from dataclasses import dataclass, replace
from typing import Any, Callable, Iterable, Iterator

import pandas as pd

from compiler.errors import AuditError

#: The engines ``execution.engine`` and ``audit execute --engine`` name.
ENGINES = ("local", "ray")
#: Times a batch whose worker died is run again before the run fails (Ray restarts the worker).
RETRIES = 3
#: Seconds a slot whose actor died waits for Ray to restart it (pinging it, from :data:`RESTART_BACKOFF_S` apart,
#: doubling up to 5 s) before the run fails: a batch sent while the actor restarts fails at once
#: (``ActorUnavailableError``) without having met a death of its own.
RESTART_WAIT_S = 300.0
RESTART_BACKOFF_S = 0.25

MSG_NO_RAY = ("--engine ray needs Ray, which is not installed: install audit-compiler[ray] "
              "(pip install 'audit-compiler[ray]'); execution.engine: local needs nothing")
MSG_ADDRESS_WITHOUT_RAY = ("--ray-address {address}: a Ray address needs --engine ray (the engine is local); "
                           "pass --engine ray, or leave the address out")
MSG_WORKERS_WITHOUT_RAY = "--workers {workers}: workers need --engine ray (the local engine is this one process)"
MSG_UNREACHABLE = ("Ray cluster {address}: not reachable ({why}); start its head there (`ray start --head --port "
                   "PORT`) or give the address of a running one; without --ray-address the run starts a private "
                   "Ray on this machine")
MSG_BAD_ADDRESS = "Ray cluster {address!r}: not an address (host:port, or ray://host:port)"
MSG_STORE_UNSEEN = ("execution.store {store}: a Ray worker (node {node}) cannot see the task store ({why}); put the "
                    "store (execution.store, or --store) on storage every node of the cluster mounts at the same path")
MSG_TASK_FAILED = ("score batch {task} of system {system!r}: its worker died {n} time(s), past the {retries} "
                   "retries (last on node {node}: {why}); the finished batches are in the task store: complete the "
                   "run with --resume")
MSG_RESTART_TIMEOUT = ("score batch {task} of system {system!r}: its worker was restarting and did not come back "
                       "within {wait:.0f} s (node {node}: {why}); the finished batches are in the task store: "
                       "complete the run with --resume")


class EngineError(AuditError):
    """The engine cannot run (exit 2, before any work): Ray missing, an address with the local engine, an
    unreachable cluster, a task store the workers cannot see."""

    exit_code = 2


class EngineTaskFailed(AuditError):
    """A batch's worker died more often than :data:`RETRIES` (exit 7, as a system that cannot be reached): the
    run is ``failed`` at stage ``score``; its finished batches stay in the task store for ``--resume``."""

    exit_code = 7


class Engine(ABC):
    """Runs units of work and yields ``(position, result)`` as each finishes (any order).

    Attributes
    ----------
    name : str
        The engine's name (``execution.engine``: ``local``; ``ray`` in part B).
    dispatched : int
        Units handed to :meth:`map_batches` and :meth:`map_jobs` by this engine so far (a resumed run
        dispatches only the batches missing from the task store).
    """

    name: str = ""

    def __init__(self) -> None:
        self.dispatched = 0

    @abstractmethod
    def map_batches(self, system: Any, batches: Iterable[Any]) -> Iterator[tuple[int, pd.DataFrame]]:
        """Score each batch with ``system.score_batch`` and yield ``(batch.position, frame)`` as each finishes.

        Parameters
        ----------
        system : runtime.systems.base.SystemAdapter
            An adapter on which :meth:`~runtime.systems.base.SystemAdapter.setup` ran in the driver; an engine
            with other processes runs ``setup`` once in each of them before its first batch.
        batches : iterable of runtime.systems.base.BatchInput
            The batches to compute (pure inputs), in plan order.

        Raises
        ------
        Exception
            The first failure of a batch (after the engine's own retries); the batches already yielded stay
            valid (the driver has kept them in the task store).
        """

    @abstractmethod
    def map_jobs(self, fn: Callable[[Any], Any], jobs: Iterable[Any]) -> Iterator[tuple[int, Any]]:
        """Apply ``fn`` (a design's per-job work, a module-level function) to each job; yield
        ``(index, result)`` as each finishes, ``index`` being the job's position in ``jobs``."""

    def worker_threads(self, system_id: str) -> list[int] | None:
        """The torch intra-op thread counts the processes that scored ``system_id``'s batches ran with (sorted,
        distinct), or None when those batches ran in this process (the adapter's own count is the truth)."""
        return None

    def close(self) -> None:
        """Release the engine's workers (the local engine holds none)."""

    def record(self) -> dict[str, Any]:
        """What ``run.json`` says of the engine (``engine``): its name, the cluster's address (None: this process
        or a private instance), the workers, the distinct processes that ran units (``worker_pids``), the units
        dispatched (``tasks``) and the batches run again after their worker died (``retried_tasks``)."""
        return {"name": self.name, "address": None, "workers": 1, "worker_pids": [os.getpid()],
                "tasks": self.dispatched, "retried_tasks": []}


class LocalEngine(Engine):
    """Everything in this process, one unit after the other, in the order given (no worker, no extra)."""

    name = "local"

    def map_batches(self, system: Any, batches: Iterable[Any]) -> Iterator[tuple[int, pd.DataFrame]]:
        for batch in batches:
            self.dispatched += 1
            yield batch.position, system.score_batch(batch)

    def map_jobs(self, fn: Callable[[Any], Any], jobs: Iterable[Any]) -> Iterator[tuple[int, Any]]:
        for n, job in enumerate(jobs):
            self.dispatched += 1
            yield n, fn(job)


def engine_for(name: str = "local", **options: Any) -> Engine:
    """The engine called ``name``: ``local``, or ``ray`` (``options``: those of :class:`RayEngine`).

    Raises
    ------
    ValueError
        An unknown engine name (the spec model refuses it first, located).
    EngineError
        ``ray`` without Ray installed, or a cluster that cannot be reached (exit 2).
    """
    if name == "local":
        return LocalEngine()
    if name == "ray":
        return RayEngine(**options)
    raise ValueError(f"unknown engine {name!r}; allowed: 'local', 'ray'")


@dataclass(frozen=True)
class EngineSettings:
    """The engine of one run: ``execution.engine``, ``execution.ray_address`` and ``execution.workers``, each
    replaced by its ``audit execute`` option when given (issue 40 §1). Not hashed.

    Attributes
    ----------
    name : str
        ``local`` or ``ray``.
    address : str or None
        The Ray cluster to attach to; None: a private instance on this machine (``RAY_ADDRESS`` is never read).
    workers : int or None
        Worker processes (``ray``); None: the cluster's CPUs.
    """

    name: str = "local"
    address: str | None = None
    workers: int | None = None

    def start(self, *, store_root: Any = None) -> Engine:
        """The engine these settings name, started (a private Ray instance, or attached to the cluster)."""
        if self.name == "local":
            return LocalEngine()
        return RayEngine(address=self.address, workers=self.workers, store_root=store_root)


def engine_settings(execution: Any, *, engine: str | None = None, ray_address: str | None = None,
                    workers: int | None = None) -> EngineSettings:
    """The run's :class:`EngineSettings` from the spec's ``execution`` block and the operator's options, checked
    before any work: Ray installed for ``ray``, no address or workers with ``local``, the address reachable.

    Parameters
    ----------
    execution : compiler.spec.Execution
        The spec's ``execution:`` block.
    engine, ray_address, workers : optional
        ``audit execute --engine``, ``--ray-address``, ``--workers`` (None: the spec's).

    Raises
    ------
    EngineError
        ``--ray-address`` or ``--workers`` with the local engine; ``ray`` without Ray installed
        (``install audit-compiler[ray]``); an address that is not host:port or that nothing answers on (exit 2).
    ValueError
        An unknown engine name (the CLI and the spec model refuse it first).
    """
    name = engine or execution.engine
    if name not in ENGINES:
        raise ValueError(f"unknown engine {name!r}; allowed: {', '.join(repr(e) for e in ENGINES)}")
    address = ray_address if ray_address is not None else (execution.ray_address if name == "ray" else None)
    count = workers if workers is not None else (execution.workers if name == "ray" else None)
    if name == "local":
        if ray_address is not None:
            raise EngineError(MSG_ADDRESS_WITHOUT_RAY.format(address=ray_address))
        if workers is not None:
            raise EngineError(MSG_WORKERS_WITHOUT_RAY.format(workers=workers))
        return EngineSettings()
    from importlib.util import find_spec

    if find_spec("ray") is None:
        raise EngineError(MSG_NO_RAY)
    if address is not None:
        check_reachable(address)
    return EngineSettings("ray", address, count)


def check_reachable(address: str, timeout_s: float = 5.0) -> None:
    """Raise :class:`EngineError` unless something accepts a TCP connection at ``address`` (``host:port`` or
    ``ray://host:port``) within ``timeout_s``: an unreachable cluster is named before the run folder exists."""
    import socket

    hostport = address.split("://", 1)[1] if "://" in address else address
    host, _, port = hostport.rpartition(":")
    if not host or not port.isdigit():
        raise EngineError(MSG_BAD_ADDRESS.format(address=address))
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=timeout_s):
            pass
    except OSError as err:
        raise EngineError(MSG_UNREACHABLE.format(address=address, why=err.strerror or type(err).__name__)) from None


def batch_task(system_id: str, batch: Any) -> tuple[str, dict[str, Any]]:
    """(store id, key) of one plan batch's finished frame: the ``score_batch`` task of the system and the plan
    task (:func:`runtime.store.task_key`; the ids of the embedding system's batches since methods v2)."""
    from runtime.store import task_key

    return task_key("score_batch", system=system_id, plan_tasks=[batch.task_id])


def score_system(adapter: Any, request: Any, *, engine: Engine | None = None) -> pd.DataFrame:
    """One system's scores through an engine (the driver of the per-batch contract, issue 40 §2).

    :meth:`~runtime.systems.base.SystemAdapter.setup`, then each of
    :meth:`~runtime.systems.base.SystemAdapter.batch_inputs` taken from the task store when the adapter keeps
    batches there (``batch_output``) and the store holds it, the others dispatched to ``engine`` and each kept
    in the store as it finishes (kill point ``encode:<system id>``); a progress bar counts finished batches;
    :meth:`~runtime.systems.base.SystemAdapter.finish` over every batch in plan order gives the scores, and its
    diagnostics become ``request.info[<system id>]``.

    Parameters
    ----------
    adapter : runtime.systems.base.SystemAdapter
        The system's adapter (a second call on the same instance reuses its heavy state).
    request : runtime.systems.base.ScoreRequest
        What it scores.
    engine : Engine, optional
        Where the batches run; default a new :class:`LocalEngine`.

    Returns
    -------
    pandas.DataFrame
        The adapter's scores (:class:`~runtime.systems.base.SystemAdapter`).

    Raises
    ------
    Exception
        A batch's failure, after :meth:`~runtime.systems.base.SystemAdapter.abort` kept what the finished
        batches give (their frames are in the store already).
    """
    from runtime.store import frame_bytes, frame_from
    from runtime.systems.base import BatchResult
    from runtime.testhooks import kill_point

    engine = engine or LocalEngine()
    adapter.setup(request)
    batches = adapter.batch_inputs()
    results: list[BatchResult | None] = [None] * len(batches)
    advance = request.progress(f"{adapter.progress_label} ({adapter.id})", len(batches)) if request.progress else None
    keep = adapter.batch_output is not None and request.store is not None
    missing = []
    for b in batches:
        stored = request.store.get(batch_task(adapter.id, b)[0]) if keep and b.task_id is not None else None
        if stored is None:
            missing.append(b)
            continue
        results[b.position] = BatchResult(b, frame_from(stored[adapter.batch_output]), stored=True)
        if advance:
            advance(1)
    try:
        for position, frame in engine.map_batches(adapter, missing):
            b = batches[position]
            if keep and b.task_id is not None:
                tid, key = batch_task(adapter.id, b)
                request.store.put(tid, "score_batch", {adapter.batch_output: frame_bytes(frame)}, key=key)
            results[position] = BatchResult(b, frame)
            kill_point(f"encode:{adapter.id}")
            if advance:
                advance(1)
    except BaseException:
        adapter.abort([r for r in results if r is not None])
        raise
    scores, info = adapter.finish(results)  # type: ignore[arg-type]  (every position is filled here)
    threads = engine.worker_threads(adapter.id)
    if threads and "torch_threads" in info:  # the workers' counts, not the driver's (run.json, issue 40 §4)
        info["torch_threads"] = threads[0] if len(threads) == 1 else threads
    request.info[adapter.id] = info
    return scores


# --- the Ray engine (issue 40 part B) ---------------------------------------------------------------------------
#: The private instance's object store (bytes): batches and frames stream through it, the résumés never do.
PRIVATE_OBJECT_STORE_BYTES = 512 * 1024 * 1024

#: Per worker process: the set-up adapter of each (system, request) a task scored for (``placement = "task"``).
_ADAPTERS: dict[str, Any] = {}


def worker_request(request: Any) -> Any:
    """What a worker's :meth:`~runtime.systems.base.SystemAdapter.setup` receives: the request without the
    driver's parts (progress bars, diagnostics, run-folder files, the store handle, LLM settings) and without
    its résumés (an empty frame with their columns: each :class:`~runtime.systems.base.BatchInput` brings its
    own rows, so the résumés never cross the cluster whole)."""
    resumes = None if request.resumes is None else request.resumes.iloc[:0]
    return replace(request, resumes=resumes, progress=None, info={}, artifacts={}, store=None, llm=None,
                   control_resumes=None)


def _node() -> str:
    import ray

    return ray.get_runtime_context().get_node_id()


def probe_store(store_root: str, marker: str) -> tuple[bool, str, str]:
    """On a worker: ``(seen, why, node)``: whether the task store at ``store_root`` is a writable folder holding
    the driver's ``marker`` file (the same storage as the driver's, not a folder of the same name)."""
    root = os.path.join(store_root, marker)
    node = _node()
    if not os.path.isdir(store_root):
        return False, "no such folder on this node", node
    if not os.path.exists(root):
        return False, "the folder there is not the driver's", node
    if not os.access(store_root, os.W_OK):
        return False, "not writable there", node
    return True, "", node


def run_batch(adapter: Any, batch: Any, store_root: str | None) -> tuple[int, pd.DataFrame, int, str, int | None]:
    """On a worker: score one batch and keep its frame in the task store (when the adapter keeps batches there):
    ``(position, frame, pid, node id, torch threads)`` (the threads: the adapter's ``torch_threads``, None for
    a system without torch). Kill point ``batch:<system id>`` (:mod:`runtime.testhooks`): before the
    batch, in the worker."""
    from runtime.testhooks import kill_point

    kill_point(f"batch:{adapter.id}")
    frame = adapter.score_batch(batch)
    if store_root is not None and adapter.batch_output is not None and batch.task_id is not None:
        from pathlib import Path

        from runtime.store import TaskStore, frame_bytes

        tid, key = batch_task(adapter.id, batch)
        TaskStore(Path(store_root)).put(tid, "score_batch", {adapter.batch_output: frame_bytes(frame)}, key=key)
    return batch.position, frame, os.getpid(), _node(), getattr(adapter, "torch_threads", None)


def score_task(kind: str, resolved: dict[str, Any], request: Any, token: str, batch: Any,
               store_root: str | None) -> tuple[int, pd.DataFrame, int, str, int | None]:
    """A Ray task (``placement = "task"``): one batch, with the adapter set up once per worker process."""
    adapter = _ADAPTERS.get(token)
    if adapter is None:
        from runtime.systems import adapter_for

        adapter = adapter_for(kind)(resolved)
        adapter.setup(request)
        _ADAPTERS.clear()  # one system's adapter at a time: a finished system's state is freed
        _ADAPTERS[token] = adapter
    return run_batch(adapter, batch, store_root)


class BatchActor:
    """A Ray actor (``placement = "actor"``, 1 CPU): the adapter set up once (a restarted actor sets it up
    again), then batch after batch; a later request of the same system (its placebo résumés) sets the same
    adapter up again, which keeps its heavy state (the model)."""

    def __init__(self, kind: str, resolved: dict[str, Any], store_root: str | None):
        from runtime.systems import adapter_for

        self.adapter = adapter_for(kind)(resolved)
        self.token: str | None = None  # set up at the first batch (a restarted actor: at its first batch again)
        self.store_root = store_root

    def pid(self) -> int:
        """This actor's process id (the kill test reads it)."""
        return os.getpid()

    def probe(self, marker: str) -> tuple[bool, str, str]:
        return probe_store(self.store_root, marker) if self.store_root else (True, "", _node())

    def score(self, batch: Any, request: list[Any], token: str) -> tuple[int, pd.DataFrame, int, str, int | None]:
        """One batch of the request ``token`` (``request``: its ObjectRef in a list, fetched only when this actor
        is not yet set up for it: its first batch, or a later request of the same system). The request never
        is a constructor argument, so a restarted actor never needs an object that has gone out of scope."""
        if token != self.token:
            import ray

            self.adapter.setup(ray.get(request[0]))
            self.token = token
        return run_batch(self.adapter, batch, self.store_root)


class RayEngine(Engine):
    """Batches on a Ray cluster (issue 40 part B): a private instance on this machine, or a cluster attached to.

    Without ``address``: ``ray.init(address="local", num_cpus=workers, include_dashboard=False)`` on 127.0.0.1
    only, its temp folder under the system temp dir, shut down by :meth:`close`. With one: attached, left running.
    ``RAY_ADDRESS`` is never read. Each system's batches run by its adapter's ``placement``: ``actor`` (one
    actor per worker, named ``audit:<system id>:<n>``, 1 CPU, ``setup()`` once; Ray restarts a dead one),
    ``task`` (one task per batch, 1 CPU) or ``driver`` (this process, as :class:`LocalEngine`). A batch whose
    worker died runs again, up to :data:`RETRIES` times (``retried_tasks``); results are yielded as they finish.

    Parameters
    ----------
    address : str, optional
        The cluster (``host:port`` of its head, or ``ray://host:port``).
    workers : int, optional
        Worker processes at once; default the cluster's CPUs (a private instance: this machine's cores).
    store_root : path-like, optional
        The task store: workers keep each finished batch there, and check first that they see it.
    retries : int
        Runs of a batch after its worker died (default :data:`RETRIES`).

    Raises
    ------
    EngineError
        Ray is not installed, or the cluster cannot be reached (exit 2).
    """

    name = "ray"

    def __init__(self, address: str | None = None, workers: int | None = None, store_root: Any = None,
                 retries: int = RETRIES):
        super().__init__()
        try:
            import ray
        except ImportError:
            raise EngineError(MSG_NO_RAY) from None
        import tempfile
        import uuid

        self.ray = ray
        self.address = address
        self.retries = retries
        self.store_root = None if store_root is None else str(store_root)
        self.pids: set[int] = set()
        self.threads: dict[str, set[int]] = {}  # per system: the torch threads its workers ran with
        self.retried: list[str] = []
        self._temp: str | None = None
        self._owned = False
        self._actors: dict[str, list[Any]] = {}
        os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")  # no telemetry from an audit
        namespace = f"audit-{uuid.uuid4().hex[:12]}"
        if ray.is_initialized():  # a caller's own Ray (the Python API): used as it is, left running
            pass
        elif address is None:
            self._temp = tempfile.mkdtemp(prefix="audit-ray-", dir=tempfile.gettempdir())
            ray.init(address="local", num_cpus=workers or os.cpu_count() or 1, include_dashboard=False,
                     object_store_memory=PRIVATE_OBJECT_STORE_BYTES, _temp_dir=self._temp, namespace=namespace,
                     _node_ip_address="127.0.0.1", log_to_driver=False, logging_level="ERROR")  # loopback only
            self._owned = True
        else:
            host = (address.split("://", 1)[-1]).rpartition(":")[0].strip("[]")
            local = {"_node_ip_address": "127.0.0.1"} if host in ("127.0.0.1", "localhost") else {}
            try:  # a head on the loopback: this driver joins it as 127.0.0.1 (not the machine's address)
                ray.init(address=address, namespace=namespace, log_to_driver=False, logging_level="ERROR", **local)
            except (ConnectionError, RuntimeError, ValueError) as err:
                raise EngineError(MSG_UNREACHABLE.format(address=address, why=str(err).splitlines()[0])) from None
        self.workers = workers or max(1, int(ray.cluster_resources().get("CPU", 1)))

    # -- the driver's completion loop -------------------------------------------------------------------------
    def _lost(self) -> tuple[type, ...]:
        ex = self.ray.exceptions
        return tuple(getattr(ex, n) for n in ("RayActorError", "WorkerCrashedError", "ObjectLostError",
                                               "NodeDiedError", "OwnerDiedError") if hasattr(ex, n))

    def _drive(self, units: list[Any], slots: int, submit: Callable[[int, Any], Any], label: Callable[[Any], str],
               system: str, ping: Callable[[int], Any] | None = None) -> Iterator[Any]:
        """Keep ``slots`` units in flight (``submit(slot, unit)`` -> ObjectRef), yield each result as it finishes;
        a unit whose worker died goes back to the front of the queue, at most ``retries`` times.

        With ``ping`` (actors: ``ping(slot)`` -> ObjectRef of a call that does no work), a slot whose worker died
        sends nothing more until its actor answers a ping: Ray restarts the actor, and a call sent while it
        restarts fails at once (``ActorUnavailableError``). Pings that fail are sent again, 0.25 s apart and
        doubling up to 5 s, for at most :data:`RESTART_WAIT_S` (then :data:`MSG_RESTART_TIMEOUT`). So each death
        of a worker counts once for each batch it held, never for batches sent while it came back: counting
        those failed a run whose one killed actor took longer to restart than four quick resends (CI, stop 57).
        """
        import time

        ray = self.ray
        lost = self._lost()
        pending, inflight, deaths, nodes = deque(units), {}, {}, {}
        pings: dict[Any, int] = {}  # ping ObjectRef -> its slot (the slot is down until it answers)
        down: dict[int, tuple[float, str]] = {}  # slot -> when its worker was found dead, and the batch it held
        resting: dict[int, float] = {}  # slot -> when to ping again
        tries: dict[int, int] = {}  # slot -> failed pings since it went down

        def fill(slot: int) -> None:
            if pending:
                unit = pending.popleft()
                inflight[submit(slot, unit)] = (unit, slot)

        def why_of(err: BaseException) -> str:
            return (str(err).strip().splitlines() or [type(err).__name__])[0][:300]

        for slot in range(slots):
            fill(slot)
        while inflight or (pings or resting) and pending:
            now = time.monotonic()
            for slot in [s for s, at in resting.items() if at <= now]:
                del resting[slot]
                pings[ping(slot)] = slot  # type: ignore[misc]
            waiting = list(inflight) + list(pings)
            if not waiting:
                time.sleep(max(0.0, min(resting.values()) - now))
                continue
            timeout = max(0.0, min(resting.values()) - now) if resting else None
            done, _ = ray.wait(waiting, num_returns=1, timeout=timeout)
            if not done:
                continue
            if done[0] in pings:
                slot = pings.pop(done[0])
                try:
                    ray.get(done[0])
                except lost as err:  # still restarting (ActorUnavailableError) or dead again: ping again later
                    since, name = down[slot]
                    if time.monotonic() - since > RESTART_WAIT_S:
                        raise EngineTaskFailed(MSG_RESTART_TIMEOUT.format(
                            task=name, system=system, wait=RESTART_WAIT_S,
                            node=nodes.get(slot, "unknown"), why=why_of(err))) from None
                    tries[slot] = tries.get(slot, 0) + 1
                    resting[slot] = time.monotonic() + min(5.0, RESTART_BACKOFF_S * 2 ** min(8, tries[slot] - 1))
                    continue
                del down[slot]
                tries.pop(slot, None)
                fill(slot)
                continue
            unit, slot = inflight.pop(done[0])
            try:
                out = ray.get(done[0])
            except lost as err:  # RayActorError, ActorUnavailableError (its actor restarting), a crashed task, ...
                name = label(unit)
                deaths[name] = deaths.get(name, 0) + 1
                self.retried.append(name)
                if deaths[name] > self.retries:
                    raise EngineTaskFailed(MSG_TASK_FAILED.format(task=name, system=system, n=deaths[name],
                                                                  retries=self.retries, node=nodes.get(slot, "unknown"),
                                                                  why=why_of(err))) from None
                pending.appendleft(unit)
                if ping is None:  # a task: a new worker process takes the next one
                    fill(slot)
                else:  # an actor: wait for Ray to bring it back
                    down[slot] = (time.monotonic(), name)
                    pings[ping(slot)] = slot
                continue
            except ray.exceptions.RayTaskError as err:  # the unit itself raised: its own error, as locally
                from runtime.store import StoreError

                inner = getattr(err, "cause", None)
                if isinstance(inner, StoreError):
                    raise EngineError(MSG_STORE_UNSEEN.format(store=self.store_root, node=nodes.get(slot, "unknown"),
                                                              why=str(inner))) from None
                raise (inner if isinstance(inner, BaseException) else err.as_instanceof_cause()) from None
            if isinstance(out, tuple) and len(out) == 5:
                nodes[slot] = out[3]
            yield out
            fill(slot)

    def _check_store(self, probes: list[Any], marker_path: str) -> None:
        try:
            for seen, why, node in self.ray.get(probes):
                if not seen:
                    raise EngineError(MSG_STORE_UNSEEN.format(store=self.store_root, node=node, why=why))
        finally:
            try:
                os.unlink(marker_path)
            except OSError:
                pass

    def _marker(self) -> tuple[str, str]:
        import uuid

        os.makedirs(self.store_root, exist_ok=True)  # type: ignore[arg-type]
        marker = f".engine-probe-{uuid.uuid4().hex}"
        path = os.path.join(self.store_root, marker)  # type: ignore[arg-type]
        with open(path, "w", encoding="utf-8") as fh:
            fh.write("written by the driver of an audit run; a worker that sees it sees the task store\n")
        return marker, path

    def map_batches(self, system: Any, batches: Iterable[Any]) -> Iterator[tuple[int, pd.DataFrame]]:
        batches = list(batches)
        placement = getattr(system, "placement", "driver")
        if not batches:
            return
        if placement == "driver":  # requests: one process holds the system's limits for the whole cluster
            for batch in batches:
                self.dispatched += 1
                self.pids.add(os.getpid())
                yield batch.position, system.score_batch(batch)
            return
        ray = self.ray
        request = ray.put(worker_request(system.request))
        store = self.store_root if system.batch_output is not None else None
        n = min(self.workers, len(batches))
        label = lambda b: b.task_id or f"{system.id}#{b.position}"  # noqa: E731
        self.dispatched += len(batches)
        token = f"{system.id}:{request.hex()}"
        if placement == "actor":  # the system's actors live until close(): the model loads once per worker
            actor_cls = ray.remote(num_cpus=1, max_restarts=-1, max_task_retries=0)(BatchActor)
            actors = self._actors.setdefault(system.id, [])
            for i in range(len(actors), n):
                actors.append(actor_cls.options(name=f"audit:{system.id}:{i}").remote(
                    system.kind, system.resolved, store))
            if store is not None:
                marker, path = self._marker()
                self._check_store([a.probe.remote(marker) for a in actors[:n]], path)
            for pos, frame, pid, _node_id, threads in self._drive(
                    batches, 2 * n, lambda slot, b: actors[slot % n].score.remote(b, [request], token), label,
                    system.id, ping=lambda slot: actors[slot % n].pid.remote()):
                self._ran(system.id, pid, threads)
                yield pos, frame
            return
        if placement != "task":
            raise ValueError(f"system {system.id!r}: unknown placement {placement!r}; allowed: actor, task, driver")
        task = ray.remote(num_cpus=1, max_retries=0)(score_task)
        if store is not None:
            marker, path = self._marker()
            probe = ray.remote(num_cpus=0)(probe_store)
            self._check_store([probe.remote(store, marker)], path)
        for pos, frame, pid, _node_id, threads in self._drive(
                batches, n, lambda slot, b: task.remote(system.kind, system.resolved, request, token, b, store),
                label, system.id):
            self._ran(system.id, pid, threads)
            yield pos, frame

    def _ran(self, system_id: str, pid: int, threads: int | None) -> None:
        self.pids.add(pid)
        if threads is not None:
            self.threads.setdefault(system_id, set()).add(int(threads))

    def worker_threads(self, system_id: str) -> list[int] | None:
        return sorted(self.threads[system_id]) if system_id in self.threads else None

    def map_jobs(self, fn: Callable[[Any], Any], jobs: Iterable[Any]) -> Iterator[tuple[int, Any]]:
        jobs = list(enumerate(jobs))
        self.dispatched += len(jobs)
        remote = self.ray.remote(num_cpus=1, max_retries=0)(_job_task)
        for n, result, pid in self._drive(jobs, self.workers, lambda slot, nj: remote.remote(fn, nj[0], nj[1]),
                                          lambda nj: f"job {nj[0]}", "generator"):
            self.pids.add(pid)
            yield n, result

    def close(self) -> None:
        """End this run's actors, shut the private instance down and remove its temp folder; an attached cluster
        is left running."""
        for actors in self._actors.values():
            for a in actors:
                try:
                    self.ray.kill(a)
                except Exception:  # noqa: BLE001 - an actor already gone
                    pass
        self._actors.clear()
        if self._owned and self.ray.is_initialized():
            self.ray.shutdown()
            self._owned = False
        elif self.ray.is_initialized() and self.address is not None:
            self.ray.shutdown()  # detach this driver; the cluster keeps running
        if self._temp is not None:
            import shutil

            shutil.rmtree(self._temp, ignore_errors=True)
            self._temp = None

    def record(self) -> dict[str, Any]:
        return {"name": self.name, "address": self.address, "workers": self.workers,
                "worker_pids": sorted(self.pids), "tasks": self.dispatched, "retried_tasks": list(self.retried)}


def _job_task(fn: Callable[[Any], Any], n: int, job: Any) -> tuple[int, Any, int]:
    """A Ray task of :meth:`RayEngine.map_jobs`: ``(index, fn(job), pid)``."""
    return n, fn(job), os.getpid()
