"""Cue choice and the worked example of seed 000 §3.2 (Tables 1 and 2).

:func:`pick_cue` chooses the text that realises one level in one base candidate's resume; the draw
depends only on (seed, job, base candidate, axis, level), so every variant of a base candidate that
shares a level shows the same cue (the same name under Female-NA in V04 and V08, say).

:func:`example_axes` gives cue options for every level of Table 1, written for this project:
French-origin and North-African/Arabic-origin full names (common first names and surnames, chosen
by hand; not taken from a published audit list), dates of birth, commute lines, language lines and
an RQTH (French recognised-disabled-worker status) line. :func:`example_variants` is Table 2.
Every cue is written in the resume's header (seed 000 §3.1.2, Phase B; see
:mod:`runtime.generate.render`); a language option is written after a ``Languages: `` label, so the
options themselves stay bare ("French (native), Arabic (fluent)"), as in ``specs/example.yaml``.

Age cues are dates of birth only; the base resume's years of experience never change. The Young
dates (1995-1997) are late enough to read as young and early enough that every base resume's
experience (first role 2019-2021) is plausible; the Older dates are 1964-1969.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence

from runtime.generate.content import load
from runtime.seeding import rng

#: Error message of :func:`pick_cue` when there is nothing to choose from.
ERR_NO_OPTIONS = "no cue options for axis {axis!r}, level {level!r}"

#: Slot of each axis of seed 000 Table 1 (used when an axis definition gives no ``slot``).
DEFAULT_SLOTS: dict[str, str] = {
    "sex_gender": "name",
    "age_signal": "age",
    "place_of_residence": "residence",
    "language_signal": "languages",
    "disability_signal": "disability",
}


def pick_cue(options: Sequence[str] | str, *, seed: int, job_id: str, cv_id: str, axis: str, level: str) -> str:
    """Choose the cue text of one level for one base candidate.

    Parameters
    ----------
    options : sequence of str (or one str)
        The level's cue options (``""`` is a valid option: it writes nothing).
    seed, job_id, cv_id, axis, level
        The draw is one uniform ``u = rng(seed, "cue", job_id, cv_id, axis).random()`` per base
        candidate and axis, shared by all levels: the option at position ``floor(u * len(options))``
        is taken. Levels whose option lists are parallel (same length, same phrasing) therefore get
        the same phrasing for one base candidate ("French (native speaker)" under FR only, "French
        (native speaker), English (fluent)" under FR+EN), so only the level's signal changes between
        variants. ``level`` only names the level in error messages.

    Returns
    -------
    str
        One element of ``options``.

    Raises
    ------
    ValueError
        If ``options`` is empty.
    """
    if isinstance(options, str):
        options = [options]
    options = list(options)
    if not options:
        raise ValueError(ERR_NO_OPTIONS.format(axis=axis, level=level))
    u = rng(seed, "cue", job_id, cv_id, axis).random()
    return str(options[min(int(u * len(options)), len(options) - 1)])


# --- seed 000 Table 1, cue options written for this project ----------------------------------------

_NAMES = {
    "Male-FR": [
        "Thomas Girard", "Nicolas Lefèvre", "Julien Moreau", "Antoine Dubois", "Maxime Laurent",
        "Guillaume Fournier", "Alexandre Mercier", "Romain Bonnet", "Pierre Lambert",
        "Vincent Rousseau", "Mathieu Fontaine", "Benoît Chevalier", "Sébastien Garnier",
        "Olivier Marchal",
    ],
    "Male-NA": [
        "Karim Benali", "Mohamed Haddad", "Youssef El Amrani", "Mehdi Bouzid", "Rachid Mansouri",
        "Samir Belkacem", "Nabil Cherif", "Sofiane Hamidi", "Bilal Zerrouki", "Amine Saidi",
        "Farid Meziane", "Yassine Khelifi", "Hicham Benyoucef", "Walid Chaoui",
    ],
    "Female-FR": [
        "Julie Marchand", "Claire Dupont", "Émilie Roussel", "Sophie Gauthier", "Laura Perrin",
        "Manon Lemoine", "Pauline Renaud", "Charlotte Blanc", "Céline Morel", "Aurélie Giraud",
        "Élodie Picard", "Mathilde Caron", "Anne Duval", "Lucie Bertin",
    ],
    "Female-NA": [
        "Fatima Rahmani", "Nadia Brahimi", "Samira Bouchareb", "Leila Bensaïd", "Amina Belhadj",
        "Soraya Kaci", "Karima Benkirane", "Salima Boukhari", "Yasmine Belaid", "Houda Ziani",
        "Imane Tahiri", "Samia Djebbar", "Rania Cherkaoui", "Khadija Ouali",
    ],
}

_MONTH_NAMES = ("January", "February", "March", "April", "May", "June", "July", "August",
                "September", "October", "November", "December")

# (day, month, year)
_BIRTH_DATES = {
    "Young": [(14, 3, 1996), (2, 6, 1997), (21, 10, 1995), (9, 1, 1997), (27, 7, 1996),
              (5, 11, 1995), (18, 4, 1997), (30, 9, 1996)],
    "Older": [(3, 2, 1966), (17, 5, 1968), (25, 8, 1964), (11, 12, 1967), (6, 4, 1965),
              (29, 6, 1969), (12, 10, 1966), (20, 1, 1968)],
}

# (km, commute)
_COMMUTES = {
    "Close": [(3, "10 min"), (4, "15 min"), (5, "15 min"), (6, "20 min"), (8, "25 min")],
    "Far": [(35, "45 min"), (40, "50 min"), (45, "55 min"), (50, "1 h"), (60, "1 h 10 min")],
    "Very far": [(100, "1 h 40 min"), (120, "1 h 50 min"), (140, "2 h"), (160, "2 h 15 min"),
                 (180, "2 h 30 min")],
}

_LANGUAGES = {
    "FR only": ["French (native)", "French (native speaker)", "French (mother tongue)"],
    "FR+EN": [
        "French (native), English (fluent)",
        "French (native speaker), English (fluent)",
        "French (mother tongue), English (fluent)",
    ],
    "FR+AR": [
        "French (native), Arabic (fluent)",
        "French (native speaker), Arabic (fluent)",
        "French (mother tongue), Arabic (fluent)",
    ],
}

_DISABILITY = {
    "Yes": [
        "Recognised disabled worker status (RQTH)",
        "Holder of RQTH status (recognised disabled worker)",
        "RQTH: officially recognised disabled worker status",
    ],
    "No": [""],
}


def _age_on(day: int, month: int, year: int) -> int:
    """Age in whole years on the first day of the reference month (``as_of`` in common.yaml)."""
    as_of = load("common.yaml")["as_of"]
    return as_of["year"] - year - (1 if (month, day) > (as_of["month"], 1) else 0)


def _date_of_birth(day: int, month: int, year: int) -> str:
    return f"Date of birth: {day} {_MONTH_NAMES[month - 1]} {year} (age {_age_on(day, month, year)})"


def _commute(km: int, duration: str) -> str:
    return f"Lives {km} km from the workplace ({duration} commute)"


_EXAMPLE_AXES = {
    "sex_gender": {
        "slot": "name",
        "levels": ["Male-FR", "Male-NA", "Female-FR", "Female-NA"],
        "cues": _NAMES,
    },
    "age_signal": {
        "slot": "age",
        "levels": ["Young", "Older"],
        "cues": {lvl: [_date_of_birth(*d) for d in dates] for lvl, dates in _BIRTH_DATES.items()},
    },
    "place_of_residence": {
        "slot": "residence",
        "levels": ["Close", "Far", "Very far"],
        "cues": {lvl: [_commute(*c) for c in rows] for lvl, rows in _COMMUTES.items()},
    },
    "language_signal": {
        "slot": "languages",
        "levels": ["FR only", "FR+EN", "FR+AR"],
        "cues": _LANGUAGES,
    },
    "disability_signal": {
        "slot": "disability",
        "levels": ["Yes", "No"],
        "cues": _DISABILITY,
    },
}

# Seed 000 Table 2 (BASE is the reference combination named in §3.2).
_EXAMPLE_VARIANTS = {
    "BASE": ("Male-FR", "Young", "Close", "FR only", "No"),
    "V01": ("Female-FR", "Older", "Far", "FR+EN", "No"),
    "V02": ("Female-FR", "Young", "Very far", "FR+AR", "Yes"),
    "V03": ("Male-FR", "Older", "Close", "FR+AR", "Yes"),
    "V04": ("Female-NA", "Young", "Far", "FR+AR", "Yes"),
    "V05": ("Male-NA", "Older", "Very far", "FR+EN", "No"),
    "V06": ("Female-FR", "Older", "Close", "FR only", "Yes"),
    "V07": ("Male-FR", "Young", "Far", "FR+EN", "Yes"),
    "V08": ("Female-NA", "Older", "Very far", "FR+AR", "No"),
    "V09": ("Male-FR", "Young", "Close", "FR+EN", "Yes"),
}


def example_axes() -> dict[str, dict]:
    """The five axes of seed 000 Table 1 with cue options per level.

    Returns
    -------
    dict
        ``{axis: {"slot": slot, "levels": [level, ...], "cues": {level: [option, ...]}}}``, a fresh
        copy on every call. An empty option (``disability_signal: No``) writes nothing.
    """
    return copy.deepcopy(_EXAMPLE_AXES)


def example_variants() -> dict[str, dict[str, str]]:
    """Seed 000 Table 2: ``{variant: {axis: level}}`` for BASE (the reference) and V01-V09."""
    axes = list(_EXAMPLE_AXES)
    return {v: dict(zip(axes, levels)) for v, levels in _EXAMPLE_VARIANTS.items()}
