"""The report stage: one base template, every enabled audit family's sections, the PDF rendered
once from the same HTML."""

from __future__ import annotations

from runtime.pipeline.context import RunContext
from runtime.pipeline.metadata import report_meta
from runtime.testhooks import kill_point


def write_report(ctx: RunContext) -> None:
    """Write ``report.html`` and ``report.pdf`` into the run folder."""
    from runtime.designs import design_for
    from runtime.families import registered
    from runtime.report import build_core, render_pdf, render_report
    from runtime.sign import provenance_context

    folder, run = ctx.folder, ctx.run
    meta = report_meta(ctx.resolved, ctx.lock, run)
    core = build_core(meta, provenance=provenance_context(folder.path, run, folder.keys, tsa=folder.tsa),
                      kind=design_for(ctx.resolved).report_kind)
    families = registered()
    sections = [s for fid, result in ctx.results.items() for s in families[fid]().sections(ctx, result, meta)]
    html = render_report(core, sections)
    folder.write_text("report.html", html)
    folder.save()
    kill_point("report")
    render_pdf(core, folder.path / "report.pdf", html=html)  # the same HTML, rendered once
    folder.listed("report.pdf")
