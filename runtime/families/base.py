"""The contract of an audit family: a plug-in unit of analysis (DESIGN.md, "Architecture").

An audit family reads the scored candidates of a run (its :class:`~runtime.pipeline.context.RunContext`)
and returns a :class:`FamilyResult`: named tables (each written as ``<name>.csv``), status rows
(read by the one ``--fail-on`` gate), an optional verdict (VALID / INCONCLUSIVE; INCONCLUSIVE exits 5),
report sections and console lines. The compiler side of the same family (``compiler.families``)
owns its spec block, checks, resolution and compile summary; both registries list the same ids.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

import pandas as pd

if TYPE_CHECKING:  # pragma: no cover
    from runtime.pipeline.context import RunContext
    from runtime.report.sections import Section

#: Columns of a family's status rows (the input of the ``--fail-on`` gate).
STATUS_COLUMNS = ("family", "system", "condition", "item", "status", "status_operational")

#: What a run can provide to a family (declared by the family as ``needs``; checked at compile time).
PAIRED, UNPAIRED, LLM_ANSWERS = "paired", "unpaired", "llm_answers"


def status_frame(rows: list[dict[str, Any]] | pd.DataFrame | None = None) -> pd.DataFrame:
    """Status rows as a frame with exactly :data:`STATUS_COLUMNS` (empty when ``rows`` is empty)."""
    frame = pd.DataFrame(rows if rows is not None else [])
    return frame.reindex(columns=list(STATUS_COLUMNS)).fillna("")


@dataclass
class FamilyResult:
    """What one audit family produced for a run.

    Attributes
    ----------
    tables : dict of str to pandas.DataFrame
        Written as ``<name>.csv`` in the run folder, in this order, as soon as the family ends. A
        table of the same name as an earlier family's replaces it (a later family may add rows to
        an earlier table, e.g. LLM response validity rows in ``metrics.csv``).
    status : pandas.DataFrame
        :data:`STATUS_COLUMNS`; ``status`` under the research tier, ``status_operational`` under the
        operational tier (``PASS``, ``INVESTIGATE``, ``FAIL``, or empty for rows without a status).
    verdict : str or None
        ``VALID`` or ``INCONCLUSIVE`` when the family runs a validity protocol (seed 003 §3.7).
    failed : list of str
        The failed checks behind an INCONCLUSIVE verdict.
    sections : list of Section
        The family's report sections.
    summary : list of str
        Lines the CLI prints after the run.
    record : dict
        Merged into ``run.json`` (e.g. ``{"validity": {...}}``).
    data : dict
        Anything later families or the report read (e.g. the metric suite's frames).
    """

    tables: dict[str, pd.DataFrame] = field(default_factory=dict)
    status: pd.DataFrame = field(default_factory=status_frame)
    verdict: str | None = None
    failed: list[str] = field(default_factory=list)
    sections: list["Section"] = field(default_factory=list)
    summary: list[str] = field(default_factory=list)
    record: dict[str, Any] = field(default_factory=dict)
    data: dict[str, Any] = field(default_factory=dict)


class AuditFamily:
    """Base class of an audit family; subclasses register with ``@family("id")``.

    Attributes
    ----------
    id : str
        Registry id, equal to the compiler family's id.
    needs : frozenset of str
        What the run must provide (:data:`PAIRED`, :data:`UNPAIRED`, :data:`LLM_ANSWERS`).
    title : str
        Progress-bar and timing label.
    """

    id: ClassVar[str] = ""
    needs: ClassVar[frozenset[str]] = frozenset()
    title: ClassVar[str] = ""

    def enabled(self, ctx: "RunContext") -> bool:
        """Whether the run's resolved spec asks for this family: the compiler family of the same id
        decides (``compiler.families.<id>.enabled``), and the run must provide what it needs (the
        compiler already refused a spec where it cannot)."""
        from compiler.families import FAMILIES

        return FAMILIES[self.id].enabled(ctx.resolved) and self.needs <= ctx.provides

    def analyse(self, ctx: "RunContext") -> FamilyResult:  # pragma: no cover - interface
        raise NotImplementedError

    def sections(self, ctx: "RunContext", result: FamilyResult, meta: dict[str, Any]) -> list["Section"]:
        """The family's report sections, built after every family has run.

        ``meta`` is the run's report metadata (:func:`runtime.pipeline.metadata.report_meta`). The
        default returns the sections ``analyse`` put into ``result.sections``.
        """
        return list(result.sections)
