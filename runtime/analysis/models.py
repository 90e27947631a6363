"""Regression specifications of the demographic effects (seed 003 §3.7, §4.2).

All models regress the score on axis indicators (one 0/1 column per non-reference level of every
axis, treatment coding against the axis's reference level) plus the declared controls (``job``,
``seniority``, ``system``, ``condition``; each a set of indicators, the first level dropped, left out
when it has a single level or no column):

- ``ols``: ordinary least squares with classical standard errors (``statsmodels`` ``OLS``);
- ``ols_cluster_candidate``: the same fit with cluster-robust SEs by résumé instance (one base
  candidate under one variant: job, cv_id, variant), which absorbs repeated evaluation of one
  résumé across systems, conditions and replicates;
- ``ols_cluster_template``: cluster-robust SEs by base template (job, cv_id), the identity-neutral
  base candidate every variant is built on;
- ``mixedlm``: linear mixed model with a random intercept per base template (``statsmodels``
  ``MixedLM``, REML), the primary specification; ICC = σ²_template / (σ²_template + σ²_residual);
- ``wild_bootstrap``: when there are fewer than :data:`WILD_CLUSTER_MAX` templates, the wild
  cluster bootstrap p-value of each axis coefficient (``wildboottest``, Rademacher weights drawn per
  template, null imposed, WCR11), small-sample inference that stays valid with few clusters.

Each coefficient is also reported as d = coef / SD(score) (SD over the whole fitted frame, as in
seed 003 §4.2). Replicates are averaged first. No I/O.

Guards (issue 13): a coefficient that the design does not identify (its indicator is collinear with
the others) gets no estimate; when the residual SD within base résumés is zero (at most
:data:`ZERO_RESID_REL` of the score SD: the scores are an exact function of the base résumé and the
regressors, e.g. every variant scoring as its base candidate, or constant) no model row carries a
standard error, interval or p-value, and the note says why; nor does any row whose standard error is
zero. The mixed model's template variance is
at its boundary when the REML score for it at zero is not positive,
``r'ZZ'r / σ̂² ≤ tr(M ZZ')`` with r the OLS residuals, σ̂² = RSS / (n − p), Z the template
indicators and M the OLS residual projection (the derivative of the REML log-likelihood in the
template variance at 0; Verbeke & Molenberghs 2000 §6.3): then the REML solution is the OLS fit,
so the row reports ICC = 0, ``var_template`` = 0, the OLS coefficients and SEs (z tests, as
MixedLM's) and ``boundary`` True, whatever value the optimiser stopped at. Convergence warnings of
MixedLM are caught and shown in ``notes``.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence

import numpy as np
import pandas as pd

from runtime.analysis.effect_size import ZERO_RESID_REL, average_replicates, demean_within

#: Wild cluster bootstrap when the number of templates is below this (seed 003 §3.7).
WILD_CLUSTER_MAX = 30
MODEL_COLUMNS = ("model", "term", "axis", "level", "reference", "coef", "se", "ci_low", "ci_high",
                 "statistic", "p_value", "d", "n_obs", "n_clusters", "icc", "var_template",
                 "var_residual", "boundary", "notes")
NOTE_ZERO_RESID = ("zero residual variance within base résumés (the scores are an exact function of the "
                   "base résumé and the regressors, or constant): no standard error, interval or p-value")
NOTE_ZERO_SE = "zero standard error: no interval or p-value"
NOTE_NOT_ESTIMABLE = "not estimable: {term} is collinear with the other regressors"
NOTE_BOUNDARY = ("template variance at its boundary (REML score at 0 is {score:.3g} ≤ 0): ICC 0; the "
                 "coefficients are the OLS fit's")
NOTE_NOT_CONVERGED = "MixedLM did not converge: {msg}"
NOTE_MIXED_WARNINGS = "MixedLM warned: {msg}"
CONTROL_COLUMNS = {"job": "job_id", "seniority": "seniority", "system": "system", "condition": "condition"}
NOTE_NO_CONTROL = "control {control!r} left out: {why}"
NOTE_WILD_SKIPPED = "wild cluster bootstrap not run: {n} templates (run below {cap})"
NOTE_FIT_FAILED = "{model} could not be fitted: {err}"


def design(frame: pd.DataFrame, *, axes: dict[str, str], controls: Sequence[str]
           ) -> tuple[pd.DataFrame, list[tuple[str, str, str]], list[str]]:
    """Design matrix (const, axis indicators, control indicators).

    Parameters
    ----------
    frame : pandas.DataFrame
        Averaged frame with ``score``, axis columns and the control columns.
    axes : dict
        Axis name -> reference level.
    controls : sequence of str
        Names from ``compiler.spec.EFFECT_CONTROLS``.

    Returns
    -------
    (X, terms, notes)
        ``X`` with named columns; ``terms`` lists ``(column, axis, level)`` of the axis indicators;
        ``notes`` says which controls were left out and why.
    """
    cols: dict[str, np.ndarray] = {"const": np.ones(len(frame))}
    terms, notes = [], []
    for axis, ref in axes.items():
        for level in sorted(set(frame[axis].dropna()) - {ref}, key=str):
            name = f"{axis}[{level}]"
            cols[name] = (frame[axis] == level).to_numpy(float)
            terms.append((name, axis, level))
    for control in controls:
        column = CONTROL_COLUMNS[control]
        if column not in frame:
            notes.append(NOTE_NO_CONTROL.format(control=control, why="no such column in the data"))
            continue
        levels = sorted(set(frame[column].dropna().astype(str)))
        if len(levels) < 2:
            notes.append(NOTE_NO_CONTROL.format(control=control, why=f"a single level ({levels[0] if levels else '-'})"))
            continue
        values = frame[column].astype(str)
        for level in levels[1:]:
            cols[f"{control}[{level}]"] = (values == level).to_numpy(float)
    return pd.DataFrame(cols, index=frame.index), terms, notes


def _row(model: str, name: str, axis: str, level: str, ref: str, **kw) -> dict[str, object]:
    row = {c: math.nan for c in MODEL_COLUMNS}
    row.update({"model": model, "term": name, "axis": axis, "level": level, "reference": ref, "notes": ""})
    row.update(kw)
    return row


def fit_models(paired: pd.DataFrame, *, axes: dict[str, str], controls: Sequence[str], alpha: float,
               wild_bootstrap: int, seed: int) -> pd.DataFrame:
    """Fit the five specifications; one row per model x axis term.

    Parameters
    ----------
    paired : pandas.DataFrame
        The paired frame (all systems and conditions together).
    axes : dict
        Axis name -> reference level.
    controls : sequence of str
        Declared controls.
    alpha : float
        Level of the (1 − α) coefficient intervals.
    wild_bootstrap : int
        Bootstrap draws (B) of the wild cluster bootstrap.
    seed : int
        Seed of the wild bootstrap (derive it from the spec seed).

    Returns
    -------
    pandas.DataFrame
        Columns :data:`MODEL_COLUMNS`. ``coef`` is in score units, ``d`` = coef / SD(score);
        ``icc``, ``var_template`` and ``var_residual`` are filled on the ``mixedlm`` rows.
    """
    import statsmodels.api as sm

    frame = average_replicates(paired, list(axes)).reset_index(drop=True)
    X, terms, notes = design(frame, axes=axes, controls=controls)
    y = frame["score"].astype(float)
    sd = float(y.std(ddof=1)) if len(y) > 1 else math.nan
    template = pd.factorize(frame["job_id"].astype(str) + "\x1f" + frame["cv_id"].astype(str))[0]
    instance = pd.factorize(frame["job_id"].astype(str) + "\x1f" + frame["cv_id"].astype(str) + "\x1f"
                            + frame["variant"].astype(str))[0]
    n_templates = int(template.max() + 1) if len(template) else 0
    rows: list[dict[str, object]] = []
    note = "; ".join(notes)

    def _d(coef: float) -> float:
        return coef / sd if sd and math.isfinite(sd) else math.nan

    estimable = _estimable(X)
    ols = sm.OLS(y, X)
    fits = []
    degenerate = False
    try:
        base = ols.fit()
        degenerate = not (sd and math.isfinite(sd)) or within_resid_sd(y, X, template) <= ZERO_RESID_REL * sd
        fits = [("ols", base, int(len(y))),
                ("ols_cluster_candidate", ols.fit(cov_type="cluster", cov_kwds={"groups": instance}),
                 int(instance.max() + 1)),
                ("ols_cluster_template", ols.fit(cov_type="cluster", cov_kwds={"groups": template}),
                 n_templates)]
    except Exception as err:  # noqa: BLE001 - a degenerate design is reported, not raised
        rows.append(_row("ols", "", "", "", "", notes=NOTE_FIT_FAILED.format(model="ols", err=err)))

    def _coef_row(model: str, name: str, axis: str, level: str, coef: float, se: float, ci: tuple[float, float],
                  stat: float, p: float, n_cl: int, extra_note: str = "", **kw) -> dict[str, object]:
        notes = [n for n in (note, extra_note) if n]
        if not estimable[name]:
            return _row(model, name, axis, level, axes[axis], n_obs=int(len(y)), n_clusters=n_cl,
                        notes="; ".join([NOTE_NOT_ESTIMABLE.format(term=name), *notes]), **kw)
        if degenerate or not se > ZERO_RESID_REL * sd:
            why = NOTE_ZERO_RESID if degenerate else NOTE_ZERO_SE
            return _row(model, name, axis, level, axes[axis], coef=coef, d=_d(coef), n_obs=int(len(y)),
                        n_clusters=n_cl, notes="; ".join([why, *notes]), **kw)
        return _row(model, name, axis, level, axes[axis], coef=coef, se=se, ci_low=ci[0], ci_high=ci[1],
                    statistic=stat, p_value=p, d=_d(coef), n_obs=int(len(y)), n_clusters=n_cl,
                    notes="; ".join(notes), **kw)

    for model, res, n_cl in fits:
        ci = res.conf_int(alpha=alpha)
        for name, axis, level in terms:
            rows.append(_coef_row(model, name, axis, level, float(res.params[name]), float(res.bse[name]),
                                  (float(ci.loc[name, 0]), float(ci.loc[name, 1])),
                                  float(res.tvalues[name]), float(res.pvalues[name]), n_cl))
    if fits:
        rows.extend(_mixed(y, X, template, n_templates, terms, fits[0][1], alpha, _coef_row, degenerate))
    if n_templates >= WILD_CLUSTER_MAX:
        rows.append(_row("wild_bootstrap", "", "", "", "", n_clusters=n_templates,
                         notes=NOTE_WILD_SKIPPED.format(n=n_templates, cap=WILD_CLUSTER_MAX)))
    elif fits:
        rows.extend(_wild(ols, fits[0][1], terms, axes, template, n_templates, wild_bootstrap, seed, len(y), _d,
                          estimable=estimable, degenerate=degenerate, note=note))
    return pd.DataFrame(rows, columns=list(MODEL_COLUMNS))


def within_resid_sd(y: pd.Series, X: pd.DataFrame, template: np.ndarray) -> float:
    """RMS residual of the regression with a fixed effect per template (both sides demeaned within
    template): zero when the scores are an exact function of the template and the regressors."""
    yd, Xd = demean_within(y, template), demean_within(X, template)
    coef, *_ = np.linalg.lstsq(Xd.to_numpy(float), yd.to_numpy(float), rcond=None)
    resid = yd.to_numpy(float) - Xd.to_numpy(float) @ coef
    return float(np.sqrt(np.mean(resid ** 2))) if resid.size else 0.0


def _estimable(X: pd.DataFrame) -> dict[str, bool]:
    """Column -> whether its coefficient is identified: dropping it lowers the rank of X."""
    values = X.to_numpy(float)
    tol = 1e-9 * max(1.0, float(np.abs(values).max())) if values.size else 0.0
    full = np.linalg.matrix_rank(values, tol=tol) if values.size else 0
    return {c: bool(np.linalg.matrix_rank(np.delete(values, i, axis=1), tol=tol) < full)
            for i, c in enumerate(X.columns)}


def boundary_score(resid: np.ndarray, X: np.ndarray, groups: np.ndarray) -> float:
    """REML score for the template variance at 0, up to a positive factor: ``r'ZZ'r / σ̂² − tr(M ZZ')``.

    ``r`` are the OLS residuals, ``σ̂² = r'r / (n − p)``, ``Z`` the group indicators and
    ``M = I − X(X'X)⁻¹X'``, so ``r'ZZ'r = Σ_g (Σ_{i∈g} r_i)²`` and
    ``tr(M ZZ') = Σ_g (n_g − 1_g' X (X'X)⁻¹ X' 1_g)``. A value ≤ 0 puts the REML maximum at zero
    template variance (the derivative of the REML log-likelihood there is not positive).
    """
    n, p = X.shape
    sigma2 = float(resid @ resid) / (n - p)
    k = int(groups.max()) + 1
    sums = np.bincount(groups, weights=resid, minlength=k)
    xsum = np.zeros((k, p))
    np.add.at(xsum, groups, X)                                   # 1_g' X per group
    xtx_inv = np.linalg.pinv(X.T @ X)
    trace = float(n - np.einsum("gi,ij,gj->", xsum, xtx_inv, xsum))
    return float(sums @ sums) / sigma2 - trace


def _mixed(y, X, template, n_templates, terms, ols_res, alpha, coef_row, degenerate) -> list[dict[str, object]]:
    """The ``mixedlm`` rows: MixedLM (REML) with the boundary rule and caught convergence warnings."""
    import statsmodels.api as sm
    from scipy import stats

    if degenerate:  # nothing to fit a variance to: the coefficients only, with the reason
        return [coef_row("mixedlm", name, axis, level, float(ols_res.params[name]), math.nan, (math.nan, math.nan),
                         math.nan, math.nan, n_templates) for name, axis, level in terms]
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            mres = sm.MixedLM(y, X, groups=template).fit(reml=True)
    except Exception as err:  # noqa: BLE001
        return [_row("mixedlm", "", "", "", "", notes=NOTE_FIT_FAILED.format(model="mixedlm", err=err))]
    score = boundary_score(np.asarray(ols_res.resid, float), X.to_numpy(float), template)
    boundary = score <= 0
    messages = sorted({str(w.message).split("\n")[0] for w in caught
                       if issubclass(w.category, Warning) and "boundary" not in str(w.message)})
    note = NOTE_BOUNDARY.format(score=score) if boundary else ""
    if not boundary and not mres.converged:
        note = NOTE_NOT_CONVERGED.format(msg="; ".join(messages) or "the optimiser reported no convergence")
    elif not boundary and messages:
        note = NOTE_MIXED_WARNINGS.format(msg="; ".join(messages))
    rows = []
    if boundary:  # REML at zero template variance is the OLS fit: coefficients, SEs, z tests
        var_t, var_e = 0.0, float(ols_res.scale)
        z = stats.norm.ppf(1 - alpha / 2)
        for name, axis, level in terms:
            coef, se = float(ols_res.params[name]), float(ols_res.bse[name])
            stat = coef / se if se > 0 else math.nan
            rows.append(coef_row("mixedlm", name, axis, level, coef, se, (coef - z * se, coef + z * se), stat,
                                 float(2 * stats.norm.sf(abs(stat))), n_templates, note, icc=0.0,
                                 var_template=var_t, var_residual=var_e, boundary=True))
        return rows
    var_t = float(np.asarray(mres.cov_re)[0, 0])
    var_e = float(mres.scale)
    icc = var_t / (var_t + var_e) if var_t + var_e > 0 else math.nan
    ci = mres.conf_int(alpha=alpha)
    for name, axis, level in terms:
        rows.append(coef_row("mixedlm", name, axis, level, float(mres.fe_params[name]), float(mres.bse_fe[name]),
                             (float(ci.loc[name, 0]), float(ci.loc[name, 1])), float(mres.tvalues[name]),
                             float(mres.pvalues[name]), n_templates, note, icc=icc, var_template=var_t,
                             var_residual=var_e, boundary=False))
    return rows


def _wild(ols, res, terms, axes, template, n_templates, b, seed, n, _d, *, estimable, degenerate,
          note) -> list[dict[str, object]]:
    """Wild cluster bootstrap p-value per axis term (``wildboottest``, Rademacher, WCR11); only for
    an estimable coefficient of a fit with residual variance."""
    from wildboottest.wildboottest import wildboottest

    out = []
    for name, axis, level in terms:
        if not estimable[name] or degenerate:
            why = NOTE_NOT_ESTIMABLE.format(term=name) if not estimable[name] else NOTE_ZERO_RESID
            out.append(_row("wild_bootstrap", name, axis, level, axes[axis],
                            coef=float(res.params[name]) if estimable[name] else math.nan,
                            n_obs=n, n_clusters=n_templates, notes="; ".join(x for x in (why, note) if x)))
            continue
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                wb = wildboottest(ols, B=b, cluster=template, param=name, weights_type="rademacher",
                                  seed=seed, parallel=False, show=False)
            out.append(_row("wild_bootstrap", name, axis, level, axes[axis], coef=float(res.params[name]),
                            statistic=float(np.ravel(wb["statistic"].iloc[0])[0]),
                            p_value=float(np.ravel(wb["p-value"].iloc[0])[0]),
                            d=_d(float(res.params[name])), n_obs=n, n_clusters=n_templates,
                            notes=f"B={b}, Rademacher weights per template"))
        except Exception as err:  # noqa: BLE001
            out.append(_row("wild_bootstrap", name, axis, level, axes[axis],
                            notes=NOTE_FIT_FAILED.format(model="wild bootstrap", err=err)))
    return out
