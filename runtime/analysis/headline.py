"""The first page by protected category: one status per system x category (issue 29 §5).

A category is a non-reference variant, named by the level(s) it changes from the reference
(:func:`runtime.analysis.direction.level_label`: ``Female-NA``, or ``sex_gender=Female-FR; age_signal=Older``).
Its status is the worst interval status (issue 29 §1; FAIL > INCONCLUSIVE > PASS, N/A ignored) over the
rows that judge the category against the reference, in every condition: the score shift, MARC, the flip
rate, retention, the impact ratio, the selection ratio when computed, and the TPR/FPR gaps. A row that
decides on another row's statistic (the flip rate, retention and impact ratio on the selection ratio at
their cutoff, issue 30 §2) counts once, as that row. The metrics at
that status decide it (``deciding_metrics``); ``value``, ``ci_low`` and ``ci_high`` are the first deciding
row's, in catalogue order. ``disadvantaged`` joins the sides the deciding rows name (a side is named only on
evidence, issue 29 §3; several joined by `` | ``), else ``direction not established`` when the status is not
PASS.

One more row per system, ``category = ALL``: the system's verdict, the worst over its categories, naming
the categories at that status (the FAIL ones, else the INCONCLUSIVE ones; joined by `` | ``, as a
category's label may hold "; ") in ``deciding_metrics`` and the sides their rows establish in
``disadvantaged``. Recall@K and nDCG@K rate the
ranking, not a category against the reference: their own row, ``category = ranking quality``, the worst
over every variant's rows (the reference's included).

Unlike seed 000 Eq. 6 (:func:`runtime.analysis.classify.risk_table`), which averages point-estimate
statuses over rows so that one category failing every metric among ten variants scores 0.10 ("low"),
a category that fails is FAIL here whatever the other categories do. No I/O.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import pandas as pd

from compiler import catalog
from runtime.analysis.direction import NO_DIRECTION, level_label

HEADLINE_COLUMNS = ("system", "category", "variants", "status", "deciding_metrics", "value", "ci_low",
                    "ci_high", "disadvantaged")
#: Rows that judge a category against the reference (catalogue order; ``selection_ratio`` when computed).
CATEGORY_METRICS = ("score_delta", "marc", "flip_rate", "retention_rate", "impact_ratio", "selection_ratio",
                    "equal_opportunity_gap", "equalized_odds_gap")
#: Rows that rate the ranking itself: the ``ranking quality`` row.
RANKING_METRICS = ("recall_at_k", "ndcg_at_k")
#: ``category`` of a system's verdict row and of its ranking-quality row.
ALL = "ALL"
RANKING = "ranking quality"
#: Joins categories (and the sides they name) in one cell: a category label itself may hold "; " between
#: the axes a variant changes (``sex_gender=Female-FR; age_signal=Older``).
SEP = " | "
#: Severity of the interval statuses, worst highest.
SEVERITY = {"FAIL": 3, "INCONCLUSIVE": 2, "PASS": 1}


def _once(rows: pd.DataFrame) -> pd.DataFrame:
    """Rows that decide on another row's statistic with that row's interval (issue 30 §2: the flip rate,
    retention and impact ratio deciding on the selection ratio at its cutoff) are that row's decision:
    counted once, under the statistic's own row."""
    if "decision_on" not in rows.columns or rows.empty:
        return rows
    own = {(v, c, m): (lo, hi) for v, c, m, on, lo, hi in zip(
        rows["variant"], rows["condition"], rows["metric"], rows["decision_on"], rows["decision_low"],
        rows["decision_high"]) if on == "value"}
    keep = [not (on != "value" and own.get((v, c, on)) == (lo, hi)) for v, c, on, lo, hi in zip(
        rows["variant"], rows["condition"], rows["decision_on"], rows["decision_low"], rows["decision_high"])]
    return rows[keep]


def _worst(rows: pd.DataFrame) -> tuple[str, pd.DataFrame]:
    """The worst status among ``rows`` and the rows at it (N/A and empty when none has a status)."""
    known = rows[rows["status"].isin(list(SEVERITY))]
    if known.empty:
        return catalog.STATUS_NA, known
    worst = max(known["status"], key=SEVERITY.__getitem__)
    return worst, known[known["status"] == worst]


def _ordered(rows: pd.DataFrame, order: tuple[str, ...]) -> pd.DataFrame:
    pos = {m: i for i, m in enumerate(order)}
    return rows.assign(_pos=rows["metric"].map(pos).fillna(len(pos))).sort_values(
        ["_pos", "condition"], kind="stable").drop(columns="_pos")


def _row(system: str, category: str, variants: list[str], status: str, deciding: pd.DataFrame,
         order: tuple[str, ...]) -> dict[str, object]:
    deciding = _ordered(deciding, order)
    first = deciding.iloc[0] if len(deciding) else None
    sides = [s for s in dict.fromkeys(deciding.get("disadvantaged", pd.Series(dtype=str)).fillna("").astype(str))
             if s and s != NO_DIRECTION]
    named = SEP.join(sides) if sides else (NO_DIRECTION if status in ("FAIL", "INCONCLUSIVE") else "")
    conditions = deciding["condition"].nunique() if len(deciding) else 0
    metrics = [f"{m} ({c})" if conditions > 1 else str(m) for m, c in zip(deciding["metric"], deciding["condition"])]
    return {"system": system, "category": category, "variants": "; ".join(variants), "status": status,
            "deciding_metrics": "; ".join(dict.fromkeys(metrics)),
            "value": float(first["value"]) if first is not None else math.nan,
            "ci_low": float(first["ci_low"]) if first is not None else math.nan,
            "ci_high": float(first["ci_high"]) if first is not None else math.nan,
            "disadvantaged": named}


def headline_frame(metrics: pd.DataFrame, *, reference: str,
                   levels: Mapping[str, Mapping[str, str]] | None = None) -> pd.DataFrame:
    """``headline.csv``: one status per system x protected category, the system's verdict, its ranking row.

    Parameters
    ----------
    metrics : pandas.DataFrame
        ``metrics.csv`` of :func:`runtime.analysis.analyse` (columns ``system, condition, metric, variant,
        value, ci_low, ci_high, status, disadvantaged``; ``status`` is the research tier's interval status).
    reference : str
        The reference variant: never a category.
    levels : Mapping, optional
        Variant id -> {axis: level}; names each category by the level(s) it changes (else its id).

    Returns
    -------
    pandas.DataFrame
        Columns :data:`HEADLINE_COLUMNS`; per system (sorted): one row per category in variant order of
        ``metrics``, then ``ALL`` (status FAIL > INCONCLUSIVE > PASS over the categories; ``deciding_metrics``
        lists the categories at that status), then ``ranking quality``. ``variants`` lists the variant ids of
        a category (variants sharing a label form one category). Rows with no status are N/A.
    """
    out: list[dict[str, object]] = []
    if metrics is None or len(metrics) == 0:
        return pd.DataFrame(columns=list(HEADLINE_COLUMNS))
    for system, sub in metrics.groupby("system", sort=True):
        categories: dict[str, list[str]] = {}
        for variant in dict.fromkeys(sub["variant"].astype(str)):
            if variant != reference:
                categories.setdefault(level_label(variant, reference, levels), []).append(variant)
        verdicts: list[tuple[str, str]] = []
        for category, variants in categories.items():
            rows = _once(sub[sub["variant"].isin(variants) & sub["metric"].isin(CATEGORY_METRICS)])
            status, deciding = _worst(rows)
            out.append(_row(str(system), category, variants, status, deciding, CATEGORY_METRICS))
            verdicts.append((category, status, str(out[-1]["disadvantaged"])))
        known = [s for _, s, _ in verdicts if s in SEVERITY]
        verdict = max(known, key=SEVERITY.__getitem__) if known else catalog.STATUS_NA
        at = [(c, d) for c, s, d in verdicts if s == verdict] if verdict in ("FAIL", "INCONCLUSIVE") else []
        sides = [x for _, d in at for x in d.split(SEP) if x and x != NO_DIRECTION]
        out.append({"system": str(system), "category": ALL,
                    "variants": "; ".join(v for vs in categories.values() for v in vs),
                    "status": verdict, "deciding_metrics": SEP.join(c for c, _ in at), "value": math.nan,
                    "ci_low": math.nan, "ci_high": math.nan,
                    "disadvantaged": SEP.join(dict.fromkeys(sides)) or (NO_DIRECTION if at else "")})
        rows = sub[sub["metric"].isin(RANKING_METRICS)]
        status, deciding = _worst(rows)
        deciding = deciding.assign(disadvantaged="")  # the ranking is rated, not a category
        row = _row(str(system), RANKING, list(dict.fromkeys(rows["variant"].astype(str))), status, deciding,
                   RANKING_METRICS)
        if len(deciding):
            ranked = _ordered(deciding, RANKING_METRICS)
            row["deciding_metrics"] = "; ".join(dict.fromkeys(
                f"{m} {v}" for m, v in zip(ranked["metric"], ranked["variant"])))
        row["disadvantaged"] = ""
        out.append(row)
    return pd.DataFrame(out, columns=list(HEADLINE_COLUMNS))
