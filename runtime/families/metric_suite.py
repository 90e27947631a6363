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

from runtime.families import TOOL_TEXT, AuditFamily, FamilyResult, family, status_frame
from runtime.families.base import suite


def metric_status(metrics: pd.DataFrame, family_id: str = "metric_suite") -> pd.DataFrame:
    """Status rows of a metrics frame (item = ``<metric> <variant>``)."""
    rows = metrics[metrics["status"].notna() & (metrics["status"].astype(str) != "")]
    return status_frame([{"family": family_id, "system": m.system, "condition": m.condition,
                          "item": f"{m.metric} {m.variant}", "status": m.status,
                          "status_operational": m.status_operational} for m in rows.itertuples()])


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
                           f"(threshold crossed or opposite sign), {int((q_p < 0.05).sum())} of "
                           f"{int(q_p.notna().sum())} cells heterogeneous across jobs (metrics_by_job.csv)")
        tables = {"metrics": result.metrics, "metrics_by_job": result.by_job, "headline": result.headline,
                  "risk": result.risk, "drift": result.drift}
        if TOOL_TEXT not in ctx.provides:
            # the tool wrote no text (a score file): the score change between a variant and its reference
            # is the effect itself, not a confound of it (issue 15); the report says so instead
            del tables["drift"]
            result = dataclasses.replace(result, drift=result.drift.iloc[0:0])
        return FamilyResult(tables=tables,
                            status=metric_status(result.metrics), summary=summary,
                            data={"result": result})

    def sections(self, ctx, result: FamilyResult, meta) -> list:
        from runtime.report import metric_suite_sections

        suite = result.data["result"]
        return metric_suite_sections(metrics=suite.metrics, risk=suite.risk, drift=suite.drift, meta=meta,
                                     by_job=suite.by_job, headline=suite.headline, detectable=_detectable(ctx))


def _detectable(ctx) -> pd.DataFrame | None:
    """Page 1's smallest detectable selection ratio per category (issue 30 §3), from the effect-size family's
    ``power.csv`` when the run has one (its result is read, the family is not imported)."""
    from runtime.analysis.power import smallest_detectable_ratio

    effects = getattr(ctx, "results", {}).get("effects")
    tables = getattr(effects, "tables", None) or {}
    power = tables.get("power")
    return None if power is None or len(power) == 0 else smallest_detectable_ratio(power)
