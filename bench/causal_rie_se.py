"""Is the DML-UCA standard error of RIE too small? (issue 39 §7: "RIE's SE is 5.7% below its SD").

Reads the committed replications of ``bench/bench_causal_coverage.py`` (settings with the oracle: the
linear and null SCMs of :mod:`runtime.analysis.causal_sim`) and splits, per effect, the gap between the
estimator's mean SE and the empirical SD of its estimates into

- **Monte Carlo error of the empirical SD**: the oracle (the same influence function with the TRUE
  nuisances, :meth:`LinearSCM.oracle_phi`) has an exactly known variance, Var(phi)/n, so its rms SE is the
  true SD of the oracle up to a tiny error; its empirical SD over the same data sets scatters around it
  by about 1/sqrt(2(k − 1)) (2.4% at k = 844). The estimator and the oracle share the data sets, so the
  estimator's empirical SD shares that scatter;
- **the nuisances' own variance**: Var(estimate) = Var(oracle) + Var(estimate − oracle)
  + 2 Cov(oracle, estimate − oracle). The control-variate SD ``sqrt(oracle rms SE² + Var(diff) + 2 Cov)``
  estimates the estimator's true SD with the oracle's sampling noise removed (``cv_sd``);
- **the SE formula**: the estimator's rms SE against ``cv_sd`` (``se_over_cv_sd``) is what a variance
  formula error would show; its MC SE comes from a bootstrap over replications (2,000 resamples).

    .venv/bin/python bench/causal_rie_se.py [--setting null-each-n3000-r5] [--setting ...]

Output: ``bench/results/causal_rie_se.md`` / ``.json``. Result (2026-12-04, null SCM at n = 3,000, 844
replications): RIE's rms SE is 5.6% below its empirical SD, but the oracle shows 4.1% of that gap too
(oracle SD 0.02809 against its exact 0.02698): Monte Carlo error of the SD (z = 1.7) shared by both;
against the control-variate SD the SE is 1.7% low (SE/cv SD 0.983, MC SE 0.004): the estimated nuisances
add variance of their own (Var(estimate − oracle) is 1.1% of Var(oracle)), which the influence-function
variance leaves out by construction (it is o(1/n), Chernozhukov et al. 2018, Thm 3.1), and the
cross-fitted influence function's spread is 1.2% below the true one's. A 1.7% low SE moves a 95%
interval's coverage to 2 Phi(1.96 x 0.983) - 1 = 94.6%; no variance formula is wrong, and the SE is kept
(the other effects: SE/cv SD 1.000-1.011).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_causal_coverage import load_records  # noqa: E402
from runtime.analysis.causal import EFFECTS  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"


def split_gap(records: list[dict], *, boot: int = 2000, seed: int = 39) -> dict:
    """Per effect: empirical SD, rms SE, the oracle's SD and rms SE, Var(diff), Cov, control-variate SD,
    and the ratios SE/SD and SE/cv_sd with bootstrap MC SEs over replications."""
    k = len(records)
    g = np.random.default_rng(seed)
    idx = g.integers(0, k, size=(boot, k))
    out: dict = {"reps": k, "effects": {}}

    def stats(a, s, o, os_):
        d = a - o
        cv_var = np.mean(os_ ** 2, axis=-1) + np.var(d, axis=-1, ddof=1) + 2 * _cov(o, d)
        se = np.sqrt(np.mean(s ** 2, axis=-1))
        return se / np.std(a, axis=-1, ddof=1), se / np.sqrt(cv_var), np.sqrt(cv_var)

    for e in EFFECTS:
        a = np.array([r["effects"][e]["estimate"] for r in records])
        s = np.array([r["effects"][e]["se"] for r in records])
        o = np.array([r["oracle"][e]["estimate"] for r in records])
        os_ = np.array([r["oracle"][e]["se"] for r in records])
        r_sd, r_cv, cv_sd = stats(a, s, o, os_)
        b_sd, b_cv, _ = stats(a[idx], s[idx], o[idx], os_[idx])
        out["effects"][e] = {
            "empirical_sd": float(a.std(ddof=1)), "rms_se": float(np.sqrt(np.mean(s ** 2))),
            "oracle_sd": float(o.std(ddof=1)), "oracle_rms_se": float(np.sqrt(np.mean(os_ ** 2))),
            "oracle_sd_over_se": float(o.std(ddof=1) / np.sqrt(np.mean(os_ ** 2))),
            "var_diff_over_var_oracle": float(np.var(a - o, ddof=1) / np.mean(os_ ** 2)),
            "corr_oracle_diff": float(np.corrcoef(o, a - o)[0, 1]),
            "cv_sd": float(cv_sd), "se_over_sd": float(r_sd), "se_over_sd_mc_se": float(np.std(b_sd, ddof=1)),
            "se_over_cv_sd": float(r_cv), "se_over_cv_sd_mc_se": float(np.std(b_cv, ddof=1)),
            "sd_ratio_mc_se_normal": 1 / math.sqrt(2 * (k - 1))}
    return out


def _cov(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Sample covariance along the last axis (ddof 1)."""
    xc = x - x.mean(axis=-1, keepdims=True)
    yc = y - y.mean(axis=-1, keepdims=True)
    return (xc * yc).sum(axis=-1) / (x.shape[-1] - 1)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--setting", action="append", default=None,
                    help="a folder of bench/results/causal_coverage/ (default: every one with oracle records)")
    args = ap.parse_args()
    root = RESULTS / "causal_coverage"
    settings = args.setting or sorted(p.name for p in root.iterdir() if p.is_dir())
    summary, lines = {}, ["# Is RIE's SE too small? Split of SE vs empirical SD (bench/causal_rie_se.py)", "",
                          "| setting | effect | reps | emp. SD | rms SE | SE/SD (MC SE) | oracle SD/SE | "
                          "Var(diff)/Var(oracle) | cv SD | SE/cv SD (MC SE) |", "|---|---|---:|---:|---:|---|---:|---:|---:|---|"]
    for name in settings:
        records = [r for _, r in sorted(load_records(root / name).items())]
        if not records or not all("oracle" in r for r in records):
            continue
        res = summary[name] = split_gap(records)
        for e, r in res["effects"].items():
            lines.append(f"| {name} | {e} | {res['reps']} | {r['empirical_sd']:.5f} | {r['rms_se']:.5f} | "
                         f"{r['se_over_sd']:.3f} ({r['se_over_sd_mc_se']:.3f}) | {r['oracle_sd_over_se']:.3f} | "
                         f"{r['var_diff_over_var_oracle']:.3f} | {r['cv_sd']:.5f} | "
                         f"{r['se_over_cv_sd']:.3f} ({r['se_over_cv_sd_mc_se']:.3f}) |")
    lines += ["", "SE/SD: the estimator's rms SE over its empirical SD. Oracle SD/SE: the same for the oracle, whose "
              "variance is exact, so its departure from 1 is Monte Carlo error of the SD over these data sets, "
              "shared by the estimator. cv SD: the estimator's SD with that error removed (control variate). "
              "SE/cv SD: what a wrong variance formula would move."]
    (RESULTS / "causal_rie_se.json").write_text(json.dumps(summary, indent=1))
    (RESULTS / "causal_rie_se.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
