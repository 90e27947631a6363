"""Measured coverage of the 95% intervals of ``metrics.csv``, shipped with the code (issue 12).

``bench/coverage_counterfactual.py --publish`` writes ``coverage_measured.json`` next to this module:
per metric and simulated number of jobs, the lowest and highest coverage of its ``ci_low``/``ci_high`` over the
bench's settings at that job count (``settings``: 2, 5 and 20 jobs x ties / no ties x planted effects of 0, 1 and
3 SE; 50 jobs, no ties, null; and at 5 jobs the two ``example-*`` settings, which resample the committed example's
candidates), the demoted and the null variants, leaving out the reference compared with itself, whose interval is
a point. ``audits``: the simulated audits per setting (``partial``: true when some settings have fewer than the
bench's target, and ``audits`` is then the fewest a published figure rests on).
The report states, for every metric, the measured coverage at the simulated job count nearest the
run's, and calls the interval **approximate** where that range leaves 93-97%. The numbers hold for
the bench's simulation models (:mod:`runtime.analysis.counterfactual_sim` and the example's resampled
candidates), not for every system.

A measurement holds for the interval it measured: the file records each metric's interval method
(``intervals``; absent: the percentile bootstrap, what every bootstrap interval was before methods 12, the flip
rate's Wilson interval included under that name), and a
metric whose interval has changed since (:data:`INTERVALS`) is **approximate**, "coverage not yet measured", until a
bench re-measures it and publishes: ``sources`` names the script that measured each metric whose entry is not the
full bench's (MARC: ``bench/coverage_marc_u.py``; the flip rate, retention, the impact ratio and the selection
ratio: ``bench/coverage_shortlist.py``, which computes those metrics alone, as an audit does).
"""

from __future__ import annotations

import json
import math
from functools import lru_cache
from pathlib import Path

#: File written by ``bench/coverage_counterfactual.py --publish``.
MEASURED = Path(__file__).with_name("coverage_measured.json")
#: Coverage a 95% interval must reach in the bench to be shown without qualification.
TARGET = (0.93, 0.97)
#: The interval method of each metric whose interval is not the percentile bootstrap (or, for the flip rate, Wilson):
#: a published measurement of another method does not hold for it (issue 39 §2). Retention and the impact ratio
#: read Wilson's score interval at the bootstrap's design effect (:data:`runtime.analysis.stats.RATIO_TRANSFORMS`;
#: methods 12, measured by ``bench/coverage_shortlist.py`` under its successors).
#: Recall@K, nDCG@K and the TPR/FPR gaps keep the percentile bootstrap but read Wilson's interval on a count seen 0
#: times where every resample gave the estimate (methods 13, :func:`runtime.analysis.stats.zero_event_bound`).
#: MARC reads Hoeffding's U-statistic variance under swap-in ranking (methods 14,
#: :func:`runtime.analysis.counterfactual.marc_u_se`), normal on the inverse-square-root scale with t on N − J degrees
#: of freedom since methods 20 (:func:`runtime.analysis.stats.inverse_sqrt_wald_interval`; the log scale before);
#: MARC 0 with differing scores reads ``[0, u / K]``, Wilson's upper bound on 0 candidates moved (methods 17, :func:`runtime.analysis.counterfactual.marc_zero_bound`).
#: Retention and the impact ratio read the Jeffreys interval at the design effect truncated at 1 (methods 15,
#: :func:`runtime.analysis.stats.jeffreys_deff_interval`).
#: Retention, the impact ratio and the selection ratio read Wilson's interval on 0 slots lost where no resample moves
#: them although the scores differ (methods 14, :data:`runtime.analysis.stats.NOTE_ZERO_CHURN`).
#: The flip rate reads Wilson's interval at the effective number of candidates where ties make flips fractional
#: (methods 17, :func:`runtime.analysis.stats.tie_averaged_interval`; Wilson on the candidates without ties); under
#: swap-in top-K (what the bench measures) it is normal with the SD of the flip count over the smoothed, re-ranked
#: resamples of the selection ratio (methods 19, :func:`runtime.analysis.selection.smoothed_flip_interval`).
#: The selection ratio's percentile interval is widened by half a selected place at each end (methods 16,
#: :func:`runtime.analysis.selection.continuity_corrected`); under swap-in top-K (what the bench measures) it is
#: normal with the SD of a smoothed, re-ranked candidate bootstrap (methods 18,
#: :func:`runtime.analysis.selection.smoothed_swap_in_interval`).
INTERVALS: dict[str, str] = {"marc": "u_statistic_inverse_sqrt_t_zero_event_wilson",
                             "flip_rate": "smoothed_swap_in_normal_tie_deff_wilson",
                             "retention_rate": "jeffreys_deff_kg_zero_churn",
                             "impact_ratio": "jeffreys_deff_kg_zero_churn",
                             "selection_ratio": "smoothed_swap_in_normal_zero_churn_wilson",
                             **{m: "percentile_zero_event_wilson" for m in ("recall_at_k", "ndcg_at_k",
                                                                            "equal_opportunity_gap",
                                                                            "equalized_odds_gap")}}
#: The bench that measured a metric when :data:`MEASURED` names none (``source``, or ``sources`` per metric).
DEFAULT_SOURCE = "bench/coverage_counterfactual.py"
#: The method a metric's interval had when :data:`MEASURED` records none for it.
LEGACY_INTERVAL = "percentile_bootstrap"
#: Note of a row whose interval's coverage is not measured, or measured outside :data:`TARGET`.
NOTE_APPROXIMATE = "approximate interval: {why}"
#: Why a row read at a decision threshold is approximate (:func:`approximate`): the benches measure a top-K rule, and
#: the selection differs there (the selection ratio's interval too: methods 18's re-ranked bootstrap is top-K's).
NOT_AT_THRESHOLD = "coverage measured under a top-K rule, not at a threshold"


def interval_method(metric: str) -> str:
    """The interval method of ``metric`` in this version (:data:`INTERVALS`, else the percentile bootstrap)."""
    return INTERVALS.get(metric, LEGACY_INTERVAL)


#: A simulated job count stands for a run's when they differ by at most this factor (1 job: the 2-job
#: figures; 13 jobs and more: the 20-job figures only).
NEAR = 2.5


@lru_cache(maxsize=1)
def _table() -> dict:
    if not MEASURED.is_file():
        return {}
    return json.loads(MEASURED.read_text(encoding="utf-8"))


def measured(metric: str, n_jobs: int | None) -> dict | None:
    """The bench's coverage of ``metric``'s interval at the simulated job count nearest ``n_jobs``.

    Returns
    -------
    dict or None
        ``{"low", "high"}`` (fractions in [0, 1]), ``"jobs"`` (the simulated job count used), ``"source"`` (the
        bench script that measured it: ``sources`` of the file, else its ``source``),
        ``"audits"`` (simulated audits per setting; with ``"partial"`` true, the fewest a figure rests on) and ``"within"`` (both in :data:`TARGET`); None when
        the metric or the job count is unknown, or nothing was measured within a factor :data:`NEAR` of
        ``n_jobs``. ``{"unmeasured": method}`` (no ``"within"``) when the file measured another interval
        method than the metric's :func:`interval_method` (``method``: the one it measured).
    """
    table = _table()
    per_jobs = table.get("metrics", {}).get(metric)
    method = table.get("intervals", {}).get(metric, LEGACY_INTERVAL)
    if per_jobs and method != interval_method(metric):
        return {"unmeasured": method}
    if not per_jobs or not n_jobs or n_jobs < 1:
        return None
    jobs = min((int(j) for j in per_jobs), key=lambda j: (abs(math.log(j) - math.log(n_jobs)), j))
    if abs(math.log(jobs) - math.log(n_jobs)) > math.log(NEAR):
        return None
    low, high = per_jobs[str(jobs)]
    return {"low": low, "high": high, "jobs": jobs, "audits": table.get("audits"),
            "source": table.get("sources", {}).get(metric, table.get("source", DEFAULT_SOURCE)),
            "partial": bool(table.get("partial")), "within": TARGET[0] <= low and high <= TARGET[1]}


def statement(metric: str, n_jobs: int | None) -> str:
    """One sentence for the report: the measured coverage, and "approximate" when outside the target."""
    m = measured(metric, n_jobs)
    if m is None:
        return ""
    if "unmeasured" in m:
        return f"approximate: coverage of this interval ({interval_method(metric).replace('_', ' ')}) not yet measured"
    span = (f"{100 * m['low']:.1f}%" if round(1000 * m["low"]) == round(1000 * m["high"])
            else f"{100 * m['low']:.1f}–{100 * m['high']:.1f}%")
    where = f"in {m['audits']:,} simulated audits per setting with {m['jobs']} jobs" if m["audits"] else \
        f"in simulated audits with {m['jobs']} jobs"
    if m.get("partial"):  # a bench run not complete yet: the fewest audits a figure rests on
        where = where.replace(f"in {m['audits']:,} ", f"in at least {m['audits']:,} ") + " (partial run)"
    if m["within"]:
        return f"measured coverage {span} {where} (target 93–97%)"
    return f"approximate: measured coverage {span} {where}, outside the 93–97% target"


def approximate(metric: str, n_jobs: int | None, *, thresholded: bool = False) -> list[str]:
    """``[note]`` for a row of ``metric`` whose interval is approximate at ``n_jobs`` jobs, else ``[]``.

    ``thresholded``: the row is read at a decision threshold (issue 15), where no bench measured it (the benches
    simulate a top-K rule; retention, the impact ratio and the selection ratio select differently there):
    ``[note]`` with :data:`NOT_AT_THRESHOLD`, whatever the top-K measurement says (the report adds the same words to
    its coverage statement).

    Approximate: no measurement near ``n_jobs`` (e.g. a table published before the selection ratio was in the
    bench, or over 125 jobs: beyond a factor :data:`NEAR` of the largest simulated design), :func:`interval_method`
    differs from the published measurement's, or the measured coverage at the nearest simulated
    job count leaves :data:`TARGET`. Used by the ratio metrics (issue 39 §2: "approximate until measured in
    range"), which write it into ``metrics.csv``'s notes; the report quotes :func:`statement` for every metric.
    """
    if thresholded:
        return [NOTE_APPROXIMATE.format(why=NOT_AT_THRESHOLD)]
    m = measured(metric, n_jobs)
    if m is None:
        return [NOTE_APPROXIMATE.format(why="coverage not measured")]  # nothing measured near n_jobs
    if "unmeasured" in m:
        return [NOTE_APPROXIMATE.format(why=f"coverage of the {interval_method(metric).replace('_', ' ')} interval "
                                            "not yet measured (bench/coverage_counterfactual.py)")]
    if not m["within"]:
        return [NOTE_APPROXIMATE.format(why=statement(metric, n_jobs).split(": ", 1)[-1])]
    return []
