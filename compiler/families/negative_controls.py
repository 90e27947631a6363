"""Family ``negative_controls``: each system's noise floor from placebo variants of the reference résumé
(issue 38; the complement of seed 003's positive control).

Spec block: ``variants.negative_controls`` (:class:`compiler.spec.NegativeControl`; checks and resolution
in :mod:`compiler.designs.matrix`). On when controls are written: there is no analysis block. Needs paired
candidates (a population design cannot write variants); reads the metric suite's results, so it runs
after it. Computed at run time from the placebo scores; it adds no plan task of its own (the placebo
résumés' score tasks are the plan's, :func:`compiler.plan.control_batches`).
"""

from __future__ import annotations

from typing import Any

from compiler.families.base import PAIRED, Family, family
from compiler.registry import Needs


@family
class NegativeControls(Family):
    """Placebo metrics, the noise floor per system × condition × metric, and each demographic row against it."""

    id = "negative_controls"
    order = 70
    needs = Needs.of(PAIRED)
    after = ("metric_suite",)

    def block(self, spec: Any) -> list[tuple]:
        """``variants.negative_controls`` when written."""
        v = getattr(spec, "variants", None)
        return [("variants", "negative_controls")] if v is not None and v.negative_controls else []

    def enabled(self, resolved: dict[str, Any]) -> bool:
        """On when the resolved spec holds negative controls."""
        return bool((resolved.get("variants") or {}).get("negative_controls"))
