"""A fair system must not FAIL: decisions of the metric suite on simulated null audits (issue 29).

Design (:class:`runtime.analysis.counterfactual_sim.CorrespondenceSim`, seed 000's layout): 5 jobs x 40
base candidates (20 matching), K = 10 / 10 / 20, 9 categories and the reference, no planted effect
(``effect_se = 0``: every variant résumé is exchangeable with its reference), with and without ties,
``--audits`` audits per setting, ``--resamples`` bootstrap resamples. Each audit is analysed alone with
the methods version's defaults (``analysis.multiplicity`` hierarchical, statuses from intervals), and
counts per audit: rows FAIL / INCONCLUSIVE on intervals (``status``), rows FAIL / INVESTIGATE on point
estimates (``status_seed000``, methods 6's statuses), rows naming a side (``disadvantaged`` a level or
``reference``), headline categories FAIL, and whether the system's headline verdict is FAIL.

    python bench/fair_system.py --audits 50 --resamples 200      # about 10 minutes on 2 cores

Writes ``bench/results/fair_system.{json,md}``. Not part of CI.
"""

from __future__ import annotations

import argparse
import json
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
from runtime.analysis.direction import NO_DIRECTION  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"
K = {"counterfactual": 10, "group": 10, "merit": 20}
SEED = 2026
VARIANTS = ("BASE", *(f"V{i:02d}" for i in range(1, 10)))
LEVELS = {v: {"axis": "reference" if v == "BASE" else f"level{v[1:]}"} for v in VARIANTS}


def one_setting(ties: bool, audits: int, resamples: int) -> dict:
    sim = CorrespondenceSim(n_jobs=5, effect_se=0.0, ties=ties, variants=VARIANTS)
    frame = sim.frame(seeding.rng(SEED, "fair_system", ties), audits)
    rows: list[dict] = []
    by_metric: dict[str, dict[str, int]] = {}
    for _, audit in frame.groupby("condition", sort=True):
        res = analyse(audit, reference="BASE", k=K, alpha=0.05, n_bootstrap=resamples, seed=SEED,
                      thresholds=catalog.default_thresholds(), score_range={"sim": SCORE_RANGE},
                      variant_levels=LEVELS)
        m = res.metrics[res.metrics["variant"] != "BASE"]
        h = res.headline
        cats = h[~h["category"].isin(["ALL", "ranking quality"])]
        named = ~m["disadvantaged"].isin(["", NO_DIRECTION])
        rows.append({"fail": int((m["status"] == "FAIL").sum()),
                     "inconclusive": int((m["status"] == "INCONCLUSIVE").sum()),
                     "fail_seed000": int((m["status_seed000"] == "FAIL").sum()),
                     "investigate_seed000": int((m["status_seed000"] == "INVESTIGATE").sum()),
                     "named": int(named.sum()),
                     "headline_fail": int((cats["status"] == "FAIL").sum()),
                     "verdict_fail": bool((h.loc[h["category"] == "ALL", "status"] == "FAIL").any())})
        for metric, sub in m.groupby("metric"):
            d = by_metric.setdefault(metric, {"fail": 0, "inconclusive": 0, "named": 0, "rows": 0})
            d["fail"] += int((sub["status"] == "FAIL").sum())
            d["inconclusive"] += int((sub["status"] == "INCONCLUSIVE").sum())
            d["named"] += int((~sub["disadvantaged"].isin(["", NO_DIRECTION])).sum())
            d["rows"] += len(sub)
    mean = {k: float(np.mean([r[k] for r in rows])) for k in rows[0]}
    share = {k: float(np.mean([r[k] > 0 for r in rows])) for k in rows[0]}
    return {"ties": ties, "audits": audits, "mean_per_audit": mean, "share_of_audits_with_any": share,
            "by_metric": by_metric}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--audits", type=int, default=50)
    ap.add_argument("--resamples", type=int, default=200)
    args = ap.parse_args()
    start = time.time()
    out = {"methods_version": METHODS_VERSION, "audits": args.audits, "resamples": args.resamples,
           "settings": [one_setting(t, args.audits, args.resamples) for t in (False, True)]}
    out["seconds"] = round(time.time() - start, 1)
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "fair_system.json").write_text(json.dumps(out, indent=1) + "\n")
    lines = [f"# A fair system on {args.audits} null audits per setting (methods version {METHODS_VERSION})", "",
             "9 categories x 10 metrics = 90 non-reference rows per audit; 5 jobs x 40, K = 10/10/20, "
             f"{args.resamples} resamples; `python bench/fair_system.py --audits {args.audits} "
             f"--resamples {args.resamples}`.", "",
             "| ties | FAIL rows / audit | INCONCLUSIVE | seed 000 FAIL (point) | seed 000 INVESTIGATE | "
             "rows naming a side | headline categories FAIL | audits whose verdict is FAIL | audits naming a side |",
             "|---|---|---|---|---|---|---|---|---|"]
    for s in out["settings"]:
        mu, sh = s["mean_per_audit"], s["share_of_audits_with_any"]
        lines.append(f"| {'yes' if s['ties'] else 'no'} | {mu['fail']:.2f} | {mu['inconclusive']:.2f} | "
                     f"{mu['fail_seed000']:.2f} | {mu['investigate_seed000']:.2f} | {mu['named']:.2f} | "
                     f"{mu['headline_fail']:.2f} | {sh['verdict_fail']:.0%} | {sh['named']:.0%} |")
    lines += ["", "Per metric (both settings, all audits): FAIL / INCONCLUSIVE / naming a side, of the rows.", "",
              "| metric | FAIL | INCONCLUSIVE | named |", "|---|---|---|---|"]
    for metric in catalog.METRICS:
        agg = [s["by_metric"].get(metric) for s in out["settings"] if metric in s["by_metric"]]
        rows = sum(a["rows"] for a in agg)
        f, i, n = (sum(a[k] for a in agg) for k in ("fail", "inconclusive", "named"))
        lines.append(f"| {metric} | {f / rows:.1%} | {i / rows:.1%} | {n / rows:.1%} |")
    lines += ["", f"{out['seconds']:.0f} s."]
    (RESULTS / "fair_system.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
