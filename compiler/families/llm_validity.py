"""Family ``llm_validity``: the validity of an LLM screener's answers (parse failures, out-of-range
scores and re-asks per system and condition; seed 003 §3.7, seed 001 Appendix D).

Spec block: the LLM systems themselves (``systems[i]`` of an LLM kind: ``max_invalid_retries``,
``response_format``), resolved by their compile hooks (:mod:`compiler.systems`). Enabled when a
system provides LLM answers; needs exactly that. Its answers are counted in the plan's LLM estimate
(``plan.llm_estimate``), which the systems' hooks build.
"""

from __future__ import annotations

from typing import Any

from compiler.errors import Issue
from compiler.load import LoadedSpec
from compiler.systems import hook_for

ID = "llm_validity"
ORDER = 20
NEEDS = frozenset({"llm_answers"})


def _systems(x: Any) -> list[Any]:
    return x["systems"] if isinstance(x, dict) else getattr(x, "spec", x).systems


def _kind(s: Any) -> str:
    return s["kind"] if isinstance(s, dict) else s.kind


def block(spec: Any) -> list[tuple]:
    """``systems[i]`` of every system that provides LLM answers."""
    return [("systems", i) for i, s in enumerate(_systems(spec)) if NEEDS <= hook_for(_kind(s)).provides]


def enabled(spec_or_resolved: Any) -> bool:
    """On when a system provides LLM answers."""
    return bool(block(spec_or_resolved))


def issues(ls: LoadedSpec) -> list[Issue]:
    """No checks beyond the systems' own."""
    return []


def resolve(ls: LoadedSpec, resolved: dict[str, Any]) -> None:
    """Nothing of its own: the systems' hooks resolve their retry and response-format settings."""


def plan_tasks(resolved: dict[str, Any], score_ids: list[str]) -> list[dict[str, Any]]:
    """None: answers are validated as they are scored (the score tasks)."""
    return []


def metric_rows(resolved: dict[str, Any]) -> int:
    return 0


def summary(resolved: dict[str, Any], size: dict[str, Any] | None = None) -> dict[str, Any]:
    return {}
