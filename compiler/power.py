"""Compile-time minimum detectable effects (seed 003 §3.7; the instrument must be able to see a
bias of the size the audit cares about).

For each effect-size contrast, given the design size known at compile time (K base candidates per
job x jobs; one condition and one replicate per system), the smallest |d| detectable with the
declared power at α (two-sided), from ``statsmodels.stats.power``:

- variant contrast (paired by base candidate): ``TTestPower`` with n = K x jobs (d_z);
- axis contrast (pooled over the other axes): ``TTestIndPower`` with n1 = resumes at the level,
  n0 = resumes at the reference level;
- the seed 000 ``score_delta`` metric of a variant (Wilcoxon signed-rank): the paired MDE with the
  effective sample size n · 3/π (the signed-rank test's asymptotic relative efficiency under
  normality), an approximation.

statsmodels is imported inside the function, only for specs that declare ``analysis.effect_size``.
"""

from __future__ import annotations

import math
from typing import Any

MDE_COLUMNS = ("contrast", "family", "metric", "test", "n_treatment", "n_reference", "alpha", "power", "mde_d")


def minimum_detectable_effects(resolved: dict[str, Any], *, k_total: int | None = None) -> list[dict[str, Any]]:
    """One row per contrast x metric; empty when the spec declares no effect_size or K is unknown.

    ``k_total`` (base candidates over all jobs) overrides K x jobs; the runtime passes it for
    precomputed systems, whose K is only known from the score file.

    Returns
    -------
    list of dict
        Keys :data:`MDE_COLUMNS`; ``mde_d`` is the minimum detectable |d| (standardised, ≥ 0), None when a
        group is empty.
    """
    es = resolved["analysis"].get("effect_size")
    cand = resolved.get("candidates")
    if not es or (cand is None and k_total is None):
        return []
    import numpy as np
    from statsmodels.stats.power import TTestIndPower, TTestPower

    def _solve(power_class, **kw) -> float | None:  # solve_power returns a 0-d or 1-element array
        try:
            return float(np.ravel(power_class().solve_power(alpha=alpha, power=power, **kw))[0])
        except ValueError:  # no root in statsmodels' bracket (e.g. n = 1): no detectable effect to report
            return None

    alpha, power = resolved["analysis"]["alpha"], es["power"]
    if k_total is None:
        k_total = cand["base_per_job"] * len(resolved["jobs"])
    table = resolved["variants"]["table"]
    rows = []
    for c in es["contrasts"]:
        if c["kind"] == "variant":
            label = f"{c['variant']} vs {c['reference']}"
            mde = _solve(TTestPower, nobs=k_total)
            mde_w = _solve(TTestPower, nobs=k_total * 3 / math.pi)
            rows.append(dict(zip(MDE_COLUMNS, (label, c["family"], "effect_size_dz", "paired_t", k_total,
                                               k_total, alpha, power, mde))))
            rows.append(dict(zip(MDE_COLUMNS, (label, c["family"], "score_delta", "wilcoxon (ARE 3/π)",
                                               k_total, k_total, alpha, power, mde_w))))
        else:
            label = f"{c['axis']}: {c['level']} vs {c['reference']}"
            n1 = k_total * sum(1 for lv in table.values() if lv[c["axis"]] == c["level"])
            n0 = k_total * sum(1 for lv in table.values() if lv[c["axis"]] == c["reference"])
            mde = _solve(TTestIndPower, nobs1=n1, ratio=n0 / n1) if n1 >= 2 and n0 >= 2 else None
            rows.append(dict(zip(MDE_COLUMNS, (label, c["family"], "effect_size_d", "welch_t", n1, n0,
                                               alpha, power, mde))))
    return rows
