"""What every check of :mod:`runtime.provenance.verify` shares: the :class:`Report` it fills, the file-kind
test that never opens a file, UTC times, and the capture of the signature libraries' logs."""

from __future__ import annotations

import contextlib
import datetime as dt
import logging
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass
class Failure:
    """One failed check: the file it concerns (relative to the verified folder) and why."""

    file: str
    reason: str

    def __str__(self) -> str:
        return f"{self.file}: {self.reason}"


@dataclass
class Report:
    """Outcome of a verification: ``ok`` when no check failed; ``notes`` are what was checked."""

    failures: list[Failure] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    manifest: dict[str, Any] | None = None
    unpinned: list[str] = field(default_factory=list)  # key material taken from the checked files themselves
    #: The seal (a run's manifest key; a lone PDF's sealing signature) chains to a pin (issue 27).
    seal_pinned: bool = False
    #: What was verified against what: the end of ``audit verify``'s last line.
    summary: str = ""
    #: One dict per valid PDF signature, in signing order: field, name, role, organisation, signed_at
    #: (UTC), time_source ("trusted timestamp" or "signer's clock"), tsa (the timestamp's authority), level,
    #: pinned (its certificate chains to a pinned certificate) and, when not, pin_reason.
    signers: list[dict[str, Any]] = field(default_factory=list)
    #: Diagnostics of the signature libraries (pyHanko, pyhanko-certvalidator), shown with --verbose.
    details: list[str] = field(default_factory=list)
    #: Key ids of the countersignatures of manifest.dsse.json that verified (``audit sign``).
    dsse_countersigners: list[str] = field(default_factory=list)
    #: Byte length of report.pdf as sealed, when later revisions (countersignatures) follow it.
    sealed_pdf_bytes: int | None = None
    #: The trusted time of the seal (the sealing envelope signature's timestamp), when there is one.
    sealed_at: dt.datetime | None = None

    @property
    def ok(self) -> bool:
        return not self.failures

    def fail(self, file: str, reason: str) -> None:
        self.failures.append(Failure(file, reason))


def _regular(path: Path) -> bool:
    """``path`` is a regular file, judged without following a symbolic link and without opening it (a
    FIFO in a run folder must never be opened: it would block)."""
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except OSError:
        return False


def _utc(t: dt.datetime | None) -> dt.datetime | None:
    if t is None:
        return None
    return t.replace(tzinfo=dt.timezone.utc) if t.tzinfo is None else t.astimezone(dt.timezone.utc)


def _when(t: dt.datetime | None) -> str:
    return t.strftime("%Y-%m-%d %H:%M:%S UTC") if t else "?"


@contextlib.contextmanager
def library_logs(report: Report):
    """Send the signature libraries' log records (pyHanko prints tracebacks on a damaged file) to
    ``report.details`` instead of stderr; ``audit verify --verbose`` prints them."""
    class _Collect(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            text = record.getMessage()
            if record.exc_info and record.exc_info[1] is not None:
                text += f" ({type(record.exc_info[1]).__name__}: {record.exc_info[1]})"
            report.details.append(f"{record.name}: {text}")

    handler = _Collect(level=logging.DEBUG)
    loggers = [logging.getLogger(n) for n in ("pyhanko", "pyhanko_certvalidator")]
    saved = [(lg.propagate, lg.level) for lg in loggers]
    for lg in loggers:
        lg.addHandler(handler)
        lg.propagate = False
        lg.setLevel(logging.INFO)
    try:
        yield
    finally:
        for lg, (prop, level) in zip(loggers, saved):
            lg.removeHandler(handler)
            lg.propagate, lg.level = prop, level
