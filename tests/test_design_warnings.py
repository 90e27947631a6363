"""Issue 39 §8: ``audit validate``, ``audit compile`` and page 1 warn when a metric's interval was measured
outside the 93–97% coverage target at the nearest simulated design, or the level-1 score test has under the
declared power at the SESOI (:mod:`runtime.analysis.design_warnings`), beside seed 000 §5's minimum-n warning."""

from __future__ import annotations

import json
import math

import pandas as pd
import pytest

from conftest import TINY_SCORES, TINY_SPEC, run_cli
from runtime.analysis import coverage
from runtime.analysis.design_warnings import (coverage_outside, coverage_warning, power_warning, sesoi_band_warning,
                                              small_pool_warning)

METRICS = ("score_delta", "marc", "flip_rate", "retention_rate", "impact_ratio", "recall_at_k", "ndcg_at_k",
           "equal_opportunity_gap", "equalized_odds_gap", "selection_ratio")


def _shipped() -> dict:
    return json.loads(coverage.MEASURED.read_text(encoding="utf-8"))


def _per_setting() -> str:
    """How the warning counts the shipped table's audits: "1,000 per setting", or for a partial bench run "at least
    25 per setting, a partial run"."""
    shipped = _shipped()
    return (f"at least {shipped['audits']:,} per setting, a partial run" if shipped.get("partial")
            else f"{shipped['audits']:,} per setting")


@pytest.mark.parametrize("n_jobs", [1, 2, 3, 5, 8, 20, 30, 50])
def test_coverage_outside_reads_the_nearest_simulated_design(n_jobs):
    """The metrics named are exactly those whose shipped [low, high] at the nearest simulated job count (log
    scale, within a factor 2.5) leaves [0.93, 0.97], read from coverage_measured.json here (50 jobs: the
    ``jobs50-noties-effect0`` setting of issue 39 §4, once published; 20 before), leaving out a metric whose
    interval method is not the one the table measured (retention and the impact ratio since methods 12: Wilson's
    score interval; the table measured their percentile interval)."""
    shipped = _shipped()
    table = shipped["metrics"]
    measured_method = shipped.get("intervals", {})
    simulated = sorted({int(j) for per in table.values() for j in per})
    nearest = min(simulated, key=lambda j: (abs(math.log(j) - math.log(n_jobs)), j))
    assert nearest == {1: 2, 2: 2, 3: 2, 5: 5, 8: 5, 20: 20, 30: 20}.get(n_jobs, 50 if 50 in simulated else 20)
    # each metric reads its own nearest job count (MARC's U-statistic interval, methods 14, is measured at 50 jobs too,
    # by bench/coverage_marc_u.py; a metric measured at 20 jobs only reads 20 for 50, within the factor 2.5)
    own = {m: min((int(j) for j in table[m]), key=lambda j: (abs(math.log(j) - math.log(n_jobs)), j))
           for m in METRICS if m in table}
    want = [m for m in METRICS if m in own
            and coverage.interval_method(m) == measured_method.get(m, coverage.LEGACY_INTERVAL)
            and not (0.93 <= table[m][str(own[m])][0] and table[m][str(own[m])][1] <= 0.97)]
    got = coverage_outside(METRICS, n_jobs)
    assert [m for m, _ in got] == want
    assert all(r["jobs"] == own[m] and (r["low"], r["high"]) == tuple(table[m][str(own[m])]) for m, r in got)


def test_no_coverage_warning_far_from_every_simulated_design(monkeypatch):
    assert coverage_outside(METRICS, 200) == [] and coverage_warning(METRICS, 200) is None
    monkeypatch.setattr(coverage, "_table", lambda: {"audits": 1000, "metrics": {"marc": {"2": [0.9, 0.95]}}})
    assert coverage_warning(["selection_ratio"], 2) is None  # not measured: nothing to say


def test_the_coverage_warning_sentence():
    table = _shipped()["metrics"]
    lo, hi = table["score_delta"]["2"]
    assert (lo, hi) == (0.928, 0.952)
    # retention's shipped figures measured its former percentile interval: no claim about its Wilson interval
    assert coverage_warning(["retention_rate", "impact_ratio"], 3) is None
    assert coverage_warning(["retention_rate", "score_delta", "marc"], 3) == (
        f"the 95% intervals of score_delta ({100 * lo:.1f}–{100 * hi:.1f}%) were measured outside the 93–97% "
        "coverage target in simulated audits with 2 jobs, the simulated design nearest this audit's 3 jobs (1,000 "
        "per setting, bench/coverage_counterfactual.py): their intervals, and the statuses read from them, are "
        "approximate")


@pytest.mark.parametrize("partial", [False, True])
def test_the_coverage_warning_sentence_of_a_partial_table(monkeypatch, partial):
    table = {"audits": 40 if partial else 1000, "metrics": {"score_delta": {"2": [0.89, 0.939], "5": [0.93, 0.95]},
                                                            "marc": {"2": [0.943, 0.968]}}}
    if partial:
        table["partial"] = True
    monkeypatch.setattr(coverage, "_table", lambda: table)
    per = "at least 40 per setting, a partial run" if partial else "1,000 per setting"
    assert coverage_warning(["score_delta", "marc"], 3) == (
        "the 95% intervals of score_delta (89.0–93.9%) were measured outside the 93–97% "
        f"coverage target in simulated audits with 2 jobs, the simulated design nearest this audit's 3 jobs ({per}, "
        "bench/coverage_counterfactual.py): their intervals, and the statuses read from them, are "
        "approximate")
    assert coverage_warning(["score_delta", "marc"], 5) is None


def test_power_warning_names_the_cells_under_the_target_at_alpha():
    """Only the level-α rows are read (the α/m₁ rows are lower still); nan power is left out; n for the
    target is the largest of the cells named."""
    rows = [("s", "c", "V01", 0.05, 0.62, 57), ("s", "c", "V01", 0.025, 0.5, 70),
            ("s", "c", "V02", 0.05, 0.91, 30), ("s", "c", "V02", 0.025, 0.79, 38),
            ("s", "c", "V03", 0.05, 0.795, 41), ("s", "c", "V04", 0.05, math.nan, math.nan)]
    frame = pd.DataFrame(rows, columns=["system", "condition", "category", "level", "power", "n_for_80"])
    assert power_warning(frame, target=0.8, alpha=0.05) == (
        "the level-1 score test has under 80% power at the SESOI (two-sided, level α = 0.05) for s · c · V01 (62%), "
        "s · c · V03 (80%): a PASS there may be a bias this audit cannot see (seed 003 §3.7); more base candidates "
        "raise it (n for 80%: 57 per variant)")
    assert power_warning(frame, target=0.6, alpha=0.05) is None
    assert power_warning(None, target=0.8, alpha=0.05) is None


def test_small_pool_warning_on_a_runs_data():
    assert small_pool_warning({"a": 40, "b": 24, "c": 39}) == (
        "fewer than 40 base candidates in job(s) b (24), c (39): the rank and shortlist metrics degenerate at small "
        "pools (every candidate near the top-K, few rank crossings possible) and their intervals and tests say "
        "little (seed 000 §5)")
    assert small_pool_warning({"a": 40}) is None


def test_validate_and_compile_warn_on_power_with_a_score_file(tmp_path):
    """A 1-job, 4-candidate score file with a SESOI of 0.05 on the score: power at α from statsmodels'
    TTestPower with n · 3/π (the signed-rank test's ARE), computed here; validate and compile print the same
    located lines, and validate still exits 0."""
    import numpy as np
    from statsmodels.stats.power import TTestPower

    (tmp_path / "spec.yaml").write_text(TINY_SPEC.replace(
        "thresholds:", "  effect_size: {sesoi: {score: 0.05}}\nthresholds:"))
    (tmp_path / "scores.csv").write_text(TINY_SCORES)
    diff = np.array([0.8 - 0.9, 0.75 - 0.7, 0.45 - 0.5, 0.6 - 0.3])
    power = TTestPower().power(effect_size=0.05 / diff.std(ddof=1), nobs=4 * 3 / math.pi, alpha=0.05)
    lines = {}
    for cmd in ("validate", "compile"):
        proc = run_cli(cmd, "spec.yaml", cwd=tmp_path)
        assert proc.returncode == 0, proc.stderr
        lines[cmd] = [ln for ln in proc.stderr.splitlines() if ln.startswith("warning: spec.yaml:") and
                      ("analysis.effect_size" in ln or " jobs: " in ln)]
    assert lines["validate"] == lines["compile"]
    from compiler import catalog

    expected = coverage_warning(catalog.METRIC_IDS, 1)
    # each metric's measuring bench: the full bench's, or coverage_shortlist.py's (flip rate, ratios; methods 16)
    sources = " and ".join(dict.fromkeys(r["source"] for _, r in coverage_outside(catalog.METRIC_IDS, 1)))
    assert "bench/coverage_counterfactual.py" in sources
    assert expected and expected.endswith(f"in simulated audits with 2 jobs, the simulated design nearest this audit's "
                                          f"1 job ({_per_setting()}, {sources}): their "
                                          "intervals, and the statuses read from them, are approximate")
    cov, pw = lines["validate"]
    assert cov == f"warning: spec.yaml:15:3: jobs: {expected}"
    assert pw.startswith(f"warning: spec.yaml:20:16: analysis.effect_size: the level-1 score test has under 80% power "
                         f"at the SESOI (two-sided, level α = 0.05) for vendor · default · V01 ({100 * power:.0f}%), ")


def test_page_one_design_notes_from_a_runs_tables():
    """Page 1 (runtime.pipeline.report.design_notes): the small pools counted on the paired frame, the coverage
    of the metrics in metrics.csv at the run's job count, the power rows of power.csv; one "Design warning"
    sentence each, in that order; none for a run without a paired frame."""
    from types import SimpleNamespace

    from runtime.pipeline.report import design_notes

    paired = pd.DataFrame({"job_id": ["a"] * 6 + ["b"] * 2, "cv_id": ["c1", "c1", "c2", "c2", "c3", "c3", "d1", "d1"],
                           "variant": ["BASE", "V01"] * 4})
    power = pd.DataFrame([("s", "c", "V01", 0.05, 0.4, 90)],
                         columns=["system", "condition", "category", "level", "power", "n_for_80"])
    resolved = {"jobs": [{"id": "a"}, {"id": "b"}], "analysis": {"alpha": 0.05, "effect_size": {"power": 0.8}}}
    metrics = pd.DataFrame({"metric": ["score_delta", "score_delta", "marc"], "system": "s", "condition": "c",
                            "pass_low": [-0.02, -0.02, 0.0], "pass_high": [0.02, 0.02, 0.5]})
    ctx = SimpleNamespace(paired=paired, resolved=resolved, tables={"metrics": metrics, "power": power,
                                                                    "sesoi": _sesoi(0.0061)})
    notes = design_notes(ctx)
    assert notes == [f"Design warning: {w[0].upper()}{w[1:]}." for w in (
        small_pool_warning({"a": 3, "b": 1}), coverage_warning(["score_delta", "marc"], 2),
        power_warning(power, target=0.8, alpha=0.05), sesoi_band_warning(metrics, _sesoi(0.0061)))]
    assert notes[-1].startswith("Design warning: The score delta's PASS band is wider than the SESOI's score shift for "
                                "s · c (±0.02 against 0.0061 normalised, 3.3 times;")
    assert notes[0].startswith("Design warning: Fewer than 40 base candidates in job(s) a (3), b (1): ")
    assert design_notes(SimpleNamespace(paired=None, resolved=resolved, tables={})) == []


def _sesoi(shift_all: float, shift_job: float = 0.5) -> pd.DataFrame:
    """A ``sesoi.csv`` of system s, condition c: the pooled row and one job's (never read by the warning)."""
    return pd.DataFrame({"system": "s", "condition": "c", "job_id": ["ALL", "a"], "form": "{selection_ratio: 0.8}",
                         "shift_normalised": [shift_all, shift_job]})


def test_a_score_delta_pass_band_wider_than_the_sesoi_shift_is_named_with_its_ratio():
    """The regulator's read of the example: the score delta PASSes within ±0.02 while the SESOI (a selection ratio
    of 0.8 at the top-10) is a shift of 0.0061; a PASS there rules out no effect of the SESOI's size."""
    metrics = pd.DataFrame({"metric": ["score_delta", "score_delta", "selection_ratio"], "system": "s",
                            "condition": "c", "pass_low": [-0.02, -0.025, 0.8], "pass_high": [0.02, 0.02, 1.25]})
    w = sesoi_band_warning(metrics, _sesoi(0.0061))
    # the widest bound over the cell's score-delta rows: 0.025 / 0.0061 = 4.098...
    assert w == ("the score delta's PASS band is wider than the SESOI's score shift for s · c (±0.025 against 0.0061 "
                 "normalised, 4.1 times; SESOI {selection_ratio: 0.8}): a score-delta PASS there admits a mean shift "
                 "the SESOI calls material, so it shows no shift beyond the band, not no effect; the category's status "
                 "also reads its selection metrics, decided at the SESOI (seed 003 §3.7)")
    assert sesoi_band_warning(metrics, _sesoi(0.025)) is None       # the band within the shift: nothing to say
    assert sesoi_band_warning(metrics, _sesoi(0.03, shift_job=0.001)) is None  # per-job rows are not read
    assert sesoi_band_warning(metrics, _sesoi(math.nan)) is None
    assert sesoi_band_warning(metrics, None) is None and sesoi_band_warning(None, _sesoi(0.0061)) is None
    other = _sesoi(0.0061).assign(condition="other")                 # no score-delta row of that cell
    assert sesoi_band_warning(metrics, other) is None


def test_the_coverage_warning_names_the_bench_that_measured_each_metric(monkeypatch):
    """A metric re-measured by another bench script (``sources``: MARC by coverage_marc_u.py, the shortlist metrics by
    coverage_shortlist.py) is cited by that script, the others by the full bench (``source``)."""
    table = {"audits": 1000, "source": "bench/coverage_counterfactual.py",
             "sources": {"selection_ratio": "bench/coverage_shortlist.py"},
             "intervals": {"selection_ratio": coverage.interval_method("selection_ratio")},
             "metrics": {"score_delta": {"2": [0.89, 0.939]}, "selection_ratio": {"2": [0.951, 0.982]},
                         "marc": {"2": [0.943, 0.968]}}}
    monkeypatch.setattr(coverage, "_table", lambda: table)
    assert coverage_warning(["selection_ratio"], 2) == (
        "the 95% intervals of selection_ratio (95.1–98.2%) were measured outside the 93–97% coverage target in "
        "simulated audits with 2 jobs (1,000 per setting, bench/coverage_shortlist.py): their intervals, and the "
        "statuses read from them, are approximate")
    assert "(1,000 per setting, bench/coverage_counterfactual.py and bench/coverage_shortlist.py)" in \
        coverage_warning(["score_delta", "selection_ratio", "marc"], 2)
