"""Tolerant parsing of LLM answers: JSON objects (axis labels, agent answers) and JSON arrays (resumes).

A screener's score is read by :func:`runtime.systems.answers.parse_score` (issue 35 §1: one reader for
LLM and HTTP answers). Objects are extracted from whatever the model wrote (code fences, text around
the object).

The generator's arrays (seed 000 §3.1.2: "a single inline JSON array ... parsed by a dedicated
JSON-array extractor with a header-based fallback split") and the clarifying-question heuristic
(§3.1.1) live here too. Every function is pure: replayed raw outputs in ``tests/data/llm_raw``
exercise them.
"""

from __future__ import annotations

import json
import re
from typing import Any

_FENCE = re.compile(r"```(?:json|JSON)?\s*(.*?)```", re.S)


def _candidates(text: str) -> list[str]:
    """The text, then every fenced block in it."""
    return [text] + [m.group(1) for m in _FENCE.finditer(text)]


def json_values(text: str, opener: str) -> list[Any]:
    """Every JSON value starting with ``opener`` (``{`` or ``[``) that decodes inside ``text``,
    in order of position (``json.JSONDecoder.raw_decode`` from each opener)."""
    dec = json.JSONDecoder()
    out = []
    for chunk in _candidates(text):
        stripped = chunk.strip()
        try:
            out.append(json.loads(stripped))
            continue
        except ValueError:
            pass
        i = chunk.find(opener)
        while i != -1:
            try:
                value, end = dec.raw_decode(chunk, i)
            except ValueError:
                i = chunk.find(opener, i + 1)
                continue
            out.append(value)
            i = chunk.find(opener, end)
    return out


def parse_object(text: str | None) -> dict[str, Any] | None:
    """The first JSON object in ``text`` (see :func:`json_values`), or None."""
    if not text:
        return None
    for value in json_values(text, "{"):
        if isinstance(value, dict):
            return value
    return None


#: Headers a model writes between resumes when it ignores the JSON instruction.
_HEADER = re.compile(
    r"^\s*(?:#{1,6}\s*|\*\*\s*)?(?:(?:resume|candidate|cv|variant)\s*(?:#\s*)?\d+|(?:BASE|V\d{2,}))\b"
    r"[^\n]*$", re.I | re.M)


def extract_array(text: str | None) -> tuple[list[Any], str]:
    """Items of the JSON array in a generator's answer, and how they were found.

    Returns ``(items, method)``: ``method`` is ``"json"`` (an array, or an object holding one array
    value), ``"header-split"`` (no JSON: the text split at headers such as ``Resume 2`` or ``V03``;
    each item is ``{"header": ..., "full_resume_text": ...}``) or ``"none"`` (empty list).
    """
    if not text or not text.strip():
        return [], "none"
    for value in json_values(text, "["):
        if isinstance(value, list) and value:
            return value, "json"
    for value in json_values(text, "{"):
        if isinstance(value, dict):
            arrays = [v for v in value.values() if isinstance(v, list) and v]
            if len(arrays) == 1:
                return arrays[0], "json"
    heads = list(_HEADER.finditer(text))
    if len(heads) >= 1:
        items = []
        for i, h in enumerate(heads):
            body = text[h.end(): heads[i + 1].start() if i + 1 < len(heads) else len(text)].strip()
            if body:
                items.append({"header": h.group(0).strip(" #*"), "full_resume_text": body})
        if items:
            return items, "header-split"
    return [], "none"


_ASKS = re.compile(
    r"\b(could you|can you|would you|do you want|should i|shall i|please (?:clarify|confirm|specify)|"
    r"which (?:one|level|anchor|option)|before i (?:proceed|continue|start)|i need (?:more|some) "
    r"(?:information|details))\b", re.I)


def is_clarifying_question(text: str | None) -> bool:
    """Seed 000 §3.1.1's heuristic: the agent asked instead of answering.

    True when the answer holds no JSON array or object and either ends with a question mark or
    contains a request for clarification ("could you", "please confirm", "which level", ...).
    """
    if not text or not text.strip():
        return False
    if json_values(text, "[") or json_values(text, "{"):
        return False
    tail = text.strip()[-300:]
    return tail.rstrip().endswith("?") or bool(_ASKS.search(text))
