"""The interval coverage bench (``bench/coverage_counterfactual.py``, issue 39 §4): the ``example-*`` settings'
estimand is built from the committed example (``tests/data/example-paired.csv``), a cover chunk records every
interval of ``metrics.csv`` (``decision_low``/``decision_high`` included), and chunks of another size or interval
method are run again. The bench itself (hours) stays out of CI."""

from __future__ import annotations

import gzip
import importlib.util
import json
import math
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("coverage_bench", ROOT / "bench" / "coverage_counterfactual.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # its dataclass looks its module up
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def example():
    frame = pd.read_csv(ROOT / "tests" / "data" / "example-paired.csv")
    wide = frame.pivot_table(index=["job_id", "cv_id", "is_true_match"], columns="variant", values="score").reset_index()
    wide["d1"], wide["d2"] = wide["V01"] - wide["BASE"], wide["V02"] - wide["BASE"]
    return wide


def _wide(frame: pd.DataFrame) -> pd.DataFrame:
    return frame.pivot_table(index=["condition", "job_id", "cv_id", "is_true_match"], columns="variant",
                             values="score").reset_index()


@pytest.mark.parametrize("null", [False, True])
def test_example_audits_resample_the_committed_candidates(bench, example, null):
    model = bench.ExampleResampler(null=null)
    assert model.n_jobs == 5
    drawn = _wide(model.frame(np.random.default_rng(1), 3))
    assert len(drawn) == 3 * 5 * 40 and drawn.groupby(["condition", "job_id"])["is_true_match"].sum().eq(20).all()
    assert drawn["BASE"].nunique() == len(drawn)  # the kernel jitter: two draws of one candidate do not tie
    for (job, match), sub in drawn.groupby(["job_id", "is_true_match"]):
        src = example[(example["job_id"] == job) & (example["is_true_match"] == match)]
        # each drawn candidate carries one example candidate's pair of differences (both variants from the same one)
        pairs = {(round(a, 12), round(b, 12)) for a, b in zip(src["d1"], src["d2"])}
        got = zip(sub["V01"] - sub["BASE"], sub["V02"] - sub["BASE"])
        if null:
            pairs = {(s * a, t * b) for a, b in pairs for s in (-1, 1) for t in (-1, 1)}
        assert all((round(a, 12), round(b, 12)) in pairs for a, b in got), (job, match)


def test_example_reference_scores_keep_each_clusters_mean_and_sd(bench, example):
    model = bench.ExampleResampler()
    drawn = _wide(model.frame(np.random.default_rng(2), 60))
    for (job, match), sub in drawn.groupby(["job_id", "is_true_match"]):
        src = example[(example["job_id"] == job) & (example["is_true_match"] == match)]["BASE"]
        # 1,200 draws: the mean within 4 SE, the SD within 10% of the cluster's (ddof 1 over 20 candidates)
        assert abs(sub["BASE"].mean() - src.mean()) < 4 * src.std() / math.sqrt(len(sub)), (job, match)
        assert abs(sub["BASE"].std() / src.std() - 1) < 0.1, (job, match)


def test_example_score_delta_truth_is_the_examples_mean_difference(bench, example):
    """example-observed's score_delta estimand: the example's mean paired difference (equal clusters, uniform
    draws), 0.0112539 for V01 by hand from the CSV (awk over its 200 pairs); a truth chunk's values scatter around it, each audit's value is
    its own frame's mean difference, and example-null's around 0."""
    hand = float(example["d1"].mean())
    assert hand == pytest.approx(0.0112539, abs=5e-8)
    rec = bench.run_chunk("example-observed", "truth", 0, 6, 1, "swap_in")
    values = np.asarray(rec["rows"]["score_delta V01"]["value"], dtype=float)
    assert len(values) == 6
    se = float(example["d1"].std()) / math.sqrt(200)  # one audit's SE, 200 candidates
    assert abs(values.mean() - hand) < 4 * se / math.sqrt(6)
    frame = bench.ExampleResampler().frame(bench.seeding.rng(bench.SEED, "coverage_counterfactual", "example-observed",
                                                             "truth", 0), 6)
    wide = _wide(frame)
    own = (wide["V01"] - wide["BASE"]).groupby(wide["condition"]).mean().to_numpy()
    np.testing.assert_allclose(values, own, rtol=1e-6, atol=1e-9)
    null = bench.run_chunk("example-null", "truth", 0, 6, 1, "swap_in")["rows"]["score_delta V01"]["value"]
    assert abs(np.mean(null)) < 4 * se / math.sqrt(6)


def test_a_cover_chunk_records_every_interval_and_the_table_checks_them(bench, tmp_path, monkeypatch):
    root = tmp_path / "cov"
    for phase, size in (("truth", 4), ("cover", 2)):
        rec = bench.run_chunk("example-null", phase, 0, size, 19, "swap_in")
        bench.save(root, "example-null", rec)
    cover = bench.read_chunk(bench.chunk_path(root, "example-null", "cover", 0))
    keys = {f"{m} {v}" for m in bench.catalog.METRICS for v in bench.EXAMPLE_VARIANTS}
    assert set(cover["rows"]) == keys
    decided = {k for k, v in cover["rows"].items() if "decision_on" in v}
    assert {k.split()[0] for k in decided} == {"flip_rate", "retention_rate", "impact_ratio"}
    assert all(len(cover["rows"][k]["decision_low"]) == 2 for k in decided)
    rows = bench.summarise(root, ["example-null"], {"truth": 4, "cover": 2})
    dec = [r for r in rows if r["interval"] == "decision (selection_ratio)" and r["variant"] == "V01"]
    sel = [r for r in rows if r["metric"] == "selection_ratio" and r["interval"] == "ci" and r["variant"] == "V01"]
    assert len(dec) == 3 and len(sel) == 1 and all(r["truth"] == sel[0]["truth"] for r in dec)
    assert all(r["n"] == 2 and r["n_truth"] == 4 for r in dec + sel)
    # a chunk of another size, or recorded under another interval method, is run again
    assert bench.current(bench.chunk_path(root, "example-null", "cover", 0), 2)
    assert not bench.current(bench.chunk_path(root, "example-null", "cover", 0), 25)
    # --chunk 1: the truth chunk (4 = TRUTH_CHUNKS x 1 audits) is kept, the cover chunk of 2 is run again
    assert [t[1:] for t in bench.plan(root, ["example-null"], audits=2, truth=4, chunk=1)] == [
        ("cover", 0, 1), ("cover", 1, 1)]
    monkeypatch.setattr(bench.coverage, "INTERVALS", {**bench.coverage.INTERVALS, "retention_rate": "logit_bootstrap"})
    assert not bench.current(bench.chunk_path(root, "example-null", "cover", 0), 2)
    assert bench.current(bench.chunk_path(root, "example-null", "truth", 0), 4)  # values only
    # until it is run again, the stale chunk still measures every metric whose interval it recorded as today's
    after = bench.summarise(root, ["example-null"], {"truth": 4, "cover": 2})
    assert {r["metric"] for r in after} == {r["metric"] for r in rows} - {"retention_rate"}
    assert [r for r in after if r["metric"] == "marc"] == [r for r in rows if r["metric"] == "marc"]
    monkeypatch.undo()
    # --publish --partial: the ci rows only, the fewest audits shown, marked partial
    monkeypatch.setattr(bench.coverage, "MEASURED", tmp_path / "coverage_measured.json")
    out = bench.publish(rows, ["example-null"], audits=1000, ranking="swap_in", partial=True)
    assert out["partial"] is True and out["audits"] == 2 and out["settings"] == {"5": ["example-null"]}
    assert json.loads((tmp_path / "coverage_measured.json").read_text())["metrics"] == out["metrics"]
    assert not bench.publish(rows, ["example-null"], audits=1000, ranking="swap_in")["metrics"]  # not complete
    # an entry a dedicated bench measured under today's method is kept; one under another method is dropped
    method = bench.coverage.interval_method
    (tmp_path / "coverage_measured.json").write_text(json.dumps({
        "audits": 1000, "metrics": {"marc": {"5": [0.941, 0.95]}, "flip_rate": {"5": [0.9, 0.99]}},
        "intervals": {"marc": method("marc"), "flip_rate": "an_older_method"},
        "sources": {"marc": "bench/coverage_marc_u.py", "flip_rate": "bench/coverage_shortlist.py"}}))
    out = bench.publish(rows, ["example-null"], audits=1000, ranking="swap_in", partial=True)
    assert out["metrics"]["marc"] == {"5": [0.941, 0.95]} and out["sources"] == {"marc": "bench/coverage_marc_u.py"}
    assert out["intervals"]["marc"] == method("marc")
    assert out["metrics"]["flip_rate"] != {"5": [0.9, 0.99]} and out["intervals"]["flip_rate"] == method("flip_rate")


def test_chunk_files_are_gzipped_json_with_rounded_values(bench, tmp_path):
    path = bench.save(tmp_path, "s", {"phase": "truth", "chunk": 3, "size": 1,
                                      "rows": {"m V": {"value": bench._round([1 / 3, math.nan])}}})
    assert path.name == "truth-0003.json.gz"
    with gzip.open(path, "rt") as fh:
        assert json.load(fh)["rows"]["m V"]["value"] == [0.3333333, None]


@pytest.fixture(scope="module")
def shortlist():
    spec = importlib.util.spec_from_file_location("coverage_shortlist", ROOT / "bench" / "coverage_shortlist.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


def test_the_shortlist_bench_reruns_only_the_metric_whose_interval_changed(shortlist, tmp_path, monkeypatch):
    """``bench/coverage_shortlist.py`` (issue 39 §2): a chunk computed under another interval method of one metric
    keeps the other metrics' rows, the stale metric is run again on the same audits and resamples (they do not
    depend on which metrics run) and merged in; a chunk of another size is run whole."""
    monkeypatch.setattr(shortlist, "ROOT", tmp_path)
    name = "jobs02-noties-effect1"
    full = shortlist.run_chunk(name, 3, 2, 20)
    assert set(full["intervals"]) == set(shortlist.METRICS) and len(full["rows"]) == 4 * 2
    alone = shortlist.run_chunk(name, 3, 2, 20, ("selection_ratio",))
    for v in shortlist.VARIANTS:
        assert alone["rows"][f"selection_ratio {v}"] == full["rows"][f"selection_ratio {v}"]
    # saved under methods 15's selection-ratio interval: only the selection ratio is stale
    old = {**full, "intervals": {**full["intervals"], "selection_ratio": "percentile_zero_churn_wilson"}}
    shortlist._save(name, old)
    path = shortlist._path(name, 3)
    assert shortlist.stale(path, 2, 20) == ("selection_ratio",)
    assert shortlist.stale(path, 4, 20) == shortlist.METRICS  # another size: all of it
    kept = shortlist._current(path, 2, 20)
    assert "selection_ratio V01" not in kept["rows"] and kept["rows"]["flip_rate V01"] == full["rows"]["flip_rate V01"]
    shortlist._save(name, shortlist._merge(name, alone))
    assert shortlist.stale(path, 2, 20) == ()
    assert shortlist._current(path, 2, 20)["rows"] == full["rows"]
