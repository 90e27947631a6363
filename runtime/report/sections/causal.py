"""Report sections of the ``causal`` family: seed 001's decomposition (TE, NDE, NIE, BIE, RIE; no I/O).

:func:`causal_sections` turns ``causal.csv`` and the profiles into plain, formatted data for the
``sections/causal_*.html.j2`` templates (which hold the method prose and the readings' wording).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd

from runtime.report.charts import causal_chart_svg
from runtime.report.formatting import fmt_ci, fmt_int, fmt_sig

#: How an effect's decision reads in the results table (issue 39 §7).
DECISION_TEXT = {"significant": "≠ 0 (significant)", "equivalent": "≃ 0 (equivalent)",
                 "undetermined": "undetermined"}
from runtime.report.sections import ORDER, Section

EFFECT_TEXT = {
    "TE": "Total effect E[Y_x1] − E[Y_x0] (Eq. 1): the whole score gap caused by the attribute.",
    "NDE": "Natural direct effect (Eq. 2): the part that does not run through any mediator.",
    "NIE": "Natural indirect effect (Eq. 3): the part that runs through the mediators W = B ∪ R.",
    "BIE": "Business-necessity indirect effect (Eq. 4): the part through qualifications B.",
    "RIE": "Redlining indirect effect (Eq. 5): the part through demographic proxies R.",
}
QUANTITY_TEXT = {
    "E[Y_x0]": "mean score had everyone the reference level x0 (Eq. 6)",
    "E[Y_x1]": "mean score had everyone level x1 (Eq. 7)",
    "E[Y_x1,W_x0]": "x1, with all mediators as under x0 (Eq. 8)",
    "E[Y_x1,B_x0R_x1,R_x1]": "x1, qualifications as under x0 given R as under x1 (Eq. 9)",
    "E[Y_x1,B_x1R_x0,R_x0]": "x1, qualifications as under x1 given R as under x0 (Eq. 10)",
}
#: How each effect is named in a status sentence (seed 001 Eqs. 1-5).
EFFECT_NAME = {"TE": "the total effect TE", "NDE": "the direct effect NDE", "NIE": "the indirect effect NIE",
               "BIE": "the qualification effect BIE", "RIE": "the proxy effect RIE"}
#: The clause a positivity violation adds to a unit's status sentence.
POSITIVITY_FAILS = "positivity fails, so the path split is extrapolated"


def _and(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def status_sentence(status: str, significant: Mapping[str, bool], positivity: str, *,
                    decision: Mapping[str, str] | None = None, mde: Mapping[str, float] | None = None,
                    margin: float | None = None) -> str:
    """The status of one system x job in words, from the facts behind it (issues 31 §4, 39 §7).

    Parameters
    ----------
    status : {"FAIL", "PASS", "INCONCLUSIVE"}
        ``causal.csv``'s ``status`` (:func:`runtime.analysis.causal.path_status`: FAIL when NDE or RIE
        is significant; PASS when both are equivalent to 0 within the margin and positivity holds;
        INCONCLUSIVE otherwise). ``INVESTIGATE`` (files of methods 10 and before) reads as INCONCLUSIVE.
    significant : mapping
        Effect id (TE, NDE, NIE, BIE, RIE) -> its simultaneous 95% band excludes 0.
    positivity : str
        ``causal.csv``'s ``positivity`` (``"violated"`` or not).
    decision : mapping, optional
        Effect id -> ``significant`` / ``equivalent`` / ``undetermined`` (``causal.csv``'s ``decision``);
        without it (files before issue 39 §7) no effect is equivalent.
    mde, margin : optional
        Effect id -> MDE, and the margin, on the score scale (``causal.csv``'s ``mde`` and ``margin``).

    Returns
    -------
    str
        E.g. ``"INCONCLUSIVE: NDE and RIE are undetermined (not significant, and their 90% intervals
        are not inside ±0.02; MDE NDE 0.031, RIE 0.024)"``. An effect whose band contains 0 is "not
        significant"; it is "equivalent to 0" only when its 90% interval lies inside ±margin, and never
        "negligible".
    """
    sig = [t for t in ("TE", "NDE", "NIE", "BIE", "RIE") if significant.get(t)]
    dec = {t: (decision or {}).get(t) or ("significant" if t in sig else "undetermined") for t in EFFECT_NAME}
    m = f"±{fmt_sig(margin, 3)}" if margin is not None and margin == margin else "±margin"
    parts: list[str] = []
    if status == "FAIL":
        bad = [t for t in ("NDE", "RIE") if t in sig]
        path = {("NDE",): "direct", ("RIE",): "proxy"}.get(tuple(bad), "direct and proxy")
        parts.append(f"{_and([EFFECT_NAME[t] for t in bad])} {'is' if len(bad) == 1 else 'are'} significant, "
                     f"an impermissible path ({path})")
        others = [t for t in sig if t not in bad]
        if others:
            parts.append(f"also significant: {', '.join(others)}")
    else:
        eq = [t for t in ("NDE", "RIE") if dec[t] == "equivalent"]
        und = [t for t in ("NDE", "RIE") if dec[t] == "undetermined"]
        if eq:
            parts.append(f"{_and(eq)} {'is' if len(eq) == 1 else 'are'} equivalent to 0 (90% interval"
                         f"{'' if len(eq) == 1 else 's'} inside {m})")
        if und:
            mdes = "" if mde is None else "; MDE " + ", ".join(f"{t} {fmt_sig(mde[t], 3)}" for t in und)
            parts.append(f"{_and(und)} {'is' if len(und) == 1 else 'are'} undetermined (not significant, and not "
                         f"inside {m}{mdes})")
        if sig:
            named = f"{_and(sig)} {'is' if len(sig) == 1 else 'are'} significant"
            parts.append(f"{named}: the gap runs through qualifications (business necessity)" if status == "PASS"
                         else f"also significant: {', '.join(sig)}")
    if positivity == "violated":
        parts.insert(0 if status != "FAIL" else len(parts), POSITIVITY_FAILS)
    return f"{status}: " + "; ".join(parts)


def _margin_fact(est: Mapping[str, Any]) -> str:
    """``candidates.estimation.margin`` in words: written or the methods default (issue 39 §7)."""
    from compiler.methods import CAUSAL_MARGIN

    written = est.get("margin")
    value = CAUSAL_MARGIN if written is None else float(written)
    return (f"±{value:g} of the score range ({'written' if written is not None else 'methods default'}): an effect "
            "is ≃ 0 only when its 90% interval lies inside it")


def _fmt(x: Any) -> str:
    return fmt_sig(x, 4, signed=True)


def causal_sections(*, causal: pd.DataFrame, profiles: pd.DataFrame,
                    candidates: Mapping[str, Any]) -> list[Section]:
    """The report sections of a population run (deterministic in its inputs).

    Parameters
    ----------
    causal : pandas.DataFrame
        ``causal.csv`` (:data:`runtime.families.causal.CAUSAL_COLUMNS`).
    profiles : pandas.DataFrame
        ``profiles.csv`` rows (for the population summary).
    candidates : Mapping
        The resolved population ``candidates`` (roles, estimation, P1 source).

    Returns
    -------
    list of Section
        ``causal-facts`` (front matter), ``causal`` (summary and one unit per system × job),
        ``design`` (population and systems) and ``causal-method`` (method notes).
    """
    from runtime.analysis.causal import CASES, classify_cases
    from runtime.generate.population import occupation_table

    roles = candidates["roles"]
    est = candidates["estimation"]
    # splits of the repeated cross-fitting, as run (causal.csv column ``repeats``, methods v6)
    repeats = int(causal["repeats"].dropna().iloc[0]) if "repeats" in causal and causal["repeats"].notna().any() else 1
    units = []
    for (system, job), g in causal.groupby(["system", "job_id"], sort=False):
        eff = g[g["kind"] == "effect"].set_index("term")
        qty = g[g["kind"] == "quantity"].set_index("term")
        first = g.iloc[0]
        sig = {t: str(v) == "True" for t, v in eff["significant"].items()}
        # the simultaneous band (max-t over the five effects) decides significance; files written
        # before it existed carry only the per-effect interval
        band = eff[["sim_low", "sim_high"]] if "sim_low" in eff else eff[["ci_low", "ci_high"]].set_axis(
            ["sim_low", "sim_high"], axis=1)
        # equivalence (issue 39 §7); files written before it hold no decision: nothing is equivalent there
        has_eq = "decision" in eff and eff["decision"].notna().all() and (eff["decision"] != "").all()
        decision = ({t: str(v) for t, v in eff["decision"].items()} if has_eq else
                    {t: "significant" if sig[t] else "undetermined" for t in eff.index})
        equivalent = {t: decision[t] == "equivalent" or (has_eq and str(eff.loc[t, "equivalent"]) == "True")
                      for t in eff.index}
        margin = float(eff["margin"].iloc[0]) if has_eq and "margin" in eff else None
        mde = {t: float(v) for t, v in eff["mde"].items()} if has_eq and "mde" in eff else None
        verdict = classify_cases(sig, eff["estimate"].to_dict(), equivalent)
        anchor = f"causal-{system}-{job}".replace("_", "-")
        chart = causal_chart_svg(
            chart_id=anchor, title=f"Path-specific effects of {first['attribute']} on the score of {system}, job {job}",
            ylabel=f"effect on score ({first['x1']} − {first['x0']})", effects=list(eff.index),
            values=eff["estimate"].tolist(), ci_low=band["sim_low"].tolist(), ci_high=band["sim_high"].tolist(),
            significant=[sig[t] for t in eff.index])
        units.append({
            "anchor": anchor, "system": system, "job": job, "attribute": first["attribute"],
            "x0": first["x0"], "x1": first["x1"], "n": fmt_int(first["n"]), "n_x0": fmt_int(first["n_x0"]),
            "n_x1": fmt_int(first["n_x1"]), "status": first["status"], "status_text": status_sentence(str(first["status"]), sig, str(first["positivity"]),
                                                                             decision=decision, mde=mde, margin=margin),
            "margin": fmt_sig(margin, 3) if margin is not None else "—",
            "cases": list(verdict.cases), "verdict": verdict.label,
            "readings": [{"case": c, "name": CASES[c][0], "text": CASES[c][1]} for c in verdict.cases]
                        or [{"case": "—", "name": verdict.label, "text": verdict.reading}],
            "chart_svg": chart,
            "positivity": first["positivity"],
            "positivity_violated": first["positivity"] == "violated",
            "clipped_rz": f"{first['clipped_p_x_rz']:.0%}", "clipped_brz": f"{first['clipped_p_x_brz']:.0%}",
            "effects": [{"term": t, "estimate": _fmt(r.estimate), "ci": fmt_ci(r.ci_low, r.ci_high, 4, signed=True),
                         "band": fmt_ci(band.loc[t, "sim_low"], band.loc[t, "sim_high"], 4, signed=True),
                         "se": fmt_sig(r.se, 3), "significant": sig[t], "text": EFFECT_TEXT[t],
                         "eq": fmt_ci(r.eq_low, r.eq_high, 4, signed=True) if has_eq else "—",
                         "decision": DECISION_TEXT[decision[t]],
                         "mde": fmt_sig(r.mde, 3) if has_eq else "—"}
                        for t, r in eff.iterrows()],
            "quantities": [{"term": t, "estimate": _fmt(r.estimate), "ci": fmt_ci(r.ci_low, r.ci_high, 4, signed=True),
                            "text": QUANTITY_TEXT.get(t, "")} for t, r in qty.iterrows()],
            "identity": f"NIE {_fmt(eff.loc['NIE', 'estimate'])} = BIE {_fmt(eff.loc['BIE', 'estimate'])} + "
                        f"RIE {_fmt(eff.loc['RIE', 'estimate'])}",
        })
    occ = occupation_table()
    p1 = str(profiles["p1_source"].iloc[0]) if len(profiles) else "—"
    bundled = p1.startswith("bundled")
    pop = []
    for job, g in profiles.groupby("job_id", sort=False):
        pop.append({"job": job, "n": fmt_int(len(g)),
                    "female": f"{(g['gender'] == 'female').mean():.1%}",
                    "race": " · ".join(f"{k} {v:.0%}" for k, v in g["race"].value_counts(normalize=True).items()),
                    "age": f"{g['age'].min()}–{g['age'].max()} (median {g['age'].median():.0f})",
                    "education": " · ".join(f"{k} {v:.0%}" for k, v in g["education"].value_counts(normalize=True).items()),
                    "experience": f"median {g['experience'].median():.1f} y (max {g['experience'].max():.1f})"})
    roles_text = {"x": f"{roles['x']['attribute']} (x0 = {roles['x']['x0']}, x1 = {roles['x']['x1']})",
                  "z": ", ".join(roles["z"]) or "—", "b": ", ".join(roles["b"]) or "—",
                  "r": ", ".join(roles["r"]) or "—"}
    summary = [{"system": u["system"], "job": u["job"], "status": u["status"], "cases": ", ".join(u["cases"]) or "—",
                "verdict": u["verdict"], "anchor": u["anchor"], "positivity": u["positivity"]} for u in units]
    facts = [
        {"label": "Protected attribute X", "value": roles_text["x"], "code": False},
        {"label": "Cross-fitting", "value": f"L = {est['folds']} folds × S = {repeats} split{'' if repeats == 1 else 's'}", "code": False},
        {"label": "Bootstrap draws", "value": f"{est['bootstrap']} (multiplier)", "code": False},
        {"label": "Confidence", "value": f"{round((1 - est['alpha']) * 100)}%", "code": False},
        {"label": "Equivalence margin", "value": _margin_fact(est), "code": False},
        {"label": "Population source (P1)", "value": p1, "code": False, "wide": True},
    ]
    method = {
        "p1": p1, "bundled": bundled,
        "experience_model": (profiles["experience_model"].iloc[0] if "experience_model" in profiles else "declared"),
        "experience_share": candidates["experience"]["share"], "experience_sd": candidates["experience"]["sd"],
        "folds": est["folds"], "repeats": repeats, "bootstrap": int(est["bootstrap"]), "confidence": f"{100 * (1 - est['alpha']):.0f}",
        "onet_attribution": occ["provenance"]["onet"],
    }
    return [
        Section(id="causal-facts", title="Design at a glance", template="_glance.html.j2",
                context={"anchor": "causal-facts", "facts": facts}, order=ORDER["facts"], toc=False),
        Section(id="causal", title="Causal decomposition", template="sections/causal_decomposition.html.j2",
                context={"roles": roles_text, "summary": summary, "units": units}, order=ORDER["summary"]),
        Section(id="design", title="Population and design", template="sections/causal_design.html.j2",
                context={"roles": roles_text, "population": pop}, order=ORDER["design"]),
        Section(id="causal-method", title="Method notes", template="sections/causal_method.html.j2",
                context=method, order=ORDER["appendix"]),
    ]
