"""Decisions on the example run's data (issue 29 §3, §4), from a committed fixture.

``tests/data/example-paired.csv`` is ``paired.csv`` of ``make example`` under methods version 6 (minilm,
5 jobs x 40 base candidates, 10 variants), and ``tests/data/example-metrics-methods6.csv`` its
``metrics.csv``. Only p-values and the names they support are compared here: they do not depend on the
bootstrap, so the analysis runs with few resamples.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from compiler import catalog
from runtime.analysis import analyse

DATA = Path(__file__).parent / "data"
AXES = ("sex_gender", "age_signal", "place_of_residence", "language_signal", "disability_signal")
THRESHOLDS = catalog.default_thresholds()
THRESHOLDS["research"]["score_delta"] = {"pass": 0.02, "investigate": 0.05}
THRESHOLDS["operational"]["score_delta"] = {"pass": 0.04, "investigate": 0.05}


@pytest.fixture(scope="module")
def paired() -> pd.DataFrame:
    return pd.read_csv(DATA / "example-paired.csv")


def _analyse(paired: pd.DataFrame, multiplicity: str | None):
    levels = {v: {a: str(g[a].iloc[0]) for a in AXES} for v, g in paired.groupby("variant")}
    return analyse(paired, reference="BASE", k={"counterfactual": 10, "group": 10, "merit": 20}, alpha=0.05,
                   n_bootstrap=20, seed=20261129, thresholds=THRESHOLDS, score_range={"minilm": (0.0, 1.0)},
                   variant_levels=levels, multiplicity=multiplicity).metrics


def test_multiplicity_run_gives_methods_6_p_adj_byte_for_byte(paired):
    old = pd.read_csv(DATA / "example-metrics-methods6.csv")
    new = _analyse(paired, "run")
    key = ["metric", "variant"]
    merged = old[[*key, "p_value", "p_adj"]].merge(new[[*key, "p_value", "p_adj", "adj_family"]], on=key,
                                                    suffixes=("_6", "_7"))
    assert len(merged) == len(old) == 90 and len(new) == 100  # methods 8 adds selection_ratio (10 rows)
    # its McNemar is the flip table's (K group = K counterfactual): it shares the flip row's, adds no test
    sel = new[new["metric"] == "selection_ratio"]
    assert sel["p_adj"].isna().all()
    flips = new[new["metric"] == "flip_rate"].set_index("variant")["p_value"]
    assert (sel.set_index("variant")["p_value"].drop("BASE") == flips.drop("BASE")).all()
    for col in ("p_value", "p_adj"):
        a, b = merged[f"{col}_6"].to_numpy(float), merged[f"{col}_7"].to_numpy(float)
        assert (np.isnan(a) == np.isnan(b)).all()
        # the CSV holds repr(float): the same text means the same double
        assert [repr(x) for x in a[~np.isnan(a)]] == [repr(x) for x in b[~np.isnan(b)]]
    assert set(merged.loc[merged["p_adj_7"].notna(), "adj_family"]) == {"run"}


def test_churn_and_retention_name_no_group_without_evidence(paired):
    m = _analyse(paired, None).set_index(["metric", "variant"])
    # V06: 12 flips out, 10 in, McNemar p = 0.83 (methods 6 named three levels on this FAIL row)
    v06 = m.loc[("flip_rate", "V06")]
    assert (v06["n_in_out"], v06["n_out_in"]) == (12, 10) and v06["p_value"] == pytest.approx(0.8318, abs=1e-4)
    assert v06["disadvantaged"] in ("", "direction not established")
    # V02 is selected more (16 in, 11 out): its retention (0.78) and impact ratio rows never name the reference
    # from retention's own sign; the selection test does not reject, so no side is named
    v02 = m.loc[("flip_rate", "V02")]
    assert (v02["n_in_out"], v02["n_out_in"]) == (11, 16)
    for metric in ("retention_rate", "impact_ratio", "flip_rate"):
        assert m.loc[(metric, "V02"), "disadvantaged"] in ("", "direction not established"), metric
    # every named side rests on a rejected test (p_adj < alpha of the row or of its selection test) or, for the
    # TPR/FPR gaps, an interval wholly beyond the PASS bound (FAIL)
    named = m[~m["disadvantaged"].isin(["", "direction not established"])].reset_index()
    for r in named.itertuples():
        evidence = r.p_adj if r.metric not in ("retention_rate", "impact_ratio", "selection_ratio") else \
            m.loc[("flip_rate", r.variant), "p_adj"]
        assert (evidence < 0.05) or (r.metric.endswith("_gap") and r.status == "FAIL" and r.ci_low > 0.1), r
    # the default family is the per-system hierarchy (methods 7): level-1 score tests, level-2 secondaries
    fams = set(m["adj_family"].dropna()) - {""}
    assert "minilm/level1" in fams and all(f == "minilm/level1" or f.endswith("/level2") for f in fams), fams
    assert not math.isnan(m.loc[("score_delta", "V04"), "p_adj"])
