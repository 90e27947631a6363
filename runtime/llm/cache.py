"""LLM answers in the task store (:mod:`runtime.store`), one entry per request.

An answer's entry id is ``llm-<sha256>`` of the RFC 8785 canonical JSON of everything that determines
the answer: model, api_base, the full messages, every sampling parameter (temperature, max_tokens,
response_format, seed), the replicate index and the attempt number (so replicates and retries of an
invalid answer are distinct entries). The API key is not part of it and is never written; neither
are this tool's version nor its code (an answer depends on the request only). Each answer is stored
as soon as it arrives, atomically, so a run stopped half way (server down, Ctrl-C, SIGKILL) keeps
every call already made; a warm re-run makes zero calls. Each entry names the plan tasks it serves
(``refs``), so ``audit gc`` keeps it while a lock refers to one of them.

Releases before methods version 2 kept answers in an SQLite file (``execution.llm_cache``, default
``.audit-cache/llm.sqlite``); :class:`ResponseCache` imports such a file into the store once.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

from compiler.hashing import digest

#: The store entries' kind (and id prefix).
KIND = "llm"


def request_key(request: dict[str, Any]) -> str:
    """sha256 hex of the canonical JSON of a request record (see the module docstring)."""
    return digest(request)["digest"]


class ResponseCache:
    """``get(request)`` / ``put(request, text, usage)`` over a :class:`~runtime.store.TaskStore`.

    Parameters
    ----------
    store : runtime.store.TaskStore
        Where the answers are kept.
    refs : list of str, optional
        The plan task ids an answer serves when :meth:`put` is not told (``audit gc`` keeps it while a
        lock refers to one of them).
    legacy : pathlib.Path, optional
        An SQLite response cache of an earlier release, imported into the store when it exists.
    """

    def __init__(self, store, *, refs: list[str] | None = None, legacy: Path | None = None):
        self.store = store
        self.path = store.root  # named in messages ("every answer received is in ...")
        self.refs = list(refs or [])
        self.imported = 0
        if legacy is not None and Path(legacy).is_file():
            self.imported = self._import(Path(legacy))

    @staticmethod
    def entry_id(request: dict[str, Any]) -> str:
        return f"{KIND}-{request_key(request)}"

    def get(self, request: dict[str, Any]) -> tuple[str, dict[str, Any]] | None:
        """(text, usage) of a stored answer (checked against its sha256), or None."""
        stored = self.store.get(self.entry_id(request))
        if stored is None:
            return None
        return stored["text"].decode("utf-8"), json.loads(stored["usage"])

    def put(self, request: dict[str, Any], text: str, usage: dict[str, Any], *, refs: list[str] | None = None) -> None:
        """Store an answer (atomically, at once)."""
        self.store.put(self.entry_id(request), KIND,
                       {"text": (text or "").encode("utf-8"), "usage": json.dumps(usage or {}).encode()},
                       key={"kind": KIND, "request": request}, refs=refs if refs is not None else self.refs)

    def __len__(self) -> int:
        return sum(1 for _ in (self.store.root / "tasks").glob(f"{KIND}-*.json"))

    def close(self) -> None:
        """Nothing to close (every answer is on disk when :meth:`put` returns); kept for callers."""

    def _import(self, path: Path) -> int:
        """Copy the answers of an SQLite cache (releases before methods version 2) that the store lacks."""
        n = 0
        try:
            with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as db:
                rows = db.execute("SELECT request, text, usage FROM responses").fetchall()
        except sqlite3.Error:
            return 0  # not a response cache: nothing to import
        for raw, text, usage in rows:
            try:
                request = json.loads(raw)
            except ValueError:
                continue
            if self.store.get(self.entry_id(request)) is None:
                self.put(request, text or "", json.loads(usage or "{}"))
                n += 1
        return n
