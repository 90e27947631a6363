"""The score stage: every system scores every candidate (from the task store when a scoring was
finished before), in the plan's score batches, through an engine (:mod:`runtime.pipeline.engine`: each batch
the store lacks is dispatched, the results assembled in plan order)."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import numpy as np
import pandas as pd

from compiler.designs.matrix import all_controls
from compiler.errors import InputDataError
from runtime.designs import design_for
from runtime.pipeline.engine import Engine, LocalEngine, score_system
from runtime.run.context import RunContext
from runtime.store import frame_bytes, frame_from, task_key
from runtime.testhooks import kill_point


CONDITION_DEFAULT = "default"


#: The ``variant`` of every population profile handed to a system adapter (no variants there).
POPULATION_VARIANT = "population"


MSG_K_TOO_SMALL = (
    "job {job!r} has {n} base candidates for system {system!r}, fewer than the largest analysis.k "
    "({family}: {k}); every shortlist would hold the whole pool"
)


def plan_ids(ctx: RunContext, *, system: str | None = None) -> list[str]:
    """Plan task ids a runtime task stands for: the design's tasks (generation), or one system's
    score tasks."""
    tasks = ctx.compiled.plan["tasks"]
    if system is None:
        return [t["id"] for t in tasks if t["kind"] not in ("score", "report", "seal")
                and not t["kind"].startswith("analyse")]
    return [t["id"] for t in tasks if t["kind"] == "score" and t["inputs"]["system"]["id"] == system
            and not is_control_task(t)]


def is_control_task(t: dict[str, Any]) -> bool:
    """A plan task that scores placebo résumés (issue 38 §3: ``"batch": {"controls": [lo, hi]}``)."""
    return "controls" in (t["inputs"].get("batch") or {})


def score_all(ctx: RunContext, artifacts: dict[str, Any]) -> pd.DataFrame:
    """Score every candidate with every system.

    Returns
    -------
    pandas.DataFrame
        Paired designs: ``system, condition, replicate, job_id, cv_id, variant, score, is_true_match``.
        Unpaired designs: ``system, [condition,] job_id, cv_id, score`` (``condition`` when a system
        scores under prompt conditions). Historical applicants (issue 34): ``system, condition, replicate``
        and the columns of :data:`runtime.systems.applicant_file.COLUMNS` (personal data: never written).
    """
    from compiler.spec import LLM_SYSTEM_KINDS
    from runtime.systems import JobInfo, LlmSettings, ScoreRequest, adapter_for

    r = ctx.resolved
    ex = ctx.compiled.loaded.spec.execution
    applicants = "applicants" in ctx.provides  # historical applicants (issue 34): no candidates, no texts
    paired = "unpaired" not in ctx.provides and not applicants
    llm = None
    if any(s["kind"] in LLM_SYSTEM_KINDS for s in r["systems"]):  # an LLM screener: the response cache, limits
        from runtime.llm import response_cache

        llm = LlmSettings(cache=response_cache(ex, ctx.compiled.loaded.folder, ctx.store), concurrency=dict(ex.llm_concurrency),
                          retries=ex.llm_retries, timeout_s=ex.llm_timeout_s)
    if applicants:
        resumes, variants = None, []
    elif paired:
        resumes, variants = ctx.candidates, list(r["variants"]["table"])
    else:
        resumes = ctx.candidates[["job_id", "cv_id", "text"]].assign(variant=POPULATION_VARIANT,
                                                                       is_true_match=np.nan)
        variants = [POPULATION_VARIANT]
    job_info = {j["id"]: JobInfo(title=j["title"], family=j["family"]) for j in r["jobs"]}
    # the negative and positive controls' résumés (issues 38, 39 §6): scored apart, kept in ctx.controls
    control_ids = [c["id"] for c in all_controls(r)] if paired else []
    frames, own_conditions, placebo = [], False, []
    groups = [[c["id"] for c in r["variants"].get(key) or []] if paired else []
              for key in ("negative_controls", "positive_controls")]
    engine = ctx.engine if ctx.engine is not None else LocalEngine()
    for sys_resolved in r["systems"]:
        own = [[] if ctx.control_candidates is None or not ids else score_batches(
            ctx, sys_resolved["id"], ctx.control_candidates[ctx.control_candidates["variant"].isin(ids)],
            controls=True, positive=positive) for ids, positive in zip(groups, (False, True))]
        own_batches = own[0] + own[1]
        request = ScoreRequest(jobs=ctx.jobs, resumes=resumes, variants=variants,
                               spec_folder=ctx.compiled.loaded.folder,
                               progress=ctx.progress.task, info=ctx.run["systems_info"], paired=paired,
                               seed=ctx.seed, job_info=job_info, llm=llm, artifacts=artifacts, store=ctx.store,
                               batches=score_batches(ctx, sys_resolved["id"], resumes),
                               accept_vendor_file=ctx.accept_vendor_file,
                               headings=tuple(design_for(r).section_headings), disclosure=r.get("disclosure"),
                               system_settings={sid: s.model_dump(exclude_unset=True) for sid, s in ex.systems.items()},
                               controls=[] if own_batches else control_ids,
                               control_resumes=None if own_batches else ctx.control_candidates,
                               variant_table=dict((r.get("variants") or {}).get("table") or {}) if paired else {},
                               torch_threads=ex.torch_threads)
        adapter = adapter_for(sys_resolved["kind"])(sys_resolved)
        scored = _score_one(ctx, adapter, request, engine)
        if "replicate" not in scored.columns:
            scored.insert(0, "replicate", 0)
        own_conditions |= "condition" in scored.columns  # LLM screeners score under prompt conditions
        frames.append(_long(scored, sys_resolved["id"]))
        found = artifacts.pop(f"controls:{sys_resolved['id']}", None)  # a score file's placebo rows
        if found is None and own_batches:  # control résumés, in batches of their own (issues 38 §3, 39 §6)
            parts = []
            for ids, batches in zip(groups, own):  # the placebo résumés, then the positive controls' apart
                if batches:
                    mine = ctx.control_candidates[ctx.control_candidates["variant"].isin(ids)]
                    mine = ctx.control_candidates if len(mine) == len(ctx.control_candidates) else mine
                    parts.append(score_system(adapter, replace(request, resumes=mine, variants=ids, info={},
                                                               artifacts={}, plan_tasks=[], controls=[],
                                                               batches=batches), engine=engine))
            found = parts[0] if len(parts) == 1 else pd.concat(parts, ignore_index=True)
            ctx.window_shares.update(window_shares(adapter, resumes, ctx.control_candidates,
                                                   reference=r["variants"]["reference"],
                                                   spec_folder=ctx.compiled.loaded.folder))
        if found is not None:
            placebo.append(_long(found, sys_resolved["id"]))
    scores = pd.concat(frames, ignore_index=True)
    if paired:
        ctx.controls = pd.concat(placebo, ignore_index=True) if placebo else None
    if paired or applicants:  # applicants: every column (categories, selections), kept in memory only
        return scores
    cols = ["system", "condition", "job_id", "cv_id", "score"]
    if not own_conditions:
        cols.remove("condition")  # no system scores under prompt conditions: the column says nothing
    return scores[cols]


def window_shares(adapter, resumes: pd.DataFrame, placebo: pd.DataFrame, *, reference: str,
                  spec_folder) -> dict[tuple[str, str], float]:
    """(system, control) -> share of the control's placebo résumés whose window (the tokens the system reads)
    differs from their reference résumé's; {} for a system without a fixed window (issue 38 §4)."""
    ref = resumes[resumes["variant"] == reference].set_index(["job_id", "cv_id"])["text"]
    texts = list(dict.fromkeys([*ref.tolist(), *placebo["text"].tolist()]))
    windows = adapter.window(texts, spec_folder)
    if windows is None:
        return {}
    of = dict(zip(texts, windows))
    differs = [of[t] != of[ref.loc[(j, c)]] for j, c, t in zip(placebo["job_id"], placebo["cv_id"], placebo["text"])]
    frame = pd.DataFrame({"variant": placebo["variant"].to_numpy(), "differs": differs})
    return {(adapter.id, v): float(g["differs"].mean()) for v, g in frame.groupby("variant", sort=False)}


def _long(scored: pd.DataFrame, system_id: str) -> pd.DataFrame:
    """One system's scores with ``system``, ``condition`` and ``replicate`` columns first."""
    if "replicate" not in scored.columns:
        scored.insert(0, "replicate", 0)
    if "condition" not in scored.columns:
        scored.insert(0, "condition", CONDITION_DEFAULT)
    scored.insert(0, "system", system_id)
    return scored


def _score_one(ctx: RunContext, adapter, request, engine: Engine) -> pd.DataFrame:
    """One system's scores: from the task store when this scoring was finished before, else scored
    now through ``engine`` (each batch the store lacks) and kept (with the adapter's diagnostics and extra
    files)."""
    sid = adapter.id
    request.plan_tasks = plan_ids(ctx, system=sid)
    if not adapter.storable or ctx.store is None:
        return score_system(adapter, request, engine=engine)
    tid, key = task_key("score", system=sid, plan_tasks=request.plan_tasks, paired=request.paired,
                        **({"controls": list(request.controls)} if request.controls else {}))
    stored = ctx.store.get(tid)
    if stored is not None:
        request.info[sid] = json.loads(stored["info"])
        for name, data in stored.items():
            if name.startswith("artifact:"):
                request.artifacts[name.split(":", 1)[1]] = frame_from(data)
        ctx.run["reused_tasks"].append(tid)
        return frame_from(stored["scores"])
    before = set(request.artifacts)
    scored = score_system(adapter, request, engine=engine)
    outputs = {"scores": frame_bytes(scored), "info": json.dumps(request.info.get(sid), sort_keys=True).encode()}
    outputs.update({f"artifact:{n}": frame_bytes(request.artifacts[n]) for n in set(request.artifacts) - before})
    ctx.store.put(tid, "score", outputs, key=key)
    ctx.run["computed_tasks"].append(tid)
    kill_point(f"score:{sid}")
    return scored


MSG_BATCHES = ("job {job!r} has {n} base candidates, but the plan's score batches of system {system!r} cover "
               "{covered}; the generator and the plan disagree (a bug: please report it)")


def score_batches(ctx: RunContext, system_id: str, resumes: pd.DataFrame | None, *, controls: bool = False,
                  positive: bool = False) -> list[Any]:
    """The plan's score batches of one system (:func:`compiler.plan.score_batches`), each with the base
    candidates at its positions in the job's generation order; [] for a system without batches.
    ``controls``: the batches of its placebo résumés instead (:func:`compiler.plan.control_batches`); with
    ``positive``, those of the positive controls' weakened résumés (issue 39 §6).

    Raises
    ------
    RuntimeError
        The batches do not cover every base candidate of a job exactly once (a bug).
    """
    from runtime.systems import ScoreBatch

    tasks = [t for t in ctx.compiled.plan["tasks"] if t["kind"] == "score"
             and t["inputs"]["system"]["id"] == system_id and "batch" in t["inputs"] and is_control_task(t) == controls
             and bool(t["inputs"]["batch"].get("positive")) == positive]
    if not tasks or resumes is None:
        return []
    order: dict[str, dict[str, None]] = {}
    for job, cv in zip(resumes["job_id"], resumes["cv_id"]):
        order.setdefault(job, {}).setdefault(cv, None)
    out, covered = [], {}
    for t in tasks:
        job = t["inputs"]["job"]["id"]
        lo, hi = t["inputs"]["batch"]["controls" if controls else "base_candidates"]
        cvs = tuple(list(order.get(job, {}))[lo:hi])
        covered[job] = covered.get(job, 0) + len(cvs)
        if cvs:
            out.append(ScoreBatch(t["id"], job, cvs))
    for job, cvs in order.items():
        if covered.get(job, 0) != len(cvs):
            raise RuntimeError(MSG_BATCHES.format(job=job, n=len(cvs), system=system_id, covered=covered.get(job, 0)))
    return out


def check_base_counts(scores: pd.DataFrame, k: dict[str, int]) -> None:
    """Raise :class:`InputDataError` when a job has fewer base candidates than the largest k."""
    family, kk = max(k.items(), key=lambda kv: kv[1])
    counts = scores.groupby(["system", "job_id"])["cv_id"].nunique()
    for (system, job), n in counts.items():
        if n < kk:
            raise InputDataError(MSG_K_TOO_SMALL.format(job=job, n=n, system=system, family=family, k=kk))
