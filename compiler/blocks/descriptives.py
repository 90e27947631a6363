"""Spec block of the ``descriptives`` audit family: ``analysis.descriptives``."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

KEY = "descriptives"


class Block(BaseModel):
    """Descriptive statistics of the scores per variant: n, mean, SD and quantiles (no test, no status)."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    quantiles: list[Annotated[float, Field(gt=0, lt=1)]] = Field(
        default_factory=lambda: [0.25, 0.5, 0.75], min_length=1, max_length=7,
        description="Probabilities of the quantiles reported (at most 7, so the table fits an A4 page), strictly "
                    "increasing, each in (0, 1) with at most 3 decimals.")
