"""Static catalogue of the metric suite: ids, families, directions and default thresholds.

The compiler validates specs against this catalogue; the runtime registers one implementation per
id (``runtime.analysis.registry``) and a test checks that both agree. Nothing here computes a metric.

Sources
-------
seed 000 §3.4 (metric definitions), Table 3 (directions and the research-tier thresholds),
Table 4 (the test behind each metric), §3.7 (the operational tier: "widening the Score Delta PASS
band from ±2% to ±4%"). The operational tier of every other metric defaults to the research tier,
because the paper gives no other relaxed value; an auditor who relaxes more must write it in the spec.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

Direction = Literal["lower", "higher"]
Family = Literal["counterfactual", "group", "merit"]
Tier = Literal["research", "operational"]

TIERS: tuple[Tier, ...] = ("research", "operational")
FAMILIES: tuple[Family, ...] = ("counterfactual", "group", "merit")
STATUSES = ("PASS", "INVESTIGATE", "FAIL")
#: Status of a metric whose value is undefined (for example recall@k when no job has a true match).
STATUS_NA = "N/A"


@dataclass(frozen=True)
class MetricInfo:
    """One metric of seed 000 §3.4.

    Attributes
    ----------
    id : str
        Metric id used in specs, ``metrics.csv`` and the report.
    label : str
        Human-readable name for the report.
    family : {"counterfactual", "group", "merit"}
        Which shortlist size ``analysis.k.<family>`` applies.
    direction : {"lower", "higher"}
        ``lower``: lower is better (PASS when value <= pass); ``higher``: the reverse.
    research : tuple of float
        Default (pass, investigate) bounds of the research tier, seed 000 Table 3.
    operational : tuple of float
        Default (pass, investigate) bounds of the operational tier, seed 000 §3.7.
    test : str
        Significance test, seed 000 Table 4 ("" when the metric has none).
    ci : str
        How the 95% interval is computed.
    classify_abs : bool
        Classify on ``|value|`` (score_delta is a signed mean).
    seed000 : bool
        One of seed 000's nine metrics (Table 3); Eq. 6 (``risk.csv``) counts only these. False for the
        metrics this tool adds (``selection_ratio``, issue 29 §2).
    resolved : bool
        Its default thresholds are written into every resolved spec. False for a metric added after
        specs were locked: its thresholds enter the resolved spec only when the spec writes them (the
        defaults belong to the methods version, :func:`resolved_thresholds`), so shipped digests hold.
    """

    id: str
    label: str
    family: Family
    direction: Direction
    research: tuple[float, float]
    operational: tuple[float, float]
    #: The test under the default (swap-in) ranking; ``metrics.csv``'s ``test`` column names the one a row
    #: used (the impact ratio: McNemar on the paired 2x2 table, Fisher's exact test under per-variant
    #: ranking, where the reference's retention is 1 by construction and the test is labelled not informative).
    test: str
    ci: str
    classify_abs: bool = False
    seed000: bool = True
    resolved: bool = True


METRICS: dict[str, MetricInfo] = {
    m.id: m
    for m in (
        MetricInfo("score_delta", "Score delta (mean Δ, normalised score)", "counterfactual", "lower",
                   (0.02, 0.05), (0.04, 0.05), "wilcoxon", "bootstrap percentile", classify_abs=True),
        MetricInfo("marc", "MARC / K (mean absolute rank change)", "counterfactual", "lower",
                   (0.50, 0.70), (0.50, 0.70), "wilcoxon", "u-statistic variance, inverse-square-root scale; wilson bound at 0"),
        MetricInfo("flip_rate", "Flip rate (top-K boundary crossings)", "counterfactual", "lower",
                   (0.05, 0.10), (0.05, 0.10), "mcnemar", "smoothed candidate bootstrap of the flips within jobs, re-ranked, normal"),
        MetricInfo("retention_rate", "Retention rate (macro top-K retention)", "group", "higher",
                   (0.80, 0.70), (0.80, 0.70), "", "jeffreys at the bootstrap's design effect"),
        MetricInfo("impact_ratio", "Shortlist retention ratio (seed 000's impact ratio)", "group", "higher",
                   (0.80, 0.70), (0.80, 0.70), "mcnemar", "jeffreys at the bootstrap's design effect"),
        MetricInfo("selection_ratio", "Selection ratio (variant selected / reference selected)", "group",
                   "higher", (0.80, 0.70), (0.80, 0.70), "mcnemar", "smoothed candidate bootstrap within jobs, re-ranked, normal",
                   seed000=False, resolved=False),
        MetricInfo("recall_at_k", "Recall@K", "merit", "higher",
                   (0.80, 0.70), (0.80, 0.70), "", "candidate bootstrap within jobs and labels, re-ranked"),
        MetricInfo("ndcg_at_k", "nDCG@K", "merit", "higher",
                   (0.80, 0.75), (0.80, 0.75), "", "candidate bootstrap within jobs and labels, re-ranked"),
        MetricInfo("equal_opportunity_gap", "Equal opportunity gap (|ΔTPR|)", "merit", "lower",
                   (0.10, 0.15), (0.10, 0.15), "", "paired bootstrap over candidates"),
        MetricInfo("equalized_odds_gap", "Equalized odds gap (max |ΔTPR|, |ΔFPR|)", "merit", "lower",
                   (0.10, 0.15), (0.10, 0.15), "", "paired bootstrap over candidates"),
    )
}

METRIC_IDS: tuple[str, ...] = tuple(METRICS)

#: Default shortlist size per family, seed 000 §3.4 (10 / 10 / 15).
DEFAULT_K: dict[str, int] = {"counterfactual": 10, "group": 10, "merit": 15}

#: Risk bands of seed 000 §3.6, Eq. 6: (lower bound, label), highest first.
RISK_BANDS: tuple[tuple[float, str], ...] = ((0.30, "high"), (0.15, "medium"), (0.0, "low"))

#: Significant digits kept before a value is classified (seed 000 §3.4.4).
CLASSIFY_SIGNIFICANT_DIGITS = 6


def default_thresholds() -> dict[str, dict[str, dict[str, float]]]:
    """Return ``{tier: {metric: {"pass": x, "investigate": y}}}`` for every metric: seed 000 Table 3 and
    §3.7; ``selection_ratio`` issue 29 §2 (PASS band ``[pass, 1/pass]``)."""
    return {
        tier: {
            m.id: {"pass": getattr(m, tier)[0], "investigate": getattr(m, tier)[1]}
            for m in METRICS.values()
        }
        for tier in TIERS
    }


def resolved_thresholds() -> dict[str, dict[str, dict[str, float]]]:
    """:func:`default_thresholds` of the metrics whose defaults every resolved spec writes
    (``MetricInfo.resolved``); the others enter only when the spec writes them."""
    return {tier: {m: b for m, b in bounds.items() if METRICS[m].resolved}
            for tier, bounds in default_thresholds().items()}


def with_defaults(thresholds: Mapping[str, Mapping[str, Mapping[str, float]]]) -> dict[str, dict[str, dict[str, float]]]:
    """``thresholds`` (a resolved spec's) completed with the defaults of the metrics it leaves out (a
    metric added by a later methods version, :func:`resolved_thresholds`); the given bounds win."""
    out = {tier: {m: dict(b) for m, b in bounds.items()} for tier, bounds in (thresholds or {}).items()}
    for tier, bounds in default_thresholds().items():
        if tier in out:  # a missing tier or seed 000 metric stays missing (the caller's error to raise)
            for m, b in bounds.items():
                if not METRICS[m].resolved:
                    out[tier].setdefault(m, b)
    return out
