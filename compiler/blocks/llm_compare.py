"""Spec model of the ``llm_compare`` system kind: an LLM's score against a fixed reference (seed 003 §3.4)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from compiler.blocks._llm_screener import LlmSystemBase
from compiler.spectypes import Id

#: The ``systems[].kind`` this model declares.
KIND = "llm_compare"
#: Position among the built-in kinds (the ``systems`` union and every list of kinds follow it).
ORDER = 3


class LlmCompareSystem(LlmSystemBase):
    """Reference-anchored 0-100 score: 50 = as suitable as a fixed reference (seed 003 §3.4)."""

    kind: Literal["llm_compare"]
    references: dict[Id, str] = Field(
        default_factory=dict, description="job id -> reference resume file (relative to the spec). "
        "A job left out uses an identity-neutral matching resume of the template generator, drawn "
        "once from the seed and held invariant across every variant.")


System = LlmCompareSystem
