"""The template design: the offline K x (1+N) correspondence-audit matrix (seed 000 §3.1.2)."""

from __future__ import annotations

import pandas as pd

from runtime.designs import Design, design
from runtime.generate.render import HEADINGS


def job_matrix(job: dict, *, axes: dict, candidates: dict, seed: int, variants: dict) -> pd.DataFrame:
    """One job's matrix (:func:`runtime.generate.generate_job_matrix`): a pure function of the resolved job, the
    axes, the candidates block, the seed and the variant table (its draws derive from the seed and the job id),
    so it runs the same in any process."""
    from runtime.generate import generate_job_matrix

    return generate_job_matrix(job_id=job["id"], family=job["family"], k=candidates["base_per_job"],
                               m=candidates["matching_per_job"], seed=seed, axes=axes, variants=variants,
                               onet=(job.get("onet") or {}).get("code"), market=candidates.get("market", "fr"))


@design("template")
class TemplateDesign(Design):
    """Every base candidate of every job under every variant, written by the template generator."""

    storable = True
    section_headings = HEADINGS

    def generate(self, ctx) -> None:
        """Every job's K x (1+N) matrix, one unit of work per job (:func:`job_matrix`) through the run's engine
        (``ctx.engine.map_jobs``; this process without one), concatenated in the spec's job order."""
        import functools

        r = ctx.resolved
        axes = {name: {"slot": a["slot"], "levels": a["levels"], "cues": a["cues"]} for name, a in r["axes"].items()}
        advance = ctx.progress.task("generating resumes", len(r["jobs"]))
        fn = functools.partial(job_matrix, axes=axes, candidates=r["candidates"], seed=r["seed"],
                               variants=r["variants"]["table"])
        done = ctx.engine.map_jobs(fn, r["jobs"]) if ctx.engine is not None else enumerate(map(fn, r["jobs"]))
        frames: list[pd.DataFrame | None] = [None] * len(r["jobs"])
        for n, frame in done:  # as each job finishes; assembled in job order
            frames[n] = frame
            advance(1)
        ctx.candidates = pd.concat(frames, ignore_index=True)
        self.restore(ctx)

    def generate_controls(self, ctx) -> None:
        """The control résumés of every job (:func:`runtime.generate.matrix.generate_job_controls`): the placebo
        résumés of the negative controls (issue 38 §3), then the weakened résumés of the positive controls (issue
        39 §6), written to ``control_resumes.csv``; ``resumes.csv`` is unchanged."""
        from compiler.designs.matrix import all_controls
        from runtime.generate.matrix import generate_job_controls

        r = ctx.resolved
        controls = all_controls(r)
        if not controls:
            ctx.control_candidates = None
            return
        axes = {name: {"slot": a["slot"], "levels": a["levels"], "cues": a["cues"]} for name, a in r["axes"].items()}
        ref = r["variants"]["reference"]
        ctx.control_candidates = pd.concat([generate_job_controls(
            job_id=job["id"], family=job["family"], k=r["candidates"]["base_per_job"],
            m=r["candidates"]["matching_per_job"], seed=r["seed"], axes=axes,
            reference=r["variants"]["table"][ref], controls=controls, onet=(job.get("onet") or {}).get("code"),
            market=r["candidates"].get("market", "fr")) for job in r["jobs"]], ignore_index=True)
        ctx.folder.write_csv("control_resumes.csv", ctx.control_candidates)

    def restore(self, ctx) -> None:
        ctx.folder.write_csv("resumes.csv", ctx.candidates)
        cues = cue_signals(ctx.resolved)
        if cues is not None:
            ctx.folder.write_csv("cues.csv", cues)


#: Columns of ``cues.csv`` (issue 32 §3): one row per drawn name of a ``names`` axis.
CUE_COLUMNS = ("axis", "level", "race", "sex", "name", "first_name", "surname", "sex_signal", "race_signal",
               "floor", "decade", "table")


def cue_signals(resolved: dict) -> pd.DataFrame | None:
    """Every name cue drawn from the name tables with its two measured signals (``cues.csv`` of the run
    folder), in axis, level and draw order; None when no axis draws its names (issue 32 §3).

    Columns: :data:`CUE_COLUMNS`; ``sex_signal`` is the share of the level's sex among the decade's births with
    the first name (SSA), ``race_signal`` the share of the level's race among people with the surname (Census
    2010), both in [floor, 1].
    """
    rows = []
    for axis, a in resolved["axes"].items():
        n = a.get("names")
        if not n:
            continue
        for level, lv in n["levels"].items():
            rows += [(axis, level, lv["race"], lv["sex"], d["name"], d["first"], d["surname"], d["sex_signal"],
                      d["race_signal"], n["floor"], n["decade"], n["table"]) for d in lv["names"]]
    return pd.DataFrame(rows, columns=list(CUE_COLUMNS)) if rows else None
