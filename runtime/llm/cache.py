"""Persistent response cache of LLM calls (SQLite, one row per request).

The key is the sha256 of the RFC 8785 canonical JSON of everything that determines an answer:
model, api_base, the full messages, every sampling parameter (temperature, max_tokens,
response_format, seed), the replicate index and the attempt number. The API key is not part of it
and is never written. Each answer is committed as soon as it arrives, so a run stopped half way
(server down, Ctrl-C) keeps every call already made; a warm re-run makes zero calls.

The cache path is a non-semantic knob (``execution.llm_cache``), excluded from the spec hash.
"""

from __future__ import annotations

import json
import sqlite3
import time
from pathlib import Path
from typing import Any

from compiler.hashing import digest

SCHEMA = """
CREATE TABLE IF NOT EXISTS responses (
  key TEXT PRIMARY KEY,
  model TEXT NOT NULL,
  request TEXT NOT NULL,
  text TEXT,
  usage TEXT,
  created_at REAL NOT NULL
)
"""


def request_key(request: dict[str, Any]) -> str:
    """sha256 hex of the canonical JSON of a request record (see the module docstring)."""
    return digest(request)["digest"]


class ResponseCache:
    """``get(request)`` / ``put(request, text, usage)`` over a SQLite file (WAL mode)."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(str(self.path), timeout=30, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute(SCHEMA)

    def get(self, request: dict[str, Any]) -> tuple[str, dict[str, Any]] | None:
        """(text, usage) of a stored answer, or None."""
        row = self._db.execute("SELECT text, usage FROM responses WHERE key = ?",
                               (request_key(request),)).fetchone()
        if row is None:
            return None
        return row[0], json.loads(row[1] or "{}")

    def put(self, request: dict[str, Any], text: str, usage: dict[str, Any]) -> None:
        """Store an answer (committed at once)."""
        self._db.execute("INSERT OR REPLACE INTO responses VALUES (?, ?, ?, ?, ?, ?)",
                         (request_key(request), request["model"], json.dumps(request, ensure_ascii=False),
                          text, json.dumps(usage), time.time()))

    def __len__(self) -> int:
        return int(self._db.execute("SELECT COUNT(*) FROM responses").fetchone()[0])

    def close(self) -> None:
        self._db.close()
