"""Report sections of the ``metric_suite`` family: seed 000's nine metrics (no I/O).

:func:`metric_suite_sections` builds every section. Each section's context is plain data (strings,
numbers, booleans, lists and dicts, charts as SVG strings), already formatted for display and in
report order, so that the templates (``templates/sections/metric_suite_*.html.j2``) contain no logic
beyond loops and conditionals and the same inputs always give the same sections. Method prose (metric
definitions, tier notes, method notes) lives in those templates.

Modules: :mod:`~.texts` (the wording), :mod:`~.thresholds` (threshold lookup and wording, shared with
the effects section), :mod:`~.design` (design facts, source facts, the decision rule in words),
:mod:`~.units` (the per-system × condition results, the FAIL and drift tables), :mod:`~.by_job` (the
per-job section), :mod:`~.risk` (risk bands and key figures), :mod:`~.common` (shared cell helpers).

Sources: seed 000 §3.4 (metrics), §3.5 (tests, BH), §3.6 (Eq. 6 and the risk bands), §3.7 (the two
threshold tiers, always shown together and labelled as distinct policy choices), §3.8 (report
sections), §3.1.2 (qualification drift); seed 002 Figures 2–10 (what each chart shows).
"""

from __future__ import annotations

import pandas as pd

from compiler.catalog import CLASSIFY_SIGNIFICANT_DIGITS, METRICS
from runtime.report.formatting import fmt_int, fmt_text, fmt_threshold
from runtime.report.meta import ReportMeta
from runtime.report.sections import ORDER, Section
from runtime.report.sections.metric_suite.by_job import by_job_context
from runtime.report.sections.metric_suite.common import unique
from runtime.report.sections.metric_suite.design import design, facts, source_context
from runtime.report.sections.metric_suite.headline import headline_context
from runtime.report.sections.metric_suite.risk import kpis, risk_context
from runtime.report.sections.metric_suite.thresholds import bounds, threshold_table, threshold_text
from runtime.report.sections.metric_suite.units import drift_rows, fail_table, units

__all__ = ["FAIL_VARIANTS_TITLE", "metric_suite_sections"]

#: The FAIL-variants section's title; ": none" is appended when no variant has such a finding, so that the
#: contents do not announce a table that is empty.
FAIL_VARIANTS_TITLE = "Variants with FAIL, INCONCLUSIVE or INVESTIGATE findings"


def metric_suite_sections(
    *,
    metrics: pd.DataFrame,
    risk: pd.DataFrame,
    drift: pd.DataFrame,
    meta: ReportMeta,
    by_job: pd.DataFrame | None = None,
    headline: pd.DataFrame | None = None,
    detectable: pd.DataFrame | None = None,
) -> list[Section]:
    """The report sections of the nine-metric suite (seed 000 §3.8).

    Parameters
    ----------
    metrics : pandas.DataFrame
        ``metrics.csv``: one row per system × condition × metric × variant (reference included)
        with at least ``metric, system, condition, variant, n, value, ci_low, ci_high, p_value,
        p_adj, status, status_operational, notes``; family diagnostics (``marc_raw``,
        ``flip_in_rate``, ``retained``, ``tpr``, ...) are shown where present. A missing status
        (pandas reads the string ``N/A`` as NaN) is shown as N/A.
    risk : pandas.DataFrame
        Risk rows per system × condition × tier; rows with ``system == "ALL"`` are the run totals
        shown in the risk banner (seed 000 Eq. 6).
    drift : pandas.DataFrame
        Qualification drift per system × condition × variant (seed 000 §3.1.2); may be empty.
    meta : ReportMeta
        Run metadata (reference, K, α, bootstrap, ranking, decision rule, the run's thresholds,
        variants, axes, jobs, systems, counts): :func:`runtime.pipeline.metadata.report_meta`.
    by_job : pandas.DataFrame, optional
        ``metrics_by_job.csv`` (:mod:`runtime.analysis.by_job`); adds the ``by-job`` section.
    headline : pandas.DataFrame, optional
        ``headline.csv`` (:mod:`runtime.analysis.headline`); adds the ``headline`` section, first on page 1.
    detectable : pandas.DataFrame, optional
        Each category's smallest detectable selection ratio (:func:`runtime.analysis.power.smallest_detectable_ratio`
        of ``power.csv``, issue 30 §3), shown on page 1.

    Returns
    -------
    list of Section
        ``at-a-glance`` (front matter), ``risk`` (with the key figures), ``fail-variants``,
        ``design``, one results section per system × condition (anchor ``u-<system>-<condition>``;
        every metric's chart is an inline SVG string under ``context["metrics"][j]["chart_svg"]``),
        ``by-job`` (when ``by_job`` is given), ``drift`` and ``appendix`` (thresholds and method notes).
        Deterministic in the inputs.
    """
    reference = fmt_text(meta.reference, "BASE")
    data_variants = [] if metrics is None or len(metrics) == 0 else [str(v) for v in metrics["variant"]]
    variant_order = unique([reference, *meta.variants, *data_variants], [reference])
    unit_list = units(metrics, meta, variant_order, reference)
    metric_ids = unique([m["id"] for u in unit_list for m in u["metrics"]] + list(METRICS), METRICS)
    threshold = threshold_text(meta.threshold)
    fail_rows = fail_table(unit_list, meta, variant_order)
    fail_title = FAIL_VARIANTS_TITLE + ("" if fail_rows else ": none")
    return [
        *([Section(id="headline", title="Findings by protected category",
                   template="sections/metric_suite_headline.html.j2", context=headline_context(headline, detectable, label=meta.with_level_labels,
                                                    score_ranges={s.id: s.score_range for s in meta.systems},
                                                    metrics=metrics),
                   order=ORDER["headline"], toc=False)] if headline is not None else []),
        *([Section(id="score-source", title="Where the scores come from", template="sections/metric_suite_source.html.j2",
                   context=source_context(meta, metrics), order=ORDER["source"], toc=False)] if meta.score_file else []),
        Section(id="at-a-glance", title="Design at a glance", template="_glance.html.j2",
                context={"anchor": "at-a-glance", "facts": facts(meta, reference)}, order=ORDER["facts"], toc=False),
        Section(id="risk", title="Seed 000 Eq. 6 on point estimates, not a verdict",
                template="sections/metric_suite_risk.html.j2",
                context={**risk_context(risk), "kpis": kpis(metrics), "threshold": threshold},
                order=ORDER["appendix"] - 10),
        Section(id="fail-variants", title=fail_title,
                template="sections/metric_suite_fail_variants.html.j2",
                context={"rows": fail_rows, "reference": reference,
                         "title": fail_title},
                order=ORDER["fail"]),
        Section(id="design", title="Audit design", template="sections/metric_suite_design.html.j2",
                context=design(meta, variant_order, reference), order=ORDER["design"]),
        *[Section(id=u["anchor"], title=f"Results: system {u['system']}, condition {u['condition']}",
                  template="sections/metric_suite_unit.html.j2", context={**u, "reference": reference},
                  order=ORDER["results"]) for u in unit_list],
        *([Section(id="by-job", title="Per-job results", template="sections/metric_suite_by_job.html.j2",
                   context={**by_job_context(by_job, reference, variant_order,
                                                score_ranges={s.id: s.score_range for s in meta.systems}),
                            "reference": reference},
                   order=ORDER["results"] + 50)] if by_job is not None else []),
        *([] if meta.score_file else [
            Section(id="drift", title="Qualification drift", template="sections/metric_suite_drift.html.j2",
                    context={"rows": drift_rows(drift, unit_list, variant_order), "reference": reference,
                             "score_delta_pass": fmt_threshold(bounds(meta.thresholds, "research", "score_delta").get("pass"))},
                    order=ORDER["drift"])]),
        Section(id="appendix", title="Thresholds and method", template="sections/metric_suite_appendix.html.j2",
                context={"thresholds": threshold_table(meta.thresholds, metric_ids, threshold), "reference": reference,
                         "alpha": fmt_threshold(meta.alpha), "n_bootstrap": fmt_int(meta.n_bootstrap),
                         "digits": CLASSIFY_SIGNIFICANT_DIGITS, "ranking": meta.ranking, "threshold": threshold,
                         "multiplicity": meta.multiplicity or "run"},
                order=ORDER["appendix"]),
    ]
