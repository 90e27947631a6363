"""Coverage of MARC's U-statistic interval (methods 14 and 20, issue 39 §4) on the coverage bench's settings.

Since methods 14, swap-in MARC's interval is analytic (:func:`runtime.analysis.counterfactual.marc_u_se`:
Hoeffding's unbiased variance of each job's U-statistic; normal on the inverse-square-root scale with t on N − J
degrees of freedom since methods 20, on the log scale before): nothing is resampled, so it can
be measured on ``analyse`` runs with one bootstrap resample, about 1/20 of a full audit's time. This script draws
``--audits`` audits per setting of :mod:`bench.coverage_counterfactual` (the same models and estimands, its own
seed stream ``coverage_marc_u``), runs :func:`runtime.analysis.analyse` exactly as ``audit execute`` does with
``n_bootstrap = 1``, and checks each MARC row's ``ci_low``/``ci_high`` against the truth of the committed truth
chunks of ``bench/results/coverage_counterfactual/<setting>/truth-*.json.gz`` (the mean of MARC over 2,000 other
audits). It also gives the ratio of the mean interval width to ``2 · 1.96 · SD`` of MARC over the audits (1 for a
correctly sized symmetric interval; the candidate bootstrap of methods 10-13 gave 1.08-1.25).

The full bench (``coverage_counterfactual.py``) re-measures MARC with every other interval when it is re-run; this
one answers the narrower question in minutes.

    python bench/coverage_marc_u.py [--settings PATTERN ...] [--audits 1000] [--chunk 50] [--procs 2] [--publish]

``--publish`` (every setting at ``--audits``) writes MARC's entry of ``runtime/analysis/coverage_measured.json``:
per simulated job count (the two ``example-*`` settings count as 5 jobs, as in the full bench), the lowest and
highest coverage over its settings and both variants, with ``intervals.marc`` naming the shipped method
(``u_statistic_inverse_sqrt_t_zero_event_wilson`` since methods 20) and ``sources.marc`` naming this script, so the
report quotes the measurement of the interval it shows. Every other metric's entry is left as the full bench
published it.

Checkpoints: each setting's audits (MARC's value and interval per variant, one part per chunk of ``--chunk``
audits) are kept in ``bench/results/coverage_marc_u/<setting>.json.gz`` with the interval method they were drawn
under; a re-run reuses those of the shipped method (chunk ``c`` is seeded by ``c`` alone, so ``--audits 2000`` runs
only the second 1,000 and ``--audits 1000`` reads the first 1,000 of 2,000), and ``--table-only`` re-derives the
table and checks from them alone.

Output (every setting only): ``bench/results/coverage_marc_u.json`` and ``.md`` at 1,000 audits (what ``--publish``
writes from), ``coverage_marc_u-<audits>.{json,md}`` at any other count (per setting and variant: n, truth and its MC SE,
coverage and its MC SE, misses below / above, width ratio), then issue 39's acceptance checks
(:func:`coverage_shortlist.acceptance`: every cell in 92–98%, at least 93% of cells in 93.5–96.5%, misses per side
1–4% per setting with the variants pooled, 2–3% over all settings).
"""

from __future__ import annotations

import contextlib
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
import coverage_shortlist as cs  # noqa: E402

from compiler import catalog  # noqa: E402
from runtime import seeding  # noqa: E402
from runtime.analysis import analyse, coverage  # noqa: E402

RESULTS = cc.RESULTS
CHECKPOINTS = RESULTS / "coverage_marc_u"
VARIANTS = ("V01", "V02")


def checkpoint(name: str) -> Path:
    """The file holding setting ``name``'s audits."""
    return CHECKPOINTS / f"{name}.json.gz"


def load_parts(name: str) -> list[dict]:
    """The saved audits of setting ``name``, one part per chunk, if they were drawn under this version's interval
    method; else none (a changed method re-runs every audit)."""
    path = checkpoint(name)
    if not path.exists():
        return []
    saved = json.loads(gzip.decompress(path.read_bytes()))
    return saved["parts"] if saved["interval"] == coverage.interval_method("marc") else []


def save_parts(name: str, parts: list[dict]) -> None:
    """Keep setting ``name``'s audits (gzip without a timestamp: the same audits, the same bytes)."""
    CHECKPOINTS.mkdir(parents=True, exist_ok=True)
    audits = sum(len(p[VARIANTS[0]]["value"]) for p in parts)
    body = json.dumps({"interval": coverage.interval_method("marc"), "audits": audits, "parts": parts},
                      separators=(",", ":")).encode()
    checkpoint(name).write_bytes(gzip.compress(body, mtime=0))


def usable(parts: list[dict], chunk: int, n_chunks: int) -> list[dict]:
    """The saved parts a run of ``n_chunks`` chunks of ``chunk`` audits reuses: chunk ``c`` is seeded by ``c`` alone,
    so the first parts of a smaller run are the first parts of a larger one (``--audits 2000`` extends the
    1,000 saved audits and ``--audits 1000`` reads the first 1,000 of 2,000). Parts of another chunk size are not."""
    if any(len(p[VARIANTS[0]]["value"]) != chunk for p in parts):
        return []
    return parts[:n_chunks]


def run(name: str, chunk: int, size: int) -> dict[str, dict[str, list[float]]]:
    """MARC's value and interval for ``size`` audits of one chunk of setting ``name``."""
    model, score_range, _, _, _ = cc.parse_setting(name)
    rng = seeding.rng(cc.SEED, "coverage_marc_u", name, chunk)
    frame = model.frame(rng, size, first=chunk * size)
    res = analyse(frame, reference="BASE", k=cc.K, alpha=0.05, n_bootstrap=1, seed=cc.SEED + chunk,
                  thresholds=catalog.default_thresholds(), score_range={"sim": score_range}, ranking="swap_in")
    m = res.metrics[res.metrics["metric"] == "marc"]
    out = {}
    for v in VARIANTS:
        sub = m[m["variant"] == v]
        out[v] = {c: sub[c].astype(float).tolist() for c in ("value", "ci_low", "ci_high")}
        out[v]["u_statistic"] = (~sub["notes"].str.contains("candidate bootstrap")).tolist()
    return out


def summarise(name: str, parts: list[dict]) -> list[dict]:
    """One row per variant of a setting: the full bench's coverage row (:func:`coverage_counterfactual._coverage_row`:
    coverage, its MC SE, misses below / above, mean width) against its truth chunks, with the share of rows on the
    U-statistic interval and the width against MARC's spread over the audits."""
    loaded = cc.load(cc.RESULTS / "coverage_counterfactual", name)
    rows = []
    for v in VARIANTS:
        value = np.concatenate([p[v]["value"] for p in parts])
        lo = np.concatenate([p[v]["ci_low"] for p in parts])
        hi = np.concatenate([p[v]["ci_high"] for p in parts])
        u_stat = np.concatenate([p[v]["u_statistic"] for p in parts])
        truth, truth_se, tv = cc._truth(loaded, "marc", v)
        row = cc._coverage_row({"setting": name, "variant": v, "u_statistic_share": float(u_stat.mean())},
                               truth, truth_se, tv, value, lo, hi)
        if not math.isfinite(row.get("coverage", math.nan)):
            rows.append({**row, "verdict": "no truth chunks" if tv.size == 0 else "no intervals"})
            continue
        sd = row["sd_value"]
        rows.append({**row, "width_ratio": row["mean_width"] / (2 * 1.959964 * sd) if sd > 0 else math.nan})
    return rows


def main() -> int:
    args = cc.subset_parser(__doc__.splitlines()[0], publish_help="write MARC's entry of coverage_measured.json",
                            table_help="read the saved rows, run nothing").parse_args()
    names = cc.matching(args.settings)
    n_chunks = math.ceil(args.audits / args.chunk)
    if args.audits % args.chunk:
        raise SystemExit(f"--audits ({args.audits}) must be a multiple of --chunk ({args.chunk})")
    start = time.time()
    rows = []
    saved = {nm: load_parts(nm) for nm in names}  # read each file once
    have = {nm: usable(saved[nm], args.chunk, n_chunks) for nm in names}
    todo = [nm for nm in names if len(have[nm]) < n_chunks]
    if todo and args.table_only:
        raise SystemExit(f"--table-only: {len(todo)} settings lack {args.audits} audits under "
                         f"{coverage.interval_method('marc')}, e.g. {checkpoint(todo[0])}")
    with ProcessPoolExecutor(max_workers=args.procs) if todo else contextlib.nullcontext() as pool:
        for name in names:
            parts = have.pop(name)
            if len(parts) < n_chunks:
                missing = range(len(parts), n_chunks)
                parts = parts + list(pool.map(run, [name] * len(missing), missing, [args.chunk] * len(missing)))
                kept = saved.pop(name)
                # keep audits a larger earlier run saved beyond this one's
                save_parts(name, parts + (kept[n_chunks:] if usable(kept, args.chunk, len(kept)) else []))
            got = summarise(name, parts)
            rows.extend(got)
            for r in got:
                print(f"{name} {r['variant']} coverage {r.get('coverage', math.nan):.3f} below {r.get('below', math.nan):.3f} "
                      f"above {r.get('above', math.nan):.3f} width ratio {r.get('width_ratio', math.nan):.3f} "
                      f"({time.time() - start:.0f} s)", flush=True)
    if set(names) != set(cc.SETTINGS):
        print(f"{len(rows)} rows of {len(names)} settings; the table is written for every setting only")
        return 0
    # the 1,000-audit table is the one --publish writes from; a larger reading is written beside it
    stem = "coverage_marc_u" + (f"-{args.audits}" if args.audits != 1000 else "")
    (RESULTS / f"{stem}.json").write_text(json.dumps(rows, indent=1) + "\n")
    lines = [f"# MARC's U-statistic interval (methods 14; MARC 0 reads Wilson's bound, methods 17; the inverse-square-root "
             f"scale with t on N − J df, methods 20; `{coverage.interval_method('marc')}`): coverage "
             f"({time.strftime('%Y-%m-%d')}; {args.audits} audits per setting; truth: the coverage bench's truth "
             f"chunks; re-derive: `python bench/coverage_marc_u.py --audits {args.audits} --table-only`)", "",
             "below / above: share of audits whose interval lies wholly below / above the truth. width ratio: mean "
             "width / (2 x 1.96 x SD of MARC over the audits). U-stat share: rows on the U-statistic interval "
             "(the rest fell back to the bootstrap).", "",
             "| setting | variant | n | truth (MC SE) | coverage (MC SE) | below / above | width ratio | U-stat share | verdict |",
             "|---|---|---:|---|---|---|---:|---:|---|"]
    for r in rows:
        if "coverage" not in r:
            lines.append(f"| {r['setting']} | {r['variant']} | {r['n']} | | | | | | {r['verdict']} |")
            continue
        lines.append(f"| {r['setting']} | {r['variant']} | {r['n']} | {r['truth']:.4f} ({r['truth_mc_se']:.4f}) | "
                     f"{100 * r['coverage']:.1f}% ({100 * r['coverage_mc_se']:.1f}) | {100 * r['below']:.1f}% / "
                     f"{100 * r['above']:.1f}% | {r['width_ratio']:.3f} | {r['u_statistic_share']:.3f} | {r['verdict']} |")
    cov = [r for r in rows if "coverage" in r]
    if cov:
        lines += ["", f"Range over {len(cov)} rows: {100 * min(r['coverage'] for r in cov):.1f}–"
                      f"{100 * max(r['coverage'] for r in cov):.1f}%; misses below (pooled) "
                      f"{100 * np.mean([r['below'] for r in cov]):.2f}%, above {100 * np.mean([r['above'] for r in cov]):.2f}%."]
        checks = cs.acceptance([{**r, "metric": "marc"} for r in cov], ("marc",))
        lines += ["", "## Issue 39's acceptance checks", "", *checks]
        print("\n".join(checks))
    (RESULTS / f"{stem}.md").write_text("\n".join(lines) + "\n")
    print(f"{len(rows)} rows: {RESULTS / f'{stem}.md'}")
    if args.publish:
        cc.publish_entries([{**r, "metric": "marc"} for r in rows], args.audits, "bench/coverage_marc_u.py")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
