"""DerSimonian–Laird random-effects pooling of a contrast across conditions (seed 003 §3.7, §4.3).

For each contrast, the per-unit effect sizes d_i (units: conditions, jobs or systems, as declared by
``analysis.effect_size.pool_over``) with their large-sample variances v_i (column ``var_d`` of
:func:`runtime.analysis.effect_size.effect_sizes`: Hedges & Olkin 1985 for independent groups,
Bonett 2008 for paired d_av, the model SE for adjusted axis contrasts) are combined by
``statsmodels.stats.meta_analysis.combine_effects(method_re="dl")``: the between-unit variance τ²,
Cochran's Q on k − 1 df with its p-value, I² = max(0, (Q − df)/Q), and the random-effects pooled d
with its 95% and 90% intervals (normal); the 90% interval gives the pooled equivalence margin.
The pooled TOST (issue 30 §1): ``equivalent`` when that margin is below ``sesoi``, the SESOI in d of the
units (a d SESOI as written; a score shift δ*: the mean over the pooled units of δ* / standardiser).

``combine_effects`` (statsmodels 0.15) does not truncate the DL moment estimate: when Q < k − 1 it
returns a negative τ² (and a negative I²) and weights the units by 1/(v_i + τ²) with that negative
τ². DerSimonian & Laird (1986) define τ² = max(0, (Q − df)/c); this module therefore reports
τ² = max(0, τ²_statsmodels) and I² = max(0, I²_statsmodels), and when the raw estimate is negative
the random-effects estimate is the fixed-effect one (``mean_effect_fe``, ``sd_eff_w_fe``), which is
what τ² = 0 gives.

With a single unit there is nothing to pool: the row says so (``pooled`` is False). No I/O.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from runtime.analysis.effect_size import average_replicates, contrast_rows

POOL_COLUMNS = ("contrast", "family", "pool_over", "group", "k_units", "units", "pooled", "d_re",
                "ci_low", "ci_high", "ci90_low", "ci90_high", "margin", "tau2", "q", "q_df", "q_p",
                "i2", "sesoi", "equivalent", "notes")
#: What stays fixed while pooling over each unit kind.
GROUP_BY = {"condition": ("system",), "job": ("system", "condition"), "system": ("condition",)}
UNIT_COLUMN = {"condition": "condition", "job": "job_id", "system": "system"}
NOTE_ONE_UNIT = "cannot pool: a single {unit} ({name}); declare pool_over to pool over another unit"


def pool_contrasts(paired: pd.DataFrame, *, contrasts: Sequence[dict], axes: Sequence[str], sesoi: float,
                   pool_over: str, score_resolution: Mapping[str, float | None] | None = None,
                   bounds: Mapping[tuple, float] | None = None, standardiser: str = "pooled") -> pd.DataFrame:
    """One DL-pooled row per contrast x fixed group (e.g. per system when pooling conditions).

    Returns
    -------
    pandas.DataFrame
        Columns :data:`POOL_COLUMNS`; ``tau2`` ≥ 0, ``i2`` in [0, 1], ``d_re`` the random-effects d.
    """
    from scipy import stats
    from statsmodels.stats.meta_analysis import combine_effects

    frame = average_replicates(paired, axes)
    unit = UNIT_COLUMN[pool_over]
    fixed = list(GROUP_BY[pool_over])
    per_unit = pd.DataFrame(contrast_rows(frame, contrasts, sesoi=sesoi, by=(*fixed, unit), axes=axes,
                                          score_resolution=score_resolution, bounds=bounds,
                                          standardiser=standardiser))
    rows = []
    for (contrast, *group), sub in per_unit.groupby(["contrast", *fixed], sort=False):
        sub = sub[np.isfinite(sub["d"].astype(float)) & np.isfinite(sub["var_d"].astype(float))]
        base = {"contrast": contrast, "family": per_unit.loc[per_unit["contrast"] == contrast, "family"].iloc[0],
                "pool_over": pool_over, "group": "/".join(map(str, group)), "k_units": len(sub),
                "units": ", ".join(map(str, sub[unit])), "pooled": False, "notes": ""}
        nan = {c: math.nan for c in POOL_COLUMNS if c not in base}
        if len(sub) < 2:
            name = ", ".join(map(str, sub[unit])) or "none with a defined d"
            rows.append({**nan, **base, "equivalent": False, "notes": NOTE_ONE_UNIT.format(unit=pool_over, name=name)})
            continue
        eff, var = sub["d"].to_numpy(float), sub["var_d"].to_numpy(float)
        res = combine_effects(eff, var, method_re="dl", use_t=False, alpha=0.05)
        if res.tau2 > 0:
            d_re, se_re = float(res.mean_effect_re), float(res.sd_eff_w_re)
        else:  # DL truncates tau^2 at 0: the random-effects estimate is the fixed-effect one
            d_re, se_re = float(res.mean_effect_fe), float(res.sd_eff_w_fe)
        z95, z90 = stats.norm.ppf(0.975), stats.norm.ppf(0.95)
        q_df = len(sub) - 1
        unit_sesoi = float(np.nanmean(sub["sesoi"].to_numpy(float))) if sub["sesoi"].notna().any() else math.nan
        margin = max(abs(d_re - z90 * se_re), abs(d_re + z90 * se_re))
        rows.append({**base, "pooled": True, "d_re": d_re, "sesoi": unit_sesoi,
                     "equivalent": bool(margin < unit_sesoi), "ci_low": d_re - z95 * se_re,
                     "ci_high": d_re + z95 * se_re, "ci90_low": d_re - z90 * se_re,
                     "ci90_high": d_re + z90 * se_re,
                     "margin": margin,
                     "tau2": max(0.0, float(res.tau2)), "q": float(res.q), "q_df": q_df,
                     "q_p": float(stats.chi2.sf(res.q, q_df)), "i2": max(0.0, float(res.i2))})
    return pd.DataFrame(rows, columns=list(POOL_COLUMNS))
