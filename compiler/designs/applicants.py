"""Design ``applicants``: the employer's historical applicants of the tool (issue 34), when every system
is an ``applicant_file``. Nothing is generated and nothing is scored: each file holds one row per
applicant with sex, race/ethnicity and the tool's outcome. Provides ``applicants`` (the ``ll144`` audit
family's third alternative, 6 RCNY §5-301: historical data is preferred); requires ``analysis.ll144``
and the ``disclosure`` a published summary names (6 RCNY §5-304).

The rows are personal data (GDPR Art. 9): the design keeps none of them (:attr:`keeps_rows` is False;
the runtime half is not storable), only the file's sha256 and row count and the LL144 tables.
"""

from __future__ import annotations

from typing import Any, ClassVar

from compiler.designs.base import Design, design
from compiler.errors import Issue
from compiler.llm import Estimate
from compiler.load import LoadedSpec
from compiler.registry import APPLICANTS

MSG_MIX = ("an applicant-file audit reads historical applicants only: system {id!r} is {kind}; every system is "
           "kind: applicant_file, or none is")
MSG_KEY = "an applicant-file audit takes no {key} (the file holds the applicants and their outcomes); remove it"
MSG_WHY = ("why_test_data is for test data; an applicant-file audit reads historical data (6 RCNY §5-301): "
           "remove it")
MSG_NEEDS_LL144 = ("an applicant-file audit computes the NYC Local Law 144 tables: add analysis: {ll144: {}} "
                   "(optionally small_category_rule, thresholds, bootstrap)")
MSG_DISCLOSURE = ("disclosure.{field} is required with analysis.ll144 (a published summary names it, 6 RCNY §5-304): "
                  "add it")
MSG_NO_DISCLOSURE = ("required key 'disclosure' is missing: a published summary names {fields} (6 RCNY §5-304); "
                     "add disclosure: {{employer, aedt: {{name, version, distributed}}, auditor: {{name, independence}}, "
                     "data: {{source, from, to}}}}")
MSG_DISCLOSURE_RANGE = "disclosure.data.from ({lo}) is after disclosure.data.to ({hi})"
MSG_RESPONSIBLE = ("disclosure.responsible names the persons responsible for an EU AI Act Annex IV test record: "
                   "add disclosure.provider and disclosure.intended_purpose, or remove it")
MSG_OUTCOMES = ("systems mix outcome: selected and outcome: score; one audit gives one basis (selection or "
                "scoring rates): split it into two specs")
MSG_RATE = "rate: {rate} does not match the files' outcome: {outcome} (rate {want}); write rate: auto or {want}"

#: The keys an applicant-file audit refuses (their key paths).
REFUSED = (("jobs",), ("axes",), ("variants",), ("candidates",))

#: Disclosure fields required with ``analysis.ll144`` (key path under ``disclosure``).
DISCLOSURE_REQUIRED = (("employer",), ("aedt",), ("auditor",), ("data",))
#: Disclosure fields required as well with an applicant file.
DISCLOSURE_RANGE = (("data", "from"), ("data", "to"))


def disclosure_issues(ls: LoadedSpec, *, applicants: bool) -> list[Issue]:
    """The disclosure fields a published LL144 summary names, each missing one named (with the data range when
    the audit reads applicants); ``responsible`` without ``provider``."""
    d = ls.spec.disclosure
    out: list[Issue] = []
    raw = ls.raw.get("disclosure") if isinstance(ls.raw, dict) else None
    raw = raw if isinstance(raw, dict) else {}
    need = DISCLOSURE_REQUIRED + (DISCLOSURE_RANGE if applicants else ())
    if "disclosure" not in (ls.raw if isinstance(ls.raw, dict) else {}):
        fields = ", ".join(".".join(p) for p in need)
        return [ls.issue(("disclosure",), MSG_NO_DISCLOSURE.format(fields=fields))]
    for path in need:
        parent: Any = raw
        for part in path[:-1]:
            parent = parent.get(part) if isinstance(parent, dict) else None
        if not isinstance(parent, dict):  # its parent is missing: reported once, there
            continue
        if parent.get(path[-1]) is None:
            out.append(ls.issue(("disclosure",) + path[:-1], MSG_DISCLOSURE.format(field=".".join(path)), key=True))
    if d is not None and d.responsible and not d.provider:
        out.append(ls.issue(("disclosure", "responsible"), MSG_RESPONSIBLE, key=True))
    if d is not None and d.data is not None and d.data.from_ and d.data.to and d.data.from_ > d.data.to:
        out.append(ls.issue(("disclosure", "data", "from"), MSG_DISCLOSURE_RANGE.format(lo=d.data.from_, hi=d.data.to)))
    return out


@design
class Applicants(Design):
    """Historical applicants read from the employer's file: no generation, no scoring, no row kept."""

    id = "applicants"
    order = 45
    provides = frozenset({APPLICANTS})
    #: The run keeps no per-person row (no ``scores.csv``; the task store gets the ledger only).
    keeps_rows: ClassVar[bool] = False

    def issues(self, ls: LoadedSpec) -> list[Issue]:
        """Every system an ``applicant_file``; no jobs, axes, variants, candidates, ``why_test_data``;
        ``analysis.ll144`` written, with one outcome across the systems; the disclosure fields."""
        out: list[Issue] = []
        for i, s in enumerate(ls.spec.systems):
            if s.kind != "applicant_file":
                out.append(ls.issue(("systems", i, "kind"), MSG_MIX.format(id=s.id, kind=s.kind)))
        raw = ls.raw if isinstance(ls.raw, dict) else {}
        for path in REFUSED:
            if path[0] in raw:
                out.append(ls.issue(path, MSG_KEY.format(key=path[0]), key=True))
        b = ls.spec.analysis.ll144
        if b is None:
            out.append(ls.issue(("analysis",) if "analysis" in raw else (), MSG_NEEDS_LL144, key="analysis" in raw))
        else:
            if b.why_test_data is not None:
                out.append(ls.issue(("analysis", "ll144", "why_test_data"), MSG_WHY, key=True))
            outcomes = {s.outcome for s in ls.spec.systems if s.kind == "applicant_file"}
            if len(outcomes) > 1:
                out.append(ls.issue(("systems",), MSG_OUTCOMES, key=True))
            elif outcomes and b.rate != "auto":
                want = "selection" if outcomes == {"selected"} else "scoring"
                if b.rate != want:
                    out.append(ls.issue(("analysis", "ll144", "rate"), MSG_RATE.format(
                        rate=b.rate, outcome=next(iter(outcomes)), want=want)))
        out += disclosure_issues(ls, applicants=True)
        return out

    def resolve_matrix(self, ls: LoadedSpec) -> dict[str, Any]:
        """No counterfactual matrix: no axes, a null variant design."""
        return {"axes": {}, "variants": {"reference": None, "design": None, "table": {}}}

    def resolve_candidates(self, ls: LoadedSpec) -> None:
        """No candidates block: resolved as null."""
        return None

    def plan_tasks(self, resolved: dict[str, Any]) -> tuple[list[dict[str, Any]], dict[str, list[str]]]:
        """No generation (no jobs either: no score task)."""
        return [], {}

    def batching(self, resolved: dict[str, Any]) -> tuple[int | None, int]:
        return None, 1

    def size(self, resolved: dict[str, Any], base_per_job: dict[str, int] | None = None) -> dict[str, Any]:
        """Nothing generated: the applicants are counted at execute."""
        return {"base_candidates": None, "variants": 0, "resumes": 0, "paired_candidates_per_variant": None}

    def estimate(self, resolved: dict[str, Any], est: Estimate) -> None:
        """No model call."""
