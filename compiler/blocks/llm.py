"""Spec model of the ``llm`` generator: ``candidates`` with ``generator: llm`` (seed 000 §3.1)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from compiler.spectypes import LlmEndpoint, Strict

#: The ``candidates.generator`` this model declares.
GENERATOR = "llm"
#: Position among the built-in generators (the ``candidates`` union and every list of generators follow it).
ORDER = 1


class LlmAgents(Strict):
    """Optional agents of the LLM generator (seed 000 §3.1.1, §3.1.3, §3.1.4, §3.2)."""

    descriptor: bool = Field(default=False, description="Stage 0: an agent writes each variant's "
                             "descriptor from its axis levels.")
    translate_to: str | None = Field(default=None, description="Stage 2: translate every resume "
                                     "into this language (e.g. French); none: no translation.")
    flagging: bool = Field(default=False, description="Stage 3: a flagging agent's free-text "
                           "analysis goes into the audit trail.")
    classifier: bool = Field(default=True, description="Axis classifier (manipulation check).")


class LlmCandidates(LlmEndpoint):
    """LLM generation agents (seed 000 §3.1): Phase A K base resumes as one JSON array, Phase B one
    call per base resume injecting every variant."""

    generator: Literal["llm"]
    base_per_job: int = Field(ge=1, le=1000, description="K: base candidates per job.")
    matching_per_job: int = Field(ge=0, description="M: base candidates that match the job.")
    temperature: float = Field(default=0.7, ge=0, le=2)
    max_tokens: int = Field(default=1024, ge=16, le=32_768)
    agents: LlmAgents = Field(default_factory=LlmAgents)


Candidates = LlmCandidates
