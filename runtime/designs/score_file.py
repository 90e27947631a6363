"""The score-file design: nothing is generated; every system is a precomputed score file."""

from __future__ import annotations

from runtime.designs import SCORE_FILE, Design, design


@design(SCORE_FILE)
class ScoreFileDesign(Design):
    """The score files bring their own cells (job, base candidate, variant)."""


    def generate(self, ctx) -> None:
        ctx.candidates = None
