"""Spec model of the ``template`` generator: ``candidates`` with ``generator: template`` (the default
when the key is left out)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from compiler.spectypes import Strict

#: The ``candidates.generator`` this model declares.
GENERATOR = "template"
#: Position among the built-in generators (the ``candidates`` union and every list of generators follow it).
ORDER = 0


class Candidates(Strict):
    """Two-phase base-candidate design (seed 000 §3.1.2)."""

    generator: Literal["template"] = "template"
    base_per_job: int = Field(ge=1, le=100_000, description="K: base candidates per job.")
    matching_per_job: int = Field(ge=0, description="M: base candidates that match the job.")
    market: Literal["fr", "us"] = Field(
        default="fr", description="Labour market the résumés are written for (issue 32 §2): cities, degrees and "
        "schools, dates, phone numbers, notice periods (runtime/generate/content/markets/<market>.yaml); fr is "
        "seed 000's French setting.")
