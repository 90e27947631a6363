"""NYC Local Law 144 selection or scoring rates and impact ratios (6 RCNY §5-300, §5-301).

Pure: a frame of individuals in, the rows of ``ll144.csv`` out (no I/O, no report).

Definitions (6 RCNY §5-300):

- **selection rate** = selected / n: the share of a category's individuals the decision rule selects
  (a fraction of a selection at a tie across a top-K cutoff);
- **scoring rate** = the share of a category's individuals scored strictly above the median score of
  every individual of the group (unknowns included). A score equal to the median counts for no
  category (``n_at_median`` says how many of the category sit there);
- **impact ratio** = a category's rate / the highest rate among the eligible categories.

A category is *eligible* when it has individuals, is known, and, under the small-category rule
(6 RCNY §5-301(d)), holds at least 2% of "the data being used for the bias audit": the individuals of
the system and condition over every group (requisition) together, never one group's alone ("less than
2%" is strict: exactly 2% stays). A category excluded so is excluded from every group's table. An excluded category is never the reference; its n and rate stay. Undefined is
never 0 or 1: with no eligible rate above 0 every ratio is empty, with the reason.

This ratio is not seed 000's ``impact_ratio`` metric (a shortlist retention ratio, seed 000
§3.4.2), which the metric suite reports under its own id.

Beyond the law (labelled ``extra_``): a 95% percentile bootstrap interval of each ratio over the
independent unit (a base candidate with all its variants; a profile), the median recomputed in each
resample, eligibility and memberships kept as on the full sample (approximate: its coverage is not
measured); Fisher's exact test (selection) or Mood's median test (scoring) of a category against the
reference, on independent individuals (profiles) only.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from runtime.analysis.classify import round_significant
from runtime.analysis.stats import on_grid, score_grid
from runtime.seeding import rng

#: Columns of ``ll144.csv``, in order (issue 33 §4).
COLUMNS = ("system", "condition", "group", "table", "category", "basis", "n", "n_positive", "rate", "impact_ratio",
           "excluded", "reason", "median", "n_at_median", "status", "status_operational", "extra_ci_low",
           "extra_ci_high", "extra_p_value")
#: The tables, in order.
TABLES = ("sex", "race_ethnicity", "intersectional")
UNKNOWN = "unknown"
#: The small-category rule's share: a category with less than 2% of the individuals may be excluded.
SMALL_SHARE_DENOMINATOR = 50  # n / N >= 1/50, compared on integers

REASON_UNKNOWN = "category unknown: counted, never rated"
REASON_EMPTY = "no individual in this category"
REASON_SMALL = ("{share} of the audit's individuals (under 2%, every group together): excluded by the "
                "small-category rule ({justification})")
REASON_ALL_ZERO = "no eligible category has a {basis} rate above 0: every impact ratio is undefined"
REASON_NO_ELIGIBLE = "no eligible category: every impact ratio is undefined"


def _cat_of(frame: pd.DataFrame, table: str) -> pd.Series:
    if table == "intersectional":
        unknown = frame["sex"].eq(UNKNOWN) | frame["race_ethnicity"].eq(UNKNOWN)
        return (frame["sex"] + "/" + frame["race_ethnicity"]).where(~unknown, UNKNOWN)
    return frame[table]


def categories(table: str, sex: Sequence[str], race: Sequence[str]) -> list[str]:
    """The category ids of ``table``, in the report's order (the unknown row not included)."""
    if table == "sex":
        return list(sex)
    if table == "race_ethnicity":
        return list(race)
    return [f"{s}/{r}" for s in sex for r in race]


def _median(sorted_scores: np.ndarray, weights: np.ndarray) -> float:
    """Median of the multiset where ``sorted_scores[i]`` occurs ``weights[i]`` times (integer weights)."""
    cum = np.cumsum(weights)
    total = int(cum[-1])
    lo = sorted_scores[np.searchsorted(cum, (total + 1) // 2)]  # the ((W+1)//2)-th element, 1-based
    hi = sorted_scores[np.searchsorted(cum, total // 2 + 1)]
    return float(lo) if total % 2 else (float(lo) + float(hi)) / 2


def status_of(ratio: float, bounds: Mapping[str, float] | None) -> str:
    """PASS at or above ``pass``, INVESTIGATE at or above ``investigate``, else FAIL, on the ratio rounded to 6
    significant digits; ``N/A`` for an undefined ratio; empty without bounds (the law sets no pass line)."""
    if not bounds:
        return ""
    if not math.isfinite(ratio):
        return "N/A"
    v = round_significant(float(ratio))
    if v >= round_significant(float(bounds["pass"])):
        return "PASS"
    return "INVESTIGATE" if v >= round_significant(float(bounds["investigate"])) else "FAIL"


def _canonical(g: pd.DataFrame) -> pd.DataFrame:
    """The group's individuals in an order that depends on their values, not on row order or ids: units by
    the sorted contents of their rows (ties: interchangeable units), then rows within a unit."""
    g = g.assign(_sel=g["selected"].fillna(-1.0))
    row_key = list(zip(g["sex"], g["race_ethnicity"], g["score"], g["_sel"]))
    g = g.assign(_row=row_key)
    unit_key = g.groupby("unit", sort=False)["_row"].agg(lambda s: tuple(sorted(s)))
    order = {u: i for i, u in enumerate(sorted(unit_key.index, key=lambda u: (unit_key[u], str(u))))}
    g = g.assign(_u=g["unit"].map(order))
    return g.sort_values(["_u", "_row"], kind="mergesort").drop(columns=["_sel", "_row"]).reset_index(drop=True)


def ll144_rows(individuals: pd.DataFrame, *, basis: str, sex: Sequence[str] | None, race: Sequence[str] | None,
               small_rule: str | None = None, thresholds: Mapping[str, Mapping[str, float]] | None = None,
               n_bootstrap: int = 1000, seed: int = 0, independent: bool = False,
               resolution: Mapping[str, float | None] | None = None) -> pd.DataFrame:
    """The LL144 tables of every group (system x condition x job) of ``individuals``.

    Parameters
    ----------
    individuals : pandas.DataFrame
        One row per individual: ``system, condition, group, unit, sex, race_ethnicity, score, selected``.
        ``unit`` is the independent unit (the base candidate of a résumé x variant row; the profile);
        ``sex`` and ``race_ethnicity`` hold category ids or ``unknown`` (any value when the table is not
        asked for); ``score`` is on the system's own scale (replicates averaged); ``selected`` in [0, 1]
        (a fraction at a tie across a top-K cutoff) under ``basis="selection"``, ignored under
        ``"scoring"``.
    basis : {"selection", "scoring"}
        Selection rate (selected / n) or scoring rate (share strictly above the group's median score).
    sex, race : sequence of str or None
        The category ids of the sex and race/ethnicity tables (None: no such table; the intersectional
        table needs both).
    small_rule : str or None
        The justification of the small-category rule (6 RCNY §5-301(d)); None: the rule is off. The 2% share
        is of the system x condition's individuals over every group together (the audit's data), so a
        category is excluded from all of its groups or from none.
    thresholds : mapping or None
        ``{"research": {"pass": p, "investigate": i}, "operational": {...}}``: status bounds (not in the
        law); None: no status.
    n_bootstrap : int
        Percentile bootstrap resamples of the units (0: no interval).
    seed : int
        The spec's seed; the draws of a group come from ``rng(seed, "ll144", system, condition, group)``.
    independent : bool
        Individuals are independent (profiles): Fisher's exact test (selection) or Mood's median test
        (scoring) against the reference in ``extra_p_value``. A counterfactual pool holds each base
        résumé once per variant, so its rows are not independent and get no test.
    resolution : mapping of str to float or None, optional
        System id -> its declared score grid (``score_resolution`` over the replicates averaged); a system
        without one has its grid inferred from the group's scores
        (:func:`runtime.analysis.stats.score_grid`). Scoring rates compare scores with the median as
        multiples of the grid, so floating-point noise cannot split a tie at the median.

    Returns
    -------
    pandas.DataFrame
        :data:`COLUMNS`; per group and table, one row per category (n = 0 included) in the order of
        ``sex``/``race``, then one ``unknown`` row. ``rate`` and ``impact_ratio`` in [0, 1] (higher:
        selected or scored high more often), empty (NaN) when undefined, with ``reason``; ``n_positive``
        selected (or above the median) individuals, fractional at a top-K tie; ``median`` and
        ``n_at_median`` on scoring rows (the group's median, and the category's individuals at it);
        ``excluded`` for unknown, empty and small-rule rows. Groups sorted by system, condition, group.

    Raises
    ------
    ValueError
        Unknown ``basis``, or ``selected`` missing under ``"selection"``.

    Notes
    -----
    Sources: 6 RCNY §5-300 (definitions of selection rate, scoring rate and impact ratio), §5-301
    (categories, the small-category rule); 29 CFR 1607.4(D) is the EEOC's four-fifths guideline, not
    applied here (the report cites it as guidance).
    """
    if basis not in ("selection", "scoring"):
        raise ValueError(f"basis must be 'selection' or 'scoring', got {basis!r}")
    if basis == "selection" and individuals["selected"].isna().any():
        raise ValueError("selection basis: every individual needs a selected value in [0, 1]")
    tables = [t for t in TABLES if (t == "sex" and sex) or (t == "race_ethnicity" and race)
              or (t == "intersectional" and sex and race)]
    rows: list[dict] = []
    keys = ["system", "condition", "group"]
    shares = {key: {t: _shares(a, t, sex or [], race or []) for t in tables}
              for key, a in individuals.groupby(["system", "condition"], sort=True)} if small_rule else {}
    for (system, condition, group), g in individuals.groupby(keys, sort=True):
        g = _canonical(g)
        rows += _group_rows(g, system=system, condition=condition, group=group, basis=basis, tables=tables,
                            sex=list(sex or []), race=list(race or []), small_rule=small_rule,
                            shares=shares.get((system, condition), {}),
                            thresholds=thresholds, n_bootstrap=n_bootstrap, seed=seed, independent=independent,
                            declared=(resolution or {}).get(system))
    return pd.DataFrame(rows, columns=list(COLUMNS))


def _shares(frame: pd.DataFrame, table: str, sex: Sequence[str], race: Sequence[str]) -> dict[str, tuple[int, int]]:
    """Category id -> (its individuals, all individuals) of ``frame`` in ``table``: the small-category rule's
    share over the audit's data (6 RCNY §5-301(d))."""
    cat = _cat_of(frame, table).to_numpy()
    return {c: (int(np.sum(cat == c)), len(frame)) for c in categories(table, list(sex), list(race))}


def _group_rows(g: pd.DataFrame, *, system, condition, group, basis, tables, sex, race, small_rule, thresholds,
                n_bootstrap, seed, independent, declared=None, shares=None) -> list[dict]:
    raw = g["score"].to_numpy(float)
    big_n = len(g)
    step = score_grid(declared, raw) if basis == "scoring" else 0.0
    score = on_grid(raw, step)  # multiples of the grid (the raw scores when continuous)
    on = float(np.median(score)) if basis == "scoring" else math.nan
    median = float(np.median(raw)) if basis == "scoring" else math.nan  # reported on the system's own scale
    positive = (score > on).astype(float) if basis == "scoring" else g["selected"].to_numpy(float)
    at_median = score == on if basis == "scoring" else np.zeros(big_n, bool)
    units = g["_u"].to_numpy()
    boot = _Boot(score, positive, units, basis, n_bootstrap, rng(seed, "ll144", system, condition, group)) \
        if n_bootstrap else None
    out = []
    for table in tables:
        cat = _cat_of(g, table).to_numpy()
        ids = categories(table, sex, race)
        n = {c: int(np.sum(cat == c)) for c in ids + [UNKNOWN]}
        pos = {c: float(np.sum(positive[cat == c])) for c in ids + [UNKNOWN]}
        rate = {c: pos[c] / n[c] if n[c] else math.nan for c in ids}
        share = (shares or {}).get(table, {})
        small = {c: bool(small_rule) and 0 < share.get(c, (0, 1))[0]
                 and share[c][0] * SMALL_SHARE_DENOMINATOR < share[c][1] for c in ids}
        eligible = [c for c in ids if n[c] > 0 and not small[c]]
        top = max((rate[c] for c in eligible), default=math.nan)
        ref = next((c for c in eligible if rate[c] == top), None) if eligible and top > 0 else None
        ci = boot.intervals(cat, eligible) if boot is not None and ref is not None else {}
        for c in ids + [UNKNOWN]:
            known = c != UNKNOWN
            r = rate.get(c, math.nan)
            ratio, reason, excluded = math.nan, "", False
            if not known:
                reason, excluded = REASON_UNKNOWN, True
            elif n[c] == 0:
                reason, excluded = REASON_EMPTY, True
            elif small[c]:
                reason, excluded = REASON_SMALL.format(share=f"{100 * share[c][0] / share[c][1]:.3g}%",
                                                       justification=small_rule), True
            elif ref is None:
                reason = REASON_ALL_ZERO.format(basis=basis) if eligible else REASON_NO_ELIGIBLE
            else:
                ratio = r / top
            lo, hi = ci.get(c, (math.nan, math.nan)) if known and not excluded else (math.nan, math.nan)
            p = _p_value(g, cat, positive, c, ref, basis, score) if independent and ref and known and not excluded \
                and c != ref else math.nan
            el = known and not excluded
            out.append({"system": system, "condition": condition, "group": group, "table": table, "category": c,
                        "basis": basis, "n": n[c], "n_positive": pos[c], "rate": r if known else math.nan,
                        "impact_ratio": ratio, "excluded": excluded, "reason": reason,
                        "median": median if basis == "scoring" else math.nan,
                        "n_at_median": int(np.sum(at_median[cat == c])) if basis == "scoring" else math.nan,
                        "status": status_of(ratio, (thresholds or {}).get("research")) if el else "",
                        "status_operational": status_of(ratio, (thresholds or {}).get("operational")) if el else "",
                        "extra_ci_low": lo, "extra_ci_high": hi, "extra_p_value": p})
    return out


def _p_value(g, cat, positive, c, ref, basis, score) -> float:
    from scipy import stats

    if basis == "selection":
        a, b = positive[cat == c], positive[cat == ref]
        table = [[int(round(a.sum())), int(len(a) - round(a.sum()))], [int(round(b.sum())), int(len(b) - round(b.sum()))]]
        return float(stats.fisher_exact(table).pvalue)
    x, y = score[cat == c], score[cat == ref]
    try:
        return float(stats.median_test(x, y, ties="ignore")[1])
    except ValueError:  # every score at the grand median: no table
        return math.nan


class _Boot:
    """Percentile bootstrap of the impact ratios of one group: units drawn with replacement, the median
    recomputed in each resample (scoring), eligibility and memberships as on the full sample."""

    def __init__(self, score, positive, units, basis, n_bootstrap, gen):
        n_units = int(units.max()) + 1
        self.weights = np.empty((n_bootstrap, len(score)))
        self.pos = np.empty((n_bootstrap, len(score)))
        order = np.argsort(score, kind="mergesort")
        for b in range(n_bootstrap):
            counts = np.bincount(gen.integers(0, n_units, n_units), minlength=n_units)
            w = counts[units].astype(float)
            self.weights[b] = w
            if basis == "scoring":
                keep = w[order] > 0
                med = _median(score[order][keep], w[order][keep])
                self.pos[b] = (score > med).astype(float)
            else:
                self.pos[b] = positive

    def intervals(self, cat: np.ndarray, eligible: list[str]) -> dict[str, tuple[float, float]]:
        rates = {}
        for c in eligible:
            m = cat == c
            n = self.weights[:, m].sum(axis=1)
            with np.errstate(invalid="ignore", divide="ignore"):
                rates[c] = (self.weights[:, m] * self.pos[:, m]).sum(axis=1) / n
        stacked = np.column_stack([rates[c] for c in eligible])
        top = np.where(np.isnan(stacked), -np.inf, stacked).max(axis=1)
        top = np.where(top > 0, top, np.nan)  # no eligible rate above 0 in the resample: undefined
        out = {}
        for c in eligible:
            with np.errstate(invalid="ignore", divide="ignore"):
                ratio = rates[c] / top
            ratio = ratio[np.isfinite(ratio)]
            out[c] = (float(np.percentile(ratio, 2.5)), float(np.percentile(ratio, 97.5))) if ratio.size else \
                (math.nan, math.nan)
        return out
