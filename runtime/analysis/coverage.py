"""Measured coverage of the 95% intervals of ``metrics.csv``, shipped with the code (issue 12).

``bench/coverage_counterfactual.py --publish`` writes ``coverage_measured.json`` next to this module:
per metric and simulated number of jobs (2, 5, 20), the lowest and highest coverage over the
bench's settings (ties / no ties, planted effects 0, 1 and 3 SE, the demoted and the null variant;
1,000 audits each), leaving out the reference compared with itself, whose interval is a point.
The report states, for every metric, the measured coverage at the simulated job count nearest the
run's, and calls the interval **approximate** where that range leaves 93-97%. The numbers hold for
the bench's simulation model (:mod:`runtime.analysis.counterfactual_sim`), not for every system.
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
        ``{"low", "high"}`` (fractions in [0, 1]), ``"jobs"`` (the simulated job count used),
        ``"audits"`` (simulated audits per setting) and ``"within"`` (both in :data:`TARGET`); None when
        the metric or the job count is unknown, or nothing was measured within a factor :data:`NEAR` of
        ``n_jobs``.
    """
    table = _table()
    per_jobs = table.get("metrics", {}).get(metric)
    if not per_jobs or not n_jobs or n_jobs < 1:
        return None
    jobs = min((int(j) for j in per_jobs), key=lambda j: (abs(math.log(j) - math.log(n_jobs)), j))
    if abs(math.log(jobs) - math.log(n_jobs)) > math.log(NEAR):
        return None
    low, high = per_jobs[str(jobs)]
    return {"low": low, "high": high, "jobs": jobs, "audits": table.get("audits"),
            "within": TARGET[0] <= low and high <= TARGET[1]}


def statement(metric: str, n_jobs: int | None) -> str:
    """One sentence for the report: the measured coverage, and "approximate" when outside the target."""
    m = measured(metric, n_jobs)
    if m is None:
        return ""
    span = (f"{100 * m['low']:.1f}%" if round(1000 * m["low"]) == round(1000 * m["high"])
            else f"{100 * m['low']:.1f}–{100 * m['high']:.1f}%")
    where = f"in {m['audits']:,} simulated audits per setting with {m['jobs']} jobs" if m["audits"] else \
        f"in simulated audits with {m['jobs']} jobs"
    if m["within"]:
        return f"measured coverage {span} {where} (target 93–97%)"
    return f"approximate: measured coverage {span} {where}, outside the 93–97% target"
