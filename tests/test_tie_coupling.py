"""One tie order per candidate, shared by its reference and variant resumes (issue 29 §7).

Before methods version 7 the reference's and the variant's top-K memberships at a tied cutoff were
treated as independent draws, so a variant scored exactly as the reference showed flips and lost
retention (three tied candidates, K = 1: flip rate 4/9, retention 1/3, impact ratio 1/3, all FAIL)
while the reference row on the same data showed none. :meth:`runtime.analysis.cell.Pairing.joint_in`
now breaks every tie with one random priority per candidate, used by both of its resumes, in both
ranking modes (seed 000 §3.4.1-§3.4.2).
"""

from __future__ import annotations

import itertools
import math
import warnings
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from compiler import catalog
from runtime.analysis import analyse
from runtime.analysis.cell import joint_top_share

THRESHOLDS = catalog.default_thresholds()
RANKINGS = ("per_variant", "swap_in")
TOP_K = ("flip_rate", "retention_rate", "impact_ratio")


def _frame(scores: dict[str, list[list[float]]]) -> pd.DataFrame:
    """``scores[variant][job][cv]`` -> a paired frame (every candidate a true match; rank column unused)."""
    rows = []
    for variant, jobs in scores.items():
        for j, col in enumerate(jobs):
            for i, s in enumerate(col):
                rows.append({"system": "s", "condition": "c", "replicate": 0, "job_id": f"j{j}",
                             "cv_id": f"cv{i}", "variant": variant, "score": float(s), "rank": i + 1,
                             "is_true_match": i % 2})
    return pd.DataFrame(rows)


def _analyse(df: pd.DataFrame, k: dict[str, int], ranking: str, **kw) -> pd.DataFrame:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        return analyse(df, reference="BASE", k=k, alpha=0.05, n_bootstrap=50, seed=3, thresholds=THRESHOLDS,
                       score_range={"s": (0.0, 10.0)}, ranking=ranking, **kw).metrics


def _cell(m: pd.DataFrame, metric: str, variant: str) -> pd.Series:
    return m[(m["metric"] == metric) & (m["variant"] == variant)].iloc[0]


# ------------------------------------------------------------------------------ the hand-computed case

@pytest.mark.parametrize("ranking", RANKINGS)
def test_three_tied_candidates_identical_variant(ranking):
    """One job, three candidates at 5/10 under BASE and V01, K = 1: each candidate is first with
    probability 1/3 in both rankings and, its tie order shared, is first in both or in neither. So
    n_in,in = 3 x 1/3 = 1, n_in,out = n_out,in = 0: flip rate 0, retention 1/1 = 1, impact ratio 1, all
    PASS on the point estimate (independent orders gave 4/9, 1/3, 1/3, FAIL), exactly as the reference
    row."""
    df = _frame({"BASE": [[5, 5, 5]], "V01": [[5, 5, 5]]})
    m = _analyse(df, {"counterfactual": 1, "group": 1, "merit": 1}, ranking)
    for variant in ("BASE", "V01"):
        flip, ret, ir = (_cell(m, metric, variant) for metric in TOP_K)
        assert flip["value"] == 0.0 and ret["value"] == 1.0 and ir["value"] == 1.0
        # seed 000's point-estimate status is PASS; the interval status of 3 candidates cannot be
        # (Wilson's interval of 0/3 reaches 0.56), but nothing FAILs any more
        assert flip["status_seed000"] == ret["status_seed000"] == ir["status_seed000"] == "PASS"
        assert "FAIL" not in {flip["status"], ret["status"], ir["status"]}
        assert flip["ties_at_cutoff"] == 3
    flip, ret = _cell(m, "flip_rate", "V01"), _cell(m, "retention_rate", "V01")
    assert flip["n_in_out"] == 0 and flip["n_out_in"] == 0
    assert ret["retained"] == 1.0 and ret["slots"] == 1.0
    assert flip["p_value"] == 1.0  # McNemar on [[1, 0], [0, 2]]: nothing discordant


def test_joint_top_share_hand_values():
    """T = S: min of the marginals. Disjoint singletons (i ties with a in one ranking, with b in the
    other), one slot each: i first in both when it precedes a and b, 1/3 (independent: 1/4)."""
    assert joint_top_share(2, 0, 0, 1, 1) == Fraction(1, 3)
    assert joint_top_share(2, 0, 0, 1, 2) == Fraction(1, 3)
    assert joint_top_share(0, 1, 1, 1, 1) == Fraction(1, 3)
    assert joint_top_share(1, 0, 1, 1, 1) == Fraction(1, 3)   # T = {a} ⊂ S = {a, b}: i before a and b
    assert joint_top_share(1, 0, 1, 1, 2) == Fraction(1, 2)   # S's constraint always met once i precedes a
    assert joint_top_share(3, 0, 0, 0, 2) == 0 and joint_top_share(0, 0, 0, 1, 1) == 1


def _brute_joint(common: int, only_ref: int, only_var: int, a: int, b: int) -> Fraction:
    """Average over every order of i and its competitors (i = 0)."""
    t = set(range(1, 1 + common + only_ref))
    s = set(range(1, 1 + common)) | set(range(1 + common + only_ref, 1 + common + only_ref + only_var))
    n = 1 + common + only_ref + only_var
    hits = total = 0
    for perm in itertools.permutations(range(n)):
        before = set(perm[:perm.index(0)])
        hits += len(before & t) < a and len(before & s) < b
        total += 1
    return Fraction(hits, total)


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 3), st.integers(0, 2), st.integers(0, 2), st.integers(0, 6), st.integers(0, 6))
def test_joint_top_share_matches_enumeration(common, only_ref, only_var, a, b):
    got = joint_top_share(common, only_ref, only_var, a, b)
    assert got == _brute_joint(common, only_ref, only_var, a, b)
    p = Fraction(max(0, min(a, common + only_ref + 1)), common + only_ref + 1)
    q = Fraction(max(0, min(b, common + only_var + 1)), common + only_var + 1)
    assert max(0, p + q - 1) <= got <= min(p, q)
    assert got >= p * q  # positively associated: coupling never adds expected flips


# ------------------------------------------------------------------------------ properties over tie patterns

@st.composite
def tie_patterns(draw):
    """1-3 jobs of 2-6 candidates, integer scores 0-3 (many ties), K 1-4, an identical variant V01 and
    an arbitrary variant V02."""
    n_jobs = draw(st.integers(1, 3))
    sizes = draw(st.lists(st.integers(2, 6), min_size=n_jobs, max_size=n_jobs))
    base = [draw(st.lists(st.integers(0, 3), min_size=m, max_size=m)) for m in sizes]
    other = [draw(st.lists(st.integers(0, 3), min_size=m, max_size=m)) for m in sizes]
    k = {"counterfactual": draw(st.integers(1, 4)), "group": draw(st.integers(1, 4)), "merit": 2}
    return {"BASE": base, "V01": [list(c) for c in base], "V02": other}, k


def _expected_by_enumeration(ref: list[float], var: list[float], k: int, ranking: str) -> tuple[Fraction, ...]:
    """(n_in,in, n_in,out, n_out,in) of one job averaged over every shared priority order."""
    m = len(ref)
    acc = [Fraction(0)] * 3
    orders = list(itertools.permutations(range(m)))
    for prio in orders:
        def inside(score_i: float, i: int, pool: list[float]) -> bool:
            ahead = sum(1 for j in range(m) if j != i and (pool[j] > score_i or (pool[j] == score_i and prio[j] < prio[i])))
            return ahead < k
        for i in range(m):
            was = inside(ref[i], i, ref)
            now = inside(var[i], i, var if ranking == "per_variant" else ref)
            acc[0] += was and now
            acc[1] += was and not now
            acc[2] += now and not was
    return tuple(a / len(orders) for a in acc)


@pytest.mark.parametrize("ranking", RANKINGS)
def test_identical_variant_with_ties_at_every_cutoff_passes(ranking):
    """Twenty jobs of ten candidates, scores on a coarse grid so that every job's K = 3 cutoff falls
    inside a tie, and a variant scored exactly as the reference: every top-K row PASSes on its interval
    (flip 0 of 200, Wilson upper bound 0.019 < 0.05; retention and impact ratio 1 in every resample)."""
    rng = np.random.default_rng(11)
    jobs = []
    for _ in range(20):
        col = [9.0, 8.0] + [7.0] * 4 + list(rng.integers(0, 6, 4).astype(float))
        jobs.append(list(rng.permutation(col)))
    m = _analyse(_frame({"BASE": jobs, "V01": jobs}), {"counterfactual": 3, "group": 3, "merit": 3}, ranking)
    for metric in TOP_K:
        row = _cell(m, metric, "V01")
        assert row["ties_at_cutoff"] == 80, metric
        assert row["status"] == "PASS", (metric, row["decision_low"], row["decision_high"])
    assert _cell(m, "flip_rate", "V01")["value"] == 0.0


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tie_patterns(), st.sampled_from(RANKINGS))
def test_identical_variant_never_flips(pattern, ranking):
    """An identical variant: flip rate exactly 0, retention and impact ratio exactly 1, in both modes,
    whatever the ties at the cutoffs."""
    scores, k = pattern
    m = _analyse(_frame(scores), k, ranking)
    flip, ret, ir = (_cell(m, metric, "V01") for metric in TOP_K)
    assert flip["value"] == 0.0 and flip["n_in_out"] == 0.0 and flip["n_out_in"] == 0.0
    assert ret["value"] == 1.0 and ir["value"] == 1.0
    assert ret["retained"] == ret["slots"]
    for metric in TOP_K:  # the variant row reads as the reference row
        assert _cell(m, metric, "V01")["value"] == _cell(m, metric, "BASE")["value"]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tie_patterns(), st.sampled_from(RANKINGS))
def test_expected_counts_add_up(pattern, ranking):
    """Any variant: n_in,out − n_out,in is the difference of the expected top-K counts, and the table
    matches the average over every shared tie order (enumerated)."""
    scores, k = pattern
    m = _analyse(_frame(scores), k, ranking)
    kc, kg = k["counterfactual"], k["group"]
    flip, ret = _cell(m, "flip_rate", "V02"), _cell(m, "retention_rate", "V02")
    ii = io = oi = Fraction(0)
    slots = Fraction(0)
    n_ref = n_var = Fraction(0)
    retained_g = Fraction(0)
    for ref, var in zip(scores["BASE"], scores["V02"]):
        e_ii, e_io, e_oi = _expected_by_enumeration(ref, var, kc, ranking)
        ii, io, oi = ii + e_ii, io + e_io, oi + e_oi
        n_ref += e_ii + e_io
        n_var += e_ii + e_oi
        g_ii, g_io, _ = _expected_by_enumeration(ref, var, kg, ranking)
        retained_g += g_ii
        slots += g_ii + g_io
    assert flip["n_in_out"] - flip["n_out_in"] == pytest.approx(float(n_ref - n_var), abs=1e-12)
    assert flip["n_in_out"] == pytest.approx(float(io), abs=1e-12)
    assert flip["n_out_in"] == pytest.approx(float(oi), abs=1e-12)
    assert flip["value"] == pytest.approx(float((io + oi) / sum(len(c) for c in scores["BASE"])), abs=1e-12)
    assert ret["retained"] == pytest.approx(float(retained_g), abs=1e-12)
    assert ret["slots"] == pytest.approx(float(slots), abs=1e-12)
    if ranking == "per_variant":  # each variant fills its own top-K
        assert flip["n_in_out"] == pytest.approx(flip["n_out_in"], abs=1e-12)


def test_untied_cells_keep_the_product():
    """No tie at the cutoff: membership is 0 or 1 and nothing changes (flip tables by hand). BASE
    9 7 5 3, V01 4 7 5 3, K = 2: per-variant, cv0 drops out and cv2 comes in; swap-in, cv0's 4 ranks
    third against 7 5 3 and cv2's 5 third against 9 7 3, so only cv0 flips."""
    df = _frame({"BASE": [[9, 7, 5, 3]], "V01": [[4, 7, 5, 3]]})
    for ranking, n_oi in (("per_variant", 1), ("swap_in", 0)):
        m = _analyse(df, {"counterfactual": 2, "group": 2, "merit": 2}, ranking)
        flip = _cell(m, "flip_rate", "V01")
        assert flip["ties_at_cutoff"] == 0
        assert flip["n_in_out"] == 1 and flip["n_out_in"] == n_oi and flip["value"] == (1 + n_oi) / 4


# ------------------------------------------------------------------------------ impact ratio in the family

def _shifted() -> pd.DataFrame:
    """Three jobs of six; V01 loses 3 points on the two best candidates of each job: under swap-in they
    drop out of the top 2 (a flip test with a p-value) and out of the top 4 at K = 4 in part."""
    base = [[9, 8, 6, 5, 3, 2], [9, 8, 7, 5, 4, 1], [8, 7, 6, 4, 3, 2]]
    var = [[c[0] - 3, c[1] - 3, *c[2:]] for c in base]
    return _frame({"BASE": base, "V01": var})


@pytest.mark.parametrize("multiplicity", ["run", "per_metric", "hierarchical"])
def test_impact_ratio_enters_the_family_when_k_differs(multiplicity):
    """swap_in, k.group != k.counterfactual: the selection table at K = 4 is read at another cutoff than
    the flip rate's, so it is a test of its own, in the family, carried by the selection_ratio row (with
    a p_adj when tested, no "counted once" note; issue 29 §7), and the impact ratio shares it."""
    m = _analyse(_shifted(), {"counterfactual": 2, "group": 4, "merit": 2}, "swap_in", multiplicity=multiplicity)
    ir, flip, sel = (_cell(m, metric, "V01") for metric in ("impact_ratio", "flip_rate", "selection_ratio"))
    assert math.isfinite(sel["p_value"]) and "counted once" not in sel["notes"]
    assert sel["adj_family"] != "" and sel["adj_m"] >= 1
    assert sel["k"] == 4 and flip["k"] == 2
    assert ir["p_value"] == sel["p_value"] and math.isnan(ir["p_adj"])
    assert "the same McNemar table as selection_ratio" in ir["notes"] and ir["adj_family"] == sel["adj_family"]
    if multiplicity == "run":
        assert sel["adj_family"] == flip["adj_family"] == "run" and sel["adj_m"] == flip["adj_m"]
    if multiplicity != "hierarchical":  # the hierarchy tests it only when V01's score test rejects
        assert math.isfinite(sel["p_adj"])
    else:
        assert sel["adj_family"] == "s/c/V01/level2"
        assert math.isfinite(sel["p_adj"]) == math.isfinite(flip["p_adj"])


def test_impact_ratio_shared_when_k_equal():
    """swap_in, k.group == k.counterfactual: the same table as the flip rate's, counted once."""
    m = _analyse(_shifted(), {"counterfactual": 2, "group": 2, "merit": 2}, "swap_in")
    ir, flip = _cell(m, "impact_ratio", "V01"), _cell(m, "flip_rate", "V01")
    assert math.isfinite(ir["p_value"]) and ir["p_value"] == flip["p_value"]
    assert math.isnan(ir["p_adj"]) and math.isfinite(flip["p_adj"])
    assert "counted once in BH" in ir["notes"]
    assert ir["adj_family"] == flip["adj_family"]


def test_impact_ratio_shared_under_a_threshold():
    """A decision threshold: both read the same threshold whatever K says, so still shared."""
    m = _analyse(_shifted(), {"counterfactual": 2, "group": 4, "merit": 2}, "swap_in", threshold=6.5)
    ir, flip = _cell(m, "impact_ratio", "V01"), _cell(m, "flip_rate", "V01")
    assert ir["p_value"] == flip["p_value"]
    assert math.isnan(ir["p_adj"]) and "counted once in BH" in ir["notes"]
