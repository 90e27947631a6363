"""Family ``llm_validity``: the validity of the model calls of a run: an LLM screener's answers (parse
failures, out-of-range scores and re-asks per system and condition; seed 003 §3.7, seed 001 Appendix D),
the answers of the systems sent résumés under opaque ids (``http``, ``command``, ``python``: the same reader;
issues 35, 36)
and the LLM generator's agents (calls, manipulation check, flagging trail; seed 000 §3.1).

Spec block: the LLM systems themselves (``systems[i]`` of an LLM kind: ``max_invalid_retries``,
``response_format``), resolved by their system kinds (:mod:`compiler.systems`). Needs answers
(an LLM screener, or an http, command or python system) or LLM generation (``candidates.generator: llm``), and runs whenever a run has either:
that is its one enable rule. Its answers are counted in the plan's LLM estimate (``plan.llm_estimate``),
which the system kinds and the design build. Reads ``metrics.csv`` of ``metric_suite`` when it ran (its
rows are appended there).
"""

from __future__ import annotations

from typing import Any

from compiler.families.base import ANSWERS, LLM_GENERATION, Family, family
from compiler.registry import Needs
from compiler.systems import hook_for


@family
class LlmValidity(Family):
    """Validity of the LLM answers and of the LLM generator's calls."""

    id = "llm_validity"
    order = 20
    needs = Needs.of(ANSWERS) | Needs.of(LLM_GENERATION)
    after = ("metric_suite",)

    def block(self, spec: Any) -> list[tuple]:
        """``systems[i]`` of every system that provides answers."""
        return [("systems", i) for i, s in enumerate(spec.systems) if ANSWERS in hook_for(s.kind).provides]

    def enabled(self, resolved: dict[str, Any]) -> bool:
        """On when the run makes model calls (its needs are its enable rule)."""
        return True
