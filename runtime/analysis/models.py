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
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence

import numpy as np
import pandas as pd

from runtime.analysis.effect_size import average_replicates

#: Wild cluster bootstrap when the number of templates is below this (seed 003 §3.7).
WILD_CLUSTER_MAX = 30
MODEL_COLUMNS = ("model", "term", "axis", "level", "reference", "coef", "se", "ci_low", "ci_high",
                 "statistic", "p_value", "d", "n_obs", "n_clusters", "icc", "var_template",
                 "var_residual", "notes")
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

    ols = sm.OLS(y, X)
    fits = []
    try:
        fits = [("ols", ols.fit(), int(len(y))),
                ("ols_cluster_candidate", ols.fit(cov_type="cluster", cov_kwds={"groups": instance}),
                 int(instance.max() + 1)),
                ("ols_cluster_template", ols.fit(cov_type="cluster", cov_kwds={"groups": template}),
                 n_templates)]
    except Exception as err:  # noqa: BLE001 - a degenerate design is reported, not raised
        rows.append(_row("ols", "", "", "", "", notes=NOTE_FIT_FAILED.format(model="ols", err=err)))
    for model, res, n_cl in fits:
        ci = res.conf_int(alpha=alpha)
        for name, axis, level in terms:
            rows.append(_row(model, name, axis, level, axes[axis], coef=float(res.params[name]),
                             se=float(res.bse[name]), ci_low=float(ci.loc[name, 0]),
                             ci_high=float(ci.loc[name, 1]), statistic=float(res.tvalues[name]),
                             p_value=float(res.pvalues[name]), d=_d(float(res.params[name])),
                             n_obs=int(len(y)), n_clusters=n_cl, notes=note))
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            mres = sm.MixedLM(y, X, groups=template).fit(reml=True)
        var_t = float(mres.cov_re.iloc[0, 0])
        var_e = float(mres.scale)
        icc = var_t / (var_t + var_e) if var_t + var_e > 0 else math.nan
        ci = mres.conf_int(alpha=alpha)
        for name, axis, level in terms:
            rows.append(_row("mixedlm", name, axis, level, axes[axis], coef=float(mres.fe_params[name]),
                             se=float(mres.bse_fe[name]), ci_low=float(ci.loc[name, 0]),
                             ci_high=float(ci.loc[name, 1]), statistic=float(mres.tvalues[name]),
                             p_value=float(mres.pvalues[name]), d=_d(float(mres.fe_params[name])),
                             n_obs=int(len(y)), n_clusters=n_templates, icc=icc, var_template=var_t,
                             var_residual=var_e, notes=note))
    except Exception as err:  # noqa: BLE001
        rows.append(_row("mixedlm", "", "", "", "", notes=NOTE_FIT_FAILED.format(model="mixedlm", err=err)))
    if n_templates >= WILD_CLUSTER_MAX:
        rows.append(_row("wild_bootstrap", "", "", "", "", n_clusters=n_templates,
                         notes=NOTE_WILD_SKIPPED.format(n=n_templates, cap=WILD_CLUSTER_MAX)))
    elif fits:
        rows.extend(_wild(ols, fits[0][1], terms, axes, template, n_templates, wild_bootstrap, seed, len(y), _d))
    return pd.DataFrame(rows, columns=list(MODEL_COLUMNS))


def _wild(ols, res, terms, axes, template, n_templates, b, seed, n, _d) -> list[dict[str, object]]:
    """Wild cluster bootstrap p-value per axis term (``wildboottest``, Rademacher, WCR11)."""
    from wildboottest.wildboottest import wildboottest

    out = []
    for name, axis, level in terms:
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
