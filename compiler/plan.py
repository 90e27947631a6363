"""Expand a resolved spec into a deterministic execution plan.

Every task's id is the hash of its resolved inputs and of the ids it depends on, so the same id is
computed before execution and from a stored result (DESIGN.md, "Compile, plan, lock"). Tasks:

- ``generate``: the K identity-neutral base candidates of one job (seed 000 §3.1.2, Phase A);
- ``inject``: one variant of every base candidate of one job (Phase B);
- ``score``: one system on one job's K x (1+N) matrix;
- ``analyse``: ranking, the nine metrics, BH over every p-value of the run (seed 000 §3.3-3.6);
- ``report``: HTML and PDF.
"""

from __future__ import annotations

from typing import Any

from compiler.catalog import METRIC_IDS
from compiler.hashing import digest, short_id
from compiler.llm import estimate
from compiler.population import expand_population, is_population
from compiler.power import minimum_detectable_effects

PLAN_SCHEMA_VERSION = "1.0"


def _task(kind: str, inputs: dict[str, Any], deps: list[str]) -> dict[str, Any]:
    return {"id": short_id(kind, {"kind": kind, "inputs": inputs, "deps": deps}), "kind": kind,
            "deps": deps, "inputs": inputs}


def expand(resolved: dict[str, Any], *, base_per_job: dict[str, int] | None = None) -> dict[str, Any]:
    """Return the plan: ``{schema_version, audit, spec_digest, counts, tasks}``.

    Parameters
    ----------
    resolved : dict
        Output of :func:`compiler.resolve.resolve`.
    base_per_job : dict, optional
        K per job when there is no generator (all systems precomputed): counted from the score files
        by the caller; unknown at compile time otherwise.
    """
    if is_population(resolved):  # seed 001 population design: no counterfactual matrix
        return expand_population(resolved, PLAN_SCHEMA_VERSION)
    seed = resolved["seed"]
    variants = resolved["variants"]["table"]
    cand = resolved["candidates"]
    jobs = resolved["jobs"]
    tasks: list[dict[str, Any]] = []
    by_job: dict[str, list[str]] = {}
    for job in jobs:
        if cand is None:
            by_job[job["id"]] = []
            continue
        gen = _task("generate", {"job": job, "candidates": cand, "seed": seed,
                                 "axes": resolved["axes"]}, [])
        tasks.append(gen)
        injects = []
        for vid, levels in variants.items():
            inj = _task("inject", {"job": job["id"], "variant": vid, "levels": levels,
                                   "axes": resolved["axes"], "seed": seed}, [gen["id"]])
            tasks.append(inj)
            injects.append(inj["id"])
        by_job[job["id"]] = injects
    scores = []
    for system in resolved["systems"]:
        for job in jobs:
            t = _task("score", {"system": system, "job": job}, by_job[job["id"]])
            tasks.append(t)
            scores.append(t["id"])
    analyse = _task("analyse", {"analysis": resolved["analysis"], "thresholds": resolved["thresholds"],
                                "reference": resolved["variants"]["reference"], "seed": seed,
                                "metrics": list(METRIC_IDS)}, scores)
    tasks.append(analyse)
    report = _task("report", {"audit": resolved["audit"], "title": resolved["title"]}, [analyse["id"]])
    tasks.append(report)

    n_jobs, n_var, n_sys = len(jobs), len(variants), len(resolved["systems"])
    if cand is not None:
        k_total = cand["base_per_job"] * n_jobs
    elif base_per_job:
        k_total = sum(base_per_job.values())
    else:
        k_total = None
    n_embed_systems = sum(1 for s in resolved["systems"] if s["kind"] == "embedding")
    resumes = None if k_total is None else k_total * n_var
    counts = {
        "jobs": n_jobs,
        "base_candidates": k_total,
        "variants": n_var,
        "resumes": resumes,
        "systems": n_sys,
        "texts_to_embed": 0 if n_embed_systems == 0 else (
            None if resumes is None else (resumes + n_jobs) * n_embed_systems),
        "model_calls": 0,
        "estimated_tokens": 0,
        "estimated_cost_usd": 0.0,
        "tasks": len(tasks),
        "metric_rows": len(METRIC_IDS) * n_var * sum(len(s.get("conditions") or [None])
                                                     for s in resolved["systems"]),
        "paired_candidates_per_variant": k_total,
    }
    plan = {"schema_version": PLAN_SCHEMA_VERSION, "kind": "audit-plan", "audit": resolved["audit"],
            "spec_digest": digest(resolved), "counts": counts, "tasks": tasks}
    mde = minimum_detectable_effects(resolved)
    if mde:  # only specs with analysis.effect_size (seed 003 §3.7)
        plan["sensitivity"] = mde
    uses_llm = (cand or {}).get("generator") == "llm" or any(
        s["kind"] in ("llm_score", "llm_compare") for s in resolved["systems"])
    if uses_llm:  # calls and tokens per stage; cost only where litellm knows the price
        est = estimate(resolved)
        counts.update({"model_calls": est["calls"], "estimated_tokens": est["tokens"],
                       "estimated_cost_usd": est["cost_usd"] if est["cost_known"] else None})
        plan["llm_estimate"] = est
    return plan


def plan_digest(plan: dict[str, Any]) -> dict[str, str]:
    """Digest of the plan's tasks (the part that determines results)."""
    return digest([t["id"] for t in plan["tasks"]])
