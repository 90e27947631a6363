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
import re

from typing import Annotated, Literal, Union

from pydantic import (AfterValidator, BaseModel, field_validator, BeforeValidator, Discriminator, Field, StrictFloat, StrictInt, Tag,
                      WrapValidator, create_model)

from compiler.blocks import blocks as plugin_blocks, candidate_models, system_models
# moved to compiler.blocks.population; imported from here by compiler.designs.population and compiler.families.causal
from compiler.catalog import DEFAULT_K, METRICS, default_thresholds
from compiler.spectypes import Id, LlmEndpoint, Name, Strict

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

VariantId = Annotated[str, Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_-]*$", max_length=64)]
#: A level's cue: one text or a non-empty list of options (a single text is read as a list of one).
CueOptions = Annotated[
    list[str],
    BeforeValidator(lambda v: [v] if isinstance(v, str) else v, json_schema_input_type=Union[str, list[str]]),
    Field(min_length=1),
]
AxisName = Annotated[str, Field(pattern=r"^[a-z][a-z0-9_]*$", max_length=64)]


#: Longest label of a level (``axes.<axis>.labels``, issue 31 §3): it sits beside the level id in table cells.
MAX_LEVEL_LABEL = 120
MSG_LEVEL_LABEL_EMPTY = ("the label is empty; allowed: 1 to {max} characters of text (e.g. 'North African woman'), "
                         "or leave the level out")
MSG_LEVEL_LABEL_LONG = "the label has {n} characters; allowed: 1 to {max} characters of text (e.g. 'North African woman')"


def _level_label(text: str) -> str:
    """A level's label (``axes.<axis>.labels.<level>``): 1 to :data:`MAX_LEVEL_LABEL` characters, not blank."""
    if not text.strip():
        raise ValueError(MSG_LEVEL_LABEL_EMPTY.format(max=MAX_LEVEL_LABEL))
    if len(text) > MAX_LEVEL_LABEL:
        raise ValueError(MSG_LEVEL_LABEL_LONG.format(n=len(text), max=MAX_LEVEL_LABEL))
    return text


class NameLevel(Strict):
    """What one level's names signal (issue 32 §3): a race (by the surname) and a sex (by the first name)."""

    race: Literal["white", "black", "hispanic", "asian"] = Field(
        description="Race/ethnicity signalled by the surname (Census 2010 shares: non-Hispanic White, Black, "
        "Asian/NHPI; Hispanic).")
    sex: Literal["female", "male"] = Field(description="Sex signalled by the first name (SSA births).")


class NameCues(Strict):
    """Draw a name axis's cues from the bundled SSA and Census tables, each name kept only when its measured
    signals reach ``floor`` (issue 32 §3; :mod:`compiler.names`)."""

    table: Literal["us"] = Field(description="The name tables: us (SSA first names, Census 2010 surnames).")
    floor: float = Field(default=0.85, gt=0.5, le=1, description="Least signal of every name: share of the "
                         "level's sex among births with the first name, share of its race among people with the "
                         "surname.")
    per_level: int = Field(default=12, ge=1, le=200, description="Names drawn per level.")
    decade: Literal[1950, 1960, 1970, 1980, 1990, 2000] = Field(
        default=1990, description="Birth decade of the first names: the base candidates' careers start in "
        "2019-2021, so they were born in the 1990s.")
    levels: dict[Name, NameLevel] = Field(min_length=1, description="Race and sex of each level's names.")


class Axis(Strict):
    """One protected characteristic (seed 000 Table 1).

    ``cues`` maps each level to the text(s) that realise it in the ``slot`` of a resume. With a list,
    one option is picked per base candidate (deterministically from the seed); ``""`` writes nothing
    (for example ``disability_signal: No``); a name axis may instead draw its cues from the bundled name
    tables (``names``, issue 32 §3). Both are required when the tool writes the résumés; a
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
    names: NameCues | None = Field(
        default=None, description="Draw the cues of a name axis from the bundled name tables instead of listing "
        "them (issue 32 §3): {table: us, floor: 0.85, per_level: 12, levels: {level: {race, sex}}}.")
    labels: dict[Name, Annotated[str, AfterValidator(_level_label)]] | None = Field(
        default=None, description="A reader's name per level, printed beside the level id wherever the report "
        "shows the level (e.g. Female-NA: North African woman); 1 to 120 characters each (issue 31 §3).")


#: Perturbations the template generator makes of the reference résumé (issue 38 §1; :mod:`runtime.generate.perturb`).
TEMPLATE_PERTURBATIONS: tuple[str, ...] = ("summary_synonyms", "date_format", "bullet_glyph", "section_order",
                                           "typos", "line_breaks")
#: Perturbations the llm generator makes: the same base generated again, or an edit of the text below the cue block.
LLM_PERTURBATIONS: tuple[str, ...] = ("regenerate", "date_format", "bullet_glyph", "typos")
Perturbation = Literal["summary_synonyms", "date_format", "bullet_glyph", "section_order", "typos", "line_breaks",
                       "regenerate"]
#: Longest description of a score-file placebo variant.
MAX_CONTROL_DESCRIPTION = 400


class NegativeControl(Strict):
    """A negative control (placebo variant) of the reference résumé: a change that signals no protected
    characteristic, scored like a variant to measure the system's noise floor (issue 38; the complement of
    seed 003's positive control). The tool makes it (``perturbation``, template and llm designs), or the
    vendor did (``description``, a score-file audit, whose file holds ``variant: <id>`` rows)."""

    id: Annotated[str, Field(pattern=r"^[A-Za-z0-9_-]+$", max_length=64)] = Field(
        description="The control's id (letters, digits, _ and -), not a variant id.")
    perturbation: Perturbation | None = Field(
        default=None, description="What the tool changes in the reference résumé. template: summary_synonyms, "
        "date_format, bullet_glyph, section_order, typos, line_breaks; llm: regenerate (the reference résumé of the "
        "same base candidate written again by the generator, a call of its own per base candidate), date_format, "
        "bullet_glyph, typos.")
    description: str | None = Field(
        default=None, min_length=1, max_length=MAX_CONTROL_DESCRIPTION,
        description="What the vendor changed, in words (a score-file audit, required; 1 to 400 characters); for a "
        "control the tool makes, an optional note on the design (why this control), printed beside it in the report.")


#: Perturbations the template generator makes to weaken the reference résumé (issue 39 §6; a positive control:
#: :mod:`runtime.generate.perturb`).
POSITIVE_PERTURBATIONS: tuple[str, ...] = ("drop_required_skill", "seniority_down")
PositivePerturbation = Literal["drop_required_skill", "seniority_down"]


class PositiveControl(Strict):
    """A positive control of the reference résumé (issue 39 §6; seed 003 §3.7's positive control, made a
    variant): a change that should lower the score of a system that reads the résumé's content, scored like a
    variant so that the validity protocol can test the audit's sensitivity at its own n
    (``analysis.validity.positive_control: {contrast: control, control: <id>}``). The tool makes it
    (``perturbation``, template design), or the vendor did (``description``, a score-file audit, whose file holds
    ``variant: <id>`` rows for every (job_id, cv_id)). It is no category: no metric row, no headline."""

    id: Annotated[str, Field(pattern=r"^[A-Za-z0-9_-]+$", max_length=64)] = Field(
        description="The control's id (letters, digits, _ and -), neither a variant id nor a negative control id.")
    perturbation: PositivePerturbation | None = Field(
        default=None, description="What the template generator takes out of the reference résumé: "
        "drop_required_skill (one of the job's required tools the résumé lists, wherever it is written), "
        "seniority_down (every role's title one stage less senior).")
    description: str | None = Field(
        default=None, min_length=1, max_length=MAX_CONTROL_DESCRIPTION,
        description="What the vendor changed, in words (a score-file audit, required; 1 to 400 characters); for a "
        "control the tool makes, an optional note printed beside it in the report.")


class Variants(Strict):
    """Treatments: an explicit table, one variant per non-reference level (one_at_a_time), or the full
    cross of the declared axes (factorial; seed 003 §3.5, Study 1); and the placebo variants of the
    reference résumé (``negative_controls``, issue 38); its weakened copies (``positive_controls``, issue 39)."""

    reference: VariantId = Field(default="BASE", description="The reference variant.")
    design: Literal["explicit", "one_at_a_time", "factorial"] = "explicit"
    table: dict[VariantId, dict[Name, Name]] = Field(
        default_factory=dict,
        description="variant id -> {axis: level}. Required for design explicit; for "
        "one_at_a_time and factorial only the reference row may be given.",
    )
    negative_controls: list[NegativeControl] | None = Field(
        default=None, min_length=1, description="Placebo variants of the reference résumé (issue 38): each "
        "system's noise floor. Absent from the resolved spec unless written.")
    positive_controls: list[PositiveControl] | None = Field(
        default=None, min_length=1, description="Weakened copies of the reference résumé (issue 39 §6): the "
        "validity protocol's sensitivity check (analysis.validity.positive_control: {contrast: control}). "
        "Absent from the resolved spec unless written.")


class Job(Strict):
    """A job order. Only ``id`` is needed when every system is precomputed."""

    id: Id
    title: str | None = None
    family: TemplateFamily | None = Field(
        default=None, description="Template-generator content family; default: the job id."
    )
    onet: str | None = Field(
        default=None, description="O*NET-SOC code of the occupation (e.g. 53-7062.00): the template generator "
        "writes the posting and the résumés from the bundled O*NET 29.3 tables (issue 32); instead of family.")
    description: str | None = Field(default=None, description="The job's text (not empty).")
    description_file: str | None = Field(
        default=None, description="Markdown/text file, relative to the spec's folder."
    )

    @field_validator("onet")
    @classmethod
    def _onet_code(cls, v: str | None) -> str | None:
        if v is not None and not re.fullmatch(r"\d{2}-\d{4}\.\d{2}", v):
            raise ValueError("not an O*NET-SOC code; allowed: NN-NNNN.NN, e.g. 53-7062.00 (Laborers and Freight, "
                             "Stock, and Material Movers, Hand)")
        return v

    @field_validator("description")
    @classmethod
    def _text_not_empty(cls, v: str | None) -> str | None:
        if v is not None and not v.strip():
            raise ValueError("the description is empty; give the job's text, or leave the key out")
        return v


#: ``candidates.generator`` -> its spec model (:mod:`compiler.blocks`): template, llm, population, then
#: installed plug-ins'.
CANDIDATE_MODELS: dict[str, type[BaseModel]] = candidate_models()
#: Allowed ``candidates.generator`` values (``template`` when the key is left out).
GENERATORS: tuple[str, ...] = tuple(CANDIDATE_MODELS)


def _generator_tag(value: object) -> str | None:
    """``candidates.generator``, ``template`` when absent (specs written before the LLM generator)."""
    if isinstance(value, dict):
        return value.get("generator", "template")
    return getattr(value, "generator", None)


CandidatesSpec = Annotated[
    Union[tuple(Annotated[model, Tag(gen)] for gen, model in CANDIDATE_MODELS.items())],
    Discriminator(_generator_tag, custom_error_type="invalid_generator",
                  custom_error_message=f"unknown generator; allowed: {', '.join(GENERATORS)}"),
]

#: ``systems[].kind`` -> its spec model (:mod:`compiler.blocks`): embedding, precomputed, llm_score,
#: llm_compare, then installed plug-ins'.
SYSTEM_MODELS: dict[str, type[BaseModel]] = system_models()
System = Annotated[Union[tuple(SYSTEM_MODELS.values())], Field(discriminator="kind")]
#: Allowed ``systems[].kind`` values, in the order of the union above.
SYSTEM_KINDS: tuple[str, ...] = tuple(SYSTEM_MODELS)
#: System kinds scored by an LLM: those whose model has the fields by which an LLM is called
#: (:class:`compiler.spectypes.LlmEndpoint`).
LLM_SYSTEM_KINDS: tuple[str, ...] = tuple(k for k, m in SYSTEM_MODELS.items() if issubclass(m, LlmEndpoint))


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


#: Standardisers of a SESOI in d (issue 30 §1): the SD of the contrast's two groups of scores
#: (``pooled``, seed 003's s_p), the SD within job, pooled over jobs, or within job x match stratum.
STANDARDISERS: tuple[str, ...] = ("pooled", "within_job", "within_job_match")
MSG_SESOI_FORMS = ("a number (|d| against the pooled SD, 0 < d <= 5), {selection_ratio: m} with 0 < m < 1, "
                   "{score: x} with x > 0 on the system's own score scale, or {d: x, standardiser: "
                   "pooled | within_job | within_job_match}")
MSG_SESOI = "{problem}; allowed: "


class SesoiRatio(Strict):
    """The SESOI as a selection ratio at the decision rule (issue 30 §1): the implied score shift δ*
    brings the reference's selection ratio down to m."""

    selection_ratio: float = Field(gt=0, lt=1, description="m, 0 < m < 1 (e.g. 0.8).")


class SesoiScore(Strict):
    """The SESOI as a shift on the system's own score scale (issue 30 §1)."""

    score: float = Field(gt=0, description="x > 0, in the system's score units.")


class SesoiD(Strict):
    """The SESOI as a standardised difference with a named standardiser (issue 30 §1)."""

    d: float = Field(gt=0, le=5, description="|d|.")
    standardiser: Literal["pooled", "within_job", "within_job_match"] = Field(
        default="pooled", description="pooled: the SD of the contrast's two groups (seed 003); within_job: the "
        "SD within job, pooled; within_job_match: the SD within job x match stratum, pooled.")


def _sesoi_problem(problem: str) -> ValueError:
    return ValueError(MSG_SESOI.format(problem=problem) + MSG_SESOI_FORMS)


def _sesoi_form(value, handler):
    """One message for a bad SESOI (issue 30 §1): what is wrong and the allowed forms."""
    from pydantic import ValidationError

    if isinstance(value, dict):
        keys = [k for k in ("selection_ratio", "score", "d") if k in value]
        if len(keys) != 1:
            got = ", ".join(map(str, value)) or "none"
            raise _sesoi_problem(f"takes exactly one of selection_ratio, score, d (got keys: {got})")
        model = {"selection_ratio": SesoiRatio, "score": SesoiScore, "d": SesoiD}[keys[0]]
        try:
            model.model_validate(value)
        except ValidationError as err:
            e = err.errors(include_url=False)[0]
            where = ".".join(str(p) for p in e["loc"])
            got = e.get("input")
            raise _sesoi_problem(f"{where}: {e['msg'][0].lower() + e['msg'][1:]} (got {got!r})") from None
        return handler(value)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise _sesoi_problem("a number or a mapping")
    if not 0 < value <= 5:
        raise _sesoi_problem("a number is |d|, 0 < d <= 5")
    return handler(value)


class EffectSize(Strict):
    """Effect sizes with equivalence tests, models and sensitivity (seed 003 §3.7)."""

    sesoi: Annotated[Annotated[float, Field(gt=0, le=5)] | SesoiRatio | SesoiScore | SesoiD,
                     WrapValidator(_sesoi_form)] = Field(
        default=0.2, description="Smallest effect size of interest (issue 30 §1): a number = |d| against the "
        "pooled SD; {selection_ratio: m} = the score shift that brings the selection ratio at the decision "
        "rule to m; {score: x} = a shift of x on the system's scale; {d: x, standardiser: ...}.")
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
        description="Ignored (issue 39 §6): the self-test plants the SESOI's score shift delta* in one category "
        "at a time; a shift in standard errors fixed the planted paired t. Kept so that earlier specs load; "
        "validate warns.")


class PositiveContrast(Strict):
    """A contrast the instrument must detect (seed 003 §3.7): matching against non-matching base candidates
    (``contrast: match``, a relevance check), an axis level against its reference (``contrast: axis``), or a
    declared positive control against the reference variant (``contrast: control``, issue 39 §6: the
    sensitivity check, a one-sided paired test at alpha at the audit's n)."""

    contrast: Literal["match", "axis", "control"] = "match"
    axis: AxisName | None = None
    level: Name | None = None
    control: Annotated[str, Field(pattern=r"^[A-Za-z0-9_-]+$", max_length=64)] | None = Field(
        default=None, description="contrast: control: the id of a variants.positive_controls entry.")
    min_d: float = Field(default=0.5, gt=0, le=10, description="Cohen's d the contrast must reach (match, axis; "
                         "with contrast: control, the d of the match relevance check kept beside it).")
    direction: Literal["higher", "lower", "either"] = Field(
        default="higher", description="Sign d must have (match: matching candidates score higher; control: the "
        "sign of the control's shift, lower for a weakened résumé).")


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

    Both criteria also run within each job's reference top-2K (K the shortlist: ``k.group``, or the
    reference résumés meeting ``decision.threshold``; issue 39 §6): a ceiling at the shortlist hides a
    bias where the selection is made, even when the share over all scores passes.
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

    positive_control: PositiveContrast = Field(default_factory=PositiveContrast)
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
    multiplicity: Literal["hierarchical", "graphical", "per_metric", "run"] | None = Field(
        default=None, description="Which p-values of the metric suite share an adjustment (issue 29): run "
        "(the default of this methods version; seed 000 §3.5) adjusts every p-value of the run together by "
        "Benjamini-Hochberg; per_metric one metric's rows of one system; hierarchical, per system, the "
        "categories' score tests by BH, then the MARC and McNemar tests of each rejected category at "
        "alpha*R/m (Benjamini & Bogomolov 2014); graphical, per system, a graph that passes a rejected score "
        "test's alpha to its category's two tests (Bretz et al. 2009, family-wise). A family never spans "
        "systems.")
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


class SystemExecution(Strict):
    """How one remote system (``kind: http``) is called, or a vendor's program (``command``, ``python``) run:
    limits and retries, not hashed (issue 35 §2, issue 36 §2). A key left out keeps the kind's default."""

    concurrency: int = Field(default=4, ge=1, le=256, description="Requests in flight at once (http, default 4), or "
                             "processes at once (command, python: default 1).")
    requests_per_s: float | None = Field(default=None, gt=0, le=10_000, description="Most requests started per "
                                         "second; default: no limit.")
    timeout_s: float = Field(default=60.0, gt=0, le=3600, description="Seconds per request (http), or per request "
                             "batch's process (command, python).")
    retries: int = Field(default=6, ge=0, le=50, description="Retries of a request after 429 (waiting its "
                         "Retry-After), 5xx, timeouts and lost connections (backoff with jitter).")


class Execution(Strict):
    """How to run, not what to compute: excluded from the spec hash (``NON_SEMANTIC_KEYS``)."""

    systems: dict[Id, SystemExecution] = Field(
        default_factory=dict, description="Per system id: how a remote system (kind: http) is called "
        "(concurrency 4, requests_per_s none, timeout_s 60, retries 6), or a vendor's program (kind: command, "
        "python) run (concurrency 1, timeout_s 60; requests_per_s and retries are http's: refused at validate for a program).")

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
    torch_threads: int | None = Field(default=None, ge=1, le=1024, description="Threads torch uses inside an "
                                      "embedding system (torch.set_num_threads, pinned when the system is set up "
                                      "and recorded per system in run.json); default: torch's own (the machine's "
                                      "cores). Measured on the example's batches, 1, 2 and 4 threads give the same "
                                      "embedding bytes (bench/results/torch_threads.json).")
    engine: Literal["local", "ray"] = Field(default="local", description="Where the score batches run (issue 40): "
                                            "local (this process) or ray (a Ray cluster; needs "
                                            "audit-compiler[ray]). Every engine gives the same bytes. "
                                            "`audit execute --engine` overrides it.")
    ray_address: str | None = Field(default=None, min_length=1, max_length=1000, description="engine: ray: the "
                                    "address of a running Ray cluster to attach to (host:port of its head, or "
                                    "ray://host:port), left running at the end; default: a private Ray instance "
                                    "on this machine, started and shut down by the run (RAY_ADDRESS is ignored). "
                                    "`audit execute --ray-address` overrides it.")
    workers: int | None = Field(default=None, ge=1, le=4096, description="engine: ray: the processes that score "
                                "batches at once (one CPU each); default: the cluster's CPUs (a private instance: "
                                "this machine's cores). `audit execute --workers` overrides it.")


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


class DisclosureAedt(Strict):
    """The automated employment decision tool (AEDT) audited."""

    name: str = Field(min_length=1, max_length=200, description="The tool's name.")
    version: str = Field(min_length=1, max_length=100, description="Its version or release.")
    distributed: datetime.date = Field(description="The date the employer began using it (YYYY-MM-DD), "
                                       "printed on the summary (6 RCNY §5-304).")


class DisclosureAuditor(Strict):
    """The independent auditor (6 RCNY §5-300)."""

    name: str = Field(min_length=1, max_length=200, description="The auditor (a person or organisation).")
    independence: str = Field(min_length=1, max_length=4000, description="Why the auditor is independent of the "
                              "employer and of the tool's vendor (6 RCNY §5-300, independent auditor).")


class DisclosureData(Strict):
    """The data the audit read."""

    source: str = Field(min_length=1, max_length=1000, description="Where the data comes from (e.g. an ATS "
                        "export and the requisitions it covers).")
    from_: datetime.date | None = Field(default=None, alias="from", description="First date of the data (YYYY-MM-DD); "
                                        "required with applicant files.")
    to: datetime.date | None = Field(default=None, description="Last date of the data (YYYY-MM-DD); required with "
                                     "applicant files.")


class Responsible(Strict):
    """A person responsible for the test record (EU AI Act Annex IV §2(g))."""

    name: str = Field(min_length=1, max_length=200)
    role: str = Field(min_length=1, max_length=100, description="Their role; a signing key of the same role "
                      "(audit keygen --role) signs as them.")
    organisation: str | None = Field(default=None, min_length=1, max_length=200)


class Disclosure(Strict):
    """What a published LL144 summary names (6 RCNY §5-304) and an EU AI Act Annex IV §2(g) test record needs."""

    employer: str | None = Field(default=None, min_length=1, max_length=200, description="The employer or "
                                 "employment agency that uses the tool.")
    aedt: DisclosureAedt | None = None
    auditor: DisclosureAuditor | None = None
    data: DisclosureData | None = None
    provider: str | None = Field(default=None, min_length=1, max_length=200, description="The provider of the "
                                 "AI system (EU AI Act); with it the report holds the Annex IV test record.")
    intended_purpose: str | None = Field(default=None, min_length=1, max_length=4000,
                                         description="The system's intended purpose (Annex IV §1(a)).")
    responsible: list[Responsible] | None = Field(default=None, min_length=1, description="The persons "
                                                  "responsible for the test record, each with a role.")


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
    jobs: list[Job] = Field(default_factory=list, min_length=1, description="Required (at least one) unless "
                            "every system is an applicant_file.")
    candidates: CandidatesSpec | None = None
    systems: list[System] = Field(min_length=1)
    source: ScoreSource | None = Field(default=None, description="Provenance of the score export, when a "
                                       "system is precomputed: producer, system and version, export date, how "
                                       "the variants were made, contact.")
    disclosure: Disclosure | None = Field(default=None, description="What a published summary and a test "
                                          "record name: employer, tool, auditor, data, and (EU AI Act Annex IV) "
                                          "provider, intended purpose, responsible persons.")
    analysis: Analysis = Field(default_factory=Analysis)
    thresholds: Thresholds = Field(default_factory=Thresholds)
    execution: Execution = Field(default_factory=Execution)
