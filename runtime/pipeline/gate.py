"""The one ``--fail-on`` gate over every family's status rows (exit 4 in the CLI), the status counts
of ``summary.json`` and the exit code of a run.

Status rows come from each audit family (:data:`runtime.families.STATUS_COLUMNS`): the metric
suite's rows (seed 000 Table 3, both tiers), the causal family's verdict per system x job (seed 001
§5.2), and any later family's. ``INVESTIGATE`` includes ``FAIL``.
"""

from __future__ import annotations

from typing import Literal

import pandas as pd

Gate = Literal["FAIL", "INVESTIGATE"]
Tier = Literal["research", "operational"]

#: Exit codes of a finished run, as ``runtime.cli`` names them (EXIT_OK, EXIT_GATE, EXIT_INCONCLUSIVE).
EXIT_OK, EXIT_GATE, EXIT_INCONCLUSIVE = 0, 4, 5
#: The statuses ``summary.json`` counts; any other value (empty, ``N/A``) counts as ``N/A``.
STATUSES = ("PASS", "INVESTIGATE", "FAIL", "N/A")


def tier_column(tier: Tier) -> str:
    """The status column a tier reads: ``status`` (research) or ``status_operational``."""
    return "status" if tier == "research" else "status_operational"


def gate_rows(status: pd.DataFrame, fail_on: Gate | None, tier: Tier = "research") -> pd.DataFrame:
    """The status rows that trip ``--fail-on``, with the tier's status in column ``status``.

    Parameters
    ----------
    status : pandas.DataFrame
        Columns ``family, system, condition, item, status, status_operational``.
    fail_on : {"FAIL", "INVESTIGATE"} or None
        The gate; None trips nothing.
    tier : {"research", "operational"}
        Which status column the gate reads.

    Returns
    -------
    pandas.DataFrame
        Columns ``family, system, condition, item, status``, in the order of ``status``.
    """
    cols = ["family", "system", "condition", "item", "status"]
    if not fail_on or status is None or len(status) == 0:
        return pd.DataFrame(columns=cols)
    col = tier_column(tier)
    bad = {"FAIL"} if fail_on == "FAIL" else {"FAIL", "INVESTIGATE"}
    hits = status[status[col].isin(bad)]
    return pd.DataFrame({"family": hits["family"], "system": hits["system"], "condition": hits["condition"],
                         "item": hits["item"], "status": hits[col]}, columns=cols).reset_index(drop=True)


def gate_tripped(status: pd.DataFrame, fail_on: Gate | None, tier: Tier = "research") -> list[str]:
    """The status rows that trip ``--fail-on``, one line each (``system/condition item: status``).

    Parameters
    ----------
    status : pandas.DataFrame
        Columns ``family, system, condition, item, status, status_operational``.
    fail_on : {"FAIL", "INVESTIGATE"} or None
        The gate; None trips nothing.
    tier : {"research", "operational"}
        Which status column the gate reads.
    """
    hits = gate_rows(status, fail_on, tier)
    return [f"{h.system}/{h.condition} {h.item}: {h.status}" for h in hits.itertuples()]


def status_counts(status: pd.DataFrame) -> dict[str, dict[str, int]]:
    """How many status rows have each of :data:`STATUSES`, under each tier.

    Parameters
    ----------
    status : pandas.DataFrame
        The rows the gate reads (columns ``status`` and ``status_operational``).

    Returns
    -------
    dict
        ``{"research": {"PASS": n, "INVESTIGATE": n, "FAIL": n, "N/A": n}, "operational": {...}}``;
        a row whose status is none of ``PASS``, ``INVESTIGATE``, ``FAIL`` counts as ``N/A``.
    """
    out: dict[str, dict[str, int]] = {}
    for tier in ("research", "operational"):
        values = [] if status is None or len(status) == 0 else list(status[tier_column(tier)])
        counts = dict.fromkeys(STATUSES, 0)
        for v in values:
            counts[v if v in ("PASS", "INVESTIGATE", "FAIL") else "N/A"] += 1
        out[tier] = counts
    return out


def exit_code(*, tripped: bool, verdict: str | None) -> int:
    """The exit code of a finished run: :data:`EXIT_INCONCLUSIVE` when the validity verdict is
    INCONCLUSIVE (it takes precedence), :data:`EXIT_GATE` when the gate tripped, else :data:`EXIT_OK`."""
    if verdict == "INCONCLUSIVE":
        return EXIT_INCONCLUSIVE
    return EXIT_GATE if tripped else EXIT_OK
