"""The report stage: one base template, every enabled audit family's sections, the PDF rendered
once from the same HTML."""

from __future__ import annotations

import dataclasses

from runtime.families.base import combined_verdict
from runtime.run.context import RunContext
from runtime.pipeline.metadata import report_meta
from runtime.testhooks import kill_point


def write_report(ctx: RunContext) -> None:
    """Write ``report.html`` and ``report.pdf`` into the run folder; ``report.html`` only for a trial run
    without a PDF (``run.json`` ``report_pdf`` False, ``audit execute --unsigned --no-pdf``), which removes a
    ``report.pdf`` an earlier attempt of a resumed run left."""
    from runtime.designs import design_for
    from runtime.families import registered
    from runtime.report import build_core, render_pdf, render_report
    from runtime.report.sections.findings import findings_section
    from runtime.report.sections.metric_suite.design import selection_rule_text
    from runtime.provenance.sign import provenance_context

    folder, run = ctx.folder, ctx.run
    meta = report_meta(ctx.resolved, ctx.lock, run, ctx.settings)
    core = build_core(meta, provenance=provenance_context(folder.path, run, folder.keys, tsa=folder.tsa),
                      kind=design_for(ctx.resolved).report_kind)
    if (ctx.resolved.get("disclosure") or {}).get("provider"):  # the Annex IV test record (issue 34 §5)
        from runtime.report.sections.annex_iv import annex_iv_context

        core["annex_iv"] = annex_iv_context(ctx.resolved, run, core["provenance"], list(ctx.results))
    families = registered()
    sections = [s for fid, result in ctx.results.items() for s in families[fid]().sections(ctx, result, meta)]
    sections = with_verdict(sections, combined_verdict(ctx.results))
    sections.append(findings_section([f for r in ctx.results.values() for f in r.findings],
                                     [n for r in ctx.results.values() for n in r.findings_notes] + design_notes(ctx),
                                     label=meta.with_level_labels, reference=str(meta.reference or "the reference"),
                                     headline=ctx.tables.get("headline"), decision_rule=selection_rule_text(meta)))
    html = render_report(core, sections)
    folder.write_text("report.html", html)
    folder.save()
    kill_point("report")
    if run.get("report_pdf", True):
        render_pdf(core, folder.path / "report.pdf", html=html)  # the same HTML, rendered once
        folder.listed("report.pdf")
    else:
        (folder.path / "report.pdf").unlink(missing_ok=True)


def design_notes(ctx: RunContext) -> list[str]:
    """Page 1's design warnings (issue 39 §8), the sentences ``audit validate`` and ``audit compile`` print: a
    job with fewer than :data:`compiler.validate.MIN_BASE_PER_JOB` base candidates (seed 000 §5), the metrics of
    ``metrics.csv`` whose intervals were measured outside the coverage target at the nearest simulated design,
    the categories under the declared power at the SESOI (``power.csv``), and a score-delta PASS band wider than
    the SESOI's score shift (``sesoi.csv``); each "Design warning: ...".
    Empty for a run without a paired frame."""
    from runtime.analysis.design_warnings import coverage_warning, power_warning, sesoi_band_warning, small_pool_warning

    if ctx.paired is None or ctx.paired.empty:
        return []
    out = []
    w = small_pool_warning(ctx.paired.drop_duplicates(["job_id", "cv_id"]).groupby("job_id", sort=False).size())
    if w:
        out.append(w)
    metrics = ctx.tables.get("metrics")
    if metrics is not None and len(metrics):
        w = coverage_warning([m for m in metrics["metric"].astype(str)], len(ctx.resolved["jobs"]))
        if w:
            out.append(w)
    es = (ctx.resolved.get("analysis") or {}).get("effect_size")
    if es:
        w = power_warning(ctx.tables.get("power"), target=float(es["power"]), alpha=float(ctx.resolved["analysis"]["alpha"]))
        if w:
            out.append(w)
    w = sesoi_band_warning(metrics, ctx.tables.get("sesoi"))
    if w:
        out.append(w)
    return [f"Design warning: {w[0].upper()}{w[1:]}." for w in out]


VERDICT_SECTION = "validity-verdict"


def with_verdict(sections: list, verdict: tuple[str, list[str]] | None) -> list:
    """The front matter states the run's one verdict (issue 28 §2): the validity section of a family
    (``validity-verdict``) shows the combined verdict and every family's failed checks; without such a
    section, a verdict of another family gets one of its own. No verdict: the sections unchanged."""
    from runtime.report.sections import ORDER, Section

    if verdict is None:
        return sections
    out, seen = [], False
    for s in sections:
        if s.id == VERDICT_SECTION:
            seen = True
            if (s.context.get("verdict"), list(s.context.get("failed") or [])) != (verdict[0], list(verdict[1])):
                s = dataclasses.replace(s, context={**s.context, "verdict": verdict[0], "failed": list(verdict[1])})
        out.append(s)
    if not seen:
        out.append(Section(id=VERDICT_SECTION, title="Validity protocol", template="sections/effects_verdict.html.j2",
                           context={"verdict": verdict[0], "failed": list(verdict[1]), "declared": True,
                                    "own": True}, order=ORDER["verdict"], toc=False))
    return out
