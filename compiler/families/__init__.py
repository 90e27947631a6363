"""Audit families at compile time: one module per family, found here by its module-level ``ID``.

A family is a named unit of analysis (``metric_suite`` = seed 000's nine metrics, ``effects`` =
seed 003's effect sizes and validity protocol, ``llm_validity``, ``causal`` = seed 001's
path-specific effects). Each module owns, with these names:

- ``ID`` (str) and ``ORDER`` (int, the run order: lower first);
- ``NEEDS``: a frozenset of what it needs from the design and systems, drawn from
  ``{"paired", "unpaired", "llm_answers"}`` (see :data:`compiler.designs.PROVIDES_WORDS`);
- ``block(spec)``: the key paths of its spec block that the spec writes (where a refusal is located);
- ``enabled(spec_or_resolved)``: whether the spec (a LoadedSpec, an AuditSpec or a resolved dict)
  asks for it;
- ``issues(ls)``: its checks, as located :class:`~compiler.errors.Issue` objects;
- ``resolve(ls, resolved)``: writes its resolution fragment into the resolved spec, in place;
- ``plan_tasks(resolved, score_ids)``: its plan tasks (they depend on the score tasks);
- ``metric_rows(resolved)`` and ``summary(resolved, size)``: its share of the plan's counts, and the
  plan keys of its compile-time summary (e.g. the minimum detectable effects; ``size`` is the design's
  size, whose K a score-file audit counts from its files).

Adding a family means adding its module here (and its runtime half): nothing else lists them. The
runtime registers the same ids (a test checks that both lists agree; the compiler never imports
the runtime).
"""

from __future__ import annotations

import importlib
import pkgutil
from types import ModuleType
from typing import Any


def _discover() -> dict[str, ModuleType]:
    found = []
    for info in pkgutil.iter_modules(__path__):
        module = importlib.import_module(f"{__name__}.{info.name}")
        if hasattr(module, "ID"):
            found.append(module)
    return {m.ID: m for m in sorted(found, key=lambda m: (m.ORDER, m.ID))}


#: The registry: family id -> module, in run order.
FAMILIES: dict[str, ModuleType] = _discover()


def family_ids() -> tuple[str, ...]:
    """The registered family ids in run order (``metric_suite, llm_validity, effects, causal``)."""
    return tuple(FAMILIES)


def families() -> list[ModuleType]:
    """The family modules in run order."""
    return list(FAMILIES.values())


def enabled_families(spec_or_resolved: Any) -> list[ModuleType]:
    """The families a spec or resolved spec enables, in run order."""
    return [f for f in FAMILIES.values() if f.enabled(spec_or_resolved)]
