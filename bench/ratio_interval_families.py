"""Candidate intervals for retention, the impact ratio and the selection ratio, from one simulation (issue 39 §2).

``bench/coverage_ratios_quick.py`` runs each candidate through the metrics, one bootstrap per method. This script runs
the metrics once per simulated audit with the percentile interval, keeps what every candidate reads (the estimate,
the pooled counts, the variance and the 2.5/97.5% quantiles of the candidate bootstrap's resamples, on the ratio and
on its log) and evaluates the candidates offline on the same audits:

- ``percentile``: the shipped selection-ratio interval (quantiles of the resamples);
- ``wilson``: Wilson's score interval at the bootstrap's effective sample size (shipped for retention and the impact
  ratio; :func:`runtime.analysis.stats.wilson_deff_interval`);
- ``jeffreys``: the Jeffreys interval (equal-tailed Beta(x + ½, n − x + ½) quantiles; Brown, Cai & DasGupta 2001,
  Cai 2005 for its one-sided coverage) at the same effective sample size;
- ``jeffreys_kg``: the same with the design effect truncated at 1 (Korn & Graubard 1998; adopted in methods 15,
  :func:`runtime.analysis.stats.jeffreys_deff_interval`);
- ``clopper_pearson``: the Clopper–Pearson interval at the same effective sample size;
- ``wald`` and ``log_wald``: normal intervals with the bootstrap SE on the ratio and on its log;
- selection ratio only, ``percentile_cc``: the percentile interval widened by half a selected place at each end
  (adopted in methods 16, :func:`runtime.analysis.selection.continuity_corrected`);
- selection ratio only, ``paired_jeffreys`` and ``paired_clopper_pearson``: McNemar's conditional binomial (the
  share of the discordant places lost) at the bootstrap's effective number of discordant places, mapped to the ratio.

``--rescore`` re-evaluates the candidates from the saved per-audit inputs (``.npz``) without simulating.

Seeds: each chunk is simulated from (setting, phase, chunk), as ``bench/coverage_ratios_quick.py`` (the same audits
at the same ``--chunk``). Output ``bench/results/ratio_interval_families.json``: one row per setting, metric,
candidate and variant (coverage, MC SE, misses above and below, mean width, and the width over 2·1.96·SD of the
estimate across audits).

    .venv/bin/python bench/ratio_interval_families.py [--jobs 2] [--ties both] [--effects 0 1 3] [--audits 1000]
        [--truth 2000] [--resamples 499] [--procs 2]
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np
from scipy import stats as sps
from statsmodels.stats.proportion import proportion_confint

sys.path.insert(0, str(Path(__file__).resolve().parent))
import coverage_ratios_quick as quick  # noqa: E402  (sets up the light ``compiler`` package)

from runtime import seeding  # noqa: E402
from runtime.analysis import _pairing, stats  # noqa: E402
from runtime.analysis import selection as selmod  # noqa: E402
from runtime.analysis.counterfactual_sim import SCORE_RANGE, CorrespondenceSim  # noqa: E402
from runtime.analysis.frame import cohorts  # noqa: E402
from runtime.analysis.registry import get_metric  # noqa: E402

METRICS = quick.METRICS
VARIANTS = quick.VARIANTS
Z = float(sps.norm.ppf(0.975))


def _capture():
    """Wrap :func:`stats._percentile_interval` to keep the last call's defined resamples."""
    seen: list[np.ndarray] = []
    original = stats._percentile_interval

    def wrapped(dist, value, ci=None, **kw):
        x = np.asarray(dist, dtype=float).reshape(-1)
        seen.append(x[np.isfinite(x)])
        return original(dist, value, ci, **kw)

    stats._percentile_interval = wrapped
    return seen


def run_chunk(n_jobs: int, ties: bool, effect: float, phase: str, chunk: int, size: int,
              resamples: int) -> tuple[str, str, dict]:
    sim = CorrespondenceSim(n_jobs=n_jobs, effect_se=effect, ties=ties)
    name = quick.setting_name(n_jobs, ties, effect)
    frame = sim.frame(seeding.rng(2026, "ratios_quick", name, phase, chunk), size, first=chunk * size)
    seen = _capture()
    adopted = dict(stats.RATIO_TRANSFORMS)
    stats.RATIO_TRANSFORMS.update(dict.fromkeys(METRICS))  # percentile everywhere: the resamples are what we keep
    out: dict[str, list] = {}
    try:
        for cohort in cohorts(frame, reference="BASE", score_range={"sim": SCORE_RANGE}, ranking="swap_in"):
            for v in VARIANTS:
                p = _pairing(cohort, v, k=quick.K, n_bootstrap=resamples if phase == "cover" else 1, seed=2026 + chunk)
                for m in METRICS:
                    seen.clear()
                    if m == "selection_ratio":
                        selmod._MEMO.pop(p, None)  # its bootstrap ran inside retention's decision fields
                    r = get_metric(m)(p)
                    d = r.diagnostics
                    if phase == "truth":
                        out.setdefault(f"{m} {v}", []).append([r.value])
                        continue
                    x = seen[0] if seen else np.array([])  # the metric's own bootstrap runs first
                    logx = np.log(x[x > 0]) if x.size else x
                    out.setdefault(f"{m} {v}", []).append([
                        r.value, d.get("slots", math.nan), d.get("retained", d.get("n_in_out", math.nan)),
                        d.get("n_out_in", math.nan),
                        float(np.var(x, ddof=1)) if x.size > 1 else math.nan,
                        float(np.var(logx, ddof=1)) if logx.size > 1 else math.nan,
                        float(np.quantile(x, 0.025)) if x.size else math.nan,
                        float(np.quantile(x, 0.975)) if x.size else math.nan])
    finally:
        stats.RATIO_TRANSFORMS.update(adopted)
    return name, phase, out


def _score_ends(method: str, value: float, nobs: float, var: float, truncate: bool = False) -> tuple[float, float]:
    if not (math.isfinite(value) and nobs > 0):
        return math.nan, math.nan
    if 0.0 < value < 1.0 and math.isfinite(var) and var > 0:
        deff = var / (value * (1 - value) / nobs)
    else:
        deff = 1.0
    n = nobs / (max(deff, 1.0) if truncate else deff)
    x = value * n
    if method == "wilson":
        lo, hi = proportion_confint(x, n, alpha=0.05, method="wilson")
    elif method == "clopper_pearson":
        lo, hi = proportion_confint(x, n, alpha=0.05, method="beta")
    else:
        lo = 0.0 if x <= 0 else sps.beta.ppf(0.025, x + 0.5, n - x + 0.5)
        hi = 1.0 if x >= n else sps.beta.ppf(0.975, x + 0.5, n - x + 0.5)
    return min(float(lo), value), max(min(float(hi), 1.0), value)


def candidates(metric: str, row: list[float]) -> dict[str, tuple[float, float]]:
    value, slots, _, _, var, logvar, q_lo, q_hi = row
    out = {"percentile": (min(q_lo, value), max(q_hi, value))}
    se = math.sqrt(var) if math.isfinite(var) else math.nan
    out["wald"] = (value - Z * se, value + Z * se)
    if value > 0 and math.isfinite(logvar):
        out["log_wald"] = (value * math.exp(-Z * math.sqrt(logvar)), value * math.exp(Z * math.sqrt(logvar)))
    if metric != "selection_ratio":
        for method in ("wilson", "jeffreys", "clopper_pearson"):
            out[method] = _score_ends(method, value, slots, var)
        # methods 15's interval (stats.jeffreys_deff_interval): the design effect truncated at 1
        out["jeffreys_kg"] = _score_ends("jeffreys", value, slots, var, truncate=True)
    else:
        lost, gained = row[2], row[3]
        # methods 16's interval (selection.continuity_corrected): half a selected place at each end
        if slots > 0:
            out["percentile_cc"] = (max(out["percentile"][0] - 0.5 / slots, 0.0), out["percentile"][1] + 0.5 / slots)
        for method in ("jeffreys", "clopper_pearson"):
            out["paired_" + method] = _paired_ends(method, value, slots, lost, gained, var)
    return out


def _paired_ends(method: str, value: float, selected: float, lost: float, gained: float,
                 var: float) -> tuple[float, float]:
    """The selection ratio ``1 + (gained − lost)/selected = 1 + m(1 − 2π)/selected``, ``m`` the discordant places and
    ``π = lost/m``: the interval of ``π`` (Jeffreys or Clopper–Pearson, McNemar's conditional binomial) at the
    bootstrap's effective ``m`` (its variance over ``4 m π(1 − π)/selected²``), mapped to the ratio."""
    m = lost + gained
    if not (m > 0 and selected > 0):
        return math.nan, math.nan
    pi = lost / m
    model = 4 * m * pi * (1 - pi) / selected ** 2
    deff = var / model if (math.isfinite(var) and var > 0 and model > 0) else 1.0
    n = m / deff
    x = pi * n
    if method == "clopper_pearson":
        lo, hi = proportion_confint(x, n, alpha=0.05, method="beta")
    else:
        lo = 0.0 if x <= 0 else sps.beta.ppf(0.025, x + 0.5, n - x + 0.5)
        hi = 1.0 if x >= n else sps.beta.ppf(0.975, x + 0.5, n - x + 0.5)
    low, high = 1 + m * (1 - 2 * float(hi)) / selected, 1 + m * (1 - 2 * float(lo)) / selected
    return min(low, value), max(high, value)


def summarise(name: str, truth: dict[str, list], cover: dict[str, list]) -> list[dict]:
    rows = []
    for m in METRICS:
        for v in VARIANTS:
            t = float(np.nanmean([r[0] for r in truth[f"{m} {v}"]]))
            data = cover[f"{m} {v}"]
            sd = float(np.nanstd([r[0] for r in data], ddof=1))
            per: dict[str, list[tuple[float, float]]] = {}
            for r in data:
                for method, ends in candidates(m, r).items():
                    per.setdefault(method, []).append(ends)
            for method, ends in per.items():
                e = np.array(ends, dtype=float)
                ok = np.isfinite(e).all(axis=1)
                lo, hi = e[ok, 0], e[ok, 1]
                n = int(ok.sum())
                cov = float(np.mean((lo <= t + 1e-12) & (t - 1e-12 <= hi)))
                rows.append({"setting": name, "metric": m, "method": method, "variant": v, "truth": t, "n": n,
                             "coverage": cov, "mc_se": math.sqrt(cov * (1 - cov) / n),
                             "miss_above": float(np.mean(lo > t + 1e-12)), "miss_below": float(np.mean(hi < t - 1e-12)),
                             "mean_width": float(np.mean(hi - lo)),
                             "width_ratio": float(np.mean(hi - lo)) / (2 * Z * sd) if sd > 0 else math.nan})
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, nargs="+", default=[2])
    ap.add_argument("--effects", type=float, nargs="+", default=[0.0, 1.0, 3.0])
    ap.add_argument("--ties", choices=["yes", "no", "both"], default="both")
    ap.add_argument("--audits", type=int, default=1000)
    ap.add_argument("--truth", type=int, default=2000)
    ap.add_argument("--resamples", type=int, default=499)
    ap.add_argument("--chunk", type=int, default=50)
    ap.add_argument("--procs", type=int, default=2)
    ap.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "results" / "ratio_interval_families.json")
    ap.add_argument("--rescore", action="store_true",
                    help="read the saved per-audit inputs (the .npz beside --out) and re-evaluate the candidates")
    args = ap.parse_args()
    ties = {"both": [False, True], "yes": [True], "no": [False]}[args.ties]
    settings = [(j, t, e) for j in args.jobs for t in ties for e in args.effects]
    if args.rescore:
        saved = np.load(args.out.with_suffix(".npz"))
        merged = {}
        for key in saved.files:
            name, phase, cell = key.split("|")
            merged.setdefault((name, phase), {})[cell] = saved[key].tolist()
        rows = [r for name in sorted({n for n, _ in merged}) for r in summarise(name, merged[(name, "truth")],
                                                                                 merged[(name, "cover")])]
        old = json.loads(args.out.read_text())
        args.out.write_text(json.dumps({"meta": {**old["meta"], "rescored": time.strftime("%Y-%m-%d")}, "rows": rows},
                                       indent=1) + "\n")
        print(f"rescored {len(rows)} rows: {args.out}")
        return 0
    tasks = [(j, t, e, phase, c, min(args.chunk, total - c * args.chunk), args.resamples)
             for j, t, e in settings for phase, total in (("truth", args.truth), ("cover", args.audits))
             for c in range(math.ceil(total / args.chunk))]
    start = time.time()
    merged: dict[tuple[str, str], dict] = {}
    with ProcessPoolExecutor(max_workers=args.procs) as pool:
        for i, (name, phase, out) in enumerate(pool.map(run_chunk, *zip(*tasks)), 1):
            dst = merged.setdefault((name, phase), {})
            for key, vals in out.items():
                dst.setdefault(key, []).extend(vals)
            if i % 10 == 0 or i == len(tasks):
                print(f"{i}/{len(tasks)} chunks, {time.time() - start:.0f} s", flush=True)
    raw = {f"{name}|{phase}|{key}": np.array(vals, dtype=float)
           for (name, phase), cells in merged.items() for key, vals in cells.items()}
    np.savez_compressed(args.out.with_suffix(".npz"), **raw)  # per audit: the candidates can be re-read offline
    rows = []
    for j, t, e in settings:
        name = quick.setting_name(j, t, e)
        rows += summarise(name, merged[(name, "truth")], merged[(name, "cover")])
    for r in rows:
        print(f"{r['setting']} {r['metric']:15s} {r['method']:10s} {r['variant']} cov {100 * r['coverage']:5.1f}% "
              f"(above {100 * r['miss_above']:.1f}%, below {100 * r['miss_below']:.1f}%) width ratio {r['width_ratio']:.3f}")
    meta = {"source": "bench/ratio_interval_families.py", "date": time.strftime("%Y-%m-%d"), "audits": args.audits,
            "truth": args.truth, "resamples": args.resamples, "chunk": args.chunk, "seconds": round(time.time() - start)}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"meta": meta, "rows": rows}, indent=1) + "\n")
    print(f"wrote {args.out} ({time.time() - start:.0f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
