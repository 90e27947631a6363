"""The ``command`` system kind: a vendor's command-line scorer (issue 36 §2). Its spec model:
:mod:`compiler.blocks.command`; its runtime adapter: :mod:`runtime.systems.command`.

Checks (``audit validate``, exit 2, each located): an empty ``argv``; a relative path in ``argv`` that leaves
the spec's folder. Nothing here runs the program: the fingerprint is the digest of ``argv``, ``version``,
``batch_size`` and ``{path, sha256}`` of each ``argv`` element that is a file inside the spec's folder, so an
edit of the program after ``audit compile`` changes the spec digest (``audit execute`` exits 3). A program
outside the spec's folder (the interpreter) is known by its name only, and the report says so.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from compiler.blocks import command as block
from compiler.errors import Issue
from compiler.hashing import digest, file_digest
from compiler.load import LoadedSpec
from compiler.systems.base import CORE, Requires, SystemKind, score_resolution, system_kind

MSG_EMPTY_ARGV = "argv is empty; give the program and its arguments, e.g. [python3, tools/score.py]"
MSG_ARGV_LEAVES = ("argv[{j}] {value!r} leaves the spec's folder; a program the spec names by a relative path "
                   "must lie inside it (an installed program is named by its name or an absolute path)")
#: What the report says of the argv elements that are not files inside the spec's folder.
BY_NAME = "known by name only"


def _inside(folder: Path, value: str) -> Path | None:
    """The file inside ``folder`` that an argv element names (relative), or None."""
    if not value or value.startswith("-") or "\x00" in value or Path(value).is_absolute():
        return None
    root = folder.resolve()
    try:
        target = (root / value).resolve()
    except (OSError, RuntimeError):
        return None
    if root not in target.parents or not target.is_file():
        return None
    return target


def leaves(folder: Path, value: str) -> bool:
    """Whether a relative argv element that looks like a path (holds a ``/``) resolves outside ``folder``."""
    if not value or value.startswith("-") or "/" not in value or Path(value).is_absolute():
        return False
    root = folder.resolve()
    try:
        target = (root / value).resolve()
    except (OSError, RuntimeError):
        return True
    return target != root and root not in target.parents


def argv_files(folder: Path, argv: list[str]) -> list[dict[str, str]]:
    """``{path, sha256}`` of each argv element that is a file inside the spec's folder, in argv order."""
    out = []
    for value in argv:
        path = _inside(folder, value)
        if path is not None:
            out.append({"path": value, "sha256": file_digest(path)["digest"]})
    return out


def command_fingerprint(resolved: dict[str, Any]) -> dict[str, str]:
    """``{algorithm, digest}`` of argv, version, batch_size and the ``{path, sha256}`` of each argv file."""
    return digest({"argv": resolved["argv"], "version": resolved["version"], "batch_size": resolved["batch_size"],
                   "files": resolved["files"]})


@system_kind
class Command(SystemKind):
    """A vendor's command-line scorer (issue 36 §2): runs vendor code, so ``audit execute`` needs ``--allow-exec``."""

    id = "command"
    model = block.System
    remote = True  # execution.systems.<id> tunes it: timeout_s per batch, concurrency (processes)
    runs_code = True
    paired_only = True  # résumés under opaque ids, variants in one plan batch
    provides = frozenset({"answers"})  # read by the one answer reader; the llm_validity family reports them

    def requires(self, system: Any) -> Requires:
        """Nothing beyond the core install (subprocess)."""
        return CORE

    def issues(self, ls: LoadedSpec, i: int, system: Any) -> list[Issue]:
        out = super().issues(ls, i, system)
        at = ("systems", i, "argv")
        if not system.argv or not system.argv[0].strip():
            out.append(ls.issue(at, MSG_EMPTY_ARGV))
            return out
        for j, value in enumerate(system.argv):
            if leaves(ls.folder, value):
                out.append(ls.issue(at + (j,), MSG_ARGV_LEAVES.format(j=j, value=value)))
        return out

    def resolve(self, system: Any, ls: LoadedSpec) -> dict[str, Any]:
        resolved = {
            "id": system.id, "kind": system.kind, "argv": list(system.argv), "version": system.version,
            "batch_size": system.batch_size, "files": argv_files(ls.folder, list(system.argv)),
            "max_invalid_retries": system.max_invalid_retries,
            "score_range": list(system.score_range), **score_resolution(system),
        }
        resolved["fingerprint"] = command_fingerprint(resolved)
        return resolved

    def source(self, resolved: dict[str, Any]) -> str:
        """The command line, the sha256 of each file of the spec's folder it names, and the others known by name."""
        return program_text(resolved)

    def program(self, resolved: dict[str, Any]) -> str:
        """The program as ``--allow-exec``'s refusal names it: the command line and each file's sha256."""
        return program_text(resolved)


def program_text(resolved: dict[str, Any]) -> str:
    """``argv: python3 tools/kw.py (version); tools/kw.py sha256 <hex>; python3 known by name only``."""
    files = {f["path"]: f["sha256"] for f in resolved["files"]}
    argv = resolved["argv"]
    parts = [f"argv: {' '.join(argv)} ({resolved['version']})"]
    parts += [f"{p} sha256 {d}" for p, d in files.items()]
    if argv and argv[0] not in files:  # the program run (an interpreter, an installed tool)
        parts.append(f"{argv[0]} {BY_NAME}")
    return "; ".join(parts)
