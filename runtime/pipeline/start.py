"""The start of a run: compile the spec, check it against its lock, check the keys and the task store,
then open the run folder (a new one with its run record and the signed lock, or a killed or failed one
to resume). ``audit export --for-vendor`` starts the same way, without a run folder.

Everything here happens before any work, so what it refuses (an invalid spec, a missing extra, a lock
that no longer matches, a revoked certificate, a store above the spec, a run that cannot be resumed)
leaves nothing behind.
"""

from __future__ import annotations

import errno
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from compiler import Compiled, compile_spec
from compiler.errors import AuditError
from compiler.lock import check_lock, read_lock, utc_now
from runtime.pipeline.metadata import run_record
from runtime.pipeline.summary import SUMMARY
from runtime.progress import stage_timer
from runtime.provenance.locksign import engagement, record_lock
from runtime.run.folder import OutputError, RunFolder, new_run_dir, run_state
from runtime.store import DEFAULT_STORE

#: ``audit execute`` without ``--allow-exec`` on a spec whose systems run vendor code (issue 36 §1; exit 2).
MSG_EXEC_NOT_ALLOWED = ("{spec} runs vendor code on this machine, which `audit execute` does only with --allow-exec "
                        "(nothing was run):\n{systems}\nRead what these programs do; then run `audit execute "
                        "--allow-exec {spec}`")


@dataclass
class Locked:
    """A spec compiled and checked against its lock, and the run folder it writes (when it writes one).

    Attributes
    ----------
    compiled : compiler.Compiled
        The validated spec, its resolved form and its plan.
    lock : dict
        The lock it matches.
    shown : str
        The spec as messages name it.
    store_dir : pathlib.Path
        The task store (the operator's ``--store``, else the spec's).
    timings : dict of str to float
        Seconds per stage (``compile`` so far).
    folder : RunFolder or None
        The run folder, held (its ``.run.lock``) and with ``run.json`` written; None for an export.
    git : dict or None
        The spec's git facts (the earlier run's, when resumed).
    """

    compiled: Compiled
    lock: dict[str, Any]
    shown: str
    store_dir: Path
    timings: dict[str, float] = field(default_factory=dict)
    folder: RunFolder | None = None
    git: dict[str, Any] | None = None


class ExecNotAllowed(AuditError):
    """A system of the spec runs vendor code (``command``, ``python``) and ``--allow-exec`` was not given
    (exit 2, before any work)."""

    exit_code = 2


def exec_systems(resolved_systems: list[dict[str, Any]]) -> list[str]:
    """One line per resolved system whose kind runs vendor code: ``system 'id' (kind): <program and sha256>``."""
    from compiler.systems import kinds_of

    return [f"  system {s['id']!r} ({s['kind']}): {k.program(s)}"
            for s, k in zip(resolved_systems, kinds_of(resolved_systems)) if getattr(k, "runs_code", False)]


def check_allow_exec(compiled: Compiled, allow_exec: bool) -> None:
    """Refuse (exit 2) a spec whose systems run vendor code unless ``allow_exec`` (issue 36 §1).

    Raises
    ------
    ExecNotAllowed
        Naming each such system, its program and sha256 (or package version), and the flag.
    """
    lines = exec_systems(compiled.resolved["systems"])
    if lines and not allow_exec:
        raise ExecNotAllowed(MSG_EXEC_NOT_ALLOWED.format(spec=compiled.loaded.shown, systems="\n".join(lines)))


def open_run(spec_path: Path, *, store: Path | None = None, keys=None, tsa: str | None = None,
             out: Path | None = None, resume: Path | None = None, folder: bool = True,
             stage: str = "execute", allow_exec: bool = False) -> Locked:
    """Compile ``spec_path``, check it against its lock, and open its run folder.

    Parameters
    ----------
    spec_path : pathlib.Path
        The spec.
    store : pathlib.Path, optional
        The operator's ``--store`` (:func:`store_root`).
    keys : runtime.provenance.keys.SigningKeys, optional
        The signing keys: a revoked certificate is refused here (issue 27 §2); with ``tsa`` a status
        that cannot be obtained is refused too.
    out, resume : pathlib.Path, optional
        The operator's ``--out``; a run folder to complete (``--resume``).
    folder : bool
        False for ``audit export``: compile and lock checks only, no run folder.
    stage : str
        Which modules of the extras are checked before any work (``"execute"``: every module the run imports).
    allow_exec : bool
        ``audit execute --allow-exec``: a run folder (``folder``) of a spec whose systems run vendor code is
        refused without it (:func:`check_allow_exec`), before any work.

    Raises
    ------
    compiler.errors.SpecError, compiler.systems.MissingExtra
        The spec is invalid, or an extra it needs is missing (exit 2).
    compiler.errors.LockError
        No lock, the spec no longer matches it, or ``resume`` was run under another lock (exit 3).
    OutputError
        ``resume`` names a folder that cannot be resumed, ``store`` is the spec's folder or above it,
        or the run folder cannot be written (exit 2).
    ExecNotAllowed
        A system runs vendor code and ``allow_exec`` is False (exit 2, before any work).
    """
    from compiler.extras import check_extras

    timings: dict[str, float] = {}
    with stage_timer(timings, "compile"):
        compiled = compile_spec(spec_path)
        check_extras(compiled.loaded, stage, compiled.parts)  # every module the run imports, before any work
        if folder:  # a run scores: vendor code runs only with --allow-exec (issue 36 §1)
            check_allow_exec(compiled, allow_exec)
        store_dir = store_root(compiled, store)  # an operator's --store above the spec: refused before any write
        if keys is not None:  # revoked: refused before any work; the status is recorded (issue 27 §2)
            from runtime.provenance.revocation import check_keys

            check_keys(keys, what="audit execute", required=bool(tsa))
        shown = compiled.loaded.shown  # the spec as messages name it
        lock = read_lock(spec_path, shown)
        check_lock(lock, compiled.resolved, shown)
    locked = Locked(compiled, lock, shown, store_dir, timings)
    if folder:
        _open_folder(locked, spec_path, keys=keys, tsa=tsa, out=out, resume=resume, allow_exec=allow_exec)
    return locked


def _open_folder(locked: Locked, spec_path: Path, *, keys, tsa, out, resume, allow_exec: bool = False) -> None:
    """Resume ``resume`` (checked: killed or failed, same lock) or make a new run folder with its run
    record and the signed lock; hold it and write ``run.json``."""
    from compiler.errors import LockError
    from compiler.lock import tool_version
    from runtime.provenance.sign import git_info, reproduce_commands, spec_inputs

    compiled, lock, shown, timings = locked.compiled, locked.lock, locked.shown, locked.timings
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
        run = {**old, "timings": timings, "artifacts": [], "status": "running", "stage": None, "allow_exec": allow_exec,
               "resumed": [*(old.get("resumed") or []), {"at": utc_now(), "previous_status": state,
                                                          "stage": old.get("stage")}]}
        run.pop("error", None)
        run["counts"] = dict(compiled.plan["counts"])
        run["systems_info"] = {}
    else:
        knob = compiled.loaded.spec.execution.out
        root = out or (compiled.loaded.folder / knob if knob else Path("reports"))
        # before the run folder exists; only tracked changes and the spec's own inputs count, never run
        # folders or the task store (issue 37 §3)
        git = git_info(spec_path, spec_inputs(compiled.resolved), exclude=(root, locked.store_dir))
        # recorded paths never name the machine's folders (issue 14): the spec as the repository
        # knows it, else its file name; the output root and the store relative to the spec's folder
        recorded_as = git["spec_path"] if git else Path(spec_path).name
        generated_at = utc_now()
        run_id, run_dir = new_run_dir(root, compiled.resolved["audit"], generated_at)
        run = run_record(compiled=compiled, lock=lock, run_id=run_id, shown=recorded_as, generated_at=generated_at,
                         timings=timings, root=root, git=git, operator_out=out is not None, allow_exec=allow_exec,
                         reproduce=reproduce_commands(spec_shown=recorded_as, git=git, tool_version=tool_version(),
                                                      allow_exec=bool(exec_systems(compiled.resolved["systems"]))))
    run["reused_tasks"], run["computed_tasks"] = [], []
    folder = RunFolder(run_dir, run, keys, tsa=tsa)
    try:
        if resume is None:
            record_lock(run, run_dir, spec_path, lock, keys, locked.store_dir)  # the signed pre-registration
            run["engagement"] = history = engagement(lock, store_root=locked.store_dir, run_id=run["run_id"])
            earlier = history["this_lock"]["runs"]
            if earlier:  # not an error: said on stderr and on the report's first page (issue 37 §3)
                print(MSG_SEALED_BEFORE.format(n=len(earlier), ids=", ".join(r["run_id"] for r in earlier),
                                               number=history["this_lock"]["run_number"]), file=sys.stderr)
        folder.hold()
        folder.save()
    except OSError as err:
        if output_failure(err, run_dir):
            raise output_error(err, run_dir, shown) from None
        raise
    locked.folder, locked.git = folder, git


#: Said on stderr when the lock already has sealed runs (issue 37 §3); not an error.
MSG_SEALED_BEFORE = ("note: this lock already has sealed run(s) ({n}: {ids}); this is run {number} under this lock, "
                     "and its report says so on the first page")


#: ``run.json`` ``store`` of an operator's ``--store`` outside the spec's folder (issue 41).
STORE_BY_OPERATOR = "operator's --store"


MSG_RESUME_MISSING = "{run}: no readable run.json; only a run folder written by `audit execute` can be resumed"


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
    path = os.fsdecode(err.filename) if err.filename is not None else str(run_dir)
    why = err.strerror or str(err)
    then = (MSG_OUTPUT_RESUME.format(spec=spec, run=run_dir) if (Path(run_dir) / "run.json").is_file()
            else MSG_OUTPUT_AGAIN.format(run=run_dir))
    return OutputError(MSG_OUTPUT_FAILED.format(path=path, why=why, then=then))


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
        raise OutputError(MSG_STORE_LINK.format(store=path, target=f"nowhere ({err})")) from None
    if folder not in target.parents:
        raise OutputError(MSG_STORE_LINK.format(store=path, target=target))
    return path
