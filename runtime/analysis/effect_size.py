"""Standardised effect sizes with equivalence tests (seed 003 §3.7, Table 1).

For every contrast of ``analysis.effect_size`` and every system x condition, **one d**: Cohen's d
with the pooled standard deviation of the two groups of scores, as seed 003 defines it,
d = (mean1 − mean0) / s_p, s_p = sqrt(((n1−1)s1² + (n0−1)s0²) / (n1+n0−2)) (for paired groups of
equal size, s_p = sqrt((s1² + s0²)/2), Cumming's d_av). The joint criterion |d| ≥ SESOI, the
equivalence bounds ±SESOI · s_p and the forest plot all use this d. How the mean difference is
estimated and tested depends on the design:

- **variant contrast** (a variant against the reference variant, paired by base candidate): the
  paired t-test on the differences (on the system's score grid), so the pairing keeps its
  precision; 95% CI of d by Algina & Keselman (2003): the noncentral-t limits of the paired t
  rescaled by sd(diff) / (s_p · sqrt(n)) (the method of ESCI, Cumming 2012). d_z = mean(diff) /
  sd(diff) is reported in its own column and never compared with the SESOI;
- **axis contrast, paired design** (the same base résumés appear at several levels, as in every
  generated audit): OLS of the score on every axis's level indicators with a fixed effect per base
  résumé (job, cv_id), cluster-robust SEs by base résumé and t on G − 1 df (``statsmodels``
  ``cov_type="cluster"``): the contrast is adjusted for the other axes and respects the pairing;
- **axis contrast, independent résumés**: in a full-factorial design, seed 003's marginal Welch
  two-sample test (``scipy.stats.ttest_ind(equal_var=False)``) with the exact noncentral-t CI of d
  (Steiger & Fouladi 1997); otherwise OLS on every axis's indicators with HC3 SEs (adjusted for
  the other axes).

**Equivalence** (seed 003 §3.7): the TOST against ±SESOI · s_p (score units, column
``sesoi_score``), its p-value, the equivalence flag and the achieved margin come from the same
variance model and the same interval: the (1 − 2α) t-interval of the mean difference that the
TOST inverts (Welch: ``statsmodels`` ``CompareMeans.ttost_ind(usevar="unequal")`` and
``tconfint_diff``; paired: ``DescrStatsW.ttost_mean`` and ``tconfint_mean`` on the differences;
models: the coefficient's t), divided by s_p (columns ``ci90_low/ci90_high`` at α = 0.05). The
margin max(|ci90_low|, |ci90_high|) is the tightest bound at which that TOST concludes equivalence,
so "equivalent" holds exactly when margin < SESOI. BH q-values are computed within each family
(``analysis.effect_size.bh_families``: one family across every contrast by default, as seed 003's
Table 1) over every system and condition (``statsmodels`` ``multipletests(method="fdr_bh")``). The
**joint criterion** (practically and statistically meaningful) is |d| ≥ SESOI and q < α.

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
    "test", "n_treatment", "n_reference", "mean_treatment", "mean_reference", "mean_diff", "se_diff",
    "standardiser", "standardiser_kind", "d", "ci_low", "ci_high", "d_z", "statistic", "df", "p_value", "q_value",
    "sesoi", "sesoi_score", "meaningful", "tost_p", "equivalent", "ci90_low", "ci90_high", "margin", "margin_score",
    "var_d", "notes",
)
KEYS = ("system", "condition", "job_id", "cv_id", "variant")
NOTE_ZERO_VAR = "zero variance: d, its interval and the tests are undefined"
NOTE_TOO_FEW = "fewer than 2 observations in a group: d is undefined"
NOTE_NO_LEVEL = "level {level!r} of axis {axis!r} does not occur in the data"
NOTE_NO_VARIANT = "variant {variant!r} does not occur in the data"
NOTE_CONSTANT_DIFF = ("every paired difference equals {diff:.6g}: the paired test, its interval and the "
                      "TOST are undefined (zero variance of the differences)")
NOTE_ZERO_RESID = ("zero residual variance: the scores are an exact function of the base résumé and the "
                   "axis levels, so the test, the interval and the TOST are undefined")
NOTE_NOT_IDENTIFIED = ("not identified: level {level!r} of axis {axis!r} does not vary within base résumés "
                       "independently of the other axis levels (variant table)")
NOTE_SATURATED = ("saturated: the variant table has {profiles} level combinations and the model {params} axis "
                  "parameters, so each adjusted contrast is a combination of variant means that assumes the "
                  "cues add up (no interaction can be checked)")
#: Residual SD below this fraction of the score SD counts as zero (floating-point noise of an exact fit).
ZERO_RESID_REL = 1e-9
#: Test names of the contrast rows (column ``test``).
TESTS = {"welch": "welch_t", "paired": "paired_t", "template_fe": "template_fe_cluster_t", "ols_hc3": "ols_hc3_t"}


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


def _equivalence(est: float, se: float, df: float, sp: float, *, sesoi: float, alpha: float,
                 bound: float | None = None) -> dict[str, float]:
    """TOST p, the (1 − 2α) interval of d and the achieved margin from one t statistic.

    The two one-sided tests of H0: est ≤ −b and H0: est ≥ b, b = SESOI · s_p, on ``df`` degrees of
    freedom; p = the larger one-sided p. The interval est ± t_{1−α, df} · se divided by s_p is the
    one the TOST inverts: p < α exactly when it lies inside (−SESOI, SESOI). ``bound`` (score units,
    issue 30 §1) replaces SESOI · s_p when given.
    """
    from scipy import stats

    bound = sesoi * sp if bound is None else bound
    p_lower = float(stats.t.sf((est + bound) / se, df))
    p_upper = float(stats.t.cdf((est - bound) / se, df))
    half = float(stats.t.ppf(1 - alpha, df)) * se
    lo90, hi90 = (est - half) / sp, (est + half) / sp
    return {"tost_p": max(p_lower, p_upper) if math.isfinite(bound) else math.nan, "ci90_low": lo90, "ci90_high": hi90,
            "margin": max(abs(lo90), abs(hi90))}


def independent_contrast(x1: np.ndarray, x0: np.ndarray, *, sesoi: float, alpha: float = 0.05,
                         bound: float | None = None, standardiser: float | None = None) -> dict[str, object]:
    """Cohen's d (pooled SD) of two independent groups: Welch p, exact 95% CI, Welch TOST and margin.

    Parameters
    ----------
    x1, x0 : numpy.ndarray
        Scores of the treatment and reference groups (any scale; d is scale-free).
    sesoi : float
        Equivalence bound on |d|; the TOST bounds on the score scale are ±sesoi · s_p.
    alpha : float
        TOST level; the margin comes from the (1 − 2α) Welch interval of the mean difference.
    bound : float, optional
        The TOST bound in score units (δ*, issue 30 §1); default SESOI · standardiser.
    standardiser : float, optional
        The SD d is read against (issue 30 §1: within job, or job x match); default s_p. d, its
        intervals, the margin and ``var_d`` are rescaled by s_p / standardiser.

    Returns
    -------
    dict
        Columns of :data:`CONTRAST_COLUMNS`: ``d`` (positive: the treatment scored higher), its
        exact 95% noncentral-t CI (Steiger & Fouladi 1997, equal variances), the Welch t, df and p
        (``scipy.stats.ttest_ind(equal_var=False)``), ``tost_p`` (``statsmodels``
        ``CompareMeans.ttost_ind(usevar="unequal")``), ``ci90_low/ci90_high`` = the Welch
        (1 − 2α) interval of the difference / s_p (``tconfint_diff``), ``margin`` its largest
        |endpoint|, ``var_d`` = (n1+n0)/(n1·n0) + d²/(2(n1+n0)) (Hedges & Olkin 1985).
    """
    from scipy import stats
    from statsmodels.stats.weightstats import CompareMeans, DescrStatsW

    n1, n0 = len(x1), len(x0)
    out: dict[str, object] = {"test": TESTS["welch"], "n_treatment": n1, "n_reference": n0,
                              "mean_treatment": float(np.mean(x1)) if n1 else math.nan,
                              "mean_reference": float(np.mean(x0)) if n0 else math.nan}
    if n1 < 2 or n0 < 2:
        return {**out, "notes": NOTE_TOO_FEW}
    out["mean_diff"] = out["mean_treatment"] - out["mean_reference"]
    v1, v0 = float(np.var(x1, ddof=1)), float(np.var(x0, ddof=1))
    df = n1 + n0 - 2
    sp = math.sqrt(((n1 - 1) * v1 + (n0 - 1) * v0) / df)
    st = sp if standardiser is None else standardiser
    b = sesoi * st if bound is None else bound
    out["standardiser"] = st
    out["sesoi_score"] = b
    if sp == 0 or v1 + v0 == 0 or not st > 0:
        return {**out, "df": df, "notes": NOTE_ZERO_VAR}
    r = sp / st                                    # 1 unless another standardiser is declared
    d = out["mean_diff"] / st
    scale = math.sqrt(1 / n1 + 1 / n0)
    lo, hi = d_interval(d / r / scale, df, scale, 0.95)
    welch = stats.ttest_ind(x1, x0, equal_var=False)
    cm = CompareMeans(DescrStatsW(np.asarray(x1, float)), DescrStatsW(np.asarray(x0, float)))
    tost_p = float(cm.ttost_ind(-b, b, usevar="unequal")[0]) if math.isfinite(b) else math.nan
    c_lo, c_hi = cm.tconfint_diff(alpha=2 * alpha, usevar="unequal")
    lo90, hi90 = float(c_lo) / st, float(c_hi) / st
    return {**out, "se_diff": float(cm.std_meandiff_separatevar), "d": d, "ci_low": lo * r, "ci_high": hi * r,
            "statistic": float(welch.statistic), "df": float(welch.df), "p_value": float(welch.pvalue),
            "tost_p": tost_p, "ci90_low": lo90, "ci90_high": hi90, "margin": max(abs(lo90), abs(hi90)),
            "var_d": ((n1 + n0) / (n1 * n0) + (d / r) ** 2 / (2 * (n1 + n0))) * r * r}


def paired_contrast(x1: np.ndarray, x0: np.ndarray, *, sesoi: float, step: float = 0.0,
                    alpha: float = 0.05, bound: float | None = None,
                    standardiser: float | None = None) -> dict[str, object]:
    """Cohen's d (pooled SD) of paired scores, with the paired test and interval.

    Parameters
    ----------
    x1, x0 : numpy.ndarray
        Variant and reference scores, aligned by base candidate (same length n).
    sesoi : float
        Equivalence bound on |d|; the TOST bounds are ±sesoi · s_p on the score scale.
    step : float
        The scores' grid (0 = continuous): the differences are put on it first
        (:func:`runtime.analysis.stats.on_grid`), so no floating-point noise enters the tests.
    alpha : float
        TOST level; the margin comes from the (1 − 2α) paired t interval.
    bound, standardiser : float, optional
        As :func:`independent_contrast` (issue 30 §1).

    Returns
    -------
    dict
        ``d`` = mean(diff) / s_p with s_p = sqrt((s1² + s0²) / 2) (seed 003's Cohen's d; Cumming's
        d_av); 95% CI by Algina & Keselman (2003): the noncentral-t limits of the paired t
        (n − 1 df) times sd(diff) / (s_p · sqrt(n)); the paired t, df and p
        (``scipy.stats.ttest_1samp`` on the differences); ``tost_p`` and the (1 − 2α) interval
        from ``statsmodels`` ``DescrStatsW(diff).ttost_mean`` / ``tconfint_mean`` against
        ±SESOI · s_p, the interval divided by s_p; ``d_z`` = mean(diff) / sd(diff) (labelled, never
        compared with the SESOI); ``var_d``, the large-sample variance of d_av for pooling
        (Bonett 2008): d²(s1⁴ + s0⁴ + 2r²s1²s0²) / (8(n−1)s_p⁴) + sd(diff)² / ((n−1)s_p²).
    """
    from scipy import stats
    from statsmodels.stats.weightstats import DescrStatsW

    from runtime.analysis.stats import on_grid

    x1, x0 = np.asarray(x1, dtype=float), np.asarray(x0, dtype=float)
    n = len(x1)
    diff = x1 - x0
    if step > 0:
        diff = on_grid(diff, step) * step
    out: dict[str, object] = {"test": TESTS["paired"], "n_treatment": n, "n_reference": n,
                              "mean_treatment": float(np.mean(x1)) if n else math.nan,
                              "mean_reference": float(np.mean(x0)) if n else math.nan}
    if n < 2:
        return {**out, "notes": NOTE_TOO_FEW}
    out["mean_diff"] = float(diff.mean())
    v1, v0 = float(np.var(x1, ddof=1)), float(np.var(x0, ddof=1))
    sp = math.sqrt((v1 + v0) / 2)
    sd = float(diff.std(ddof=1))
    st = sp if standardiser is None else standardiser
    b = sesoi * st if bound is None else bound
    out.update(standardiser=st, sesoi_score=b, se_diff=sd / math.sqrt(n), df=float(n - 1))
    if sp == 0 or not st > 0:
        return {**out, "notes": NOTE_ZERO_VAR}
    d = out["mean_diff"] / st
    out["d"] = d
    if sd == 0:
        return {**out, "notes": NOTE_CONSTANT_DIFF.format(diff=out["mean_diff"])}
    res = stats.ttest_1samp(diff, 0.0)
    lo, hi = d_interval(float(res.statistic), n - 1, sd / (st * math.sqrt(n)), 0.95)
    ds = DescrStatsW(diff)
    tost_p = float(ds.ttost_mean(-b, b)[0]) if math.isfinite(b) else math.nan
    c_lo, c_hi = ds.tconfint_mean(alpha=2 * alpha)
    lo90, hi90 = float(c_lo) / st, float(c_hi) / st
    r = float(np.corrcoef(x1, x0)[0, 1]) if v1 > 0 and v0 > 0 else 0.0
    dp = out["mean_diff"] / sp                     # Bonett's variance of d_av, rescaled to the standardiser
    var_d = (dp * dp * (v1 * v1 + v0 * v0 + 2 * r * r * v1 * v0) / (8 * (n - 1) * sp ** 4)
             + sd * sd / ((n - 1) * sp * sp)) * (sp / st) ** 2
    return {**out, "ci_low": lo, "ci_high": hi, "d_z": out["mean_diff"] / sd,
            "statistic": float(res.statistic), "p_value": float(res.pvalue), "tost_p": tost_p,
            "ci90_low": lo90, "ci90_high": hi90, "margin": max(abs(lo90), abs(hi90)), "var_d": var_d}


def demean_within(values: pd.Series | pd.DataFrame, groups: np.ndarray) -> pd.Series | pd.DataFrame:
    """``values`` minus their mean within each group: the within (fixed-effect) transformation that
    absorbs one intercept per base résumé (also used by :func:`runtime.analysis.models.within_resid_sd`)."""
    return values - values.groupby(groups).transform("mean")


def axis_design(frame: pd.DataFrame, axes: Sequence[str]) -> str:
    """How the axis contrasts of one system x condition are estimated (see the module docstring).

    ``"template_fe"`` when some base résumé (job, cv_id) appears under more than one variant (the
    paired correspondence design); otherwise ``"welch"`` when every combination of the observed
    axis levels occurs (full factorial, seed 003's design), else ``"ols_hc3"``.
    """
    per_template = frame.groupby(["job_id", "cv_id"], sort=False)["variant"].nunique()
    if len(per_template) and int(per_template.max()) > 1:
        return "template_fe"
    present = [a for a in axes if a in frame]
    if not present:
        return "welch"
    combos = frame[present].drop_duplicates()
    full = math.prod(int(frame[a].nunique()) for a in present)
    return "welch" if len(combos) == full else "ols_hc3"


def _indicators(frame: pd.DataFrame, refs: Mapping[str, str]) -> tuple[pd.DataFrame, list[tuple[str, str]]]:
    """0/1 columns ``axis[level]`` of every non-reference level of every axis (treatment coding)."""
    cols, keys = {}, []
    for axis, ref in refs.items():
        for level in sorted(set(frame[axis].dropna()) - {ref}, key=str):
            cols[f"{axis}[{level}]"] = (frame[axis] == level).to_numpy(float)
            keys.append((axis, level))
    return pd.DataFrame(cols, index=frame.index), keys


def axis_model(frame: pd.DataFrame, refs: Mapping[str, str], *, design: str
               ) -> tuple[dict[tuple[str, str], dict[str, float]], str]:
    """Adjusted axis-level coefficients of one system x condition.

    Parameters
    ----------
    frame : pandas.DataFrame
        Averaged rows of one system x condition (:func:`average_replicates`).
    refs : Mapping
        Axis -> its reference level (every axis of the design: the others are adjusted for).
    design : {"template_fe", "ols_hc3"}
        ``template_fe``: within base résumé (the fixed effects absorbed by demeaning), cluster-robust
        SEs by base résumé, t on G − 1 df; ``ols_hc3``: OLS with a constant and HC3 SEs, t on
        n − k df.

    Returns
    -------
    (coefs, note)
        ``coefs[(axis, level)] = {"coef", "se", "df"}`` for every identified level (``se`` nan when
        the residual variance is zero); levels that are not identified are absent. ``note`` is
        empty or :data:`NOTE_ZERO_RESID`.
    """
    import statsmodels.api as sm

    y = frame["score"].astype(float)
    X, keys = _indicators(frame, refs)
    template = pd.factorize(frame["job_id"].astype(str) + "\x1f" + frame["cv_id"].astype(str))[0]
    if design == "template_fe":
        y, X = demean_within(y, template), demean_within(X, template)
    else:
        X.insert(0, "const", 1.0)
    # keep the columns that add to the rank, in order (a column with no within-template variation,
    # or collinear with the levels before it, is not identified)
    kept: list[str] = []
    for col in X.columns:
        trial = X[kept + [col]].to_numpy()
        if np.linalg.matrix_rank(trial, tol=1e-9 * max(1.0, float(np.abs(trial).max()))) == len(kept) + 1:
            kept.append(col)
    if not [c for c in kept if c != "const"]:
        return {}, ""
    model = sm.OLS(y.to_numpy(), X[kept].to_numpy())
    if design == "template_fe":
        res = model.fit(cov_type="cluster", cov_kwds={"groups": template}, use_t=True)
        df = float(res.df_resid_inference)
    else:
        res = model.fit(cov_type="HC3", use_t=True)
        df = float(res.df_resid)
    scale = float(frame["score"].astype(float).std(ddof=1)) if len(frame) > 1 else 0.0
    resid_sd = float(np.sqrt(np.mean(np.asarray(res.resid) ** 2)))
    degenerate = resid_sd <= ZERO_RESID_REL * scale or scale == 0
    out = {}
    for i, col in enumerate(kept):
        if col == "const":
            continue
        axis, level = col.split("[", 1)
        out[(axis, level[:-1])] = {"coef": float(res.params[i]),
                                   "se": math.nan if degenerate else float(res.bse[i]), "df": df}
    profiles = len(frame[list(refs)].drop_duplicates()) if refs else 0
    n_params = len([c for c in kept if c != "const"])
    notes = [NOTE_ZERO_RESID] if degenerate else []
    if n_params and profiles == n_params + 1:
        notes.append(NOTE_SATURATED.format(profiles=profiles, params=n_params))
    return out, "; ".join(notes)


def model_contrast(x1: np.ndarray, x0: np.ndarray, fit: Mapping[str, float] | None, *, design: str,
                   sesoi: float, alpha: float, note: str = "", axis: str = "", level: str = "",
                   bound: float | None = None, standardiser: float | None = None) -> dict[str, object]:
    """An axis contrast from an adjusted coefficient (:func:`axis_model`).

    d = coef / s_p with s_p the pooled SD of the level's and the reference level's scores (seed 003's
    standardiser); t = coef / se on the model's df, two-sided p; 95% CI (coef ± t_{0.975} · se) / s_p;
    TOST, (1 − 2α) interval and margin by :func:`_equivalence` from the same coefficient and SE;
    ``var_d`` = (se / s_p)² + d² / (2(n1 + n0)). ``bound`` and ``standardiser`` as
    :func:`independent_contrast` (issue 30 §1).
    """
    from scipy import stats

    n1, n0 = len(x1), len(x0)
    out: dict[str, object] = {"test": TESTS[design], "n_treatment": n1, "n_reference": n0,
                              "mean_treatment": float(np.mean(x1)) if n1 else math.nan,
                              "mean_reference": float(np.mean(x0)) if n0 else math.nan}
    if n1 < 2 or n0 < 2:
        return {**out, "notes": NOTE_TOO_FEW}
    sp0 = math.sqrt(((n1 - 1) * float(np.var(x1, ddof=1)) + (n0 - 1) * float(np.var(x0, ddof=1))) / (n1 + n0 - 2))
    sp = sp0 if standardiser is None else standardiser
    b = sesoi * sp if bound is None else bound
    out.update(standardiser=sp, sesoi_score=b)
    if fit is None:
        return {**out, "notes": NOTE_NOT_IDENTIFIED.format(level=level, axis=axis)}
    out.update(mean_diff=fit["coef"], df=fit["df"])
    if sp0 == 0 or not sp > 0:
        return {**out, "notes": NOTE_ZERO_VAR}
    d = fit["coef"] / sp
    out["d"] = d
    se = fit["se"]
    if not (math.isfinite(se) and se > 0):
        return {**out, "notes": note if NOTE_ZERO_RESID in note else "; ".join(x for x in (NOTE_ZERO_RESID, note) if x)}
    t = fit["coef"] / se
    half = float(stats.t.ppf(0.975, fit["df"])) * se
    return {**out, "notes": note, "se_diff": se, "ci_low": (fit["coef"] - half) / sp, "ci_high": (fit["coef"] + half) / sp,
            "statistic": t, "p_value": float(2 * stats.t.sf(abs(t), fit["df"])),
            **_equivalence(fit["coef"], se, fit["df"], sp, sesoi=sesoi, alpha=alpha, bound=b),
            "var_d": (se / sp) ** 2 + d * d / (2 * (n1 + n0))}


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


def axis_references(frame: pd.DataFrame, contrasts: Sequence[Mapping[str, str]], axes: Sequence[str]) -> dict[str, str]:
    """Reference level of every axis column of ``frame``: the contrasts' reference, else the first
    level in sorted order (an axis without contrasts is only adjusted for)."""
    refs = {c["axis"]: c["reference"] for c in contrasts if c["kind"] == "axis"}
    return {a: refs.get(a, min(map(str, frame[a].dropna().unique()), default=""))
            for a in axes if a in frame and frame[a].notna().any()}


#: Note of a contrast whose SESOI shift is undefined (issue 30 §1; the reason is in ``sesoi.csv``).
NOTE_NO_SHIFT = "the SESOI's score shift is undefined here (sesoi.csv says why): no TOST"


def _bound_of(bounds: Mapping[tuple, float] | None, ids: Mapping[str, object]) -> float | None:
    """δ* of a group: its job's when the group is one job and the job has one, else its system x
    condition's; None without ``bounds`` (the SESOI is a d)."""
    if bounds is None:
        return None
    sc = (ids.get("system"), ids.get("condition"))
    if "job_id" in ids and (*sc, ids["job_id"]) in bounds:
        return float(bounds[(*sc, ids["job_id"])])
    return float(bounds.get(sc, math.nan))


def contrast_rows(frame: pd.DataFrame, contrasts: Sequence[Mapping[str, str]], *, sesoi: float,
                  by: Sequence[str], axes: Sequence[str] = (), alpha: float = 0.05,
                  score_resolution: Mapping[str, float | None] | None = None,
                  bounds: Mapping[tuple, float] | None = None, standardiser: str = "pooled"
                  ) -> list[dict[str, object]]:
    """Unadjusted-for-multiplicity contrast rows per group of ``by`` (no BH).

    ``frame`` from :func:`average_replicates`. Variant contrasts: :func:`paired_contrast` on each
    system's score grid (:func:`score_grids`). Axis contrasts: as :func:`axis_design` decides for
    the group, :func:`independent_contrast` (Welch) or :func:`model_contrast` on one
    :func:`axis_model` fit per group over ``axes`` (every axis adjusted for the others).

    Issue 30 §1: ``bounds`` (``(system, condition)`` or ``(system, condition, job_id)`` -> δ*, score
    units; :func:`runtime.analysis.sesoi.shifts_of`) puts the TOST at ±δ* (a per-job group at its
    job's δ*) instead of ±SESOI · s_p; ``standardiser`` (``pooled``, ``within_job``,
    ``within_job_match``) is the SD d is read against: the two groups' scores within group x job
    (x match stratum), pooled (:func:`runtime.analysis.sesoi.within_sd`); ``pooled`` is s_p.
    Column ``sesoi`` is then δ* / standardiser (so ``equivalent`` still holds exactly when
    margin < sesoi), ``margin_score`` = margin · standardiser.
    """
    from runtime.analysis.sesoi import strata_of, within_sd

    grids = score_grids(frame, score_resolution)
    rows = []
    for key, sub in frame.groupby(list(by), sort=True):
        key = key if isinstance(key, tuple) else (key,)
        ids = dict(zip(by, key))
        bound = _bound_of(bounds, ids)
        design = axis_design(sub, axes) if any(c["kind"] == "axis" for c in contrasts) else ""
        fits: tuple[dict, str] | None = None
        for c in contrasts:
            base = {**ids, "family": c["family"], "contrast": contrast_label(c), "kind": c["kind"],
                    "axis": c.get("axis", ""), "level": c.get("level", ""),
                    "variant": c.get("variant", ""), "reference": c["reference"], "sesoi": sesoi,
                    "standardiser_kind": standardiser}
            if c["kind"] == "axis":
                col = sub[c["axis"]] if c["axis"] in sub else pd.Series(dtype=object)
                both = sub[col.isin([c["level"], c["reference"]])]
                sd = (None if standardiser == "pooled" else
                      within_sd(both["score"].to_numpy(float), strata_of(both, standardiser, both[c["axis"]])))
                x1 = sub.loc[col == c["level"], "score"].to_numpy(float)
                x0 = sub.loc[col == c["reference"], "score"].to_numpy(float)
                if design == "welch":
                    res = independent_contrast(x1, x0, sesoi=sesoi, alpha=alpha, bound=bound, standardiser=sd)
                else:
                    if fits is None:
                        fits = axis_model(sub, axis_references(sub, contrasts, axes), design=design)
                    res = model_contrast(x1, x0, fits[0].get((c["axis"], c["level"])), design=design,
                                         sesoi=sesoi, alpha=alpha, note=fits[1], axis=c["axis"],
                                         level=c["level"], bound=bound, standardiser=sd)
                if len(x1) == 0:
                    res["notes"] = NOTE_NO_LEVEL.format(level=c["level"], axis=c["axis"])
            else:
                pair = sub[sub["variant"].isin([c["variant"], c["reference"]])]
                wide = pair.pivot_table(index=["job_id", "cv_id"], columns="variant", values="score", aggfunc="mean")
                if c["variant"] not in wide or c["reference"] not in wide:
                    res = {"test": TESTS["paired"], "n_treatment": 0,
                           "notes": NOTE_NO_VARIANT.format(variant=c["variant"])}
                else:
                    wide = wide.dropna()
                    sd = (None if standardiser == "pooled" else
                          within_sd(pair["score"].to_numpy(float), strata_of(pair, standardiser, pair["variant"])))
                    res = paired_contrast(wide[c["variant"]].to_numpy(float),
                                          wide[c["reference"]].to_numpy(float), sesoi=sesoi,
                                          step=grids.get(str(ids.get("system")), 0.0), alpha=alpha,
                                          bound=bound, standardiser=sd)
            row = _empty_row(**base, **res)
            st = float(row["standardiser"])
            if bound is not None:
                row["sesoi"] = bound / st if st > 0 else math.nan
                if not math.isfinite(bound):
                    row["notes"] = "; ".join(x for x in (row["notes"], NOTE_NO_SHIFT) if x)
            row["margin_score"] = float(row["margin"]) * st
            rows.append(row)
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
        # |d| >= sesoi: the row's own SESOI in d (δ* / standardiser when the SESOI is not a d), i.e.
        # |mean difference| >= δ* (issue 30 §1)
        out["meaningful"] = (np.abs(d) >= out["sesoi"].to_numpy(float)) & (q < alpha)
        out["equivalent"] = out["tost_p"].to_numpy(float) < alpha
    return out


def effect_sizes(paired: pd.DataFrame, *, contrasts: Sequence[Mapping[str, str]], axes: Sequence[str],
                 sesoi: float, alpha: float, score_resolution: Mapping[str, float | None] | None = None,
                 bounds: Mapping[tuple, float] | None = None, standardiser: str = "pooled") -> pd.DataFrame:
    """Every contrast per system x condition, with BH within family (seed 003 §3.7, Table 1).

    See the module docstring for the estimator of each kind of contrast.

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
    bounds, standardiser : optional
        The SESOI as a score shift per system x condition and the SD d is read against (issue 30 §1;
        :func:`contrast_rows`): ``sesoi_score`` is then δ*, ``sesoi`` δ* / standardiser.

    Returns
    -------
    pandas.DataFrame
        Columns :data:`CONTRAST_COLUMNS`: one row per system x condition x contrast. ``d`` is
        Cohen's d (pooled SD), signed (positive: the treatment scored higher), the value the SESOI
        applies to; ``sesoi_score`` is the SESOI on the score scale (SESOI · s_p); ``d_z`` is filled
        for paired variant contrasts only; ``margin`` is the achieved equivalence margin
        (``equivalent`` exactly when margin < SESOI); ``var_d`` is the large-sample variance of d
        used for pooling (:mod:`runtime.analysis.pooling`).
    """
    frame = average_replicates(paired, axes)
    return finish(contrast_rows(frame, contrasts, sesoi=sesoi, by=("system", "condition"), axes=axes,
                                alpha=alpha, score_resolution=score_resolution, bounds=bounds,
                                standardiser=standardiser), alpha=alpha, sesoi=sesoi)


#: Flag of a per-job contrast whose own |d| reaches the SESOI (:func:`effect_sizes_by_job`).
FLAG_JOB_SESOI = "|d| >= SESOI in this job"


def effect_sizes_by_job(paired: pd.DataFrame, *, contrasts: Sequence[Mapping[str, str]], axes: Sequence[str],
                        sesoi: float, alpha: float, pooled: pd.DataFrame,
                        score_resolution: Mapping[str, float | None] | None = None,
                        bounds: Mapping[tuple, float] | None = None, standardiser: str = "pooled") -> pd.DataFrame:
    """Every contrast per system x condition x job: does a job hide an effect the pooled one does not show?

    Each job's d, interval, TOST and margin are computed as in :func:`effect_sizes`, on that job's
    candidates alone; they describe, they are not adjusted for multiplicity (``q_value`` empty). With
    ``bounds`` (issue 30 §1) each job's TOST is at its own job's δ* (``sesoi.csv``'s per-job row).
    Columns :data:`CONTRAST_COLUMNS` plus ``job_id``, ``pooled_d``, ``pooled_equivalent`` and
    ``flag`` (:data:`FLAG_JOB_SESOI` when the job's |d| reaches the SESOI, else empty). A pooled
    "equivalent" with flagged jobs is equivalence on average only.
    """
    frame = average_replicates(paired, axes)
    rows = contrast_rows(frame, contrasts, sesoi=sesoi, by=("system", "condition", "job_id"), axes=axes,
                         alpha=alpha, score_resolution=score_resolution, bounds=bounds, standardiser=standardiser)
    out = pd.DataFrame(rows, columns=[*CONTRAST_COLUMNS, "job_id"])
    if out.empty:
        return out
    keys = ["system", "condition", "contrast"]
    ref = pooled[keys + ["d", "equivalent"]].rename(columns={"d": "pooled_d", "equivalent": "pooled_equivalent"})
    out = out.merge(ref, on=keys, how="left")
    d = out["d"].to_numpy(float)
    with np.errstate(invalid="ignore"):
        out["meaningful"] = False
        out["equivalent"] = out["tost_p"].to_numpy(float) < alpha
        out["flag"] = np.where(np.abs(d) >= out["sesoi"].to_numpy(float), FLAG_JOB_SESOI, "")
    cols = ["system", "condition", "job_id", *[c for c in CONTRAST_COLUMNS if c not in ("system", "condition")],
            "pooled_d", "pooled_equivalent", "flag"]
    return out[cols]
