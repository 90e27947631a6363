"""The run's metadata: the initial ``run.json`` record and the ``meta`` mapping the report reads."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from compiler.artifacts import RUN_SCHEMA_VERSION, RunRecord, tool_info
from compiler.designs import design_id
from compiler.lock import lock_methods_version, package_versions
from compiler.methods import RANKING
from compiler.paths import recorded
from compiler.systems import hook_for


#: ``run.json`` ``execution.out_root`` of an output root outside the spec's folder (issue 41).
OUT_BY_OPERATOR = "operator's --out"
OUT_BY_DEFAULT = "operator's working directory (reports/)"


def run_record(*, compiled: Any, lock: dict[str, Any], run_id: str, shown: str, generated_at: str,
               timings: dict[str, float], root: Path, git: dict[str, Any] | None,
               reproduce: list[str], operator_out: bool = False) -> dict[str, Any]:
    """The first ``run.json`` of a run (``status: running``); stages fill in counts and artifacts.

    Built and validated as a :class:`compiler.artifacts.RunRecord` (schema 1.1) and returned as its
    dict. ``version_changes_since_lock`` lists each package whose installed version differs from the
    one the lock recorded; ``methods_version`` is the lock's. ``run["timings"]`` is ``timings`` itself
    (the stage timers fill it in after this call). ``execution.out_root`` is the output root relative
    to the spec's folder when it lies inside it, else :data:`OUT_BY_OPERATOR` (``operator_out``: the
    operator's ``--out``) or :data:`OUT_BY_DEFAULT` (issue 41: no ``..`` path in a signed artifact).
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
        "spec_git": git, "reproduce": reproduce,
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
        return ((run.get("systems_info") or {}).get(s["id"], {}).get("blind") or {}).get("file_sha256", "")
    return (s.get("fingerprint") or {"digest": s["data"]["sha256"]})["digest"]


def report_meta(resolved: dict[str, Any], lock: dict[str, Any], run: dict[str, Any]) -> dict[str, Any]:
    """The ``meta`` mapping the report reads (header, design, systems, amendments, timings)."""
    r = resolved
    return {
        "audit": r["audit"], "title": r["title"], "seed": r["seed"],
        "spec_path": run["spec_file"], "spec_digest": lock["spec_digest"],
        "lock_created_at": lock["created_at"], "generated_at": run["generated_at"],
        "run_id": run["run_id"], "tool_version": run["tool"]["version"],
        "reference": r["variants"]["reference"], "k": r["analysis"]["k"],
        "alpha": r["analysis"]["alpha"], "n_bootstrap": r["analysis"]["bootstrap"],
        "ranking": r["analysis"].get("ranking") or RANKING,
        "decision": r["analysis"].get("decision"),
        "thresholds": r["thresholds"],
        "systems": [{"id": s["id"], "kind": s["kind"], "model": hook_for(s["kind"]).source(s),
                     "fingerprint": _fingerprint(s, run), "score_range": s["score_range"],
                     **({"blind": (run.get("systems_info") or {}).get(s["id"], {}).get("blind") or {}}
                        if s.get("blind") else {})} for s in r["systems"]],
        "jobs": [{"id": j["id"], "title": j["title"]} for j in r["jobs"]],
        "variants": r["variants"]["table"], "axes": list(r["axes"]),
        # how each level was signalled (cues the tool wrote, or a score-file audit's description and examples)
        "signals": {name: {k: a[k] for k in ("slot", "levels", "cues", "description", "examples") if k in a}
                    for name, a in r["axes"].items()},
        "design": design_id(r), "source": r.get("source"),
        "counts": run["counts"],
        "amendments": [{"reason": a.get("reason") or "(none recorded)", "amended at (UTC)": a["amended_at"],
                        "superseded lock": f"{a['previous']['created_at']}, sha256 {a['previous']['spec_digest']['digest']}",
                        "changed keys": a["changes"]} for a in lock.get("amendments", [])],
        "timings": run["timings"], "versions": run["versions"], "systems_info": run["systems_info"],
        "resumed": list(run.get("resumed") or []), "reused_tasks": list(run.get("reused_tasks") or []),
        "store": run.get("store"),
        "lock_signature": run.get("lock_signature"), "lock_recreated": list(run.get("lock_recreated") or []),
    }
