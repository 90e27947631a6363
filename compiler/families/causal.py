"""Family ``causal``: path-specific effects of a protected attribute on the score (TE, NDE, NIE, BIE,
RIE) by DML-UCA (seed 001 §2-§3, §5).

Spec block: ``candidates.roles`` (the standard fairness model: X, confounders Z, business mediators
B, redlining mediators R) and ``candidates.estimation`` (folds, bootstrap draws, alpha, the equivalence
margin of the path-specific effects) of a
population design. Needs unpaired profiles: the decomposition compares different people sampled
from the population, not variants of one resume.
"""

from __future__ import annotations

from typing import Any

from compiler.errors import Issue
from compiler.families.base import UNPAIRED, Family, family
from compiler.load import LoadedSpec
from compiler.registry import Needs
from compiler.blocks.population import PROTECTED_LEVELS
from compiler.tasks import task


#: Quantities (5) and effects (5) per system in ``causal.csv`` (seed 001 §3.1).
ROWS_PER_SYSTEM = 10

MSG_LEVEL = "{which} {level!r} is not a level of {attr}; allowed: {levels}"
MSG_SAME_LEVEL = "x0 and x1 must differ (both {level!r})"
MSG_ROLE_TWICE = "attribute {attr!r} already has role {other}; each attribute takes one role"
MSG_X_IN_ROLE = "attribute {attr!r} is the protected attribute x; it cannot also be in {role}"
MSG_Z_NOT_DEMOGRAPHIC = (
    "confounder {attr!r} can be caused by the protected attribute; z may hold only gender, race, age "
    "(seed 001 §2.2: Z is not affected by X)")
MSG_MEDIATOR_DEMOGRAPHIC = "{attr!r} is a demographic, not a mediator; put it in z"
MSG_NO_MEDIATOR = "b and r are both empty: give at least one mediator (education, experience, first_name, surname, region)"


def _candidates(spec: Any) -> Any:
    return spec.candidates


@family
class Causal(Family):
    """Path-specific effects (seed 001); enabled when a population design declares causal roles."""

    id = "causal"
    order = 40
    needs = Needs.of(UNPAIRED)

    def block(self, spec: Any) -> list[tuple]:
        """Key paths of the block: ``candidates.roles`` and ``candidates.estimation``."""
        c = _candidates(spec)
        return [("candidates", "roles"), ("candidates", "estimation")] if getattr(c, "roles", None) else []

    def enabled(self, resolved: dict[str, Any]) -> bool:
        """On when the candidates block declares causal roles (a population design)."""
        return bool((resolved.get("candidates") or {}).get("roles"))

    def issues(self, ls: LoadedSpec) -> list[Issue]:
        """x0, x1 are distinct levels of X; each attribute takes one role; Z holds demographics only,
        B and R mediators only, and there is at least one mediator (seed 001 §2.2, Table 2)."""
        out: list[Issue] = []
        roles = ls.spec.candidates.roles
        x = roles.x
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
            for i, attr in enumerate(getattr(roles, role)):
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
        if not roles.b and not roles.r:
            out.append(ls.issue(("candidates", "roles"), MSG_NO_MEDIATOR))
        return out

    def resolve(self, ls: LoadedSpec, resolved: dict[str, Any]) -> None:
        """``candidates.roles`` and ``candidates.estimation``, written in place (their positions in the
        design's ``candidates`` are kept)."""
        c = ls.spec.candidates
        if getattr(c, "roles", None) is None:
            return
        resolved["candidates"]["roles"] = c.roles.model_dump()
        # ``margin`` only when written (issue 39 §7): its default belongs to the methods version
        # (compiler.methods.CAUSAL_MARGIN), so the digests of specs that do not set it do not change
        resolved["candidates"]["estimation"] = c.estimation.model_dump(
            exclude=set() if c.estimation.margin is not None else {"margin"})

    def plan_tasks(self, resolved: dict[str, Any], score_ids: list[str]) -> list[dict[str, Any]]:
        """``analyse_causal``: DML-UCA on every system's scores (seed 001 §3.2)."""
        cand = resolved["candidates"]
        return [task("analyse_causal", {"roles": cand["roles"], "estimation": cand["estimation"],
                                        "seed": resolved["seed"]}, score_ids)]

    def metric_rows(self, resolved: dict[str, Any]) -> int:
        """5 quantities + 5 effects per system."""
        return ROWS_PER_SYSTEM * len(resolved["systems"])
