"""The LLM generator: correspondence-audit resumes written by LLM agents (seed 000 §3.1, Algorithm 1).

Stages, each through :class:`runtime.llm.client.LlmClient` (cache, retries, concurrency):

0. optional **descriptor agent** (§3.1.1): one call per job turns each variant's axis levels into a
   writing instruction; without it (or where its answer lacks a variant) the instruction is built
   from the levels and the spec's first cue option.
1. **Phase A** (§3.1.2): one call per job asks for exactly K identity-neutral base resumes, M of them
   clearly matching, as one JSON array of ``{match, full_resume_text}``.
   **Phase B**: one call per base resume injects every variant (reference included) and returns
   one JSON array of ``{candidate_type, full_resume_text}``.
   After every agent call, a clarifying question (:func:`runtime.llm.parsing.is_clarifying_question`)
   gets one scripted follow-up turn confirming the legitimate audit use; arrays are read by
   :func:`runtime.llm.parsing.extract_array` (JSON, then a header-based split). A call whose answer
   still lacks items is asked again (new attempt number) up to ``MAX_ATTEMPTS`` times; then the
   run stops with a clear error: a short matrix is never padded.
   **Regenerate** (issue 38, negative control ``regenerate``): one more Phase B call per base resume and
   control, for the reference variant alone, seeded by (job, cv_id, control id): the reference résumé
   written again, a placebo variant of it (``control_resumes.csv``).
2. optional **translation** (§3.1.3), one call per resume (regenerated ones included).
3. optional **flagging agent** (§3.1.4), one call per resume; its text goes into the audit trail.
4. **axis classifier** (§3.2): temperature 0, one JSON object per resume with one value per axis;
   a missing or unknown value becomes the axis's safe default (its reference level) and is counted.
   Comparing the classified levels with the intended ones gives the manipulation check.

Every answer (raw text included) goes into ``generation_trail.json``; the manipulation check into
``manipulation_check.csv``. The spec's seed fixes every request's ``seed`` parameter.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any, NamedTuple

import pandas as pd

from compiler.errors import AuditError
from compiler.llm import FLAGGING_MAX_TOKENS
from runtime.generate.matrix import MATRIX_COLUMNS

#: Tries per agent call whose answer lacks items (a new attempt number each time).
MAX_ATTEMPTS = 3
#: Characters per output token assumed when capping resume length in the JSON schema (low on
#: purpose: a weak model's odd strings take more tokens, and a cut-off answer is not JSON).
CHARS_PER_TOKEN = 2

MSG_SHORT = ("LLM generator, job {job!r}: {stage} returned {got} of {want} {what} after {n} attempts "
             "(raw answers in generation_trail.json); raise candidates.max_tokens or lower K")

MANIPULATION_COLUMNS = ("job_id", "variant", "axis", "intended", "n", "classified_as_intended",
                        "rate", "defaulted")


class GenerationError(AuditError):
    """The generator's answers do not hold the requested resumes (exit 2: fix the spec's sizes)."""

    exit_code = 2


def _env():
    from jinja2 import Environment, StrictUndefined

    return Environment(undefined=StrictUndefined, keep_trailing_newline=False)


def resumes_schema(n: int, max_chars: int, *, key: str, item: dict[str, Any]) -> dict[str, Any]:
    """JSON schema ``{key: [n items]}``; a top-level object, as strict structured output needs."""
    props = {**item, "full_resume_text": {"type": "string", "minLength": 40, "maxLength": max_chars}}
    return {"type": "object", "properties": {key: {
        "type": "array", "minItems": n, "maxItems": n,
        "items": {"type": "object", "properties": props, "required": list(props),
                  "additionalProperties": False}}},
        "required": [key], "additionalProperties": False}


def default_descriptor(levels: dict[str, str], cues: dict[str, dict[str, list[str]]]) -> str:
    """A writing instruction from a variant's levels, with the spec's first cue option as example."""
    parts = []
    for axis, level in levels.items():
        opts = [c for c in cues[axis].get(level, []) if c]
        parts.append(f"{axis} = {level}" + (f' (for example: "{opts[0]}")' if opts else " (no signal)"))
    return "; ".join(parts)


class _Agents:
    """Runs the agent stages for every job; keeps the audit trail."""

    def __init__(self, compiled, client, progress, trail: dict[str, Any]):
        self.r = compiled.resolved
        self.c = self.r["candidates"]
        self.t = self.c["templates"]
        self.client = client
        self.progress = progress
        self.trail = trail
        self.seed = self.r["seed"]
        self.env = _env()

    def _seed(self, *labels) -> int:
        from runtime.seeding import derive_seed

        return derive_seed(self.seed, "llm-generator", *labels) % (2**31)

    async def ask(self, stage: str, prompt: str, labels: tuple, *, attempt: int = 0,
                  schema: dict[str, Any] | None = None, temperature: float | None = None,
                  max_tokens: int | None = None) -> dict[str, Any]:
        """One agent turn, plus the scripted follow-up when the agent asked a question instead."""
        from runtime.llm.parsing import is_clarifying_question

        messages = [{"role": "user", "content": prompt}]
        seed = self._seed(stage, *labels, attempt)
        text, cached = await self.client.complete(messages, attempt=attempt, seed=seed, schema=schema,
                                                  temperature=temperature, max_tokens=max_tokens)
        record = {"stage": stage, "labels": list(labels), "attempt": attempt, "cached": cached,
                  "raw_text": text, "followup": False}
        if is_clarifying_question(text):
            follow = self.env.from_string(self.t["followup"]).render()
            messages = messages + [{"role": "assistant", "content": text},
                                   {"role": "user", "content": follow}]
            text, cached = await self.client.complete(messages, attempt=attempt, seed=seed, schema=schema,
                                                      temperature=temperature, max_tokens=max_tokens)
            record.update({"followup": True, "question": record["raw_text"], "raw_text": text})
        self.trail["calls"].append(record)
        return record

    async def descriptors(self, job: dict[str, Any]) -> dict[str, dict[str, str]]:
        """variant -> {descriptor, source}: stage 0 where enabled, else built from the levels."""
        from runtime.llm.parsing import parse_object

        table = self.r["variants"]["table"]
        cues = {a: v["cues"] for a, v in self.r["axes"].items()}
        out = {v: {"descriptor": default_descriptor(lv, cues), "source": "spec levels and cues"}
               for v, lv in table.items()}
        if not self.c["agents"]["descriptor"]:
            return out
        prompt = self.env.from_string(self.t["descriptor"]).render(
            job_title=job["title"], variants=[{"id": v, "levels": lv} for v, lv in table.items()])
        schema = {"type": "object", "properties": {v: {"type": "string", "minLength": 10, "maxLength": 300}
                                                   for v in table},
                  "required": list(table), "additionalProperties": False}
        rec = await self.ask("descriptor", prompt, (job["id"],), schema=schema)
        obj = parse_object(rec["raw_text"]) or {}
        for v in table:
            if isinstance(obj.get(v), str) and obj[v].strip():
                # the agent's words, anchored by the intended levels so the injection stays on target
                out[v] = {"descriptor": f"{obj[v].strip()} [{out[v]['descriptor']}]", "source": "descriptor agent"}
        return out

    async def phase_a(self, job: dict[str, Any], description: str) -> list[dict[str, Any]]:
        from runtime.llm.parsing import extract_array

        k, m = self.c["base_per_job"], self.c["matching_per_job"]
        budget = self.c["endpoint"]["max_tokens"]
        max_chars = max(120, budget * CHARS_PER_TOKEN // k - 60)
        schema = resumes_schema(k, max_chars, key="resumes",
                                item={"match": {"type": "integer", "enum": [0, 1]}})
        prompt = self.env.from_string(self.t["phase_a"]).render(job_title=job["title"],
                                                                job_description=description, k=k, m=m)
        best: list[dict[str, Any]] = []
        for attempt in range(MAX_ATTEMPTS):
            rec = await self.ask("phase_a", prompt, (job["id"],), attempt=attempt, schema=schema)
            items, method = extract_array(rec["raw_text"])
            items = [it for it in items if isinstance(it, dict) and str(it.get("full_resume_text", "")).strip()]
            rec["method"], rec["items"] = method, len(items)
            if len(items) > len(best):
                best = items
            if len(items) >= k:
                break
        if len(best) < k:
            raise GenerationError(MSG_SHORT.format(job=job["id"], stage="phase A", got=len(best), want=k,
                                                   what="base resumes", n=MAX_ATTEMPTS))
        out = []
        for i, it in enumerate(best[:k]):
            flag = it.get("match")
            source = "agent"
            if flag not in (0, 1, "0", "1", True, False):
                flag, source = (1 if i < m else 0), "position (agent gave no 0/1 flag)"
            out.append({"text": str(it["full_resume_text"]).strip(), "match": int(flag), "match_source": source})
        n_match = sum(o["match"] for o in out)
        self.trail["jobs"][job["id"]]["phase_a"] = {"requested_matching": m, "labelled_matching": n_match,
                                                    "match_flags": [o["match_source"] for o in out]}
        return out

    async def phase_b(self, job: dict[str, Any], cv_id: str, base: str,
                      descriptors: dict[str, dict[str, str]], *, only: list[str] | None = None,
                      stage: str = "phase_b", labels: tuple | None = None) -> dict[str, str]:
        """variant -> text of one base candidate (Phase B). ``only`` asks for these variants alone (each
        résumé keeps the length budget of the full table's call, so it is as long as the others); ``stage``
        and ``labels`` name the call in the trail and derive its seed (default ``phase_b``, (job, cv_id))."""
        from runtime.llm.parsing import extract_array

        full = list(self.r["variants"]["table"])
        table = full if only is None else list(only)
        budget = self.c["endpoint"]["max_tokens"]
        max_chars = max(160, budget * CHARS_PER_TOKEN // len(full) - 60)
        schema = resumes_schema(len(table), max_chars, key="variants",
                                item={"candidate_type": {"type": "string", "enum": table}})
        if self.c["endpoint"]["response_format"] == "json_object_schema":
            # grammar-constrained servers: one item per variant, in table order (prefixItems + const),
            # so a weak model cannot repeat or skip a variant
            arr = schema["properties"]["variants"]
            item = arr.pop("items")
            arr["prefixItems"] = [{**item, "properties": {**item["properties"], "candidate_type": {"const": v}}}
                                  for v in table]
        prompt = self.env.from_string(self.t["phase_b"]).render(
            job_title=job["title"], resume=base,
            variants=[{"id": v, "descriptor": descriptors[v]["descriptor"]} for v in table])
        best: dict[str, str] = {}
        for attempt in range(MAX_ATTEMPTS):
            rec = await self.ask(stage, prompt, labels or (job["id"], cv_id), attempt=attempt, schema=schema)
            items, method = extract_array(rec["raw_text"])
            got = _match_variants(items, table)
            rec["method"], rec["items"] = method, len(got)
            if len(got) > len(best):
                best = got
            if len(got) == len(table):
                break
        if len(best) < len(table):
            where = f"phase B ({cv_id})" if stage == "phase_b" else f"{stage} ({', '.join(map(str, labels or ()))})"
            raise GenerationError(MSG_SHORT.format(job=job["id"], stage=where, got=len(best),
                                                   want=len(table), what="variants", n=MAX_ATTEMPTS))
        return best

    async def regenerate(self, job: dict[str, Any], cv_id: str, base: str,
                         descriptors: dict[str, dict[str, str]], control_id: str) -> str:
        """The reference résumé of base candidate ``cv_id`` written again: the negative control
        ``regenerate`` (issue 38 §1; a placebo variant, the complement of seed 003's positive control).

        A Phase B call of its own for the reference variant alone, on the same Phase A base résumé and the
        same descriptor, with the length budget of the full call; its trail stage is ``regenerate`` and its
        labels ``(job_id, cv_id, control_id)``, so its seed (:func:`runtime.seeding.derive_seed` of the spec's
        seed and these labels) and its cache entry are its own: a warm re-run reads it from the task store and
        the same seed asks the same request. What separates it from the reference résumé is the generator's
        own variability between two writings of the same résumé, nothing that signals a protected
        characteristic.

        Raises
        ------
        GenerationError
            The answers kept lacking the reference variant (``MAX_ATTEMPTS`` tries).
        """
        ref = self.r["variants"]["reference"]
        got = await self.phase_b(job, cv_id, base, descriptors, only=[ref], stage="regenerate",
                                 labels=(job["id"], cv_id, control_id))
        return got[ref]

    async def per_resume(self, stage: str, prompt: str, labels: tuple, **kw) -> str:
        rec = await self.ask(stage, prompt, labels, **kw)
        return rec["raw_text"]

    async def classify(self, text: str, labels: tuple) -> tuple[dict[str, str], list[str]]:
        """Axis levels read from a resume (temperature 0) and the axes that fell back to the default."""
        from runtime.llm.parsing import parse_object

        axes = {a: {"levels": v["levels"], "default": v["reference"]} for a, v in self.r["axes"].items()}
        schema = {"type": "object", "properties": {a: {"type": "string", "enum": v["levels"]}
                                                   for a, v in axes.items()},
                  "required": list(axes), "additionalProperties": False}
        prompt = self.env.from_string(self.t["classifier"]).render(axes=axes, resume=text)
        rec = await self.ask("classifier", prompt, labels, schema=schema, temperature=0.0,
                             max_tokens=min(256, 24 * len(axes) + 40))
        obj = parse_object(rec["raw_text"]) or {}
        out, defaulted = {}, []
        for a, v in axes.items():
            val = obj.get(a)
            if isinstance(val, str) and val in v["levels"]:
                out[a] = val
            else:
                out[a] = v["default"]
                defaulted.append(a)
        return out, defaulted


def _match_variants(items: list[Any], table: list[str]) -> dict[str, str]:
    """variant -> text from Phase B items: by ``candidate_type`` (or a header naming the variant);
    by position only when the answer has exactly one item per variant and none is labelled."""
    got: dict[str, str] = {}
    unlabelled = []
    for it in items:
        if not isinstance(it, dict):
            continue
        text = str(it.get("full_resume_text", "")).strip()
        label = str(it.get("candidate_type") or it.get("header") or "")
        hit = next((v for v in table if v == label.strip() or v in label.split()), None)
        if text and hit and hit not in got:
            got[hit] = text
        elif text:
            unlabelled.append(text)
    if not got and len(unlabelled) == len(table):
        got = dict(zip(table, unlabelled))
    return got


#: Columns of the regenerated reference résumés (:class:`LlmMatrix`): ``variant`` is the control's id.
REGENERATED_COLUMNS: tuple[str, ...] = ("job_id", "cv_id", "variant", "text")


class LlmMatrix(NamedTuple):
    """What the LLM generator writes: the matrix and the regenerated reference résumés."""

    #: :data:`runtime.generate.matrix.MATRIX_COLUMNS` plus one column per axis (the intended level), one row
    #: per résumé, sorted by job, cv_id, variant.
    candidates: pd.DataFrame
    #: :data:`REGENERATED_COLUMNS`, one row per base candidate and ``regenerate`` negative control (issue 38),
    #: sorted by job, cv_id, control id; empty without such controls.
    regenerated: pd.DataFrame


def generate_llm_matrix(compiled, progress, *, folder=None, jobs: dict[str, str | None], store=None,
                        refs: list[str] | None = None) -> pd.DataFrame:
    """The K x (1+N) matrix of every job written by LLM agents (:func:`generate_llm_design`'s
    ``candidates``, without negative controls)."""
    return generate_llm_design(compiled, progress, folder=folder, jobs=jobs, store=store, refs=refs).candidates


def generate_llm_design(compiled, progress, *, folder=None, jobs: dict[str, str | None], store=None,
                        refs: list[str] | None = None, regenerate: Sequence[str] = ()) -> LlmMatrix:
    """The K x (1+N) matrix of every job written by LLM agents (see the module docstring) and, for each
    control id in ``regenerate``, every base candidate's reference résumé written again
    (:meth:`_Agents.regenerate`; translated as the matrix is when ``agents.translate_to`` is set, neither
    flagged nor classified: it is no variant). Every call goes through one client, so the run's
    ``generator_info.llm_calls`` and ``generation_trail.json`` (stage ``regenerate``) count them.

    Returns
    -------
    LlmMatrix
        ``candidates``: :data:`runtime.generate.matrix.MATRIX_COLUMNS` plus one column per axis (the intended
        level), one row per resume, sorted by job, cv_id, variant; ``regenerated``: :data:`REGENERATED_COLUMNS`.

    Raises
    ------
    GenerationError
        An agent kept returning fewer resumes or variants than requested.
    runtime.llm.client.LlmUnavailable
        The model server kept failing (every answer received is in the cache).
    """
    from runtime.llm import endpoint_for, response_cache
    from runtime.llm.client import CallCounters, LlmClient
    from runtime.store import DEFAULT_STORE, TaskStore

    r = compiled.resolved
    c = r["candidates"]
    table = r["variants"]["table"]
    counters = CallCounters()
    run = folder.run if folder is not None else {}
    gen_info = run.setdefault("generator_info", {}) if folder is not None else {}
    gen_info.update({"generator": "llm", "model": c["endpoint"]["model"],
                     "api_key_env": c["endpoint"]["api_key_env"], "llm_calls": counters.__dict__})
    trail: dict[str, Any] = {"schema_version": "1.0", "kind": "generation-trail",
                             "model": c["endpoint"]["model"], "jobs": {j["id"]: {} for j in r["jobs"]},
                             "calls": []}
    store = store if store is not None else TaskStore(compiled.loaded.folder / DEFAULT_STORE)
    cache = response_cache(compiled.loaded.spec.execution, compiled.loaded.folder, store, refs=refs)
    client = LlmClient(endpoint_for(compiled.loaded.spec.execution, c["endpoint"], "the LLM generator", concurrency_key="generator"),
                       cache, counters)
    agents = _Agents(compiled, client, progress, trail)
    rows: list[dict[str, Any]] = []
    regen_rows: list[dict[str, Any]] = []
    manip_rows: list[dict[str, Any]] = []

    async def run_all() -> None:
        descs = await asyncio.gather(*[agents.descriptors(j) for j in r["jobs"]])
        for j, d in zip(r["jobs"], descs):
            trail["jobs"][j["id"]]["descriptors"] = d
        adv = progress.task("LLM generator: phase A", len(r["jobs"]))

        async def a(job):
            out = await agents.phase_a(job, jobs.get(job["id"]) or job["title"])
            adv(1)
            return out

        bases = await asyncio.gather(*[a(j) for j in r["jobs"]])
        todo = [(job, f"{job['id']}-cv{i + 1:03d}", b, d) for job, bs, d in zip(r["jobs"], bases, descs)
                for i, b in enumerate(bs)]
        adv = progress.task("LLM generator: phase B", len(todo))

        async def b(job, cv, base, d):
            out = await agents.phase_b(job, cv, base["text"], d)
            adv(1)
            return out

        variants = await asyncio.gather(*[b(*t) for t in todo])
        for (job, cv, base, _), texts in zip(todo, variants):
            for v in table:
                rows.append({"job_id": job["id"], "cv_id": cv, "variant": v, "is_true_match": base["match"],
                             "text": texts[v], "base_text": base["text"]})
        if regenerate:  # issue 38: the reference résumé written again, one call per base candidate and control
            again = [(job, cv, base, d, cid) for job, cv, base, d in todo for cid in regenerate]
            adv = progress.task("LLM generator: regenerate (negative controls)", len(again))

            async def g(job, cv, base, d, cid):
                out = await agents.regenerate(job, cv, base["text"], d, cid)
                adv(1)
                return out

            texts = await asyncio.gather(*[g(*t) for t in again])
            regen_rows.extend({"job_id": job["id"], "cv_id": cv, "variant": cid, "text": text}
                              for (job, cv, _, _, cid), text in zip(again, texts))
        env = _env()
        ag = c["agents"]
        if ag["translate_to"]:
            adv = progress.task("LLM generator: translation", len(rows) + len(regen_rows))

            async def tr(row):
                row["text"] = (await agents.per_resume("translate", env.from_string(c["templates"]["translate"]).render(
                    language=ag["translate_to"], resume=row["text"]), (row["job_id"], row["cv_id"], row["variant"]),
                    schema=None)).strip() or row["text"]
                adv(1)

            await asyncio.gather(*[tr(x) for x in [*rows, *regen_rows]])
        if ag["flagging"]:
            adv = progress.task("LLM generator: flagging", len(rows))

            async def fl(row):
                row["flag"] = await agents.per_resume("flagging", env.from_string(c["templates"]["flagging"]).render(
                    resume=row["text"]), (row["job_id"], row["cv_id"], row["variant"]), schema=None,
                    max_tokens=min(c["endpoint"]["max_tokens"], FLAGGING_MAX_TOKENS))
                adv(1)

            await asyncio.gather(*[fl(x) for x in rows])
        if ag["classifier"]:
            adv = progress.task("LLM generator: axis classifier", len(rows))

            async def cl(row):
                row["classified"], row["defaulted"] = await agents.classify(
                    row["text"], (row["job_id"], row["cv_id"], row["variant"]))
                adv(1)

            await asyncio.gather(*[cl(x) for x in rows])

    try:
        asyncio.run(run_all())
    finally:
        cache.close()
        # answers arrive in any order; the trail lists them in a fixed one
        trail["calls"].sort(key=lambda x: (x["stage"], [str(v) for v in x["labels"]], x["attempt"]))
        gen_info["llm_calls"] = counters.as_dict()
        if folder is not None:
            from compiler.lock import write_json

            write_json(folder.path / "generation_trail.json", trail)
            if "generation_trail.json" not in run["artifacts"]:
                run["artifacts"].append("generation_trail.json")
            folder.save()
    for row in rows:
        trail["jobs"][row["job_id"]].setdefault("resumes", []).append(
            {"cv_id": row["cv_id"], "variant": row["variant"], "flag": row.get("flag"),
             "classified": row.get("classified"), "defaulted": row.get("defaulted")})
    frame = pd.DataFrame([{k: row[k] for k in MATRIX_COLUMNS} for row in rows], columns=list(MATRIX_COLUMNS))
    for axis in r["axes"]:
        frame[axis] = frame["variant"].map({v: lv[axis] for v, lv in table.items()})
    frame = frame.sort_values(["job_id", "cv_id", "variant"], kind="mergesort").reset_index(drop=True)
    if c["agents"]["classifier"]:
        manip = manipulation_check(rows, table)
        gen_info["manipulation_check"] = manip.to_dict(orient="records")
        if folder is not None:
            folder.write_csv("manipulation_check.csv", manip)
    gen_info["flags"] = sum(1 for row in rows if row.get("flag"))
    gen_info["phase_a"] = {j: t.get("phase_a") for j, t in trail["jobs"].items()}
    gen_info["followups"] = sum(1 for x in trail["calls"] if x["followup"])
    regenerated = pd.DataFrame(regen_rows, columns=list(REGENERATED_COLUMNS)).sort_values(
        ["job_id", "cv_id", "variant"], kind="mergesort").reset_index(drop=True)
    if regenerate:
        gen_info["regenerated"] = int(len(regenerated))
    if folder is not None:
        from compiler.lock import write_json

        write_json(folder.path / "generation_trail.json", trail)
        folder.save()
    return LlmMatrix(frame, regenerated)


def manipulation_check(rows: list[dict[str, Any]], table: dict[str, dict[str, str]]) -> pd.DataFrame:
    """Per variant x axis: how many resumes the classifier read as the intended level.

    ``rate`` = classified_as_intended / n, in [0, 1], higher = the injection reads as intended;
    ``defaulted`` counts resumes where the classifier gave no valid value and the axis's safe
    default was used (seed 000 §3.2); a defaulted value counts as intended only when the default
    is the intended level, so a reference-level row can look better than it is: read it with
    ``defaulted``.
    """
    out = []
    frame = pd.DataFrame(rows)
    for v, levels in table.items():
        sub = frame[frame["variant"] == v]
        for axis, level in levels.items():
            got = [row[axis] for row in sub["classified"]]
            dft = sum(axis in d for d in sub["defaulted"])
            ok = sum(g == level for g in got)
            out.append({"job_id": "ALL", "variant": v, "axis": axis, "intended": level, "n": len(got),
                        "classified_as_intended": ok, "rate": ok / len(got) if got else float("nan"),
                        "defaulted": dft})
    return pd.DataFrame(out, columns=list(MANIPULATION_COLUMNS))


__all__ = ["generate_llm_design", "generate_llm_matrix", "LlmMatrix", "manipulation_check", "GenerationError",
           "REGENERATED_COLUMNS"]
