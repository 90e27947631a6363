"""The counterfactual matrix's variants: reference levels per axis and the full variant table (a leaf
module, read by checks, resolution, the effects family and the paired designs).

Source: seed 000 §3.2 (one variant per non-reference level), seed 003 §3.5 (factorial cross).
"""

from __future__ import annotations

import itertools

from compiler.spec import AuditSpec


def axis_reference_levels(spec: AuditSpec) -> dict[str, str]:
    """Reference level per axis: the reference variant's level, else ``axis.reference``, else the first."""
    ref_row = spec.variants.table.get(spec.variants.reference, {})
    return {
        name: ref_row.get(name) or axis.reference or axis.levels[0] for name, axis in spec.axes.items()
    }


def variant_table(spec: AuditSpec) -> dict[str, dict[str, str]]:
    """The full variant table, reference first.

    ``one_at_a_time`` derives ``V01, V02, ...``: one variant per non-reference level, axes and
    levels in the order written, every other axis at its reference level. ``factorial`` derives the
    full cross of the axes' levels (seed 003 §3.5, Study 1), in ``itertools.product`` order of the
    levels as written; the reference combination is the reference variant, the others are
    ``V01, V02, ...``.
    """
    ref = spec.variants.reference
    if spec.variants.design == "factorial":
        base = axis_reference_levels(spec)
        names = list(spec.axes)
        table = {ref: dict(base)}
        n = 0
        for combo in itertools.product(*(spec.axes[a].levels for a in names)):
            levels = dict(zip(names, combo))
            if levels == base:
                continue
            n += 1
            table[f"V{n:02d}"] = levels
        return table
    if spec.variants.design == "explicit":
        table = {ref: dict(spec.variants.table[ref])}
        table.update({v: dict(lv) for v, lv in spec.variants.table.items() if v != ref})
        return table
    base = axis_reference_levels(spec)
    table = {ref: dict(base)}
    n = 0
    for name, axis in spec.axes.items():
        for level in axis.levels:
            if level == base[name]:
                continue
            n += 1
            table[f"V{n:02d}"] = {**base, name: level}
    return table
