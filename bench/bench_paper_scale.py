"""Paper-scale benchmark (seed 000 §4: 5 jobs x 100 base candidates x 10 treatments).

Prints, from one run on this machine:
  - the raw ``SentenceTransformer.encode`` time for exactly the texts the audit embeds;
  - the end-to-end ``audit execute`` time (generation, model load, embedding, ranking, analysis,
    HTML and PDF report);
  - their ratio (goal <= 1.3);
  - the analysis time alone (goal <= 1 s for 90 cells x 1,000 resamples), best of 3.

Usage: ``python bench/bench_paper_scale.py [spec]`` (default specs/paper-scale.yaml). Speeds are
ratios within one run: the machine is shared and noisy, absolute seconds are only indicative.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd

REPO = Path(__file__).resolve().parent.parent


def main() -> int:
    spec = Path(sys.argv[1]) if len(sys.argv) > 1 else REPO / "specs" / "paper-scale.yaml"
    from compiler import compile_spec
    from runtime.analysis import analyse
    from runtime.pipeline import execute, job_texts
    from runtime.systems.embedding import load_model, model_dir

    # compile every time: an unchanged spec keeps its lock; a changed one is refused (exit 3) until
    # amended on purpose with `audit compile specs/paper-scale.yaml --amend --reason "..."`
    subprocess.run([sys.executable, "-m", "runtime.cli", "compile", str(spec)], check=True,
                   stdout=subprocess.DEVNULL)
    out = Path(tempfile.mkdtemp(prefix="bench-"))
    try:
        t0 = time.perf_counter()
        result = execute(spec, out=out, quiet=True)
        e2e = time.perf_counter() - t0

        compiled = compile_spec(spec)
        resumes = pd.read_csv(result.run_dir / "resumes.csv")
        jobs = job_texts(compiled)
        texts = list(dict.fromkeys(list(resumes["text"]) + list(jobs.values())))
        system = next(s for s in compiled.resolved["systems"] if s["kind"] == "embedding")
        model = load_model(model_dir(system, compiled.loaded.folder))
        t0 = time.perf_counter()
        model.encode(texts, batch_size=compiled.loaded.spec.execution.batch_size)
        raw = time.perf_counter() - t0

        paired = pd.read_csv(result.run_dir / "paired.csv")
        r = compiled.resolved
        best = float("inf")
        for _ in range(3):
            t0 = time.perf_counter()
            res = analyse(paired, reference=r["variants"]["reference"], k=r["analysis"]["k"],
                          alpha=r["analysis"]["alpha"], n_bootstrap=r["analysis"]["bootstrap"], seed=r["seed"],
                          thresholds=r["thresholds"],
                          score_range={s["id"]: tuple(s["score_range"]) for s in r["systems"]})
            best = min(best, time.perf_counter() - t0)
        print(f"texts embedded            : {len(texts)}")
        print(f"raw encode                : {raw:8.1f} s")
        print(f"end to end (audit execute): {e2e:8.1f} s   stages: {result.timings}")
        print(f"ratio end-to-end / encode : {e2e / raw:8.3f}   (goal <= 1.3)")
        print(f"analysis alone ({len(res.metrics)} cells x {r['analysis']['bootstrap']} resamples, best of 3): "
              f"{best:.3f} s   (goal <= 1 s)")
    finally:
        shutil.rmtree(out, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
