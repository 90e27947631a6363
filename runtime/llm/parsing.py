"""Tolerant parsing of LLM answers: JSON objects (scores, axis labels) and JSON arrays (resumes).

A screener is asked for one JSON object (seed 003 Appendix B, seed 001 Appendix D); where the
provider honours ``response_format`` the answer is already valid JSON, otherwise it is extracted
from whatever the model wrote (code fences, text around the object, ``score: 72``). An answer that
still yields no score, or a score outside the system's range, is *invalid*: the caller records it
with its raw text and may ask again; it is never replaced by a default.

The generator's arrays (seed 000 §3.1.2: "a single inline JSON array ... parsed by a dedicated
JSON-array extractor with a header-based fallback split") and the clarifying-question heuristic
(§3.1.1) live here too. Every function is pure: replayed raw outputs in ``tests/data/llm_raw``
exercise them.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from typing import Any

#: Reasons an answer is invalid (recorded in ``llm_responses.csv``).
REASON_EMPTY = "empty answer"
REASON_NO_SCORE = "no score found"
REASON_NOT_NUMBER = "score is not a number: {value!r}"
REASON_RANGE = "score {value:g} outside [{lo:g}, {hi:g}]"
REASON_TRUNCATED = "answer ends inside an unclosed object right after the score (cut off by max_tokens?)"

_FENCE = re.compile(r"```(?:json|JSON)?\s*(.*?)```", re.S)
_SCORE_KV = re.compile(r"""["']?\bscore\b["']?\s*[:=]\s*["']?(-?\d+(?:\.\d+)?)""", re.I)
_BARE_NUMBER = re.compile(r"^\s*(-?\d+(?:\.\d+)?)\s*(?:/\s*100)?\s*\.?\s*$")


@dataclass(frozen=True)
class ScoreParse:
    """Outcome of :func:`parse_score`: ``score`` when valid, else ``reason``; ``method`` says how."""

    valid: bool
    score: float | None
    reason: str
    method: str


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


def _check(value: Any, lo: float, hi: float, method: str) -> ScoreParse:
    if isinstance(value, bool) or value is None:
        return ScoreParse(False, None, REASON_NOT_NUMBER.format(value=value), method)
    if isinstance(value, str):
        try:
            value = float(value.strip())
        except ValueError:
            return ScoreParse(False, None, REASON_NOT_NUMBER.format(value=value), method)
    if not isinstance(value, (int, float)) or not math.isfinite(value):
        return ScoreParse(False, None, REASON_NOT_NUMBER.format(value=value), method)
    if not lo <= value <= hi:
        return ScoreParse(False, None, REASON_RANGE.format(value=value, lo=lo, hi=hi), method)
    return ScoreParse(True, float(value), "", method)


def parse_score(text: str | None, *, lo: float = 0.0, hi: float = 100.0) -> ScoreParse:
    """Extract ``score`` from a screener's answer and check it lies in ``[lo, hi]``.

    Tried in order: a JSON object with a ``score`` key (whole answer, fenced block, or an object
    embedded in text); ``score: 72`` / ``"score" = 72`` written loosely; an answer that is only a
    number (``72``, ``72/100``). The first score found decides: an out-of-range first score is
    invalid, not skipped in favour of a later number.

    Returns
    -------
    ScoreParse
        ``valid`` with ``score`` (float, in ``[lo, hi]``), or ``reason`` (:data:`REASON_EMPTY`,
        :data:`REASON_NO_SCORE`, :data:`REASON_NOT_NUMBER`, :data:`REASON_RANGE`).
    """
    if text is None or not text.strip():
        return ScoreParse(False, None, REASON_EMPTY, "none")
    for value in json_values(text, "{"):
        if isinstance(value, dict):
            for key, v in value.items():
                if str(key).strip().lower() == "score":
                    return _check(v, lo, hi, "json")
    m = _SCORE_KV.search(text)
    if m:
        if m.end(1) == len(text.rstrip()) and text.count("{") > text.count("}"):
            # '{"score": 7' may be a cut-off 75: never guess
            return ScoreParse(False, None, REASON_TRUNCATED, "key-value")
        return _check(float(m.group(1)), lo, hi, "key-value")
    m = _BARE_NUMBER.match(text)
    if m:
        return _check(float(m.group(1)), lo, hi, "bare number")
    return ScoreParse(False, None, REASON_NO_SCORE, "none")


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
