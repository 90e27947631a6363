"""The effect-size family and validity protocol through the real CLI (precomputed scores).

A system that ignores resume content must come out INCONCLUSIVE (exit 5), never PASS; the planted
shift must show in the sensitivity table; effects.csv must carry the numbers the report shows.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from conftest import run_cli

SPEC = """\
audit: effects-cli
title: Effect sizes through the CLI
seed: 11
axes:
  sex_gender:
    slot: name
    levels: [M, F]
    cues: {M: John Smith, F: Jane Smith}
  age_signal:
    slot: age
    levels: [Young, Older]
    cues: {Young: "Graduation year: 2018", Older: "Graduation year: 1993"}
variants:
  reference: BASE
  design: factorial
jobs:
  - {id: j1}
  - {id: j2}
systems:
  - {id: vendor, kind: precomputed, path: scores.csv, score_range: [0, 100]}
analysis:
  k: {counterfactual: 5, group: 5, merit: 5}
  effect_size: {sesoi: 0.2, planted_shift_se: 2.0}
  validity:
    positive_control: {contrast: match, min_d: 0.5}
"""
VARIANTS = {"BASE": ("M", "Young"), "V01": ("M", "Older"), "V02": ("F", "Young"), "V03": ("F", "Older")}


def scores_csv(kind: str, *, seed: int, k: int = 60) -> str:
    """Scores of a content-sensitive system (``good``), a constant one, or a seeded random one."""
    rng = np.random.default_rng(seed)
    rows = []
    for job in ("j1", "j2"):
        for c in range(k):
            match = int(c < k // 2)
            base = rng.normal(45, 8) + 15 * match
            for v, (g, _a) in VARIANTS.items():
                if kind == "good":
                    score = base + rng.normal(0, 3) + (1.0 if g == "F" else 0.0)
                elif kind == "constant":
                    score = 50.0
                else:
                    score = rng.uniform(0, 100)
                rows.append({"job_id": job, "cv_id": f"c{c:03d}", "variant": v, "score": round(score, 6),
                             "is_true_match": match})
    return pd.DataFrame(rows).to_csv(index=False)


def _run(write_spec, tmp_path, kind, seed=2024):
    spec = write_spec(SPEC, **{"scores.csv": scores_csv(kind, seed=seed)})
    assert run_cli("compile", spec.name, cwd=tmp_path).returncode == 0
    proc = run_cli("execute", "--unsigned", "--no-pdf", spec.name, "-q", "--out", "out", cwd=tmp_path)
    run_dir = next((tmp_path / "out" / "effects-cli").iterdir())
    return proc, run_dir


@pytest.mark.parametrize("kind", ["constant", "random"])
def test_content_blind_system_is_inconclusive_exit_5(write_spec, tmp_path, kind):
    proc, run_dir = _run(write_spec, tmp_path, kind)
    assert proc.returncode == 5, proc.stderr
    assert "Traceback" not in proc.stderr
    assert "INCONCLUSIVE" in proc.stderr and "positive_control" in proc.stderr
    run = json.loads((run_dir / "run.json").read_text())
    assert run["status"] == "done" and run["validity"]["verdict"] == "INCONCLUSIVE"
    html = (run_dir / "report.html").read_text()
    top = html[: html.index('<nav class="toc">')]
    assert "Validity protocol: INCONCLUSIVE" in top  # said at the top, before the contents
    effects = pd.read_csv(run_dir / "effects.csv")
    pc = effects[(effects["section"] == "validity") & (effects["check"] == "positive_control")]
    assert not pc["passed"].astype(bool).any()
    if kind == "constant":
        sd = effects[(effects["section"] == "validity") & (effects["check"] == "distribution_sd")]
        assert sd["value"].iloc[0] == 0 and not bool(sd["passed"].iloc[0])


def test_content_sensitive_system_is_valid_and_reports_everything(write_spec, tmp_path):
    proc, run_dir = _run(write_spec, tmp_path, "good")
    assert proc.returncode == 0, proc.stderr
    assert "validity protocol: VALID" in proc.stdout
    effects = pd.read_csv(run_dir / "effects.csv")
    assert set(effects["section"]) == {"contrast", "contrast_job", "model", "pooling", "validity", "self_test"}
    contrasts = effects[effects["section"] == "contrast"]
    assert set(contrasts["contrast"]) == {"sex_gender: F vs M", "age_signal: Older vs Young",
                                          "V01 vs BASE", "V02 vs BASE", "V03 vs BASE"}
    # the report shows effects.csv's numbers
    html = (run_dir / "report.html").read_text()
    v02 = contrasts[contrasts["contrast"] == "V02 vs BASE"].iloc[0]
    assert f"{v02['d']:+.3f}".replace("-", "−") in html
    assert "Forest plot of d" in html and "Validity protocol: VALID" in html
    # issue 39 §6: sesoi.csv's δ* (0.2 pooled SD, ≈ 2.2 points) planted in each category alone; the
    # planted paired t is δ*/SE of that category's differences (n = 120 base candidates), not a set number
    st = effects[effects["section"] == "self_test"]
    dz = st[st["metric"] == "effect_size_paired"]
    sesoi = pd.read_csv(run_dir / "sesoi.csv")
    delta = sesoi.loc[sesoi["job_id"] == "ALL", "shift"].iloc[0]
    assert len(dz) == 3 and dz["detected"].astype(bool).all()
    assert np.allclose(dz["shift"], delta) and np.allclose(dz["shift_se"], delta / dz["se"])
    assert dz["shift_se"].nunique() == 3
    assert {"score_delta", "marc", "flip_rate"} <= set(st["metric"])
    assert "Metrics detecting" in html and "Planted t" in html
    # the shortlist checks sit beside the all-score checks
    checks = set(effects.loc[effects["section"] == "validity", "check"])
    assert {"distribution_sd_top2k", "distribution_ceiling_top2k"} <= checks
    # one condition: DL says it cannot pool
    pool = effects[effects["section"] == "pooling"]
    assert pool["notes"].str.startswith("cannot pool").all()
    # issue 30: no d_z MDE section; sesoi.csv and power.csv beside effects.csv (precomputed: K = 120)
    assert "mde" not in set(effects["section"])
    power = pd.read_csv(run_dir / "power.csv")
    assert set(power["category"]) >= {"V01", "V02", "V03"} and (power[power["category"] == "V01"]["n"] == 120).all()
    assert (pd.read_csv(run_dir / "sesoi.csv")["job_id"] == "ALL").any()


def test_planted_delta_star_of_a_selection_ratio(write_spec, tmp_path):
    # also issue 30 end to end: a SESOI at the decision rule, printed by compile (score file) and sealed
    spec = write_spec(SPEC.replace(", planted_shift_se: 2.0", "").replace(
        "sesoi: 0.2", "sesoi: {selection_ratio: 0.8}"), **{"scores.csv": scores_csv("good", seed=7)})
    comp = run_cli("compile", spec.name, cwd=tmp_path)
    assert comp.returncode == 0, comp.stderr
    assert "sesoi {selection_ratio: 0.8} at the decision rule, from the score files" in comp.stdout
    proc = run_cli("execute", "--unsigned", "--no-pdf", spec.name, "-q", "--out", "out", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    run_dir = next((tmp_path / "out" / "effects-cli").iterdir())
    effects = pd.read_csv(run_dir / "effects.csv")
    st = effects.query("section == 'self_test'")
    sesoi = pd.read_csv(run_dir / "sesoi.csv")
    shift = sesoi.loc[sesoi["job_id"] == "ALL", "shift"].iloc[0]
    assert np.allclose(st["shift"], shift)  # issue 39 §6: the self-test plants this δ*
    # the planted paired t is δ* / SE of each category's own differences, by hand from scores.csv:
    # 2.27, 2.06 and 1.94 here; each category planted alone, BH over the three variant contrasts (two
    # null, p = 1) gives q = 3p > 0.05: a 0.8 selection ratio at top-5 is not detectable by the paired
    # contrast at n = 120, and the self-test says so (it detected every plant by construction before)
    from scipy import stats

    scores = pd.read_csv(tmp_path / "scores.csv").sort_values(["job_id", "cv_id"])
    base = scores.loc[scores["variant"] == "BASE", "score"].to_numpy()
    dz = st[st["metric"] == "effect_size_paired"].set_index("variant")
    for v in ("V01", "V02", "V03"):
        diff = scores.loc[scores["variant"] == v, "score"].to_numpy() - base
        t = shift / (diff.std(ddof=1) / np.sqrt(diff.size))
        assert dz.loc[v, "shift_se"] == pytest.approx(t, rel=1e-9)
        p = 2 * stats.t.sf(t, diff.size - 1)
        assert float(dz.loc[v, "p_adj_planted"]) == pytest.approx(min(1.0, 3 * p), rel=1e-3)
    assert dz["shift_se"].round(2).tolist() == [2.27, 2.06, 1.94] and not dz["detected"].astype(bool).any()
    contrasts = effects.query("section == 'contrast'")
    assert np.allclose(contrasts["sesoi_score"], shift) and (contrasts["standardiser_kind"] == "pooled").all()
    # compile printed the δ* (3 significant digits) that execute sealed; the report lists both tables' hashes
    assert f"all jobs (top-5 swap-in): ratio 0.8, shift {shift:.3g} (" in comp.stdout
    from compiler.hashing import file_digest

    html = (run_dir / "report.html").read_text()
    for name in ("sesoi.csv", "power.csv"):
        assert file_digest(run_dir / name)["digest"] in html, name
    assert "a selection ratio below 0.8: a shift of" in html


def test_compile_says_execute_computes_sesoi_and_power(write_spec, tmp_path):
    # issue 30 §3: methods 7's d_z MDEs (0.199 beside a SESOI in d) are gone; without scores compile says so
    text = SPEC.replace("jobs:\n  - {id: j1}\n  - {id: j2}",
                        "jobs:\n  - {id: data-analyst, description: Analyse data}").replace(
        "systems:\n  - {id: vendor, kind: precomputed, path: scores.csv, score_range: [0, 100]}",
        "candidates: {base_per_job: 50, matching_per_job: 25}\nsystems:\n  - {id: m, kind: embedding}")
    spec = write_spec(text)
    proc = run_cli("compile", spec.name, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "sesoi and power: computed by audit execute (sesoi.csv, power.csv)" in proc.stdout
    assert "minimum detectable |d|" not in proc.stdout
    plan = json.loads((tmp_path / "spec.plan.json").read_text())
    assert "sensitivity" not in plan


def test_ceiling_effect_system_is_inconclusive_with_every_default(write_spec, tmp_path):
    # Seed 003 §3.4's pilot: integer scores on 0-100 clustered near 95 (here mean ~94, SD ~2, about a
    # third at or above 95). The system does see quality (matching candidates +2.5 points), so only the
    # distribution check can stop it, with `validity: {}`: every default.
    rng = np.random.default_rng(7)
    rows = []
    for job in ("j1", "j2"):
        for c in range(60):
            match = int(c < 30)
            base = 92.5 + 2.5 * match + rng.normal(0, 1.2)
            for v in VARIANTS:
                rows.append({"job_id": job, "cv_id": f"c{c:03d}", "variant": v,
                             "score": int(min(100, round(base + rng.normal(0, 0.8)))), "is_true_match": match})
    scores = pd.DataFrame(rows)
    spec = write_spec(SPEC.replace("  validity:\n    positive_control: {contrast: match, min_d: 0.5}\n", "  validity: {}\n"),
                      **{"scores.csv": scores.to_csv(index=False)})
    assert run_cli("compile", spec.name, cwd=tmp_path).returncode == 0
    proc = run_cli("execute", "--unsigned", "--no-pdf", spec.name, "-q", "--out", "out", cwd=tmp_path)
    assert proc.returncode == 5, proc.stderr
    run_dir = next((tmp_path / "out" / "effects-cli").iterdir())
    effects = pd.read_csv(run_dir / "effects.csv")
    v = effects[effects["section"] == "validity"].set_index("check")
    assert bool(v.loc["positive_control", "passed"])  # the instrument sees quality ...
    # ... but an effect of the SESOI (0.2 SD, about 0.4 points) is below the 1-point grid, and a third of
    # the scores sit at the ceiling, hiding a third of any bias
    assert v.loc["distribution_sd", "threshold"] == pytest.approx(0.01 / 0.2)
    assert v.loc["distribution_sd", "value"] < 0.03 and not bool(v.loc["distribution_sd", "passed"])
    share = float(np.mean(scores["score"] >= 95))
    assert v.loc["distribution_ceiling", "value"] == pytest.approx(share, abs=0.02)  # replicate-averaged frame
    assert share > 0.2 and not bool(v.loc["distribution_ceiling", "passed"])
    assert "INCONCLUSIVE" in proc.stderr and "distribution_sd" in proc.stderr
    # the sealed outcome says the same as the exit code (issue 26)
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["exit_code"] == 5
    assert summary["validity"]["verdict"] == "INCONCLUSIVE"
    for check in ("distribution_sd", "distribution_ceiling"):
        assert any(check in line for line in summary["validity"]["failed"]), summary["validity"]


def test_ceiling_in_each_shortlist_is_inconclusive_though_all_scores_pass(write_spec, tmp_path):
    # issue 39 §6: 4 of each job's reference top-10 (2K, K = 5) at the ceiling, 40%, while 4 of 60
    # candidates (6.7%) of all scores are: the all-score check passes, the shortlist check stops the audit
    text = scores_csv("good", seed=2024)
    scores = pd.read_csv(__import__("io").StringIO(text))
    ref = scores[scores["variant"] == "BASE"].sort_values("score", ascending=False).groupby("job_id").head(4)
    top = scores.set_index(["job_id", "cv_id"]).index.isin(ref.set_index(["job_id", "cv_id"]).index)
    scores.loc[top, "score"] = 98.0 + (scores.loc[top, "variant"] == "V02") * 1.0  # F +1, as the rest
    spec = write_spec(SPEC, **{"scores.csv": scores.to_csv(index=False)})
    assert run_cli("compile", spec.name, cwd=tmp_path).returncode == 0
    proc = run_cli("execute", "--unsigned", "--no-pdf", spec.name, "-q", "--out", "out", cwd=tmp_path)
    assert proc.returncode == 5, proc.stderr
    assert "Traceback" not in proc.stderr
    run_dir = next((tmp_path / "out" / "effects-cli").iterdir())
    v = pd.read_csv(run_dir / "effects.csv").query("section == 'validity'").set_index("check")
    assert v.loc["distribution_ceiling", "value"] == pytest.approx(4 / 60) and bool(v.loc["distribution_ceiling", "passed"])
    assert v.loc["distribution_ceiling_top2k", "value"] == pytest.approx(0.4)
    assert not bool(v.loc["distribution_ceiling_top2k", "passed"])
    assert bool(v.loc["positive_control", "passed"]) and bool(v.loc["distribution_sd", "passed"])
    assert "INCONCLUSIVE" in proc.stderr and "distribution_ceiling_top2k" in proc.stderr
    assert "reference top-2K (2K = 10)" in proc.stderr
    html = (run_dir / "report.html").read_text()
    assert "Shortlist (top-2K): ceiling" in html
