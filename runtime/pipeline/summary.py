"""``summary.json``: the machine-readable outcome of a run (issue 26).

Built after the last family and the report, before the seal (:func:`runtime.provenance.sign.seal_run`), so the
manifest hashes it; validated as a :class:`compiler.artifacts.Summary`. ``audit execute --json``
prints it and exits with its ``exit_code``.
"""

from __future__ import annotations

import json
import math
from typing import Any

import numpy as np
import pandas as pd

from compiler.artifacts import SUMMARY_SCHEMA_VERSION, Summary, tool_info, utc_now
from compiler.lock import lock_methods_version
from runtime.pipeline.gate import Gate, Tier, exit_code, gate_rows, status_counts

SUMMARY = "summary.json"


def _value(v: Any) -> Any:
    """A cell of a table as JSON: numpy scalars as Python numbers; NaN, infinities and NA as null."""
    if isinstance(v, np.generic):
        v = v.item()
    if v is None or v is pd.NA or v is pd.NaT or (isinstance(v, float) and not math.isfinite(v)):
        return None
    return v


def table_rows(frame: pd.DataFrame | None) -> list[dict[str, Any]]:
    """The rows of a result table as JSON objects, column order kept ([] for none)."""
    if frame is None or len(frame) == 0:
        return []
    cols = [str(c) for c in frame.columns]
    return [{c: _value(v) for c, v in zip(cols, row)} for row in frame.itertuples(index=False, name=None)]


def build_summary(*, run: dict[str, Any], lock: dict[str, Any], status: pd.DataFrame,
                  risk: pd.DataFrame | None, verdict: tuple[str, list[str]] | None, signed: bool,
                  fail_on: Gate | None, tier: Tier, allow_unsigned: bool = False) -> dict[str, Any]:
    """The ``summary.json`` object of a run.

    Parameters
    ----------
    run : dict
        The run record (``audit``, ``run_id``).
    lock : dict
        The lock the run executes (``spec_digest``, methods version).
    status : pandas.DataFrame
        Every family's status rows (:data:`runtime.families.STATUS_COLUMNS`): what the gate reads.
    risk : pandas.DataFrame or None
        ``risk.csv``'s table.
    verdict : (str, list of str) or None
        The validity protocol's verdict and failed checks.
    signed : bool
        Whether the run is sealed with signing keys.
    fail_on, tier
        The ``--fail-on`` gate and the tier it reads.
    allow_unsigned : bool
        The operator accepted an unsigned run (``audit execute --unsigned``): an unsigned run then exits
        0, not 8 (:func:`runtime.pipeline.gate.exit_code`).

    Returns
    -------
    dict
        The dump of a validated :class:`compiler.artifacts.Summary`.
    """
    hits = gate_rows(status, fail_on, tier)
    rows = [{k: str(v) for k, v in row.items()} for row in hits.to_dict("records")]
    return Summary.model_validate({
        "schema_version": SUMMARY_SCHEMA_VERSION, "kind": "audit-summary", "tool": tool_info(),
        "generated_at": utc_now(), "audit": run["audit"], "run_id": run["run_id"],
        "spec_digest": lock["spec_digest"], "methods_version": lock_methods_version(lock), "signed": signed,
        "status_counts": status_counts(status), "risk": table_rows(risk),
        "validity": None if verdict is None else {"verdict": verdict[0], "failed": list(verdict[1])},
        "gate": {"fail_on": fail_on, "tier": tier, "tripped": bool(rows), "rows": rows},
        "exit_code": exit_code(tripped=bool(rows), verdict=verdict[0] if verdict else None,
                               unsigned=not signed and not allow_unsigned),
    }).dump()


def render_summary(summary: dict[str, Any]) -> bytes:
    """``summary.json``'s bytes (indented as ``run.json``), which ``audit execute --json`` prints."""
    return (json.dumps(summary, indent=2, ensure_ascii=False) + "\n").encode("utf-8")
