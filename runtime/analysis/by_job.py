"""Per-job values of the metric suite, their flags and their pooling across jobs (issues 12, 39 §5).

seed 000 §3.4 pools every metric over the jobs of an audit. A pooled value can hide a job whose own
value crosses a threshold, or whose effect runs the other way. :func:`job_frame` turns the per-job
cells that :func:`runtime.analysis.analyse` computes (each metric on the candidates of one job,
:meth:`runtime.analysis.cell.Pairing.restrict`, with its own 95% interval) into ``metrics_by_job.csv``:

* one row per system x condition x metric x variant x job: the job's value, interval, bootstrap SE,
  its empirical-Bayes value ``value_shrunk`` (:meth:`runtime.analysis.pooling.RandomEffects.shrink`:
  toward the DL random-effects mean of the cell's jobs, by B = τ² / (τ² + SE²)), its test's ``p_value``
  and ``p_adj``, status under both tiers from its interval (issue 29 §1), the side it disadvantages by
  the evidence rule of the pooled rows (issue 29 §3, :func:`runtime.analysis._evidence`: an adjusted test
  rejecting, the selection ratio's McNemar for the selection metrics, a FAIL interval for the gaps),
  and a ``flag`` on evidence, never on a point estimate (issue 39 §5): its 95% interval excludes the
  pooled value (``interval excludes``; not a zero-width interval, a bootstrap distribution that
  repeats one value, e.g. a retention of 1 in a job without flips), its status is FAIL against a pooled PASS or the reverse
  (``crosses threshold``), or its established side is not the pooled row's established side
  (``opposite sign``). Under no heterogeneity a job row is flagged at most about 5% of the time (a
  job's interval misses the common value in 5% of audits; the pooled value shares the job's candidates,
  so less): ``tests/test_by_job.py::test_homogeneous_jobs_are_rarely_flagged``,
  ``bench/by_job_homogeneous.py``;
* one ``job_id = ALL`` row per system x condition x metric x variant: the pooled value and status of
  ``metrics.csv``; the DerSimonian–Laird random-effects mean of the jobs ``pooled_re`` and τ²;
  ``pi_low, pi_high``, the 95% prediction interval of another job's value (t on k − 2, k ≥ 3 jobs:
  the audit's inference is about these jobs and their candidates, the prediction interval about
  other requisitions); Cochran's Q with its degrees of freedom and p-value and
  I² = max(0, (Q − df) / Q) (Higgins & Thompson 2002), except for the absolute-valued metrics
  (:data:`ABSOLUTE_METRICS`: a job's MARC or TPR gap is ≥ 0 and biased upward by its noise, so Q
  does not test whether the effect differs across jobs). Jobs enter with inverse-variance weights
  from their bootstrap SE (:func:`runtime.analysis.pooling.random_effects`), over the jobs whose value
  and SE are defined and SE > 1e-9 (``jobs_in_q``).

Per-job tests are adjusted as the pooled ones (``analysis.multiplicity``), each job a cell of its
system's family: with the hierarchical default, level 1 is the score tests of every category x job. No I/O.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping

import numpy as np
import pandas as pd

from runtime.analysis.classify import interval_status, tier_bounds
from runtime.analysis.direction import NO_DIRECTION, REFERENCE_LOSES, names_a_side, row_leans, side_label

BY_JOB_COLUMNS = ("system", "condition", "metric", "variant", "job_id", "n", "value", "ci_low", "ci_high",
                  "bootstrap_se", "ci_mc_se", "value_shrunk", "p_value", "p_adj", "status", "status_operational",
                  "disadvantaged", "pooled_value", "pooled_status", "flag", "pooled_re", "tau2", "pi_low",
                  "pi_high", "q", "q_df", "q_p", "i2", "jobs_in_q", "notes")
#: ``job_id`` of the pooled row of each cell.
ALL_JOBS = "ALL"
FLAG_EXCLUDES = "interval excludes the pooled value: [{low}, {high}] in this job, {pooled} pooled"
FLAG_CROSSES = "crosses threshold: {status} in this job, {pooled} pooled"
FLAG_OPPOSITE = "opposite sign: the {side} loses in this job, the {pooled_side} pooled"
#: A job crosses when its interval puts it on the other side of the PASS band than the pooled interval:
#: FAIL against PASS or PASS against FAIL (an INCONCLUSIVE side is a lack of evidence, not a crossing).
_CROSSING = frozenset({("FAIL", "PASS"), ("PASS", "FAIL")})
#: Metrics whose value is an absolute value (≥ 0 whatever the direction of the effect): no Q test.
ABSOLUTE_METRICS = frozenset({"marc", "equal_opportunity_gap", "equalized_odds_gap"})
NOTE_NO_Q = "no Q test: an absolute-valued metric is >= 0 and biased up by its noise in every job"

#: z of a 95% interval: the SE of a cell without a bootstrap distribution (a Wilson interval) is its
#: interval's half-width / 1.96.
_Z95 = 1.959963984540054
#: A job SE at or below this is a degenerate bootstrap distribution (every resample gives the same value
#: up to floating-point noise): such a job would weigh 1e17 times the others, so it is left out of Q.
_SE_FLOOR = 1e-9


def job_frame(rows: list[dict[str, object]], leans: np.ndarray, metrics: pd.DataFrame,
              pooled_leans: np.ndarray, *, reference: str,
              thresholds: Mapping[str, Mapping[str, Mapping[str, float]]],
              levels: Mapping[str, Mapping[str, str]] | None = None,
              evidence: Callable[[pd.DataFrame, np.ndarray], tuple[np.ndarray, np.ndarray]] | None = None,
              ) -> pd.DataFrame:
    """``metrics_by_job.csv`` from the per-job cells and the pooled metrics frame.

    Parameters
    ----------
    rows : list of dict
        One per job cell, with keys ``system, condition, metric, variant, job_id, n, value, ci_low,
        ci_high, bootstrap_se, notes`` (and ``ci_mc_se``, the Monte Carlo SE of the job interval's ends,
        issue 39 §3; a job cell near a PASS-band bound is redrawn as a pooled one, since methods 12) and, for ``evidence``, ``p_value, p_adj, direction``.
    leans : numpy.ndarray
        Each job cell's own signed statistic (``CellResult.diagnostics["lean"]``; nan when none).
    metrics : pandas.DataFrame
        The pooled metrics frame of :func:`runtime.analysis.analyse` (statuses already set).
    pooled_leans : numpy.ndarray
        The pooled rows' leans, aligned with ``metrics`` (kept for callers; the pooled side read is the
        ``disadvantaged`` column, established by the pooled evidence rule).
    reference : str
    thresholds : Mapping
        As :func:`runtime.analysis.analyse`.
    levels : Mapping, optional
        Variant id -> {axis: level} (names the disadvantaged side).
    evidence : callable, optional
        ``(frame, leans) -> (established, lean)``, the pooled rows' evidence rule
        (``runtime.analysis._evidence``) applied to the job rows, whose ``condition`` is made
        ``condition\x1fjob_id`` so each job is a cell of its own. None: a job's side is established by a
        research-tier FAIL interval only.

    Returns
    -------
    pandas.DataFrame
        Columns :data:`BY_JOB_COLUMNS`: the job rows of each cell in job order, then its ``ALL`` row.
        ``pooled_re``, ``tau2`` (≥ 0), ``q``, ``q_df``, ``q_p``, ``i2`` (in [0, 1]) and ``jobs_in_q`` on
        ``ALL`` rows only, empty when fewer than two jobs have a defined value and a positive SE (``q``,
        ``q_df``, ``q_p``, ``i2`` also empty for :data:`ABSOLUTE_METRICS`); ``pi_low, pi_high`` on ``ALL``
        rows with at least three such jobs; ``value_shrunk`` on job rows (a job left out of the pooling
        keeps its value when its SE is ~0, else empty).
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
    for c in ("p_value", "p_adj"):
        if c not in frame:
            frame[c] = math.nan
    cell = ("system", "condition", "job_id", "variant")
    job_lean = row_leans(frame, leans, reference=reference, by=cell)
    if evidence is not None:
        keyed = frame.assign(condition=frame["condition"].astype(str) + "\x1f" + frame["job_id"].astype(str))
        established, ev_lean = evidence(keyed, np.asarray(leans, dtype=float))
        job_lean = np.where(established, ev_lean, 0.0)
    else:
        established = (frame["status"] == "FAIL").to_numpy()
    pooled = {(r.system, r.condition, r.metric, r.variant): (r.value, r.ci_low, r.ci_high, r.status,
                                                              r.status_operational, r.disadvantaged)
              for r in metrics.itertuples()}
    out: list[dict[str, object]] = []
    frame["_lean"] = job_lean
    frame["_established"] = established
    for (system, condition, metric_id, variant), sub in frame.groupby(
            ["system", "condition", "metric", "variant"], sort=False):
        p_value, p_low, p_high, p_status, p_status_op, p_side = pooled[(system, condition, metric_id, variant)]
        is_ref = variant == reference
        p_named = names_a_side(p_side)
        pool, shrunk = pool_jobs(sub, absolute=metric_id in ABSOLUTE_METRICS)
        for r, v_shrunk in zip(sub.to_dict("records"), shrunk):
            flags = []
            lo, hi = float(r["ci_low"]), float(r["ci_high"])
            if (math.isfinite(lo) and math.isfinite(hi) and hi - lo > _SE_FLOOR and math.isfinite(p_value)
                    and (p_value < lo or p_value > hi)):
                flags.append(FLAG_EXCLUDES.format(low=f"{lo:.4g}", high=f"{hi:.4g}", pooled=f"{p_value:.4g}"))
            if (r["status"], p_status) in _CROSSING:
                flags.append(FLAG_CROSSES.format(status=r["status"], pooled=p_status))
            named = not is_ref and r["_lean"] != 0 and bool(r["_established"])
            side = side_label(r["_lean"], variant, reference, levels) if named else ""
            if named and p_named and side != p_side:  # both established, one names the reference
                flags.append(FLAG_OPPOSITE.format(side="variant" if r["_lean"] > 0 else "reference",
                                                  pooled_side="reference" if p_side == REFERENCE_LOSES else "variant"))
            if not side and not is_ref and {r["status"], r["status_operational"]} & {"FAIL", "INCONCLUSIVE"}:
                side = NO_DIRECTION
            r.update(pooled_value=p_value, pooled_status=p_status, flag="; ".join(flags), disadvantaged=side,
                     value_shrunk=v_shrunk)
            out.append(r)
        out.append({"system": system, "condition": condition, "metric": metric_id, "variant": variant,
                    "job_id": ALL_JOBS, "n": int(sub["n"].sum()), "value": p_value, "ci_low": p_low,
                    "ci_high": p_high, "status": p_status, "status_operational": p_status_op,
                    "pooled_value": p_value, "pooled_status": p_status,
                    "disadvantaged": p_side, "flag": "", **pool})
    result = pd.DataFrame(out).reindex(columns=list(BY_JOB_COLUMNS))
    return result.astype({"n": "Int64", "q_df": "Int64", "jobs_in_q": "Int64"})


def job_se(ci_low: float, ci_high: float, bootstrap_se: float) -> float:
    """A job cell's standard error: its bootstrap SE, else its 95% interval's half-width / 1.96."""
    if math.isfinite(bootstrap_se):
        return bootstrap_se
    if math.isfinite(ci_low) and math.isfinite(ci_high):
        return (ci_high - ci_low) / (2 * _Z95)
    return math.nan


def _job_se(sub: pd.DataFrame) -> np.ndarray:
    return np.array([job_se(lo, hi, b) for lo, hi, b in
                     zip(sub["ci_low"].astype(float), sub["ci_high"].astype(float), sub["bootstrap_se"].astype(float))])


def pool_jobs(sub: pd.DataFrame, *, absolute: bool = False) -> tuple[dict[str, object], np.ndarray]:
    """The ``ALL`` row's pooling fields of one cell, and each job's empirical-Bayes value.

    Jobs enter with inverse-variance weights ``1 / SE²`` (:func:`job_se`); a job whose value or SE is
    undefined, or whose SE is at most 1e-9 (a value every resample repeats), is left out (``jobs_in_q``
    counts those kept). Two or more: :func:`runtime.analysis.pooling.random_effects` (DerSimonian–Laird
    τ², HKSJ SE, prediction interval on k − 2 df from three jobs). ``absolute``: Q, its df, p and I² are
    left empty (:data:`ABSOLUTE_METRICS`), with a note.

    Returns
    -------
    (dict, numpy.ndarray)
        Keys ``pooled_re, tau2, pi_low, pi_high, q, q_df, q_p, i2, jobs_in_q, notes``; and ``value_shrunk``
        per row of ``sub`` (a left-out job keeps its value when its SE is ≤ 1e-9 and is nan otherwise;
        every value is its own when fewer than two jobs are kept).
    """
    from runtime.analysis.pooling import random_effects

    value = sub["value"].to_numpy(dtype=float)
    se = _job_se(sub)
    keep = np.isfinite(value) & np.isfinite(se) & (se > _SE_FLOOR)
    fields: dict[str, object] = {"pooled_re": math.nan, "tau2": math.nan, "pi_low": math.nan, "pi_high": math.nan,
                                 "q": math.nan, "q_df": pd.NA, "q_p": math.nan, "i2": math.nan,
                                 "jobs_in_q": int(keep.sum()), "notes": NOTE_NO_Q if absolute else ""}
    degenerate = np.isfinite(value) & np.isfinite(se) & (se <= _SE_FLOOR)
    if keep.sum() < 2:
        return fields, np.where(np.isfinite(value), value, np.nan)
    re = random_effects(value[keep], se[keep] ** 2)
    fields.update(pooled_re=re.mean, tau2=re.tau2, pi_low=re.pi_low, pi_high=re.pi_high)
    if not absolute:
        fields.update(q=re.q, q_df=re.q_df, q_p=re.q_p, i2=re.i2)
    shrunk = np.full(len(value), np.nan)
    shrunk[keep] = re.shrink(value[keep], se[keep] ** 2)
    shrunk[degenerate] = value[degenerate]
    return fields, shrunk


def heterogeneity(sub: pd.DataFrame) -> dict[str, float]:
    """Cochran's Q (df = jobs − 1), its chi-square p-value and I² across the jobs of one cell
    (the Q fields of :func:`pool_jobs`)."""
    fields, _ = pool_jobs(sub)
    return {k: fields[k] for k in ("q", "q_df", "q_p", "i2", "jobs_in_q")}
