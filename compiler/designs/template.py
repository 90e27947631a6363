"""Design ``template`` (``candidates: {generator: template}``, the default): rule-based base
candidates per job, every variant injected into each (seed 000 §3.1.2). Provides paired candidates."""

from __future__ import annotations

from typing import Any

from compiler.catalog import METRICS
from compiler.designs import matrix
from compiler.designs.base import design
from compiler.errors import Issue
from compiler.load import LoadedSpec
from compiler.spec import TEMPLATE_FAMILIES


MSG_M_GT_K = "matching_per_job (M={m}) must be <= base_per_job (K={k})"
MSG_K_LT_k = "base_per_job (K={k}) must be >= the largest analysis.k ({family}: {kk})"
MSG_FAMILY = ("job {id!r} has no template family; set family to one of: {families}, or onet to an O*NET-SOC "
              "code (e.g. onet: 53-7062.00)")
MSG_FAMILY_AND_ONET = "give family or onet, not both (family {family!r}, onet {onet!r})"
MSG_RECALL_CAP = (
    "k.merit ({k}) is below matching_per_job ({m}): Recall@K (seed 000 Eq. 4) can reach at most "
    "{k}/{m} = {cap:.3g}, under the research PASS bound {bound}; every recall row will show that cap"
)


@design
class Template(matrix.MatrixDesign):
    """Rule-based base candidates, every variant injected (seed 000 §3.1.2)."""

    id = "template"
    order = 10

    def issues(self, ls: LoadedSpec) -> list[Issue]:
        """The matrix checks; M <= K; K >= the largest shortlist size; every job has a content family."""
        spec, c = ls.spec, ls.spec.candidates
        out = matrix.matrix_issues(ls)
        if c.matching_per_job > c.base_per_job:
            out.append(ls.issue(("candidates", "matching_per_job"),
                                MSG_M_GT_K.format(m=c.matching_per_job, k=c.base_per_job)))
        family, kk = max(spec.analysis.shortlist().items(), key=lambda kv: kv[1])
        if c.base_per_job < kk and not spec.analysis.selects_by_threshold():
            out.append(ls.issue(("candidates", "base_per_job"), MSG_K_LT_k.format(k=c.base_per_job, family=family, kk=kk)))
        for i, job in enumerate(spec.jobs):
            if job.onet is not None:
                if job.family is not None:
                    out.append(ls.issue(("jobs", i, "onet"), MSG_FAMILY_AND_ONET.format(family=job.family,
                                                                                        onet=job.onet)))
            elif job.family is None and job.id not in TEMPLATE_FAMILIES:
                out.append(ls.issue(("jobs", i), MSG_FAMILY.format(id=job.id, families=", ".join(TEMPLATE_FAMILIES))))
        return out

    def advisories(self, ls: LoadedSpec) -> list[Issue]:
        """A shortlist smaller than M caps Recall@K under its PASS bound (legal, probably unintended)."""
        c, spec = ls.spec.candidates, ls.spec
        merit_k = spec.analysis.shortlist()["merit"]
        if spec.analysis.decision is not None and spec.analysis.decision.threshold is not None:
            return []  # a threshold has no K/P cap on Recall
        if 0 < merit_k < c.matching_per_job:
            b = spec.thresholds.research.recall_at_k
            bound = b.pass_ if b is not None else METRICS["recall_at_k"].research[0]
            cap = merit_k / c.matching_per_job
            if cap < bound:
                return [ls.issue(("analysis", "k", "merit") if "analysis" in ls.raw else ("candidates",),
                                 MSG_RECALL_CAP.format(k=merit_k, m=c.matching_per_job,
                                                       cap=cap, bound=bound))]
        return []

    def resolve_candidates(self, ls: LoadedSpec) -> dict[str, Any]:
        """``{generator, base_per_job, matching_per_job}``, and ``market`` unless it is ``fr`` (seed 000's
        setting, the default: the digests of specs written before issue 32 do not move)."""
        out = ls.spec.candidates.model_dump()
        if out.get("market") == "fr":
            del out["market"]
        return out
