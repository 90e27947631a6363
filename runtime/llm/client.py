"""Async LLM calls through litellm: per-endpoint concurrency, retries with backoff, persistent cache.

- Any litellm model string (``openai/...`` with ``api_base`` for an OpenAI-compatible local server,
  ``anthropic/...``, ``gemini/...``, ...). litellm is imported on first use only.
- At most ``concurrency`` requests in flight (an ``asyncio.Semaphore`` per client: one client per
  system, so the limit is per system).
- tenacity retries with exponential backoff and jitter on 429, 5xx, timeouts and lost connections;
  other errors (bad request, authentication) fail at once.
- Every answer goes to :class:`~runtime.llm.cache.ResponseCache` before it is used.
- The API key is read from the environment variable named by ``api_key_env`` at call time, passed
  to litellm, and scrubbed from any error message; it is never stored.
"""

from __future__ import annotations

import asyncio
import logging
import os
from dataclasses import asdict, dataclass, field
from typing import Any, NamedTuple

from compiler.errors import AuditError
from runtime.llm.cache import ResponseCache

MSG_KEY_UNSET = ("environment variable {name} (named by api_key_env of {who}) is not set; export it "
                 "before running (the key itself is never written to the spec, lock, cache or run)")
MSG_UNAVAILABLE = (
    "{who}: the model {model} did not answer after {n} attempt(s): {err}. Every answer received so far "
    "is in the cache {cache}; fix the server and re-run `audit execute` to continue from there"
)
MSG_FAILED = "{who}: the model {model} refused the request: {err}"
MISSING_LITELLM = ("LLM systems and the llm generator need litellm and tenacity, the llm extra: "
                   "pip install 'audit-compiler[llm]'")


class LlmUnavailable(AuditError):
    """The model server kept failing (retries exhausted) or refused a request; nothing is lost.

    Exit 7: not a bug (1) and not a finding (4/5): the system under test could not be reached, and a
    CI gate must not read it as either. Answers received so far are in the cache.
    """

    exit_code = 7


class LlmKeyUnset(LlmUnavailable):
    """The environment variable named by ``api_key_env`` is not set: a set-up error (exit 2)."""

    exit_code = 2


class LlmNotInstalled(AuditError):
    """litellm or tenacity is not installed (the llm extra): a set-up error (exit 2, no traceback).
    ``audit execute`` checks the extra before any work (:func:`compiler.extras.check_extras`); this
    guards the other ways in."""

    exit_code = 2


@dataclass
class CallCounters:
    """Counts written to ``run.json``: ``calls`` made to the model, answers ``from_cache``,
    ``retries`` after transient errors, ``invalid`` answers (unparseable or out of range),
    ``tokens_in`` / ``tokens_out`` reported by the server for calls made."""

    calls: int = 0
    from_cache: int = 0
    retries: int = 0
    invalid: int = 0
    tokens_in: int = 0
    tokens_out: int = 0

    def as_dict(self) -> dict[str, int]:
        return asdict(self)


@dataclass
class Endpoint:
    """A resolved endpoint (``compiler.llm.endpoint``) plus the non-semantic execution knobs."""

    model: str
    api_base: str | None = None
    api_key_env: str | None = None
    temperature: float = 0.7
    max_tokens: int = 128
    response_format: str = "json_schema"
    concurrency: int = 4
    retries: int = 6
    timeout_s: float = 120.0
    who: str = "llm"
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_resolved(cls, ep: dict[str, Any], *, who: str, concurrency: int, retries: int,
                      timeout_s: float) -> "Endpoint":
        return cls(model=ep["model"], api_base=ep["api_base"], api_key_env=ep["api_key_env"],
                   temperature=ep["temperature"], max_tokens=ep["max_tokens"],
                   response_format=ep["response_format"], concurrency=concurrency, retries=retries,
                   timeout_s=timeout_s, who=who)


def _litellm():
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    try:
        import litellm
    except ImportError as err:  # depends on the install
        raise LlmNotInstalled(MISSING_LITELLM) from err
    litellm.telemetry = False
    litellm.suppress_debug_info = True
    # each stage runs its own event loop (asyncio.run): litellm's logging worker notes the change
    logging.getLogger("LiteLLM").setLevel(logging.ERROR)
    return litellm


def transient(err: BaseException) -> bool:
    """Retry on rate limits (429), server errors (5xx), timeouts and lost or refused connections."""
    litellm = _litellm()
    kinds = tuple(k for k in (getattr(litellm, n, None) for n in (
        "RateLimitError", "InternalServerError", "ServiceUnavailableError", "Timeout",
        "APIConnectionError", "BadGatewayError")) if isinstance(k, type))
    if isinstance(err, kinds) or isinstance(err, (asyncio.TimeoutError, ConnectionError)):
        return True
    status = getattr(err, "status_code", None)
    return isinstance(status, int) and (status == 429 or status >= 500)


def response_format(kind: str, schema: dict[str, Any] | None, name: str = "answer") -> dict[str, Any] | None:
    """The ``response_format`` parameter: OpenAI-style ``json_schema`` (litellm translates it for
    providers that support structured output), ``json_object`` with a ``schema`` key
    (``json_object_schema``: llama-cpp-python's server compiles it into a grammar), plain
    ``json_object``, or None (free-form answer, tolerant extraction only)."""
    if kind == "none":
        return None
    if kind == "json_schema" and schema is not None:
        return {"type": "json_schema", "json_schema": {"name": name, "schema": schema, "strict": True}}
    if kind == "json_object_schema" and schema is not None:
        return {"type": "json_object", "schema": schema}
    return {"type": "json_object"}


class Answer(NamedTuple):
    """One answer of :meth:`LlmClient.answer`: ``text`` (the message ``content``), ``cached`` (read from
    the store), ``reasoning_chars`` (characters of the provider's separate ``reasoning_content``; 0 when
    none)."""

    text: str
    cached: bool
    reasoning_chars: int


class LlmClient:
    """One endpoint's calls: ``await client.complete(messages, replicate=r, attempt=a, seed=s)``.

    Parameters
    ----------
    endpoint : Endpoint
    cache : ResponseCache
    counters : CallCounters, optional
        Updated in place (the caller stores them in ``run.json``).
    on_call : callable, optional
        Called once per finished request (cached or not), e.g. to advance a progress bar.
    """

    def __init__(self, endpoint: Endpoint, cache: ResponseCache, counters: CallCounters | None = None,
                 on_call=None):
        self.ep = endpoint
        self.cache = cache
        self.counters = counters or CallCounters()
        self.on_call = on_call
        self._sem: asyncio.Semaphore | None = None
        self._key: str | None = None

    def _api_key(self) -> str | None:
        if self.ep.api_key_env:
            key = os.environ.get(self.ep.api_key_env)
            if not key:
                raise LlmKeyUnset(MSG_KEY_UNSET.format(name=self.ep.api_key_env, who=self.ep.who))
            return key
        # an OpenAI-compatible local server without auth still needs a non-empty key in the client
        return "no-key" if self.ep.api_base else None

    def scrub(self, text: str) -> str:
        """``text`` with the API key replaced by ``***`` (error messages may echo it)."""
        return text.replace(self._key, "***") if self._key else text

    def request_record(self, messages: list[dict[str, str]], *, replicate: int, attempt: int,
                       seed: int | None, schema: dict[str, Any] | None, temperature: float | None,
                       max_tokens: int | None) -> dict[str, Any]:
        """Everything that determines the answer: the cache key's content (no key, no address
        of the cache)."""
        return {
            "model": self.ep.model, "api_base": self.ep.api_base, "messages": messages,
            "params": {"temperature": self.ep.temperature if temperature is None else temperature,
                       "max_tokens": max_tokens or self.ep.max_tokens,
                       "response_format": response_format(self.ep.response_format, schema),
                       "seed": seed},
            "replicate": replicate, "attempt": attempt,
        }

    async def complete(self, messages: list[dict[str, str]], *, replicate: int = 0, attempt: int = 0,
                       seed: int | None = None, schema: dict[str, Any] | None = None,
                       temperature: float | None = None, max_tokens: int | None = None,
                       refs: list[str] | None = None) -> tuple[str, bool]:
        """The answer's text and whether it came from the cache (:meth:`answer`, without the reasoning count)."""
        a = await self.answer(messages, replicate=replicate, attempt=attempt, seed=seed, schema=schema,
                              temperature=temperature, max_tokens=max_tokens, refs=refs)
        return a.text, a.cached

    async def answer(self, messages: list[dict[str, str]], *, replicate: int = 0, attempt: int = 0,
                     seed: int | None = None, schema: dict[str, Any] | None = None,
                     temperature: float | None = None, max_tokens: int | None = None,
                     refs: list[str] | None = None) -> Answer:
        """One answer: its ``content`` text, whether it came from the cache, and the length of the
        provider's separate ``reasoning_content`` (kept in the store with the answer, never parsed: issue
        35 §1). ``refs`` names the plan tasks the answer serves (kept with it in the store, default the
        cache's own).

        Raises
        ------
        LlmUnavailable
            Retries exhausted on transient errors, or a non-transient error (message scrubbed).
        """
        req = self.request_record(messages, replicate=replicate, attempt=attempt, seed=seed,
                                  schema=schema, temperature=temperature, max_tokens=max_tokens)
        hit = self.cache.get(req)
        if hit is not None:
            self.counters.from_cache += 1
            if self.on_call:
                self.on_call(1)
            return Answer(hit[0], True, len((hit[1] or {}).get("reasoning_content") or ""))
        if self._sem is None:
            self._sem = asyncio.Semaphore(self.ep.concurrency)
        async with self._sem:
            text, usage = await self._call(req)
        self.cache.put(req, text, usage, refs=refs)
        self.counters.calls += 1
        self.counters.tokens_in += int(usage.get("prompt_tokens") or 0)
        self.counters.tokens_out += int(usage.get("completion_tokens") or 0)
        if self.on_call:
            self.on_call(1)
        return Answer(text, False, len(usage.get("reasoning_content") or ""))

    async def _call(self, req: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        litellm = _litellm()
        try:
            from tenacity import (AsyncRetrying, RetryError, retry_if_exception, stop_after_attempt,
                                  wait_exponential_jitter)
        except ImportError as err:  # depends on the install
            raise LlmNotInstalled(MISSING_LITELLM) from err
        self._key = self._api_key()
        params = req["params"]
        kwargs: dict[str, Any] = {
            "model": self.ep.model, "messages": req["messages"], "temperature": params["temperature"],
            "max_tokens": params["max_tokens"], "timeout": self.ep.timeout_s, "num_retries": 0,
            "drop_params": True,
        }
        if params["response_format"] is not None:
            kwargs["response_format"] = params["response_format"]
        if params["seed"] is not None:
            kwargs["seed"] = params["seed"]
        if self.ep.api_base:
            kwargs["api_base"] = self.ep.api_base
        if self._key is not None:
            kwargs["api_key"] = self._key

        def count_retry(_state) -> None:
            self.counters.retries += 1

        try:
            async for attempt in AsyncRetrying(
                    stop=stop_after_attempt(self.ep.retries + 1),
                    wait=wait_exponential_jitter(initial=0.5, max=20),
                    retry=retry_if_exception(transient), before_sleep=count_retry, reraise=False):
                with attempt:
                    resp = await litellm.acompletion(**kwargs)
        except RetryError as err:
            last = err.last_attempt.exception()
            raise LlmUnavailable(MSG_UNAVAILABLE.format(
                who=self.ep.who, model=self.ep.model, n=self.ep.retries + 1,
                err=self.scrub(f"{type(last).__name__}: {last}"), cache=self.cache.path)) from None
        except LlmUnavailable:
            raise
        except Exception as err:  # a non-transient provider error: report it without the key
            if transient(err):  # pragma: no cover - handled by tenacity
                raise
            raise LlmUnavailable(MSG_FAILED.format(who=self.ep.who, model=self.ep.model,
                                                   err=self.scrub(f"{type(err).__name__}: {err}"))) from None
        message = resp.choices[0].message
        text = message.content or ""
        usage = getattr(resp, "usage", None)
        u = {"prompt_tokens": getattr(usage, "prompt_tokens", 0) or 0,
             "completion_tokens": getattr(usage, "completion_tokens", 0) or 0} if usage else {}
        reasoning = getattr(message, "reasoning_content", None)
        if isinstance(reasoning, str) and reasoning:
            u["reasoning_content"] = reasoning  # kept with the answer, never read as one
        return text, u
