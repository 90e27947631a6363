"""The candidate-level bootstrap intervals (issue 12, methods version 4) and the audit simulator.

Checked against independent computations: the exact bootstrap distribution by enumeration of every
resample, the ranks of :func:`runtime.analysis.frame.cohorts`, and the simulator's planted effect.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
import pytest
from scipy.stats import rankdata

from compiler import catalog
from runtime.analysis import analyse, stats
from runtime.analysis.cell import dense_codes, rank_counts
from runtime.analysis.counterfactual import _rerank_within as _rerank_codes
from runtime.analysis.counterfactual_sim import CorrespondenceSim
from runtime.analysis.frame import cohorts

from test_analysis import tiny_frame


def _top_share(scores: np.ndarray, k: int) -> np.ndarray:
    """Probability of each entry being in the top-k of ``scores`` (ties: tie-averaged), by counting."""
    greater = (scores[None, :] > scores[:, None]).sum(axis=1)
    tied = (scores[None, :] == scores[:, None]).sum(axis=1)
    return np.clip((k - greater) / tied, 0.0, 1.0)


def test_recall_interval_matches_the_enumerated_bootstrap_distribution():
    # tiny_frame, K = 2, BASE: J1 scores a 90 (match) b 70 c 50 (match) d 30; J2 a 80 b 60 (match) c 40
    # d 20 (match). The bootstrap draws 2 of the 2 matches and 2 of the 2 non-matches of each job with
    # replacement (strata job x label: 4^4 = 256 equally likely resamples) and ranks each resampled
    # pool again. Enumerating them gives the exact distribution of Recall@2; the product's 4000-draw
    # percentile interval must lie on its 1-4% and 96-99% quantiles.
    df = tiny_frame()
    base = df[df["variant"] == "BASE"].sort_values(["job_id", "cv_id"])
    values = []
    strata = []
    for job in ("J1", "J2"):
        sub = base[base["job_id"] == job]
        for label in (1, 0):
            strata.append(sub.loc[sub["is_true_match"] == label, "score"].to_numpy())
    for choice in itertools.product(itertools.product((0, 1), repeat=2), repeat=4):
        recall = []
        for j in range(2):
            pos = strata[2 * j][list(choice[2 * j])]
            neg = strata[2 * j + 1][list(choice[2 * j + 1])]
            share = _top_share(np.concatenate([pos, neg]), 2)
            recall.append(share[:2].sum() / 2)
        values.append(np.mean(recall))
    values = np.sort(values)
    res = analyse(df, reference="BASE", k={"counterfactual": 2, "group": 2, "merit": 2}, alpha=0.05,
                  n_bootstrap=4000, seed=3, thresholds=catalog.default_thresholds(),
                  score_range={"sys": (0, 100)}, ranking="per_variant")
    row = res.metrics[(res.metrics["metric"] == "recall_at_k") & (res.metrics["variant"] == "BASE")].iloc[0]
    assert row["value"] == pytest.approx(0.5)
    q = lambda p: float(np.quantile(values, p))  # noqa: E731
    assert q(0.01) <= row["ci_low"] <= q(0.04)
    assert q(0.96) <= row["ci_high"] <= q(0.99)


def test_stratified_bootstrap_keeps_every_position_in_its_stratum():
    # Two strata whose values never mix: any resample of the mean of stratum "a" is 1 and of "b" is 10,
    # so the statistic "mean of a-positions" is constant at 1 and its interval is the point 1.
    strata = np.array(["a", "a", "a", "b", "b"])
    x = np.array([1.0, 1.0, 1.0, 10.0, 20.0])
    ci = stats.stratified_bootstrap((x,), lambda xb: xb[:, :3].mean(axis=-1), strata=strata, value=1.0,
                                    n_resamples=200, rng=np.random.default_rng(0))
    assert (ci.low, ci.high) == (1.0, 1.0)
    # Stratum b alone: its resampled mean is 10, 15 or 20 with probabilities 1/4, 1/2, 1/4.
    ci = stats.stratified_bootstrap((x,), lambda xb: xb[:, 3:].mean(axis=-1), strata=strata, value=15.0,
                                    n_resamples=4000, rng=np.random.default_rng(0))
    assert (ci.low, ci.high) == (10.0, 20.0)


def test_stratified_bootstrap_drops_and_counts_undefined_resamples():
    x = np.array([0.0, 1.0])
    ci = stats.stratified_bootstrap((x,), lambda xb: np.where(xb.sum(axis=-1) > 0, xb.mean(axis=-1), np.nan),
                                    strata=np.zeros(2), value=0.5, n_resamples=400,
                                    rng=np.random.default_rng(1))
    assert ci.notes and "were dropped, not counted as 0" in ci.notes[0]
    assert ci.low == 0.5 and ci.high == 1.0


def _rerank_within(x, pool, job, ident):
    """The production re-ranking on the values themselves (coded as the metrics code them)."""
    return _rerank_codes(*dense_codes(x, pool, job), job, np.asarray(ident).astype(np.int64))


def test_rank_counts_on_codes_equal_rankdata_on_values():
    # Per row and job, above = min-rank - 1 and equal = max-rank - min-rank + 1 of the pooled values,
    # less what x itself contributes; here pool = x, so scipy's ranks give both directly.
    g = np.random.default_rng(3)
    job = np.repeat(np.arange(4), [5, 9, 5, 1])
    x = g.choice([0.1, 0.2, 0.30000000000000004, 0.3, -0.0, 0.0, 7.5], size=(30, 20))
    above, equal = rank_counts(*dense_codes(x, x, job), job)
    for j in range(4):
        cols = job == j
        lo = rankdata(-x[:, cols], method="min", axis=-1)
        hi = rankdata(-x[:, cols], method="max", axis=-1)
        assert np.array_equal(above[:, cols], lo - 1) and np.array_equal(equal[:, cols], hi - lo + 1)


@pytest.mark.parametrize("ties", [False, True])
@pytest.mark.parametrize("ranking", ["swap_in", "per_variant"])
def test_reranking_reproduces_the_cohort_ranks(ties, ranking):
    # On the original data (no duplicate), ranking every pool again gives the ranks of frame.cohorts.
    f = CorrespondenceSim(n_jobs=3, effect_se=3, ties=ties).frame(np.random.default_rng(0), 1)
    c = next(iter(cohorts(f, reference="BASE", score_range={"sim": (0, 100)}, ranking=ranking)))
    ref, var = c.score["BASE"][None], c.score["V01"][None]
    ident = np.arange(ref.shape[1], dtype=float)[None]
    assert np.array_equal(_rerank_within(ref, ref, c.job, ident)[0], c.rank["BASE"])
    assert np.array_equal(_rerank_within(var, ref if ranking == "swap_in" else var, c.job, ident)[0],
                          c.rank["V01"])
    if ties:
        assert np.any(c.tie["BASE"] > 1)


def test_reranking_does_not_count_a_candidate_against_its_own_copy():
    # Pool of one job: candidate 0 drawn twice (positions 0 and 1), candidate 1 once. Candidate 0's
    # copies are not each other's competitors: each ranks against candidate 1 only.
    # Each has 1 competitor in the resample against 2 in a pool of 3 (the slot correction, issue 39 §1):
    # its count of competitors above (1) is scaled by (3 - 1) / (3 - 2) = 2.
    x = np.array([[5.0, 5.0, 7.0]])
    ident = np.array([[0.0, 0.0, 1.0]])
    assert _rerank_within(x, x, np.zeros(3, dtype=int), ident).tolist() == [[3.0, 3.0, 1.0]]
    # Without identities the copies would tie with each other: 2.5 each.
    plain = rankdata(-x[0], method="average")
    assert plain.tolist() == [2.5, 2.5, 1.0]


def test_simulator_plants_the_paired_statistic_and_an_exchangeable_null():
    sim = CorrespondenceSim(n_jobs=5, effect_se=3, ties=False)
    score, match = sim.scores(np.random.default_rng(5), 4000)
    d = (score[:, 1] - score[:, 0]).reshape(4000, -1)
    t = d.mean(axis=1) / (d.std(axis=1, ddof=1) / math.sqrt(d.shape[1]))
    assert t.mean() == pytest.approx(-3.0, abs=0.1)
    assert match.sum() == 5 * 20
    # Planted null, no heterogeneity: reference and variant scores have the same distribution, so the
    # variant resumes are as likely to enter the reference's top-10 as to leave it (swap-in flips).
    null = CorrespondenceSim(n_jobs=5, effect_se=0, heterogeneity=0.0, ties=True)
    f = null.frame(np.random.default_rng(6), 40)
    res = analyse(f, reference="BASE", k={"counterfactual": 10, "group": 10, "merit": 20}, alpha=0.05,
                  n_bootstrap=20, seed=1, thresholds=catalog.default_thresholds(),
                  score_range={"sim": (0, 100)}, ranking="swap_in")
    flips = res.metrics[(res.metrics["metric"] == "flip_rate") & (res.metrics["variant"] != "BASE")]
    out, into = flips["n_in_out"].astype(float).sum(), flips["n_out_in"].astype(float).sum()
    assert abs(out - into) < 3 * math.sqrt(out + into)
    assert isinstance(f, pd.DataFrame) and set(f["variant"]) == {"BASE", "V01", "V02"}


def _rerank_by_table(x, pool, job, ident):
    """The definition, by an m x m table per job (independent of the rank-based count): competitors
    above plus half the tied ones, other candidates only, scaled by (m - 1) / (competitors)."""
    out = np.empty(x.shape)
    for j in np.unique(job):
        cols = np.flatnonzero(job == j)
        xs, ps = x[:, cols, None], pool[:, None, cols]
        other = ident[:, cols, None] != ident[:, None, cols]
        count = ((ps > xs) & other).sum(-1) + ((ps == xs) & other).sum(-1) / 2
        competitors = other.sum(-1)
        out[:, cols] = 1.0 + np.where(competitors > 0, count * (len(cols) - 1) / np.maximum(competitors, 1), 0.0)
    return out


@pytest.mark.parametrize("seed", range(6))
def test_rank_counting_matches_the_pairwise_table_on_resamples(seed):
    # Resamples of 3 jobs of 7 candidates on a coarse grid (ties, copies of one candidate, copies tying
    # with other candidates): the O(m log m) count equals the pairwise definition exactly.
    g = np.random.default_rng(seed)
    job = np.repeat(np.arange(3), 7)
    ref = g.integers(0, 4, size=21).astype(float)
    var = ref + g.integers(-2, 3, size=21)
    idx = np.stack([np.concatenate([c * 7 + g.integers(0, 7, size=7) for c in range(3)]) for _ in range(50)])
    ident = np.arange(21, dtype=float)[idx]
    for x, pool in ((ref[idx], ref[idx]), (var[idx], ref[idx]), (var[idx], var[idx])):
        np.testing.assert_allclose(_rerank_within(x, pool, job, ident), _rerank_by_table(x, pool, job, ident),
                                   rtol=0, atol=1e-12)


def test_coverage_statements_follow_the_published_table(monkeypatch):
    from runtime.analysis import coverage

    table = {"audits": 1000, "metrics": {"marc": {"2": [0.943, 0.968], "5": [0.948, 0.958]},
                                         "retention_rate": {"5": [0.914, 0.946]}},
             "intervals": {"retention_rate": "logit_bootstrap"}}
    monkeypatch.setattr(coverage, "_table", lambda: table)
    # a version whose retention interval were a logit one (none is today: issue 39 §2 measured it and kept the
    # percentile interval) reads a table by the interval method it measured
    monkeypatch.setattr(coverage, "INTERVALS", {"retention_rate": "logit_bootstrap"})
    assert coverage.statement("marc", 5) == ("measured coverage 94.8–95.8% in 1,000 simulated audits per "
                                             "setting with 5 jobs (target 93–97%)")
    assert coverage.measured("marc", 1)["jobs"] == 2          # 1 job: the 2-job figures
    assert coverage.statement("retention_rate", 8).startswith("approximate: measured coverage 91.4–94.6%")
    assert coverage.measured("retention_rate", 13) is None    # 13 jobs: no figure within a factor 2.5
    assert coverage.statement("ndcg_at_k", 5) == ""            # not measured: nothing is claimed
    assert coverage.approximate("retention_rate", 5) == [
        "approximate interval: measured coverage 91.4–94.6% in 1,000 simulated audits per setting with 5 jobs, "
        "outside the 93–97% target"]
    assert coverage.approximate("marc", 5) == []
    # a table that measured the percentile interval (no "intervals": methods 10 and earlier) does not hold
    # for the logit interval of methods 11: "not yet measured", whatever its figures
    del table["intervals"]
    assert coverage.measured("retention_rate", 5) == {"unmeasured": "percentile_bootstrap"}
    assert coverage.statement("retention_rate", 5) == ("approximate: coverage of this interval (logit bootstrap) "
                                                       "not yet measured")
    assert coverage.approximate("impact_ratio", 5) == ["approximate interval: coverage not measured"]  # not in it
    assert coverage.approximate("selection_ratio", 5) == ["approximate interval: coverage not measured"]


def test_the_shipped_coverage_table_covers_every_metric_at_2_and_5_jobs():
    from compiler import catalog
    from runtime.analysis import coverage

    coverage._table.cache_clear()
    for metric in catalog.METRICS:
        if metric in ("marc", "flip_rate", "retention_rate", "impact_ratio", "selection_ratio"):
            # measured under today's interval (bench/coverage_marc_u.py, bench/coverage_shortlist.py --publish)
            assert coverage.interval_method(metric) == coverage._table()["intervals"][metric], metric
        for jobs in (2, 5):  # the selection ratio (methods 8) too, since bench/coverage_shortlist.py --publish
            m = coverage.measured(metric, jobs)
            shipped = coverage._table().get("intervals", {}).get(metric, coverage.LEGACY_INTERVAL)
            if coverage.interval_method(metric) != shipped:  # an interval changed since the table: not measured yet
                assert m == {"unmeasured": shipped}, (metric, m)
                continue
            assert m is not None and m["jobs"] == jobs and 0.5 < m["low"] <= m["high"] <= 1.0, (metric, jobs)


def test_rank_counting_with_jobs_of_different_sizes():
    # Jobs of 7, 4 and 7 candidates (two blocks of equal size are ranked together, the other alone).
    g = np.random.default_rng(11)
    job = np.repeat(np.arange(3), [7, 4, 7])
    starts = np.array([0, 7, 11])
    sizes = np.array([7, 4, 7])
    ref = g.integers(0, 4, size=18).astype(float)
    var = ref + g.integers(-2, 3, size=18)
    idx = np.stack([np.concatenate([starts[c] + g.integers(0, sizes[c], size=sizes[c]) for c in range(3)])
                    for _ in range(40)])
    ident = np.arange(18, dtype=float)[idx]
    for x, pool in ((ref[idx], ref[idx]), (var[idx], ref[idx])):
        np.testing.assert_allclose(_rerank_within(x, pool, job, ident), _rerank_by_table(x, pool, job, ident),
                                   rtol=0, atol=1e-12)


@pytest.mark.parametrize("ranking", ["per_variant", "swap_in"])
def test_resampled_marc_is_centred_on_marc(ranking):
    """Issue 39 §1: in a candidate resample a drawn candidate is not its own competitor, so plain re-ranking
    gives E*[MARC*] = (1 - 1/n)·MARC under swap-in ranking: an interval that sits low, for the vendor. With
    the slot correction the mean of MARC* over 20 pools x 4,000 resamples lies within 0.05 bootstrap SE of
    MARC; the plain count sits below (checked too, so the test can fail). Per-variant ranking keeps the
    plain count, which errs the other way (above MARC, against the system), never below."""
    from runtime.analysis.counterfactual import _marc_resamples

    g = np.random.default_rng(39)
    n, k = 40, 10
    job = np.zeros(n, dtype=int)
    swap_in = ranking == "swap_in"
    used, plain = [], []
    for _ in range(20):
        ref = g.normal(size=n)
        var = ref + g.normal(scale=0.3, size=n)
        code_ref, code_var = dense_codes(ref, var, job)
        value = float(_marc_resamples(code_ref[None], code_var[None], job, np.arange(n)[None], k=k,
                                      swap_in=swap_in)[0])
        assert value == pytest.approx(np.abs(_plain_rank(code_var[None], (code_ref if swap_in else code_var)[None],
                                                         np.arange(n)[None])
                                             - _plain_rank(code_ref[None], code_ref[None], np.arange(n)[None])).mean() / k)
        idx = g.integers(0, n, size=(4000, n))
        star = _marc_resamples(code_ref[idx], code_var[idx], job, idx, k=k, swap_in=swap_in)
        used.append((star.mean() - value) / star.std(ddof=1))
        r_ref = _plain_rank(code_ref[idx], code_ref[idx], idx)
        r_var = _plain_rank(code_var[idx], code_ref[idx] if swap_in else code_var[idx], idx)
        plain_star = np.abs(r_var - r_ref).mean(axis=1) / k
        plain.append((plain_star.mean() - value) / plain_star.std(ddof=1))
    if swap_in:
        assert abs(np.mean(used)) < 0.05, np.mean(used)
        assert np.mean(plain) < -0.05, np.mean(plain)  # E*[MARC*] = (1 - 1/40)·MARC: about -0.11 SE here
    else:
        assert np.mean(used) == np.mean(plain) and np.mean(used) > 0, np.mean(used)


def _plain_rank(x, pool, ident):
    """Mid-ranks among the other drawn candidates without the slot factor (what methods 9 did)."""
    other = ident[:, :, None] != ident[:, None, :]
    return 1.0 + ((pool[:, None, :] > x[:, :, None]) & other).sum(-1) + \
        ((pool[:, None, :] == x[:, :, None]) & other).sum(-1) / 2


def test_a_score_one_float_step_below_the_threshold_meets_it():
    """Seed 000 §3.4.4 (issue 39 §8, methods 10): ``score >= t`` after rounding both to 6 significant digits,
    so a score that is t up to representation noise (one float step below, or 0.1 + 0.2 against 0.3) is
    selected; one a millionth below is not."""
    from runtime.analysis.classify import meets_threshold

    below = np.nextafter(60.0, 0.0)
    assert below < 60.0 and meets_threshold(np.array([below]), 60.0).tolist() == [True]
    assert meets_threshold(np.array([0.1 + 0.2, 0.3 - 1e-6, np.nan]), 0.3).tolist() == [True, False, False]
    f = tiny_frame()
    f.loc[(f["job_id"] == "J1") & (f["cv_id"] == "b") & (f["variant"] == "V1"), "score"] = np.nextafter(70.0, 0.0)
    (c,) = cohorts(f, reference="BASE", score_range={"sys": (0, 100)}, threshold=70.0)
    # J1: a (90, 80), b (70, 70 - 1 ulp); J2: a (80, 49): reference 90, 70, 80 selected; variant 80, 70 - 1 ulp
    assert c.selected["BASE"].sum() == 3 and c.selected["V1"].sum() == 2
    assert c.selected["V1"][list(zip(c.job_ids[c.job], c.cv_ids)).index(("J1", "b"))] == 1.0
