"""Canonical hashing: sha256 over the RFC 8785 (JCS) canonical JSON of a value.

Hashes are stored as ``{"algorithm": "sha256", "digest": "<hex>"}`` (DESIGN.md, Compile, plan, lock).
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import rfc8785

ALGORITHM = "sha256"


def canonical_json(value: Any) -> bytes:
    """RFC 8785 canonical JSON bytes of ``value`` (dicts, lists, str, int, float, bool, None)."""
    return rfc8785.dumps(value)


def digest(value: Any) -> dict[str, str]:
    """``{"algorithm": "sha256", "digest": hex}`` of the canonical JSON of ``value``."""
    return {"algorithm": ALGORITHM, "digest": hashlib.sha256(canonical_json(value)).hexdigest()}


def file_digest(path: Path) -> dict[str, str]:
    """``{"algorithm": "sha256", "digest": hex}`` of a file's bytes, read in 1 MiB chunks.

    Raises
    ------
    compiler.files.FileProblem
        ``path`` is not a regular file (a FIFO, a device, a folder, a symlink loop: never opened; issue 41).
    """
    from compiler.files import check_regular

    check_regular(path)
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return {"algorithm": ALGORITHM, "digest": h.hexdigest()}


def short_id(kind: str, value: Any, length: int = 16) -> str:
    """Task id: ``<kind>-<first hex digits of the canonical digest>``."""
    return f"{kind}-{digest(value)['digest'][:length]}"
