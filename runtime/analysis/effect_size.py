"""Standardised effect sizes with equivalence tests (seed 003 §3.7, Table 1).

For every contrast of ``analysis.effect_size`` and every system x condition:

- **axis contrast** (an axis level against that axis's reference level, pooled over the other axes):
  Cohen's d with the pooled standard deviation, d = (mean1 − mean0) / s_p,
  s_p = sqrt(((n1−1)s1² + (n0−1)s0²) / (n1+n0−2)); the Welch two-sample t-test p-value
  (``scipy.stats.ttest_ind(equal_var=False)``); TOST with ``statsmodels`` ``ttost_ind`` (unequal
  variances) against ±SESOI · s_p on the score scale;
- **variant contrast** (a variant against the reference variant, paired by base candidate):
  d_z = mean(diff) / sd(diff) with diff = score(variant) − score(reference) per base candidate; the
  paired t-test p-value (``scipy.stats.ttest_rel``); TOST with ``ttost_paired`` against
  ±SESOI · sd(diff).

Confidence intervals of d are exact: the noncentral-t inversion of Steiger & Fouladi (1997). The
Student t statistic of d (two-sample: t = d / sqrt(1/n1 + 1/n0), df = n1+n0−2; paired:
t = d_z·sqrt(n), df = n−1) follows a noncentral t; the limits of the noncentrality parameter solve
``scipy.stats.nct.cdf(t, df, nc) = 1 − γ/2`` and ``= γ/2`` (``scipy.optimize.brentq``) and are
rescaled to d. The 95% CI is reported; the 90% CI gives the **achieved equivalence margin**,
max(|low|, |high|), the tightest bound at which TOST would still conclude equivalence (seed 003
Table 1). BH q-values are computed within each family over every system and condition
(``statsmodels`` ``multipletests(method="fdr_bh")``). The **joint criterion** (practically and
statistically meaningful) is |d| ≥ SESOI and q < α.

Replicates are averaged per (system, condition, job, base candidate, variant) first, so each resume
counts once. No I/O: frames in, frames out.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from runtime.analysis.classify import bh_adjust

#: Columns of the contrast frame, in order.
CONTRAST_COLUMNS = (
    "system", "condition", "family", "contrast", "kind", "axis", "level", "variant", "reference",
    "test", "n_treatment", "n_reference", "mean_treatment", "mean_reference", "mean_diff",
    "standardiser", "d", "ci_low", "ci_high", "statistic", "df", "p_value", "q_value", "sesoi",
    "meaningful", "tost_p", "equivalent", "ci90_low", "ci90_high", "margin", "var_d", "notes",
)
KEYS = ("system", "condition", "job_id", "cv_id", "variant")
NOTE_ZERO_VAR = "zero variance: d, its interval and the tests are undefined"
NOTE_TOO_FEW = "fewer than 2 observations in a group: d is undefined"
NOTE_NO_LEVEL = "level {level!r} of axis {axis!r} does not occur in the data"
NOTE_NO_VARIANT = "variant {variant!r} does not occur in the data"


def average_replicates(paired: pd.DataFrame, axes: Sequence[str]) -> pd.DataFrame:
    """Mean score per (system, condition, job, base candidate, variant), axis columns and the
    match label kept; ``is_true_match`` may be missing (nan)."""
    extra = [c for c in (*axes, "is_true_match", "seniority") if c in paired.columns]
    frame = paired[list(KEYS) + extra + ["score"]].copy()
    frame["is_true_match"] = frame["is_true_match"].astype(float) if "is_true_match" in frame else np.nan
    out = frame.groupby(list(KEYS), sort=True, dropna=False).agg(
        {**{c: "first" for c in extra}, "score": "mean"}).reset_index()
    return out


def _nc_limit(t: float, df: float, target: float) -> float:
    """Noncentrality nc with ``nct.cdf(t, df, nc) = target`` (cdf decreases in nc)."""
    from scipy.optimize import brentq
    from scipy.stats import nct

    def f(nc: float) -> float:
        v = float(nct.cdf(t, df, nc))
        if math.isnan(v):  # scipy's nct.cdf is nan far in a tail, where it is ~1 (nc << t) or ~0
            v = 1.0 if nc < t else 0.0
        return v - target

    width = 4.0 * math.sqrt(1.0 + t * t / (2.0 * df))
    lo, hi = t - width, t + width
    for _ in range(60):
        if f(lo) > 0 > f(hi):
            return float(brentq(f, lo, hi, xtol=1e-12, rtol=1e-12, maxiter=500))
        lo, hi = lo - width, hi + width
        width *= 2
    raise ArithmeticError(f"noncentral-t interval not bracketed for t={t}, df={df}")


def d_interval(t: float, df: float, scale: float, level: float) -> tuple[float, float]:
    """Exact CI of a standardised mean difference from its Student t statistic.

    Parameters
    ----------
    t : float
        Observed Student t (two-sample pooled-variance or one-sample/paired).
    df : float
        Degrees of freedom.
    scale : float
        d = t · scale (two-sample: sqrt(1/n1 + 1/n0); paired: 1/sqrt(n)).
    level : float
        Coverage, e.g. 0.95 or 0.90.

    Returns
    -------
    (low, high) : tuple of float
        The noncentral-t limits (Steiger & Fouladi 1997) times ``scale``; nan when t is not finite.
    """
    if not (math.isfinite(t) and df > 0):
        return math.nan, math.nan
    g = (1.0 - level) / 2.0
    return _nc_limit(t, df, 1.0 - g) * scale, _nc_limit(t, df, g) * scale


def _empty_row(**kw: object) -> dict[str, object]:
    row: dict[str, object] = {c: math.nan for c in CONTRAST_COLUMNS}
    row.update({"notes": "", "meaningful": False, "equivalent": False})
    row.update(kw)
    return row


def independent_contrast(x1: np.ndarray, x0: np.ndarray, *, sesoi: float) -> dict[str, object]:
    """Cohen's d (pooled SD), exact 95%/90% CIs, Welch p, TOST (``ttost_ind``, unequal variances).

    Parameters
    ----------
    x1, x0 : numpy.ndarray
        Scores of the treatment and reference groups (any scale; d is scale-free).
    sesoi : float
        Equivalence bound on |d|; the TOST bounds on the score scale are ±sesoi · s_p.
    """
    from scipy import stats
    from statsmodels.stats.weightstats import ttost_ind

    n1, n0 = len(x1), len(x0)
    out: dict[str, object] = {"test": "welch_t", "n_treatment": n1, "n_reference": n0,
                              "mean_treatment": float(np.mean(x1)) if n1 else math.nan,
                              "mean_reference": float(np.mean(x0)) if n0 else math.nan}
    if n1 < 2 or n0 < 2:
        return {**out, "notes": NOTE_TOO_FEW}
    out["mean_diff"] = out["mean_treatment"] - out["mean_reference"]
    v1, v0 = float(np.var(x1, ddof=1)), float(np.var(x0, ddof=1))
    df = n1 + n0 - 2
    sp = math.sqrt(((n1 - 1) * v1 + (n0 - 1) * v0) / df)
    out["standardiser"] = sp
    if sp == 0 or v1 + v0 == 0:
        return {**out, "df": df, "notes": NOTE_ZERO_VAR}
    d = out["mean_diff"] / sp
    scale = math.sqrt(1 / n1 + 1 / n0)
    t_student = d / scale
    welch = stats.ttest_ind(x1, x0, equal_var=False)
    lo, hi = d_interval(t_student, df, scale, 0.95)
    lo90, hi90 = d_interval(t_student, df, scale, 0.90)
    tost_p = float(ttost_ind(x1, x0, -sesoi * sp, sesoi * sp, usevar="unequal")[0])
    return {**out, "d": d, "ci_low": lo, "ci_high": hi, "statistic": float(welch.statistic),
            "df": float(welch.df), "p_value": float(welch.pvalue), "tost_p": tost_p,
            "ci90_low": lo90, "ci90_high": hi90, "margin": max(abs(lo90), abs(hi90)),
            "var_d": (n1 + n0) / (n1 * n0) + d * d / (2 * (n1 + n0))}


def paired_contrast(x1: np.ndarray, x0: np.ndarray, *, sesoi: float, step: float = 0.0) -> dict[str, object]:
    """d_z of paired scores, exact 95%/90% CIs, paired t p, TOST (``ttost_paired``).

    Parameters
    ----------
    x1, x0 : numpy.ndarray
        Variant and reference scores, aligned by base candidate (same length).
    sesoi : float
        Equivalence bound on |d_z|; the TOST bounds are ±sesoi · sd(x1 − x0).
    step : float
        The scores' grid (0 = continuous): the differences are put on it first
        (:func:`runtime.analysis.stats.on_grid`), so no floating-point noise enters the tests.
    """
    from scipy import stats
    from statsmodels.stats.weightstats import ttost_paired

    from runtime.analysis.stats import on_grid

    n = len(x1)
    diff = np.asarray(x1, dtype=float) - np.asarray(x0, dtype=float)
    if step > 0:
        diff = on_grid(diff, step) * step
    out: dict[str, object] = {"test": "paired_t", "n_treatment": n, "n_reference": n,
                              "mean_treatment": float(np.mean(x1)) if n else math.nan,
                              "mean_reference": float(np.mean(x0)) if n else math.nan}
    if n < 2:
        return {**out, "notes": NOTE_TOO_FEW}
    out["mean_diff"] = float(diff.mean())
    sd = float(diff.std(ddof=1))
    out["standardiser"] = sd
    if sd == 0:
        return {**out, "df": n - 1, "notes": NOTE_ZERO_VAR}
    d = out["mean_diff"] / sd
    scale = 1 / math.sqrt(n)
    if step > 0:  # the same tests on the differences on the grid
        res = stats.ttest_1samp(diff, 0.0)
        tost_p = float(ttost_paired(diff, np.zeros_like(diff), -sesoi * sd, sesoi * sd)[0])
    else:
        res = stats.ttest_rel(x1, x0)
        tost_p = float(ttost_paired(np.asarray(x1, float), np.asarray(x0, float), -sesoi * sd, sesoi * sd)[0])
    lo, hi = d_interval(float(res.statistic), n - 1, scale, 0.95)
    lo90, hi90 = d_interval(float(res.statistic), n - 1, scale, 0.90)
    return {**out, "d": d, "ci_low": lo, "ci_high": hi, "statistic": float(res.statistic),
            "df": float(n - 1), "p_value": float(res.pvalue), "tost_p": tost_p,
            "ci90_low": lo90, "ci90_high": hi90, "margin": max(abs(lo90), abs(hi90)),
            "var_d": 1 / n + d * d / (2 * n)}


def contrast_label(c: Mapping[str, str]) -> str:
    """``sex_gender: Female-FR vs Male-FR`` or ``V03 vs BASE``."""
    if c["kind"] == "axis":
        return f"{c['axis']}: {c['level']} vs {c['reference']}"
    return f"{c['variant']} vs {c['reference']}"


def score_grids(frame: pd.DataFrame, score_resolution: Mapping[str, float | None] | None) -> dict[str, float]:
    """System id -> the grid of its scores: declared, else inferred (:func:`runtime.analysis.stats.infer_resolution`)."""
    from runtime.analysis.stats import score_grid

    declared = score_resolution or {}
    return {str(s): score_grid(declared.get(s), sub["score"].to_numpy(float))
            for s, sub in frame.groupby("system", sort=True)}


def contrast_rows(frame: pd.DataFrame, contrasts: Sequence[Mapping[str, str]], *, sesoi: float,
                  by: Sequence[str], score_resolution: Mapping[str, float | None] | None = None) -> list[dict[str, object]]:
    """Unadjusted contrast rows per group of ``by`` (no BH); ``frame`` from :func:`average_replicates`.
    Paired contrasts run on the differences put on each system's score grid (:func:`score_grids`)."""
    grids = score_grids(frame, score_resolution)
    rows = []
    for key, sub in frame.groupby(list(by), sort=True):
        key = key if isinstance(key, tuple) else (key,)
        ids = dict(zip(by, key))
        for c in contrasts:
            base = {**ids, "family": c["family"], "contrast": contrast_label(c), "kind": c["kind"],
                    "axis": c.get("axis", ""), "level": c.get("level", ""),
                    "variant": c.get("variant", ""), "reference": c["reference"], "sesoi": sesoi}
            if c["kind"] == "axis":
                col = sub[c["axis"]] if c["axis"] in sub else pd.Series(dtype=object)
                x1 = sub.loc[col == c["level"], "score"].to_numpy(float)
                x0 = sub.loc[col == c["reference"], "score"].to_numpy(float)
                res = independent_contrast(x1, x0, sesoi=sesoi)
                if len(x1) == 0:
                    res["notes"] = NOTE_NO_LEVEL.format(level=c["level"], axis=c["axis"])
            else:
                wide = sub[sub["variant"].isin([c["variant"], c["reference"]])].pivot_table(
                    index=["job_id", "cv_id"], columns="variant", values="score", aggfunc="mean")
                if c["variant"] not in wide or c["reference"] not in wide:
                    res = {"test": "paired_t", "n_treatment": 0,
                           "notes": NOTE_NO_VARIANT.format(variant=c["variant"])}
                else:
                    wide = wide.dropna()
                    res = paired_contrast(wide[c["variant"]].to_numpy(float),
                                          wide[c["reference"]].to_numpy(float), sesoi=sesoi,
                                          step=grids.get(str(ids.get("system")), 0.0))
            rows.append(_empty_row(**base, **res))
    return rows


def finish(rows: list[dict[str, object]], *, alpha: float, sesoi: float) -> pd.DataFrame:
    """BH q within each family; the joint criterion and the TOST decision."""
    out = pd.DataFrame(rows, columns=list(CONTRAST_COLUMNS))
    if out.empty:
        return out
    out["q_value"] = np.nan
    for _, idx in out.groupby("family", sort=False).groups.items():
        out.loc[idx, "q_value"] = bh_adjust(out.loc[idx, "p_value"].to_numpy(float), alpha=alpha)
    d = out["d"].to_numpy(float)
    q = out["q_value"].to_numpy(float)
    with np.errstate(invalid="ignore"):
        out["meaningful"] = (np.abs(d) >= sesoi) & (q < alpha)
        out["equivalent"] = out["tost_p"].to_numpy(float) < alpha
    return out


def effect_sizes(paired: pd.DataFrame, *, contrasts: Sequence[Mapping[str, str]], axes: Sequence[str],
                 sesoi: float, alpha: float, score_resolution: Mapping[str, float | None] | None = None) -> pd.DataFrame:
    """Every contrast per system x condition, with BH within family (seed 003 §3.7, Table 1).

    Parameters
    ----------
    paired : pandas.DataFrame
        The paired frame (``system, condition, replicate, job_id, cv_id, variant, score, ...`` and
        one column per axis).
    contrasts : sequence of mapping
        ``compiler.resolve.effect_contrasts`` entries.
    axes : sequence of str
        Axis names (columns of ``paired``).
    sesoi, alpha : float
        Smallest effect size of interest (|d|) and the BH / TOST level.
    score_resolution : Mapping, optional
        Declared score grid per system (else inferred); paired tests run on the grid.

    Returns
    -------
    pandas.DataFrame
        Columns :data:`CONTRAST_COLUMNS`: one row per system x condition x contrast. ``d`` is
        signed (positive: the treatment scored higher); ``margin`` is the achieved equivalence
        margin; ``var_d`` is the large-sample variance of d (Hedges & Olkin 1985) used for pooling.
    """
    frame = average_replicates(paired, axes)
    return finish(contrast_rows(frame, contrasts, sesoi=sesoi, by=("system", "condition"),
                                score_resolution=score_resolution), alpha=alpha, sesoi=sesoi)
