"""The run's metadata: the initial ``run.json`` record and what the report reads (:class:`ReportMeta`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from compiler.artifacts import RUN_SCHEMA_VERSION, RunRecord, tool_info
from compiler.designs import design_id
from compiler.lock import lock_methods_version, package_versions
from compiler.paths import recorded
from compiler.systems import hook_for
from runtime.report.meta import ReportJob, ReportMeta, ReportSystem
from runtime.run.settings import RunSettings


#: ``run.json`` ``execution.out_root`` of an output root outside the spec's folder (issue 41).
OUT_BY_OPERATOR = "operator's --out"
OUT_BY_DEFAULT = "operator's working directory (reports/)"


def run_record(*, compiled: Any, lock: dict[str, Any], run_id: str, shown: str, generated_at: str,
               timings: dict[str, float], root: Path, git: dict[str, Any] | None,
               reproduce: list[str], operator_out: bool = False, allow_exec: bool = False) -> dict[str, Any]:
    """The first ``run.json`` of a run (``status: running``); stages fill in counts and artifacts.

    Built and validated as a :class:`compiler.artifacts.RunRecord` (schema 1.1) and returned as its
    dict. ``version_changes_since_lock`` lists each package whose installed version differs from the
    one the lock recorded; ``methods_version`` is the lock's. ``run["timings"]`` is ``timings`` itself
    (the stage timers fill it in after this call). ``execution.out_root`` is the output root relative
    to the spec's folder when it lies inside it, else :data:`OUT_BY_OPERATOR` (``operator_out``: the
    operator's ``--out``) or :data:`OUT_BY_DEFAULT` (issue 41: no ``..`` path in a signed artifact).
    ``allow_exec`` records ``audit execute --allow-exec`` (issue 36 §1; not hashed).
    """
    r = compiled.resolved
    run: dict[str, Any] = {
        "schema_version": RUN_SCHEMA_VERSION, "kind": "audit-run", "run_id": run_id, "audit": r["audit"],
        "spec_file": shown, "spec_digest": lock["spec_digest"], "lock_created_at": lock["created_at"],
        "plan_digest": lock["plan_digest"], "seed": r["seed"], "generated_at": generated_at,
        "tool": tool_info(), "versions": package_versions(),
        "models": lock["models"], "timings": timings, "counts": dict(compiled.plan["counts"]),
        "systems_info": {}, "tasks": [t["id"] for t in compiled.plan["tasks"]], "artifacts": [],
        "status": "running",
        "execution": {"out_root": recorded(root, compiled.loaded.folder,
                                           outside=OUT_BY_OPERATOR if operator_out else OUT_BY_DEFAULT)},
        "spec_git": git, "reproduce": reproduce, "allow_exec": allow_exec,
    }
    locked = lock.get("versions") or {}
    run["version_changes_since_lock"] = {
        k: {"locked": locked[k], "now": v} for k, v in run["versions"].items() if k in locked and locked[k] != v
    }
    run["methods_version"] = lock_methods_version(lock)
    out = RunRecord.model_validate(run).dump()
    out["timings"] = timings  # the same dict: stage_timer keeps adding to it
    return out


def _fingerprint(s: dict[str, Any], run: dict[str, Any]) -> str:
    """A system's fingerprint; a blind score file's is its sha256 as read by the run (it is returned after the lock)."""
    if s.get("blind"):
        return _blind(s, run).get("file_sha256", "")
    return (s.get("fingerprint") or {"digest": s["data"]["sha256"]})["digest"]


def _blind(s: dict[str, Any], run: dict[str, Any]) -> dict[str, Any]:
    """A blind system's record in ``run.json`` (``systems_info[id].blind``; empty before the run read it)."""
    return ((run.get("systems_info") or {}).get(s["id"], {}).get("blind")) or {}


def report_meta(resolved: dict[str, Any], lock: dict[str, Any], run: dict[str, Any],
                settings: RunSettings | None = None) -> ReportMeta:
    """What the report reads about the run (:class:`runtime.report.meta.ReportMeta`).

    The analysis settings (reference, K, α, bootstrap, ranking, decision rule, thresholds) are
    ``settings``' (:class:`runtime.run.settings.RunSettings`, built from ``resolved`` when not given):
    their defaults were applied once, at compile time and in the settings, never here.
    """
    r = resolved
    settings = settings if settings is not None else RunSettings.from_resolved(r)
    return ReportMeta(
        audit=r["audit"], title=r["title"], seed=settings.seed,
        spec_path=run["spec_file"], spec_digest=lock["spec_digest"],
        lock_created_at=lock["created_at"], generated_at=run["generated_at"],
        run_id=run["run_id"], tool_version=run["tool"]["version"],
        reference=settings.reference, k=settings.k, alpha=settings.alpha, n_bootstrap=settings.bootstrap,
        ranking=settings.ranking, multiplicity=settings.multiplicity, decision=settings.decision, thresholds=settings.thresholds,
        systems=tuple(ReportSystem(id=s["id"], kind=s["kind"], model=hook_for(s["kind"]).source(s),
                                   fingerprint=_fingerprint(s, run), score_range=tuple(s["score_range"]),
                                   blind=_blind(s, run) if s.get("blind") else None) for s in r["systems"]),
        jobs=tuple(ReportJob(id=j["id"], title=j["title"], source=_job_source(j, r)) for j in r["jobs"]),
        variants=settings.variants, axes=tuple(r["axes"]),
        # how each level was signalled (cues the tool wrote, or a score-file audit's description and examples)
        signals={name: {k: a[k] for k in ("slot", "levels", "cues", "description", "examples", "labels", "names")
                        if k in a}
                 for name, a in r["axes"].items()},
        design=design_id(r), source=r.get("source"),
        counts=dict(run["counts"]),
        amendments=tuple({"reason": a.get("reason") or "(none recorded)", "amended at (UTC)": a["amended_at"],
                          "superseded lock": f"{a['previous']['created_at']}, sha256 {a['previous']['spec_digest']['digest']}",
                          "changed keys": a["changes"]} for a in lock.get("amendments", [])),
        timings=dict(run["timings"]), versions=dict(run["versions"]), systems_info=dict(run["systems_info"]),
        resumed=tuple(run.get("resumed") or ()), reused_tasks=tuple(run.get("reused_tasks") or ()),
        lock_signature=run.get("lock_signature"), lock_recreated=tuple(run.get("lock_recreated") or ()),
        engagement=run.get("engagement"),
        market=_market(r),
    )


#: How the report names each labour market (``candidates.market``, issue 32 §2).
MARKET_NAMES = {"fr": "France (seed 000's setting)", "us": "United States"}


def _market(r: dict[str, Any]) -> str | None:
    """``candidates.market`` of a template design in words (``fr`` when left out); None for other designs."""
    c = r.get("candidates") or {}
    if c.get("generator", "template") != "template" or design_id(r) != "template":
        return None
    m = c.get("market", "fr")
    return f"{m}: {MARKET_NAMES.get(m, m)}"


def _job_source(job: dict[str, Any], r: dict[str, Any]) -> str:
    """What a template job's posting and résumés were written from (issue 32): the O*NET occupation, with
    the code whose ratings stand in when it is not the job's own, or the hand-written family."""
    if _market(r) is None:
        return ""
    o = job.get("onet")
    if o:
        proxy = f"; skills and knowledge rated for {o['ratings_from']}" if o.get("ratings_from") != o["code"] else ""
        return f"O*NET {o['release']} {o['code']} {o['title']}{proxy}"
    return f"hand-written family {job['family']}" if job.get("family") else ""
