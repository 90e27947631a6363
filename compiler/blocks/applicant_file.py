"""Spec model of the ``applicant_file`` system kind: ``systems[i]`` with ``kind: applicant_file``, the
employer's historical applicants of an automated employment decision tool (issue 34; 6 RCNY §5-301
prefers the tool's historical data).

One row per applicant: an id, sex, race/ethnicity and the tool's outcome (selected, or a score), an
optional group (a requisition, a job) and date. Every label the file uses is mapped to a category id
of :mod:`compiler.blocks.ll144` (``""`` maps an empty cell). The rows are personal data (GDPR Art. 9):
the tool reads them in memory and keeps none of them.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from compiler.blocks.ll144 import RaceId, SexId
from compiler.spectypes import Id, Strict

#: The ``systems[].kind`` this model declares.
KIND = "applicant_file"
#: Position among the built-in kinds (after the LLM screeners).
ORDER = 5

#: The product's columns of an applicant file (``columns`` maps them to the file's names).
ApplicantColumn = Literal["id", "sex", "race_ethnicity", "selected", "score", "group", "date"]


class ApplicantLabels(Strict):
    """Every label the file uses -> a category id (``""``: an empty cell)."""

    sex: dict[str, SexId] = Field(min_length=1, description="Each label of the sex column -> male, female or "
                                  "unknown.")
    race_ethnicity: dict[str, RaceId] = Field(
        min_length=1, description="Each label of the race/ethnicity column -> an EEO-1 category "
        "(hispanic_or_latino, white, black_or_african_american, native_hawaiian_or_pacific_islander, asian, "
        "american_indian_or_alaska_native, two_or_more_races) or unknown.")


class ApplicantFileSystem(Strict):
    """Historical applicants of the tool: CSV ``id, sex, race_ethnicity, selected | score[, group][, date]``
    under the file's own names when ``columns`` maps them."""

    id: Id
    kind: Literal["applicant_file"]
    path: str = Field(description="CSV file, relative to the spec's folder (read at validate and at execute; "
                      "only its sha256 and row count are kept).")
    outcome: Literal["selected", "score"] = Field(
        description="selected: the tool's decision per applicant (1/0, true/false, yes/no), selection rates; "
        "score: its score (needs score_range), scoring rates (share above the median).")
    score_range: tuple[float, float] | None = Field(
        default=None, description="[low, high] of the scores; required with outcome: score.")
    columns: dict[ApplicantColumn, str] | None = Field(
        default=None, description="The file's column name for each product column it names differently, e.g. "
        "{id: applicant_id, sex: gender, race_ethnicity: ethnicity, selected: advanced, group: requisition, "
        "date: applied_on}.")
    delimiter: Literal[",", ";", "\t", "|"] | None = Field(
        default=None, description="Field delimiter; default: sniffed from the file.")
    labels: ApplicantLabels = Field(description="Every label in the file -> a category id.")
    retention_days: int = Field(ge=1, le=3650, description="How long the auditor keeps the applicant file (1 to 3650 days); "
                                "printed in the report.")


System = ApplicantFileSystem
