"""The report section of the ``ll144`` family (``#ll144``): NYC Local Law 144 rates and impact ratios.

Plain, formatted data for ``sections/ll144.html.j2``: per system x condition x job the sex,
race/ethnicity and intersectional tables of ``ll144.csv`` (6 RCNY §5-300, §5-301), the level ->
category mapping, how the test data was made, and what lies beyond the law (intervals, tests, the
EEOC's four-fifths guideline as guidance). The words "four-fifths" and "statutory" belong to this
section alone (issue 33 §7).
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from runtime.report.formatting import fmt_ci, fmt_int, fmt_num, fmt_p, fmt_sig
from runtime.report.sections import ORDER, Section

TABLE_TITLES = {"sex": "Sex", "race_ethnicity": "Race/ethnicity", "intersectional": "Intersectional (sex × race/ethnicity)"}
#: Intersectional categories with at most this many individuals could identify them if posted.
IDENTIFYING_N = 2


def _label(category: str, labels: dict[str, str]) -> str:
    if "/" in category:
        s, r = category.split("/", 1)
        return f"{labels.get(s, s)} {labels.get(r, r)}"
    return labels.get(category, category)


def ll144_section(table: pd.DataFrame, *, block: dict[str, Any], resolved: dict[str, Any], paired: bool,
                  labels: dict[str, str], applicants: dict[str, Any] | None = None) -> Section:
    """The ``#ll144`` section (``ORDER["ll144"]``) of one run's ``ll144.csv``.

    Parameters
    ----------
    table : pandas.DataFrame
        ``ll144.csv`` (:data:`runtime.analysis.ll144.COLUMNS`), groups in the order they are shown.
    block : dict
        The resolved ``analysis.ll144`` block (basis, mapping, ``why_test_data``, rule, thresholds).
    resolved : dict
        The resolved spec (its ``analysis.decision`` says how the system selects).
    paired : bool
        The individuals are résumé x variant rows (else profiles of a population design).
    labels : dict
        Category id -> the EEO-1 label printed.
    applicants : dict or None
        An applicant-file audit's record (issue 34; ``run.json`` ``applicants``: per system the file, its
        sha256, rows, groups, retention); None on test data.

    Returns
    -------
    Section
        Formatted strings only: rates and ratios to 4 significant digits, "—" for undefined; the
        reference row and intersectional cells with n <= :data:`IDENTIFYING_N` are marked.
    """
    basis = block["rate"]
    groups = []
    for (system, condition, group), g in table.groupby(["system", "condition", "group"], sort=False):
        tables = []
        for name, t in g.groupby("table", sort=False):
            rows = []
            for r in t.to_dict(orient="records"):
                small_identifying = (name == "intersectional" and r["category"] != "unknown"
                                     and 0 < r["n"] <= IDENTIFYING_N)
                rows.append({"category": _label(r["category"], labels), "n": fmt_int(r["n"]),
                             "positive": fmt_num(r["n_positive"]), "rate": fmt_sig(r["rate"]),
                             "ratio": fmt_sig(r["impact_ratio"]), "excluded": bool(r["excluded"]),
                             "reason": (r["reason"] if isinstance(r["reason"], str) else "")
                             or ("highest rate: the reference of the ratios" if r["impact_ratio"] == 1.0 else ""),
                             "at_median": fmt_int(r["n_at_median"]) if basis == "scoring" else "",
                             "status": r["status"] if isinstance(r["status"], str) else "",
                             "ci": fmt_ci(r["extra_ci_low"], r["extra_ci_high"]),
                             "p": fmt_p(r["extra_p_value"]), "identifying": small_identifying,
                             "unknown": r["category"] == "unknown"})
            median = t["median"].iloc[0]
            tables.append({"title": TABLE_TITLES[name], "rows": rows, "median": fmt_sig(median),
                           "n_total": fmt_int(t["n"].sum()),
                           "identifying": any(x["identifying"] for x in rows)})
        groups.append({"system": system, "condition": condition, "group": group, "tables": tables})
    mapping = []
    for key, what in (("sex", "Sex"), ("race_ethnicity", "Race/ethnicity")):
        m = block.get(key)
        if applicants is not None:
            for s in resolved["systems"]:
                mapping.append({"what": what, "source": f"labels of {s['data']['path']} (system {s['id']})",
                                "levels": [(lv if lv else "(empty cell)", _label(cat, labels))
                                           for lv, cat in s["labels"][key].items()]})
        elif m:
            source = f"axis {m['axis']}" if "axis" in m else f"profile attribute {m['attribute']}"
            mapping.append({"what": what, "source": source,
                            "levels": [(lv, _label(cat, labels)) for lv, cat in m["levels"].items()]})
    decision = resolved["analysis"].get("decision") or {}
    t = decision.get("threshold")
    threshold_text = None if t is None else ("; ".join(f"{k}: {fmt_num(v)}" for k, v in t.items())
                                             if hasattr(t, "items") else fmt_num(t))
    thresholds = block.get("thresholds")
    context = {
        "groups": groups, "basis": basis, "mapping": mapping, "paired": paired,
        "why_test_data": block.get("why_test_data"), "rule": (block.get("small_category_rule") or {}).get("justification"),
        "no_race": applicants is None and not block.get("race_ethnicity"),
        "no_sex": applicants is None and not block.get("sex"),
        "threshold": threshold_text, "top_k": decision.get("top_k"), "bootstrap": block["bootstrap"],
        "thresholds": thresholds, "identifying_n": IDENTIFYING_N,
        "population": not paired and applicants is None,
        "applicants": [{"system": sid, **a} for sid, a in (applicants or {}).items()] or None,
    }
    return Section(id="ll144", title="NYC Local Law 144: selection or scoring rates and impact ratios",
                   template="sections/ll144.html.j2", order=ORDER["ll144"], context=context)
