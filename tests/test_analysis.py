"""runtime.analysis: hand-computed values, contracts, determinism, edge cases (seed 000 §3.4-3.6)."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd
import pytest

from compiler import catalog
from runtime.analysis import (COLUMNS, DRIFT_COLUMNS, RISK_COLUMNS, AnalysisResult, analyse,
                              classify, frame, metric_ids, n_bootstrap_cells, qualification_drift,
                              registry, round_significant)
from runtime.analysis.merit import abs_interval

K2 = {"counterfactual": 2, "group": 2, "merit": 2}


def _rank(frame_: pd.DataFrame) -> pd.Series:
    """Rank within (system, condition, replicate, job, variant): score desc, cv_id asc, 1 = best."""
    ordered = frame_.sort_values(["system", "condition", "replicate", "job_id", "variant", "score",
                                  "cv_id"], ascending=[True] * 5 + [False, True])
    ranks = ordered.groupby(["system", "condition", "replicate", "job_id", "variant"]).cumcount() + 1
    return ranks.reindex(frame_.index)


def tiny_frame() -> pd.DataFrame:
    """2 jobs x 4 cvs x 2 variants on a 0-100 score scale (score_range (0, 100)).

    job  cv  BASE score/rank  V1 score/rank  match
    J1   a   90 / 1           80 / 1         1
    J1   b   70 / 2           40 / 3         0
    J1   c   50 / 3           56 / 2         1
    J1   d   30 / 4           18 / 4         0
    J2   a   80 / 1           49 / 2         0
    J2   b   60 / 2           64 / 1         1
    J2   c   40 / 3           35 / 3         0
    J2   d   20 / 4           13 / 4         1
    """
    rows = []
    base = {"J1": [90, 70, 50, 30], "J2": [80, 60, 40, 20]}
    var = {"J1": [80, 40, 56, 18], "J2": [49, 64, 35, 13]}
    match = {"J1": [1, 0, 1, 0], "J2": [0, 1, 0, 1]}
    for job in ("J1", "J2"):
        for i, cv in enumerate("abcd"):
            for variant, scores in (("BASE", base), ("V1", var)):
                rows.append({"system": "sys", "condition": "plain", "replicate": 0, "job_id": job,
                             "cv_id": cv, "variant": variant, "score": float(scores[job][i]),
                             "is_true_match": match[job][i], "sex_gender": "x"})
    df = pd.DataFrame(rows)
    df["rank"] = _rank(df)
    return df


def run(df: pd.DataFrame, *, seed: int = 11, n_bootstrap: int = 1000, k=K2,
        score_range=None, ranking: str = "per_variant", **kw) -> AnalysisResult:
    """The hand computations below follow seed 000's per-variant ranking (§3.3); swap-in is checked
    against the independent implementation in test_analysis_reference and in test_ties."""
    if score_range is None:
        score_range = {s: (0.0, 100.0) for s in df["system"].unique()}
    return analyse(df, reference="BASE", k=k, alpha=0.05, n_bootstrap=n_bootstrap, seed=seed, ranking=ranking,
                   thresholds=catalog.default_thresholds(), score_range=score_range, **kw)


@pytest.fixture(scope="module")
def tiny() -> AnalysisResult:
    return run(tiny_frame())


def cell(result: AnalysisResult, metric_id: str, variant: str) -> pd.Series:
    m = result.metrics
    sel = m[(m["metric"] == metric_id) & (m["variant"] == variant)]
    assert len(sel) == 1
    return sel.iloc[0]


# --------------------------------------------------------------------------- hand-computed values

def test_tiny_ranks_are_as_documented():
    df = tiny_frame().set_index(["job_id", "cv_id", "variant"])["rank"]
    assert df.loc[("J1", "b", "V1")] == 3 and df.loc[("J1", "c", "V1")] == 2
    assert df.loc[("J2", "a", "V1")] == 2 and df.loc[("J2", "b", "V1")] == 1


def by_interval(row, a: float, b: float) -> str:
    """The interval status written out (issue 29 §1): inside [a, b] PASS, disjoint FAIL, else INCONCLUSIVE."""
    lo, hi = row["ci_low"], row["ci_high"]
    return "PASS" if a <= lo and hi <= b else "FAIL" if hi < a or lo > b else "INCONCLUSIVE"


def test_hand_score_delta(tiny):
    # Δ (normalised /100): J1 a -0.10, b -0.30, c +0.06, d -0.12; J2 a -0.31, b +0.04, c -0.05,
    # d -0.07. Sum -0.85, mean -0.85 / 8 = -0.10625.
    # Wilcoxon: |Δ| ranks 0.04(+)1 0.05(-)2 0.06(+)3 0.07(-)4 0.10(-)5 0.12(-)6 0.30(-)7 0.31(-)8
    # W+ = 1 + 3 = 4; exact (n = 8, no ties): subsets of {1..8} with sum <= 4:
    # {} {1} {2} {3} {1,2} {4} {1,3} = 7, p = 2 * 7 / 256 = 0.0546875.
    r = cell(tiny, "score_delta", "V1")
    assert r["value"] == pytest.approx(-0.10625, abs=1e-12)
    assert r["p_value"] == pytest.approx(0.0546875, abs=1e-12)
    assert r["test"] == "wilcoxon" and r["n"] == 8
    assert r["ci_low"] <= r["value"] <= r["ci_high"] < 0
    # |−0.10625| > 0.05 -> FAIL in both tiers on the point estimate (seed 000 Table 3).
    assert (r["status_seed000"], r["status_seed000_operational"]) == ("FAIL", "FAIL")
    # the interval decides (issue 29 §1): PASS band [-0.02, 0.02] (research), [-0.04, 0.04] (operational)
    assert (r["pass_low"], r["pass_high"], r["decision_on"]) == (-0.02, 0.02, "value")
    assert (r["status"], r["status_operational"]) == (by_interval(r, -0.02, 0.02), by_interval(r, -0.04, 0.04))


def test_hand_marc(tiny):
    # Rank changes: J1 a 0, b +1, c -1, d 0; J2 a +1, b -1, c 0, d 0 -> MARC_raw = 4 / 8 = 0.5,
    # MARC / K = 0.5 / 2 = 0.25 <= 0.50 -> PASS.
    # Wilcoxon on ranks: 4 zero differences dropped, +1 -1 +1 -1 all tied, rank 2.5 each:
    # W+ = W- = 5, the centre of the symmetric null distribution (with ties and n = 8 <= 13
    # scipy's default enumerates all 2^8 sign flips) -> two-sided p = min(1, 2 * P(W+ <= 5)) = 1.
    r = cell(tiny, "marc", "V1")
    assert r["marc_raw"] == pytest.approx(0.5)
    assert r["value"] == pytest.approx(0.25)
    assert r["p_value"] == pytest.approx(1.0)
    assert r["k"] == 2
    assert r["status_seed000"] == "PASS" and r["status"] == by_interval(r, 0.0, 0.5)


def test_hand_flip_rate(tiny):
    # K = 2. J1: BASE top {a, b}, V1 top {a, c}: b in->out, c out->in. J2: top {a, b} both.
    # n_in,out = 1, n_out,in = 1, flip rate = 2 / 8 = 0.25 -> FAIL (> 0.10).
    # flip_out_rate = 1 / 4 (ref in), flip_in_rate = 1 / 4 (ref out).
    # Wilson, z = 1.959964, p = 0.25, n = 8: denom = 1 + z²/n = 1.480182;
    # centre = (0.25 + z²/16) / denom = 0.331103; half = z·sqrt(p(1-p)/n + z²/(4n²)) / denom
    # = 1.959964·sqrt(0.0234375 + 0.0150057) / 1.480182 = 0.259623 -> [0.071479, 0.590725].
    # McNemar exact, b = c = 1: p = min(1, 2·P(Bin(2, .5) <= 1)) = min(1, 1.5) = 1.
    r = cell(tiny, "flip_rate", "V1")
    assert r["value"] == pytest.approx(0.25)
    assert (r["n_in_out"], r["n_out_in"]) == (1, 1)
    assert r["flip_out_rate"] == pytest.approx(0.25) and r["flip_in_rate"] == pytest.approx(0.25)
    assert r["ci_low"] == pytest.approx(0.071479, abs=1e-6)
    assert r["ci_high"] == pytest.approx(0.590725, abs=1e-6)
    assert r["p_value"] == pytest.approx(1.0) and r["test"] == "mcnemar_exact"
    # Wilson interval wholly above the PASS band [0, 0.05]: FAIL on the interval too
    assert r["status_seed000"] == "FAIL" and r["status"] == "FAIL"
    # McNemar p = 1 establishes no side (issue 29 §3)
    assert r["disadvantaged"] in ("direction not established", "")


def test_hand_retention_and_impact_ratio(tiny):
    # J1: B = {a, b}, V = {a, c} -> 1/2; J2: B = V = {a, b} -> 1. Macro 0.75 (INVESTIGATE:
    # 0.70 <= 0.75 < 0.80). retained 3, slots 4.
    # Interval (issue 39 §2, methods 15): the Jeffreys interval of 0.75 at the effective slots 4 / max(deff, 1), deff
    # the candidate bootstrap's variance over the binomial 0.75 * 0.25 / 4, both named in the row's notes.
    # Impact ratio = 0.75 / 1 = 0.75 (INVESTIGATE); Fisher [[3, 1], [4, 0]]: the one
    # non-retained slot is in either row with prob 1/2 each -> p = 1.
    import re

    from scipy.stats import beta

    def jeffreys(p, n):   # Beta(x + 1/2, n - x + 1/2) quantiles, x = p n (scipy, independent of statsmodels)
        return beta.ppf(0.025, p * n + 0.5, n - p * n + 0.5), beta.ppf(0.975, p * n + 0.5, n - p * n + 0.5)

    r = cell(tiny, "retention_rate", "V1")
    assert r["value"] == pytest.approx(0.75)
    assert (r["retained"], r["slots"], r["jobs_used"]) == (3, 4, 2)
    n_eff, deff = map(float, re.search(r"effective sample size ([0-9.e+-]+) \(design effect ([0-9.e+-]+)", r["notes"]).groups())
    assert n_eff == pytest.approx(4 / max(deff, 1.0), rel=1e-2)   # deff printed to 3 digits
    assert (r["ci_low"], r["ci_high"]) == pytest.approx(jeffreys(0.75, n_eff), abs=1e-3)
    assert 0.75 - r["ci_low"] > r["ci_high"] - 0.75   # longer below than above near 1
    # methods 11: the Monte Carlo SE of the ends; methods 15: ~0 where the truncation binds far below deff = 1 (the
    # ends read the 4 slots whatever the resamples)
    assert (r["ci_mc_se"] == pytest.approx(0.0, abs=1e-9)) if deff < 0.8 else (r["ci_mc_se"] > 0)
    assert r["status_seed000"] == "INVESTIGATE" and math.isnan(r["p_value"]) and r["test"] == ""
    assert r["status"] == "INCONCLUSIVE"  # the interval straddles the PASS band's 0.8
    ir = cell(tiny, "impact_ratio", "V1")
    assert ir["value"] == pytest.approx(0.75)
    assert ir["p_value"] == pytest.approx(1.0) and ir["test"] == "fisher_exact"
    n_ir, deff_ir = map(float, re.search(r"effective sample size ([0-9.e+-]+) \(design effect ([0-9.e+-]+)", ir["notes"]).groups())
    assert n_ir == pytest.approx(4 / max(deff_ir, 1.0), rel=1e-2)   # its own resamples (the impact_ratio stream)
    assert (ir["ci_low"], ir["ci_high"]) == pytest.approx(jeffreys(0.75, n_ir), abs=1e-3)
    assert ir["status_seed000"] == "INVESTIGATE" and ir["status"] == "INCONCLUSIVE"


def test_hand_recall_and_ndcg(tiny):
    # K = 2. J1 matches {a, c}: V1 top {a, c} -> 2/2 = 1; J2 matches {b, d}: V1 top {b, a} -> 1/2.
    # Recall 0.75 (INVESTIGATE); BASE: J1 top {a, b} -> 1/2, J2 {a, b} -> 1/2 -> 0.5 (FAIL).
    # nDCG: J1 V1 rel (1, 1) = ideal -> 1; J2 V1 rel (1, 0): DCG 1, IDCG 1 + 1/log2 3 = 1.630930
    # -> 0.613147; mean 0.806574 (PASS). BASE: J1 rel (1, 0) -> 0.613147; J2 rel (0, 1) ->
    # 0.630930 / 1.630930 = 0.386853; mean 0.5 (FAIL).
    r = cell(tiny, "recall_at_k", "V1")
    assert r["value"] == pytest.approx(0.75) and r["status_seed000"] == "INVESTIGATE"
    assert r["status"] == by_interval(r, 0.8, 1.0)
    assert (r["tp"], r["p"], r["jobs_used"]) == (3, 4, 2)
    assert "max attainable" not in r["notes"]
    rb = cell(tiny, "recall_at_k", "BASE")
    assert rb["value"] == pytest.approx(0.5) and rb["status_seed000"] == "FAIL"
    assert rb["status"] == by_interval(rb, 0.8, 1.0)
    n = cell(tiny, "ndcg_at_k", "V1")
    assert n["value"] == pytest.approx((1 + 1 / (1 + 1 / math.log2(3))) / 2)
    assert n["value"] == pytest.approx(0.8065736, abs=1e-7) and n["status_seed000"] == "PASS"
    assert n["status"] == by_interval(n, 0.8, 1.0)
    for row in (r, rb, n):
        assert 0 <= row["ci_low"] <= row["value"] <= row["ci_high"] <= 1
    nb = cell(tiny, "ndcg_at_k", "BASE")
    assert nb["value"] == pytest.approx(0.5) and nb["status_seed000"] == "FAIL"
    assert nb["status"] == by_interval(nb, 0.8, 1.0)


def test_hand_equal_opportunity_and_odds(tiny):
    # Pooled, K = 2: P = 4 (J1 a c, J2 b d), N = 4.
    # TP_V1 = 2 (J1 a c) + 1 (J2 b) = 3 -> TPR 0.75; TP_BASE = 1 + 1 = 2 -> TPR 0.5; gap 0.25 FAIL.
    # FP_V1 = 0 + 1 (J2 a) = 1 -> FPR 0.25; FP_BASE = 1 (J1 b) + 1 (J2 a) -> 0.5; |ΔFPR| = 0.25.
    # Equalized odds = max(0.25, 0.25) = 0.25 FAIL.
    eo = cell(tiny, "equal_opportunity_gap", "V1")
    assert eo["value"] == pytest.approx(0.25) and eo["status_seed000"] == "FAIL"
    assert eo["status"] == by_interval(eo, 0.0, 0.1)
    assert (eo["tp"], eo["p"], eo["tpr"]) == (3, 4, pytest.approx(0.75))
    assert 0 <= eo["ci_low"] <= eo["value"] <= eo["ci_high"] <= 1
    od = cell(tiny, "equalized_odds_gap", "V1")
    assert od["value"] == pytest.approx(0.25) and od["status_seed000"] == "FAIL"
    assert od["status"] == by_interval(od, 0.0, 0.1)
    assert (od["fp"], od["negatives"]) == (1, 4)
    assert od["tpr"] == pytest.approx(0.75) and od["fpr"] == pytest.approx(0.25)
    assert 0 <= od["ci_low"] <= od["value"] <= od["ci_high"] <= 1
    for m in ("equal_opportunity_gap", "equalized_odds_gap"):
        ref = cell(tiny, m, "BASE")
        assert (ref["value"], ref["ci_low"], ref["ci_high"]) == (0.0, 0.0, 0.0)


def test_hand_reference_rows(tiny):
    expected = {"score_delta": 0.0, "marc": 0.0, "flip_rate": 0.0, "retention_rate": 1.0,
                "impact_ratio": 1.0}
    for metric_id, value in expected.items():
        r = cell(tiny, metric_id, "BASE")
        assert r["value"] == value
        assert r["ci_low"] <= value <= r["ci_high"]
        assert "reference variant compared with itself" in r["notes"]
    # A reference row tests nothing: no p-value, no test name, never in BH.
    for metric_id in expected:
        r = cell(tiny, metric_id, "BASE")
        assert math.isnan(r["p_value"]) and math.isnan(r["p_adj"]) and r["test"] == ""
        assert "p-value left empty" not in r["notes"]


def test_hand_bh(tiny):
    # Defined p-values (reference rows carry none): score_delta V1 0.0546875, marc V1 1,
    # flip V1 1, impact V1 1. Under per-variant ranking the rank and selection tests cannot reject
    # (flips in = flips out per job; the reference's retention is 1 by construction): they keep their
    # raw p-value but stay out of BH, so m = 1 and score_delta's p_adj is its p-value.
    m = tiny.metrics
    assert m["p_value"].notna().sum() == 4
    assert cell(tiny, "score_delta", "V1")["p_adj"] == pytest.approx(0.0546875)
    for metric_id in ("marc", "flip_rate", "impact_ratio"):
        r = cell(tiny, metric_id, "V1")
        assert r["p_value"] == 1.0 and math.isnan(r["p_adj"]), metric_id
        assert "not informative in this design (per-variant ranking" in r["notes"], metric_id
        assert "left out of BH" in r["notes"]


def test_hand_risk(tiny):
    # 18 rows. FAIL: V1 score_delta, flip, EO, EOdds + BASE recall, nDCG = 6;
    # INVESTIGATE: V1 retention, impact ratio, recall = 3; PASS 9.
    # Risk = (3·6 + 3) / (3·18) = 21 / 54 = 0.388889 -> high (both tiers: the operational score
    # delta band (0.04, 0.05) still fails 0.10625).
    risk = tiny.risk
    assert list(risk.columns) == list(RISK_COLUMNS)
    assert len(risk) == 4
    for _, row in risk.iterrows():
        assert (row["n_total"], row["n_fail"], row["n_investigate"], row["n_pass"], row["n_na"]) \
            == (18, 6, 3, 9, 0)
        assert row["risk_score"] == pytest.approx(21 / 54)
        assert row["band"] == "high"
    assert list(risk["system"]) == ["sys", "sys", "ALL", "ALL"]
    assert list(risk["tier"]) == ["research", "operational"] * 2


def test_hand_drift(tiny):
    # |Δ| = 0.10 0.30 0.06 0.12 0.31 0.04 0.05 0.07: mean 1.05 / 8 = 0.13125, median
    # (0.07 + 0.10) / 2 = 0.085, p95 at position 0.95·7 = 6.65 -> 0.30 + 0.65·0.01 = 0.3065, max 0.31.
    d = tiny.drift
    assert list(d.columns) == list(DRIFT_COLUMNS)
    assert len(d) == 1
    row = d.iloc[0]
    assert (row["system"], row["condition"], row["variant"], row["n"]) == ("sys", "plain", "V1", 8)
    assert row["mean_abs_delta"] == pytest.approx(0.13125)
    assert row["median_abs_delta"] == pytest.approx(0.085)
    assert row["p95_abs_delta"] == pytest.approx(0.3065)
    assert row["max_abs_delta"] == pytest.approx(0.31)
    pd.testing.assert_frame_equal(
        qualification_drift(tiny_frame(), reference="BASE", score_range={"sys": (0, 100)}), d)


# --------------------------------------------------------------------------- frame contract

def test_columns_and_order(tiny):
    m = tiny.metrics
    assert list(m.columns) == list(COLUMNS)
    assert list(m["metric"]) == [mid for mid in catalog.METRIC_IDS for _ in range(2)]
    assert list(m["variant"]) == ["BASE", "V1"] * len(catalog.METRIC_IDS)
    assert set(m["direction"]) == {"lower", "higher"}
    for _, r in m.iterrows():
        assert r["family"] == catalog.METRICS[r["metric"]].family
        assert r["direction"] == catalog.METRICS[r["metric"]].direction
        assert r["reference"] == "BASE"
        assert r["k"] == 2


def test_sort_order_several_systems_and_variants():
    df = tiny_frame()
    v0 = df[df["variant"] == "V1"].assign(variant="A0")
    other = pd.concat([df, v0]).assign(system="alpha")
    both = pd.concat([df, v0, other], ignore_index=True)
    res = run(both, n_bootstrap=50)
    m = res.metrics
    assert list(m["system"].unique()) == ["alpha", "sys"]
    first = m[m["system"] == "alpha"]
    assert list(first["variant"][:3]) == ["BASE", "A0", "V1"]
    assert len(m) == 2 * 3 * len(catalog.METRIC_IDS)
    assert n_bootstrap_cells(both, "BASE") == len(m)
    assert list(res.risk["system"]) == ["alpha", "alpha", "sys", "sys", "ALL", "ALL"]


def test_reference_rows_present_for_every_metric(tiny):
    m = tiny.metrics
    assert set(m.loc[m["variant"] == "BASE", "metric"]) == set(catalog.METRIC_IDS)


def test_registry_matches_catalogue():
    assert metric_ids() == catalog.METRIC_IDS
    for metric_id in catalog.METRIC_IDS:
        assert callable(registry.get_metric(metric_id))


def test_registry_refuses_unknown_and_duplicate_ids():
    with pytest.raises(ValueError) as exc:
        registry.metric("nope")
    assert str(exc.value) == registry.ERR_UNKNOWN_METRIC.format(
        metric_id="nope", known=", ".join(catalog.METRIC_IDS))
    with pytest.raises(ValueError, match="already registered"):
        registry.metric("flip_rate")(lambda p: None)
    with pytest.raises(KeyError, match="no implementation registered"):
        registry.get_metric("nope")


def test_progress_reports_increments_adding_up_to_the_total():
    seen: list[int] = []
    df = tiny_frame()
    run(df, n_bootstrap=20, progress=seen.append)
    total = n_bootstrap_cells(df, "BASE")
    assert total == 20  # 2 variants x 10 metrics
    assert seen == [1] * total


def test_score_range_normalises_score_delta():
    df = tiny_frame()
    a = run(df, n_bootstrap=20)
    b = run(df.assign(score=df["score"] / 100), n_bootstrap=20, score_range={"sys": (0.0, 1.0)})
    for res in (a, b):
        assert cell(res, "score_delta", "V1")["value"] == pytest.approx(-0.10625)


# --------------------------------------------------------------------------- determinism

def test_same_seed_gives_identical_csv():
    df = tiny_frame()
    assert run(df, seed=5).metrics.to_csv() == run(df, seed=5).metrics.to_csv()


def test_other_seed_changes_cis_not_values():
    df = tiny_frame()
    a, b = run(df, seed=5).metrics, run(df, seed=6).metrics
    cols = ["value", "p_value", "p_adj", "status_seed000", "status_seed000_operational"]  # interval statuses move with the CIs
    pd.testing.assert_frame_equal(a[cols], b[cols])
    assert not a["ci_low"].equals(b["ci_low"]) or not a["ci_high"].equals(b["ci_high"])


def test_row_order_of_input_does_not_matter():
    df = tiny_frame()
    shuffled = df.sample(frac=1.0, random_state=3)
    assert run(df, seed=5).metrics.to_csv() == run(shuffled, seed=5).metrics.to_csv()


# --------------------------------------------------------------------------- undefined values, warnings

def test_identical_variant_gives_empty_p_without_warnings():
    df = tiny_frame()
    same = df[df["variant"] == "BASE"].assign(variant="V0")
    df = pd.concat([df, same], ignore_index=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        res = run(df, n_bootstrap=200)
    for metric_id in ("score_delta", "marc"):
        r = cell(res, metric_id, "V0")
        assert math.isnan(r["p_value"]) and math.isnan(r["p_adj"])
        assert r["value"] == 0 and (r["ci_low"], r["ci_high"]) == (0.0, 0.0)
        assert "wilcoxon undefined" in r["notes"]


def test_unknown_labels_make_merit_na():
    df = tiny_frame().assign(is_true_match=np.nan)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        res = run(df, n_bootstrap=50)
    merit = res.metrics[res.metrics["family"] == "merit"]
    assert len(merit) == 8
    assert (merit["status"] == catalog.STATUS_NA).all()
    assert (merit["status_operational"] == catalog.STATUS_NA).all()
    assert merit["value"].isna().all() and merit["ci_low"].isna().all()
    assert merit["notes"].str.contains("is_true_match unknown").all()
    risk = res.risk.iloc[0]
    assert (risk["n_total"], risk["n_na"]) == (10, 8)


def test_job_without_labels_or_matches_is_excluded_with_note():
    df = tiny_frame()
    df.loc[df["job_id"] == "J2", "is_true_match"] = np.nan
    res = run(df, n_bootstrap=50)
    r = cell(res, "recall_at_k", "V1")
    assert r["value"] == pytest.approx(1.0)  # J1 only
    assert "1 job(s) with unknown is_true_match excluded" in r["notes"]
    assert r["ci_low"] <= 1.0 == r["ci_high"] and not math.isnan(r["ci_low"])
    df = tiny_frame()
    df.loc[df["job_id"] == "J2", "is_true_match"] = 0
    r = cell(run(df, n_bootstrap=50), "ndcg_at_k", "V1")
    assert r["value"] == pytest.approx(1.0)
    assert "1 job(s) without a true match excluded" in r["notes"]
    # One job: the candidate-level bootstrap within the job still gives an interval.
    assert r["ci_low"] <= 1.0 == r["ci_high"] and not math.isnan(r["ci_low"])


def test_recall_cap_is_noted():
    # K = 1 with 2 true matches per job: each job's recall is at most 1/2.
    df = tiny_frame()
    r = cell(run(df, n_bootstrap=50, k={"counterfactual": 2, "group": 2, "merit": 1}),
             "recall_at_k", "V1")
    assert "max attainable = 0.5" in r["notes"]


def test_single_job_retention_has_a_candidate_bootstrap_interval():
    # One job, K = 2: BASE top {a, b}, V1 top {a, c}: retention 1/2. Resampling the 4 candidates
    # within the job: resamples of 0 (a and b redrawn as b, b: no retained slot), 1/2 and 1 (a, a); their
    # variance over the binomial 1/4 / 2 is the design effect, and the interval is Jeffreys' at 2 / max(deff, 1)
    # slots, symmetric about 1/2 (issue 39 §2, methods 15).
    import re

    from scipy.stats import beta

    df = tiny_frame()
    df = df[df["job_id"] == "J1"]
    res = run(df, n_bootstrap=2000)
    for metric_id in ("retention_rate", "impact_ratio"):
        r = cell(res, metric_id, "V1")
        assert r["value"] == pytest.approx(0.5) and "Jeffreys interval" in r["notes"]
        n_eff, deff = map(float, re.search(r"effective sample size ([0-9.e+-]+) \(design effect ([0-9.e+-]+)",
                                           r["notes"]).groups())
        assert n_eff == pytest.approx(2 / max(deff, 1.0), rel=1e-2) and 0.5 < deff < 2   # deff printed to 3 digits
        a = n_eff / 2 + 0.5
        assert (r["ci_low"], r["ci_high"]) == pytest.approx((beta.ppf(0.025, a, a), beta.ppf(0.975, a, a)), abs=1e-3)
        assert 0 < r["ci_low"] < 0.5 < r["ci_high"] < 1


def test_mcnemar_switches_to_chi2_at_25_discordant():
    # 30 candidates in one job, K = 15; the variant reverses the order: top 15 and bottom 15 swap.
    n = 30
    rows = []
    for variant, order in (("BASE", range(n)), ("V1", range(n - 1, -1, -1))):
        for pos, i in enumerate(order):
            rows.append({"system": "s", "condition": "c", "replicate": 0, "job_id": "J",
                         "cv_id": f"cv{i:02d}", "variant": variant, "score": float(n - pos),
                         "rank": pos + 1, "is_true_match": i % 2})
    res = run(pd.DataFrame(rows), n_bootstrap=50,
              k={"counterfactual": 15, "group": 15, "merit": 15}, score_range={"s": (0, 30)})
    r = cell(res, "flip_rate", "V1")
    assert r["n_in_out"] + r["n_out_in"] == 30
    # b = c = 15: continuity-corrected chi² = (|15 − 15| − 1)² / 30 = 1/30 -> p = 0.855132.
    assert r["test"] == "mcnemar_chi2_cc" and r["p_value"] == pytest.approx(0.855132, abs=1e-6)
    assert r["value"] == 1.0


# --------------------------------------------------------------------------- classification

def test_threshold_edge_rounds_before_classifying():
    bounds = catalog.default_thresholds()["research"]["flip_rate"]
    noisy = 0.05000000000000004
    assert noisy > 0.05
    assert classify(noisy, metric_id="flip_rate", bounds=bounds) == "PASS"
    assert classify(0.0500001, metric_id="flip_rate", bounds=bounds) == "INVESTIGATE"
    assert round_significant(noisy) == 0.05


def test_classify_directions_and_abs():
    t = catalog.default_thresholds()["research"]
    assert classify(-0.03, metric_id="score_delta", bounds=t["score_delta"]) == "INVESTIGATE"
    assert classify(-0.01, metric_id="score_delta", bounds=t["score_delta"]) == "PASS"
    assert classify(-0.06, metric_id="score_delta", bounds=t["score_delta"]) == "FAIL"
    assert classify(0.80, metric_id="impact_ratio", bounds=t["impact_ratio"]) == "PASS"
    assert classify(0.7999999999999999, metric_id="impact_ratio", bounds=t["impact_ratio"]) == "PASS"
    assert classify(0.70, metric_id="impact_ratio", bounds=t["impact_ratio"]) == "INVESTIGATE"
    assert classify(0.69, metric_id="impact_ratio", bounds=t["impact_ratio"]) == "FAIL"
    assert classify(math.nan, metric_id="marc", bounds=t["marc"]) == catalog.STATUS_NA


def test_value_is_stored_at_full_precision(tiny):
    assert cell(tiny, "ndcg_at_k", "V1")["value"] == (1 + 1 / (1 + 1 / math.log2(3))) / 2


def test_abs_interval_mapping():
    assert abs_interval(-0.1, 0.3) == (0.0, 0.3)
    assert abs_interval(-0.4, -0.1) == (0.1, 0.4)
    assert abs_interval(0.2, 0.5) == (0.2, 0.5)
    assert all(math.isnan(x) for x in abs_interval(math.nan, 0.1))


# --------------------------------------------------------------------------- errors

@pytest.mark.parametrize("mutate, message", [
    (lambda df: df.drop(columns=["rank"]), frame.ERR_MISSING_COLUMNS.format(missing="rank")),
    (lambda df: df.iloc[0:0], frame.ERR_EMPTY),
    (lambda df: df.replace({"variant": {"BASE": "B0"}}),
     frame.ERR_NO_REFERENCE.format(reference="BASE", system="sys", condition="plain",
                                   present="B0, V1")),
])
def test_frame_errors(mutate, message):
    with pytest.raises(ValueError) as exc:
        run(mutate(tiny_frame()), n_bootstrap=10)
    assert str(exc.value) == message


def test_unpaired_and_duplicate_rows_are_refused():
    df = tiny_frame()
    missing = df.drop(index=df[(df["variant"] == "V1") & (df["cv_id"] == "d")].index)
    with pytest.raises(ValueError, match="is not paired with reference 'BASE': 2 base candidate"):
        run(missing, n_bootstrap=10)
    dup = pd.concat([df, df.iloc[[0]].assign(replicate=1)])
    with pytest.raises(ValueError, match="1 duplicate|2 duplicate"):
        run(dup, n_bootstrap=10)


def test_argument_errors():
    df = tiny_frame()
    with pytest.raises(ValueError, match="score_range has no entry for system 'sys'"):
        run(df, score_range={"other": (0, 1)})
    with pytest.raises(ValueError, match="lo < hi"):
        run(df, score_range={"sys": (1, 1)})
    with pytest.raises(ValueError, match="n_bootstrap must be a positive integer"):
        run(df, n_bootstrap=0)
    with pytest.raises(ValueError, match="k must map each family"):
        run(df, k={"counterfactual": 2, "group": 2})
    bad = catalog.default_thresholds()
    del bad["operational"]["ndcg_at_k"]
    with pytest.raises(ValueError) as exc:
        analyse(df, reference="BASE", k=K2, alpha=0.05, n_bootstrap=10, seed=1, thresholds=bad,
                score_range={"sys": (0, 100)})
    assert str(exc.value) == ("thresholds lack tier 'operational', metric 'ndcg_at_k' "
                              "(need 'pass' and 'investigate')")
    with pytest.raises(ValueError, match="is_true_match must be 0, 1 or missing"):
        run(df.assign(is_true_match=2), n_bootstrap=10)


def test_the_catalogue_names_the_test_each_ranking_computes_for_the_impact_ratio():
    """Issue 39 §8: the catalogue's test for the impact ratio is McNemar, what the default (swap-in) ranking
    computes on the paired in/out table; Fisher's exact test runs only under per-variant ranking, where the row
    says it is not informative (the reference's retention is 1 by construction) and leaves it out of BH."""
    assert catalog.METRICS["impact_ratio"].test == "mcnemar"
    swap = cell(run(tiny_frame(), ranking="swap_in", n_bootstrap=200), "impact_ratio", "V1")
    assert swap["test"].startswith("mcnemar_")
    per = cell(run(tiny_frame(), n_bootstrap=200), "impact_ratio", "V1")
    assert per["test"] == "fisher_exact" and "not informative" in per["notes"] and pd.isna(per["p_adj"])
    from runtime.report.sections.metric_suite.texts import TEST_TEXT

    assert TEST_TEXT[swap["test"]].startswith("McNemar") and TEST_TEXT["fisher_exact"].startswith("Fisher")
