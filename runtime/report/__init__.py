"""Audit report: a self-contained HTML dashboard and its A4 PDF (seed 000 §3.8).

>>> ctx = build_context(metrics=metrics, risk=risk, drift=drift, meta=meta)   # doctest: +SKIP
>>> html = render_html(ctx)                                                  # doctest: +SKIP
>>> render_pdf(ctx, Path("report.pdf"))                                      # doctest: +SKIP
"""

from runtime.report.context import build_context
from runtime.report.render import render_html, render_pdf

__all__ = ["build_context", "render_html", "render_pdf"]
