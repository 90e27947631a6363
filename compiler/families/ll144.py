"""Family ``ll144``: NYC Local Law 144 selection or scoring rates and impact ratios, computed on the
audit's own test data (6 RCNY §5-300, §5-301, §5-302).

Spec block: ``analysis.ll144`` (:mod:`compiler.blocks.ll144`; enabled when written). Needs paired
candidates (résumé x variant rows, each variant's levels mapped to categories) **or** unpaired
profiles (a population design, whose gender and race attributes have a fixed mapping): an any-of need
(:class:`compiler.registry.Needs`). Computed at run time from the scores (no plan task of its own);
the resolved block is part of the ``analyse`` task's inputs.

The statutory impact ratio is a category's rate over the rate of the most selected (or highest
scoring) category. It is not seed 000's ``impact_ratio`` metric (a shortlist retention ratio, seed
000 §3.4.2), which keeps its id in ``metrics.csv``.
"""

from __future__ import annotations

from typing import Any

from compiler.blocks.ll144 import Block
from compiler.errors import Issue
from compiler.families.base import PAIRED, UNPAIRED, Family, family
from compiler.load import MSG_MISSING_KEY
from compiler.registry import APPLICANTS
from compiler.load import LoadedSpec
from compiler.registry import Needs

#: The fixed mapping of a population design's profile attributes to LL144 categories (written into the
#: lock). The four races of the generator are exclusive by approximation (Hispanic or Latino is an
#: ethnicity in the Census tables the generator samples from).
POPULATION_SEX = {"female": "female", "male": "male"}
POPULATION_RACE = {"white": "white", "black": "black_or_african_american", "asian": "asian",
                   "hispanic": "hispanic_or_latino"}

MSG_NO_KEY = ("analysis.ll144 needs sex or race_ethnicity (or both): the axis whose levels give the category "
              "(6 RCNY §5-301(b)); axes: {axes}")
MSG_AXIS = "unknown axis {axis!r}; axes: {axes}"
MSG_LEVEL = "{level!r} is not a level of axis {axis!r}; levels: {levels}"
MSG_UNMAPPED = "level(s) {missing} of axis {axis!r} are not mapped; map every level (to unknown if it has no {what})"
MSG_BLANK = "why_test_data is blank; say why historical data was not used (6 RCNY §5-302)"
MSG_POP_KEY = ("a population design maps its profiles' gender and race to LL144 categories itself (fixed: gender "
               "{sex}; race {race}); remove {key}")
MSG_NO_SELECTION = ("rate: selection needs a rule that selects: analysis.decision {{threshold: t}}, or {{top_k: K}} "
                    "under analysis.ranking: swap_in ({why}); use rate: scoring or auto")
MSG_APPLICANTS_KEY = ("an applicant file gives each applicant's category itself (systems[].labels maps its labels); "
                      "remove {key}")
MSG_INVERTED = ("investigate ({inv:g}) is above pass ({pas:g}); an impact ratio at or above pass is PASS, at or above "
                "investigate INVESTIGATE: give investigate <= pass")


def selection_rule(spec_analysis: Any, design_paired: bool) -> tuple[bool, str]:
    """Whether the spec's decision rule selects individuals, and why not when it does not.

    Returns
    -------
    (bool, str)
        True with an empty reason under ``decision.threshold``, or ``decision.top_k`` under swap-in
        ranking (the methods version's default when not written); otherwise False and the reason.
    """
    from compiler.methods import RANKING

    d = spec_analysis.decision
    if not design_paired:
        return False, "a population design states no decision rule"
    if d is None:
        return False, "the spec states no analysis.decision"
    if d.threshold is not None:
        return True, ""
    if (spec_analysis.ranking or RANKING) == "per_variant":
        return False, "top_k under per_variant ranking: every variant's own top-K holds K résumés per job"
    return True, ""


@family
class Ll144(Family):
    """NYC Local Law 144 impact ratios from the audit's test data; enabled when ``analysis.ll144`` is written."""

    id = "ll144"
    order = 50
    needs = Needs.of(PAIRED) | Needs.of(UNPAIRED) | Needs.of(APPLICANTS)
    key = "ll144"

    def issues(self, ls: LoadedSpec) -> list[Issue]:
        """Every problem of the block, located, at once: blank ``why_test_data``; on a paired design no
        ``sex`` nor ``race_ethnicity``, an unknown axis, a name that is not a level, an unmapped level;
        on a population design the keys themselves; ``rate: selection`` without a rule that selects;
        investigate above pass."""
        b: Block | None = ls.spec.analysis.ll144
        if b is None:
            return []
        base = ("analysis", "ll144")
        out: list[Issue] = []
        provides = _provides(ls)
        if APPLICANTS in provides:  # the design checks the rest (compiler.designs.applicants)
            for key in ("sex", "race_ethnicity"):
                if getattr(b, key) is not None:
                    out.append(ls.issue(base + (key,), MSG_APPLICANTS_KEY.format(key=key), key=True))
            return out + _thresholds_issues(ls, b)
        # what a published summary names, required on test data too (issue 34 §3): a part-A spec locked
        # before it re-locks with `audit compile --amend`
        from compiler.designs.applicants import disclosure_issues

        out += disclosure_issues(ls, applicants=False)
        if b.why_test_data is None:
            out.append(ls.issue(base + ("why_test_data",), MSG_MISSING_KEY.format(key="why_test_data")))
        elif not b.why_test_data.strip():
            out.append(ls.issue(base + ("why_test_data",), MSG_BLANK))
        paired = PAIRED in provides
        if not paired:
            for key in ("sex", "race_ethnicity"):
                if getattr(b, key) is not None:
                    out.append(ls.issue(base + (key,), MSG_POP_KEY.format(
                        sex=_pairs(POPULATION_SEX), race=_pairs(POPULATION_RACE), key=key), key=True))
        else:
            axes = ls.spec.axes or {}
            if b.sex is None and b.race_ethnicity is None:
                out.append(ls.issue(base, MSG_NO_KEY.format(axes=", ".join(axes) or "none")))
            for key, what in (("sex", "sex"), ("race_ethnicity", "race/ethnicity")):
                m = getattr(b, key)
                if m is None:
                    continue
                if m.axis not in axes:
                    out.append(ls.issue(base + (key, "axis"), MSG_AXIS.format(axis=m.axis, axes=", ".join(axes))))
                    continue
                levels = list(axes[m.axis].levels)
                for name in m.levels:
                    if name not in levels:
                        out.append(ls.issue(base + (key, "levels", name), MSG_LEVEL.format(
                            level=name, axis=m.axis, levels=", ".join(levels)), key=True))
                missing = [lv for lv in levels if lv not in m.levels]
                if missing:
                    out.append(ls.issue(base + (key, "levels"), MSG_UNMAPPED.format(
                        missing=", ".join(missing), axis=m.axis, what=what)))
        if b.rate == "selection":
            ok, why = selection_rule(ls.spec.analysis, paired)
            if not ok:
                out.append(ls.issue(base + ("rate",), MSG_NO_SELECTION.format(why=why)))
        return out + _thresholds_issues(ls, b)

    def resolve(self, ls: LoadedSpec, resolved: dict[str, Any]) -> None:
        """``analysis.ll144`` with its defaults explicit: the basis ``auto`` resolves to ``selection`` or
        ``scoring``; ``thresholds.operational`` defaults to ``research``; a population design's fixed
        mapping is written in (``sex``/``race_ethnicity`` with ``attribute`` instead of ``axis``).
        Absent when not written, so the digests of other specs do not change."""
        b: Block | None = ls.spec.analysis.ll144
        if b is None:
            return
        provides = _provides(ls)
        paired = PAIRED in provides
        out = b.model_dump(by_alias=True)
        if APPLICANTS in provides:  # the files' outcome gives the basis; their labels the categories
            del out["why_test_data"], out["sex"], out["race_ethnicity"]
            selected = all(s.outcome == "selected" for s in ls.spec.systems)
            out["rate"] = "selection" if selected else "scoring"
        elif b.rate == "auto":
            out["rate"] = "selection" if selection_rule(ls.spec.analysis, paired)[0] else "scoring"
        if b.thresholds is not None:
            t = out["thresholds"]
            if t["operational"] is None:
                t["operational"] = dict(t["research"])
        if not paired and APPLICANTS not in provides:
            out["sex"] = {"attribute": "gender", "levels": dict(POPULATION_SEX)}
            out["race_ethnicity"] = {"attribute": "race", "levels": dict(POPULATION_RACE)}
        resolved["analysis"][self.key] = out


def _thresholds_issues(ls: LoadedSpec, b: Block) -> list[Issue]:
    out: list[Issue] = []
    if b.thresholds is not None:
        for tier in ("research", "operational"):
            t = getattr(b.thresholds, tier)
            if t is not None and t.investigate > t.pass_:
                out.append(ls.issue(("analysis", "ll144", "thresholds", tier, "investigate"), MSG_INVERTED.format(
                    inv=t.investigate, pas=t.pass_)))
    return out


def _provides(ls: LoadedSpec) -> frozenset[str]:
    from compiler.designs import parts_of

    return parts_of(ls).provides


def _pairs(mapping: dict[str, str]) -> str:
    return ", ".join(f"{k} -> {v}" for k, v in mapping.items())
