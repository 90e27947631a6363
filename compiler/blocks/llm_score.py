"""Spec model of the ``llm_score`` system kind: an LLM's absolute 0-100 score (seed 001 §5.1)."""

from __future__ import annotations

from typing import Literal

from compiler.blocks._llm_screener import LlmSystemBase

#: The ``systems[].kind`` this model declares.
KIND = "llm_score"
#: Position among the built-in kinds (the ``systems`` union and every list of kinds follow it).
ORDER = 2


class LlmScoreSystem(LlmSystemBase):
    """Absolute 0-100 suitability score of one resume against one job (seed 001 §5.1, Appendix D)."""

    kind: Literal["llm_score"]


System = LlmScoreSystem
