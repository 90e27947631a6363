"""Family ``metric_suite``: seed 000's nine metrics (score delta, MARC, flip rate, retention, impact
ratio, Recall@K, nDCG@K, equal opportunity and equalized odds gaps) against pre-registered
thresholds (seed 000 §3.4-3.7, Tables 3 and 4).

Spec block: ``analysis.k``, ``analysis.alpha``, ``analysis.bootstrap`` and ``thresholds``. They are
resolved for every spec (their defaults are part of every locked digest). Needs paired candidates:
every metric compares a variant with the reference variant of the same base candidate.
"""

from __future__ import annotations

from typing import Any

from compiler.catalog import METRIC_IDS, METRICS, TIERS, resolved_thresholds
from compiler.errors import Issue
from compiler.families.base import PAIRED, Family, family
from compiler.load import LoadedSpec
from compiler.registry import Needs
from compiler.spec import PLUGIN_BLOCKS
from compiler.tasks import task


#: Keys of ``analysis`` this family owns.
ANALYSIS_KEYS = ("k", "decision", "alpha", "bootstrap")

MSG_DECISION_ONE = ("analysis.decision takes exactly one rule: {{top_k: K}} (the K best-scored candidates "
                    "of each job are selected) or {{threshold: t}} (selected = score >= t); got {got}")
MSG_DECISION_K_TWICE = ("analysis.decision.top_k sets K of every family, and analysis.k sets it per family: "
                        "give the shortlist size in one place")
MSG_THRESHOLD_SCALES = ("the systems have different score scales ({scales}): one threshold cannot mean the same "
                        "on each; give one per system, e.g. threshold: {{{example}}}")
MSG_THRESHOLD_SYSTEMS = "analysis.decision.threshold needs one value per system: missing {missing}; unknown {unknown}"
MSG_THRESHOLD_UNREACHED = ("analysis.decision.threshold {t:g}: {what} of system '{system}' in {file} (scores from "
                           "{lo:g} to {hi:g}); the selection metrics would compare nothing")
MSG_THRESHOLD_RANGE = ("analysis.decision.threshold {t:g} lies outside the score scale of system '{system}' "
                       "(score_range [{lo:g}, {hi:g}]): a threshold must satisfy low < t <= high, or it "
                       "selects every candidate or none")

MSG_RATIO_ABOVE_ONE = (
    "{metric} pass ({pas}) must lie in (0, 1]: its PASS band is [pass, 1/pass] around the null expectation "
    "1 (a ratio above 1/pass disfavours the reference as much as one below pass the variant)"
)
MSG_RATIO_INVERTED = (
    "{metric} is PASS inside [pass, 1/pass] and INVESTIGATE inside [investigate, 1/investigate], so investigate "
    "({inv}) must be <= pass ({pas}); the investigate band must be the wider one"
)
MSG_INVERTED = (
    "{metric} is {direction}-is-better, so investigate ({inv}) must be {op} pass ({pas}); "
    "the investigate bound must be looser than the pass bound"
)


def decision_issues(ls: LoadedSpec) -> list[Issue]:
    """``analysis.decision``: one rule; ``top_k`` not together with ``analysis.k``; a threshold inside
    every system's score scale."""
    d = ls.spec.analysis.decision
    if d is None:
        return []
    given = [k for k in ("top_k", "threshold") if getattr(d, k) is not None]
    if len(given) != 1:
        return [ls.issue(("analysis", "decision"), MSG_DECISION_ONE.format(
            got=", ".join(given) if given else "no rule"))]
    if d.top_k is not None:
        return [ls.issue(("analysis", "k"), MSG_DECISION_K_TWICE)] if "k" in ls.spec.analysis.model_fields_set else []
    out = []
    systems = {s.id: s for s in ls.spec.systems}
    if isinstance(d.threshold, dict):
        missing = [s for s in systems if s not in d.threshold]
        unknown = [s for s in d.threshold if s not in systems]
        if missing or unknown:
            return [ls.issue(("analysis", "decision", "threshold"), MSG_THRESHOLD_SYSTEMS.format(
                missing=", ".join(missing) or "none", unknown=", ".join(unknown) or "none"))]
    else:
        scales = sorted({tuple(s.score_range) for s in systems.values()})
        if len(scales) > 1:
            return [ls.issue(("analysis", "decision", "threshold"), MSG_THRESHOLD_SCALES.format(
                scales=", ".join(f"[{lo:g}, {hi:g}]" for lo, hi in scales),
                example=", ".join(f"{s}: ..." for s in systems)))]
    for system in systems.values():
        t = threshold_for(d.threshold, system.id)
        lo, hi = system.score_range
        key = ("analysis", "decision", "threshold") + ((system.id,) if isinstance(d.threshold, dict) else ())
        if not lo < t <= hi:
            out.append(ls.issue(key, MSG_THRESHOLD_RANGE.format(t=t, system=system.id, lo=lo, hi=hi)))
    return out


def threshold_for(threshold: Any, system: str) -> float:
    """The decision threshold of one system: the number, or its entry of a per-system mapping."""
    return float(threshold[system] if isinstance(threshold, dict) else threshold)


def threshold_advisories(ls: LoadedSpec) -> list[Issue]:
    """A threshold above every score of a score file, or at or below every one, selects nobody or
    everybody: the selection metrics would then compare nothing (a warning, issue 15)."""
    from compiler.systems import read_system_file

    d = ls.spec.analysis.decision
    if d is None or d.threshold is None or decision_issues(ls):
        return []
    out = []
    for i, s in enumerate(ls.spec.systems):
        if s.kind != "precomputed" or s.blind:
            continue
        found = read_system_file(ls, i, s)
        if found is None or found.problems or not found.rows:
            continue
        t = threshold_for(d.threshold, s.id)
        scores = [r["score"] for r in found.rows]
        lo, hi = min(scores), max(scores)
        what = ("no score reaches it" if t > hi else "every score reaches it" if t <= lo else None)
        if what:
            out.append(ls.issue(("analysis", "decision", "threshold"), MSG_THRESHOLD_UNREACHED.format(
                t=t, what=what, system=s.id, file=s.path, lo=lo, hi=hi)))
    return out


def decision_text(resolved: dict[str, Any]) -> str:
    """One line for ``audit compile``: the decision rule in force (the report words it itself)."""
    a = resolved["analysis"]
    d, k = a.get("decision") or {}, a["k"]
    ks = f"K = {k['counterfactual']} (counterfactual), {k['group']} (group), {k['merit']} (merit)"
    if "threshold" in d:
        t = d["threshold"]
        t = ", ".join(f"{s} {v:g}" for s, v in t.items()) if isinstance(t, dict) else f"{t:g}"
        return (f"decision rule: selected = score >= {t} on each system's scale "
                f"(analysis.decision.threshold); the ranking metrics keep their K: MARC {k['counterfactual']}, "
                f"nDCG@K {k['merit']}")
    if d.get("top_k") is not None:
        return f"decision rule: top-K, {ks} (analysis.decision.top_k)"
    return (f"decision rule: top-K, {ks} (analysis.k); set analysis.decision to "
            "{top_k: K} or {threshold: t} to audit the system's real selection rule")


@family
class MetricSuite(Family):
    """Seed 000's nine metrics against pre-registered thresholds; on for every paired design."""

    id = "metric_suite"
    order = 10
    needs = Needs.of(PAIRED)

    def block(self, spec: Any) -> list[tuple]:
        """Key paths of the block the spec writes: ``analysis.k|alpha|bootstrap``, ``thresholds``."""
        s = spec
        out = [("analysis", k) for k in ANALYSIS_KEYS if k in s.analysis.model_fields_set]
        return out + ([("thresholds",)] if "thresholds" in s.model_fields_set else [])

    def enabled(self, resolved: dict[str, Any]) -> bool:
        """On for every paired design (its needs are its enable rule); a design without pairs that
        writes its block is refused at compile time (the block would be ignored)."""
        return True

    def issues(self, ls: LoadedSpec) -> list[Issue]:
        """Each threshold's investigate bound is looser than its pass bound (seed 000 Table 3); the
        decision rule (:func:`decision_issues`)."""
        out = decision_issues(ls)
        for tier in TIERS:
            tier_model = getattr(ls.spec.thresholds, tier)
            for mid, info in METRICS.items():
                b = getattr(tier_model, mid)
                if b is None:
                    continue
                if mid == "selection_ratio" and not 0 < b.pass_ <= 1:
                    out.append(ls.issue(("thresholds", tier, mid, "pass"), MSG_RATIO_ABOVE_ONE.format(
                        metric=mid, pas=b.pass_)))
                    continue
                ok = b.investigate >= b.pass_ if info.direction == "lower" else b.investigate <= b.pass_
                if not ok and mid == "selection_ratio":
                    out.append(ls.issue(("thresholds", tier, mid, "investigate"), MSG_RATIO_INVERTED.format(
                        metric=mid, inv=b.investigate, pas=b.pass_)))
                    continue
                if not ok:
                    op = ">=" if info.direction == "lower" else "<="
                    out.append(ls.issue(("thresholds", tier, mid, "investigate"), MSG_INVERTED.format(
                        metric=mid, direction=info.direction, inv=b.investigate, op=op, pas=b.pass_)))
        return out

    def resolve(self, ls: LoadedSpec, resolved: dict[str, Any]) -> None:
        """``analysis`` (k per metric family, alpha, bootstrap) and ``thresholds`` (every default of
        seed 000 Table 3 and §3.7 made explicit, the spec's bounds over them)."""
        spec = ls.spec
        thresholds = resolved_thresholds()
        for tier, bounds in thresholds.items():
            for mid, given in getattr(spec.thresholds, tier).model_dump(by_alias=True).items():
                if given is not None:
                    bounds[mid] = {"pass": given["pass"], "investigate": given["investigate"]}
        # the other families write their own blocks (effects; plug-in families of compiler.blocks)
        # ``ranking`` and ``multiplicity`` only when written: their defaults belong to the methods version
        # (compiler.methods.RANKING, MULTIPLICITY),
        # so the digests of specs that do not set it do not change
        dropped = {"effect_size", "validity", *PLUGIN_BLOCKS, *(("ranking",) if spec.analysis.ranking is None else ()),
                   *(("multiplicity",) if spec.analysis.multiplicity is None else ())}
        # ``decision`` only when written (same reason); top_k sets K of every family
        if spec.analysis.decision is None:
            dropped.add("decision")
        resolved["analysis"] = spec.analysis.model_dump(exclude=dropped)
        if spec.analysis.decision is not None:
            d = spec.analysis.decision
            resolved["analysis"]["decision"] = {"top_k": d.top_k} if d.top_k is not None else {"threshold": d.threshold}
            if d.top_k is not None:
                resolved["analysis"]["k"] = {family: d.top_k for family in resolved["analysis"]["k"]}
        resolved["thresholds"] = thresholds

    def plan_tasks(self, resolved: dict[str, Any], score_ids: list[str]) -> list[dict[str, Any]]:
        """``analyse``: ranking, the nine metrics, BH over every p-value of the run (seed 000 §3.3-3.6).
        Its inputs are the whole resolved ``analysis``, so the families computed with it (effects) are
        part of its id."""
        return [task("analyse", {"analysis": resolved["analysis"], "thresholds": resolved["thresholds"],
                                 "reference": resolved["variants"]["reference"], "seed": resolved["seed"],
                                 "metrics": list(METRIC_IDS)}, score_ids)]

    def metric_rows(self, resolved: dict[str, Any]) -> int:
        """Rows of ``metrics.csv``: metrics x variants x (system, condition) pairs."""
        return len(METRIC_IDS) * len(resolved["variants"]["table"]) * sum(
            len(s.get("conditions") or [None]) for s in resolved["systems"])
