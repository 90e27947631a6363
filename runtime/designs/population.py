"""The population design (seed 001 §4.1): population-representative profiles realised as résumés.

A population design is not a counterfactual matrix: there are no variants. It samples
``profiles_per_job`` profiles per job (P1 from the auditor's microdata or the bundled tables, P2 the
experience model), realises each as a rule-based résumé and provides **unpaired** candidates to the
audit families. Artifacts: ``profiles.csv`` (the structured profiles) and ``resumes.csv`` (profile id
and text).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from compiler.errors import InputDataError
from runtime.designs import Design, design
from runtime.generate.population import RESUME_HEADINGS

MSG_MICRO_VALUE = "{path}:{line}: column {col!r} ({field}): {value!r} is not allowed; allowed: {allowed}"
MSG_MICRO_AGE = "{path}:{line}: column {col!r} (age): {value!r} is not an integer age"
MSG_MICRO_EXP = "{path}:{line}: column {col!r} (experience): {value!r} must be a number of years >= 0"
MSG_MICRO_WEIGHT = "{path}:{line}: column {col!r} (weight): {value!r} must be a number > 0"


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



@design("population")
class PopulationDesign(Design):
    """Profiles of every job and their résumé texts (``ctx.candidates``: one row per profile)."""

    report_kind = "Population audit report (causal decomposition)"
    section_headings = RESUME_HEADINGS
    storable = True

    def generate(self, ctx) -> None:
        from runtime.generate.population import realise_all

        r = ctx.resolved
        profiles = sample_all_profiles(ctx.compiled)
        family_of = {j["id"]: j["family"] for j in r["jobs"]}
        profiles["text"] = realise_all(profiles, family_of=family_of, seed=r["seed"])
        ctx.candidates = profiles
        self.restore(ctx)

    def restore(self, ctx) -> None:
        profiles = ctx.candidates
        ctx.folder.write_csv("profiles.csv", profiles.drop(columns="text"))
        ctx.folder.write_csv("resumes.csv", profiles[["job_id", "cv_id", "text"]])
        ctx.run["counts"].update({"profiles": int(len(profiles))})
