"""The report stage: the run's HTML report and its PDF, rendered once from the same HTML."""

from __future__ import annotations

from runtime.pipeline.context import RunContext
from runtime.pipeline.metadata import report_meta


def write_report(ctx: RunContext) -> None:
    """Write ``report.html`` and ``report.pdf`` into the run folder."""
    from runtime.report import build_context, render_html, render_pdf
    from runtime.sign import provenance_context

    folder, run = ctx.folder, ctx.run
    meta = report_meta(ctx.resolved, ctx.lock, run)
    if "causal" in ctx.results:
        from runtime.report.causal import build_population_context, render_population_html

        context = build_population_context(causal=ctx.tables["causal"], profiles=ctx.candidates, meta=meta,
                                           candidates=ctx.resolved["candidates"])
        context["provenance"] = provenance_context(folder.path, run, folder.keys)
        html = render_population_html(context)
    else:
        suite = ctx.results["metric_suite"].data["result"]
        llm = ctx.results.get("llm_validity")
        context = build_context(metrics=suite.metrics, risk=suite.risk, drift=suite.drift,
                                meta={**meta, "llm": llm.data["meta"] if llm else None})
        if "effects" in ctx.results:
            from runtime.report.effects_context import add_effects

            add_effects(context, ctx.results["effects"].data["effects"])
        context["provenance"] = provenance_context(folder.path, run, folder.keys)
        context["toc"].append({"anchor": "provenance", "title": "Reproduction and signature"})
        html = render_html(context)
    folder.write_text("report.html", html)
    folder.save()
    render_pdf(context, folder.path / "report.pdf", html=html)  # the same HTML, rendered once
    folder.listed("report.pdf")
