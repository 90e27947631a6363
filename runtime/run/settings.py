"""The analysis settings of one run, typed and built once from the resolved spec (issue 28 §4).

Every stage, audit family and report section reads ``ctx.settings`` instead of picking keys out of the
resolved spec and re-applying defaults: the defaults were made explicit at compile time (the resolved
spec is what the lock hashes), and the methods version's ranking default is applied here, once. The
resolved spec and its digest are unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Mapping

from compiler.catalog import with_defaults

#: ``{tier: {metric: {"pass": x, "investigate": y}}}`` (seed 000 Table 3, §3.7; the spec's bounds over them).
Thresholds = Mapping[str, Mapping[str, Mapping[str, float]]]


def _frozen(value: Any) -> Any:
    """A read-only view of nested mappings (lists become tuples)."""
    if isinstance(value, Mapping):
        return MappingProxyType({k: _frozen(v) for k, v in value.items()})
    if isinstance(value, list):
        return tuple(_frozen(v) for v in value)
    return value


@dataclass(frozen=True)
class RunSettings:
    """What the analyses of a run are computed with.

    Attributes
    ----------
    seed : int
        The spec's seed (every draw derives from it).
    reference : str or None
        The reference variant (None for an unpaired design).
    variants : Mapping
        Variant id -> ``{axis: level}`` (the resolved variant table; empty for an unpaired design).
    k : Mapping of str to int
        Shortlist size K per metric family (``counterfactual``, ``group``, ``merit``; seed 000 §3.4).
    alpha : float
        Significance level, in (0, 1).
    bootstrap : int
        Bootstrap resamples.
    ranking : {"swap_in", "per_variant"}
        How a variant is ranked: the spec's ``analysis.ranking``, else the methods version's default
        (:data:`compiler.methods.RANKING`).
    multiplicity : {"run", "per_metric", "hierarchical", "graphical"}
        Which p-values share an adjustment: the spec's ``analysis.multiplicity``, else the methods
        version's default (:data:`compiler.methods.MULTIPLICITY`; issue 29 §4).
    decision : Mapping or None
        ``{"top_k": K}`` or ``{"threshold": t}`` when the spec states the system's selection rule.
    thresholds : Thresholds
        Every metric's bounds per tier, merged once (at compile time).
    score_range : Mapping of str to (float, float)
        System id -> its ``[low, high]`` score scale.
    score_resolution : Mapping of str to float or None
        System id -> the grid of the scores the analyses see: the declared ``score_resolution`` divided
        by the replicates averaged per candidate, or None (inferred from the scores).
    blocks : Mapping
        The resolved ``analysis`` block of every family that writes one there, by key.
    """

    seed: int
    reference: str | None
    variants: Mapping[str, Any]
    k: Mapping[str, int]
    alpha: float
    bootstrap: int
    ranking: str
    multiplicity: str
    decision: Mapping[str, Any] | None
    thresholds: Thresholds
    score_range: Mapping[str, tuple[float, float]]
    score_resolution: Mapping[str, float | None]
    blocks: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))

    @property
    def threshold(self) -> Any:
        """The decision threshold (a number, or system id -> number), or None under top-K."""
        return None if self.decision is None else self.decision.get("threshold")

    @classmethod
    def from_resolved(cls, resolved: Mapping[str, Any]) -> "RunSettings":
        """The settings of a resolved spec (:func:`compiler.resolve.resolve`)."""
        from compiler.methods import MULTIPLICITY, RANKING

        a = resolved["analysis"]
        own = {"k", "decision", "alpha", "bootstrap", "ranking", "multiplicity"}
        systems = resolved["systems"]
        return cls(
            seed=int(resolved["seed"]),
            reference=resolved["variants"]["reference"],
            variants=_frozen(resolved["variants"]["table"]),
            k=_frozen(a["k"]),
            alpha=float(a["alpha"]),
            bootstrap=int(a["bootstrap"]),
            ranking=a.get("ranking") or RANKING,
            multiplicity=a.get("multiplicity") or MULTIPLICITY,
            decision=_frozen(a["decision"]) if a.get("decision") else None,
            thresholds=_frozen(_with_sesoi(with_defaults(resolved["thresholds"]), a.get("effect_size"))),
            score_range=MappingProxyType({s["id"]: tuple(s["score_range"]) for s in systems}),
            score_resolution=MappingProxyType({
                s["id"]: None if s.get("score_resolution") is None
                else float(s["score_resolution"]) / int(s.get("replicates") or 1) for s in systems}),
            blocks=_frozen({key: value for key, value in a.items() if key not in own}),
        )


def _with_sesoi(thresholds: dict[str, Any], effect_size: Mapping[str, Any] | None) -> dict[str, Any]:
    """The thresholds the run decides with: a SESOI written as a selection ratio, ``{selection_ratio: m}``,
    is the pass bound of the selection ratio in both tiers (issue 30 §2: band ``[m, 1/m]`` for the selection
    ratio and every row deciding on it), the investigate bound at most m. One place, so the analysis, the
    report's rules and its thresholds table read the same band."""
    sesoi = (effect_size or {}).get("sesoi")
    if not isinstance(sesoi, Mapping) or "selection_ratio" not in sesoi:
        return thresholds
    m = float(sesoi["selection_ratio"])
    for tier in thresholds.values():
        bounds = tier.get("selection_ratio")
        if bounds is not None:
            tier["selection_ratio"] = {"pass": m, "investigate": min(float(bounds["investigate"]), m)}
    return thresholds
