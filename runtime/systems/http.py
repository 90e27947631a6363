"""The ``http`` system: a vendor's scoring API as a system under test (issue 35 §2).

Each résumé is sent under an opaque id (:func:`runtime.blind.new_key`: one per résumé, drawn once and kept
in the task store under an id derived from the résumés and the system, so later runs send the same bodies;
sealed into the run as ``request_key_<system>.csv``). No cv_id, variant or axis level is ever sent. Items go
in the key's shuffled order, ``batch_size`` per request, a request never leaving one plan score batch
(one job); answers are matched by id and read with JMESPath (``response``) and
:func:`runtime.systems.answers.score_value`.

Calls: httpx, at most ``concurrency`` in flight, at most ``requests_per_s`` started per second
(``execution.systems.<id>``, not hashed). tenacity retries: a 429 waits its ``Retry-After`` (seconds or an
HTTP date; over :data:`MAX_RETRY_AFTER_S`: exit 7 naming it); 5xx, timeouts and lost connections back off
with jitter. Any other 4xx stops the run at once (exit 7, the body's first line, secrets scrubbed).

Each 2xx answer is stored on arrival (``http-<sha256>`` of url, body, header names, declared version and
attempt: no header value, no code digest), so a re-run and ``--resume`` resend nothing answered; the
kill point ``request:<system id>`` follows each stored answer. An item without a valid score (body not
JSON, id missing, unknown or duplicated, not a number, another scale) is sent again up to
``max_invalid_retries`` times; a base candidate still unscored is excluded with all its variants and listed.
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import os
import sys
import time
from dataclasses import asdict, dataclass
from typing import Any

import pandas as pd

from compiler.errors import AuditError
from runtime.systems import system
from runtime.systems.base import ScoreRequest
from runtime.systems.requests import ANSWER_COLUMNS, Item, RequestAdapter

#: The store entries' kind of an answer (and its id prefix): ``http-<sha256>``.
KIND = "http"
#: The store id prefix of a system's request key (:func:`runtime.systems.requests.request_key_id`).
KEY_PREFIX = "http-key-"
#: The longest ``Retry-After`` waited for, seconds.
MAX_RETRY_AFTER_S = 300.0
#: Settings of ``execution.systems.<id>`` when the spec gives none.
DEFAULT_SETTINGS = {"concurrency": 4, "requests_per_s": None, "timeout_s": 60.0, "retries": 6}

MSG_ENV_UNSET = ("system {system!r} (http): environment variable {name} (named by headers_from_env.{header}) is "
                 "not set; export it before running (its value is written nowhere)")
MSG_REFUSED = "system {system!r} (http): POST {url} answered {status}: {line}"
MSG_SPENT = ("system {system!r} (http): POST {url} failed after {n} attempt(s): {err}. Every answer received so "
             "far is in the task store {store}; re-run `audit execute` (or --resume) to continue from there")
MSG_RETRY_AFTER = ("system {system!r} (http): POST {url} answered 429 with Retry-After {value!r} ({seconds:g} s), "
                   "more than {max:g} s; try again later (every answer received so far is kept)")
MSG_VERSIONS = "warning: system {system!r} (http): {n} versions observed in one run: {versions}"

REASON_NOT_JSON = "body is not JSON"
REASON_NOT_LIST = "response.items {path!r} is not a list in the body"
REASON_NO_ANSWER = "no answer for this id"
REASON_DUPLICATE = "id answered more than once"
REASON_COUNT = "{n} answers for one item (response.id is not given)"


class HttpUnavailable(AuditError):
    """The vendor's API refused a request (a 4xx other than 429) or kept failing (retries spent): exit 7,
    neither a bug nor a finding. Every answer received is in the task store; a re-run continues."""

    exit_code = 7


class HttpEnvUnset(AuditError):
    """A variable named by ``headers_from_env`` is not set: a set-up error (exit 2), before any request."""

    exit_code = 2


@dataclass
class RequestCounters:
    """``run.json`` ``systems_info.<id>.requests``: POSTs ``made`` (every attempt), answers ``from_cache``,
    ``retries``, ``rate_limited`` (429), ``server_errors`` (5xx), ``timeouts``, ``waited_s`` (seconds of
    backoff and Retry-After waited, as recorded, not wall time) and ``invalid`` item answers."""

    made: int = 0
    from_cache: int = 0
    retries: int = 0
    rate_limited: int = 0
    server_errors: int = 0
    timeouts: int = 0
    waited_s: float = 0.0
    invalid: int = 0


class _Transient(Exception):
    """A failure worth retrying (429, 5xx, timeout, lost connection); ``retry_after`` in seconds or None."""

    def __init__(self, what: str, retry_after: float | None = None):
        super().__init__(what)
        self.retry_after = retry_after


def retry_after_seconds(value: str | None, *, now: float | None = None) -> float | None:
    """Seconds of a ``Retry-After`` header (delta-seconds or an HTTP date), or None when absent or unreadable."""
    if value is None:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when is None:
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


def render(template: Any, values: dict[str, Any]) -> Any:
    """A JSON template with every whole-string placeholder replaced by its value."""
    if isinstance(template, str):
        return values[template] if template in values else template
    if isinstance(template, dict):
        return {k: render(v, values) for k, v in template.items()}
    if isinstance(template, list):
        return [render(v, values) for v in template]
    return template


def read_answer(text: str, items: list[Item], response: dict[str, Any], *, lo: float, hi: float):
    """Every item's reading of one answer body.

    Returns
    -------
    (dict, object)
        ``rid -> (ScoreParse, raw text of its answer)`` for every item, and the body's version (None
        without ``response.version``, or when the body is not JSON).
    """
    import jmespath

    from runtime.systems.answers import ScoreParse, score_value

    def invalid(reason: str) -> ScoreParse:
        return ScoreParse(False, None, reason, "http")

    try:
        doc = json.loads(text)
    except ValueError:
        return {it.rid: (invalid(REASON_NOT_JSON), text[:2000]) for it in items}, None
    version = jmespath.search(response["version"], doc) if response.get("version") else None
    if response.get("items"):
        answers = jmespath.search(response["items"], doc)
        if not isinstance(answers, list):
            reason = REASON_NOT_LIST.format(path=response["items"])
            return {it.rid: (invalid(reason), text[:2000]) for it in items}, version
    else:
        answers = [doc]
    out = {}
    if response.get("id"):
        by_id: dict[str, Any] = {}
        twice: set[str] = set()
        for a in answers:
            aid = jmespath.search(response["id"], a) if isinstance(a, (dict, list)) else None
            if aid is None:
                continue
            key = str(aid)
            if key in by_id:
                twice.add(key)
            by_id[key] = a
        for it in items:
            if it.rid in twice:
                out[it.rid] = (invalid(REASON_DUPLICATE), text[:2000])
            elif it.rid not in by_id:
                out[it.rid] = (invalid(REASON_NO_ANSWER), text[:2000])
            else:
                a = by_id[it.rid]
                out[it.rid] = (score_value(jmespath.search(response["score"], a), lo=lo, hi=hi),
                               json.dumps(a, ensure_ascii=False, sort_keys=True))
        return out, version
    for it in items:  # batch_size 1 without ids: the one answer is the item's
        if len(answers) != 1:
            out[it.rid] = (invalid(REASON_COUNT.format(n=len(answers))), text[:2000])
        else:
            a = answers[0]
            value = jmespath.search(response["score"], a) if isinstance(a, (dict, list)) else a
            out[it.rid] = (score_value(value, lo=lo, hi=hi), json.dumps(a, ensure_ascii=False, sort_keys=True))
    return out, version


@system("http")
class HttpSystem(RequestAdapter):
    """POSTs every résumé under an opaque id to the vendor's API and reads its scores (module docstring)."""

    progress_label = "HTTP batches"

    def setup(self, request: ScoreRequest) -> None:
        """The request key, the headers (secrets from the environment), the settings and the caller.

        Raises
        ------
        HttpEnvUnset
            A variable of ``headers_from_env`` is not set (exit 2, before any request).
        """
        super().setup(request)
        r = self.resolved
        secrets: list[str] = []
        headers = dict(r["headers"])
        for header, var in r["headers_from_env"].items():
            value = os.environ.get(var)
            if not value:
                raise HttpEnvUnset(MSG_ENV_UNSET.format(system=self.id, name=var, header=header))
            headers[header] = value
            secrets.append(value)
        headers.setdefault("Content-Type", "application/json")
        settings = {**DEFAULT_SETTINGS, **(request.system_settings.get(self.id) or {})}
        self.settings = settings
        self.counters = RequestCounters()
        self.observed: dict[str, dict[str, int]] = {}
        info = self.info
        info.update({"url": r["url"], "version": r["version"], "batch_size": r["batch_size"],
                     "items": int(len(request.resumes)), "settings": {k: settings[k] for k in DEFAULT_SETTINGS}})
        info["requests"] = self.counters.__dict__  # live: run.json keeps partial counts when a request fails
        info["observed_versions"] = self.observed
        self.caller = _Caller(self.id, r, headers, secrets, settings, self.counters, request.store)

    def score_batch(self, batch) -> pd.DataFrame:
        """Every answer of one plan batch (:data:`runtime.systems.requests.ANSWER_COLUMNS`): its items in the
        key's order, ``batch_size`` per POST, at most ``concurrency`` in flight; the items without a valid score
        sent again (next attempt) up to ``max_invalid_retries`` times.

        Raises
        ------
        HttpUnavailable
            A 4xx other than 429, a Retry-After over :data:`MAX_RETRY_AFTER_S`, or retries spent (exit 7,
            secrets scrubbed; every answer received is kept).
        """
        r, request, caller, counters, observed = self.resolved, self.request, self.caller, self.counters, self.observed
        lo, hi = r["score_range"]
        refs = list(batch.plan_tasks)
        log: list[dict[str, Any]] = []
        self._partial = log

        def observe(meta: dict[str, Any], version: Any) -> None:
            for h, v in (meta.get("headers") or {}).items():
                if v is not None:
                    observed.setdefault(f"header:{h}", {}).setdefault(str(v), 0)
                    observed[f"header:{h}"][str(v)] += 1
            if version is not None:
                path = f"body:{r['response']['version']}"
                observed.setdefault(path, {}).setdefault(str(version), 0)
                observed[path][str(version)] += 1

        async def one(items: list[Item], attempt: int) -> list[Item]:
            text, meta, cached = await caller.answer(self._body(items, request), attempt=attempt, refs=refs)
            readings, version = read_answer(text, items, r["response"], lo=lo, hi=hi)
            observe(meta, version)
            retry = []
            for it in items:
                p, raw = readings[it.rid]
                log.append({"system": self.id, "job_id": it.job_id, "cv_id": it.cv_id, "variant": it.variant,
                            "resume_id": it.rid, "attempt": attempt, "cached": cached, "valid": p.valid,
                            "score": p.score, "reason": caller.scrub(p.reason), "raw_text": caller.scrub(raw)})
                if not p.valid:
                    counters.invalid += 1
                    retry.append(it)
            return retry

        async def run_all() -> None:
            import httpx

            pending = self.items_of(batch)
            async with httpx.AsyncClient(timeout=self.settings["timeout_s"], follow_redirects=False) as client:
                caller.client = client
                for attempt in range(r["max_invalid_retries"] + 1):
                    chunks = [pending[i:i + r["batch_size"]] for i in range(0, len(pending), r["batch_size"])]
                    tasks = [asyncio.ensure_future(one(chunk, attempt)) for chunk in chunks]
                    try:
                        left = await asyncio.gather(*tasks)
                    finally:
                        for t in tasks:
                            t.cancel()
                    pending = sorted((it for items in left for it in items), key=lambda it: self.order[it.rid])
                    if not pending:
                        break

        asyncio.run(run_all())
        self._partial = []
        return pd.DataFrame(log, columns=list(ANSWER_COLUMNS))

    def _answers(self, frames: list[pd.DataFrame]) -> pd.DataFrame:
        self.info["requests"] = {**asdict(self.counters), "waited_s": round(self.counters.waited_s, 3)}
        return self.answers_frame(self.request, self.log_records(frames))

    def abort(self, results) -> None:
        """Every answer received is kept, also when a later request fails."""
        self._answers([r.frame for r in results] + [pd.DataFrame(self._partial, columns=list(ANSWER_COLUMNS))])

    def finish(self, results) -> tuple[pd.DataFrame, dict[str, Any]]:
        """Scores ``job_id, cv_id, variant, score, is_true_match`` of every résumé with a valid answer (base
        candidates left unscored are excluded with all their variants and listed in ``run.json``); a warning on
        stderr when more than one vendor version answered."""
        answers = self._answers([r.frame for r in results])
        info, observed = self.info, self.observed
        versions = sorted({f"{v} ({path})" for path, vals in observed.items() for v in vals})
        if len({v for vals in observed.values() for v in vals}) > 1:
            info["version_warning"] = MSG_VERSIONS.format(system=self.id, n=len(versions), versions=", ".join(versions))
            print(info["version_warning"], file=sys.stderr)
        return self.scores_of(self.request, answers), info

    def _body(self, items: list[Item], request: ScoreRequest) -> Any:
        """The POST body of ``items`` (all of one job)."""
        r = self.resolved
        job = items[0].job_id
        info = request.job_info.get(job)
        common = {"$job": request.jobs.get(job) or "", "$job_title": info.title if info else job, "$job_id": job}
        if r["request"]["item"] is not None:
            rendered = [render(r["request"]["item"], {**common, "$id": it.rid, "$resume": it.text}) for it in items]
            return render(r["request"]["body"], {**common, "$items": rendered})
        it = items[0]
        return render(r["request"]["body"], {**common, "$id": it.rid, "$resume": it.text})


class _Caller:
    """One system's POSTs: the store first, then the API with limits and retries (module docstring)."""

    def __init__(self, system_id: str, resolved: dict[str, Any], headers: dict[str, str], secrets: list[str],
                 settings: dict[str, Any], counters: RequestCounters, store: Any):
        from compiler.systems.http import header_names

        self.id, self.r, self.headers, self.secrets = system_id, resolved, headers, secrets
        self.settings, self.counters, self.store = settings, counters, store
        self.names = header_names(resolved)
        self.client: Any = None
        self._sem: asyncio.Semaphore | None = None
        self._lock: asyncio.Lock | None = None
        self._next = 0.0

    def scrub(self, text: str) -> str:
        """``text`` with every value read from the environment replaced by ``***``."""
        for s in self.secrets:
            text = text.replace(s, "***")
        return text

    def entry_id(self, body: Any, attempt: int) -> tuple[str, dict[str, Any]]:
        """(store id, key) of an answer: ``http-<sha256>`` of url, body, header names, version, attempt."""
        from compiler.hashing import digest

        record = {"url": self.r["url"], "body": body, "header_names": self.names, "version": self.r["version"],
                  "attempt": attempt}
        return f"{KIND}-{digest(record)['digest']}", record

    async def answer(self, body: Any, *, attempt: int, refs: list[str]) -> tuple[str, dict[str, Any], bool]:
        """(body text, meta, cached) of a 2xx answer to ``body``; stored on arrival."""
        from runtime.testhooks import kill_point

        eid, record = self.entry_id(body, attempt)
        stored = self.store.get(eid) if self.store is not None else None
        if stored is not None:
            self.counters.from_cache += 1
            return stored["body"].decode("utf-8"), json.loads(stored["meta"]), True
        if self._sem is None:
            self._sem, self._lock = asyncio.Semaphore(int(self.settings["concurrency"])), asyncio.Lock()
        data = json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
        async with self._sem:
            text, meta = await self._post(data)
        if self.store is not None:
            self.store.put(eid, KIND, {"body": text.encode("utf-8"), "meta": json.dumps(meta).encode()},
                           key={"kind": KIND, "request": record}, refs=refs)
        kill_point(f"request:{self.id}")
        return text, meta, False

    async def _pace(self) -> None:
        rps = self.settings.get("requests_per_s")
        if not rps:
            return
        async with self._lock:
            now = time.monotonic()
            wait = self._next - now
            self._next = max(now, self._next) + 1.0 / float(rps)
        if wait > 0:
            await asyncio.sleep(wait)

    def _wait(self, state) -> float:
        exc = state.outcome.exception() if state.outcome is not None else None
        if isinstance(exc, _Transient) and exc.retry_after is not None:
            return exc.retry_after
        from tenacity import wait_exponential_jitter  # the LLM client's backoff (runtime/llm/client.py)

        return wait_exponential_jitter(initial=0.5, max=20, jitter=0.25)(state)

    def _before_sleep(self, state) -> None:
        self.counters.retries += 1
        self.counters.waited_s += float(state.next_action.sleep if state.next_action is not None else 0.0)

    async def _post(self, data: bytes) -> tuple[str, dict[str, Any]]:
        import httpx
        from tenacity import AsyncRetrying, RetryError, retry_if_exception_type, stop_after_attempt

        url = self.r["url"]
        n = int(self.settings["retries"]) + 1
        try:
            async for attempt in AsyncRetrying(stop=stop_after_attempt(n), wait=self._wait,
                                               retry=retry_if_exception_type(_Transient),
                                               before_sleep=self._before_sleep, reraise=False):
                with attempt:
                    await self._pace()
                    self.counters.made += 1
                    try:
                        resp = await self.client.post(url, content=data, headers=self.headers)
                    except httpx.TimeoutException as err:
                        self.counters.timeouts += 1
                        raise _Transient(f"timeout after {self.settings['timeout_s']:g} s ({type(err).__name__})")
                    except httpx.TransportError as err:
                        raise _Transient(f"connection lost ({type(err).__name__}: {err})")
                    status = resp.status_code
                    if status == 429:
                        self.counters.rate_limited += 1
                        raw = resp.headers.get("Retry-After")
                        wait = retry_after_seconds(raw)
                        if wait is not None and wait > MAX_RETRY_AFTER_S:
                            raise HttpUnavailable(self.scrub(MSG_RETRY_AFTER.format(
                                system=self.id, url=url, value=raw, seconds=wait, max=MAX_RETRY_AFTER_S)))
                        raise _Transient("answered 429 (rate limited)", retry_after=wait)
                    if status >= 500:
                        self.counters.server_errors += 1
                        raise _Transient(f"answered {status}")
                    if not 200 <= status < 300:
                        lines = resp.text.strip().splitlines()
                        raise HttpUnavailable(self.scrub(MSG_REFUSED.format(
                            system=self.id, url=url, status=status, line=lines[0][:500] if lines else "(empty body)")))
                    meta = {"status": status, "headers": {h: resp.headers.get(h) for h in self.r["version_headers"]}}
                    return resp.text, meta
        except RetryError as err:
            last = err.last_attempt.exception()
            raise HttpUnavailable(self.scrub(MSG_SPENT.format(system=self.id, url=url, n=n, err=last,
                                                              store=getattr(self.store, "root", None)))) from None
        raise AssertionError("unreachable")  # pragma: no cover
