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
  the plug-ins (:func:`compile_spec` looks up a spec's design and system kinds once,
  :func:`compiler.designs.parts_of`, and hands them on); :mod:`compiler.extras`: the optional modules
  they need; leaf helpers in :mod:`compiler.paths`, :mod:`compiler.variants`, :mod:`compiler.tasks`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from compiler.designs import Parts, parts_of
from compiler.load import LoadedSpec, load_spec
from compiler.plan import expand
from compiler.resolve import resolve
from compiler.validate import spec_advisories, validate


@dataclass
class Compiled:
    """A validated spec with its resolved form and plan."""

    loaded: LoadedSpec
    resolved: dict[str, Any]
    plan: dict[str, Any]
    warnings: list = field(default_factory=list)
    #: One line per precomputed system: its score file as read and the score range in force.
    score_files: list = field(default_factory=list)
    #: The spec's design and system kinds (:class:`compiler.designs.Parts`), looked up once.
    parts: Parts | None = None


def compile_spec(path: str | Path) -> Compiled:
    """Load, validate, resolve and expand a spec (no file is written).

    Raises
    ------
    compiler.errors.SpecError
        When the spec is invalid (exit 2 in the CLI).
    """
    loaded = load_spec(path)
    parts = parts_of(loaded)  # the design and the system kinds, looked up once
    validate(loaded, parts)
    resolved = resolve(loaded)
    counted = parts.design.base_per_job(loaded)
    return Compiled(loaded, resolved, expand(resolved, base_per_job=counted), spec_advisories(loaded, parts),
                    score_files(loaded), parts)


def score_files(ls: LoadedSpec) -> list[str]:
    """One line per ``precomputed`` system: the file as read (rows, delimiter, column mapping) and the
    score range in force, said when it is the default (issue 15)."""
    from compiler.score_file import DELIMITER_NAMES, mapping_text
    from compiler.systems import read_system_file

    out = []
    for i, s in enumerate(ls.spec.systems):
        if s.kind != "precomputed":
            continue
        found = read_system_file(ls, i, s)
        if found is None or found.problems:
            continue
        mapped = ", ".join(f"{p} ← {n}" for p, n in found.mapping.items() if p != n)
        read_as = mapping_text({k: v for k, v in found.read_as.items() if k != "variant_from"})  # issue 37 §1
        lo, hi = s.score_range
        default = "score_range" not in s.model_fields_set
        out.append(f"system {s.id!r}: {s.path}, {len(found.rows)} rows, "
                   f"{sum(found.base_per_job.values())} base candidates over {len(found.base_per_job)} "
                   f"job{'' if len(found.base_per_job) == 1 else 's'}, "
                   f"delimiter {DELIMITER_NAMES.get(found.delimiter, repr(found.delimiter))}"
                   + (f", columns {mapped}" if mapped else "") + (f"; read as: {read_as}" if read_as else "")
                   + f"; score_range [{lo:g}, {hi:g}]"
                   + (f" (the default: set systems[{i}].score_range if the file's scale differs)" if default else ""))
    return out
