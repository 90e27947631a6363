"""The typed state one run carries through the pipeline (DESIGN.md, "Architecture")."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from runtime.run.folder import RunFolder
from runtime.run.settings import RunSettings


@dataclass
class RunContext:
    """Everything a stage, a design, a system adapter or an audit family reads or adds.

    Attributes
    ----------
    compiled : compiler.Compiled
        The validated spec, its resolved form and its plan.
    lock : dict
        The lock the run was checked against.
    folder : RunFolder
        The run folder and its ``run.json`` record (``folder.run``).
    timings : dict of str to float
        Seconds per stage (``run.json``'s ``timings``).
    progress : runtime.progress.Progress
        Progress bars: ``progress.task(description, total)`` -> ``advance(n)``.
    jobs : dict of str to str or None
        Job id -> description text.
    candidates : pandas.DataFrame or None
        What the design generated: paired designs ``job_id, cv_id, variant, is_true_match, text`` (+ one
        column per axis); population designs one row per profile with its attributes and ``text``;
        None for a score-file audit (the scores bring their own cells).
    provides : frozenset of str
        What the design and the systems provide (``paired`` or ``unpaired``, ``answers``).
    scores : pandas.DataFrame or None
        Every system's scores, long: ``system, condition, replicate, job_id, cv_id, [variant,] score``.
    paired : pandas.DataFrame or None
        The ranked paired frame (paired designs; DESIGN.md "Analysis contracts").
    control_candidates : pandas.DataFrame or None
        The placebo résumés (issue 38): ``job_id, cv_id, variant, perturbation, is_true_match, text``
        (``variant`` = the negative control's id); None without negative controls or generator.
    controls : pandas.DataFrame or None
        Every system's scores of the placebo résumés (issue 38), long as ``scores``; never part of
        ``scores`` or ``paired``, so no placebo row reaches BH or the risk score.
    window_shares : dict
        (system, control id) -> share of the control's placebo résumés whose window (the tokens the system
        reads, :meth:`runtime.systems.base.SystemAdapter.window`) differs from the reference résumé's; only
        for systems that read a fixed window.
    results : dict of str to FamilyResult
        Each audit family's result, by family id, in run order.
    tables : dict of str to pandas.DataFrame
        Every result table written so far, by name (``metrics`` -> ``metrics.csv``).
    store : runtime.store.TaskStore
        The task store finished tasks are taken from and kept in.
    accept_vendor_file : str or None
        ``audit execute --accept-vendor-file REASON``: use a blind system's returned file although it
        differs from the one first read (the change and its reason are recorded and reported).
    engine : runtime.pipeline.engine.Engine or None
        Where the run's jobs (generation) and score batches are computed (issue 40); None: this process, one
        after the other (what :class:`runtime.pipeline.engine.LocalEngine` does).
    """

    compiled: Any
    lock: dict[str, Any]
    folder: RunFolder
    timings: dict[str, float]
    progress: Any
    jobs: dict[str, str | None] = field(default_factory=dict)
    candidates: pd.DataFrame | None = None
    provides: frozenset[str] = frozenset()
    scores: pd.DataFrame | None = None
    paired: pd.DataFrame | None = None
    control_candidates: pd.DataFrame | None = None
    controls: pd.DataFrame | None = None
    window_shares: dict[tuple[str, str], float] = field(default_factory=dict)
    results: dict[str, Any] = field(default_factory=dict)
    tables: dict[str, pd.DataFrame] = field(default_factory=dict)
    store: Any = None
    accept_vendor_file: str | None = None
    engine: Any = None
    _settings: RunSettings | None = field(default=None, repr=False)

    @property
    def resolved(self) -> dict[str, Any]:
        """The resolved spec (``compiler.resolve.resolve``)."""
        return self.compiled.resolved

    @property
    def run(self) -> dict[str, Any]:
        """The ``run.json`` record."""
        return self.folder.run

    @property
    def settings(self) -> RunSettings:
        """The run's analysis settings, built once from the resolved spec (:class:`RunSettings`)."""
        if self._settings is None:
            self._settings = RunSettings.from_resolved(self.compiled.resolved)
        return self._settings

    @property
    def seed(self) -> int:
        return self.settings.seed

    def score_range(self) -> dict[str, tuple[float, float]]:
        """System id -> its resolved ``score_range`` (:attr:`RunSettings.score_range`)."""
        return dict(self.settings.score_range)

    def score_resolution(self) -> dict[str, float | None]:
        """System id -> the grid of the scores the analyses see (:attr:`RunSettings.score_resolution`)."""
        return dict(self.settings.score_resolution)

    def write_table(self, name: str, frame: pd.DataFrame) -> None:
        """Keep ``frame`` as table ``name`` and write it as ``<name>.csv`` at once."""
        self.tables[name] = frame
        self.folder.write_csv(f"{name}.csv", frame)
