"""Report of a population design: the causal decomposition of seed 001 (TE, NDE, NIE, BIE, RIE).

``build_population_context`` turns ``causal.csv`` and the profiles into plain, formatted data for
``report_population.html.j2``, which includes ``_causal.html.j2`` (the decomposition section).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd

from runtime.report.charts import causal_chart_svg
from runtime.report.formatting import fmt_ci, fmt_int, fmt_seconds, fmt_sig

TEMPLATE = "report_population.html.j2"
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
STATUS_TEXT = {
    "FAIL": "an impermissible pathway is significant (direct effect NDE or proxy effect RIE)",
    "INVESTIGATE": "a significant effect runs only through qualifications or is not attributable to a path",
    "PASS": "no effect's 95% CI excludes 0",
}


def _fmt(x: Any) -> str:
    return fmt_sig(x, 4, signed=True)


def build_population_context(*, causal: pd.DataFrame, profiles: pd.DataFrame, meta: Mapping[str, Any],
                             candidates: Mapping[str, Any]) -> dict[str, Any]:
    """Template context of a population run (deterministic in its inputs).

    Parameters
    ----------
    causal : pandas.DataFrame
        ``causal.csv`` (:data:`runtime.families.causal.CAUSAL_COLUMNS`).
    profiles : pandas.DataFrame
        ``profiles.csv`` rows (for the population summary).
    meta : Mapping
        :func:`runtime.pipeline.metadata.report_meta`.
    candidates : Mapping
        The resolved population ``candidates`` (roles, estimation, P1 source).
    """
    from runtime.analysis.causal import CASES, classify_cases
    from runtime.generate.population import occupation_table

    digest = meta.get("spec_digest") or {}
    header = {
        "title": meta.get("title"), "audit": meta.get("audit"), "run_id": meta.get("run_id"),
        "seed": meta.get("seed"), "tool_version": meta.get("tool_version"), "spec_path": meta.get("spec_path"),
        "digest_algorithm": digest.get("algorithm", "sha256"), "digest": digest.get("digest", ""),
        "lock_created_at": meta.get("lock_created_at"), "generated_at": meta.get("generated_at"),
    }
    roles = candidates["roles"]
    est = candidates["estimation"]
    units = []
    for (system, job), g in causal.groupby(["system", "job_id"], sort=False):
        eff = g[g["kind"] == "effect"].set_index("term")
        qty = g[g["kind"] == "quantity"].set_index("term")
        first = g.iloc[0]
        sig = {t: str(v) == "True" for t, v in eff["significant"].items()}
        verdict = classify_cases(sig, eff["estimate"].to_dict())
        anchor = f"causal-{system}-{job}".replace("_", "-")
        chart = causal_chart_svg(
            chart_id=anchor, title=f"Path-specific effects of {first['attribute']} on the score of {system}, job {job}",
            ylabel=f"effect on score ({first['x1']} − {first['x0']})", effects=list(eff.index),
            values=eff["estimate"].tolist(), ci_low=eff["ci_low"].tolist(), ci_high=eff["ci_high"].tolist(),
            significant=[sig[t] for t in eff.index])
        units.append({
            "anchor": anchor, "system": system, "job": job, "attribute": first["attribute"],
            "x0": first["x0"], "x1": first["x1"], "n": fmt_int(first["n"]), "n_x0": fmt_int(first["n_x0"]),
            "n_x1": fmt_int(first["n_x1"]), "status": first["status"], "status_text": STATUS_TEXT[first["status"]],
            "cases": list(verdict.cases), "verdict": verdict.label,
            "readings": [{"case": c, "name": CASES[c][0], "text": CASES[c][1]} for c in verdict.cases]
                        or [{"case": "—", "name": verdict.label, "text": verdict.reading}],
            "chart_svg": chart,
            "positivity": first["positivity"],
            "positivity_text": (
                f"Positivity warning: the mediators nearly determine {first['attribute']} "
                f"(P(X|R,Z) clipped to [0.01, 0.99] for {first['clipped_p_x_rz']:.0%} of profiles, P(X|B,R,Z) for "
                f"{first['clipped_p_x_brz']:.0%}). Profiles of one level with the other level's mediator values "
                "(e.g. men with female-typical first names) are too rare, so E[Y_x1,W_x0] and the Eq. 9-10 terms "
                "are extrapolated: NDE, NIE, BIE and RIE, and the cases built on them, are not reliable here. "
                "TE needs only P(X|Z) and stays identified. Remedies: coarser or fewer R mediators, or more "
                "profiles with atypical names (microdata)."
                if first["positivity"] == "violated" else ""),
            "effects": [{"term": t, "estimate": _fmt(r.estimate), "ci": fmt_ci(r.ci_low, r.ci_high, 4, signed=True),
                         "se": fmt_sig(r.se, 3), "significant": sig[t], "text": EFFECT_TEXT[t]}
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
    notes = [
        {"title": "Why no counterfactual metrics",
         "text": "A population design samples realistic applicants instead of pairing one base resume with "
                 "demographic variants, so the nine counterfactual, group and merit metrics of the "
                 "correspondence-audit report (score delta, MARC, flip rate, ...) do not apply and are not "
                 "computed. The causal decomposition below replaces them."},
        {"title": "Profiles (seed 001 §4.1)",
         "text": "P(X,Z,state,edu|J)·P(exp|X,Z,state,edu,J)·P(first|gender,age)·P(surname|race). "
                 f"P1 source: {p1}. P2: truncated normal on [0, age − 18] "
                 f"({profiles['experience_model'].iloc[0] if 'experience_model' in profiles else 'declared'}; "
                 f"share {candidates['experience']['share']}, sd {candidates['experience']['sd']} when declared). "
                 "P3: SSA first names by birth decade and sex (300 most common per decade and sex). "
                 "P4: Census 2010 top-1000 surnames, P(surname|race) ∝ count × race share."},
        {"title": "Limits of the bundled approximation" if bundled else "Microdata",
         "text": ("No joint occupation × sex × race × education × state table is in the reference data, so "
                  "gender and race are drawn independently from BLS CPS 2022 Table 11 shares, education from "
                  "the O*NET 'required level of education' distribution of the occupation (limited to levels "
                  "reachable at the profile's age), and state uniformly over the 50 states and DC. Education "
                  "and region are therefore independent of gender and race given age: the qualification (BIE) "
                  "and region parts of the decomposition can only be driven by age-linked differences, and "
                  "their estimates describe this approximation, not the labour market. Supply microdata "
                  "(e.g. an ACS PUMS extract) for a realistic joint distribution.") if bundled else
                 "P1 is the empirical distribution of the auditor's microdata (rows resampled with replacement, "
                 "weighted when a weight column is mapped)."},
        {"title": "Estimator (seed 001 §3.2, App. C)",
         "text": f"Doubly robust, cross-fitted DML-UCA with L = {est['folds']} folds; nuisances P(X|Z), P(X|R,Z), "
                 "P(X|B,R,Z) and the nested regressions E[Y|B,R,X,Z], E[μ3|R,X,Z], E[μ2|X,Z] are scikit-learn "
                 "histogram gradient-boosted trees with hyperparameters chosen on the App. C.5 grid (Brier score "
                 "for P(X|·), MSE for E[Y|·]); high-cardinality attributes are grouped as in App. C.4 (first "
                 "name → gender and age typicality, surname → race group, state → Census region, education → "
                 f"low/medium/high). {int(est['bootstrap'])} Gaussian multiplier-bootstrap draws of the "
                 f"influence function give {100 * (1 - est['alpha']):.0f}% percentile intervals; an effect is "
                 "significant when its interval excludes 0 (§5.1). NIE = BIE + RIE holds exactly (RIE is "
                 "computed as NIE − BIE, equal to Eq. 5)."},
        {"title": "Status (gate of --fail-on)",
         "text": "FAIL: NDE or RIE significant (a direct or proxy pathway, impermissible under the disparate-"
                 "treatment and redlining doctrines). INVESTIGATE: some other effect significant (e.g. BIE only, "
                 "which may be defensible as business necessity, but must be justified), or positivity violated (the "
                 "path-specific effects are extrapolated, so none of them can be cleared). PASS: none significant "
                 "and positivity holds. "
                 "This mapping is this tool's policy, not seed 001's; the case readings are seed 001 §5.2."},
        {"title": "Data attribution",
         "text": occ["provenance"]["onet"] + " BLS CPS and SSA/Census name tables are public-domain U.S. "
                 "government works."},
    ]
    timings = [{"stage": str(k), "seconds": fmt_seconds(v)} for k, v in (meta.get("timings") or {}).items()]
    versions = [{"package": k, "version": v} for k, v in (meta.get("versions") or {}).items()]
    return {
        "header": header, "units": units, "population": pop, "p1_source": p1, "bundled": bundled,
        "roles": {"x": f"{roles['x']['attribute']} (x0 = {roles['x']['x0']}, x1 = {roles['x']['x1']})",
                  "z": ", ".join(roles["z"]) or "—", "b": ", ".join(roles["b"]) or "—", "r": ", ".join(roles["r"]) or "—"},
        "estimation": {"folds": est["folds"], "bootstrap": est["bootstrap"], "alpha": est["alpha"]},
        "systems": meta.get("systems") or [], "jobs": meta.get("jobs") or [],
        "notes": notes, "timings": timings, "versions": versions,
        "amendments": meta.get("amendments") or [],
        "summary": [{"system": u["system"], "job": u["job"], "status": u["status"], "cases": ", ".join(u["cases"]) or "—",
                     "verdict": u["verdict"], "anchor": u["anchor"],
                     "positivity": u["positivity"]} for u in units],
    }


def render_population_html(context: dict[str, Any]) -> str:
    """The population report as one self-contained HTML document."""
    from runtime.report.render import _environment

    return _environment().get_template(TEMPLATE).render(**context)
