"""audit-compiler's compiler: spec models, line-aware loading, validation, resolution, plan and lock.

Never imports :mod:`runtime`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from compiler.load import LoadedSpec, load_spec
from compiler.plan import expand
from compiler.resolve import resolve
from compiler.validate import advisories, validate


@dataclass
class Compiled:
    """A validated spec with its resolved form and plan."""

    loaded: LoadedSpec
    resolved: dict[str, Any]
    plan: dict[str, Any]
    warnings: list = field(default_factory=list)


def compile_spec(path: str | Path) -> Compiled:
    """Load, validate, resolve and expand a spec (no file is written).

    Raises
    ------
    compiler.errors.SpecError
        When the spec is invalid (exit 2 in the CLI).
    """
    loaded = load_spec(path)
    validate(loaded)
    resolved = resolve(loaded)
    return Compiled(loaded, resolved, expand(resolved), advisories(loaded))
