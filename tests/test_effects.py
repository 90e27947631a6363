"""Effect sizes, models, pooling, validity and the self-test (seed 003 §3.7) against the libraries.

Every data set is generated inside the test from a seed; expected values come from scipy,
statsmodels and wildboottest called directly (and a different root finder for the d intervals).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from scipy import optimize, stats

from runtime.analysis.effect_size import effect_sizes, independent_contrast, paired_contrast
from runtime.analysis.models import fit_models
from runtime.analysis.pooling import NOTE_NO_PI, pool_contrasts
from runtime.analysis.validity import INCONCLUSIVE, VALID, check_validity


def _nc_bisect(t: float, df: float, target: float) -> float:
    """Independent inversion of the noncentral t (bisection on a wide bracket)."""
    return optimize.bisect(lambda nc: stats.nct.cdf(t, df, nc) - target, t - 60, t + 60, xtol=1e-12)


def _paired_frame(seed: int, *, n_jobs=2, k=30, conditions=("default",), effects=None, sd_noise=3.0,
                  match_effect=12.0, systems=("s1",)) -> pd.DataFrame:
    """A factorial paired frame (sex_gender x age_signal) with a base-candidate intercept."""
    rng = np.random.default_rng(seed)
    effects = effects or {"F": 2.0, "Older": 0.0}
    variants = {"BASE": ("M", "Young"), "V01": ("M", "Older"), "V02": ("F", "Young"), "V03": ("F", "Older")}
    rows = []
    for system in systems:
        for ci, cond in enumerate(conditions):
            for j in range(n_jobs):
                for c in range(k):
                    m = int(c < k // 2)
                    base = rng.normal(50, 8) + match_effect * m - 5 * ci
                    for v, (g, a) in variants.items():
                        s = base + rng.normal(0, sd_noise) + (effects["F"] if g == "F" else 0) \
                            + (effects["Older"] if a == "Older" else 0)
                        rows.append({"system": system, "condition": cond, "replicate": 0, "job_id": f"j{j}",
                                     "cv_id": f"c{c:03d}", "variant": v, "score": s, "rank": 0,
                                     "is_true_match": m, "sex_gender": g, "age_signal": a})
    return pd.DataFrame(rows)


CONTRASTS = [
    {"kind": "axis", "axis": "sex_gender", "level": "F", "reference": "M", "family": "sex_gender"},
    {"kind": "axis", "axis": "age_signal", "level": "Older", "reference": "Young", "family": "age_signal"},
    {"kind": "variant", "variant": "V02", "reference": "BASE", "family": "variants"},
    {"kind": "variant", "variant": "V03", "reference": "BASE", "family": "variants"},
]


@pytest.mark.parametrize("seed", [101, 202])
def test_independent_contrast_equals_scipy_and_statsmodels(seed):
    from statsmodels.stats.weightstats import ttost_ind

    rng = np.random.default_rng(seed)
    x1, x0 = rng.normal(0.3, 1.0, 57), rng.normal(0.0, 1.4, 83)
    res = independent_contrast(x1, x0, sesoi=0.2)
    n1, n0 = len(x1), len(x0)
    sp = math.sqrt(((n1 - 1) * x1.var(ddof=1) + (n0 - 1) * x0.var(ddof=1)) / (n1 + n0 - 2))
    d = (x1.mean() - x0.mean()) / sp
    assert res["d"] == pytest.approx(d, rel=1e-12)
    assert res["p_value"] == pytest.approx(stats.ttest_ind(x1, x0, equal_var=False).pvalue, rel=1e-12)
    assert res["tost_p"] == pytest.approx(ttost_ind(x1, x0, -0.2 * sp, 0.2 * sp, usevar="unequal")[0], rel=1e-12)
    t = stats.ttest_ind(x1, x0, equal_var=True).statistic
    scale = math.sqrt(1 / n1 + 1 / n0)
    df = n1 + n0 - 2
    assert res["ci_low"] == pytest.approx(_nc_bisect(t, df, 0.975) * scale, abs=1e-8)
    assert res["ci_high"] == pytest.approx(_nc_bisect(t, df, 0.025) * scale, abs=1e-8)
    # The margin is the bound at which the same Welch TOST gives p = alpha, found by bisection on
    # statsmodels directly (in d units: the bound on the score scale divided by s_p).
    bound = optimize.bisect(lambda b: ttost_ind(x1, x0, -b, b, usevar="unequal")[0] - 0.05, 1e-9, 50, xtol=1e-13)
    assert res["margin"] == pytest.approx(bound / sp, abs=1e-6)
    assert res["sesoi_score"] == pytest.approx(0.2 * sp, rel=1e-12)
    # the exact interval is close to the large-sample one (Hedges & Olkin) at this n
    se = math.sqrt((n1 + n0) / (n1 * n0) + d * d / (2 * (n1 + n0)))
    assert res["ci_low"] == pytest.approx(d - 1.959964 * se, abs=0.01)


@pytest.mark.parametrize("seed", [303, 404])
def test_paired_contrast_is_cohens_d_with_the_paired_test(seed):
    from statsmodels.stats.weightstats import ttost_paired

    rng = np.random.default_rng(seed)
    x0 = rng.normal(50, 10, 64)
    x1 = x0 + rng.normal(0.4, 2.0, 64)
    res = paired_contrast(x1, x0, sesoi=0.2)
    diff, n = x1 - x0, len(x1)
    sd = diff.std(ddof=1)
    s_av = math.sqrt((x1.var(ddof=1) + x0.var(ddof=1)) / 2)
    # one d, on the seed's scale: the pooled SD of the two arms, not the SD of the differences
    assert res["d"] == pytest.approx(diff.mean() / s_av, rel=1e-12)
    assert res["d_z"] == pytest.approx(diff.mean() / sd, rel=1e-12)
    assert abs(res["d_z"]) > 3 * abs(res["d"])  # r ~ 0.98: d_z is several times d
    assert res["p_value"] == pytest.approx(stats.ttest_rel(x1, x0).pvalue, rel=1e-9)
    assert res["tost_p"] == pytest.approx(ttost_paired(x1, x0, -0.2 * s_av, 0.2 * s_av)[0], rel=1e-9)
    # Algina & Keselman (2003): noncentral-t limits of the paired t times sd(diff) / (s_av sqrt(n))
    t = stats.ttest_rel(x1, x0).statistic
    scale = sd / (s_av * math.sqrt(n))
    assert res["ci_low"] == pytest.approx(_nc_bisect(t, n - 1, 0.975) * scale, abs=1e-8)
    assert res["ci_high"] == pytest.approx(_nc_bisect(t, n - 1, 0.025) * scale, abs=1e-8)
    bound = optimize.bisect(lambda b: ttost_paired(x1, x0, -b, b)[0] - 0.05, 1e-9, 50, xtol=1e-13)
    assert res["margin"] == pytest.approx(bound / s_av, abs=1e-6)
    # Bonett (2008) variance, by the delta method written out independently
    r = np.corrcoef(x1, x0)[0, 1]
    v1, v0 = x1.var(ddof=1), x0.var(ddof=1)
    d = res["d"]
    expect = d ** 2 * (v1 ** 2 + v0 ** 2 + 2 * r ** 2 * v1 * v0) / (8 * (n - 1) * s_av ** 4) + sd ** 2 / ((n - 1) * s_av ** 2)
    assert res["var_d"] == pytest.approx(expect, rel=1e-12)


def test_margin_of_unbalanced_unequal_variance_groups_is_where_ttost_ind_gives_alpha():
    # The example: 40 vs 200 independent scores, SDs differing 3x. Before, the margin came from
    # a pooled-variance interval (0.288) while the Welch TOST said "equivalent" (p = 0.007).
    from statsmodels.stats.weightstats import ttost_ind

    rng = np.random.default_rng(40200)
    x1, x0 = rng.normal(0.0, 3.0, 40), rng.normal(0.0, 1.0, 200)
    res = independent_contrast(x1, x0, sesoi=0.2)
    sp = res["standardiser"]
    bound = optimize.bisect(lambda b: ttost_ind(x1, x0, -b, b, usevar="unequal")[0] - 0.05, 1e-9, 50, xtol=1e-13)
    assert res["margin"] == pytest.approx(bound / sp, abs=1e-6)
    assert (res["tost_p"] < 0.05) == (res["margin"] < 0.2)


def test_constant_paired_differences_leave_the_tests_undefined_with_a_reason():
    x0 = np.arange(10, dtype=float)
    res = paired_contrast(x0 - 3.0, x0, sesoi=0.2)
    assert res["d"] == pytest.approx(-3.0 / x0.std(ddof=1))
    assert math.isnan(res.get("p_value", math.nan)) and math.isnan(res.get("tost_p", math.nan))
    assert "every paired difference equals -3" in res["notes"]


def test_zero_variance_leaves_d_undefined():
    res = paired_contrast(np.full(10, 0.5), np.full(10, 0.5), sesoi=0.2)
    assert math.isnan(res.get("d", math.nan)) and "zero variance" in res["notes"]


def test_effect_sizes_bh_within_family_and_joint_criterion():
    from statsmodels.stats.multitest import multipletests

    paired = _paired_frame(7, effects={"F": 6.0, "Older": 0.3}, conditions=("default", "casual"))
    out = effect_sizes(paired, contrasts=CONTRASTS, axes=["sex_gender", "age_signal"], sesoi=0.2, alpha=0.05)
    assert len(out) == 8  # 4 contrasts x 2 conditions
    for fam, sub in out.groupby("family"):
        assert np.allclose(sub["q_value"], multipletests(sub["p_value"], method="fdr_bh")[1])
    expect = (out["d"].abs() >= 0.2) & (out["q_value"] < 0.05)
    assert (out["meaningful"] == expect).all()
    v02 = out[(out["contrast"] == "V02 vs BASE") & (out["condition"] == "default")].iloc[0]
    # a 6-point shift: d against the score SD (about 9: base SD 8, the match effect, noise 3), while
    # d_z, against the SD of the paired differences (noise only), is more than twice as large
    assert v02["meaningful"] and 0.4 < v02["d"] < 1 and v02["d_z"] > 2 * v02["d"]


def test_mixedlm_and_cluster_models_equal_statsmodels_directly():
    import statsmodels.formula.api as smf

    paired = _paired_frame(11, n_jobs=3, k=15, effects={"F": 1.5, "Older": -1.0})
    out = fit_models(paired, axes={"sex_gender": "M", "age_signal": "Young"}, controls=["job"],
                     alpha=0.05, wild_bootstrap=999, seed=5)
    df = paired.assign(F=(paired["sex_gender"] == "F").astype(float),
                       O=(paired["age_signal"] == "Older").astype(float),
                       template=paired["job_id"] + "/" + paired["cv_id"])
    mres = smf.mixedlm("score ~ F + O + C(job_id)", df, groups=df["template"]).fit(reml=True)
    mixed = out[out["model"] == "mixedlm"].set_index("term")
    assert mixed.loc["sex_gender[F]", "coef"] == pytest.approx(mres.fe_params["F"], rel=1e-6)
    assert mixed.loc["age_signal[Older]", "coef"] == pytest.approx(mres.fe_params["O"], rel=1e-6)
    assert mixed.loc["sex_gender[F]", "se"] == pytest.approx(mres.bse_fe["F"], rel=1e-5)
    var_t = float(mres.cov_re.iloc[0, 0])
    icc = var_t / (var_t + mres.scale)
    assert mixed["icc"].iloc[0] == pytest.approx(icc, rel=1e-6)
    assert 0.5 < icc < 1  # base-candidate intercepts (SD 8 + match) dominate the noise (SD 3)
    ols = smf.ols("score ~ F + O + C(job_id)", df)
    by_template = ols.fit(cov_type="cluster", cov_kwds={"groups": pd.factorize(df["template"])[0]})
    ct = out[out["model"] == "ols_cluster_template"].set_index("term")
    assert ct.loc["sex_gender[F]", "se"] == pytest.approx(by_template.bse["F"], rel=1e-8)
    assert ct.loc["sex_gender[F]", "p_value"] == pytest.approx(by_template.pvalues["F"], rel=1e-8)
    assert ct["n_clusters"].iloc[0] == 45
    # 45 templates >= 30: no wild bootstrap, and the report row says so
    wild = out[out["model"] == "wild_bootstrap"]
    assert len(wild) == 1 and "45 templates" in wild["notes"].iloc[0]


def test_wild_cluster_bootstrap_equals_wildboottest_directly():
    import statsmodels.api as sm
    from wildboottest.wildboottest import wildboottest

    paired = _paired_frame(13, n_jobs=1, k=12, effects={"F": 1.0, "Older": 0.0})
    out = fit_models(paired, axes={"sex_gender": "M", "age_signal": "Young"}, controls=["job"],
                     alpha=0.05, wild_bootstrap=999, seed=42)
    wild = out[out["model"] == "wild_bootstrap"].set_index("term")
    assert len(wild) == 2 and wild["n_clusters"].iloc[0] == 12
    X = pd.DataFrame({"const": 1.0, "sex_gender[F]": (paired["sex_gender"] == "F").astype(float),
                      "age_signal[Older]": (paired["age_signal"] == "Older").astype(float)})
    cluster = pd.factorize(paired["job_id"] + "/" + paired["cv_id"])[0]
    direct = wildboottest(sm.OLS(paired["score"], X), B=999, cluster=cluster, param="sex_gender[F]",
                          weights_type="rademacher", seed=42, parallel=False, show=False)
    assert wild.loc["sex_gender[F]", "p_value"] == pytest.approx(float(np.ravel(direct["p-value"].iloc[0])[0]))
    assert wild.loc["sex_gender[F]", "statistic"] == pytest.approx(float(np.ravel(direct["statistic"].iloc[0])[0]))


def test_dersimonian_laird_equals_combine_effects():
    from statsmodels.stats.meta_analysis import combine_effects

    # conditions that differ in the F effect: heterogeneous, tau^2 > 0
    frames = [_paired_frame(17 + i, k=40, effects={"F": e, "Older": 0.0}, conditions=(c,))
              for i, (c, e) in enumerate([("a", 0.0), ("b", 4.0), ("c", 8.0)])]
    paired = pd.concat(frames, ignore_index=True)
    contrast = [CONTRASTS[2]]
    per = effect_sizes(paired, contrasts=contrast, axes=["sex_gender", "age_signal"], sesoi=0.2, alpha=0.05)
    res = combine_effects(per["d"].to_numpy(), per["var_d"].to_numpy(), method_re="dl")
    assert res.tau2 > 0
    pooled = pool_contrasts(paired, contrasts=contrast, axes=["sex_gender", "age_signal"], sesoi=0.2,
                            pool_over="condition").iloc[0]
    assert pooled["pooled"] and pooled["k_units"] == 3
    assert pooled["tau2"] == pytest.approx(res.tau2, rel=1e-10)
    assert pooled["i2"] == pytest.approx(res.i2, rel=1e-10)
    assert pooled["q"] == pytest.approx(res.q, rel=1e-10)
    assert pooled["d_re"] == pytest.approx(res.mean_effect_re, rel=1e-10)
    # Hartung-Knapp-Sidik-Jonkman by hand (issue 39 §5): w* = 1 / (v + tau^2), q = sum w* (d - d_re)^2 / (k - 1),
    # SE = sqrt(max(1, q) / sum w*), CI d_re -/+ t(0.975, k - 1) SE, 90% with t(0.95, k - 1) (the margin);
    # prediction interval d_re -/+ t(0.975, k - 2) sqrt(tau^2 + SE^2) (Higgins et al. 2009).
    from scipy.stats import t

    d, v = per["d"].to_numpy(), per["var_d"].to_numpy()
    ws = 1 / (v + res.tau2)
    mean = float((ws * d).sum() / ws.sum())
    q = float((ws * (d - mean) ** 2).sum() / 2)
    se = math.sqrt(max(1.0, q) / ws.sum())
    assert (pooled["ci_low"], pooled["ci_high"]) == pytest.approx((mean - t.ppf(0.975, 2) * se, mean + t.ppf(0.975, 2) * se))
    assert (pooled["ci90_low"], pooled["ci90_high"]) == pytest.approx((mean - t.ppf(0.95, 2) * se, mean + t.ppf(0.95, 2) * se))
    assert pooled["margin"] == pytest.approx(max(abs(pooled["ci90_low"]), abs(pooled["ci90_high"])))
    half = t.ppf(0.975, 1) * math.sqrt(res.tau2 + se**2)
    assert (pooled["pi_low"], pooled["pi_high"]) == pytest.approx((mean - half, mean + half))
    assert pooled["pi_low"] < pooled["ci_low"] and pooled["notes"] == ""


#: Seed of a homogeneous draw (Q < k - 1) for the truncation test.
SEED_HOMOG = 70


def test_dersimonian_laird_truncates_tau2_at_zero():
    """statsmodels 0.15 returns a negative DL tau^2 when Q < k - 1; DL defines it as max(0, .)."""
    frames = [_paired_frame(SEED_HOMOG + i, k=40, effects={"F": 2.0, "Older": 0.0}, conditions=(c,))
              for i, c in enumerate(["a", "b", "c", "d"])]
    paired = pd.concat(frames, ignore_index=True)
    contrast = [CONTRASTS[2]]
    per = effect_sizes(paired, contrasts=contrast, axes=["sex_gender", "age_signal"], sesoi=0.2, alpha=0.05)
    w = 1 / per["var_d"].to_numpy()
    d = per["d"].to_numpy()
    q = float((w * (d - (w * d).sum() / w.sum()) ** 2).sum())
    pooled = pool_contrasts(paired, contrasts=contrast, axes=["sex_gender", "age_signal"], sesoi=0.2,
                            pool_over="condition").iloc[0]
    assert pooled["q"] == pytest.approx(q, rel=1e-10)
    if q < 3:  # homogeneous draw: the truncation branch
        from statsmodels.stats.meta_analysis import combine_effects

        assert combine_effects(d, per["var_d"].to_numpy(), method_re="dl").tau2 < 0  # untruncated
        assert pooled["tau2"] == 0 and pooled["i2"] == 0
        assert pooled["d_re"] == pytest.approx((w * d).sum() / w.sum(), rel=1e-10)
    else:
        pytest.fail(f"seeded draw expected to be homogeneous, Q = {q}")


def test_single_condition_cannot_pool():
    paired = _paired_frame(3)
    out = pool_contrasts(paired, contrasts=CONTRASTS, axes=["sex_gender", "age_signal"], sesoi=0.2,
                         pool_over="condition")
    assert not out["pooled"].any()
    assert out["notes"].str.startswith("cannot pool: a single condition (default)").all()
    by_job = pool_contrasts(paired, contrasts=CONTRASTS, axes=["sex_gender", "age_signal"], sesoi=0.2,
                            pool_over="job")
    assert by_job["pooled"].all() and (by_job["k_units"] == 2).all()
    # two units: no prediction interval (t on k - 2 = 0 df), said in the notes
    assert by_job["pi_low"].isna().all() and (by_job["notes"] == NOTE_NO_PI.format(k=2)).all()


VALIDITY = {"positive_control": {"contrast": "match", "min_d": 0.5, "direction": "higher"},
            "manipulation_checks": [],
            "distribution": {"min_sd": 0.01, "ceiling": 0.95, "max_ceiling_share": 0.5}}


def _validity(paired, config=VALIDITY):
    return check_validity(paired, config=config, reference="BASE", axes=["sex_gender", "age_signal"],
                          score_range={"s1": (0.0, 100.0)}, alpha=0.05)


def test_validity_passes_for_a_content_sensitive_system():
    res = _validity(_paired_frame(5))
    assert res.verdict == VALID, res.failed
    pc = res.checks[res.checks["check"] == "positive_control"].iloc[0]
    assert pc["value"] > 1 and pc["q_value"] < 0.05


@pytest.mark.parametrize("kind", ["constant", "random"])
def test_content_blind_system_is_inconclusive(kind):
    paired = _paired_frame(9)
    rng = np.random.default_rng(99)
    paired["score"] = 50.0 if kind == "constant" else rng.uniform(0, 100, len(paired))
    res = _validity(paired)
    assert res.verdict == INCONCLUSIVE
    failed = set(res.checks.loc[~res.checks["passed"], "check"])
    assert "positive_control" in failed
    if kind == "constant":
        assert "distribution_sd" in failed


def test_manipulation_check_direction_and_missing_condition():
    paired = _paired_frame(21, conditions=("default", "borderline"))  # borderline is 5 points lower
    ok = dict(VALIDITY, manipulation_checks=[{"condition": "borderline", "against": "default",
                                              "direction": "lower", "min_d": 0.2}])
    assert _validity(paired, ok).verdict == VALID
    wrong = dict(VALIDITY, manipulation_checks=[{"condition": "borderline", "against": "default",
                                                 "direction": "higher", "min_d": 0.0}])
    assert _validity(paired, wrong).verdict == INCONCLUSIVE
    absent = dict(VALIDITY, manipulation_checks=[{"condition": "casual", "against": "default",
                                                  "direction": "lower", "min_d": 0.0}])
    res = _validity(paired, absent)
    assert res.verdict == INCONCLUSIVE and "not in the data" in res.failed[0]


def test_ceiling_check_fails_when_scores_pile_up_at_the_top():
    paired = _paired_frame(23)
    paired["score"] = np.clip(paired["score"] + 60, 0, 100)
    res = _validity(paired)
    assert res.verdict == INCONCLUSIVE
    assert "distribution_ceiling" in set(res.checks.loc[~res.checks["passed"], "check"])


def test_models_with_several_conditions_and_systems_use_the_controls():
    import statsmodels.formula.api as smf

    paired = _paired_frame(51, n_jobs=2, k=20, conditions=("default", "borderline"), systems=("s1", "s2"),
                           effects={"F": 2.0, "Older": 0.0})
    out = fit_models(paired, axes={"sex_gender": "M", "age_signal": "Young"},
                     controls=["job", "system", "condition"], alpha=0.05, wild_bootstrap=999, seed=5)
    assert not out["notes"].str.contains("left out").any()
    df = paired.assign(F=(paired["sex_gender"] == "F").astype(float),
                       O=(paired["age_signal"] == "Older").astype(float))
    ref = smf.ols("score ~ F + O + C(job_id) + C(system) + C(condition)", df).fit()
    ols = out[out["model"] == "ols"].set_index("term")
    assert ols.loc["sex_gender[F]", "coef"] == pytest.approx(ref.params["F"], rel=1e-9)
    assert ols.loc["sex_gender[F]", "se"] == pytest.approx(ref.bse["F"], rel=1e-9)
    # a résumé instance is scored by both systems under both conditions: 4 rows per cluster
    cand = out[out["model"] == "ols_cluster_candidate"]
    assert cand["n_clusters"].iloc[0] == len(paired) // 4


def _partial_frame(seed: int, *, k=60, effect_b=2.0) -> pd.DataFrame:
    """A partial (non-factorial) paired variant table: BASE (A0, B0), V1 (A1, B1), V2 (A0, B1); only
    axis B moves scores (+effect_b), so A's marginal contrast is confounded with B."""
    rng = np.random.default_rng(seed)
    variants = {"BASE": ("A0", "B0"), "V1": ("A1", "B1"), "V2": ("A0", "B1")}
    rows = []
    for c in range(k):
        base = rng.normal(50, 8)
        for v, (a, b) in variants.items():
            rows.append({"system": "s1", "condition": "default", "replicate": 0, "job_id": "j0",
                         "cv_id": f"c{c:03d}", "variant": v, "axis_a": a, "axis_b": b, "rank": 0,
                         "score": base + rng.normal(0, 1.0) + (effect_b if b == "B1" else 0.0)})
    return pd.DataFrame(rows)


PARTIAL_CONTRASTS = [
    {"kind": "axis", "axis": "axis_a", "level": "A1", "reference": "A0", "family": "contrasts"},
    {"kind": "axis", "axis": "axis_b", "level": "B1", "reference": "B0", "family": "contrasts"},
]


def test_axis_contrasts_of_a_paired_partial_design_are_adjusted_within_base_resumes():
    import statsmodels.formula.api as smf

    from runtime.analysis.effect_size import axis_design

    paired = _partial_frame(5)
    out = effect_sizes(paired, contrasts=PARTIAL_CONTRASTS, axes=["axis_a", "axis_b"], sesoi=0.2,
                       alpha=0.05).set_index("axis")
    assert axis_design(paired, ["axis_a", "axis_b"]) == "template_fe"
    assert (out["test"] == "template_fe_cluster_t").all()
    # Independently: OLS with one dummy per base resume, clustered by base resume. Its cluster
    # correction counts the dummies in K; the within estimator does not (they are nested in the
    # clusters), so the SEs differ by exactly sqrt((N - K_dummies) / (N - K_within)).
    df = paired.assign(A1=(paired["axis_a"] == "A1").astype(float), B1=(paired["axis_b"] == "B1").astype(float))
    groups = pd.factorize(df["cv_id"])[0]
    direct = smf.ols("score ~ A1 + B1 + C(cv_id)", df).fit(cov_type="cluster", cov_kwds={"groups": groups},
                                                           use_t=True)
    n, k_dummies, k_within = len(df), direct.params.size, 2
    for axis, term in (("axis_a", "A1"), ("axis_b", "B1")):
        row = out.loc[axis]
        assert row["mean_diff"] == pytest.approx(direct.params[term], rel=1e-9, abs=1e-12)
        assert row["se_diff"] == pytest.approx(direct.bse[term] * math.sqrt((n - k_dummies) / (n - k_within)),
                                               rel=1e-9)
        assert row["df"] == 59  # G - 1 clusters
    # The marginal contrast of A is confounded with B (every A1 resume also has B1): about +1 point;
    # adjusted for B within base resumes it is about 0, and B's +2 points are recovered.
    marginal = paired.loc[paired["axis_a"] == "A1", "score"].mean() - paired.loc[paired["axis_a"] == "A0", "score"].mean()
    assert marginal == pytest.approx(1.0, abs=0.4)
    assert abs(out.loc["axis_a", "mean_diff"]) < 0.4 and out.loc["axis_b", "mean_diff"] == pytest.approx(2.0, abs=0.4)
    assert out.loc["axis_b", "meaningful"] and not out.loc["axis_a", "meaningful"]
    # three profiles for two axis parameters: saturated, and the rows say what that assumes
    assert out["notes"].str.startswith("saturated: the variant table has 3 level combinations").all()


def test_axis_contrasts_of_independent_resumes_use_welch_when_factorial_and_hc3_otherwise():
    from runtime.analysis.effect_size import axis_design

    paired = _paired_frame(3)
    independent = paired.assign(cv_id=paired["cv_id"] + "-" + paired["variant"])  # every resume scored once
    assert axis_design(independent, ["sex_gender", "age_signal"]) == "welch"
    out = effect_sizes(independent, contrasts=CONTRASTS[:2], axes=["sex_gender", "age_signal"], sesoi=0.2, alpha=0.05)
    assert (out["test"] == "welch_t").all()
    partial = _partial_frame(6)
    partial = partial.assign(cv_id=partial["cv_id"] + "-" + partial["variant"])
    assert axis_design(partial, ["axis_a", "axis_b"]) == "ols_hc3"
    out = effect_sizes(partial, contrasts=PARTIAL_CONTRASTS, axes=["axis_a", "axis_b"], sesoi=0.2, alpha=0.05)
    assert (out["test"] == "ols_hc3_t").all()


def test_exact_additive_scores_give_no_model_p_values_with_a_reason():
    # Every variant scores exactly 2 points above its base resume when B1: the within-template fit is
    # exact, so there is no residual variance to test against.
    paired = _partial_frame(7)
    paired["score"] = paired.groupby("cv_id")["score"].transform("first") + np.where(paired["axis_b"] == "B1", 2.0, 0.0)
    out = effect_sizes(paired, contrasts=PARTIAL_CONTRASTS, axes=["axis_a", "axis_b"], sesoi=0.2, alpha=0.05)
    assert out["p_value"].isna().all() and out["tost_p"].isna().all() and not out["equivalent"].any()
    assert out["notes"].str.contains("zero residual variance").all()


@settings(max_examples=60, deadline=None)
@given(n1=st.integers(3, 60), n0=st.integers(3, 60), shift=st.floats(-1.5, 1.5), ratio=st.floats(0.3, 3.0),
       paired_design=st.booleans(), seed=st.integers(0, 2**31 - 1))
def test_equivalent_exactly_when_the_margin_is_below_the_sesoi(n1, n0, shift, ratio, paired_design, seed):
    rng = np.random.default_rng(seed)
    if paired_design:
        x0 = rng.normal(0, 1, n1)
        res = paired_contrast(x0 + shift * 0.1 + rng.normal(0, 0.3 * ratio, n1), x0, sesoi=0.2)
    else:
        res = independent_contrast(rng.normal(shift * 0.1, ratio, n1), rng.normal(0, 1, n0), sesoi=0.2)
    assume(math.isfinite(res.get("margin", math.nan)) and abs(res["margin"] - 0.2) > 1e-9)
    assert (res["tost_p"] < 0.05) == (res["margin"] < 0.2)


def _reml_profile(y: np.ndarray, X: np.ndarray, groups: np.ndarray, theta: float) -> float:
    """REML log-likelihood (scale profiled out) of a random-intercept model with variance ratio theta,
    written out with dense matrices (independent of statsmodels and of models.boundary_score)."""
    n, p = X.shape
    Z = np.eye(int(groups.max()) + 1)[groups]
    V = np.eye(n) + theta * Z @ Z.T
    Vi = np.linalg.inv(V)
    XtViX = X.T @ Vi @ X
    P = Vi - Vi @ X @ np.linalg.solve(XtViX, X.T @ Vi)
    s2 = float(y @ P @ y) / (n - p)
    return -0.5 * ((n - p) * math.log(s2) + np.linalg.slogdet(V)[1] + np.linalg.slogdet(XtViX)[1])


@pytest.mark.parametrize("seed", range(8))
def test_mixedlm_boundary_gives_icc_zero_and_a_flag(seed):
    # No template effect at all: whether REML puts the template variance at 0 depends on the draw.
    # The flag must agree with the REML profile (maximised over a grid, at 0 or not), and at the
    # boundary the row reports ICC 0 and the OLS coefficients, whatever statsmodels' optimiser returned.
    rng = np.random.default_rng(seed)
    rows = []
    for c in range(40):
        for v, (g, a) in {"BASE": ("M", "Young"), "V01": ("F", "Young"), "V02": ("M", "Older"), "V03": ("F", "Older")}.items():
            rows.append({"system": "s1", "condition": "default", "replicate": 0, "job_id": "j0", "cv_id": f"c{c:03d}",
                         "variant": v, "score": 50 + 0.3 * (g == "F") + rng.normal(0, 1), "rank": 0,
                         "sex_gender": g, "age_signal": a})
    paired = pd.DataFrame(rows)
    out = fit_models(paired, axes={"sex_gender": "M", "age_signal": "Young"}, controls=[], alpha=0.05,
                     wild_bootstrap=99, seed=1)
    mixed = out[out["model"] == "mixedlm"].set_index("term")
    ols = out[out["model"] == "ols"].set_index("term")
    y = paired["score"].to_numpy(float)
    X = np.column_stack([np.ones(len(y)), (paired["sex_gender"] == "F"), (paired["age_signal"] == "Older")]).astype(float)
    groups = pd.factorize(paired["cv_id"])[0]
    grid = np.concatenate([[0.0], np.geomspace(1e-4, 2.0, 200)])
    at_zero = int(np.argmax([_reml_profile(y, X, groups, t) for t in grid])) == 0
    assert bool(mixed["boundary"].iloc[0]) == at_zero
    if at_zero:
        assert (mixed["icc"] == 0).all() and (mixed["var_template"] == 0).all()
        assert mixed.loc["sex_gender[F]", "coef"] == pytest.approx(ols.loc["sex_gender[F]", "coef"], rel=1e-12)
        assert mixed["notes"].str.contains("boundary").all()
    else:
        assert (mixed["icc"] > 0).all()


@pytest.mark.parametrize("kind", ["constant", "equal"])
def test_degenerate_scores_give_no_model_p_values_with_reasons(kind):
    # constant: every resume scores 50; equal: every variant scores what its base candidate scores
    paired = _paired_frame(21, n_jobs=1, k=12)
    if kind == "constant":
        paired["score"] = 50.0
    else:
        paired["score"] = paired.groupby(["job_id", "cv_id"])["score"].transform("first")
    out = fit_models(paired, axes={"sex_gender": "M", "age_signal": "Young"}, controls=["job"], alpha=0.05,
                     wild_bootstrap=99, seed=3)
    terms = out[out["term"].astype(str) != ""]
    assert set(terms["model"]) == {"ols", "ols_cluster_candidate", "ols_cluster_template", "mixedlm", "wild_bootstrap"}
    assert terms["p_value"].isna().all() and terms["se"].isna().all()
    assert terms["notes"].str.contains("zero residual variance").all()
    es = effect_sizes(paired, contrasts=CONTRASTS, axes=["sex_gender", "age_signal"], sesoi=0.2, alpha=0.05)
    assert es["p_value"].isna().all() and not es["equivalent"].any() and not es["meaningful"].any()
    assert (es["notes"] != "").all()


def test_report_resolves_table_and_model_disagreements_in_words():
    from runtime.report.sections.effects import reconcile

    contrasts = pd.DataFrame([
        # significant in the table, not in the mixed model; equivalent: a real but negligible effect
        {"system": "s", "condition": "c", "kind": "axis", "axis": "lang", "level": "EN", "contrast": "lang: EN vs FR",
         "p_value": 0.004, "q_value": 0.006, "equivalent": True, "margin": 0.02, "mean_diff": 0.0021, "se_diff": 0.0007},
        # raw p agrees with the model, BH does not
        {"system": "s", "condition": "c", "kind": "axis", "axis": "age", "level": "Old", "contrast": "age: Old vs Young",
         "p_value": 0.03, "q_value": 0.08, "equivalent": False, "margin": 0.3, "mean_diff": 0.5, "se_diff": 0.2},
        {"system": "s", "condition": "c", "kind": "variant", "axis": "", "level": "", "contrast": "V01 vs BASE",
         "p_value": 0.2, "q_value": 0.3, "equivalent": False, "margin": 0.4, "mean_diff": 0.1, "se_diff": 0.1},
    ])
    models = pd.DataFrame([
        {"model": "mixedlm", "term": "lang[EN]", "coef": 0.0021, "se": 0.0022, "p_value": 0.34, "n_clusters": 200},
        {"model": "mixedlm", "term": "age[Old]", "coef": 0.5, "se": 0.21, "p_value": 0.02, "n_clusters": 12},
    ])
    lines = reconcile(contrasts, models, alpha=0.05, sesoi=0.2)
    assert lines[0].startswith("1 contrast is both distinguishable from zero") and "lang: EN vs FR" in lines[0]
    lang = next(x for x in lines if x.startswith("lang: EN vs FR: the contrast table"))
    assert "standard errors differ" in lang and "200 base résumés" in lang and "too small to matter" in lang
    age = next(x for x in lines if x.startswith("age: Old vs Young"))
    assert "BH adjustment" in age
    assert not any("V01" in x for x in lines[1:])  # agree (neither rejects): nothing to resolve
    # several systems x conditions: the model pools them, so the comparison is not made, and it says why
    two = pd.concat([contrasts, contrasts.assign(condition="d")], ignore_index=True)
    lines = reconcile(two, models, alpha=0.05, sesoi=0.2)
    assert lines[0].startswith("The mixed model pools every system and condition")
    assert not any("the contrast table gives q" in x for x in lines)


def test_a_job_whose_effect_reaches_the_sesoi_is_flagged_under_a_pooled_equivalence():
    from runtime.analysis.effect_size import FLAG_JOB_SESOI, effect_sizes_by_job
    from runtime.report.sections.effects import _job_hidden

    # five jobs; V02 (F, Young) shifts scores by +4 points in job j3 only (score SD ~9: d ~ 0.45 there,
    # ~0.09 pooled), with little paired noise, so the pooled contrast is equivalent within 0.2
    paired = _paired_frame(31, n_jobs=5, k=60, effects={"F": 0.0, "Older": 0.0}, sd_noise=0.5)
    hit = (paired["job_id"] == "j3") & (paired["variant"] == "V02")
    paired.loc[hit, "score"] += 4.0
    pooled = effect_sizes(paired, contrasts=CONTRASTS, axes=["sex_gender", "age_signal"], sesoi=0.2, alpha=0.05)
    v02 = pooled[pooled["contrast"] == "V02 vs BASE"].iloc[0]
    assert v02["equivalent"] and abs(v02["d"]) < 0.2
    by_job = effect_sizes_by_job(paired, contrasts=CONTRASTS, axes=["sex_gender", "age_signal"], sesoi=0.2,
                                 alpha=0.05, pooled=pooled)
    flagged = by_job[by_job["flag"] == FLAG_JOB_SESOI]
    assert set(zip(flagged["contrast"], flagged["job_id"])) >= {("V02 vs BASE", "j3")}
    j3 = flagged[(flagged["contrast"] == "V02 vs BASE") & (flagged["job_id"] == "j3")].iloc[0]
    assert j3["d"] > 0.3 and j3["pooled_d"] == pytest.approx(v02["d"]) and bool(j3["pooled_equivalent"])
    assert by_job["q_value"].isna().all()  # per-job rows describe; no multiplicity adjustment
    hidden = _job_hidden(by_job, "s1", "default")
    assert hidden["n"] >= 1 and hidden["cells"][0].startswith("V02 vs BASE in j3 (d = +")


def test_the_report_names_jobs_that_are_equivalent_on_average_only():
    from runtime.analysis.effect_size import effect_sizes_by_job
    from runtime.analysis.effects import EffectsResult
    from runtime.report.render import _environment
    from runtime.report.sections.effects import effects_sections

    paired = _paired_frame(31, n_jobs=5, k=60, effects={"F": 0.0, "Older": 0.0}, sd_noise=0.5)
    paired.loc[(paired["job_id"] == "j3") & (paired["variant"] == "V02"), "score"] += 4.0
    pooled = effect_sizes(paired, contrasts=CONTRASTS, axes=["sex_gender", "age_signal"], sesoi=0.2, alpha=0.05)
    res = EffectsResult(contrasts=pooled, contrasts_by_job=effect_sizes_by_job(
        paired, contrasts=CONTRASTS, axes=["sex_gender", "age_signal"], sesoi=0.2, alpha=0.05, pooled=pooled))
    section = next(s for s in effects_sections(res) if s.id == "effects")
    html = _environment().get_template(section.template).render(section=section.context)
    assert "Equivalent on average only" in html and "V02 vs BASE in j3 (d = +" in html


def test_the_sesoi_is_related_to_the_pre_registered_thresholds_on_the_normalised_scale():
    from runtime.report.sections.metric_suite.thresholds import sesoi_and_thresholds

    # a 0-100 system: SESOI 0.2 SD with s_p = 16.5 points is 3.3 points = 0.033 normalised, wider than
    # the score-gap PASS threshold 0.02; a 0-1 system with s_p = 0.05 gives 0.01, narrower
    contrasts = pd.DataFrame([
        {"system": "wide", "kind": "variant", "sesoi_score": 3.3, "equivalent": True},
        {"system": "wide", "kind": "axis", "sesoi_score": 3.3, "equivalent": True},
        {"system": "narrow", "kind": "variant", "sesoi_score": 0.01, "equivalent": False},
    ])
    metrics = pd.DataFrame([
        {"system": "wide", "metric": "flip_rate", "variant": "V01", "status": "FAIL"},
        {"system": "wide", "metric": "impact_ratio", "variant": "V01", "status": "INCONCLUSIVE"},
        {"system": "wide", "metric": "score_delta", "variant": "V01", "status": "PASS"},
        {"system": "narrow", "metric": "flip_rate", "variant": "V01", "status": "FAIL"},
    ])
    thresholds = {"research": {"score_delta": {"pass": 0.02, "investigate": 0.05}}}
    lines = sesoi_and_thresholds(contrasts, metrics, thresholds=thresholds,
                                 score_range={"wide": (0.0, 100.0), "narrow": (0.0, 1.0)}, sesoi=0.2)
    assert len(lines) == 3
    assert lines[0].startswith("For <code>narrow</code> the SESOI of ±0.2 SD is ±0.0100 on the normalised")
    assert "no wider than the pre-registered score-gap threshold (|Δ| ≤ 0.02 to PASS)" in lines[0]
    assert lines[1].startswith("For <code>wide</code> the SESOI of ±0.2 SD is ±0.0330 on the normalised")
    assert "wider than the pre-registered score-gap threshold (|Δ| ≤ 0.02 to PASS, its 95% interval inside)" in lines[1]
    # the rank-based sentence only where variant contrasts are equivalent (not for 'narrow')
    assert "2 rank-based results are INCONCLUSIVE or FAIL for <code>wide</code>" in lines[2]
    assert "(1 flip rate, 1 impact ratio)" in lines[2]
    # a system id is escaped, not read as markup
    odd = contrasts.assign(system="<b>x</b>")
    lines = sesoi_and_thresholds(odd, metrics.assign(system="<b>x</b>"), thresholds=thresholds,
                                 score_range={"<b>x</b>": (0.0, 1.0)}, sesoi=0.2)
    assert lines[0].startswith("Here the SESOI")  # one system: not named
    assert "for <code>&lt;b&gt;x&lt;/b&gt;</code> in the counterfactual" in lines[1]


def test_a_valid_verdict_says_which_selection_ratio_the_audit_could_detect():
    """A regulator's read of the example (stop 58): page 4 said "VALID" while no category's score test detected
    a selection ratio above 0.78 with the declared power. The verdict names the range of the categories' smallest
    detectable ratios (power.csv at each category's family level); without power it says nothing of it."""
    from runtime.analysis.effects import EffectsResult
    from runtime.report.render import _environment
    from compiler.power import TEST_MODEL, TEST_WILCOXON
    from runtime.report.sections.effects import detectable_range, effects_sections

    rows = [("s1", "default", "V01", 0.05, 0.78), ("s1", "default", "V01", 0.005, 0.74),
            ("s1", "default", "V02", 0.05, 0.80), ("s1", "default", "V02", 0.005, 0.755),
            ("s1", "default", "V03", 0.005, float("nan"))]  # no MDE (zero spread): left out
    power = pd.DataFrame(rows, columns=["system", "condition", "category", "level", "mde_ratio"]).assign(
        test=TEST_WILCOXON, n=200, power=0.6, n_for_80=300, mde_shift=0.01, mde_d=0.3)
    axis = power.iloc[:1].assign(category="sex_gender: F", test=TEST_MODEL, mde_ratio=0.98)  # not a category
    power = pd.concat([power, axis], ignore_index=True)
    assert detectable_range(power) == {"low": "0.740", "high": "0.755", "n": "2"}
    assert detectable_range(None) == {} and detectable_range(power.iloc[4:]) == {}  # V03 without MDE, the axis
    res = EffectsResult(power=power, verdict="VALID")
    section = next(s for s in effects_sections(res) if s.id == "validity-verdict")
    text = " ".join(_environment().get_template(section.template).render(section=section.context).split())
    assert ("with the declared power, the score tests detect a selection ratio of <strong>0.740 or lower</strong> "
            'in every category (the "Detectable selection ratio" of the 2 categories under <a href="#headline">'
            "Findings by protected category</a> is 0.740 to 0.755); a smaller loss of selection may go unseen") in text
    section = next(s for s in effects_sections(EffectsResult(verdict="VALID")) if s.id == "validity-verdict")
    text = " ".join(_environment().get_template(section.template).render(section=section.context).split())
    assert "detect a selection ratio" not in text and "see the minimum detectable effects" in text
