"""Spec model of the ``command`` system kind: a vendor's command-line scorer, run once per request batch
with JSON lines on stdin and stdout (issue 36 §2). Running it needs ``audit execute --allow-exec``."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from compiler.spectypes import Id, Strict

#: The ``systems[].kind`` this model declares.
KIND = "command"
#: Position among the built-in kinds (the ``systems`` union and every list of kinds follow it).
ORDER = 7


class CommandSystem(Strict):
    """A vendor's program (issue 36 §2): ``argv`` runs in the spec's folder once per request batch; stdin holds one
    line ``{"id", "job", "resume"}`` per résumé (opaque ids), stdout one line ``{"id", "score"}`` per request line."""

    id: Id
    kind: Literal["command"]
    argv: list[str] = Field(description="The program and its arguments, e.g. [python3, tools/kw_match.py, --model, "
                            "v2]; run in the spec's folder, never through a shell. Files inside the spec's folder "
                            "that it names are locked by their sha256.")
    version: str = Field(min_length=1, max_length=200, description="The version of the scorer the vendor declares "
                         "(e.g. 'kw-match 1.4').")
    score_range: tuple[float, float] = Field(description="[low, high] of the program's score scale.")
    score_resolution: float | None = Field(
        default=None, gt=0, description="Grid of the scores, in their units (1 for integer scores).")
    batch_size: int = Field(default=16, ge=1, le=64, description="Request lines per run of the program (1-64).")
    max_invalid_retries: int = Field(default=0, ge=0, le=10, description="Times a résumé without a valid score is "
                                     "asked again (default 0: an invalid score is recorded, not re-asked).")


System = CommandSystem
