"""Power and size of the counterfactual rank and selection tests under swap-in ranking.

Claim checked (issue): a planted demotion of one level, sized so that the paired test statistic of
the score difference has expectation 3 (a two-sided 5% test then has about 85% power), is detected
(BH ``q < 0.05``) on the rank and the selection metric in >= 80% of 200 simulated audits under
``swap_in`` ranking, with the demoted level named; a planted null rejects in <= 5% +- MC error.

Design (:class:`runtime.analysis.counterfactual_sim.CorrespondenceSim`): 5 jobs x 40 base candidates
(20 matching), variants BASE (reference), V01 (demoted by ``effect_se`` standard errors of the pooled
mean paired score difference) and V02 (no shift), K = 10/10/20 as ``specs/example.yaml``; whole-point
scores (ties) and float scores (no ties). Settings:

* ``power``: ``effect_se`` = 3, heterogeneity 0.5 (the simulator's default);
* ``null``: ``effect_se`` = 0, heterogeneity 0 (V01 and V02 both null);
* ``--sweep``: ``effect_se`` in ``--sweep-effects`` (default 0 3 5 8 12), heterogeneity 0.5,
  ``--sweep-audits`` audits each: where does the top-K selection test reach 80% power?

Each audit is analysed on its own (one :func:`runtime.analysis.analyse` call per audit, so each has
its own Benjamini-Hochberg family, as a real run), with ``variant_levels`` naming V01's level
``demoted``. Metrics read: ``marc`` (rank: Wilcoxon signed-rank on the paired swap-in rank
differences), ``flip_rate`` (selection: McNemar on the top-K in/out table), ``impact_ratio`` (the
same McNemar under swap-in, counted once in BH with flip_rate, so its p_adj is empty: raw p only)
and ``score_delta`` (the score test, the reference point: ~85% raw power at ``effect_se`` = 3).

* detection (V01 in ``power``/sweep): ``p_adj < 0.05`` and ``disadvantaged == "demoted"``;
  wrong direction: ``p_adj < 0.05`` and ``disadvantaged == "reference"``;
* size (V01 and V02 in ``null``, V02 elsewhere): share of audits with ``p_adj < 0.05``, MC SE
  ``sqrt(p (1 - p) / n)``; ``ok`` when it is <= 5% + 2 MC SE of a 5% rate (``sqrt(.05 .95 / n)``);
* raw-p rate: share with the unadjusted ``p < 0.05`` (for ``impact_ratio`` the only rate).

Bootstrap CIs do not enter any p-value, so ``--resamples`` is small (99). Work is cut into chunks
of ``--chunk`` audits seeded by (ranking, setting, chunk) and saved as they end under
``bench/results/power_swap_in/<ranking>/<setting>/`` (one JSON per chunk): an interrupted run
resumes and gives the same table. ``--procs`` runs chunks in parallel.

    LITELLM_LOCAL_MODEL_COST_MAP=True nice -n 10 .venv/bin/python bench/power_swap_in.py \\
        [--audits 200] [--ties both] [--ranking swap_in|per_variant] [--procs 2]
        [--sweep] [--sweep-audits 100] [--sweep-effects 0 3 5 8 12] [--table-only]
        [--variants 9] [--multiplicity run|per_metric|hierarchical|graphical]

``--variants N`` (issue 29 §6) audits N non-reference categories: V01 demoted, V02..VN null (default 2,
the layout above; seed 000's layout has 9). ``--multiplicity`` is the audit's
``analysis.multiplicity`` (default ``run``: one BH family per audit). Either, when not the default, suffixes
the result folder and the table (``_v9_hierarchical``). The table then also gives, per setting, the
share of audits in which some null category is flagged (any of its metrics with ``p_adj < 0.05``): under
the complete null that is the family-wise rate the procedure controls (FDR = FWER there).

``--layout 2x2`` (issue 29 §6) analyses each audit as 2 systems × 2 conditions in one ``analyse`` call
(four independent simulated audits, relabelled ``sa``/``sb`` × ``c1``/``c2``; V01 planted in every cell):
under a family per system a system's detection must not depend on the other system, and its two conditions
share one family. The table gives, per cell, V01 found on its score test and some null category flagged;
compare with the one-system table of the same ``--variants`` and ``--multiplicity``. Suffix ``_2x2``.

Output: ``bench/results/power_swap_in.md`` (tables) and ``.json`` (every row), suffixed
``_per_variant`` for ``--ranking per_variant``.
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
ALPHA = 0.05
N_JOBS = 5
TARGET_POWER = 0.80
LEVELS = {"BASE": {"axis": "reference"}, "V01": {"axis": "demoted"}, "V02": {"axis": "null"}}


def variants_of(n: int) -> tuple[str, ...]:
    """BASE, V01 (the planted category) and the null categories V02..Vn."""
    return ("BASE", *(f"V{i:02d}" for i in range(1, n + 1)))


def levels_of(n: int) -> dict[str, dict[str, str]]:
    """Each null category its own level (``null2``..), so that a rejection names which one."""
    out = {"BASE": {"axis": "reference"}, "V01": {"axis": DEMOTED}}
    out.update({v: {"axis": "null" if n == 2 else f"null{int(v[1:])}"} for v in variants_of(n)[2:]})
    return out

DEMOTED = "demoted"
METRICS = ("score_delta", "marc", "flip_rate", "impact_ratio")
KEEP = ("p_value", "p_adj", "disadvantaged", "value", "rank_shift", "n_in_out", "n_out_in")


def setting_name(kind: str, ties: bool, effect: float, het: float) -> str:
    return f"{kind}-jobs{N_JOBS:02d}-{'ties' if ties else 'noties'}-effect{effect:g}-het{het:g}"


CELLS = (("sa", "c1"), ("sa", "c2"), ("sb", "c1"), ("sb", "c2"))


def run_chunk_2x2(kind: str, ties: bool, effect: float, het: float, chunk: int, size: int,
                  resamples: int, ranking: str, n_variants: int, multiplicity: str) -> dict:
    """One chunk of 2 × 2 audits: per cell, per audit, V01's score-test rejection and whether some null
    category is flagged on any metric of METRICS."""
    sim = CorrespondenceSim(n_jobs=N_JOBS, effect_se=effect, ties=ties, heterogeneity=het,
                            variants=variants_of(n_variants))
    name = setting_name(kind, ties, effect, het)
    frame = sim.frame(seeding.rng(SEED, "power_swap_in_2x2", ranking, name, chunk), 4 * size, first=4 * chunk * size)
    codes = sorted(frame["condition"].unique())
    thresholds = catalog.default_thresholds()
    out: dict[str, dict[str, list]] = {f"{s}/{c}": {"found": [], "null_flagged": []} for s, c in CELLS}
    nulls = list(variants_of(n_variants)[2:]) + ([] if effect > 0 else ["V01"])
    for a in range(size):
        cells = {code: CELLS[k] for k, code in enumerate(codes[4 * a:4 * a + 4])}
        audit = frame[frame["condition"].isin(cells)].copy()
        audit["system"] = audit["condition"].map(lambda c: cells[c][0])
        audit["condition"] = audit["condition"].map(lambda c: cells[c][1])
        m = analyse(audit, reference="BASE", k=K, alpha=ALPHA, n_bootstrap=resamples, seed=SEED,
                    thresholds=thresholds, score_range={"sa": SCORE_RANGE, "sb": SCORE_RANGE}, ranking=ranking,
                    variant_levels=levels_of(n_variants), multiplicity=multiplicity).metrics
        rejected = m["p_adj"].to_numpy(dtype=float) < ALPHA
        for s, c in CELLS:
            cell = (m["system"] == s) & (m["condition"] == c)
            found = cell & (m["metric"] == "score_delta") & (m["variant"] == "V01") & rejected
            flagged = cell & m["metric"].isin(METRICS) & m["variant"].isin(nulls) & rejected
            out[f"{s}/{c}"]["found"].append(bool(found.any()) if effect > 0 else None)
            out[f"{s}/{c}"]["null_flagged"].append(bool(flagged.any()))
    return {"chunk": chunk, "size": size, "cells": out}


def cells_rows(root: Path, settings: list[tuple[str, bool, float, float]]) -> list[dict]:
    """Per setting and cell of the 2 × 2 layout: rates with their MC SE."""
    rows = []
    for kind, ties, effect, het in settings:
        name = setting_name(kind, ties, effect, het)
        merged: dict[str, dict[str, list]] = {}
        for path in sorted((root / name).glob("chunk-*.json")):
            for cell, cols in json.loads(path.read_text())["cells"].items():
                for c, vals in cols.items():
                    merged.setdefault(cell, {}).setdefault(c, []).extend(vals)
        for cell, cols in merged.items():
            n = len(cols["null_flagged"])
            flag = float(np.mean(cols["null_flagged"]))
            found = [v for v in cols["found"] if v is not None]
            rate = float(np.mean(found)) if found else None
            rows.append({"setting": name, "cell": cell, "n": n, "null_flagged": flag,
                         "null_flagged_se": math.sqrt(flag * (1 - flag) / n), "score_found": rate,
                         "score_found_se": math.sqrt(rate * (1 - rate) / n) if rate is not None else None})
    return rows


def run_chunk(kind: str, ties: bool, effect: float, het: float, chunk: int, size: int,
              resamples: int, ranking: str, n_variants: int = 2, multiplicity: str = "run") -> dict:
    """One chunk of audits, each analysed alone: per (metric, variant), the columns of KEEP."""
    sim = CorrespondenceSim(n_jobs=N_JOBS, effect_se=effect, ties=ties, heterogeneity=het,
                            variants=variants_of(n_variants))
    name = setting_name(kind, ties, effect, het)
    frame = sim.frame(seeding.rng(SEED, "power_swap_in", ranking, name, chunk), size, first=chunk * size)
    thresholds = catalog.default_thresholds()
    out: dict[str, dict[str, list]] = {}
    m_bh: list[int] = []
    for _, audit in frame.groupby("condition", sort=True):
        res = analyse(audit, reference="BASE", k=K, alpha=ALPHA, n_bootstrap=resamples, seed=SEED,
                      thresholds=thresholds, score_range={"sim": SCORE_RANGE}, ranking=ranking,
                      variant_levels=levels_of(n_variants), multiplicity=multiplicity)
        m = res.metrics
        m_bh.append(int(m["p_adj"].notna().sum()))
        for row in m[m["metric"].isin(METRICS) & (m["variant"] != "BASE")].itertuples(index=False):
            dst = out.setdefault(f"{row.metric} {row.variant}", {c: [] for c in KEEP})
            for c in KEEP:
                v = getattr(row, c)
                if c == "disadvantaged":
                    dst[c].append(str(v) if isinstance(v, str) else "")
                else:  # pd.NA (nullable Int64 counts) and None become None, as nan does
                    try:
                        v = float(v)
                    except (TypeError, ValueError):
                        v = math.nan
                    dst[c].append(v if math.isfinite(v) else None)
    return {"chunk": chunk, "size": size, "m_bh": m_bh, "rows": out}


def chunk_path(root: Path, name: str, chunk: int) -> Path:
    return root / name / f"chunk-{chunk:04d}.json"


def _arr(vals: list) -> np.ndarray:
    return np.array([math.nan if v is None else v for v in vals], dtype=float)


def flagged_rows(root: Path, settings: list[tuple[str, bool, float, float]], n_variants: int) -> list[dict]:
    """Per setting: the share of audits in which some null category (V02..) is flagged on any metric
    of METRICS (``p_adj < 0.05``), and in which V01 is found on its score test."""
    out = []
    for kind, ties, effect, het in settings:
        name = setting_name(kind, ties, effect, het)
        per: dict[str, list] = {}
        for path in sorted((root / name).glob("chunk-*.json")):
            rec = json.loads(path.read_text())
            for key, cols in rec["rows"].items():
                per.setdefault(key, []).extend(cols["p_adj"])
        nulls = [v for v in variants_of(n_variants)[2:]] + ([] if effect > 0 else ["V01"])
        flags = [_arr(per[f"{m} {v}"]) < ALPHA for m in METRICS for v in nulls if f"{m} {v}" in per]
        if not flags:
            continue
        any_null = np.logical_or.reduce(flags)
        n = len(any_null)
        found = _arr(per.get("score_delta V01", [])) < ALPHA
        out.append({"setting": name, "n": n, "null_flagged": float(any_null.mean()),
                    "null_flagged_se": math.sqrt(any_null.mean() * (1 - any_null.mean()) / n),
                    "limit": ALPHA + 2 * math.sqrt(ALPHA * (1 - ALPHA) / n),
                    "score_found": float(found.mean()) if effect > 0 and len(found) else None})
    return out


def summarise(root: Path, settings: list[tuple[str, bool, float, float]], n_variants: int = 2) -> list[dict]:
    rows = []
    for kind, ties, effect, het in settings:
        name = setting_name(kind, ties, effect, het)
        loaded: dict[str, dict[str, list]] = {}
        m_bh: list[int] = []
        for path in sorted((root / name).glob("chunk-*.json")):
            rec = json.loads(path.read_text())
            m_bh.extend(rec["m_bh"])
            for key, cols in rec["rows"].items():
                dst = loaded.setdefault(key, {})
                for c, vals in cols.items():
                    dst.setdefault(c, []).extend(vals)
        for metric in METRICS:
            for variant in variants_of(n_variants)[1:]:
                cols = loaded.get(f"{metric} {variant}")
                if not cols:
                    continue
                n = len(cols["p_value"])
                p, q = _arr(cols["p_value"]), _arr(cols["p_adj"])
                named = np.array(cols["disadvantaged"], dtype=object)
                own = levels_of(n_variants)[variant]["axis"]
                in_bh = bool(np.isfinite(q).any())
                rej = np.isfinite(q) & (q < ALPHA)
                planted = variant == "V01" and effect > 0
                row = {"setting": name, "kind": kind, "ties": ties, "effect_se": effect,
                       "heterogeneity": het, "metric": metric, "variant": variant, "n": n,
                       "role": "power" if planted else "size", "in_bh": in_bh,
                       "mean_bh_family": float(np.mean(m_bh)) if m_bh else math.nan,
                       "raw_rate": float(np.mean(np.isfinite(p) & (p < ALPHA))),
                       "raw_defined": int(np.isfinite(p).sum()),
                       "reject_rate": float(rej.mean()),
                       "named_variant_rate": float(np.mean(rej & (named == own))),
                       "named_reference_rate": float(np.mean(rej & (named == "reference"))),
                       "named_none_rate": float(np.mean(rej & ~np.isin(named, [own, "reference"])))}
                for diag in ("value", "rank_shift", "n_in_out", "n_out_in"):
                    vals = _arr(cols[diag])
                    row[f"mean_{diag}"] = float(np.nanmean(vals)) if np.isfinite(vals).any() else None
                if planted:
                    rate = row["named_variant_rate"]
                    row["power"] = rate
                    row["power_mc_se"] = math.sqrt(rate * (1 - rate) / n)
                    row["wrong_direction_rate"] = row["named_reference_rate"]
                    row["verdict"] = ("no p_adj" if not in_bh else
                                      "ok" if rate >= TARGET_POWER else "below 80%")
                else:
                    rate = row["reject_rate"]
                    row["size"] = rate
                    row["size_mc_se"] = math.sqrt(rate * (1 - rate) / n)
                    tol = ALPHA + 2 * math.sqrt(ALPHA * (1 - ALPHA) / n)
                    row["size_limit"] = tol
                    if in_bh:
                        row["verdict"] = "ok" if rate <= tol else "over"
                    else:  # raw p only (impact_ratio under swap-in, rank/selection under per-variant)
                        row["verdict"] = ("raw ok" if row["raw_rate"] <= tol else "raw over") + " (no p_adj)"
                rows.append(row)
    return rows


def _pct(x: float | None, se: float | None = None) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return ""
    return f"{100 * x:.1f}%" + (f" ({100 * se:.1f})" if se is not None else "")


def table_lines(rows: list[dict]) -> list[str]:
    lines = ["| setting | variant | metric | power or size (MC SE) | wrong-direction rate | raw-p rate | "
             "mean flips out / in | verdict |",
             "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        if r["role"] == "power":
            main = ("n/a (no p_adj)" if not r["in_bh"] else f"power {_pct(r['power'], r['power_mc_se'])}")
            wrong = _pct(r["wrong_direction_rate"]) if r["in_bh"] else ""
        else:
            main = ("n/a (no p_adj)" if not r["in_bh"] else f"size {_pct(r['size'], r['size_mc_se'])}")
            # for a null row: which side the rejections named (variant / reference)
            wrong = (f"{_pct(r['named_variant_rate'])} / {_pct(r['named_reference_rate'])}"
                     if r["in_bh"] else "")
        flips = (f"{r['mean_n_in_out']:.1f} / {r['mean_n_out_in']:.1f}"
                 if r["metric"] == "flip_rate" and r["mean_n_in_out"] is not None else "")
        lines.append(f"| {r['setting']} | {r['variant']} | {r['metric']} | {main} | {wrong} | "
                     f"{_pct(r['raw_rate'])} | {flips} | {r['verdict']} |")
    return lines


def crossing(rows: list[dict], ties: bool, metric: str, key: str) -> str:
    """effect_se at which a V01 rate first reaches 80%, linearly interpolated between sweep points."""
    pts = sorted((r["effect_se"], r[key]) for r in rows
                 if r["kind"] == "sweep" and r["ties"] == ties and r["metric"] == metric
                 and r["variant"] == "V01" and r["effect_se"] > 0)
    for (e0, p0), (e1, p1) in zip([(0.0, 0.0)] + pts, pts):
        if p1 >= TARGET_POWER:
            if p0 >= TARGET_POWER or e0 == 0.0:
                return f"<= {e1:g}" if e0 == 0.0 else f"{e1:g}"
            return f"~{e0 + (TARGET_POWER - p0) * (e1 - e0) / (p1 - p0):.1f}"
    return f"> {pts[-1][0]:g}" if pts else ""


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--audits", type=int, default=200)
    ap.add_argument("--resamples", type=int, default=99)
    ap.add_argument("--chunk", type=int, default=25)
    ap.add_argument("--ties", choices=["both", "yes", "no"], default="both")
    ap.add_argument("--ranking", choices=["swap_in", "per_variant"], default="swap_in")
    ap.add_argument("--sweep", action="store_true", help="also sweep the planted effect")
    ap.add_argument("--sweep-audits", type=int, default=100)
    ap.add_argument("--sweep-effects", type=float, nargs="+", default=[0.0, 3.0, 5.0, 8.0, 12.0])
    ap.add_argument("--procs", type=int, default=2)
    ap.add_argument("--out", type=Path, default=RESULTS / "power_swap_in")
    ap.add_argument("--table-only", action="store_true", help="summarise the saved chunks, run nothing")
    ap.add_argument("--variants", type=int, default=2, help="non-reference categories: V01 demoted, the rest null")
    ap.add_argument("--multiplicity", choices=["run", "per_metric", "hierarchical", "graphical"], default="run")
    ap.add_argument("--layout", choices=["1", "2x2"], default="1",
                    help="2x2: each audit is 2 systems x 2 conditions in one analyse call")
    args = ap.parse_args()
    if args.variants < 2:
        ap.error("--variants must be at least 2 (V01 planted, V02 null)")
    suffix = ("" if args.variants == 2 else f"_v{args.variants}") + (
        "" if args.multiplicity == "run" else f"_{args.multiplicity}") + ("_2x2" if args.layout == "2x2" else "")
    root = args.out / (args.ranking + suffix)
    if args.layout == "2x2" and args.sweep:
        ap.error("--layout 2x2 runs the main settings only (no --sweep)")
    ties = {"both": [False, True], "yes": [True], "no": [False]}[args.ties]
    main_settings = [(kind, t, e, h) for t in ties for kind, e, h in (("power", 3.0, 0.5), ("null", 0.0, 0.0))]
    sweep_settings = [("sweep", t, e, 0.5) for t in ties for e in args.sweep_effects] if args.sweep else []
    todo = []
    for settings, total in ((main_settings, args.audits), (sweep_settings, args.sweep_audits)):
        for kind, t, e, h in settings:
            for c in range(math.ceil(total / args.chunk)):
                if not chunk_path(root, setting_name(kind, t, e, h), c).exists():
                    todo.append((kind, t, e, h, c, args.chunk, args.resamples, args.ranking, args.variants,
                                 args.multiplicity))
    print(f"{len(main_settings) + len(sweep_settings)} settings, {len(todo)} chunks of {args.chunk} "
          f"audits to run ({args.ranking})", flush=True)
    start = time.time()
    work = run_chunk_2x2 if args.layout == "2x2" else run_chunk
    if todo and not args.table_only:
        with ProcessPoolExecutor(max_workers=args.procs) as pool:
            futures = {pool.submit(work, *task): task for task in todo}
            for i, fut in enumerate(as_completed(futures), 1):
                task = futures[fut]
                rec = fut.result()
                path = chunk_path(root, setting_name(*task[:4]), rec["chunk"])
                path.parent.mkdir(parents=True, exist_ok=True)
                tmp = path.with_suffix(".tmp")
                tmp.write_text(json.dumps(rec))
                tmp.replace(path)
                if i % 10 == 0 or i == len(todo):
                    print(f"{i}/{len(todo)} chunks, {time.time() - start:.0f} s", flush=True)
    if args.layout == "2x2":
        return write_2x2(args, root, main_settings, suffix, start)
    rows = summarise(root, main_settings, args.variants)
    sweep_rows = summarise(root, sweep_settings, args.variants)
    flagged = flagged_rows(root, main_settings, args.variants)
    stem = "power_swap_in" + ("" if args.ranking == "swap_in" else "_per_variant") + suffix
    tol = ALPHA + 2 * math.sqrt(ALPHA * (1 - ALPHA) / max(args.audits, 1))
    lines = [f"# Power and size of the counterfactual tests, {args.ranking} ranking "
             f"({time.strftime('%Y-%m-%d')})", "",
             f"{N_JOBS} jobs x 40 candidates, K = 10; one `analyse` per audit (own BH family, "
             f"alpha {ALPHA}); {args.resamples} bootstrap resamples (p-values do not use them). "
             "Power = share of audits with V01 `p_adj < 0.05` and `disadvantaged == demoted`; "
             "wrong direction = same with `disadvantaged == reference`. Size = share with "
             f"`p_adj < 0.05`; its wrong-direction column splits the rejections by the side named "
             f"(variant / reference); `ok` when <= 5% + 2 MC SE of a 5% rate ({100 * tol:.1f}% at "
             f"n = {args.audits}). impact_ratio shares flip_rate's McNemar (p_adj empty): raw p only. "
             "Mean flips out / in: mean `n_in_out` / `n_out_in` (out = dropped from the top-K).", "",
             f"{args.variants} non-reference categories (V01 planted, the others null); multiplicity "
             f"{args.multiplicity}.", "",
             "## Planted demotion (effect_se 3, heterogeneity 0.5) and planted null (effect_se 0, "
             "heterogeneity 0)", "", *table_lines(rows), "",
             "## Audits in which some null category is flagged (any of " + ", ".join(METRICS) + ", p_adj < 0.05)",
             "", "| setting | audits | null category flagged (MC SE) | limit (5% + 2 MC SE) | V01 found on its score test |",
             "|---|---|---|---|---|",
             *[f"| {f['setting']} | {f['n']} | {_pct(f['null_flagged'], f['null_flagged_se'])} | {_pct(f['limit'])} | "
               f"{_pct(f['score_found']) if f['score_found'] is not None else ''} |" for f in flagged]]
    if sweep_rows:
        lines += ["", f"## Sweep of the planted demotion (heterogeneity 0.5, {args.sweep_audits} audits each)",
                  "", *table_lines(sweep_rows), "",
                  "effect_se (SE of the pooled paired score difference) at which V01 first reaches "
                  "80% (linear interpolation between sweep points):", "",
                  "| ties | score_delta (BH) | marc (BH) | flip_rate (BH) | flip_rate (raw p) |",
                  "|---|---|---|---|---|"]
        for t in ties:
            lines.append(f"| {'yes' if t else 'no'} | {crossing(sweep_rows, t, 'score_delta', 'power')} | "
                         f"{crossing(sweep_rows, t, 'marc', 'power')} | "
                         f"{crossing(sweep_rows, t, 'flip_rate', 'power')} | "
                         f"{crossing(sweep_rows, t, 'flip_rate', 'raw_rate')} |")
    text = "\n".join(lines) + "\n"
    (args.out.parent / f"{stem}.md").write_text(text)
    (args.out.parent / f"{stem}.json").write_text(json.dumps({"ranking": args.ranking, "audits": args.audits,
                                                      "variants": args.variants, "multiplicity": args.multiplicity,
                                                      "rows": rows, "sweep": sweep_rows, "flagged": flagged},
                                                     indent=1))
    print(text)
    print(f"{time.time() - start:.0f} s; table: {args.out.parent / (stem + '.md')}")
    return 0


def write_2x2(args, root: Path, settings: list, suffix: str, start: float) -> int:
    """The 2 × 2 table (``power_swap_in<suffix>.md`` and ``.json``)."""
    rows = cells_rows(root, settings)
    stem = "power_swap_in" + ("" if args.ranking == "swap_in" else "_per_variant") + suffix
    lines = [f"# 2 systems x 2 conditions per audit, {args.ranking} ranking ({time.strftime('%Y-%m-%d')})", "",
             f"{N_JOBS} jobs x 40 candidates per cell, K = 10; {args.variants} non-reference categories (V01 "
             f"planted in every cell, the others null); one `analyse` per audit over its four cells; multiplicity "
             f"{args.multiplicity}. Found = V01's score test `p_adj < 0.05`; flagged = some null category with "
             f"`p_adj < 0.05` on any of {', '.join(METRICS)}. MC SE in brackets.", "",
             "| setting | cell | audits | V01 found on its score test | some null category flagged |",
             "|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['setting']} | {r['cell']} | {r['n']} | "
                     f"{_pct(r['score_found'], r['score_found_se']) if r['score_found'] is not None else ''} | "
                     f"{_pct(r['null_flagged'], r['null_flagged_se'])} |")
    text = "\n".join(lines) + "\n"
    (args.out.parent / f"{stem}.md").write_text(text)
    (args.out.parent / f"{stem}.json").write_text(json.dumps({"ranking": args.ranking, "audits": args.audits,
                                                              "variants": args.variants, "layout": "2x2",
                                                              "multiplicity": args.multiplicity, "cells": rows},
                                                             indent=1))
    print(text)
    print(f"{time.time() - start:.0f} s; table: {args.out.parent / (stem + '.md')}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
