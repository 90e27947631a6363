"""Audit report: a self-contained HTML dashboard and its A4 PDF (seed 000 §3.8).

One base template renders the shared parts of every run; each audit family contributes ordered
sections (:mod:`runtime.report.sections`). Both read the run's metadata as a :class:`ReportMeta`
(:func:`runtime.pipeline.metadata.report_meta`).

>>> core = build_core(meta, provenance=provenance)                                  # doctest: +SKIP
>>> sections = metric_suite_sections(metrics=metrics, risk=risk, drift=drift, meta=meta)  # doctest: +SKIP
>>> html = render_report(core, sections)                                            # doctest: +SKIP
>>> render_pdf(core, Path("report.pdf"), html=html)                                  # doctest: +SKIP
"""

from runtime.report.core import build_core
from runtime.report.meta import ReportJob, ReportMeta, ReportSystem
from runtime.report.render import render_pdf, render_report
from runtime.report.sections import Section, ordered
from runtime.report.sections.causal import causal_sections
from runtime.report.sections.effects import effects_sections
from runtime.report.sections.llm import llm_sections
from runtime.report.sections.metric_suite import metric_suite_sections

__all__ = ["ReportJob", "ReportMeta", "ReportSystem", "Section", "build_core", "causal_sections",
           "effects_sections", "llm_sections", "metric_suite_sections", "ordered", "render_pdf", "render_report"]
