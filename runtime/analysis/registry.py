"""Registry of metric implementations, keyed by the catalogue's metric ids.

Modelled on inspect_ai's ``_util/registry.py``: each implementation registers itself with a
decorator, ``@metric("flip_rate")``, and the analysis loop looks implementations up by id. The ids
themselves come from :mod:`compiler.catalog` (the single source of metric ids, directions and
thresholds); registering an id the catalogue does not know is refused, and a test checks that every
catalogue id has exactly one implementation.

An implementation is a function ``fn(pairing: Pairing) -> CellResult`` (see
:mod:`runtime.analysis.cell`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

from compiler import catalog

if TYPE_CHECKING:  # pragma: no cover
    from runtime.analysis.cell import CellResult, Pairing

MetricFn = Callable[["Pairing"], "CellResult"]
F = TypeVar("F", bound=Callable[..., object])

ERR_UNKNOWN_METRIC = "metric {metric_id!r} is not in compiler.catalog; known metrics: {known}"
ERR_DUPLICATE_METRIC = "metric {metric_id!r} is already registered (by {existing})"
ERR_NOT_REGISTERED = "no implementation registered for metric {metric_id!r}; registered: {known}"

_REGISTRY: dict[str, MetricFn] = {}


def metric(metric_id: str) -> Callable[[F], F]:
    """Register the decorated function as the implementation of ``metric_id``.

    Parameters
    ----------
    metric_id : str
        A metric id of :data:`compiler.catalog.METRIC_IDS`.

    Returns
    -------
    callable
        A decorator that records the function and returns it unchanged.

    Raises
    ------
    ValueError
        ``ERR_UNKNOWN_METRIC`` when the id is not in the catalogue; ``ERR_DUPLICATE_METRIC`` when
        another function already registered the id.
    """
    if metric_id not in catalog.METRICS:
        raise ValueError(ERR_UNKNOWN_METRIC.format(metric_id=metric_id,
                                                   known=", ".join(catalog.METRIC_IDS)))

    def decorate(fn: F) -> F:
        existing = _REGISTRY.get(metric_id)
        if existing is not None and existing is not fn:
            raise ValueError(ERR_DUPLICATE_METRIC.format(
                metric_id=metric_id, existing=f"{existing.__module__}.{existing.__qualname__}"))
        _REGISTRY[metric_id] = fn  # type: ignore[assignment]
        return fn

    return decorate


def metric_ids() -> tuple[str, ...]:
    """Return the registered metric ids, in catalogue order."""
    return tuple(m for m in catalog.METRIC_IDS if m in _REGISTRY)


def get_metric(metric_id: str) -> MetricFn:
    """Return the implementation registered for ``metric_id``.

    Raises
    ------
    KeyError
        ``ERR_NOT_REGISTERED`` when nothing is registered under that id.
    """
    try:
        return _REGISTRY[metric_id]
    except KeyError:
        raise KeyError(ERR_NOT_REGISTERED.format(metric_id=metric_id,
                                                 known=", ".join(metric_ids()))) from None
