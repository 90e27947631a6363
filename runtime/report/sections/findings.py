"""Page 1's findings (issue 31 §6): what the run found, worst first, before any method or design text.

:func:`findings_section` turns the families' :class:`~runtime.families.base.Finding` records (the metric
suite's FAIL and INCONCLUSIVE rows of ``metrics.csv``, the causal family's FAIL and INVESTIGATE units of
``causal.csv``) into the plain data of ``_findings.html.j2``: each line says who loses, how much on the
system's score scale and, where a selection metric flags it, in selection terms. One line per
system × condition × variant (:func:`bundle`): the flip rate, the retention rate, the impact ratio and the
selection ratio of a variant read one in/out table (one McNemar test), so a line leads with the variant's worst
metric and lists its other flagged metrics after it, rather than repeating the variant once per metric; at
most :data:`MAX_FINDINGS` lines, then how many more. The composite risk score follows as a number with what
it averages over; its band word stays in the risk section, so a run with a FAIL never reads "low risk"
on page 1.

Above the list, page 1's verdict (:func:`verdicts`): one sentence per system from ``headline.csv`` (its
``category = ALL`` row, the status "Findings by protected category" gives the system), with the run's decision
rule and a word that Eq. 6 and its point-estimate counts do not change it. A run without a headline (no metric
suite: LL144, a population design) has none.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Iterable
from typing import Any

import pandas as pd

from runtime.analysis import SELECTION_TABLE_METRICS
from runtime.analysis.direction import NO_DIRECTION, names_a_side
from runtime.report.formatting import fmt_ci, fmt_points, fmt_sig, fmt_text
from runtime.report.sections import ORDER, Section
from runtime.report.sections.metric_suite.headline import headline_context
from runtime.report.sections.metric_suite.texts import METRIC_SHORT

#: Page 1 lists at most this many findings, then "N more".
MAX_FINDINGS = 8
#: Worst first: a FAIL before an INVESTIGATE or INCONCLUSIVE finding.
STATUS_RANK = {"FAIL": 0, "INVESTIGATE": 1, "INCONCLUSIVE": 1}
#: A ``disadvantaged`` that names nobody.
NOT_ESTABLISHED = NO_DIRECTION
#: Metrics that read one in/out table of the shortlist (one McNemar test): a line led by one that names nobody
#: says "direction not established for selection", as the variant's score or rank test may establish one.
SELECTION_TABLE = frozenset(SELECTION_TABLE_METRICS)
#: Names of the causal family's effects (seed 001 Eqs. 1-5).
EFFECT_SHORT = {"TE": "total effect TE", "NDE": "direct effect NDE", "NIE": "indirect effect NIE",
                "BIE": "qualification effect BIE", "RIE": "proxy effect RIE"}
NO_FINDINGS = "No finding: every status of the research tier is PASS (or N/A)."
#: Page 1's verdict counts the categories at each status, worst first after the verdict's own (N/A when any).
VERDICT_COUNTS = ("FAIL", "INCONCLUSIVE", "PASS", "N/A")


def _named(f: Any) -> bool:
    return names_a_side(f.disadvantaged)


def _points(x: float | None, score_range: Any) -> str:
    """A score difference on the system's scale ("−30 points on 0–100"); on the score scale when the
    finding carries no range (a causal effect)."""
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return ""
    if score_range is None:
        return f"{fmt_sig(x, 3, signed=True)} on the score scale"
    pts = fmt_points(x, score_range)
    if pts or x is None:
        return pts
    try:  # a [0, 1] scale (cosine): the normalised value is the score difference itself
        lo, hi = (float(b) for b in score_range)
    except (TypeError, ValueError):
        return ""
    return f"{fmt_sig(x, 3, signed=True)} on {lo:g}–{hi:g}"


def sort_key(f: Any) -> tuple:
    """Worst first: status, then a named loser before "direction not established", then the larger
    score loss (normalised; a finding without one last)."""
    loss = f.score_loss
    size = abs(loss) if loss is not None and not (isinstance(loss, float) and math.isnan(loss)) else -1.0
    return (STATUS_RANK.get(f.status, 2), 0 if _named(f) else 1, -size)


def finding_line(f: Any, *, label: Callable[[Any], str] = fmt_text, reference: str = "the reference") -> dict[str, Any]:
    """One finding as page 1 prints it: ``status``, ``who`` (the labelled level that loses, or the variant's
    labelled levels with "direction not established"), ``loss`` (on the score scale), ``metric``
    (name, value and interval), ``selection`` (selection terms or empty) and ``anchor``."""
    levels = "; ".join(label(lv) for lv in f.levels) or f.variant
    causal = f.family == "causal"
    if f.disadvantaged == "reference":  # the reference's levels lose (the variant scores higher)
        who = f"the reference {reference} loses"
    elif _named(f):
        who = f"{label(f.disadvantaged)} loses"
    elif causal:
        who = f"{levels}: no effect is significant"
    elif f.metric in SELECTION_TABLE:  # one McNemar test of the in/out table: a score test may still reject
        who = f"{f.variant}: {NOT_ESTABLISHED} for selection"
    else:  # the variant's levels are spelled out beside the link
        who = f"{f.variant}: {NOT_ESTABLISHED}"
    pts = _points(f.score_loss, f.score_range)
    if causal:
        where = f"system {f.system}, job {f.variant}"
        loss = f"total effect {pts} ({levels})" if pts else ""
        name = EFFECT_SHORT.get(f.metric, f.metric)
        metric = (f"{name} {fmt_sig(f.value, 4, signed=True)}, simultaneous 95% band "
                  f"{fmt_ci(f.ci_low, f.ci_high, 4, signed=True)}")
    else:
        cond = "" if f.condition in ("default", "") else f", condition {f.condition}"
        where = f"system {f.system}{cond}, variant {f.variant} ({levels}) against {reference}"
        loss = f"{f.variant}'s mean score {pts} against {reference}" if pts else ""
        delta = f.metric == "score_delta"
        name = METRIC_SHORT.get(f.metric, f.metric)
        value = fmt_sig(f.value, 4, signed=delta)
        metric = f"{name} {value}, 95% CI {fmt_ci(f.ci_low, f.ci_high, 4, signed=delta)}"
    return {"status": f.status, "who": who, "where": where, "loss": loss, "metric": metric,
            "selection": f.selection, "anchor": f.anchor, "disadvantaged": f.disadvantaged,
            "note": getattr(f, "note", "")}


def bundle(findings: Iterable[Any]) -> list[list[Any]]:
    """The findings grouped by what they are about, worst group first.

    A metric-suite finding is about a system × condition × variant: its metrics (a score delta, and the flip
    rate, retention rate, impact ratio and selection ratio of one in/out table) describe one effect. A causal
    finding is about its unit alone.

    Returns
    -------
    list of list of Finding
        Each group sorted worst first (:func:`sort_key`), the groups ordered by their first (worst) finding.
    """
    groups: dict[tuple, list[Any]] = {}
    for i, f in enumerate(findings):
        key = (f.family, f.system, f.condition, f.variant) if f.family != "causal" else ("causal", i)
        groups.setdefault(key, []).append(f)
    ranked = [sorted(g, key=sort_key) for g in groups.values()]
    return sorted(ranked, key=lambda g: sort_key(g[0]))


def also_text(rest: Iterable[Any]) -> str:
    """The other flagged metrics of a line's variant: "Flip rate 0.1250 [0.0861, 0.1780] INCONCLUSIVE, …"."""
    parts = []
    for f in rest:
        delta = f.metric == "score_delta"
        parts.append(f"{METRIC_SHORT.get(f.metric, f.metric)} {fmt_sig(f.value, 4, signed=delta)} "
                     f"{fmt_ci(f.ci_low, f.ci_high, 4, signed=delta)} {f.status}")
    return ", ".join(parts)


def verdicts(headline: pd.DataFrame | None) -> list[dict[str, str]]:
    """Page 1's verdict, one per system of ``headline.csv`` (:func:`runtime.analysis.headline.headline_frame`).

    Parameters
    ----------
    headline : pandas.DataFrame or None
        Columns ``system, category, variants, status, deciding_metrics, value, ci_low, ci_high,
        disadvantaged``; a system's ``category = ALL`` row is its verdict (the worst status over its protected
        categories, each decided on its 95% interval against the research tier's PASS band), the ``ranking
        quality`` row rates the ranking and is not counted.

    Returns
    -------
    list of dict
        ``system``, ``status`` (the verdict, as :func:`headline_context` reads it for "Findings by protected
        category") and ``counts`` ("8 of 9 protected categories INCONCLUSIVE, 0 FAIL, 1 PASS"), in the
        headline's system order; empty without a headline or categories.
    """
    out = []
    for s in headline_context(headline)["systems"]:
        n, total, v = Counter(c["status"] for c in s["categories"]), len(s["categories"]), s["verdict"]
        if not total:
            continue
        rest = [f"{n[x]} {x}" for x in VERDICT_COUNTS if x != v and (n[x] or x != "N/A")]
        head = f"{n[v]} of {total} protected {'category' if total == 1 else 'categories'} {v}"
        out.append({"system": s["system"], "status": v, "counts": ", ".join([head, *rest])})
    return out


def findings_section(findings: Iterable[Any], notes: Iterable[str] = (), *,
                     label: Callable[[Any], str] = fmt_text, reference: str = "the reference",
                     headline: pd.DataFrame | None = None, decision_rule: str = "") -> Section:
    """The ``findings`` front-matter section (``ORDER["findings"]``, under the header).

    Parameters
    ----------
    findings : iterable of Finding
        Every family's findings (:attr:`runtime.families.base.FamilyResult.findings`), in run order.
    notes : iterable of str
        Sentences after the list (:attr:`~runtime.families.base.FamilyResult.findings_notes`: the
        composite risk score with what it averages over).
    label : callable
        Prints an ``axis=level`` pair or a level id with its label (:meth:`ReportMeta.with_level_labels`).
    reference : str
        The reference variant's id.
    headline : pandas.DataFrame or None
        The metric suite's ``headline.csv`` (:attr:`runtime.analysis.AnalysisResult.headline`), for page 1's
        verdict (:func:`verdicts`); None (no metric suite) prints none.
    decision_rule : str
        What "selected" means in this run, stated with the verdict
        (:func:`runtime.report.sections.metric_suite.design.selection_rule_text`); empty states none.

    Returns
    -------
    Section
        Context ``lines`` (one per group of :func:`bundle`, at most :data:`MAX_FINDINGS`, worst first:
        :func:`sort_key`; each line is its group's worst finding, :func:`finding_line`, with ``also``, the
        group's other findings, :func:`also_text`), ``more`` (how many lines are left out), ``counts`` ("3
        FAIL, 3 INCONCLUSIVE": findings, i.e. metric × variant statuses), ``groups`` (how many lines in all),
        ``notes``, ``none`` (the sentence for a run without findings, or empty), ``verdicts`` (:func:`verdicts`),
        ``decision_rule`` and ``risk_note`` (whether ``notes`` hold seed 000's Eq. 6 score, which the verdict
        says reads point estimates only).
    """
    groups, notes = bundle(findings), list(notes)
    counts: dict[str, int] = {}
    for f in sorted((f for g in groups for f in g), key=lambda f: STATUS_RANK.get(f.status, 2)):
        counts[f.status] = counts.get(f.status, 0) + 1
    lines = [{**finding_line(g[0], label=label, reference=reference), "also": also_text(g[1:])}
             for g in groups[:MAX_FINDINGS]]
    return Section(
        id="findings", title="Findings", template="_findings.html.j2", order=ORDER["findings"], toc=False,
        context={"lines": lines, "more": max(0, len(groups) - MAX_FINDINGS), "groups": len(groups),
                 "counts": ", ".join(f"{n} {s}" for s, n in counts.items()),
                 "notes": notes, "none": "" if groups else NO_FINDINGS, "verdicts": verdicts(headline),
                 "decision_rule": decision_rule, "risk_note": any("Eq. 6" in n for n in notes)})
