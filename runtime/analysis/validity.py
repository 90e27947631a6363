"""The validity protocol of seed 003 §3.7: can the instrument see what the audit needs?

Three kinds of check, each per system x condition unless stated:

- **positive control**: a quality contrast must reach a declared effect. ``match``: Cohen's d of
  matching against non-matching base candidates on the reference variant (Welch p); ``axis``: an
  axis level against its reference level (as in :mod:`.effect_size`). It passes when d has the
  declared sign (``higher``: d ≥ min_d; ``lower``: d ≤ −min_d; ``either``: |d| ≥ min_d) and its BH
  q (over the positive-control rows) is below α. A system that ignores resume content (a constant
  or random score) fails it.
  With ``contrast: control`` (issue 39 §6), the check is one of sensitivity: a declared positive control (a
  weakened copy of the reference résumé, ``variants.positive_controls``) must be detected by a one-sided
  paired t test at α at the audit's n (:func:`control_sensitivity`; its row gives the shift in SESOI units);
  the match contrast then runs as the ``relevance`` check (min_d, higher). The match contrast alone proves
  relevance, not sensitivity: a matcher passes it at d far above 0.5 and may still miss a SESOI-sized shift.
- **manipulation check**: a condition expected to move scores relative to another condition, in a
  stated direction, by at least min_d, with q < α (Welch over resumes, BH over the checks). A
  condition absent from the data fails the check: it could not be verified.
- **distribution check**: the SD of the normalised score is at least ``min_sd`` and the share of
  normalised scores at or above ``ceiling`` is at most ``max_ceiling_share`` (seed 003 §3.4: a
  ceiling collapses the variance needed to detect group differences). Defaults
  (:class:`compiler.spec.DistributionCheck`): ``min_sd`` = the system's score grid step (normalised)
  / SESOI, at least :data:`MIN_SD_FLOOR`, so that an effect of the SESOI moves scores by at least
  one step; ``max_ceiling_share`` = 0.1, the largest fraction of a latent shift that a ceiling may
  hide (a shift δ moves the mean of min(Y + δ, c) by δ · P(Y < c)).
- **distribution check at the shortlist** (issue 39 §6): the same two criteria within each job's
  **reference top-2K**, the 2K highest reference-variant scores of the job (replicates averaged; K
  the shortlist size: ``analysis.k.group`` under top-K, the job's reference résumés meeting the
  threshold under ``score >= t``; the whole job when it has at most 2K): the candidates who compete
  for the K places and the K just below them, whom a bias moves across the cutoff. Resolution:
  their SD within job (pooled over jobs, :func:`runtime.analysis.sesoi.within_sd`) is at least
  ``min_sd`` (the row's detail gives their distinct values and the share tied with another of
  their job's top-2K); ceiling: the share of them at or above ``ceiling``, pooled over jobs, is at
  most ``max_ceiling_share``. A ceiling hides a bias where the selection is taken: 10% of all scores
  at the ceiling can be 40% of a shortlist of a quarter of the pool, which the all-score check passes.

Any failed check makes the verdict ``INCONCLUSIVE`` (exit 5 in the CLI); otherwise ``VALID``.
No I/O.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import pandas as pd

from runtime.analysis.classify import bh_adjust
from runtime.analysis.effect_size import average_replicates, independent_contrast

VALID, INCONCLUSIVE = "VALID", "INCONCLUSIVE"
VALIDITY_COLUMNS = ("check", "system", "condition", "description", "statistic", "value", "ci_low",
                    "ci_high", "p_value", "q_value", "threshold", "n", "passed", "detail")
MSG_NO_LABELS = "no matching/non-matching labels on the reference variant; the control cannot be computed"
MSG_UNDEFINED = "d is undefined ({why})"
#: Floor of the default ``min_sd`` (continuous scores have no grid).
MIN_SD_FLOOR = 0.01
#: SESOI used for the default ``min_sd`` when the spec declares no ``effect_size`` (its default).
DEFAULT_SESOI = 0.2
MSG_NO_CONDITION = "condition {cond!r} is not in the data (conditions: {present}); the check cannot be verified"


@dataclass(frozen=True)
class ValidityResult:
    """``checks``: one row per check (:data:`VALIDITY_COLUMNS`); ``verdict``: VALID or INCONCLUSIVE;
    ``failed``: one line per failed check."""

    checks: pd.DataFrame
    verdict: str
    failed: tuple[str, ...]


def _direction_ok(d: float, direction: str, min_d: float) -> bool:
    if not math.isfinite(d):
        return False
    if direction == "higher":
        return d >= min_d
    if direction == "lower":
        return d <= -min_d
    return abs(d) >= min_d


def _op(direction: str, min_d: float) -> str:
    return {"higher": f"d ≥ {min_d:g}", "lower": f"d ≤ −{min_d:g}", "either": f"|d| ≥ {min_d:g}"}[direction]


def default_min_sd(step: float, lo: float, hi: float, sesoi: float) -> float:
    """``max(MIN_SD_FLOOR, (step / (hi − lo)) / sesoi)``: the SD at which an effect of the SESOI moves
    scores by one step of their grid (``step`` 0: continuous scores, the floor)."""
    grid = step / (hi - lo) if step > 0 and hi > lo else 0.0
    return max(MIN_SD_FLOOR, grid / sesoi)


def reference_top2k(scores: np.ndarray, jobs: np.ndarray, *, k: int | None = None,
                    threshold: float | None = None) -> dict[object, np.ndarray]:
    """Each job's reference top-2K: its 2K highest scores (issue 39 §6).

    Parameters
    ----------
    scores : numpy.ndarray of float, shape (n,)
        Reference-variant scores, one per base candidate (score units; higher = better).
    jobs : numpy.ndarray, shape (n,)
        Job of each score.
    k : int, optional
        Top-K rule: K, the shortlist size of every job (≥ 1).
    threshold : float, optional
        Threshold rule: K of a job = its scores meeting ``threshold``
        (:func:`runtime.analysis.classify.meets_threshold`). Exactly one of ``k`` and ``threshold``.

    Returns
    -------
    dict
        Job -> its top-2K scores, sorted from the highest (all of the job's when it has at most 2K;
        a job whose K is 0 is left out). The multiset depends on the scores only, not on how ties at
        the 2K-th place are ordered.

    Raises
    ------
    ValueError
        Neither or both of ``k`` and ``threshold``; ``k < 1``.
    """
    from runtime.analysis.classify import meets_threshold

    if (k is None) == (threshold is None):
        raise ValueError("give exactly one decision rule: k (top-K) or threshold")
    if k is not None and int(k) < 1:
        raise ValueError(f"k must be at least 1, got {k}")
    s, j = np.asarray(scores, dtype=float), np.asarray(jobs)
    out: dict[object, np.ndarray] = {}
    for code in pd.unique(j):
        x = np.sort(s[j == code])[::-1]
        kk = int(k) if k is not None else int(np.sum(meets_threshold(x, threshold)))
        if kk > 0:
            out[code] = x[: 2 * kk]
    return out


def _tied_share(tops: Mapping[object, np.ndarray]) -> tuple[int, float]:
    """Distinct values (summed over jobs) and the share of scores equal to another of their job's top-2K."""
    distinct, tied, n = 0, 0, 0
    for x in tops.values():
        _, counts = np.unique(x, return_counts=True)
        distinct += counts.size
        tied += int(counts[counts > 1].sum())
        n += x.size
    return distinct, tied / n if n else math.nan
#: Detail of a positive control without rows for a system x condition (a score file checked at validate has them).
MSG_NO_CONTROL_ROWS = "no scores of positive control {control!r} pair with the reference rows; the check cannot be verified"
#: Detail of a positive control whose every paired difference is 0: the system does not read the change.
MSG_CONTROL_NOT_READ = "every paired difference is 0: the system does not read the change"
#: Detail of a constant non-zero difference (the t statistic is infinite: detected exactly when its sign is right).
MSG_CONTROL_CONSTANT = "every paired difference is {diff:.4g}: the t statistic is infinite"


def control_sensitivity(paired: pd.DataFrame, controls: pd.DataFrame | None, *, control: str, direction: str,
                        reference: str, alpha: float, score_step: Mapping[str, float] | None = None,
                        shifts: Mapping[tuple, float] | None = None, sesoi: float = DEFAULT_SESOI) -> list[dict]:
    """The sensitivity check (issue 39 §6): does the audit, at its own n, detect a positive control, a declared
    weakened copy of the reference résumé (``variants.positive_controls``)?

    Per system x condition, the control's scores are paired with the reference variant's by (job_id, cv_id)
    (replicates averaged), the differences ``control − reference`` put on the system's score grid, and a paired t
    test (``scipy.stats.ttest_1samp`` on the differences) is run one-sided in ``direction`` (``lower``: the
    control scores lower; ``higher``; ``either``: two-sided). The check passes when ``p < alpha``: seed 003 §3.7's
    positive control, read as the audit's power to see a known change rather than as a large effect (the match
    contrast, kept as a relevance check, passes at any useful system: it proves no sensitivity).

    Parameters
    ----------
    paired : pandas.DataFrame
        The paired frame (its reference rows are read).
    controls : pandas.DataFrame or None
        ``RunContext.controls``: ``system, condition, replicate, job_id, cv_id, variant, score`` of the control
        résumés; the rows with ``variant == control`` are read.
    control : str
        The positive control's id.
    direction : {"lower", "higher", "either"}
        The alternative of the test.
    reference : str
        The reference variant.
    alpha : float
        Level of the one-sided test.
    score_step : Mapping, optional
        Score grid per system (score units; 0 = continuous).
    shifts : Mapping, optional
        ``(system, condition) -> δ*``, the SESOI in score units (:func:`runtime.analysis.sesoi.shifts_of`), when
        the SESOI is a selection ratio or a score shift.
    sesoi : float
        The SESOI as |d| otherwise: δ* = sesoi x the pooled SD of the two groups of scores (seed 003's Cohen's d).

    Returns
    -------
    list of dict
        One ``positive_control`` row per system x condition (:data:`VALIDITY_COLUMNS` without ``passed`` for no
        row): ``statistic`` ``shift_sesoi``, ``value`` = mean difference / δ* (negative: the control scores
        lower), ``ci_low, ci_high`` the (1 − 2α) t interval of the mean difference in the same units (its end on
        the side of ``direction`` is the one-sided bound), ``p_value`` the test's, ``threshold`` α, ``n`` the
        pairs, ``passed``.
    """
    from scipy import stats
    from statsmodels.stats.weightstats import DescrStatsW

    from runtime.analysis.stats import on_grid

    keys = ["system", "condition", "job_id", "cv_id"]
    ref = paired[paired["variant"] == reference].groupby(keys, sort=True)["score"].mean().rename("ref").reset_index()
    ctl = (controls[controls["variant"] == control] if controls is not None else pd.DataFrame(columns=[*keys, "score"]))
    ctl = ctl.groupby(keys, sort=True)["score"].mean().rename("ctl").reset_index()
    both = ref.merge(ctl, on=keys, how="inner")
    alternative = {"lower": "less", "higher": "greater", "either": "two-sided"}[direction]
    word = {"lower": "lower", "higher": "higher", "either": "different"}[direction]
    rows = []
    for (system, condition), _ in ref.groupby(["system", "condition"], sort=True):
        sub = both[(both["system"] == system) & (both["condition"] == condition)]
        n = len(sub)
        row = {"check": "positive_control", "system": system, "condition": condition, "statistic": "shift_sesoi",
               "value": math.nan, "ci_low": math.nan, "ci_high": math.nan, "p_value": math.nan, "q_value": math.nan,
               "threshold": alpha, "n": n, "detail": ""}
        delta = math.nan
        if n >= 2:
            x1, x0 = sub["ctl"].to_numpy(float), sub["ref"].to_numpy(float)
            step = float((score_step or {}).get(str(system), 0.0))
            diff = on_grid(x1 - x0, step) * step if step > 0 else x1 - x0
            delta = float((shifts or {}).get((system, condition), math.nan))
            if math.isnan(delta):  # a d SESOI (or no effect_size): on the pooled SD of the two groups
                delta = sesoi * math.sqrt((np.var(x1, ddof=1) + np.var(x0, ddof=1)) / 2)
            mean, sd = float(diff.mean()), float(diff.std(ddof=1))
            row["value"] = mean / delta if delta > 0 else math.nan
            if sd == 0:
                right = {"less": mean < 0, "greater": mean > 0, "two-sided": mean != 0}[alternative]
                row["p_value"] = 0.0 if right else 1.0
                row["detail"] = MSG_CONTROL_NOT_READ if mean == 0 else MSG_CONTROL_CONSTANT.format(diff=mean)
            else:
                row["p_value"] = float(stats.ttest_1samp(diff, 0.0, alternative=alternative).pvalue)
                lo, hi = DescrStatsW(diff).tconfint_mean(alpha=2 * alpha)
                row["ci_low"], row["ci_high"] = (float(lo) / delta, float(hi) / delta) if delta > 0 else (math.nan,) * 2
        else:
            row["detail"] = MSG_NO_CONTROL_ROWS.format(control=control)
        row["description"] = (f"positive control {control} vs {reference}: scores {word}, paired t "
                              f"{'two-sided' if direction == 'either' else 'one-sided'} p < {alpha:g} at n = {n}; "
                              f"shift in SESOI units (δ* = {delta:.4g} score points)")
        row["passed"] = bool(n >= 2 and row["p_value"] < alpha and row["detail"] != MSG_CONTROL_NOT_READ)
        rows.append(row)
    return rows


def check_validity(paired: pd.DataFrame, *, config: Mapping, reference: str, axes: list[str],
                   score_range: Mapping[str, tuple[float, float]], alpha: float,
                   score_step: Mapping[str, float] | None = None, sesoi: float = DEFAULT_SESOI,
                   rules: Mapping[str, object] | None = None, controls: pd.DataFrame | None = None,
                   shifts: Mapping[tuple, float] | None = None) -> ValidityResult:
    """Run the declared checks.

    Parameters
    ----------
    paired : pandas.DataFrame
        The paired frame.
    config : Mapping
        Resolved ``analysis.validity`` (``positive_control``, ``manipulation_checks``,
        ``distribution``).
    reference : str
        The reference variant (the ``match`` control is computed on its rows).
    axes : list of str
        Axis columns.
    score_range : Mapping
        ``(lo, hi)`` per system, to normalise scores for the distribution check.
    alpha : float
        Level of the q-value criteria.
    score_step : Mapping, optional
        Score grid step per system (score units; 0 = continuous), for the default ``min_sd``.
    sesoi : float
        The SESOI (|d|) of the default ``min_sd``.
    rules : Mapping, optional
        System id -> its decision rule (:class:`runtime.analysis.sesoi.Rule`: ``k`` or
        ``threshold``), for the checks at the shortlist (``distribution_sd_top2k``,
        ``distribution_ceiling_top2k``); None: those rows are not computed.
    controls : pandas.DataFrame, optional
        ``RunContext.controls`` (issue 39 §6): with ``positive_control: {contrast: control}``, the control's
        rows (:func:`control_sensitivity`); the match contrast then runs as the ``relevance`` check.
    shifts : Mapping, optional
        ``(system, condition) -> δ*`` (:func:`runtime.analysis.sesoi.shifts_of`) for the control's shift.

    Returns
    -------
    ValidityResult
    """
    frame = average_replicates(paired, axes)
    rows: list[dict[str, object]] = []
    pc = config["positive_control"]
    name = "positive_control"
    if pc["contrast"] == "control":  # issue 39 §6: sensitivity; match stays as a relevance check
        rows += control_sensitivity(paired, controls, control=pc["control"], direction=pc["direction"],
                                    reference=reference, alpha=alpha, score_step=score_step, shifts=shifts,
                                    sesoi=sesoi)
        pc, name = {**pc, "contrast": "match", "direction": "higher"}, "relevance"
    pc_rows = []
    for (system, condition), sub in frame.groupby(["system", "condition"], sort=True):
        if pc["contrast"] == "match":
            ref = sub[sub["variant"] == reference]
            lab = ref["is_true_match"].astype(float)
            x1 = ref.loc[lab == 1, "score"].to_numpy(float)
            x0 = ref.loc[lab == 0, "score"].to_numpy(float)
            desc = f"matching vs non-matching base candidates ({reference}): {_op(pc['direction'], pc['min_d'])}, q < {alpha:g}"
        else:
            x1 = sub.loc[sub[pc["axis"]] == pc["level"], "score"].to_numpy(float)
            x0 = sub.loc[sub[pc["axis"]] == pc["reference"], "score"].to_numpy(float)
            desc = (f"{pc['axis']}: {pc['level']} vs {pc['reference']}: {_op(pc['direction'], pc['min_d'])}, "
                    f"q < {alpha:g}")
        res = independent_contrast(x1, x0, sesoi=pc["min_d"])
        detail = ""
        if len(x1) == 0 or len(x0) == 0:
            detail = MSG_NO_LABELS if pc["contrast"] == "match" else MSG_UNDEFINED.format(why="a group is empty")
        elif not math.isfinite(float(res.get("d", math.nan))):
            detail = MSG_UNDEFINED.format(why=res.get("notes") or "")
        if name == "relevance" and (len(x1) == 0 or len(x0) == 0):
            continue  # no match labels: no relevance check beside the positive control
        pc_rows.append({"check": name, "system": system, "condition": condition,
                        "description": desc, "statistic": "cohens_d", "value": res.get("d", math.nan),
                        "ci_low": res.get("ci_low", math.nan), "ci_high": res.get("ci_high", math.nan),
                        "p_value": res.get("p_value", math.nan), "threshold": pc["min_d"],
                        "n": len(x1) + len(x0), "detail": detail})
    _finish_bh(pc_rows, alpha, lambda r: _direction_ok(float(r["value"]), pc["direction"], pc["min_d"]))
    rows += pc_rows

    mc_rows = []
    conditions = sorted(frame["condition"].unique())
    for m in config.get("manipulation_checks") or []:
        for system, sub in frame.groupby("system", sort=True):
            x1 = sub.loc[sub["condition"] == m["condition"], "score"].to_numpy(float)
            x0 = sub.loc[sub["condition"] == m["against"], "score"].to_numpy(float)
            desc = (f"{m['condition']} vs {m['against']}: scores {m['direction']}, "
                    f"{_op(m['direction'], m['min_d'])}, q < {alpha:g}")
            missing = [c for c in (m["condition"], m["against"]) if c not in conditions]
            res = independent_contrast(x1, x0, sesoi=max(m["min_d"], 1e-9))
            mc_rows.append({"check": "manipulation_check", "system": system,
                            "condition": f"{m['condition']} vs {m['against']}", "description": desc,
                            "statistic": "cohens_d", "value": res.get("d", math.nan),
                            "ci_low": res.get("ci_low", math.nan), "ci_high": res.get("ci_high", math.nan),
                            "p_value": res.get("p_value", math.nan), "threshold": m["min_d"],
                            "n": len(x1) + len(x0), "_direction": m["direction"],
                            "detail": MSG_NO_CONDITION.format(cond=missing[0], present=", ".join(conditions))
                            if missing else ""})
    _finish_bh(mc_rows, alpha, lambda r: _direction_ok(float(r["value"]), r["_direction"], r["threshold"]))
    for r in mc_rows:
        r.pop("_direction")
    rows += mc_rows

    dist = config["distribution"]
    for (system, condition), sub in frame.groupby(["system", "condition"], sort=True):
        lo, hi = score_range[system]
        s = (sub["score"].to_numpy(float) - lo) / (hi - lo)
        sd = float(np.std(s, ddof=1)) if len(s) > 1 else math.nan
        share = float(np.mean(s >= dist["ceiling"])) if len(s) else math.nan
        step = float((score_step or {}).get(system, 0.0))
        min_sd = dist["min_sd"]
        why = ""
        if min_sd is None:
            min_sd = default_min_sd(step, lo, hi, sesoi)
            why = (f" (default: score step {step:g} / range {hi - lo:g} / SESOI {sesoi:g}, at least {MIN_SD_FLOOR:g})"
                   if step > 0 else f" (default: continuous scores, floor {MIN_SD_FLOOR:g})")
        rows.append({"check": "distribution_sd", "system": system, "condition": condition,
                     "description": f"SD of the normalised score ≥ {min_sd:.4g}{why}", "statistic": "sd",
                     "value": sd, "threshold": min_sd, "n": len(s),
                     "passed": bool(math.isfinite(sd) and sd >= min_sd), "detail": ""})
        rows.append({"check": "distribution_ceiling", "system": system, "condition": condition,
                     "description": f"share of normalised scores ≥ {dist['ceiling']:g} at most "
                                    f"{dist['max_ceiling_share']:g}", "statistic": "ceiling_share",
                     "value": share, "threshold": dist["max_ceiling_share"], "n": len(s),
                     "passed": bool(math.isfinite(share) and share <= dist["max_ceiling_share"]), "detail": ""})
        if rules is not None and system in rules:
            rows += _top2k_rows(sub[sub["variant"] == reference], rules[system], system=system, condition=condition,
                                lo=lo, hi=hi, min_sd=min_sd, dist=dist)
    checks = pd.DataFrame(rows, columns=list(VALIDITY_COLUMNS))
    failed = tuple(f"{r.check} ({r.system}, {r.condition}): {r.description}; observed {r.statistic} = "
                   f"{r.value:.4g}{'; ' + r.detail if r.detail else ''}"
                   for r in checks.itertuples() if not r.passed)
    return ValidityResult(checks=checks, verdict=INCONCLUSIVE if failed else VALID, failed=failed)


MSG_NO_SHORTLIST = "the decision rule selects no reference résumé: there is no shortlist to check"


def _top2k_rows(ref: pd.DataFrame, rule, *, system, condition, lo: float, hi: float, min_sd: float,
                dist: Mapping) -> list[dict[str, object]]:
    """The resolution and ceiling rows of each job's reference top-2K (module docstring)."""
    from runtime.analysis.sesoi import within_sd

    tops = reference_top2k(ref["score"].to_numpy(float), ref["job_id"].to_numpy(), **rule.kw())
    norm = {j: (x - lo) / (hi - lo) for j, x in tops.items()}
    n = sum(x.size for x in norm.values())
    where = ("each job's reference top-2K (" + (f"2K = {2 * rule.k}" if rule.k is not None else
             f"K = the reference résumés with score >= {rule.threshold:g}") + ")")
    if n == 0:
        return [{"check": c, "system": system, "condition": condition, "description": f"{what} in {where}",
                 "statistic": stat, "value": math.nan, "threshold": thr, "n": 0, "passed": False,
                 "detail": MSG_NO_SHORTLIST}
                for c, what, stat, thr in (("distribution_sd_top2k", "SD", "sd", min_sd),
                                           ("distribution_ceiling_top2k", "ceiling share", "ceiling_share",
                                            dist["max_ceiling_share"]))]
    x = np.concatenate(list(norm.values()))
    jobs = np.concatenate([np.full(v.size, i) for i, v in enumerate(norm.values())])
    sd = within_sd(x, jobs)
    distinct, tied = _tied_share(tops)
    at = {j: float(np.mean(v >= dist["ceiling"])) for j, v in norm.items()}
    share = float(np.mean(x >= dist["ceiling"]))
    worst = max(at, key=lambda j: (at[j], str(j)))
    return [
        {"check": "distribution_sd_top2k", "system": system, "condition": condition,
         "description": f"SD within job of the normalised scores in {where} ≥ {min_sd:.4g}", "statistic": "sd",
         "value": sd, "threshold": min_sd, "n": n, "passed": bool(math.isfinite(sd) and sd >= min_sd),
         "detail": f"{distinct} distinct values among {n} scores; {tied:.0%} tied with another of their job's top-2K"},
        {"check": "distribution_ceiling_top2k", "system": system, "condition": condition,
         "description": f"share of normalised scores ≥ {dist['ceiling']:g} in {where} at most "
                        f"{dist['max_ceiling_share']:g}", "statistic": "ceiling_share", "value": share,
         "threshold": dist["max_ceiling_share"], "n": n, "passed": bool(share <= dist["max_ceiling_share"]),
         "detail": f"largest in job {worst}: {at[worst]:.0%}"},
    ]


def _finish_bh(rows: list[dict[str, object]], alpha: float, direction_ok) -> None:
    if not rows:
        return
    q = bh_adjust(np.array([float(r["p_value"]) for r in rows]), alpha=alpha)
    for r, qq in zip(rows, q):
        r["q_value"] = float(qq)
        r["passed"] = bool(direction_ok(r) and math.isfinite(qq) and qq < alpha and not r["detail"])
