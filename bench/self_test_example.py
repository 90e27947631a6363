"""The planted-bias self-test and the shortlist checks on the example run's data (issue 39 §6).

Reads ``tests/data/example-paired.csv`` (``make example``'s paired.csv: minilm, 5 jobs x 40 base
candidates, 9 categories, top-10), with the settings of ``specs/example.yaml`` (SESOI
``{selection_ratio: 0.8}``, k 10/10/20, hierarchical multiplicity, swap-in ranking, the default
validity protocol) and writes ``bench/results/self_test_example.json``: δ*, per category the planted
paired t and the metrics that detect the plant, the validity rows (all scores and each job's
reference top-2K), and the seconds the self-test took. Methods 10 planted t = 2 in every category at
once ("9 of 9 at q = 0.0469"); here δ* is planted in one category at a time, on the observed residuals.

Run: ``python bench/self_test_example.py`` (about a minute on one core; the self-test runs the metric
suite once per category plus once for the null copy, with 100 bootstrap resamples, as the
``effects`` family does).
"""

from __future__ import annotations

import json
import math
import time
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parent.parent
AXES = ["sex_gender", "age_signal", "place_of_residence", "language_signal", "disability_signal"]


def main() -> dict:
    from compiler import catalog
    from runtime.analysis import analyse
    from runtime.analysis.effect_size import effect_sizes
    from runtime.analysis.sensitivity import planted_self_test
    from runtime.analysis.sesoi import Rule, sesoi_table, shifts_of
    from runtime.analysis.validity import check_validity

    paired = pd.read_csv(ROOT / "tests" / "data" / "example-paired.csv")
    thresholds = catalog.default_thresholds()
    thresholds["research"]["score_delta"] = {"pass": 0.02, "investigate": 0.05}
    thresholds["operational"]["score_delta"] = {"pass": 0.04, "investigate": 0.05}
    levels = {v: {a: str(g[a].iloc[0]) for a in AXES} for v, g in paired.groupby("variant")}
    settings = dict(reference="BASE", k={"counterfactual": 10, "group": 10, "merit": 20}, alpha=0.05,
                    seed=20261129, thresholds=thresholds, score_range={"minilm": (0.0, 1.0)},
                    variant_levels=levels, ranking="swap_in", multiplicity="hierarchical")
    resolved = {"analysis": {"k": settings["k"], "alpha": 0.05,
                             "effect_size": {"sesoi": {"selection_ratio": 0.8}, "contrasts": []}},
                "variants": {"reference": "BASE"}, "systems": [{"id": "minilm", "score_range": [0, 1]}],
                "axes": {}}
    ses = sesoi_table(paired, resolved)
    shifts = {k: v for k, v in shifts_of(ses).items() if len(k) == 2}
    pooled = ses[ses["job_id"] == "ALL"].iloc[0]
    contrasts = [{"kind": "variant", "variant": v, "reference": "BASE", "family": "variants"}
                 for v in sorted(set(paired["variant"]) - {"BASE"})]
    d_sesoi = float(pooled["d_equivalent"])
    observed = analyse(paired, n_bootstrap=100, **settings).metrics
    eff = effect_sizes(paired, contrasts=contrasts, axes=AXES, sesoi=d_sesoi, alpha=0.05)
    start = time.perf_counter()
    table = planted_self_test(paired, reference="BASE", shifts=shifts, alpha=0.05, sesoi=d_sesoi, axes=AXES,
                              observed_metrics=observed, observed_effects=eff,
                              analyse_metrics=lambda f: analyse(f, n_bootstrap=100, **settings).metrics)
    seconds = time.perf_counter() - start
    config = {"positive_control": {"contrast": "match", "min_d": 0.5, "direction": "higher"},
              "manipulation_checks": [], "distribution": {"min_sd": None, "ceiling": 0.95, "max_ceiling_share": 0.1}}
    val = check_validity(paired, config=config, reference="BASE", axes=AXES, score_range={"minilm": (0.0, 1.0)},
                         alpha=0.05, score_step={"minilm": 0.0}, sesoi=d_sesoi, rules={"minilm": Rule(k=10)})
    out = {
        "delta_star": float(pooled["shift"]), "d_equivalent": d_sesoi, "self_test_seconds": round(seconds, 1),
        "categories": {
            v: {"planted_t": round(float(sub["shift_se"].iloc[0]), 3),
                "detected_by": sorted(sub.loc[sub["detected"], "metric"]),
                "not_detected_by": sorted(sub.loc[~sub["detected"], "metric"])}
            for v, sub in table.groupby("variant")},
        "validity": {r.check: {"value": None if not math.isfinite(r.value) else round(float(r.value), 4),
                               "threshold": float(r.threshold), "passed": bool(r.passed), "detail": r.detail}
                     for r in val.checks.itertuples()},
        "verdict": val.verdict,
    }
    path = ROOT / "bench" / "results" / "self_test_example.json"
    path.write_text(json.dumps(out, indent=2, ensure_ascii=False) + "\n")
    return out


if __name__ == "__main__":
    print(json.dumps(main(), indent=2, ensure_ascii=False))
