"""Random kills and warm re-runs on the full example spec (issue 11), one run of this script.

1. **Cold and warm**: copies ``specs/example.yaml`` (and its job files) into a fresh folder with an
   empty task store, runs ``audit execute`` once (cold: generate, encode 2,005 texts, analyse, report)
   and again (warm: generation and scores taken from the store; no encode), and reports both wall
   times and the ratio warm / cold. The two runs' result files must be byte-identical.
2. **Random kills**: ``--kills`` times (default 10), in a fresh folder with an empty store each time,
   starts ``audit execute``, sends SIGKILL at a moment drawn uniformly from (0, cold time) by a
   ``random.Random`` seeded with ``--seed`` (so the moments are reproducible), checks that
   ``run.json`` parses and that ``audit status`` says interrupted (or that the run had finished),
   then runs ``audit execute --resume RUN_DIR`` and compares ``metrics.csv``, ``paired.csv`` and
   ``effects.csv`` with the cold run's bytes.

Times depend on the machine (2 shared cores here); the byte comparisons and the ratio are the result.
Run: ``.venv/bin/python bench/bench_resume.py [--kills 10] [--seed 20261201] [--out bench/results/resume_kills.json]``
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
RESULTS = ("metrics.csv", "paired.csv", "effects.csv")
ENV = dict(os.environ, LITELLM_LOCAL_MODEL_COST_MAP="True", HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1",
           PYTHONHASHSEED="0", PYTHONPATH=str(REPO))


def cli(*args: str, cwd: Path) -> list[str]:
    return [sys.executable, "-c", "from runtime.cli import main; main()", *args]


def fresh(root: Path, name: str) -> Path:
    folder = root / name
    (folder / "jobs").mkdir(parents=True)
    shutil.copy(REPO / "specs" / "example.yaml", folder / "example.yaml")
    for f in (REPO / "specs" / "jobs").glob("*.md"):
        shutil.copy(f, folder / "jobs" / f.name)
    subprocess.run(cli("compile", "example.yaml", cwd=folder), cwd=folder, env=ENV, check=True,
                   capture_output=True)
    return folder


def run_dirs(folder: Path) -> list[Path]:
    return sorted(p for p in (folder / "out").glob("*/*") if p.is_dir())


def execute(folder: Path, *extra: str) -> tuple[float, subprocess.CompletedProcess]:
    t0 = time.perf_counter()
    proc = subprocess.run(cli("execute", "example.yaml", "--quiet", "--unsigned", "--out", "out", *extra, cwd=folder),
                          cwd=folder, env=ENV, capture_output=True, text=True)
    return time.perf_counter() - t0, proc


def same(a: Path, b: Path) -> dict[str, bool]:
    return {n: (a / n).read_bytes() == (b / n).read_bytes() for n in RESULTS}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--kills", type=int, default=10)
    ap.add_argument("--seed", type=int, default=20261201)
    ap.add_argument("--out", type=Path, default=REPO / "bench" / "results" / "resume_kills.json")
    args = ap.parse_args()
    root = Path(tempfile.mkdtemp(prefix="bench-resume-"))
    report: dict = {"spec": "specs/example.yaml", "seed": args.seed, "kills": []}
    try:
        base = fresh(root, "cold")
        cold, proc = execute(base)
        assert proc.returncode == 0, proc.stderr
        warm, proc = execute(base)
        assert proc.returncode == 0, proc.stderr
        ref, again = run_dirs(base)
        run = json.loads((again / "run.json").read_text())
        report.update(cold_s=round(cold, 1), warm_s=round(warm, 1), warm_over_cold=round(warm / cold, 3),
                      warm_identical=same(ref, again), warm_reused=run["reused_tasks"],
                      warm_computed=run["computed_tasks"])
        print(f"cold {cold:.1f} s, warm {warm:.1f} s, warm/cold {warm / cold:.3f}, "
              f"identical {report['warm_identical']}", flush=True)
        rng = random.Random(args.seed)
        for i in range(args.kills):
            at = rng.uniform(0.0, cold)
            folder = fresh(root, f"kill{i}")
            p = subprocess.Popen(cli("execute", "example.yaml", "--quiet", "--unsigned", "--out", "out", cwd=folder), cwd=folder,
                                 env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            try:
                p.wait(timeout=at)
                killed = False
            except subprocess.TimeoutExpired:
                p.send_signal(signal.SIGKILL)
                p.wait()
                killed = True
            dirs = run_dirs(folder)
            entry = {"kill_at_s": round(at, 1), "killed": killed}
            if not dirs:  # killed before the run folder existed (while compiling): a plain re-run
                t, proc = execute(folder)
                entry.update(stage="before the run folder", resumed_s=round(t, 1), rc=proc.returncode)
                dirs = run_dirs(folder)
            else:
                (d,) = dirs
                rec = json.loads((d / "run.json").read_text())  # must parse
                st = subprocess.run(cli("status", str(d), cwd=folder), cwd=folder, env=ENV, capture_output=True,
                                    text=True)
                entry.update(stage=rec.get("stage"), status=st.stdout.split(": ", 1)[-1].split(",")[0].strip())
                if entry["status"].startswith("done"):
                    entry["resumed_s"], entry["rc"] = 0.0, 0
                else:
                    t, proc = execute(folder, "--resume", str(d))
                    entry.update(resumed_s=round(t, 1), rc=proc.returncode)
            entry["identical"] = same(ref, run_dirs(folder)[0]) if entry["rc"] == 0 else None
            report["kills"].append(entry)
            print(json.dumps(entry), flush=True)
        report["all_identical"] = all(e["identical"] and all(e["identical"].values()) for e in report["kills"])
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(report, indent=2) + "\n")
        print(f"all identical: {report['all_identical']}; written {args.out}")
        return 0 if report["all_identical"] and all(report["warm_identical"].values()) else 1
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
