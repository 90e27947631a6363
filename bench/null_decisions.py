"""Selection decisions under a planted null and under a planted demotion (issue 30 §2).

Design (:class:`runtime.analysis.counterfactual_sim.CorrespondenceSim`): jobs x 40 base candidates (20
matching), K = 10 / 10 / 20 (swap-in), the reference and two categories; the first category carries the
planted effect, the second none. Settings: 5 and 20 jobs, with and without ties (whole points), a planted
null (every variant résumé exchangeable with its reference) and, at 20 jobs, a demotion of the first
category to an expected selection ratio of 0.6 (the shift is found by bisection on a Monte Carlo of the
swap-in selection, :func:`expected_ratio`). Each audit is analysed alone with the methods version's
defaults. Counted per setting, for ``flip_rate``, ``retention_rate``, ``impact_ratio`` and
``selection_ratio`` of the categories without a planted effect (null) or of the demoted one: the share of
rows PASS, INCONCLUSIVE, FAIL (interval statuses, ``status``) and FAIL on seed 000's point-estimate
statuses (``status_seed000``, what methods 6 printed).

Issue 30's criteria: under the null each of the four rows PASS or INCONCLUSIVE in >= 95% of audits; at 20
jobs the demotion FAILs ``selection_ratio`` in >= 80%.

    python bench/null_decisions.py --audits 1000 --resamples 200     # checkpointed; about 2 h on 2 cores

Checkpoints after every batch in ``bench/results/null_decisions/`` (a run resumes where it stopped);
writes ``bench/results/null_decisions.{json,md}``. Not part of CI.
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
from runtime.analysis.counterfactual_sim import SCORE_RANGE, CorrespondenceSim  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"
CHECKPOINTS = RESULTS / "null_decisions"
K = {"counterfactual": 10, "group": 10, "merit": 20}
SEED = 2030
VARIANTS = ("BASE", "V01", "V02")
ROWS = ("flip_rate", "retention_rate", "impact_ratio", "selection_ratio")
BATCH = 25
TARGET_RATIO = 0.6


def expected_ratio(effect_se: float, n_jobs: int, ties: bool, audits: int = 400) -> float:
    """Monte Carlo mean of the swap-in selection ratio at top-10 of the first category (ties tie-averaged)."""
    sim = CorrespondenceSim(n_jobs=n_jobs, effect_se=effect_se, ties=ties, variants=VARIANTS)
    score, _ = sim.scores(seeding.rng(SEED, "null_decisions", "calibrate", n_jobs, ties), audits)
    ref, var = score[:, 0], score[:, 1]                        # (audits, jobs, n)
    k = K["group"]
    n = ref.shape[-1]
    others = ref[..., None, :]                                 # the pool of reference scores
    mine = var[..., :, None]
    self_mask = np.eye(n, dtype=bool)
    above = np.where(self_mask, False, others > mine).sum(-1)
    tied = np.where(self_mask, False, others == mine).sum(-1)
    p_var = np.clip((k - above) / (tied + 1), 0.0, 1.0).sum(axis=(-1, -2))
    return float(np.mean(p_var / (k * n_jobs)))


def demotion_for(ratio: float, n_jobs: int, ties: bool) -> float:
    """``effect_se`` whose expected selection ratio is ``ratio`` (bisection)."""
    lo, hi = 0.0, 60.0
    for _ in range(30):
        mid = (lo + hi) / 2
        if expected_ratio(mid, n_jobs, ties) > ratio:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def one_batch(sim: CorrespondenceSim, batch: int, resamples: int, planted: bool) -> dict:
    rng = seeding.rng(SEED, "null_decisions", sim.n_jobs, sim.ties, round(sim.effect_se, 6), batch)
    frame = sim.frame(rng, BATCH, first=batch * BATCH)
    counts = {m: {"PASS": 0, "INCONCLUSIVE": 0, "FAIL": 0, "N/A": 0, "FAIL_seed000": 0, "rows": 0} for m in ROWS}
    watch = ["V01"] if planted else ["V01", "V02"]
    for _, audit in frame.groupby("condition", sort=True):
        m = analyse(audit, reference="BASE", k=K, alpha=0.05, n_bootstrap=resamples, seed=SEED,
                    thresholds=catalog.default_thresholds(), score_range={"sim": SCORE_RANGE}).metrics
        m = m[m["variant"].isin(watch) & m["metric"].isin(ROWS)]
        for r in m.itertuples():
            c = counts[r.metric]
            c[r.status] += 1
            c["FAIL_seed000"] += r.status_seed000 == "FAIL"
            c["rows"] += 1
    return counts


def run_setting(n_jobs: int, ties: bool, effect_se: float, audits: int, resamples: int) -> dict:
    sim = CorrespondenceSim(n_jobs=n_jobs, effect_se=effect_se, ties=ties, variants=VARIANTS)
    planted = effect_se > 0
    name = f"jobs{n_jobs}-{'ties' if ties else 'float'}-{'demoted' if planted else 'null'}"
    CHECKPOINTS.mkdir(parents=True, exist_ok=True)
    path = CHECKPOINTS / f"{name}-r{resamples}.json"
    state = json.loads(path.read_text()) if path.exists() else {"batches": {}}
    for batch in range(math.ceil(audits / BATCH)):
        if str(batch) in state["batches"]:
            continue
        start = time.time()
        state["batches"][str(batch)] = one_batch(sim, batch, resamples, planted)
        path.write_text(json.dumps(state, indent=1))
        print(f"{name}: batch {batch + 1}/{math.ceil(audits / BATCH)} in {time.time() - start:.0f} s", flush=True)
    total = {m: {k: sum(b[m][k] for b in list(state["batches"].values())[:math.ceil(audits / BATCH)])
                 for k in ("PASS", "INCONCLUSIVE", "FAIL", "N/A", "FAIL_seed000", "rows")} for m in ROWS}
    return {"setting": name, "n_jobs": n_jobs, "ties": ties, "effect_se": effect_se, "planted": planted,
            "audits": min(audits, BATCH * len(state["batches"])), "counts": total}


def _share(c: dict, *keys: str) -> float:
    return sum(c[k] for k in keys) / c["rows"] if c["rows"] else math.nan


def report(results: list[dict], args: argparse.Namespace, seconds: float) -> str:
    lines = [f"# Selection decisions under a planted null and a demotion (methods {METHODS_VERSION})", "",
             f"`python bench/null_decisions.py --audits {args.audits} --resamples {args.resamples}`, "
             f"{seconds / 60:.0f} min. Swap-in top-10 of 40 per job, 2 categories; null rows: both categories of a "
             "null audit; demoted rows: the demoted category. MC SE of a share p over r rows: sqrt(p(1-p)/r).", "",
             "| setting | audits | metric | rows | PASS | INCONCLUSIVE | FAIL | PASS or INCONCLUSIVE | seed 000 FAIL |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in results:
        for m in ROWS:
            c = r["counts"][m]
            lines.append(f"| {r['setting']} | {r['audits']} | {m} | {c['rows']} | {_share(c, 'PASS'):.3f} | "
                         f"{_share(c, 'INCONCLUSIVE'):.3f} | {_share(c, 'FAIL'):.3f} | "
                         f"{_share(c, 'PASS', 'INCONCLUSIVE'):.3f} | {_share(c, 'FAIL_seed000'):.3f} |")
    lines += ["", "Demotion: " + "; ".join(f"{r['setting']}: effect_se {r['effect_se']:.3f} (expected selection "
                                            f"ratio {TARGET_RATIO})" for r in results if r["planted"])]
    return "\n".join(lines) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--audits", type=int, default=1000)
    ap.add_argument("--resamples", type=int, default=200)
    ap.add_argument("--only", default="", help="run only settings whose name contains this")
    args = ap.parse_args()
    start = time.time()
    settings = [(jobs, ties, 0.0) for jobs in (5, 20) for ties in (False, True)]
    settings += [(20, ties, demotion_for(TARGET_RATIO, 20, ties)) for ties in (False, True)]
    results = []
    for jobs, ties, effect in settings:
        name = f"jobs{jobs}-{'ties' if ties else 'float'}-{'demoted' if effect else 'null'}"
        if args.only and args.only not in name:
            continue
        results.append(run_setting(jobs, ties, effect, args.audits, args.resamples))
    RESULTS.mkdir(exist_ok=True)
    suffix = f"_{args.only}" if args.only else ""
    (RESULTS / f"null_decisions{suffix}.json").write_text(json.dumps(
        {"methods_version": METHODS_VERSION, "audits": args.audits, "resamples": args.resamples,
         "results": results}, indent=1))
    (RESULTS / f"null_decisions{suffix}.md").write_text(report(results, args, time.time() - start))
    print(report(results, args, time.time() - start))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
