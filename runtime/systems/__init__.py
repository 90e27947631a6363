"""Systems under test: adapters that score resumes against jobs, one per system kind.

An adapter is the runtime half of a kind declared once in the compiler
(:class:`compiler.systems.base.SystemKind`): ``@system("embedding")`` binds the class to that
declaration (``cls.declaration``; its ``kind`` and ``provides`` are read from it) and registers it.
The adapters of this package and the ``runtime`` module of every installed plug-in register here; a
kind without both halves is a :class:`compiler.registry.PluginError` when they are loaded. Heavy SDKs
are imported lazily inside the adapter, with a ``pip install`` hint when missing.
"""

from __future__ import annotations

from compiler.registry import Registry
from compiler.systems import SYSTEM_KINDS_REGISTRY
from runtime.systems.base import (BatchInput, BatchResult, JobInfo, LlmSettings, ScoreBatch, ScoreRequest,
                                  SystemAdapter)

_ADAPTERS: Registry[type[SystemAdapter]] = Registry("system adapter", __name__, side="runtime")

#: Class decorator binding a system-under-test adapter to the compiler declaration of its kind:
#: ``@system("embedding")`` (a kind no declaration declares: :class:`compiler.registry.PluginError`).
system = _ADAPTERS.binder(SYSTEM_KINDS_REGISTRY)


def registered() -> dict[str, type[SystemAdapter]]:
    """Kind -> adapter class, after importing every adapter module of this package and of the
    installed plug-ins.

    Raises
    ------
    compiler.registry.PluginError
        A declared kind has no adapter (or an adapter binds to no declared kind).
    """
    adapters = _ADAPTERS.load()
    _ADAPTERS.check_halves(SYSTEM_KINDS_REGISTRY)
    return adapters


def adapter_for(kind: str) -> type[SystemAdapter]:
    """The adapter class of a system kind (``KeyError`` naming the registered kinds)."""
    registered()
    return _ADAPTERS.get(kind)


__all__ = ["BatchInput", "BatchResult", "JobInfo", "LlmSettings", "ScoreBatch", "ScoreRequest", "SystemAdapter", "adapter_for", "registered", "system"]
