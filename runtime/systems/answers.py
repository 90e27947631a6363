"""Reading a system's answer as a score: one reader for LLM text and for an HTTP API's value (issue 35 §1).

A screener is asked for one JSON object (seed 003 Appendix B, seed 001 Appendix D); where the provider
honours ``response_format`` the answer is already valid JSON, otherwise the score is read from whatever
the model wrote. The rules, in order:

1. **Reasoning goes first.** ``<think>…</think>`` and ``[THINK]…[/THINK]`` blocks (any case, either
   closer) are removed before anything is read; text before a closing tag with no opener (a provider that
   strips the opener) is reasoning too. A block never closed makes the answer invalid (``reasoning not
   closed``): its draft is not an answer. A provider's separate ``reasoning_content`` field is never
   read (the client keeps it in the store and counts its characters).
2. **The final answer wins.** Of the forms present, the strongest decides: a JSON object with a
   ``score`` key, then ``score: N`` (or ``score = N``), then an answer that is only a number. Within
   that form the **last** occurrence decides; an invalid last score is never replaced by an earlier one.
3. **One scale.** ``a/b``, ``a out of b`` and ``a%`` (b = 100), in text and in JSON strings, read as
   ``a`` when ``b`` is the high end of the system's ``score_range`` and are otherwise **invalid** (``score
   8/10 is on another scale than [0, 100]``), so the caller asks again. Nothing is converted: the lock
   fixes the scale, and 8/10 may mean 0-10 or 1-10.
4. A score outside ``score_range``, a non-number, nothing found: invalid with the reason. The caller
   records invalid answers with their raw text and may ask again; a default is never substituted.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from typing import Any

#: Reasons an answer is invalid (recorded with the raw answer).
REASON_EMPTY = "empty answer"
REASON_NO_SCORE = "no score found"
REASON_NOT_NUMBER = "score is not a number: {value!r}"
REASON_RANGE = "score {value:g} outside [{lo:g}, {hi:g}]"
REASON_SCALE = "score {token} is on another scale than [{lo:g}, {hi:g}]"
REASON_TRUNCATED = "answer ends inside an unclosed object right after the score (cut off by max_tokens?)"
REASON_REASONING_OPEN = "reasoning not closed"

_NUM = r"[-+]?(?:\d+(?:\.\d+)?|\.\d+)"
#: A number with an optional scale: ``8/10``, ``8 out of 10``, ``80%``.
_SCALED = rf"(?P<a>{_NUM})(?:\s*/\s*(?P<b>{_NUM})|\s+out\s+of\s+(?P<of>{_NUM})|\s*(?P<pct>%))?"
_SCORE_KV = re.compile(rf"""["']?\bscore\b["']?\s*[:=]\s*["']?{_SCALED}""", re.I)
_WHOLE = re.compile(rf"^\s*{_SCALED}\s*\.?\s*$", re.I)
_TAG = re.compile(r"<\s*(?P<c1>/)?\s*think\s*>|\[\s*(?P<c2>/)?\s*think\s*\]", re.I)


@dataclass(frozen=True)
class ScoreParse:
    """Outcome of :func:`parse_score`: ``score`` (float in ``score_range``) when valid, else ``reason``;
    ``method`` says which form decided (``json``, ``key-value``, ``bare number``, ``http``, ``none``)."""

    valid: bool
    score: float | None
    reason: str
    method: str


def strip_reasoning(text: str) -> tuple[str, bool]:
    """The answer without its reasoning blocks, and whether every block was closed.

    Parameters
    ----------
    text : str
        The raw answer.

    Returns
    -------
    (str, bool)
        The text outside ``<think>…</think>`` / ``[THINK]…[/THINK]`` blocks (case-insensitive, either
        closer ends either opener; text before a closer with no opener is dropped), and False when a
        block is opened and never closed.
    """
    kept: list[str] = []
    pos, inside = 0, False
    for m in _TAG.finditer(text):
        closing = bool(m.group("c1") or m.group("c2"))
        if not inside:
            if closing:          # the opener was stripped upstream: everything so far was reasoning
                kept = []
            else:
                kept.append(text[pos:m.start()])
                inside = True
        elif closing:
            inside = False
        pos = m.end()
    if inside:
        return "".join(kept), False
    kept.append(text[pos:])
    return "".join(kept), True


def _objects(text: str) -> list[dict[str, Any]]:
    """Every JSON object in ``text`` in order of position (objects inside a top-level array included);
    an object nested in another is read as part of it."""
    dec = json.JSONDecoder()
    out: list[dict[str, Any]] = []
    i = 0
    while True:
        starts = [j for j in (text.find("{", i), text.find("[", i)) if j != -1]
        if not starts:
            return out
        i = min(starts)
        try:
            value, end = dec.raw_decode(text, i)
        except ValueError:
            i += 1
            continue
        if isinstance(value, dict):
            out.append(value)
        elif isinstance(value, list):
            out.extend(v for v in value if isinstance(v, dict))
        i = end


def _scaled(m: re.Match, lo: float, hi: float, method: str) -> ScoreParse:
    a = float(m.group("a"))
    b = m.group("b") or m.group("of")
    scale = 100.0 if m.group("pct") else (float(b) if b is not None else None)
    if scale is not None and scale != hi:
        end = max(m.end(g) for g in ("a", "b", "of", "pct") if m.group(g) is not None)
        token = " ".join(m.string[m.start("a"):end].split())
        return ScoreParse(False, None, REASON_SCALE.format(token=token, lo=lo, hi=hi), method)
    return _check(a, lo, hi, method)


def _check(value: Any, lo: float, hi: float, method: str) -> ScoreParse:
    if isinstance(value, bool) or value is None:
        return ScoreParse(False, None, REASON_NOT_NUMBER.format(value=value), method)
    if isinstance(value, str):
        m = _WHOLE.match(value)
        if m is None:
            return ScoreParse(False, None, REASON_NOT_NUMBER.format(value=value), method)
        return _scaled(m, lo, hi, method)
    if not isinstance(value, (int, float)) or not math.isfinite(value):
        return ScoreParse(False, None, REASON_NOT_NUMBER.format(value=value), method)
    if not lo <= value <= hi:
        return ScoreParse(False, None, REASON_RANGE.format(value=value, lo=lo, hi=hi), method)
    return ScoreParse(True, float(value), "", method)


def score_value(value: Any, *, lo: float, hi: float, method: str = "http") -> ScoreParse:
    """A score given as a value (an HTTP API's JSON number or string): a number, or a string holding one
    number with an optional scale (module rule 3), inside ``[lo, hi]``.

    Raises nothing: an invalid value returns ``valid=False`` with its reason.
    """
    return _check(value, lo, hi, method)


def parse_score(text: str | None, *, lo: float = 0.0, hi: float = 100.0) -> ScoreParse:
    """Read the score of a screener's text answer (module docstring: reasoning first, the last score of
    the strongest form, one scale) and check it lies in ``[lo, hi]``, the system's ``score_range``.

    Parameters
    ----------
    text : str or None
        The answer's ``content``.
    lo, hi : float
        The system's score range; ``hi`` is the only scale a fraction or percentage may name.

    Returns
    -------
    ScoreParse
        ``valid`` with ``score``, or ``reason``: :data:`REASON_EMPTY`, :data:`REASON_REASONING_OPEN`,
        :data:`REASON_NO_SCORE`, :data:`REASON_NOT_NUMBER`, :data:`REASON_RANGE`, :data:`REASON_SCALE`,
        :data:`REASON_TRUNCATED`.
    """
    if text is None or not text.strip():
        return ScoreParse(False, None, REASON_EMPTY, "none")
    final, closed = strip_reasoning(text)
    if not closed:
        return ScoreParse(False, None, REASON_REASONING_OPEN, "none")
    if not final.strip():
        return ScoreParse(False, None, REASON_EMPTY, "none")
    scored = [o for o in _objects(final) if any(str(k).strip().lower() == "score" for k in o)]
    if scored:
        last = scored[-1]
        key = [k for k in last if str(k).strip().lower() == "score"][-1]
        return _check(last[key], lo, hi, "json")
    found = list(_SCORE_KV.finditer(final))
    if found:
        m = found[-1]
        if m.end() == len(final.rstrip()) and final.count("{") > final.count("}"):
            # '{"score": 7' may be a cut-off 75: never guess
            return ScoreParse(False, None, REASON_TRUNCATED, "key-value")
        return _scaled(m, lo, hi, "key-value")
    m = _WHOLE.match(final)
    if m:
        return _scaled(m, lo, hi, "bare number")
    return ScoreParse(False, None, REASON_NO_SCORE, "none")
