"""LLM plumbing shared by the LLM systems and the LLM generator: async client, cache, parsing."""

from __future__ import annotations

from pathlib import Path
from typing import Any

DEFAULT_CACHE = ".audit-cache/llm.sqlite"
DEFAULT_CONCURRENCY = 4


def cache_path(compiled: Any) -> Path:
    """The SQLite response cache of releases before methods version 2 (``execution.llm_cache`` relative
    to the spec's folder, default ``.audit-cache/llm.sqlite`` there), imported into the task store
    when it exists (:class:`runtime.llm.cache.ResponseCache`)."""
    knob = compiled.loaded.spec.execution.llm_cache
    return compiled.loaded.folder / (knob or DEFAULT_CACHE)


def response_cache(compiled: Any, store: Any, refs: list[str] | None = None):
    """The LLM answers of a compiled spec: its task store (:class:`runtime.llm.cache.ResponseCache`),
    with an earlier release's SQLite cache imported once."""
    from runtime.llm.cache import ResponseCache

    return ResponseCache(store, refs=refs, legacy=cache_path(compiled))


def endpoint_for(compiled: Any, ep: dict[str, Any], who: str, *, concurrency_key: str):
    """An :class:`~runtime.llm.client.Endpoint` with the spec's execution knobs applied."""
    from runtime.llm.client import Endpoint

    ex = compiled.loaded.spec.execution
    return Endpoint.from_resolved(ep, who=who,
                                  concurrency=ex.llm_concurrency.get(concurrency_key, DEFAULT_CONCURRENCY),
                                  retries=ex.llm_retries, timeout_s=ex.llm_timeout_s)
