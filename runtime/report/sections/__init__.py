"""The report as ordered sections: the unit an audit family contributes to the report.

The base template (``report.html.j2``) renders the shared parts of every run (header, contents,
amendments, timings and versions, reproduction and signature, footer; the systems table is a
shared macro) and, between them, every :class:`Section` of the run in ``order``. A family's
section names its own template (under ``runtime/report/templates/``, by convention
``sections/<family>_<part>.html.j2``) and carries the plain, already formatted data that template
reads (no I/O, no logic beyond loops and conditionals in the template; method prose lives in the
templates, not here).

Order bands (``order``):

- below 0: *front matter*, rendered between the header and the table of contents (page 1's findings
  first, then the run's facts at a glance, the validity verdict); never in the contents;
- 0 to 799: the family's findings (:data:`ORDER` names the bands the built-in families use);
- 800 (amendments), 900 (timings and versions), 1000 (reproduction and signature): the shared
  parts the base template adds itself (:mod:`runtime.report.render`); a family's appendix
  (thresholds, method notes) takes 850.

One builder per family, each in its own module of this package:
:func:`runtime.report.sections.metric_suite.metric_suite_sections` (seed 000),
:func:`runtime.report.sections.effects.effects_sections` (seed 003),
:func:`runtime.report.sections.llm.llm_sections`,
:func:`runtime.report.sections.causal.causal_sections` (seed 001).
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
        Template name relative to ``runtime/report/templates/`` (e.g. ``"sections/effects.html.j2"``),
        or ``"package:name"`` for a template in ``templates/`` of another package (a family's own);
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


#: Positions used by the built-in families and the shared parts (see the module docstring).
ORDER = {
    "findings": -120, "headline": -115, "facts": -100, "source": -90, "verdict": -50,  # front matter (not in the contents)
    "summary": 100, "fail": 200, "design": 300, "results": 400, "systems_compared": 450, "effects": 500, "ll144": 550, "noise_floor": 560,
    "drift": 600, "llm": 700, "amendments": 800, "appendix": 850, "glossary": 860, "annex_iv": 870, "run_record": 900, "provenance": 1000,
}


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
