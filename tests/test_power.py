"""Power and MDE in decision units (issue 30 §3): ``power.csv`` on the example's paired.csv, the
arithmetic against scipy's noncentral t, ``audit compile --pilot``.

Figures on ``tests/data/example-paired.csv`` (minilm, 5 jobs x 40 base candidates, 9 variants, top-10
swap-in; sd(diff) 0.0264 (V07) to 0.0425 (V04)), level-1 test = the signed-rank test via n·3/π:

- MDE in d (pooled s_p) at α = 0.05: 0.032-0.052; at α/9: 0.042-0.068;
- n for 80% at α/9: 174-444 at {score: 0.0075}; 259-665 at {selection_ratio: 0.8} (δ* = 0.00612).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from compiler.power import ARE_WILCOXON, POWER_COLUMNS, level_one_power
from runtime.analysis.power import power_table, smallest_detectable_ratio
from runtime.analysis.sesoi import ratio_at_shift, sesoi_table

from conftest import run_cli

DATA = Path(__file__).parent / "data"
ROOT = Path(__file__).resolve().parent.parent


def _resolved(sesoi):
    return {"analysis": {"k": {"counterfactual": 10, "group": 10, "merit": 20}, "alpha": 0.05,
                         "effect_size": {"sesoi": sesoi, "power": 0.8, "contrasts": []}},
            "variants": {"reference": "BASE"}, "systems": [{"id": "minilm", "score_range": [0, 1]}], "axes": {}}


def _nct_power(effect, nobs, level):
    """Two-sided power of a one-sample t from scipy's noncentral t (independent of statsmodels)."""
    df, nc = nobs - 1, effect * math.sqrt(nobs)
    t = stats.t.ppf(1 - level / 2, df)
    return stats.nct.sf(t, df, nc) + stats.nct.cdf(-t, df, nc)


def test_level_one_power_against_the_noncentral_t():
    res = level_one_power(200, 0.03, 0.0061, level=0.05 / 9)
    nobs = 200 * ARE_WILCOXON
    assert res["power"] == pytest.approx(_nct_power(0.0061 / 0.03, nobs, 0.05 / 9), rel=1e-6)
    assert _nct_power(res["mde_shift"] / 0.03, nobs, 0.05 / 9) == pytest.approx(0.8, abs=1e-6)
    n = res["n_for_80"]
    assert _nct_power(0.0061 / 0.03, n * ARE_WILCOXON, 0.05 / 9) >= 0.8 > _nct_power(0.0061 / 0.03, (n - 1) * ARE_WILCOXON, 0.05 / 9)
    assert math.isnan(level_one_power(200, 0.03, math.nan, level=0.05)["power"])


@pytest.fixture(scope="module")
def example():
    return pd.read_csv(DATA / "example-paired.csv")


@pytest.fixture(scope="module")
def tables(example):
    out = {}
    for name, sesoi in (("ratio", {"selection_ratio": 0.8}), ("score", {"score": 0.0075})):
        r = _resolved(sesoi)
        out[name] = power_table(example, r, sesoi=sesoi_table(example, r))
    return out


def test_power_csv_on_the_example(tables, example):
    t = tables["ratio"]
    assert list(t.columns) == list(POWER_COLUMNS) and len(t) == 9 * 2
    assert set(t["category"]) == {f"V0{i}" for i in range(1, 10)} and (t["n"] == 200).all()
    assert np.allclose(sorted(set(t["level"])), [0.05 / 9, 0.05])
    assert t["sesoi_shift"].iloc[0] == pytest.approx(0.0061198, abs=1e-6)
    # sd(diff) by hand for V04
    w = example.pivot_table(index=["job_id", "cv_id"], columns="variant", values="score")
    v04 = t[t["category"] == "V04"].iloc[0]
    assert v04["sd_diff"] == pytest.approx(float((w["V04"] - w["BASE"]).std(ddof=1)))
    sp = math.sqrt((w["V04"].var() + w["BASE"].var()) / 2)
    assert v04["mde_d"] == pytest.approx(v04["mde_shift"] / sp)
    base = example[example["variant"] == "BASE"]
    assert v04["mde_ratio"] == ratio_at_shift(base["score"].to_numpy(float), base["job_id"].to_numpy(), v04["mde_shift"], k=10)
    at_a, at_f = t[t["level"] == 0.05], t[t["level"] < 0.05]
    # issue 30 must-show: variant MDEs in d 0.03-0.05 at α and 0.04-0.07 at α/9 (not methods 7's 0.199 in d_z)
    assert at_a["mde_d"].min() == pytest.approx(0.0323, abs=5e-4) and at_a["mde_d"].max() == pytest.approx(0.0523, abs=5e-4)
    assert 0.04 <= at_f["mde_d"].min() and at_f["mde_d"].max() <= 0.07
    # n for 80% at α/9: 259 (V07) ... 665 (V04) at the ratio's shift 0.0061; 174 ... 444 at {score: 0.0075}
    assert (at_f["n_for_80"].min(), at_f["n_for_80"].max()) == (259, 665)
    f2 = tables["score"][tables["score"]["level"] < 0.05]
    assert (f2["n_for_80"].min(), f2["n_for_80"].max()) == (174, 444)
    assert f2.set_index("category")["n_for_80"].idxmin() == "V07" and f2.set_index("category")["n_for_80"].idxmax() == "V04"


def test_smallest_detectable_ratio_for_page_one(tables):
    page = smallest_detectable_ratio(tables["ratio"])
    assert list(page.columns) == ["system", "category", "mde_ratio", "mde_shift", "level"]
    assert len(page) == 9 and np.allclose(page["level"], 0.05 / 9)
    assert (page["mde_ratio"] == 0.78).all()   # 39 of 50 selected places: the ratio moves in steps of 1/50


EXAMPLE_SPEC = (ROOT / "specs" / "example.yaml").read_text().replace("    sesoi: 0.2", "    sesoi: {selection_ratio: 0.8}")


def test_compile_with_a_pilot(tmp_path):
    import shutil

    shutil.copytree(ROOT / "specs" / "jobs", tmp_path / "jobs")
    (tmp_path / "spec.yaml").write_text(EXAMPLE_SPEC)
    (tmp_path / "pilot").mkdir()
    shutil.copy(DATA / "example-paired.csv", tmp_path / "pilot" / "paired.csv")
    (tmp_path / "empty").mkdir()
    # bad pilots first: exit 2, one message, nothing locked
    proc = run_cli("compile", "spec.yaml", "--pilot", "empty", cwd=tmp_path)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.strip() == "error: --pilot empty: no paired.csv in it; give the folder of an earlier run of this " \
                                  "design (audit execute writes paired.csv there)"
    from compiler.errors import AuditError
    from runtime.cli import _pilot_frame

    other = pd.read_csv(DATA / "example-paired.csv")
    other.loc[other["job_id"] == "accountant", "job_id"] = "auditor"
    other = other[other["variant"] != "V09"]
    (tmp_path / "other").mkdir()
    other.to_csv(tmp_path / "other" / "paired.csv", index=False)
    resolved = {"jobs": [{"id": j} for j in sorted(set(other["job_id"]) - {"auditor"} | {"accountant"})],
                "variants": {"table": {v: {} for v in [f"V0{i}" for i in range(1, 10)] + ["BASE"]}}}
    with pytest.raises(AuditError) as err:
        _pilot_frame(tmp_path / "other", resolved)
    assert str(err.value).endswith("its paired.csv is not a run of this design: jobs not in the spec: auditor; "
                                   "missing: accountant; variants missing: V09; a pilot must have the spec's jobs "
                                   "and variants")
    assert not (tmp_path / "spec.lock.json").exists()
    proc = run_cli("compile", "spec.yaml", "--pilot", "pilot", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "all jobs (top-10 swap-in): ratio 0.8, shift 0.00612 (0.00612 normalised), d = 0.0362" in proc.stdout
    row = next(line for line in proc.stdout.splitlines() if "│ V04 " in line)
    assert [c.strip() for c in row.split("│")[3:11]] == ["200", "0.0425", "0.05", "0.508", "399", "0.00866", "0.78", "0.0523"]
    import hashlib

    lock = json.loads((tmp_path / "spec.lock.json").read_text())
    assert lock["pilot"]["sha256"] == hashlib.sha256((DATA / "example-paired.csv").read_bytes()).hexdigest()
