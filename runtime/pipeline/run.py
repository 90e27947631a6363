"""One run pipeline: generate -> score every system -> rank (paired designs) -> every enabled audit
family -> report -> seal (seed 000 Algorithm 1, Stage 4; seed 001 for population designs).

Each stage writes its artifacts into the run folder as soon as it ends and rewrites ``run.json``, so
an error in a later stage never loses what was already computed.
"""

from __future__ import annotations

import errno
import json
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from compiler import compile_spec
from compiler.errors import InputDataError
from compiler.lock import check_lock, read_lock, utc_now
from compiler.paths import recorded
from compiler.load import display_path
from runtime.families import STATUS_COLUMNS, FamilyResult, registered
from runtime.families.base import combined_verdict
from runtime.pipeline.context import RunContext
from runtime.pipeline.folder import RunFolder, new_run_dir
from runtime.pipeline.gate import Gate, Tier
from runtime.pipeline.metadata import run_record
from runtime.pipeline.summary import SUMMARY, build_summary, render_summary
from runtime.progress import Progress, stage_timer
from runtime.store import DEFAULT_STORE, TaskStore, frame_bytes, frame_from, task_key
from runtime.testhooks import kill_point

CONDITION_DEFAULT = "default"
#: The ``variant`` of every population profile handed to a system adapter (no variants there).
POPULATION_VARIANT = "population"

MSG_K_TOO_SMALL = (
    "job {job!r} has {n} base candidates for system {system!r}, fewer than the largest analysis.k "
    "({family}: {k}); every shortlist would hold the whole pool"
)


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
        """The exit code of ``audit execute``: 0, 4 (the gate tripped) or 5 (INCONCLUSIVE)."""
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


def job_texts(compiled: Any) -> dict[str, str | None]:
    """Job id -> description text (inline or read from ``description_file``)."""
    from compiler.files import read_regular_text

    folder = compiled.loaded.folder
    out: dict[str, str | None] = {}
    for job in compiled.loaded.spec.jobs:
        if job.description is not None:
            out[job.id] = job.description
        elif job.description_file:
            out[job.id] = read_regular_text(folder / job.description_file)  # never a FIFO or device (issue 41)
        else:
            out[job.id] = None
    return out


MSG_RESUME_MISSING = "{run}: no readable run.json; only a run folder written by `audit execute` can be resumed"
#: ``run.json`` ``store`` of an operator's ``--store`` outside the spec's folder (issue 41).
STORE_BY_OPERATOR = "operator's --store"
MSG_STORE_ABOVE = ("--store {store}: the task store cannot be the spec's folder or a folder above it (the store "
                   "ignores its whole folder in git); name a folder of its own, e.g. a new folder beside the spec")
MSG_STORE_BAD = "--store {store}: cannot be used: {why}"
MSG_STORE_LINK = ("the task store {store} resolves to {target}, outside the spec's folder (a symbolic link): a spec's "
                  "store stays inside its folder; remove the link, or give the operator's --store DIR")
MSG_OUTPUT_FAILED = "cannot write {path}: {why}; free space on that disk (or make it writable), then {then}"
MSG_OUTPUT_RESUME = ("complete the run with `audit execute {spec} --resume {run}` (finished tasks are kept in the "
                     "task store), or start a new one with another --out")
MSG_OUTPUT_AGAIN = "run `audit execute` again, or choose another --out (remove the unfinished folder {run})"
MSG_RESUME_DONE = "{run}: the run is complete (status done, sealed); there is nothing to resume"
MSG_RESUME_RUNNING = ("{run}: the run is still running (a live process holds its lock, .run.lock); wait for it or "
                      "stop it first")
MSG_RESUME_OTHER_LOCK = ("{run}: the run was made under spec digest {old}, but {spec} is now locked at {new} "
                         "(another spec, or the spec was amended since); a run completes only under the lock it "
                         "started with: start a new run")


def execute(spec_path: Path, *, out: Path | None = None, store: Path | None = None, quiet: bool = False, keys=None,
            resume: Path | None = None, accept_vendor_file: str | None = None, tsa: str | None = None,
            fail_on: Gate | None = None, tier: Tier = "research") -> RunResult:
    """Run a locked spec end to end and write the run folder; or complete a killed or failed one.

    With ``keys`` (:class:`runtime.keys.SigningKeys`) the PDF is signed and the manifest is signed
    into ``manifest.dsse.json``; without, ``manifest.json`` is written unsigned (runtime.sign). With
    ``tsa`` (an RFC 3161 time-stamping authority URL) the PDF is PAdES B-LTA and the envelope is
    timestamped (runtime.trusted_time); a TSA that fails at sealing leaves the run failed at stage
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
    folder only when they lie inside it (issue 41).

    Raises
    ------
    compiler.errors.SpecError
        The spec is invalid (exit 2).
    compiler.systems.MissingExtra
        A system or the generator needs an extra that is not installed (exit 2, before any work).
    compiler.errors.LockError
        No lock, or the spec no longer matches it, or ``resume`` was run under another lock (exit 3).
    compiler.errors.InputDataError
        A data file named by the spec is wrong (exit 2).
    OutputError
        The run folder cannot be written (disk full, read-only, permission: the message names the path,
        what to do and, once ``run.json`` exists, the ``--resume`` command; issue 41), or ``resume``
        names a folder that cannot be resumed, or ``store`` is the spec's folder or above it (exit 2).
    """
    from runtime.pipeline.folder import OutputError, run_state
    from runtime.sign import git_info, reproduce_commands, seal_run
    from compiler.errors import LockError
    from compiler.lock import tool_version
    from compiler.validate import check_extras

    timings: dict[str, float] = {}
    with stage_timer(timings, "compile"):
        compiled = compile_spec(spec_path)
        # every module the systems and the generator import, before any work (no run folder yet)
        check_extras(compiled.loaded, "execute")
        store_dir = store_root(compiled, store)  # an operator's --store above the spec: refused before any write
        if keys is not None:  # revoked: refused before any work; the status is recorded (issue 27 §2)
            from runtime.revocation import check_keys

            check_keys(keys, what="audit execute", required=bool(tsa))
        shown = display_path(spec_path)
        lock = read_lock(spec_path, shown)
        check_lock(lock, compiled.resolved, shown)
    typed = display_path(spec_path)  # the spec as the operator typed it, for the messages
    r = compiled.resolved
    if resume is not None:
        run_dir = Path(resume)
        state, old = run_state(run_dir)
        if state == "missing":
            raise OutputError(MSG_RESUME_MISSING.format(run=run_dir))
        if state == "done":
            raise OutputError(MSG_RESUME_DONE.format(run=run_dir))
        if state == "running":
            raise OutputError(MSG_RESUME_RUNNING.format(run=run_dir))
        if old.get("spec_digest") != lock["spec_digest"]:
            raise LockError(MSG_RESUME_OTHER_LOCK.format(run=run_dir, old=old.get("spec_digest", {}).get("digest"),
                                                         spec=shown, new=lock["spec_digest"]["digest"]))
        for leftover in run_dir.glob(".*.tmp"):  # a write the kill cut short
            leftover.unlink()
        (run_dir / SUMMARY).unlink(missing_ok=True)  # an unfinished run has no outcome; this run writes it
        git = old.get("spec_git")
        run = {**old, "timings": timings, "artifacts": [], "status": "running", "stage": None,
               "resumed": [*(old.get("resumed") or []), {"at": utc_now(), "previous_status": state,
                                                          "stage": old.get("stage")}]}
        run.pop("error", None)
        run["counts"] = dict(compiled.plan["counts"])
        run["systems_info"] = {}
    else:
        git = git_info(spec_path)  # before the run folder exists: it must not make the tree dirty
        # recorded paths never name the machine's folders (issue 14): the spec as the repository
        # knows it, else its file name; the output root and the store relative to the spec's folder
        shown = git["spec_path"] if git else Path(spec_path).name
        knob = compiled.loaded.spec.execution.out
        root = out or (compiled.loaded.folder / knob if knob else Path("reports"))
        generated_at = utc_now()
        run_id, run_dir = new_run_dir(root, r["audit"], generated_at)
        run = run_record(compiled=compiled, lock=lock, run_id=run_id, shown=shown, generated_at=generated_at,
                         timings=timings, root=root, git=git, operator_out=out is not None,
                         reproduce=reproduce_commands(spec_shown=shown, git=git, tool_version=tool_version()))
    run["reused_tasks"], run["computed_tasks"] = [], []
    folder = RunFolder(run_dir, run, keys, tsa=tsa)
    try:
        if resume is None:
            _record_lock(run, run_dir, spec_path, lock, keys, store_dir)
        folder.hold()
        folder.save()
    except OSError as err:
        if output_failure(err, run_dir):
            raise output_error(err, run_dir, typed) from None
        raise

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
            ctx.store = TaskStore(store_dir)
            if resume is None:
                from runtime.locksign import record_use

                record_use(ctx.store, lock, run["run_id"])  # the ledger of locks used (issue 16)
            run["store"] = recorded(ctx.store.root, compiled.loaded.folder, outside=STORE_BY_OPERATOR)
            _run_stages(ctx)
        status = pd.concat([res.status for res in ctx.results.values()]
                           or [pd.DataFrame(columns=list(STATUS_COLUMNS))], ignore_index=True)
        result = RunResult(run_dir, dict(ctx.tables), status, dict(ctx.results), timings, run)
        # the gate and the exit code before the seal; finish() writes them into summary.json
        result.outcome = build_summary(run=run, lock=lock, status=status, risk=ctx.tables.get("risk"),
                                       verdict=result.verdict, signed=keys is not None, fail_on=fail_on, tier=tier)
        folder.stage("seal")
        seal_run(folder, lock=lock, resolved=r, keys=keys, git=git, finish=finish, timings=timings, tsa=tsa)
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
            raise output_error(err, run_dir, typed) from None
        raise
    return result


#: ``OSError`` numbers that mean the output cannot be written: disk full, quota, read-only file system,
#: permission, file too large (issue 41: exit 2 with the path and what to do, never a traceback).
OUTPUT_ERRNOS = frozenset(getattr(errno, n) for n in ("ENOSPC", "EDQUOT", "EROFS", "EACCES", "EPERM", "EFBIG")
                          if hasattr(errno, n))


def output_failure(err: OSError, folder: Path) -> bool:
    """Whether ``err`` is a failure to write into ``folder`` (the run folder): one of
    :data:`OUTPUT_ERRNOS`, on a path inside ``folder`` (or on no named path: a ``write`` that filled
    the disk names none)."""
    if err.errno not in OUTPUT_ERRNOS:
        return False
    if err.filename is None:
        return True
    try:
        target, root = Path(os.fsdecode(err.filename)).resolve(), Path(folder).resolve()
    except (OSError, RuntimeError, ValueError, TypeError):
        return False
    return target == root or root in target.parents


def output_error(err: OSError, run_dir: Path, spec: str) -> Exception:
    """The exit-2 error of a run folder that cannot be written: the path, why, and what to do; the
    ``--resume`` command when ``run.json`` is there (the run stays resumable), else a new run."""
    from runtime.pipeline.folder import OutputError

    path = os.fsdecode(err.filename) if err.filename is not None else str(run_dir)
    why = err.strerror or str(err)
    then = (MSG_OUTPUT_RESUME.format(spec=spec, run=run_dir) if (Path(run_dir) / "run.json").is_file()
            else MSG_OUTPUT_AGAIN.format(run=run_dir))
    return OutputError(MSG_OUTPUT_FAILED.format(path=path, why=why, then=then))


def _drop_summary(folder: RunFolder) -> None:
    """A failed run has no summary: remove one written before a failing seal (unless a seal file
    already exists: then the folder is sealed and verify judges it)."""
    from runtime.pipeline.folder import SEAL_FILES

    if any((folder.path / f).exists() for f in SEAL_FILES):
        return
    (folder.path / SUMMARY).unlink(missing_ok=True)
    if SUMMARY in folder.run.get("artifacts", []):
        folder.run["artifacts"].remove(SUMMARY)


def _record_lock(run: dict[str, Any], run_dir: Path, spec_path: Path, lock: dict[str, Any], keys, store: Path) -> None:
    """The signed pre-registration (issue 16, runtime/locksign.py): copy the lock and its signature into
    the run folder (the manifest hashes them), record the signature's facts, and flag earlier locks of the
    same audit id that this lock does not descend from (task-store ledger, git history). The run is added
    to the ledger once the store is open (:func:`runtime.locksign.record_use`).

    Raises
    ------
    compiler.errors.LockError
        The lock's signature file cannot be read, or does not sign this lock (it changed after it was
        signed; exit 3).
    """
    import shutil

    from compiler.errors import LockError
    from compiler.lock import lock_path
    from runtime.keys import TSA_CRT, describe_person, load_certs
    from runtime.locksign import RUN_LOCK, RUN_LOCK_SIG, check_lock_signature, earlier_locks, sig_path
    from runtime.trusted_time import anchors_and_others, to_asn1

    lpath = lock_path(spec_path)
    sig = sig_path(lpath)
    if sig.is_file():
        try:
            record = json.loads(sig.read_text(encoding="utf-8"))
            if not isinstance(record, dict):
                raise ValueError("not a JSON object")
        except (OSError, UnicodeDecodeError, ValueError) as err:
            raise LockError(f"{sig}: the lock's signature file cannot be read ({err}); run `audit compile` to sign "
                            f"the lock again") from None
        certs = [to_asn1(c) for c in ([keys.pdf_cert, *keys.pdf_chain] if keys is not None else [])]
        if keys is not None and (keys.key_dir / TSA_CRT).is_file():
            certs += [to_asn1(c) for c in load_certs(keys.key_dir / TSA_CRT)]
        anchors, others = anchors_and_others(certs)
        problems, facts = check_lock_signature(lpath.read_bytes(), record, trusted_key=keys.public_key if keys else None,
                                               anchors=anchors, others=others)
        if not facts["intact"]:
            raise LockError(f"{lpath.name}: {'; '.join(problems)}; run `audit compile` to sign the lock again "
                            f"(or restore the lock that {sig.name} signed)")
        run["lock_signature"] = {"keyid": facts["keyid"], "signer": describe_person(record.get("signer") or {"name": "?"}),
                                 "time": facts["time"].strftime("%Y-%m-%d %H:%M:%S UTC") if facts["time"] else None,
                                 "tsa": facts["tsa"], "problems": problems}
        shutil.copyfile(sig, run_dir / RUN_LOCK_SIG)
        run["artifacts"] += [RUN_LOCK_SIG]
    shutil.copyfile(lpath, run_dir / RUN_LOCK)
    run["artifacts"] += [RUN_LOCK]
    run["lock_recreated"] = earlier_locks(lock, store_root=store, lock_path=lpath)
    for e in run["lock_recreated"]:
        print(f"warning: the lock was re-created: an earlier lock of audit {lock.get('audit')!r} (created "
              f"{e['created_at']}, known from {e['source']}) is not in its amendment chain; the report says so",
              file=sys.stderr)


def store_root(compiled: Any, store: Path | None = None) -> Path:
    """The task store of a spec: the operator's ``store`` (``--store``) when given, else
    ``execution.store`` relative to the spec's folder (validated to lie inside it, issue 41), default
    ``.audit-store/`` there (non-semantic: not hashed).

    Raises
    ------
    OutputError
        ``store`` is the spec's folder or one of its ancestors (the store ignores its whole folder in
        git: the spec, its lock and its data would drop out of the repository; exit 2).
    """
    if store is not None:
        from runtime.pipeline.folder import OutputError

        try:
            folder, target = compiled.loaded.folder.resolve(), Path(store).resolve()
        except (OSError, RuntimeError, ValueError) as err:
            raise OutputError(MSG_STORE_BAD.format(store=store, why=getattr(err, "strerror", None) or err)) from None
        if target == folder or target in folder.parents:
            raise OutputError(MSG_STORE_ABOVE.format(store=store))
        return Path(store)
    knob = compiled.loaded.spec.execution.store
    path = compiled.loaded.folder / (knob or DEFAULT_STORE)
    try:  # the spec names a folder inside its own; a symbolic link must not lead it out (issue 41)
        folder, target = compiled.loaded.folder.resolve(), path.resolve()
    except (OSError, RuntimeError) as err:
        from runtime.pipeline.folder import OutputError

        raise OutputError(MSG_STORE_LINK.format(store=path, target=f"nowhere ({err})")) from None
    if folder not in target.parents:
        from runtime.pipeline.folder import OutputError

        raise OutputError(MSG_STORE_LINK.format(store=path, target=target))
    return path


def _plan_ids(ctx: RunContext, *, system: str | None = None) -> list[str]:
    """Plan task ids a runtime task stands for: the design's tasks (generation), or one system's
    score tasks."""
    tasks = ctx.compiled.plan["tasks"]
    if system is None:
        return [t["id"] for t in tasks if t["kind"] not in ("score", "report", "seal")
                and not t["kind"].startswith("analyse")]
    return [t["id"] for t in tasks if t["kind"] == "score" and t["inputs"]["system"]["id"] == system]


def _generate(ctx: RunContext, design) -> None:
    """The design's candidates: from the store when this generation was finished before."""
    if not design.storable:
        design.generate(ctx)
        return
    tid, key = task_key("generate", design=design.id, plan_tasks=_plan_ids(ctx))
    stored = ctx.store.get(tid)
    if stored is not None:
        ctx.candidates = frame_from(stored["candidates"])
        design.restore(ctx)
        ctx.run["reused_tasks"].append(tid)
        return
    design.generate(ctx)
    ctx.store.put(tid, "generate", {"candidates": frame_bytes(ctx.candidates)}, key=key)
    ctx.run["computed_tasks"].append(tid)
    kill_point("generate")


def _run_stages(ctx: RunContext) -> None:
    """generate -> score -> rank -> families -> report; each stage's artifacts are written at once."""
    from compiler.designs import provided
    from runtime.designs import design_for

    r, folder, timings = ctx.resolved, ctx.folder, ctx.timings
    ctx.jobs = job_texts(ctx.compiled)
    design = design_for(r)
    folder.stage("generate")
    with stage_timer(timings, "generate"):
        _generate(ctx, design)
    folder.save()
    ctx.provides = provided(r)  # the declarations of the design and the system kinds (compiler.designs)
    folder.stage("score")
    artifacts: dict[str, Any] = {}
    try:
        with stage_timer(timings, "score"):
            ctx.scores = score_all(ctx, artifacts)
    finally:  # raw LLM answers are kept even when a later call fails
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


def score_all(ctx: RunContext, artifacts: dict[str, Any]) -> pd.DataFrame:
    """Score every candidate with every system.

    Returns
    -------
    pandas.DataFrame
        Paired designs: ``system, condition, replicate, job_id, cv_id, variant, score, is_true_match``.
        Unpaired designs: ``system, [condition,] job_id, cv_id, score`` (``condition`` when a system
        scores under prompt conditions).
    """
    from runtime.systems import JobInfo, LlmSettings, ScoreRequest, adapter_for

    r = ctx.resolved
    ex = ctx.compiled.loaded.spec.execution
    paired = "unpaired" not in ctx.provides
    llm = None
    if "llm_answers" in ctx.provides:
        from runtime.llm import response_cache

        llm = LlmSettings(cache=response_cache(ctx.compiled, ctx.store), concurrency=dict(ex.llm_concurrency),
                          retries=ex.llm_retries, timeout_s=ex.llm_timeout_s)
    if paired:
        resumes, variants = ctx.candidates, list(r["variants"]["table"])
    else:
        resumes = ctx.candidates[["job_id", "cv_id", "text"]].assign(variant=POPULATION_VARIANT,
                                                                       is_true_match=np.nan)
        variants = [POPULATION_VARIANT]
    job_info = {j["id"]: JobInfo(title=j["title"], family=j["family"]) for j in r["jobs"]}
    frames, own_conditions = [], False
    for sys_resolved in r["systems"]:
        request = ScoreRequest(jobs=ctx.jobs, resumes=resumes, variants=variants,
                               spec_folder=ctx.compiled.loaded.folder,
                               progress=ctx.progress.task, info=ctx.run["systems_info"], paired=paired,
                               seed=ctx.seed, job_info=job_info, llm=llm, artifacts=artifacts, store=ctx.store,
                               batches=score_batches(ctx, sys_resolved["id"], resumes),
                               accept_vendor_file=ctx.accept_vendor_file)
        scored = _score_one(ctx, adapter_for(sys_resolved["kind"])(sys_resolved), request)
        if "replicate" not in scored.columns:
            scored.insert(0, "replicate", 0)
        own_conditions |= "condition" in scored.columns  # LLM screeners score under prompt conditions
        if "condition" not in scored.columns:
            scored.insert(0, "condition", CONDITION_DEFAULT)
        scored.insert(0, "system", sys_resolved["id"])
        frames.append(scored)
    scores = pd.concat(frames, ignore_index=True)
    if paired:
        return scores
    cols = ["system", "condition", "job_id", "cv_id", "score"]
    if not own_conditions:
        cols.remove("condition")  # no system scores under prompt conditions: the column says nothing
    return scores[cols]


def _score_one(ctx: RunContext, adapter, request) -> pd.DataFrame:
    """One system's scores: from the task store when this scoring was finished before, else scored
    now and kept (with the adapter's diagnostics and extra files)."""
    sid = adapter.id
    request.plan_tasks = _plan_ids(ctx, system=sid)
    if not adapter.storable or ctx.store is None:
        return adapter.score(request)
    tid, key = task_key("score", system=sid, plan_tasks=request.plan_tasks, paired=request.paired)
    stored = ctx.store.get(tid)
    if stored is not None:
        request.info[sid] = json.loads(stored["info"])
        for name, data in stored.items():
            if name.startswith("artifact:"):
                request.artifacts[name.split(":", 1)[1]] = frame_from(data)
        ctx.run["reused_tasks"].append(tid)
        return frame_from(stored["scores"])
    before = set(request.artifacts)
    scored = adapter.score(request)
    outputs = {"scores": frame_bytes(scored), "info": json.dumps(request.info.get(sid), sort_keys=True).encode()}
    outputs.update({f"artifact:{n}": frame_bytes(request.artifacts[n]) for n in set(request.artifacts) - before})
    ctx.store.put(tid, "score", outputs, key=key)
    ctx.run["computed_tasks"].append(tid)
    kill_point(f"score:{sid}")
    return scored


MSG_BATCHES = ("job {job!r} has {n} base candidates, but the plan's score batches of system {system!r} cover "
               "{covered}; the generator and the plan disagree (a bug: please report it)")


def score_batches(ctx: RunContext, system_id: str, resumes: pd.DataFrame | None) -> list[Any]:
    """The plan's score batches of one system (:func:`compiler.plan.score_batches`), each with the base
    candidates at its positions in the job's generation order; [] for a system without batches.

    Raises
    ------
    RuntimeError
        The batches do not cover every base candidate of a job exactly once (a bug).
    """
    from runtime.systems import ScoreBatch

    tasks = [t for t in ctx.compiled.plan["tasks"] if t["kind"] == "score"
             and t["inputs"]["system"]["id"] == system_id and "batch" in t["inputs"]]
    if not tasks or resumes is None:
        return []
    order: dict[str, dict[str, None]] = {}
    for job, cv in zip(resumes["job_id"], resumes["cv_id"]):
        order.setdefault(job, {}).setdefault(cv, None)
    out, covered = [], {}
    for t in tasks:
        job = t["inputs"]["job"]["id"]
        lo, hi = t["inputs"]["batch"]["base_candidates"]
        cvs = tuple(list(order.get(job, {}))[lo:hi])
        covered[job] = covered.get(job, 0) + len(cvs)
        if cvs:
            out.append(ScoreBatch(t["id"], job, cvs))
    for job, cvs in order.items():
        if covered.get(job, 0) != len(cvs):
            raise RuntimeError(MSG_BATCHES.format(job=job, n=len(cvs), system=system_id, covered=covered.get(job, 0)))
    return out


def check_base_counts(scores: pd.DataFrame, k: dict[str, int]) -> None:
    """Raise :class:`InputDataError` when a job has fewer base candidates than the largest k."""
    family, kk = max(k.items(), key=lambda kv: kv[1])
    counts = scores.groupby(["system", "job_id"])["cv_id"].nunique()
    for (system, job), n in counts.items():
        if n < kk:
            raise InputDataError(MSG_K_TOO_SMALL.format(job=job, n=n, system=system, family=family, k=kk))
