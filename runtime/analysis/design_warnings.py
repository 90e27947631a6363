"""Warnings on what a design can decide (issue 39 §8), printed by ``audit validate`` and ``audit compile``
and on the report's first page, beside seed 000 §5's minimum-n warning
(:data:`compiler.validate.MIN_BASE_PER_JOB`):

- **coverage**: a metric whose 95% interval was measured outside 93–97% coverage
  (:data:`runtime.analysis.coverage.TARGET`) at the simulated design nearest the audit's number of jobs
  (:func:`runtime.analysis.coverage.measured`: ``coverage_measured.json``, written by
  ``bench/coverage_counterfactual.py``); its interval and the status read from it are approximate;
- **power**: a category whose level-1 score test has less than the declared power
  (``analysis.effect_size.power``, default 0.8) at the SESOI, at level α (``power.csv``,
  :func:`runtime.analysis.power.power_table`; :func:`compiler.power.level_one_power`): a PASS there may be a
  bias the audit could not see (seed 003 §3.7). Known at compile only with scores (a score file, or
  ``audit compile --pilot RUN_DIR``);
- **SESOI band** (page 1 only: it needs the run's scores): a score-delta PASS band wider than the SESOI's score
  shift, where a score-delta PASS cannot rule out an effect of the SESOI's size.

Each function returns one sentence (or None), so a design with many metrics or categories prints one line
per kind. Pure: no I/O beyond the shipped coverage table.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

import pandas as pd

from runtime.analysis import coverage

#: Categories named in a power warning before "and N more".
MAX_NAMED = 6
#: Jobs under the minimum number of base candidates (seed 000 §5; compile's is
#: :data:`compiler.validate.MSG_FEW_BASE`, on ``base_per_job``).
MSG_FEW_BASE = ("fewer than {min} base candidates in job(s) {jobs}: the rank and shortlist metrics degenerate at "
                "small pools (every candidate near the top-K, few rank crossings possible) and their intervals and "
                "tests say little (seed 000 §5)")
#: A metric measured outside the coverage target (one sentence for all of them).
MSG_COVERAGE = ("the 95% intervals of {metrics} were measured outside the {lo:.0f}–{hi:.0f}% coverage target in "
                "simulated audits with {jobs} jobs{nearest} ({audits} per setting{partial}, {sources}): "
                "their intervals, and the statuses read from them, are approximate")
#: Categories under the declared power at the SESOI (one sentence for all of them).
MSG_POWER = ("the level-1 score test has under {target:.0f}% power at the SESOI (two-sided, level α = {alpha:g}) "
             "for {cells}: a PASS there may be a bias this audit cannot see (seed 003 §3.7); more base candidates "
             "raise it (n for {target:.0f}%: {need})")


def small_pool_warning(per_job: "pd.Series | dict[str, int]") -> str | None:
    """Seed 000 §5's minimum-n warning on a run's data (:data:`MSG_FEW_BASE`): the jobs with fewer than
    :data:`compiler.validate.MIN_BASE_PER_JOB` base candidates (``per_job``: job id -> base candidates, in
    the order to print); None when every job has enough."""
    from compiler.validate import MIN_BASE_PER_JOB

    small = [(j, int(n)) for j, n in dict(per_job).items() if int(n) < MIN_BASE_PER_JOB]
    if not small:
        return None
    return MSG_FEW_BASE.format(jobs=", ".join(f"{j} ({n})" for j, n in small), min=MIN_BASE_PER_JOB)


def coverage_outside(metrics: Iterable[str], n_jobs: int | None) -> list[tuple[str, dict[str, Any]]]:
    """The metrics (in the order given) whose measured coverage at the simulated design nearest ``n_jobs``
    leaves :data:`runtime.analysis.coverage.TARGET`, each with :func:`runtime.analysis.coverage.measured`'s
    record; metrics without a measured figure there are left out."""
    out = []
    for m in dict.fromkeys(metrics):
        rec = coverage.measured(m, n_jobs)
        if rec is not None and not rec.get("within", True):  # an unmeasured interval method claims nothing
            out.append((m, rec))
    return out


def coverage_warning(metrics: Iterable[str], n_jobs: int | None) -> str | None:
    """One sentence naming every metric of ``metrics`` measured outside the coverage target at the design
    nearest ``n_jobs`` jobs, with its measured range (:data:`MSG_COVERAGE`); None when there is none."""
    found = coverage_outside(metrics, n_jobs)
    if not found:
        return None
    jobs = found[0][1]["jobs"]
    audits = found[0][1]["audits"]
    partial = found[0][1].get("partial")
    names = ", ".join(f"{m} ({_pct(r['low'])}–{_pct(r['high'])}%)" for m, r in found)
    nearest = "" if jobs == n_jobs else f", the simulated design nearest this audit's {n_jobs} job{'' if n_jobs == 1 else 's'}"
    return MSG_COVERAGE.format(metrics=names, lo=100 * coverage.TARGET[0], hi=100 * coverage.TARGET[1], jobs=jobs,
                               nearest=nearest,
                               audits=(f"at least {audits:,}" if partial else f"{audits:,}") if audits else "the bench's",
                               partial=", a partial run" if partial else "",
                               sources=" and ".join(dict.fromkeys(r.get("source", coverage.DEFAULT_SOURCE)
                                                                  for _, r in found)))


#: A score-delta PASS band wider than the SESOI's score shift (one sentence for all cells).
MSG_SESOI_BAND = ("the score delta's PASS band is wider than the SESOI's score shift for {cells}: a score-delta PASS "
                  "there admits a mean shift the SESOI calls material, so it shows no shift beyond the band, not no "
                  "effect; the category's status also reads its selection metrics, decided at the SESOI (seed 003 §3.7)")


def sesoi_band_warning(metrics: pd.DataFrame | None, sesoi: pd.DataFrame | None) -> str | None:
    """One sentence naming each system · condition whose score-delta PASS band (``metrics.csv``: the widest
    ``|pass_low|``, ``|pass_high|`` of its ``score_delta`` rows, normalised scores) is wider than its SESOI's score
    shift (``sesoi.csv``: ``shift_normalised`` of the job ``ALL`` row, :func:`runtime.analysis.sesoi.sesoi_table`),
    with the ratio (:data:`MSG_SESOI_BAND`); None when every band lies within its shift, or without either table.

    The score delta is decided on seed 000 Table 3's band (default ±0.02, normalised), the SESOI on the decision's
    own scale (e.g. ``{selection_ratio: 0.8}``, turned into the shift that moves the top-K that far): where the band
    is wider, a PASS on the score delta cannot rule out an effect of the SESOI's size (a regulator's read of the
    example: ±0.02 against 0.0061).

    Parameters
    ----------
    metrics : pandas.DataFrame or None
        ``metrics.csv`` (``metric``, ``system``, ``condition``, ``pass_low``, ``pass_high``).
    sesoi : pandas.DataFrame or None
        ``sesoi.csv`` (:data:`runtime.analysis.sesoi.SESOI_COLUMNS`); rows with a non-finite or non-positive shift
        are left out.
    """
    if metrics is None or sesoi is None or len(metrics) == 0 or len(sesoi) == 0:
        return None
    sd = metrics[metrics["metric"] == "score_delta"]
    if sd.empty or not {"pass_low", "pass_high"} <= set(sd.columns):
        return None
    band = (pd.concat([pd.to_numeric(sd["pass_low"], errors="coerce").abs(),
                       pd.to_numeric(sd["pass_high"], errors="coerce").abs()], axis=1).max(axis=1)
            .groupby([sd["system"].astype(str), sd["condition"].astype(str)], sort=False).max())
    pooled = sesoi[sesoi["job_id"].astype(str) == "ALL"]
    cells = []
    for r, shift in zip(pooled.itertuples(index=False), pd.to_numeric(pooled["shift_normalised"], errors="coerce")):
        width = band.get((str(r.system), str(r.condition)), math.nan)
        if not (shift > 0 and width > shift * (1 + 1e-9)):  # nan compares False: nothing to say
            continue
        cells.append(f"{r.system} · {r.condition} (±{width:.3g} against {shift:.3g} normalised, "
                     f"{width / shift:.1f} times; SESOI {r.form})")
    if not cells:
        return None
    if len(cells) > MAX_NAMED:
        cells = cells[:MAX_NAMED] + [f"and {len(cells) - MAX_NAMED} more"]
    return MSG_SESOI_BAND.format(cells=", ".join(cells))


def _pct(x: float) -> str:
    return f"{100 * x:.1f}"


def power_warning(power: pd.DataFrame | None, *, target: float, alpha: float) -> str | None:
    """One sentence naming each system · condition · category whose level-1 power at the SESOI, at level
    ``alpha`` (``power.csv``'s first row of the cell), is under ``target`` (:data:`MSG_POWER`), with the most
    base candidates per variant any of them needs for ``target``; None when every cell reaches it, or
    without a power table.

    Parameters
    ----------
    power : pandas.DataFrame or None
        ``power.csv`` (:data:`compiler.power.POWER_COLUMNS`); ``power`` in [0, 1], nan when undefined (left out).
    target : float
        The declared power (``analysis.effect_size.power``), in (0, 1).
    alpha : float
        ``analysis.alpha``: the level of the rows read (the α / m₁ rows are lower still).
    """
    if power is None or power.empty:
        return None
    at = power[(power["level"] - alpha).abs() <= 1e-12 * max(alpha, 1.0)]
    low = at[at["power"].notna() & (at["power"] < target)]
    if low.empty:
        return None
    cells = [f"{r.system} · {r.condition} · {r.category} ({100 * r.power:.0f}%)" for r in low.itertuples(index=False)]
    if len(cells) > MAX_NAMED:
        cells = cells[:MAX_NAMED] + [f"and {len(cells) - MAX_NAMED} more"]
    need = low["n_for_80"].max()
    return MSG_POWER.format(target=100 * target, alpha=alpha, cells=", ".join(cells),
                            need="unknown" if pd.isna(need) else f"{int(need)} per variant")


__all__ = ["coverage_outside", "coverage_warning", "power_warning", "sesoi_band_warning", "small_pool_warning",
           "MSG_COVERAGE", "MSG_FEW_BASE", "MSG_POWER", "MSG_SESOI_BAND"]
