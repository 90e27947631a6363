"""The metric suite of seed 000: nine counterfactual, group and merit-aware metrics (§3.4-3.6).

Tables: ``metrics`` (one row per system x condition x metric x variant, the reference included),
``metrics_by_job`` (the same per job, with Cochran's Q and I² across jobs; :mod:`runtime.analysis.by_job`),
``headline`` (one status per system x protected category, the system's verdict; issue 29 §5),
``risk`` (seed 000 Eq. 6 on point estimates per system x condition x tier and run-wide) and ``drift`` (qualification
drift, §3.1.2). Status rows: every metric row under both threshold tiers (Table 3, §3.7).
"""

from __future__ import annotations

import dataclasses

import pandas as pd

import math
from collections.abc import Mapping
from typing import Any

from runtime.families import TOOL_TEXT, AuditFamily, FamilyResult, family, status_frame
from runtime.families.base import FINDING_STATUSES, Finding, suite

#: Metrics whose loss is a loss of selection (issue 31 §6: page 1 says it in selection terms).
SELECTION_METRICS = ("flip_rate", "retention_rate", "impact_ratio", "selection_ratio")


def metric_status(metrics: pd.DataFrame, family_id: str = "metric_suite") -> pd.DataFrame:
    """Status rows of a metrics frame (item = ``<metric> <variant>``)."""
    rows = metrics[metrics["status"].notna() & (metrics["status"].astype(str) != "")]
    return status_frame([{"family": family_id, "system": m.system, "condition": m.condition,
                          "item": f"{m.metric} {m.variant}", "status": m.status,
                          "status_operational": m.status_operational} for m in rows.itertuples()])


def _num(x: Any) -> float | None:
    try:
        v = float(x)
    except (TypeError, ValueError):
        return None
    return v if math.isfinite(v) else None


def _nan(x: Any) -> float:
    """``x`` as a float, NaN when it is missing or not finite."""
    v = _num(x)
    return math.nan if v is None else v


def _count(x: float) -> str:
    """A count as printed: an integer when it is one, else 3 significant digits (ties at a cutoff give
    expected counts)."""
    return f"{x:.0f}" if abs(x - round(x)) < 1e-9 else f"{x:.3g}"


def selection_text(row: Mapping[str, Any], selection_row: Mapping[str, Any] | None, *, threshold: bool) -> str:
    """A selection metric's loss in selection terms (issue 31 §6), from the diagnostics of ``metrics.csv``.

    Parameters
    ----------
    row : mapping
        The flagged row (``retention_rate``, ``impact_ratio``, ``flip_rate`` or ``selection_ratio``):
        ``retained``/``slots`` (pooled top-K places of the reference kept by the variant), ``k``,
        ``jobs_used``, ``n_in_out``/``n_out_in``.
    selection_row : mapping or None
        The variant's ``selection_ratio`` row: ``slots`` (reference resumes selected), ``n_in_out``
        (selected as the reference, not as the variant), ``n_out_in`` and ``n`` (paired candidates).
    threshold : bool
        The run selects by a decision threshold (then both selection rates are given).

    Returns
    -------
    str
        "7 of the reference's top-10 stay" (one job; pooled over jobs: "14 of the reference's 20
        top-10 places stay (2 jobs)"); the flip rate: "3 leave the reference's top-5 and 0 enter" (one job;
        several, from the selection row's ``slots``: "8 leave the reference's 50 top-10 places (pooled over
        jobs) and 16 enter"); under a threshold "selected: reference 12 of 40 (30%),
        variant 8 of 40 (20%)"; "" when the row is no selection metric or lacks the counts.
    """
    if row.get("metric") not in SELECTION_METRICS:
        return ""
    sel = selection_row or {}
    slots, lost, gained, n = (_num(sel.get(c)) for c in ("slots", "n_in_out", "n_out_in", "n"))
    if threshold:
        if None in (slots, lost, gained, n) or not n:
            return ""
        var = slots - lost + gained
        return (f"selected: reference {_count(slots)} of {_count(n)} ({slots / n:.0%}), "
                f"variant {_count(var)} of {_count(n)} ({var / n:.0%})")
    k = _num(row.get("k"))
    retained, places = _num(row.get("retained")), _num(row.get("slots"))
    if retained is not None and places and k:
        jobs = _num(row.get("jobs_used")) or 1
        if jobs <= 1:
            return f"{_count(retained)} of the reference's top-{k:.0f} stay"
        return f"{_count(retained)} of the reference's {_count(places)} top-{k:.0f} places stay ({jobs:.0f} jobs)"
    lost, gained = _num(row.get("n_in_out")), _num(row.get("n_out_in"))
    if lost is not None and gained is not None and k:
        if slots is not None and slots > k + 1e-9:  # several jobs' top-K lists: say how many places
            return (f"{_count(lost)} leave the reference's {_count(slots)} top-{k:.0f} places (pooled over jobs) "
                    f"and {_count(gained)} enter")
        return f"{_count(lost)} leave the reference's top-{k:.0f} and {_count(gained)} enter"
    return ""


def metric_findings(metrics: pd.DataFrame, *, reference: str, variant_levels: Mapping[str, Mapping[str, str]],
                    score_ranges: Mapping[str, Any], threshold: bool = False) -> list[Finding]:
    """Page 1's findings of the metric suite (issue 31 §6): one per non-reference row of ``metrics.csv``
    whose research status is FAIL or INCONCLUSIVE, in table order.

    Parameters
    ----------
    metrics : pandas.DataFrame
        ``metrics.csv`` (``status`` under the research tier, ``disadvantaged``, the selection diagnostics).
    reference : str
        The reference variant (its rows are never findings).
    variant_levels : mapping
        Variant id -> {axis: level} (the resolved ``variants.table``).
    score_ranges : mapping
        System id -> its ``score_range``.
    threshold : bool
        The run selects by a decision threshold.

    Returns
    -------
    list of Finding
        Each with the variant's score delta (``score_loss``, normalised) and, for a selection metric,
        its selection terms (:func:`selection_text`).
    """
    if metrics is None or len(metrics) == 0:
        return []
    rows = metrics.to_dict("records")
    key = lambda r: (str(r["system"]), str(r["condition"]), str(r["variant"]))  # noqa: E731
    delta = {key(r): _num(r["value"]) for r in rows if r["metric"] == "score_delta"}
    sel = {key(r): r for r in rows if r["metric"] == "selection_ratio"}
    ref_levels = dict(variant_levels.get(reference) or {})
    out = []
    for r in rows:
        status = str(r.get("status") or "")
        if status not in FINDING_STATUSES or str(r["variant"]) == reference:
            continue
        system, condition, variant = key(r)
        levels = tuple(f"{a}={lv}" for a, lv in (variant_levels.get(variant) or {}).items() if ref_levels.get(a) != lv)
        dis = r.get("disadvantaged")
        rng = score_ranges.get(system)
        out.append(Finding(
            system=system, condition=condition, variant=variant, levels=levels, metric=str(r["metric"]),
            value=_nan(r["value"]), ci_low=_nan(r["ci_low"]), ci_high=_nan(r["ci_high"]),
            status=status, disadvantaged="" if dis is None or (isinstance(dis, float) and math.isnan(dis)) else str(dis),
            anchor=slug_anchor("m", system, condition, r["metric"]), score_loss=delta.get((system, condition, variant)),
            score_range=tuple(float(x) for x in rng) if rng is not None else None,
            selection=selection_text(r, sel.get((system, condition, variant)), threshold=threshold),
            family="metric_suite"))
    return out


def slug_anchor(*parts: Any) -> str:
    """The report anchor of ``parts`` (as :func:`runtime.report.sections.metric_suite.common.slug`)."""
    from runtime.report.sections.metric_suite.common import slug

    return slug(*parts)


#: Page 1's statement of what the audit's inference is about (issue 39 §5).
INFERENCE_SCOPE = ("Inference scope: these {n} jobs and their candidates; other requisitions: see the prediction "
                   "intervals (metrics_by_job.csv, rows ALL, pi_low and pi_high).")
#: ... when there are too few jobs for a prediction interval (t on k − 2).
INFERENCE_SCOPE_FEW = ("Inference scope: {these} and {their} candidates; other requisitions: not covered (a prediction "
                       "interval needs at least 3 jobs).")


def inference_scope(paired: pd.DataFrame) -> str:
    """Page 1's inference-scope sentence (issue 39 §5): every interval of the audit resamples the
    candidates of the jobs it ran (the jobs are fixed), so its statuses speak for these jobs; another
    requisition's value is what the prediction intervals of the ``ALL`` rows of ``metrics_by_job.csv``
    (τ² between jobs, t on k − 2) are about."""
    n = int(paired["job_id"].nunique()) if paired is not None and "job_id" in paired else 0
    if n >= 3:
        return INFERENCE_SCOPE.format(n=n)
    return INFERENCE_SCOPE_FEW.format(these="this job" if n == 1 else f"these {n} jobs", their="its" if n == 1 else "their")


def composite_note(risk: pd.DataFrame) -> list[str]:
    """The composite risk score as a number with what it averages over (issue 31 §6); its band word stays
    in the risk section (page 1 never reads "low risk" beside a FAIL)."""
    if risk is None or len(risk) == 0:
        return []
    sel = risk[(risk["system"] == "ALL") & (risk["tier"] == "research")]
    if len(sel) == 0:
        return []
    r = sel.iloc[0]
    n_inv = int(r["n_investigate"])
    return [f"Seed 000's composite risk score (Eq. 6, on point estimates, research tier): {float(r['risk_score']):.3f}, "
            f"from {int(r['n_fail'])} FAIL and {n_inv} INVESTIGATE among {int(r['n_total'])} metric × variant "
            f"statuses (seed 000's nine metrics for every variant, the reference's own rows included, as in its "
            f"§4.2; the selection ratio is not one of them); each FAIL weighs as three INVESTIGATE, and a PASS on a "
            f"point estimate can hide an interval that straddles its bound."]


@family("metric_suite")
class MetricSuite(AuditFamily):
    """Seed 000's nine metrics on the paired frame, BH over the run, risk score and drift."""

    title = "metrics (seed 000)"

    def analyse(self, ctx) -> FamilyResult:
        from runtime.analysis import n_bootstrap_cells

        advance = ctx.progress.task("bootstrap", n_bootstrap_cells(ctx.paired, ctx.resolved["variants"]["reference"],
                                                                   per_job=True))
        result = suite(ctx, ctx.paired, per_job=True, progress=advance)
        summary = []
        head = result.headline if result.headline is not None else pd.DataFrame(columns=["category"])
        for h in head[head["category"] == "ALL"].itertuples():
            cats = head[(head["system"] == h.system) & ~head["category"].isin(["ALL", "ranking quality"])]
            counts = cats["status"].value_counts()
            at = cats.loc[cats["status"] == h.status, "variants"] if h.deciding_metrics else []
            line = (f"{h.system:<12} {h.status} by protected category (headline.csv): " + ", ".join(
                f"{int(counts.get(s, 0))} {s}" for s in ("FAIL", "INCONCLUSIVE", "PASS") if counts.get(s, 0))
                + (f"; {h.status}: {', '.join(at)}" if len(at) else "")
                + (f"; who loses: {h.disadvantaged}" if h.disadvantaged else ""))
            summary.append(line)
        risk = result.risk[result.risk["system"] == "ALL"].set_index("tier")
        for t in ("research", "operational"):
            if t in risk.index:
                row = risk.loc[t]
                st = result.metrics["status" if t == "research" else "status_operational"].value_counts()
                summary.append(f"{t:<12} {int(st.get('FAIL', 0))} FAIL, {int(st.get('INCONCLUSIVE', 0))} INCONCLUSIVE, "
                               f"{int(st.get('PASS', 0))} PASS on 95% intervals; seed 000 Eq. 6 on point estimates "
                               f"{row['risk_score']:.3f} ({row['band']})")
        by_job = result.by_job
        if by_job is not None and len(by_job):
            ref = ctx.resolved["variants"]["reference"]
            jobs = by_job[(by_job["job_id"] != "ALL") & (by_job["variant"] != ref)]
            pooled = by_job[(by_job["job_id"] == "ALL") & (by_job["variant"] != ref)]
            q_p = pd.to_numeric(pooled["q_p"], errors="coerce")
            summary.append(f"per job       {int((jobs['flag'].fillna('') != '').sum())} job values flagged "
                           f"(interval excludes the pooled value, threshold crossed or opposite sign), "
                           f"{int((q_p < 0.05).sum())} of "
                           f"{int(q_p.notna().sum())} cells heterogeneous across jobs (metrics_by_job.csv)")
        tables = {"metrics": result.metrics, "metrics_by_job": result.by_job, "headline": result.headline,
                  "risk": result.risk, "drift": result.drift}
        if TOOL_TEXT not in ctx.provides:
            # the tool wrote no text (a score file): the score change between a variant and its reference
            # is the effect itself, not a confound of it (issue 15); the report says so instead
            del tables["drift"]
            result = dataclasses.replace(result, drift=result.drift.iloc[0:0])
        st = ctx.settings
        findings = metric_findings(result.metrics, reference=st.reference,
                                   variant_levels=ctx.resolved["variants"]["table"], score_ranges=ctx.score_range(),
                                   threshold=st.threshold is not None)
        return FamilyResult(tables=tables,
                            status=metric_status(result.metrics), summary=summary,
                            data={"result": result}, findings=findings,
                            findings_notes=[*composite_note(result.risk), inference_scope(ctx.paired)])

    def sections(self, ctx, result: FamilyResult, meta) -> list:
        from runtime.report import metric_suite_sections

        from runtime.report.sections.systems_compared import systems_compared_section

        suite = result.data["result"]
        out = metric_suite_sections(metrics=suite.metrics, risk=suite.risk, drift=suite.drift, meta=meta,
                                    by_job=suite.by_job, headline=suite.headline, detectable=_detectable(ctx))
        compared = systems_compared_section(suite.metrics, reference=ctx.resolved["variants"]["reference"])
        return out if compared is None else [*out, compared]  # issue 36 §5: two or more systems


def _detectable(ctx) -> pd.DataFrame | None:
    """Page 1's smallest detectable selection ratio per category (issue 30 §3), from the effect-size family's
    ``power.csv`` when the run has one (its result is read, the family is not imported)."""
    from runtime.analysis.power import smallest_detectable_ratio

    effects = getattr(ctx, "results", {}).get("effects")
    tables = getattr(effects, "tables", None) or {}
    power = tables.get("power")
    return None if power is None or len(power) == 0 else smallest_detectable_ratio(power)
