"""Bench: the lexical kind (issue 36 §5) on 100,000 template résumés, BM25 and TF-IDF, against a bare
``CountVectorizer.transform`` of the same texts.

Two sets of 100,000 texts, each scored against its own job (20,000 per template family):

- ``matrix``: what an audit scores, a correspondence matrix: 10,000 base candidates (2,000 per family) under
  the ten variants of seed 000 Table 2 (cues of :func:`runtime.generate.cues.example_axes`), so each base
  résumé's body recurs ten times under different header cues;
- ``distinct``: 100,000 distinct base candidates (20,000 per family), cue slots empty.

Timed (wall clock, ``time.perf_counter``): ``bare``, ``CountVectorizer(stop_words="english")`` fitted on the
bundled corpus, ``transform`` of the texts (the issue's baseline: no stemming); ``bm25`` and ``tfidf``, the
adapter's :meth:`runtime.systems.lexical.LexicalScorer.scores` per job (tokenising, stemming, counting and
scoring); ``fit``, reading the bundled corpus and computing its statistics (once per run). Generating the
résumés is not timed. Each timing is the best of ``--repeat`` runs.

Usage: ``python bench/bench_lexical.py [--n 100000] [--repeat 2] [--out bench/results/lexical]``
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from pathlib import Path

import numpy as np

from compiler.systems.lexical import read_bundled_corpus
from runtime.generate.base import generate_base_candidates
from runtime.generate.cues import example_axes, example_variants
from runtime.generate.families import FAMILY_IDS, job_family
from runtime.generate.render import base_text, render_resume
from runtime.systems.lexical import LexicalScorer

ROOT = Path(__file__).resolve().parents[1]
SEED = 20261203
TOKENS = {"lowercase": True, "stopwords": "english", "stemmer": "english"}


def texts(n: int, mode: str) -> dict[str, list[str]]:
    """Family -> its résumé texts (``n`` in all, ``n / 5`` per family)."""
    per_family = n // len(FAMILY_IDS)
    out: dict[str, list[str]] = {}
    if mode == "distinct":
        for fam in FAMILY_IDS:
            bases = generate_base_candidates(job_id=f"bench-{fam}", family=fam, k=per_family, m=per_family // 2,
                                             seed=SEED)
            out[fam] = [base_text(b) for b in bases]
        return out
    axes, variants = example_axes(), example_variants()
    k = per_family // len(variants)
    for fam in FAMILY_IDS:
        bases = generate_base_candidates(job_id=f"bench-{fam}", family=fam, k=k, m=k // 2, seed=SEED)
        rows = []
        for i, b in enumerate(bases):
            for levels in variants.values():
                cues = {}
                for axis, level in levels.items():
                    options = axes[axis]["cues"][level]
                    cues[axes[axis]["slot"]] = options[i % len(options)]
                rows.append(render_resume(b, cues))
        out[fam] = rows
    return out


def best(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def run(n: int, repeat: int) -> dict:
    from sklearn.feature_extraction.text import CountVectorizer

    corpus = read_bundled_corpus()
    jobs = {fam: job_family(fam).description for fam in FAMILY_IDS}
    out = {"n": n, "repeat": repeat, "cpus": os.cpu_count(), "load_average_1min": round(os.getloadavg()[0], 2),
           "python": platform.python_version(), "modes": {}}
    t = time.perf_counter()
    engines = {m: LexicalScorer({"method": m, "tokens": TOKENS, "bm25": {"k1": 1.5, "b": 0.75}}, corpus)
               for m in ("bm25", "tfidf")}
    out["fit_s"] = round((time.perf_counter() - t) / 2, 3)
    bare = CountVectorizer(stop_words="english").fit(corpus)
    for mode in ("matrix", "distinct"):
        by_family = texts(n, mode)
        all_texts = [x for v in by_family.values() for x in v]
        words = np.mean([len(x.split()) for x in all_texts[:: max(1, len(all_texts) // 2000)]])
        lines = [ln for x in all_texts for ln in x.split("\n")]
        row = {"texts": len(all_texts), "distinct_texts": len(set(all_texts)), "lines": len(lines),
               "distinct_lines": len(set(lines)), "mean_words": round(float(words), 1),
               "bare_s": round(best(lambda: bare.transform(all_texts), repeat), 3)}
        for method, engine in engines.items():
            row[f"{method}_s"] = round(best(lambda: [engine.scores(jobs[f], by_family[f]) for f in FAMILY_IDS],
                                            repeat), 3)
            row[f"{method}_ratio"] = round(row[f"{method}_s"] / row["bare_s"], 3)
            row[f"{method}_per_100k_s"] = round(row[f"{method}_s"] * 100_000 / len(all_texts), 3)
        out["modes"][mode] = row
        print(mode, row, flush=True)
    return out


def markdown(res: dict) -> str:
    lines = [f"# Lexical kind: {res['n']:,} template résumés (issue 36 §5)", "",
             f"Wall time, best of {res['repeat']}, {res['cpus']} CPUs (load average {res['load_average_1min']} at "
             f"the start; the machine is shared), Python {res['python']}. `bare`: `CountVectorizer(stop_words="
             f"\"english\").transform` (fitted on the bundled corpus, no stemming); `bm25` and `tfidf`: "
             f"`LexicalScorer.scores` per job (tokenise, stem, count, score; each text against its own job's "
             f"description). Corpus statistics (read and fit, once per run): {res['fit_s']} s.", "",
             "| texts | résumés (distinct) | lines (distinct) | mean words | bare (s) | bm25 (s) | bm25 / bare | "
             "tfidf (s) | tfidf / bare |",
             "|---|---|---|---|---|---|---|---|---|"]
    for mode, r in res["modes"].items():
        lines.append(f"| {mode} | {r['texts']:,} ({r['distinct_texts']:,}) | {r['lines']:,} ({r['distinct_lines']:,}) | "
                     f"{r['mean_words']} | {r['bare_s']} | {r['bm25_s']} | "
                     f"{r['bm25_ratio']} | {r['tfidf_s']} | {r['tfidf_ratio']} |")
    lines += ["", "`matrix`: 10,000 base candidates x the ten variants of seed 000 Table 2 (what an audit scores); "
              "`distinct`: 100,000 distinct base candidates, cue slots empty. The adapter tokenises each distinct "
              "line once (`compiler.systems.lexical.term_counts`): template résumés share most of their lines.",
              "", "Command: `PYTHONPATH=. python bench/bench_lexical.py`", ""]
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "lexical")
    args = ap.parse_args()
    res = run(args.n, args.repeat)
    args.out.with_suffix(".json").write_text(json.dumps(res, indent=1) + "\n")
    args.out.with_suffix(".md").write_text(markdown(res))
    print(markdown(res))


if __name__ == "__main__":
    main()
