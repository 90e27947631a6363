"""``power.csv``: the level-1 test's power at the SESOI and its MDE in decision units (issue 30 §3).

Per system x condition x category (every non-reference variant; every axis contrast of
``analysis.effect_size``), at level α and at α / m₁ (m₁: the non-reference variants of the system x its
conditions, the level-1 family): n, sd(diff), δ* (``sesoi.csv``'s pooled row), the power at δ*, n for
the declared power, and the MDE as a shift, as the selection ratio it implies at the decision rule
(:func:`runtime.analysis.sesoi.ratio_at_shift` on the pooled reference scores) and in d (shift / the
contrast's standardiser of the SESOI's kind). The arithmetic is :func:`compiler.power.level_one_power`.

Variant rows: the paired differences of the averaged replicates (n pairs, sd(diff)), the signed-rank test
via its ARE 3/π. Axis rows: the within-résumé model of :func:`runtime.analysis.effect_size.axis_model`
(the execution's estimator): its cluster-robust SE, G base résumés, sd(diff) := SE · sqrt(G), no ARE.
No I/O.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from compiler.power import ARE_WILCOXON, POWER_COLUMNS, TEST_MODEL, TEST_WILCOXON, level_one_power


def power_table(paired: pd.DataFrame, resolved: Mapping[str, Any], *, sesoi: pd.DataFrame) -> pd.DataFrame:
    """``power.csv`` (issue 30 §3).

    Parameters
    ----------
    paired : pandas.DataFrame
        The paired frame (``system, condition, job_id, cv_id, variant, score`` and the axis columns).
    resolved : Mapping
        The resolved spec (``analysis.alpha``, ``analysis.effect_size``: power, contrasts, sesoi; the
        decision rule; the reference variant).
    sesoi : pandas.DataFrame
        :func:`runtime.analysis.sesoi.sesoi_table` of the same frame.

    Returns
    -------
    pandas.DataFrame
        Columns :data:`compiler.power.POWER_COLUMNS`, two rows per system x condition x category (level α,
        then α / m₁; one when m₁ = 1). ``power`` in [0, 1]; ``n_for_80``: base candidates per variant; ``mde_shift`` score
        units; ``mde_ratio`` the selection ratio of the reference scores lowered by ``mde_shift`` (nan when
        the rule selects none); ``mde_d`` = ``mde_shift`` / standardiser. Empty without ``effect_size``.
    """
    from runtime.analysis.effect_size import average_replicates, axis_design, axis_model, axis_references
    from runtime.analysis.sesoi import ALL_JOBS, Sesoi, ratio_at_shift, reference_frame, rule_of, strata_of, within_sd

    an = resolved["analysis"]
    es = an.get("effect_size")
    if not es:
        return pd.DataFrame(columns=list(POWER_COLUMNS))
    ses = Sesoi.of(es["sesoi"])
    alpha, target = float(an["alpha"]), float(es["power"])
    reference = resolved["variants"]["reference"]
    axes = [a for a in resolved.get("axes", {}) if a in paired]
    frame = average_replicates(paired, axes)
    refs = reference_frame(paired, reference)
    shift_of = {(r.system, r.condition): float(r.shift)
                for r in sesoi.itertuples(index=False) if r.job_id == ALL_JOBS}
    rows = []
    for system, by_system in frame.groupby("system", sort=True):
        variants = sorted(v for v in by_system["variant"].unique() if v != reference)
        m1 = max(1, len(variants) * by_system["condition"].nunique())
        rule = rule_of(resolved, str(system))
        for condition, sub in by_system.groupby("condition", sort=True):
            shift = shift_of.get((system, condition), math.nan)
            ref = refs[(refs["system"] == system) & (refs["condition"] == condition)]
            rs, rj = ref["score"].to_numpy(float), ref["job_id"].to_numpy()
            cats = []
            for v in variants:
                pair = sub[sub["variant"].isin([v, reference])]
                wide = pair.pivot_table(index=["job_id", "cv_id"], columns="variant", values="score").dropna()
                if v not in wide or reference not in wide:
                    continue
                diff = (wide[v] - wide[reference]).to_numpy(float)
                st = (math.sqrt((wide[v].var(ddof=1) + wide[reference].var(ddof=1)) / 2) if ses.standardiser == "pooled"
                      else within_sd(pair["score"].to_numpy(float), strata_of(pair, ses.standardiser, pair["variant"])))
                cats.append((v, TEST_WILCOXON, len(diff), float(np.std(diff, ddof=1)) if len(diff) > 1 else math.nan,
                             st, ARE_WILCOXON))
            axis_cs = [c for c in es["contrasts"] if c["kind"] == "axis"]
            if axis_cs and axes:
                design = axis_design(sub, axes)
                fits, _ = (axis_model(sub, axis_references(sub, axis_cs, axes), design=design)
                           if design != "welch" else ({}, ""))
                g = int(sub[["job_id", "cv_id"]].drop_duplicates().shape[0])
                for c in axis_cs:
                    fit = fits.get((c["axis"], c["level"]))
                    both = sub[sub[c["axis"]].isin([c["level"], c["reference"]])]
                    x1 = both.loc[both[c["axis"]] == c["level"], "score"].to_numpy(float)
                    x0 = both.loc[both[c["axis"]] == c["reference"], "score"].to_numpy(float)
                    if ses.standardiser == "pooled" and len(x1) > 1 and len(x0) > 1:
                        st = math.sqrt(((len(x1) - 1) * x1.var(ddof=1) + (len(x0) - 1) * x0.var(ddof=1))
                                       / (len(x1) + len(x0) - 2))
                    else:
                        st = within_sd(both["score"].to_numpy(float), strata_of(both, ses.standardiser, both[c["axis"]]))
                    se = fit["se"] if fit else math.nan
                    cats.append((f"{c['axis']}: {c['level']}", TEST_MODEL, g,
                                 se * math.sqrt(g) if math.isfinite(se) else math.nan, st, 1.0))
            for category, test, n, sd_diff, st, are in cats:
                for level in ((alpha,) if m1 == 1 else (alpha, alpha / m1)):
                    res = level_one_power(n, sd_diff, shift, level=level, power=target, are=are)
                    mde = res["mde_shift"]
                    ratio = (ratio_at_shift(rs, rj, mde, **rule.kw()) if math.isfinite(mde) and len(rs) else math.nan)
                    rows.append({"system": system, "condition": condition, "category": category, "test": test,
                                 "n": n, "sd_diff": sd_diff, "sesoi_shift": shift, "level": level,
                                 "power": res["power"], "n_for_80": res["n_for_80"], "mde_shift": mde,
                                 "mde_ratio": ratio, "mde_d": mde / st if st and st > 0 else math.nan})
    return pd.DataFrame(rows, columns=list(POWER_COLUMNS))


def smallest_detectable_ratio(power: pd.DataFrame) -> pd.DataFrame:
    """Page 1 (issue 30 §3): per system x category, the smallest detectable selection ratio.

    Parameters
    ----------
    power : pandas.DataFrame
        ``power.csv`` (:func:`power_table`).

    Returns
    -------
    pandas.DataFrame
        Columns ``system, category, mde_ratio, mde_shift, level``: at the family level α / m₁ (the smaller
        ``level`` of each category), the lowest ``mde_ratio`` over the conditions (the condition where the
        test sees least); a selection ratio at or above it may go unseen with probability > 1 − power.
        Sorted by system, then category. Empty when ``power`` is.
    """
    cols = ["system", "category", "mde_ratio", "mde_shift", "level"]
    if power is None or power.empty:
        return pd.DataFrame(columns=cols)
    lowest = power[power["level"] == power.groupby(["system", "category"])["level"].transform("min")]
    lowest = lowest[pd.to_numeric(lowest["mde_ratio"], errors="coerce").notna()]  # no MDE (zero spread): left out
    if lowest.empty:
        return pd.DataFrame(columns=cols)
    idx = lowest.groupby(["system", "category"], sort=True)["mde_ratio"].idxmin()
    return lowest.loc[idx, cols].sort_values(["system", "category"]).reset_index(drop=True)
