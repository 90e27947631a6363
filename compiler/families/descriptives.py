"""Family ``descriptives``: n, mean, SD and quantiles of the scores per variant (descriptive only).

Spec block: ``analysis.descriptives`` (:mod:`compiler.blocks.descriptives`; enabled when written).
Needs paired candidates: it describes each variant of the correspondence-audit matrix. Computed in
``metric_suite``'s ``analyse`` task, whose inputs hold the whole resolved ``analysis``, so it adds no
plan task and no compile summary.
"""

from __future__ import annotations

from typing import Any

from compiler.errors import Issue
from compiler.load import LoadedSpec

ID = "descriptives"
ORDER = 60
NEEDS = frozenset({"paired"})

MSG_QUANTILES_ORDER = "quantiles must be strictly increasing: {q} does not exceed {prev} (the one before it)"
MSG_QUANTILE_DECIMALS = ("quantile {q} has more than 3 decimals; give probabilities such as 0.025 or 0.5 (each "
                         "names a column, q2.5 or q50)")


def _spec(x: Any) -> Any:
    return getattr(x, "spec", x)


def block(spec: Any) -> list[tuple]:
    """``analysis.descriptives`` when the spec writes it."""
    return [("analysis", "descriptives")] if _spec(spec).analysis.descriptives is not None else []


def enabled(spec_or_resolved: Any) -> bool:
    """On when the spec writes ``analysis.descriptives``."""
    if isinstance(spec_or_resolved, dict):
        return "descriptives" in spec_or_resolved["analysis"]
    return bool(block(spec_or_resolved))


def issues(ls: LoadedSpec) -> list[Issue]:
    """Each quantile has at most 3 decimals (so each names its own column), and they are strictly
    increasing (each problem located)."""
    b = ls.spec.analysis.descriptives
    if b is None:
        return []
    loc = ("analysis", "descriptives", "quantiles")
    out = [ls.issue(loc + (i,), MSG_QUANTILE_DECIMALS.format(q=q)) for i, q in enumerate(b.quantiles) if round(q, 3) != q]
    return out or [ls.issue(loc + (i,), MSG_QUANTILES_ORDER.format(q=q, prev=b.quantiles[i - 1]))
                   for i, q in enumerate(b.quantiles) if i and q <= b.quantiles[i - 1]]


def resolve(ls: LoadedSpec, resolved: dict[str, Any]) -> None:
    """``analysis.descriptives`` with its defaults explicit; absent when not written (digests of
    other specs unchanged)."""
    b = ls.spec.analysis.descriptives
    if b is not None:
        resolved["analysis"]["descriptives"] = b.model_dump()


def plan_tasks(resolved: dict[str, Any], score_ids: list[str]) -> list[dict[str, Any]]:
    """None: computed in ``metric_suite``'s ``analyse`` task, whose inputs hold this block."""
    return []


def metric_rows(resolved: dict[str, Any]) -> int:
    """Its rows go to ``descriptives.csv``, not ``metrics.csv``."""
    return 0


def summary(resolved: dict[str, Any], size: dict[str, Any] | None = None) -> dict[str, Any]:
    return {}
