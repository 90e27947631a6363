"""Name cues with a measured signal (issue 32 §3): first names from SSA, surnames from the Census, each kept
only when its signal reaches the spec's floor.

An axis on the ``name`` slot may draw its cues from these tables instead of listing them
(``axes.<axis>.names: {table: us, floor, per_level, decade, levels: {level: {race, sex}}}``). The draw happens
at resolution, so the drawn names are part of the resolved spec and of the lock, with the tables' sha256.

Tables (package data, built by ``scripts/build_names_bundle.py`` from ``../shared/data``; public domain):

- ``first_names.csv.gz``: ``decade, name, female, male``: SSA births with that first name in the decade
  (1950s-2000s), by sex (national data, births 1880-2023 as of 3 March 2024; a cell under 1,000 births is 0);
- ``surnames.csv.gz``: ``rank, surname, white, black, asian, hispanic``: the first 20,000 surnames of the Census
  2010 list, % of people with the surname who are non-Hispanic White, non-Hispanic Black, non-Hispanic
  Asian/NHPI, Hispanic (any race).

Signals (both in [0, 1]):

- **sex signal** of a first name: the share of the level's sex among the decade's births with that name,
  ``female / (female + male)`` for ``sex: female``;
- **race signal** of a surname: the share of the level's race among people with that surname, ``black / 100``
  for ``race: black``.

The draw (:func:`draw`): the first names whose sex signal reaches ``floor``, the ``POOL * per_level`` most
given to the level's sex in the decade; the surnames whose race signal reaches ``floor``, the ``POOL *
per_level`` first in Census rank; ``per_level`` distinct pairs drawn from them with a generator seeded by
(spec seed, ``"names"``, axis, level).
"""

from __future__ import annotations

import hashlib
from functools import lru_cache
from importlib import resources

import numpy as np
import pandas as pd

#: Tables, in the order the lock lists them.
TABLES: tuple[str, ...] = ("first_names", "surnames")
#: Birth decades of the first-name table.
DECADES: tuple[int, ...] = (1950, 1960, 1970, 1980, 1990, 2000)
#: Races and sexes a level may name.
RACES: tuple[str, ...] = ("white", "black", "hispanic", "asian")
SEXES: tuple[str, ...] = ("female", "male")
#: The pools a level draws from hold this many times ``per_level`` names (the most common that qualify).
POOL = 3
#: Most draws tried before a level is declared unable to give ``per_level`` distinct names.
MAX_TRIES = 10_000

MSG_FLOOR = ("level {level!r}: no {kind} reaches the floor {floor:g} for {what}; the strongest {kind} signal "
             "in the tables is {best:.3f} ({name}); lower floor to at most {best_floor:.2f}")
MSG_TOO_FEW = ("level {level!r} ({race}, {sex}): {n_first} first names and {n_sur} surnames reach the floor "
               "{floor:g}, {combos} distinct names, fewer than per_level = {per_level}; lower per_level or floor")


@lru_cache(maxsize=None)
def table(name: str) -> pd.DataFrame:
    """One bundled table (KeyError for a name not in :data:`TABLES`)."""
    if name not in TABLES:
        raise KeyError(f"unknown name table {name!r}; allowed: {', '.join(TABLES)}")
    with resources.files(__name__).joinpath(f"{name}.csv.gz").open("rb") as fh:
        return pd.read_csv(fh, compression="gzip", keep_default_na=False)


@lru_cache(maxsize=None)
def table_digests() -> dict[str, str]:
    """``{table file name: sha256 hex}`` (what the lock records)."""
    root = resources.files(__name__)
    return {f"{n}.csv.gz": hashlib.sha256(root.joinpath(f"{n}.csv.gz").read_bytes()).hexdigest() for n in TABLES}


def first_name_signals(decade: int, sex: str) -> pd.DataFrame:
    """First names of ``decade`` with ``births`` (of ``sex``) and ``signal`` (share of ``sex`` among the
    decade's births with the name), most given first, ties by name."""
    t = table("first_names")
    t = t[t["decade"] == decade]
    births = t[sex]
    out = pd.DataFrame({"name": t["name"], "births": births, "signal": births / (t["female"] + t["male"])})
    return out[out["births"] > 0].sort_values(["births", "name"], ascending=[False, True], kind="stable")


def surname_signals(race: str) -> pd.DataFrame:
    """Surnames with ``rank`` and ``signal`` (share of ``race`` among people with the surname), Census rank
    order."""
    t = table("surnames")
    return pd.DataFrame({"surname": t["surname"], "rank": t["rank"], "signal": t[race] / 100.0}).sort_values(
        "rank", kind="stable")


def display_surname(surname: str) -> str:
    """A Census surname (upper case) as written in a résumé: ``WASHINGTON`` -> ``Washington``,
    ``MCDONALD`` -> ``McDonald``, ``O'BRIEN`` -> ``O'Brien``."""
    out = surname.title()
    if out.startswith("Mc") and len(out) > 2:
        out = "Mc" + out[2].upper() + out[3:]
    return out


def _seed(seed: int, *labels: object) -> int:
    """As :func:`runtime.seeding.derive_seed` (the compiler never imports the runtime)."""
    h = hashlib.sha256(str(int(seed)).encode())
    for label in labels:
        h.update(b"\x1f" + str(label).encode())
    return int.from_bytes(h.digest()[:8], "big")


def problem(level: str, *, race: str, sex: str, floor: float, per_level: int, decade: int) -> str | None:
    """Why ``level`` cannot get ``per_level`` names at ``floor`` (:data:`MSG_FLOOR`, naming the best signal
    available, or :data:`MSG_TOO_FEW`), or None."""
    first, sur = first_name_signals(decade, sex), surname_signals(race)
    for kind, frame, col in (("first name", first, "name"), ("surname", sur, "surname")):
        if not (frame["signal"] >= floor).any():
            best = frame.sort_values("signal", ascending=False, kind="stable").iloc[0]
            what = f"sex {sex} (born in the {decade}s)" if kind == "first name" else f"race {race}"
            return MSG_FLOOR.format(level=level, what=what, kind=kind, floor=floor, best=best["signal"],
                                    name=display_surname(best[col]) if kind == "surname" else best[col],
                                    best_floor=np.floor(best["signal"] * 100) / 100)
    n_first = int(min((first["signal"] >= floor).sum(), POOL * per_level))
    n_sur = int(min((sur["signal"] >= floor).sum(), POOL * per_level))
    if n_first * n_sur < per_level:
        return MSG_TOO_FEW.format(level=level, race=race, sex=sex, floor=floor, per_level=per_level,
                                  n_first=n_first, n_sur=n_sur, combos=n_first * n_sur)
    return None


def draw(*, seed: int, axis: str, level: str, race: str, sex: str, floor: float, per_level: int,
         decade: int) -> list[dict]:
    """Draw ``per_level`` distinct full names for one level (see the module docstring for the rule).

    Returns
    -------
    list of dict
        ``{"name", "first", "surname", "sex_signal", "race_signal"}`` in draw order; signals rounded to 4
        decimals (both >= ``floor``).

    Raises
    ------
    ValueError
        The level cannot reach the floor (the message of :func:`problem`).
    """
    why = problem(level, race=race, sex=sex, floor=floor, per_level=per_level, decade=decade)
    if why is not None:
        raise ValueError(why)
    first = first_name_signals(decade, sex)
    first = first[first["signal"] >= floor].head(POOL * per_level)
    sur = surname_signals(race)
    sur = sur[sur["signal"] >= floor].head(POOL * per_level)
    r = np.random.default_rng(np.random.SeedSequence(_seed(seed, "names", axis, level)))
    out, seen = [], set()
    for _ in range(MAX_TRIES):
        if len(out) == per_level:
            break
        f = first.iloc[int(r.integers(len(first)))]
        s = sur.iloc[int(r.integers(len(sur)))]
        name = f"{f['name']} {display_surname(s['surname'])}"
        if name in seen:
            continue
        seen.add(name)
        out.append({"name": name, "first": str(f["name"]), "surname": str(s["surname"]),
                    "sex_signal": round(float(f["signal"]), 4), "race_signal": round(float(s["signal"]), 4)})
    return out
