"""Audit families: plug-in units of analysis, registered by id (``@family("effects")``).

Each family's module holds everything of that family on the runtime side: ``analyse`` (tables,
documents, status rows, verdict) and its report sections. Every module of this package is a family
module, discovered with :mod:`pkgutil`, and installed plug-ins add theirs (``<package>.runtime``,
:mod:`compiler.registry`): adding a family adds its files and touches no other. Each binds to its
compiler declaration, which gives the run order (``order``; a family's ``after`` names the families
whose results it reads, e.g. the effect-size self-test reads the metric suite's metrics). A declaration
without its runtime half, or the reverse, is an error at load (:class:`compiler.registry.PluginError`).
"""

from __future__ import annotations

from compiler.families.base import registry as declarations
from compiler.registry import Registry
from runtime.families.base import (ANSWERS, LLM_GENERATION, PAIRED, STATUS_COLUMNS, TOOL_TEXT, UNPAIRED,
                                   AuditFamily, FamilyResult, status_frame)

_FAMILIES: Registry[type[AuditFamily]] = Registry("audit family half", __name__, side="runtime")

#: Class decorator binding an audit family's runtime half to its declaration: ``@family("effects")``.
family = _FAMILIES.binder(declarations())


def registered() -> dict[str, type[AuditFamily]]:
    """Family id -> class, in run order, after importing every family module.

    The run order is the declarations' (:data:`compiler.families.FAMILIES`).

    Raises
    ------
    compiler.registry.PluginError
        A declared family has no runtime half.
    """
    from compiler.families import FAMILIES

    halves = _FAMILIES.load()
    _FAMILIES.check_halves(declarations())
    return {fid: halves[fid] for fid in FAMILIES}


def family_ids() -> list[str]:
    """Registered family ids in run order."""
    return list(registered())


__all__ = ["ANSWERS", "AuditFamily", "FamilyResult", "LLM_GENERATION", "PAIRED", "STATUS_COLUMNS", "TOOL_TEXT",
           "UNPAIRED", "family",
           "family_ids", "registered", "status_frame"]
