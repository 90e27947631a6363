"""LLM plumbing shared by the LLM systems and the LLM generator: async client, cache, parsing."""

from __future__ import annotations

from pathlib import Path
from typing import Any

DEFAULT_CACHE = ".audit-cache/llm.sqlite"
DEFAULT_CONCURRENCY = 4


def cache_path(execution: Any, folder: Path) -> Path:
    """The SQLite response cache of releases before methods version 2 (``execution.llm_cache`` relative
    to the spec's ``folder``, default ``.audit-cache/llm.sqlite`` there), imported into the task store
    when it exists (:class:`runtime.llm.cache.ResponseCache`)."""
    return folder / (execution.llm_cache or DEFAULT_CACHE)


def response_cache(execution: Any, folder: Path, store: Any, refs: list[str] | None = None):
    """The LLM answers of a run: its task store (:class:`runtime.llm.cache.ResponseCache`), with an
    earlier release's SQLite cache imported once. ``execution`` is the spec's ``execution`` block
    (:class:`compiler.spec.Execution`), ``folder`` the spec's folder."""
    from runtime.llm.cache import ResponseCache

    return ResponseCache(store, refs=refs, legacy=cache_path(execution, folder))


def endpoint_for(execution: Any, ep: dict[str, Any], who: str, *, concurrency_key: str):
    """An :class:`~runtime.llm.client.Endpoint` with the spec's execution knobs (``execution``, the
    spec's ``execution`` block) applied."""
    from runtime.llm.client import Endpoint

    ex = execution
    return Endpoint.from_resolved(ep, who=who,
                                  concurrency=ex.llm_concurrency.get(concurrency_key, DEFAULT_CONCURRENCY),
                                  retries=ex.llm_retries, timeout_s=ex.llm_timeout_s)
