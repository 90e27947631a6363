"""Audit families at compile time: one declaration per family (:class:`~compiler.families.base.Family`,
registered with ``@family``), found in this package's modules and in installed plug-ins.

A declaration owns the family's id, run order, needs, spec block, checks, resolution, plan tasks and
compile summary (:mod:`compiler.families.base`). Its runtime half (``runtime.families``) binds to it by
id; nothing else lists the families. :data:`FAMILIES` holds them in run order; a family's ``after``
(the families whose results it reads) must name families that run before it.
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping

from compiler.families.base import Family, family, provided, registry
from compiler.registry import Declared, PluginError

MSG_AFTER_UNKNOWN = "audit family {id!r} runs after {other!r}, which is not a registered audit family ({known})"
MSG_AFTER_LATER = ("audit family {id!r} reads the results of {other!r}, which runs after it (order {o1} vs {o2}); "
                   "give {id!r} a larger order")


def in_run_order(declared: Iterable[Family]) -> dict[str, Family]:
    """Family id -> declaration in run order (``order``, then id).

    Raises
    ------
    PluginError
        A family's ``after`` names an unknown family or one that runs later.
    """
    found = sorted(declared, key=lambda f: (f.order, f.id))
    rank = {f.id: i for i, f in enumerate(found)}
    for f in found:
        for other in f.after:
            if other not in rank:
                raise PluginError(MSG_AFTER_UNKNOWN.format(id=f.id, other=other, known=", ".join(rank)))
            if rank[other] > rank[f.id]:
                raise PluginError(MSG_AFTER_LATER.format(id=f.id, other=other, o1=f.order,
                                                         o2=found[rank[other]].order))
    return {f.id: f for f in found}


#: The registry: family id -> declaration, in run order (read at each use: installed plug-ins included).
FAMILIES: Mapping[str, Family] = Declared(registry(), in_run_order)


def family_ids() -> tuple[str, ...]:
    """The registered family ids in run order (``metric_suite, llm_validity, effects, causal, ...``)."""
    return tuple(FAMILIES)


def families() -> list[Family]:
    """The family declarations in run order."""
    return list(FAMILIES.values())


def enabled_families(resolved: dict[str, Any]) -> list[Family]:
    """The families a run of the resolved spec runs (:meth:`Family.runs`), in run order."""
    return [f for f in FAMILIES.values() if f.runs(resolved)]


__all__ = ["FAMILIES", "Family", "enabled_families", "families", "family", "family_ids", "provided"]
