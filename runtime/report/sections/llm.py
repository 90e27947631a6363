"""Report section of the ``llm_validity`` family: valid-response rates, call counts, manipulation check, flags.

Sources: seed 003 §3.5 and §3.7 (replicates, the share of valid answers; the manipulation check),
seed 000 §3.1.4 and §3.2 (flagging agent in the audit trail; axis classifier with safe defaults).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Mapping

from runtime.report.formatting import fmt_int
from runtime.report.sections import ORDER, Section


def _pct(x: Any) -> str:
    try:
        return f"{100 * float(x):.1f}%"
    except (TypeError, ValueError):
        return "—"


def llm_sections(llm_meta: Mapping[str, Any] | None, *,
                 label: Callable[[Any, str], str] | None = None) -> list[Section]:
    """The "LLM screeners and generation agents" section (titled "Answers of the systems under test" when
    only http, command or python systems answered), or none when the run read no answer and used no LLM.

    Parameters
    ----------
    llm_meta : Mapping or None
        :func:`runtime.families.llm_validity.llm_report_meta`: ``validity`` rows, ``calls`` per caller,
        ``replicates`` per system and the ``generator`` (model, manipulation check, phase A, flags).
    label : callable, optional
        ``(level, axis) -> text``: a level with its label beside it (issue 31 §3;
        :meth:`runtime.report.meta.ReportMeta.level_text`), for the manipulation check's intended level.
    """
    if not llm_meta:
        return []
    llm = llm_meta
    validity = [{
        "system": v["system"], "condition": v["condition"], "answers": fmt_int(v["answers"]),
        "valid": fmt_int(v["valid"]), "invalid": fmt_int(v["invalid"]),
        "rate": _pct(v["valid_response_rate"]), "replicates": fmt_int(v["replicates"]),
        "unscored": fmt_int(v["cells_without_valid_answer"]),
        "excluded": ", ".join(v["excluded_base_candidates"]) or "none",
        "low": v["valid_response_rate"] < 1.0,
    } for v in llm.get("validity") or []]
    answers = [{
        "system": a["system"], "kind": a["kind"], "answers": fmt_int(a["answers"]), "valid": fmt_int(a["valid"]),
        "invalid": fmt_int(a["invalid"]), "rate": _pct(a["valid_response_rate"]),
        "unscored": fmt_int(a["cells_without_valid_answer"]),
        "excluded": ", ".join(a["excluded_base_candidates"]) or "none", "low": a["valid_response_rate"] < 1.0,
    } for a in llm.get("answers") or []]
    calls = [{"who": who, **{k: fmt_int(c.get(k, 0)) for k in ("calls", "from_cache", "retries", "invalid",
                                                                "tokens_in", "tokens_out")}}
             for who, c in (llm.get("calls") or {}).items()]
    gen = llm.get("generator") or {}
    manip = [{
        "variant": m["variant"], "axis": m["axis"],
        "intended": label(m["intended"], m["axis"]) if label else m["intended"], "n": fmt_int(m["n"]),
        "ok": fmt_int(m["classified_as_intended"]), "rate": _pct(m["rate"]),
        "defaulted": fmt_int(m["defaulted"]), "low": (m["rate"] or 0) < 0.8,
    } for m in gen.get("manipulation_check") or []]
    phase_a = [{"job": j, "requested": fmt_int(p["requested_matching"]), "labelled": fmt_int(p["labelled_matching"])}
               for j, p in (gen.get("phase_a") or {}).items() if p]
    reps = [f"{s} {int(r)}" for s, r in (llm.get("replicates") or {}).items()]
    data = {"validity": validity, "answers": answers, "calls": calls, "manipulation": manip, "generator": bool(gen),
            "generator_model": gen.get("model", ""), "flags": gen.get("flags", 0),
            "followups": gen.get("followups", 0), "phase_a": phase_a,
            "replicates": ", ".join(reps) or "—"}
    llm_used = bool(validity or calls or gen)
    data["title"] = ("LLM screeners and generation agents" + (" and systems' answers" if answers else "")
                     if llm_used else "Answers of the systems under test")
    return [Section(id="llm", title=data["title"], template="sections/llm.html.j2", context=data, order=ORDER["llm"])]
