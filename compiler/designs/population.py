"""Design ``population`` (``candidates: {generator: population}``): population-representative
profiles per job, realised as resumes and scored once each (seed 001 §4). Provides unpaired
profiles: there is no counterfactual matrix, so no axes and no variants. The causal roles and the
estimation settings in the same block belong to the ``causal`` audit family
(:mod:`compiler.families.causal`)."""

from __future__ import annotations

import csv
from typing import Any

from compiler.designs.base import Design, design
from compiler.errors import Issue
from compiler.hashing import file_digest
from compiler.llm import Estimate
from compiler.load import LoadedSpec
from compiler.paths import resolve_inside
from compiler.registry import UNPAIRED
from compiler.blocks.population import PopulationCandidates
from compiler.tasks import task


MSG_AGE = "age must be [min, max] with 18 <= min < max <= 70 (got {rng})"
MSG_MICRO_COLUMNS = "microdata.columns must map {missing} (required: gender, race, age, state, education)"
MSG_MICRO_HEADER = "column {col!r} is not in the header of {path!r}; columns: {cols}"
MSG_POP_AXES = "a population design takes no axes or variants (remove {key}); its roles are in candidates.roles"

REQUIRED_MICRO = ("gender", "race", "age", "state", "education")


@design
class Population(Design):
    """Unpaired profiles sampled from population tables (seed 001)."""

    id = "population"
    order = 30
    provides = frozenset({UNPAIRED})

    def issues(self, ls: LoadedSpec) -> list[Issue]:
        """No axes or variants; the age range; the microdata file and its column mapping."""
        out: list[Issue] = []
        for key in ("axes", "variants"):
            if key in ls.raw:
                out.append(ls.issue((key,), MSG_POP_AXES.format(key=key), key=True))
        c: PopulationCandidates = ls.spec.candidates
        lo, hi = c.age
        if not 18 <= lo < hi <= 70:
            out.append(ls.issue(("candidates", "age"), MSG_AGE.format(rng=[lo, hi])))
        if c.microdata is not None:
            m = c.microdata
            missing = [f for f in REQUIRED_MICRO if f not in m.columns]
            if missing:
                out.append(ls.issue(("candidates", "microdata", "columns"),
                                    MSG_MICRO_COLUMNS.format(missing=", ".join(missing))))
            path, err = resolve_inside(ls.folder, m.path)
            if err:
                out.append(ls.issue(("candidates", "microdata", "path"), err))
            else:
                try:
                    with open(path, newline="", encoding="utf-8") as fh:
                        header = next(csv.reader(fh), [])
                except (OSError, UnicodeDecodeError) as exc:
                    header, err = [], str(exc)
                    out.append(ls.issue(("candidates", "microdata", "path"), err))
                for field, col in m.columns.items():
                    if header and col not in header:
                        out.append(ls.issue(("candidates", "microdata", "columns", field), MSG_MICRO_HEADER.format(
                            col=col, path=m.path, cols=", ".join(header))))
        return out

    def resolve_matrix(self, ls: LoadedSpec) -> dict[str, Any]:
        """No counterfactual matrix: no axes, a null variant design."""
        return {"axes": {}, "variants": {"reference": None, "design": None, "table": {}}}

    def resolve_candidates(self, ls: LoadedSpec) -> dict[str, Any]:
        """The resolved ``candidates`` (microdata replaced by its digest; ``roles`` and ``estimation`` are
        then resolved by the causal family in place)."""
        c: PopulationCandidates = ls.spec.candidates
        out = c.model_dump()
        out["age"] = list(c.age)
        if c.microdata is not None:
            path = (ls.folder / c.microdata.path).resolve()
            out["microdata"] = {"path": c.microdata.path, "sha256": file_digest(path)["digest"],
                                "columns": dict(c.microdata.columns)}
        return out

    def plan_tasks(self, resolved: dict[str, Any]) -> tuple[list[dict[str, Any]], dict[str, list[str]]]:
        """``sample_profiles`` (P1, P2 of seed 001 §4) and ``realise`` (profiles -> resumes) per job."""
        cand, seed = resolved["candidates"], resolved["seed"]
        tasks, realise = [], {}
        for job in resolved["jobs"]:
            gen = task("sample_profiles", {"job": job, "candidates": cand, "seed": seed}, [])
            rea = task("realise", {"job": job["id"], "seed": seed}, [gen["id"]])
            tasks += [gen, rea]
            realise[job["id"]] = [rea["id"]]
        return tasks, realise

    def batching(self, resolved: dict[str, Any]) -> tuple[int | None, int]:
        """(profiles per job, 1 resume per profile) for the plan's score batches."""
        return resolved["candidates"]["profiles_per_job"], 1

    def size(self, resolved: dict[str, Any], base_per_job: dict[str, int] | None = None) -> dict[str, Any]:
        """One resume per profile: profiles_per_job x jobs."""
        n = resolved["candidates"]["profiles_per_job"] * len(resolved["jobs"])
        return {"base_candidates": n, "variants": 1, "resumes": n, "paired_candidates_per_variant": n,
                "profiles": n}

    def estimate(self, resolved: dict[str, Any], est: Estimate) -> None:
        """The population generator makes no model call."""
