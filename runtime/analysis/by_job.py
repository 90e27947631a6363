"""Per-job values of the metric suite and their heterogeneity across jobs (issue 12).

seed 000 §3.4 pools every metric over the jobs of an audit. A pooled value can hide a job whose own
value crosses a threshold, or whose effect runs the other way. :func:`job_frame` turns the per-job
cells that :func:`runtime.analysis.analyse` computes (each metric on the candidates of one job,
:meth:`runtime.analysis.cell.Pairing.restrict`, with its own 95% interval) into ``metrics_by_job.csv``:

* one row per system x condition x metric x variant x job: the job's value, interval, bootstrap SE,
  status under both tiers from its interval (issue 29 §1), the side it disadvantages when its own
  interval establishes one (``_job_established``), and a ``flag`` when its research-tier status is
  decisive (PASS or FAIL) and differs from the pooled one (``crosses threshold``) or its established side
  is the other one (``opposite sign``);
* one ``job_id = ALL`` row per system x condition x metric x variant: the pooled value and status,
  Cochran's Q across jobs with its degrees of freedom and p-value, and I² = max(0, (Q − df) / Q)
  (``statsmodels.stats.meta_analysis.combine_effects``, inverse-variance weights from each job's
  bootstrap SE; Higgins & Thompson 2002), over the jobs whose value and SE are defined and SE > 0.

Per-job rows carry no p-value: nine metrics times every variant and job would be a multiplicity the
BH family of ``metrics.csv`` does not cover. No I/O.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping

import numpy as np
import pandas as pd

from runtime.analysis.classify import interval_status, tier_bounds
from runtime.analysis.direction import row_leans, side_label

BY_JOB_COLUMNS = ("system", "condition", "metric", "variant", "job_id", "n", "value", "ci_low", "ci_high",
                  "bootstrap_se", "ci_mc_se", "status", "status_operational", "disadvantaged", "pooled_value",
                  "pooled_status", "flag", "q", "q_df", "q_p", "i2", "jobs_in_q", "notes")
#: ``job_id`` of the pooled row of each cell.
ALL_JOBS = "ALL"
FLAG_CROSSES = "crosses threshold: {status} in this job, {pooled} pooled"
FLAG_OPPOSITE = "opposite sign: the {side} loses in this job, the {pooled_side} pooled"
#: Decisive statuses: a job crosses when its interval puts it on the other side of the PASS band than
#: the pooled status (an INCONCLUSIVE job is a lack of evidence, not a crossing).
_DECISIVE = ("PASS", "FAIL")
_STATUSES = ("PASS", "INCONCLUSIVE", "FAIL")

#: z of a 95% interval: the SE of a cell without a bootstrap distribution (a Wilson interval) is its
#: interval's half-width / 1.96.
_Z95 = 1.959963984540054
#: A job SE at or below this is a degenerate bootstrap distribution (every resample gives the same value
#: up to floating-point noise): such a job would weigh 1e17 times the others, so it is left out of Q.
_SE_FLOOR = 1e-9


def job_frame(rows: list[dict[str, object]], leans: np.ndarray, metrics: pd.DataFrame,
              pooled_leans: np.ndarray, *, reference: str,
              thresholds: Mapping[str, Mapping[str, Mapping[str, float]]],
              levels: Mapping[str, Mapping[str, str]] | None = None) -> pd.DataFrame:
    """``metrics_by_job.csv`` from the per-job cells and the pooled metrics frame.

    Parameters
    ----------
    rows : list of dict
        One per job cell, with keys ``system, condition, metric, variant, job_id, n, value, ci_low,
        ci_high, bootstrap_se, notes`` (and ``ci_mc_se``, the Monte Carlo SE of the job interval's ends,
        issue 39 §3; per-job cells are not redrawn: they describe, the pooled rows decide).
    leans : numpy.ndarray
        Each job cell's own signed statistic (``CellResult.diagnostics["lean"]``; nan when none).
    metrics : pandas.DataFrame
        The pooled metrics frame of :func:`runtime.analysis.analyse` (statuses already set).
    pooled_leans : numpy.ndarray
        The pooled rows' leans, aligned with ``metrics``.
    reference : str
    thresholds : Mapping
        As :func:`runtime.analysis.analyse`.
    levels : Mapping, optional
        Variant id -> {axis: level} (names the disadvantaged side).

    Returns
    -------
    pandas.DataFrame
        Columns :data:`BY_JOB_COLUMNS`: the job rows of each cell in job order, then its ``ALL`` row;
        ``q``, ``q_df``, ``q_p``, ``i2`` (in [0, 1]) and ``jobs_in_q`` on ``ALL`` rows only, empty when
        fewer than two jobs have a defined value and a positive SE.
    """
    frame = pd.DataFrame(rows)
    if frame.empty:
        return pd.DataFrame(columns=list(BY_JOB_COLUMNS))
    # a job row decides as its pooled row: on its value, or on the selection ratio at its cutoff (issue 30 §2)
    on = frame["decision_on"].fillna("value") if "decision_on" in frame else pd.Series("value", index=frame.index)
    mine = (on == "value").to_numpy()
    decides = np.where(mine, frame["metric"], on)
    low = np.where(mine, frame["ci_low"].to_numpy(dtype=float),
                   frame.get("decision_low", frame["ci_low"]).to_numpy(dtype=float))
    high = np.where(mine, frame["ci_high"].to_numpy(dtype=float),
                    frame.get("decision_high", frame["ci_high"]).to_numpy(dtype=float))
    for tier, column in (("research", "status"), ("operational", "status_operational")):
        frame[column] = [interval_status(lo, hi, metric_id=m, bounds=tier_bounds(thresholds, tier, m))
                         for lo, hi, m in zip(low, high, decides)]
    frame = frame.drop(columns=[c for c in ("decision_on", "decision_low", "decision_high") if c in frame])
    cell = ("system", "condition", "job_id", "variant")
    job_lean = row_leans(frame, leans, reference=reference, by=cell)
    pooled_lean = row_leans(metrics, pooled_leans, reference=reference)
    pooled = {(r.system, r.condition, r.metric, r.variant): (r.value, r.ci_low, r.ci_high, r.status,
                                                              r.status_operational, lean, r.disadvantaged)
              for r, lean in zip(metrics.itertuples(), pooled_lean)}
    out: list[dict[str, object]] = []
    frame["_lean"] = job_lean
    for (system, condition, metric_id, variant), sub in frame.groupby(
            ["system", "condition", "metric", "variant"], sort=False):
        p_value, p_low, p_high, p_status, p_status_op, p_lean, p_side = pooled[(system, condition, metric_id, variant)]
        is_ref = variant == reference
        for r in sub.to_dict("records"):
            flags = []
            if r["status"] in _DECISIVE and p_status in _STATUSES and r["status"] != p_status:
                flags.append(FLAG_CROSSES.format(status=r["status"], pooled=p_status))
            named = not is_ref and r["_lean"] != 0 and _job_established(r)
            if named and r["_lean"] * p_lean < 0:
                flags.append(FLAG_OPPOSITE.format(side="variant" if r["_lean"] > 0 else "reference",
                                                  pooled_side="variant" if p_lean > 0 else "reference"))
            r.update(pooled_value=p_value, pooled_status=p_status, flag="; ".join(flags),
                     disadvantaged=side_label(r["_lean"], variant, reference, levels) if named else "")
            out.append(r)
        out.append({"system": system, "condition": condition, "metric": metric_id, "variant": variant,
                    "job_id": ALL_JOBS, "n": int(sub["n"].sum()), "value": p_value, "ci_low": p_low,
                    "ci_high": p_high, "status": p_status, "status_operational": p_status_op,
                    "pooled_value": p_value, "pooled_status": p_status,
                    "disadvantaged": p_side,
                    "flag": "", "notes": "", **heterogeneity(sub)})
    result = pd.DataFrame(out).reindex(columns=list(BY_JOB_COLUMNS))
    return result.astype({"n": "Int64", "q_df": "Int64", "jobs_in_q": "Int64"})


def _job_established(r: Mapping[str, object]) -> bool:
    """Whether a job row's own evidence establishes a side (issue 29 §3; per-job rows have no test): its
    interval lies wholly outside the PASS band (research-tier FAIL). An interval merely excluding no
    effect is not enough: a system's per-job rows are many unadjusted intervals (45 score shifts for 9
    categories x 5 jobs), and one in twenty excludes 0 under a null."""
    return r["status"] == "FAIL"


def job_se(ci_low: float, ci_high: float, bootstrap_se: float) -> float:
    """A job cell's standard error: its bootstrap SE, else its 95% interval's half-width / 1.96."""
    if math.isfinite(bootstrap_se):
        return bootstrap_se
    if math.isfinite(ci_low) and math.isfinite(ci_high):
        return (ci_high - ci_low) / (2 * _Z95)
    return math.nan


def heterogeneity(sub: pd.DataFrame) -> dict[str, float]:
    """Cochran's Q (df = jobs − 1), its chi-square p-value and I² across the jobs of one cell.

    Jobs enter with inverse-variance weights ``1 / SE²`` (:func:`job_se`); a job whose value or SE is
    undefined, or whose SE is at most 1e-9 (a value every resample repeats), is left out (``jobs_in_q`` counts
    those kept). Fewer than two: every field empty.
    """
    from scipy import stats as sps
    from statsmodels.stats.meta_analysis import combine_effects

    value = sub["value"].to_numpy(dtype=float)
    se = np.array([job_se(lo, hi, b) for lo, hi, b in
                   zip(sub["ci_low"].astype(float), sub["ci_high"].astype(float), sub["bootstrap_se"].astype(float))])
    keep = np.isfinite(value) & np.isfinite(se) & (se > _SE_FLOOR)
    empty = {"q": math.nan, "q_df": pd.NA, "q_p": math.nan, "i2": math.nan, "jobs_in_q": int(keep.sum())}
    if keep.sum() < 2:
        return empty
    with warnings.catch_warnings():  # its random-effects fields (unused) warn when Q < df
        warnings.simplefilter("ignore", RuntimeWarning)
        res = combine_effects(value[keep], se[keep] ** 2, method_re="dl", use_t=False)
    q, df = float(res.q), int(keep.sum()) - 1
    return {"q": q, "q_df": df, "q_p": float(sps.chi2.sf(q, df)), "i2": max(0.0, (q - df) / q) if q > 0 else 0.0,
            "jobs_in_q": int(keep.sum())}
