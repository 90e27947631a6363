"""Execute a locked spec: generate -> score -> rank -> analyse -> report (seed 000 Algorithm 1, Stage 4).

Each stage writes its artifacts into the run folder as soon as it finishes, so an error in a later
stage (a bad score CSV, a PDF renderer failure) never loses what was already computed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from compiler import Compiled, compile_spec
from compiler.errors import AuditError, InputDataError
from compiler.lock import check_lock, package_versions, read_lock, tool_version, utc_now, write_json
from compiler.load import display_path
from runtime.progress import Progress, stage_timer

RUN_SCHEMA_VERSION = "1.0"
CONDITION_DEFAULT = "default"
MSG_OUT = "cannot create the run folder under {root}: {err}"


class OutputError(AuditError):
    """The output root cannot be written (exit 2)."""



@dataclass
class RunResult:
    """What ``execute`` produced: the run folder, the analysis frames and the timings."""

    run_dir: Path
    metrics: pd.DataFrame
    risk: pd.DataFrame
    drift: pd.DataFrame
    timings: dict[str, float] = field(default_factory=dict)
    run: dict[str, Any] = field(default_factory=dict)
    causal: pd.DataFrame | None = None  # population designs (seed 001): causal.csv


def new_run_dir(root: Path, audit: str, when: str) -> tuple[str, Path]:
    """Create ``root/audit/<UTC stamp>`` (suffix -2, -3... if taken); return (run id, folder)."""
    stamp = when.replace("-", "").replace(":", "")
    base = root / audit
    run_id, n = stamp, 1
    try:
        base.mkdir(parents=True, exist_ok=True)
        while True:
            try:
                (base / run_id).mkdir()
                return run_id, base / run_id
            except FileExistsError:
                n += 1
                run_id = f"{stamp}-{n}"
    except OSError as err:
        raise OutputError(MSG_OUT.format(root=root, err=err)) from None


def job_texts(compiled: Compiled) -> dict[str, str | None]:
    """Job id -> description text (inline or read from ``description_file``)."""
    folder = compiled.loaded.folder
    out: dict[str, str | None] = {}
    for job in compiled.loaded.spec.jobs:
        if job.description is not None:
            out[job.id] = job.description
        elif job.description_file:
            out[job.id] = (folder / job.description_file).read_text(encoding="utf-8")
        else:
            out[job.id] = None
    return out


def generate_resumes(compiled: Compiled, progress: Progress, *, folder: "RunFolder | None" = None,
                     jobs: dict[str, str | None] | None = None) -> pd.DataFrame | None:
    """The K x (1+N) matrix of every job (seed 000 §3.1.2), or None when the spec has no generator."""
    from runtime.generate import generate_job_matrix

    r = compiled.resolved
    if r["candidates"] is None:
        return None
    if r["candidates"]["generator"] == "llm":
        from runtime.generate.llm import generate_llm_matrix

        return generate_llm_matrix(compiled, progress, folder=folder,
                                   jobs=jobs if jobs is not None else job_texts(compiled))
    axes = {name: {"slot": a["slot"], "levels": a["levels"], "cues": a["cues"]} for name, a in r["axes"].items()}
    advance = progress.task("generating resumes", len(r["jobs"]))
    frames = []
    for job in r["jobs"]:
        frames.append(generate_job_matrix(job_id=job["id"], family=job["family"],
                                          k=r["candidates"]["base_per_job"],
                                          m=r["candidates"]["matching_per_job"], seed=r["seed"],
                                          axes=axes, variants=r["variants"]["table"]))
        advance(1)
    return pd.concat(frames, ignore_index=True)


def score_all(compiled: Compiled, resumes: pd.DataFrame | None, jobs: dict[str, str | None],
              progress: Progress, info: dict[str, Any],
              artifacts: dict[str, Any] | None = None) -> pd.DataFrame:
    """Score every cell with every system; long frame with ``system, condition, replicate`` columns.

    An adapter that scores several prompt conditions (the LLM systems) returns its own
    ``condition`` and ``replicate`` columns; extra files it produces land in ``artifacts``.
    """
    from runtime.systems import ScoreRequest, adapter_for

    r = compiled.resolved
    ex = compiled.loaded.spec.execution
    options = {"seed": r["seed"], "jobs": {j["id"]: {"title": j["title"], "family": j["family"]}
                                           for j in r["jobs"]},
               "llm_concurrency": dict(ex.llm_concurrency), "llm_retries": ex.llm_retries,
               "llm_timeout_s": ex.llm_timeout_s}
    if any(s["kind"] in ("llm_score", "llm_compare") for s in r["systems"]):
        from runtime.llm import cache_path

        options["llm_cache"] = cache_path(compiled)
    frames = []
    for sys_resolved in r["systems"]:
        request = ScoreRequest(jobs=jobs, resumes=resumes, variants=list(r["variants"]["table"]),
                               spec_folder=compiled.loaded.folder,
                               batch_size=compiled.loaded.spec.execution.batch_size,
                               progress=progress.task, info=info, options=options,
                               artifacts=artifacts if artifacts is not None else {})
        scored = adapter_for(sys_resolved["kind"])(sys_resolved).score(request)
        if "replicate" not in scored.columns:
            scored.insert(0, "replicate", 0)
        if "condition" not in scored.columns:
            scored.insert(0, "condition", CONDITION_DEFAULT)
        scored.insert(0, "system", sys_resolved["id"])
        frames.append(scored)
    return pd.concat(frames, ignore_index=True)


MSG_K_TOO_SMALL = (
    "job {job!r} has {n} base candidates for system {system!r}, fewer than the largest analysis.k "
    "({family}: {k}); every shortlist would hold the whole pool"
)


def check_base_counts(scores: pd.DataFrame, k: dict[str, int]) -> None:
    """Raise :class:`InputDataError` when a job has fewer base candidates than the largest k."""
    family, kk = max(k.items(), key=lambda kv: kv[1])
    counts = scores.groupby(["system", "job_id"])["cv_id"].nunique()
    for (system, job), n in counts.items():
        if n < kk:
            raise InputDataError(MSG_K_TOO_SMALL.format(job=job, n=n, system=system, family=family, k=kk))


def _system_source(system: dict[str, Any]) -> str:
    """What a resolved system scores with: the model's name or folder, or the score file."""
    if "endpoint" in system:
        return system["endpoint"]["model"] + (f" at {system['endpoint']['api_base']}"
                                              if system["endpoint"]["api_base"] else "")
    if "model" in system:
        return system["model"].get("name") or system["model"]["path"]
    return f"scores from {system['data']['path']}"


def report_meta(compiled: Compiled, lock: dict[str, Any], run: dict[str, Any]) -> dict[str, Any]:
    """The ``meta`` mapping the report renderer reads."""
    r = compiled.resolved
    return {
        "audit": r["audit"], "title": r["title"], "seed": r["seed"],
        "spec_path": run["spec_file"], "spec_digest": lock["spec_digest"],
        "lock_created_at": lock["created_at"], "generated_at": run["generated_at"],
        "run_id": run["run_id"], "tool_version": run["tool"]["version"],
        "reference": r["variants"]["reference"], "k": r["analysis"]["k"],
        "alpha": r["analysis"]["alpha"], "n_bootstrap": r["analysis"]["bootstrap"],
        "thresholds": r["thresholds"],
        "systems": [{"id": s["id"], "kind": s["kind"], "model": _system_source(s),
                     "fingerprint": (s.get("fingerprint") or {"digest": s["data"]["sha256"]})["digest"],
                     "score_range": s["score_range"]} for s in r["systems"]],
        "jobs": [{"id": j["id"], "title": j["title"]} for j in r["jobs"]],
        "variants": r["variants"]["table"], "axes": list(r["axes"]),
        "counts": run["counts"],
        "amendments": [{"reason": a.get("reason") or "(none recorded)", "amended at (UTC)": a["amended_at"],
                        "superseded lock": f"{a['previous']['created_at']}, sha256 {a['previous']['spec_digest']['digest']}",
                        "changed keys": a["changes"]} for a in lock.get("amendments", [])],
        "timings": run["timings"], "versions": run["versions"], "systems_info": run["systems_info"],
    }


def execute(spec_path: Path, *, out: Path | None = None, quiet: bool = False, keys=None) -> RunResult:
    """Run a locked spec end to end and write the run folder.

    With ``keys`` (:class:`runtime.keys.SigningKeys`) the PDF is signed and the manifest is signed
    into ``manifest.dsse.json``; without, ``manifest.json`` is written unsigned (runtime.sign).

    Raises
    ------
    compiler.errors.SpecError
        The spec is invalid (exit 2).
    compiler.errors.LockError
        No lock, or the spec no longer matches it (exit 3).
    compiler.errors.InputDataError
        A data file named by the spec is wrong (exit 2).
    """
    timings: dict[str, float] = {}
    with stage_timer(timings, "compile"):
        compiled = compile_spec(spec_path)
        shown = display_path(spec_path)
        lock = read_lock(spec_path, shown)
        check_lock(lock, compiled.resolved, shown)
    r = compiled.resolved
    from runtime.sign import git_info, reproduce_commands, seal_run

    git = git_info(spec_path)  # before the run folder exists: it must not make the tree dirty
    knob = compiled.loaded.spec.execution.out
    root = out or (compiled.loaded.folder / knob if knob else Path("reports"))
    generated_at = utc_now()
    run_id, run_dir = new_run_dir(root, r["audit"], generated_at)
    run: dict[str, Any] = {
        "schema_version": RUN_SCHEMA_VERSION, "kind": "audit-run", "run_id": run_id, "audit": r["audit"],
        "spec_file": shown, "spec_digest": lock["spec_digest"], "lock_created_at": lock["created_at"],
        "plan_digest": lock["plan_digest"], "seed": r["seed"], "generated_at": generated_at,
        "tool": {"name": "audit-compiler", "version": tool_version()}, "versions": package_versions(),
        "models": lock["models"], "timings": timings, "counts": dict(compiled.plan["counts"]),
        "systems_info": {}, "tasks": [t["id"] for t in compiled.plan["tasks"]], "artifacts": [],
        "status": "running",
        "execution": {"batch_size": compiled.loaded.spec.execution.batch_size, "out_root": str(root)},
        "spec_git": git, "reproduce": reproduce_commands(spec_shown=shown, git=git, tool_version=tool_version()),
    }
    versions_now, versions_locked = run["versions"], lock.get("versions") or {}
    run["version_changes_since_lock"] = {
        k: {"locked": versions_locked[k], "now": v} for k, v in versions_now.items()
        if k in versions_locked and versions_locked[k] != v
    }

    folder = RunFolder(run_dir, run, keys)
    folder.save()

    def finish() -> None:  # the last write of run.json; the manifest hashes it next
        run["status"] = "done"
        folder.save()

    try:
        result = _run_stages(compiled, lock, folder, timings, quiet)
        seal_run(folder, lock=lock, resolved=r, keys=keys, git=git, finish=finish, timings=timings)
    except BaseException as err:
        run["status"] = "failed"
        run["error"] = f"{type(err).__name__}: {err}"
        folder.save()
        raise
    return RunResult(run_dir, result.metrics, result.risk, result.drift, timings, run,
                     causal=getattr(result, "causal", None))


@dataclass
class RunFolder:
    """The run folder and its ``run.json`` record, rewritten after every stage."""

    path: Path
    run: dict[str, Any]
    keys: Any = None  # runtime.keys.SigningKeys, or None for an unsigned run

    def save(self) -> None:
        write_json(self.path / "run.json", self.run)

    def write_csv(self, name: str, frame: pd.DataFrame) -> None:
        frame.to_csv(self.path / name, index=False)
        self.run["artifacts"].append(name)


def _run_stages(compiled: Compiled, lock: dict[str, Any], folder: RunFolder, timings: dict[str, float],
                quiet: bool):
    """generate -> score -> rank -> analyse -> report; each stage's artifacts are written at once."""
    from runtime.analysis import analyse, n_bootstrap_cells
    from runtime.rank import paired_frame

    if (compiled.resolved["candidates"] or {}).get("generator") == "population":
        from runtime.execute_population import run_population  # seed 001: no counterfactual matrix

        return run_population(compiled, lock, folder, timings, quiet, report_meta)
    r, run, run_dir = compiled.resolved, folder.run, folder.path
    with Progress(quiet=quiet) as progress:
        jobs = job_texts(compiled)
        with stage_timer(timings, "generate"):
            resumes = generate_resumes(compiled, progress, folder=folder, jobs=jobs)
        if resumes is not None:
            folder.write_csv("resumes.csv", resumes)
        artifacts: dict[str, Any] = {}
        try:
            with stage_timer(timings, "score"):
                scores = score_all(compiled, resumes, jobs, progress, run["systems_info"], artifacts)
        finally:  # raw LLM answers are kept even when a later call fails
            for name, frame in artifacts.items():
                folder.write_csv(name, frame)
        check_base_counts(scores, r["analysis"]["k"])
        with stage_timer(timings, "rank"):
            paired = paired_frame(scores, r["axes"], r["variants"]["table"])
        folder.write_csv("paired.csv", paired)
        n_base = paired.drop_duplicates(["job_id", "cv_id"]).shape[0]
        run["counts"].update({"base_candidates": n_base, "resumes": n_base * len(r["variants"]["table"]),
                              "scored": int(len(paired))})
        folder.save()
        with stage_timer(timings, "analyse"):
            advance = progress.task("bootstrap", n_bootstrap_cells(paired, r["variants"]["reference"]))
            result = analyse(paired, reference=r["variants"]["reference"], k=r["analysis"]["k"],
                             alpha=r["analysis"]["alpha"], n_bootstrap=r["analysis"]["bootstrap"],
                             seed=r["seed"], thresholds=r["thresholds"],
                             score_range={s["id"]: tuple(s["score_range"]) for s in r["systems"]},
                             progress=advance)
        llm_meta = llm_report_meta(run, r)
        folder.write_csv("metrics.csv", with_validity_rows(result.metrics, llm_meta))
        folder.write_csv("risk.csv", result.risk)
        folder.write_csv("drift.csv", result.drift)
        folder.save()
        effects = None
        if r["analysis"].get("effect_size") or r["analysis"].get("validity"):
            with stage_timer(timings, "effects"):
                effects = run_effects(compiled, paired, result.metrics)
            folder.write_csv("effects.csv", effects.long_frame())
            run["validity"] = {"verdict": effects.verdict, "failed": list(effects.failed)}
            folder.save()
        with stage_timer(timings, "report"):
            from runtime.report import (build_core, effects_sections, llm_sections, metric_suite_sections,
                                        render_pdf, render_report)
            from runtime.sign import provenance_context

            meta = report_meta(compiled, lock, run)
            core = build_core(meta, provenance=provenance_context(run_dir, run, folder.keys))
            sections = [*metric_suite_sections(metrics=result.metrics, risk=result.risk, drift=result.drift,
                                               meta=meta),
                        *(effects_sections(effects) if effects is not None else []), *llm_sections(llm_meta)]
            html = render_report(core, sections)
            (run_dir / "report.html").write_text(html, encoding="utf-8")
            run["artifacts"].append("report.html")
            folder.save()
            render_pdf(core, run_dir / "report.pdf", html=html)  # the same HTML, rendered once
            run["artifacts"].append("report.pdf")
    return result


#: Bootstrap resamples of the self-test's metric suite: its detection reads p-values, which do not
#: depend on the bootstrap (only the intervals do), so a small count keeps the stage fast.
SELF_TEST_BOOTSTRAP = 100


def run_effects(compiled: Compiled, paired: pd.DataFrame, metrics: pd.DataFrame):
    """The effect-size family and validity protocol (seed 003 §3.7) of a run, as the spec declares."""
    from runtime.analysis import analyse
    from runtime.analysis.effects import analyse_effects

    r = compiled.resolved

    def suite(frame: pd.DataFrame) -> pd.DataFrame:
        return analyse(frame, reference=r["variants"]["reference"], k=r["analysis"]["k"],
                       alpha=r["analysis"]["alpha"], n_bootstrap=SELF_TEST_BOOTSTRAP, seed=r["seed"],
                       thresholds=r["thresholds"],
                       score_range={s["id"]: tuple(s["score_range"]) for s in r["systems"]}).metrics

    mde = compiled.plan.get("sensitivity")
    if not mde:  # precomputed scores: K is known only now
        from compiler.power import minimum_detectable_effects

        mde = minimum_detectable_effects(r, k_total=int(paired.drop_duplicates(["job_id", "cv_id"]).shape[0]))
    return analyse_effects(paired, r, metrics=metrics, analyse_metrics=suite, mde=mde)


def gate_tripped(metrics: pd.DataFrame, fail_on: str | None, tier: str = "research") -> list[str]:
    """Rows that trip ``--fail-on`` (``FAIL`` or ``INVESTIGATE``, the latter including FAIL)."""
    if not fail_on:
        return []
    col = "status" if tier == "research" else "status_operational"
    bad = {"FAIL"} if fail_on == "FAIL" else {"FAIL", "INVESTIGATE"}
    hits = metrics[metrics[col].isin(bad)]
    return [f"{h.system}/{h.condition} {h.metric} {h.variant}: {getattr(h, col)}" for h in hits.itertuples()]


def llm_report_meta(run: dict[str, Any], resolved: dict[str, Any]) -> dict[str, Any] | None:
    """What the report's LLM section shows (valid-response rates, call counts, manipulation check,
    flagging trail), or None when the spec uses no LLM."""
    info = run["systems_info"]
    validity = [v for s in resolved["systems"] for v in info.get(s["id"], {}).get("validity", [])]
    calls = {s["id"]: info[s["id"]]["llm_calls"] for s in resolved["systems"]
             if "llm_calls" in info.get(s["id"], {})}
    gen = run.get("generator_info")
    if not validity and not gen:
        return None
    if gen and "llm_calls" in gen:
        calls["generator"] = gen["llm_calls"]
    replicates = {s["id"]: s["replicates"] for s in resolved["systems"] if "replicates" in s}
    return {"validity": validity, "calls": calls, "generator": gen, "replicates": replicates}


#: Columns a validity row fills in metrics.csv (family ``llm_validity``; no test, no status).
def with_validity_rows(metrics: pd.DataFrame, llm_meta: dict[str, Any] | None) -> pd.DataFrame:
    """``metrics`` plus one ``llm_validity / valid_response_rate`` row per system x condition.

    ``value`` = valid answers / all answers (in [0, 1], higher is better), ``n`` = answers; the row
    carries no test and no status (it qualifies the run, it is not a fairness metric).
    """
    if not llm_meta or not llm_meta["validity"]:
        return metrics
    rows = [{"family": "llm_validity", "metric": "valid_response_rate", "system": v["system"],
             "condition": v["condition"], "variant": "ALL", "reference": "", "n": v["answers"],
             "value": v["valid_response_rate"], "direction": "higher", "status": "",
             "status_operational": "",
             "notes": f"{v['invalid']} invalid answer(s); {v['cells_without_valid_answer']} cell(s) without "
                      f"a valid answer; {len(v['excluded_base_candidates'])} base candidate(s) excluded"}
            for v in llm_meta["validity"]]
    extra = pd.DataFrame(rows).reindex(columns=metrics.columns)
    return pd.concat([metrics, extra.astype({c: metrics[c].dtype for c in ("n",) if c in metrics})],
                     ignore_index=True)
