"""Per-job flags on homogeneous jobs: how often ``metrics_by_job.csv`` flags a job that is no different (issue 39 §5).

Design (:class:`runtime.analysis.counterfactual_sim.CorrespondenceSim`): 20 jobs x 40 base candidates (20
matching), K = 10 / 10 / 20, the reference and one variant, no planted effect and no heterogeneity across
jobs (``effect_se = 0``, ``heterogeneity = 0``): every job shares the pooled truth, so a flag on a job row
(its interval excluding the pooled value, a FAIL against a pooled PASS or the reverse, an established side
opposite to the pooled one) is a false alarm. Issue 39's requirement: at most 5% + 2 MC SE of the job rows.

Counts, over ``--audits`` audits analysed one at a time with the methods version's defaults: flagged job rows
(all, per metric, per kind of flag); the MC SE of the share is the SD across audits of each audit's share /
√audits (job rows of one audit are not independent), beside the binomial one. Also, for ``score_delta`` (true
value 0 in every job), the share of ``ALL`` rows whose 95% prediction interval holds 0, and of job rows naming
a side (the evidence rule of the pooled rows).

    python bench/by_job_homogeneous.py --audits 200 --resamples 200     # ~10 minutes on 2 cores

Resumable: each audit's counts are appended to ``bench/results/by_job_homogeneous.jsonl``; a rerun skips the
audits already there. Writes ``bench/results/by_job_homogeneous.{json,md}``. Not part of CI
(``tests/test_by_job.py::test_homogeneous_jobs_are_rarely_flagged`` runs 2 audits).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from compiler import catalog  # noqa: E402
from compiler.methods import METHODS_VERSION  # noqa: E402
from runtime import seeding  # noqa: E402
from runtime.analysis import analyse  # noqa: E402
from runtime.analysis.by_job import ALL_JOBS  # noqa: E402
from runtime.analysis.counterfactual_sim import SCORE_RANGE, CorrespondenceSim  # noqa: E402
from runtime.analysis.direction import NO_DIRECTION  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"
K = {"counterfactual": 10, "group": 10, "merit": 20}
SEED = 3902
KINDS = ("interval excludes", "crosses threshold", "opposite sign")


def one_audit(index: int, resamples: int) -> dict:
    sim = CorrespondenceSim(n_jobs=20, effect_se=0.0, heterogeneity=0.0, variants=("BASE", "V01"))
    audit = sim.frame(seeding.rng(SEED, "by_job_homogeneous", index), 1, first=index)
    b = analyse(audit, reference="BASE", k=K, alpha=0.05, n_bootstrap=resamples, seed=SEED + index,
                thresholds=catalog.default_thresholds(), score_range={"sim": SCORE_RANGE}, per_job=True).by_job
    jobs = b[(b["job_id"] != ALL_JOBS) & (b["variant"] != "BASE")]
    flag = jobs["flag"].fillna("").astype(str)
    pooled = b[(b["job_id"] == ALL_JOBS) & (b["variant"] != "BASE") & (b["metric"] == "score_delta")].iloc[0]
    sd = jobs[jobs["metric"] == "score_delta"]
    return {"audit": index, "rows": len(jobs), "flagged": int((flag != "").sum()),
            "kinds": {k: int(flag.str.contains(k).sum()) for k in KINDS},
            "by_metric": {m: [int((flag[jobs["metric"] == m] != "").sum()), int((jobs["metric"] == m).sum())]
                          for m in sorted(set(jobs["metric"]))},
            "pi_holds_0": bool(pooled["pi_low"] <= 0 <= pooled["pi_high"]),
            "named_score_delta": int((~sd["disadvantaged"].isin(["", NO_DIRECTION])).sum())}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--audits", type=int, default=200)
    ap.add_argument("--resamples", type=int, default=200)
    args = ap.parse_args()
    RESULTS.mkdir(exist_ok=True)
    log = RESULTS / "by_job_homogeneous.jsonl"
    done = {}
    if log.exists():
        for line in log.read_text().splitlines():
            r = json.loads(line)
            if r.get("resamples") == args.resamples:
                done[r["audit"]] = r
    start = time.time()
    with log.open("a") as fh:
        for i in range(args.audits):
            if i in done:
                continue
            r = {**one_audit(i, args.resamples), "resamples": args.resamples}
            fh.write(json.dumps(r) + "\n")
            fh.flush()
            done[i] = r
    audits = [done[i] for i in range(args.audits)]
    rows = sum(a["rows"] for a in audits)
    flagged = sum(a["flagged"] for a in audits)
    share = flagged / rows
    per_audit = np.array([a["flagged"] / a["rows"] for a in audits])
    mc_se = float(per_audit.std(ddof=1) / math.sqrt(len(audits)))
    mc_se_binomial = math.sqrt(0.05 * 0.95 / rows)
    limit = 0.05 + 2 * mc_se
    by_metric: dict[str, list[int]] = {}
    for a in audits:
        for m, (f, n) in a["by_metric"].items():
            d = by_metric.setdefault(m, [0, 0])
            d[0], d[1] = d[0] + f, d[1] + n
    out = {"methods_version": METHODS_VERSION, "audits": len(audits), "resamples": args.resamples,
           "job_rows": rows, "flagged": flagged, "share": share, "mc_se_between_audits": mc_se,
           "mc_se_binomial": mc_se_binomial, "limit": limit, "passes": share <= limit,
           "kinds": {k: sum(a["kinds"][k] for a in audits) / rows for k in KINDS},
           "by_metric": {m: f / n for m, (f, n) in by_metric.items()},
           "pi_holds_0": float(np.mean([a["pi_holds_0"] for a in audits])),
           "named_score_delta_per_audit": float(np.mean([a["named_score_delta"] for a in audits])),
           "seconds_this_run": round(time.time() - start, 1)}
    (RESULTS / "by_job_homogeneous.json").write_text(json.dumps(out, indent=1) + "\n")
    lines = [f"# Per-job flags on {len(audits)} homogeneous audits (methods version {METHODS_VERSION})", "",
             "20 jobs x 40 base candidates, one variant, no effect, no heterogeneity; 10 metrics x 20 jobs = "
             f"200 job rows per audit; {args.resamples} resamples; `python bench/by_job_homogeneous.py "
             f"--audits {len(audits)} --resamples {args.resamples}`.", "",
             f"Flagged job rows: {flagged} of {rows} = {share:.2%} (MC SE {mc_se:.2%} between audits, "
             f"{mc_se_binomial:.2%} binomial); limit 5% + 2 MC SE = {limit:.2%}: "
             f"{'passes' if out['passes'] else 'FAILS'}.", "",
             "| flag | share of job rows |", "|---|---|"]
    lines += [f"| {k} | {v:.2%} |" for k, v in out["kinds"].items()]
    lines += ["", "| metric | flagged |", "|---|---|"]
    lines += [f"| {m} | {out['by_metric'][m]:.2%} |" for m in catalog.METRICS if m in out["by_metric"]]
    lines += ["", f"Score delta: the ALL row's 95% prediction interval holds the true 0 in {out['pi_holds_0']:.1%} "
              f"of audits; job rows naming a side: {out['named_score_delta_per_audit']:.3f} per audit (of 20)."]
    (RESULTS / "by_job_homogeneous.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
