"""The parts of a base résumé (seed 000 §3.1.2, Phase A) and the draws that build them, shared by the
hand-written families (:mod:`runtime.generate.base`) and the O*NET occupations (:mod:`runtime.generate.onet`)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
#: Shortest role, in months.
MIN_ROLE_MONTHS = 12
#: At most one role per this many months of career (no one-year-per-job histories).
MONTHS_PER_ROLE_CAP = 18


@dataclass(frozen=True)
class Role:
    """One position of the experience section (most recent first in :class:`ResumeSections`).

    ``task_ids``: for a role written from O*NET (:mod:`runtime.generate.onet`), the O*NET Task ID of each
    bullet, in bullet order; empty for the hand-written families.
    """

    title: str
    employer: str
    city: str
    start: str
    end: str
    bullets: tuple[str, ...]
    task_ids: tuple[int, ...] = ()


@dataclass(frozen=True)
class ResumeSections:
    """The identity-neutral content of a base resume.

    Attributes
    ----------
    summary : str
        Professional summary paragraph.
    years_experience : int
        Whole years from the first role's start to the reference date (``as_of``).
    experience : tuple of Role
        2-4 roles (at most one per 18 months of career), most recent first.
    education : tuple of str
        Degrees, highest first, each "degree — institution".
    tools, competencies : tuple of str
        The skills section (6-10 entries in total).
    certifications : tuple of str
        Possibly empty.
    availability : str
        First line of the ADDITIONAL INFORMATION section.
    """

    summary: str
    years_experience: int
    experience: tuple[Role, ...]
    education: tuple[str, ...]
    tools: tuple[str, ...]
    competencies: tuple[str, ...]
    certifications: tuple[str, ...]
    availability: str


def _pick(r: np.random.Generator, items, n: int | None = None):
    """Draw one item (n=None) or n distinct items (in draw order) from a sequence."""
    if n is None:
        return items[int(r.integers(len(items)))]
    if n > len(items):  # pragma: no cover - guards the package data
        raise ValueError(f"cannot draw {n} distinct items from {len(items)}")
    return [items[int(i)] for i in r.choice(len(items), size=n, replace=False)]


def _month_label(index: int) -> str:
    """Month index (year * 12 + month - 1) -> "Mar 2021"."""
    return f"{MONTHS[index % 12]} {index // 12}"
