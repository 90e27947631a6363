"""The validity protocol of seed 003 §3.7: can the instrument see what the audit needs?

Three kinds of check, each per system x condition unless stated:

- **positive control**: a quality contrast must reach a declared effect. ``match``: Cohen's d of
  matching against non-matching base candidates on the reference variant (Welch p); ``axis``: an
  axis level against its reference level (as in :mod:`.effect_size`). It passes when d has the
  declared sign (``higher``: d ≥ min_d; ``lower``: d ≤ −min_d; ``either``: |d| ≥ min_d) and its BH
  q (over the positive-control rows) is below α. A system that ignores resume content (a constant
  or random score) fails it.
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


def check_validity(paired: pd.DataFrame, *, config: Mapping, reference: str, axes: list[str],
                   score_range: Mapping[str, tuple[float, float]], alpha: float,
                   score_step: Mapping[str, float] | None = None, sesoi: float = DEFAULT_SESOI) -> ValidityResult:
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

    Returns
    -------
    ValidityResult
    """
    frame = average_replicates(paired, axes)
    rows: list[dict[str, object]] = []
    pc = config["positive_control"]
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
        pc_rows.append({"check": "positive_control", "system": system, "condition": condition,
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
    checks = pd.DataFrame(rows, columns=list(VALIDITY_COLUMNS))
    failed = tuple(f"{r.check} ({r.system}, {r.condition}): {r.description}; observed {r.statistic} = "
                   f"{r.value:.4g}{'; ' + r.detail if r.detail else ''}"
                   for r in checks.itertuples() if not r.passed)
    return ValidityResult(checks=checks, verdict=INCONCLUSIVE if failed else VALID, failed=failed)


def _finish_bh(rows: list[dict[str, object]], alpha: float, direction_ok) -> None:
    if not rows:
        return
    q = bh_adjust(np.array([float(r["p_value"]) for r in rows]), alpha=alpha)
    for r, qq in zip(rows, q):
        r["q_value"] = float(qq)
        r["passed"] = bool(direction_ok(r) and math.isfinite(qq) and qq < alpha and not r["detail"])
