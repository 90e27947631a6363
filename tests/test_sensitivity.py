"""The planted-bias self-test and the shortlist-level distribution checks (issue 39 §6; seed 003 §3.7).

Hand computations on small frames, scipy's paired t-test as the independent reference, and A2's δ*
(:func:`runtime.analysis.sesoi.implied_shift`) as the planted shift. The real-CLI case (40% of each
shortlist at the ceiling) is in ``test_effects_cli.py``.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from runtime.analysis.sensitivity import NOTE_NO_SHIFT, plant_shift, planted_self_test
from runtime.analysis.sesoi import Rule, implied_shift
from runtime.analysis.validity import INCONCLUSIVE, VALID, check_validity, reference_top2k
from test_effects import CONTRASTS, _paired_frame

AXES = ["sex_gender", "age_signal"]


def _tiny() -> pd.DataFrame:
    """One job, three base candidates, BASE and two variants (hand-checked below)."""
    scores = {"BASE": [10.0, 20.0, 30.0], "V1": [9.0, 21.0, 27.0], "V2": [12.0, 22.0, 32.0]}
    return pd.DataFrame([{"system": "s", "condition": "c", "replicate": 0, "job_id": "j", "cv_id": f"c{i}",
                          "variant": v, "score": x, "rank": 0} for v, xs in scores.items() for i, x in enumerate(xs)])


def _scores(frame: pd.DataFrame, variant: str) -> list[float]:
    return frame[frame["variant"] == variant].sort_values("cv_id")["score"].tolist()


def test_plant_adds_delta_star_to_the_observed_residuals_of_one_category():
    paired = _tiny()
    # V1: diff = (-1, 1, -3), mean -1, residuals (0, 2, -2); V2: diff = (2, 2, 2), residuals 0
    planted, plants = plant_shift(paired, reference="BASE", shifts={("s", "c"): 0.5}, category="V1")
    assert _scores(planted, "V1") == pytest.approx([9.5, 21.5, 27.5])   # 10 + 0 − 0.5, 20 + 2 − 0.5, 30 − 2 − 0.5
    assert _scores(planted, "V2") == pytest.approx([10.0, 20.0, 30.0])  # null: its mean difference removed
    assert _scores(planted, "BASE") == [10.0, 20.0, 30.0]
    p = plants.set_index("variant")
    assert p.loc["V1", "shift"] == 0.5 and bool(p.loc["V1", "planted"])
    assert p.loc["V2", "shift"] == 0.0 and not bool(p.loc["V2", "planted"])
    assert p.loc["V1", "mean_diff"] == pytest.approx(-1.0)
    assert p.loc["V1", "se"] == pytest.approx(2.0 / math.sqrt(3))         # sd(-1, 1, -3) = 2
    # the planted paired t is −δ*/SE: scipy on the planted copy
    t = stats.ttest_rel(_scores(planted, "V1"), _scores(planted, "BASE")).statistic
    assert t == pytest.approx(-0.5 / (2.0 / math.sqrt(3)))
    # re-ranked: within (system, condition, replicate, job, variant), 1 = best
    assert planted[planted["variant"] == "V1"].set_index("cv_id")["rank"].to_dict() == {"c2": 1, "c1": 2, "c0": 3}
    # the null copy centres every variant; an undefined δ* plants nothing
    null, _ = plant_shift(paired, reference="BASE", shifts={("s", "c"): 0.5}, category=None)
    assert _scores(null, "V1") == pytest.approx([10.0, 22.0, 28.0])
    none, plants = plant_shift(paired, reference="BASE", shifts={("s", "c"): math.nan}, category="V1")
    assert _scores(none, "V1") == pytest.approx(_scores(null, "V1")) and not plants["planted"].any()


def _delta_star(paired: pd.DataFrame, k: int = 10) -> float:
    """A2's δ* at a selection ratio of 0.8 under top-k, pooled over jobs, from the reference scores."""
    ref = paired[paired["variant"] == "BASE"]
    return implied_shift(ref["score"].to_numpy(float), ref["job_id"].to_numpy(), 0.8, k=k)


def _suite(ranking="swap_in"):
    from compiler.catalog import default_thresholds
    from runtime.analysis import analyse

    settings = dict(reference="BASE", k={"counterfactual": 10, "group": 10, "merit": 10}, alpha=0.05,
                    n_bootstrap=100, seed=1, thresholds=default_thresholds(), score_range={"s1": (0.0, 100.0)},
                    ranking=ranking)
    return lambda frame: analyse(frame, **settings).metrics


def _self_test(paired):
    from runtime.analysis.effect_size import effect_sizes
    from runtime.rank import rank_within_groups

    paired = rank_within_groups(paired.drop(columns=["rank"]))
    suite = _suite()
    shifts = {("s1", "default"): _delta_star(paired)}
    eff = effect_sizes(paired, contrasts=CONTRASTS, axes=AXES, sesoi=0.2, alpha=0.05)
    return planted_self_test(paired, reference="BASE", shifts=shifts, alpha=0.05, sesoi=0.2, axes=AXES,
                             observed_metrics=suite(paired), observed_effects=eff, analyse_metrics=suite), shifts


def test_planted_paired_t_comes_from_the_data_and_can_fail():
    # the same δ* rule on two data sets: a precise system (resume noise SD 0.5) and a noisy one (SD 15)
    tables = {}
    for name, noise in (("precise", 0.5), ("noisy", 15.0)):
        paired = _paired_frame(41, n_jobs=2, k=60, effects={"F": 0.0, "Older": 0.0}, sd_noise=noise)
        table, shifts = _self_test(paired)
        tables[name] = table
        delta = shifts[("s1", "default")]
        assert 0 < delta < math.inf
        t_rows = table[table["metric"] == "effect_size_paired"].set_index("variant")
        assert np.allclose(t_rows["shift"], delta)
        for v in ("V01", "V02", "V03"):  # one category at a time: scipy's paired t on that category's copy
            planted, _ = plant_shift(paired, reference="BASE", shifts=shifts, category=v)
            t = stats.ttest_rel(planted[planted["variant"] == v].sort_values(["job_id", "cv_id"])["score"],
                                planted[planted["variant"] == "BASE"].sort_values(["job_id", "cv_id"])["score"])
            assert t.statistic == pytest.approx(-t_rows.loc[v, "shift_se"], rel=1e-9)
            assert t_rows.loc[v, "shift_se"] == pytest.approx(delta / t_rows.loc[v, "se"])
    precise = tables["precise"].query("metric == 'effect_size_paired'")["shift_se"]
    noisy = tables["noisy"].query("metric == 'effect_size_paired'")["shift_se"]
    assert not np.allclose(precise.to_numpy(), noisy.to_numpy())          # not fixed by the plant
    assert precise.min() > 5 and tables["precise"].query("metric == 'effect_size_paired'")["detected"].all()
    # the noisy system: δ* ≈ 2.4 points against an SE of ≈ 2: t ≈ 1.2, the paired test misses it, as it should
    assert noisy.max() < 1.96 and not tables["noisy"].query("metric == 'effect_size_paired'")["detected"].any()


def test_self_test_rows_per_category_and_the_other_categories_stay_null():
    paired = _paired_frame(37, n_jobs=2, k=60, effects={"F": 3.0, "Older": -1.0}, sd_noise=0.5)
    table, shifts = _self_test(paired)
    delta = shifts[("s1", "default")]
    assert len(table) == 3 * (1 + 10)  # 3 categories x (the paired contrast + the ten metrics of methods 8)
    assert list(table["variant"].unique()) == ["V01", "V02", "V03"]
    # score_delta is the mean difference, normalised by score_range: −δ*/100 on the planted copy, 0 on the null
    sd = table[table["metric"] == "score_delta"]
    assert np.allclose(sd["value_planted"], -delta / 100.0) and np.allclose(sd["value_null"], 0.0, atol=1e-12)
    # the observed effect (F +3) is gone from the planted copy: V02's observed score_delta is not its planted one
    assert sd.set_index("variant").loc["V02", "value_observed"] == pytest.approx(0.03, abs=0.005)
    # planting V02 leaves V01 and V03 centred on their reference
    planted, plants = plant_shift(paired, reference="BASE", shifts=shifts, category="V02")
    ref = planted[planted["variant"] == "BASE"].sort_values(["job_id", "cv_id"])["score"].to_numpy()
    for v, mean in (("V01", 0.0), ("V03", 0.0), ("V02", -delta)):
        x = planted[planted["variant"] == v].sort_values(["job_id", "cv_id"])["score"].to_numpy()
        assert np.mean(x - ref) == pytest.approx(mean, abs=1e-9), v
    # under swap-in ranking a lowered category meets the others' reference resumes: the rank metrics see it
    marc = table[table["metric"] == "marc"]
    assert not np.allclose(marc["value_planted"], marc["value_null"])
    assert table.loc[table["metric"] == "effect_size_paired", "detected"].all()


def test_no_plant_where_delta_star_is_undefined():
    from runtime.rank import rank_within_groups

    paired = rank_within_groups(_paired_frame(3, n_jobs=1, k=30).drop(columns=["rank"]))
    suite = _suite()
    table = planted_self_test(paired, reference="BASE", shifts={("s1", "default"): math.inf}, alpha=0.05,
                              sesoi=0.2, axes=AXES, observed_metrics=suite(paired),
                              observed_effects=pd.DataFrame(), analyse_metrics=suite)
    assert not table["detected"].any() and (table["notes"] == NOTE_NO_SHIFT).all()
    assert (table["shift"] == 0).all() and table["shift_se"].isna().all()


# ----------------------------------------------------------------------------- the shortlist checks
def test_reference_top2k_by_hand():
    s = np.array([1.0, 5.0, 3.0, 9.0, 9.0, 2.0, 7.0, 6.0])
    j = np.array(["a"] * 6 + ["b"] * 2)
    tops = reference_top2k(s, j, k=2)
    assert tops["a"].tolist() == [9.0, 9.0, 5.0, 3.0] and tops["b"].tolist() == [7.0, 6.0]  # b: ≤ 2K, all
    # score >= 4: K = 3 in a (9, 9, 5) -> its 6 highest; b: K = 2 -> both
    tops = reference_top2k(s, j, threshold=4.0)
    assert tops["a"].tolist() == [9.0, 9.0, 5.0, 3.0, 2.0, 1.0] and tops["b"].tolist() == [7.0, 6.0]
    assert reference_top2k(s, j, threshold=8.0) == {"a": pytest.approx([9.0, 9.0, 5.0, 3.0])}  # b selects none
    with pytest.raises(ValueError):
        reference_top2k(s, j)


VALIDITY = {"positive_control": {"contrast": "match", "min_d": 0.5, "direction": "higher"},
            "manipulation_checks": [], "distribution": {"min_sd": 0.01, "ceiling": 0.95, "max_ceiling_share": 0.1}}


def _ceiling_at_the_top(seed=5, n_at=4):
    """50 base candidates per job; the n_at best of each job (all four variants) score 99."""
    paired = _paired_frame(seed, n_jobs=2, k=50)
    top = (paired[paired["variant"] == "BASE"].sort_values("score", ascending=False).groupby("job_id").head(n_at))
    hit = paired.set_index(["job_id", "cv_id"]).index.isin(top.set_index(["job_id", "cv_id"]).index)
    paired.loc[hit, "score"] = 99.0
    return paired


def test_ceiling_in_the_shortlist_fails_where_all_scores_pass():
    paired = _ceiling_at_the_top()
    res = check_validity(paired, config=VALIDITY, reference="BASE", axes=AXES, score_range={"s1": (0.0, 100.0)},
                         alpha=0.05, rules={"s1": Rule(k=5)})
    c = res.checks.set_index("check")
    assert c.loc["distribution_ceiling", "value"] == pytest.approx(16 / 200)   # 4 x 4 variants of 50 x 4, per job
    assert bool(c.loc["distribution_ceiling", "passed"])
    assert c.loc["distribution_ceiling_top2k", "value"] == pytest.approx(0.4)  # 4 of each job's top 10
    assert c.loc["distribution_ceiling_top2k", "n"] == 20
    assert not bool(c.loc["distribution_ceiling_top2k", "passed"])
    assert res.verdict == INCONCLUSIVE and len(res.failed) == 1
    assert res.failed[0].startswith("distribution_ceiling_top2k (s1, default): share of normalised scores ≥ 0.95 "
                                    "in each job's reference top-2K (2K = 10) at most 0.1; observed ceiling_share = 0.4")
    # resolution by hand: the SD within job of each job's 10 best reference scores (normalised), pooled
    ref = paired[paired["variant"] == "BASE"]
    tops = [np.sort(g["score"].to_numpy() / 100)[::-1][:10] for _, g in ref.groupby("job_id")]
    ss = sum(float(np.sum((t - t.mean()) ** 2)) for t in tops)
    assert c.loc["distribution_sd_top2k", "value"] == pytest.approx(math.sqrt(ss / (20 - 2)))
    assert c.loc["distribution_sd_top2k", "detail"].startswith("14 distinct values among 20 scores; 40% tied")
    # without the plant at the top the same data pass; a larger K dilutes the same four (4 of 20 = 20%: still fails)
    clean = check_validity(_paired_frame(5, n_jobs=2, k=50), config=VALIDITY, reference="BASE", axes=AXES,
                           score_range={"s1": (0.0, 100.0)}, alpha=0.05, rules={"s1": Rule(k=5)})
    assert clean.verdict == VALID, clean.failed
    wide = check_validity(paired, config=VALIDITY, reference="BASE", axes=AXES, score_range={"s1": (0.0, 100.0)},
                          alpha=0.05, rules={"s1": Rule(k=10)})
    assert wide.checks.set_index("check").loc["distribution_ceiling_top2k", "value"] == pytest.approx(0.2)


def test_shortlist_checks_under_a_threshold_rule_and_with_nobody_selected():
    paired = _ceiling_at_the_top()
    ref = paired[paired["variant"] == "BASE"]
    # score >= 99: K = 4 per job, the top-2K is each job's 8 best: 4 of 8 at the ceiling
    res = check_validity(paired, config=VALIDITY, reference="BASE", axes=AXES, score_range={"s1": (0.0, 100.0)},
                         alpha=0.05, rules={"s1": Rule(threshold=99.0)})
    c = res.checks.set_index("check")
    assert c.loc["distribution_ceiling_top2k", "value"] == pytest.approx(0.5) and c.loc["distribution_ceiling_top2k", "n"] == 16
    none = check_validity(paired, config=VALIDITY, reference="BASE", axes=AXES, score_range={"s1": (0.0, 100.0)},
                          alpha=0.05, rules={"s1": Rule(threshold=float(ref["score"].max()) + 1)})
    rows = none.checks[none.checks["check"].str.endswith("_top2k")]
    assert len(rows) == 2 and not rows["passed"].any()
    assert rows["detail"].str.contains("selects no reference résumé").all()


def test_planted_shift_se_is_ignored_with_a_located_warning(write_spec, tmp_path):
    from conftest import run_cli
    from test_effects_cli import SPEC, scores_csv

    spec = write_spec(SPEC, **{"scores.csv": scores_csv("good", seed=1, k=40)})
    proc = run_cli("validate", spec.name, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "spec.yaml:23:47: analysis.effect_size.planted_shift_se: is ignored (issue 39 §6)" in proc.stderr


@settings(max_examples=20, deadline=None)
@given(st.lists(st.tuples(st.floats(0, 100, allow_nan=False), st.floats(-5, 5, allow_nan=False),
                          st.floats(-5, 5, allow_nan=False)), min_size=3, max_size=12),
       st.floats(0, 10, allow_nan=False), st.sampled_from(["V1", "V2"]),
       st.floats(0.5, 4, allow_nan=False), st.floats(-50, 50, allow_nan=False))
def test_plant_invariants(rows, delta, category, scale, offset):
    """Whatever the data: the planted category's differences are its observed residuals minus δ*, the
    other's its residuals (mean 0), the reference is untouched; rescaling the scores (and δ* with them)
    leaves the planted t = δ*/SE unchanged."""
    frame = pd.DataFrame([{"system": "s", "condition": "c", "replicate": 0, "job_id": "j", "cv_id": f"c{i:02d}",
                           "variant": v, "score": b + (d1 if v == "V1" else d2 if v == "V2" else 0.0), "rank": 0}
                          for i, (b, d1, d2) in enumerate(rows) for v in ("BASE", "V1", "V2")])

    def diffs(f):
        w = f.pivot_table(index="cv_id", columns="variant", values="score")
        return {v: (w[v] - w["BASE"]).to_numpy() for v in ("V1", "V2")}

    observed = diffs(frame)
    planted, plants = plant_shift(frame, reference="BASE", shifts={("s", "c"): delta}, category=category)
    now = diffs(planted)
    for v in ("V1", "V2"):
        resid = observed[v] - observed[v].mean()
        assert np.allclose(now[v], resid - (delta if v == category else 0.0), atol=1e-9)
    assert np.array_equal(planted[planted["variant"] == "BASE"].sort_values("cv_id")["score"].to_numpy(),
                          frame[frame["variant"] == "BASE"].sort_values("cv_id")["score"].to_numpy())
    rescaled = frame.assign(score=frame["score"] * scale + offset)
    _, p2 = plant_shift(rescaled, reference="BASE", shifts={("s", "c"): delta * scale}, category=category)
    t1 = plants.set_index("variant").loc[category]
    t2 = p2.set_index("variant").loc[category]
    if t1["se"] > 1e-6:
        assert t2["shift"] / t2["se"] == pytest.approx(t1["shift"] / t1["se"], rel=1e-6)
