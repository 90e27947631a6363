"""Systems under test: adapters that score resumes against jobs, registered by ``kind``.

inspect_ai-style registry: ``@system("embedding")`` registers an adapter class; heavy SDKs are
imported lazily inside the adapter, with a ``pip install`` hint when missing.
"""

from __future__ import annotations

from runtime.registry import Registry
from runtime.systems.base import JobInfo, LlmSettings, ScoreBatch, ScoreRequest, SystemAdapter

_SYSTEMS: Registry[type[SystemAdapter]] = Registry("system kind", __name__, attribute="kind", skip=frozenset({"base"}))

#: Class decorator registering a system-under-test adapter for a kind: ``@system("embedding")``.
system = _SYSTEMS.register


def registered() -> dict[str, type[SystemAdapter]]:
    """Kind -> adapter class, after importing every adapter module of this package."""
    return _SYSTEMS.load()


def adapter_for(kind: str) -> type[SystemAdapter]:
    """The adapter class of a system kind (``KeyError`` naming the registered kinds)."""
    return _SYSTEMS.get(kind)


__all__ = ["JobInfo", "LlmSettings", "ScoreBatch", "ScoreRequest", "SystemAdapter", "adapter_for", "registered", "system"]
