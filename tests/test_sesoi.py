"""The SESOI at the decision rule (issue 30 §1): δ* by hand, sesoi.csv, the TOST at ±δ*.

The hand frame: two jobs of six candidates, K = 2 (top-K) or t = 0.5625 (threshold); scores on a grid of
1/16, so every difference and tie is exact in binary floating point.

- job A: 0.875 0.75 0.625 0.625 0.5 0.375. Top-2 {0.875, 0.75}, the (K+1)-th 0.625: breakpoints 0.25, 0.125.
- job B: 0.9375 0.5625 0.5625 0.5 0.25 0.125, a tie at the cut: 0.9375 leaves after 0.375; each 0.5625
  is in with weight 1/2 and leaves at any δ > 0 (breakpoint 0).

Top-2: S = 2 + 2 = 4. ratio(δ) = kept / 4: 1 at δ = 0; (2 + 1) / 4 for 0 < δ < 0.125; at δ = 0.125
exactly A's 0.75 lands on the 0.625 pair (tie-averaged (2 − 1) / 3 = 1/3): (1 + 1/3 + 1) / 4; (1 + 1) / 4
for 0.125 < δ < 0.25. Hence δ*(0.5) = 0.125 and δ*(0.8) = 0 (the tie at the cut costs half the job's
places at any demotion); δ*(0.2) = 0.375 (every selected résumé must leave: c = ⌊0.8⌋ = 0).

Threshold 0.5625: selected A 0.875 0.75 0.625 0.625 (breakpoints 0.3125 0.1875 0.0625 0.0625) and B
0.9375 0.5625 0.5625 (0.375 0 0): S = 7. m = 0.5: c = 3, the 4th largest breakpoint, 0.0625; m = 0.8:
c = 5, the 6th, 0 (the tie at the threshold).
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from runtime.analysis.sesoi import (ALL_JOBS, REASON_NONE_SELECTED, Sesoi, implied_shift, ratio_at_shift,
                                    sesoi_table, within_sd)

DATA = Path(__file__).parent / "data"
A = [0.875, 0.75, 0.625, 0.625, 0.5, 0.375]
B = [0.9375, 0.5625, 0.5625, 0.5, 0.25, 0.125]
SCORES = np.array(A + B)
JOBS = np.array(["A"] * 6 + ["B"] * 6)


def test_implied_shift_by_hand_top_k_with_a_tie_at_the_cut():
    assert ratio_at_shift(SCORES, JOBS, 0.0, k=2) == 1.0
    assert ratio_at_shift(SCORES, JOBS, 0.0625, k=2) == 3 / 4
    assert ratio_at_shift(SCORES, JOBS, 0.125, k=2) == pytest.approx((1 + 1 / 3 + 1) / 4)
    assert ratio_at_shift(SCORES, JOBS, 0.1875, k=2) == 2 / 4
    # pooled: the same δ in both jobs
    assert implied_shift(SCORES, JOBS, 0.5, k=2) == 0.125
    assert implied_shift(SCORES, JOBS, 0.8, k=2) == 0.0
    assert implied_shift(SCORES, JOBS, 0.2, k=2) == 0.375
    # per job: A 0.125 (its 0.75 goes first); B 0 at m = 0.5 (the tie), 0.375 at m = 0.4 (c = 0)
    a, b = JOBS == "A", JOBS == "B"
    assert implied_shift(SCORES[a], JOBS[a], 0.5, k=2) == 0.125
    assert implied_shift(SCORES[b], JOBS[b], 0.5, k=2) == 0.0
    assert implied_shift(SCORES[b], JOBS[b], 0.4, k=2) == 0.375


def test_implied_shift_by_hand_threshold_with_a_tie_at_the_threshold():
    assert ratio_at_shift(SCORES, JOBS, 0.05, threshold=0.5625) == 5 / 7
    assert ratio_at_shift(SCORES, JOBS, 0.15, threshold=0.5625) == 3 / 7
    assert implied_shift(SCORES, JOBS, 0.5, threshold=0.5625) == 0.0625
    assert implied_shift(SCORES, JOBS, 0.8, threshold=0.5625) == 0.0
    a, b = JOBS == "A", JOBS == "B"
    assert implied_shift(SCORES[a], JOBS[a], 0.5, threshold=0.5625) == 0.0625   # c = 2: 3rd of .3125 .1875 .0625 .0625
    assert implied_shift(SCORES[b], JOBS[b], 0.5, threshold=0.5625) == 0.0      # c = 1: 2nd of .375 0 0


def _frame(scores, jobs, variant="BASE"):
    return pd.DataFrame({"system": "s", "condition": "default", "replicate": 0, "job_id": jobs,
                         "cv_id": [f"{j}{i}" for i, j in enumerate(jobs)], "variant": variant, "score": scores,
                         "is_true_match": [1, 1, 1, 0, 0, 0] * (len(scores) // 6)})


def _resolved(sesoi, **decision):
    a = {"k": {"counterfactual": 2, "group": 2, "merit": 2}, "alpha": 0.05, "effect_size": {"sesoi": sesoi}}
    if decision:
        a["decision"] = decision
    return {"analysis": a, "variants": {"reference": "BASE"}, "systems": [{"id": "s", "score_range": [0, 2]}]}


def test_sesoi_table_pooled_and_per_job_in_three_units():
    jobs = np.array(list(JOBS) + ["C"] * 6)
    scores = np.concatenate([SCORES, [0.5, 0.375, 0.25, 0.125, 0.0625, 0.0]])
    t = sesoi_table(_frame(scores, jobs), _resolved({"selection_ratio": 0.5}, threshold=0.5625)).set_index("job_id")
    assert list(t.index) == [ALL_JOBS, "A", "B", "C"]
    assert t.loc[ALL_JOBS, "rule"] == "score >= 0.5625"
    assert t.loc[ALL_JOBS, "shift"] == 0.0625                          # job C selects none: S = 7 as above
    assert t.loc[ALL_JOBS, "shift_normalised"] == 0.03125               # score_range [0, 2]
    sd = float(np.std(scores, ddof=1))
    assert t.loc[ALL_JOBS, "standardiser"] == pytest.approx(sd)
    assert t.loc[ALL_JOBS, "d_equivalent"] == pytest.approx(0.0625 / sd)
    assert t.loc["A", "shift"] == 0.0625 and t.loc["B", "shift"] == 0.0
    assert math.isnan(t.loc["C", "shift"]) and t.loc["C", "reason"] == REASON_NONE_SELECTED
    # {score: x}: the margin is the ratio x implies; top-K rule
    t = sesoi_table(_frame(SCORES, JOBS), _resolved({"score": 0.15})).set_index("job_id")
    assert t.loc[ALL_JOBS, "rule"] == "top-2 swap-in"
    assert t.loc[ALL_JOBS, "margin"] == pytest.approx(0.5) and t.loc[ALL_JOBS, "shift"] == 0.15
    # {d: x, standardiser: within_job_match}: the SD within job x match, pooled (df = 12 - 4)
    t = sesoi_table(_frame(SCORES, JOBS), _resolved({"d": 0.5, "standardiser": "within_job_match"})).set_index("job_id")
    strata = [np.array(A[:3]), np.array(A[3:]), np.array(B[:3]), np.array(B[3:])]
    sd_wjm = math.sqrt(sum(((x - x.mean()) ** 2).sum() for x in strata) / (12 - 4))
    assert t.loc[ALL_JOBS, "standardiser"] == pytest.approx(sd_wjm)
    assert t.loc[ALL_JOBS, "shift"] == pytest.approx(0.5 * sd_wjm)
    assert t.loc[ALL_JOBS, "margin"] == pytest.approx(ratio_at_shift(SCORES, JOBS, 0.5 * sd_wjm, k=2))


def test_sesoi_forms():
    assert Sesoi.of(0.2) == Sesoi("d", 0.2, "pooled", plain=True)
    assert Sesoi.of({"selection_ratio": 0.8}).describe() == "{selection_ratio: 0.8}"
    assert Sesoi.of({"d": 0.1, "standardiser": "within_job"}).standardiser == "within_job"
    assert within_sd(np.array([1.0, 3.0, 10.0, 14.0]), np.array([0, 0, 1, 1])) == pytest.approx(math.sqrt((2 + 8) / 2))


# ------------------------------------------------------------------ the example's paired.csv (methods 6)
@pytest.fixture(scope="module")
def example():
    return pd.read_csv(DATA / "example-paired.csv")


EXAMPLE = {"analysis": {"k": {"counterfactual": 10, "group": 10, "merit": 20}, "alpha": 0.05,
                        "effect_size": {"sesoi": {"selection_ratio": 0.8}}},
           "variants": {"reference": "BASE"}, "systems": [{"id": "minilm", "score_range": [0, 1]}]}


def test_example_pooled_shift_for_ratio_0_8(example):
    t = sesoi_table(example, EXAMPLE)
    pooled = t[t["job_id"] == ALL_JOBS].iloc[0]
    assert 0.005 <= pooled["shift"] <= 0.0075            # issue 30 "must show"
    assert pooled["shift"] == pytest.approx(0.0061198, abs=1e-6)
    assert pooled["rule"] == "top-10 swap-in"
    # independent check: the ratio just below δ* is above 0.8, just above it at most 0.8
    base = example[example["variant"] == "BASE"]
    s, j = base["score"].to_numpy(float), base["job_id"].to_numpy()
    assert ratio_at_shift(s, j, pooled["shift"] * (1 - 1e-9), k=10) > 0.8
    assert ratio_at_shift(s, j, pooled["shift"] * (1 + 1e-9), k=10) <= 0.8


def test_example_tost_at_the_implied_shift(example):
    """A uniform demotion of 0.2·s_p planted in one variant is not equivalent at ±δ*; that variant's
    noise alone (its mean difference set to 0) is."""
    from runtime.analysis.effect_size import effect_sizes
    from runtime.analysis.sesoi import shifts_of

    wide = example.pivot_table(index=["job_id", "cv_id"], columns="variant", values="score")
    diff = wide["V04"] - wide["BASE"]
    sp = math.sqrt((wide["V04"].var() + wide["BASE"].var()) / 2)
    bounds = shifts_of(sesoi_table(example, EXAMPLE))
    contrast = [{"kind": "variant", "variant": "V04", "reference": "BASE", "family": "variants"}]
    out = {}
    for name, shift in (("noise", 0.0), ("demoted", -0.2 * sp)):
        new = (wide["BASE"] + diff - diff.mean() + shift).rename("score").reset_index()
        frame = example.drop(columns="score").merge(new, on=["job_id", "cv_id"], how="left")
        frame["score"] = np.where(frame["variant"] == "V04", frame["score"],
                                  example["score"].to_numpy(float))
        out[name] = effect_sizes(frame, contrasts=contrast, axes=[], sesoi=math.nan, alpha=0.05,
                                 bounds=bounds).iloc[0]
    assert out["noise"]["sesoi_score"] == pytest.approx(0.0061198, abs=1e-6)
    assert bool(out["noise"]["equivalent"]) and out["noise"]["margin_score"] < out["noise"]["sesoi_score"]
    assert not bool(out["demoted"]["equivalent"]) and bool(out["demoted"]["meaningful"])
    assert out["demoted"]["mean_diff"] == pytest.approx(-0.2 * sp)


def test_example_per_job_tost_and_the_within_job_match_standardiser(example):
    """Per-job rows are tested at their own job's δ*; a d SESOI against the SD within job x match reads d
    on that SD (by hand: the two groups' scores, stratum = variant x job x match)."""
    from runtime.analysis.effect_size import effect_sizes, effect_sizes_by_job
    from runtime.analysis.sesoi import shifts_of

    contrast = [{"kind": "variant", "variant": "V04", "reference": "BASE", "family": "variants"}]
    table = sesoi_table(example, EXAMPLE)
    bounds = shifts_of(table)
    pooled = effect_sizes(example, contrasts=contrast, axes=[], sesoi=math.nan, alpha=0.05, bounds=bounds)
    by_job = effect_sizes_by_job(example, contrasts=contrast, axes=[], sesoi=math.nan, alpha=0.05, pooled=pooled,
                                 bounds=bounds).set_index("job_id")
    per_job = table.set_index("job_id")["shift"]
    for job in ("accountant", "marketing-specialist"):
        assert by_job.loc[job, "sesoi_score"] == per_job[job]
        assert by_job.loc[job, "margin_score"] == pytest.approx(by_job.loc[job, "margin"] * by_job.loc[job, "standardiser"])
    # {d: 0.2, standardiser: within_job_match}
    wjm = effect_sizes(example, contrasts=contrast, axes=[], sesoi=0.2, alpha=0.05,
                       standardiser="within_job_match").iloc[0]
    pair = example[example["variant"].isin(["V04", "BASE"])]
    resid = pair["score"] - pair.groupby(["variant", "job_id", "is_true_match"])["score"].transform("mean")
    sd = math.sqrt(float((resid ** 2).sum()) / (len(pair) - 2 * 5 * 2))
    assert wjm["standardiser_kind"] == "within_job_match" and wjm["standardiser"] == pytest.approx(sd)
    assert wjm["d"] == pytest.approx(wjm["mean_diff"] / sd) and wjm["sesoi_score"] == pytest.approx(0.2 * sd)
    assert 0.03 < sd < 0.07    # issue 30: 0.036-0.060 within job x match, against s_p 0.166


def test_report_states_the_sesoi_in_three_units(example):
    from runtime.report.sections.effects import sesoi_lines

    (line,) = sesoi_lines(sesoi_table(example, EXAMPLE)[lambda t: t["job_id"] == ALL_JOBS])
    assert line == ("minilm · default (top-10 swap-in): a selection ratio below 0.8: a shift of 0.00612 on the score "
                    "scale (0.00612 normalised), d = 0.0362 (pooled SD 0.169; SESOI {selection_ratio: 0.8})")
