"""Report sections of the ``effects`` family: effect sizes and the validity protocol (seed 003 §3.7; no I/O).

:func:`effects_sections` gives the validity verdict (front matter: above the contents, so an
INCONCLUSIVE instrument is said before any result) and the "Validity protocol and effect sizes"
section. Everything is formatted here; the templates (``sections/effects_*.html.j2``, which also hold
the method prose) only loop.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import pandas as pd

from runtime.report.charts import forest_plot_svg
from runtime.report.formatting import fmt_ci, fmt_int, fmt_p, fmt_sig, is_missing, to_float
from runtime.report.sections import ORDER, Section
from runtime.report.sections.metric_suite.common import truthy as _b
from runtime.report.sections.metric_suite.thresholds import sesoi_and_thresholds

CHECK_LABELS = {
    "positive_control": "Positive control",
    "relevance": "Relevance (match)",
    "manipulation_check": "Manipulation check",
    "distribution_sd": "Distribution: spread",
    "distribution_ceiling": "Distribution: ceiling",
    "distribution_sd_top2k": "Shortlist (top-2K): spread",
    "distribution_ceiling_top2k": "Shortlist (top-2K): ceiling",
}
TEST_LABELS = {
    "paired_t": "paired t",
    "welch_t": "Welch t",
    "template_fe_cluster_t": "résumé fixed effect, clustered SE",
    "ols_hc3_t": "OLS, HC3 SE",
}
MODEL_LABELS = {
    "ols": "OLS",
    "ols_cluster_candidate": "OLS, SEs clustered by résumé instance",
    "ols_cluster_template": "OLS, SEs clustered by base template",
    "mixedlm": "Mixed model, random intercept per base template",
    "wild_bootstrap": "Wild cluster bootstrap (template, Rademacher)",
}


def _t(x: Any) -> str:
    """A text cell; missing (None, NaN) is the empty string."""
    if x is None or (isinstance(x, float) and x != x):
        return ""
    return str(x)


#: Jobs listed by name in the per-job sentence of a unit (the rest are counted).
JOBS_NAMED = 8


def _job_hidden(by_job: pd.DataFrame | None, system: str, condition: str) -> dict[str, Any]:
    """Per-job contrasts whose own |d| reaches the SESOI while the pooled contrast is equivalent:
    equivalence that holds on average only (largest |d| first)."""
    if by_job is None or not len(by_job) or "flag" not in by_job:
        return {"n": 0, "cells": [], "more": 0}
    sub = by_job[(by_job["system"] == system) & (by_job["condition"] == condition)
                 & (by_job["flag"].fillna("").astype(str) != "")
                 & by_job["pooled_equivalent"].map(_b)]
    sub = sub.assign(_abs=sub["d"].astype(float).abs()).sort_values("_abs", ascending=False)
    cells = [f"{r.contrast} in {r.job_id} (d = {fmt_sig(r.d, 3, signed=True)})" for r in sub.head(JOBS_NAMED).itertuples()]
    return {"n": len(sub), "cells": cells, "more": max(0, len(sub) - JOBS_NAMED)}


def _forest_units(contrasts: pd.DataFrame, sesoi: float, alpha: float,
                  by_job: pd.DataFrame | None = None, label: Callable[[Any], str] = str) -> list[dict[str, Any]]:
    units = []
    for i, ((system, condition), sub) in enumerate(contrasts.groupby(["system", "condition"], sort=True)):
        sub = sub.reset_index(drop=True)
        svg = forest_plot_svg(chart_id=f"forest-{i}", title=f"Forest plot of d, {system}, {condition}",
                              labels=list(sub["contrast"]), d=list(sub["d"]), ci_low=list(sub["ci_low"]),
                              ci_high=list(sub["ci_high"]), meaningful=[_b(m) for m in sub["meaningful"]],
                              sesoi=sesoi)
        rows = [{"contrast": label(r.contrast), "family": r.family, "test": TEST_LABELS.get(r.test, r.test),
                 "d_z": "" if is_missing(getattr(r, "d_z", None)) else fmt_sig(r.d_z, 3, signed=True),
                 "n": fmt_int(r.n_treatment) if r.test == "paired_t" else f"{fmt_int(r.n_treatment)} / {fmt_int(r.n_reference)}",
                 "diff": fmt_sig(r.mean_diff, signed=True), "d": fmt_sig(r.d, 3, signed=True),
                 "ci": fmt_ci(r.ci_low, r.ci_high, 3, signed=True), "p": fmt_p(r.p_value),
                 "q": fmt_p(r.q_value), "meaningful": _b(r.meaningful), "tost_p": "<0.001" if to_float(r.tost_p) < 1e-3 else fmt_p(r.tost_p),
                 "equivalent": _b(r.equivalent), "margin": fmt_sig(r.margin, 3),
                 "notes": _t(r.notes)} for r in sub.itertuples()]
        scale = pd.to_numeric(sub.get("sesoi_score", pd.Series(dtype=float)), errors="coerce").dropna()
        units.append({"system": system, "condition": condition, "svg": svg, "rows": rows,
                      "hidden": _job_hidden(by_job, system, condition),
                      "n_meaningful": sum(r["meaningful"] for r in rows),
                      "n_equivalent": sum(r["equivalent"] for r in rows), "n": len(rows),
                      "sesoi_score": "" if scale.empty else (
                          fmt_sig(scale.min(), 3) if fmt_sig(scale.min(), 3) == fmt_sig(scale.max(), 3)
                          else f"{fmt_sig(scale.min(), 3)}–{fmt_sig(scale.max(), 3)}")})
    return units


def sesoi_lines(table: pd.DataFrame | None) -> list[str]:
    """The SESOI in three units, one line per system x condition (issue 30 §1): "a selection ratio below
    0.8: a shift of 0.00612 on the score scale (0.00612 normalised), d = 0.0362 (pooled SD 0.169)"."""
    from runtime.analysis.sesoi import ALL_JOBS

    if table is None or not len(table):
        return []
    out = []
    for r in table[table["job_id"] == ALL_JOBS].itertuples(index=False):
        head = f"{r.system} · {r.condition} ({r.rule}): "
        if is_missing(r.shift):
            out.append(head + f"SESOI {r.form}: no score shift ({r.reason})")
            continue
        ratio = "" if is_missing(r.margin) else f"a selection ratio below {float(r.margin):.3g}: "
        out.append(head + f"{ratio}a shift of {fmt_sig(r.shift, 3)} on the score scale "
                   f"({fmt_sig(r.shift_normalised, 3)} normalised), d = {fmt_sig(r.d_equivalent, 3)} "
                   f"({r.standardiser_kind.replace('_', ' ')} SD {fmt_sig(r.standardiser, 3)}; SESOI {r.form})")
    return out


def reconcile(contrasts: pd.DataFrame, models: pd.DataFrame, *, alpha: float, sesoi: float) -> list[str]:
    """Sentences that resolve, in words, where the contrast table and the primary model (the mixed
    model) seem to disagree about an axis level, and where a contrast is both significant and
    equivalent (issue 13).

    Only for axis contrasts of a run with one system x condition: the mixed model pools every system
    and condition, so with several the two estimate different things (said once instead).
    """
    if contrasts is None or not len(contrasts) or models is None or not len(models):
        return []
    out = []
    axis = contrasts[contrasts["kind"] == "axis"]
    mixed = models[models["model"] == "mixedlm"].set_index("term") if "term" in models else pd.DataFrame()
    units = contrasts[["system", "condition"]].drop_duplicates()
    if len(units) > 1 and len(axis):
        out.append("The mixed model pools every system and condition; the contrast table gives each "
                   "system × condition on its own, so their estimates of an axis level need not agree.")
    both = [r.contrast + (f" ({r.system}, {r.condition})" if len(units) > 1 else "")
            for r in contrasts.itertuples() if float(r.q_value) < alpha and _b(r.equivalent)]
    if both:
        out.append(f"{len(both)} contrast{'s are' if len(both) > 1 else ' is'} both distinguishable from zero "
                   f"(q < {alpha:g}) and equivalent within ±{sesoi:g} SD: {', '.join(both)}. Such an effect is "
                   f"statistically distinguishable from zero but smaller than the SESOI; the two findings do "
                   f"not contradict each other.")
    for r in contrasts.itertuples():
        q = float(r.q_value)
        if len(units) > 1 or r.kind != "axis" or mixed.empty:
            continue
        term = f"{r.axis}[{r.level}]"
        if term not in mixed.index:
            continue
        p_model = float(mixed.loc[term, "p_value"])
        if not (p_model == p_model and q == q) or (p_model < alpha) == (q < alpha):
            continue
        se_table, se_model = float(r.se_diff), float(mixed.loc[term, "se"])
        n_cl = float(mixed.loc[term, "n_clusters"])
        bh_only = float(r.p_value) < alpha <= q and p_model < alpha
        why = ("the unadjusted p-values agree; the table's BH adjustment over its family explains the difference"
               if bh_only else f"the estimates agree ({fmt_sig(r.mean_diff, 3, signed=True)} vs "
                    f"{fmt_sig(mixed.loc[term, 'coef'], 3, signed=True)} score units) but their standard errors "
                    f"differ ({fmt_sig(se_table, 3)} clustered by base résumé vs {fmt_sig(se_model, 3)} "
                    f"model-based): the mixed model, primary in seed 003 §3.7, assumes one residual variance for "
                    f"every variant; the clustered SE does not need that assumption"
                    + (f" and, with {fmt_int(n_cl)} base résumés, has enough clusters to rely on" if n_cl >= 30 else
                       f" but, with only {fmt_int(n_cl)} base résumés, can be anti-conservative (see the wild "
                       f"cluster bootstrap)"))
        if _b(r.equivalent):
            why += (f". Either way the level is equivalent within ±{sesoi:g} SD (margin {fmt_sig(r.margin, 3)}): "
                    f"the disagreement is about an effect too small to matter")
        out.append(f"{r.contrast}: the contrast table gives q = {fmt_p(q)} (BH over its family; p = "
                   f"{fmt_p(r.p_value)}), the mixed model p = {fmt_p(p_model)} (not adjusted for multiplicity); "
                   f"{why}.")
    return out


def detectable_range(power: pd.DataFrame | None) -> dict[str, str]:
    """The VALID verdict's bound on what the audit could see (a regulator's read of the example: page 4 said
    "VALID" where no category's score test detected a selection ratio above 0.78 with the declared power).

    Parameters
    ----------
    power : pandas.DataFrame or None
        ``power.csv`` (:func:`compiler.power.power_table`).

    Returns
    -------
    dict
        ``low``, ``high`` (the smallest and the largest of the protected categories' smallest detectable
        selection ratios, :func:`runtime.analysis.power.smallest_detectable_ratio`, 3 significant digits, as
        "Findings by protected category" lists them; a ratio at or below ``low`` is detected in every category
        with the declared power) and ``n`` (categories); empty without power or a detectable ratio. Axis
        contrasts (``test`` :data:`compiler.power.TEST_MODEL`, one cue across variants) are not categories.
    """
    from compiler.power import TEST_MODEL
    from runtime.analysis.power import smallest_detectable_ratio

    if power is None or not len(power):
        return {}
    categories = power[power["test"] != TEST_MODEL]
    if categories.empty:
        return {}
    det = pd.to_numeric(smallest_detectable_ratio(categories)["mde_ratio"], errors="coerce").dropna()
    if det.empty:
        return {}
    return {"low": fmt_sig(det.min(), 3), "high": fmt_sig(det.max(), 3), "n": fmt_int(len(det))}


def effects_sections(effects, *, metrics: pd.DataFrame | None = None,
                     thresholds: Mapping[str, Any] | None = None,
                     score_range: Mapping[str, tuple[float, float]] | None = None,
                     label: Callable[[Any], str] = str) -> list[Section]:
    """The validity verdict and the effect-size section of a run.

    Parameters
    ----------
    effects : runtime.analysis.effects.EffectsResult
        The family's result (verdict, failed checks, validity, contrasts, models, pooling,
        self-test, MDE).
    metrics, thresholds, score_range : optional
        The metric suite's table, the run's thresholds and the systems' score ranges
        (:attr:`runtime.run.settings.RunSettings.thresholds` and ``score_range``): with them the section
        relates the SESOI to the pre-registered thresholds
        (:func:`runtime.report.sections.metric_suite.thresholds.sesoi_and_thresholds`).
    label : callable, optional
        Puts the levels' labels beside their ids in a contrast's name (issue 31 §3;
        :meth:`runtime.report.meta.ReportMeta.with_level_labels`): the contrast and pooling tables, not the
        forest plot, whose axis keeps the ids.

    Returns
    -------
    list of Section
        ``validity-verdict`` (front matter, not in the contents) and ``effects``.
    """
    v = effects.validity
    checks = [] if v is None or not len(v) else [
        {"check": CHECK_LABELS.get(r.check, r.check), "system": r.system, "condition": r.condition,
         "description": r.description,
         "value": fmt_sig(r.value, 4, signed=r.statistic in ("cohens_d", "shift_sesoi")),
         "ci": "" if is_missing(r.ci_low) else fmt_ci(r.ci_low, r.ci_high, 3, signed=True),
         # a positive control's one test per system x condition (issue 39 §6): its one-sided p, unadjusted
         "q": fmt_p(r.q_value) if not is_missing(r.q_value) else
         (f"p {fmt_p(r.p_value)}" if r.statistic == "shift_sesoi" and not is_missing(r.p_value) else ""),
         "n": fmt_int(r.n),
         "passed": _b(r.passed), "detail": _t(r.detail)}
        for r in v.itertuples()]
    models = []
    m = effects.models
    if m is not None and len(m):
        for r in m.itertuples():
            models.append({"model": MODEL_LABELS.get(r.model, r.model) + (" (boundary: ICC 0)" if _b(getattr(r, "boundary", False)) else ""),
                           "term": _t(r.term) or "—",
                           "model_id": r.model,
                           "coef": fmt_sig(r.coef, signed=True), "se": fmt_sig(r.se),
                           "ci": "" if is_missing(r.ci_low) else fmt_ci(r.ci_low, r.ci_high, signed=True),
                           "p": fmt_p(r.p_value), "d": fmt_sig(r.d, 3, signed=True),
                           "clusters": fmt_int(r.n_clusters), "notes": _t(r.notes)})
    icc = None
    if m is not None and len(m) and (m["model"] == "mixedlm").any() and m.loc[m["model"] == "mixedlm", "icc"].notna().any():
        icc = fmt_sig(m.loc[m["model"] == "mixedlm", "icc"].dropna().iloc[0], 3)
    pooling = [] if effects.pooling is None or not len(effects.pooling) else [
        {"contrast": label(r.contrast), "group": r.group, "units": r.units, "k": fmt_int(r.k_units),
         "pooled": _b(r.pooled), "d": fmt_sig(r.d_re, 3, signed=True),
         "ci": fmt_ci(r.ci_low, r.ci_high, 3, signed=True), "margin": fmt_sig(r.margin, 3),
         "pi": "" if is_missing(getattr(r, "pi_low", None)) else fmt_ci(r.pi_low, r.pi_high, 3, signed=True),
         "tau2": fmt_sig(r.tau2, 3), "q": fmt_sig(r.q, 3), "q_df": fmt_int(r.q_df),
         "i2": "" if is_missing(r.i2) else f"{100 * float(r.i2):.0f}%",
         "notes": _t(r.notes)} for r in effects.pooling.itertuples()]
    st = effects.self_test
    self_test = []
    if st is not None and len(st):
        # issue 39 §6: one row per category (δ* planted in it alone), the metrics that detect it
        for (system, condition, variant), sub in st.groupby(["system", "condition", "variant"], sort=False):
            det = sub["detected"].astype(bool)
            self_test.append({"system": system, "condition": condition, "category": label(variant),
                              "shift": fmt_sig(sub["shift"].iloc[0], 3), "t": fmt_sig(sub["shift_se"].iloc[0], 3),
                              "detected": int(det.sum()), "n": len(sub),
                              "metrics": ", ".join(sub.loc[det, "metric"]) or "none",
                              "notes": "; ".join(sorted({n for n in sub["notes"].fillna("") if n}))})
    pw = getattr(effects, "power", None)
    mde = [] if pw is None or not len(pw) else [
        {"system": r.system, "condition": r.condition, "category": r.category, "test": r.test, "n": fmt_int(r.n),
         "level": fmt_sig(r.level, 3), "power": fmt_sig(r.power, 3), "n_for_80": fmt_int(r.n_for_80),
         "mde_shift": fmt_sig(r.mde_shift, 3), "mde_ratio": fmt_sig(r.mde_ratio, 3), "mde_d": fmt_sig(r.mde_d, 3)}
        for r in pw.itertuples()]
    contrasts = effects.contrasts
    data = {
        "detectable": detectable_range(pw),
        "verdict": effects.verdict, "failed": list(effects.failed),
        "declared": effects.verdict != "NOT ASSESSED", "checks": checks,
        "sesoi": f"{effects.sesoi:.3g}", "alpha": f"{effects.alpha:g}",
        "sesoi_lines": sesoi_lines(getattr(effects, "sesoi_table", None)),
        "units": [] if contrasts is None or not len(contrasts) else _forest_units(
            contrasts, effects.sesoi, effects.alpha, getattr(effects, "contrasts_by_job", None), label),
        "models": models, "icc": icc,
        "reconcile": reconcile(contrasts, m, alpha=effects.alpha, sesoi=effects.sesoi),
        "policy": sesoi_and_thresholds(contrasts, metrics, thresholds=thresholds or {}, score_range=score_range or {},
                                       sesoi=effects.sesoi),
        "model_notes": list(dict.fromkeys(part for r in models for part in r["notes"].split("; ") if part)),
        "pooling": pooling, "self_test": self_test, "mde": mde,
    }
    return [
        Section(id="validity-verdict", title="Validity protocol", template="sections/effects_verdict.html.j2",
                context=data, order=ORDER["verdict"], toc=False),
        Section(id="effects", title="Validity protocol and effect sizes", template="sections/effects_effects.html.j2",
                context=data, order=ORDER["effects"]),
    ]
