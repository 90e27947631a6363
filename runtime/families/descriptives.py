"""Descriptive statistics of the scores per variant: n, mean, SD and quantiles.

A plain look at the score distributions before any test: one row per system x condition x variant
(the reference variant first), on the system's own score scale (``score_range``, not normalised).
Opt-in with ``analysis.descriptives`` (its compiler half: :mod:`compiler.families.descriptives`, its
spec block: :mod:`compiler.blocks.descriptives`). No status rows and no verdict: it describes, it
does not classify, so it never moves the risk score or the ``--fail-on`` gate.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from runtime.families import AuditFamily, FamilyResult, family
from runtime.report.formatting import fmt_int, fmt_num, fmt_sig
from runtime.report.sections import Section

#: Leading columns of ``descriptives.csv``; the quantile columns (``q25``, ``q50``, ...) sit between
#: ``min`` and ``max``.
COLUMNS = ("system", "condition", "variant", "n", "mean", "sd", "min")


def quantile_column(q: float) -> str:
    """Column name of the quantile of probability ``q`` (0.25 -> ``q25``, 0.025 -> ``q2.5``)."""
    return f"q{round(100 * q, 6):g}"


def describe(paired: pd.DataFrame, *, quantiles: list[float], reference: str) -> pd.DataFrame:
    """Per system x condition x variant: n, mean, SD (ddof = 1), min, the quantiles, max.

    Parameters
    ----------
    paired : pandas.DataFrame
        The paired frame: ``system, condition, job_id, cv_id, variant, score`` at least (one row per
        candidate x replicate).
    quantiles : list of float
        Probabilities in (0, 1), increasing; numpy's default linear interpolation (Hyndman & Fan
        type 7).
    reference : str
        The reference variant, listed first within each system x condition.

    Returns
    -------
    pandas.DataFrame
        :data:`COLUMNS`, one :func:`quantile_column` per quantile, then ``max``; scores on the
        system's own scale. Replicates are averaged per candidate first, as in every other family;
        ``n`` counts candidates. ``sd`` is NaN for a single candidate.
    """
    keys = ["system", "condition", "variant"]
    per_candidate = paired.groupby(keys + ["job_id", "cv_id"], sort=False)["score"].mean().reset_index()
    qcols = [quantile_column(q) for q in quantiles]
    rows = []
    for (system, condition, variant), g in per_candidate.groupby(keys, sort=False):
        s = g["score"].to_numpy(float)
        rows.append({"system": system, "condition": condition, "variant": variant, "n": int(len(s)),
                     "mean": float(np.mean(s)), "sd": float(np.std(s, ddof=1)) if len(s) > 1 else np.nan,
                     "min": float(np.min(s)), **dict(zip(qcols, np.quantile(s, quantiles).tolist())),
                     "max": float(np.max(s))})
    out = pd.DataFrame(rows, columns=[*COLUMNS, *qcols, "max"])
    cell = out.groupby(["system", "condition"], sort=False).ngroup()  # systems and conditions as scored
    return (out.assign(_cell=cell, _ref=out["variant"].ne(reference))
            .sort_values(["_cell", "_ref"], kind="mergesort").drop(columns=["_cell", "_ref"])
            .reset_index(drop=True))


@family("descriptives")
class Descriptives(AuditFamily):
    """n, mean, SD and quantiles of the scores of every variant (opt-in: ``analysis.descriptives``)."""

    title = "descriptive statistics"

    def analyse(self, ctx) -> FamilyResult:
        block = ctx.resolved["analysis"]["descriptives"]
        reference = ctx.resolved["variants"]["reference"]
        table = describe(ctx.paired, quantiles=block["quantiles"], reference=reference)
        qcols = [quantile_column(q) for q in block["quantiles"]]
        scale = {s["id"]: s["score_range"] for s in ctx.resolved["systems"]}
        rows = [{"system": r["system"], "condition": r["condition"], "variant": r["variant"],
                 "reference": r["variant"] == reference, "n": fmt_int(r["n"]), "mean": fmt_sig(r["mean"]),
                 "sd": fmt_sig(r["sd"]), "min": fmt_sig(r["min"]), "quantiles": [fmt_sig(r[q]) for q in qcols],
                 "max": fmt_sig(r["max"]), "scale": f"[{fmt_num(scale[r['system']][0])}, {fmt_num(scale[r['system']][1])}]"}
                for r in table.to_dict(orient="records")]
        section = Section(id="descriptives", title="Descriptive statistics of the scores",
                          template="sections/descriptives.html.j2", order=650,
                          context={"rows": rows, "quantiles": [f"{round(100 * q, 6):g}%" for q in block["quantiles"]]})
        return FamilyResult(tables={"descriptives": table}, sections=[section])
