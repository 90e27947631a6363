"""The one ``--fail-on`` gate over every family's status rows (exit 4 in the CLI).

Status rows come from each audit family (:data:`runtime.families.STATUS_COLUMNS`): the metric
suite's rows (seed 000 Table 3, both tiers), the causal family's verdict per system x job (seed 001
§5.2), and any later family's. ``INVESTIGATE`` includes ``FAIL``.
"""

from __future__ import annotations

from typing import Literal

import pandas as pd

Gate = Literal["FAIL", "INVESTIGATE"]
Tier = Literal["research", "operational"]


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
    if not fail_on or status is None or len(status) == 0:
        return []
    col = "status" if tier == "research" else "status_operational"
    bad = {"FAIL"} if fail_on == "FAIL" else {"FAIL", "INVESTIGATE"}
    hits = status[status[col].isin(bad)]
    return [f"{h.system}/{h.condition} {h.item}: {getattr(h, col)}" for h in hits.itertuples()]
