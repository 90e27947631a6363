"""Family ``metric_suite``: seed 000's nine metrics (score delta, MARC, flip rate, retention, impact
ratio, Recall@K, nDCG@K, equal opportunity and equalized odds gaps) against pre-registered
thresholds (seed 000 §3.4-3.7, Tables 3 and 4).

Spec block: ``analysis.k``, ``analysis.alpha``, ``analysis.bootstrap`` and ``thresholds``. They are
resolved for every spec (their defaults are part of every locked digest). Needs paired candidates:
every metric compares a variant with the reference variant of the same base candidate.
"""

from __future__ import annotations

from typing import Any

from compiler.catalog import METRIC_IDS, METRICS, TIERS, default_thresholds
from compiler.designs import design_of
from compiler.errors import Issue
from compiler.load import LoadedSpec
from compiler.spec import PLUGIN_BLOCKS
from compiler.tasks import task

ID = "metric_suite"
ORDER = 10
NEEDS = frozenset({"paired"})

#: Keys of ``analysis`` this family owns.
ANALYSIS_KEYS = ("k", "alpha", "bootstrap")

MSG_INVERTED = (
    "{metric} is {direction}-is-better, so investigate ({inv}) must be {op} pass ({pas}); "
    "the investigate bound must be looser than the pass bound"
)


def _spec(x: Any) -> Any:
    return getattr(x, "spec", x)


def block(spec: Any) -> list[tuple]:
    """Key paths of the block the spec writes: ``analysis.k|alpha|bootstrap``, ``thresholds``."""
    s = _spec(spec)
    out = [("analysis", k) for k in ANALYSIS_KEYS if k in s.analysis.model_fields_set]
    return out + ([("thresholds",)] if "thresholds" in s.model_fields_set else [])


def enabled(spec_or_resolved: Any) -> bool:
    """On for every paired design; on a design without pairs, only when the spec writes its block
    (and is then refused: the block would be ignored)."""
    if "paired" in design_of(spec_or_resolved).PROVIDES:
        return True
    return not isinstance(spec_or_resolved, dict) and bool(block(spec_or_resolved))


def issues(ls: LoadedSpec) -> list[Issue]:
    """Each threshold's investigate bound is looser than its pass bound (seed 000 Table 3)."""
    out = []
    for tier in TIERS:
        tier_model = getattr(ls.spec.thresholds, tier)
        for mid, info in METRICS.items():
            b = getattr(tier_model, mid)
            if b is None:
                continue
            ok = b.investigate >= b.pass_ if info.direction == "lower" else b.investigate <= b.pass_
            if not ok:
                op = ">=" if info.direction == "lower" else "<="
                out.append(ls.issue(("thresholds", tier, mid, "investigate"), MSG_INVERTED.format(
                    metric=mid, direction=info.direction, inv=b.investigate, op=op, pas=b.pass_)))
    return out


def resolve(ls: LoadedSpec, resolved: dict[str, Any]) -> None:
    """``analysis`` (k per metric family, alpha, bootstrap) and ``thresholds`` (every default of
    seed 000 Table 3 and §3.7 made explicit, the spec's bounds over them)."""
    spec = ls.spec
    thresholds = default_thresholds()
    for tier, bounds in thresholds.items():
        for mid, given in getattr(spec.thresholds, tier).model_dump(by_alias=True).items():
            if given is not None:
                bounds[mid] = {"pass": given["pass"], "investigate": given["investigate"]}
    # the other families write their own blocks (effects; plug-in families of compiler.blocks)
    # ``ranking`` only when written: its default belongs to the methods version (compiler.methods.RANKING),
    # so the digests of specs that do not set it do not change
    dropped = {"effect_size", "validity", *PLUGIN_BLOCKS, *(("ranking",) if spec.analysis.ranking is None else ())}
    resolved["analysis"] = spec.analysis.model_dump(exclude=dropped)
    resolved["thresholds"] = thresholds


def plan_tasks(resolved: dict[str, Any], score_ids: list[str]) -> list[dict[str, Any]]:
    """``analyse``: ranking, the nine metrics, BH over every p-value of the run (seed 000 §3.3-3.6).
    Its inputs are the whole resolved ``analysis``, so the families computed with it (effects) are
    part of its id."""
    return [task("analyse", {"analysis": resolved["analysis"], "thresholds": resolved["thresholds"],
                             "reference": resolved["variants"]["reference"], "seed": resolved["seed"],
                             "metrics": list(METRIC_IDS)}, score_ids)]


def metric_rows(resolved: dict[str, Any]) -> int:
    """Rows of ``metrics.csv``: metrics x variants x (system, condition) pairs."""
    return len(METRIC_IDS) * len(resolved["variants"]["table"]) * sum(
        len(s.get("conditions") or [None]) for s in resolved["systems"])


def summary(resolved: dict[str, Any], size: dict[str, Any] | None = None) -> dict[str, Any]:
    """No plan keys of its own (its size is ``counts.metric_rows``)."""
    return {}
