"""The LLM screeners ``llm_score`` and ``llm_compare`` (seed 001 §5.1, seed 003 §3.4-3.5): prompt
conditions, endpoint, replicates. Their spec models: :mod:`compiler.blocks.llm_score`,
:mod:`compiler.blocks.llm_compare`."""

from __future__ import annotations

from typing import Any

from jinja2 import Environment, TemplateSyntaxError

from compiler import llm
from compiler.blocks import llm_compare, llm_score
from compiler.errors import Issue
from compiler.files import FileProblem, read_regular_text
from compiler.hashing import digest
from compiler.load import LoadedSpec
from compiler.paths import resolve_inside
from compiler.spec import TEMPLATE_FAMILIES
from compiler.systems.base import FileRef, Requires, SystemKind, score_resolution, system_kind

MSG_REFERENCE_JOB = "references names job {job!r}, which is not a job of the spec; jobs: {jobs}"
MSG_REFERENCE_NEEDED = (
    "job {job!r} has no template family, so llm_compare cannot draw a default reference resume; "
    "give references.{job}: <file> (a fixed reference candidate, seed 003 §3.4)"
)
MSG_DUP_CONDITION = "condition {id!r} is listed twice"
MSG_BAD_TEMPLATE = "prompt template {path!r} does not parse as jinja2: {err}"


#: What an LLM screener or the llm generator imports to call a model (the llm extra).
LLM_MODULES = ("litellm", "tenacity")


class LlmScreener(SystemKind):
    """Shared hook of the LLM screeners (seed 001 §5.1, seed 003 §3.4-3.5): prompt conditions,
    endpoint, replicates. Fingerprint: the model string and server (a hosted model has no weights
    file to hash). Only the *name* of the API-key variable is resolved, never its value."""

    provides = frozenset({"answers"})

    def requires(self, system: Any) -> Requires:
        """litellm and tenacity to call the model; resolution needs neither (without litellm the
        compile-time token estimate counts characters, :func:`compiler.llm.count_tokens`)."""
        return Requires(extra="llm", what=f"{self.id} screener", execute=LLM_MODULES)

    def files(self, i: int, system: Any) -> list[FileRef]:
        return [(("systems", i, "conditions", j, "prompt_file"), cond.prompt_file, "text")
                for j, cond in enumerate(system.conditions) if not isinstance(cond, str)]

    def issues(self, ls: LoadedSpec, i: int, system: Any) -> list[Issue]:
        out = super().issues(ls, i, system)
        seen: set[str] = set()
        for j, cond in enumerate(system.conditions):
            cid = cond if isinstance(cond, str) else cond.id
            if cid in seen:
                out.append(ls.issue(("systems", i, "conditions", j), MSG_DUP_CONDITION.format(id=cid)))
            seen.add(cid)
            if not isinstance(cond, str):
                path, err = resolve_inside(ls.folder, cond.prompt_file)
                if err is None:
                    try:
                        Environment().parse(read_regular_text(path, shown=cond.prompt_file))
                    except (TemplateSyntaxError, UnicodeDecodeError, FileProblem) as exc:
                        out.append(ls.issue(("systems", i, "conditions", j, "prompt_file"),
                                            MSG_BAD_TEMPLATE.format(path=cond.prompt_file, err=exc)))
        return out

    def resolve(self, system: Any, ls: LoadedSpec) -> dict[str, Any]:
        return {
            "id": system.id, "kind": system.kind, "endpoint": llm.endpoint(system),
            "replicates": system.replicates, "max_invalid_retries": system.max_invalid_retries,
            "score_range": list(system.score_range), **score_resolution(system),
            "conditions": llm.condition_templates(system, ls.folder),
            "system_prompt": llm.template_text(f"system_{system.kind}.j2"),
            "output_instruction": llm.template_text(f"output_{system.kind}.j2"),
            # a hosted model has no weights file to hash: its identity is the model string (+ server)
            "fingerprint": digest({"model": system.model, "api_base": system.api_base}),
        }

    def llm_model(self, system: Any) -> str | None:
        return system.model

    def source(self, resolved: dict[str, Any]) -> str:
        """The model string, and the server when one is given."""
        ep = resolved["endpoint"]
        return ep["model"] + (f" at {ep['api_base']}" if ep["api_base"] else "")

    def reference_text(self, est: llm.Estimate) -> str:
        """The reference resume a prompt is counted with ("" when the prompt has none)."""
        return ""

    def estimate(self, resolved: dict[str, Any], resumes: int, est: llm.Estimate) -> None:
        """One stage per condition: every resume, ``replicates`` times."""
        ep = resolved["endpoint"]
        for cond in resolved["conditions"]:
            prompt = (resolved["system_prompt"] + est.render(
                cond["template"], job_title="job", job_description=est.job_text, resume=est.resume,
                reference=self.reference_text(est)) + resolved["output_instruction"])
            est.add(f"score: {resolved['id']} / {cond['id']}", ep, resumes * resolved["replicates"], prompt,
                    ep["max_tokens"])


@system_kind
class LlmScore(LlmScreener):
    """Absolute 0-100 suitability score of one resume against one job (seed 001 §5.1, Appendix D)."""

    id = "llm_score"
    model = llm_score.System


@system_kind
class LlmCompare(LlmScreener):
    """Reference-anchored 0-100 score: 50 = as suitable as a fixed reference (seed 003 §3.4)."""

    id = "llm_compare"
    model = llm_compare.System

    def files(self, i: int, system: Any) -> list[FileRef]:
        return super().files(i, system) + [(("systems", i, "references", job_id), ref, "text")
                                           for job_id, ref in system.references.items()]

    def issues(self, ls: LoadedSpec, i: int, system: Any) -> list[Issue]:
        out = super().issues(ls, i, system)
        job_ids = [j.id for j in ls.spec.jobs]
        families = {j.id: j.family or (j.id if j.id in TEMPLATE_FAMILIES else None) for j in ls.spec.jobs}
        for job_id in system.references:
            if job_id not in job_ids:
                out.append(ls.issue(("systems", i, "references", job_id), MSG_REFERENCE_JOB.format(
                    job=job_id, jobs=", ".join(job_ids)), key=True))
        for job_id in job_ids:
            if job_id not in system.references and families[job_id] is None:
                out.append(ls.issue(("systems", i), MSG_REFERENCE_NEEDED.format(job=job_id)))
        return out

    def resolve(self, system: Any, ls: LoadedSpec) -> dict[str, Any]:
        out = super().resolve(system, ls)
        refs = {}
        for job in ls.spec.jobs:
            if job.id in system.references:
                path, _ = resolve_inside(ls.folder, system.references[job.id])
                text = read_regular_text(path, shown=system.references[job.id])  # checked at validate
                refs[job.id] = {"source": system.references[job.id], "text": text,
                                "sha256": digest(text)["digest"]}
            else:
                refs[job.id] = {"source": "template generator (identity-neutral, matching)",
                                "text": None, "sha256": None}
        out["references"] = refs
        return out

    def reference_text(self, est: llm.Estimate) -> str:
        return est.resume
