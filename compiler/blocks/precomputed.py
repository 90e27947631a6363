"""Spec model of the ``precomputed`` system kind: ``systems[i]`` with ``kind: precomputed`` (a score file)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from compiler.spectypes import Id, Strict

#: The ``systems[].kind`` this model declares.
KIND = "precomputed"
#: Position among the built-in kinds (the ``systems`` union and every list of kinds follow it).
ORDER = 1

#: The product's columns of a score file (``systems[].columns`` maps them to a vendor's names).
ScoreColumn = Literal["job_id", "cv_id", "variant", "score", "is_true_match"]


class PrecomputedSystem(Strict):
    """Scores produced elsewhere (a vendor's export): CSV ``job_id, cv_id, variant, score[, is_true_match]``,
    under the vendor's own column names when ``columns`` maps them (issue 15); with ``blind: true``, CSV
    ``resume_id, score`` for the résumés of ``audit export --for-vendor``."""

    id: Id
    kind: Literal["precomputed"]
    path: str = Field(description="CSV file, relative to the spec's folder.")
    columns: dict[ScoreColumn, str] | None = Field(
        default=None, description="The file's column name for each product column that the file names "
        "differently, e.g. {job_id: requisition_id, cv_id: candidate_id, variant: persona, score: match_score}.")
    delimiter: Literal[",", ";", "\t", "|"] | None = Field(
        default=None, description="Field delimiter; default: sniffed from the file (comma, semicolon, tab or pipe).")
    score_range: tuple[float, float] = Field(
        default=(0.0, 1.0), description="[low, high] of the score scale; score_delta uses (s-low)/(high-low)."
    )
    score_resolution: float | None = Field(
        default=None, gt=0, description="Grid of the scores, in their units (1 for integer scores); every "
        "test on paired differences runs on that grid. Default: inferred from the scores (a decimal grid, "
        "or 1/r of one for a mean of r replicates; none for continuous scores).")
    blind: bool | None = Field(
        default=None, description="The vendor scored the résumés of `audit export --for-vendor` blind: the "
        "file has the columns resume_id and score (opaque ids), read back through the export's key. "
        "Generator designs only. The file comes back after the lock, so its sha256 is recorded in the "
        "signed run, not in the lock.")


System = PrecomputedSystem
