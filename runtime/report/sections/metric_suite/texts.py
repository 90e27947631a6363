"""The wording of the metric suite's report sections: metric names, test and interval descriptions,
tier, band and count labels (seed 000 §3.4, Table 3, Table 4, §3.7).

Method prose (metric definitions, tier notes, method notes) lives in the templates
(``templates/sections/metric_suite_*.html.j2``); these are the short texts the sections' data carry.
"""

from __future__ import annotations

import re

from runtime.analysis.multiplicity import NOTE_NOT_TESTED

#: A result's statuses, in the order the counts show them: from its 95% interval against the PASS band
#: (issue 29 §1), plus seed 000 Table 3's INVESTIGATE of the point estimate (``status_seed000``, Eq. 6);
#: N/A: not computed.
STATUSES = ("PASS", "INCONCLUSIVE", "INVESTIGATE", "FAIL", "N/A")

#: Short name per metric (chart axis, tables); the one-line definitions are in
#: ``templates/sections/metric_suite_text.html.j2`` (seed 000 §3.4.1–3.4.3).
METRIC_SHORT: dict[str, str] = {
    "score_delta": "Score delta", "marc": "MARC / K", "flip_rate": "Flip rate",
    "retention_rate": "Retention rate", "impact_ratio": "Retention ratio", "selection_ratio": "Selection ratio",
    "recall_at_k": "Recall@K",
    "ndcg_at_k": "nDCG@K", "equal_opportunity_gap": "Equal opportunity gap",
    "equalized_odds_gap": "Equalized odds gap",
}

#: Statistical basis of each threshold (seed 000 Table 3, last column).
THRESHOLD_BASIS: dict[str, str] = {
    "score_delta": "Pre-registered tolerance on the normalised score scale (policy choice)",
    "marc": "Pre-registered rank-churn tolerance, scale-invariant to K (policy choice)",
    "flip_rate": "Pre-registered boundary-crossing tolerance (policy choice)",
    "retention_rate": "Seed 000 Table 3's 0.8 bound on shortlist retention (policy choice)",
    "impact_ratio": ("Seed 000 Table 3's 0.8 bound on the ratio of macro retentions (policy choice; a ratio of "
                     "retentions, not of selection rates)"),
    "selection_ratio": ("Pre-registered bound on the ratio of selection rates, variant over reference (policy choice), "
                        "two-sided around the null expectation 1: "
                        "[pass, 1/pass] (issue 29 §2); the flip rate, retention and impact ratio decide on it"),
    "recall_at_k": "Seed 000 Table 3's 0.8 bound on ranking quality (policy choice)",
    "ndcg_at_k": "Seed 000 Table 3's 0.8 bound on ranking quality (policy choice)",
    "equal_opportunity_gap": "Pre-registered gap tolerance, equal-opportunity criterion (policy choice)",
    "equalized_odds_gap": "Pre-registered gap tolerance, equalized-odds criterion (policy choice)",
}

#: The words of a metrics row whose test cannot reject in this design (runtime.analysis).
NOT_INFORMATIVE = "not informative in this design"

#: How each test id of ``metrics.test`` is described (seed 000 §3.4, Table 4).
TEST_TEXT: dict[str, str] = {
    "wilcoxon": "Wilcoxon signed-rank test (paired, two-sided)",
    "wilcoxon_exact_midranks": ("Wilcoxon signed-rank test with mid-ranks, exact over every sign flip "
                                "(ties or zeros on the score grid)"),
    "wilcoxon_normal_ties": "Wilcoxon signed-rank test, normal approximation with the tie correction",
    "mcnemar": "McNemar's test (exact binomial below 25 discordant pairs, else continuity-corrected χ²)",
    "mcnemar_exact": "McNemar's exact (binomial) test",
    "mcnemar_chi2_cc": "McNemar's χ² test with continuity correction",
    "fisher_exact": "Fisher's exact test on retained / not retained, variant vs. reference",
    "": "none (descriptive statistic, no p-value)",
}
#: The prefix of ``metrics.notes`` on a row whose test the hierarchical procedure did not reach
#: (:data:`runtime.analysis.multiplicity.NOTE_NOT_TESTED`): its p_adj cell reads "not tested", not "—".
NOT_TESTED = NOTE_NOT_TESTED.partition(" (")[0]

_TEST_ID = re.compile(r"\b(" + "|".join(sorted((t for t in TEST_TEXT if "_" in t), key=len, reverse=True)) + r")\b")
_METRIC_ID = re.compile(r"\b(" + "|".join(sorted((m for m in METRIC_SHORT if "_" in m), key=len, reverse=True))
                        + r")\b")
_LEVEL1 = re.compile(r"(the category's score test, )?\b([A-Za-z0-9][A-Za-z0-9_.-]*)/level1\b")


def _short(metric: str) -> str:
    """A metric's short name inside a sentence: "the flip rate", "the recall@K", "the nDCG@K"."""
    short = METRIC_SHORT[metric]
    return "the " + (short[0].lower() + short[1:] if short[1:2].islower() else short)


def metric_in_sentence(metric: str) -> str:
    """``metric``'s short name inside a sentence ("the retention rate", "the MARC / K"); an unknown id as it is."""
    return _short(metric) if metric in METRIC_SHORT else metric


def _level1(m: re.Match) -> str:
    system = m.group(2)
    return (f"this category's score test, adjusted over system {system}'s categories" if m.group(1)
            else f"system {system}'s level-1 family (its categories' score tests)")


def readable_note(note: str) -> str:
    """``metrics.notes`` in the report's words: test ids (``mcnemar_exact``) by their names (:data:`TEST_TEXT`),
    metric ids (``flip_rate``) by their short names (:data:`METRIC_SHORT`), a hierarchical level-1 family
    (``minilm/level1``) in words. ``metrics.csv`` keeps the ids (a data contract); only the page reads them out.

    Parameters
    ----------
    note : str
        One row's notes, parts joined by ``"; "``.

    Returns
    -------
    str
        The same note with those ids replaced; other text unchanged.
    """
    note = _TEST_ID.sub(lambda m: TEST_TEXT[m.group(1)], note)
    note = _METRIC_ID.sub(lambda m: _short(m.group(1)), note)
    return _LEVEL1.sub(_level1, note)


#: Added after the test names when the McNemar variant depends on the row (seed 000 §3.4.1).
MCNEMAR_RULE = "exact when fewer than 25 candidates flip, χ² otherwise"

CI_TEXT: dict[str, str] = {
    "bootstrap percentile": "bootstrap percentile interval",
    "wilson": "Wilson score interval",
    # methods 17: the flip rate under per-variant ranking or a threshold rule (methods 19: swap-in top-K reads the
    # smoothed, re-ranked bootstrap below, as the selection ratio)
    "wilson, at the effective sample size of tied flips": (
        "Wilson score interval, at the effective number of candidates where ties at the cutoff make flips "
        "fractional"),
    # methods 18 (issue 39 §2): the selection ratio under swap-in top-K
    "smoothed candidate bootstrap within jobs, re-ranked, normal": (
        "normal interval whose standard error is the spread of a smoothed bootstrap of the base candidates within "
        "each job and match label (each drawn reference score moved by a small kernel step, the variant keeping the "
        "candidate's own paired difference), every resampled pool ranked again, so that the top-K cutoff moves "
        "with the candidates drawn (no place changing hands in any resample: Wilson's interval on 0 lost, noted "
        "on the row)"),
    # methods 19 (issue 39 §4): the flip rate under swap-in top-K (its own words: it had read the selection ratio's,
    # whose fallback differs)
    "smoothed candidate bootstrap of the flips within jobs, re-ranked, normal": (
        "normal interval whose standard error is the spread of the flip rate over a smoothed bootstrap of the base "
        "candidates within each job and match label (each drawn reference score moved by a small kernel step, the "
        "variant keeping the candidate's own paired difference), every resampled pool ranked again, so that the "
        "top-K cutoff moves with the candidates drawn (where no candidate flips, or the resamples do not spread: "
        "Wilson's score interval on the candidates, at their effective number where ties at the cutoff make flips "
        "fractional)"),
    # methods 16 (issue 39 §2): the selection ratio's percentile interval, continuity-corrected (a threshold rule
    # since methods 18)
    "candidate bootstrap within jobs, continuity-corrected": (
        "percentile interval of a bootstrap of the base candidates within each job (the audited jobs are kept; "
        "each candidate brings its reference and variant), widened by half a selected place at each end because "
        "the ratio moves in whole places (no place changing hands: Wilson's interval on 0 lost, noted on the row)"),
    "candidate bootstrap within jobs, re-ranked": ("bootstrap of the base candidates within each job, every "
                                                   "resampled pool ranked again"),
    "candidate bootstrap within jobs and labels, re-ranked": ("bootstrap of the base candidates within each "
                                                              "job and match label, every resampled pool "
                                                              "ranked again"),
    "paired bootstrap over candidates": "paired bootstrap over candidates",
    # methods 14 (issue 39 §4): swap-in MARC's variance is analytic; per-variant ranking keeps the re-ranked bootstrap.
    # Methods 17: MARC 0 with differing scores reads Wilson's bound; methods 20: the inverse-square-root scale, t.
    "u-statistic variance, inverse-square-root scale; wilson bound at 0": (
        "computed by formula, with no resampling: Hoeffding's unbiased variance of each job's rank-change statistic "
        "(a U-statistic), as a normal interval on the inverse-square-root scale (Student's t on the candidates less "
        "the jobs), so that the range reaches further above the value than below it, as MARC's standard error grows "
        "with MARC; where no candidate's rank changes but scores do, from 0 to Wilson's upper bound on the share of "
        "candidates that could have moved one place unseen, divided by K; where a job has under 4 candidates, the "
        "bootstrap of the base candidates within each job, every resampled pool ranked again (noted on the row)"),
    # methods 15 (issue 39 §2)
    "jeffreys at the bootstrap's design effect": ("Jeffreys interval on the pooled top-K slots at the design effect "
                                                  "of a bootstrap of the base candidates within each job, never "
                                                  "more trials than the slots (no slot changing hands: Wilson's "
                                                  "interval on 0 lost, noted on the row)"),
    "candidate bootstrap within jobs and labels": ("bootstrap of the base candidates within each job and match "
                                                   "label (each keeps its selection at the threshold)"),
}

#: Label of each threshold tier; what each tier means is in ``metric_suite_text.html.j2`` (seed 000 §3.7).
TIER_LABELS: dict[str, str] = {"research": "Research tier", "operational": "Operational tier"}

#: Label of each risk band (seed 000 §3.6), in plain text beside the score: a regulator read a large green
#: "Low risk" banner beside a FAIL verdict as the tool's conclusion. The band is seed 000's word for a value of
#: Eq. 6, named as such; it is not coloured as a status.
BAND_TEXT = {"low": "Eq. 6 band: low (under 0.15)", "medium": "Eq. 6 band: medium (0.15 to under 0.30)",
             "high": "Eq. 6 band: high (0.30 or more)"}

#: Labels of ``ReportMeta.counts`` keys (others are shown with underscores as spaces).
COUNT_LABELS = {
    "jobs": "Jobs", "base_candidates": "Base candidates", "variants": "Variants", "resumes": "Résumés",
    "scored": "Scored résumé × job pairs", "systems": "Systems", "texts_to_embed": "Texts embedded",
    "model_calls": "Model calls", "estimated_tokens": "Estimated tokens",
    "estimated_cost_usd": "Estimated cost (USD)", "tasks": "Plan tasks", "metric_rows": "Metric rows",
    "paired_candidates_per_variant": "Paired candidates per variant",
}

#: Counts of what the tool generates and asks models, left out of a score-file audit's design section.
GENERATION_COUNTS = ("texts_to_embed", "model_calls", "estimated_tokens", "estimated_cost_usd")

#: Label of each metric family (seed 000 §3.4).
FAMILY_TEXT = {"counterfactual": "Counterfactual", "group": "Group fairness", "merit": "Merit-aware"}

#: Labels and interval descriptions that name a top-K, as they read under a threshold rule (issue 15).
THRESHOLD_LABELS = {"flip_rate": "Flip rate (threshold crossings)",
                    "retention_rate": "Retention rate (macro retention at the threshold)",
                    "recall_at_k": "Recall at the threshold (Recall@K under a top-K rule)",
                    "impact_ratio": "Retention ratio at the threshold (seed 000's impact ratio)"}
THRESHOLD_CI = {"recall_at_k": "candidate bootstrap within jobs and labels",
                "flip_rate": "wilson, at the effective sample size of tied flips",
                "selection_ratio": "candidate bootstrap within jobs, continuity-corrected"}
THRESHOLD_BASIS_AT_THRESHOLD = {"retention_rate": "Seed 000 Table 3's 0.8 bound on retention at the decision threshold "
                                                  "(policy choice)",
                                "impact_ratio": "Seed 000 Table 3's 0.8 bound on the ratio of retentions at the decision "
                                                "threshold (seed 000 Eq. 3; policy choice); the ratio of selection rates "
                                                "is in the notes"}

