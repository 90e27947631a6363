"""LLM screeners: ``llm_score`` (absolute 0-100) and ``llm_compare`` (reference-anchored, 50 = as
suitable as the reference).

Sources: seed 001 §5.1 and Appendix D (absolute suitability score from 0 to 100, JSON answer);
seed 003 §3.4 (a single fixed reference candidate per job, held invariant across every variant,
so that whatever the reference signals cancels from between-variant contrasts), §3.5 and
Appendix B (prompt framings, replicates). The condition texts are our own, in
``compiler/prompts/``; they are locked with the spec.

For every condition x resume x replicate the adapter sends one request (system message, the
condition's user message, the output instruction). An answer that yields no score in the
system's ``score_range`` is recorded with its raw text (``llm_responses.csv``) and asked again, up
to ``max_invalid_retries`` times, with a new attempt number (and seed) so the cache does not serve
the same invalid answer back. A cell with no valid answer after that is never defaulted: its base
candidate is left out of that condition's analysis (all its variants, so the pairs stay
paired) and the report lists it. Replicates are averaged per candidate before ranking.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from runtime.systems import system
from runtime.systems.base import ScoreRequest, SystemAdapter

#: Columns of ``llm_responses.csv`` (one row per answer, valid or not).
RESPONSE_COLUMNS = ("system", "condition", "job_id", "cv_id", "variant", "replicate", "attempt",
                    "cached", "valid", "score", "reason", "method", "raw_text", "reasoning_chars")


def _compile(template: str):
    from jinja2 import Environment, StrictUndefined

    return Environment(undefined=StrictUndefined, keep_trailing_newline=False).from_string(template)


def render_messages(resolved: dict[str, Any], condition: dict[str, Any], *, job_title: str,
                    job_description: str, resume: str, reference: str | None,
                    compiled=None) -> list[dict[str, str]]:
    """The chat messages of one request: system prompt, then the condition's text followed by the
    output instruction (the same for every condition, so every answer is parsed the same way).
    ``compiled`` is the condition's jinja2 template already compiled (optional, for speed)."""
    template = compiled or _compile(condition["template"])
    user = template.render(job_title=job_title, job_description=job_description, resume=resume,
                           reference=reference or "")
    return [{"role": "system", "content": resolved["system_prompt"].strip()},
            {"role": "user", "content": user.strip() + "\n\n" + resolved["output_instruction"].strip()}]


def default_reference(*, job_id: str, family: str, seed: int) -> str:
    """An identity-neutral matching resume of the template generator, drawn once per job from the
    spec's seed (stream ``"llm_compare-reference"``) and outside the audited pool."""
    from runtime.generate import base_text, generate_base_candidates
    from runtime.seeding import derive_seed

    cands = generate_base_candidates(job_id=f"{job_id}-reference", family=family, k=1, m=1,
                                     seed=derive_seed(seed, "llm_compare-reference", job_id) % (2**53))
    return base_text(cands[0])


@dataclass
class _Cell:
    condition: dict[str, Any]
    job_id: str
    cv_id: str
    variant: str
    replicate: int
    messages: list[dict[str, str]]


class LlmScreener(SystemAdapter):
    """Shared scoring loop of the two LLM systems (see the module docstring)."""

    storable = False

    def references(self, request: ScoreRequest) -> dict[str, str | None]:
        return {j: None for j in request.jobs}

    progress_label = "LLM batches"

    def setup(self, request: ScoreRequest) -> None:
        """Check the request, fix the job references (``llm_compare``) and the endpoint; the call counters of
        this process start at 0 and are shown live in ``request.info`` (``run.json`` keeps partial counts when
        a call fails).

        Raises
        ------
        ValueError
            No generated résumés, or no ``request.llm`` (a bug: the pipeline always passes the LLM knobs).
        """
        from runtime.llm.client import CallCounters, Endpoint

        super().setup(request)
        r = self.resolved
        if request.resumes is None:
            raise ValueError(f"the {self.kind} system needs generated resumes (candidates: in the spec)")
        settings = request.llm
        if settings is None:  # a bug: the pipeline always passes the LLM knobs
            raise ValueError(f"the {self.kind} system needs ScoreRequest.llm (cache, concurrency, retries)")
        self.refs = self.references(request)
        self.counters = CallCounters()
        info = request.info.setdefault(self.id, {})
        info["llm_calls"] = self.counters.__dict__  # live view: run.json sees partial counts on failure
        info.update({"model": r["endpoint"]["model"], "api_key_env": r["endpoint"]["api_key_env"],
                     "replicates": r["replicates"], "conditions": [c["id"] for c in r["conditions"]],
                     "requests_planned": len(request.resumes) * len(r["conditions"]) * r["replicates"],
                     "cache": str(settings.cache.path)})
        self.info = info
        self.endpoint = Endpoint.from_resolved(r["endpoint"], who=f"system {self.id!r}",
                                               concurrency=settings.concurrency_of(self.id),
                                               retries=settings.retries, timeout_s=settings.timeout_s)
        self.templates = {c["id"]: _compile(c["template"]) for c in r["conditions"]}

    def score_batch(self, batch) -> pd.DataFrame:
        """Every answer of one batch (:data:`RESPONSE_COLUMNS`, in arrival order): each condition x résumé x
        replicate asked, at most ``concurrency`` calls in flight, an invalid answer asked again with the next
        attempt number (and its seed, derived from the spec's seed and the cell's labels)."""
        from compiler.llm import score_schema
        from runtime.llm.client import LlmClient
        from runtime.seeding import derive_seed
        from runtime.systems.answers import parse_score

        r, request = self.resolved, self.request
        lo, hi = r["score_range"]
        titles = {j: m.title for j, m in request.job_info.items()}
        cells = []
        for cond in r["conditions"]:
            for row in batch.rows.itertuples(index=False):
                msgs = render_messages(r, cond, job_title=titles[row.job_id], job_description=batch.job_text or "",
                                       resume=row.text, reference=self.refs[row.job_id],
                                       compiled=self.templates[cond["id"]])
                for rep in range(r["replicates"]):
                    cells.append(_Cell(cond, row.job_id, row.cv_id, row.variant, rep, msgs))
        counters = self.counters
        client = LlmClient(self.endpoint, request.llm.cache, counters, on_call=None)
        schema = score_schema(lo, hi)
        refs = list(batch.plan_tasks)
        log: list[dict[str, Any]] = []
        self._partial = log  # kept by abort() when a call fails

        async def one(cell: _Cell) -> None:
            for attempt in range(r["max_invalid_retries"] + 1):
                s = derive_seed(batch.seed, "llm", self.id, cell.condition["id"], cell.job_id, cell.cv_id,
                                cell.variant, cell.replicate, attempt) % (2**31)
                text, cached, reasoning_chars = await client.answer(
                    cell.messages, replicate=cell.replicate, attempt=attempt, seed=s, schema=schema, refs=refs)
                p = parse_score(text, lo=lo, hi=hi)
                log.append({"system": self.id, "condition": cell.condition["id"], "job_id": cell.job_id,
                            "cv_id": cell.cv_id, "variant": cell.variant, "replicate": cell.replicate,
                            "attempt": attempt, "cached": cached, "valid": p.valid, "score": p.score,
                            "reason": p.reason, "method": p.method, "raw_text": text,
                            "reasoning_chars": reasoning_chars})
                if p.valid:
                    break
                counters.invalid += 1

        async def run_all() -> None:
            tasks = [asyncio.ensure_future(one(c)) for c in cells]
            try:
                await asyncio.gather(*tasks)
            finally:
                for t in tasks:
                    t.cancel()

        asyncio.run(run_all())
        self._partial = []
        return pd.DataFrame(log, columns=list(RESPONSE_COLUMNS))

    def _responses(self, frames: list[pd.DataFrame]) -> pd.DataFrame:
        """``llm_responses_<id>.csv``: every answer, sorted by condition, job, cv, variant, replicate, attempt;
        put in the run's artifacts."""
        self.request.llm.cache.close()
        self.info["llm_calls"] = self.counters.as_dict()
        # one frame from every batch's records, as if logged in one list (a batch's column types, e.g. a score
        # column of None only, never leak into the whole)
        records = [rec for f in frames for rec in f.to_dict("records")]
        responses = pd.DataFrame(records, columns=list(RESPONSE_COLUMNS)).sort_values(["condition", "job_id", "cv_id", "variant", "replicate", "attempt"],
                                          kind="mergesort").reset_index(drop=True)
        self.request.artifacts[f"llm_responses_{self.id}.csv"] = responses
        return responses

    def abort(self, results) -> None:
        """Every answer received is kept, also when a later call fails."""
        partial = [pd.DataFrame(getattr(self, "_partial", []), columns=list(RESPONSE_COLUMNS))]
        self._responses([r.frame for r in results] + partial)

    def finish(self, results) -> tuple[pd.DataFrame, dict[str, Any]]:
        """Replicates averaged per cell (:func:`aggregate`), the answers in ``llm_responses_<id>.csv``, the
        call counters and each condition's validity in the diagnostics."""
        r = self.resolved
        responses = self._responses([res.frame for res in results])
        scored, validity = aggregate(responses, self.request.resumes, system_id=self.id,
                                     conditions=[c["id"] for c in r["conditions"]], replicates=r["replicates"])
        self.info["validity"] = validity
        return scored, self.info


def aggregate(responses: pd.DataFrame, resumes: pd.DataFrame, *, system_id: str, conditions: list[str],
              replicates: int) -> tuple[pd.DataFrame, list[dict[str, Any]]]:
    """Average the valid replicates per candidate; drop base candidates with an unscored cell.

    Parameters
    ----------
    responses : pandas.DataFrame
        :data:`RESPONSE_COLUMNS`, one row per answer.
    resumes : pandas.DataFrame
        ``job_id, cv_id, variant, is_true_match`` per resume.

    Returns
    -------
    (pandas.DataFrame, list of dict)
        Scores ``condition, replicate, job_id, cv_id, variant, score, is_true_match`` with
        ``replicate = 0`` standing for the mean of the valid replicates, and one validity record
        per condition: answers, valid answers, ``valid_response_rate`` (valid / all answers, in
        [0, 1], higher is better), cells left without a valid answer, the base candidates excluded
        because of them, and the replicates behind each mean.
    """
    frames, validity = [], []
    keys = ["job_id", "cv_id", "variant"]
    for cond in conditions:
        sub = responses[responses["condition"] == cond]
        valid = sub[sub["valid"].astype(bool)]
        means = valid.groupby(keys, sort=True).agg(score=("score", "mean"), n_rep=("replicate", "nunique"))
        grid = resumes[keys + ["is_true_match"]].merge(means.reset_index(), on=keys, how="left")
        missing = grid[grid["score"].isna()]
        bad_bases = sorted(set(zip(missing["job_id"], missing["cv_id"])))
        keep = ~pd.Series(list(zip(grid["job_id"], grid["cv_id"]))).isin(bad_bases).to_numpy()
        kept = grid[keep]
        n = len(sub)
        validity.append({
            "system": system_id, "condition": cond, "answers": int(n), "valid": int(len(valid)),
            "invalid": int(n - len(valid)),
            "valid_response_rate": float(len(valid) / n) if n else float("nan"),
            "cells": int(len(grid)), "cells_without_valid_answer": int(len(missing)),
            "excluded_base_candidates": [f"{j}/{c}" for j, c in bad_bases],
            "replicates": int(replicates),
            "min_valid_replicates": int(kept["n_rep"].min()) if len(kept) else 0,
        })
        frames.append(pd.DataFrame({
            "condition": cond, "replicate": 0, "job_id": kept["job_id"].to_numpy(),
            "cv_id": kept["cv_id"].to_numpy(), "variant": kept["variant"].to_numpy(),
            "score": kept["score"].to_numpy(dtype=float),
            "is_true_match": kept["is_true_match"].to_numpy()}))
    return pd.concat(frames, ignore_index=True), validity


@system("llm_score")
class LlmScoreSystem(LlmScreener):
    """Absolute suitability from 0 (not suitable) to 100 (outstanding fit); higher = better match."""


@system("llm_compare")
class LlmCompareSystem(LlmScreener):
    """Reference-anchored suitability: 50 = as suitable as the job's fixed reference candidate."""

    def references(self, request: ScoreRequest) -> dict[str, str | None]:
        out = {}
        for job_id, ref in self.resolved["references"].items():
            if ref["text"] is not None:
                out[job_id] = ref["text"]
            else:
                out[job_id] = default_reference(job_id=job_id, family=request.job_info[job_id].family,
                                                seed=request.seed)
        request.info.setdefault(self.id, {})["references"] = {
            j: {"source": self.resolved["references"][j]["source"], "chars": len(t)} for j, t in out.items()}
        return out
