"""The selection ratio, and the selection metrics decided on it (issue 29 §2, issue 30 §2).

By hand on two jobs of six candidates (swap-in top-2 with a tie at the cutoff, and a threshold), and on the
example run's ``paired.csv`` (committed fixture, ``tests/test_decisions_example.py``): a uniform demotion of
0.2 pooled SD planted in one variant FAILs the selection ratio and every row deciding on it, naming the
variant's levels; that variant's noise alone (its mean difference removed) does not FAIL.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from compiler import catalog
from runtime.analysis import analyse

DATA = Path(__file__).parent / "data"
AXES = ("sex_gender", "age_signal", "place_of_residence", "language_signal", "disability_signal")
THRESHOLDS = catalog.default_thresholds()
SELECTION_ROWS = ("flip_rate", "retention_rate", "impact_ratio", "selection_ratio")


def _frame(scores: dict[str, list[list[float]]]) -> pd.DataFrame:
    rows = []
    for variant, jobs in scores.items():
        for j, col in enumerate(jobs):
            for i, s in enumerate(col):
                rows.append({"system": "s", "condition": "c", "replicate": 0, "job_id": f"j{j}", "cv_id": f"cv{i}",
                             "variant": variant, "score": float(s), "rank": i + 1, "is_true_match": int(i < 2)})
    return pd.DataFrame(rows)


#: job 0: cv1 demoted 8 -> 6; job 1: cv0 alone above a tie of cv1 and cv2 at 7 for the second place, cv1
#: demoted 7 -> 6.
HAND = {"BASE": [[9, 8, 7, 6, 5, 4], [8, 7, 7, 5, 3, 2]],
        "V01": [[9, 6, 7, 6, 5, 4], [8, 6, 7, 5, 3, 2]]}


def _m(df: pd.DataFrame, ranking: str = "swap_in", **kw) -> pd.DataFrame:
    res = analyse(df, reference="BASE", k={"counterfactual": 2, "group": 2, "merit": 2}, alpha=0.05,
                  n_bootstrap=200, seed=5, thresholds=THRESHOLDS, score_range={"s": (0.0, 10.0)}, ranking=ranking, **kw)
    return res.metrics.set_index(["metric", "variant"])


def test_selection_ratio_by_hand_top_k_with_a_tie_at_the_cut():
    """Swap-in top-2. Reference selected: job 0 cv0, cv1 (2); job 1 cv0 and cv1/cv2 tied for one place, 1/2
    each (2). Variant: job 0 cv1's 6 ranks below 9 and 7 (out), cv0 in (1); job 1 cv1's 6 is out, cv2's 7 ties
    with cv1's reference 7 behind cv0's 8: in with 1/2, and cv0 in (1.5). Ratio (1 + 1.5) / (2 + 2) = 0.625.
    Lost: job 0 cv1 (1) and job 1 cv1 (1/2); cv2's place is kept in the tie order it shares with its reference
    resume (issue 29 §7): n_in,out = 1.5, n_out,in = 0; McNemar on the rounded table (2 vs 0, exact) p = 0.5."""
    m = _m(_frame(HAND))
    sel = m.loc[("selection_ratio", "V01")]
    assert sel["value"] == pytest.approx(0.625, abs=1e-12)
    assert (sel["n_in_out"], sel["n_out_in"], sel["slots"]) == (1.5, 0.0, 4.0)
    assert sel["p_value"] == pytest.approx(0.5, abs=1e-12) and sel["test"].startswith("mcnemar")
    assert sel["k"] == 2 and sel["decision_on"] == "value"
    assert (sel["pass_low"], sel["pass_high"]) == (0.8, 1.25)
    assert m.loc[("selection_ratio", "BASE"), "value"] == 1.0
    # the flip rate, retention and impact ratio decide on it (one cutoff): its interval, its band
    for metric in ("flip_rate", "retention_rate", "impact_ratio"):
        row = m.loc[(metric, "V01")]
        assert row["decision_on"] == "selection_ratio", metric
        assert (row["decision_low"], row["decision_high"]) == (sel["ci_low"], sel["ci_high"]), metric
        assert (row["pass_low"], row["pass_high"]) == (0.8, 1.25) and row["status"] == sel["status"], metric
    # its McNemar is the flip table's: counted once, on the flip row
    assert m.loc[("flip_rate", "V01"), "p_value"] == sel["p_value"] and "counted once" in sel["notes"]


def test_selection_ratio_by_hand_under_a_threshold():
    """score >= 6.5: reference selected 9, 8, 7 and 8, 7, 7 (6); variant 9, 7 and 8, 7 (4): ratio 2/3,
    whatever K says; each tier's band [0.8, 1.25]."""
    m = _m(_frame(HAND), threshold=6.5)
    sel = m.loc[("selection_ratio", "V01")]
    assert sel["value"] == pytest.approx(2 / 3, abs=1e-12) and pd.isna(sel["k"])
    assert (sel["n_in_out"], sel["n_out_in"], sel["slots"]) == (2.0, 0.0, 6.0)
    assert "selected = score >= 6.5" in sel["notes"]


def test_per_variant_top_k_is_not_applicable_and_the_rows_decide_on_their_values():
    m = _m(_frame(HAND), ranking="per_variant")
    sel = m.loc[("selection_ratio", "V01")]
    assert math.isnan(sel["value"]) and sel["status"] == catalog.STATUS_NA and "1 by construction" in sel["notes"]
    for metric in ("flip_rate", "retention_rate", "impact_ratio"):
        assert m.loc[(metric, "V01"), "decision_on"] == "value"


def test_the_selection_ratio_is_not_in_eq6():
    m = _m(_frame(HAND)).reset_index()
    from runtime.analysis.classify import risk_table

    risk = risk_table(m)
    row = risk[(risk["system"] == "s") & (risk["tier"] == "research")].iloc[0]
    assert row["n_total"] + row["n_na"] == 2 * 9  # two variants x seed 000's nine metrics


# ----------------------------------------------------------------------------- the example's data

@pytest.fixture(scope="module")
def paired() -> pd.DataFrame:
    return pd.read_csv(DATA / "example-paired.csv")


def _with_variant(paired: pd.DataFrame, variant: str, diff: np.ndarray) -> pd.DataFrame:
    """``paired`` with ``variant``'s scores replaced by the reference's plus ``diff`` (candidate order)."""
    out = paired.copy()
    ref = out[out["variant"] == "BASE"].set_index(["job_id", "cv_id"])["score"]
    at = out["variant"] == variant
    keys = list(zip(out.loc[at, "job_id"], out.loc[at, "cv_id"]))
    out.loc[at, "score"] = ref.loc[keys].to_numpy() + diff
    return out


def _example(paired: pd.DataFrame) -> pd.DataFrame:
    levels = {v: {a: str(g[a].iloc[0]) for a in AXES} for v, g in paired.groupby("variant")}
    res = analyse(paired, reference="BASE", k={"counterfactual": 10, "group": 10, "merit": 20}, alpha=0.05,
                  n_bootstrap=300, seed=20261129, thresholds=THRESHOLDS, score_range={"minilm": (0.0, 1.0)},
                  variant_levels=levels)
    return res.metrics.set_index(["metric", "variant"])


def _v04_diff(paired: pd.DataFrame) -> np.ndarray:
    ref = paired[paired["variant"] == "BASE"].set_index(["job_id", "cv_id"])["score"]
    v = paired[paired["variant"] == "V04"]
    return v["score"].to_numpy() - ref.loc[list(zip(v["job_id"], v["cv_id"]))].to_numpy()


def test_a_planted_demotion_of_a_fifth_of_the_pooled_sd_fails_on_the_selection_ratio(paired):
    """V04's noise (its paired differences, mean removed) plus a uniform demotion of 0.2 s_p (s_p: the pooled
    SD of the reference's and V04's scores, 0.166): the selection ratio falls to 0.40 (issue 30: 0.52 without the noise), its
    interval wholly below 0.8, so it and the three rows deciding on it FAIL, naming V04's levels (its McNemar
    rejects after the hierarchy)."""
    diff = _v04_diff(paired)
    ref = paired.loc[paired["variant"] == "BASE", "score"].to_numpy()
    v04 = paired.loc[paired["variant"] == "V04", "score"].to_numpy()
    s_p = math.sqrt((ref.var(ddof=1) + v04.var(ddof=1)) / 2)
    assert 0.16 < s_p < 0.17
    m = _example(_with_variant(paired, "V04", diff - diff.mean() - 0.2 * s_p))
    sel = m.loc[("selection_ratio", "V04")]
    assert 0.3 < sel["value"] < 0.65 and sel["ci_high"] < 0.8, sel[["value", "ci_low", "ci_high"]]
    for metric in SELECTION_ROWS:
        row = m.loc[(metric, "V04")]
        assert row["status"] == "FAIL", metric
        assert row["disadvantaged"].startswith("sex_gender=Female-NA"), (metric, row["disadvantaged"])


def test_the_same_noise_without_the_demotion_does_not_fail(paired):
    """V04's paired differences with their mean removed: churn without direction. The flip rate stays as high
    as seed 000 counts it (seed 000's status FAIL at 0.10), but no row deciding on the selection ratio FAILs."""
    diff = _v04_diff(paired)
    m = _example(_with_variant(paired, "V04", diff - diff.mean()))
    assert m.loc[("flip_rate", "V04"), "value"] > 0.1 and m.loc[("flip_rate", "V04"), "status_seed000"] == "FAIL"
    for metric in SELECTION_ROWS:
        assert m.loc[(metric, "V04"), "status"] in ("PASS", "INCONCLUSIVE"), metric
    assert 0.8 <= m.loc[("selection_ratio", "V04"), "value"] <= 1.25


def test_the_report_says_what_each_selection_row_is_decided_on():
    """The results section of a swap-in run: the selection ratio's table and rule (band [0.8, 1.25]), and every
    flip-rate, retention and impact-ratio row showing the selection ratio's interval it is decided on."""
    from test_report import make_inputs

    from runtime.report import build_core, metric_suite_sections, render_report
    from runtime.report.formatting import fmt_ci

    res = analyse(_frame(HAND), reference="BASE", k={"counterfactual": 2, "group": 2, "merit": 2}, alpha=0.05,
                  n_bootstrap=200, seed=5, thresholds=THRESHOLDS, score_range={"s": (0.0, 10.0)})
    _, _, drift, meta = make_inputs()
    meta = meta.__class__(**{**meta.__dict__, "variants": {"BASE": {"sex_gender": "M"}, "V01": {"sex_gender": "F"}},
                             "axes": ("sex_gender",), "reference": "BASE", "thresholds": THRESHOLDS})
    m = res.metrics
    sections = metric_suite_sections(metrics=m, risk=res.risk, drift=drift.iloc[0:0], meta=meta, headline=res.headline)
    text = " ".join(render_report(build_core(meta), sections).split())
    sel = m[(m["metric"] == "selection_ratio") & (m["variant"] == "V01")].iloc[0]
    assert "Selection ratio" in text
    assert "PASS if the 95% interval of the selection ratio lies in [0.8, 1.25]" in text
    assert "within [0.8, 1.25]" in text  # the thresholds table
    assert text.count(f"selection ratio {fmt_ci(sel['ci_low'], sel['ci_high'])}") >= 3  # flip, retention, impact


def test_under_a_threshold_the_interval_is_the_percentile_interval_widened_by_half_a_selected_place(monkeypatch):
    """Methods 16 (issue 39 §2), kept under a threshold rule in methods 18: the ratio moves in steps of 1/selected,
    its resamples almost continuously, so the percentile interval is widened by half a selected place at each end
    (Hall 1987). On the hand frame at score >= 6.5 (6 selected places): the plain percentile interval of the same
    resamples (the ``selection_ratio`` stream does not depend on the correction) +-1/12, the lower end not below 0,
    with a note; every row deciding on the ratio reads it; the reference keeps its point."""
    from runtime.analysis import selection

    corrected = _m(_frame(HAND), threshold=6.5)
    monkeypatch.setattr(selection, "continuity_corrected", lambda low, high, selected, notes: (low, high, notes))
    plain = _m(_frame(HAND), threshold=6.5)
    sel, raw = corrected.loc[("selection_ratio", "V01")], plain.loc[("selection_ratio", "V01")]
    assert raw["ci_low"] < raw["ci_high"]  # the bootstrap moves: the correction applies
    assert sel["ci_low"] == pytest.approx(max(raw["ci_low"] - 1 / 12, 0.0), abs=1e-12)
    assert sel["ci_high"] == pytest.approx(raw["ci_high"] + 1 / 12, abs=1e-12)
    assert sel["ci_mc_se"] == raw["ci_mc_se"]  # a fixed shift adds no Monte Carlo error
    assert "widened by half a selected place at each end (±0.08333: the ratio moves in steps of 1/6" in sel["notes"]
    assert "widened by half a selected place" not in raw["notes"] and "re-ranked" not in sel["notes"]
    assert "approximate interval: coverage measured under a top-K rule, not at a threshold" in sel["notes"]
    for metric in ("flip_rate", "retention_rate", "impact_ratio"):
        row = corrected.loc[(metric, "V01")]
        assert row["decision_on"] == "selection_ratio"
        assert (row["decision_low"], row["decision_high"]) == (sel["ci_low"], sel["ci_high"]), metric
    ref = corrected.loc[("selection_ratio", "BASE")]
    assert ref["ci_low"] == ref["ci_high"] == 1.0


def test_under_swap_in_top_k_the_interval_is_normal_from_the_smoothed_re_ranked_bootstrap():
    """Methods 18 (issue 39 §2): under swap-in top-K the interval is ``value ± z · SD / selected``, SD that of the
    variant's selected count over smoothed, re-ranked resamples; its Monte Carlo SE is that of a normal SD from B
    resamples, ``half-width / sqrt(2 (B − 1))``; every row deciding on the ratio reads it; the same seed gives the
    same bytes; the reference keeps its point."""
    from runtime.analysis import stats

    m = _m(_frame(HAND))
    sel = m.loc[("selection_ratio", "V01")]
    half = sel["ci_high"] - sel["value"]
    assert half > 0 and sel["value"] - sel["ci_low"] == pytest.approx(min(half, sel["value"]), abs=1e-12)
    sd = float(sel["notes"].split("SD ")[1].split(" ")[0])
    assert half == pytest.approx(stats.Z_975 * sd, rel=1e-3)  # the note prints 4 significant digits
    assert sel["ci_mc_se"] == pytest.approx(half / math.sqrt(2 * 199), rel=1e-12)
    assert "from 200 smoothed, re-ranked candidate resamples" in sel["notes"]
    assert "widened by half a selected place" not in sel["notes"]
    for metric in ("flip_rate", "retention_rate", "impact_ratio"):
        row = m.loc[(metric, "V01")]
        assert (row["decision_low"], row["decision_high"]) == (sel["ci_low"], sel["ci_high"]), metric
    again = _m(_frame(HAND)).loc[("selection_ratio", "V01")]
    assert (again["ci_low"], again["ci_high"]) == (sel["ci_low"], sel["ci_high"])
    ref = m.loc[("selection_ratio", "BASE")]
    assert ref["ci_low"] == ref["ci_high"] == 1.0


def test_swap_in_count_by_hand():
    """Reference 5, 4, 3, 2 and variant 3, 4, 6, 1, top 2, each variant against the other three reference resumes:
    3 ties with the reference 3 behind 4 (one place for two: 1/2), 4 is behind 5 only (in), 6 leads (in), 1 is last
    (out): 2.5."""
    from runtime.analysis.selection import swap_in_count

    got = swap_in_count(np.array([[5.0, 4, 3, 2]]), np.array([[3.0, 4, 6, 1]]), 2)
    assert got.tolist() == [2.5]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 6), st.integers(-2, 2)), min_size=3, max_size=9), st.integers(1, 4))
def test_swap_in_count_matches_the_pairings_own_ranking(cands, k):
    """On whole-point scores (ties everywhere) the resample count on the data equals the variant's tie-averaged top-K
    share that ``Pairing.in_top`` gives under swap-in ranking (ranks from :func:`runtime.analysis.frame.cohorts`)."""
    from runtime.analysis import _pairing
    from runtime.analysis.frame import cohorts
    from runtime.analysis.selection import swap_in_count

    ref = np.array([c[0] for c in cands], dtype=float)
    var = ref + np.array([c[1] for c in cands], dtype=float)
    frame = _frame({"BASE": [ref.tolist()], "V01": [var.tolist()]})
    cohort = next(iter(cohorts(frame, reference="BASE", score_range={"s": (-2.0, 10.0)}, ranking="swap_in")))
    p = _pairing(cohort, "V01", k={"counterfactual": k, "group": k, "merit": k}, n_bootstrap=10, seed=1)
    assert swap_in_count(p.score_ref[None], p.score_var[None], k)[0] == pytest.approx(p.in_top(k)[1].sum(), abs=1e-12)


def test_the_smoothed_sd_matches_the_spread_over_simulated_audits():
    """The interval's SD against the selection ratio's SD over 150 simulated audits of 5 jobs x 40 candidates
    (:class:`runtime.analysis.counterfactual_sim.CorrespondenceSim`, a 1-SE demotion, continuous and whole-point
    scores): the mean SD is within 12% of the spread (the spread's own sampling error over 150 audits is about 6%).
    The methods-17 bootstrap of the memberships read 1.10-1.20x here (``bench/results/selection_variance.md``)."""
    from runtime import seeding
    from runtime.analysis import _pairing
    from runtime.analysis.counterfactual_sim import CorrespondenceSim
    from runtime.analysis.frame import cohorts
    from runtime.analysis.selection import selection

    for ties in (False, True):
        sim = CorrespondenceSim(n_jobs=5, effect_se=1.0, ties=ties)
        frame = sim.frame(seeding.rng(20261207, "selection-sd", int(ties)), 150)
        values, sds = [], []
        for cohort in cohorts(frame, reference="BASE", score_range={"sim": (0.0, 100.0)}, ranking="swap_in"):
            s = selection(_pairing(cohort, "V01", k={"counterfactual": 10, "group": 10, "merit": 10},
                                   n_bootstrap=199, seed=3), 10)
            values.append(s.value)
            sds.append((s.high - s.value) / 1.959963984540054)
        ratio = float(np.mean(sds) / np.std(values, ddof=1))
        assert 0.88 <= ratio <= 1.12, (ties, ratio)


def test_threshold_rows_say_no_bench_measured_their_coverage():
    """No bench simulates a decision threshold, so retention, the impact ratio and the selection ratio read at one say
    in ``metrics.csv`` that their coverage was measured under a top-K rule (as the report does), whatever the top-K
    measurement; under the top-K rule they do not."""
    note = "approximate interval: coverage measured under a top-K rule, not at a threshold"
    at_threshold, top_k = _m(_frame(HAND), threshold=6.5), _m(_frame(HAND))
    for metric in ("retention_rate", "impact_ratio", "selection_ratio"):
        assert note in at_threshold.loc[(metric, "V01")]["notes"], metric
        assert note not in top_k.loc[(metric, "V01")]["notes"], metric
