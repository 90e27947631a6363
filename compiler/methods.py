"""The methods version: one integer for the analysis methods (computations and defaults).

Bump :data:`METHODS_VERSION` and add an entry to :data:`CHANGES` whenever a computation or a default
changes a result (a BH family, a ranking mode, a bootstrap default...), and add the same line to the
"Methods versions" section of ``CHANGELOG.md`` (a test checks both list the same entries). The lock
records the methods version it was made under (``methods_version``; a lock without one, schema 1.0,
is version 1). ``audit execute`` refuses a lock of another methods version, and ``audit compile``
re-locks only with ``--amend --reason``, so that one spec digest never yields two conclusions
(DESIGN.md, "Methods version").
"""

from __future__ import annotations

#: The methods version this audit-compiler implements.
METHODS_VERSION = 10

#: Methods version -> what changed in it (version 1: the first implementation).
CHANGES: dict[int, str] = {
    1: "the methods of the seeds as first implemented",
    2: ("score batches are plan tasks: an embedding system encodes each batch of the plan (at most "
        "64 resumes of one job: whole base candidates with all their variants) in one encoder call, "
        "instead of length-sorted chunks of every text set by execution.batch_size; embedding "
        "scores may differ from version 1 in the last bits of a float, and no longer depend on "
        "execution.batch_size"),
    3: ("tie-safe counterfactual statistics (issue 12): tests on paired differences run on each system's "
        "score grid (declared systems[].score_resolution, else inferred), with mid-ranks and the exact "
        "sign-flip distribution when differences tie; ranks are mid-ranks of the scores (no cv_id "
        "tie-break in any metric); top-K membership, flips, retention, Recall@K, nDCG@K and the TPR/FPR "
        "gaps are expectations over the orders of tied candidates (McSherry & Najork 2008); the MARC "
        "rank test, McNemar on flips and the impact ratio's Fisher test, which cannot reject under "
        "per-variant ranking, are left out of BH (their p_adj is empty); Wilson bounds are clamped to "
        "[0, 1]; a bootstrap resample with no true match (or no non-match) is dropped and counted, not "
        "read as a gap of 0. The default ranking is swap_in (analysis.ranking): each variant resume is "
        "ranked against the reference resumes of the other candidates of its job, so MARC, flips, "
        "retention and the impact ratio have a direction and their tests can reject; per_variant (seed "
        "000 §3.3) keeps the earlier ranking, whose values and raw p-values are unchanged for inputs "
        "without ties; every FAIL or INVESTIGATE row names the disadvantaged level (metrics.csv column "
        "disadvantaged)"),
    4: ("calibrated intervals (issue 12, bench/coverage_counterfactual.py): the intervals of MARC, top-K retention, the impact ratio, Recall@K and nDCG@K come from a candidate-level percentile bootstrap within jobs (runtime.analysis.stats.stratified_bootstrap: each resample redraws the base candidates of every job, each with its reference and variant, and MARC, Recall@K and nDCG@K rank every resampled pool again), instead of a bootstrap over jobs (which covered 42-51% with 2 jobs) or of independent per-candidate values (MARC: 86-89%); the one-job Wilson and empty-interval fallbacks are gone; every row whose test rejects after BH names the disadvantaged level too; metrics_by_job.csv gives every metric per job with its interval, flags and Cochran's Q / I2 across jobs"),
    5: ("effect sizes on the seeds' scale (issue 13): every contrast's d is Cohen's d with the pooled SD of the two groups of scores, the scale of the SESOI, the joint criterion, the equivalence bounds and the forest plot (variant contrasts were d_z = mean/sd of the paired differences, 4-6 times larger at r = 0.97-0.99; d_z is now its own column, never compared with the SESOI); variant contrasts keep the paired t-test, with the Algina & Keselman (2003) interval of d; axis contrasts of paired designs come from OLS with a fixed effect per base resume, every axis adjusted for the others, SEs clustered by base resume (t on G-1 df), instead of marginal Welch tests that treated the resumes as independent (kept for independent full-factorial designs; OLS with HC3 otherwise); the TOST, its p, the equivalence flag and the achieved margin come from one interval, the (1-2 alpha) t interval that the TOST inverts (the margin was the largest endpoint of a pooled-variance noncentral-t interval), so equivalent holds exactly when margin < SESOI; BH runs over one family across every contrast by default (analysis.effect_size.bh_families: all; per_axis keeps the earlier families); model rows give no SE, interval or p-value when the residual variance within base resumes is zero or a coefficient is not estimable, and MixedLM at its boundary (REML score at zero template variance not positive) reports ICC 0, the OLS coefficients and boundary = True, with its convergence warnings in the notes; the causal family names a case of seed 001 §5.2 only when the simultaneous 95% max-t band over TE, NDE, NIE, BIE and RIE excludes 0 (per-effect intervals named some case in about 13% of null audits); causal.csv gains sim_low, sim_high and significant_marginal; the distribution check's defaults are min_sd = score grid step / SESOI (at least 0.01) and max_ceiling_share = 0.1 (was 0.01 and 0.5), and positive_control defaults to the match control; the planted self-test's paired-contrast row is effect_size_paired (its value is Cohen's d; it was effect_size_dz); effects.csv gains the per-job contrasts (section contrast_job)"),
    6: ("repeated cross-fitting of the causal family (issue 13): the DML-UCA estimator searches its hyperparameters once and runs the cross-fitting on 5 independent fold assignments (runtime.analysis.causal.REPEATS), aggregated by the mean, with variance mean_s(sigma_s^2 + (theta_s - theta)^2) (Chernozhukov et al. 2018, §3.4); the per-effect interval is estimate ± z·SE (it was the percentile interval of one split's multiplier draws) and the simultaneous band uses the mean of the splits' max-t critical values; causal.csv gains the column repeats. With one split the SE of NIE was 7% below its empirical SD (coverage 92.3% in the linear SCM, bench/bench_causal_coverage.py)"),
    7: ("decisions from evidence (issue 29): the status of every metrics.csv row (both tiers) is PASS when its 95% interval lies inside the tier's PASS band ([0, pass] for lower-is-better metrics, [-pass, pass] for the signed score_delta, [pass, 1] for higher-is-better), FAIL when it lies wholly outside, INCONCLUSIVE otherwise, N/A without an interval (it compared the point estimate with seed 000 Table 3, which is kept as status_seed000 and status_seed000_operational, and which the Eq. 6 risk score reads); new columns decision_on, decision_low, decision_high, pass_low, pass_high; metrics_by_job.csv decides each job on its own interval, flags a crossing only when the job's status is PASS or FAIL, and names a job's side only when its interval lies wholly beyond the PASS band; --fail-on INCONCLUSIVE trips on every row that is not PASS (INVESTIGATE is accepted as its old name); a row names a disadvantaged side only when its evidence establishes one: its test rejects after adjustment (p_adj < alpha), the flip rate, retention and impact ratio reading the selection test of their in/out table (McNemar) and its direction, the TPR/FPR gaps their interval lying wholly beyond the PASS bound, Recall@K and nDCG@K never; else 'direction not established' on a FAIL or INCONCLUSIVE row; the default analysis.multiplicity is hierarchical (Benjamini & Bogomolov 2014, one family per audited system: per category the score test at level 1, its MARC and McNemar selection tests at level 2), where it was one BH over every p-value of the run (analysis.multiplicity: run keeps it); headline.csv and the report's first section give one status per system x protected category (the worst over its score, rank, selection and gap rows) and the system's verdict; seed 000 Eq. 6 (risk.csv) moves to the appendix as a summary on point estimates, and its dependence-aware variant (risk_score_independent, band_independent, n_quantities) is gone"),
    8: ("decisions on the selection rule (issues 29 and 30): new metric selection_ratio (variant resumes selected / reference resumes selected at the decision rule in force, swap-in top-k.group or score >= threshold, pooled over jobs; McNemar on the paired in/out table; candidate bootstrap within jobs; PASS band [pass, 1/pass], default pass 0.8, investigate 0.7, its thresholds in the resolved spec only when written; N/A under per-variant top-K ranking, where it is 1 by construction); the flip rate, retention and impact ratio keep seed 000's values and status_seed000 but their status decides on the selection ratio at their own cutoff (decision_on = selection_ratio): the flip rate's churn FAILed every simulated fair system; the headline counts the four rows once; Eq. 6 counts seed 000's nine metrics only; the McNemar test of the selection table is a level-2 test of its own (on the selection_ratio row, shared by the impact ratio) when it reads another cutoff than the flip table (k.group != k.counterfactual; it was left out of every family); one tie order per candidate, shared by its reference and variant resumes (a variant scored exactly as its reference flips nothing and retains every place, in both ranking modes; the two orders were independent); issue 30 §1, §3: analysis.effect_size.sesoi also takes {selection_ratio: m}, {score: x} or {d: x, standardiser: pooled|within_job|within_job_match} (a number keeps its meaning, pooled d); for a selection ratio the score shift delta* = inf{delta >= 0: ratio(delta) <= m} is exact from the reference scores' order statistics at the decision rule (top-K with k.group, tie-averaged, or score >= t), pooled over jobs and per job; a SESOI written as a selection ratio is also the selection ratio's pass bound ([m, 1/m]); new sesoi.csv gives the SESOI per system x condition (and job) as a ratio, a shift, a normalised shift and a d; the TOST of variant, axis and pooled contrasts runs at +-delta* (per-job rows at their job's delta*); sesoi_score = delta*, new margin_score and standardiser_kind; meaningful = |difference| >= delta* and q < alpha; with a plain-number SESOI every effect-size number is as in methods 7; new power.csv replaces the compile-time d_z MDEs (plan.sensitivity and the mde section of effects.csv are gone): the level-1 score test's power at delta* (noncentral t with n*3/pi), two-sided at alpha and alpha/m1, n for the declared power, and the MDE as a shift, a selection ratio and a d; axis rows use the within-resume model's SE; sesoi.csv and power.csv are sealed with the run; audit compile prints both when scores are known (a score file, or --pilot RUN_DIR, whose paired.csv sha256 goes into the lock); page 1 shows each category's smallest detectable selection ratio"),
    9: ("LLM answers read one way (issue 35 §1): reasoning blocks (<think>...</think>, [THINK]...[/THINK], any case) are removed before a score is read and a block never closed is invalid (reasoning not closed); the final answer wins: the last score of the strongest form present (a JSON object with a score key, then score: N, then a bare number), where the first JSON object decided; a/b, a out of b and a% read as a only when b is the high end of score_range and are otherwise invalid and asked again (Score: 8/10 on [0, 100] was a valid 8); the provider's reasoning_content is never parsed, and llm_responses_<system>.csv gains reasoning_chars; the impact ratio's note under a decision threshold calls the ratio of the two selection rates the selection ratio (it called it LL144's impact ratio, which divides by the most-selected category's rate: ll144.csv)"),
    10: ("MARC's bootstrap interval under swap-in ranking (the default) re-ranks each resample with the slot correction (issue 39 §1): a candidate drawn c times has n_job - c competitors, not n_job - 1, so its count of competitors above is scaled by (n_job - 1) / (n_job - c); the resampled MARC averaged (1 - 1/n_job) of MARC and the interval sat low (for the system), now centred (20 pools of 40 x 4,000 resamples: -0.005 SE, was -0.11 SE); per-variant ranking keeps plain counts (they already err above MARC); only marc's ci_low, ci_high and the decisions on them move; a selection rule score >= t compares after rounding both to 6 significant digits (seed 000 §3.4.4), so a score one float step below t is selected"),
}

#: The default of ``analysis.ranking`` (seed 000 §3.3 ranks per variant; swap-in gives rank and
#: selection changes a direction their tests can detect; README, "Ranking modes").
RANKING = "swap_in"

#: The default of ``analysis.multiplicity`` (issue 29 §4): which p-values share an adjustment. Since methods
#: version 7 the Benjamini-Bogomolov hierarchy per audited system; ``run`` is seed 000 §3.5 (BH over every
#: p-value of the run), methods 6's default.
MULTIPLICITY = "hierarchical"

#: Resumes per score batch of the plan (:func:`compiler.plan.score_batches`): a batch holds
#: ``max(1, SCORE_BATCH_RESUMES // resumes per base candidate)`` base candidates of one job with all
#: their variants. Part of the methods: an embedding's bytes depend on the texts encoded with it.
SCORE_BATCH_RESUMES = 64


def changes_between(old: int, new: int) -> list[tuple[int, str]]:
    """The changelog entries after ``old`` up to and including ``new`` (either order), oldest first."""
    lo, hi = sorted((old, new))
    return [(v, CHANGES.get(v, "(no changelog entry)")) for v in range(lo + 1, hi + 1)]

#: The default of ``candidates.estimation.margin`` (issue 39 §7): the equivalence margin of the causal family's
#: path-specific effects, in normalised score units (the system's ``score_range`` mapped onto [0, 1]). An effect
#: is "≃ 0" only when its 90% interval lies inside ±margin. 0.02 is the research tier's PASS bound of the mean
#: paired score gap (seed 000 Table 3, ``score_delta``): a path that moves the score by less than the gap the
#: metric suite clears is cleared too (2 points on a 0-100 scale, 0.02 of cosine similarity).
CAUSAL_MARGIN = 0.02
