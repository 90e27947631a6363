"""Audit families: plug-in units of analysis, registered by id (``@family("effects")``).

Each family's module holds everything of that family on the runtime side: ``analyse`` (tables,
status rows, verdict) and its report sections. Every module of this package is a family module,
discovered with :mod:`pkgutil` (adding a family adds a module and touches no other file); the
pipeline runs the enabled families in the order the compiler family declares (``ORDER``; later
families may read earlier results: the effect-size self-test reads the metric suite's metrics). The compiler's registry
(``compiler.families.family_ids``) lists the same ids; a test checks it.
"""

from __future__ import annotations

import importlib
import pkgutil
from typing import Callable

from runtime.families.base import (LLM_ANSWERS, PAIRED, STATUS_COLUMNS, UNPAIRED, AuditFamily, FamilyResult,
                                   status_frame)

_REGISTRY: dict[str, type[AuditFamily]] = {}

#: Modules of this package that are not families.
NOT_FAMILIES = frozenset({"base"})


def family(family_id: str) -> Callable[[type[AuditFamily]], type[AuditFamily]]:
    """Class decorator registering an audit family under ``family_id``."""

    def deco(cls: type[AuditFamily]) -> type[AuditFamily]:
        if family_id in _REGISTRY:
            raise ValueError(f"audit family {family_id!r} registered twice")
        cls.id = family_id
        _REGISTRY[family_id] = cls
        return cls

    return deco


def registered() -> dict[str, type[AuditFamily]]:
    """Family id -> class, in run order, after importing every family module.

    The run order is the compiler family's ``ORDER`` (one source for both sides), then the id.
    """
    from compiler.families import FAMILIES

    for mod in pkgutil.iter_modules(__path__):
        if mod.name not in NOT_FAMILIES and not mod.name.startswith("_"):
            importlib.import_module(f"{__name__}.{mod.name}")
    return dict(sorted(_REGISTRY.items(), key=lambda kv: (FAMILIES[kv[0]].ORDER if kv[0] in FAMILIES else 10**6, kv[0])))


def family_ids() -> list[str]:
    """Registered family ids in run order."""
    return list(registered())


__all__ = ["AuditFamily", "FamilyResult", "LLM_ANSWERS", "PAIRED", "STATUS_COLUMNS", "UNPAIRED", "family",
           "family_ids", "registered", "status_frame"]
