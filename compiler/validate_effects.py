"""Semantic checks of ``analysis.effect_size``, ``analysis.validity`` and ``variants.design: factorial``.

Each check returns located :class:`~compiler.errors.Issue` objects (``file:line:col: key.path:
message``); messages are module constants asserted by golden tests. Source: seed 003 §3.5, §3.7.
"""

from __future__ import annotations

import math

from compiler.errors import Issue
from compiler.load import LoadedSpec
from compiler.variants import axis_reference_levels, variant_table

#: Largest variant table ``design: factorial`` may derive (the cross grows multiplicatively).
MAX_FACTORIAL_VARIANTS = 1024

MSG_FACTORIAL_TABLE = "design factorial derives the variants; the table may hold only the reference {ref!r}"
MSG_FACTORIAL_SIZE = ("design factorial crosses {sizes} = {n} variants, more than {cap}; "
                      "use design one_at_a_time or explicit")
MSG_FACTORIAL_ID_CLASH = ("reference variant id {ref!r} clashes with a variant id that design factorial "
                          "generates (V01..V{n:02d}); use another id, e.g. BASE")
MSG_CONTRAST_SHAPE = "a contrast names either axis and level, or variant (got {got})"
MSG_CONTRAST_AXIS = "unknown axis {axis!r}; axes: {axes}"
MSG_CONTRAST_LEVEL = "undefined level {level!r} for axis {axis!r}; allowed: {levels}"
MSG_CONTRAST_IS_REFERENCE = ("level {level!r} is the reference level of axis {axis!r}; a contrast "
                             "compares another level with it")
MSG_CONTRAST_VARIANT = "unknown variant {variant!r}; variants: {variants}"
MSG_CONTRAST_REF_VARIANT = "variant {variant!r} is the reference variant; a contrast compares another variant with it"
MSG_CONTRAST_DUP = "contrast listed twice (also at {first})"
MSG_CONTROL_DUP = "control {control!r} is listed twice"
MSG_PC_AXIS_NEEDED = "positive_control with contrast: axis needs axis and level (allowed axes: {axes})"
MSG_PC_MATCH_EXTRA = "positive_control with contrast: match takes no axis or level"
MSG_PC_NO_LABELS = ("positive_control contrast match needs matching and non-matching base candidates: "
                    "0 < matching_per_job (M={m}) < base_per_job (K={k})")
MSG_MANIP_SAME = "manipulation check compares condition {cond!r} with itself; set against to another condition"


def _variant_ids(ls: LoadedSpec) -> list[str]:
    return list(variant_table(ls.spec))


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


def _ref_level(ls: LoadedSpec, axis: str) -> str:
    return axis_reference_levels(ls.spec)[axis]


def _axis_level_issues(ls: LoadedSpec, loc: tuple, axis: str, level: str) -> list[Issue]:
    axes = ls.spec.axes
    if axis not in axes:
        return [ls.issue(loc + ("axis",), MSG_CONTRAST_AXIS.format(axis=axis, axes=", ".join(axes)))]
    if level not in axes[axis].levels:
        return [ls.issue(loc + ("level",), MSG_CONTRAST_LEVEL.format(
            level=level, axis=axis, levels=", ".join(axes[axis].levels)))]
    if level == _ref_level(ls, axis):
        return [ls.issue(loc + ("level",), MSG_CONTRAST_IS_REFERENCE.format(level=level, axis=axis))]
    return []


def effect_size_issues(ls: LoadedSpec) -> list[Issue]:
    """``analysis.effect_size``: each contrast is well formed and names existing axes, levels and
    variants (never the reference); no contrast or control is listed twice."""
    es, out = ls.spec.analysis.effect_size, []
    if es is None:
        return out
    base = ("analysis", "effect_size")
    seen: dict[tuple, str] = {}
    variants: list[str] | None = None
    for i, c in enumerate(es.contrasts or []):
        loc = base + ("contrasts", i)
        given = [k for k in ("axis", "level", "variant") if getattr(c, k) is not None]
        if not (given == ["axis", "level"] or given == ["variant"]):
            out.append(ls.issue(loc, MSG_CONTRAST_SHAPE.format(got=", ".join(given) or "neither")))
            continue
        if c.variant is not None:
            if variants is None:
                variants = (list(ls.spec.variants.table) if ls.spec.variants.design == "explicit"
                            else _variant_ids(ls))
            if c.variant == ls.spec.variants.reference:
                out.append(ls.issue(loc + ("variant",), MSG_CONTRAST_REF_VARIANT.format(variant=c.variant)))
            elif c.variant not in variants:
                out.append(ls.issue(loc + ("variant",), MSG_CONTRAST_VARIANT.format(
                    variant=c.variant, variants=", ".join(variants))))
        else:
            out.extend(_axis_level_issues(ls, loc, c.axis, c.level))
        key = (c.axis, c.level, c.variant)
        if key in seen:
            out.append(ls.issue(loc, MSG_CONTRAST_DUP.format(first=seen[key])))
        seen.setdefault(key, f"analysis.effect_size.contrasts[{i}]")
    for i, control in enumerate(es.controls):
        if control in es.controls[:i]:
            out.append(ls.issue(base + ("controls", i), MSG_CONTROL_DUP.format(control=control)))
    return out


def validity_issues(ls: LoadedSpec) -> list[Issue]:
    """``analysis.validity``: the positive control is well formed and can be computed; manipulation
    checks compare two different conditions."""
    v, out = ls.spec.analysis.validity, []
    if v is None:
        return out
    base = ("analysis", "validity", "positive_control")
    pc = v.positive_control
    if pc.contrast == "axis":
        if pc.axis is None or pc.level is None:
            out.append(ls.issue(base, MSG_PC_AXIS_NEEDED.format(axes=", ".join(ls.spec.axes))))
        else:
            out.extend(_axis_level_issues(ls, base, pc.axis, pc.level))
    else:
        if pc.axis is not None or pc.level is not None:
            out.append(ls.issue(base + ("axis" if pc.axis is not None else "level",), MSG_PC_MATCH_EXTRA))
        c = ls.spec.candidates
        if c is not None and not 0 < c.matching_per_job < c.base_per_job:
            out.append(ls.issue(base + ("contrast",), MSG_PC_NO_LABELS.format(m=c.matching_per_job, k=c.base_per_job)))
    for i, m in enumerate(v.manipulation_checks):
        if m.condition == m.against:
            out.append(ls.issue(("analysis", "validity", "manipulation_checks", i, "against"),
                                MSG_MANIP_SAME.format(cond=m.condition)))
    return out


CHECKS = (factorial_issues, effect_size_issues, validity_issues)
