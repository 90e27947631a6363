"""Reading a file that someone else wrote: only a regular file, and never more than a cap (issue 41).

A spec, a vendor's score CSV, a prompt or a run's ``run.json`` may name a FIFO (``open`` blocks
forever), a device (``/dev/zero`` reads until memory runs out), a socket, a directory or a symlink
loop. :func:`read_regular` stats first, refuses anything but a regular file without opening it, opens
with ``O_NONBLOCK`` (so that a file swapped for a FIFO between the stat and the open cannot block),
checks the opened descriptor again and reads at most ``cap + 1`` bytes: the cap applies to what is read,
not to ``st_size`` alone (a file that grows, or a ``/proc`` file whose size reads 0). Standard library
only: this module is on the CLI's start path.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path


class FileProblem(OSError):
    """A file cannot be read safely; callers turn it into a located error (exit 2, verify 6).

    A subclass of :class:`OSError`, so that a caller that already reports an unreadable file
    (``except OSError``) reports this one too; ``str(err)`` is ``"<shown>: <reason>"``.

    Attributes
    ----------
    shown
        The path as messages show it.
    reason
        What is wrong and what to do, without the path (for an ``Issue``'s message).
    kind
        ``"missing"``, ``"loop"``, ``"not_regular"``, ``"too_large"`` or ``"unreadable"``.
    size
        For ``"too_large"``: the bytes known to be there (at least ``cap + 1``); else None.
    """

    def __init__(self, shown: str, reason: str, *, kind: str = "unreadable", size: int | None = None):
        self.shown, self.reason, self.kind, self.size = shown, reason, kind, size
        super().__init__(f"{shown}: {reason}")

    def __reduce__(self):  # picklable (a worker process may raise it): OSError's default would pass one arg
        return (self.__class__, (self.shown, self.reason), {"kind": self.kind, "size": self.size})


MSG_LOOP = "the path is a symbolic link loop (a link that points, directly or not, to itself); name the file itself"
MSG_MISSING = "no such file"
MSG_NOT_REGULAR = "it is {what}, not a regular file; only a regular file is read (a pipe or a device is never opened)"
MSG_TOO_LARGE = "the file is larger than {cap:,} bytes, the most that is read"
MSG_UNREADABLE = "cannot read the file: {err}"


def kind_of(mode: int) -> str:
    """Words for a file type from ``st_mode``: ``"a directory"``, ``"a FIFO (named pipe)"``, ..."""
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "a special file"


def _os_problem(shown: str, err: OSError) -> FileProblem:
    if err.errno == errno.ELOOP:
        return FileProblem(shown, MSG_LOOP, kind="loop")
    if err.errno in (errno.ENOENT, errno.ENOTDIR):
        return FileProblem(shown, MSG_MISSING, kind="missing")
    return FileProblem(shown, MSG_UNREADABLE.format(err=err.strerror or err), kind="unreadable")


def check_regular(path: Path | str, *, shown: str | None = None) -> os.stat_result:
    """``os.stat(path)`` (symlinks followed) when ``path`` is a regular file; else :class:`FileProblem`.

    Nothing is opened. Use before handing a path to a library that opens it itself.
    """
    shown = str(path) if shown is None else shown
    try:
        st = os.stat(path)
    except OSError as err:
        raise _os_problem(shown, err) from None
    except ValueError as err:  # an embedded NUL in the path
        raise FileProblem(shown, MSG_UNREADABLE.format(err=err), kind="unreadable") from None
    if not stat.S_ISREG(st.st_mode):
        raise FileProblem(shown, MSG_NOT_REGULAR.format(what=kind_of(st.st_mode)), kind="not_regular")
    return st


def is_regular(path: Path | str) -> bool:
    """Whether ``path`` is a regular file (symlinks followed); never opens it, never raises."""
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except (OSError, ValueError):
        return False


def read_regular(path: Path | str, *, cap: int, shown: str | None = None) -> bytes:
    """The bytes of ``path`` if it is a regular file of at most ``cap`` bytes.

    Parameters
    ----------
    path
        The file (symlinks are followed; a loop is named).
    cap
        Most bytes accepted; ``cap + 1`` bytes at most are read, whatever ``st_size`` says.
    shown
        The path as messages show it (default: ``str(path)``).

    Raises
    ------
    FileProblem
        Missing, a symlink loop, not a regular file (FIFO, device, socket, directory; never opened),
        larger than ``cap`` (``kind="too_large"``, ``size`` at least ``cap + 1``), or an ``OSError``.
    """
    shown = str(path) if shown is None else shown
    st = check_regular(path, shown=shown)
    if st.st_size > cap:
        raise FileProblem(shown, MSG_TOO_LARGE.format(cap=cap), kind="too_large", size=st.st_size)
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except OSError as err:
        raise _os_problem(shown, err) from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):  # swapped between the stat and the open
            raise FileProblem(shown, MSG_NOT_REGULAR.format(what=kind_of(st.st_mode)), kind="not_regular")
        chunks: list[bytes] = []
        left = cap + 1
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
    except OSError as err:
        raise _os_problem(shown, err) from None
    finally:
        os.close(fd)
    data = b"".join(chunks)
    if len(data) > cap:
        raise FileProblem(shown, MSG_TOO_LARGE.format(cap=cap), kind="too_large", size=max(len(data), st.st_size))
    return data


#: Largest text file a spec names and the compiler reads whole (job descriptions, prompt templates,
#: reference resumes; bytes): such texts are pages, not books, and their text enters the resolved spec.
MAX_TEXT_BYTES = 4 * 1024 * 1024
#: Largest JSON artifact read (lock, plan, run record, manifest; bytes).
MAX_JSON_BYTES = 256 * 1024 * 1024


def read_regular_text(path: Path | str, *, cap: int = MAX_TEXT_BYTES, shown: str | None = None) -> str:
    """:func:`read_regular` decoded as UTF-8 (a leading BOM kept, as ``Path.read_text`` keeps it).

    Raises
    ------
    FileProblem
        As :func:`read_regular`.
    UnicodeDecodeError
        The bytes are not UTF-8.
    """
    return read_regular(path, cap=cap, shown=shown).decode("utf-8")
