"""An independent re-implementation of seed 000 §3.4-3.6, checked against runtime.analysis.

Written straight from the paper's definitions with plain loops over jobs and candidates, numpy
and scipy; it calls none of runtime.analysis's helpers. Bootstrap intervals are not compared (they
depend on the generator); everything else must agree to 1e-9.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from compiler import catalog
from runtime.analysis import analyse

K = {"counterfactual": 5, "group": 6, "merit": 8}
LO, HI = 0.0, 100.0
VARIANTS = ["BASE", "V1", "V2", "V3"]


def random_frame(seed: int = 2024) -> pd.DataFrame:
    g = np.random.default_rng(seed)
    rows = []
    for j in range(3):
        cvs = [f"cv{i:02d}" for i in range(30)]
        base = g.integers(20, 90, size=30).astype(float)
        match = (g.random(30) < 0.4).astype(int)
        for v, name in enumerate(VARIANTS):
            if name in ("BASE", "V3"):
                score = base.copy()          # V3 is identical to the reference
            else:
                score = base + g.integers(-6, 7, size=30) + v
            order = sorted(range(30), key=lambda i: (-score[i], cvs[i]))
            rank = {i: r + 1 for r, i in enumerate(order)}
            for i in range(30):
                rows.append({"system": "emb", "condition": "neutral", "replicate": 0,
                             "job_id": f"job{j}", "cv_id": cvs[i], "variant": name,
                             "score": score[i], "rank": rank[i], "is_true_match": match[i]})
    return pd.DataFrame(rows)


def pool_positions(scores: dict[str, float]) -> dict[str, tuple[int, int]]:
    """cv -> (h, t): how many candidates of the pool score strictly higher, and how many share the
    score (itself included). Positions h+1 .. h+t; mid-rank h + (t + 1) / 2."""
    return {cv: (sum(1 for o in scores.values() if o > s), sum(1 for o in scores.values() if o == s))
            for cv, s in scores.items()}


def half_even(x: float) -> int:
    """Round an expected count as the analysis does (``np.rint``, half to even) after snapping off the
    quadrature's rounding error: shared tie orders give exact halves (2.5 flips) that a float sum here
    can land on either side of."""
    return round(round(x, 9))


def p_in(h: int, t: int, k: int) -> float:
    """Probability of being among the first k when t tied candidates fill positions h+1 .. h+t."""
    return max(0, min(t, k - h)) / t


def signed_rank_p(d: list[float]) -> float:
    """Two-sided Wilcoxon signed-rank p of integer differences, written from the textbook: zeros
    dropped; no ties: scipy's exact/normal default; ties, n <= 20: all 2^n sign flips with
    mid-ranks; ties, n > 50: normal approximation with the tie-corrected variance (the frames here
    have no tied case with 20 < n <= 50, where the analysis counts the exact distribution and no
    brute force can follow it)."""
    nz = [x for x in d if x != 0]
    if not nz:
        return math.nan
    a = [abs(x) for x in nz]
    ranks = [sum(1 for o in a if o < v) + (sum(1 for o in a if o == v) + 1) / 2 for v in a]
    ties = len(set(a)) < len(a)
    if not ties and len(nz) == len(d):
        return float(stats.wilcoxon(nz).pvalue)
    t_plus = sum(r for r, x in zip(ranks, nz) if x > 0)
    n = len(nz)
    if n <= 20:
        dist = [sum(r for r, sign in zip(ranks, signs) if sign) for signs in itertools.product((0, 1), repeat=n)]
        lo = sum(1 for v in dist if v <= t_plus + 1e-9) / len(dist)
        hi = sum(1 for v in dist if v >= t_plus - 1e-9) / len(dist)
        return min(1.0, 2 * min(lo, hi))
    assert n > 50, "a tied case with 20 < n <= 50: no independent exact computation here"
    groups = [a.count(v) for v in set(a)]
    var = n * (n + 1) * (2 * n + 1) / 24 - sum(t ** 3 - t for t in groups) / 48
    z = (t_plus - n * (n + 1) / 4) / math.sqrt(var)
    return float(2 * stats.norm.sf(abs(z)))


def swap_positions(base: dict[str, float], var: dict[str, float]) -> dict[str, tuple[int, int]]:
    """cv -> (h, t) of its variant resume swapped into the reference pool: h reference resumes of the
    other candidates score higher, t - 1 tie with it."""
    return {cv: (sum(1 for o, s in base.items() if o != cv and s > var[cv]),
                 1 + sum(1 for o, s in base.items() if o != cv and s == var[cv])) for cv in var}


def shared_order_joint(ref_mates: set[str], var_mates: set[str], slots_ref: int, slots_var: int) -> float:
    """Probability that a candidate is in both top-Ks when one priority per candidate breaks the ties of
    both rankings (issue 29 §7): written as the integral over the candidate's own uniform priority x,
    with each competitor ahead of it independently with probability x; given x, a DP over the
    competitors counts how many of each tie group are ahead. The integrand is a polynomial of degree
    at most the number of competitors, so Gauss-Legendre with 64 nodes integrates it exactly (to
    rounding). ``slots_*`` = K minus the candidates strictly above in that ranking."""
    if slots_ref <= 0 or slots_var <= 0:
        return 0.0
    nodes, weights = np.polynomial.legendre.leggauss(64)
    total = 0.0
    for node, weight in zip(nodes, weights):
        x = (node + 1) / 2
        dist = {(0, 0): 1.0}  # (ahead in the reference tie group, ahead in the variant's) -> probability
        for o in ref_mates | var_mates:
            step: dict[tuple[int, int], float] = {}
            for (a, b), q in dist.items():
                ahead = (a + (o in ref_mates), b + (o in var_mates))
                step[ahead] = step.get(ahead, 0.0) + q * x
                step[(a, b)] = step.get((a, b), 0.0) + q * (1 - x)
            dist = step
        total += weight / 2 * sum(q for (a, b), q in dist.items() if a < slots_ref and b < slots_var)
    return total


def reference_metrics(df: pd.DataFrame, ranking: str = "per_variant") -> dict[tuple[str, str], dict[str, float | str]]:
    """{(metric, variant): {"value", "p_value", "test", "in_bh"}} from seed 000 §3.4, tie-aware
    (methods version 3): mid-ranks, top-K membership as the probability over the orders of tied
    candidates (one order per candidate, shared by its two resumes: issue 29 §7), tie-averaged nDCG
    (McSherry & Najork 2008), tests on the integer score grid. The
    frame's own rank column (a cv_id tie-break) is ignored."""
    data: dict[str, dict[tuple[str, str], tuple[float, int]]] = {}
    pos_of: dict[str, dict[tuple[str, str], tuple[int, int]]] = {}
    for name, sub in df.groupby("variant"):
        data[name] = {(r.job_id, r.cv_id): (r.score, int(r.is_true_match)) for r in sub.itertuples()}
    pool_of: dict[str, dict[tuple[str, str], tuple[int, int]]] = {}
    for name, sub in df.groupby("variant"):
        pool_of[name] = {(job, cv): ht for job, jsub in sub.groupby("job_id")
                         for cv, ht in pool_positions(dict(zip(jsub["cv_id"], jsub["score"]))).items()}
    for name, sub in df.groupby("variant"):
        pos_of[name] = {}
        for job, jsub in sub.groupby("job_id"):
            scores = dict(zip(jsub["cv_id"], jsub["score"]))
            if ranking == "swap_in" and name != "BASE":
                base = {cv: data["BASE"][(job, cv)][0] for cv in scores}
                positions = swap_positions(base, scores)
            else:
                positions = pool_positions(scores)
            for cv, ht in positions.items():
                pos_of[name][(job, cv)] = ht
    keys = sorted(data["BASE"])
    jobs = sorted({j for j, _ in keys})

    def joint_in(v: str, k: int) -> list[float]:
        """P(in the reference's and in v's top-K) per candidate, one tie order shared (issue 29 §7)."""
        out_ = []
        for job, cv in keys:
            mine = [o for j, o in keys if j == job and o != cv]
            b_of = {o: data["BASE"][(job, o)][0] for o in mine}
            v_of = {o: data[v][(job, o)][0] for o in mine}
            sb, sv = data["BASE"][(job, cv)][0], data[v][(job, cv)][0]
            ref_mates = {o for o in mine if b_of[o] == sb}
            swap = ranking == "swap_in" and v != "BASE"
            var_mates = {o for o in mine if (b_of[o] if swap else v_of[o]) == sv}
            above_ref = sum(1 for o in mine if b_of[o] > sb)
            above_var = sum(1 for o in mine if (b_of[o] if swap else v_of[o]) > sv)
            out_.append(shared_order_joint(ref_mates, var_mates, k - above_ref, k - above_var))
        return out_
    out: dict[tuple[str, str], dict[str, float | str]] = {}
    for v in VARIANTS:
        raw_v = [data[v][key][0] for key in keys]
        raw_b = [data["BASE"][key][0] for key in keys]
        y = [data["BASE"][key][1] for key in keys]
        h_v = [pos_of[v][key] for key in keys]
        h_b = [pos_of["BASE"][key] for key in keys]
        mid_v = [h + (t + 1) / 2 for h, t in h_v]
        mid_b = [h + (t + 1) / 2 for h, t in h_b]
        n = len(keys)

        # score delta: normalised mean; the test on the integer score differences
        delta = sum((raw_v[i] - LO) / (HI - LO) - (raw_b[i] - LO) / (HI - LO) for i in range(n)) / n
        p = signed_rank_p([raw_v[i] - raw_b[i] for i in range(n)])
        out[("score_delta", v)] = {"value": delta, "p_value": p, "in_bh": True}

        # MARC / K on mid-ranks; the rank test is not informative under per-variant ranking
        kc = K["counterfactual"]
        marc = sum(abs(mid_v[i] - mid_b[i]) for i in range(n)) / n / kc
        p = signed_rank_p([2 * (mid_v[i] - mid_b[i]) for i in range(n)])
        out[("marc", v)] = {"value": marc, "p_value": p, "in_bh": ranking == "swap_in"}

        # flip rate: expected counts; McNemar on the rounded table (not informative either)
        pin_v = [p_in(h, t, kc) for h, t in h_v]
        pin_b = [p_in(h, t, kc) for h, t in h_b]
        # one tie order per candidate, shared by its reference and variant resumes (issue 29 §7); the
        # reference against itself is that one order (joint = p)
        joint = pin_b if v == "BASE" else joint_in(v, kc)
        n_io = sum(pin_b[i] - joint[i] for i in range(n))
        n_oi = sum(pin_v[i] - joint[i] for i in range(n))
        b, c = half_even(n_io), half_even(n_oi)
        disc = b + c
        if disc == 0:
            p = 1.0
        elif disc < 25:
            p = min(1.0, 2 * stats.binom.cdf(min(b, c), disc, 0.5))
        else:
            p = stats.chi2.sf((abs(b - c) - 1) ** 2 / disc, 1)
        out[("flip_rate", v)] = {"value": (n_io + n_oi) / n, "p_value": p, "in_bh": ranking == "swap_in"}
        flip_p = p

        # retention, impact ratio (expected retained / slots)
        kg = K["group"]
        gv = [p_in(h, t, kg) for h, t in h_v]
        gb = [p_in(h, t, kg) for h, t in h_b]
        jg = gb if v == "BASE" else joint_in(v, kg)
        rr, retained, slots, ret_ref = [], 0.0, 0.0, 0.0
        for job in jobs:
            idx = [i for i, (j, _) in enumerate(keys) if j == job]
            r_j = sum(jg[i] for i in idx)
            s_j = sum(gb[i] for i in idx)
            rr.append(r_j / s_j)
            retained += r_j
            slots += s_j
            ret_ref += sum(gb[i] for i in idx)
        out[("retention_rate", v)] = {"value": sum(rr) / len(rr), "p_value": math.nan, "in_bh": False}
        ref_mean = 1.0  # the reference's retention against itself
        sel_in_bh = False
        if ranking == "swap_in":  # the paired in/out table at K group: the flips' table when K group = K counterfactual
            io = sum(gb[i] - jg[i] for i in range(n))
            oi = sum(gv[i] - jg[i] for i in range(n))
            sel_in_bh = kg != kc  # another cutoff, another test: in the family (issue 29 §7), on selection_ratio
            b_, c_ = half_even(io), half_even(oi)
            p = 1.0 if b_ + c_ == 0 else (min(1.0, 2 * stats.binom.cdf(min(b_, c_), b_ + c_, 0.5)) if b_ + c_ < 25
                                           else stats.chi2.sf((abs(b_ - c_) - 1) ** 2 / (b_ + c_), 1))
            if v == "BASE":
                p = math.nan
        else:
            p = stats.fisher_exact([[half_even(retained), half_even(slots - retained)],
                                    [half_even(ret_ref), half_even(slots - ret_ref)]]).pvalue
        # the impact ratio shares the selection ratio's test (issue 30 §2)
        out[("impact_ratio", v)] = {"value": (sum(rr) / len(rr)) / ref_mean, "p_value": p, "in_bh": False}
        # selection ratio (issue 29 §2): expected variant resumes selected / reference resumes selected at
        # K group; 1 by construction under per-variant ranking: undefined
        if ranking == "swap_in":
            out[("selection_ratio", v)] = {"value": sum(gv) / sum(gb), "p_value": p, "in_bh": sel_in_bh}
        else:
            out[("selection_ratio", v)] = {"value": math.nan, "p_value": math.nan, "in_bh": False}

        # recall@K, nDCG@K (tie-averaged), on the variant's own pool in both ranking modes
        km = K["merit"]
        h_v = [pool_of[v][key] for key in keys]
        mv = [p_in(h, t, km) for h, t in h_v]
        mb = [p_in(h, t, km) for h, t in h_b]
        recalls, ndcgs = [], []
        for job in jobs:
            idx = [i for i, (j, _) in enumerate(keys) if j == job]
            rel = [i for i in idx if y[i] == 1]
            if not rel:
                continue
            recalls.append(sum(mv[i] for i in rel) / len(rel))
            dcg = 0.0
            for h, t in {h_v[i] for i in idx}:
                group = [i for i in idx if h_v[i] == (h, t)]
                mean_rel = sum(y[i] for i in group) / t
                dcg += mean_rel * sum(1 / math.log2(r + 1) for r in range(h + 1, min(h + t, km) + 1))
            idcg = sum(1 / math.log2(r + 1) for r in range(1, min(km, len(rel)) + 1))
            ndcgs.append(dcg / idcg)
        out[("recall_at_k", v)] = {"value": sum(recalls) / len(recalls), "p_value": math.nan, "in_bh": False}
        out[("ndcg_at_k", v)] = {"value": sum(ndcgs) / len(ndcgs), "p_value": math.nan, "in_bh": False}

        # equal opportunity, equalized odds (pooled, expected counts)
        pos_ = sum(y)
        neg = n - pos_
        tpr_v = sum(mv[i] for i in range(n) if y[i] == 1) / pos_
        tpr_b = sum(mb[i] for i in range(n) if y[i] == 1) / pos_
        fpr_v = sum(mv[i] for i in range(n) if y[i] == 0) / neg
        fpr_b = sum(mb[i] for i in range(n) if y[i] == 0) / neg
        out[("equal_opportunity_gap", v)] = {"value": abs(tpr_v - tpr_b), "p_value": math.nan, "in_bh": False}
        out[("equalized_odds_gap", v)] = {"value": max(abs(tpr_v - tpr_b), abs(fpr_v - fpr_b)),
                                          "p_value": math.nan, "in_bh": False}
    # The reference compared with itself is reported (value, CI) but tested by nothing.
    for (metric_id, v), rec in out.items():
        if v == "BASE":
            rec.update(p_value=math.nan, in_bh=False)
    return out


def bh(p: list[float]) -> list[float]:
    """Benjamini-Hochberg step-up adjusted p-values (nan stays nan)."""
    defined = [(x, i) for i, x in enumerate(p) if not math.isnan(x)]
    m = len(defined)
    adj = [math.nan] * len(p)
    running = 1.0
    for rank, (x, i) in reversed(list(enumerate(sorted(defined), start=1))):
        running = min(running, x * m / rank)
        adj[i] = running
    return adj


def status(value: float, metric_id: str, bounds: dict[str, float]) -> str:
    if math.isnan(value):
        return "N/A"
    info = catalog.METRICS[metric_id]
    v = abs(value) if metric_id == "score_delta" else value
    v = float(np.format_float_scientific(v, precision=5, unique=False))
    if metric_id == "selection_ratio":  # two-sided around 1
        def inside(b: float) -> bool:
            return b <= v <= float(np.format_float_scientific(1 / b, precision=5, unique=False))
        return "PASS" if inside(bounds["pass"]) else "INVESTIGATE" if inside(bounds["investigate"]) else "FAIL"
    if info.direction == "lower":
        return "PASS" if v <= bounds["pass"] else "INVESTIGATE" if v <= bounds["investigate"] \
            else "FAIL"
    return "PASS" if v >= bounds["pass"] else "INVESTIGATE" if v >= bounds["investigate"] else "FAIL"


@pytest.fixture(scope="module", params=["per_variant", "swap_in"])
def both(request):
    df = random_frame()
    thresholds = catalog.default_thresholds()
    res = analyse(df, reference="BASE", k=K, alpha=0.05, n_bootstrap=200, seed=99, multiplicity="run",
                  thresholds=thresholds, score_range={"emb": (LO, HI)}, ranking=request.param)
    return res, reference_metrics(df, request.param), thresholds


def test_values_and_p_values_agree(both):
    res, ref, _ = both
    m = res.metrics
    assert len(m) == len(ref) == 40
    for row in m.itertuples():
        exp = ref[(row.metric, row.variant)]
        if math.isnan(exp["value"]):
            assert math.isnan(row.value), (row.metric, row.variant)
        else:
            assert row.value == pytest.approx(exp["value"], abs=1e-9, rel=0), (row.metric, row.variant)
        if math.isnan(exp["p_value"]):
            assert math.isnan(row.p_value), (row.metric, row.variant)
        else:
            assert row.p_value == pytest.approx(exp["p_value"], abs=1e-9, rel=0), \
                (row.metric, row.variant)


def test_p_adj_agrees(both):
    """Seed 000 §3.5's one BH family (``multiplicity: run``; the hierarchy is tests/test_multiplicity.py's)."""
    res, ref, _ = both
    m = res.metrics
    expected = bh([ref[(r.metric, r.variant)]["p_value"] if ref[(r.metric, r.variant)]["in_bh"] else math.nan
                   for r in m.itertuples()])
    for got, exp in zip(m["p_adj"], expected):
        assert (math.isnan(got) and math.isnan(exp)) or got == pytest.approx(exp, abs=1e-9, rel=0)
    # per-variant: the score tests of V1 and V2 (V3 equals the reference; the rank and selection
    # tests cannot reject and stay out of BH); swap-in: also MARC's tests of V1 and V2 (V3's rank
    # changes are all 0), the flips' of V1-V3 and, K group (6) differing from K counterfactual (5),
    # the selection ratio's McNemar of V1-V3, a table of its own (issue 29 §7), which the impact ratio shares
    assert m["p_adj"].notna().sum() == (2 if m["notes"].str.contains("per-variant", na=False).any() else 10)


def interval_status(r, bounds: dict[str, dict[str, float]]) -> str:
    """PASS when the interval the row decides on lies in the PASS band, FAIL when disjoint, else
    INCONCLUSIVE. The flip rate, retention and impact ratio decide on the selection ratio at their cutoff
    (issue 30 §2) when it is defined: its interval, band [pass, 1/pass] of the selection_ratio bounds."""
    on = r.decision_on if r.decision_on != "value" else r.metric
    low, high = (r.ci_low, r.ci_high) if r.decision_on == "value" else (r.decision_low, r.decision_high)
    swap = getattr(r, "ranking_swap", None)  # the ratio is defined under swap-in only
    if r.metric in ("flip_rate", "retention_rate", "impact_ratio") and swap is not None:
        assert (r.decision_on == "selection_ratio") == swap, (r.metric, r.variant, r.decision_on)
    if math.isnan(low) or math.isnan(high):
        return "N/A"
    bound = bounds[on]["pass"]
    a, b = ((-bound, bound) if on == "score_delta" else (bound, 1 / bound) if on == "selection_ratio"
            else (0.0, bound) if catalog.METRICS[on].direction == "lower" else (bound, 1.0))
    a, b = float(f"{a:.5e}"), float(f"{b:.5e}")
    lo, hi = float(f"{low:.5e}"), float(f"{high:.5e}")
    return "PASS" if a <= lo and hi <= b else "FAIL" if hi < a or lo > b else "INCONCLUSIVE"


def test_statuses_and_risk_agree(both):
    res, ref, thresholds = both
    m = res.metrics
    counts = {}
    for tier, column, seed000 in (("research", "status", "status_seed000"),
                                  ("operational", "status_operational", "status_seed000_operational")):
        expected = [status(ref[(r.metric, r.variant)]["value"], r.metric, thresholds[tier][r.metric])
                    for r in m.itertuples()]
        assert list(m[seed000]) == expected
        # the interval status (issue 29 §1), written out: the PASS band of Table 3's pass bound
        swap = not m["notes"].str.contains("per-variant", na=False).any()
        assert list(m[column]) == [interval_status(r, thresholds[tier])
                                   for r in m.assign(ranking_swap=swap).itertuples()]
        # Eq. 6 counts seed 000's nine metrics (not the selection ratio)
        expected = [e for e, r in zip(expected, m.itertuples()) if r.metric != "selection_ratio"]
        f, i, p = (expected.count(s) for s in ("FAIL", "INVESTIGATE", "PASS"))
        counts[tier] = (3 * f + i) / (3 * (f + i + p))
    risk = res.risk.set_index(["system", "tier"])["risk_score"]
    for tier, score in counts.items():
        assert risk[("emb", tier)] == pytest.approx(score, abs=1e-9, rel=0)
        assert risk[("ALL", tier)] == pytest.approx(score, abs=1e-9, rel=0)
    assert len(set(m["status"])) >= 2  # the frame exercises more than one status
