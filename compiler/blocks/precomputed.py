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
    ignore_columns: list[str] | None = Field(
        default=None, description="File columns read and skipped (e.g. [Model Version]); they still count in "
        "the file's sha256, which is always the digest of the file as received.")
    values: dict[str, dict[str, str]] | None = Field(
        default=None, description="Per file column, the file's values mapped to spec ids or axis levels, e.g. "
        "{Requisition: {REQ-40117: req-40117}, Persona: {White Male: WHITE_M}}.")
    case_insensitive: bool | None = Field(
        default=None, description="Match ids (and keys of values) that differ by case only.")
    variant_from: dict[str, str] | None = Field(
        default=None, description="Axis -> file column, e.g. {race: Race, sex: Gender}: the variant is the row "
        "of the spec's variant table with those levels (instead of columns.variant).")
    decimal: Literal[".", ","] | None = Field(
        default=None, description="Decimal mark of the scores; default '.'.")
    thousands: Literal[",", ".", " ", "'"] | None = Field(
        default=None, description="Thousands separator of the scores (only between groups of three digits); "
        "default: none.")
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
