"""Shared spec fields of the LLM screeners ``llm_score`` and ``llm_compare`` (seed 001 §5.1, seed 003
§3.4-3.5): endpoint, prompt conditions, replicates. Not a block itself (no ``KIND``)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from compiler.spectypes import Id, LlmEndpoint, Strict

#: Built-in prompt conditions of the LLM systems (seed 003 §3.5); texts in ``compiler/prompts/``.
LLM_CONDITIONS: tuple[str, ...] = ("baseline", "fairness", "naturalistic", "realistic_context")
LlmConditionName = Literal["baseline", "fairness", "naturalistic", "realistic_context"]


class LlmCondition(Strict):
    """A custom prompt condition: a jinja2 template file (see ``compiler/prompts/README.md``)."""

    id: Annotated[str, Field(pattern=r"^[a-z][a-z0-9_]*$", max_length=64)]
    prompt_file: str = Field(description="jinja2 template, relative to the spec's folder.")


class LlmSystemBase(LlmEndpoint):
    """Shared fields of ``llm_score`` and ``llm_compare`` (seed 001 §5.1, seed 003 §3.4-3.5)."""

    id: Id
    replicates: int = Field(default=1, ge=1, le=100, description="Stochastic evaluations per resume; "
                            "averaged per candidate before ranking (seed 003 §3.5).")
    conditions: list[LlmConditionName | LlmCondition] = Field(
        default_factory=lambda: ["baseline"], min_length=1,
        description="Prompt framings: built-in names or {id, prompt_file}.")
    max_invalid_retries: int = Field(default=2, ge=0, le=10, description="Re-asks after an unparseable "
                                     "or out-of-range answer; each invalid answer is recorded.")
    score_range: tuple[float, float] = Field(default=(0.0, 100.0), description="[low, high] of the "
                                             "score scale; score_delta uses (s-low)/(high-low).")
    score_resolution: float | None = Field(
        default=None, gt=0, description="Grid of one answer's score, in their units (1 for integer answers; a mean of r replicates lies on resolution/r); every "
        "test on paired differences runs on that grid. Default: inferred from the scores (a decimal grid, "
        "or 1/r of one for a mean of r replicates; none for continuous scores).")

