"""The per-job section of a metric-suite run: jobs whose own result reads differently from the pooled
one, and the cells that are heterogeneous across jobs (:mod:`runtime.analysis.by_job`)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import pandas as pd

from compiler.catalog import CLASSIFY_SIGNIFICANT_DIGITS, METRICS
from runtime.analysis.direction import NO_DIRECTION
from runtime.report.formatting import (fmt_ci, fmt_int, fmt_num, fmt_p, fmt_sig, fmt_text, to_float, with_points,
                                       with_points_ci)
from runtime.report.sections.metric_suite.common import records, status

#: Rows shown in each per-job table of the report (the rest are in ``metrics_by_job.csv``).
JOB_ROWS_SHOWN = 40
_SEVERITY = {"FAIL": 0, "INCONCLUSIVE": 1, "INVESTIGATE": 1, "PASS": 2}


def by_job_context(by_job: pd.DataFrame | None, reference: str, variant_order: list[str], *,
                   score_ranges: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Context of the per-job section: flagged jobs (worst first) and heterogeneous cells (Cochran's Q p < 0.05).

    A flagged job is sorted by how much it changes the reading: a job whose status is worse than the
    pooled one first, then by the job's status (FAIL first), then catalogue, variant and job order.
    """
    if by_job is None or len(by_job) == 0:
        return {"present": False}
    rows = [r for r in records(by_job) if str(r.get("variant")) != reference]
    metric_order = {m: i for i, m in enumerate(METRICS)}
    variant_rank = {v: i for i, v in enumerate(variant_order)}
    pooled = [r for r in rows if str(r.get("job_id")) == "ALL"]
    het = [r for r in pooled if math.isfinite(to_float(r.get("q_p"))) and to_float(r.get("q_p")) < 0.05]
    het.sort(key=lambda r: (-to_float(r.get("i2")), metric_order.get(r["metric"], 99), variant_rank.get(r["variant"], 99)))
    flagged = [r for r in rows if str(r.get("job_id")) != "ALL" and isinstance(r.get("flag"), str) and r["flag"]]

    def worse(r: Mapping[str, Any]) -> bool:
        return _SEVERITY.get(str(r.get("status")), 3) < _SEVERITY.get(str(r.get("pooled_status")), 3)

    flagged.sort(key=lambda r: (not worse(r), _SEVERITY.get(str(r.get("status")), 3), metric_order.get(r["metric"], 99),
                                variant_rank.get(r["variant"], 99), str(r.get("job_id"))))
    units = {(r["system"], r["condition"]) for r in rows}

    def label(metric: str) -> str:  # "Flip rate", not "Flip rate (top-K boundary crossings)"
        return METRICS[metric].label.split(" (")[0] if metric in METRICS else metric

    def why(r: Mapping[str, Any]) -> str:
        parts = []
        if "interval excludes" in r["flag"]:
            parts.append("interval")
        if "crosses threshold" in r["flag"]:
            parts.append("threshold")
        if "opposite sign" in r["flag"]:
            parts.append("opposite sign")
        return ", ".join(parts)

    def loses(r: Mapping[str, Any]) -> str:
        d = fmt_text(r.get("disadvantaged"), "")
        if d == NO_DIRECTION:
            return "not established"
        return "" if not d else "reference" if d == "reference" else str(r["variant"])

    signed = lambda r: r["metric"] == "score_delta"  # noqa: E731

    def points(r: Mapping[str, Any], text: str) -> str:  # a score delta on the system's scale too (issue 31 §3)
        return with_points(text, r.get("value"), (score_ranges or {}).get(str(r["system"]))) if signed(r) else text

    def points_ci(r: Mapping[str, Any], text: str) -> str:
        return (with_points_ci(text, r.get("ci_low"), r.get("ci_high"), (score_ranges or {}).get(str(r["system"])))
                if signed(r) else text)
    # every job whose status is worse than pooled is shown (they come first), at least JOB_ROWS_SHOWN rows
    shown = max(JOB_ROWS_SHOWN, sum(1 for r in flagged if worse(r)))
    return {
        "present": True,
        "multi_unit": len(units) > 1,
        "n_cells": len(pooled),
        "n_tested": sum(1 for r in pooled if math.isfinite(to_float(r.get("q")))),
        "n_heterogeneous": len(het),
        "heterogeneous": [{"system": r["system"], "condition": r["condition"], "metric": label(r["metric"]),
                           "variant": r["variant"], "pooled": fmt_sig(r.get("value"), CLASSIFY_SIGNIFICANT_DIGITS, signed=signed(r)),
                           "status": status(r.get("status")), "q": fmt_num(r.get("q"), 2), "df": fmt_int(r.get("q_df")),
                           "p": fmt_p(r.get("q_p")), "i2": f"{100 * to_float(r.get('i2')):.0f}%",
                           "pi": ("" if not math.isfinite(to_float(r.get("pi_low")))
                                  else fmt_ci(r.get("pi_low"), r.get("pi_high"), signed=signed(r)))}
                          for r in het[:JOB_ROWS_SHOWN]],
        "n_flagged": len(flagged),
        "n_worse": sum(1 for r in flagged if worse(r)),
        "flagged": [{"system": r["system"], "condition": r["condition"], "metric": label(r["metric"]),
                     "variant": r["variant"], "job": r["job_id"],
                     "value": points(r, fmt_sig(r.get("value"), CLASSIFY_SIGNIFICANT_DIGITS, signed=signed(r))),
                     "ci": points_ci(r, fmt_ci(r.get("ci_low"), r.get("ci_high"), signed=signed(r))),
                     "status": status(r.get("status")),
                     "pooled": fmt_sig(r.get("pooled_value"), CLASSIFY_SIGNIFICANT_DIGITS, signed=signed(r)),
                     "pooled_status": status(r.get("pooled_status")),
                     "loses": loses(r), "why": why(r)}
                    for r in flagged[:shown]],
        "shown": shown,
        "shown_het": JOB_ROWS_SHOWN,
    }
