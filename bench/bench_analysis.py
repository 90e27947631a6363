"""Time ``runtime.analysis.analyse`` on the seed 000 §4 corpus shape.

5 jobs x 100 base candidates x 10 treatments (BASE + V01..V09), one system, one condition, 1,000
bootstrap resamples: 90 metric cells. Goal: at most 1 s (best of 3).

    .venv/bin/python bench/bench_analysis.py [--repeat 3] [--bootstrap 1000]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from compiler import catalog  # noqa: E402
from runtime import seeding  # noqa: E402
from runtime.analysis import analyse, n_bootstrap_cells  # noqa: E402

GOAL_S = 1.0


def synthetic_paired(*, jobs: int = 5, cvs: int = 100, variants: int = 10, seed: int = 7,
                     system: str = "minilm", condition: str = "neutral") -> pd.DataFrame:
    """A seeded paired frame: cosine-like scores, small variant shifts, alternating true matches."""
    g = seeding.rng(seed, "bench", "paired")
    names = ["BASE"] + [f"V{i:02d}" for i in range(1, variants)]
    frames = []
    for j in range(jobs):
        base = np.clip(g.normal(0.55, 0.12, cvs), 0, 1)
        match = ((np.arange(cvs) + j) % 2 == 0).astype(int)
        for v, name in enumerate(names):
            shift = 0.0 if v == 0 else g.normal(0.003 * v, 0.01, cvs)
            score = np.clip(base + shift, 0, 1)
            cv = np.array([f"cv{i:03d}" for i in range(cvs)])
            order = np.lexsort((cv, -score))
            rank = np.empty(cvs, dtype=int)
            rank[order] = np.arange(1, cvs + 1)
            frames.append(pd.DataFrame({
                "system": system, "condition": condition, "replicate": 0, "job_id": f"job{j}",
                "cv_id": cv, "variant": name, "score": score, "rank": rank,
                "is_true_match": match}))
    return pd.concat(frames, ignore_index=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--bootstrap", type=int, default=1000)
    args = ap.parse_args(argv)
    paired = synthetic_paired()
    kwargs = dict(reference="BASE", k=catalog.DEFAULT_K, alpha=0.05, n_bootstrap=args.bootstrap,
                  seed=20261129, thresholds=catalog.default_thresholds(),
                  score_range={"minilm": (0.0, 1.0)})
    times = []
    for _ in range(args.repeat):
        t0 = time.perf_counter()
        result = analyse(paired, **kwargs)
        times.append(time.perf_counter() - t0)
    best = min(times)
    cells = n_bootstrap_cells(paired, "BASE")
    assert len(result.metrics) == cells
    print(f"analyse: {cells} cells, {args.bootstrap} resamples: best of {args.repeat} = "
          f"{best:.3f} s (goal {GOAL_S:.1f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
