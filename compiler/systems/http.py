"""The ``http`` system kind: a vendor's scoring API (issue 35 §2). Its spec model: :mod:`compiler.blocks.http`.

Checks (``audit validate``, exit 2, each located): the URL's scheme, every ``$placeholder``, ``$items``
with ``item``, ``response.id`` for batches, every JMESPath expression, the environment variable names
and secret-bearing literal headers. Nothing here contacts the URL.
Fingerprint: the digest of what the vendor is asked and how its answer is read (url, request, response,
version, batch_size, header names); a remote system cannot be fingerprinted beyond what it declares.
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import urlsplit

from compiler.blocks import http as block
from compiler.errors import Issue
from compiler.hashing import digest
from compiler.load import LoadedSpec
from compiler.systems.base import CORE, Requires, SystemKind, score_resolution, system_kind

#: Placeholders a request template may hold (whole JSON string values).
PLACEHOLDERS = ("$items", "$id", "$job", "$job_title", "$job_id", "$resume")

MSG_URL = "url {url!r} is not an http(s) URL; allowed: http://host[:port]/path or https://host[:port]/path"
MSG_PLACEHOLDER = "unknown placeholder {value!r}; allowed: {allowed}"
MSG_ITEMS_PLACE = "$items may only be the value of a key of request.body (not inside request.item)"
MSG_ITEMS_WITHOUT_ITEM = "request.body uses $items but request.item is not given; give item: {id: $id, resume: $resume}"
MSG_ITEM_WITHOUT_ITEMS = "request.item is given but request.body has no $items; put items: $items in the body"
MSG_BATCH_ITEMS = "batch_size {n} needs $items in request.body and an item template (one request carries {n} items)"
MSG_BATCH_ID = ("batch_size {n} needs response.id, the JMESPath of each answer's id (answers are matched by id); "
                "allowed without it: batch_size 1")
MSG_ITEMS_PATH = "request.body uses $items, so response.items must give the JMESPath of the list of answers"
MSG_NO_ID = "request has no $id; with response.id every item must carry its $id"
MSG_JMESPATH = "{expr!r} is not a JMESPath expression: {err}"
MSG_ENV_NAME = "{name!r} is not an environment variable name; allowed: letters, digits and _, not starting with a digit"
MSG_HEADER_NAME = "{name!r} is not an HTTP header name; allowed: letters, digits and !#$%&'*+-.^_`|~"
MSG_SECRET_HEADER = ("header {name!r} carries a secret: put its value in headers_from_env "
                     "({{{name}: VARIABLE_NAME}}), never in the spec")
MSG_HEADER_TWICE = "header {name!r} is given in both headers and headers_from_env; give it once"

_ENV = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_TOKEN = re.compile(r"^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$")


def _secret_header(name: str) -> bool:
    low = name.lower()
    return low in ("authorization", "proxy-authorization", "cookie") or low.endswith("-key") or low == "key"


def jmespath_problem(err: Exception) -> str:
    """What is wrong with a JMESPath expression, on one line: the parser's message, the token it stopped at
    and its position (0-based)."""
    msg = getattr(err, "msg", None) or str(err).strip().splitlines()[0]
    pos = getattr(err, "lex_position", None)
    token = getattr(err, "token_value", None)
    where = "the end of the expression" if token is None else f"{token!r}"
    return f"{msg} at {where}" + (f" (position {pos})" if pos is not None else "")


def placeholders(template: Any, loc: tuple = ()) -> list[tuple[tuple, str]]:
    """Every ``$``-string of a JSON template with its key path, in document order (dict keys as written)."""
    if isinstance(template, str):
        return [(loc, template)] if template.startswith("$") else []
    if isinstance(template, dict):
        return [p for k, v in template.items() for p in placeholders(v, loc + (k,))]
    if isinstance(template, list):
        return [p for j, v in enumerate(template) for p in placeholders(v, loc + (j,))]
    return []


@system_kind
class Http(SystemKind):
    """A vendor's scoring API (issue 35 §2); fingerprint: digest of url, request, response, version,
    batch_size and header names."""

    id = "http"
    model = block.System
    remote = True
    paired_only = True  # résumés under opaque ids, variants in one plan batch
    provides = frozenset({"answers"})  # read by the one answer reader; the llm_validity family reports them

    def requires(self, system: Any) -> Requires:
        """httpx, jmespath and tenacity are part of the core install."""
        return CORE

    def issues(self, ls: LoadedSpec, i: int, system: Any) -> list[Issue]:
        import jmespath
        from jmespath.exceptions import JMESPathError

        out = super().issues(ls, i, system)
        at = ("systems", i)
        parts = urlsplit(system.url) if isinstance(system.url, str) else None
        if parts is None or parts.scheme not in ("http", "https") or not parts.netloc:
            out.append(ls.issue(at + ("url",), MSG_URL.format(url=system.url)))
        body = placeholders(system.request.body, at + ("request", "body"))
        item = placeholders(system.request.item, at + ("request", "item"))
        for loc, value in body + item:
            if value not in PLACEHOLDERS:
                out.append(ls.issue(loc, MSG_PLACEHOLDER.format(value=value, allowed=", ".join(PLACEHOLDERS))))
        for loc, value in item:
            if value == "$items":
                out.append(ls.issue(loc, MSG_ITEMS_PLACE))
        has_items = any(v == "$items" for _, v in body)
        if has_items and system.request.item is None:
            out.append(ls.issue(at + ("request", "body"), MSG_ITEMS_WITHOUT_ITEM))
        if system.request.item is not None and not has_items:
            out.append(ls.issue(at + ("request", "item"), MSG_ITEM_WITHOUT_ITEMS))
        if system.batch_size > 1 and not has_items:
            out.append(ls.issue(at + ("batch_size",), MSG_BATCH_ITEMS.format(n=system.batch_size)))
        if system.batch_size > 1 and system.response.id is None:
            out.append(ls.issue(at + ("batch_size",), MSG_BATCH_ID.format(n=system.batch_size)))
        if has_items and system.response.items is None:
            out.append(ls.issue(at + ("response",), MSG_ITEMS_PATH))
        if system.response.id is not None and (has_items == (system.request.item is not None)) \
                and not any(v == "$id" for _, v in body + item):
            out.append(ls.issue(at + ("request",), MSG_NO_ID))
        for key in ("items", "id", "score", "version"):
            expr = getattr(system.response, key)
            if expr is None:
                continue
            try:
                jmespath.compile(expr)
            except JMESPathError as err:
                out.append(ls.issue(at + ("response", key), MSG_JMESPATH.format(expr=expr, err=jmespath_problem(err))))
        for name in list(system.headers) + list(system.headers_from_env) + list(system.version_headers):
            if not _TOKEN.match(name):
                out.append(ls.issue(at, MSG_HEADER_NAME.format(name=name)))
        for name in system.headers:
            if _secret_header(name):
                out.append(ls.issue(at + ("headers", name), MSG_SECRET_HEADER.format(name=name), key=True))
            if name.lower() in {h.lower() for h in system.headers_from_env}:
                out.append(ls.issue(at + ("headers", name), MSG_HEADER_TWICE.format(name=name), key=True))
        for header, var in system.headers_from_env.items():
            if not _ENV.match(var):
                out.append(ls.issue(at + ("headers_from_env", header), MSG_ENV_NAME.format(name=var)))
        return out

    def resolve(self, system: Any, ls: LoadedSpec) -> dict[str, Any]:
        resolved = {
            "id": system.id, "kind": system.kind, "url": system.url, "version": system.version,
            "batch_size": system.batch_size,
            "request": {"body": system.request.body, "item": system.request.item},
            "response": system.response.model_dump(),
            "version_headers": list(system.version_headers),
            "headers": dict(system.headers),
            # header -> variable NAME; the value is read at execute and written nowhere
            "headers_from_env": dict(system.headers_from_env),
            "max_invalid_retries": system.max_invalid_retries,
            "score_range": list(system.score_range), **score_resolution(system),
        }
        resolved["fingerprint"] = http_fingerprint(resolved)
        return resolved

    def source(self, resolved: dict[str, Any]) -> str:
        """The endpoint and the declared version."""
        return f"POST {resolved['url']} ({resolved['version']})"


def header_names(resolved: dict[str, Any]) -> list[str]:
    """The sorted names of every header a resolved http system sends (literal and from the environment)."""
    return sorted(set(resolved["headers"]) | set(resolved["headers_from_env"]))


def http_fingerprint(resolved: dict[str, Any]) -> dict[str, str]:
    """``{algorithm, digest}`` of url, request, response, version, batch_size and header names (never a
    header's value read from the environment)."""
    return digest({"url": resolved["url"], "request": resolved["request"], "response": resolved["response"],
                   "version": resolved["version"], "batch_size": resolved["batch_size"],
                   "header_names": header_names(resolved)})
