"""Quick coverage check of the ratio intervals alone: percentile vs logit / log-transformed (issue 39 §2).

Not the coverage bench (``bench/coverage_counterfactual.py`` runs every metric through
:func:`runtime.analysis.analyse` and publishes ``coverage_measured.json``): this calls only
``retention_rate``, ``impact_ratio`` and ``selection_ratio`` on the same simulated audits
(:class:`runtime.analysis.counterfactual_sim.CorrespondenceSim`, swap-in ranking, K = 10), once with the
logit / log-transformed interval (``stats.CANDIDATE_RATIO_TRANSFORMS``, measured and not adopted) and once with the percentile interval drawn from the same resamples, so
the two read identical bootstrap distributions. Minutes, not hours; nothing is published.

    .venv/bin/python bench/coverage_ratios_quick.py [--jobs 2] [--effects 0 1 3] [--ties no] [--audits 1000]
        [--truth 2000] [--resamples 499]
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from runtime import seeding  # noqa: E402
from runtime.analysis import _pairing, stats  # noqa: E402
from runtime.analysis.counterfactual_sim import SCORE_RANGE, CorrespondenceSim  # noqa: E402
from runtime.analysis.frame import cohorts  # noqa: E402
from runtime.analysis.registry import get_metric  # noqa: E402

K = {"counterfactual": 10, "group": 10, "merit": 20}
METRICS = ("retention_rate", "impact_ratio", "selection_ratio")
VARIANTS = ("V01", "V02")


def _cells(frame, resamples: int, seed: int, percentile: bool) -> dict[tuple[str, str, str], tuple[float, float, float]]:
    adopted = dict(stats.RATIO_TRANSFORMS)
    stats.RATIO_TRANSFORMS.update(dict.fromkeys(METRICS) if percentile else stats.CANDIDATE_RATIO_TRANSFORMS)
    try:
        out = {}
        for cohort in cohorts(frame, reference="BASE", score_range={"sim": SCORE_RANGE}, ranking="swap_in"):
            for v in VARIANTS:
                p = _pairing(cohort, v, k=K, n_bootstrap=resamples, seed=seed)
                for m in METRICS:
                    r = get_metric(m)(p)
                    out[(cohort.condition, m, v)] = (r.value, r.ci_low, r.ci_high)
        return out
    finally:
        stats.RATIO_TRANSFORMS.update(adopted)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, nargs="+", default=[2])
    ap.add_argument("--effects", type=float, nargs="+", default=[0.0, 1.0, 3.0])
    ap.add_argument("--ties", choices=["yes", "no"], default="no")
    ap.add_argument("--audits", type=int, default=1000)
    ap.add_argument("--truth", type=int, default=2000)
    ap.add_argument("--resamples", type=int, default=499)
    args = ap.parse_args()
    rows = []
    for n_jobs in args.jobs:
        for effect in args.effects:
            sim = CorrespondenceSim(n_jobs=n_jobs, effect_se=effect, ties=args.ties == "yes")
            name = f"jobs{n_jobs:02d}-{args.ties}ties-effect{effect:g}"
            truth_frame = sim.frame(seeding.rng(2026, "ratios_quick", name, "truth"), args.truth)
            truth: dict[tuple[str, str], list[float]] = {}
            for (_, m, v), (value, _, _) in _cells(truth_frame, 1, 0, percentile=True).items():
                truth.setdefault((m, v), []).append(value)
            frame = sim.frame(seeding.rng(2026, "ratios_quick", name, "cover"), args.audits)
            for method in ("percentile", "transformed"):
                cells = _cells(frame, args.resamples, 2026, percentile=method == "percentile")
                for m in METRICS:
                    for v in VARIANTS:
                        t = float(np.nanmean(truth[(m, v)]))
                        ci = np.array([c for (a, mm, vv), c in cells.items() if mm == m and vv == v], dtype=float)
                        ok = np.isfinite(ci[:, 1]) & np.isfinite(ci[:, 2])
                        lo, hi = ci[ok, 1], ci[ok, 2]
                        n = int(ok.sum())
                        cov = float(np.mean((lo <= t + 1e-12) & (t - 1e-12 <= hi)))
                        rows.append({"setting": name, "method": method, "metric": m, "variant": v, "truth": t, "n": n,
                                     "coverage": cov, "mc_se": math.sqrt(cov * (1 - cov) / n),
                                     # as bench/coverage_counterfactual.py: the interval lies wholly above / below
                                     "miss_above": float(np.mean(lo > t + 1e-12)),
                                     "miss_below": float(np.mean(hi < t - 1e-12)),
                                     "mean_width": float(np.mean(hi - lo))})
                        r = rows[-1]
                        print(f"{name} {method:11s} {m:15s} {v} truth {t:.4f} cov {100 * cov:5.1f}% "
                              f"(above {100 * r['miss_above']:.1f}%, below {100 * r['miss_below']:.1f}%) "
                              f"width {r['mean_width']:.4f}", flush=True)
    out = Path(__file__).resolve().parent / "results" / "coverage_ratios_quick.json"
    out.write_text(json.dumps(rows, indent=1) + "\n")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
