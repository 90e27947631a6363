"""Do embedding bytes depend on torch's thread count? (issue 40 §4, "Measure first").

Copies ``specs/example.yaml`` (and its job files) into a temporary folder, compiles it, generates its résumés
(the pipeline's generate stage, no scoring) and takes the plan's first ``--batches`` score batches of the
embedding system (:func:`runtime.pipeline.score.score_batches`: 6 base candidates x 10 variants each, in plan
order, across the first job). Then, for each T of ``--threads`` (default 1, 2, 4), a **fresh process** pins
``torch.set_num_threads(T)`` through ``execution.torch_threads`` (the system's ``setup()``), scores those
batches with ``EmbeddingSystem.score_batch`` and records:

- ``sha256_cosines``: sha256 of every batch's cosine frame (Parquet bytes, :func:`runtime.store.frame_bytes`,
  the bytes the task store keeps), in plan order;
- ``sha256_embeddings``: sha256 of the float32 embedding bytes of each batch (one encoder call per batch);
- ``seconds``: wall time of the scoring (model loaded before the clock starts).

``same_bytes`` is true when every T gave the same two digests; ``max_abs_cosine_diff`` is the largest
|cosine(T) - cosine(1)|. Each T is measured ``--repeat`` times (ABAB order: 1, 2, 4, 1, 2, 4, ...) and a T
whose repeats disagree is marked ``"deterministic": false``.

Run: ``.venv/bin/python bench/bench_torch_threads.py [--batches 8] [--threads 1 2 4] [--repeat 2]
[--out bench/results/torch_threads.json]``. Times depend on the machine (2 shared cores here: T = 4
oversubscribes them); the digests are the result.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
ENV = dict(os.environ, LITELLM_LOCAL_MODEL_COST_MAP="True", HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1",
           PYTHONHASHSEED="0", PYTHONPATH=str(REPO))


def prepare(folder: Path, n_batches: int) -> Path:
    """The example's résumés of the first ``n_batches`` plan batches and its job texts, pickled in ``folder``."""
    import pickle

    from runtime.designs import design_for
    from runtime.pipeline.generate import generate, job_texts
    from runtime.pipeline.score import score_batches
    from runtime.pipeline.start import open_run
    from runtime.progress import Progress
    from runtime.run.context import RunContext
    from runtime.store import TaskStore

    shutil.copytree(REPO / "specs" / "jobs", folder / "jobs")
    shutil.copy(REPO / "specs" / "example.yaml", folder / "example.yaml")
    proc = subprocess.run([sys.executable, "-c", "from runtime.cli import main; main()", "compile", "example.yaml"],
                          cwd=folder, env=ENV, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    locked = open_run(folder / "example.yaml", store=folder / "store", folder=False, stage="resolve")

    from runtime.export import _NoFolder  # the vendor export's run folder that writes nothing

    with Progress(quiet=True) as progress:
        ctx = RunContext(compiled=locked.compiled, lock=locked.lock, folder=_NoFolder(folder / "scratch"), timings={},
                         progress=progress)
        ctx.store = TaskStore(folder / "store")
        ctx.jobs = job_texts(locked.compiled)
        generate(ctx, design_for(locked.compiled.resolved))
        system = next(s for s in locked.compiled.resolved["systems"] if s["kind"] == "embedding")
        batches = score_batches(ctx, system["id"], ctx.candidates)[:n_batches]
    keep = set((b.job_id, cv) for b in batches for cv in b.cv_ids)
    rows = ctx.candidates[[k in keep for k in zip(ctx.candidates["job_id"], ctx.candidates["cv_id"])]]
    data = folder / "batches.pkl"
    data.write_bytes(pickle.dumps({"system": system, "batches": batches, "resumes": rows.reset_index(drop=True),
                                   "jobs": ctx.jobs, "seed": ctx.seed, "folder": str(folder)}))
    return data


def measure(data: Path, threads: int) -> dict:
    """In this process: pin ``threads``, score the batches, return the digests and the time."""
    import pickle

    import numpy as np

    from runtime.pipeline.engine import LocalEngine
    from runtime.store import frame_bytes
    from runtime.systems import ScoreRequest, adapter_for
    from runtime.systems import embedding as emb

    d = pickle.loads(data.read_bytes())
    request = ScoreRequest(jobs=d["jobs"], resumes=d["resumes"], variants=[], spec_folder=Path(d["folder"]),
                           seed=d["seed"], batches=d["batches"], torch_threads=threads)
    adapter = adapter_for("embedding")(d["system"])
    adapter.setup(request)
    embeddings = []
    real = emb.encode_batch

    def keep(model, texts):
        out = real(model, texts)
        embeddings.append(np.ascontiguousarray(out, dtype=np.float32).tobytes())
        return out

    emb.encode_batch = keep
    inputs = adapter.batch_inputs()
    t0 = time.perf_counter()
    frames = [frame for _, frame in LocalEngine().map_batches(adapter, inputs)]
    seconds = time.perf_counter() - t0
    import torch

    return {"threads": threads, "torch_get_num_threads": torch.get_num_threads(), "seconds": round(seconds, 3),
            "batches": len(frames), "texts": int(sum(f.shape[0] for f in frames)),
            "sha256_cosines": hashlib.sha256(b"".join(frame_bytes(f) for f in frames)).hexdigest(),
            "sha256_embeddings": hashlib.sha256(b"".join(embeddings)).hexdigest(),
            "cosines": [float(x) for f in frames for x in f["cosine"]]}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--batches", type=int, default=8)
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2, 4])
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--out", type=Path, default=REPO / "bench" / "results" / "torch_threads.json")
    ap.add_argument("--measure", nargs=2, metavar=("DATA", "T"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.measure:
        print(json.dumps(measure(Path(args.measure[0]), int(args.measure[1]))))
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        data = prepare(Path(tmp), args.batches)
        runs: dict[int, list[dict]] = {t: [] for t in args.threads}
        for _ in range(args.repeat):
            for t in args.threads:
                proc = subprocess.run([sys.executable, __file__, "--measure", str(data), str(t)], env=ENV,
                                      capture_output=True, text=True)
                assert proc.returncode == 0, proc.stderr[-3000:]
                runs[t].append(json.loads(proc.stdout.strip().splitlines()[-1]))
                print(f"T={t}: {runs[t][-1]['seconds']:.2f} s {runs[t][-1]['sha256_cosines'][:16]}", file=sys.stderr)
    import numpy as np

    first = np.array(runs[args.threads[0]][0]["cosines"])
    per_t = {}
    for t, rs in runs.items():
        rec = {k: rs[0][k] for k in ("torch_get_num_threads", "batches", "texts", "sha256_cosines", "sha256_embeddings")}
        rec["seconds"] = [r["seconds"] for r in rs]
        rec["seconds_median"] = float(np.median(rec["seconds"]))
        if len({(r["sha256_cosines"], r["sha256_embeddings"]) for r in rs}) > 1:
            rec["deterministic"] = False
        rec["max_abs_cosine_diff_vs_first"] = float(np.max(np.abs(np.array(rs[0]["cosines"]) - first)))
        per_t[str(t)] = rec
    digests = {(r["sha256_cosines"], r["sha256_embeddings"]) for r in per_t.values()}
    import torch

    out = {"spec": "specs/example.yaml", "batches": args.batches, "repeat": args.repeat, "threads": per_t,
           "same_bytes": len(digests) == 1 and all(r.get("deterministic", True) for r in per_t.values()),
           "max_abs_cosine_diff": max(r["max_abs_cosine_diff_vs_first"] for r in per_t.values()),
           "machine": {"cpus": os.cpu_count(), "processor": platform.processor() or platform.machine(),
                       "python": platform.python_version(), "torch": torch.__version__,
                       "torch_default_threads": torch.get_num_threads()},
           "command": "python bench/bench_torch_threads.py " + " ".join(
               f"--{k} {' '.join(map(str, v)) if isinstance(v, list) else v}" for k, v in
               (("batches", args.batches), ("threads", args.threads), ("repeat", args.repeat)))}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(out, indent=2) + "\n")
    print(json.dumps({k: v for k, v in out.items() if k != "threads"}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
