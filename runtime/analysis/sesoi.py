"""The smallest effect of interest at the decision rule (issue 30 §1).

An auditor states what matters on the scale a hiring decision is taken on: "a selection ratio below
0.8". This module turns that margin into the score shift it implies for the system under audit,
exactly, from the order statistics of its reference scores:

- ``ratio(δ)``: the selection ratio of the reference scores lowered by δ ≥ 0, each lowered resume
  swapped into its job's reference pool (the other candidates keep their reference scores), at the
  decision rule in force: top-K per job (ties at the cutoff tie-averaged, as every top-K metric), or
  score ≥ t. Numerator: expected selected lowered resumes; denominator: expected selected reference
  resumes (``min(K, n_j)`` per job under top-K).
- the implied shift ``δ* = inf{δ ≥ 0 : ratio(δ) ≤ m}``.

Both are exact, without a grid. A lowered resume i leaves the selection once δ exceeds its
**breakpoint** ``b_i``: under top-K, its score minus the K-th highest score of the other candidates of
its job (the job's (K+1)-th when i is in the reference top-K; 0 for a resume that is in only through
a tie at the cutoff: any demotion drops it below its tie mates); under a threshold, ``s_i − t``. A
resume that is never selected has no breakpoint, and one in a job of at most K candidates none either
(it stays selected whatever δ). Between breakpoints the ratio is ``#{i : b_i > δ} / S`` (S the
selected reference resumes), so with ``c = ⌊m·S⌋`` the infimum is the (c + 1)-th largest breakpoint;
when fewer than c + 1 resumes can leave, no shift reaches the margin (``inf``).

Pooled, the same δ lowers every job (breakpoints and S summed over jobs); per job, each job on its own.
No I/O; arrays in, numbers out. :func:`sesoi_table` gives ``sesoi.csv``: the SESOI of every system x
condition (pooled and per job) in three units: the selection ratio, the score shift and d.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from runtime.analysis.classify import meets_threshold

#: Relative tolerance of ``m · S`` before the floor (``0.8 * 10`` must count as 8).
_FLOOR_TOL = 1e-9


def breakpoints(scores: np.ndarray, job: np.ndarray, *, k: int | None = None,
                threshold: float | None = None) -> tuple[np.ndarray, float]:
    """Each reference resume's breakpoint and the expected number of selected reference resumes.

    Parameters
    ----------
    scores : numpy.ndarray of float, shape (n,)
        Reference scores, any scale (higher = better).
    job : numpy.ndarray, shape (n,)
        Job of each resume (any hashable codes).
    k : int, optional
        Top-K rule: the shortlist size per job (≥ 1).
    threshold : float, optional
        Threshold rule: selected when ``score >= threshold``. Exactly one of ``k`` and ``threshold``.

    Returns
    -------
    breakpoints : numpy.ndarray of float, shape (n,)
        ``b_i ≥ 0`` (score units): the lowered resume i is selected for ``δ < b_i`` and not for
        ``δ > b_i``; ``nan`` for a resume never selected; ``inf`` for one that stays selected at any
        shift (a job of at most K candidates).
    selected : float
        S: selected reference resumes (top-K: Σ_j min(K, n_j); threshold: #{score ≥ t}).

    Raises
    ------
    ValueError
        Neither or both of ``k`` and ``threshold``; ``k < 1``; arrays of different lengths.
    """
    s = np.asarray(scores, dtype=float)
    j = np.asarray(job)
    if (k is None) == (threshold is None):
        raise ValueError("give exactly one decision rule: k (top-K) or threshold")
    if s.shape != j.shape:
        raise ValueError(f"scores and job differ in length: {s.shape} and {j.shape}")
    out = np.full(s.shape, np.nan)
    if threshold is not None:
        sel = meets_threshold(s, threshold)
        out[sel] = s[sel] - threshold
        return out, float(sel.sum())
    if int(k) < 1:
        raise ValueError(f"k must be at least 1, got {k}")
    k = int(k)
    selected = 0.0
    for code in np.unique(j):
        idx = np.flatnonzero(j == code)
        selected += min(k, idx.size)
        if idx.size <= k:
            out[idx] = math.inf
            continue
        desc = np.sort(s[idx])[::-1]
        cut = desc[k - 1]                    # the job's K-th highest score
        for i in idx:
            if s[i] < cut:
                continue                     # outside the reference top-K
            # the K-th highest of the others is the job's (K+1)-th: i is at or above the cut
            out[i] = max(0.0, s[i] - desc[k])
    return out, selected


def ratio_at_shift(scores: np.ndarray, job: np.ndarray, shift: float, *, k: int | None = None,
                   threshold: float | None = None) -> float:
    """The selection ratio of the reference scores lowered by ``shift``, each swapped into its job's
    reference pool, at the rule (top-K, ties at the cutoff tie-averaged; or score ≥ t).

    Parameters
    ----------
    scores, job, k, threshold
        As :func:`breakpoints`.
    shift : float
        δ ≥ 0, score units.

    Returns
    -------
    float
        In [0, 1]; 1 at δ = 0; non-increasing in δ; nan when the rule selects no reference resume.

    Raises
    ------
    ValueError
        As :func:`breakpoints`; ``shift < 0``.
    """
    if not shift >= 0:
        raise ValueError(f"shift must be >= 0, got {shift}")
    s = np.asarray(scores, dtype=float)
    j = np.asarray(job)
    b, selected = breakpoints(s, j, k=k, threshold=threshold)
    if selected == 0:
        return math.nan
    if threshold is not None:
        return float(np.sum(meets_threshold(s - shift, threshold))) / selected
    kept = 0.0
    for code in np.unique(j):
        idx = np.flatnonzero(j == code)
        if idx.size <= k:
            kept += idx.size
            continue
        for i in idx:
            if np.isnan(b[i]):
                continue
            others = s[idx[idx != i]]
            x = s[i] - shift
            above = int(np.sum(others > x))
            tied = int(np.sum(others == x))
            # tie-averaged membership of x among the others (seed 000 §3.4; cell.top_share)
            kept += float(np.clip((k - above) / (tied + 1), 0.0, 1.0))
    return kept / selected


def implied_shift(scores: np.ndarray, job: np.ndarray, margin: float, *, k: int | None = None,
                  threshold: float | None = None) -> float:
    """δ* = inf{δ ≥ 0 : ratio(δ) ≤ margin}, the score shift the SESOI ``{selection_ratio: margin}``
    implies (issue 30 §1), exact from the breakpoints.

    Parameters
    ----------
    scores, job, k, threshold
        As :func:`breakpoints` (pass one job's arrays for a per-job shift).
    margin : float
        m, 0 < m < 1.

    Returns
    -------
    float
        δ* ≥ 0 in score units; ``inf`` when no shift brings the ratio to m (too few resumes can leave
        the selection); nan when the rule selects no reference resume.

    Raises
    ------
    ValueError
        As :func:`breakpoints`; margin outside (0, 1).
    """
    if not 0 < margin < 1:
        raise ValueError(f"margin must lie in (0, 1), got {margin}")
    b, selected = breakpoints(scores, job, k=k, threshold=threshold)
    if selected == 0:
        return math.nan
    allowed = math.floor(margin * selected * (1 + _FLOOR_TOL))   # c: resumes that may stay selected
    finite = np.sort(b[~np.isnan(b)])[::-1]                     # inf first: never leave
    if allowed + 1 > finite.size or not math.isfinite(finite[allowed]):
        return math.inf
    return float(finite[allowed])


# ----------------------------------------------------------------------------- the SESOI of a run
#: Columns of ``sesoi.csv`` (issue 30 §1), in order.
SESOI_COLUMNS = ("system", "condition", "job_id", "rule", "form", "margin", "shift", "shift_normalised",
                 "standardiser_kind", "standardiser", "d_equivalent", "reason")
#: ``job_id`` of the pooled row: the same shift lowers every job.
ALL_JOBS = "ALL"
REASON_NONE_SELECTED = "the rule selects no reference résumé in this job"
REASON_NONE_SELECTED_ALL = "the rule selects no reference résumé"
REASON_UNREACHABLE = ("no shift brings the selection ratio to {m:g} (δ* = inf): too few selected résumés can "
                      "leave the selection")
REASON_NO_SD = "the reference scores have no spread: the standardiser is 0"


@dataclass(frozen=True)
class Sesoi:
    """The SESOI of ``analysis.effect_size.sesoi`` (issue 30 §1), one form.

    Attributes
    ----------
    form : {"d", "selection_ratio", "score"}
        A plain number is ``d`` with the pooled standardiser (seed 003 §3.7).
    value : float
        |d|, m (0 < m < 1) or the shift x > 0 in score units.
    standardiser : {"pooled", "within_job", "within_job_match"}
        The SD a d is read against; ``pooled`` for the other forms (their d stays seed 003's).
    plain : bool
        Whether the spec wrote a plain number (then every number of the effect-size family is as in
        methods version 7).
    """

    form: str
    value: float
    standardiser: str = "pooled"
    plain: bool = False

    @classmethod
    def of(cls, value: Any) -> "Sesoi":
        """From the resolved ``sesoi``: a number or a one-key mapping (``compiler.spec.EffectSize``).

        Raises
        ------
        ValueError
            Any other value.
        """
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return cls("d", float(value), "pooled", plain=True)
        if isinstance(value, Mapping):
            if "selection_ratio" in value:
                return cls("selection_ratio", float(value["selection_ratio"]))
            if "score" in value:
                return cls("score", float(value["score"]))
            if "d" in value:
                return cls("d", float(value["d"]), str(value.get("standardiser") or "pooled"))
        raise ValueError(f"sesoi must be a number or {{selection_ratio|score|d: x}}, got {value!r}")

    def describe(self) -> str:
        """``{selection_ratio: 0.8}``, ``{score: 0.0075}``, ``0.2`` or ``{d: 0.2, standardiser: within_job}``."""
        if self.plain:
            return f"{self.value:g}"
        if self.form == "d":
            return f"{{d: {self.value:g}, standardiser: {self.standardiser}}}"
        return f"{{{self.form}: {self.value:g}}}"


@dataclass(frozen=True)
class Rule:
    """The decision rule of one system: top-K per job (``k``) or score ≥ ``threshold``."""

    k: int | None = None
    threshold: float | None = None
    ranking: str = "swap_in"

    @property
    def label(self) -> str:
        """``top-10 swap-in`` or ``score >= 0.7``."""
        if self.threshold is not None:
            return f"score >= {self.threshold:g}"
        return f"top-{self.k} {self.ranking.replace('_', '-')}"

    def kw(self) -> dict[str, Any]:
        """``k=`` or ``threshold=`` for :func:`breakpoints`, :func:`ratio_at_shift`, :func:`implied_shift`."""
        return {"threshold": self.threshold} if self.threshold is not None else {"k": self.k}


def rule_of(resolved: Mapping[str, Any], system: str) -> Rule:
    """The decision rule in force for ``system`` (``analysis.decision``, else top-K with ``k.group``).

    Under a threshold rule (one number, or one per system id) the threshold; else K = ``analysis.k.group``
    (``decision.top_k`` has already set every family's K in the resolved spec).
    """
    from compiler.methods import RANKING

    a = resolved["analysis"]
    ranking = a.get("ranking") or RANKING
    t = (a.get("decision") or {}).get("threshold")
    if t is not None:
        return Rule(threshold=float(t[system] if isinstance(t, Mapping) else t), ranking=ranking)
    return Rule(k=int(a["k"]["group"]), ranking=ranking)


def within_sd(scores: np.ndarray, strata: np.ndarray | None = None) -> float:
    """The SD within strata, pooled: sqrt(Σ (x − mean of its stratum)² / (n − #strata)).

    Parameters
    ----------
    scores : numpy.ndarray of float, shape (n,)
    strata : numpy.ndarray, shape (n,), optional
        Stratum of each score; None: one stratum (the ordinary SD, ddof = 1).

    Returns
    -------
    float
        ≥ 0, score units; nan when n − #strata < 1. Two groups as strata give seed 003's s_p.
    """
    x = np.asarray(scores, dtype=float)
    if strata is None:
        codes = np.zeros(x.size, dtype=int)
    else:
        codes = pd.factorize(pd.Series(np.asarray(strata, dtype=object)).astype(str))[0]
    n_strata = int(np.unique(codes).size)
    df = x.size - n_strata
    if df < 1:
        return math.nan
    means = np.bincount(codes, weights=x) / np.bincount(codes)
    return math.sqrt(float(np.sum((x - means[codes]) ** 2)) / df)


def strata_of(frame: pd.DataFrame, kind: str, groups: np.ndarray | None = None) -> np.ndarray | None:
    """Stratum labels of a standardiser kind: ``pooled`` the groups alone; ``within_job`` job (x group);
    ``within_job_match`` job x ``is_true_match`` (x group). Missing match labels form their own stratum."""
    parts: list[np.ndarray] = []
    if groups is not None:
        parts.append(np.asarray(groups, dtype=object).astype(str))
    if kind in ("within_job", "within_job_match"):
        parts.append(frame["job_id"].astype(str).to_numpy())
    if kind == "within_job_match":
        match = frame["is_true_match"] if "is_true_match" in frame else pd.Series(np.nan, index=frame.index)
        parts.append(match.astype(str).to_numpy())
    if not parts:
        return None
    out = parts[0].astype(object)
    for p in parts[1:]:
        out = out + "\x1f" + p
    return out


def reference_frame(paired: pd.DataFrame, reference: str) -> pd.DataFrame:
    """The reference variant's scores, replicates averaged: one row per (system, condition, job, base
    candidate), columns ``system, condition, job_id, cv_id, score, is_true_match``."""
    ref = paired[paired["variant"] == reference]
    match = ref["is_true_match"].astype(float) if "is_true_match" in ref else pd.Series(np.nan, index=ref.index)
    ref = ref.assign(is_true_match=match)
    return (ref.groupby(["system", "condition", "job_id", "cv_id"], sort=True, dropna=False)
            .agg(score=("score", "mean"), is_true_match=("is_true_match", "first")).reset_index())


def _row(ids: dict, rule: Rule, ses: Sesoi, scores: np.ndarray, jobs: np.ndarray, sd: float,
         span: float, pooled: bool) -> dict[str, Any]:
    """One row of :func:`sesoi_table` from one set of reference scores (a job's, or all jobs')."""
    row = {**ids, "rule": rule.label, "form": ses.describe(), "standardiser_kind": ses.standardiser,
           "standardiser": sd, "margin": math.nan, "shift": math.nan, "reason": ""}
    _, selected = breakpoints(scores, jobs, **rule.kw())
    if ses.form == "selection_ratio":
        row["margin"] = ses.value
        if selected == 0:
            row["reason"] = REASON_NONE_SELECTED_ALL if pooled else REASON_NONE_SELECTED
        else:
            shift = implied_shift(scores, jobs, ses.value, **rule.kw())
            if math.isinf(shift):
                row["reason"] = REASON_UNREACHABLE.format(m=ses.value)
            else:
                row["shift"] = shift
    else:
        if ses.form == "score":
            row["shift"] = ses.value
        elif sd > 0:
            row["shift"] = ses.value * sd
        else:
            row["reason"] = REASON_NO_SD
        if selected == 0:
            row["reason"] = REASON_NONE_SELECTED_ALL if pooled else REASON_NONE_SELECTED
        elif math.isfinite(row["shift"]):
            row["margin"] = ratio_at_shift(scores, jobs, row["shift"], **rule.kw())
    row["shift_normalised"] = row["shift"] / span if span > 0 else math.nan
    row["d_equivalent"] = row["shift"] / sd if sd > 0 else math.nan
    return row


def sesoi_table(paired: pd.DataFrame, resolved: Mapping[str, Any], *,
                score_range: Mapping[str, tuple[float, float]] | None = None) -> pd.DataFrame:
    """``sesoi.csv``: the SESOI of every system x condition in three units (issue 30 §1).

    Parameters
    ----------
    paired : pandas.DataFrame
        The paired frame (``system, condition, job_id, cv_id, variant, score``; ``is_true_match`` for
        ``within_job_match``); the reference variant's scores, replicates averaged, are read.
    resolved : Mapping
        The resolved spec: ``analysis.effect_size.sesoi``, the decision rule (:func:`rule_of`), the
        reference variant, ``systems[].score_range``.
    score_range : Mapping, optional
        System id -> ``(low, high)``; default from ``resolved["systems"]``.

    Returns
    -------
    pandas.DataFrame
        Columns :data:`SESOI_COLUMNS`; per system x condition one pooled row (``job_id`` ``ALL``: the
        same shift in every job) then one per job. ``margin``: the selection ratio (the SESOI's, or
        the one its shift implies by :func:`ratio_at_shift`); ``shift``: δ* in score units (the
        implied shift for ``{selection_ratio: m}``, x for ``{score: x}``, x · standardiser for a d);
        ``shift_normalised``: δ* / (high − low); ``standardiser``: the SD of the reference scores of
        the kind (``pooled``: their SD; ``within_job``: within job, pooled; ``within_job_match``:
        within job x match stratum, pooled); ``d_equivalent`` = shift / standardiser. A row whose
        shift is undefined has it empty and says why in ``reason``. Empty when the spec declares no
        effect size.
    """
    es = resolved["analysis"].get("effect_size")
    if not es:
        return pd.DataFrame(columns=list(SESOI_COLUMNS))
    ses = Sesoi.of(es["sesoi"])
    ranges = score_range or {s["id"]: tuple(s["score_range"]) for s in resolved["systems"]}
    ref = reference_frame(paired, resolved["variants"]["reference"])
    rows = []
    for (system, condition), sub in ref.groupby(["system", "condition"], sort=True):
        rule = rule_of(resolved, str(system))
        lo, hi = ranges.get(str(system), (0.0, 1.0))
        span = float(hi) - float(lo)
        ids = {"system": system, "condition": condition}
        x, jobs = sub["score"].to_numpy(float), sub["job_id"].to_numpy()
        sd = within_sd(x, strata_of(sub, ses.standardiser))
        rows.append(_row({**ids, "job_id": ALL_JOBS}, rule, ses, x, jobs, sd, span, pooled=True))
        for job, js in sub.groupby("job_id", sort=True):
            xj = js["score"].to_numpy(float)
            sdj = within_sd(xj, strata_of(js, ses.standardiser))
            rows.append(_row({**ids, "job_id": job}, rule, ses, xj, js["job_id"].to_numpy(), sdj, span,
                             pooled=False))
    return pd.DataFrame(rows, columns=list(SESOI_COLUMNS))


def shifts_of(table: pd.DataFrame) -> dict[tuple, float]:
    """``(system, condition) -> δ*`` of the pooled rows and ``(system, condition, job_id) -> δ*`` of the
    per-job rows of :func:`sesoi_table` (nan where undefined): the TOST bounds of the contrasts."""
    out: dict[tuple, float] = {}
    for r in table.itertuples(index=False):
        key = (r.system, r.condition) if r.job_id == ALL_JOBS else (r.system, r.condition, r.job_id)
        out[key] = float(r.shift)
    return out
