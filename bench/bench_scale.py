"""Ray engine against the local engine (issue 40 §6), ABAB, checkpointed, and a throughput and cost model for N nodes.

Arms, each ``audit execute`` in a fresh task store of its own (a subprocess, ``--unsigned``):

  L.  ``--engine local`` (this process, one batch after the other);
  R2. ``--engine ray --workers 2`` (a private Ray instance with 2 CPUs, started and shut down by the run);
  R1. ``--engine ray --workers 1`` (throughput with 1 worker).

L and R2 alternate (L R2 L R2 ...: ``--rounds`` pairs, at least 2; medians); R1 runs once after them. Every run's
result CSVs must be byte-identical to the first local run's (the script stops otherwise). Per run it keeps the wall
time, the score stage's seconds (``run.json`` ``timings.score``: model load, dispatch and encoding), the batches
and the texts encoded. The model load is timed apart (``load_model`` in a fresh process, median of 3).

Goal: R2 / L <= 1.10 on the end-to-end wall time (the issue's) and on the score stage; the figures say whether it is
met here. The model (assumptions beside it in the output): a node of ``c`` CPUs runs ``c`` workers; a worker scores a
batch in ``t_b`` (local score stage minus one model load, over the batches), plus ``d`` dispatch overhead per batch
(R1's score stage minus L's, over the batches: both run the batches one after the other); a run pays the model load
once per worker (in parallel) plus a fixed start ``s`` (R2's wall minus L's wall, what is left of Ray's start after the
parallel speed-up is credited). Throughput of N nodes: ``N c / (t_b + d)`` batches per second; the wall time of a
run of ``B`` batches ``s + t_load + B (t_b + d) / (N c)``; its cost ``N`` node-hours times the price per node-hour.

The cut: ``specs/paper-scale.yaml`` (5 jobs x 100 base candidates x 10 treatments) cut to ``--jobs`` jobs and
``--base`` base candidates per job (half of them matching), so that the whole bench finishes in about 10 minutes
on 2 shared cores; the full spec is ``--jobs 5 --base 100``.

Checkpoint: ``bench/results/scale.checkpoint.json`` keeps every finished run; a rerun with the same cut continues
where it stopped (``--fresh`` starts over). Results: ``bench/results/scale.json`` and ``scale.md``.

Usage: ``python bench/bench_scale.py [--jobs 2] [--base 20] [--rounds 2] [--price 0.10] [--fresh]``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
RESULTS = REPO / "bench" / "results"
CHECKPOINT = RESULTS / "scale.checkpoint.json"
RESULT_CSVS = ("metrics.csv", "paired.csv", "effects.csv", "metrics_by_job.csv", "risk.csv")
JOB_LINES = ("  - {id: software-developer,", "  - {id: registered-nurse,", "  - {id: accountant,",
             "  - {id: marketing-specialist,")


def cut_spec(jobs: int, base: int) -> str:
    """specs/paper-scale.yaml with its first ``jobs`` jobs and ``base`` base candidates per job (half matching);
    ``analysis.k`` kept below the pool."""
    text = (REPO / "specs" / "paper-scale.yaml").read_text(encoding="utf-8")
    drop = JOB_LINES[jobs - 1:] if jobs < 5 else ()
    lines = [ln for ln in text.splitlines(keepends=True) if not ln.startswith(drop)] if drop else text.splitlines(True)
    text = "".join(lines)
    old = "candidates: {generator: template, base_per_job: 100, matching_per_job: 50}"
    assert text.count(old) == 1, "specs/paper-scale.yaml changed"
    text = text.replace(old, f"candidates: {{generator: template, base_per_job: {base}, matching_per_job: {base // 2}}}")
    import re

    k = min(10, base // 2)
    text = re.sub(r"k: \{counterfactual: \d+, group: \d+, merit: \d+\}",
                  f"k: {{counterfactual: {k}, group: {k}, merit: {min(15, base // 2)}}}", text)
    return text


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONHASHSEED="0")
    return subprocess.run([sys.executable, "-c", "from runtime.cli import main; main()", *args], cwd=cwd, env=env,
                          capture_output=True, text=True)


def one_run(root: Path, name: str, engine_args: list[str]) -> dict:
    t0 = time.perf_counter()
    proc = cli("execute", "spec.yaml", "--quiet", "--unsigned", "--store", f"store-{name}", "--out", f"out-{name}",
               *engine_args, cwd=root)
    wall = time.perf_counter() - t0
    if proc.returncode not in (0, 5):
        raise SystemExit(f"{name}: exit {proc.returncode}\n{proc.stderr[-3000:]}")
    (run,) = [p for p in (root / f"out-{name}").glob("*/*") if p.is_dir()]
    record = json.loads((run / "run.json").read_text())
    info = next(iter(record["systems_info"].values()))
    return {"name": name, "args": engine_args, "wall_s": round(wall, 3), "score_s": record["timings"]["score"],
            "timings": record["timings"], "batches": info["score_batches"], "encoded_texts": info["encoded_texts"],
            "engine": record["engine"], "exit_code": proc.returncode,
            "digests": {f: hashlib.sha256((run / f).read_bytes()).hexdigest() for f in RESULT_CSVS
                        if (run / f).exists()}}  # paper-scale has no effects family: no effects.csv


def model_load_s() -> float:
    code = ("import time; t = time.perf_counter(); from runtime.systems.embedding import load_model; "
            "from compiler.systems import packaged_model_dir; load_model(packaged_model_dir()); "
            "print(time.perf_counter() - t)")
    return float(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                check=True).stdout.split()[-1])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--base", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=2, help="L R2 pairs (>= 2)")
    ap.add_argument("--price", type=float, default=0.10, help="price of one 2-CPU node-hour, USD (an assumption)")
    ap.add_argument("--fresh", action="store_true")
    args = ap.parse_args()
    cut = {"jobs": args.jobs, "base": args.base, "rounds": max(2, args.rounds)}
    state = json.loads(CHECKPOINT.read_text()) if CHECKPOINT.exists() and not args.fresh else {}
    if state.get("cut") != cut:
        state = {"cut": cut, "runs": {}}
    work = Path(tempfile.mkdtemp(prefix="bench-scale-"))
    try:
        shutil.copytree(REPO / "specs" / "jobs", work / "jobs")
        (work / "spec.yaml").write_text(cut_spec(args.jobs, args.base), encoding="utf-8")
        proc = cli("compile", "spec.yaml", cwd=work)
        if proc.returncode:
            raise SystemExit(proc.stderr)
        order = [n for i in range(cut["rounds"]) for n in (f"L{i}", f"R2_{i}")] + ["R1"]
        arms = {"L": [], "R2": ["--engine", "ray", "--workers", "2"], "R1": ["--engine", "ray", "--workers", "1"]}
        for name in order:
            if name in state["runs"]:
                continue
            arm = "L" if name.startswith("L") else ("R2" if name.startswith("R2") else "R1")
            print(f"run {name} {arms[arm]}", flush=True)
            state["runs"][name] = one_run(work, name, arms[arm])
            CHECKPOINT.write_text(json.dumps(state, indent=1) + "\n")
        if "model_load_s" not in state:
            state["model_load_s"] = statistics.median(model_load_s() for _ in range(3))
            CHECKPOINT.write_text(json.dumps(state, indent=1) + "\n")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    runs = state["runs"]
    first = runs["L0"]["digests"]
    identical = {n: r["digests"] == first for n, r in runs.items()}
    if not all(identical.values()):
        raise SystemExit(f"result bytes differ between runs: {identical}")
    med = lambda key, arm: statistics.median(r[key] for n, r in runs.items() if n.startswith(arm))  # noqa: E731
    L_wall, R2_wall, L_score, R2_score = med("wall_s", "L"), med("wall_s", "R2"), med("score_s", "L"), med("score_s", "R2")
    R1 = runs["R1"]
    B = runs["L0"]["batches"] + 0  # the variant batches; placebo batches are counted by tasks below
    tasks_scored = runs["L0"]["engine"]["tasks"] - args.jobs  # score batches (variants + placebo), all systems
    t_load = state["model_load_s"]
    t_b = max(L_score - t_load, 1e-9) / tasks_scored
    d = (R1["score_s"] - L_score) / tasks_scored
    s = R2_wall - L_wall - (R2_score - L_score)
    model = {"t_b_s": round(t_b, 3), "dispatch_s_per_batch": round(d, 3), "model_load_s": round(t_load, 3),
             "fixed_start_s": round(s, 3), "cpus_per_node": 2, "price_per_node_hour_usd": args.price}
    notes = []
    if d < 0:
        notes.append(f"the dispatch overhead came out negative ({d:.2f} s per batch): R1's one worker (1 torch "
                     "thread) encoded faster than the local engine (torch's 2 threads on 2 shared cores), so the "
                     "difference measures torch threads under contention, not Ray's dispatch; the projection takes "
                     "d = 0 and t_b from the local arm (pessimistic for a 1-thread worker)")
    full_batches = 5 * -(-100 // (64 // 10))  # paper-scale: 5 jobs x ceil(100 / 6) batches (no placebo there)
    projection = []
    for nodes in (1, 2, 4, 8, 16, 32):
        thr = nodes * 2 / (t_b + max(d, 0.0))
        for label, batches in (("paper-scale (5 x 100 x 10)", full_batches),
                               ("100 jobs x 1,000 x 20", 100 * -(-1000 // (64 // 21)))):
            wall = s + t_load + batches / thr
            projection.append({"nodes": nodes, "run": label, "batches": batches, "batches_per_s": round(thr, 3),
                               "wall_h": round(wall / 3600, 3), "cost_usd": round(nodes * wall / 3600 * args.price, 2)})
    out = {
        "bench": "bench/bench_scale.py", "issue": 40, "cut": cut, "machine": {"cpus": os.cpu_count(),
                                                                            "python": platform.python_version()},
        "identical_result_csvs": identical,
        "median": {"local_wall_s": L_wall, "ray2_wall_s": R2_wall, "local_score_s": L_score, "ray2_score_s": R2_score,
                   "ray1_wall_s": R1["wall_s"], "ray1_score_s": R1["score_s"]},
        "ratio_ray2_over_local": {"wall": round(R2_wall / L_wall, 3), "score": round(R2_score / L_score, 3)},
        "goal_wall_ratio_le_1_10": R2_wall / L_wall <= 1.10,
        "throughput_texts_per_s": {"local": round(runs["L0"]["encoded_texts"] / L_score, 2),
                                   "ray_1_worker": round(R1["encoded_texts"] / R1["score_s"], 2),
                                   "ray_2_workers": round(runs["R2_0"]["encoded_texts"] / R2_score, 2)},
        "variant_batches": B, "score_batches": tasks_scored,
        "model": model,
        "assumptions": [
            "a node has 2 CPUs and runs 2 workers (1 CPU each, execution.workers = 2 per node); the driver holds none",
            "per-batch time t_b and dispatch overhead d as measured here (2 shared cores); batches of 6 base "
            "candidates x 10 variants (64 résumés, compiler.methods.SCORE_BATCH_RESUMES)",
            "the projected runs have no negative control (paper-scale has none); the 100 x 1,000 x 20 run has "
            "batches of 3 base candidates x 21 résumés, costed at the measured t_b per batch (64 résumés: an "
            "upper bound for 63)",
            "each worker loads the model once, in parallel with the others (t_load once on the wall clock); the "
            "driver loads it too, for the truncation diagnostics",
            "the task store is on storage every node mounts; its writes are not the bottleneck",
            "generation (one task per job), ranking and the families are not in the model: they run on the driver "
            "(the families) or are small next to encoding",
            "price: USD per 2-CPU node-hour, an assumption (--price), not a quote",
        ],
        "notes": notes,
        "projection": projection,
        "runs": runs,
    }
    (RESULTS / "scale.json").write_text(json.dumps(out, indent=1) + "\n")
    md = [f"# bench_scale (issue 40): Ray with 2 CPUs / local, cut {cut}", "",
          f"- result CSVs byte-identical in every run: {all(identical.values())} ({len(runs)} runs)",
          f"- median wall: local {L_wall:.1f} s, ray 2 workers {R2_wall:.1f} s: ratio {R2_wall / L_wall:.3f} "
          f"(goal <= 1.10: {'met' if R2_wall / L_wall <= 1.10 else 'not met'})",
          f"- median score stage: local {L_score:.1f} s, ray 2 workers {R2_score:.1f} s: ratio {R2_score / L_score:.3f}",
          f"- ray 1 worker: wall {R1['wall_s']:.1f} s, score stage {R1['score_s']:.1f} s",
          f"- throughput (texts encoded / score-stage second): {out['throughput_texts_per_s']}",
          f"- model: {model}", "", "| nodes | run | batches/s | wall (h) | cost (USD) |", "|---|---|---|---|---|"]
    md += [f"| {p['nodes']} | {p['run']} | {p['batches_per_s']} | {p['wall_h']} | {p['cost_usd']} |" for p in projection]
    md += ["", "Assumptions:", *[f"- {a}" for a in out["assumptions"]], ""]
    md += ["Notes:", *[f"- {n}" for n in notes], ""] if notes else []
    md += [f"Machine: {os.cpu_count()} cores shared with other users (load average about 10 during the runs); R1 ran "
           "once, after the ABAB pairs. Seconds are indicative; the ratios and the byte identity are the result.", ""]
    (RESULTS / "scale.md").write_text("\n".join(md))
    print("\n".join(md))
    return 0


if __name__ == "__main__":
    sys.exit(main())
