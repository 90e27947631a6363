"""Issue 29 §1 and §4 building blocks: a status from an interval, and the multiplicity procedures
(Benjamini-Bogomolov, the graphical procedure), against hand computations and statsmodels."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from statsmodels.stats.multitest import multipletests

from runtime.analysis.classify import INCONCLUSIVE, decide, pass_band, round_significant
from runtime.analysis.multiplicity import benjamini_bogomolov, benjamini_hochberg, graphical, score_graph

finite = st.floats(min_value=-2.0, max_value=2.0, allow_nan=False)


@settings(max_examples=300, deadline=None)
@given(finite, finite, finite, finite)
def test_decide_is_inside_disjoint_or_inconclusive(x, y, a, b):
    low, high = min(x, y), max(x, y)
    band = (min(a, b), max(a, b))
    status = decide(low, high, band)
    # decide compares after rounding to 6 significant digits (seed 000 §3.4.4): so does the expectation
    low, high, band = round_significant(low), round_significant(high), tuple(round_significant(e) for e in band)
    if band[0] <= low and high <= band[1]:
        assert status == "PASS"
    elif high < band[0] or low > band[1]:
        assert status == "FAIL"
    else:
        assert status == INCONCLUSIVE


@settings(max_examples=200, deadline=None)
@given(finite, finite, st.floats(min_value=0.01, max_value=100.0))
def test_decide_is_invariant_to_rescaling_interval_and_band_together(x, y, c):
    low, high = min(x, y), max(x, y)
    band = (-0.02, 0.02)
    scaled = decide(low * c, high * c, (band[0] * c, band[1] * c))
    plain = decide(low, high, band)
    # rounding to 6 significant digits may move a value that sits on a bound; nowhere else
    on_edge = any(math.isclose(v, e, rel_tol=1e-5, abs_tol=1e-12) for v in (low, high) for e in band)
    assert scaled == plain or on_edge


def test_the_issue_example_reads_inconclusive_and_rounding_holds_a_bound():
    # V04 score_delta 0.0156, interval [0.0098, 0.0222] across the 0.02 bound (issue 29, Why)
    assert decide(0.0098, 0.0222, pass_band("score_delta", {"pass": 0.02})) == INCONCLUSIVE
    assert decide(0.0098, 0.02000000000000004, pass_band("score_delta", {"pass": 0.02})) == "PASS"
    assert decide(-0.05, -0.021, pass_band("score_delta", {"pass": 0.02})) == "FAIL"
    assert decide(math.nan, 0.1, (0.0, 0.1)) == "N/A"


def test_pass_bands_by_direction():
    assert pass_band("score_delta", {"pass": 0.02}) == (-0.02, 0.02)
    assert pass_band("flip_rate", {"pass": 0.05}) == (0.0, 0.05)
    assert pass_band("impact_ratio", {"pass": 0.8}) == (0.8, 1.0)
    assert pass_band("selection_ratio", {"pass": 0.8}) == (0.8, 1.25)


def test_benjamini_bogomolov_on_four_categories_by_hand():
    # level 1: BH of (0.001, 0.02, 0.04, 0.30) = (0.004, 0.04, 0.0533, 0.30): R = 2 of m1 = 4
    # level 2 at alpha*R/m1 = 0.025; reported times m1/R = 2 so that p_adj <= 0.05 means rejected
    primary = [0.001, 0.02, 0.04, 0.30]
    secondary = [[0.01, 0.03], [0.012, 0.011], [0.001, 0.001], [0.5, 0.6]]
    q1, q2, r = benjamini_bogomolov(primary, secondary, alpha=0.05)
    assert r == 2
    np.testing.assert_allclose(q1, [0.004, 0.04, 0.04 * 4 / 3, 0.30])
    np.testing.assert_allclose(q2[0], [0.04, 0.06])      # BH within: (0.02, 0.03), times 2
    np.testing.assert_allclose(q2[1], [0.024, 0.024])    # BH within: (0.012, 0.012), times 2
    assert np.isnan(q2[2]).all() and np.isnan(q2[3]).all()  # not tested: level 1 did not reject
    # a family of strong secondaries is still untested when its score test is not selected


def test_benjamini_bogomolov_with_no_selection_and_an_untestable_primary():
    q1, q2, r = benjamini_bogomolov([0.5, math.nan, 0.9], [[0.001], [0.001], [0.2, 0.3]], alpha=0.05)
    assert r == 0 and np.isnan(q1[1]) and all(np.isnan(x).all() for x in q2)
    np.testing.assert_allclose(q1[[0, 2]], [0.9, 0.9])  # m1 = 2: nan is not counted
    with pytest.raises(ValueError, match="one sequence per primary"):
        benjamini_bogomolov([0.1, 0.2], [[0.1]], alpha=0.05)
    with pytest.raises(ValueError, match="alpha"):
        benjamini_bogomolov([0.1], [[0.1]], alpha=1.5)


def test_the_score_graph_on_two_categories_by_hand():
    # order S1, A1, B1, S2, A2, B2; each score test holds 1/2 and passes it in halves to its secondaries
    w, g = score_graph(2)
    np.testing.assert_allclose(w, [0.5, 0, 0, 0.5, 0, 0])
    assert g[0, 1] == g[0, 2] == 0.5 and g[1, 2] == g[2, 1] == 1.0 and g[0, 3] == 0
    p = [0.01, 0.04, 0.2, 0.03, 0.01, 0.01]
    # S1: 0.01/0.5 = 0.02; S2: 0.03/0.5 = 0.06; A2: 0.01/0.25 = 0.04 -> max so far 0.06; B2 holds 0.5:
    # 0.02 -> 0.06; A1: 0.04/0.25 = 0.16; B1 then holds 0.5: 0.2/0.5 = 0.4
    np.testing.assert_allclose(graphical(p, w, g), [0.02, 0.16, 0.4, 0.06, 0.06, 0.06])


@settings(max_examples=50, deadline=None)
@given(st.lists(st.floats(min_value=1e-6, max_value=1.0), min_size=2, max_size=8))
def test_the_holm_graph_gives_statsmodels_holm(p):
    m = len(p)
    w = np.full(m, 1.0 / m)
    g = (np.ones((m, m)) - np.eye(m)) / (m - 1)
    np.testing.assert_allclose(graphical(p, w, g), multipletests(p, method="holm")[1], rtol=1e-9, atol=1e-12)


@settings(max_examples=50, deadline=None)
@given(st.lists(st.floats(min_value=1e-6, max_value=1.0), min_size=1, max_size=8))
def test_bonferroni_graph_and_untestable_hypotheses(p):
    m = len(p)
    w = np.full(m, 1.0 / m)
    adj = graphical(p, w, np.zeros((m, m)))  # no edges: Bonferroni
    np.testing.assert_allclose(adj, np.minimum(1.0, np.asarray(p) * m))
    withnan = graphical([*p, math.nan], np.full(m + 1, 1.0 / (m + 1)), np.zeros((m + 1, m + 1)))
    assert np.isnan(withnan[-1])
    np.testing.assert_allclose(withnan[:-1], np.minimum(1.0, np.asarray(p) * (m + 1)))


def test_graph_errors_and_bh_leaves_nan():
    with pytest.raises(ValueError, match="weights"):
        graphical([0.1, 0.2], [0.7, 0.7], [[0, 0], [0, 0]])
    with pytest.raises(ValueError, match="weights"):
        graphical([0.1, 0.2], [0.5, 0.5], [[0.5, 0.5], [0, 0]])
    out = benjamini_hochberg([0.01, math.nan, 0.04])
    assert np.isnan(out[1])
    np.testing.assert_allclose(out[[0, 2]], [0.02, 0.04])


def test_fwer_of_the_score_graph_under_the_complete_null():
    """Simulation: uniform p-values for 4 categories x 3 tests, 4,000 audits; the graph rejects anything
    in at most alpha + 2 Monte Carlo SE of them (strong FWER control, Bretz et al. 2009)."""
    rng = np.random.default_rng(29)
    w, g = score_graph(4)
    n = 4000
    hits = sum(bool((graphical(rng.uniform(size=12), w, g) <= 0.05).any()) for _ in range(n))
    se = math.sqrt(0.05 * 0.95 / n)
    assert hits / n <= 0.05 + 2 * se, hits / n


# ------------------------------------------------------------- wired into analyse (issue 29 §4)
def _analysed(method: str | None, systems=("a", "b")):
    import pandas as pd

    from compiler.catalog import default_thresholds
    from runtime.analysis import analyse
    from runtime.analysis.counterfactual_sim import CorrespondenceSim

    sim = CorrespondenceSim(n_jobs=2, effect_se=4, ties=False, variants=("BASE", "V01", "V02", "V03"))
    frames = []
    for i, s in enumerate(systems):
        f = sim.frame(np.random.default_rng(10 + i), 2)  # two audits: conditions "0" and "1"
        frames.append(f.assign(system=s, condition=f["condition"].astype(str)))
    paired = pd.concat(frames, ignore_index=True)
    kw = {} if method is None else {"multiplicity": method}
    return analyse(paired, reference="BASE", k={"counterfactual": 10, "group": 10, "merit": 10}, alpha=0.05,
                   n_bootstrap=100, seed=1, thresholds=default_thresholds(),
                   score_range={s: (0, 100) for s in systems}, **kw).metrics


@pytest.fixture(scope="module")
def analysed():
    return {m: _analysed(m) for m in (None, "run", "per_metric", "hierarchical", "graphical")}


def test_hierarchical_is_the_default_and_run_is_seed_000_bh_over_every_tested_row(analysed):
    assert analysed["hierarchical"].equals(analysed[None])  # methods version 7's default
    run = analysed["run"]
    tested = run["adj_family"] == "run"
    own = tested & run["p_adj"].notna()
    expected = multipletests(run.loc[own, "p_value"].to_numpy(float), method="fdr_bh")[1]
    assert np.array_equal(run.loc[own, "p_adj"].to_numpy(float), expected)  # byte for byte
    assert set(run.loc[own, "adj_m"]) == {int(own.sum())}
    # retention and the impact ratio share the flip table's test: its family, no p_adj of their own
    shared = run["metric"].isin(["retention_rate", "impact_ratio"]) & tested
    assert shared.any() and run.loc[shared, "p_adj"].isna().all()


def test_no_family_spans_two_systems(analysed):
    for method in ("per_metric", "hierarchical", "graphical"):
        m = analysed[method]
        named = m[m["adj_family"] != ""]
        assert (named.groupby("adj_family")["system"].nunique() == 1).all(), method
        assert all(f.split("/")[0] == s for f, s in zip(named["adj_family"], named["system"]))


def test_hierarchical_levels_match_benjamini_bogomolov_by_hand(analysed):
    m = analysed["hierarchical"]
    for system in ("a", "b"):
        sub = m[m["system"] == system]
        lvl1 = sub[sub["adj_family"] == f"{system}/level1"]
        assert set(lvl1["metric"]) == {"score_delta"} and len(lvl1) == 6  # 3 categories x 2 conditions
        q1 = multipletests(lvl1["p_value"].to_numpy(float), method="fdr_bh")[1]
        assert np.allclose(lvl1["p_adj"].to_numpy(float), q1)
        r = int((q1 <= 0.05).sum())
        for (cond, var), q in zip(zip(lvl1["condition"], lvl1["variant"]), q1):
            fam = sub[sub["adj_family"] == f"{system}/{cond}/{var}/level2"]
            assert set(fam["metric"]) <= {"marc", "flip_rate", "retention_rate", "impact_ratio", "selection_ratio"}
            own = fam[fam["metric"].isin(["marc", "flip_rate"])]
            if q <= 0.05:
                expect = np.minimum(1, multipletests(own["p_value"].to_numpy(float), method="fdr_bh")[1] * 6 / r)
                assert np.allclose(own["p_adj"].to_numpy(float), expect)
            else:
                assert own["p_adj"].isna().all()
                assert own["notes"].str.contains("not tested: level 1 did not reject").all()
        others = sub[sub["metric"].isin(["recall_at_k", "ndcg_at_k", "equal_opportunity_gap"])
                     & sub["p_value"].notna() & (sub["variant"] != "BASE")]
        assert others["p_adj"].isna().all() and (others["adj_family"] == "").all()


def test_the_planted_category_is_found_under_every_procedure(analysed):
    # V01 is demoted by 4 SE: its score test rejects in every condition and system, whatever the family
    for method in ("run", "per_metric", "hierarchical", "graphical"):
        m = analysed[method]
        rows = m[(m["metric"] == "score_delta") & (m["variant"] == "V01")]
        assert (rows["p_adj"] < 0.05).all(), (method, rows["p_adj"].tolist())


def test_an_unknown_procedure_is_refused():
    with pytest.raises(ValueError, match="multiplicity must be one of"):
        _analysed("bonferroni", systems=("a",))


def test_a_spec_chooses_the_hierarchy_and_the_report_says_so(tmp_path):
    """Through the real CLI (the uniform-penalty vendor file: every variant demoted by 30 points): the
    resolved spec carries analysis.multiplicity, metrics.csv names the families, the appendix the method."""
    import json

    import pandas as pd
    from test_uniform_penalty import SPEC, _scores

    from conftest import run_cli

    (tmp_path / "spec.yaml").write_text(SPEC + "  multiplicity: hierarchical\n")
    (tmp_path / "scores.csv").write_text(_scores())
    assert run_cli("compile", "spec.yaml", cwd=tmp_path).returncode == 0
    lock = json.loads((tmp_path / "spec.lock.json").read_text())
    assert lock["resolved_spec"]["analysis"]["multiplicity"] == "hierarchical"
    proc = run_cli("execute", "--unsigned", "--no-pdf", "spec.yaml", "--quiet", "--out", "out", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    run_dir = next((tmp_path / "out" / "uniform-penalty").iterdir())
    m = pd.read_csv(run_dir / "metrics.csv", keep_default_na=False, na_values=[""])
    lvl1 = m[m["adj_family"].str.endswith("/level1")]
    assert set(lvl1["metric"]) == {"score_delta"} and (lvl1["p_adj"] < 0.05).all()
    assert set(lvl1["adj_m"]) == {len(lvl1)}
    lvl2 = m[m["adj_family"].str.endswith("/level2") & m["metric"].isin(["marc", "flip_rate"])]
    assert len(lvl2) == 2 * len(lvl1) and lvl2["p_adj"].notna().all()
    html = (run_dir / "report.html").read_text()
    assert "analysis.multiplicity: hierarchical; Benjamini &amp; Bogomolov 2014" in html
