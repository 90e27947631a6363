"""Spec models of the ``keyword_overlap`` plug-in (pydantic and :mod:`compiler.spectypes` only, as
every blocks module: :mod:`compiler.spec` imports this module while it builds its models).

- ``KEY`` / ``Block``: ``analysis.keyword_overlap``, the audit family's block;
- ``KIND`` / ``System``: ``systems[i]`` with ``kind: keyword_overlap``.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from compiler.spectypes import Id, Strict

#: The ``analysis`` key of the audit family's block.
KEY = "keyword_overlap"
#: The ``systems[].kind`` this plug-in declares.
KIND = "keyword_overlap"
#: Position among the kinds: after the built-ins (installed plug-ins come after them in any case).
ORDER = 100


class Block(BaseModel):
    """The keyword-overlap spread check: every system's scores must vary by at least ``min_spread``."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    min_spread: float = Field(
        default=0.05, gt=0, lt=1,
        description="Smallest standard deviation of a system's scores, on its score_range mapped to [0, 1] "
                    "(one value per base candidate and variant, or per profile); below it the family's "
                    "verdict is INCONCLUSIVE.")


class KeywordOverlapSystem(Strict):
    """Share of the job description's distinct words found in the résumé (words: the ``[a-z0-9]+``
    runs of the lowercased text), in [0, 1]; needs the job texts and the résumés the tool writes."""

    id: Id
    kind: Literal["keyword_overlap"]

    @property
    def score_range(self) -> tuple[float, float]:
        """A share: [0, 1], fixed."""
        return (0.0, 1.0)


System = KeywordOverlapSystem
