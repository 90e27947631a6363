"""NYC Local Law 144 impact ratios from the audit's own test data (the ``ll144`` family).

Opt-in with ``analysis.ll144`` (its compiler half: :mod:`compiler.families.ll144`, its spec block:
:mod:`compiler.blocks.ll144`). Per system x condition x job, the rates and impact ratios by sex,
race/ethnicity (EEO-1) and both (6 RCNY §5-300, §5-301), computed by :func:`runtime.analysis.ll144.ll144_rows`
on the individuals of the run: the résumé x variant rows of a paired design (replicates averaged;
each variant's levels give its categories) or the profiles of a population design (their gender and
race attributes, fixed mapping). Writes ``ll144.csv``; status rows only when the block sets
``thresholds`` (the law sets no pass line), read by ``--fail-on``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from compiler.blocks.ll144 import LABELS, RACE_ETHNICITY, SEX, UNKNOWN
from runtime.analysis.cell import top_share
from runtime.analysis.classify import meets_threshold
from runtime.analysis.frame import swap_in_ranks
from runtime.analysis.ll144 import ll144_rows
from runtime.families import AuditFamily, FamilyResult, family, status_frame


def _system_threshold(threshold: Any, system: str) -> float:
    return float(threshold[system] if isinstance(threshold, dict) or hasattr(threshold, "keys") else threshold)


def paired_individuals(paired: pd.DataFrame, *, block: dict[str, Any], variants: dict[str, dict[str, str]],
                       reference: str, decision: dict[str, Any] | None) -> pd.DataFrame:
    """The individuals of a paired design, with their categories and selections.

    Parameters
    ----------
    paired : pandas.DataFrame
        The ranked paired frame (``system, condition, replicate, job_id, cv_id, variant, score``...).
    block : dict
        The resolved ``analysis.ll144`` block (``rate`` is ``selection`` or ``scoring``).
    variants : dict
        Variant id -> ``{axis: level}`` (the resolved variant table).
    reference : str
        The reference variant (the résumés a swap-in top-K ranks against).
    decision : dict or None
        The resolved ``analysis.decision``: ``{"threshold": t}`` (a number or system id -> number, on the
        system's own scale) or ``{"top_k": K}``.

    Returns
    -------
    pandas.DataFrame
        One row per system x condition x job x base candidate x variant (replicates averaged):
        ``system, condition, group`` (the job), ``unit`` (the base candidate: the independent unit),
        ``sex, race_ethnicity`` (category ids, ``unknown`` when the key is not mapped), ``score`` (the
        system's own scale) and ``selected`` in [0, 1] under the selection basis: 1 when ``score >= t``, or
        the swap-in top-K membership (each variant résumé against the reference résumés of the other
        candidates of its job; the share of its tie group's places inside the top K at a tie across the
        cutoff); NaN under the scoring basis.
    """
    keys = ["system", "condition", "job_id", "cv_id", "variant"]
    frame = paired.groupby(keys, sort=False)["score"].mean().reset_index()
    for key in ("sex", "race_ethnicity"):
        m = block.get(key)
        if m is None:
            frame[key] = UNKNOWN
        else:
            frame[key] = frame["variant"].map(lambda v, m=m: m["levels"][variants[v][m["axis"]]])
    frame["selected"] = np.nan
    if block["rate"] == "selection":
        threshold = (decision or {}).get("threshold")
        if threshold is not None:
            t = frame["system"].map(lambda s: _system_threshold(threshold, s))
            frame["selected"] = meets_threshold(frame["score"].to_numpy(dtype=float), t).astype(float)
        else:
            k = int(decision["top_k"])
            for (system, condition, job), g in frame.groupby(["system", "condition", "job_id"], sort=False):
                ref = g[g["variant"] == reference].set_index("cv_id")["score"]
                for variant, gv in g.groupby("variant", sort=False):
                    cv = gv["cv_id"].to_numpy()
                    rank, tie = swap_in_ranks(ref.loc[cv].to_numpy(float), gv["score"].to_numpy(float),
                                              np.zeros(len(cv), int), 1)
                    frame.loc[gv.index, "selected"] = top_share(rank, tie, k)
    return frame.rename(columns={"job_id": "group", "cv_id": "unit"})[
        ["system", "condition", "group", "unit", "sex", "race_ethnicity", "score", "selected"]]


def profile_individuals(profiles: pd.DataFrame, scores: pd.DataFrame, *, block: dict[str, Any]) -> pd.DataFrame:
    """The individuals of a population design.

    Parameters
    ----------
    profiles : pandas.DataFrame
        The run's profiles (``job_id, cv_id`` and the attributes, ``gender`` and ``race`` among them).
    scores : pandas.DataFrame
        ``system, [condition,] [replicate,] job_id, cv_id, score``.
    block : dict
        The resolved ``analysis.ll144`` block, whose ``sex`` and ``race_ethnicity`` hold the fixed mapping
        (``attribute``, ``levels``: attribute value -> category id).

    Returns
    -------
    pandas.DataFrame
        One row per system x condition x scored profile (replicates averaged), as
        :func:`paired_individuals` gives them; ``unit`` is the profile; a value outside the mapping is
        ``unknown``; ``selected`` is NaN (a population design states no decision rule: scoring rates).
    """
    sc = scores.copy()
    if "condition" not in sc.columns:
        sc["condition"] = "default"
    sc = sc.groupby(["system", "condition", "job_id", "cv_id"], sort=False)["score"].mean().reset_index()
    attrs = profiles[["job_id", "cv_id", block["sex"]["attribute"], block["race_ethnicity"]["attribute"]]]
    frame = sc.merge(attrs, on=["job_id", "cv_id"], how="inner")
    frame["sex"] = frame[block["sex"]["attribute"]].map(block["sex"]["levels"]).fillna(UNKNOWN)
    frame["race_ethnicity"] = frame[block["race_ethnicity"]["attribute"]].map(
        block["race_ethnicity"]["levels"]).fillna(UNKNOWN)
    frame["selected"] = np.nan
    frame["unit"] = frame["cv_id"]
    return frame.rename(columns={"job_id": "group"})[
        ["system", "condition", "group", "unit", "sex", "race_ethnicity", "score", "selected"]]


def applicant_individuals(scores: pd.DataFrame) -> pd.DataFrame:
    """The individuals of an applicant-file audit (issue 34): one row per applicant, independent.

    Parameters
    ----------
    scores : pandas.DataFrame
        The applicants of every system, as :func:`runtime.pipeline.score.score_all` returns them:
        ``system, condition, job_id`` (the file's group, ``ALL`` without one), ``cv_id`` (the applicant),
        ``score, selected, sex, race_ethnicity`` (category ids).

    Returns
    -------
    pandas.DataFrame
        As :func:`paired_individuals` gives them; ``unit`` is the applicant (each its own independent unit);
        ``selected`` 1/0 under ``outcome: selected``, NaN under ``outcome: score``. In memory only.
    """
    frame = scores.rename(columns={"job_id": "group", "cv_id": "unit"})
    return frame[["system", "condition", "group", "unit", "sex", "race_ethnicity", "score", "selected"]].reset_index(
        drop=True)


@family("ll144")
class Ll144(AuditFamily):
    """Local Law 144 rates and impact ratios (opt-in: ``analysis.ll144``)."""

    title = "NYC Local Law 144 impact ratios"

    def analyse(self, ctx) -> FamilyResult:
        r = ctx.resolved
        block = r["analysis"]["ll144"]
        paired = ctx.paired is not None
        applicants = "applicants" in ctx.provides
        if applicants:
            individuals = applicant_individuals(ctx.scores)
        elif paired:
            individuals = paired_individuals(ctx.paired, block=block, variants=r["variants"]["table"],
                                             reference=r["variants"]["reference"], decision=r["analysis"].get("decision"))
        else:
            individuals = profile_individuals(ctx.candidates, ctx.scores, block=block)
        sex = SEX if block.get("sex") else None
        race = RACE_ETHNICITY if block.get("race_ethnicity") else None
        if not paired:  # the generator's four races (the applicants' EEO-1 categories): every one is listed
            sex, race = SEX, RACE_ETHNICITY
        rule = (block.get("small_category_rule") or {}).get("justification")
        table = ll144_rows(individuals, basis=block["rate"], sex=sex, race=race, small_rule=rule,
                           thresholds=block.get("thresholds"), n_bootstrap=int(block["bootstrap"]), seed=ctx.seed,
                           independent=not paired, resolution=ctx.score_resolution())
        table = in_spec_order(table, systems=[s["id"] for s in r["systems"]], jobs=[j["id"] for j in r["jobs"]])
        if applicants:
            record = {"applicants": applicants_record(ctx, table)}
        status = status_frame([{"family": "ll144", "system": t.system, "condition": t.condition,
                                "item": f"{t.group} {t.table} {t.category} impact ratio", "status": t.status,
                                "status_operational": t.status_operational}
                               for t in table.itertuples() if t.status]) if block.get("thresholds") else status_frame()
        from runtime.report.sections.ll144 import ll144_section

        section = ll144_section(table, block=block, resolved=r, paired=paired, labels=LABELS,
                                applicants=record["applicants"] if applicants else None)
        summary = _summary(table)
        documents = {}
        if r.get("disclosure"):  # the postable summary (issue 34 §4), sealed with the run
            from runtime.report.ll144_summary import NAME, ll144_summary

            documents[NAME] = ll144_summary(table, resolved=r, run=ctx.run, block=block, labels=LABELS,
                                            applicants=record["applicants"] if applicants else None)
        return FamilyResult(tables={"ll144": table}, status=status, sections=[section], summary=summary,
                            data={"ll144": table}, record=record if applicants else {}, documents=documents)


def applicants_record(ctx, table: pd.DataFrame) -> dict[str, Any]:
    """What ``run.json`` keeps of an applicant-file audit (issue 34 §2): per system the file, its sha256, its
    row count, the groups' sizes and the retention; never a row or an applicant id."""
    out = {}
    for s in ctx.resolved["systems"]:
        info = ctx.run["systems_info"].get(s["id"], {})
        sizes = table[(table["system"] == s["id"]) & (table["table"] == "sex")].groupby("group", sort=False)["n"].sum()
        out[s["id"]] = {"file": s["data"]["path"], "file_sha256": info.get("file_sha256", s["data"]["sha256"]),
                        "rows": int(info.get("rows", 0)), "groups": {str(g): int(n) for g, n in sizes.items()},
                        "outcome": s["outcome"], "retention_days": int(s["retention_days"]),
                        "kept": "the file's sha256 and row count, ll144.csv, the report and the summary"}
    return out


def in_spec_order(table: pd.DataFrame, *, systems: list[str], jobs: list[str]) -> pd.DataFrame:
    """The groups of ``table`` in the spec's order of systems and jobs (conditions as computed; rows within a
    group as computed), so that ``ll144.csv`` and the report read as the spec is written."""
    s_rank = {s: i for i, s in enumerate(systems)}
    j_rank = {j: i for i, j in enumerate(jobs)}
    key = pd.DataFrame({"s": table["system"].map(s_rank).fillna(len(s_rank)),
                        "j": table["group"].map(j_rank).fillna(len(j_rank))})
    order = key.sort_values(["s", "j"], kind="mergesort").index
    return table.loc[order].reset_index(drop=True)


def _summary(table: pd.DataFrame) -> list[str]:
    out = []
    for (system, condition, group, name), g in table.groupby(["system", "condition", "group", "table"], sort=False):
        rated = g[g["impact_ratio"].notna()]
        if rated.empty:
            out.append(f"LL144 {system}/{condition} / {group} {name}: impact ratios undefined")
            continue
        low = rated.loc[rated["impact_ratio"].idxmin()]
        out.append(f"LL144 {system}/{condition} / {group} {name}: lowest impact ratio {low['impact_ratio']:.3f} "
                   f"({low['category']}, {low['basis']} rate {low['rate']:.3f})"
                   + (f" · {low['status']}" if isinstance(low["status"], str) and low["status"] else ""))
    return out
