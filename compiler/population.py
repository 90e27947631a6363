"""Population designs (``candidates: {generator: population}``): checks, resolution and plan (seed 001).

Kept apart from the counterfactual-matrix code: :mod:`compiler.validate`, :mod:`compiler.resolve`
and :mod:`compiler.plan` call into this module only when the generator is ``population``.
"""

from __future__ import annotations

import csv
from typing import Any

from compiler.errors import Issue
from compiler.hashing import digest, file_digest, short_id
from compiler.load import LoadedSpec
from compiler.paths import resolve_inside
from compiler.spec import PROTECTED_LEVELS, PopulationCandidates

MSG_LEVEL = "{which} {level!r} is not a level of {attr}; allowed: {levels}"
MSG_SAME_LEVEL = "x0 and x1 must differ (both {level!r})"
MSG_ROLE_TWICE = "attribute {attr!r} already has role {other}; each attribute takes one role"
MSG_X_IN_ROLE = "attribute {attr!r} is the protected attribute x; it cannot also be in {role}"
MSG_Z_NOT_DEMOGRAPHIC = (
    "confounder {attr!r} can be caused by the protected attribute; z may hold only gender, race, age "
    "(seed 001 §2.2: Z is not affected by X)")
MSG_MEDIATOR_DEMOGRAPHIC = "{attr!r} is a demographic, not a mediator; put it in z"
MSG_NO_MEDIATOR = "b and r are both empty: give at least one mediator (education, experience, first_name, surname, region)"
MSG_AGE = "age must be [min, max] with 18 <= min < max <= 70 (got {rng})"
MSG_MICRO_COLUMNS = "microdata.columns must map {missing} (required: gender, race, age, state, education)"
MSG_MICRO_HEADER = "column {col!r} is not in the header of {path!r}; columns: {cols}"
MSG_POP_AXES = "a population design takes no axes or variants (remove {key}); its roles are in candidates.roles"
MSG_NO_AXES = "required key 'axes' is missing"
MSG_NO_VARIANTS = "required key 'variants' is missing"

REQUIRED_MICRO = ("gender", "race", "age", "state", "education")


def is_population(ls_or_resolved: Any) -> bool:
    """True when the spec (LoadedSpec or resolved dict) uses the population generator."""
    if isinstance(ls_or_resolved, dict):
        c = ls_or_resolved.get("candidates")
        return bool(c) and c.get("generator") == "population"
    return isinstance(ls_or_resolved.spec.candidates, PopulationCandidates)


def population_issues(ls: LoadedSpec) -> list[Issue]:
    """Semantic checks of a population design (roles, levels, age range, microdata mapping)."""
    out: list[Issue] = []
    if not is_population(ls):
        # a counterfactual-matrix spec keeps needing axes and variants (they default to empty in the model)
        if not ls.spec.axes and "axes" not in ls.raw:
            out.append(ls.issue(("axes",), MSG_NO_AXES))
        if "variants" not in ls.raw:
            out.append(ls.issue(("variants",), MSG_NO_VARIANTS))
        return out
    for key in ("axes", "variants"):
        if key in ls.raw:
            out.append(ls.issue((key,), MSG_POP_AXES.format(key=key), key=True))
    c: PopulationCandidates = ls.spec.candidates
    x = c.roles.x
    levels = PROTECTED_LEVELS[x.attribute]
    base = ("candidates", "roles", "x")
    for which in ("x0", "x1"):
        if getattr(x, which) not in levels:
            out.append(ls.issue(base + (which,), MSG_LEVEL.format(
                which=which, level=getattr(x, which), attr=x.attribute, levels=", ".join(levels))))
    if x.x0 == x.x1:
        out.append(ls.issue(base + ("x1",), MSG_SAME_LEVEL.format(level=x.x0)))
    seen: dict[str, str] = {}
    for role in ("z", "b", "r"):
        for i, attr in enumerate(getattr(c.roles, role)):
            loc = ("candidates", "roles", role, i)
            if attr == x.attribute:
                out.append(ls.issue(loc, MSG_X_IN_ROLE.format(attr=attr, role=role)))
            elif attr in seen:
                out.append(ls.issue(loc, MSG_ROLE_TWICE.format(attr=attr, other=seen[attr])))
            elif role == "z" and attr not in ("gender", "race", "age"):
                out.append(ls.issue(loc, MSG_Z_NOT_DEMOGRAPHIC.format(attr=attr)))
            elif role != "z" and attr in ("gender", "race", "age"):
                out.append(ls.issue(loc, MSG_MEDIATOR_DEMOGRAPHIC.format(attr=attr)))
            seen.setdefault(attr, role)
    if not c.roles.b and not c.roles.r:
        out.append(ls.issue(("candidates", "roles"), MSG_NO_MEDIATOR))
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


def resolve_candidates(ls: LoadedSpec) -> dict[str, Any]:
    """The resolved ``candidates`` of a population design (microdata replaced by its digest)."""
    c: PopulationCandidates = ls.spec.candidates
    out = c.model_dump()
    out["age"] = list(c.age)
    if c.microdata is not None:
        path = (ls.folder / c.microdata.path).resolve()
        out["microdata"] = {"path": c.microdata.path, "sha256": file_digest(path)["digest"],
                            "columns": dict(c.microdata.columns)}
    return out


def expand_population(resolved: dict[str, Any], plan_schema_version: str) -> dict[str, Any]:
    """Plan of a population design: profiles -> resumes -> score -> causal analysis -> report."""
    cand, seed, jobs = resolved["candidates"], resolved["seed"], resolved["jobs"]

    def task(kind: str, inputs: dict[str, Any], deps: list[str]) -> dict[str, Any]:
        return {"id": short_id(kind, {"kind": kind, "inputs": inputs, "deps": deps}), "kind": kind,
                "deps": deps, "inputs": inputs}

    tasks, realise = [], {}
    for job in jobs:
        gen = task("sample_profiles", {"job": job, "candidates": cand, "seed": seed}, [])
        rea = task("realise", {"job": job["id"], "seed": seed}, [gen["id"]])
        tasks += [gen, rea]
        realise[job["id"]] = rea["id"]
    scores = []
    for system in resolved["systems"]:
        for job in jobs:
            t = task("score", {"system": system, "job": job}, [realise[job["id"]]])
            tasks.append(t)
            scores.append(t["id"])
    analyse = task("analyse_causal", {"roles": cand["roles"], "estimation": cand["estimation"], "seed": seed},
                   scores)
    report = task("report", {"audit": resolved["audit"], "title": resolved["title"]}, [analyse["id"]])
    tasks += [analyse, report]
    n = cand["profiles_per_job"] * len(jobs)
    n_embed = sum(1 for s in resolved["systems"] if s["kind"] == "embedding")
    counts = {
        "jobs": len(jobs), "base_candidates": n, "variants": 1, "resumes": n,
        "systems": len(resolved["systems"]),
        "texts_to_embed": (n + len(jobs)) * n_embed, "model_calls": 0, "estimated_tokens": 0,
        "estimated_cost_usd": 0.0, "tasks": len(tasks),
        "metric_rows": 10 * len(resolved["systems"]),  # 5 quantities + 5 effects per system
        "paired_candidates_per_variant": n, "profiles": n,
    }
    return {"schema_version": plan_schema_version, "kind": "audit-plan", "audit": resolved["audit"],
            "spec_digest": digest(resolved), "counts": counts, "tasks": tasks}
