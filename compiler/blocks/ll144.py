"""Spec block of the ``ll144`` audit family: ``analysis.ll144`` (NYC Local Law 144 impact ratios).

The categories are those of the rules of the NYC Department of Consumer and Worker Protection
(6 RCNY §5-300, "impact ratio"; §5-301, bias audit of an AEDT): sex, the race/ethnicity categories of
the EEO-1 Component 1 report, and their intersection. The ids are fixed here; the report prints the
EEO-1 labels (:data:`LABELS`).
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from compiler.spectypes import Name, Strict

KEY = "ll144"

#: Sex categories (6 RCNY §5-301(b)).
SEX = ("male", "female")
#: Race/ethnicity categories of the EEO-1 Component 1 report, in its order (6 RCNY §5-301(b)).
RACE_ETHNICITY = ("hispanic_or_latino", "white", "black_or_african_american", "native_hawaiian_or_pacific_islander",
                  "asian", "american_indian_or_alaska_native", "two_or_more_races")
#: Individuals whose category is not known: counted, never rated.
UNKNOWN = "unknown"
#: Category id -> the label the report prints (EEO-1 wording).
LABELS = {"male": "Male", "female": "Female", "hispanic_or_latino": "Hispanic or Latino", "white": "White",
          "black_or_african_american": "Black or African American",
          "native_hawaiian_or_pacific_islander": "Native Hawaiian or Pacific Islander", "asian": "Asian",
          "american_indian_or_alaska_native": "American Indian or Alaska Native",
          "two_or_more_races": "Two or More Races", "unknown": "Unknown"}

SexId = Literal["male", "female", "unknown"]
RaceId = Literal["hispanic_or_latino", "white", "black_or_african_american", "native_hawaiian_or_pacific_islander",
                 "asian", "american_indian_or_alaska_native", "two_or_more_races", "unknown"]


class SexMapping(Strict):
    """Which axis carries sex, and the category of each of its levels."""

    axis: Name = Field(description="An axis of the spec (axes.<name>).")
    levels: dict[Name, SexId] = Field(min_length=1, description="Every level of the axis -> male, female or "
                                      "unknown.")


class RaceMapping(Strict):
    """Which axis carries race/ethnicity, and the EEO-1 category of each of its levels."""

    axis: Name = Field(description="An axis of the spec (axes.<name>).")
    levels: dict[Name, RaceId] = Field(min_length=1, description="Every level of the axis -> an EEO-1 "
                                       "race/ethnicity category (hispanic_or_latino, white, black_or_african_american, "
                                       "native_hawaiian_or_pacific_islander, asian, american_indian_or_alaska_native, "
                                       "two_or_more_races) or unknown.")


class SmallCategoryRule(Strict):
    """Leave categories under 2% of the individuals out of the impact-ratio calculation (6 RCNY §5-301(d))."""

    justification: str = Field(min_length=1, description="Why the rule is applied (printed with the tables).")


class Ll144Bounds(Strict):
    """Status bounds on an impact ratio: PASS at or above ``pass``, INVESTIGATE at or above ``investigate``."""

    pass_: float = Field(alias="pass", gt=0, le=1)
    investigate: float = Field(gt=0, le=1)


class Ll144Thresholds(Strict):
    """Pass lines the auditor sets (the law sets none); ``operational`` defaults to ``research``."""

    research: Ll144Bounds
    operational: Ll144Bounds | None = None


class Block(Strict):
    """NYC Local Law 144 selection or scoring rates and impact ratios by sex, race/ethnicity and both."""

    why_test_data: str | None = Field(default=None, description="Why historical data was not used (6 RCNY "
                                      "§5-302): printed in the report beside how the test data was made. Required "
                                      "on test data; refused with applicant files (historical data).")
    sex: SexMapping | None = Field(default=None, description="The axis whose levels give sex.")
    race_ethnicity: RaceMapping | None = Field(default=None, description="The axis whose levels give the EEO-1 "
                                               "race/ethnicity category.")
    rate: Literal["auto", "selection", "scoring"] = Field(
        default="auto", description="selection: share selected by analysis.decision (a threshold, or top_k "
        "under swap_in ranking); scoring: share scored above the median of the group (6 RCNY §5-300); auto: "
        "selection where the spec states a rule that selects, else scoring.")
    small_category_rule: SmallCategoryRule | None = Field(
        default=None, description="Exclude categories with under 2% of the individuals from the reference "
        "and the ratios, with a justification.")
    thresholds: Ll144Thresholds | None = Field(
        default=None, description="Optional status bounds on the impact ratios (not in the law).")
    bootstrap: int = Field(default=1000, ge=100, le=100_000, description="Resamples of the percentile "
                           "bootstrap interval of each ratio (beyond the law).")
