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
    """

    id: str
    label: str
    family: Family
    direction: Direction
    research: tuple[float, float]
    operational: tuple[float, float]
    test: str
    ci: str
    classify_abs: bool = False


METRICS: dict[str, MetricInfo] = {
    m.id: m
    for m in (
        MetricInfo("score_delta", "Score delta (mean Δ, normalised score)", "counterfactual", "lower",
                   (0.02, 0.05), (0.04, 0.05), "wilcoxon", "bootstrap percentile", classify_abs=True),
        MetricInfo("marc", "MARC / K (mean absolute rank change)", "counterfactual", "lower",
                   (0.50, 0.70), (0.50, 0.70), "wilcoxon", "candidate bootstrap within jobs, re-ranked"),
        MetricInfo("flip_rate", "Flip rate (top-K boundary crossings)", "counterfactual", "lower",
                   (0.05, 0.10), (0.05, 0.10), "mcnemar", "wilson"),
        MetricInfo("retention_rate", "Retention rate (macro top-K retention)", "group", "higher",
                   (0.80, 0.70), (0.80, 0.70), "", "candidate bootstrap within jobs"),
        MetricInfo("impact_ratio", "Impact ratio (four-fifths rule)", "group", "higher",
                   (0.80, 0.70), (0.80, 0.70), "fisher_exact", "candidate bootstrap within jobs"),
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
    """Return ``{tier: {metric: {"pass": x, "investigate": y}}}`` from seed 000 Table 3 and §3.7."""
    return {
        tier: {
            m.id: {"pass": getattr(m, tier)[0], "investigate": getattr(m, tier)[1]}
            for m in METRICS.values()
        }
        for tier in TIERS
    }
