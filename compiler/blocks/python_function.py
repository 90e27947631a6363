"""Spec model of the ``python`` system kind: a vendor's Python function ``score_batch(items) -> {id: score}``,
called in a child process once per request batch (issue 36 §3). Running it needs ``audit execute --allow-exec``."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from compiler.spectypes import Id, Strict

#: The ``systems[].kind`` this model declares.
KIND = "python"
#: Position among the built-in kinds (the ``systems`` union and every list of kinds follow it).
ORDER = 8


class PythonSystem(Strict):
    """A vendor's Python SDK (issue 36 §3): ``function(items: list[dict]) -> dict[str, float | str]`` (id -> score),
    items as the ``command`` kind's request lines, called in a spawned child process."""

    id: Id
    kind: Literal["python"]
    function: str = Field(description="'path/to/file.py:name' (a file in the spec's folder, locked by its sha256) or "
                          "'module:name' (a module of the installed distribution named by package).")
    package: str | None = Field(default=None, min_length=1, max_length=200, description="With module:name: the "
                                "distribution that installs the module; its version is locked.")
    version: str = Field(min_length=1, max_length=200, description="The version of the scorer the vendor declares "
                         "(e.g. 'sdk 3.1').")
    score_range: tuple[float, float] = Field(description="[low, high] of the function's score scale.")
    score_resolution: float | None = Field(
        default=None, gt=0, description="Grid of the scores, in their units (1 for integer scores).")
    batch_size: int = Field(default=16, ge=1, le=64, description="Items per call (1-64).")
    max_invalid_retries: int = Field(default=0, ge=0, le=10, description="Times a résumé without a valid score is "
                                     "asked again (default 0: an invalid score is recorded, not re-asked).")


System = PythonSystem
