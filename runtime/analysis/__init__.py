"""Analysis families of a correspondence audit: data frames in, result records out (no I/O).

:func:`analyse` computes, for every system x condition x metric x variant (the reference
included), the metric of seed 000 §3.4 with its 95% CI, its test, the BH-adjusted p-value (§3.5)
and its status under both threshold tiers from its 95% interval (PASS / INCONCLUSIVE / FAIL against the
PASS band of Table 3 and §3.7, issue 29 §1; seed 000's point-estimate status is kept as ``status_seed000``),
the side a row's evidence establishes (issue 29 §3); then the composite risk score (§3.6)
and the qualification-drift summary (§3.1.2).

The metric implementations live in :mod:`.counterfactual`, :mod:`.group` and :mod:`.merit` and
register themselves by catalogue id in :mod:`.registry`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from compiler import catalog
from runtime.analysis import counterfactual, group, merit  # noqa: F401  (register the metrics)
from runtime.analysis import multiplicity as mult
from runtime.analysis import stats
from runtime.analysis.by_job import BY_JOB_COLUMNS, job_frame
from runtime.analysis.direction import (NO_DIRECTION, REFERENCE_LOSES, level_label, row_leans,  # noqa: F401
                                        side_label)
from runtime.analysis.cell import CellResult, Pairing
from runtime.analysis.classify import (DEPENDS_ON, INCONCLUSIVE, RISK_COLUMNS, bh_adjust, classify,
                                       crossable_bounds, interval_status, pass_band, risk_table,
                                       round_significant, tier_bounds)
from runtime.analysis.drift import DRIFT_COLUMNS, drift_frame, drift_rows, qualification_drift
from runtime.analysis.frame import Cohort, check_columns, cohorts, groups, variants_of
from runtime.analysis.headline import HEADLINE_COLUMNS, headline_frame
from runtime.analysis.registry import get_metric, metric, metric_ids

__all__ = [
    "AnalysisResult", "analyse", "n_bootstrap_cells", "qualification_drift", "risk_table",
    "classify", "round_significant", "bh_adjust", "metric", "metric_ids", "get_metric",
    "METRIC_COLUMNS", "DIAGNOSTIC_COLUMNS", "COLUMNS", "RISK_COLUMNS", "DRIFT_COLUMNS", "BY_JOB_COLUMNS",
    "HEADLINE_COLUMNS",
]

METRIC_COLUMNS = ("family", "metric", "system", "condition", "variant", "reference", "n", "value",
                  "ci_low", "ci_high", "p_value", "p_adj", "adj_family", "adj_m", "test", "direction", "decision_on",
                  "decision_low", "decision_high", "pass_low", "pass_high", "status", "status_operational",
                  "status_seed000", "status_seed000_operational", "disadvantaged", "depends_on", "notes")
DIAGNOSTIC_COLUMNS = ("k", "marc_raw", "flip_in_rate", "flip_out_rate", "n_in_out", "n_out_in",
                      "retained", "slots", "tp", "p", "fp", "negatives", "tpr", "fpr", "jobs_used",
                      "ties_at_cutoff", "rank_shift", "bootstrap_se", "ci_mc_se", "resamples")
#: Every column of the metrics frame, in order.
COLUMNS = METRIC_COLUMNS + DIAGNOSTIC_COLUMNS
#: Counts: written as integers, unless ties make one an expected (fractional) count.
_COUNT_COLUMNS = ("n", "adj_m", "k", "n_in_out", "n_out_in", "retained", "slots", "tp", "p", "fp",
                  "negatives", "jobs_used", "ties_at_cutoff", "resamples")
#: Metrics read at a top-K cutoff (``ties_at_cutoff`` is reported for them).
TOP_K_METRICS = frozenset({"flip_rate", "retention_rate", "impact_ratio", "selection_ratio", "recall_at_k",
                           "ndcg_at_k", "equal_opportunity_gap", "equalized_odds_gap"})
#: Metrics read at the decision rule's cut-off: under a threshold rule they read "score at or above the
#: threshold" and their ``k`` is empty; MARC and nDCG@K judge the ranking and keep K (issue 15).
SELECTION_METRICS = frozenset({"flip_rate", "retention_rate", "impact_ratio", "selection_ratio", "recall_at_k",
                               "equal_opportunity_gap", "equalized_odds_gap"})
NOTE_THRESHOLD = "selected = score >= {t:g} (analysis.decision.threshold)"
NOTE_NONE_SELECTED = ("no reference or variant résumé scores at or above the decision threshold: the selection "
                      "metrics compare nothing (N/A)")
NOTE_NOT_INFORMATIVE = "{test} not informative in this design ({why}): left out of BH, p_adj empty"
NOTE_SHARED_TEST = "{test} counted once in BH ({why}); p_adj empty here"

ERR_K = "k must map each family ({families}) to a positive integer, got {got!r}"
ERR_ALPHA = "alpha must lie in (0, 1), got {got!r}"
ERR_THRESHOLD = "threshold must be a finite number, a mapping of system id to one, or None, got {got!r}"
ERR_N_BOOTSTRAP = "n_bootstrap must be a positive integer, got {got!r}"
NOTE_REFERENCE = "reference variant compared with itself (no test)"


@dataclass(frozen=True)
class AnalysisResult:
    """What :func:`analyse` returns.

    Attributes
    ----------
    metrics : pandas.DataFrame
        One row per system x condition x metric x variant; columns :data:`COLUMNS`.
    risk : pandas.DataFrame
        Risk score per system x condition x tier plus run-wide ``ALL`` rows; :data:`RISK_COLUMNS`.
    drift : pandas.DataFrame
        Qualification drift per system x condition x non-reference variant; :data:`DRIFT_COLUMNS`.
    by_job : pandas.DataFrame or None
        Per-job values and heterogeneity (:func:`runtime.analysis.by_job.job_frame`,
        ``metrics_by_job.csv``) when :func:`analyse` was asked for them, else None.
    headline : pandas.DataFrame or None
        One status per system x protected category, the system's verdict and its ranking-quality row
        (:func:`runtime.analysis.headline.headline_frame`, ``headline.csv``; issue 29 §5).
    """

    metrics: pd.DataFrame
    risk: pd.DataFrame
    drift: pd.DataFrame
    by_job: pd.DataFrame | None = None
    headline: pd.DataFrame | None = None


def n_bootstrap_cells(paired: pd.DataFrame, reference: str, *, per_job: bool = False) -> int:
    """Number of metric cells :func:`analyse` reports progress on.

    One cell per system x condition x metric x variant, the reference included (every cell
    computes a confidence interval, by bootstrap or Wilson); with ``per_job``, one more per job of
    each.

    Raises
    ------
    ValueError
        ``frame.ERR_MISSING_COLUMNS``, ``frame.ERR_EMPTY``, ``frame.ERR_NO_REFERENCE``.
    """
    check_columns(paired)
    total = 0
    for system, condition, sub in groups(paired):
        cells = len(variants_of(sub, system=system, condition=condition, reference=reference))
        total += cells * (1 + sub["job_id"].nunique()) if per_job else cells
    return total * len(metric_ids())


def _check_k(k: Mapping[str, int]) -> dict[str, int]:
    try:
        out = {f: k[f] for f in catalog.FAMILIES}
    except (KeyError, TypeError):
        raise ValueError(ERR_K.format(families=", ".join(catalog.FAMILIES), got=k)) from None
    for v in out.values():
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
            raise ValueError(ERR_K.format(families=", ".join(catalog.FAMILIES), got=k))
    return {f: int(v) for f, v in out.items()}


def _check_args(*, k: Mapping[str, int], alpha: float, n_bootstrap: int,
                thresholds: Mapping[str, Mapping[str, Mapping[str, float]]]) -> dict[str, int]:
    kk = _check_k(k)
    if not (isinstance(alpha, (int, float)) and 0 < alpha < 1):
        raise ValueError(ERR_ALPHA.format(got=alpha))
    if isinstance(n_bootstrap, bool) or not isinstance(n_bootstrap, (int, np.integer)) \
            or n_bootstrap < 1:
        raise ValueError(ERR_N_BOOTSTRAP.format(got=n_bootstrap))
    for tier in catalog.TIERS:
        for metric_id in metric_ids():
            tier_bounds(thresholds, tier, metric_id)
    return kk


def _pairing(cohort: Cohort, variant: str, *, k: Mapping[str, int], n_bootstrap: int,
             seed: int) -> Pairing:
    ref = cohort.reference
    return Pairing(system=cohort.system, condition=cohort.condition, variant=variant,
                   reference=ref, job=cohort.job, n_jobs=cohort.n_jobs,
                   score_ref=cohort.score[ref], score_var=cohort.score[variant],
                   rank_ref=cohort.rank[ref], rank_var=cohort.rank[variant], match=cohort.match,
                   n_unlabelled_jobs=cohort.n_unlabelled_jobs, k=k, n_bootstrap=n_bootstrap,
                   seed=seed, tie_ref=cohort.tie[ref], tie_var=cohort.tie[variant], step=cohort.step,
                   ranking=cohort.ranking,
                   pool_rank_var=cohort.pool_rank[variant] if cohort.pool_rank else None,
                   pool_tie_var=cohort.pool_tie[variant] if cohort.pool_tie else None,
                   threshold=cohort.threshold,
                   sel_ref=cohort.selected[ref] if cohort.selected else None,
                   sel_var=cohort.selected[variant] if cohort.selected else None)


def _row(pairing: Pairing, metric_id: str, res: CellResult) -> dict[str, object]:
    """One metrics row. A reference row keeps its value and interval but carries no test: comparing
    a sample with itself tests nothing, so its p-value stays empty and never enters BH (a self-
    comparison's p = 1 would only inflate the number of tests, m). A test that cannot reject in this
    design (``res.not_informative``) keeps its raw p-value, says why, and stays out of BH."""
    info = catalog.METRICS[metric_id]
    notes = list(res.notes)
    p_value, test = float(res.p_value), res.test
    if res.not_informative and not pairing.is_reference and test:
        notes.append(NOTE_NOT_INFORMATIVE.format(test=test, why=res.not_informative))
    elif res.shared_test and not pairing.is_reference and test:
        notes.append(NOTE_SHARED_TEST.format(test=test, why=res.shared_test))
    if pairing.is_reference:
        suffix = stats.NOTE_TEST_UNDEFINED.split("}")[-1]  # "... p-value left empty"
        notes = [NOTE_REFERENCE] + [n for n in notes if not n.endswith(suffix)]
        p_value, test = math.nan, ""
    by_threshold = pairing.thresholded and metric_id in SELECTION_METRICS
    if by_threshold:
        notes.insert(0, NOTE_THRESHOLD.format(t=pairing.threshold))
    row: dict[str, object] = {
        "family": info.family, "metric": metric_id, "system": pairing.system,
        "condition": pairing.condition, "variant": pairing.variant,
        "reference": pairing.reference, "n": pairing.n, "value": float(res.value),
        "ci_low": float(res.ci_low), "ci_high": float(res.ci_high),
        "p_value": p_value, "p_adj": math.nan, "adj_family": "", "adj_m": math.nan, "test": test,
        "direction": info.direction, "decision_on": res.decision_on,
        "decision_low": float(res.ci_low if res.decision_on == "value" else res.decision_low),
        "decision_high": float(res.ci_high if res.decision_on == "value" else res.decision_high),
        "pass_low": math.nan, "pass_high": math.nan,
        "status": "", "status_operational": "", "status_seed000": "", "status_seed000_operational": "",
        "notes": "; ".join(notes), "k": math.nan if by_threshold else pairing.k_of(metric_id), "depends_on": DEPENDS_ON.get(metric_id, ""),
    }
    for column in DIAGNOSTIC_COLUMNS[1:]:
        row[column] = res.diagnostics.get(column, math.nan)
    if metric_id in TOP_K_METRICS:
        row["ties_at_cutoff"] = pairing.ties_at_cutoff(pairing.k_of(metric_id))
    row["_in_bh"] = not res.not_informative and not res.shared_test and not pairing.is_reference
    shared = bool(res.shared_test) and not res.not_informative and not pairing.is_reference
    row["_shared"] = (res.shared_with or "flip_rate") if shared else ""
    row["_lean"] = res.diagnostics.get("lean", math.nan)
    return row


#: Metrics that read the selection in/out table: they take the selection ratio's evidence and direction
#: (issue 29 §3), never their own sign (retention falls under symmetric churn).
SELECTION_TABLE_METRICS = ("flip_rate", "retention_rate", "impact_ratio", "selection_ratio")
#: Rows that rate the ranking (merit family, ranking quality): intervals only, they name no side.
INTERVAL_ONLY_METRICS = frozenset({"recall_at_k", "ndcg_at_k"})


def _evidence(metrics: pd.DataFrame, leans: np.ndarray, *, reference: str, alpha: float,
              owners: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Whether each row's side is established, and the lean that names it (issue 29 §3).

    A row with a test is established when its test rejects after adjustment (``p_adj < alpha``); the
    selection metrics (:data:`SELECTION_TABLE_METRICS`) read the selection ratio's test instead (McNemar on
    the in/out table at ``k.group``, carried by the ``flip_rate`` row when both read one cutoff, else by
    the ``selection_ratio`` row), with that table's direction (selected out minus in). A row
    without a test (the TPR/FPR gaps) is established when its interval lies wholly outside its PASS band
    (research-tier FAIL: the gap is beyond the tolerance, so its signed interval excludes 0 as well). Its
    excluding 0 alone is not enough: 18 unadjusted 95% intervals per system named a side in 13-23% of
    simulated null audits (``bench/fair_system.py``). Recall@K and nDCG@K rate the ranking: never
    established. Returns ``(established, lean)``.
    """
    final = row_leans(metrics, leans, reference=reference)
    p_adj = metrics["p_adj"].to_numpy(dtype=float)
    owner = np.asarray(owners if owners is not None else [""] * len(metrics), dtype=object)
    key = list(zip(metrics["system"], metrics["condition"], metrics["variant"]))
    at = {(k, m): i for i, (k, m) in enumerate(zip(key, metrics["metric"]))}
    established = np.zeros(len(metrics), dtype=bool)
    lean = final.copy()
    for i, (k, m) in enumerate(zip(key, metrics["metric"])):
        if m in INTERVAL_ONLY_METRICS:
            continue
        if m in SELECTION_TABLE_METRICS:
            j = at.get((k, "selection_ratio"))
            if j is not None and owner[j]:
                j = at.get((k, owner[j]), j)
            if j is None:  # no selection_ratio row (a frame of methods 7): the flip table's test
                j = at.get((k, "flip_rate"), i)
            established[i] = bool(p_adj[j] < alpha)
            lean[i] = final[j]
        elif math.isfinite(p_adj[i]):
            established[i] = bool(p_adj[i] < alpha)
        elif math.isnan(float(metrics["p_value"].iat[i])) and metrics["direction"].iat[i] == "lower":
            established[i] = metrics["status"].iat[i] == "FAIL"
    return established, lean


def _disadvantaged(metrics: pd.DataFrame, leans: np.ndarray, *, reference: str,
                   levels: Mapping[str, Mapping[str, str]] | None, alpha: float = 0.05,
                   owners: np.ndarray | None = None) -> list[str]:
    """Who loses on each row (issue 29 §3): the variant's level or ``reference`` when the evidence
    establishes a side (:func:`_evidence`), whatever the status; :data:`NO_DIRECTION` ("direction not
    established") on a FAIL or INCONCLUSIVE row without it; empty on the reference's rows and on PASS or
    N/A rows without it.
    """
    established, lean = _evidence(metrics, leans, reference=reference, alpha=alpha, owners=owners)
    out = []
    for i, (variant, status, op) in enumerate(zip(metrics["variant"], metrics["status"], metrics["status_operational"])):
        if variant == reference:
            out.append("")
        elif established[i] and lean[i] != 0:
            out.append(side_label(lean[i], variant, reference, levels))
        elif {status, op} & {"FAIL", INCONCLUSIVE}:
            out.append(NO_DIRECTION)
        else:
            out.append("")
    return out


def set_statuses(metrics: pd.DataFrame, thresholds: Mapping[str, Mapping[str, Mapping[str, float]]]) -> None:
    """Fill the decision columns of a metrics frame in place (issue 29 §1).

    ``status`` / ``status_operational``: :func:`runtime.analysis.classify.interval_status` of
    ``[decision_low, decision_high]`` (PASS, INCONCLUSIVE, FAIL, N/A) under the research / operational
    tier, against the band of the statistic in ``decision_on`` (the row's metric, or ``selection_ratio``:
    ``[m, 1/m]`` with m the tier's pass bound, which a SESOI written as a selection ratio sets:
    :func:`runtime.run.settings._with_sesoi`, the one place it enters); ``pass_low`` /
    ``pass_high``: the research tier's PASS band; ``status_seed000`` /
    ``status_seed000_operational``: seed 000 Table 3 on the point estimate (:func:`classify`; PASS,
    INVESTIGATE, FAIL, N/A), which Eq. 6 reads.
    """
    metric = list(metrics["metric"])
    # a row deciding on another statistic (issue 30 §2: the selection ratio) takes that statistic's band
    decides = [m if on == "value" else on for m, on in zip(metric, metrics["decision_on"])]
    value = metrics["value"].to_numpy(dtype=float)
    low = metrics["decision_low"].to_numpy(dtype=float)
    high = metrics["decision_high"].to_numpy(dtype=float)
    band = [pass_band(d, tier_bounds(thresholds, "research", d)) for d in decides]
    metrics["pass_low"] = [b[0] for b in band]
    metrics["pass_high"] = [b[1] for b in band]
    for tier, column, seed000 in (("research", "status", "status_seed000"),
                                  ("operational", "status_operational", "status_seed000_operational")):
        metrics[column] = [interval_status(lo, hi, metric_id=d, bounds=tier_bounds(thresholds, tier, d))
                           for lo, hi, d in zip(low, high, decides)]
        metrics[seed000] = [classify(v, metric_id=m, bounds=tier_bounds(thresholds, tier, m))
                            for v, m in zip(value, metric)]



def _integral(column: pd.Series) -> bool:
    values = pd.to_numeric(column, errors="coerce").to_numpy(dtype=float)
    values = values[np.isfinite(values)]
    return bool(np.all(values == np.round(values)))


def analyse(paired: pd.DataFrame, *, reference: str, k: Mapping[str, int], alpha: float,
            n_bootstrap: int, seed: int,
            thresholds: Mapping[str, Mapping[str, Mapping[str, float]]],
            score_range: Mapping[str, tuple[float, float]],
            score_resolution: Mapping[str, float | None] | None = None,
            ranking: str | None = None,
            variant_levels: Mapping[str, Mapping[str, str]] | None = None,
            per_job: bool = False, threshold: float | Mapping[str, float] | None = None,
            multiplicity: str | None = None,
            progress: Callable[[int], None] | None = None) -> AnalysisResult:
    """Compute the metric suite of seed 000 §3.4-3.6 on a paired frame.

    Parameters
    ----------
    paired : pandas.DataFrame
        One row per scored resume with columns ``system, condition, replicate, job_id, cv_id,
        variant, score, rank, is_true_match`` (axis columns and ``replicate`` are ignored). One
        row per (system, condition, job_id, cv_id, variant); every base candidate appears under
        every variant; ranks are computed within (system, condition, job, variant), 1 = best.
        ``is_true_match`` is 0/1, or missing when unknown (the merit family is then N/A).
    reference : str
        The reference variant (``BASE``).
    k : Mapping[str, int]
        Shortlist size per family: ``{"counterfactual": 10, "group": 10, "merit": 15}``.
    alpha : float
        Benjamini-Hochberg level (seed 000 §3.5). CIs are 95% regardless.
    n_bootstrap : int
        Bootstrap resamples per interval (seed 000: 1000).
    seed : int
        The spec's seed; each cell draws from
        ``runtime.seeding.rng(seed, "bootstrap", system, condition, metric, variant)``.
    thresholds : Mapping
        ``{tier: {metric: {"pass": x, "investigate": y}}}`` for both tiers, as
        ``compiler.catalog.default_thresholds()``.
    score_range : Mapping[str, tuple of float]
        ``(lo, hi)`` per system; ``score_delta`` and drift use ``(score − lo) / (hi − lo)``.
    score_resolution : Mapping[str, float or None], optional
        Each system's score grid in its units (None or absent: inferred from its scores,
        :func:`runtime.analysis.stats.infer_resolution`); every test on paired differences runs on
        differences rounded to it, so a p-value does not depend on the scale of the scores.
    ranking : {"per_variant", "swap_in"}, optional
        How each variant is ranked (:func:`runtime.analysis.frame.cohorts`); default the methods
        version's (:data:`compiler.methods.RANKING`, ``swap_in``); the pipeline passes the spec's
        ``analysis.ranking`` when it sets one. Under
        ``per_variant`` the MARC rank test, McNemar on flips and the impact ratio's Fisher test cannot
        reject: they are reported, left out of BH.
    variant_levels : Mapping, optional
        Variant id -> {axis: level}; names the disadvantaged level of each row whose evidence establishes a side (issue 29 §3)
        (column ``disadvantaged``: the level, ``reference``, or ``direction not established``).
    per_job : bool
        Also compute every metric on the candidates of each job, with its interval, and the
        heterogeneity across jobs (``AnalysisResult.by_job``, :mod:`runtime.analysis.by_job`); each job
        cell draws from the pooled cell's generator with ``"job", job_id`` appended.
    multiplicity : {"hierarchical", "graphical", "per_metric", "run"}, optional
        Which p-values share an adjustment (:func:`runtime.analysis.multiplicity.adjust`, issue 29 §4);
        default the methods version's (:data:`compiler.methods.MULTIPLICITY`, ``run``: BH over every
        p-value of the run, seed 000 §3.5). Columns ``adj_family`` and ``adj_m`` name each row's family
        and its number of tests.
    progress : callable, optional
        Called as ``progress(n)`` with the number of cells finished since the previous call
        (an increment, like ``rich.progress.Progress.advance``: ``1`` after each cell); the
        increments add up to :func:`n_bootstrap_cells`.
    threshold : float or Mapping[str, float], optional
        The decision threshold on each system's own score scale, or one per system id
        (``analysis.decision.threshold``, issue 15): a resume is selected when its score is at or above it, and the metrics of
        :data:`SELECTION_METRICS` are read at that cut-off instead of the top-K (their ``k`` is
        empty and their notes name the threshold). None: the top-K rule with ``k``.

    Returns
    -------
    AnalysisResult
        ``metrics`` (sorted by system, condition, metric in catalogue order, variant with the
        reference first), ``risk`` and ``drift``.

    Raises
    ------
    ValueError
        ``ERR_K``, ``ERR_ALPHA``, ``ERR_N_BOOTSTRAP``, ``ERR_THRESHOLD``, ``classify.ERR_THRESHOLD_MISSING`` and the
        frame errors of :func:`runtime.analysis.frame.cohorts`.
    """
    thresholds = catalog.with_defaults(thresholds)
    kk = _check_args(k=k, alpha=alpha, n_bootstrap=n_bootstrap, thresholds=thresholds)
    for t in (threshold.values() if isinstance(threshold, Mapping) else [threshold]):
        if t is not None and (isinstance(t, bool) or not isinstance(t, (int, float)) or not math.isfinite(t)):
            raise ValueError(ERR_THRESHOLD.format(got=threshold))
    if ranking is None:
        from compiler.methods import RANKING

        ranking = RANKING
    if multiplicity is None:
        from compiler.methods import MULTIPLICITY

        multiplicity = MULTIPLICITY
    if multiplicity not in mult.METHODS:
        raise ValueError(mult.ERR_METHOD.format(methods=", ".join(mult.METHODS), got=multiplicity))
    rows: list[dict[str, object]] = []
    drift: list[dict[str, object]] = []
    job_rows: list[dict[str, object]] = []
    job_leans: list[float] = []
    for cohort in cohorts(paired, reference=reference, score_range=score_range,
                          score_resolution=score_resolution, ranking=ranking, threshold=threshold):
        drift.extend(drift_rows(cohort))
        by_metric: dict[str, list[dict[str, object]]] = {m: [] for m in metric_ids()}
        job_names = [str(cohort.job_ids[cohort.job == code][0]) for code in range(cohort.n_jobs)]
        for variant in cohort.variants:
            pairing = _pairing(cohort, variant, k=kk, n_bootstrap=int(n_bootstrap), seed=seed)
            cell = _CellDraws(pairing, thresholds)
            for metric_id in metric_ids():
                res, se, used = cell.compute(metric_id)
                row = _row(used, metric_id, res)
                row["bootstrap_se"] = se
                # resamples behind the interval the row shows or decides on (its own, or the selection ratio's,
                # possibly drawn by an earlier row of the cell)
                drawn = math.isfinite(se) or math.isfinite(res.diagnostics.get("ci_mc_se", math.nan)) \
                    or math.isfinite(res.decision_mc_se)
                row["resamples"] = used.n_bootstrap if drawn else math.nan
                by_metric[metric_id].append(row)
                if progress is not None:
                    progress(1)
            if not per_job:
                continue
            for code, job_id in enumerate(job_names):
                job_cell = _CellDraws(pairing.restrict(code, job_id), thresholds)
                for metric_id in metric_ids():
                    res, se, sub = job_cell.compute(metric_id)
                    tested = _row(sub, metric_id, res)  # the job's test, as a pooled row carries it
                    job_rows.append({"system": sub.system, "condition": sub.condition, "metric": metric_id,
                                     "variant": variant, "job_id": job_id, "n": sub.n,
                                     "value": float(res.value), "ci_low": float(res.ci_low),
                                     "ci_high": float(res.ci_high), "bootstrap_se": se,
                                     "ci_mc_se": res.diagnostics.get("ci_mc_se", math.nan),
                                     "decision_on": res.decision_on, "decision_low": float(res.decision_low),
                                     "decision_high": float(res.decision_high),
                                     "p_value": tested["p_value"], "direction": tested["direction"],
                                     "_in_bh": tested["_in_bh"], "_shared": tested["_shared"],
                                     "notes": "; ".join(res.notes)})
                    job_leans.append(res.diagnostics.get("lean", math.nan))
                    if progress is not None:
                        progress(1)
        for metric_rows in by_metric.values():
            rows.extend(metric_rows)
    metrics = pd.DataFrame(rows, columns=[*COLUMNS, "_in_bh", "_shared", "_lean"])
    in_bh = metrics.pop("_in_bh").to_numpy(dtype=bool)
    shared = metrics.pop("_shared").fillna("").astype(str).to_numpy(dtype=object)
    leans = metrics.pop("_lean").to_numpy(dtype=float)
    adjusted = mult.adjust(metrics, metrics["p_value"].to_numpy(dtype=float), in_bh, method=multiplicity,
                           alpha=alpha, shared=shared)
    metrics["p_adj"] = adjusted.p_adj
    metrics["adj_family"] = adjusted.family
    metrics["adj_m"] = adjusted.m
    metrics["notes"] = ["; ".join(x for x in (note, extra) if x) for note, extra in zip(metrics["notes"], adjusted.notes)]
    set_statuses(metrics, thresholds)
    metrics["disadvantaged"] = _disadvantaged(metrics, leans, reference=reference, levels=variant_levels,
                                              alpha=alpha, owners=shared)
    metrics = metrics.astype({c: "Int64" for c in _COUNT_COLUMNS if _integral(metrics[c])})
    by_job = None
    if per_job:
        by_job = _job_frame(job_rows, np.asarray(job_leans, dtype=float), metrics, leans, reference=reference,
                            thresholds=thresholds, levels=variant_levels, alpha=alpha, multiplicity=multiplicity)
    return AnalysisResult(metrics=metrics, risk=risk_table(metrics), drift=drift_frame(drift), by_job=by_job,
                          headline=headline_frame(metrics, reference=reference, levels=variant_levels))


#: Resamples of a redrawn cell: at least this many, and at least twice the spec's ``analysis.bootstrap``.
REDRAW_RESAMPLES = 2000
#: A cell is redrawn when an end of the interval its status reads lies within this many of its Monte Carlo SEs
#: of a PASS-band bound (issue 39 §3).
REDRAW_WITHIN_MC_SE = 2.0
#: Note of a redrawn row.
NOTE_REDRAWN = ("redrawn with {b} bootstrap resamples (stream 'redraw'): with {b0} an end of the interval its status "
                "reads lay within 2 Monte Carlo SEs (ci_mc_se) of a PASS-band bound")


class _CellDraws:
    """One cell's bootstrap, drawn again once for every metric whose status could turn on its Monte Carlo
    error (:func:`near_band`, issue 39 §3): the pooled cells of ``metrics.csv`` and, since methods 12, the job
    cells of ``metrics_by_job.csv`` alike (a job's status decides its ``crosses threshold`` flag)."""

    def __init__(self, pairing: Pairing, thresholds: Mapping[str, Mapping[str, Mapping[str, float]]]) -> None:
        self.pairing, self.thresholds = pairing, thresholds
        self.redraw: Pairing | None = None

    def compute(self, metric_id: str) -> tuple[CellResult, float, Pairing]:
        """``(result, bootstrap SE, the pairing it was computed on)``; a redrawn result carries
        :data:`NOTE_REDRAWN`."""
        res, se = _compute(metric_id, self.pairing)
        if not near_band(res, metric_id, self.thresholds):
            return res, se, self.pairing
        self.redraw = self.redraw or redraw_pairing(self.pairing)
        res, se = _compute(metric_id, self.redraw)
        res = replace(res, notes=[*res.notes, NOTE_REDRAWN.format(b=self.redraw.n_bootstrap,
                                                                  b0=self.pairing.n_bootstrap)])
        return res, se, self.redraw


def redraw_pairing(pairing: Pairing) -> Pairing:
    """The cell drawn again with ``max(REDRAW_RESAMPLES, 2 B)`` resamples from its own generators with
    ``"redraw"`` appended to their labels (``runtime.seeding.rng(seed, "bootstrap", system, condition, metric,
    variant, *stream, "redraw")``): deterministic, from the spec's seed, and independent of the first draw."""
    return replace(pairing, n_bootstrap=max(REDRAW_RESAMPLES, 2 * int(pairing.n_bootstrap)),
                   stream=(*pairing.stream, "redraw"))


def near_band(res: CellResult, metric_id: str,
              thresholds: Mapping[str, Mapping[str, Mapping[str, float]]]) -> bool:
    """Whether a cell's status could turn on its bootstrap's Monte Carlo error (issue 39 §3).

    True when an end of the interval the status reads (``decision_low`` / ``decision_high``: the row's
    interval, or the selection ratio's for rows deciding on it) lies within :data:`REDRAW_WITHIN_MC_SE`
    Monte Carlo SEs (the row's ``ci_mc_se``, or the selection ratio's) of a bound of the PASS band under
    either tier (:func:`runtime.analysis.classify.crossable_bounds`: a band's end at the statistic's own
    limit, retention's 1, MARC's 0, cannot be crossed). Always False for a row without a bootstrap interval
    (the Wilson interval of the flip rate's value, which a per-variant row decides on, has no Monte Carlo error) or already redrawn.
    """
    if res.decision_on == "value":
        low, high, mc = res.ci_low, res.ci_high, res.diagnostics.get("ci_mc_se", math.nan)
        decides = metric_id
    else:
        low, high, mc, decides = res.decision_low, res.decision_high, res.decision_mc_se, res.decision_on
    if not (math.isfinite(mc) and mc > 0 and math.isfinite(low) and math.isfinite(high)):
        return False
    for tier in catalog.TIERS:
        for bound in crossable_bounds(decides, tier_bounds(thresholds, tier, decides)):
            if min(abs(low - bound), abs(high - bound)) <= REDRAW_WITHIN_MC_SE * mc:
                return True
    return False


def _job_frame(job_rows: list[dict[str, object]], job_leans: np.ndarray, metrics: pd.DataFrame, leans: np.ndarray, *,
               reference: str, thresholds: Mapping[str, Mapping[str, Mapping[str, float]]],
               levels: Mapping[str, Mapping[str, str]] | None, alpha: float, multiplicity: str) -> pd.DataFrame:
    """``metrics_by_job.csv`` (:func:`runtime.analysis.by_job.job_frame`) with each job row's side named by
    the pooled rows' evidence rule (issue 39 §5, :func:`_evidence`): the job tests are adjusted under
    ``multiplicity`` with each job a cell of its system's family (``condition`` keyed by job), so the
    hierarchical default's level 1 is the score tests of every category x job of a system."""
    frame = pd.DataFrame(job_rows)
    if frame.empty:
        return job_frame(job_rows, job_leans, metrics, leans, reference=reference, thresholds=thresholds, levels=levels)
    keyed = frame.assign(condition=frame["condition"].astype(str) + "\x1f" + frame["job_id"].astype(str))
    shared = frame["_shared"].fillna("").astype(str).to_numpy(dtype=object)
    adjusted = mult.adjust(keyed, frame["p_value"].to_numpy(dtype=float), frame["_in_bh"].to_numpy(dtype=bool),
                           method=multiplicity, alpha=alpha, shared=shared)
    rows = [{**{k: v for k, v in r.items() if k not in ("_in_bh", "_shared")}, "p_adj": float(p)}
            for r, p in zip(job_rows, adjusted.p_adj)]

    def evidence(keyed_rows: pd.DataFrame, row_lean: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return _evidence(keyed_rows, row_lean, reference=reference, alpha=alpha, owners=shared)

    return job_frame(rows, job_leans, metrics, leans, reference=reference, thresholds=thresholds, levels=levels,
                     evidence=evidence)


def _compute(metric_id: str, pairing: Pairing) -> tuple[CellResult, float]:
    """One metric cell and the largest SE of the bootstrap distributions it drew (nan: none)."""
    if pairing.thresholded and metric_id in SELECTION_METRICS and not (pairing.sel_ref.any() or pairing.sel_var.any()):
        return CellResult.undefined(NOTE_NONE_SELECTED), math.nan
    sink: list[float] = []
    token = stats.BOOTSTRAP_SE.set(sink)
    try:
        res = get_metric(metric_id)(pairing)
    finally:
        stats.BOOTSTRAP_SE.reset(token)
    return res, max(sink) if sink else math.nan
