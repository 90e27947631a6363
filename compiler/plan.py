"""Expand a resolved spec into a deterministic execution plan.

Every task's id is the hash of its resolved inputs and of the ids it depends on, so the same id is
computed before execution and from a stored result (DESIGN.md, "Compile, plan, lock"). Tasks:

- the design's: ``generate`` (the K identity-neutral base candidates of one job, seed 000 §3.1.2,
  Phase A) and ``inject`` (one variant of every base candidate, Phase B); or ``sample_profiles`` and
  ``realise`` for a population design (seed 001 §4); none for a score file;
- ``score``: one system on one batch of a job's candidates (:func:`score_batches`: whole base
  candidates with all their variants, at most :data:`compiler.methods.SCORE_BATCH_RESUMES` resumes;
  the boundaries are fixed here, never by the order of execution, because an embedding's bytes
  depend on the texts encoded with it); a system that reads its scores from a file has one task
  per job;
- each enabled audit family's: ``analyse`` (metric_suite: ranking, the nine metrics, BH over every
  p-value of the run, seed 000 §3.3-3.6; effects is computed with it), ``analyse_causal`` (causal);
- ``report``: HTML and PDF; ``seal``: the manifest and its signature.
"""

from __future__ import annotations

from typing import Any

from compiler.artifacts import PLAN_SCHEMA_VERSION, Plan, tool_info
from compiler.designs import design_of
from compiler.families import enabled_families
from compiler.hashing import digest
from compiler.llm import Estimate
from compiler.methods import SCORE_BATCH_RESUMES
from compiler.systems import hook_for
from compiler.tasks import task

_task = task  # the name earlier callers used


def _texts_to_embed(resolved: dict[str, Any], resumes: int | None) -> int | None:
    counts = [hook_for(s["kind"]).texts_to_embed(resumes, len(resolved["jobs"])) for s in resolved["systems"]]
    return None if None in counts else sum(counts)


def llm_estimate(resolved: dict[str, Any], resumes: int | None) -> dict[str, Any] | None:
    """Calls, tokens and cost per LLM stage (the design's generation, each system's scoring of
    ``resumes`` resumes), or None when nothing calls a model (:class:`compiler.llm.Estimate`)."""
    est = Estimate()
    design_of(resolved).estimate(resolved, est)
    for s in resolved["systems"]:
        hook_for(s["kind"]).estimate(s, resumes or 0, est)
    return est.result() if est.stages else None


def score_batches(resolved: dict[str, Any]) -> list[tuple[int, int]] | None:
    """The score batches of every job: ``[(first, stop), ...]`` positions of base candidates in the
    job's generation order (``cv001``, ``cv002``, ...), or None when the design does not say how many
    base candidates a job has (the score-file case, which is not batched).

    A batch holds ``max(1, SCORE_BATCH_RESUMES // v)`` base candidates with all their ``v`` resumes
    (variants; 1 for population profiles), so a base candidate's variants are always scored together.
    """
    k, per_base = design_of(resolved).batching(resolved)
    if k is None:
        return None
    step = max(1, SCORE_BATCH_RESUMES // per_base)
    return [(lo, min(lo + step, k)) for lo in range(0, k, step)]


def control_batches(resolved: dict[str, Any], *, positive: bool = False) -> list[tuple[int, int]]:
    """The score batches of a job's placebo résumés (issue 38 §3): ``[(first, stop), ...]`` positions of base
    candidates, ``max(1, SCORE_BATCH_RESUMES // n_controls)`` base candidates with all their placebo résumés
    each; [] without negative controls or without a generator (a score file holds the placebo rows).
    ``positive``: the batches of the positive controls' weakened résumés instead (issue 39 §6), batched apart
    from the placebo résumés as those are from the variants, so that neither moves the other's bytes.

    Placebo résumés are scored in batches of their own, so an embedding's bytes for the demographic
    variants (which depend on their batch-mates, methods v2) are those of the spec without controls.
    """
    controls = resolved["variants"].get("positive_controls" if positive else "negative_controls") or []
    k, _ = design_of(resolved).batching(resolved)
    if not controls or k is None:
        return []
    step = max(1, SCORE_BATCH_RESUMES // len(controls))
    return [(lo, min(lo + step, k)) for lo in range(0, k, step)]


def control_resumes(resolved: dict[str, Any], *, positive: bool = False) -> int:
    """Placebo résumés of the run: K x jobs x negative controls (0 without controls or generator); ``positive``:
    the positive controls' weakened résumés (issue 39 §6) instead."""
    controls = resolved["variants"].get("positive_controls" if positive else "negative_controls") or []
    k, _ = design_of(resolved).batching(resolved)
    return 0 if not controls or k is None else k * len(resolved["jobs"]) * len(controls)


def expand(resolved: dict[str, Any], *, base_per_job: dict[str, int] | None = None) -> dict[str, Any]:
    """Return the plan: ``{schema_version, kind, tool, audit, spec_digest, counts, tasks}`` and the enabled
    families' summaries (``sensitivity``) and the LLM estimate (``llm_estimate``) where they apply,
    validated with :class:`compiler.artifacts.Plan`.

    Parameters
    ----------
    resolved : dict
        Output of :func:`compiler.resolve.resolve`.
    base_per_job : dict, optional
        K per job when there is no generator (all systems precomputed): counted from the score files
        by the caller; unknown at compile time otherwise.
    """
    design = design_of(resolved)
    jobs = resolved["jobs"]
    tasks, deps_by_job = design.plan_tasks(resolved)
    scores = []
    batches = score_batches(resolved)
    for system in resolved["systems"]:
        for job in jobs:
            if batches is None or not hook_for(system["kind"]).needs_text:
                ts = [task("score", {"system": system, "job": job}, deps_by_job[job["id"]])]
            else:
                ts = [task("score", {"system": system, "job": job,
                                     "batch": {"index": i, "base_candidates": [lo, hi]}}, deps_by_job[job["id"]])
                      for i, (lo, hi) in enumerate(batches)]
            tasks += ts
            scores += [t["id"] for t in ts]
    placebo, positive = control_batches(resolved), control_batches(resolved, positive=True)
    for system in resolved["systems"] if placebo or positive else ():  # issues 38 §3, 39 §6: control résumés
        if not hook_for(system["kind"]).needs_text:
            continue  # a score file holds the control rows beside the variants' (one task per job above)
        for job in jobs:
            tasks += [task("score", {"system": system, "job": job,
                                     "controls": resolved["variants"]["negative_controls"],
                                     "batch": {"index": i, "controls": [lo, hi]}}, deps_by_job[job["id"]])
                      for i, (lo, hi) in enumerate(placebo)]
            tasks += [task("score", {"system": system, "job": job,
                                     "controls": resolved["variants"]["positive_controls"],
                                     "batch": {"index": i, "controls": [lo, hi], "positive": True}},
                           deps_by_job[job["id"]])
                      for i, (lo, hi) in enumerate(positive)]
    families = enabled_families(resolved)
    analyses = [t for f in families for t in f.plan_tasks(resolved, scores)]
    tasks += analyses
    report = task("report", {"audit": resolved["audit"], "title": resolved["title"]}, [t["id"] for t in analyses])
    tasks += [report, task("seal", {"audit": resolved["audit"]}, [report["id"]])]

    size = design.size(resolved, base_per_job)
    n_controls, n_positive = control_resumes(resolved), control_resumes(resolved, positive=True)
    scored = size["resumes"] if not n_controls + n_positive else size["resumes"] + n_controls + n_positive
    counts = {
        "jobs": len(jobs),
        "base_candidates": size["base_candidates"],
        "variants": size["variants"],
        "resumes": size["resumes"],
        "systems": len(resolved["systems"]),
        "texts_to_embed": _texts_to_embed(resolved, scored),
        "model_calls": 0,
        "estimated_tokens": 0,
        "estimated_cost_usd": 0.0,
        "tasks": len(tasks),
        "metric_rows": sum(f.metric_rows(resolved) for f in families),
        "paired_candidates_per_variant": size["paired_candidates_per_variant"],
        **{k: v for k, v in size.items() if k == "profiles"},
        **({"controls": n_controls} if n_controls else {}),
        **({"positive_controls": n_positive} if n_positive else {}),
    }
    plan = {"schema_version": PLAN_SCHEMA_VERSION, "kind": "audit-plan", "tool": tool_info(),
            "audit": resolved["audit"], "spec_digest": digest(resolved), "counts": counts, "tasks": tasks}
    for f in families:
        plan.update(f.summary(resolved, size))
    est = llm_estimate(resolved, scored)
    if est is not None:  # calls and tokens per stage; cost only where litellm knows the price
        counts.update({"model_calls": est["calls"], "estimated_tokens": est["tokens"],
                       "estimated_cost_usd": est["cost_usd"] if est["cost_known"] else None})
        plan["llm_estimate"] = est
    return Plan.model_validate(plan).dump()


def plan_file(plan: dict[str, Any], *, generated_at: str) -> dict[str, Any]:
    """The ``<spec>.plan.json`` record: the plan stamped with the UTC time it is written (kept out of
    :func:`expand`, whose output is deterministic)."""
    return Plan.model_validate({**plan, "generated_at": generated_at}).dump()


def plan_digest(plan: dict[str, Any]) -> dict[str, str]:
    """Digest of the plan's tasks (the part that determines results)."""
    return digest([t["id"] for t in plan["tasks"]])
