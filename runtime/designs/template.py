"""The template design: the offline K x (1+N) correspondence-audit matrix (seed 000 §3.1.2)."""

from __future__ import annotations

import pandas as pd

from runtime.designs import Design, design


@design("template")
class TemplateDesign(Design):
    """Every base candidate of every job under every variant, written by the template generator."""

    storable = True

    def generate(self, ctx) -> None:
        from runtime.generate import generate_job_matrix

        r = ctx.resolved
        axes = {name: {"slot": a["slot"], "levels": a["levels"], "cues": a["cues"]} for name, a in r["axes"].items()}
        advance = ctx.progress.task("generating resumes", len(r["jobs"]))
        frames = []
        for job in r["jobs"]:
            frames.append(generate_job_matrix(job_id=job["id"], family=job["family"],
                                              k=r["candidates"]["base_per_job"],
                                              m=r["candidates"]["matching_per_job"], seed=r["seed"],
                                              axes=axes, variants=r["variants"]["table"],
                                              onet=(job.get("onet") or {}).get("code"),
                                              market=r["candidates"].get("market", "fr")))
            advance(1)
        ctx.candidates = pd.concat(frames, ignore_index=True)
        self.restore(ctx)

    def restore(self, ctx) -> None:
        ctx.folder.write_csv("resumes.csv", ctx.candidates)
