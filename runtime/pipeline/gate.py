"""The one ``--fail-on`` gate over every family's status rows (exit 4 in the CLI), the status counts
of ``summary.json`` and the exit code of a run.

Status rows come from each audit family (:data:`runtime.families.STATUS_COLUMNS`): the metric
suite's rows (seed 000 Table 3, both tiers), the causal family's verdict per system x job (seed 001
§5.2), and any later family's. ``--fail-on FAIL`` trips on FAIL rows; ``--fail-on INCONCLUSIVE`` on every row
that is not PASS (FAIL, INCONCLUSIVE, and the INVESTIGATE of families that keep seed 000's or seed 001's
three levels; issue 29 §1). ``INVESTIGATE`` is the old name of ``INCONCLUSIVE`` (:data:`GATE_ALIASES`).
"""

from __future__ import annotations

from typing import Literal

import pandas as pd

Gate = Literal["FAIL", "INCONCLUSIVE"]
#: Old gate names and the gate they mean now (methods version 7 reads statuses from intervals).
GATE_ALIASES = {"INVESTIGATE": "INCONCLUSIVE"}
Tier = Literal["research", "operational"]

#: Exit codes of a finished run, as ``runtime.cli`` names them (EXIT_OK, EXIT_GATE, EXIT_INCONCLUSIVE,
#: EXIT_UNSIGNED: sealed but unsigned without ``--unsigned``, issue 37 §3).
EXIT_OK, EXIT_GATE, EXIT_INCONCLUSIVE, EXIT_UNSIGNED = 0, 4, 5, 8
#: The statuses ``summary.json`` counts; any other value (empty, ``N/A``) counts as ``N/A``.
STATUSES = ("PASS", "INCONCLUSIVE", "INVESTIGATE", "FAIL", "N/A")
#: The statuses ``--fail-on INCONCLUSIVE`` trips on: anything decided and not PASS.
_NOT_PASS = frozenset({"FAIL", "INCONCLUSIVE", "INVESTIGATE"})


def tier_column(tier: Tier) -> str:
    """The status column a tier reads: ``status`` (research) or ``status_operational``."""
    return "status" if tier == "research" else "status_operational"


def gate_rows(status: pd.DataFrame, fail_on: Gate | None, tier: Tier = "research") -> pd.DataFrame:
    """The status rows that trip ``--fail-on``, with the tier's status in column ``status``.

    Parameters
    ----------
    status : pandas.DataFrame
        Columns ``family, system, condition, item, status, status_operational``.
    fail_on : {"FAIL", "INCONCLUSIVE"} or None
        The gate (``INVESTIGATE`` is read as ``INCONCLUSIVE``); None trips nothing.
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
    fail_on = GATE_ALIASES.get(fail_on, fail_on)
    bad = {"FAIL"} if fail_on == "FAIL" else _NOT_PASS
    hits = status[status[col].isin(bad)]
    return pd.DataFrame({"family": hits["family"], "system": hits["system"], "condition": hits["condition"],
                         "item": hits["item"], "status": hits[col]}, columns=cols).reset_index(drop=True)


def gate_tripped(status: pd.DataFrame, fail_on: Gate | None, tier: Tier = "research") -> list[str]:
    """The status rows that trip ``--fail-on``, one line each (``system/condition item: status``).

    Parameters
    ----------
    status : pandas.DataFrame
        Columns ``family, system, condition, item, status, status_operational``.
    fail_on : {"FAIL", "INCONCLUSIVE"} or None
        The gate (``INVESTIGATE`` is read as ``INCONCLUSIVE``); None trips nothing.
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
        ``{"research": {"PASS": n, "INCONCLUSIVE": n, "INVESTIGATE": n, "FAIL": n, "N/A": n},
        "operational": {...}}``; a row whose status is none of ``PASS``, ``INCONCLUSIVE``, ``INVESTIGATE``
        (families with seed 001's three levels), ``FAIL`` counts as ``N/A``.
    """
    out: dict[str, dict[str, int]] = {}
    for tier in ("research", "operational"):
        values = [] if status is None or len(status) == 0 else list(status[tier_column(tier)])
        counts = dict.fromkeys(STATUSES, 0)
        for v in values:
            counts[v if v in STATUSES else "N/A"] += 1
        out[tier] = counts
    return out


def exit_code(*, tripped: bool, verdict: str | None, unsigned: bool = False) -> int:
    """The exit code of a finished run, first that applies: :data:`EXIT_INCONCLUSIVE` when the validity
    verdict is INCONCLUSIVE, :data:`EXIT_GATE` when the gate tripped, :data:`EXIT_UNSIGNED` when ``unsigned``
    (the run was sealed without signing keys and the operator did not pass ``--unsigned``; issue 37 §3),
    else :data:`EXIT_OK`. The gate's codes win over 8, so a CI job that reads 4 or 5 keeps reading them;
    every one of them is non-zero."""
    if verdict == "INCONCLUSIVE":
        return EXIT_INCONCLUSIVE
    if tripped:
        return EXIT_GATE
    return EXIT_UNSIGNED if unsigned else EXIT_OK
