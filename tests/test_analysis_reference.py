"""An independent re-implementation of seed 000 §3.4-3.6, checked against runtime.analysis.

Written straight from the paper's definitions with plain loops over jobs and candidates, numpy
and scipy; it calls none of runtime.analysis's helpers. Bootstrap intervals are not compared (they
depend on the generator); everything else must agree to 1e-9.
"""

from __future__ import annotations

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


def reference_metrics(df: pd.DataFrame) -> dict[tuple[str, str], dict[str, float | str]]:
    """{(metric, variant): {"value", "p_value", "test"}} from seed 000 §3.4."""
    data: dict[str, dict[tuple[str, str], tuple[float, int, int]]] = {}
    for name, sub in df.groupby("variant"):
        data[name] = {(r.job_id, r.cv_id): ((r.score - LO) / (HI - LO), int(r.rank),
                                             int(r.is_true_match))
                      for r in sub.itertuples()}
    keys = sorted(data["BASE"])
    jobs = sorted({j for j, _ in keys})
    out: dict[tuple[str, str], dict[str, float | str]] = {}
    for v in VARIANTS:
        s_v = np.array([data[v][key][0] for key in keys])
        s_b = np.array([data["BASE"][key][0] for key in keys])
        r_v = np.array([data[v][key][1] for key in keys])
        r_b = np.array([data["BASE"][key][1] for key in keys])
        y = np.array([data["BASE"][key][2] for key in keys])
        n = len(keys)

        # score delta
        delta = sum(s_v[i] - s_b[i] for i in range(n)) / n
        p = stats.wilcoxon(s_v, s_b).pvalue if np.any(s_v != s_b) else math.nan
        out[("score_delta", v)] = {"value": delta, "p_value": p, "test": "wilcoxon"}

        # MARC / K
        kc = K["counterfactual"]
        marc = sum(abs(int(r_v[i]) - int(r_b[i])) for i in range(n)) / n / kc
        p = stats.wilcoxon(r_v, r_b).pvalue if np.any(r_v != r_b) else math.nan
        out[("marc", v)] = {"value": marc, "p_value": p, "test": "wilcoxon"}

        # flip rate + McNemar
        n_io = sum(1 for i in range(n) if r_b[i] <= kc and r_v[i] > kc)
        n_oi = sum(1 for i in range(n) if r_b[i] > kc and r_v[i] <= kc)
        disc = n_io + n_oi
        if disc < 25:
            p = min(1.0, 2 * stats.binom.cdf(min(n_io, n_oi), disc, 0.5))
            test = "mcnemar_exact"
        else:
            p = stats.chi2.sf((abs(n_io - n_oi) - 1) ** 2 / disc, 1)
            test = "mcnemar_chi2_cc"
        out[("flip_rate", v)] = {"value": disc / n, "p_value": p, "test": test}

        # retention, impact ratio
        kg = K["group"]
        rr, retained, slots, rr_ref, ret_ref = [], 0, 0, [], 0
        for job in jobs:
            b_set = {cv for (j, cv) in keys if j == job and data["BASE"][(j, cv)][1] <= kg}
            v_set = {cv for (j, cv) in keys if j == job and data[v][(j, cv)][1] <= kg}
            rr.append(len(b_set & v_set) / len(b_set))
            rr_ref.append(len(b_set & b_set) / len(b_set))
            retained += len(b_set & v_set)
            ret_ref += len(b_set)
            slots += len(b_set)
        out[("retention_rate", v)] = {"value": sum(rr) / len(rr), "p_value": math.nan, "test": ""}
        p = stats.fisher_exact([[retained, slots - retained], [ret_ref, slots - ret_ref]]).pvalue
        out[("impact_ratio", v)] = {"value": (sum(rr) / len(rr)) / (sum(rr_ref) / len(rr_ref)),
                                    "p_value": p, "test": "fisher_exact"}

        # recall@K, nDCG@K
        km = K["merit"]
        recalls, ndcgs = [], []
        for job in jobs:
            idx = [i for i, (j, _) in enumerate(keys) if j == job]
            rel = [i for i in idx if y[i] == 1]
            if not rel:
                continue
            recalls.append(sum(1 for i in rel if r_v[i] <= km) / len(rel))
            ordered = sorted(idx, key=lambda i: r_v[i])[:km]
            dcg = sum(y[i] / math.log2(pos + 2) for pos, i in enumerate(ordered))
            ideal = sorted((y[i] for i in idx), reverse=True)[:km]
            idcg = sum(rel_ / math.log2(pos + 2) for pos, rel_ in enumerate(ideal))
            ndcgs.append(dcg / idcg)
        out[("recall_at_k", v)] = {"value": sum(recalls) / len(recalls), "p_value": math.nan,
                                   "test": ""}
        out[("ndcg_at_k", v)] = {"value": sum(ndcgs) / len(ndcgs), "p_value": math.nan, "test": ""}

        # equal opportunity, equalized odds (pooled)
        pos_ = sum(y)
        neg = n - pos_
        tpr_v = sum(1 for i in range(n) if y[i] == 1 and r_v[i] <= km) / pos_
        tpr_b = sum(1 for i in range(n) if y[i] == 1 and r_b[i] <= km) / pos_
        fpr_v = sum(1 for i in range(n) if y[i] == 0 and r_v[i] <= km) / neg
        fpr_b = sum(1 for i in range(n) if y[i] == 0 and r_b[i] <= km) / neg
        out[("equal_opportunity_gap", v)] = {"value": abs(tpr_v - tpr_b), "p_value": math.nan,
                                             "test": ""}
        out[("equalized_odds_gap", v)] = {"value": max(abs(tpr_v - tpr_b), abs(fpr_v - fpr_b)),
                                          "p_value": math.nan, "test": ""}
    # The reference compared with itself is reported (value, CI) but tested by nothing.
    for (metric_id, v), rec in out.items():
        if v == "BASE":
            rec.update(p_value=math.nan, test="")
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
    if info.direction == "lower":
        return "PASS" if v <= bounds["pass"] else "INVESTIGATE" if v <= bounds["investigate"] \
            else "FAIL"
    return "PASS" if v >= bounds["pass"] else "INVESTIGATE" if v >= bounds["investigate"] else "FAIL"


@pytest.fixture(scope="module")
def both():
    df = random_frame()
    thresholds = catalog.default_thresholds()
    res = analyse(df, reference="BASE", k=K, alpha=0.05, n_bootstrap=200, seed=99,
                  thresholds=thresholds, score_range={"emb": (LO, HI)})
    return res, reference_metrics(df), thresholds


def test_values_and_p_values_agree(both):
    res, ref, _ = both
    m = res.metrics
    assert len(m) == len(ref) == 36
    for row in m.itertuples():
        exp = ref[(row.metric, row.variant)]
        assert row.value == pytest.approx(exp["value"], abs=1e-9, rel=0), (row.metric, row.variant)
        if math.isnan(exp["p_value"]):
            assert math.isnan(row.p_value), (row.metric, row.variant)
        else:
            assert row.p_value == pytest.approx(exp["p_value"], abs=1e-9, rel=0), \
                (row.metric, row.variant)
        assert row.test == exp["test"]


def test_p_adj_agrees(both):
    res, ref, _ = both
    m = res.metrics
    expected = bh([ref[(r.metric, r.variant)]["p_value"] for r in m.itertuples()])
    for got, exp in zip(m["p_adj"], expected):
        assert (math.isnan(got) and math.isnan(exp)) or got == pytest.approx(exp, abs=1e-9, rel=0)
    # 3 variants x 4 tested metrics, less V3's two Wilcoxons (V3 equals the reference)
    assert m["p_adj"].notna().sum() == 10


def test_statuses_and_risk_agree(both):
    res, ref, thresholds = both
    m = res.metrics
    counts = {}
    for tier, column in (("research", "status"), ("operational", "status_operational")):
        expected = [status(ref[(r.metric, r.variant)]["value"], r.metric, thresholds[tier][r.metric])
                    for r in m.itertuples()]
        assert list(m[column]) == expected
        f, i, p = (expected.count(s) for s in ("FAIL", "INVESTIGATE", "PASS"))
        counts[tier] = (3 * f + i) / (3 * (f + i + p))
    risk = res.risk.set_index(["system", "tier"])["risk_score"]
    for tier, score in counts.items():
        assert risk[("emb", tier)] == pytest.approx(score, abs=1e-9, rel=0)
        assert risk[("ALL", tier)] == pytest.approx(score, abs=1e-9, rel=0)
    assert len(set(m["status"])) >= 2  # the frame exercises more than one status
