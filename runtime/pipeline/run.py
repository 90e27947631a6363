"""One run pipeline: generate -> score every system -> rank (paired designs) -> every enabled audit
family -> report -> seal (seed 000 Algorithm 1, Stage 4; seed 001 for population designs).

Each stage writes its artifacts into the run folder as soon as it ends and rewrites ``run.json``, so
an error in a later stage never loses what was already computed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from compiler.paths import recorded
from runtime.families import STATUS_COLUMNS, FamilyResult, registered
from runtime.families.base import combined_verdict
from runtime.pipeline.gate import Gate, Tier
from runtime.pipeline.generate import generate, job_texts
from runtime.pipeline.engine import LocalEngine, engine_settings
from runtime.pipeline.score import check_base_counts, score_all
from runtime.pipeline.start import STORE_BY_OPERATOR, open_run, output_error, output_failure
from runtime.pipeline.summary import SUMMARY, build_summary, render_summary
from runtime.progress import Progress, stage_timer
from runtime.run.context import RunContext
from runtime.run.folder import RunFolder
from runtime.store import TaskStore
from runtime.testhooks import kill_point

__all__ = ["RunResult", "execute", "job_texts", "write_documents"]


@dataclass
class RunResult:
    """What :func:`execute` produced.

    Attributes
    ----------
    run_dir : pathlib.Path
        The run folder.
    tables : dict of str to pandas.DataFrame
        Every result table, by name (``metrics``, ``risk``, ``drift``, ``effects``, ``causal``...).
    status : pandas.DataFrame
        Every family's status rows (the input of the ``--fail-on`` gate).
    results : dict
        Each audit family's :class:`~runtime.families.FamilyResult`, in run order.
    timings : dict of str to float
        Seconds per stage.
    run : dict
        The final ``run.json`` record.
    outcome : dict
        The ``summary.json`` object (:mod:`runtime.pipeline.summary`): status counts, risk, validity,
        the ``--fail-on`` gate and the exit code.
    """

    run_dir: Path
    tables: dict[str, pd.DataFrame]
    status: pd.DataFrame
    results: dict[str, FamilyResult]
    timings: dict[str, float] = field(default_factory=dict)
    run: dict[str, Any] = field(default_factory=dict)
    outcome: dict[str, Any] = field(default_factory=dict)

    @property
    def exit_code(self) -> int:
        """The exit code of ``audit execute``: 0, 4 (the gate tripped), 5 (INCONCLUSIVE) or 8 (sealed but
        unsigned, without ``--unsigned``)."""
        return int(self.outcome.get("exit_code", 0))

    @property
    def gate_hits(self) -> list[str]:
        """The rows that tripped the ``--fail-on`` gate, one line each (``system/condition item: status``)."""
        return [f"{r['system']}/{r['condition']} {r['item']}: {r['status']}"
                for r in (self.outcome.get("gate") or {}).get("rows", [])]

    @property
    def metrics(self) -> pd.DataFrame:
        return self.tables.get("metrics", pd.DataFrame())

    @property
    def risk(self) -> pd.DataFrame:
        return self.tables.get("risk", pd.DataFrame())

    @property
    def drift(self) -> pd.DataFrame:
        return self.tables.get("drift", pd.DataFrame())

    @property
    def causal(self) -> pd.DataFrame | None:
        return self.tables.get("causal")

    @property
    def verdict(self) -> tuple[str, list[str]] | None:
        """(verdict, failed checks) over every family that gave a verdict (INCONCLUSIVE when any did;
        :func:`runtime.families.base.combined_verdict`), or None."""
        return combined_verdict(self.results)

    @property
    def summary(self) -> list[str]:
        return [line for res in self.results.values() for line in res.summary]


def execute(spec_path: Path, *, out: Path | None = None, store: Path | None = None, quiet: bool = False, keys=None,
            resume: Path | None = None, accept_vendor_file: str | None = None, tsa: str | None = None,
            fail_on: Gate | None = None, tier: Tier = "research", allow_exec: bool = False,
            allow_unsigned: bool = False, pdf: bool = True, engine: str | None = None,
            ray_address: str | None = None, workers: int | None = None) -> RunResult:
    """Run a locked spec end to end and write the run folder; or complete a killed or failed one.

    With ``keys`` (:class:`runtime.provenance.keys.SigningKeys`) the PDF is signed and the manifest is signed
    into ``manifest.dsse.json``; without, ``manifest.json`` is written unsigned (runtime.provenance.sign). With
    ``tsa`` (an RFC 3161 time-stamping authority URL) the PDF is PAdES B-LTA and the envelope is
    timestamped (runtime.provenance.trusted_time); a TSA that fails at sealing leaves the run failed at stage
    ``seal``, and ``resume`` seals it.
    Finished tasks (generation, each system's scores) are taken from the task store
    (:mod:`runtime.store`) when it holds them, so a warm re-run makes no model call and no
    encode, and ``resume`` (a run folder whose run was killed or failed) completes the run in place
    with the same result bytes as an uninterrupted run.
    Before the seal, the ``fail_on`` gate (on the ``tier``'s status column) and the exit code are
    computed and written with the status counts into ``summary.json`` (:mod:`runtime.pipeline.summary`),
    so the manifest hashes it (written with the last ``run.json``, after the PDF is signed); a resumed
    run takes ``fail_on`` and ``tier`` from this call. A run that fails writes none (one written before
    a failing envelope timestamp is removed). ``store`` (the operator's ``--store``) replaces the spec's
    task store (:func:`store_root`); ``run.json`` records it, and the output root, relative to the spec's
    folder only when they lie inside it (issue 41). A run without ``keys`` is sealed unsigned and its exit
    code is 8 (:data:`runtime.pipeline.gate.EXIT_UNSIGNED`, after 5 and 4) unless ``allow_unsigned`` (the
    operator's ``--unsigned``; issue 37 §3). ``pdf`` False (``--unsigned --no-pdf``, a trial run) writes
    ``report.html`` without ``report.pdf`` (a resumed run follows this call, and drops a PDF an earlier attempt
    left); ``run.json`` records it (``report_pdf``). ``engine``, ``ray_address`` and ``workers`` (``--engine``,
    ``--ray-address``, ``--workers``) replace ``execution.engine``, ``execution.ray_address`` and
    ``execution.workers``: where the score batches run (:mod:`runtime.pipeline.engine`, issue 40), checked before
    the run folder exists; ``run.json`` records the engine (``engine``). Every engine gives the same bytes.

    Raises
    ------
    compiler.errors.SpecError
        The spec is invalid (exit 2).
    compiler.systems.MissingExtra
        A system or the generator needs an extra that is not installed (exit 2, before any work).
    runtime.pipeline.start.ExecNotAllowed
        A system runs vendor code (``command``, ``python``) and ``allow_exec`` (``--allow-exec``) is False
        (exit 2, before any work).
    compiler.errors.LockError
        No lock, or the spec no longer matches it, or ``resume`` was run under another lock (exit 3).
    compiler.errors.InputDataError
        A data file named by the spec is wrong (exit 2).
    runtime.pipeline.engine.EngineError
        ``--engine ray`` without Ray installed, ``--ray-address`` or ``--workers`` with the local engine, an
        unreachable cluster (before the run folder exists), a task store a Ray worker cannot see (exit 2).
    runtime.pipeline.engine.EngineTaskFailed
        A batch's worker died past the retries: the run is failed at stage ``score``; ``resume`` completes it
        (exit 7).
    OutputError
        The run folder cannot be written (disk full, read-only, permission: the message names the path,
        what to do and, once ``run.json`` exists, the ``--resume`` command; issue 41), or ``resume``
        names a folder that cannot be resumed, or ``store`` is the spec's folder or above it (exit 2).
    """
    from compiler.load import load_spec
    from runtime.provenance.sign import seal_run

    # the engine before any work and before the run folder exists (issue 40: bad input exits 2 here)
    settings = engine_settings(load_spec(spec_path).spec.execution, engine=engine, ray_address=ray_address,
                               workers=workers)
    if keys is not None and not pdf:  # before the run folder exists; the CLI refuses it first (MSG_NO_PDF_SIGNED)
        raise ValueError("a signed run renders its PDF: pdf=False needs keys=None")
    locked = open_run(spec_path, store=store, keys=keys, tsa=tsa, out=out, resume=resume, allow_exec=allow_exec)
    compiled, lock, folder, git, timings = locked.compiled, locked.lock, locked.folder, locked.git, locked.timings
    run, run_dir, r = folder.run, folder.path, compiled.resolved
    run["report_pdf"] = bool(pdf)

    def finish() -> None:  # summary.json and the last write of run.json; the manifest hashes them next
        kill_point("seal")
        folder.write_bytes(SUMMARY, render_summary(result.outcome))
        folder.release()
        run["status"] = "done"
        run["stage"] = None
        run.pop("pid", None)
        folder.save()

    try:
        with Progress(quiet=quiet) as progress:
            ctx = RunContext(compiled=compiled, lock=lock, folder=folder, timings=timings, progress=progress,
                             accept_vendor_file=accept_vendor_file)
            ctx.store = TaskStore(locked.store_dir)
            if resume is None:
                from runtime.provenance.locksign import record_use

                record_use(ctx.store, lock, run["run_id"])  # the ledger of locks used (issue 16)
            run["store"] = recorded(ctx.store.root, compiled.loaded.folder, outside=STORE_BY_OPERATOR)
            ctx.engine = settings.start(store_root=Path(ctx.store.root).resolve())  # workers have other cwds
            try:
                _run_stages(ctx)
            finally:
                run["engine"] = ctx.engine.record()
                ctx.engine.close()
        status = pd.concat([res.status for res in ctx.results.values()]
                           or [pd.DataFrame(columns=list(STATUS_COLUMNS))], ignore_index=True)
        result = RunResult(run_dir, dict(ctx.tables), status, dict(ctx.results), timings, run)
        # the gate and the exit code before the seal; finish() writes them into summary.json
        result.outcome = build_summary(run=run, lock=lock, status=status, risk=ctx.tables.get("risk"),
                                       verdict=result.verdict, signed=keys is not None, fail_on=fail_on, tier=tier,
                                       allow_unsigned=allow_unsigned)
        folder.stage("seal")
        seal_run(folder, lock=lock, resolved=r, keys=keys, git=git, finish=finish, timings=timings, tsa=tsa)
        _record_seal(ctx.store, lock, run["run_id"], keys)
    except BaseException as err:
        run["status"] = "failed"
        run["error"] = f"{type(err).__name__}: {err}"
        try:
            _drop_summary(folder)
            folder.release()
            folder.save()
        except OSError:  # the disk that failed the run: run.json keeps its last state (read as interrupted)
            pass
        if isinstance(err, OSError) and output_failure(err, run_dir):
            raise output_error(err, run_dir, locked.shown) from None
        raise
    return result


def _record_seal(store: TaskStore, lock: dict[str, Any], run_id: str, keys) -> None:
    """The seal in the task store's ledger (issue 37 §3): later runs of the audit list it under this lock
    (:func:`runtime.provenance.locksign.engagement`)."""
    from compiler.lock import utc_now
    from runtime.provenance.keys import describe_person
    from runtime.provenance.locksign import record_seal

    import sys

    from runtime.store import StoreError

    signer = describe_person(keys.signer()) if keys is not None else None
    try:
        record_seal(store, lock, run_id, sealed_at=utc_now(), signer=signer)
    except StoreError as err:  # the run is sealed: a ledger that cannot be written does not unseal it
        print(f"warning: the seal of run {run_id} is not in the task store's ledger ({err}): later reports of "
              "this audit will not list it", file=sys.stderr)


def _drop_summary(folder: RunFolder) -> None:
    """A failed run has no summary: remove one written before a failing seal (unless a seal file
    already exists: then the folder is sealed and verify judges it)."""
    from runtime.run.folder import SEAL_FILES

    if any((folder.path / f).exists() for f in SEAL_FILES):
        return
    (folder.path / SUMMARY).unlink(missing_ok=True)
    if SUMMARY in folder.run.get("artifacts", []):
        folder.run["artifacts"].remove(SUMMARY)


def _run_stages(ctx: RunContext) -> None:
    """generate -> score -> rank -> families -> report; each stage's artifacts are written at once."""
    from compiler.designs import provided
    from compiler.designs.matrix import all_controls
    from runtime.designs import design_for

    r, folder, timings = ctx.resolved, ctx.folder, ctx.timings
    if ctx.engine is None:
        ctx.engine = LocalEngine()
    ctx.jobs = job_texts(ctx.compiled)
    design = design_for(r)
    folder.stage("generate")
    with stage_timer(timings, "generate"):
        generate(ctx, design)
        if all_controls(r):  # issues 38 §3, 39 §6: the control résumés (control_resumes.csv)
            design.generate_controls(ctx)
    folder.save()
    ctx.provides = provided(r)  # the declarations of the design and the system kinds (compiler.designs)
    folder.stage("score")
    artifacts: dict[str, Any] = {}
    try:
        with stage_timer(timings, "score"):
            ctx.scores = score_all(ctx, artifacts)
    finally:  # raw LLM answers are kept even when a later call fails
        ctx.run["engine"] = ctx.engine.record()
        for name, frame in artifacts.items():
            if isinstance(frame, bytes):  # a file sealed as it was read (a blind system's returned scores)
                folder.write_bytes(name, frame)
            else:
                folder.write_csv(name, frame)
    if "paired" in ctx.provides:
        if "threshold" not in (r["analysis"].get("decision") or {}):  # a threshold fills no shortlist
            check_base_counts(ctx.scores, r["analysis"]["k"])
        from runtime.rank import paired_frame

        folder.stage("rank")
        with stage_timer(timings, "rank"):
            ctx.paired = paired_frame(ctx.scores, r["axes"], r["variants"]["table"])
        folder.write_csv("paired.csv", ctx.paired)
        n_base = ctx.paired.drop_duplicates(["job_id", "cv_id"]).shape[0]
        ctx.run["counts"].update({"base_candidates": n_base, "resumes": n_base * len(r["variants"]["table"]),
                                  "scored": int(len(ctx.paired))})
    else:
        if getattr(design.declaration, "keeps_rows", True):  # historical applicants keep no row (issue 34)
            folder.write_csv("scores.csv", ctx.scores)
        ctx.run["counts"].update({"scored": int(len(ctx.scores))})
    folder.save()
    with stage_timer(timings, "analyse"):
        for fid, cls in registered().items():
            fam = cls()
            if not fam.enabled(ctx):
                continue
            folder.stage(f"family:{fid}")
            result = fam.analyse(ctx)
            kill_point(f"family:{fid}")
            ctx.results[fid] = result
            for name, frame in result.tables.items():
                ctx.write_table(name, frame)
            write_documents(ctx, fid, result.documents)
            ctx.run.update(result.record)
            verdict = combined_verdict(ctx.results)
            if result.verdict and verdict is not None:  # the run's one verdict, as it stands (issue 28 §2)
                ctx.run["validity"] = {"verdict": verdict[0], "failed": list(verdict[1])}
            folder.save()
    folder.stage("report")
    with stage_timer(timings, "report"):
        from runtime.pipeline.report import write_report

        write_report(ctx)


MSG_DOCUMENT_NAME = ("audit family {family!r} returned a document named {name!r}: a document is a plain file name "
                     "in the run folder (letters, digits, '.', '_', '-'; not hidden), not a path (a bug of the family)")
MSG_DOCUMENT_TAKEN = ("audit family {family!r} returned a document named {name!r}, which the run already holds "
                      "(a table, another family's document or a file of the run itself; a bug of the family)")
#: Files of a run folder a family's document may not be named (written by the run itself).
RESERVED_NAMES = ("run.json", "summary.json", "report.html", "report.pdf", "manifest.json", "manifest.dsse.json",
                  "resumes.csv", "paired.csv", "scores.csv")


def write_documents(ctx: RunContext, family_id: str, documents: dict[str, bytes]) -> None:
    """Write a family's documents into the run folder (listed in ``run.json`` ``artifacts``, so the manifest
    hashes them), before the report.

    Raises
    ------
    RuntimeError
        A name that is not a plain file name, or one the run folder already holds (an internal error:
        the run fails before its seal).
    """
    import re

    for name, data in documents.items():
        if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}", name) \
                or name in (".", "..") or ".." in name:
            raise RuntimeError(MSG_DOCUMENT_NAME.format(family=family_id, name=name))
        stem = name[:-4] if name.endswith(".csv") else None
        taken = (name in RESERVED_NAMES or name in ctx.run.get("artifacts", [])
                 or (stem is not None and stem in ctx.tables))
        if taken:
            raise RuntimeError(MSG_DOCUMENT_TAKEN.format(family=family_id, name=name))
        ctx.folder.write_bytes(name, bytes(data))

