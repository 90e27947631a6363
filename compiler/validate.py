"""Semantic checks that need several parts of the spec at once.

Each check returns :class:`~compiler.errors.Issue` objects located in the YAML file, so the user sees
every problem of a spec at once. Messages are module constants, asserted by golden tests.
"""

from __future__ import annotations

from jinja2 import Environment, TemplateSyntaxError

from compiler.catalog import METRICS, TIERS
from compiler.errors import Issue, SpecError
from compiler.llm import MSG_SAME_FAMILY, model_family
from compiler.load import LoadedSpec, dotted
from compiler.paths import (MSG_FILE_ABSOLUTE, MSG_FILE_ESCAPES, MSG_FILE_MISSING, MSG_NOT_A_FILE,  # noqa: F401
                            MSG_NOT_A_FOLDER, WEIGHT_FILES, resolve_inside, weight_files)
from compiler.population import is_population, population_issues
from compiler.spec import TEMPLATE_FAMILIES
from compiler.validate_effects import CHECKS as EFFECT_CHECKS

MSG_CUE_UNKNOWN_LEVEL = "cue for {level!r}, which is not a level of axis {axis!r}; levels: {levels}"
MSG_CUE_MISSING = "level {level!r} has no cue; every level needs one ('' writes nothing)"
MSG_DUP_LEVEL = "level {level!r} is listed twice"
MSG_AXIS_REF = "reference level {level!r} is not a level of axis {axis!r}; levels: {levels}"
MSG_VARIANT_AXIS = "unknown axis {axis!r}; axes: {axes}"
MSG_VARIANT_LEVEL = "undefined level {level!r} for axis {axis!r}; allowed: {levels}"
MSG_VARIANT_MISSING_AXIS = "variant {variant!r} does not set axis {axis!r}; every variant sets every axis"
MSG_NO_REFERENCE = "reference variant {ref!r} is not in variants.table; variants: {variants}"
MSG_EXPLICIT_EMPTY = "design explicit needs a variants.table with the reference and at least one variant"
MSG_ONE_AT_A_TIME_TABLE = "design one_at_a_time derives the variants; the table may hold only the reference {ref!r}"
MSG_DUP_ID = "duplicate {what} id {id!r} (also at {first})"
MSG_DUP_VARIANT = "variants {a!r} and {b!r} set the same levels"
MSG_M_GT_K = "matching_per_job (M={m}) must be <= base_per_job (K={k})"
MSG_K_LT_k = "base_per_job (K={k}) must be >= the largest analysis.k ({family}: {kk})"
MSG_NO_CANDIDATES = "candidates is required when a system is not precomputed (systems: {systems})"
MSG_JOB_TEXT = "job {id!r} needs a description or description_file (a system scores its text)"
MSG_JOB_BOTH = "give description or description_file, not both"
MSG_FAMILY = "job {id!r} has no template family; set family to one of: {families}"
MSG_INVERTED = (
    "{metric} is {direction}-is-better, so investigate ({inv}) must be {op} pass ({pas}); "
    "the investigate bound must be looser than the pass bound"
)
MSG_SCORE_RANGE = "score_range must be [low, high] with low < high (got {rng})"
MSG_NO_WEIGHTS = "model folder {path!r} holds no weights file (model.safetensors or pytorch_model.bin)"
MSG_NOT_UTF8 = "file {path!r} is not UTF-8 text ({err})"
MSG_SLOT_TAKEN = "slot {slot!r} is already written by axis {other!r}; each axis needs its own slot"
MSG_AXIS_REF_CONFLICT = (
    "reference level {level!r} contradicts the reference variant {ref!r}, which sets {axis} = {given!r}"
)
MSG_GENERATED_ID_CLASH = (
    "reference variant id {ref!r} clashes with a variant id that design one_at_a_time generates "
    "(V01..V{n:02d}); use another id, e.g. BASE"
)


def _axes_issues(ls: LoadedSpec) -> list[Issue]:
    out = []
    slots: dict[str, str] = {}
    ref_row = ls.spec.variants.table.get(ls.spec.variants.reference, {})
    for name, axis in ls.spec.axes.items():
        if axis.slot in slots:
            out.append(ls.issue(("axes", name, "slot"), MSG_SLOT_TAKEN.format(slot=axis.slot, other=slots[axis.slot])))
        slots.setdefault(axis.slot, name)
        if axis.reference is not None and ref_row.get(name) not in (None, axis.reference):
            out.append(ls.issue(("axes", name, "reference"), MSG_AXIS_REF_CONFLICT.format(
                level=axis.reference, ref=ls.spec.variants.reference, axis=name, given=ref_row[name])))
        seen: set[str] = set()
        for i, level in enumerate(axis.levels):
            if level in seen:
                out.append(ls.issue(("axes", name, "levels", i), MSG_DUP_LEVEL.format(level=level)))
            seen.add(level)
        levels = ", ".join(axis.levels)
        for level in axis.cues:
            if level not in axis.levels:
                out.append(ls.issue(("axes", name, "cues", level),
                                    MSG_CUE_UNKNOWN_LEVEL.format(level=level, axis=name, levels=levels), key=True))
        for level in axis.levels:
            if level not in axis.cues:
                out.append(ls.issue(("axes", name, "cues"), MSG_CUE_MISSING.format(level=level)))
        if axis.reference is not None and axis.reference not in axis.levels:
            out.append(ls.issue(("axes", name, "reference"),
                                MSG_AXIS_REF.format(level=axis.reference, axis=name, levels=levels)))
    return out


def _variants_issues(ls: LoadedSpec) -> list[Issue]:
    spec, out = ls.spec, []
    v = spec.variants
    axes = spec.axes
    if v.design == "factorial":
        pass  # compiler.validate_effects.factorial_issues
    elif v.design == "explicit":
        if len(v.table) < 2:
            out.append(ls.issue(("variants",), MSG_EXPLICIT_EMPTY))
        if v.table and v.reference not in v.table:
            out.append(ls.issue(("variants", "reference"),
                                MSG_NO_REFERENCE.format(ref=v.reference, variants=", ".join(v.table))))
    else:
        if set(v.table) - {v.reference}:
            out.append(ls.issue(("variants", "table"), MSG_ONE_AT_A_TIME_TABLE.format(ref=v.reference)))
        n = sum(len(a.levels) - 1 for a in axes.values())
        if v.reference in {f"V{i:02d}" for i in range(1, n + 1)}:
            out.append(ls.issue(("variants", "reference"), MSG_GENERATED_ID_CLASH.format(ref=v.reference, n=n)))
    seen: dict[tuple, str] = {}
    for vid, levels in v.table.items():
        for axis, level in levels.items():
            if axis not in axes:
                out.append(ls.issue(("variants", "table", vid, axis),
                                    MSG_VARIANT_AXIS.format(axis=axis, axes=", ".join(axes)), key=True))
            elif level not in axes[axis].levels:
                out.append(ls.issue(("variants", "table", vid, axis), MSG_VARIANT_LEVEL.format(
                    level=level, axis=axis, levels=", ".join(axes[axis].levels))))
        for axis in axes:
            if axis not in levels:
                out.append(ls.issue(("variants", "table", vid),
                                    MSG_VARIANT_MISSING_AXIS.format(variant=vid, axis=axis), key=True))
        combo = tuple(levels.get(a) for a in axes)
        if combo in seen and None not in combo:
            out.append(ls.issue(("variants", "table", vid), MSG_DUP_VARIANT.format(a=seen[combo], b=vid), key=True))
        seen.setdefault(combo, vid)
    return out


def _ids_issues(ls: LoadedSpec) -> list[Issue]:
    out = []
    for what, items in (("job", ls.spec.jobs), ("system", ls.spec.systems)):
        first: dict[str, int] = {}
        key = "jobs" if what == "job" else "systems"
        for i, item in enumerate(items):
            if item.id in first:
                where = dotted((key, first[item.id]))
                out.append(ls.issue((key, i, "id"), MSG_DUP_ID.format(what=what, id=item.id, first=where)))
            first.setdefault(item.id, i)
    return out


def _design_issues(ls: LoadedSpec) -> list[Issue]:
    spec, out = ls.spec, []
    needs_text = [s.id for s in spec.systems if s.kind != "precomputed"]
    c = spec.candidates
    if c is None:
        if needs_text:
            out.append(ls.issue(("candidates",), MSG_NO_CANDIDATES.format(systems=", ".join(needs_text))))
    elif c.generator == "template":
        if c.matching_per_job > c.base_per_job:
            out.append(ls.issue(("candidates", "matching_per_job"),
                                MSG_M_GT_K.format(m=c.matching_per_job, k=c.base_per_job)))
        k = spec.analysis.k
        family, kk = max(k.model_dump().items(), key=lambda kv: kv[1])
        if c.base_per_job < kk:
            out.append(ls.issue(("candidates", "base_per_job"), MSG_K_LT_k.format(k=c.base_per_job, family=family, kk=kk)))
    for i, job in enumerate(spec.jobs):
        if job.description is not None and job.description_file is not None:
            out.append(ls.issue(("jobs", i, "description_file"), MSG_JOB_BOTH))
        if needs_text and job.description is None and job.description_file is None:
            out.append(ls.issue(("jobs", i), MSG_JOB_TEXT.format(id=job.id)))
        if c is not None and c.generator == "template" and job.family is None \
                and job.id not in TEMPLATE_FAMILIES:
            out.append(ls.issue(("jobs", i), MSG_FAMILY.format(id=job.id, families=", ".join(TEMPLATE_FAMILIES))))
    for i, system in enumerate(spec.systems):
        lo, hi = system.score_range
        if not lo < hi:
            out.append(ls.issue(("systems", i, "score_range"), MSG_SCORE_RANGE.format(rng=[lo, hi])))
    return out


def _threshold_issues(ls: LoadedSpec) -> list[Issue]:
    out = []
    for tier in TIERS:
        tier_model = getattr(ls.spec.thresholds, tier)
        for mid, info in METRICS.items():
            b = getattr(tier_model, mid)
            if b is None:
                continue
            ok = b.investigate >= b.pass_ if info.direction == "lower" else b.investigate <= b.pass_
            if not ok:
                op = ">=" if info.direction == "lower" else "<="
                out.append(ls.issue(("thresholds", tier, mid, "investigate"), MSG_INVERTED.format(
                    metric=mid, direction=info.direction, inv=b.investigate, op=op, pas=b.pass_)))
    return out


def _file_issues(ls: LoadedSpec) -> list[Issue]:
    out = []
    refs: list[tuple[tuple, str, str]] = []
    for i, job in enumerate(ls.spec.jobs):
        if job.description_file:
            refs.append((("jobs", i, "description_file"), job.description_file, "text"))
    for i, system in enumerate(ls.spec.systems):
        if system.kind == "precomputed":
            refs.append((("systems", i, "path"), system.path, "file"))
        elif system.kind == "embedding" and system.model:
            refs.append((("systems", i, "model"), system.model, "folder"))
        elif system.kind in ("llm_score", "llm_compare"):
            for j, cond in enumerate(system.conditions):
                if not isinstance(cond, str):
                    refs.append((("systems", i, "conditions", j, "prompt_file"), cond.prompt_file, "text"))
            for job_id, ref in getattr(system, "references", {}).items():
                refs.append((("systems", i, "references", job_id), ref, "text"))
    for loc, ref, what in refs:
        path, err = resolve_inside(ls.folder, ref, want="folder" if what == "folder" else "file")
        if err is None and what == "text":
            try:
                path.read_text(encoding="utf-8")
            except UnicodeDecodeError as exc:
                err = MSG_NOT_UTF8.format(path=ref, err=exc.reason)
        if err is None and what == "folder" and not weight_files(path):
            err = MSG_NO_WEIGHTS.format(path=ref)
        if err:
            out.append(ls.issue(loc, err))
    return out


MSG_REFERENCE_JOB = "references names job {job!r}, which is not a job of the spec; jobs: {jobs}"
MSG_REFERENCE_NEEDED = (
    "job {job!r} has no template family, so llm_compare cannot draw a default reference resume; "
    "give references.{job}: <file> (a fixed reference candidate, seed 003 §3.4)"
)
MSG_DUP_CONDITION = "condition {id!r} is listed twice"
MSG_BAD_TEMPLATE = "prompt template {path!r} does not parse as jinja2: {err}"


def _llm_issues(ls: LoadedSpec) -> list[Issue]:
    """LLM systems: reference resumes per job, distinct conditions, custom templates that parse."""
    out = []
    job_ids = [j.id for j in ls.spec.jobs]
    families = {j.id: j.family or (j.id if j.id in TEMPLATE_FAMILIES else None) for j in ls.spec.jobs}
    for i, system in enumerate(ls.spec.systems):
        if system.kind not in ("llm_score", "llm_compare"):
            continue
        seen: set[str] = set()
        for j, cond in enumerate(system.conditions):
            cid = cond if isinstance(cond, str) else cond.id
            if cid in seen:
                out.append(ls.issue(("systems", i, "conditions", j), MSG_DUP_CONDITION.format(id=cid)))
            seen.add(cid)
            if not isinstance(cond, str):
                path, err = resolve_inside(ls.folder, cond.prompt_file)
                if err is None:
                    try:
                        Environment().parse(path.read_text(encoding="utf-8"))
                    except (TemplateSyntaxError, UnicodeDecodeError) as exc:
                        out.append(ls.issue(("systems", i, "conditions", j, "prompt_file"),
                                            MSG_BAD_TEMPLATE.format(path=cond.prompt_file, err=exc)))
        if system.kind == "llm_compare":
            for job_id in system.references:
                if job_id not in job_ids:
                    out.append(ls.issue(("systems", i, "references", job_id), MSG_REFERENCE_JOB.format(
                        job=job_id, jobs=", ".join(job_ids)), key=True))
            for job_id in job_ids:
                if job_id not in system.references and families[job_id] is None:
                    out.append(ls.issue(("systems", i), MSG_REFERENCE_NEEDED.format(job=job_id)))
    return out


CHECKS = (_axes_issues, _variants_issues, _ids_issues, _design_issues, _threshold_issues, _file_issues,
          _llm_issues)


def _effect_checks(ls: LoadedSpec) -> list[Issue]:
    return [issue for check in EFFECT_CHECKS for issue in check(ls)]


CHECKS += (_effect_checks,)


def validate(ls: LoadedSpec) -> None:
    """Run every semantic check; raise one :class:`SpecError` listing all problems found.

    Raises
    ------
    SpecError
        With one located issue per problem (levels, variants, reference, ids, M <= K, K >= k,
        threshold order, file references).
    """
    issues: list[Issue] = population_issues(ls)
    population = is_population(ls)
    for check in CHECKS:
        if check in (_axes_issues, _variants_issues) and (population or "variants" not in ls.raw):
            continue  # a population design has no counterfactual matrix (seed 001 §4)
        issues.extend(check(ls))
    if issues:
        raise SpecError(issues)


MSG_RECALL_CAP = (
    "k.merit ({k}) is below matching_per_job ({m}): Recall@K (seed 000 Eq. 4) can reach at most "
    "{k}/{m} = {cap:.3g}, under the research PASS bound {bound}; every recall row will show that cap"
)


def advisories(ls: LoadedSpec) -> list[Issue]:
    """Legal but probably unintended designs (printed as warnings; they do not stop a run)."""
    out = []
    c, spec = ls.spec.candidates, ls.spec
    if c is not None and c.generator == "template" and 0 < spec.analysis.k.merit < c.matching_per_job:
        b = spec.thresholds.research.recall_at_k
        bound = b.pass_ if b is not None else METRICS["recall_at_k"].research[0]
        cap = spec.analysis.k.merit / c.matching_per_job
        if cap < bound:
            out.append(ls.issue(("analysis", "k", "merit") if "analysis" in ls.raw else ("candidates",),
                                MSG_RECALL_CAP.format(k=spec.analysis.k.merit, m=c.matching_per_job,
                                                      cap=cap, bound=bound)))
    c = spec.candidates
    if c is not None and c.generator == "llm":
        fam = model_family(c.model)
        for i, system in enumerate(spec.systems):
            if system.kind in ("llm_score", "llm_compare") and model_family(system.model) == fam:
                out.append(ls.issue(("systems", i, "model"), MSG_SAME_FAMILY.format(
                    gen=c.model, system=system.id, model=system.model, family=fam)))
    return out
