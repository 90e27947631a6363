"""Coverage of every interval in ``metrics.csv`` on simulated audits with known truth (issue 12).

Settings: 2, 5 and 20 jobs x ties / no ties x a planted demotion of 0, 1 and 3 standard errors
(:class:`runtime.analysis.counterfactual_sim.CorrespondenceSim`: 40 base candidates per job, 20
matching, BASE + V01 (demoted) + V02 (null), K = 10/10/20 as ``specs/example.yaml``). In each
setting the jobs are fixed and only the candidates are re-drawn, so the estimand of every interval
is the metric's expectation over candidates for those jobs. Its "truth" is the mean of the metric
over ``--truth`` independent audits (values only: one resample); the Monte Carlo SE of that truth is
reported next to the coverage. Each of ``--audits`` audits then runs :func:`runtime.analysis.analyse`
exactly as ``audit execute`` does (``--resamples`` = 499 by default, ``--ranking`` swap_in by
default), and an interval covers when ``ci_low <= truth <= ci_high``. Every interval is the one ``metrics.csv``
shows: since methods 11 the logit / log-transformed intervals of retention, the impact ratio and the selection
ratio (issue 39 §2); each chunk records the interval methods it ran (``intervals``) and a chunk of other methods
is run again rather than mixed in.

Work is cut into chunks of ``--chunk`` audits, each one seeded by (setting, phase, chunk) and saved
as soon as it ends under ``bench/results/coverage_counterfactual/<setting>/`` (one JSON per chunk), so
an interrupted run resumes where it stopped and gives the same table. ``--procs`` runs chunks in
parallel (the default 2 uses both cores of the CI machine).

    .venv/bin/python bench/coverage_counterfactual.py [--audits 1000] [--truth 2000] [--resamples 499]
        [--jobs 2 5 20] [--effects 0 1 3] [--ties both] [--procs 2] [--table-only] [--publish]

Output: ``bench/results/coverage_counterfactual.md`` (the table) and ``.json`` (every row:
setting, metric, variant, truth with its MC SE, coverage with its MC SE, mean width, verdict), also
for chunks still missing (``n`` says how many audits a row rests on). Verdict: ``ok`` when the
coverage lies in [93%, 97%], ``under``/``over`` otherwise, ``degenerate`` when the metric does not
vary across audits (the reference compared with itself) and ``undefined`` when no interval exists.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from compiler import catalog  # noqa: E402
from runtime import seeding  # noqa: E402
from runtime.analysis import analyse  # noqa: E402
from runtime.analysis.counterfactual_sim import SCORE_RANGE, CorrespondenceSim  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"
K = {"counterfactual": 10, "group": 10, "merit": 20}
SEED = 2026
LOW, HIGH = 0.93, 0.97


def setting_name(n_jobs: int, ties: bool, effect: float) -> str:
    return f"jobs{n_jobs:02d}-{'ties' if ties else 'noties'}-effect{effect:g}"


def run_chunk(n_jobs: int, ties: bool, effect: float, phase: str, chunk: int, size: int,
              resamples: int, ranking: str) -> dict:
    """One chunk of audits: per (metric, variant), the values (and intervals in phase 'cover')."""
    sim = CorrespondenceSim(n_jobs=n_jobs, effect_se=effect, ties=ties)
    rng = seeding.rng(SEED, "coverage_counterfactual", setting_name(n_jobs, ties, effect), phase, chunk)
    frame = sim.frame(rng, size, first=chunk * size)
    res = analyse(frame, reference="BASE", k=K, alpha=0.05,
                  n_bootstrap=resamples if phase == "cover" else 1, seed=SEED + chunk,
                  thresholds=catalog.default_thresholds(), score_range={"sim": SCORE_RANGE},
                  ranking=ranking)
    out: dict[str, dict[str, list[float]]] = {}
    for (metric, variant), sub in res.metrics.groupby(["metric", "variant"], sort=False):
        cols = ["value", "tpr", "fpr"] if phase == "truth" else ["value", "ci_low", "ci_high"]
        out[f"{metric} {variant}"] = {c: sub[c].astype(float).tolist() for c in cols}
    return {"phase": phase, "chunk": chunk, "size": size, "intervals": intervals(), "rows": out}


def intervals() -> dict[str, str]:
    """Each metric's interval method in this version (:func:`runtime.analysis.coverage.interval_method`): a chunk
    saved under other methods (the percentile ratio intervals of methods 10 and earlier) is run again, and
    ``--publish`` records them, so the report never quotes one method's coverage for another's interval."""
    from runtime.analysis import coverage

    return {m: coverage.interval_method(m) for m in catalog.METRICS}


def current(path: Path) -> bool:
    """Whether a saved chunk was computed with this version's interval methods (issue 39 §2); a chunk without
    ``intervals`` predates them: percentile bootstrap intervals for every ratio."""
    from runtime.analysis import coverage

    rec = json.loads(path.read_text())
    if rec.get("phase") == "truth":  # values only (one resample): the interval method does not enter
        return True
    saved = rec.get("intervals") or {}
    return all(saved.get(m, coverage.LEGACY_INTERVAL) == method for m, method in intervals().items())


#: Absolute gaps: their estimand is the absolute value of the expected signed rate difference.
GAPS = ("equal_opportunity_gap", "equalized_odds_gap")


def gap_truth(truth: dict, metric: str, variant: str) -> tuple[float, float]:
    """``|E(TPR_v - TPR_ref)|`` (and for equalized odds the max with the FPR one), with its MC SE."""
    out = []
    for rate in ("tpr", "fpr") if metric == "equalized_odds_gap" else ("tpr",):
        d = (np.asarray(truth[f"{metric} {variant}"][rate], dtype=float)
             - np.asarray(truth[f"{metric} BASE"][rate], dtype=float))
        out.append((abs(float(np.mean(d))), float(np.std(d, ddof=1) / math.sqrt(d.size))))
    return max(out)


def chunk_path(root: Path, name: str, phase: str, chunk: int) -> Path:
    return root / name / f"{phase}-{chunk:04d}.json"


def summarise(root: Path, settings: list[tuple[int, bool, float]]) -> list[dict]:
    rows = []
    for n_jobs, ties, effect in settings:
        name = setting_name(n_jobs, ties, effect)
        loaded: dict[str, dict[str, list[float]]] = {"truth": {}, "cover": {}}
        for path in sorted((root / name).glob("*.json")):
            if not current(path):
                continue
            rec = json.loads(path.read_text())
            for key, cols in rec["rows"].items():
                dst = loaded[rec["phase"]].setdefault(key, {})
                for c, vals in cols.items():
                    dst.setdefault(c, []).extend(vals)
        for key, cover in loaded["cover"].items():
            metric, variant = key.split(" ")
            truth_vals = np.asarray(loaded["truth"].get(key, {}).get("value", []), dtype=float)
            truth_vals = truth_vals[np.isfinite(truth_vals)]
            value = np.asarray(cover["value"], dtype=float)
            lo, hi = np.asarray(cover["ci_low"], dtype=float), np.asarray(cover["ci_high"], dtype=float)
            row = {"setting": name, "n_jobs": n_jobs, "ties": ties, "effect_se": effect,
                   "metric": metric, "variant": variant, "n": int(value.size),
                   "n_truth": int(truth_vals.size)}
            if truth_vals.size == 0:
                rows.append({**row, "verdict": "undefined"})
                continue
            truth = float(truth_vals.mean())
            truth_se = float(truth_vals.std(ddof=1) / math.sqrt(truth_vals.size)) if truth_vals.size > 1 else math.nan
            if metric in GAPS:  # |E signed difference|, not E|signed difference| (biased away from 0)
                truth, truth_se = gap_truth(loaded["truth"], metric, variant)
            has = np.isfinite(lo) & np.isfinite(hi)
            covered = (lo[has] <= truth + 1e-12) & (truth - 1e-12 <= hi[has])
            cov = float(covered.mean()) if has.any() else math.nan
            n_ci = int(has.sum())
            row.update(truth=truth, truth_mc_se=truth_se, sd_value=float(np.nanstd(value, ddof=1)),
                       n_ci=n_ci, coverage=cov,
                       coverage_mc_se=math.sqrt(cov * (1 - cov) / n_ci) if n_ci else math.nan,
                       mean_width=float(np.mean(hi[has] - lo[has])) if n_ci else math.nan,
                       below=float(np.mean(hi[has] < truth - 1e-12)) if n_ci else math.nan,
                       above=float(np.mean(lo[has] > truth + 1e-12)) if n_ci else math.nan)
            if not n_ci:
                row["verdict"] = "undefined"
            elif np.nanstd(value) == 0 and np.nanstd(truth_vals) == 0:
                row["verdict"] = "degenerate"
            else:
                row["verdict"] = "ok" if LOW <= cov <= HIGH else ("under" if cov < LOW else "over")
            rows.append(row)
    return rows


def write_table(rows: list[dict], path_md: Path, header: str) -> None:
    lines = [header, "",
             "| jobs | ties | effect (SE) | metric | variant | n | truth (MC SE) | coverage (MC SE) | miss above / below | mean width | verdict |",
             "|---:|:---:|---:|---|---|---:|---|---|---|---:|---|"]
    for r in rows:
        if r["verdict"] == "undefined" and "coverage" not in r:
            lines.append(f"| {r['n_jobs']} | {'yes' if r['ties'] else 'no'} | {r['effect_se']:g} | {r['metric']} | "
                         f"{r['variant']} | {r['n']} | | | | | undefined |")
            continue
        lines.append(
            f"| {r['n_jobs']} | {'yes' if r['ties'] else 'no'} | {r['effect_se']:g} | {r['metric']} | {r['variant']} | "
            f"{r['n']} | {r['truth']:.4f} ({r['truth_mc_se']:.4f}) | {100 * r['coverage']:.1f}% ({100 * r['coverage_mc_se']:.1f}) | "
            f"{100 * r['above']:.1f}% / {100 * r['below']:.1f}% | {r['mean_width']:.4f} | {r['verdict']} |")
    path_md.write_text("\n".join(lines) + "\n")


def publish(rows: list[dict], settings: list[tuple[int, bool, float]], *, audits: int, ranking: str) -> None:
    """Per metric and job count, the lowest and highest coverage over the settings (degenerate and
    undefined rows left out): ``runtime/analysis/coverage_measured.json`` (:mod:`runtime.analysis.coverage`).
    Only job counts whose every setting has ``audits`` audits are published."""
    from runtime.analysis import coverage

    full = {r["setting"] for r in rows if r["n"] >= audits} - {r["setting"] for r in rows if r["n"] < audits}
    incomplete = {j for j, t, e in settings if setting_name(j, t, e) not in full}
    complete = sorted({j for j, _, _ in settings} - incomplete)
    if incomplete:
        print(f"publishing {complete} jobs only: settings with {sorted(incomplete)} jobs have fewer than "
              f"{audits} audits (run the bench again to complete them)")
    table: dict[str, dict[str, list[float]]] = {}
    for r in rows:
        if r["verdict"] not in ("ok", "under", "over") or r["n_jobs"] not in complete:
            continue
        lo_hi = table.setdefault(r["metric"], {}).setdefault(str(r["n_jobs"]), [1.0, 0.0])
        lo_hi[0], lo_hi[1] = min(lo_hi[0], r["coverage"]), max(lo_hi[1], r["coverage"])
    out = {"source": "bench/coverage_counterfactual.py", "date": time.strftime("%Y-%m-%d"), "ranking": ranking,
           "audits": audits, "target": list(coverage.TARGET), "metrics": table,
           "intervals": {m: method for m, method in intervals().items() if m in table}}
    coverage.MEASURED.write_text(json.dumps(out, indent=1, sort_keys=True) + "\n")
    print(f"published {coverage.MEASURED}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--audits", type=int, default=1000)
    ap.add_argument("--truth", type=int, default=2000)
    ap.add_argument("--resamples", type=int, default=499)
    ap.add_argument("--chunk", type=int, default=50)
    ap.add_argument("--jobs", type=int, nargs="+", default=[2, 5, 20])
    ap.add_argument("--effects", type=float, nargs="+", default=[0.0, 1.0, 3.0])
    ap.add_argument("--ties", choices=["both", "yes", "no"], default="both")
    ap.add_argument("--ranking", choices=["swap_in", "per_variant"], default="swap_in")
    ap.add_argument("--procs", type=int, default=2)
    ap.add_argument("--out", type=Path, default=RESULTS / "coverage_counterfactual")
    ap.add_argument("--table-only", action="store_true", help="summarise the saved chunks, run nothing")
    ap.add_argument("--publish", action="store_true",
                    help="write runtime/analysis/coverage_measured.json, which the report quotes")
    args = ap.parse_args()
    root = args.out if args.ranking == "swap_in" else args.out.with_name(args.out.name + "_per_variant")
    ties = {"both": [False, True], "yes": [True], "no": [False]}[args.ties]
    settings = [(j, t, e) for j in args.jobs for t in ties for e in args.effects]
    todo = []
    for n_jobs, t, e in settings:
        name = setting_name(n_jobs, t, e)
        for phase, total in (("truth", args.truth), ("cover", args.audits)):
            for c in range(math.ceil(total / args.chunk)):
                path = chunk_path(root, name, phase, c)
                if not path.exists() or not current(path):
                    todo.append((n_jobs, t, e, phase, c, args.chunk, args.resamples, args.ranking))
    print(f"{len(settings)} settings, {len(todo)} chunks of {args.chunk} audits to run", flush=True)
    start = time.time()
    if todo and not args.table_only:
        with ProcessPoolExecutor(max_workers=args.procs) as pool:
            futures = {pool.submit(run_chunk, *task): task for task in todo}
            for i, fut in enumerate(as_completed(futures), 1):
                task = futures[fut]
                rec = fut.result()
                path = chunk_path(root, setting_name(*task[:3]), rec["phase"], rec["chunk"])
                path.parent.mkdir(parents=True, exist_ok=True)
                tmp = path.with_suffix(".tmp")
                tmp.write_text(json.dumps(rec))
                tmp.replace(path)
                if i % 10 == 0 or i == len(todo):
                    print(f"{i}/{len(todo)} chunks, {time.time() - start:.0f} s", flush=True)
    rows = summarise(root, settings)
    stem = root.name
    (RESULTS / f"{stem}.json").write_text(json.dumps(rows, indent=1))
    header = (f"# Interval coverage, {args.ranking} ranking ({time.strftime('%Y-%m-%d')}; "
              f"target {LOW:.0%}-{HIGH:.0%}; {args.resamples} resamples; truth = mean over {args.truth} audits)\n\n"
              "miss above / below: share of audits whose interval lies wholly above / below the truth.")
    partial = sorted({r["setting"] for r in rows if r["n"] < args.audits}
                     | {setting_name(*st) for st in settings} - {r["setting"] for r in rows})
    if partial:
        header += (f"\n\n**Partial**: {len(partial)} setting(s) have fewer than {args.audits} audits so far "
                   f"({', '.join(partial)}); column n gives each row's count. Run the bench again to resume.")
    write_table(rows, RESULTS / f"{stem}.md", header)
    if args.publish:
        publish(rows, settings, audits=args.audits, ranking=args.ranking)
    bad = [r for r in rows if r["verdict"] in ("under", "over")]
    print(f"{len(rows)} rows; {len(bad)} outside {LOW:.0%}-{HIGH:.0%}; table: {RESULTS / (stem + '.md')}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
