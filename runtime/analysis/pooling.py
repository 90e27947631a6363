"""Random-effects pooling of a contrast across units (seed 003 §3.7, §4.3; issue 39 §5).

For each contrast, the per-unit effect sizes d_i (units: conditions, jobs or systems, as declared by
``analysis.effect_size.pool_over``) with their large-sample variances v_i (column ``var_d`` of
:func:`runtime.analysis.effect_size.effect_sizes`: Hedges & Olkin 1985 for independent groups,
Bonett 2008 for paired d_av, the model SE for adjusted axis contrasts) are combined by
:func:`random_effects` (``statsmodels.stats.meta_analysis.combine_effects(method_re="dl")``): the
DerSimonian–Laird between-unit variance τ², Cochran's Q on k − 1 df with its p-value,
I² = max(0, (Q − df)/Q), the random-effects pooled d and its Hartung–Knapp–Sidik–Jonkman intervals
(95% and 90%; t on k − 1 df, the DL variance of the mean times max(1, q_HK), the "modified" HKSJ of
Röver, Knapp & Friede 2015, so that the interval is never narrower than the DL one: with 2–5 units a
normal interval on the DL variance covers far below its level, IntHout, Ioannidis & Borm 2014), and
the 95% prediction interval of a new unit's effect, d_re ± t_{k−2} √(τ² + SE²) with SE the HKSJ SE
(Higgins, Thompson & Spiegelhalter 2009; IntHout et al. 2016), for k ≥ 3 units. The 90% interval
gives the pooled equivalence margin. The pooled TOST (issue 30 §1): ``equivalent`` when that margin is
below ``sesoi``, the SESOI in d of the units (a d SESOI as written; a score shift δ*: the mean over the
pooled units of δ* / standardiser).

``combine_effects`` (statsmodels 0.15) does not truncate the DL moment estimate: when Q < k − 1 it
returns a negative τ² (and a negative I²) and weights the units by 1/(v_i + τ²) with that negative
τ². DerSimonian & Laird (1986) define τ² = max(0, (Q − df)/c); this module therefore reports
τ² = max(0, τ²_statsmodels) and I² = max(0, I²_statsmodels), and when the raw estimate is negative
the random-effects estimate is the fixed-effect one (``mean_effect_fe``, ``var_eff_w_fe``,
``scale_hksj_fe``), which is what τ² = 0 gives. statsmodels' own HKSJ variance (``var_hksj_re``) is
the unmodified q_HK × variance, which can be narrower than the DL interval when q_HK < 1: the
max(1, q_HK) is applied here.

With a single unit there is nothing to pool: the row says so (``pooled`` is False). No I/O.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from runtime.analysis.effect_size import average_replicates, contrast_rows

POOL_COLUMNS = ("contrast", "family", "pool_over", "group", "k_units", "units", "pooled", "d_re",
                "ci_low", "ci_high", "ci90_low", "ci90_high", "pi_low", "pi_high", "margin", "tau2", "q",
                "q_df", "q_p", "i2", "sesoi", "equivalent", "notes")
#: What stays fixed while pooling over each unit kind.
GROUP_BY = {"condition": ("system",), "job": ("system", "condition"), "system": ("condition",)}
UNIT_COLUMN = {"condition": "condition", "job": "job_id", "system": "system"}
NOTE_ONE_UNIT = "cannot pool: a single {unit} ({name}); declare pool_over to pool over another unit"
NOTE_NO_PI = "no prediction interval: {k} units (t on k - 2 needs at least 3)"


@dataclass(frozen=True)
class RandomEffects:
    """A DerSimonian–Laird random-effects summary with HKSJ intervals (:func:`random_effects`).

    Attributes
    ----------
    k : int
        Units pooled.
    mean : float
        Random-effects mean Σ w_i y_i / Σ w_i, w_i = 1 / (v_i + τ²).
    se_dl : float
        Its DL standard error, (Σ w_i)^(-1/2).
    q_hk : float
        The HKSJ scale Σ w_i (y_i − mean)² / (k − 1).
    se : float
        The modified HKSJ standard error, se_dl · √max(1, q_hk).
    tau2 : float
        DL between-unit variance max(0, (Q − (k − 1)) / c), c = Σ v_i⁻¹ − Σ v_i⁻² / Σ v_i⁻¹; ≥ 0.
    q, q_df, q_p, i2 : float, int, float, float
        Cochran's Q on the fixed-effect weights 1/v_i, its df k − 1, chi-square p-value, and
        I² = max(0, (Q − df) / Q) in [0, 1].
    ci_low, ci_high : float
        mean ± t_{k−1, 1−α/2} · se.
    pi_low, pi_high : float
        mean ± t_{k−2, 1−α/2} · √(τ² + se²): where a new unit's true value is expected to lie (nan when k < 3).
    """

    k: int
    mean: float
    se_dl: float
    q_hk: float
    se: float
    tau2: float
    q: float
    q_df: int
    q_p: float
    i2: float
    ci_low: float
    ci_high: float
    pi_low: float
    pi_high: float

    def interval(self, level: float) -> tuple[float, float]:
        """The HKSJ interval at ``level`` (e.g. 0.90 for a TOST at α = 0.05): t on k − 1 df."""
        from scipy import stats

        t = float(stats.t.ppf(0.5 + level / 2, self.k - 1))
        return self.mean - t * self.se, self.mean + t * self.se

    def shrink(self, value: np.ndarray, variance: np.ndarray) -> np.ndarray:
        """Empirical-Bayes values of the units: mean + B_i (y_i − mean), B_i = τ² / (τ² + v_i) in [0, 1)
        (Raudenbush & Bryk 2002 §3; Morris 1983). τ² = 0 pulls every unit to the mean; a unit with
        v_i → 0 keeps its own value. nan where y_i or v_i is undefined."""
        value, variance = np.asarray(value, dtype=float), np.asarray(variance, dtype=float)
        if self.tau2 == 0:
            b = np.zeros_like(value)
        else:
            b = self.tau2 / (self.tau2 + variance)
        out = self.mean + b * (value - self.mean)
        return np.where(np.isfinite(value) & np.isfinite(variance), out, np.nan)


def random_effects(effect: np.ndarray, variance: np.ndarray, *, alpha: float = 0.05) -> RandomEffects:
    """DerSimonian–Laird pooling with modified Hartung–Knapp–Sidik–Jonkman intervals and a prediction interval.

    Parameters
    ----------
    effect : numpy.ndarray, shape (k,)
        Each unit's estimate (finite), k ≥ 2.
    variance : numpy.ndarray, shape (k,)
        Its sampling variance (finite, > 0).
    alpha : float
        1 − the level of the confidence and prediction intervals.

    Returns
    -------
    RandomEffects
        Sources: DerSimonian & Laird 1986 (τ²); Hartung & Knapp 2001, Sidik & Jonkman 2002 (t on k − 1,
        variance × q_hk), Röver, Knapp & Friede 2015 (max(1, q_hk)); Higgins, Thompson & Spiegelhalter
        2009 (prediction interval, t on k − 2). statsmodels' ``combine_effects(method_re="dl")`` gives
        every sum; the truncations are made here (module docstring).

    Raises
    ------
    ValueError
        Fewer than two units.
    """
    import warnings

    from scipy import stats
    from statsmodels.stats.meta_analysis import combine_effects

    eff, var = np.asarray(effect, dtype=float), np.asarray(variance, dtype=float)
    k = len(eff)
    if k < 2:
        raise ValueError(f"random_effects needs at least 2 units, got {k}")
    with warnings.catch_warnings():  # statsmodels warns on its own negative tau^2 (truncated below)
        warnings.simplefilter("ignore", RuntimeWarning)
        res = combine_effects(eff, var, method_re="dl", use_t=True, alpha=alpha)
    if res.tau2 > 0:
        mean, var_mean, q_hk, tau2 = (float(res.mean_effect_re), float(res.var_eff_w_re),
                                      float(res.scale_hksj_re), float(res.tau2))
    else:  # DL truncates tau^2 at 0: the random-effects summary is the fixed-effect one
        mean, var_mean, q_hk, tau2 = (float(res.mean_effect_fe), float(res.var_eff_w_fe),
                                      float(res.scale_hksj_fe), 0.0)
    se = math.sqrt(var_mean * max(1.0, q_hk))
    t1 = float(stats.t.isf(alpha / 2, k - 1))
    q, df = float(res.q), k - 1
    pi_low = pi_high = math.nan
    if k >= 3:
        half = float(stats.t.isf(alpha / 2, k - 2)) * math.sqrt(tau2 + se**2)
        pi_low, pi_high = mean - half, mean + half
    return RandomEffects(k=k, mean=mean, se_dl=math.sqrt(var_mean), q_hk=q_hk, se=se, tau2=tau2, q=q, q_df=df,
                         q_p=float(stats.chi2.sf(q, df)), i2=max(0.0, (q - df) / q) if q > 0 else 0.0,
                         ci_low=mean - t1 * se, ci_high=mean + t1 * se, pi_low=pi_low, pi_high=pi_high)


def pool_contrasts(paired: pd.DataFrame, *, contrasts: Sequence[dict], axes: Sequence[str], sesoi: float,
                   pool_over: str, score_resolution: Mapping[str, float | None] | None = None,
                   bounds: Mapping[tuple, float] | None = None, standardiser: str = "pooled") -> pd.DataFrame:
    """One DL-pooled row per contrast x fixed group (e.g. per system when pooling conditions).

    Returns
    -------
    pandas.DataFrame
        Columns :data:`POOL_COLUMNS`; ``tau2`` ≥ 0, ``i2`` in [0, 1], ``d_re`` the random-effects d;
        ``ci_low, ci_high`` (95%) and ``ci90_low, ci90_high`` the HKSJ intervals (t on k − 1);
        ``pi_low, pi_high`` the 95% prediction interval of a new unit's d (t on k − 2; empty under 3
        units, with a note); ``margin`` = max(|ci90_low|, |ci90_high|).
    """
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
        re = random_effects(sub["d"].to_numpy(float), sub["var_d"].to_numpy(float), alpha=0.05)
        ci90_low, ci90_high = re.interval(0.90)
        unit_sesoi = float(np.nanmean(sub["sesoi"].to_numpy(float))) if sub["sesoi"].notna().any() else math.nan
        margin = max(abs(ci90_low), abs(ci90_high))
        rows.append({**base, "pooled": True, "d_re": re.mean, "sesoi": unit_sesoi,
                     "equivalent": bool(margin < unit_sesoi), "ci_low": re.ci_low, "ci_high": re.ci_high,
                     "ci90_low": ci90_low, "ci90_high": ci90_high, "pi_low": re.pi_low, "pi_high": re.pi_high,
                     "margin": margin, "tau2": re.tau2, "q": re.q, "q_df": re.q_df, "q_p": re.q_p, "i2": re.i2,
                     "notes": "" if re.k >= 3 else NOTE_NO_PI.format(k=re.k)})
    return pd.DataFrame(rows, columns=list(POOL_COLUMNS))
