"""Family ``effects``: effect sizes with equivalence tests, models and sensitivity, and the validity
protocol (positive control, manipulation checks, score distribution) of seed 003 §3.7.

Spec block: ``analysis.effect_size`` and ``analysis.validity`` (enabled when either is written).
Needs paired candidates: every contrast compares resumes of the same base candidates across
variants or levels. Its analysis runs inside the ``analyse`` task of ``metric_suite`` (the resolved
``analysis`` block is that task's input), so it adds no plan task of its own; its compile summary is
no plan summary: power and MDEs need scores (issue 30 §3: ``audit compile --pilot``, ``power.csv``).
"""

from __future__ import annotations

from typing import Any

from compiler.errors import Issue
from compiler.families.base import PAIRED, Family, family
from compiler.load import LoadedSpec
from compiler.registry import Needs
from compiler.spec import AuditSpec
from compiler.variants import axis_reference_levels, variant_table


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
MSG_PC_NO_CONTROLS = ("positive_control with contrast: control needs a declared positive control: "
                      "variants.positive_controls lists none (e.g. {id: C01, perturbation: drop_required_skill})")
MSG_PC_CONTROL_NEEDED = "positive_control with contrast: control needs control: the id of a positive control ({ids})"
MSG_PC_UNKNOWN_CONTROL = "unknown positive control {control!r}; declared in variants.positive_controls: {ids}"
MSG_PC_CONTROL_EXTRA = "positive_control with contrast: control takes no axis or level (the control names the change)"
MSG_PC_CONTROL_KEY = "control is read only with contrast: control (got contrast: {contrast})"
MSG_SESOI_PER_VARIANT = ("sesoi {{selection_ratio: {m:g}}} cannot be read under analysis.ranking: per_variant with a "
                         "top-K rule: each variant is ranked in its own pool, so its selection ratio is 1 by "
                         "construction; use swap_in ranking, a decision threshold, or {{score: x}} / {{d: x}}")
MSG_MANIP_SAME = "manipulation check compares condition {cond!r} with itself; set against to another condition"


MSG_POWER_ALPHA = ("power {power:g} must be greater than analysis.alpha ({alpha:g}): a two-sided test rejects "
                   "with probability alpha when there is no effect, so no effect size has a power of {power:g}")


def _axis_level_issues(ls: LoadedSpec, loc: tuple, axis: str, level: str) -> list[Issue]:
    axes = ls.spec.axes
    if axis not in axes:
        return [ls.issue(loc + ("axis",), MSG_CONTRAST_AXIS.format(axis=axis, axes=", ".join(axes)))]
    if level not in axes[axis].levels:
        return [ls.issue(loc + ("level",), MSG_CONTRAST_LEVEL.format(
            level=level, axis=axis, levels=", ".join(axes[axis].levels)))]
    if level == axis_reference_levels(ls.spec)[axis]:
        return [ls.issue(loc + ("level",), MSG_CONTRAST_IS_REFERENCE.format(level=level, axis=axis))]
    return []


def effect_size_issues(ls: LoadedSpec) -> list[Issue]:
    """``analysis.effect_size``: each contrast is well formed and names existing axes, levels and
    variants (never the reference); no contrast or control is listed twice."""
    es, out = ls.spec.analysis.effect_size, []
    if es is None:
        return out
    base = ("analysis", "effect_size")
    if es.power <= ls.spec.analysis.alpha:
        out.append(ls.issue(base + ("power",), MSG_POWER_ALPHA.format(power=es.power, alpha=ls.spec.analysis.alpha)))
    ratio = getattr(es.sesoi, "selection_ratio", None)
    if ratio is not None:
        a = ls.spec.analysis
        # a population design has no selection rule: the effects family is refused there (unpaired)
        if getattr(a, "ranking", None) == "per_variant" and not a.selects_by_threshold():
            out.append(ls.issue(base + ("sesoi",), MSG_SESOI_PER_VARIANT.format(m=ratio)))
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
                            else list(variant_table(ls.spec)))
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
    if pc.contrast != "control" and pc.control is not None:
        out.append(ls.issue(base + ("control",), MSG_PC_CONTROL_KEY.format(contrast=pc.contrast)))
    if pc.contrast == "control":  # issue 39 §6: the sensitivity check reads a declared positive control
        declared = [c.id for c in ls.spec.variants.positive_controls or ()] if ls.spec.variants is not None else []
        if pc.axis is not None or pc.level is not None:
            out.append(ls.issue(base + ("axis" if pc.axis is not None else "level",), MSG_PC_CONTROL_EXTRA))
        if not declared:
            out.append(ls.issue(base + ("contrast",), MSG_PC_NO_CONTROLS))
        elif pc.control is None:
            out.append(ls.issue(base, MSG_PC_CONTROL_NEEDED.format(ids=", ".join(declared))))
        elif pc.control not in declared:
            out.append(ls.issue(base + ("control",), MSG_PC_UNKNOWN_CONTROL.format(control=pc.control,
                                                                                  ids=", ".join(declared))))
    elif pc.contrast == "axis":
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


#: The BH family of every contrast under ``bh_families: all`` (seed 003 Table 1).
ALL_CONTRASTS = "contrasts"


def effect_contrasts(spec: AuditSpec, ref_levels: dict[str, str]) -> list[dict[str, str]]:
    """The effect-size contrasts, explicit (seed 003 §3.7).

    Default: every non-reference level of every axis, then every non-reference variant. Each entry
    is ``{"kind": "axis", "axis", "level", "reference", "family"}`` or ``{"kind": "variant",
    "variant", "reference", "family"}``. The BH family is the contrast's own ``family``, else
    ``contrasts`` (``bh_families: all``, the default: one family across every contrast, as seed
    003's Table 1) or the axis name / ``variants`` (``bh_families: per_axis``).
    """
    es = spec.analysis.effect_size
    ref = spec.variants.reference
    per_axis = es is not None and es.bh_families == "per_axis"

    def family(own: str | None, axis: str | None) -> str:
        return own or ((axis or "variants") if per_axis else ALL_CONTRASTS)

    if es is not None and es.contrasts is not None:
        out = []
        for c in es.contrasts:
            if c.variant is not None:
                out.append({"kind": "variant", "variant": c.variant, "reference": ref,
                            "family": family(c.family, None)})
            else:
                out.append({"kind": "axis", "axis": c.axis, "level": c.level,
                            "reference": ref_levels[c.axis], "family": family(c.family, c.axis)})
        return out
    out = [{"kind": "axis", "axis": name, "level": level, "reference": ref_levels[name], "family": family(None, name)}
           for name, axis in spec.axes.items() for level in axis.levels if level != ref_levels[name]]
    out += [{"kind": "variant", "variant": v, "reference": ref, "family": family(None, None)}
            for v in variant_table(spec) if v != ref]
    return out


@family
class Effects(Family):
    """Effect sizes, equivalence tests, models and the validity protocol (seed 003 §3.7)."""

    id = "effects"
    order = 30
    needs = Needs.of(PAIRED)
    after = ("metric_suite",)

    def block(self, spec: Any) -> list[tuple]:
        """Key paths of the block the spec writes: ``analysis.effect_size``, ``analysis.validity``."""
        a = spec.analysis
        return [("analysis", k) for k in ("effect_size", "validity") if getattr(a, k) is not None]

    def enabled(self, resolved: dict[str, Any]) -> bool:
        """On when the spec declares ``analysis.effect_size`` or ``analysis.validity``."""
        a = resolved["analysis"]
        return "effect_size" in a or "validity" in a

    def issues(self, ls: LoadedSpec) -> list[Issue]:
        """The contrasts and the validity protocol are well formed and can be computed."""
        return effect_size_issues(ls) + validity_issues(ls)

    def resolve(self, ls: LoadedSpec, resolved: dict[str, Any]) -> None:
        """``analysis.effect_size`` (contrasts made explicit) and ``analysis.validity`` (the positive
        control's reference level made explicit); keys absent when not declared, so the digest of a
        spec without them is unchanged."""
        spec = ls.spec
        ref_levels = axis_reference_levels(spec)
        out = resolved["analysis"]
        es = spec.analysis.effect_size
        if es is not None:
            out["effect_size"] = {**es.model_dump(exclude={"contrasts"}),
                                  "contrasts": effect_contrasts(spec, ref_levels)}
        if spec.analysis.validity is not None:
            v = spec.analysis.validity.model_dump()
            pc = v["positive_control"]
            if pc["control"] is None:  # issue 39 §6: written only with contrast: control (earlier digests stay)
                del pc["control"]
            if pc["contrast"] == "axis":
                pc["reference"] = ref_levels.get(pc["axis"])
            out["validity"] = v

    def summary(self, resolved: dict[str, Any], size: dict[str, Any] | None = None) -> dict[str, Any]:
        """Nothing: methods 7's d_z MDEs (``plan.sensitivity``) are gone (issue 30 §3); the power at the
        SESOI needs scores: ``audit compile --pilot RUN_DIR``, or ``power.csv`` of ``audit execute``."""
        return {}
