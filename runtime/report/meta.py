"""What the report reads about a run, typed: :class:`ReportMeta` (issue 28 §4).

:func:`runtime.pipeline.metadata.report_meta` builds it once from the resolved spec, the lock, the
``run.json`` record and the run's :class:`runtime.run.settings.RunSettings`; the shared core
(:func:`runtime.report.core.build_core`) and every audit family's sections read its attributes. The
analysis settings (reference variant, K, α, bootstrap, ranking, decision rule, thresholds) are the
settings' own values, defaults already applied: no section re-applies one.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Mapping



def _empty() -> Any:
    """A field that defaults to an empty read-only mapping."""
    return field(default_factory=lambda: MappingProxyType({}))


@dataclass(frozen=True)
class ReportSystem:
    """One system under test, as the report shows it.

    Attributes
    ----------
    id, kind : str
        The system's id and kind.
    model : str
        What it scores with, in words (:meth:`compiler.systems.base.SystemKind.source`).
    fingerprint : str
        Its model fingerprint (a blind score file: the sha256 of the file the run read).
    score_range : tuple of float, optional
        Its ``[low, high]`` score scale.
    blind : Mapping, optional
        A blind system's record (``run.json`` ``systems_info[id].blind``); None for any other system.
    """

    id: str
    kind: str = ""
    model: str = ""
    fingerprint: str = ""
    score_range: tuple[float, float] | None = None
    blind: Mapping[str, Any] | None = None


@dataclass(frozen=True)
class ReportJob:
    """One audited job: its id, title, and what its posting and résumés were written from (``source``, issue
    32: an O*NET occupation with its code, title and release, or a hand-written family; "" for a job whose
    résumés the tool did not write)."""

    id: str
    title: str = ""
    source: str = ""


@dataclass(frozen=True)
class ReportMeta:
    """The run's metadata as the report reads it (header, design, systems, amendments, timings).

    Attributes
    ----------
    audit, title : str
        The audit id and its one-line title.
    seed : int
        The spec's seed.
    spec_path : str
        The spec file as the run recorded it.
    spec_digest : Mapping or str
        ``{algorithm, digest}`` of the resolved spec (a bare string is read as sha256).
    lock_created_at, generated_at, run_id, tool_version : str
        The lock's time, the run's start, the run id and the tool version.
    reference : str or None
        The reference variant (None for an unpaired design).
    k : Mapping of str to int
        K per metric family (:attr:`RunSettings.k`).
    alpha : float
        Significance level.
    n_bootstrap : int
        Bootstrap resamples.
    ranking : str
        How a variant is ranked (``swap_in`` or ``per_variant``; the methods version's default applied).
    multiplicity : str
        Which p-values share an adjustment (``run``, ``per_metric``, ``hierarchical``, ``graphical``).
    decision : Mapping or None
        ``{"top_k": K}`` or ``{"threshold": t}`` when the spec states the selection rule.
    thresholds : Mapping
        ``{tier: {metric: {"pass": x, "investigate": y}}}``, every default made explicit at compile time.
    systems : tuple of ReportSystem
        The systems under test, in spec order.
    jobs : tuple of ReportJob
        The audited jobs, in spec order.
    variants : Mapping
        Variant id -> ``{axis: level}``.
    axes : tuple of str
        The protected axes, in spec order.
    signals : Mapping
        Axis -> how its levels were signalled (``slot``, ``levels``, ``cues``, ``description``, ``examples``)
        and, when the spec writes them, the levels' ``labels`` (issue 31 §3; :meth:`level_text`).
    design : str
        The design id (``template``, ``score_file``, ``population``, ...).
    source : Mapping or None
        A score-file audit's ``source`` block.
    counts : Mapping
        The plan's counts (jobs, base candidates, résumés, ...).
    amendments : tuple of Mapping
        Each amendment of the lock: its reason first, then its other fields (shown as key: value).
    timings : Mapping of str to float
        Seconds per stage.
    versions : Mapping of str to str
        Package versions.
    systems_info : Mapping
        ``run.json`` ``systems_info`` (what each system could see).
    resumed : tuple of Mapping
        Each ``--resume`` of the run (time, previous status, stage).
    reused_tasks : tuple of str
        Tasks taken from the task store.
    lock_signature : Mapping or None
        The lock signature's record in ``run.json``.
    lock_recreated : tuple of Mapping
        Earlier locks of the same audit that this one replaced.
    engagement : Mapping or None
        ``run.json`` ``engagement`` (issue 37 §3): the runs sealed under each superseded lock and under
        this lock before this run (:func:`runtime.provenance.locksign.engagement`); None for a run made
        before it was recorded.
    market : str or None
        The labour market the template generator wrote the résumés for (``candidates.market``, issue 32
        §2: ``fr`` or ``us``); None when the tool wrote no résumé from a template.
    """

    audit: str = ""
    title: str | None = None
    seed: int | None = None
    spec_path: str | None = None
    spec_digest: Mapping[str, Any] | str | None = None
    lock_created_at: str | None = None
    generated_at: str | None = None
    run_id: str | None = None
    tool_version: str | None = None
    reference: str | None = None
    k: Mapping[str, int] = _empty()
    alpha: float | None = None
    n_bootstrap: int | None = None
    ranking: str | None = None
    multiplicity: str | None = None
    decision: Mapping[str, Any] | None = None
    thresholds: Mapping[str, Any] = _empty()
    systems: tuple[ReportSystem, ...] = ()
    jobs: tuple[ReportJob, ...] = ()
    variants: Mapping[str, Mapping[str, Any]] = _empty()
    axes: tuple[str, ...] = ()
    signals: Mapping[str, Mapping[str, Any]] = _empty()
    design: str | None = None
    source: Mapping[str, Any] | None = None
    counts: Mapping[str, Any] = _empty()
    amendments: tuple[Mapping[str, Any], ...] = ()
    timings: Mapping[str, float] = _empty()
    versions: Mapping[str, str] = _empty()
    systems_info: Mapping[str, Any] = _empty()
    resumed: tuple[Mapping[str, Any], ...] = ()
    reused_tasks: tuple[str, ...] = ()
    lock_signature: Mapping[str, Any] | None = None
    lock_recreated: tuple[Mapping[str, Any], ...] = ()
    engagement: Mapping[str, Any] | None = None
    market: str | None = None

    @property
    def score_file(self) -> bool:
        """Whether the run audits a vendor's score file (nothing generated, embedded or asked)."""
        return self.design == "score_file"

    def level_text(self, level: Any, axis: str | None = None) -> str:
        """A level as the report prints it: its id, then its label when the spec writes one (issue 31 §3:
        ``axes.<axis>.labels``): "Female-NA (North African name, woman)".

        ``axis``: the level's axis; without it the level id is looked up in every axis and labelled only
        when exactly one axis has a level of that id with a label. A missing level is an em dash."""
        from runtime.report.formatting import fmt_text

        text = fmt_text(level)
        found = [a.get("labels", {}).get(text) for name, a in self.signals.items()
                 if (axis is None or name == axis) and text in (a.get("levels") or ())]
        found = [x for x in found if x]
        return f"{text} ({found[0]})" if len(found) == 1 and found[0] != text else text

    def with_level_labels(self, text: Any) -> str:
        """``text`` with every ``axis=level`` pair (``headline.csv`` categories, ``disadvantaged``: joined by
        ``; `` or `` | ``), an axis contrast (``effects.csv``: ``axis: level vs level``) or a bare level id
        labelled (:meth:`level_text`); other text unchanged."""
        import re

        from runtime.report.formatting import fmt_text

        s = fmt_text(text)
        if not any(a.get("labels") for a in self.signals.values()):
            return s
        if s in {lv for a in self.signals.values() for lv in (a.get("levels") or ())}:
            return self.level_text(s)
        axes = "|".join(re.escape(a) for a in sorted(self.signals, key=len, reverse=True))
        contrast = re.fullmatch(rf"({axes}): (.+) vs (.+)", s)
        if contrast:
            a = contrast.group(1)
            return f"{a}: {self.level_text(contrast.group(2), a)} vs {self.level_text(contrast.group(3), a)}"
        return re.sub(rf"\b({axes})=([^;|]+?)(?=\s*(?:;|\||$))",
                      lambda m: f"{m.group(1)}={self.level_text(m.group(2), m.group(1))}", s)

    @property
    def threshold(self) -> Any:
        """The decision threshold (a number, or system id -> number), or None under a top-K rule."""
        return None if self.decision is None else self.decision.get("threshold")
