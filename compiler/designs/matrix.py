"""What the paired designs share (``template``, ``llm`` and the score-file case): the counterfactual
matrix of axes and variants, its checks, its resolution and its generate/inject plan tasks.

Each base candidate is observed under every variant: the K x (1+N) correspondence-audit matrix per
job (seed 000 §3.1.2, §3.2; factorial designs: seed 003 §3.5).
"""

from __future__ import annotations

import difflib
import math
from typing import Any

from compiler.designs.base import Design
from compiler.errors import Issue
from compiler.load import LoadedSpec
from compiler.registry import PAIRED, TOOL_TEXT
from compiler.tasks import task
from compiler.variants import axis_reference_levels, variant_table


MSG_NO_AXES = "required key 'axes' is missing"
MSG_NO_VARIANTS = "required key 'variants' is missing"
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
MSG_DUP_VARIANT = "variants {a!r} and {b!r} set the same levels"
MSG_SLOT_TAKEN = "slot {slot!r} is already written by axis {other!r}; each axis needs its own slot"
MSG_SLOT_NEEDED = ("axis {axis!r} needs a slot: the tool writes its cue into the résumés it generates "
                   "(name, age, residence, languages or disability)")
MSG_CUES_NEEDED = "axis {axis!r} needs cues: the text that signals each level in the résumés the tool generates"
MSG_EXAMPLE_UNKNOWN_LEVEL = "examples for {level!r}, which is not a level of axis {axis!r}; levels: {levels}"
MSG_LABEL_UNKNOWN_LEVEL = ("label for {level!r}, which is not a level of axis {axis!r}{closest}; "
                           "levels: {levels}")
MSG_AXIS_REF_CONFLICT = (
    "reference level {level!r} contradicts the reference variant {ref!r}, which sets {axis} = {given!r}"
)
MSG_GENERATED_ID_CLASH = (
    "reference variant id {ref!r} clashes with a variant id that design one_at_a_time generates "
    "(V01..V{n:02d}); use another id, e.g. BASE"
)
#: Largest variant table ``design: factorial`` may derive (the cross grows multiplicatively).
MAX_FACTORIAL_VARIANTS = 1024

MSG_FACTORIAL_TABLE = "design factorial derives the variants; the table may hold only the reference {ref!r}"
MSG_FACTORIAL_SIZE = ("design factorial crosses {sizes} = {n} variants, more than {cap}; "
                      "use design one_at_a_time or explicit")
MSG_FACTORIAL_ID_CLASH = ("reference variant id {ref!r} clashes with a variant id that design factorial "
                          "generates (V01..V{n:02d}); use another id, e.g. BASE")


MSG_CONTROL_IS_VARIANT = "negative control id {id!r} is a variant id; use another id (variants: {variants})"
MSG_CONTROL_REPEATED = "negative control id {id!r} is repeated; each control needs its own id"
MSG_CONTROL_NO_PERTURBATION = ("negative control {id!r} needs a perturbation: the {design} generator makes the "
                               "placebo résumé; allowed: {allowed}")
MSG_CONTROL_CANNOT_MAKE = ("the {design} generator cannot make perturbation {p!r}; allowed: {allowed}")
MSG_CONTROL_SCORE_FILE_PERTURBATION = ("a score-file audit cannot perturb résumés (the vendor wrote them); "
                                       "give description instead: what the vendor changed, 1 to 400 characters")
MSG_CONTROL_SCORE_FILE_DESCRIPTION = ("negative control {id!r} needs a description: what the vendor changed in "
                                      "the reference résumé, 1 to 400 characters")


def _control_context(ls: LoadedSpec) -> tuple[list[str], str | None]:
    """The variant ids a control id must not take, and the candidates' generator (None: a score-file audit)."""
    try:
        variant_ids = list(variant_table(ls.spec))
    except Exception:  # an ill-formed table was reported by the variants' checks
        variant_ids = list(ls.spec.variants.table) or [ls.spec.variants.reference]
    cand = ls.spec.candidates
    return variant_ids, (None if cand is None else getattr(cand, "generator", "template"))


def _control_id_issues(ls: LoadedSpec, at: tuple, cid: str, seen: set[str],
                       taken: dict[str, tuple[list[str], str]], repeated: str) -> list[Issue]:
    """A control id that another kind of id holds (``taken``: kind -> (ids, message), first match reported) or
    that an earlier control of the same list holds (``repeated``); adds ``cid`` to ``seen``."""
    out = []
    clash = next((msg for ids, msg in taken.values() if cid in ids), None)
    if clash is not None:
        out.append(ls.issue((*at, "id"), clash))
    elif cid in seen:
        out.append(ls.issue((*at, "id"), repeated.format(id=cid)))
    seen.add(cid)
    return out


def _score_file_control_issues(ls: LoadedSpec, at: tuple, c: Any, msg_perturbation: str,
                               msg_description: str) -> list[Issue]:
    """A score-file audit's control: no ``perturbation`` (the vendor wrote the résumés), a ``description``."""
    out = []
    if c.perturbation is not None:
        out.append(ls.issue((*at, "perturbation"), msg_perturbation, key=True))
    if c.description is None:
        out.append(ls.issue(at, msg_description.format(id=c.id)))
    return out


def controls_issues(ls: LoadedSpec) -> list[Issue]:
    """Checks of ``variants.negative_controls`` (issue 38 §1): ids are not variant ids and not repeated;
    the template and llm generators need a ``perturbation`` they can make (``regenerate``, the same base
    candidate generated again, only the llm generator); a score-file audit gives a ``description`` instead
    (its file holds the placebo rows)."""
    from compiler.spec import LLM_PERTURBATIONS, TEMPLATE_PERTURBATIONS

    controls = ls.spec.variants.negative_controls
    if not controls:
        return []
    variant_ids, generator = _control_context(ls)
    allowed = {"template": TEMPLATE_PERTURBATIONS, "llm": LLM_PERTURBATIONS}.get(generator)
    out: list[Issue] = []
    seen: set[str] = set()
    for i, c in enumerate(controls):
        at = ("variants", "negative_controls", i)
        out += _control_id_issues(ls, at, c.id, seen, {
            "variant": (variant_ids, MSG_CONTROL_IS_VARIANT.format(id=c.id, variants=", ".join(variant_ids)))},
            MSG_CONTROL_REPEATED)
        if generator is None:
            out += _score_file_control_issues(ls, at, c, MSG_CONTROL_SCORE_FILE_PERTURBATION,
                                              MSG_CONTROL_SCORE_FILE_DESCRIPTION)
        elif allowed is not None:
            if c.perturbation is None:
                out.append(ls.issue(at, MSG_CONTROL_NO_PERTURBATION.format(id=c.id, design=generator,
                                                                           allowed=", ".join(allowed))))
            elif c.perturbation not in allowed:
                out.append(ls.issue((*at, "perturbation"), MSG_CONTROL_CANNOT_MAKE.format(
                    design=generator, p=c.perturbation, allowed=", ".join(allowed))))
    return out


MSG_POSITIVE_IS_VARIANT = "positive control id {id!r} is a variant id; use another id (variants: {variants})"
MSG_POSITIVE_IS_PLACEBO = ("positive control id {id!r} is a negative control id; use another id (negative controls: "
                           "{placebos})")
MSG_POSITIVE_REPEATED = "positive control id {id!r} is repeated; each control needs its own id"
MSG_POSITIVE_NO_PERTURBATION = ("positive control {id!r} needs a perturbation: the template generator makes the "
                                "weakened résumé; allowed: {allowed}")
MSG_POSITIVE_CANNOT_MAKE = ("the {design} generator cannot make positive controls yet (perturbation {p!r}); "
                            "positive controls are made by the template generator or scored by the vendor "
                            "(a score-file audit, with description)")
MSG_POSITIVE_SCORE_FILE_PERTURBATION = ("a score-file audit cannot perturb résumés (the vendor wrote them); give "
                                        "description instead: what the vendor changed, 1 to 400 characters")
MSG_POSITIVE_SCORE_FILE_DESCRIPTION = ("positive control {id!r} needs a description: what the vendor took out of the "
                                       "reference résumé, 1 to 400 characters")


def positive_controls_issues(ls: LoadedSpec) -> list[Issue]:
    """Checks of ``variants.positive_controls`` (issue 39 §6): ids are neither variant ids nor negative control
    ids, and not repeated; the template generator needs a ``perturbation``
    (:data:`compiler.spec.POSITIVE_PERTURBATIONS`; an unknown one is refused by the model, allowed values
    listed); the llm generator makes none yet; a score-file audit gives a ``description`` instead (its file holds
    the control's rows)."""
    from compiler.spec import POSITIVE_PERTURBATIONS

    controls = ls.spec.variants.positive_controls
    if not controls:
        return []
    variant_ids, generator = _control_context(ls)
    placebos = [c.id for c in ls.spec.variants.negative_controls or ()]
    out: list[Issue] = []
    seen: set[str] = set()
    for i, c in enumerate(controls):
        at = ("variants", "positive_controls", i)
        out += _control_id_issues(ls, at, c.id, seen, {
            "variant": (variant_ids, MSG_POSITIVE_IS_VARIANT.format(id=c.id, variants=", ".join(variant_ids))),
            "placebo": (placebos, MSG_POSITIVE_IS_PLACEBO.format(id=c.id, placebos=", ".join(placebos)))},
            MSG_POSITIVE_REPEATED)
        if generator is None:
            out += _score_file_control_issues(ls, at, c, MSG_POSITIVE_SCORE_FILE_PERTURBATION,
                                              MSG_POSITIVE_SCORE_FILE_DESCRIPTION)
        elif generator == "template":
            if c.perturbation is None:
                out.append(ls.issue(at, MSG_POSITIVE_NO_PERTURBATION.format(
                    id=c.id, allowed=", ".join(POSITIVE_PERTURBATIONS))))
        elif generator == "llm":
            out.append(ls.issue((*at, "perturbation") if c.perturbation is not None else at,
                                MSG_POSITIVE_CANNOT_MAKE.format(design=generator, p=c.perturbation)))
    return out


def resolve_controls(spec: Any) -> list[dict[str, str]]:
    """The resolved ``variants.negative_controls``: per control its id and the keys written
    (``perturbation`` or ``description``), in the order written."""
    return [{k: v for k, v in (("id", c.id), ("perturbation", c.perturbation), ("description", c.description))
             if v is not None} for c in spec.variants.negative_controls or []]


def resolve_positive_controls(spec: Any) -> list[dict[str, str]]:
    """The resolved ``variants.positive_controls`` (issue 39 §6), as :func:`resolve_controls`."""
    return [{k: v for k, v in (("id", c.id), ("perturbation", c.perturbation), ("description", c.description))
             if v is not None} for c in spec.variants.positive_controls or []]


def all_controls(resolved: dict[str, Any]) -> list[dict[str, str]]:
    """Every control résumé kind of a resolved spec, scored outside the demographic batches: the negative
    controls (issue 38), then the positive controls (issue 39 §6). Their scores go to ``RunContext.controls``,
    never to ``paired``, BH or the risk score; a spec without positive controls gets exactly its
    ``negative_controls`` (so its plan's task ids stay)."""
    v = resolved.get("variants") or {}
    return [*(v.get("negative_controls") or []), *(v.get("positive_controls") or [])]


def matrix_issues(ls: LoadedSpec) -> list[Issue]:
    """Checks of the counterfactual matrix: ``axes`` and ``variants`` are given, levels and cues
    agree, every variant sets every axis to a level of it, derived designs are well formed."""
    out: list[Issue] = []
    no_axes = not ls.spec.axes
    if no_axes and "axes" not in ls.raw:
        out.append(ls.issue(("axes",), MSG_NO_AXES))
    if "variants" not in ls.raw:
        out.append(ls.issue(("variants",), MSG_NO_VARIANTS))
    elif not no_axes:  # the variants' checks read the axes: without them they would only echo the root error
        out += _axes_issues(ls) + _variants_issues(ls) + controls_issues(ls) + positive_controls_issues(ls)
    return out


def factorial_issues(ls: LoadedSpec) -> list[Issue]:
    """``design: factorial``: the table holds only the reference, the cross is not too large, and the
    reference id does not clash with a generated id."""
    v, out = ls.spec.variants, []
    if v.design != "factorial":
        return out
    if set(v.table) - {v.reference}:
        out.append(ls.issue(("variants", "table"), MSG_FACTORIAL_TABLE.format(ref=v.reference)))
    sizes = [len(a.levels) for a in ls.spec.axes.values()]
    n = math.prod(sizes)
    if n > MAX_FACTORIAL_VARIANTS:
        out.append(ls.issue(("variants", "design"), MSG_FACTORIAL_SIZE.format(
            sizes=" x ".join(map(str, sizes)), n=n, cap=MAX_FACTORIAL_VARIANTS)))
    elif v.reference in {f"V{i:02d}" for i in range(1, n)}:
        out.append(ls.issue(("variants", "reference"), MSG_FACTORIAL_ID_CLASH.format(ref=v.reference, n=n - 1)))
    return out


MSG_NAMES_SLOT = "names draws name cues: the axis's slot must be name (got {slot!r})"
MSG_NAMES_AND_CUES = "give cues or names, not both"
MSG_NAMES_LEVEL = "level {level!r} is not a level of axis {axis!r}; allowed: {levels}"
MSG_NAMES_MISSING = "level {level!r} has no race and sex under names.levels"


def _names_issues(ls: LoadedSpec, name: str, axis: Any) -> list[Issue]:
    """A ``names`` block (issue 32 §3): on the name slot, not with cues, one entry per level, and every
    level's names can reach the floor (:func:`compiler.names.problem`, which names the best signal)."""
    from compiler import names

    out, n = [], axis.names
    if axis.slot not in (None, "name"):
        out.append(ls.issue(("axes", name, "slot"), MSG_NAMES_SLOT.format(slot=axis.slot)))
    if axis.cues:
        out.append(ls.issue(("axes", name, "names"), MSG_NAMES_AND_CUES, key=True))
    for level, spec in n.levels.items():
        if level not in axis.levels:
            out.append(ls.issue(("axes", name, "names", "levels", level), MSG_NAMES_LEVEL.format(
                level=level, axis=name, levels=", ".join(axis.levels)), key=True))
            continue
        why = names.problem(level, race=spec.race, sex=spec.sex, floor=n.floor, per_level=n.per_level,
                            decade=n.decade)
        if why is not None:
            out.append(ls.issue(("axes", name, "names", "levels", level), why))
    for level in axis.levels:
        if level not in n.levels:
            out.append(ls.issue(("axes", name, "names", "levels"), MSG_NAMES_MISSING.format(level=level)))
    return out


def _axes_issues(ls: LoadedSpec) -> list[Issue]:
    out = []
    slots: dict[str, str] = {}
    ref_row = ls.spec.variants.table.get(ls.spec.variants.reference, {})
    generated = ls.spec.candidates is not None  # the tool writes the résumés (else a score-file audit)
    for name, axis in ls.spec.axes.items():
        if generated and axis.slot is None:
            out.append(ls.issue(("axes", name), MSG_SLOT_NEEDED.format(axis=name), key=True))
        elif generated and axis.slot in slots:  # one cue per slot: only where the tool writes the cues
            out.append(ls.issue(("axes", name, "slot"), MSG_SLOT_TAKEN.format(slot=axis.slot, other=slots[axis.slot])))
        if axis.slot is not None:
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
        if axis.names is not None:  # issue 32 §3: cues drawn from the name tables
            out += _names_issues(ls, name, axis)
        elif generated and not axis.cues:
            out.append(ls.issue(("axes", name), MSG_CUES_NEEDED.format(axis=name), key=True))
        elif axis.cues:  # a score-file audit may leave cues out; given, they cover every level
            for level in axis.levels:
                if level not in axis.cues:
                    out.append(ls.issue(("axes", name, "cues"), MSG_CUE_MISSING.format(level=level)))
        for level in axis.examples or {}:
            if level not in axis.levels:
                out.append(ls.issue(("axes", name, "examples", level),
                                    MSG_EXAMPLE_UNKNOWN_LEVEL.format(level=level, axis=name, levels=levels), key=True))
        for level in axis.labels or {}:
            if level not in axis.levels:
                close = difflib.get_close_matches(level, list(axis.levels), n=1, cutoff=0.0)
                out.append(ls.issue(("axes", name, "labels", level), MSG_LABEL_UNKNOWN_LEVEL.format(
                    level=level, axis=name, levels=levels,
                    closest=f" (closest: {close[0]!r})" if close else ""), key=True))
        if axis.reference is not None and axis.reference not in axis.levels:
            out.append(ls.issue(("axes", name, "reference"),
                                MSG_AXIS_REF.format(level=axis.reference, axis=name, levels=levels)))
    return out


def _variants_issues(ls: LoadedSpec) -> list[Issue]:
    spec, out = ls.spec, []
    v = spec.variants
    axes = spec.axes
    if v.design == "factorial":
        out.extend(factorial_issues(ls))
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


def _drawn_names(axis: Any, *, seed: int, axis_name: str) -> tuple[dict[str, list[str]], dict[str, Any]]:
    """The cues drawn for a ``names`` axis and the resolved ``names`` block: table, floor, per_level, decade,
    the tables' sha256, and per level its race, sex and every drawn name with its two signals."""
    from compiler import names

    n = axis.names
    drawn = {level: names.draw(seed=seed, axis=axis_name, level=level, race=n.levels[level].race,
                               sex=n.levels[level].sex, floor=n.floor, per_level=n.per_level, decade=n.decade)
             for level in axis.levels}
    block = {"table": n.table, "floor": n.floor, "per_level": n.per_level, "decade": n.decade,
             "tables": names.table_digests(),
             "levels": {level: {"race": n.levels[level].race, "sex": n.levels[level].sex, "names": drawn[level]}
                        for level in axis.levels}}
    return {level: [d["name"] for d in drawn[level]] for level in axis.levels}, block


def resolve_matrix(ls: LoadedSpec) -> dict[str, Any]:
    """``{"axes", "variants"}`` resolved: reference level per axis, the full variant table, and the
    negative controls when the spec writes them (issue 38)."""
    spec = ls.spec
    ref_levels = axis_reference_levels(spec)
    variants = {"reference": spec.variants.reference, "design": spec.variants.design, "table": variant_table(spec)}
    if spec.variants.negative_controls is not None:  # issue 38: only when written (shipped digests stay)
        variants["negative_controls"] = resolve_controls(spec)
    if spec.variants.positive_controls is not None:  # issue 39 §6: only when written (shipped digests stay)
        variants["positive_controls"] = resolve_positive_controls(spec)
    return {
        "axes": {name: _resolve_axis(axis, ref_levels[name], seed=spec.seed, name=name)
                 for name, axis in spec.axes.items()},
        "variants": variants,
    }


def _resolve_axis(axis: Any, reference: str, *, seed: int = 0, name: str = "") -> dict[str, Any]:
    """One resolved axis. ``slot`` and ``cues`` only when the spec writes them (a score-file audit
    may not: the signed manifest then holds no slot the user did not write, issue 15);
    ``description``, ``examples`` and ``labels`` (issue 31 §3) only when given, so the digests of earlier
    specs do not change."""
    out: dict[str, Any] = {}
    if axis.slot is not None:
        out["slot"] = axis.slot
    out.update(levels=list(axis.levels), reference=reference)
    if axis.cues:
        out["cues"] = {lv: list(c) for lv, c in axis.cues.items()}
    if axis.names is not None:  # issue 32 §3: the drawn names are the cues, with their signals and the tables
        out["cues"], out["names"] = _drawn_names(axis, seed=seed, axis_name=name)
    if axis.description is not None:
        out["description"] = axis.description
    if axis.examples:
        out["examples"] = {lv: list(x) for lv, x in axis.examples.items()}
    if axis.labels:
        out["labels"] = dict(axis.labels)
    return out


def plan_tasks(resolved: dict[str, Any]) -> tuple[list[dict[str, Any]], dict[str, list[str]]]:
    """``generate`` (K base candidates of a job, seed 000 Phase A) and ``inject`` (one variant of every
    base candidate, Phase B) tasks; returns (tasks, ids a job's score task depends on)."""
    seed, cand = resolved["seed"], resolved["candidates"]
    tasks: list[dict[str, Any]] = []
    by_job: dict[str, list[str]] = {}
    for job in resolved["jobs"]:
        if cand is None:
            by_job[job["id"]] = []
            continue
        gen = task("generate", {"job": job, "candidates": cand, "seed": seed, "axes": resolved["axes"]}, [])
        tasks.append(gen)
        injects = []
        for vid, levels in resolved["variants"]["table"].items():
            inj = task("inject", {"job": job["id"], "variant": vid, "levels": levels,
                                  "axes": resolved["axes"], "seed": seed}, [gen["id"]])
            tasks.append(inj)
            injects.append(inj["id"])
        by_job[job["id"]] = injects
    return tasks, by_job


def batching(resolved: dict[str, Any]) -> tuple[int | None, int]:
    """(base candidates per job, resumes per base candidate) for the plan's score batches: K and the
    number of variants; K is None without a generator (the score-file case is not batched)."""
    cand = resolved["candidates"]
    return (cand["base_per_job"] if cand is not None else None), len(resolved["variants"]["table"])


def size(resolved: dict[str, Any], base_per_job: dict[str, int] | None = None) -> dict[str, Any]:
    """Base candidates, variants, resumes and paired candidates per variant of the matrix.

    K is ``candidates.base_per_job`` x jobs, else the sum of ``base_per_job`` (counted from the score
    files by the caller), else unknown (None).
    """
    cand, n_var = resolved["candidates"], len(resolved["variants"]["table"])
    if cand is not None:
        k_total = cand["base_per_job"] * len(resolved["jobs"])
    elif base_per_job:
        k_total = sum(base_per_job.values())
    else:
        k_total = None
    return {"base_candidates": k_total, "variants": n_var,
            "resumes": None if k_total is None else k_total * n_var, "paired_candidates_per_variant": k_total}


class MatrixDesign(Design):
    """A design of the counterfactual matrix (template, llm, score file): its checks, resolution, plan
    tasks, size and score batching are the matrix's."""

    provides = frozenset({PAIRED, TOOL_TEXT})

    def issues(self, ls: LoadedSpec) -> list[Issue]:
        """The matrix checks."""
        return matrix_issues(ls)

    def resolve_matrix(self, ls: LoadedSpec) -> dict[str, Any]:
        return resolve_matrix(ls)

    def plan_tasks(self, resolved: dict[str, Any]) -> tuple[list[dict[str, Any]], dict[str, list[str]]]:
        return plan_tasks(resolved)

    def size(self, resolved: dict[str, Any], base_per_job: dict[str, int] | None = None) -> dict[str, Any]:
        return size(resolved, base_per_job)

    def batching(self, resolved: dict[str, Any]) -> tuple[int | None, int]:
        return batching(resolved)
