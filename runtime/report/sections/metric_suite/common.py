"""Small helpers the metric suite's section builders share: cells, order, slugs, status counts."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

import pandas as pd

from compiler.catalog import METRICS
from runtime.report.sections.metric_suite.texts import METRIC_SHORT, STATUSES


def status(x: Any) -> str:
    """Normalise a status cell; a missing cell (pandas reads ``N/A`` as NaN) is ``N/A``."""
    if isinstance(x, str) and x.strip().upper() in ("PASS", "INCONCLUSIVE", "INVESTIGATE", "FAIL"):
        return x.strip().upper()
    return "N/A"


def truthy(x: Any) -> bool:
    """A boolean cell (bool, numpy bool, or the strings True/False read back from CSV)."""
    if x is None or (isinstance(x, float) and x != x):
        return False
    return str(x) in ("True", "true", "1", "1.0")


def slug(*parts: Any) -> str:
    """An HTML anchor made of ``parts`` (``[a-z0-9_-]``, joined by ``-``)."""
    s = "-".join(str(p) for p in parts)
    return re.sub(r"[^A-Za-z0-9_-]+", "-", s).strip("-").lower() or "x"


def unique(items: Iterable[Any], preferred: Iterable[Any] = ()) -> list[Any]:
    """Unique items: those in ``preferred`` first (in that order), then the rest by first appearance."""
    seen = list(dict.fromkeys(items))
    pref = [p for p in dict.fromkeys(preferred) if p in seen]
    return pref + [x for x in seen if x not in pref]


def records(df: pd.DataFrame | None) -> list[dict[str, Any]]:
    """The rows of ``df`` as dicts (none for a missing or empty frame)."""
    if df is None or len(df) == 0:
        return []
    return [dict(r) for r in df.to_dict(orient="records")]


def metric_info(metric: str) -> dict[str, Any]:
    """What the catalogue says of ``metric`` (label, short name, family, direction, test, interval)."""
    info = METRICS.get(metric)
    short = METRIC_SHORT.get(metric, metric)
    return {
        "id": metric,
        "label": info.label if info else metric,
        "short": short,
        "family": info.family if info else "",
        "direction": info.direction if info else "lower",
        "classify_abs": bool(info.classify_abs) if info else False,
        "test": info.test if info else "",
        "ci": info.ci if info else "",
    }


def counts(statuses: Iterable[str]) -> dict[str, int]:
    """How many of each status (:data:`STATUSES`)."""
    c = {s: 0 for s in STATUSES}
    for s in statuses:
        c[status(s)] += 1
    return c
