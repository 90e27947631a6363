"""The postable summary of an LL144 bias audit, ``ll144-summary.html`` (issue 34 §4).

One self-contained A4 page (inline CSS; no script, no external URL) an employer can post: the date of
the audit, the employer, the AEDT (name, version, distribution date), the auditor and their
independence, the data (source, type, range), the applicants per group and the unknowns per table,
the three tables with their exclusions, the definitions, and a footer naming the run, the spec digest
and how to check the seal (6 RCNY §5-303, §5-304: the summary of results; §5-300 definitions). The
``ll144`` family returns it as a document (:attr:`runtime.families.base.FamilyResult.documents`), so it
is written before the seal and hashed by the manifest.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from runtime.report.formatting import fmt_int, fmt_num, fmt_sig
from runtime.report.sections.ll144 import IDENTIFYING_N

#: The document's file name in the run folder.
NAME = "ll144-summary.html"
TEMPLATE = "sections/ll144_summary.html.j2"
TABLE_TITLES = {"sex": "Sex", "race_ethnicity": "Race/ethnicity", "intersectional": "Intersectional (sex × race/ethnicity)"}


def _date(value: Any) -> str:
    """YYYY-MM-DD of an ISO date or time (empty when absent)."""
    return str(value)[:10] if value else ""


def summary_context(table: pd.DataFrame, *, resolved: dict[str, Any], run: dict[str, Any], block: dict[str, Any],
                    labels: dict[str, str], applicants: dict[str, Any] | None) -> dict[str, Any]:
    """The summary's context: formatted strings only (dates YYYY-MM-DD, rates and ratios to 4 significant
    digits, "—" for undefined)."""
    d = resolved.get("disclosure") or {}
    data = d.get("data") or {}
    rule = (block.get("small_category_rule") or {}).get("justification")
    groups = []
    # the small-category rule's share is of the audit's data: the system x condition over every group
    audit_n = table.groupby(["system", "condition", "table", "category"], sort=False)["n"].sum()
    first = table.groupby(["system", "condition"], sort=False)["table"].first()
    audit_total = {k: int(audit_n.loc[(*k, first[k])].sum()) for k in first.index}
    for (system, condition, group), g in table.groupby(["system", "condition", "group"], sort=False):
        tables, unknowns = [], []
        total = int(g[g["table"] == g["table"].iloc[0]]["n"].sum())
        for name, t in g.groupby("table", sort=False):
            rows = [{"category": labels.get(r["category"], r["category"]) if "/" not in r["category"] else
                     " / ".join(labels.get(c, c) for c in r["category"].split("/")),
                     "n": fmt_int(r["n"]), "rate": fmt_sig(r["rate"]), "ratio": fmt_sig(r["impact_ratio"]),
                     "note": "; ".join(x for x in (_note(r, rule, int(audit_n[(system, condition, name, r["category"])]),
                                                                 audit_total[(system, condition)]), "n ≤ 2: could identify individuals"
                                                   if name == "intersectional" and 0 < r["n"] <= IDENTIFYING_N else "")
                                       if x),
                     "excluded": bool(r["excluded"])}
                    for r in t.to_dict(orient="records") if r["category"] != "unknown"]
            unk = t[t["category"] == "unknown"]["n"]
            unknowns.append({"table": TABLE_TITLES[name], "n": fmt_int(unk.iloc[0] if len(unk) else 0)})
            tables.append({"name": name, "title": TABLE_TITLES[name], "rows": rows,
                           "notes": any(r["note"] for r in rows)})
        groups.append({"system": system, "condition": condition, "group": group, "n": fmt_int(total),
                       "tables": tables, "unknowns": unknowns, "parts": _parts(tables)})
    kind = "historical" if applicants is not None else "test"
    size = sum(a["rows"] for a in (applicants or {}).values()) if applicants is not None else None
    return {
        "audit_date": _date(run.get("generated_at")), "employer": d.get("employer", ""),
        "aedt": {k: (_date(v) if k == "distributed" else v) for k, v in (d.get("aedt") or {}).items()},
        "auditor": d.get("auditor") or {}, "data_source": data.get("source", ""), "data_type": kind,
        "data_from": _date(data.get("from")), "data_to": _date(data.get("to")),
        "why_test_data": block.get("why_test_data"), "size": fmt_int(size) if size is not None else None,
        "basis": block["rate"], "rule": (block.get("small_category_rule") or {}).get("justification"),
        "groups": groups, "run_id": run.get("run_id", ""), "audit": resolved["audit"],
        "spec_digest": (run.get("spec_digest") or {}).get("digest", ""),
        "threshold": _threshold((resolved["analysis"].get("decision") or {}).get("threshold")),
    }


def _parts(tables: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """The page's layout of a group's tables: sex and race/ethnicity side by side (they are short), the
    intersectional table below at full width, so that a summary of two groups fits one A4 page."""
    short = [t for t in tables if t["name"] != "intersectional"]
    return ([short] if short else []) + [[t] for t in tables if t["name"] == "intersectional"]


def _note(row: dict[str, Any], rule: str | None, n_audit: int, total: int) -> str:
    """A row's note, short (the page is posted): the rule's justification is printed once, with the
    definitions, as is the reference (the ratio of 1.000); an excluded category's share of the audit's
    individuals (``n_audit`` of ``total``, every group together: 6 RCNY §5-301(d)) to two decimals (``0.60%``),
    whatever ``ll144.csv``'s reason prints."""
    reason = row["reason"] if isinstance(row["reason"], str) else ""
    if rule and reason.endswith(f"({rule})"):
        return f"excluded: {100 * n_audit / total:.2f}% of the audit"
    return reason


def _threshold(t: Any) -> str | None:
    if t is None:
        return None
    return "; ".join(f"{k}: {fmt_num(v)}" for k, v in t.items()) if hasattr(t, "items") else fmt_num(t)


def ll144_summary(table: pd.DataFrame, *, resolved: dict[str, Any], run: dict[str, Any], block: dict[str, Any],
                  labels: dict[str, str], applicants: dict[str, Any] | None) -> bytes:
    """``ll144-summary.html`` as bytes (deterministic in its inputs).

    Parameters
    ----------
    table : pandas.DataFrame
        ``ll144.csv`` (:data:`runtime.analysis.ll144.COLUMNS`).
    resolved : dict
        The resolved spec (its ``disclosure`` block is required here).
    run : dict
        ``run.json`` as it stands (``generated_at``: the audit date; ``run_id``; ``spec_digest``).
    block : dict
        The resolved ``analysis.ll144``.
    labels : dict
        Category id -> EEO-1 label.
    applicants : dict or None
        ``run.json`` ``applicants`` (historical data), None on test data.
    """
    from runtime.report.render import render_document

    return render_document(TEMPLATE, s=summary_context(table, resolved=resolved, run=run, block=block, labels=labels,
                                                      applicants=applicants))
