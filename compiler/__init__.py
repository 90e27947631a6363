"""audit-compiler's compiler: spec models, line-aware loading, validation, resolution, plan and lock.

Never imports :mod:`runtime`, and has no import cycle (both checked by import-linter,
``[tool.importlinter]`` in pyproject.toml). Layout (DESIGN.md, "Architecture"):

- :mod:`compiler.spec`, :mod:`compiler.load`, :mod:`compiler.errors`: models, the YAML loader, located errors;
- :mod:`compiler.designs`: one module per design (``template``, ``llm``, ``population``, ``score_file``):
  its block's checks, resolution, plan tasks, and what it provides (paired or unpaired);
- :mod:`compiler.systems`: one compile hook per system kind (checks, resolution, fingerprint);
- :mod:`compiler.families`: one module per audit family (block, checks, resolution, plan tasks,
  summary, needs); :func:`compiler.families.family_ids` lists them in run order;
- :mod:`compiler.validate`, :mod:`compiler.resolve`, :mod:`compiler.plan`, :mod:`compiler.lock`: run
  the plug-ins; leaf helpers in :mod:`compiler.paths`, :mod:`compiler.variants`, :mod:`compiler.tasks`.
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
