"""The report section "Systems compared" (``#systems-compared``, issue 36 §5): with two or more audited systems,
per variant each one's ``score_delta`` (the signed mean score change against the reference,
on the score scale normalised to [0, 1] by the system's ``score_range``, seed 000 §3.4), its 95 % interval and
its status, and whether the statuses agree.

Plain, formatted data for ``sections/systems_compared.html.j2``; the values are ``metrics.csv``'s, nothing is
recomputed here.
"""

from __future__ import annotations

import pandas as pd

from runtime.report.formatting import fmt_ci, fmt_sig
from runtime.report.sections import ORDER, Section

#: The metric compared (its values are on every system's normalised scale, so they compare across systems).
METRIC = "score_delta"


def _status(x: object) -> str:
    return x if isinstance(x, str) and x else "N/A"


def systems_compared_section(metrics: pd.DataFrame, *, reference: str) -> Section | None:
    """The ``#systems-compared`` section (``ORDER["systems_compared"]``), or None with fewer than two audited
    systems (an LLM system's conditions are columns of their own once there are two systems).

    Parameters
    ----------
    metrics : pandas.DataFrame
        ``metrics.csv`` (at least ``metric, system, condition, variant, value, ci_low, ci_high, status``).
    reference : str
        The reference variant (left out: it is compared with itself).

    Returns
    -------
    Section or None
        Context ``columns`` (one per system × condition, in the order of ``metrics``) and ``rows``, one per
        variant: ``variant``, ``cells`` (``delta``, ``ci``, ``status``, research tier, formatted) and ``agree``
        ("yes" when every status is the same, else "no").
    """
    rows = metrics[(metrics["metric"] == METRIC) & (metrics["variant"] != reference)]
    keys = list(dict.fromkeys(zip(rows["system"], rows["condition"])))
    if len({s for s, _ in keys}) < 2:  # one system (even under several conditions): nothing to compare
        return None
    columns = [s if c == "default" else f"{s} ({c})" for s, c in keys]
    at = {(r["system"], r["condition"], r["variant"]): r for r in rows.to_dict(orient="records")}
    out = []
    for variant in dict.fromkeys(rows["variant"]):
        cells = []
        for s, c in keys:
            r = at.get((s, c, variant))
            cells.append({"delta": "—", "ci": "—", "status": "N/A"} if r is None else {
                "delta": fmt_sig(r["value"], signed=True), "ci": fmt_ci(r["ci_low"], r["ci_high"], signed=True),
                "status": _status(r["status"])})
        statuses = {x["status"] for x in cells}
        out.append({"variant": variant, "cells": cells, "agree": "yes" if len(statuses) == 1 else "no"})
    agree = sum(r["agree"] == "yes" for r in out)
    return Section(id="systems-compared", title="Systems compared", template="sections/systems_compared.html.j2",
                   order=ORDER["systems_compared"],
                   context={"columns": columns, "rows": out, "reference": reference,
                            "summary": f"The statuses agree on {agree} of {len(out)} variants."})
