"""Power and minimum detectable effects in decision units (issue 30 §3; seed 003 §3.7: the instrument
must be able to see a bias of the size the audit cares about).

The level-1 test of a category (its score test, ``score_delta``: Wilcoxon's signed-rank test on the paired
differences; issue 29 §4) is sized at the SESOI's score shift δ* (``sesoi.csv``, issue 30 §1), not at a
d_z that no decision reads:

- power at δ*: ``statsmodels`` ``TTestPower`` (noncentral t, two-sided) with effect δ* / sd(diff) and the
  signed-rank test's effective sample size n · 3/π (its asymptotic relative efficiency under normality,
  an approximation, as methods 7);
- at level α and at α / m₁ (m₁: the categories x conditions of the system, the level-1 family of the
  hierarchical adjustment; α / m₁ is Bonferroni's level, a lower bound for BH's power);
- n for 80%: base candidates per variant (the smallest n with power ≥ the declared power);
- the MDE: the shift detectable with the declared power at n, also as the selection ratio it implies
  (:func:`runtime.analysis.sesoi.ratio_at_shift`) and in d (:mod:`runtime.analysis.power` fills them).

An axis contrast is read by the within-résumé model (fixed effect per base résumé, cluster-robust SE):
its "sd(diff)" is SE · sqrt(G), G base résumés, and no ARE applies.

This module holds the arithmetic; :mod:`runtime.analysis.power` reads the scores (``power.csv``). The
compiler computes nothing here without scores: ``audit compile --pilot RUN_DIR`` or ``audit execute`` do.
statsmodels is imported inside the functions.
"""

from __future__ import annotations

import math
from typing import Any

#: Columns of ``power.csv`` (issue 30 §3), in order.
POWER_COLUMNS = ("system", "condition", "category", "test", "n", "sd_diff", "sesoi_shift", "level", "power",
                 "n_for_80", "mde_shift", "mde_ratio", "mde_d")
#: Asymptotic relative efficiency of Wilcoxon's signed-rank test to the paired t under normality.
ARE_WILCOXON = 3 / math.pi
#: ``test`` of a variant row and of an axis row.
TEST_WILCOXON = "wilcoxon signed-rank (noncentral t, n·3/π)"
TEST_MODEL = "within-résumé model t (cluster SE)"


def _solve(**kw: Any) -> float:
    """``TTestPower().solve_power`` as a float; nan when statsmodels finds no root in its bracket."""
    import numpy as np
    from statsmodels.stats.power import TTestPower

    try:
        return float(np.ravel(TTestPower().solve_power(alternative="two-sided", **kw))[0])
    except (ValueError, RuntimeError):
        return math.nan


def _power(effect: float, nobs: float, level: float) -> float:
    """``TTestPower().power`` (two-sided); where scipy's noncentral t gives nan far in its tail (a very
    large noncentrality), the normal approximation Φ(nc − z) + Φ(−nc − z), which is then 1 to double
    precision."""
    from scipy import stats
    from statsmodels.stats.power import TTestPower

    p = float(TTestPower().power(effect_size=effect, nobs=nobs, alpha=level, alternative="two-sided"))
    if math.isnan(p):
        nc, z = effect * math.sqrt(nobs), float(stats.norm.ppf(1 - level / 2))
        p = float(stats.norm.cdf(nc - z) + stats.norm.cdf(-nc - z))
    return p


def level_one_power(n: float, sd_diff: float, shift: float, *, level: float, power: float = 0.8,
                    are: float = ARE_WILCOXON) -> dict[str, float]:
    """Power at ``shift``, n for ``power`` and the MDE of a paired score test (issue 30 §3).

    Parameters
    ----------
    n : float
        Pairs (base candidates per variant), ≥ 2.
    sd_diff : float
        SD of the paired differences, score units (> 0).
    shift : float
        δ*, score units (≥ 0; nan or inf: no power or n to report).
    level : float
        Two-sided significance level (α, or α / m₁).
    power : float
        Target power of ``n_for_80`` and of the MDE (the spec's ``analysis.effect_size.power``).
    are : float
        Efficiency of the test relative to the paired t: the effective n is n · are (3/π for the
        signed-rank test; 1 for a t).

    Returns
    -------
    dict
        ``power`` in [level, 1) (nan when undefined); ``n_for_80``: the smallest integer n with power ≥
        ``power`` at ``shift`` (nan when shift is 0 or undefined); ``mde_shift``: the shift detected with
        probability ``power`` at n, score units.
    """
    out = {"power": math.nan, "n_for_80": math.nan, "mde_shift": math.nan}
    if not (n * are > 1 and sd_diff > 0):
        return out
    out["mde_shift"] = _solve(nobs=n * are, alpha=level, power=power) * sd_diff
    if math.isfinite(shift) and shift >= 0:
        effect = shift / sd_diff
        out["power"] = _power(effect, n * are, level)
        if shift > 0:
            need = _solve(effect_size=effect, alpha=level, power=power)
            if math.isfinite(need):
                n_int = max(2, math.ceil(need / are - 1e-9))
                while _power(effect, n_int * are, level) < power:
                    n_int += 1          # solve_power's root can fall a hair short of the target
                out["n_for_80"] = float(n_int)
    return out
