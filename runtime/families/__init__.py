"""Audit families: plug-in units of analysis, registered by id (``@family("effects")``).

Each family's module holds everything of that family on the runtime side: ``analyse`` (tables,
status rows, verdict) and its report sections. Every module of this package is a family module,
discovered with :mod:`pkgutil` (adding a family adds a module and touches no other file); the
pipeline runs the enabled families in the order the compiler family declares (``ORDER``; later
families may read earlier results: the effect-size self-test reads the metric suite's metrics). The compiler's registry
(``compiler.families.family_ids``) lists the same ids; a test checks it.
"""

from __future__ import annotations

from runtime.registry import Registry
from runtime.families.base import (LLM_ANSWERS, PAIRED, STATUS_COLUMNS, UNPAIRED, AuditFamily, FamilyResult,
                                   status_frame)

_FAMILIES: Registry[type[AuditFamily]] = Registry("audit family", __name__, skip=frozenset({"base"}))

#: Class decorator registering an audit family: ``@family("effects")``.
family = _FAMILIES.register


def registered() -> dict[str, type[AuditFamily]]:
    """Family id -> class, in run order, after importing every family module.

    The run order is the compiler family's ``ORDER`` (one source for both sides), then the id.
    """
    from compiler.families import FAMILIES

    return dict(sorted(_FAMILIES.load().items(),
                       key=lambda kv: (FAMILIES[kv[0]].ORDER if kv[0] in FAMILIES else 10**6, kv[0])))


def family_ids() -> list[str]:
    """Registered family ids in run order."""
    return list(registered())


__all__ = ["AuditFamily", "FamilyResult", "LLM_ANSWERS", "PAIRED", "STATUS_COLUMNS", "UNPAIRED", "family",
           "family_ids", "registered", "status_frame"]
