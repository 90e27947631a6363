"""Spec model of the ``population`` generator: ``candidates`` with ``generator: population``
(seed 001 §4: population-representative profiles, path-specific effects)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from compiler.spectypes import Name, Strict

#: The ``candidates.generator`` this model declares.
GENERATOR = "population"
#: Position among the built-in generators (the ``candidates`` union and every list of generators follow it).
ORDER = 2

#: Profile attributes a population design can give a causal role (seed 001 Table 2).
POPULATION_ATTRIBUTES: tuple[str, ...] = (
    "gender", "race", "age", "education", "experience", "first_name", "surname", "region")
PopulationAttribute = Literal["gender", "race", "age", "education", "experience", "first_name", "surname", "region"]
#: Levels of the attributes that can be the protected attribute X.
PROTECTED_LEVELS: dict[str, tuple[str, ...]] = {
    "gender": ("female", "male"), "race": ("white", "black", "asian", "hispanic")}
#: Microdata columns the population generator reads (values in the generator's vocabulary).
MICRODATA_FIELDS: tuple[str, ...] = (
    "gender", "race", "age", "state", "education", "occupation", "experience", "weight")
MicrodataField = Literal["gender", "race", "age", "state", "education", "occupation", "experience", "weight"]


class ProtectedAttribute(Strict):
    """X of seed 001 §2.2 with its reference level x0 and comparison level x1 (effects: x1 vs x0)."""

    attribute: Literal["gender", "race"]
    x0: Name = Field(description="Reference level (e.g. female).")
    x1: Name = Field(description="Comparison level (e.g. male); positive effects favour x1.")


class CausalRoles(Strict):
    """Standard fairness model roles (seed 001 §2.2, §3.1): X, confounders Z, mediators B and R."""

    x: ProtectedAttribute
    z: list[PopulationAttribute] = Field(description="Confounders, not caused by X (e.g. age, race).")
    b: list[PopulationAttribute] = Field(description="Business-necessity mediators (education, experience).")
    r: list[PopulationAttribute] = Field(description="Redlining mediators (first_name, surname, region).")


class Microdata(Strict):
    """Auditor-supplied microdata for P1 (e.g. an ACS PUMS extract), resampled per job."""

    path: str = Field(description="CSV file, relative to the spec's folder.")
    columns: dict[MicrodataField, str] = Field(
        description="Generator field -> CSV column. gender, race, age, state, education are required; "
        "occupation (values = job ids), experience (years) and weight are optional. Values use the "
        "generator's vocabulary (gender female/male, race white/black/asian/hispanic, USPS state "
        "codes, the seven education levels).")


class ExperienceP2(Strict):
    """P2 (seed 001 Assumption 2): TruncNormal(mean, sd, [0, age - 18]).

    mean = share x max(0, age - typical graduation age of the education level). Fitted instead
    when the microdata maps an experience column.
    """

    share: float = Field(default=0.85, gt=0, le=1)
    sd: float = Field(default=2.0, gt=0, le=20)


class CausalEstimation(Strict):
    """DML-UCA settings (seed 001 §3.2, §5.1)."""

    folds: int = Field(default=5, ge=2, le=20, description="L of the cross-fitting.")
    bootstrap: int = Field(default=500, ge=100, le=100_000, description="Multiplier-bootstrap draws.")
    alpha: float = Field(default=0.05, gt=0, lt=1)
    margin: float | None = Field(
        default=None, gt=0, le=1,
        description="Equivalence margin of the path-specific effects in normalised score units (the system's "
        "score_range mapped onto [0, 1]), 0 < margin <= 1: an effect is equivalent to 0 (≃ 0) when its 90% "
        "interval lies inside ±margin; PASS needs NDE and RIE equivalent (issue 39 §7). Default: the methods "
        "version's (compiler.methods.CAUSAL_MARGIN, 0.02: seed 000 Table 3's PASS bound of the score gap); "
        "absent from the resolved spec unless written.")


class PopulationCandidates(Strict):
    """Population-representative profiles per job and a causal decomposition (seed 001 §3-§5).

    The occupation of each job is its template family (the bundled BLS/O*NET tables hold those).
    """

    generator: Literal["population"]
    profiles_per_job: int = Field(ge=50, le=1_000_000, description="Profiles sampled per job.")
    roles: CausalRoles
    age: tuple[int, int] = Field(default=(18, 44), description="[min, max] age (seed 001: 18-44).")
    experience: ExperienceP2 = Field(default_factory=ExperienceP2)
    microdata: Microdata | None = Field(default=None, description="P1 source; default: the bundled approximation.")
    estimation: CausalEstimation = Field(default_factory=CausalEstimation)


Candidates = PopulationCandidates
