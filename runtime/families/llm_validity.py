"""Answer validity: how often each LLM screener, vendor API or vendor program gave a usable answer (seed 003 §3.4).

One ``llm_validity / valid_response_rate`` row per system x condition: appended to ``metrics.csv``
when the metric suite ran (paired designs), else written as ``llm_validity.csv``. The rows qualify
the run; they carry no test and no status.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from runtime.families import AuditFamily, FamilyResult, family

VALIDITY_COLUMNS = ("family", "metric", "system", "condition", "variant", "reference", "n", "value",
                    "direction", "status", "status_operational", "notes")


def llm_report_meta(run: dict[str, Any], resolved: dict[str, Any]) -> dict[str, Any] | None:
    """What the report's answers section shows (valid-response rates, call counts, manipulation check,
    flagging trail; the answers of http, command and python systems), or None when the run read no answer
    and generated nothing with an LLM.

    ``answers``: per system sent résumés under opaque ids, ``run.json`` ``systems_info.<id>.answers``
    (answers, valid, invalid, valid_response_rate, cells_without_valid_answer, excluded_base_candidates).
    They are shown, not appended to ``metrics.csv``: a vendor's API or program scored once per résumé has
    no replicates or conditions, and its ``metrics.csv`` stays byte-identical to the same scores read from a
    score file (issue 35 §2); ``answers_<system>.csv`` keeps every answer and reason."""
    info = run["systems_info"]
    validity = [v for s in resolved["systems"] for v in info.get(s["id"], {}).get("validity", [])]
    answers = [{"system": s["id"], "kind": s["kind"], **info[s["id"]]["answers"]} for s in resolved["systems"]
               if "validity" not in info.get(s["id"], {}) and "answers" in info.get(s["id"], {})]
    calls = {s["id"]: info[s["id"]]["llm_calls"] for s in resolved["systems"]
             if "llm_calls" in info.get(s["id"], {})}
    gen = run.get("generator_info")
    if not validity and not gen and not answers:
        return None
    if gen and "llm_calls" in gen:
        calls["generator"] = gen["llm_calls"]
    replicates = {s["id"]: s["replicates"] for s in resolved["systems"] if "replicates" in s}
    return {"validity": validity, "answers": answers, "calls": calls, "generator": gen, "replicates": replicates}


def validity_rows(llm_meta: dict[str, Any] | None) -> list[dict[str, Any]]:
    """One row per system x condition: ``value`` = valid answers / all answers (in [0, 1], higher is
    better), ``n`` = answers."""
    if not llm_meta or not llm_meta["validity"]:
        return []
    return [{"family": "llm_validity", "metric": "valid_response_rate", "system": v["system"],
             "condition": v["condition"], "variant": "ALL", "reference": "", "n": v["answers"],
             "value": v["valid_response_rate"], "direction": "higher", "status": "",
             "status_operational": "",
             "notes": f"{v['invalid']} invalid answer(s); {v['cells_without_valid_answer']} cell(s) without "
                      f"a valid answer; {len(v['excluded_base_candidates'])} base candidate(s) excluded"}
            for v in llm_meta["validity"]]


def with_validity_rows(metrics: pd.DataFrame, llm_meta: dict[str, Any] | None) -> pd.DataFrame:
    """``metrics`` plus one ``llm_validity / valid_response_rate`` row per system x condition."""
    rows = validity_rows(llm_meta)
    if not rows:
        return metrics
    extra = pd.DataFrame(rows).reindex(columns=metrics.columns)
    return pd.concat([metrics, extra.astype({c: metrics[c].dtype for c in ("n",) if c in metrics})],
                     ignore_index=True)


@family("llm_validity")
class LlmValidity(AuditFamily):
    """Valid-response rates of the LLM screeners, and the report's LLM section."""

    title = "LLM response validity"

    def analyse(self, ctx) -> FamilyResult:
        meta = llm_report_meta(ctx.run, ctx.resolved)
        if "metrics" in ctx.tables:
            tables = {"metrics": with_validity_rows(ctx.tables["metrics"], meta)}
        else:
            rows = validity_rows(meta)
            tables = {"llm_validity": pd.DataFrame(rows, columns=list(VALIDITY_COLUMNS))} if rows else {}
        return FamilyResult(tables=tables, data={"meta": meta})

    def sections(self, ctx, result: FamilyResult, meta) -> list:
        from runtime.report import llm_sections

        return llm_sections(result.data["meta"], label=meta.level_text)
