"""Systems under test: adapters that score resumes against jobs, registered by ``kind``.

inspect_ai-style registry: ``@system("embedding")`` registers an adapter class; heavy SDKs are
imported lazily inside the adapter, with a ``pip install`` hint when missing.
"""

from __future__ import annotations

from typing import Callable

from runtime.systems.base import JobInfo, LlmSettings, ScoreRequest, SystemAdapter

_REGISTRY: dict[str, type[SystemAdapter]] = {}


def system(kind: str) -> Callable[[type[SystemAdapter]], type[SystemAdapter]]:
    """Class decorator registering a system-under-test adapter for ``kind``."""

    def deco(cls: type[SystemAdapter]) -> type[SystemAdapter]:
        if kind in _REGISTRY:
            raise ValueError(f"system kind {kind!r} registered twice")
        cls.kind = kind
        _REGISTRY[kind] = cls
        return cls

    return deco


def registered() -> dict[str, type[SystemAdapter]]:
    """Kind -> adapter class, after importing the built-in adapters."""
    from runtime.systems import embedding, llm, precomputed  # noqa: F401  (registration side effect)

    return dict(_REGISTRY)


def adapter_for(kind: str) -> type[SystemAdapter]:
    kinds = registered()
    if kind not in kinds:
        raise KeyError(f"unknown system kind {kind!r}; registered: {', '.join(sorted(kinds))}")
    return kinds[kind]


__all__ = ["JobInfo", "LlmSettings", "ScoreRequest", "SystemAdapter", "adapter_for", "registered", "system"]
