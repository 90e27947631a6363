"""Plan tasks: the id of a task is the hash of its kind, resolved inputs and dependencies (a leaf
module shared by the plan, the designs and the audit families).

The same id is computed before execution and from a stored result (DESIGN.md, "Compile, plan, lock").
"""

from __future__ import annotations

from typing import Any

from compiler.hashing import short_id


def task(kind: str, inputs: dict[str, Any], deps: list[str]) -> dict[str, Any]:
    """One plan task: ``{id, kind, deps, inputs}`` with ``id = <kind>-<digest of kind, inputs, deps>``."""
    return {"id": short_id(kind, {"kind": kind, "inputs": inputs, "deps": deps}), "kind": kind,
            "deps": deps, "inputs": inputs}
