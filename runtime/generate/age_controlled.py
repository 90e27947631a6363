"""Experience-controlled age cues (seed 003 §3.6, Table 2).

In seed 003's main design the older-graduate résumés carried an extra line of earlier experience,
so the age effect was confounded with tenure. The controlled re-run held experience identical and
varied only the **graduation year** (2018, 2008, 1993: approximate ages 30, 40, 55), the way age is
realistically inferred from a résumé.

This generator already holds experience fixed: every base candidate's roles, dates and years of
experience are written in Phase A and never change with the variant (:mod:`runtime.generate.base`);
a cue only fills its header slot. :func:`graduation_year_axis` gives an ``age`` slot axis whose cues
state the graduation year only, so two variants of one base candidate differ in that one line and
nothing else (a test checks it). Use it as the age axis of a spec (``specs/age-controlled.yaml``)
to estimate the experience-controlled age effect next to the date-of-birth axis of seed 000.

Caveat (stated, not hidden): the base résumés date their roles from 2019-2021, so an early
graduation year implies a gap between graduation and the first listed role; seed 003 avoided this
by writing no dated job entries. The gap is identical for every base candidate at a given level, so
it is part of the age signal, not a difference in qualifications.
"""

from __future__ import annotations

#: Seed 003 §3.6: graduation years implying ages of about 30, 40 and 55.
GRADUATION_YEARS: dict[str, int] = {"Grad-2018": 2018, "Grad-2008": 2008, "Grad-1993": 1993}
CUE_TEMPLATE = "Graduation year: {year}"


def graduation_year_axis(years: dict[str, int] | None = None) -> dict:
    """An ``age`` slot axis whose levels differ only in the stated graduation year.

    Parameters
    ----------
    years : dict, optional
        Level -> graduation year; default :data:`GRADUATION_YEARS` (seed 003 §3.6). The first level
        is the reference (the most recent graduates).

    Returns
    -------
    dict
        ``{"slot": "age", "levels": [...], "reference": first level, "cues": {level: [text]}}``,
        the shape of :func:`runtime.generate.cues.example_axes` entries and of a spec axis.
    """
    years = dict(GRADUATION_YEARS if years is None else years)
    levels = list(years)
    return {"slot": "age", "levels": levels, "reference": levels[0],
            "cues": {lv: [CUE_TEMPLATE.format(year=y)] for lv, y in years.items()}}
