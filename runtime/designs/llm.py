"""The LLM design: the correspondence-audit matrix written by LLM agents (seed 000 §3.1)."""

from __future__ import annotations

from runtime.designs import Design, design, placebo_resumes


@design("llm")
class LlmDesign(Design):
    """Base résumés and their variants written by the generator agents; trail and checks kept."""

    def generate(self, ctx) -> None:
        """The matrix (``resumes.csv``) and, when ``variants.negative_controls`` is written, its placebo
        résumés (``control_resumes.csv``, ``ctx.control_candidates``): a ``regenerate`` control needs the
        generator's own calls (:func:`runtime.generate.llm.generate_llm_design`), so they are made here, with
        the matrix, through one client and one trail (issue 38 §1)."""
        from runtime.generate.llm import generate_llm_design

        r = ctx.resolved
        controls = r["variants"].get("negative_controls") or []
        refs = [t["id"] for t in ctx.compiled.plan["tasks"] if t["kind"] in ("generate", "inject")]
        out = generate_llm_design(ctx.compiled, ctx.progress, folder=ctx.folder, jobs=ctx.jobs, store=ctx.store,
                                  refs=refs, regenerate=[c["id"] for c in controls
                                                         if c.get("perturbation") == "regenerate"])
        ctx.candidates = out.candidates
        ctx.folder.write_csv("resumes.csv", ctx.candidates)
        if controls:
            ctx.control_candidates = placebo_resumes(ctx.candidates, controls, reference=r["variants"]["reference"],
                                                     seed=r["seed"], regenerated=out.regenerated)
            ctx.folder.write_csv("control_resumes.csv", ctx.control_candidates)

    def generate_controls(self, ctx) -> None:
        """The placebo résumés :meth:`generate` made with the matrix (kept); the default's otherwise."""
        if ctx.control_candidates is None:
            super().generate_controls(ctx)
