"""Quick coverage check of the ratio intervals alone: percentile vs logit / log-transformed vs score (issue 39 §2).

Not the coverage bench (``bench/coverage_counterfactual.py`` runs every metric through
:func:`runtime.analysis.analyse` and publishes ``coverage_measured.json``): this calls only
``retention_rate``, ``impact_ratio`` and ``selection_ratio`` on the same simulated audits
(:class:`runtime.analysis.counterfactual_sim.CorrespondenceSim`, swap-in ranking, K = 10), once per interval
method on the same bootstrap resamples (each metric's stream is seeded by the cell, not by the method):

- ``percentile``: the percentile interval (adopted, ``stats.RATIO_TRANSFORMS``);
- ``transformed``: the logit / log-transformed interval (``stats.CANDIDATE_RATIO_TRANSFORMS``, measured, not adopted);
- ``score``: the score interval on pooled counts at the bootstrap's design effect
  (``stats.CANDIDATE_RATIO_SCORES``: Wilson for retention and the impact ratio, Tang's paired-ratio score
  interval for the selection ratio);
- ``adopted``: the shipped intervals (``stats.RATIO_TRANSFORMS``; methods 15: the truncated Jeffreys interval for
  retention and the impact ratio, the percentile interval for the selection ratio).

Work is cut into chunks of ``--chunk`` audits, each simulated from its own seed (setting, phase, chunk), so the
table is the same whatever ``--procs``; nothing is saved between runs (minutes, not hours) and nothing is
published. Output: ``bench/results/coverage_ratios_quick.json`` (or ``--out``), one row per setting, method,
metric and variant, with the coverage, its Monte Carlo SE, the misses above and below the truth and the width.
The script and its workers import numpy, scipy, pandas and statsmodels only (``runtime.analysis`` and
``compiler.catalog``, without the ``compiler`` package's spec models: no pydantic; ``tests/test_ratio_score_intervals.py``
checks it).

    .venv/bin/python bench/coverage_ratios_quick.py [--jobs 2] [--effects 0 1 3] [--ties no] [--audits 1000]
        [--truth 2000] [--resamples 499] [--methods percentile transformed score] [--procs 2] [--chunk 50]
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
import types
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
if "compiler" not in sys.modules:
    # ``runtime.analysis`` needs ``compiler.catalog`` alone; the package's ``__init__`` loads the spec models
    # (pydantic). An empty package object in its place lets ``from compiler import catalog`` load that one module,
    # so the workers import numpy, scipy, pandas and statsmodels only (a bare 16-core machine needs no more).
    _pkg = types.ModuleType("compiler")
    _pkg.__path__ = [str(ROOT / "compiler")]
    sys.modules["compiler"] = _pkg

from runtime import seeding  # noqa: E402
from runtime.analysis import _pairing, stats  # noqa: E402
from runtime.analysis.counterfactual_sim import SCORE_RANGE, CorrespondenceSim  # noqa: E402
from runtime.analysis.frame import cohorts  # noqa: E402
from runtime.analysis.registry import get_metric  # noqa: E402

K = {"counterfactual": 10, "group": 10, "merit": 20}
METRICS = ("retention_rate", "impact_ratio", "selection_ratio")
VARIANTS = ("V01", "V02")
METHODS = ("percentile", "transformed", "score", "adopted")
#: The shipped intervals, read when the bench starts (``adopted``: the metrics as an audit computes them).
ADOPTED = dict(stats.RATIO_TRANSFORMS)


def _methods(method: str) -> dict[str, str | None]:
    """The ``stats.RATIO_TRANSFORMS`` entries of one method."""
    if method == "percentile":
        return dict.fromkeys(METRICS)
    if method == "adopted":
        return dict(ADOPTED)
    return dict(stats.CANDIDATE_RATIO_TRANSFORMS if method == "transformed" else stats.CANDIDATE_RATIO_SCORES)


def _cells(frame, resamples: int, seed: int, method: str) -> dict[tuple[str, str, str], tuple[float, float, float]]:
    adopted = dict(stats.RATIO_TRANSFORMS)
    stats.RATIO_TRANSFORMS.update(_methods(method))
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
        stats.RATIO_TRANSFORMS.clear()
        stats.RATIO_TRANSFORMS.update(adopted)


def setting_name(n_jobs: int, ties: bool, effect: float) -> str:
    return f"jobs{n_jobs:02d}-{'yes' if ties else 'no'}ties-effect{effect:g}"


def run_chunk(n_jobs: int, ties: bool, effect: float, phase: str, chunk: int, size: int, resamples: int,
              methods: tuple[str, ...]) -> tuple[str, str, dict]:
    """One chunk: per method, metric and variant, the values (phase ``truth``) or (value, low, high) triples."""
    sim = CorrespondenceSim(n_jobs=n_jobs, effect_se=effect, ties=ties)
    name = setting_name(n_jobs, ties, effect)
    frame = sim.frame(seeding.rng(2026, "ratios_quick", name, phase, chunk), size, first=chunk * size)
    out: dict[str, dict[str, list]] = {}
    if phase == "truth":
        for (_, m, v), (value, _, _) in _cells(frame, 1, 0, "percentile").items():
            out.setdefault("truth", {}).setdefault(f"{m} {v}", []).append(value)
        return name, phase, out
    for method in methods:
        for (_, m, v), c in _cells(frame, resamples, 2026 + chunk, method).items():
            out.setdefault(method, {}).setdefault(f"{m} {v}", []).append(list(c))
    return name, phase, out


def summarise(name: str, truth: dict[str, list[float]], cover: dict[str, dict[str, list]]) -> list[dict]:
    rows = []
    for method, cells in cover.items():
        for m in METRICS:
            for v in VARIANTS:
                t = float(np.nanmean(truth[f"{m} {v}"]))
                ci = np.array(cells[f"{m} {v}"], dtype=float)
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
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, nargs="+", default=[2])
    ap.add_argument("--effects", type=float, nargs="+", default=[0.0, 1.0, 3.0])
    ap.add_argument("--ties", choices=["yes", "no", "both"], default="no")
    ap.add_argument("--audits", type=int, default=1000)
    ap.add_argument("--truth", type=int, default=2000)
    ap.add_argument("--resamples", type=int, default=499)
    ap.add_argument("--methods", nargs="+", choices=METHODS, default=list(METHODS))
    ap.add_argument("--chunk", type=int, default=50, help="audits per chunk (sets the seeds: keep it to compare runs)")
    ap.add_argument("--procs", type=int, default=2, help="worker processes (the table does not depend on it)")
    ap.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "results" / "coverage_ratios_quick.json")
    args = ap.parse_args()
    ties = {"both": [False, True], "yes": [True], "no": [False]}[args.ties]
    settings = [(j, t, e) for j in args.jobs for t in ties for e in args.effects]
    tasks = [(j, t, e, phase, c, min(args.chunk, total - c * args.chunk), args.resamples, tuple(args.methods))
             for j, t, e in settings for phase, total in (("truth", args.truth), ("cover", args.audits))
             for c in range(math.ceil(total / args.chunk))]
    start = time.time()
    merged: dict[tuple[str, str], dict] = {}
    with ProcessPoolExecutor(max_workers=args.procs) as pool:
        # map keeps task order, so the lists are concatenated in chunk order whatever finishes first
        for i, (name, phase, out) in enumerate(pool.map(run_chunk, *zip(*tasks)), 1):
            dst = merged.setdefault((name, phase), {})
            for method, cells in out.items():
                for key, vals in cells.items():
                    dst.setdefault(method, {}).setdefault(key, []).extend(vals)
            if i % 10 == 0 or i == len(tasks):
                print(f"{i}/{len(tasks)} chunks, {time.time() - start:.0f} s", flush=True)
    rows = []
    for j, t, e in settings:
        name = setting_name(j, t, e)
        rows += summarise(name, merged[(name, "truth")]["truth"], merged[(name, "cover")])
    for r in rows:
        print(f"{r['setting']} {r['method']:11s} {r['metric']:15s} {r['variant']} truth {r['truth']:.4f} "
              f"cov {100 * r['coverage']:5.1f}% (above {100 * r['miss_above']:.1f}%, below {100 * r['miss_below']:.1f}%) "
              f"width {r['mean_width']:.4f}")
    meta = {"source": "bench/coverage_ratios_quick.py", "date": time.strftime("%Y-%m-%d"), "audits": args.audits,
            "truth": args.truth, "resamples": args.resamples, "chunk": args.chunk, "methods": args.methods,
            "candidates": {"transformed": stats.CANDIDATE_RATIO_TRANSFORMS, "score": stats.CANDIDATE_RATIO_SCORES,
                           "adopted": ADOPTED}}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"meta": meta, "rows": rows}, indent=1) + "\n")
    print(f"wrote {args.out} ({time.time() - start:.0f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
