"""The EU AI Act Annex IV §2(g) test record (issue 34 §5): ``<section id="annex-iv">``, written when the spec's
``disclosure.provider`` is.

Annex IV §2(g) asks for "the validation and testing procedures used, including information about the
validation and testing data used and their main characteristics; metrics used to measure accuracy,
robustness ... and potentially discriminatory impacts, test logs and all test reports dated and signed
by the responsible persons". The section names the provider, the system, its intended purpose, the
procedure (the audit families run, the methods version), the test data (type, source, size, range), the
metrics, links to the results, the date, the signature box and ``manifest.json``, and each responsible
person with their role: "signed at sealing" when the name and role match the key that sealed the run
(:func:`runtime.provenance.sign.provenance_context`), else "not signed at sealing" with the
``audit verify --require-role ROLE`` that checks a countersignature.
"""

from __future__ import annotations

from typing import Any, Mapping

#: Each audit family's results section (anchor) and the metrics it reports, in words.
FAMILY_RESULTS = {
    "ll144": ("ll144", "NYC Local Law 144 selection or scoring rates and impact ratios by sex, race/ethnicity and "
              "both (6 RCNY §5-300)"),
    "metric_suite": ("results", "seed 000's nine metrics (score delta, MARC, flip rate, retention, shortlist "
                     "retention ratio, recall and nDCG at K, equal opportunity and equalized odds gaps)"),
    "effects": ("effects", "standardised effects (Cohen's d) against a smallest effect size of interest"),
    "causal": ("causal", "natural direct and indirect effects (seed 001)"),
    "descriptives": ("descriptives", "descriptive statistics of the scores"),
    "llm_validity": ("llm", "the validity of the systems' answers (LLM screeners, APIs, programs)"),
}

SIGNED = "signed at sealing"
NOT_SIGNED = "not signed at sealing"


def _same(a: Any, b: Any) -> bool:
    return isinstance(a, str) and isinstance(b, str) and a.strip().casefold() == b.strip().casefold()


def annex_iv_context(resolved: Mapping[str, Any], run: Mapping[str, Any], provenance: Mapping[str, Any] | None,
                     families: list[str]) -> dict[str, Any]:
    """The section's context.

    Parameters
    ----------
    resolved : Mapping
        The resolved spec (``disclosure`` with ``provider``; its systems).
    run : Mapping
        ``run.json`` as it stands (run id, start time, methods version, counts, ``applicants``).
    provenance : Mapping or None
        :func:`runtime.provenance.sign.provenance_context`: ``signed``, ``signer_name``, ``signer_role``.
    families : list of str
        The audit families the run ran, in order.

    Returns
    -------
    dict
        Formatted strings; ``responsible``: each person with ``status`` (:data:`SIGNED` or :data:`NOT_SIGNED`)
        and, when not signed, the ``verify`` command that checks a countersignature in their role.
    """
    d = resolved.get("disclosure") or {}
    data = d.get("data") or {}
    prov = provenance or {}
    signer_name, signer_role = prov.get("signer_name"), prov.get("signer_role")
    people = []
    for p in d.get("responsible") or []:
        signed = bool(prov.get("signed")) and _same(p.get("name"), signer_name) and _same(p.get("role"), signer_role)
        people.append({"name": p["name"], "role": p["role"], "organisation": p.get("organisation") or "",
                       "status": SIGNED if signed else NOT_SIGNED,
                       "verify": None if signed else f'audit verify RUN_DIR --require-role "{p["role"]}"'})
    applicants = run.get("applicants")
    if applicants:
        size = f"{sum(int(a['rows']) for a in applicants.values()):,} historical applicants"
        kind = "historical data of the system's use"
    else:
        size = f"{(run.get('counts') or {}).get('scored', '—')} scored résumés or profiles"
        kind = "test data designed by the audit (not applicants)"
    aedt = d.get("aedt") or {}
    system = f"{aedt['name']}, version {aedt['version']}" if aedt else ", ".join(s["id"] for s in resolved["systems"])
    results = [{"family": f, "anchor": FAMILY_RESULTS[f][0], "metrics": FAMILY_RESULTS[f][1]}
               for f in families if f in FAMILY_RESULTS]
    return {"provider": d.get("provider", ""), "system": system, "purpose": d.get("intended_purpose") or "—",
            "families": list(families), "methods_version": run.get("methods_version", "—"),
            "data_type": kind, "data_source": data.get("source") or "—", "data_size": size,
            "data_range": f"{data['from']} to {data['to']}" if data.get("from") and data.get("to") else "not stated",
            "results": results, "date": str(run.get("generated_at") or "")[:10], "run_id": run.get("run_id", ""),
            "signed": bool(prov.get("signed")), "signer": prov.get("signer"), "responsible": people}
