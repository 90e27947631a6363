"""Design ``llm`` (``candidates: {generator: llm}``): LLM generation agents write the base resumes
(Phase A) and inject every variant (Phase B), optionally translating, flagging and classifying them
(seed 000 §3.1). Provides paired candidates."""

from __future__ import annotations

from typing import Any

from compiler import llm
from compiler.designs import matrix
from compiler.designs.base import design
from compiler.errors import Issue
from compiler.load import LoadedSpec
from compiler.registry import LLM_GENERATION
from compiler.systems import LLM_MODULES, Requires, hook_for


def same_family_pairs(resolved: dict[str, Any]) -> list[tuple[str, str, str, str]]:
    """(generator model, system id, system model, family) for every LLM screener of the generator's
    family (seed 000 §2.4)."""
    gen = resolved["candidates"]["endpoint"]["model"]
    fam = llm.model_family(gen)
    return [(gen, s["id"], s["endpoint"]["model"], fam) for s in resolved["systems"]
            if "endpoint" in s and llm.model_family(s["endpoint"]["model"]) == fam]


@design
class Llm(matrix.MatrixDesign):
    """LLM generation agents (seed 000 §3.1)."""

    id = "llm"
    order = 20
    provides = matrix.MatrixDesign.provides | {LLM_GENERATION}
    #: The generation agents call a model through litellm and tenacity (the llm extra), at execute only:
    #: resolution needs neither (checked by :func:`compiler.extras.extra_issues`).
    requires = Requires(extra="llm", what="llm generator", execute=LLM_MODULES)

    def advisories(self, ls: LoadedSpec) -> list[Issue]:
        """A screener from the generator's model family may prefer its own writing (seed 000 §2.4, §3.3)."""
        c, out = ls.spec.candidates, []
        fam = llm.model_family(c.model)
        for i, system in enumerate(ls.spec.systems):
            model = hook_for(system.kind).llm_model(system)
            if model is not None and llm.model_family(model) == fam:
                out.append(ls.issue(("systems", i, "model"), llm.MSG_SAME_FAMILY.format(
                    gen=c.model, system=system.id, model=model, family=fam)))
        return out

    def resolve_candidates(self, ls: LoadedSpec) -> dict[str, Any]:
        """The endpoint, the agents and every stage's template text (locked with the spec)."""
        c = ls.spec.candidates
        return {"generator": "llm", "base_per_job": c.base_per_job, "matching_per_job": c.matching_per_job,
                "endpoint": llm.endpoint(c), "agents": c.agents.model_dump(),
                "templates": {stage: llm.template_text(name) for stage, name in llm.GENERATOR_TEMPLATES.items()}}

    def estimate(self, resolved: dict[str, Any], est: llm.Estimate) -> None:
        """Calls and tokens of every generation stage (the ``regenerate`` negative controls' calls included,
        issue 38); the screeners' prompts are then counted with a resume as long as the generator writes (its
        JSON schema's budget per resume)."""
        cand, jobs = resolved["candidates"], resolved["jobs"]
        n_var = len(resolved["variants"]["table"])
        k = cand.get("base_per_job", 0) or 0
        ep = cand["endpoint"]
        # generated resumes are as long as the JSON schema lets them be (runtime.generate.llm)
        est.resume = resume = "x " * max(60, ep["max_tokens"] * 2 // max(k, 1) // 2)
        t = cand["templates"]
        n_jobs = len(jobs)
        if cand["agents"]["descriptor"]:
            est.add("generate: stage 0 descriptor", ep, n_jobs, t["descriptor"] + "v " * 40 * n_var, 60 * n_var)
        est.add("generate: phase A base resumes", ep, n_jobs,
                est.render(t["phase_a"], job_title="job", job_description=est.job_text, k=k,
                           m=cand["matching_per_job"]), ep["max_tokens"])
        est.add("generate: phase B variants", ep, n_jobs * k, t["phase_b"] + resume + "v " * 30 * n_var,
                ep["max_tokens"])
        # issue 38: each regenerate control writes every base candidate's reference résumé again (one call each)
        n_again = n_jobs * k * sum(1 for c in resolved["variants"].get("negative_controls") or []
                                   if c.get("perturbation") == "regenerate")
        if n_again:
            est.add("generate: regenerate (negative controls)", ep, n_again, t["phase_b"] + resume + "v " * 30,
                    ep["max_tokens"])
        n_res = n_jobs * k * n_var
        if cand["agents"]["translate_to"]:
            est.add("generate: stage 2 translation", ep, n_res + n_again, t["translate"] + resume, ep["max_tokens"])
        if cand["agents"]["flagging"]:
            est.add("generate: stage 3 flagging", ep, n_res, t["flagging"] + resume,
                    min(ep["max_tokens"], llm.FLAGGING_MAX_TOKENS))
        if cand["agents"]["classifier"]:
            est.add("generate: axis classifier", {**ep, "temperature": 0}, n_res, t["classifier"] + resume, 60)
