"""The LLM design: the correspondence-audit matrix written by LLM agents (seed 000 §3.1)."""

from __future__ import annotations

from runtime.designs import Design, design


@design("llm")
class LlmDesign(Design):
    """Base résumés and their variants written by the generator agents; trail and checks kept."""


    def generate(self, ctx) -> None:
        from runtime.generate.llm import generate_llm_matrix

        refs = [t["id"] for t in ctx.compiled.plan["tasks"] if t["kind"] in ("generate", "inject")]
        ctx.candidates = generate_llm_matrix(ctx.compiled, ctx.progress, folder=ctx.folder, jobs=ctx.jobs,
                                             store=ctx.store, refs=refs)
        ctx.folder.write_csv("resumes.csv", ctx.candidates)
