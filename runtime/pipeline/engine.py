"""Engines: where a run's batches and jobs are computed (issue 40 §2).

An engine maps a function over a run's units of work and yields each result **as it finishes**; the driver
(:func:`score_system`, the score stage) looks each batch up in the task store first, dispatches only the
missing ones, keeps each result in the store as it arrives, and assembles the results in **plan order**,
never in completion order. Every draw derives from the spec's seed and the batch's labels
(:mod:`runtime.seeding`), never from the process or the order, so an engine changes where the work runs,
not its bytes.

- :class:`Engine`: the interface. A cluster engine (``RayEngine``, issue 40 part B) implements
  :meth:`Engine.map_batches` by shipping the adapter (its :meth:`~runtime.systems.base.SystemAdapter.setup`
  run once per worker process) and the :class:`~runtime.systems.base.BatchInput` of each batch to workers,
  and :meth:`Engine.map_jobs` by one task per job.
- :class:`LocalEngine`: this process, one unit after the other (today's bytes and today's order).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, Callable, Iterable, Iterator

import pandas as pd


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

    def close(self) -> None:
        """Release the engine's workers (the local engine holds none)."""

    def record(self) -> dict[str, Any]:
        """What ``run.json`` says of the engine: its name and the units it dispatched."""
        return {"name": self.name, "tasks": self.dispatched}


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
    """The engine called ``name`` (``local``; ``ray`` arrives with issue 40 part B).

    Raises
    ------
    ValueError
        An unknown engine name (the spec model refuses it first, located).
    """
    if name == "local":
        return LocalEngine()
    raise ValueError(f"unknown engine {name!r}; allowed: 'local'")


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
    request.info[adapter.id] = info
    return scores
