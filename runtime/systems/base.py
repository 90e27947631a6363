"""The contract every system-under-test adapter follows."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, ClassVar

import pandas as pd


@dataclass
class ScoreRequest:
    """What a system scores.

    Attributes
    ----------
    jobs : dict
        job id -> job description text (``None`` when the spec gives no text).
    resumes : pandas.DataFrame or None
        One row per resume: ``job_id, cv_id, variant, is_true_match, text`` (+ axis columns);
        ``None`` when the spec has no generator (precomputed systems bring their own cells).
    variants : list of str
        Variant ids of the spec, reference first.
    spec_folder : pathlib.Path
        Folder the spec's relative paths are resolved against.
    progress : callable, optional
        ``progress(description, total)`` returns an ``advance(n)`` callable for a progress bar.
    info : dict
        Diagnostics the adapter adds per system id (``run.json``'s ``systems_info``).
    paired : bool
        True for a correspondence-audit matrix (cells ``job_id, cv_id, variant``); False for
        unpaired population profiles (cells ``job_id, cv_id``; ``variants`` is ``["population"]``).
    seed : int
        The spec's seed (every random draw of an adapter derives from it).
    job_info : dict
        Job id -> :class:`JobInfo` (title and template family).
    llm : LlmSettings or None
        Execution knobs of the LLM systems (non-semantic: not hashed).
    artifacts : dict
        Extra files for the run folder, name -> data frame (LLM systems: every raw answer).
    store : runtime.store.TaskStore or None
        The run's task store, for adapters that keep partial work (the embedding system's batches).
    plan_tasks : list of str
        The plan's score task ids this request serves (kept with partial work for ``audit gc``).
    batches : list of ScoreBatch
        The plan's score batches of this system (:func:`compiler.plan.score_batches`), each with its
        base candidates; empty for a system that reads its scores from a file.
    accept_vendor_file : str or None
        The reason given with ``audit execute --accept-vendor-file`` (blind ``precomputed`` systems).
    system_settings : dict
        System id -> ``execution.systems.<id>`` (``concurrency``, ``requests_per_s``, ``timeout_s``,
        ``retries``) of the remote systems and vendor programs (non-semantic: not hashed): only the keys the
        spec writes; each adapter fills in its kind's defaults (http: concurrency 4; command, python: 1).
    controls : list of str
        The ids of the spec's negative controls (issue 38) when the system reads its scores from a file that
        holds the placebo rows: the adapter returns the variants' rows and puts the placebo rows under
        ``artifacts["controls:<system id>"]`` (the pipeline takes them out into ``RunContext.controls``).
    control_resumes : pandas.DataFrame or None
        The placebo résumés the tool wrote (``control_resumes.csv``), for a system that reads its scores from
        a file: a blind file's key covers them (``audit export --for-vendor`` mixes them in).
    headings : tuple of str
        The section headings the design writes, each on a line of its own (the template résumé's,
        :data:`runtime.generate.render.HEADINGS`; the population résumé's); empty when the design does not
        fix them (LLM-written résumés). An encoder with a token window says which of them it never reads
        (issue 31 §5).
    variant_table : dict
        The resolved variant table (variant id -> {axis: level}): a score file's ``variant_from`` finds each
        row's variant in it (issue 37 §1); empty for designs without variants.
    """

    jobs: dict[str, str | None]
    resumes: pd.DataFrame | None
    variants: list[str]
    spec_folder: Path
    progress: Callable[[str, int], Callable[[int], None]] | None = None
    info: dict[str, Any] = field(default_factory=dict)
    paired: bool = True
    seed: int = 0
    job_info: dict[str, "JobInfo"] = field(default_factory=dict)
    llm: "LlmSettings | None" = None
    artifacts: dict[str, Any] = field(default_factory=dict)
    store: Any = None
    plan_tasks: list[str] = field(default_factory=list)
    batches: list["ScoreBatch"] = field(default_factory=list)
    accept_vendor_file: str | None = None
    headings: tuple[str, ...] = ()
    system_settings: dict[str, Any] = field(default_factory=dict)
    #: The resolved ``disclosure`` (issue 34: the data range an applicant file's dates must lie in), or None.
    disclosure: dict[str, Any] | None = None
    controls: list[str] = field(default_factory=list)
    control_resumes: pd.DataFrame | None = None
    variant_table: dict[str, dict[str, str]] = field(default_factory=dict)
    #: ``execution.torch_threads`` (issue 40 §4): the torch intra-op threads an encoder pins in ``setup()``;
    #: None keeps torch's own default (today's behaviour). Not hashed.
    torch_threads: int | None = None


@dataclass(frozen=True)
class ScoreBatch:
    """One score batch of the plan: a job's base candidates ``cv_ids`` (all their variants).

    Attributes
    ----------
    task_id : str
        The plan's ``score`` task id (it hashes the system, the job, the batch's positions and the
        generation tasks it depends on).
    job_id : str
        The job.
    cv_ids : tuple of str
        The base candidates at the batch's positions in the job's generation order.
    """

    task_id: str
    job_id: str
    cv_ids: tuple[str, ...]


@dataclass(frozen=True)
class BatchInput:
    """One score batch as :meth:`SystemAdapter.score_batch` receives it (issue 40 §2): everything the batch's
    scores depend on, so the same input gives the same bytes in any process and in any order.

    Attributes
    ----------
    position : int
        The batch's index in plan order (0-based); results are assembled in this order, never in completion order.
    task_id : str or None
        The plan's ``score`` task id of the batch (:class:`ScoreBatch`); None for a system scored as one batch
        without plan batches (a score file, or a request without ``batches``).
    job_id : str or None
        The batch's job (None for a batch covering every job: a score file).
    job_text : str or None
        The job's description text (None without one).
    rows : pandas.DataFrame or None
        The batch's résumés, ``job_id, cv_id, variant, is_true_match, text`` (+ axis columns), in the request's
        row order; None when the system brings its own cells (``precomputed``).
    seed : int
        The spec's seed (every random draw derives from it and the batch's labels: :mod:`runtime.seeding`).
    plan_tasks : tuple of str
        The plan task ids the batch serves (the references of what it keeps in the task store).
    """

    position: int
    task_id: str | None
    job_id: str | None
    job_text: str | None
    rows: pd.DataFrame | None
    seed: int
    plan_tasks: tuple[str, ...] = ()


@dataclass(frozen=True)
class BatchResult:
    """What one batch gave: its input, the frame :meth:`SystemAdapter.score_batch` returned (or the task store
    held), and whether it came from the store (``stored``: nothing was computed for it in this run)."""

    batch: BatchInput
    frame: pd.DataFrame
    stored: bool = False


@dataclass(frozen=True)
class JobInfo:
    """A job's title and template family (``None`` without one)."""

    title: str
    family: str | None = None


@dataclass(frozen=True)
class LlmSettings:
    """Execution knobs of the LLM systems (``execution:`` in the spec; not hashed).

    Attributes
    ----------
    cache : runtime.llm.cache.ResponseCache
        The LLM answers, kept in the run's task store.
    concurrency : dict of str to int
        Concurrent requests per system id (default :data:`DEFAULT_CONCURRENCY`).
    retries : int
        Retries with backoff on 429, 5xx, timeouts and lost connections.
    timeout_s : float
        Seconds per request.
    """

    cache: Any
    concurrency: dict[str, int] = field(default_factory=dict)
    retries: int = 5
    timeout_s: float = 120.0

    def concurrency_of(self, system_id: str, default: int = 4) -> int:
        return int(self.concurrency.get(system_id, default))


class _FromDeclaration:
    """A read-only attribute of an adapter class (and its instances) taken from the compiler
    declaration it binds to (``cls.declaration``, set by :func:`runtime.systems.system`)."""

    def __init__(self, attribute: str, unbound: Any):
        self.attribute, self.unbound = attribute, unbound

    def __get__(self, obj: Any, owner: type) -> Any:
        declaration = getattr(owner, "declaration", None)
        return self.unbound if declaration is None else getattr(declaration, self.attribute)


class SystemAdapter:
    """Scores every (job, cv, variant) cell of a correspondence-audit matrix: the runtime half of a
    system kind, bound with ``@system("<kind>")`` to the kind's compiler declaration
    (:class:`compiler.systems.base.SystemKind`), from which it reads its kind and what it provides.

    The per-batch contract (issue 40 §2); an engine (:mod:`runtime.pipeline.engine`) drives it:

    1. :meth:`setup` once per process and request: the request's context and the heavy state (an encoder's
       model, a corpus's statistics, pinned torch threads);
    2. :meth:`batch_inputs`: the plan's score batches as :class:`BatchInput` (pure inputs), in plan order;
    3. :meth:`score_batch` per batch, in any process and any order: a frame that depends only on its input;
    4. :meth:`finish` on the driver, over every batch's frame **in plan order**: the system's scores, a frame
       with columns ``job_id, cv_id, variant, score, is_true_match`` (``is_true_match`` 0/1 or NaN when
       unknown; LLM screeners add ``condition, replicate``), one row per cell, scores on the system's
       ``score_range``, and its diagnostics (``run.json``'s ``systems_info.<id>``).

    Extra files for the run folder go into ``request.artifacts`` on the driver (in :meth:`finish`, or in
    :meth:`abort` when a batch failed).
    """

    #: The compiler declaration of the kind (set when the class is bound; None on an unbound class).
    declaration: ClassVar[Any] = None
    #: The ``systems[].kind`` it scores (the declaration's ``id``).
    kind: ClassVar[str] = _FromDeclaration("id", "")  # type: ignore[assignment]
    #: What the system adds to a run for the audit families (the declaration's ``provides``; LLM
    #: screeners and http, command, python: ``{"answers"}``).
    provides: ClassVar[frozenset[str]] = _FromDeclaration("provides", frozenset())  # type: ignore[assignment]
    #: Whether a finished scoring is kept in the task store and reused (False for LLM screeners:
    #: their per-request response cache already makes a re-run call no model).
    storable: ClassVar[bool] = True
    #: The output name under which each finished batch's frame is kept in the task store (a ``score_batch``
    #: task, looked up before the batch is dispatched: a resumed run scores only the missing batches), or None
    #: when batches are not kept one by one (cheap systems; request systems keep each answer on arrival).
    batch_output: ClassVar[str | None] = None
    #: Where a cluster engine runs the batches (issue 40 §3; :class:`runtime.pipeline.engine.RayEngine`):
    #: ``"actor"`` (heavy state: :meth:`setup` once per worker process, then batch after batch: an encoder),
    #: ``"task"`` (cheap state: one task per batch, the set-up adapter kept per worker process) or ``"driver"``
    #: (the run's own process: systems that send requests, whose concurrency and rate limits one process holds
    #: for the whole cluster, and systems that read a file on the driver's disk). The local engine ignores it.
    placement: ClassVar[str] = "driver"
    #: The progress bar's label (the driver counts finished batches).
    progress_label: ClassVar[str] = "score batches"

    def __init__(self, resolved: dict[str, Any]):
        self.resolved = resolved
        # the class's id (set when it is bound) is its kind; an adapter's is the system's id in the spec
        self.id: str = resolved["id"]

    def window(self, texts: list[str], spec_folder: Path) -> list[tuple[int, ...]] | None:
        """The part of each text the system reads, as token ids, when it reads a fixed window (an encoder's
        first ``max_seq_length`` tokens); None for a system without one (issue 38: the negative controls'
        ``window_share``). Default: None."""
        return None

    def setup(self, request: ScoreRequest) -> None:
        """Take the request's context and load the heavy state, once per process (an adapter that loads
        something keeps it across calls: a second :meth:`setup` on the same instance reuses it).

        Subclasses extend it (``super().setup(request)`` first). Default: keep ``request`` as ``self.request``.
        """
        self.request = request

    def batch_inputs(self) -> list[BatchInput]:
        """The batches to score, in plan order (after :meth:`setup`).

        Default: each plan batch (:attr:`ScoreRequest.batches`) with its base candidates' résumés, all their
        variants, in the request's row order; without plan batches, one batch per job (``task_id`` None,
        serving :attr:`ScoreRequest.plan_tasks`); without résumés, one batch of every cell (``rows`` None).
        """
        request = self.request
        resumes = request.resumes
        if resumes is None:
            return [BatchInput(0, None, None, None, None, request.seed, tuple(request.plan_tasks))]
        import numpy as np

        out = []
        if request.batches:
            rows_of = resumes.groupby(["job_id", "cv_id"], sort=False).indices
            for n, b in enumerate(request.batches):
                idx = np.sort(np.concatenate([rows_of[(b.job_id, cv)] for cv in b.cv_ids]))
                out.append(BatchInput(n, b.task_id, b.job_id, request.jobs.get(b.job_id), resumes.iloc[idx],
                                      request.seed, (b.task_id,)))
            return out
        for n, (job, idx) in enumerate(resumes.groupby("job_id", sort=False).indices.items()):
            out.append(BatchInput(n, None, job, request.jobs.get(job), resumes.iloc[np.sort(idx)], request.seed,
                                  tuple(request.plan_tasks)))
        return out

    def score_batch(self, batch: BatchInput) -> pd.DataFrame:  # pragma: no cover - interface
        """The frame of one batch (columns are the adapter's own; :meth:`finish` reads them). Pure: the same
        :class:`BatchInput` gives the same bytes."""
        raise NotImplementedError

    def finish(self, results: list[BatchResult]) -> tuple[pd.DataFrame, dict[str, Any]]:  # pragma: no cover
        """``(scores, info)`` from every batch's result in plan order (class docstring)."""
        raise NotImplementedError

    def abort(self, results: list[BatchResult]) -> None:
        """A batch failed: keep what the finished batches give for the run folder (``request.artifacts``) and
        ``request.info``. ``results``: the finished batches, in plan order. Default: nothing."""
