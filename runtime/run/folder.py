"""The run folder: ``<root>/<audit>/<run id>/`` and its ``run.json`` record.

Every stage writes its artifacts here as soon as it ends, so an error in a later stage (a bad score
CSV, a renderer failure) never loses what was already computed. Every file is written atomically (a
temporary file, then a rename), so a killed run leaves no half-written file, and ``run.json`` always
parses: it is rewritten at each stage change, says ``"status": "failed"`` when the run stopped on an
error, and a run whose process died (SIGKILL, power loss) reads as ``interrupted``: while a run is
running its process holds an exclusive lock on ``.run.lock`` in the folder, which the kernel releases
when the process dies (:func:`run_state`).
"""

from __future__ import annotations

import fcntl
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from compiler.artifacts import ArtifactError, ArtifactVersionError, dump_run_record, read_run_record
from compiler.errors import AuditError
from runtime.store import atomic_write

#: The files that seal a run (runtime.provenance.sign): once either exists the run is sealed and never resumed,
#: even if one of them was later removed (that is tampering for verify to report, not an interruption).
SEAL_FILES = ("manifest.json", "manifest.dsse.json")
#: The lock file a running run holds (removed when the run ends; never sealed into the manifest).
RUN_LOCK = ".run.lock"

MSG_OUT = "cannot create the run folder under {root}: {err}"
MSG_BUSY = ("the run {run} is still running (a live process holds its lock, {run}/.run.lock); wait for it "
            "or stop it first")


class OutputError(AuditError):
    """The output root cannot be written (exit 2)."""


def new_run_dir(root: Path, audit: str, when: str) -> tuple[str, Path]:
    """Create ``root/audit/<UTC stamp>`` (suffix -2, -3... if taken); return (run id, folder).

    Raises
    ------
    OutputError
        When the folder cannot be created (exit 2).
    """
    stamp = when.replace("-", "").replace(":", "")
    base = root / audit
    run_id, n = stamp, 1
    if base.is_symlink():  # a link planted in the output root would take the run elsewhere (issue 41)
        raise OutputError(MSG_OUT.format(root=root, err=f"{base} is a symbolic link (to {os.readlink(base)}); "
                                                        "a run folder is never written through a link: remove it"))
    try:
        base.mkdir(parents=True, exist_ok=True)
        while True:
            try:
                (base / run_id).mkdir()
                return run_id, base / run_id
            except FileExistsError:
                n += 1
                run_id = f"{stamp}-{n}"
    except OSError as err:
        raise OutputError(MSG_OUT.format(root=root, err=err)) from None


@dataclass
class RunFolder:
    """The run folder and its ``run.json`` record, rewritten after every stage.

    Attributes
    ----------
    path : pathlib.Path
        The run folder.
    run : dict
        The run record written as ``run.json``; ``run["artifacts"]`` lists the files written.
    keys : runtime.provenance.keys.SigningKeys or None
        Signing keys; None for an unsigned run.
    tsa : str or None
        The RFC 3161 time-stamping authority the seal will use (None: PAdES B-B).
    """

    path: Path
    run: dict[str, Any]
    keys: Any = None
    tsa: str | None = None
    _lock_fd: int | None = field(default=None, repr=False)

    def save(self) -> None:
        """Write ``run.json`` atomically, checked against its model (:class:`compiler.artifacts.RunRecord`)."""
        atomic_write(self.path / "run.json",
                     (json.dumps(dump_run_record(self.run), indent=2, ensure_ascii=False) + "\n").encode("utf-8"))

    def stage(self, name: str) -> None:
        """Record the stage in progress in ``run.json`` (``stage``)."""
        self.run["stage"] = name
        self.save()

    def write_bytes(self, name: str, data: bytes) -> None:
        """Write a file atomically and list it once in ``run["artifacts"]``."""
        atomic_write(self.path / name, data)
        if name not in self.run["artifacts"]:
            self.run["artifacts"].append(name)

    def write_csv(self, name: str, frame: pd.DataFrame) -> None:
        """Write ``frame`` as ``name`` (no index), every text cell safe for a spreadsheet
        (:func:`runtime.csvsafe.csv_bytes`, issue 41), and list it once in ``run["artifacts"]``."""
        from runtime.csvsafe import csv_bytes

        self.write_bytes(name, csv_bytes(frame))

    def write_text(self, name: str, text: str) -> None:
        """Write a UTF-8 text file and list it once in ``run["artifacts"]``."""
        self.write_bytes(name, text.encode("utf-8"))

    def hold(self) -> None:
        """Take the run's lock (``.run.lock``) for this process; released by :meth:`release` or death.

        Raises
        ------
        OutputError
            When another live process holds it (the run is still running).
        """
        fd = os.open(self.path / RUN_LOCK, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise OutputError(MSG_BUSY.format(run=self.path)) from None
        self._lock_fd = fd
        self.run["pid"] = os.getpid()

    def release(self) -> None:
        """Drop the run's lock and its file (before the manifest lists the folder's files)."""
        if self._lock_fd is not None:
            (self.path / RUN_LOCK).unlink(missing_ok=True)
            os.close(self._lock_fd)
            self._lock_fd = None

    def listed(self, name: str) -> None:
        """List a file another writer put into the folder (e.g. the PDF renderer)."""
        if name not in self.run["artifacts"]:
            self.run["artifacts"].append(name)


def run_state(run_dir: Path) -> tuple[str, dict[str, Any] | None]:
    """The state of a run folder: ``(status, run record)``.

    ``status`` is ``run.json``'s status, except that a run recorded as ``running`` whose lock no
    live process holds is ``interrupted`` (its process died), as is a ``done`` run without its
    ``manifest.json`` (killed while sealing); ``missing`` when there is no readable ``run.json``.

    Raises
    ------
    compiler.artifacts.ArtifactVersionError
        When ``run.json`` has a schema major version this tool does not read.
    """
    try:
        run = read_run_record(Path(run_dir) / "run.json").dump()
    except ArtifactVersionError:
        raise  # a run.json of another major version: say so, do not call it missing
    except ArtifactError:
        return "missing", None
    status = run.get("status", "missing")
    if status == "running" and not _held(Path(run_dir) / RUN_LOCK):
        status = "interrupted"
    elif status == "done" and not any((Path(run_dir) / f).exists() for f in SEAL_FILES):
        status = "interrupted"  # killed after the last run.json, before any seal file was written
    return status, run


def _held(lock: Path) -> bool:
    """Whether a live process holds the exclusive lock on ``lock``."""
    from compiler.files import is_regular

    if not is_regular(lock):  # absent; a FIFO or device is never opened (issue 41: status must not hang)
        return False
    fd = os.open(lock, os.O_RDONLY | os.O_NONBLOCK)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    else:
        fcntl.flock(fd, fcntl.LOCK_UN)
        return False
    finally:
        os.close(fd)
