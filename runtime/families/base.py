"""The contract of an audit family: a plug-in unit of analysis (DESIGN.md, "Architecture").

An audit family reads the scored candidates of a run (its :class:`~runtime.run.context.RunContext`)
and returns a :class:`FamilyResult`: named tables (each written as ``<name>.csv``), documents (other
files of the run folder), status rows (read by the one ``--fail-on`` gate), an optional verdict (VALID /
INCONCLUSIVE; any family's INCONCLUSIVE exits 5), report sections and console lines. The family is
declared once, on the compiler side (:class:`compiler.families.base.Family`: id, order, needs, spec
block, checks, resolution, compile summary); this runtime half binds to it with ``@family("<id>")``
and reads it (``self.declaration``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

import pandas as pd

if TYPE_CHECKING:  # pragma: no cover
    from runtime.run.context import RunContext
    from runtime.report.meta import ReportMeta
    from runtime.report.sections import Section

#: Columns of a family's status rows (the input of the ``--fail-on`` gate).
STATUS_COLUMNS = ("family", "system", "condition", "item", "status", "status_operational")

#: What a run can provide to a family (:mod:`compiler.registry`; the family's declaration needs it).
from compiler.registry import ANSWERS, LLM_GENERATION, PAIRED, TOOL_TEXT, UNPAIRED  # noqa: E402


def status_frame(rows: list[dict[str, Any]] | pd.DataFrame | None = None) -> pd.DataFrame:
    """Status rows as a frame with exactly :data:`STATUS_COLUMNS` (empty when ``rows`` is empty)."""
    frame = pd.DataFrame(rows if rows is not None else [])
    return frame.reindex(columns=list(STATUS_COLUMNS)).fillna("")


#: Order of the statuses of page 1's findings, worst first (issue 31 §6).
FINDING_STATUSES = ("FAIL", "INVESTIGATE", "INCONCLUSIVE")


@dataclass(frozen=True)
class Finding:
    """One finding of a family, as page 1 states it (issue 31 §6; ``_findings.html.j2``).

    Attributes
    ----------
    system, condition : str
        The system under test and the prompt framing (``default`` for non-LLM systems).
    variant : str
        The variant compared with the reference (a population unit: its job id).
    levels : tuple of str
        ``axis=level`` of each axis where the variant differs from the reference (a population unit:
        ``"attribute: x1 vs x0"``); the report prints each level with its label.
    metric : str
        The metric id (``metrics.csv``) or the effect (``causal.csv`` term) that decides the finding.
    value, ci_low, ci_high : float
        The metric's value and 95% interval as in its table (a score delta normalised to [0, 1] by
        ``score_range``; a causal effect on the score scale, its simultaneous band).
    status : str
        ``FAIL``, ``INVESTIGATE`` or ``INCONCLUSIVE`` (research tier).
    disadvantaged : str
        The level that loses (the row's ``disadvantaged``), or ``direction not established``/empty.
    anchor : str
        The report anchor of the finding's details.
    score_loss : float or None
        The variant's mean score difference from the reference, normalised to [0, 1] by ``score_range``
        (its ``score_delta`` value; negative: the variant scores lower), or on the score scale when
        ``score_range`` is None; None when the run has none.
    score_range : tuple of float or None
        The system's ``[low, high]`` scale (None: ``score_loss`` is on the score scale already).
    selection : str
        The loss in selection terms, when a selection metric flags it ("7 of the reference's top-10
        stay"; under a threshold, both selection rates); empty otherwise.
    family : str
        The audit family that found it.
    note : str
        A caveat page 1 prints with it (a population unit whose positivity fails: its path split is
        extrapolated); empty otherwise.
    """

    system: str
    condition: str
    variant: str
    levels: tuple[str, ...]
    metric: str
    value: float
    ci_low: float
    ci_high: float
    status: str
    disadvantaged: str
    anchor: str
    score_loss: float | None = None
    score_range: tuple[float, float] | None = None
    selection: str = ""
    family: str = ""
    note: str = ""


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
    documents : dict of str to bytes
        Other files of the run folder, by file name (a plain name, not a table's ``<name>.csv`` nor a
        file the run writes itself): written before the report, listed in ``run.json`` ``artifacts``
        and hashed by the manifest.
    sections : list of Section
        The family's report sections.
    summary : list of str
        Lines the CLI prints after the run.
    record : dict
        Merged into ``run.json`` (e.g. ``{"validity": {...}}``).
    data : dict
        Anything later families or the report read (e.g. the metric suite's frames).
    findings : list of Finding
        The family's FAIL, INVESTIGATE and INCONCLUSIVE findings, which page 1 lists worst first
        (issue 31 §6).
    findings_notes : list of str
        Sentences page 1 prints after the findings (the metric suite: its composite risk score with what
        it averages over).
    """

    tables: dict[str, pd.DataFrame] = field(default_factory=dict)
    status: pd.DataFrame = field(default_factory=status_frame)
    verdict: str | None = None
    failed: list[str] = field(default_factory=list)
    documents: dict[str, bytes] = field(default_factory=dict)
    sections: list["Section"] = field(default_factory=list)
    summary: list[str] = field(default_factory=list)
    record: dict[str, Any] = field(default_factory=dict)
    data: dict[str, Any] = field(default_factory=dict)
    findings: list[Finding] = field(default_factory=list)
    findings_notes: list[str] = field(default_factory=list)


def suite(ctx, paired: pd.DataFrame, *, n_bootstrap: int | None = None, per_job: bool = False, progress=None,
          variant_levels: dict[str, dict[str, str]] | None = None):
    """The metric suite (seed 000's nine metrics and the selection ratio) on ``paired`` under the run's analysis settings
    (:func:`runtime.analysis.analyse`); with ``per_job``, also every metric per job and the heterogeneity
    across jobs. Shared by ``metric_suite``, ``effects`` (its planted-bias self-test) and ``negative_controls``
    (its placebo variants, whose levels are the reference's: ``variant_levels``; default the resolved
    variant table), which never import each other."""
    from runtime.analysis import analyse

    st = ctx.settings
    return analyse(paired, reference=st.reference, k=dict(st.k), alpha=st.alpha,
                   n_bootstrap=st.bootstrap if n_bootstrap is None else n_bootstrap,
                   seed=st.seed, thresholds=st.thresholds, score_range=ctx.score_range(),
                   score_resolution=ctx.score_resolution(), ranking=st.ranking, multiplicity=st.multiplicity,
                   variant_levels=ctx.resolved["variants"]["table"] if variant_levels is None else variant_levels,
                   per_job=per_job, progress=progress, threshold=st.threshold)


INCONCLUSIVE, VALID = "INCONCLUSIVE", "VALID"


def combined_verdict(results: dict[str, FamilyResult]) -> tuple[str, list[str]] | None:
    """The run's one validity verdict over every family that gave one (issue 28 §2).

    Parameters
    ----------
    results : dict of str to FamilyResult
        Each family's result, in run order.

    Returns
    -------
    (str, list of str) or None
        ``INCONCLUSIVE`` when any family's verdict is, else that of the families (``VALID``); the failed
        checks of every family in run order, each prefixed ``<family id>:`` when several families gave a
        verdict. None when no family gave one.
    """
    given = [(fid, res) for fid, res in results.items() if res.verdict]
    if not given:
        return None
    several = len(given) > 1
    verdict = INCONCLUSIVE if any(res.verdict == INCONCLUSIVE for _, res in given) else given[0][1].verdict
    if several and verdict != INCONCLUSIVE:
        verdict = VALID if all(res.verdict == VALID for _, res in given) else given[0][1].verdict
    failed = [f"{fid}: {line}" if several else line for fid, res in given for line in res.failed]
    return verdict, failed


class AuditFamily:
    """Base class of an audit family's runtime half; subclasses bind to their declaration with
    ``@family("id")``, which sets :attr:`id` and :attr:`declaration`.

    Attributes
    ----------
    id : str
        The declaration's id.
    declaration : compiler.families.base.Family
        The compiler declaration: order, needs, ``after``, the enable rule.
    title : str
        Progress-bar and timing label.
    """

    id: ClassVar[str] = ""
    declaration: ClassVar[Any] = None
    title: ClassVar[str] = ""

    @property
    def needs(self):
        """What the run must provide (the declaration's :class:`~compiler.registry.Needs`)."""
        return self.declaration.needs

    def enabled(self, ctx: "RunContext") -> bool:
        """Whether the run runs this family: the declaration's one rule (enabled by the resolved spec,
        and given what it needs; the compiler already refused a spec where it cannot be)."""
        return self.declaration.runs(ctx.resolved)

    def analyse(self, ctx: "RunContext") -> FamilyResult:  # pragma: no cover - interface
        raise NotImplementedError

    def sections(self, ctx: "RunContext", result: FamilyResult, meta: "ReportMeta") -> list["Section"]:
        """The family's report sections, built after every family has run.

        ``meta`` is the run's report metadata (:func:`runtime.pipeline.metadata.report_meta`). The
        default returns the sections ``analyse`` put into ``result.sections``.
        """
        return list(result.sections)
