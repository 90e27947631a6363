"""The report as ordered sections: the unit an audit family contributes to the report.

The base template (``report.html.j2``) renders the shared parts (header, design, systems,
amendments, timings, versions, reproduction and signature, footer) and, between them, every
:class:`Section` of the run in ``order``. A family's section names its own template (under
``runtime/report/templates/``) and carries the plain, already formatted data that template reads
(no I/O, no logic beyond loops and conditionals in the template).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Section:
    """One report section contributed by an audit family.

    Attributes
    ----------
    id : str
        HTML anchor of the section, unique in the report (``[a-z0-9-]+``).
    title : str
        Title in the table of contents and the section heading.
    template : str
        Template name relative to ``runtime/report/templates/`` (e.g. ``"sections/effects.html.j2"``);
        it reads the section's data as ``section`` and the shared report data as ``core``.
    context : Mapping
        The section's data: strings, numbers, booleans, lists and dicts, inline SVG strings.
    order : int
        Position in the report, lower first; ties keep the order of contribution.
    toc : bool
        Listed in the table of contents.
    """

    id: str
    title: str
    template: str
    context: Mapping[str, Any] = field(default_factory=dict)
    order: int = 500
    toc: bool = True


def ordered(sections: Iterable[Section]) -> list[Section]:
    """Sections by ``order`` (stable), checking that anchors are unique.

    Raises
    ------
    ValueError
        When two sections share an ``id``.
    """
    out = sorted(sections, key=lambda s: s.order)
    seen: set[str] = set()
    for s in out:
        if s.id in seen:
            raise ValueError(f"two report sections share the anchor {s.id!r}")
        seen.add(s.id)
    return out
