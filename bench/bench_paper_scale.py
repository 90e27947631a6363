"""Paper-scale benchmark (seed 000 §4: 5 jobs x 100 base candidates x 10 treatments), ABAB.

Three arms, measured in alternation (A B C, A B C, ...: at least 2 rounds, medians), on the texts
the audit embeds:

  A. raw free encode: one ``SentenceTransformer.encode`` call over every distinct text
     (sentence-transformers' default batch size of 32), what a hand-written script would do;
  B. raw encode per plan batch: what the embedding system does, without the pipeline around it
     (each plan score batch in one encoder call, each job text alone, ``runtime.systems.embedding
     .encode_batch``), so C / B is the pipeline's own overhead;
  C. end to end: ``audit execute`` in a fresh task store (generation, model load, embedding with the
     truncation diagnostics and the store writes, ranking, analysis, HTML and PDF report).

Also the analysis alone (best of 3). Prints medians and the ratios C / A and C / B; writes
``bench/results/paper_scale.json`` (``paper_scale_<stem>.json`` for another spec). Speeds are ratios within one run: the machine is shared and
noisy, absolute seconds are only indicative.

Before issue 40 this script passed ``execution.batch_size`` to ``encode`` (None since methods v2:
sentence-transformers' ``trange(0, n, None)`` raised ``TypeError``), and its raw encode was not
like for like (one call over all texts against the pipeline's per-batch calls).

Usage: ``python bench/bench_paper_scale.py [spec] [--rounds N]`` (default specs/paper-scale.yaml, 2).
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd

REPO = Path(__file__).resolve().parent.parent


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("spec", nargs="?", default=str(REPO / "specs" / "paper-scale.yaml"))
    ap.add_argument("--rounds", type=int, default=2, help="A B C rounds (>= 2)")
    args = ap.parse_args()
    spec = Path(args.spec)
    from compiler import compile_spec
    from compiler.plan import score_batches
    from runtime.analysis import analyse
    from runtime.pipeline import execute, job_texts
    from runtime.systems.embedding import encode_batch, load_model, model_dir

    # compile every time: an unchanged spec keeps its lock; a changed one is refused (exit 3) until
    # amended on purpose with `audit compile specs/paper-scale.yaml --amend --reason "..."`
    subprocess.run([sys.executable, "-m", "runtime.cli", "compile", str(spec)], check=True,
                   stdout=subprocess.DEVNULL)
    compiled = compile_spec(spec)
    r = compiled.resolved
    system = next(s for s in r["systems"] if s["kind"] == "embedding")
    model = load_model(model_dir(system, compiled.loaded.folder))
    jobs = job_texts(compiled)
    times: dict[str, list[float]] = {"A_free_encode": [], "B_encode_per_batch": [], "C_end_to_end": []}
    texts: list[str] = []
    batches: list[list[str]] = []
    result = None
    work = Path(tempfile.mkdtemp(prefix="bench-paper-"))
    try:
        for round_ in range(max(2, args.rounds)):
            # C first in round 0: it writes resumes.csv, whose texts A and B encode
            store = work / f"store-{round_}"
            t0 = time.perf_counter()
            result = execute(spec, out=work / f"out-{round_}", quiet=True, store=store)
            times["C_end_to_end"].append(time.perf_counter() - t0)
            if not texts:
                resumes = pd.read_csv(result.run_dir / "resumes.csv", keep_default_na=False)
                texts = list(dict.fromkeys(list(resumes["text"]) + list(jobs.values())))
                spans = score_batches(r)
                for job_id, g in resumes.groupby("job_id", sort=False):
                    cvs = list(dict.fromkeys(g["cv_id"]))
                    for lo, hi in spans:
                        batches.append(list(g[g["cv_id"].isin(cvs[lo:hi])]["text"]))
            t0 = time.perf_counter()
            model.encode(texts, normalize_embeddings=True)
            times["A_free_encode"].append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            for text in jobs.values():
                encode_batch(model, [text])
            for batch in batches:
                encode_batch(model, batch)
            times["B_encode_per_batch"].append(time.perf_counter() - t0)
            shutil.rmtree(store, ignore_errors=True)
        paired = pd.read_csv(result.run_dir / "paired.csv")
        best = float("inf")
        for _ in range(3):
            t0 = time.perf_counter()
            res = analyse(paired, reference=r["variants"]["reference"], k=r["analysis"]["k"],
                          alpha=r["analysis"]["alpha"], n_bootstrap=r["analysis"]["bootstrap"], seed=r["seed"],
                          thresholds=r["thresholds"],
                          score_range={s["id"]: tuple(s["score_range"]) for s in r["systems"]})
            best = min(best, time.perf_counter() - t0)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    med = {k: statistics.median(v) for k, v in times.items()}
    out = {"spec": str(spec), "texts": len(texts), "batches": len(batches), "rounds": len(times["A_free_encode"]),
           "seconds": times, "median_s": med,
           "ratio_end_to_end_over_free_encode": med["C_end_to_end"] / med["A_free_encode"],
           "ratio_end_to_end_over_batch_encode": med["C_end_to_end"] / med["B_encode_per_batch"],
           "ratio_batch_over_free_encode": med["B_encode_per_batch"] / med["A_free_encode"],
           "analysis_best_of_3_s": best, "analysis_cells": int(len(res.metrics))}
    print(f"texts embedded                 : {len(texts)} in {len(batches)} plan batches (+{len(jobs)} job texts)")
    for k, v in times.items():
        print(f"{k:<31}: median {med[k]:8.1f} s   ({', '.join(f'{x:.1f}' for x in v)})")
    print(f"end to end / free encode       : {out['ratio_end_to_end_over_free_encode']:8.3f}")
    print(f"end to end / per-batch encode  : {out['ratio_end_to_end_over_batch_encode']:8.3f}   (the pipeline's overhead)")
    print(f"per-batch / free encode        : {out['ratio_batch_over_free_encode']:8.3f}")
    print(f"analysis alone ({len(res.metrics)} cells x {r['analysis']['bootstrap']} resamples, best of 3): {best:.3f} s")
    name = "paper_scale" if spec.stem == "paper-scale" else f"paper_scale_{spec.stem}"
    (REPO / "bench" / "results" / f"{name}.json").write_text(json.dumps(out, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
