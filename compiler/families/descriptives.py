"""Family ``descriptives``: n, mean, SD and quantiles of the scores per variant (descriptive only).

Spec block: ``analysis.descriptives`` (:mod:`compiler.blocks.descriptives`; enabled when written).
Needs paired candidates: it describes each variant of the correspondence-audit matrix. Computed in
``metric_suite``'s ``analyse`` task, whose inputs hold the whole resolved ``analysis``, so it adds no
plan task and no compile summary.
"""

from __future__ import annotations

from compiler.errors import Issue
from compiler.families.base import PAIRED, Family, family
from compiler.load import LoadedSpec
from compiler.registry import Needs

MSG_QUANTILES_ORDER = "quantiles must be strictly increasing: {q} does not exceed {prev} (the one before it)"
MSG_QUANTILE_DECIMALS = ("quantile {q} has more than 3 decimals; give probabilities such as 0.025 or 0.5 (each "
                         "names a column, q2.5 or q50)")


@family
class Descriptives(Family):
    """Descriptive statistics per variant; enabled when the spec writes ``analysis.descriptives``.
    No plan task (computed in ``metric_suite``'s ``analyse`` task) and no compile summary."""

    id = "descriptives"
    order = 60
    needs = Needs.of(PAIRED)
    key = "descriptives"

    def issues(self, ls: LoadedSpec) -> list[Issue]:
        """Each quantile has at most 3 decimals (so each names its own column), and they are strictly
        increasing (each problem located)."""
        b = ls.spec.analysis.descriptives
        if b is None:
            return []
        loc = ("analysis", "descriptives", "quantiles")
        out = [ls.issue(loc + (i,), MSG_QUANTILE_DECIMALS.format(q=q)) for i, q in enumerate(b.quantiles)
               if round(q, 3) != q]
        return out or [ls.issue(loc + (i,), MSG_QUANTILES_ORDER.format(q=q, prev=b.quantiles[i - 1]))
                       for i, q in enumerate(b.quantiles) if i and q <= b.quantiles[i - 1]]
