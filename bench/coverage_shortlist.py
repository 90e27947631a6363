"""Coverage of the shortlist metrics' shipped intervals on every setting of the coverage bench (issue 39 §2 and §4).

Retention, the impact ratio (seed 000 §3.4.3: a variant's top-K retention, and retention over the reference's), the
selection ratio and the flip rate changed their interval after the full bench (``bench/coverage_counterfactual.py``)
last ran: the Jeffreys interval at the candidate bootstrap's design effect truncated at 1 (methods 15,
:func:`runtime.analysis.stats.jeffreys_deff_interval`), the zero-churn rule (methods 14), the selection ratio's
continuity correction (methods 16), the flip rate's Wilson interval at the effective number of candidates where
ties make flips fractional (seed 000 §3.4.1; methods 17, :func:`runtime.analysis.stats.tie_averaged_interval`) and
the selection ratio's normal interval from a smoothed, re-ranked candidate bootstrap (methods 18,
:func:`runtime.analysis.selection.smoothed_swap_in_interval`), and the flip rate's from the same resamples (methods 19,
:func:`runtime.analysis.selection.smoothed_flip_interval`); the
full bench's 20-job settings had stopped at 275-300 of their 1,000 audits. The full bench re-runs the whole metric
suite with 499 resamples per audit, which at 20 and 50 jobs takes days on two cores; this script computes those four
metrics alone, exactly as an audit does (:func:`runtime.analysis._pairing` and the registered metric functions, swap-in
ranking, K = 10, 499 resamples), on ``--audits`` audits per setting of :data:`bench.coverage_counterfactual.SETTINGS`
(the 18 simulated settings, ``jobs50-noties-effect0`` and the two ``example-*`` settings, from its own seed stream
``coverage_shortlist``), and checks each interval against the truth of
the full bench's committed truth chunks (``bench/results/coverage_counterfactual/<setting>/truth-*.json.gz``: the
mean of the metric over 2,000 other audits; 200 at 50 jobs).

Checkpoints: one gzipped file per chunk of ``--chunk`` audits, committed under ``bench/results/coverage_shortlist/<setting>/``
(``cover-NNNN.json.gz``: per metric and variant the value and interval, with the interval methods they were computed
under). A run resumes from them; a metric whose interval method changed since is run again on the same audits and
merged into the chunk (methods 16 and 18 changed the selection ratio's alone, methods 17 and 19 the flip rate's).

    python bench/coverage_shortlist.py [--settings PATTERN ...] [--audits 1000] [--chunk 50] [--procs 2]
        [--metrics METRIC ...] [--publish] [--table-only]

``--metrics`` measures some of the four alone (chunks keep the others' rows; a chunk beyond the others' audits holds
only these), and writes ``coverage_shortlist-<metrics>-<audits>.{json,md}``, a further reading that replaces neither
the four metrics' table nor their published entries.

``--publish`` (every setting at ``--audits``) writes the four metrics' entries of
``runtime/analysis/coverage_measured.json``: per simulated job count (the ``example-*`` settings at the example's job
count, as in the full bench), the lowest and highest coverage over its settings and both variants, with ``intervals``
naming the measured method and ``sources`` this script, so the report quotes the measurement of the interval it
shows (:mod:`runtime.analysis.coverage`).

Output: ``bench/results/coverage_shortlist.json`` and ``.md``: per setting, metric and variant the audits, the truth
and its Monte Carlo SE, the coverage and its MC SE, the misses below and above (the interval wholly below / above
the truth), the width ratio (mean width / (2 x 1.96 x SD of the estimate over the audits)); then issue 39's
acceptance checks (every cell in 92-98%, at least 93% of cells in 93.5-96.5%, misses per side 1-4% per setting and
metric with the variants pooled, 2-3% per metric over all settings).
"""

from __future__ import annotations

import gzip
import json
import math
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import coverage_counterfactual as cc  # noqa: E402  (sets up the light ``compiler`` package)

from runtime import seeding  # noqa: E402
from runtime.analysis import _pairing, coverage  # noqa: E402
from runtime.analysis.frame import cohorts  # noqa: E402
from runtime.analysis.registry import get_metric  # noqa: E402

RESULTS = cc.RESULTS
ROOT = RESULTS / "coverage_shortlist"
METRICS = ("flip_rate", "retention_rate", "impact_ratio", "selection_ratio")
VARIANTS = ("V01", "V02")
RESAMPLES = 499
#: Issue 39's acceptance: every cell, most cells, misses per side per (setting, metric), per metric overall.
CELL, MOST, MOST_SHARE, SIDE, SIDE_POOLED = (0.92, 0.98), (0.935, 0.965), 0.93, (0.01, 0.04), (0.02, 0.03)


def intervals() -> dict[str, str]:
    """The four metrics' interval methods in this version (a chunk records them; another method's is re-run)."""
    return {m: coverage.interval_method(m) for m in METRICS}


def run_chunk(name: str, chunk: int, size: int, resamples: int, metrics: tuple[str, ...] = METRICS) -> dict:
    """Per (metric, variant) of ``size`` audits of one chunk: the value and the interval of each of ``metrics``, as
    an audit computes them (the audits and the resamples do not depend on ``metrics``: each metric's bootstrap
    draws from its own stream of the cell)."""
    model, score_range, _, _, _ = cc.parse_setting(name)
    frame = model.frame(seeding.rng(cc.SEED, "coverage_shortlist", name, chunk), size, first=chunk * size)
    rows: dict[str, dict[str, list]] = {}
    for cohort in cohorts(frame, reference="BASE", score_range={"sim": score_range}, ranking="swap_in"):
        for v in VARIANTS:
            p = _pairing(cohort, v, k=cc.K, n_bootstrap=resamples, seed=cc.SEED + chunk)
            for m in metrics:
                r = get_metric(m)(p)
                dst = rows.setdefault(f"{m} {v}", {"value": [], "ci_low": [], "ci_high": []})
                for c, x in (("value", r.value), ("ci_low", r.ci_low), ("ci_high", r.ci_high)):
                    dst[c].extend(cc._round([x]))
    methods = intervals()
    return {"chunk": chunk, "size": size, "resamples": resamples, "intervals": {m: methods[m] for m in metrics},
            "rows": rows}


def _path(name: str, chunk: int) -> Path:
    return ROOT / name / f"cover-{chunk:04d}.json.gz"


def _current(path: Path, size: int, resamples: int) -> dict | None:
    """The saved chunk at ``path`` with the rows of the metrics it computed under today's interval methods only
    (None when absent or of another size): a chunk whose selection ratio predates methods 16 still measures the
    other three metrics, and only the stale metric is run again (:func:`stale`)."""
    if not path.is_file():
        return None
    rec = cc.read_chunk(path)
    if rec.get("size") != size or rec.get("resamples") != resamples:
        return None
    now = intervals()
    keep = {m for m, method in rec.get("intervals", {}).items() if now.get(m) == method}
    return {**rec, "intervals": {m: now[m] for m in keep},
            "rows": {key: cols for key, cols in rec["rows"].items() if key.split(" ")[0] in keep}}


def stale(path: Path, size: int, resamples: int, metrics: tuple[str, ...] = METRICS) -> tuple[str, ...]:
    """The metrics of ``metrics`` a chunk lacks under today's interval methods."""
    rec = _current(path, size, resamples)
    return tuple(m for m in metrics if rec is None or m not in rec["intervals"])


def _merge(name: str, rec: dict) -> dict:
    """``rec`` with the current rows of the chunk already saved at its place (the metrics it did not re-run)."""
    old = _current(_path(name, rec["chunk"]), rec["size"], rec["resamples"])
    if old is None:
        return rec
    return {**rec, "intervals": {**old["intervals"], **rec["intervals"]}, "rows": {**old["rows"], **rec["rows"]}}


def _save(name: str, rec: dict) -> None:
    path = _path(name, rec["chunk"])
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    with gzip.GzipFile(tmp, "wb", mtime=0) as fh:  # mtime 0: the same chunk gives the same bytes
        fh.write(json.dumps(rec, sort_keys=True).encode())
    tmp.replace(path)


def summarise(name: str, parts: list[dict], metrics: tuple[str, ...] = METRICS) -> list[dict]:
    """One row per metric of ``metrics`` and variant of a setting: coverage against the full bench's truth chunks."""
    loaded = cc.load(RESULTS / "coverage_counterfactual", name)
    rows = []
    for m in metrics:
        for v in VARIANTS:
            key = f"{m} {v}"
            value = np.concatenate([cc._floats(p["rows"][key]["value"]) for p in parts])
            lo = np.concatenate([cc._floats(p["rows"][key]["ci_low"]) for p in parts])
            hi = np.concatenate([cc._floats(p["rows"][key]["ci_high"]) for p in parts])
            truth, truth_se, tv = cc._truth(loaded, m, v)
            # the full bench's coverage, MC SE, misses and width (cc._coverage_row); n: the audits with an interval,
            # the verdict on issue 39's per-cell range (CELL), the width against the estimate's spread
            row = cc._coverage_row({"setting": name, "metric": m, "variant": v}, truth, truth_se, tv, value, lo, hi)
            if not math.isfinite(row.get("coverage", math.nan)):
                rows.append({**row, "verdict": "no truth chunks" if tv.size == 0 else "no intervals"})
                continue
            cov, sd = row["coverage"], row["sd_value"]
            rows.append({**row, "n": row["n_ci"],
                         "width_ratio": row["mean_width"] / (2 * 1.959964 * sd) if sd > 0 else math.nan,
                         "verdict": "ok" if CELL[0] <= cov <= CELL[1] else ("under" if cov < CELL[0] else "over")})
    return rows


def acceptance(rows: list[dict], metrics: tuple[str, ...] = METRICS) -> list[str]:
    """Issue 39's must-show checks on the rows of ``metrics``, one line each (``PASS``/``MISS`` first; also read by
    ``bench/coverage_marc_u.py`` for MARC)."""
    cov = [r for r in rows if "coverage" in r]
    out = []
    for m in metrics:
        rm = [r for r in cov if r["metric"] == m]
        if not rm:
            continue
        cells = [r["coverage"] for r in rm]
        in_cell = all(CELL[0] <= c <= CELL[1] for c in cells)
        most = float(np.mean([MOST[0] <= c <= MOST[1] for c in cells]))
        per_side = []
        for s in dict.fromkeys(r["setting"] for r in rm):
            rs = [r for r in rm if r["setting"] == s]
            n = sum(r["n"] for r in rs)
            per_side.append((s, sum(r["below"] * r["n"] for r in rs) / n, sum(r["above"] * r["n"] for r in rs) / n))
        bad_side = [(s, b, a) for s, b, a in per_side if not (SIDE[0] <= b <= SIDE[1] and SIDE[0] <= a <= SIDE[1])]
        n_all = sum(r["n"] for r in rm)
        below = sum(r["below"] * r["n"] for r in rm) / n_all
        above = sum(r["above"] * r["n"] for r in rm) / n_all
        pooled_ok = SIDE_POOLED[0] <= below <= SIDE_POOLED[1] and SIDE_POOLED[0] <= above <= SIDE_POOLED[1]
        # the same share with the variants of a setting pooled (a cell per setting, as the per-side check pools them)
        by_setting = [sum(r["coverage"] * r["n"] for r in rm if r["setting"] == s)
                      / sum(r["n"] for r in rm if r["setting"] == s) for s in dict.fromkeys(r["setting"] for r in rm)]
        most_pooled = sum(MOST[0] <= c <= MOST[1] for c in by_setting)
        out.append(f"- **{m}** ({len(rm)} cells, {100 * min(cells):.1f}–{100 * max(cells):.1f}%): "
                   f"{'PASS' if in_cell else 'MISS'} every cell in 92–98%; "
                   f"{'PASS' if most >= MOST_SHARE else 'MISS'} {100 * most:.1f}% of cells in 93.5–96.5% (≥ 93%); "
                   f"{'PASS' if not bad_side else 'MISS'} misses per side 1–4% per setting"
                   + (" (outside: " + ", ".join(f"{s} {100 * b:.2f}% below / {100 * a:.2f}% above"
                                               for s, b, a in bad_side) + ")" if bad_side else "")
                   + f"; {'PASS' if pooled_ok else 'MISS'} pooled {100 * below:.2f}% below / {100 * above:.2f}% above "
                   f"(2–3%); variants pooled per setting: {most_pooled} of {len(by_setting)} settings in 93.5–96.5%")
    return out


def perfect_interval_odds(cells: int, audits: int) -> tuple[float, float]:
    """``(p_out, p_pass)`` for an interval of exactly 95% coverage: the chance that one cell of ``audits`` independent
    audits reads outside 93.5-96.5% (binomial), and that at least :data:`MOST_SHARE` of ``cells`` such cells read
    inside (the second check's calibration, cells taken as independent)."""
    from scipy.stats import binom

    inside = binom.cdf(math.floor(MOST[1] * audits + 1e-9), audits, 0.95) - binom.cdf(
        math.ceil(MOST[0] * audits - 1e-9) - 1, audits, 0.95)
    allowed = cells - math.ceil(MOST_SHARE * cells - 1e-9)
    return 1.0 - inside, float(binom.cdf(allowed, cells, 1.0 - inside))


def table_stem(metrics: tuple[str, ...], audits: int) -> str:
    """The name of the output files: ``coverage_shortlist`` for the four metrics at 1,000 audits (what ``--publish``
    writes from), else ``coverage_shortlist-<metrics>-<audits>`` (a further reading that replaces nothing)."""
    if metrics == METRICS and audits == 1000:
        return "coverage_shortlist"
    return f"coverage_shortlist-{'-'.join(metrics)}-{audits}"


def write_table(rows: list[dict], audits: int, metrics: tuple[str, ...] = METRICS) -> None:
    stem = table_stem(metrics, audits)
    (RESULTS / f"{stem}.json").write_text(json.dumps(rows, indent=1) + "\n")
    lines = [f"# {', '.join(metrics)}: coverage of the shipped intervals "
             f"({time.strftime('%Y-%m-%d')}; {audits} audits per setting, {RESAMPLES} resamples; truth: the coverage "
             "bench's truth chunks)", "",
             "Intervals: " + ", ".join(f"{m} `{meth}`" for m, meth in intervals().items()) + " (methods 19: the flip rate's "
             "`smoothed_swap_in_normal_tie_deff_wilson` is normal with the SD of the flip count over a smoothed, "
             "re-ranked candidate bootstrap, Wilson's at the tie-averaged effective number where no candidate flips; "
             "methods 18: the selection ratio's `smoothed_swap_in_normal_zero_churn_wilson` is normal with the SD of "
             "the variant's selected count over the same resamples). below / above: share of audits whose "
             "interval lies wholly below / above the truth. width ratio: "
             "mean width / (2 x 1.96 x SD of the estimate over the audits). Re-derive: "
             f"`python bench/coverage_shortlist.py --audits {audits}"
             + ("" if metrics == METRICS else f" --metrics {' '.join(metrics)}") + " --table-only`.", "",
             "| setting | metric | variant | n | truth (MC SE) | coverage (MC SE) | below / above | width ratio | verdict |",
             "|---|---|---|---:|---|---|---|---:|---|"]
    for r in rows:
        if "coverage" not in r:
            lines.append(f"| {r['setting']} | {r['metric']} | {r['variant']} | {r['n']} | | | | | {r['verdict']} |")
            continue
        lines.append(f"| {r['setting']} | {r['metric']} | {r['variant']} | {r['n']} | {r['truth']:.4f} "
                     f"({r['truth_mc_se']:.4f}) | {100 * r['coverage']:.1f}% ({100 * r['coverage_mc_se']:.1f}) | "
                     f"{100 * r['below']:.1f}% / {100 * r['above']:.1f}% | {r['width_ratio']:.3f} | {r['verdict']} |")
    n_settings = len({r["setting"] for r in rows})
    out1, pass1 = perfect_interval_odds(2 * n_settings, audits)
    out2, pass2 = perfect_interval_odds(n_settings, 2 * audits)
    lines += ["", "## Issue 39's acceptance checks", "",
              f"Calibration of the second check: an interval of exactly 95% coverage reads outside 93.5–96.5% in "
              f"{100 * out1:.1f}% of cells of {audits:,} audits, so it has at least 93% of {2 * n_settings} cells (a "
              f"setting × variant) inside with probability {pass1:.2f}; with the variants of a setting pooled "
              f"({2 * audits:,} audits, taken as independent although two variants share an audit's candidates) "
              f"{100 * out2:.2f}% and {pass2:.3f} for {n_settings} settings (the issue's \"a perfect 95% interval "
              "passes with probability > 99%\" holds for "
              + ("both readings" if pass1 > 0.99 else "the pooled reading only") + ").", ""] + acceptance(rows, metrics)
    (RESULTS / f"{stem}.md").write_text("\n".join(lines) + "\n")


def main() -> int:
    ap = cc.subset_parser(__doc__.splitlines()[0], publish_help="write the four metrics' entries of "
                            "coverage_measured.json", table_help="read the saved chunks, run nothing")
    ap.add_argument("--metrics", nargs="+", choices=METRICS, default=list(METRICS),
                    help="measure these alone (their table goes to coverage_shortlist-<metrics>-<audits>.md)")
    args = ap.parse_args()
    metrics = tuple(m for m in METRICS if m in args.metrics)
    if args.publish and metrics != METRICS:
        raise SystemExit("--publish writes the four metrics' entries: run it without --metrics")
    names = cc.matching(args.settings)
    n_chunks = math.ceil(args.audits / args.chunk)
    sizes = [min(args.chunk, args.audits - c * args.chunk) for c in range(n_chunks)]
    todo = [(n, c, sizes[c], RESAMPLES, missing) for n in names for c in range(n_chunks)
            if (missing := stale(_path(n, c), sizes[c], RESAMPLES, metrics))]
    start = time.time()
    if todo and args.table_only:
        raise SystemExit(f"--table-only: {len(todo)} chunks missing or stale, e.g. {_path(*todo[0][:2])}")
    if todo:
        print(f"{len(todo)} chunks to run ({len(names) * n_chunks - len(todo)} saved)", flush=True)
        with ProcessPoolExecutor(max_workers=args.procs) as pool:
            for i, rec in enumerate(pool.map(run_chunk, *zip(*todo)), 1):
                _save(todo[i - 1][0], _merge(todo[i - 1][0], rec))
                if i % 10 == 0 or i == len(todo):
                    print(f"{i}/{len(todo)} chunks, {time.time() - start:.0f} s", flush=True)
    rows = []
    for name in names:
        rows += summarise(name, [_current(_path(name, c), sizes[c], RESAMPLES) for c in range(n_chunks)], metrics)
    for r in rows:
        print(f"{r['setting']} {r['metric']:15s} {r['variant']} coverage {100 * r.get('coverage', math.nan):5.1f}% "
              f"below {100 * r.get('below', math.nan):4.1f}% above {100 * r.get('above', math.nan):4.1f}% "
              f"width ratio {r.get('width_ratio', math.nan):.3f}")
    if set(names) == set(cc.SETTINGS):
        write_table(rows, args.audits, metrics)
        print("\n".join(acceptance(rows, metrics)))
    if args.publish:
        cc.publish_entries(rows, args.audits, "bench/coverage_shortlist.py")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
