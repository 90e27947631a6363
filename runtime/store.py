"""The content-addressed task store: finished tasks' outputs, reused by ``--resume`` and warm re-runs.

Layout under the store root (default ``.audit-store/`` in the spec's folder; ``execution.store``
moves it; git-ignored)::

    objects/<sha256[:2]>/<sha256>   one blob per distinct output (its bytes)
    tasks/<task id>.json            {"task", "kind", "created_at", "key", "outputs": {name: {sha256, bytes}}}

A task id is the digest of everything its outputs depend on (:func:`task_key`): the plan's task ids
(which hash the resolved spec: seed, model fingerprints, files), the settings that change bytes
(e.g. the encoder batch size), the installed package versions and a digest of this tool's source
code, so a new release or a local edit never reuses an output computed by other code.

Writes are atomic (a temporary file in the same folder, ``fsync``, then ``os.replace``): a killed
process leaves either the whole blob or nothing. The task record is written after its blobs, so a
record never names a missing blob. Every blob is checked against its sha256 on read; a task with a
missing or changed blob is treated as absent (and recomputed), never reused.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import errno
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import pandas as pd

from compiler.errors import AuditError
from compiler.files import MAX_JSON_BYTES, read_regular_text
from compiler.hashing import digest

DEFAULT_STORE = ".audit-store"
MSG_STORE_WRITE = ("cannot write the task store {root}: {err}; set execution.store to a writable folder "
                   "(relative to the spec's folder)")


class StoreError(AuditError):
    """The task store cannot be written (exit 2)."""


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _temp_beside(path: Path) -> tuple[int, str]:
    """A new temporary file beside ``path`` (``.NAME.RANDOM.tmp``), opened for writing with mode 0666 less
    the process's umask, as ``open()`` makes a file: 0644 under umask 022 (issue 37 §4). ``tempfile.mkstemp``
    makes 0600 whatever the umask, so a run folder's files could not be read from a shared folder or by an
    upload tool, unlike the files copied into it; it takes no mode, hence this function."""
    import secrets

    for _ in range(100):
        tmp = str(path.parent / f".{path.name}.{secrets.token_hex(6)}.tmp")
        try:
            return os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o666), tmp
        except FileExistsError:
            continue
    raise FileExistsError(errno.EEXIST, "no free temporary name", str(path))


def atomic_write(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` atomically: a temporary file beside it (mode 0666 less the umask), fsync,
    rename over.

    Raises
    ------
    OSError
        As the system reports it (disk full, read-only, permission); the temporary file is removed and
        the error names ``path`` when the failing call named no file (issue 41).
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = _temp_beside(path)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException as err:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        if isinstance(err, OSError) and err.filename is None:  # a write that filled the disk names no file
            err.filename = str(path)
        raise


@lru_cache(maxsize=1)
def code_digest() -> str:
    """sha256 over this tool's source files (``compiler/`` and ``runtime/``: .py, templates, data),
    so a store entry is never reused by other code."""
    import compiler
    import runtime

    h = hashlib.sha256()
    for pkg in (compiler, runtime):
        root = Path(pkg.__file__).parent
        for p in sorted(root.rglob("*")):
            if p.is_file() and "__pycache__" not in p.parts and p.suffix not in (".pyc",):
                h.update(p.relative_to(root.parent).as_posix().encode())
                h.update(hashlib.sha256(p.read_bytes()).digest())
    return h.hexdigest()


@lru_cache(maxsize=1)
def _versions() -> tuple[tuple[str, str], ...]:
    """The installed package versions, read once per process (a key is built per encoder batch)."""
    from compiler.lock import package_versions

    return tuple(package_versions().items())


def task_key(kind: str, **inputs: Any) -> tuple[str, dict[str, Any]]:
    """(task id, key) of a runtime task: ``kind`` plus JSON inputs, the package versions and the
    tool's code digest. The id is ``<kind>-<first 20 hex digits of the key's sha256>``."""
    key = {"kind": kind, "inputs": inputs, "versions": dict(_versions()), "code": code_digest()}
    return f"{kind}-{digest(key)['digest'][:20]}", key


def frame_bytes(frame: pd.DataFrame) -> bytes:
    """A frame as Parquet bytes (exact dtypes and float64 bits round-trip)."""
    buf = io.BytesIO()
    frame.to_parquet(buf, index=False)
    return buf.getvalue()


def frame_from(data: bytes) -> pd.DataFrame:
    return pd.read_parquet(io.BytesIO(data))


@dataclass
class TaskStore:
    """A content-addressed store of finished tasks' outputs on local disk.

    Attributes
    ----------
    root : pathlib.Path
        The store's folder (created on first write).
    """

    root: Path

    def _blob(self, sha: str) -> Path:
        return self.root / "objects" / sha[:2] / sha

    def _record(self, task_id: str) -> Path:
        return self.root / "tasks" / f"{task_id}.json"

    def put(self, task_id: str, kind: str, outputs: dict[str, bytes], *, key: dict[str, Any] | None = None,
            refs: list[str] | None = None) -> None:
        """Store a finished task's outputs (name -> bytes), blobs first, then the task record.

        ``refs`` names the plan tasks the entry serves (``audit gc`` keeps it while a lock refers to
        one of them) when they are not part of its key.
        """
        from compiler.lock import utc_now

        try:
            self._ignore_in_git()
            listed = {}
            for name, data in outputs.items():
                sha = hashlib.sha256(data).hexdigest()
                blob = self._blob(sha)
                if not (blob.exists() and _sha(blob) == sha):  # absent, or damaged: (re)write it
                    atomic_write(blob, data)
                listed[name] = {"sha256": sha, "bytes": len(data)}
            record = {"task": task_id, "kind": kind, "created_at": utc_now(), "key": key, "refs": refs or [],
                      "outputs": listed}
            atomic_write(self._record(task_id), (json.dumps(record, indent=1) + "\n").encode())
        except OSError as err:
            raise StoreError(MSG_STORE_WRITE.format(root=self.root, err=err)) from None

    def append_line(self, name: str, line: str) -> None:
        """Append one line to the store's file ``name`` (a ledger such as ``locks.jsonl``).

        Raises
        ------
        StoreError
            The store cannot be written (the same message as :meth:`put`).
        """
        try:
            self._ignore_in_git()
            with open(self.root / name, "a", encoding="utf-8") as fh:
                fh.write(line.rstrip("\n") + "\n")
        except OSError as err:
            raise StoreError(MSG_STORE_WRITE.format(root=self.root, err=err)) from None

    def _ignore_in_git(self) -> None:
        """A ``.gitignore`` of ``*`` in the store's root: the store never makes a repository dirty."""
        ignore = self.root / ".gitignore"
        if not ignore.exists():
            atomic_write(ignore, b"# the audit-compiler task store: local cache, never committed\n*\n")

    def get(self, task_id: str) -> dict[str, bytes] | None:
        """The task's outputs, each checked against its sha256; None when absent, partial or changed."""
        from compiler.files import MAX_JSON_BYTES, read_regular

        try:  # only regular files, never more than recorded (issue 41: a FIFO must not hang a run)
            record = json.loads(read_regular(self._record(task_id), cap=MAX_JSON_BYTES).decode("utf-8"))
            out = {}
            for name, meta in record["outputs"].items():
                data = read_regular(self._blob(meta["sha256"]), cap=int(meta["bytes"]))
                if hashlib.sha256(data).hexdigest() != meta["sha256"]:
                    return None
                out[name] = data
            return out
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def tasks(self) -> list[dict[str, Any]]:
        """Every readable task record."""
        out = []
        for p in sorted((self.root / "tasks").glob("*.json")):
            try:
                out.append(json.loads(read_regular_text(p, cap=MAX_JSON_BYTES)))  # never a FIFO (issue 41)
            except (OSError, ValueError):
                continue
        return out

    def remove(self, task_ids: set[str]) -> tuple[int, int]:
        """Remove the given task records and every blob no remaining record names; (tasks, blobs) removed."""
        keep: set[str] = set()
        removed_tasks = 0
        for rec in self.tasks():
            if rec.get("task") in task_ids:
                self._record(rec["task"]).unlink(missing_ok=True)
                removed_tasks += 1
            else:
                keep |= {m["sha256"] for m in rec.get("outputs", {}).values()}
        removed_blobs = 0
        for blob in (self.root / "objects").glob("*/*"):
            if blob.is_file() and blob.name not in keep:
                blob.unlink()
                removed_blobs += 1
        return removed_tasks, removed_blobs


def plan_refs(record: dict[str, Any]) -> set[str]:
    """The plan task ids a store entry serves (its key's ``plan_tasks`` and its ``refs``)."""
    inputs = (record.get("key") or {}).get("inputs") or {}
    return set(inputs.get("plan_tasks") or []) | set(record.get("refs") or [])


def referenced_plan_ids(locks: list[Path]) -> set[str]:
    """Every plan task id of the given lock files (the plan re-expanded from each lock's resolved
    spec, and from each amendment's superseded spec); unreadable locks are skipped."""
    from compiler.plan import expand

    out: set[str] = set()
    for path in locks:
        try:
            lock = json.loads(read_regular_text(path, cap=MAX_JSON_BYTES))
            specs = [lock["resolved_spec"], *[a["previous"]["resolved_spec"] for a in lock.get("amendments") or []
                                              if (a.get("previous") or {}).get("resolved_spec")]]
        except (OSError, ValueError, KeyError, TypeError):
            continue
        for resolved in specs:
            try:
                out |= {t["id"] for t in expand(resolved)["tasks"]}
            except Exception:  # noqa: BLE001 - a lock of an older layout: nothing it can keep
                continue
    return out
