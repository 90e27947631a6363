"""The generate stage: the job texts the design and the systems read, and the design's candidates
(from the task store when this generation was finished before). Also used by ``audit export
--for-vendor``, which writes the same résumés for a vendor."""

from __future__ import annotations

from typing import Any

from runtime.pipeline.score import plan_ids
from runtime.run.context import RunContext
from runtime.store import frame_bytes, frame_from, task_key
from runtime.testhooks import kill_point


def job_texts(compiled: Any) -> dict[str, str | None]:
    """Job id -> description text (inline, read from ``description_file``, or for an O*NET occupation without
    either, its posting written from the O*NET tables: :func:`runtime.generate.onet.posting`)."""
    from compiler.files import read_regular_text

    folder = compiled.loaded.folder
    out: dict[str, str | None] = {}
    for job in compiled.loaded.spec.jobs:
        if job.description is not None:
            out[job.id] = job.description
        elif job.description_file:
            out[job.id] = read_regular_text(folder / job.description_file)  # never a FIFO or device (issue 41)
        elif job.onet is not None:  # issue 32: the posting written from the bundled O*NET tables
            from runtime.generate.onet import posting

            out[job.id] = posting(job.onet, job.title)
        else:
            out[job.id] = None
    return out


def generate(ctx: RunContext, design) -> None:
    """The design's candidates: from the store when this generation was finished before."""
    if not design.storable:
        design.generate(ctx)
        return
    tid, key = task_key("generate", design=design.id, plan_tasks=plan_ids(ctx))
    stored = ctx.store.get(tid)
    if stored is not None:
        ctx.candidates = frame_from(stored["candidates"])
        design.restore(ctx)
        ctx.run["reused_tasks"].append(tid)
        return
    design.generate(ctx)
    ctx.store.put(tid, "generate", {"candidates": frame_bytes(ctx.candidates)}, key=key)
    ctx.run["computed_tasks"].append(tid)
    kill_point("generate")
