"""Path-specific effects of a population audit (seed 001 §3.2, §5.2).

Each system's scores are decomposed into TE, NDE, NIE, BIE and RIE per job (occupation) by the
doubly robust, cross-fitted DML-UCA estimator, and each system x job gets the cases of seed 001
§5.2 and a status (issue 39 §7, :func:`runtime.analysis.causal.path_status`): FAIL when NDE or RIE is
significant (the simultaneous max-t band over the five effects excludes 0,
:func:`runtime.analysis.causal.max_t_critical`: a direct or proxy path); PASS when NDE and RIE are both
equivalent to 0 within ``candidates.estimation.margin`` (their 90% intervals inside ±margin,
:func:`runtime.analysis.causal.decide_effects`) and positivity holds; INCONCLUSIVE otherwise, with the
MDEs of NDE and RIE. Table ``causal``; one status row per system x condition x job.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from compiler.errors import InputDataError
from runtime.families import AuditFamily, FamilyResult, family, status_frame
from runtime.families.base import FINDING_STATUSES, Finding

#: Columns of ``causal.csv``; runs with LLM screeners add ``condition`` after ``system``.
CAUSAL_COLUMNS = ("system", "job_id", "attribute", "x0", "x1", "kind", "term", "estimate", "se", "ci_low",
                  "ci_high", "sim_low", "sim_high", "significant", "significant_marginal", "eq_low", "eq_high",
                  "equivalent", "decision", "mde", "margin", "n", "n_x0", "n_x1", "cases", "verdict", "status", "positivity",
                  "clipped_p_x_rz", "clipped_p_x_brz", "p1_source", "folds", "repeats", "n_bootstrap", "alpha")
MSG_SMALL_ARM = ("job {job!r}: {n0} profiles with {attr} = {x0} and {n1} with {x1}; the estimator needs at "
                 "least {need} of each (raise profiles_per_job)")


def causal_rows(*, system: str, job_id: str, profiles: pd.DataFrame, scores: np.ndarray, roles: dict[str, Any],
                estimation: dict[str, Any], seed: int, score_range: tuple[float, float] = (0.0, 1.0)) -> list[dict[str, Any]]:
    """Estimate, decide and classify one system x job (seed 001 §3.2, §5.2; issue 39 §7); rows of ``causal.csv``.

    The equivalence margin is ``estimation["margin"]`` (normalised score units; the methods default
    :data:`compiler.methods.CAUSAL_MARGIN` when the spec does not write it) times the width of the
    system's ``score_range``: column ``margin`` is on the score scale, as the estimates.

    Raises
    ------
    compiler.errors.InputDataError
        When either arm of the protected attribute has fewer than 2 x folds profiles.
    """
    from compiler.methods import CAUSAL_MARGIN
    from runtime.analysis.causal import classify_cases, decide_effects, estimate_pse, path_status
    from runtime.generate.population import role_frame

    x_attr, x0, x1 = roles["x"]["attribute"], roles["x"]["x0"], roles["x"]["x1"]
    keep = profiles[x_attr].isin([x0, x1]).to_numpy()
    prof = profiles[keep].reset_index(drop=True)
    x = (prof[x_attr] == x1).to_numpy(int)
    need = 2 * estimation["folds"]
    n1, n0 = int(x.sum()), int(len(x) - x.sum())
    if min(n0, n1) < need:
        raise InputDataError(MSG_SMALL_ARM.format(job=job_id, n0=n0, n1=n1, attr=x_attr, x0=x0, x1=x1, need=need))
    res = estimate_pse(x=x, y=np.asarray(scores)[keep], z=role_frame(prof, roles["z"]), b=role_frame(prof, roles["b"]),
                       r=role_frame(prof, roles["r"]), seed=seed, folds=estimation["folds"],
                       n_bootstrap=estimation["bootstrap"], alpha=estimation["alpha"])
    lo, hi = (float(v) for v in score_range)
    margin = float(estimation.get("margin", CAUSAL_MARGIN)) * (hi - lo)
    table = decide_effects(res.table, margin=margin, alpha=estimation["alpha"])
    eff = table[table["kind"] == "effect"].set_index("term")
    verdict = classify_cases(eff["significant"].to_dict(), eff["estimate"].to_dict(), eff["equivalent"].to_dict())
    # FAIL: a direct or proxy (redlining) path is significant; PASS: both are equivalent to 0 within the
    # margin (and positivity holds); INCONCLUSIVE otherwise (issue 39 §7)
    status = path_status(eff["decision"].to_dict(), positivity=res.diagnostics["positivity"])
    base = {"system": system, "job_id": job_id, "attribute": x_attr, "x0": x0, "x1": x1, "n": res.n,
            "n_x0": n0, "n_x1": n1, "cases": ",".join(verdict.cases), "verdict": verdict.label,
            "status": status, "positivity": res.diagnostics["positivity"],
            "clipped_p_x_rz": res.diagnostics["clipped_share"]["p_x_rz"],
            "clipped_p_x_brz": res.diagnostics["clipped_share"]["p_x_brz"],
            "p1_source": str(prof["p1_source"].iloc[0]), "folds": estimation["folds"],
            "repeats": res.diagnostics["repeats"],
            "n_bootstrap": estimation["bootstrap"], "alpha": estimation["alpha"]}
    rows = []
    for t in table.itertuples():
        rows.append({**base, "kind": t.kind, "term": t.term, "estimate": t.estimate, "se": t.se,
                     "ci_low": t.ci_low, "ci_high": t.ci_high, "sim_low": t.sim_low, "sim_high": t.sim_high,
                     "significant": "" if t.significant is None else bool(t.significant),
                     "significant_marginal": "" if t.significant_marginal is None else bool(t.significant_marginal),
                     "eq_low": t.eq_low, "eq_high": t.eq_high,
                     "equivalent": "" if t.equivalent is None else bool(t.equivalent),
                     "decision": t.decision or "", "mde": t.mde, "margin": t.margin})
    return rows


def causal_findings(causal: pd.DataFrame) -> list[Finding]:
    """Page 1's findings of a population run (issue 31 §6): one per system (x condition) x job whose status
    is FAIL or INCONCLUSIVE, decided by its first significant impermissible effect (NDE, then RIE), else
    the first of NDE and RIE that is not equivalent to 0 (issue 39 §7), else TE (a positivity failure alone).

    Parameters
    ----------
    causal : pandas.DataFrame
        ``causal.csv`` (:data:`CAUSAL_COLUMNS`); effects on the score scale, significance on the
        simultaneous band (``sim_low``, ``sim_high``).

    Returns
    -------
    list of Finding
        ``variant`` is the job id, ``levels`` ``("<attribute>: <x1> vs <x0>",)``, ``value``
        the effect with its simultaneous band, ``score_loss`` the total effect TE on the score scale
        (``score_range`` None), ``disadvantaged`` the level the significant effect works against (x1 when it is
        negative, else x0; empty when no effect is significant).
    """
    if causal is None or len(causal) == 0:
        return []
    out = []
    keys = ["system", "condition", "job_id"] if "condition" in causal.columns else ["system", "job_id"]
    for _, g in causal[causal["kind"] == "effect"].groupby(keys, sort=False):
        first = g.iloc[0]
        status = str(first["status"])
        if status not in FINDING_STATUSES:
            continue
        eff = g.set_index("term")
        sig = [t for t in eff.index if str(eff.loc[t, "significant"]) == "True"]
        undetermined = [t for t in ("NDE", "RIE") if "decision" in eff.columns and eff.loc[t, "decision"] == "undetermined"]
        term = next((t for t in ("NDE", "RIE") if t in sig), undetermined[0] if undetermined else
                    next((t for t in ("TE", "NIE", "BIE") if t in sig), "TE"))
        r = eff.loc[term]
        lo, hi = ("sim_low", "sim_high") if "sim_low" in eff.columns else ("ci_low", "ci_high")
        dis = "" if term not in sig else str(first["x1"] if float(r["estimate"]) < 0 else first["x0"])
        condition = str(first["condition"]) if "condition" in causal.columns else "default"
        out.append(Finding(
            system=str(first["system"]), condition=condition, variant=str(first["job_id"]),
            levels=(f"{first['attribute']}: {first['x1']} vs {first['x0']}",), metric=term, value=float(r["estimate"]),
            ci_low=float(r[lo]), ci_high=float(r[hi]), status=status, disadvantaged=dis,
            anchor=f"causal-{first['system']}-{first['job_id']}".replace("_", "-"),
            score_loss=float(eff.loc["TE", "estimate"]), score_range=None, family="causal",
            note=("positivity fails, so the path split is extrapolated" if first["positivity"] == "violated" else
                  f"{term} undetermined: not significant, not within ±{float(r['margin']):.4g} (MDE {float(r['mde']):.4g})"
                  if term in undetermined and term not in sig else "")))
    return out


@family("causal")
class Causal(AuditFamily):
    """DML-UCA decomposition of every system (x condition) x job of a population audit."""

    title = "path-specific effects (seed 001)"

    def analyse(self, ctx) -> FamilyResult:
        r = ctx.resolved
        cand = r["candidates"]
        profiles, scores = ctx.candidates, ctx.scores
        with_condition = "condition" in scores.columns
        groups = (scores[["system", "condition"]].drop_duplicates().itertuples(index=False, name=None)
                  if with_condition else ((s["id"], None) for s in r["systems"]))
        groups = list(groups)
        advance = ctx.progress.task("causal decomposition", len(groups) * len(r["jobs"]))
        score_range = ctx.score_range()
        rows = []
        for system, condition in groups:
            sel = scores["system"] == system
            if with_condition:
                sel &= scores["condition"] == condition
            sc = scores[sel].set_index(["job_id", "cv_id"])["score"]
            for job in r["jobs"]:
                prof = profiles[profiles["job_id"] == job["id"]].reset_index(drop=True)
                keys = list(zip(prof["job_id"], prof["cv_id"]))
                scored = pd.Index(keys).isin(sc.index)  # an LLM may leave a profile without a valid answer
                prof = prof[scored].reset_index(drop=True)
                y = sc.loc[[k for k, ok in zip(keys, scored) if ok]].to_numpy(float)
                new = causal_rows(system=system, job_id=job["id"], profiles=prof, scores=y,
                                  roles=cand["roles"], estimation=cand["estimation"], seed=r["seed"],
                                  score_range=tuple(score_range.get(system) or (0.0, 1.0)))
                if with_condition:
                    new = [{**row, "condition": condition} for row in new]
                rows += new
                advance(1)
        columns = list(CAUSAL_COLUMNS)
        if with_condition:
            columns.insert(1, "condition")
        causal = pd.DataFrame(rows, columns=columns)
        te = causal[causal["term"] == "TE"]
        status = status_frame([{"family": "causal", "system": t.system,
                                "condition": getattr(t, "condition", "default") if with_condition else "default",
                                "item": f"{t.job_id} {t.attribute} ({t.x1} vs {t.x0})",
                                "status": t.status, "status_operational": t.status} for t in te.itertuples()])
        summary = [f"{t.system}{'/' + t.condition if with_condition else ''} / {t.job_id}: {t.status} · "
                   f"{t.attribute} ({t.x1} vs {t.x0}) · cases {t.cases or '-'}: {t.verdict}"
                   + (" · positivity violated: NDE/NIE/BIE/RIE unreliable (see report)"
                      if t.positivity == "violated" else "") for t in te.itertuples()]
        return FamilyResult(tables={"causal": causal}, status=status, summary=summary, data={"causal": causal},
                            findings=causal_findings(causal))

    def sections(self, ctx, result: FamilyResult, meta) -> list:
        from runtime.report import causal_sections

        return causal_sections(causal=result.data["causal"], profiles=ctx.candidates,
                               candidates=ctx.resolved["candidates"])
