"""The K x (1+N) correspondence-audit matrix of one job (seed 000 §3.1.2).

:func:`generate_job_matrix` runs Phase A (:func:`~runtime.generate.base.generate_base_candidates`)
and writes every base candidate under every variant (Phase B,
:func:`~runtime.generate.render.render_resume`), choosing each level's cue with
:func:`~runtime.generate.cues.pick_cue`.
"""

from __future__ import annotations

from collections.abc import Mapping

import pandas as pd

from runtime.generate.base import generate_base_candidates
from runtime.generate.cues import DEFAULT_SLOTS, pick_cue
from runtime.generate.render import CUE_SLOTS, render_resume

#: Columns that come before the axis columns, in this order.
MATRIX_COLUMNS: tuple[str, ...] = ("job_id", "cv_id", "variant", "is_true_match", "text")
#: Columns of ``control_resumes.csv`` (issue 38 §3), in this order.
CONTROL_COLUMNS: tuple[str, ...] = ("job_id", "cv_id", "variant", "perturbation", "is_true_match", "text")

#: Error messages (asserted by tests).
ERR_NO_SLOT = "axis {axis!r} has no 'slot' and no default slot; allowed slots: {allowed}"
ERR_BAD_SLOT = "axis {axis!r}: unknown slot {slot!r}; allowed: {allowed}"
ERR_SHARED_SLOT = "axes {first!r} and {second!r} both write to slot {slot!r}; one axis per slot"
ERR_AXIS_NAME = "axis name {axis!r} collides with a matrix column ({columns})"
ERR_VARIANT_AXES = "variant {variant!r}: levels given for {got}, expected exactly the axes {expected}"
ERR_UNKNOWN_LEVEL = "variant {variant!r}: unknown level {level!r} of axis {axis!r}; allowed: {allowed}"
ERR_NO_VARIANTS = "no variants given"
ERR_CUE_OPTIONS = (
    "axis {axis!r}, level {level!r}: cue options must be a list of texts or a mapping with one list "
    "(e.g. {{names: [...]}}), got {value!r}"
)


def cue_options(axis: str, level: str, value: object) -> list[str]:
    """Normalise one level's cue options: a list of texts, one text, or a one-key mapping holding
    the list (the spec form ``{Male-FR: {names: [...]}}``)."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, Mapping):
        if len(value) != 1:
            raise ValueError(ERR_CUE_OPTIONS.format(axis=axis, level=level, value=value))
        (value,) = value.values()
        if isinstance(value, str):
            return [value]
    if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
        raise ValueError(ERR_CUE_OPTIONS.format(axis=axis, level=level, value=value))
    return list(value)


def _slots(axes: Mapping[str, Mapping]) -> dict[str, str]:
    slots: dict[str, str] = {}
    owner: dict[str, str] = {}
    for axis, spec in axes.items():
        if axis in MATRIX_COLUMNS:
            raise ValueError(ERR_AXIS_NAME.format(axis=axis, columns=", ".join(MATRIX_COLUMNS)))
        slot = spec.get("slot", DEFAULT_SLOTS.get(axis))
        if slot is None:
            raise ValueError(ERR_NO_SLOT.format(axis=axis, allowed=", ".join(CUE_SLOTS)))
        if slot not in CUE_SLOTS:
            raise ValueError(ERR_BAD_SLOT.format(axis=axis, slot=slot, allowed=", ".join(CUE_SLOTS)))
        if slot in owner:
            raise ValueError(ERR_SHARED_SLOT.format(first=owner[slot], second=axis, slot=slot))
        owner[slot] = axis
        slots[axis] = slot
    return slots


def _check_variants(axes: Mapping[str, Mapping], variants: Mapping[str, Mapping[str, str]]) -> dict:
    checked = {}
    for variant, levels in variants.items():
        if variant == "reference" and isinstance(levels, str):
            continue  # the spec's ``reference: BASE`` entry names the reference, it is no variant
        if set(levels) != set(axes):
            raise ValueError(
                ERR_VARIANT_AXES.format(variant=variant, got=sorted(levels), expected=sorted(axes))
            )
        for axis, level in levels.items():
            allowed = list(axes[axis].get("levels", axes[axis]["cues"]))
            if level not in allowed or level not in axes[axis]["cues"]:
                raise ValueError(
                    ERR_UNKNOWN_LEVEL.format(variant=variant, level=level, axis=axis, allowed=allowed)
                )
        checked[variant] = levels
    if not checked:
        raise ValueError(ERR_NO_VARIANTS)
    return checked


def generate_job_matrix(
    *,
    job_id: str,
    family: str,
    k: int,
    m: int,
    seed: int,
    axes: Mapping[str, Mapping],
    variants: Mapping[str, Mapping[str, str]],
    onet: str | None = None,
    market: str = "fr",
) -> pd.DataFrame:
    """Write every base candidate of one job under every variant.

    Parameters
    ----------
    job_id, family, k, m, seed, onet, market
        As in :func:`~runtime.generate.base.generate_base_candidates`.
    axes : mapping
        ``{axis: {"slot": slot, "levels": [...], "cues": {level: [option, ...]}}}``, the shape of
        :func:`~runtime.generate.cues.example_axes`. ``slot`` may be left out for the axes of seed
        000 Table 1 (see :data:`~runtime.generate.cues.DEFAULT_SLOTS`). One axis per slot. A
        level's options may also be one text or a one-key mapping holding the list
        (``{"names": [...]}``, see :func:`cue_options`).
    variants : mapping
        ``{variant: {axis: level}}`` with every axis in every variant, the reference variant
        included. A string-valued ``reference`` entry (the spec's ``reference: BASE``) is skipped.

    Returns
    -------
    pandas.DataFrame
        One row per (cv_id, variant), rows ordered by cv_id and then by the order of ``variants``;
        columns ``job_id, cv_id, variant, is_true_match, text`` and one column per axis holding the
        level.

    Raises
    ------
    KeyError
        Unknown family.
    ValueError
        Inconsistent axes or variants, invalid ``k``/``m``, or an invalid cue text.
    """
    slots = _slots(axes)
    checked = _check_variants(axes, variants)
    options = {
        (axis, level): cue_options(axis, level, axes[axis]["cues"][level])
        for levels in checked.values()
        for axis, level in levels.items()
    }
    bases = generate_base_candidates(job_id=job_id, family=family, k=k, m=m, seed=seed, onet=onet, market=market)
    rows = []
    for base in bases:
        for variant, levels in checked.items():
            cues = {
                slots[axis]: pick_cue(
                    options[axis, level],
                    seed=seed,
                    job_id=job_id,
                    cv_id=base.cv_id,
                    axis=axis,
                    level=level,
                )
                for axis, level in levels.items()
            }
            row = {
                "job_id": base.job_id,
                "cv_id": base.cv_id,
                "variant": variant,
                "is_true_match": base.is_true_match,
                "text": render_resume(base, cues),
            }
            row.update({axis: levels[axis] for axis in axes})
            rows.append(row)
    frame = pd.DataFrame(rows, columns=[*MATRIX_COLUMNS, *axes])
    frame["is_true_match"] = frame["is_true_match"].astype("int64")
    return frame


def generate_job_controls(*, job_id: str, family: str, k: int, m: int, seed: int, axes: Mapping[str, Mapping],
                          reference: Mapping[str, str], controls: list[Mapping[str, str]], onet: str | None = None,
                          market: str = "fr") -> pd.DataFrame:
    """The control résumés of one job (issue 38 §3): every base candidate's reference résumé under each
    negative control's perturbation (:func:`runtime.generate.perturb.placebo_resume`), or weakened by each
    positive control's (issue 39 §6; :func:`runtime.generate.perturb.positive_resume`).

    Parameters
    ----------
    job_id, family, k, m, seed, axes, onet, market
        As in :func:`generate_job_matrix` (the same base candidates and the reference variant's cues).
    reference : mapping
        The reference variant's ``{axis: level}``.
    controls : list of mapping
        The resolved ``variants.negative_controls`` then ``positive_controls``: ``{"id", "perturbation"}`` each.

    Returns
    -------
    pandas.DataFrame
        One row per (cv_id, control), ordered by cv_id and then by control; columns
        :data:`CONTROL_COLUMNS` (``variant`` = the control's id).

    Raises
    ------
    ValueError
        As :func:`generate_job_matrix`; an unknown perturbation.
    """
    from runtime.generate.perturb import control_resume

    slots = _slots(axes)
    (levels,) = _check_variants(axes, {"reference-variant": reference}).values()
    bases = generate_base_candidates(job_id=job_id, family=family, k=k, m=m, seed=seed, onet=onet, market=market)
    rows = []
    for base in bases:
        cues = {slots[axis]: pick_cue(cue_options(axis, level, axes[axis]["cues"][level]), seed=seed, job_id=job_id,
                                      cv_id=base.cv_id, axis=axis, level=level) for axis, level in levels.items()}
        for c in controls:
            rows.append({"job_id": base.job_id, "cv_id": base.cv_id, "variant": c["id"],
                         "perturbation": c["perturbation"], "is_true_match": base.is_true_match,
                         "text": control_resume(base, cues, c["perturbation"], seed=seed, control_id=c["id"])})
    frame = pd.DataFrame(rows, columns=list(CONTROL_COLUMNS))
    frame["is_true_match"] = frame["is_true_match"].astype("int64")
    return frame
