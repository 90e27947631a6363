"""Coverage of every interval in ``metrics.csv`` on simulated audits with known truth (issues 12 and 39 §4).

Settings (``--settings``, names or shell patterns; default: all 21):

- ``jobsNN-{ties,noties}-effectE`` (NN = 2, 5, 20; E = 0, 1, 3: 18 settings) and ``jobs50-noties-effect0``:
  :class:`runtime.analysis.counterfactual_sim.CorrespondenceSim` (40 base candidates per job, 20 matching,
  BASE + V01 (demoted by E standard errors of the pooled mean paired difference) + V02 (null), unimodal
  reference scores on 0-100; ``ties``: whole points).
- ``example-observed`` and ``example-null``: :class:`ExampleResampler`, built on the committed example
  ``tests/data/example-paired.csv`` (``make example``'s ``paired.csv`` under methods 6: minilm cosine scores,
  5 jobs x 40 base candidates, 20 matching, bimodal reference scores, match d = 4.26, the top-10 cut inside the
  matching cluster). Variants BASE, V01, V02 (:data:`EXAMPLE_VARIANTS`); score range [0, 1].

  **Estimand of an example setting.** The population of job ``j`` is, per match cluster ``c`` (20 matching, 20
  not), the smoothed empirical distribution of the example's candidates: a candidate ``i`` of ``(j, c)`` drawn
  uniformly with replacement; its reference score ``m + (s_i - m + h z) / sqrt(1 + h^2 / sd^2)`` (``z ~ N(0,1)``;
  ``m``, ``sd``: the cluster's mean and SD of reference scores; ``h``: Silverman's bandwidth of the cluster), so
  the cluster keeps its mean and variance and two draws of one candidate do not tie; each variant's score that
  reference score plus candidate ``i``'s observed paired difference ``s_v,i - s_ref,i`` (``example-null``: times
  an independent random sign per candidate and variant, so every difference has mean 0 and the same size).
  An audit draws 20 + 20 candidates per job. The truth of a metric is its expectation over such audits (the
  jobs fixed, as in the simulated settings), estimated by the mean over ``--truth`` audits, and ``example-observed``'s
  score_delta truth is, exactly, the mean of the example's paired differences on the metric's variant
  (``tests/test_coverage_bench.py`` checks it against the CSV).

In every setting the jobs are fixed and only the candidates are re-drawn, so the estimand of every interval
is the metric's expectation over candidates for those jobs. Its "truth" is the mean of the metric over
``--truth`` independent audits (values only: one resample); the Monte Carlo SE of that truth is reported next
to the coverage. Each of ``--audits`` audits then runs :func:`runtime.analysis.analyse` exactly as
``audit execute`` does (``--resamples`` = 499 by default, ``--ranking`` swap_in by default), and an interval
covers when ``low <= truth <= high``.

Intervals checked: every interval ``metrics.csv`` shows, ``ci_low``/``ci_high`` of every metric and
``decision_low``/``decision_high`` where a row decides on another statistic (``decision_on``: the flip rate,
retention and impact ratio decide on the selection ratio at their cutoff, issue 30 §2), whose truth is that
statistic's (the bench's cutoffs are one, ``K``: the selection ratio's truth at ``k.group``). Every interval is the
one ``metrics.csv`` shows in this version: the percentile bootstrap (the flip rate: Wilson), since the ratios'
logit / log intervals were measured and not adopted in methods 11 (:data:`runtime.analysis.stats.RATIO_TRANSFORMS`,
:data:`runtime.analysis.coverage.INTERVALS` empty). Each cover chunk records its interval methods (``intervals``)
and its size; a chunk saved under other methods or another ``--chunk`` is run again rather than mixed in.

Work is cut into chunks of ``--chunk`` audits (truth chunks: ``TRUTH_CHUNKS`` times as many), each one seeded by
(setting, phase, chunk) and saved as soon as it ends under ``bench/results/coverage_counterfactual/<setting>/``
(one gzipped JSON per chunk, values to 7 significant digits; **committed**, so a later checkout resumes where a
run stopped and re-derives the table). The table and ``--publish`` always read every setting's saved chunks, whichever
settings ``--settings`` ran. Chunks run in round-robin over the settings (truth chunks first), so a
stopped run leaves every setting about as far along; ``--minutes`` stops dispatching new chunks after that long
(the running ones finish and are saved). ``--procs`` runs chunks in parallel.

    python bench/coverage_counterfactual.py [--settings PATTERN ...] [--audits 1000] [--truth 2000]
        [--resamples 499] [--chunk 25] [--procs 2] [--minutes M] [--table-only] [--publish [--partial]]

Run as a script, it imports only numpy, pandas, scipy and statsmodels (it loads ``compiler/catalog.py`` without
``compiler/__init__.py``, which would pull pydantic).

Output: ``bench/results/coverage_counterfactual.md`` (the table) and ``.json`` (every row: setting, metric,
interval, variant, truth with its MC SE, coverage with its MC SE, misses above / below, mean width, verdict),
also for chunks still missing (``n`` says how many audits a row rests on). Verdict: ``ok`` when the coverage lies
in [93%, 97%], ``under``/``over`` otherwise, ``degenerate`` when the metric does not vary across audits (the
reference compared with itself) and ``undefined`` when no interval exists.
"""

from __future__ import annotations

import argparse
import fnmatch
import gzip
import json
import math
import sys
import time
import types
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
if __name__ in ("__main__", "__mp_main__") and "compiler" not in sys.modules:
    # compiler/__init__.py imports the spec models (pydantic, rfc8785): the analysis needs only the catalogue
    _pkg = types.ModuleType("compiler")
    _pkg.__path__ = [str(ROOT / "compiler")]
    sys.modules["compiler"] = _pkg

from compiler import catalog  # noqa: E402
from runtime import seeding  # noqa: E402
from runtime.analysis import analyse, coverage  # noqa: E402
from runtime.analysis.counterfactual_sim import SCORE_RANGE, CorrespondenceSim  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"
K = {"counterfactual": 10, "group": 10, "merit": 20}
SEED = 2026
LOW, HIGH = 0.93, 0.97
#: A truth chunk holds this many times ``--chunk`` audits (values only: about 1/20 of a cover audit's time).
TRUTH_CHUNKS = 4
#: The committed example the ``example-*`` settings resample (see the module doc).
EXAMPLE = ROOT / "tests" / "data" / "example-paired.csv"
EXAMPLE_VARIANTS = ("BASE", "V01", "V02")
EXAMPLE_SCORE_RANGE = (0.0, 1.0)
SIM_SETTINGS = tuple(f"jobs{j:02d}-{t}-effect{e}" for j in (2, 5, 20) for t in ("noties", "ties") for e in (0, 1, 3))
SETTINGS = SIM_SETTINGS + ("jobs50-noties-effect0", "example-observed", "example-null")
#: Significant digits kept in a chunk file.
DIGITS = 7

assert K["counterfactual"] == K["group"], "decision intervals are checked against the selection ratio at k.group"


@dataclass(frozen=True)
class ExampleResampler:
    """Audits drawn from the committed example's candidates (the module doc: estimand of an example setting).

    Attributes
    ----------
    null : bool
        Each paired difference times an independent random sign (``example-null``).
    path : Path
        The example's ``paired.csv``.
    variants : tuple of str
        The reference first.
    """

    null: bool = False
    path: Path = EXAMPLE
    variants: tuple[str, ...] = EXAMPLE_VARIANTS

    @property
    def n_jobs(self) -> int:
        return len(self.population()[0])

    def population(self):
        return _population(str(self.path), self.variants)

    def frame(self, rng: np.random.Generator, n_audits: int, *, first: int = 0) -> pd.DataFrame:
        """The paired frame of ``n_audits`` audits, one per ``condition`` (as :meth:`CorrespondenceSim.frame`)."""
        jobs, clusters = self.population()
        parts = []
        for a in range(n_audits):
            cond = f"a{a + first:04d}"
            for job in jobs:
                cv = 0
                for match, (ref, diff, m, sd, h) in sorted(clusters[job].items(), reverse=True):
                    n = ref.size
                    i = rng.integers(0, n, size=n)
                    z = rng.normal(size=n)
                    s_ref = m + (ref[i] - m + h * z) / math.sqrt(1.0 + (h / sd) ** 2) if sd > 0 else ref[i]
                    d = diff[:, i]
                    if self.null:
                        d = d * rng.choice((-1.0, 1.0), size=d.shape)
                    ids = [f"c{c:02d}" for c in range(cv, cv + n)]
                    cv += n
                    for v, variant in enumerate(self.variants):
                        parts.append(pd.DataFrame({
                            "condition": cond, "job_id": job, "cv_id": ids, "variant": variant,
                            "score": s_ref + (d[v - 1] if v else 0.0), "is_true_match": int(match)}))
        out = pd.concat(parts, ignore_index=True)
        out.insert(0, "system", "sim")
        out.insert(2, "replicate", 0)
        out["rank"] = 0
        return out[["system", "condition", "replicate", "job_id", "cv_id", "variant", "score", "rank", "is_true_match"]]


@lru_cache(maxsize=4)
def _population(path: str, variants: tuple[str, ...]):
    """``(jobs, {job: {match: (ref, diff, mean, sd, bandwidth)}})``: reference scores ``(n,)`` and paired
    differences ``(n_variants - 1, n)`` of each job's match cluster, from the example's first system and condition."""
    frame = pd.read_csv(path)
    frame = frame[(frame["system"] == frame["system"].iat[0]) & (frame["condition"] == frame["condition"].iat[0])
                  & (frame["replicate"] == frame["replicate"].iat[0])]
    wide = frame.pivot_table(index=["job_id", "cv_id", "is_true_match"], columns="variant", values="score").reset_index()
    jobs = tuple(sorted(wide["job_id"].unique()))
    clusters: dict[str, dict[int, tuple]] = {}
    for (job, match), sub in wide.groupby(["job_id", "is_true_match"]):
        sub = sub.sort_values("cv_id")
        ref = sub[variants[0]].to_numpy(dtype=float)
        diff = np.stack([sub[v].to_numpy(dtype=float) - ref for v in variants[1:]])
        sd = float(np.std(ref, ddof=1))
        iqr = float(np.subtract(*np.percentile(ref, [75, 25])))
        h = 0.9 * min(sd, iqr / 1.34 if iqr > 0 else sd) * ref.size ** -0.2  # Silverman's rule
        clusters.setdefault(job, {})[int(match)] = (ref, diff, float(ref.mean()), sd, h)
    return jobs, clusters


def parse_setting(name: str):
    """``(model, score_range, n_jobs, ties, effect)`` of a setting name of :data:`SETTINGS`."""
    if name.startswith("example-"):
        kind = name.split("-", 1)[1]
        if kind not in ("observed", "null"):
            raise ValueError(f"unknown setting {name!r}")
        model = ExampleResampler(null=kind == "null")
        return model, EXAMPLE_SCORE_RANGE, model.n_jobs, False, (math.nan if kind == "observed" else 0.0)
    jobs, ties, effect = name.split("-")
    n_jobs, eff = int(jobs.removeprefix("jobs")), float(effect.removeprefix("effect"))
    return CorrespondenceSim(n_jobs=n_jobs, effect_se=eff, ties=ties == "ties"), SCORE_RANGE, n_jobs, ties == "ties", eff


def setting_name(n_jobs: int, ties: bool, effect: float) -> str:
    return f"jobs{n_jobs:02d}-{'ties' if ties else 'noties'}-effect{effect:g}"


#: Absolute gaps: their estimand is the absolute value of the expected signed rate difference.
GAPS = ("equal_opportunity_gap", "equalized_odds_gap")


def _round(values) -> list[float | None]:
    return [None if not math.isfinite(x) else float(f"{x:.{DIGITS}g}") for x in map(float, values)]


def run_chunk(name: str, phase: str, chunk: int, size: int, resamples: int, ranking: str) -> dict:
    """One chunk of audits: per (metric, variant), the values (and the intervals in phase 'cover': ``ci_low``,
    ``ci_high``, and ``decision_on``, ``decision_low``, ``decision_high`` where the row decides on another statistic)."""
    model, score_range, _, _, _ = parse_setting(name)
    rng = seeding.rng(SEED, "coverage_counterfactual", name, phase, chunk)
    frame = model.frame(rng, size, first=chunk * size)
    res = analyse(frame, reference="BASE", k=K, alpha=0.05,
                  n_bootstrap=resamples if phase == "cover" else 1, seed=SEED + chunk,
                  thresholds=catalog.default_thresholds(), score_range={"sim": score_range},
                  ranking=ranking)
    out: dict[str, dict] = {}
    for (metric, variant), sub in res.metrics.groupby(["metric", "variant"], sort=False):
        if phase == "truth":
            cols = ["value", "tpr", "fpr"] if metric in GAPS else ["value"]
        else:
            cols = ["value", "ci_low", "ci_high"]
        rec: dict = {c: _round(sub[c]) for c in cols}
        if phase == "cover":
            on = set(sub["decision_on"])
            if on != {"value"}:
                if len(on) != 1:
                    raise ValueError(f"{metric} {variant}: rows decide on {sorted(on)}")
                rec["decision_on"] = on.pop()
                rec["decision_low"] = _round(sub["decision_low"])
                rec["decision_high"] = _round(sub["decision_high"])
        out[f"{metric} {variant}"] = rec
    return {"phase": phase, "chunk": chunk, "size": size, "intervals": intervals(), "rows": out}


def intervals() -> dict[str, str]:
    """Each metric's interval method in this version (:func:`runtime.analysis.coverage.interval_method`: the
    percentile bootstrap for every metric since :data:`runtime.analysis.coverage.INTERVALS` is empty). A chunk saved
    under other methods is run again, and ``--publish`` records them, so the report never quotes one method's
    coverage for another's interval."""
    return {m: coverage.interval_method(m) for m in catalog.METRICS}


def read_chunk(path: Path) -> dict:
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        return json.load(fh)


def current(path: Path, size: int | None = None, rec: dict | None = None) -> bool:
    """Whether a saved chunk was computed with this version's interval methods for every metric and (given ``size``,
    the chunk size its phase runs with now) as many audits: a chunk without ``intervals`` predates them (percentile
    intervals, like today's; recorded chunks of methods 11's transformed intervals are not). A chunk that is not
    current is run again; until then :func:`load` still reads its rows of the metrics it is current for
    (:func:`stale_metrics`)."""
    rec = read_chunk(path) if rec is None else rec
    if size is not None and rec.get("size") != size:
        return False
    return not stale_metrics(rec)


def stale_metrics(rec: dict) -> set[str]:
    """The metrics whose interval method a saved chunk did not record as today's (none for a truth chunk: values
    only, one resample, so the interval method does not enter)."""
    if rec.get("phase") == "truth":
        return set()
    saved = rec.get("intervals") or {}
    return {m for m, method in intervals().items() if saved.get(m, coverage.LEGACY_INTERVAL) != method}


def gap_truth(truth: dict, metric: str, variant: str) -> tuple[float, float]:
    """``|E(TPR_v - TPR_ref)|`` (and for equalized odds the max with the FPR one), with its MC SE."""
    out = []
    for rate in ("tpr", "fpr") if metric == "equalized_odds_gap" else ("tpr",):
        d = (np.asarray(truth[f"{metric} {variant}"][rate], dtype=float)
             - np.asarray(truth[f"{metric} BASE"][rate], dtype=float))
        out.append((abs(float(np.nanmean(d))), float(np.nanstd(d, ddof=1) / math.sqrt(np.isfinite(d).sum()))))
    return max(out)


def chunk_path(root: Path, name: str, phase: str, chunk: int) -> Path:
    return root / name / f"{phase}-{chunk:04d}.json.gz"


def _floats(values) -> np.ndarray:
    return np.asarray([math.nan if v is None else v for v in values], dtype=float)


def load(root: Path, name: str, sizes: dict[str, int] | None = None) -> dict[str, dict[str, dict]]:
    """The saved chunks of one setting, ``{phase: {"metric variant": {column: values}}}``: of each chunk of the
    current size, the rows of the metrics whose interval method it recorded as today's (methods 14 changed MARC's
    only: the methods-13 chunks still measure every other interval until they are run again)."""
    loaded: dict[str, dict[str, dict]] = {"truth": {}, "cover": {}}
    for path in sorted((root / name).glob("*.json.gz")):
        rec = read_chunk(path)
        size = (sizes or {}).get(rec["phase"])
        if size is not None and rec.get("size") != size:
            continue
        stale = stale_metrics(rec)
        for key, cols in rec["rows"].items():
            if key.split(" ")[0] in stale:
                continue
            dst = loaded[rec["phase"]].setdefault(key, {})
            for c, vals in cols.items():
                if c == "decision_on":
                    dst[c] = vals
                else:
                    dst.setdefault(c, []).extend(vals)
    return loaded


def _truth(loaded: dict, metric: str, variant: str) -> tuple[float, float, np.ndarray]:
    vals = _floats(loaded["truth"].get(f"{metric} {variant}", {}).get("value", []))
    vals = vals[np.isfinite(vals)]
    if vals.size == 0:
        return math.nan, math.nan, vals
    t = float(vals.mean())
    se = float(vals.std(ddof=1) / math.sqrt(vals.size)) if vals.size > 1 else math.nan
    if metric in GAPS:  # |E signed difference|, not E|signed difference| (biased away from 0)
        t, se = gap_truth(loaded["truth"], metric, variant)
    return t, se, vals


def _coverage_row(row: dict, truth: float, truth_se: float, truth_vals: np.ndarray, value: np.ndarray,
                  lo: np.ndarray, hi: np.ndarray) -> dict:
    row = dict(row, n=int(value.size), n_truth=int(truth_vals.size))
    if truth_vals.size == 0 or not math.isfinite(truth):
        return {**row, "verdict": "undefined"}
    has = np.isfinite(lo) & np.isfinite(hi)
    n_ci = int(has.sum())
    cov = float(((lo[has] <= truth + 1e-12) & (truth - 1e-12 <= hi[has])).mean()) if n_ci else math.nan
    row.update(truth=truth, truth_mc_se=truth_se, sd_value=float(np.nanstd(value, ddof=1)) if value.size > 1 else math.nan,
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
    return row


def summarise(root: Path, names: list[str], sizes: dict[str, int] | None = None) -> list[dict]:
    """One row per setting x metric x interval (``ci``; ``decision``: ``decision_low``/``decision_high``, against
    the truth of the statistic in ``decision_on``) x variant."""
    rows = []
    for name in names:
        _, _, n_jobs, ties, effect = parse_setting(name)
        loaded = load(root, name, sizes)
        for key, cover in loaded["cover"].items():
            metric, variant = key.split(" ")
            base = {"setting": name, "n_jobs": n_jobs, "ties": ties, "effect_se": effect, "metric": metric,
                    "variant": variant}
            value = _floats(cover["value"])
            truth, truth_se, truth_vals = _truth(loaded, metric, variant)
            rows.append(_coverage_row({**base, "interval": "ci"}, truth, truth_se, truth_vals, value,
                                      _floats(cover["ci_low"]), _floats(cover["ci_high"])))
            if "decision_on" in cover:
                on = cover["decision_on"]
                t, t_se, t_vals = _truth(loaded, on, variant)
                rows.append(_coverage_row({**base, "interval": f"decision ({on})"}, t, t_se, t_vals,
                                          _floats(loaded["cover"][f"{on} {variant}"]["value"]),
                                          _floats(cover["decision_low"]), _floats(cover["decision_high"])))
    return rows


def _effect(r: dict) -> str:
    return "obs." if not math.isfinite(r["effect_se"]) else f"{r['effect_se']:g}"


def write_table(rows: list[dict], path_md: Path, header: str) -> None:
    lines = [header, "",
             "| setting | jobs | ties | effect (SE) | metric | interval | variant | n | truth (MC SE) | coverage (MC SE) | miss above / below | mean width | verdict |",
             "|---|---:|:---:|---:|---|---|---|---:|---|---|---|---:|---|"]
    for r in rows:
        lead = (f"| {r['setting']} | {r['n_jobs']} | {'yes' if r['ties'] else 'no'} | {_effect(r)} | {r['metric']} | "
                f"{r['interval']} | {r['variant']} | {r['n']} |")
        if "coverage" not in r:
            lines.append(f"{lead} | | | | {r['verdict']} |")
            continue
        lines.append(
            f"{lead} {r['truth']:.4f} ({r['truth_mc_se']:.4f}) | {100 * r['coverage']:.1f}% ({100 * r['coverage_mc_se']:.1f}) | "
            f"{100 * r['above']:.1f}% / {100 * r['below']:.1f}% | {r['mean_width']:.4f} | {r['verdict']} |")
    path_md.write_text("\n".join(lines) + "\n")


def publish(rows: list[dict], names: list[str], *, audits: int, ranking: str, partial: bool = False) -> dict:
    """Per metric and job count, the lowest and highest coverage of its ``ci`` interval over the settings
    (degenerate and undefined rows left out): ``runtime/analysis/coverage_measured.json``
    (:mod:`runtime.analysis.coverage`). Only job counts whose every setting has ``audits`` audits are published,
    unless ``partial``: then every job count, ``audits`` the fewest audits a published row rests on and
    ``partial`` true (``n_settings``: per job count, the settings it rests on)."""
    rows = [r for r in rows if r["interval"] == "ci"]
    by_jobs: dict[int, list[str]] = {}
    for name in names:
        by_jobs.setdefault(parse_setting(name)[2], []).append(name)
    if partial:
        complete = sorted(by_jobs)
    else:
        full = {r["setting"] for r in rows} - {r["setting"] for r in rows if r["n"] < audits}
        complete = sorted(j for j, ss in by_jobs.items() if set(ss) <= full)
        if len(complete) < len(by_jobs):
            print(f"publishing {complete} jobs only: other job counts have settings with fewer than "
                  f"{audits} audits (run the bench again to complete them, or --partial)")
    table: dict[str, dict[str, list[float]]] = {}
    used = []
    for r in rows:
        if r["verdict"] not in ("ok", "under", "over") or r["n_jobs"] not in complete:
            continue
        used.append(r)
        lo_hi = table.setdefault(r["metric"], {}).setdefault(str(r["n_jobs"]), [1.0, 0.0])
        lo_hi[0], lo_hi[1] = min(lo_hi[0], round(r["coverage"], 3)), max(lo_hi[1], round(r["coverage"], 3))
    out = {"source": "bench/coverage_counterfactual.py", "date": time.strftime("%Y-%m-%d"), "ranking": ranking,
           "audits": min((r["n_ci"] for r in used), default=0) if partial else audits,
           "target": list(coverage.TARGET), "metrics": table,
           "settings": {str(j): sorted(by_jobs[j]) for j in complete},
           "intervals": {m: method for m, method in intervals().items() if m in table}}
    if partial:
        out["partial"] = True
    kept = _keep_dedicated(out)
    if kept:
        print(f"kept the entries of {', '.join(f'{m} ({src})' for m, src in kept.items())}: measured by their own "
              "bench under today's interval method")
    coverage.MEASURED.write_text(json.dumps(out, indent=1, sort_keys=True) + "\n")
    print(f"published {coverage.MEASURED}; the README's table:\n\n{ranges_table(out)}")
    return out


def _keep_dedicated(out: dict) -> dict[str, str]:
    """Carry into ``out`` (a table :func:`publish` is about to write) each entry of the published
    ``coverage_measured.json`` that a dedicated bench measured (its ``sources``: ``coverage_marc_u.py``,
    ``coverage_shortlist.py``, which run the metric alone at 1,000 audits per setting) under today's interval
    method; an entry whose method changed since is dropped, as this bench's stale rows are. Without this, a
    publish of this bench overwrote those entries with its own rows, or with nothing where its chunks were stale
    for them. Returns the metrics kept and their sources."""
    if not coverage.MEASURED.exists():
        return {}
    old = json.loads(coverage.MEASURED.read_text(encoding="utf-8"))
    kept = {}
    for m, src in sorted(old.get("sources", {}).items()):
        if src == out["source"] or m not in old.get("metrics", {}):
            continue
        if old.get("intervals", {}).get(m) != coverage.interval_method(m):
            print(f"dropped {m}'s entry from {src}: measured under {old.get('intervals', {}).get(m)}, today "
                  f"{coverage.interval_method(m)}; run {src} again")
            continue
        out["metrics"][m] = old["metrics"][m]
        out["intervals"][m] = old["intervals"][m]
        out.setdefault("sources", {})[m] = src
        kept[m] = src
    return kept


def subset_parser(description: str, *, publish_help: str, table_help: str) -> argparse.ArgumentParser:
    """The options of the benches that re-measure some metrics on this bench's settings (``coverage_marc_u.py``,
    ``coverage_shortlist.py``): ``--settings`` (fnmatch patterns of :data:`SETTINGS`), ``--audits``, ``--chunk``,
    ``--procs``, ``--publish`` and ``--table-only``."""
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--settings", nargs="+", default=["*"])
    ap.add_argument("--audits", type=int, default=1000)
    ap.add_argument("--chunk", type=int, default=50)
    ap.add_argument("--procs", type=int, default=2)
    ap.add_argument("--publish", action="store_true", help=publish_help)
    ap.add_argument("--table-only", action="store_true", help=table_help)
    return ap


def matching(patterns: list[str]) -> list[str]:
    """The settings of :data:`SETTINGS` matching any of ``patterns`` (fnmatch), in their order."""
    return [s for s in SETTINGS if any(fnmatch.fnmatchcase(s, p) for p in patterns)]


def publish_entries(rows: list[dict], audits: int, source: str) -> dict[str, dict[str, list[float]]]:
    """Write the coverage ranges of ``rows`` (one per setting, metric and variant, every setting of :data:`SETTINGS`
    at ``audits`` audits) into :data:`runtime.analysis.coverage.MEASURED`, keeping every other metric's entry:
    per metric and job count the lowest and highest coverage, its interval method (``intervals``) and ``source``
    (``sources``). Used by the benches that re-measure some metrics (:func:`subset_parser`)."""
    if any(r["n"] < audits or "coverage" not in r for r in rows) or {r["setting"] for r in rows} != set(SETTINGS):
        raise SystemExit(f"--publish needs every setting at {audits} audits with its truth chunks")
    table = json.loads(coverage.MEASURED.read_text(encoding="utf-8"))
    if table.get("audits") != audits:
        raise SystemExit(f"{coverage.MEASURED} rests on {table.get('audits')} audits per setting, this run on {audits}")
    out: dict[str, dict[str, list[float]]] = {}
    for r in rows:
        lo_hi = out.setdefault(r["metric"], {}).setdefault(str(parse_setting(r["setting"])[2]), [1.0, 0.0])
        lo_hi[0], lo_hi[1] = min(lo_hi[0], round(r["coverage"], 3)), max(lo_hi[1], round(r["coverage"], 3))
    for m, per in out.items():
        table["metrics"][m] = per
        table.setdefault("intervals", {})[m] = coverage.interval_method(m)
        table.setdefault("sources", {})[m] = source
    coverage.MEASURED.write_text(json.dumps(table, indent=1, sort_keys=True) + "\n")
    print(f"published {', '.join(out)} in {coverage.MEASURED}: {out}")
    return out


def ranges_table(published: dict) -> str:
    """The README's coverage table from a published ``coverage_measured.json``: per metric and job count, the range
    over the settings, "(approximate)" where it leaves :data:`runtime.analysis.coverage.TARGET`."""
    jobs = sorted({int(j) for per in published["metrics"].values() for j in per})
    lines = ["| metric | " + " | ".join(f"{j} jobs" for j in jobs) + " |", "|---|" + "---|" * len(jobs)]
    for metric in catalog.METRICS:
        per = published["metrics"].get(metric)
        if not per:
            continue
        cells = []
        for j in jobs:
            if str(j) not in per:
                cells.append("")
                continue
            lo, hi = per[str(j)]
            out = not (coverage.TARGET[0] <= lo and hi <= coverage.TARGET[1])
            cells.append(f"{100 * lo:.1f}–{100 * hi:.1f}%" + (" (approximate)" if out else ""))
        lines.append(f"| {metric} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def plan(root: Path, names: list[str], *, audits: int, truth: int, chunk: int) -> list[tuple]:
    """The chunks to run, truth chunks first, each phase in round-robin over the settings."""
    todo = []
    for phase, total, size in (("truth", truth, chunk * TRUTH_CHUNKS), ("cover", audits, chunk)):
        n = math.ceil(total / size)
        for c in range(n):
            for name in names:
                path = chunk_path(root, name, phase, c)
                if not path.exists() or not current(path, size):
                    todo.append((name, phase, c, size))
    return todo


def save(root: Path, name: str, rec: dict) -> Path:
    path = chunk_path(root, name, rec["phase"], rec["chunk"])
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    with gzip.GzipFile(tmp, "wb", mtime=0) as fh:
        fh.write(json.dumps(rec, separators=(",", ":")).encode("utf-8"))
    tmp.replace(path)
    return path


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--settings", nargs="+", default=["*"], help=f"names or patterns of {', '.join(SETTINGS)}")
    ap.add_argument("--audits", type=int, default=1000)
    ap.add_argument("--truth", type=int, default=2000)
    ap.add_argument("--resamples", type=int, default=499)
    ap.add_argument("--chunk", type=int, default=25)
    ap.add_argument("--ranking", choices=["swap_in", "per_variant"], default="swap_in")
    ap.add_argument("--procs", type=int, default=2)
    ap.add_argument("--minutes", type=float, default=None,
                    help="dispatch no new chunk after this many minutes (running chunks finish and are saved)")
    ap.add_argument("--out", type=Path, default=RESULTS / "coverage_counterfactual")
    ap.add_argument("--table-only", action="store_true", help="summarise the saved chunks, run nothing")
    ap.add_argument("--publish", action="store_true",
                    help="write runtime/analysis/coverage_measured.json, which the report quotes")
    ap.add_argument("--partial", action="store_true",
                    help="with --publish: publish settings with fewer than --audits audits too, marked partial")
    args = ap.parse_args()
    names = [s for s in SETTINGS if any(fnmatch.fnmatchcase(s, p) for p in args.settings)]
    if not names:
        ap.error(f"--settings {args.settings} names none of {', '.join(SETTINGS)}")
    root = args.out if args.ranking == "swap_in" else args.out.with_name(args.out.name + "_per_variant")
    sizes = {"truth": args.chunk * TRUTH_CHUNKS, "cover": args.chunk}
    todo = [] if args.table_only else plan(root, names, audits=args.audits, truth=args.truth, chunk=args.chunk)
    print(f"{len(names)} settings, {len(todo)} chunks to run ({args.chunk} audits per cover chunk, "
          f"{sizes['truth']} per truth chunk)", flush=True)
    start = time.time()
    if todo:
        with ProcessPoolExecutor(max_workers=args.procs) as pool:
            queue = list(todo)
            running: dict = {}
            done = 0
            while queue or running:
                late = args.minutes is not None and time.time() - start > 60 * args.minutes
                while queue and len(running) < args.procs and not late:
                    name, phase, c, size = queue.pop(0)
                    running[pool.submit(run_chunk, name, phase, c, size, args.resamples, args.ranking)] = \
                        (name, phase, c, time.time())
                if not running:
                    break
                finished, _ = wait(running, return_when=FIRST_COMPLETED)
                for fut in finished:
                    name, phase, c, t0 = running.pop(fut)
                    save(root, name, fut.result())
                    done += 1
                    print(f"{done}/{len(todo)} {name} {phase}-{c:04d} {time.time() - t0:.0f} s "
                          f"(elapsed {time.time() - start:.0f} s)", flush=True)
            if queue:
                print(f"stopped after {args.minutes} min: {len(queue)} chunks left; run again to resume", flush=True)
    rows = summarise(root, list(SETTINGS), sizes)  # the table and --publish read every setting's saved chunks,
    names = list(SETTINGS)                           # whichever ones --settings ran
    stem = root.name
    (RESULTS / f"{stem}.json").write_text(json.dumps(rows, indent=1))
    header = (f"# Interval coverage, {args.ranking} ranking ({time.strftime('%Y-%m-%d')}; "
              f"target {LOW:.0%}-{HIGH:.0%}; {args.resamples} resamples; truth = mean over up to {args.truth} audits)\n\n"
              "miss above / below: share of audits whose interval lies wholly above / below the truth. "
              "interval: `ci` = ci_low/ci_high; `decision (m)` = decision_low/decision_high, checked against m's truth. "
              "effect `obs.`: the example's observed paired differences.")
    partial = sorted({r["setting"] for r in rows if r["n"] < args.audits} | set(names) - {r["setting"] for r in rows})
    if partial:
        header += (f"\n\n**Partial**: {len(partial)} setting(s) have fewer than {args.audits} audits so far "
                   f"({', '.join(partial)}); column n gives each row's count. Run the bench again to resume.")
    write_table(rows, RESULTS / f"{stem}.md", header)
    if args.publish:
        publish(rows, names, audits=args.audits, ranking=args.ranking, partial=args.partial)
    bad = [r for r in rows if r["verdict"] in ("under", "over")]
    print(f"{len(rows)} rows; {len(bad)} outside {LOW:.0%}-{HIGH:.0%}; table: {RESULTS / (stem + '.md')}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
