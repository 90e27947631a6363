"""Execute a population design (seed 001): profiles -> resumes -> score -> DML-UCA -> verdict -> report.

A population design is not a counterfactual matrix: there are no variants, so the nine metrics of
seed 000 do not apply. Each system's scores are decomposed into TE, NDE, NIE, BIE and RIE per job
(occupation), and each system x job x protected attribute gets the cases of seed 001 §5.2.

Artifacts: ``profiles.csv`` (the structured profiles), ``resumes.csv`` (profile id + text),
``scores.csv``, ``causal.csv`` (every quantity and effect with its CI and the verdict), the report.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from compiler.errors import InputDataError
from runtime.progress import stage_timer

#: Columns of ``causal.csv``.
CAUSAL_COLUMNS = ("system", "job_id", "attribute", "x0", "x1", "kind", "term", "estimate", "se", "ci_low",
                  "ci_high", "significant", "n", "n_x0", "n_x1", "cases", "verdict", "status", "positivity",
                  "clipped_p_x_rz", "clipped_p_x_brz", "p1_source", "folds", "n_bootstrap", "alpha")
VARIANT = "population"

MSG_MICRO_VALUE = "{path}:{line}: column {col!r} ({field}): {value!r} is not allowed; allowed: {allowed}"
MSG_MICRO_AGE = "{path}:{line}: column {col!r} (age): {value!r} is not an integer age"
MSG_MICRO_EXP = "{path}:{line}: column {col!r} (experience): {value!r} must be a number of years >= 0"
MSG_MICRO_WEIGHT = "{path}:{line}: column {col!r} (weight): {value!r} must be a number > 0"
MSG_SCORES_HEADER = "{path}: a population score file needs the columns job_id, cv_id, score (got {cols})"
MSG_SCORES_ID = "{path}:{line}: unknown profile {cv!r} for job {job!r}; ids are <job id>-p00001 ... (see profiles.csv)"
MSG_SCORES_DUP = "{path}:{line}: profile {cv!r} of job {job!r} is scored twice (also line {first})"
MSG_SCORES_RANGE = "{path}:{line}: score {value!r} is not a number in score_range {rng}"
MSG_SCORES_MISSING = "{path}: {n} profiles have no score, e.g. {example}"
MSG_SMALL_ARM = ("job {job!r}: {n0} profiles with {attr} = {x0} and {n1} with {x1}; the estimator needs at "
                 "least {need} of each (raise profiles_per_job)")


@dataclass
class PopulationResult:
    """What a population run produced (``metrics``/``risk``/``drift`` are empty: no matrix)."""

    causal: pd.DataFrame
    profiles: pd.DataFrame
    metrics: pd.DataFrame = field(default_factory=pd.DataFrame)
    risk: pd.DataFrame = field(default_factory=pd.DataFrame)
    drift: pd.DataFrame = field(default_factory=pd.DataFrame)


def read_microdata(path: Path, columns: dict[str, str], shown: str) -> pd.DataFrame:
    """Read the auditor's microdata and rename mapped columns; every bad value names its CSV line."""
    from runtime.generate.population import EDUCATION_LEVELS, GENDERS, RACES, STATES

    raw = pd.read_csv(path, dtype=str, keep_default_na=False)
    out = pd.DataFrame({f: raw[c] for f, c in columns.items()})
    allowed = {"gender": GENDERS, "race": RACES, "state": STATES, "education": EDUCATION_LEVELS}
    for f, values in allowed.items():
        bad = ~out[f].isin(values)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise InputDataError(MSG_MICRO_VALUE.format(path=shown, line=i + 2, col=columns[f], field=f,
                                                        value=out[f].iloc[i], allowed=", ".join(values)))
    age = pd.to_numeric(out["age"], errors="coerce")
    bad = age.isna() | (age != age.round())
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise InputDataError(MSG_MICRO_AGE.format(path=shown, line=i + 2, col=columns["age"], value=out["age"].iloc[i]))
    out["age"] = age.astype(int)
    for f, msg, ok in (("experience", MSG_MICRO_EXP, lambda v: v >= 0), ("weight", MSG_MICRO_WEIGHT, lambda v: v > 0)):
        if f in out:
            v = pd.to_numeric(out[f], errors="coerce")
            bad = v.isna() | ~ok(v.fillna(-1))
            if bad.any():
                i = int(np.flatnonzero(bad)[0])
                raise InputDataError(msg.format(path=shown, line=i + 2, col=columns[f], value=out[f].iloc[i]))
            out[f] = v.astype(float)
    return out


def read_population_scores(path: Path, shown: str, profiles: pd.DataFrame,
                           score_range: tuple[float, float]) -> pd.DataFrame:
    """A precomputed system's scores of the profiles: CSV ``job_id, cv_id, score`` (header = line 1)."""
    with open(path, newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
        cols = list(rows[0]) if rows else []
    if not {"job_id", "cv_id", "score"} <= set(cols):
        raise InputDataError(MSG_SCORES_HEADER.format(path=shown, cols=", ".join(cols) or "none"))
    known = set(zip(profiles["job_id"], profiles["cv_id"]))
    seen: dict[tuple[str, str], int] = {}
    lo, hi = score_range
    out = []
    for i, r in enumerate(rows, start=2):
        key = (r["job_id"], r["cv_id"])
        if key not in known:
            raise InputDataError(MSG_SCORES_ID.format(path=shown, line=i, cv=r["cv_id"], job=r["job_id"]))
        if key in seen:
            raise InputDataError(MSG_SCORES_DUP.format(path=shown, line=i, cv=r["cv_id"], job=r["job_id"], first=seen[key]))
        seen[key] = i
        try:
            s = float(r["score"])
        except ValueError:
            s = float("nan")
        if not (np.isfinite(s) and lo <= s <= hi):
            raise InputDataError(MSG_SCORES_RANGE.format(path=shown, line=i, value=r["score"], rng=[lo, hi]))
        out.append((r["job_id"], r["cv_id"], s))
    missing = known - set(seen)
    if missing:
        raise InputDataError(MSG_SCORES_MISSING.format(path=shown, n=len(missing), example=sorted(missing)[0][1]))
    return pd.DataFrame(out, columns=["job_id", "cv_id", "score"])


def sample_all_profiles(compiled) -> pd.DataFrame:
    """Profiles of every job (seed 001 §4.1)."""
    from runtime.generate.population import ExperienceModel, sample_profiles

    r, folder = compiled.resolved, compiled.loaded.folder
    c = r["candidates"]
    micro = None
    exp_model = ExperienceModel(share=c["experience"]["share"], sd=c["experience"]["sd"])
    if c["microdata"] is not None:
        m = c["microdata"]
        micro = read_microdata(folder / m["path"], m["columns"], m["path"])
        if "experience" in micro:
            exp_model = ExperienceModel.fit(micro)
    frames = [sample_profiles(job_id=job["id"], family=job["family"], n=c["profiles_per_job"], seed=r["seed"],
                              age_range=tuple(c["age"]), experience=exp_model, microdata=micro)
              for job in r["jobs"]]
    out = pd.concat(frames, ignore_index=True)
    out["experience_model"] = exp_model.source
    return out


def causal_rows(*, system: str, job_id: str, profiles: pd.DataFrame, scores: np.ndarray, roles: dict[str, Any],
                estimation: dict[str, Any], seed: int) -> list[dict[str, Any]]:
    """Estimate and classify one system x job (seed 001 §3.2, §5.2); rows of ``causal.csv``."""
    from runtime.analysis.causal import classify_cases, estimate_pse
    from runtime.generate.population import role_frame

    x_attr, x0, x1 = roles["x"]["attribute"], roles["x"]["x0"], roles["x"]["x1"]
    keep = profiles[x_attr].isin([x0, x1]).to_numpy()
    prof = profiles[keep].reset_index(drop=True)
    x = (prof[x_attr] == x1).to_numpy(int)
    need = 2 * estimation["folds"]
    n1, n0 = int(x.sum()), int(len(x) - x.sum())
    if min(n0, n1) < need:
        raise InputDataError(MSG_SMALL_ARM.format(job=job_id, n0=n0, n1=n1, attr=x_attr, x0=x0, x1=x1, need=need))
    res = estimate_pse(x=x, y=np.asarray(scores)[keep], z=role_frame(prof, roles["z"]), b=role_frame(prof, roles["b"]),
                       r=role_frame(prof, roles["r"]), seed=seed, folds=estimation["folds"],
                       n_bootstrap=estimation["bootstrap"], alpha=estimation["alpha"])
    eff = res.table[res.table["kind"] == "effect"].set_index("term")
    verdict = classify_cases(eff["significant"].to_dict(), eff["estimate"].to_dict())
    sig = eff["significant"].to_dict()
    # FAIL: a direct or proxy (redlining) path is significant. INVESTIGATE: another effect is, or
    # positivity is violated, so NDE/NIE/BIE/RIE are extrapolated and no PASS can be granted for them.
    status = ("FAIL" if sig["NDE"] or sig["RIE"] else
              "INVESTIGATE" if any(sig.values()) or res.diagnostics["positivity"] == "violated" else "PASS")
    base = {"system": system, "job_id": job_id, "attribute": x_attr, "x0": x0, "x1": x1, "n": res.n,
            "n_x0": n0, "n_x1": n1, "cases": ",".join(verdict.cases), "verdict": verdict.label,
            "status": status, "positivity": res.diagnostics["positivity"],
            "clipped_p_x_rz": res.diagnostics["clipped_share"]["p_x_rz"],
            "clipped_p_x_brz": res.diagnostics["clipped_share"]["p_x_brz"],
            "p1_source": str(prof["p1_source"].iloc[0]), "folds": estimation["folds"],
            "n_bootstrap": estimation["bootstrap"], "alpha": estimation["alpha"]}
    rows = []
    for t in res.table.itertuples():
        rows.append({**base, "kind": t.kind, "term": t.term, "estimate": t.estimate, "se": t.se,
                     "ci_low": t.ci_low, "ci_high": t.ci_high,
                     "significant": "" if t.significant is None else bool(t.significant)})
    return rows


def run_population(compiled, lock: dict[str, Any], folder, timings: dict[str, float], quiet: bool,
                   report_meta) -> PopulationResult:
    """The stages of a population run; each stage's artifacts are written as soon as it ends."""
    from runtime.execute import job_texts
    from runtime.generate.population import realise_all
    from runtime.progress import Progress
    from runtime.systems import ScoreRequest, adapter_for

    r, run, run_dir = compiled.resolved, folder.run, folder.path
    cand = r["candidates"]
    with Progress(quiet=quiet) as progress:
        with stage_timer(timings, "generate"):
            profiles = sample_all_profiles(compiled)
            family_of = {j["id"]: j["family"] for j in r["jobs"]}
            profiles["text"] = realise_all(profiles, family_of=family_of, seed=r["seed"])
        folder.write_csv("profiles.csv", profiles.drop(columns="text"))
        folder.write_csv("resumes.csv", profiles[["job_id", "cv_id", "text"]])
        folder.save()
        jobs = job_texts(compiled)
        frames = []
        with stage_timer(timings, "score"):
            for s in r["systems"]:
                if s["kind"] == "precomputed":
                    path = compiled.loaded.folder / s["data"]["path"]
                    sc = read_population_scores(path, s["data"]["path"], profiles, tuple(s["score_range"]))
                else:
                    resumes = profiles[["job_id", "cv_id", "text"]].assign(variant=VARIANT, is_true_match=np.nan)
                    request = ScoreRequest(jobs=jobs, resumes=resumes, variants=[VARIANT],
                                           spec_folder=compiled.loaded.folder,
                                           batch_size=compiled.loaded.spec.execution.batch_size,
                                           progress=progress.task, info=run["systems_info"])
                    sc = adapter_for(s["kind"])(s).score(request)[["job_id", "cv_id", "score"]]
                sc.insert(0, "system", s["id"])
                frames.append(sc)
        scores = pd.concat(frames, ignore_index=True)
        folder.write_csv("scores.csv", scores)
        run["counts"].update({"profiles": int(len(profiles)), "scored": int(len(scores))})
        folder.save()
        rows = []
        with stage_timer(timings, "analyse"):
            advance = progress.task("causal decomposition", len(r["systems"]) * len(r["jobs"]))
            for s in r["systems"]:
                for job in r["jobs"]:
                    prof = profiles[profiles["job_id"] == job["id"]].reset_index(drop=True)
                    sc = scores[scores["system"] == s["id"]].set_index(["job_id", "cv_id"])["score"]
                    y = sc.loc[list(zip(prof["job_id"], prof["cv_id"]))].to_numpy(float)
                    rows += causal_rows(system=s["id"], job_id=job["id"], profiles=prof, scores=y,
                                        roles=cand["roles"], estimation=cand["estimation"], seed=r["seed"])
                    advance(1)
        causal = pd.DataFrame(rows, columns=list(CAUSAL_COLUMNS))
        folder.write_csv("causal.csv", causal)
        folder.save()
        with stage_timer(timings, "report"):
            from runtime.report import build_core, causal_sections, render_pdf, render_report
            from runtime.sign import provenance_context

            meta = report_meta(compiled, lock, run)
            core = build_core(meta, provenance=provenance_context(run_dir, run, folder.keys),
                              kind="Population audit report (causal decomposition)")
            html = render_report(core, causal_sections(causal=causal, profiles=profiles, meta=meta, candidates=cand))
            (run_dir / "report.html").write_text(html, encoding="utf-8")
            run["artifacts"].append("report.html")
            folder.save()
            render_pdf(core, run_dir / "report.pdf", html=html)  # the same HTML, rendered once
            run["artifacts"].append("report.pdf")
    return PopulationResult(causal=causal, profiles=profiles)
