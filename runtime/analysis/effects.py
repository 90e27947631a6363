"""The effect-size family and the validity protocol of one run (seed 003 §3.7), frames in and out.

:func:`analyse_effects` runs, as the resolved spec declares them: the contrasts
(:mod:`.effect_size`), the regression specifications (:mod:`.models`), DerSimonian–Laird pooling
(:mod:`.pooling`), the validity protocol (:mod:`.validity`) and the planted-bias self-test
(:mod:`.sensitivity`). :meth:`EffectsResult.long_frame` is ``effects.csv``: every number, one
``section`` per table.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

NOT_ASSESSED = "NOT ASSESSED"
#: ``section`` value -> attribute of :class:`EffectsResult`, in ``effects.csv`` order.
SECTIONS = {"contrast": "contrasts", "contrast_job": "contrasts_by_job", "model": "models", "pooling": "pooling", "validity": "validity",
            "self_test": "self_test"}


#: Integer columns of ``effects.csv`` (stacking the tables would otherwise print them as floats).
COUNT_COLUMNS = ("n_treatment", "n_reference", "n_obs", "n_clusters", "k_units", "q_df", "n")


@dataclass
class EffectsResult:
    """Frames of the family; ``verdict`` is VALID, INCONCLUSIVE or NOT ASSESSED (no protocol)."""

    contrasts: pd.DataFrame = field(default_factory=pd.DataFrame)
    contrasts_by_job: pd.DataFrame = field(default_factory=pd.DataFrame)
    models: pd.DataFrame = field(default_factory=pd.DataFrame)
    pooling: pd.DataFrame = field(default_factory=pd.DataFrame)
    validity: pd.DataFrame = field(default_factory=pd.DataFrame)
    self_test: pd.DataFrame = field(default_factory=pd.DataFrame)
    #: ``sesoi.csv`` (issue 30 §1; :func:`runtime.analysis.sesoi.sesoi_table`), not a section of effects.csv.
    sesoi_table: pd.DataFrame = field(default_factory=pd.DataFrame)
    #: ``power.csv`` (issue 30 §3; :func:`compiler.power.power_table`), not a section of effects.csv.
    power: pd.DataFrame = field(default_factory=pd.DataFrame)
    verdict: str = NOT_ASSESSED
    failed: tuple[str, ...] = ()
    sesoi: float = 0.2
    alpha: float = 0.05

    def long_frame(self) -> pd.DataFrame:
        """All tables stacked with a leading ``section`` column (``effects.csv``)."""
        parts = []
        for name, attr in SECTIONS.items():
            frame = getattr(self, attr)
            if frame is not None and len(frame):
                parts.append(frame.assign(section=name))
        if not parts:
            return pd.DataFrame(columns=["section"])
        out = pd.concat(parts, ignore_index=True, sort=False)
        counts = [c for c in COUNT_COLUMNS if c in out.columns]
        out[counts] = out[counts].astype("Float64").round().astype("Int64")  # counts print as integers
        return out[["section"] + [c for c in out.columns if c != "section"]]


def _typical_d(table: pd.DataFrame) -> float:
    """The SESOI in d of a run whose SESOI is a selection ratio or a score shift: the median
    ``d_equivalent`` of the pooled rows of ``sesoi.csv`` (the report's negligible band, the validity
    protocol's score-step floor); nan when none is defined."""
    from runtime.analysis.sesoi import ALL_JOBS

    if table.empty:
        return math.nan
    d = pd.to_numeric(table.loc[table["job_id"] == ALL_JOBS, "d_equivalent"], errors="coerce").dropna()
    return float(d.median()) if len(d) else math.nan


def analyse_effects(paired: pd.DataFrame, resolved: Mapping[str, Any], *, metrics: pd.DataFrame,
                    analyse_metrics: Callable[[pd.DataFrame], pd.DataFrame],
                    score_range: Mapping[str, tuple[float, float]],
                    score_resolution: Mapping[str, float | None] | None = None,
                    controls: pd.DataFrame | None = None) -> EffectsResult:
    """Run what ``resolved["analysis"]`` declares (``effect_size`` and/or ``validity``).

    Parameters
    ----------
    paired : pandas.DataFrame
        The paired frame of the run.
    resolved : Mapping
        The resolved spec (``compiler.resolve.resolve``).
    metrics : pandas.DataFrame
        The run's seed 000 metrics (observed values of the self-test).
    analyse_metrics : callable
        Recomputes the seed 000 metrics on a planted copy.
    score_range : Mapping
        System id -> its resolved ``score_range`` (the distribution check normalises by it).
    score_resolution : Mapping, optional
        Declared score grid per system (else inferred): paired tests run on it.
    controls : pandas.DataFrame, optional
        The control résumés' scores (``RunContext.controls``): a positive control's rows for the validity
        protocol's sensitivity check (issue 39 §6).
    """
    from runtime.analysis.effect_size import effect_sizes, effect_sizes_by_job
    from runtime.analysis.models import fit_models
    from runtime.analysis.pooling import pool_contrasts
    from runtime.analysis.sensitivity import planted_self_test
    from runtime.analysis.validity import DEFAULT_SESOI, check_validity
    from runtime.seeding import derive_seed

    an = resolved["analysis"]
    alpha, reference = an["alpha"], resolved["variants"]["reference"]
    axes = list(resolved["axes"])
    out = EffectsResult(alpha=alpha)
    es = an.get("effect_size")
    if es:
        from runtime.analysis.sesoi import Sesoi, sesoi_table, shifts_of

        ses = Sesoi.of(es["sesoi"])
        out.sesoi_table = sesoi_table(paired, resolved, score_range=score_range)
        # a d SESOI is read on each contrast's own standardiser (a plain number: seed 003's, unchanged);
        # a selection ratio or a score shift puts every TOST at ±δ* (issue 30 §1)
        bounds = None if ses.form == "d" else shifts_of(out.sesoi_table)
        d_sesoi = ses.value if ses.form == "d" else math.nan
        out.sesoi = ses.value if ses.form == "d" else _typical_d(out.sesoi_table)
        kw = {"bounds": bounds, "standardiser": ses.standardiser}
        out.contrasts = effect_sizes(paired, contrasts=es["contrasts"], axes=axes, sesoi=d_sesoi, alpha=alpha,
                                     score_resolution=score_resolution, **kw)
        out.contrasts_by_job = effect_sizes_by_job(paired, contrasts=es["contrasts"], axes=axes, sesoi=d_sesoi,
                                                   alpha=alpha, pooled=out.contrasts, score_resolution=score_resolution,
                                                   **kw)
        out.models = fit_models(paired, axes={a: v["reference"] for a, v in resolved["axes"].items()},
                                controls=es["controls"], alpha=alpha, wild_bootstrap=es["wild_bootstrap"],
                                seed=derive_seed(resolved["seed"], "wild_bootstrap") % (2**32))
        out.pooling = pool_contrasts(paired, contrasts=es["contrasts"], axes=axes, sesoi=d_sesoi,
                                     pool_over=es["pool_over"], score_resolution=score_resolution, **kw)
        # issue 39 §6: δ* of the pooled rows (one shift per system x condition), one category at a time
        pooled_shifts = {k: v for k, v in shifts_of(out.sesoi_table).items() if len(k) == 2}
        out.self_test = planted_self_test(paired, reference=reference, shifts=pooled_shifts,
                                          alpha=alpha, sesoi=out.sesoi, axes=axes,
                                          observed_metrics=metrics, observed_effects=out.contrasts,
                                          analyse_metrics=analyse_metrics)
        from runtime.analysis.power import power_table

        out.power = power_table(paired, resolved, sesoi=out.sesoi_table)
    if an.get("validity"):
        from runtime.analysis.effect_size import score_grids
        from runtime.analysis.sesoi import rule_of

        shifts = None
        if es and not out.sesoi_table.empty:
            from runtime.analysis.sesoi import Sesoi, shifts_of

            shifts = None if Sesoi.of(es["sesoi"]).form == "d" else shifts_of(out.sesoi_table)
        v = check_validity(paired, config=an["validity"], reference=reference, axes=axes,
                           score_range=score_range, alpha=alpha,
                           score_step=score_grids(paired, score_resolution),
                           sesoi=out.sesoi if es and math.isfinite(out.sesoi) and out.sesoi > 0 else DEFAULT_SESOI,
                           rules={str(s): rule_of(resolved, str(s)) for s in paired["system"].unique()},
                           controls=controls, shifts=shifts)
        out.validity, out.verdict, out.failed = v.checks, v.verdict, v.failed
    return out
