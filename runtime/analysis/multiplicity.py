"""Multiplicity procedures of issue 29 §4: which p-values share a family, and their adjusted values.

Pure functions on arrays of p-values (no frame, no I/O). A family never spans audited systems: the
caller passes one system's tests (all its conditions) at a time.

* :func:`benjamini_hochberg`: BH step-up adjusted p-values (statsmodels), nan left out.
* :func:`benjamini_bogomolov`: the two-level hierarchy of Benjamini & Bogomolov (2014), "Selective
  inference on multiple families of hypotheses", JRSS-B 76(1), §2: level 1 selects families by BH over
  one primary p-value per family (m₁ families, R selected); in each selected family the secondary
  p-values are tested by BH at level α·R/m₁. Adjusted values are reported on the α scale: a
  secondary's ``p_adj`` is its within-family BH value times m₁/R, so ``p_adj <= alpha`` exactly when
  it is rejected; secondaries of families not selected are not tested (nan).
* :func:`graphical`: the sequentially rejective graphical procedure of Bretz, Maurer, Brannath &
  Posch (2009), "A graphical approach to sequentially rejective multiple test procedures", Stat. Med.
  28, 586-604, with the adjusted p-values of their §3 (Algorithm 1 applied to the weights
  ``p_j / w_j``); strong FWER control for any weights summing to at most 1 and any transition matrix
  with rows summing to at most 1. Written here: no maintained Python library implements it
  (``gMCP`` and ``graphicalMCP`` are R packages).
* :func:`score_graph`: the graph issue 29 §4 names: every category's score test at α/m₁, which passes
  its α in halves to its category's two secondary tests when it rejects; a secondary that rejects
  passes its share to the other.

Every function returns adjusted p-values capped at 1; "rejected at α" reads ``p_adj <= alpha``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from statsmodels.stats.multitest import multipletests

ERR_ALPHA = "alpha must lie in (0, 1), got {got!r}"
ERR_GRAPH = ("a graph needs weights >= 0 summing to at most 1 and a square transition matrix of the same "
             "size with entries >= 0, a zero diagonal and rows summing to at most 1")
ERR_SECONDARY = "secondary p-values: one sequence per primary, got {got} for {m} primaries"


def benjamini_hochberg(p_values: Sequence[float] | np.ndarray) -> np.ndarray:
    """BH adjusted p-values over the defined entries (``statsmodels.stats.multitest.multipletests``,
    ``fdr_bh``); nan stays nan. Shape of ``p_values``; values in [0, 1]."""
    p = np.asarray(p_values, dtype=float)
    out = np.full_like(p, np.nan)
    defined = ~np.isnan(p)
    if defined.any():
        out[defined] = multipletests(p[defined], method="fdr_bh")[1]
    return out


def benjamini_bogomolov(primary: Sequence[float], secondary: Sequence[Sequence[float]], *,
                        alpha: float) -> tuple[np.ndarray, list[np.ndarray], int]:
    """Two-level selective FDR control (Benjamini & Bogomolov 2014, §2; issue 29 §4 ``hierarchical``).

    Parameters
    ----------
    primary : sequence of float, length m
        One p-value per family (a category × condition's score test); nan: untestable, never selected
        and not counted in m₁.
    secondary : sequence of sequences of float, length m
        Each family's secondary p-values (its MARC rank test and McNemar selection test); nan entries
        stay nan.
    alpha : float in (0, 1)
        The FDR level of both levels.

    Returns
    -------
    primary_adj : numpy.ndarray, shape (m,)
        BH adjusted primary p-values over the m₁ defined ones.
    secondary_adj : list of numpy.ndarray
        Per family, within-family BH values times m₁/R (capped at 1) when the family is selected
        (``primary_adj <= alpha``), else all nan ("not tested: level 1 did not reject").
    selected : int
        R, the number of selected families.

    Raises
    ------
    ValueError
        ``ERR_ALPHA``; ``ERR_SECONDARY`` when ``secondary`` has not one entry per primary.
    """
    if not (isinstance(alpha, (int, float)) and 0 < alpha < 1):
        raise ValueError(ERR_ALPHA.format(got=alpha))
    p1 = np.asarray(primary, dtype=float)
    if len(secondary) != len(p1):
        raise ValueError(ERR_SECONDARY.format(got=len(secondary), m=len(p1)))
    q1 = benjamini_hochberg(p1)
    m1 = int(np.sum(~np.isnan(p1)))
    chosen = ~np.isnan(q1) & (q1 <= alpha)
    r = int(chosen.sum())
    out: list[np.ndarray] = []
    for i, family in enumerate(secondary):
        p2 = np.asarray(family, dtype=float)
        if not chosen[i]:
            out.append(np.full_like(p2, np.nan))
            continue
        out.append(np.minimum(1.0, benjamini_hochberg(p2) * m1 / r))
    return q1, out, r


def _check_graph(weights: np.ndarray, transitions: np.ndarray) -> None:
    m = len(weights)
    ok = (transitions.shape == (m, m) and np.all(weights >= 0) and weights.sum() <= 1 + 1e-12
          and np.all(transitions >= 0) and np.all(np.diag(transitions) == 0)
          and np.all(transitions.sum(axis=1) <= 1 + 1e-12))
    if not ok:
        raise ValueError(ERR_GRAPH)


def graphical(p_values: Sequence[float], weights: Sequence[float], transitions: Sequence[Sequence[float]]) -> np.ndarray:
    """Adjusted p-values of the graphical procedure (Bretz et al. 2009, Algorithm 1 and §3).

    At each step the hypothesis with the smallest ``p_j / w_j`` is removed; its adjusted p-value is
    the largest such ratio met so far (capped at 1); its weight moves along its edges
    (``w_l += w_j·G_jl``) and the edges are rewired (``G_lk = (G_lk + G_lj·G_jk) / (1 − G_lj·G_jl)``).
    A hypothesis whose weight stays 0 gets 1. A nan p-value is untestable: it is run as p = 1 (never
    rejected, so the weight it holds or receives is never passed on: conservative) and stays nan.

    Parameters
    ----------
    p_values : sequence of float, length m
    weights : sequence of float, length m, >= 0, sum <= 1
    transitions : m × m, >= 0, zero diagonal, rows summing to at most 1

    Returns
    -------
    numpy.ndarray, shape (m,)
        Adjusted p-values; "rejected at α" is ``p_adj <= alpha`` (strong FWER control).

    Raises
    ------
    ValueError
        ``ERR_GRAPH``.
    """
    p = np.asarray(p_values, dtype=float)
    w = np.asarray(weights, dtype=float).copy()
    g = np.asarray(transitions, dtype=float).copy()
    _check_graph(w, g)
    missing = np.isnan(p)
    q = np.where(missing, 1.0, p)  # untestable: never rejected; the weight it receives stays with it
    out = np.full_like(p, np.nan)
    active = list(range(len(q)))
    floor = 0.0
    while active:
        ratios = [q[j] / w[j] if w[j] > 0 else math.inf for j in active]
        pick = int(np.argmin(ratios))
        j = active.pop(pick)
        floor = max(floor, ratios[pick])
        out[j] = min(1.0, floor)
        w, g = _remove(w, g, j, active)
    out[missing] = np.nan
    return out


def _remove(w: np.ndarray, g: np.ndarray, j: int, rest: list[int]) -> tuple[np.ndarray, np.ndarray]:
    """The graph after hypothesis ``j`` leaves (Bretz et al. 2009, Algorithm 1, step 2)."""
    w, new = w.copy(), g.copy()
    for ell in rest:
        w[ell] = w[ell] + w[j] * g[j, ell]
        for k in rest:
            if k == ell:
                continue
            denom = 1.0 - g[ell, j] * g[j, ell]
            new[ell, k] = (g[ell, k] + g[ell, j] * g[j, k]) / denom if denom > 0 else 0.0
    w[j] = 0.0
    new[j, :] = 0.0
    new[:, j] = 0.0
    for ell in rest:
        new[ell, ell] = 0.0
    return w, new


def score_graph(n_categories: int, n_secondary: int = 2) -> tuple[np.ndarray, np.ndarray]:
    """Weights and transitions of issue 29 §4's ``graphical`` procedure.

    Hypotheses are ordered category by category: its score test, then its ``n_secondary`` secondary
    tests. Each score test has weight 1/m₁ (m₁ = ``n_categories``) and passes it in equal shares to its
    category's secondaries; a secondary passes its weight in equal shares to the other secondaries of
    its category (with one secondary, nowhere).

    Returns
    -------
    weights : numpy.ndarray, shape (m₁·(1 + n_secondary),)
    transitions : numpy.ndarray, the square matrix of the same size
    """
    size = 1 + n_secondary
    m = n_categories * size
    w = np.zeros(m)
    g = np.zeros((m, m))
    for c in range(n_categories):
        head = c * size
        w[head] = 1.0 / n_categories
        for s in range(1, size):
            g[head, head + s] = 1.0 / n_secondary
            for t in range(1, size):
                if t != s:
                    g[head + s, head + t] = 1.0 / (n_secondary - 1)
    return w, g


# ------------------------------------------------------------------ families of a metrics frame (§4)
#: ``analysis.multiplicity`` values (issue 29 §4).
METHODS = ("hierarchical", "graphical", "per_metric", "run")
#: The level-1 test of a category (its score test) and its two level-2 tests: the MARC rank test and
#: McNemar's test of the flip table (shared by the impact ratio under swap-in when both read one cutoff,
#: counted once; issue 29 §7).
PRIMARY = "score_delta"
SECONDARY = ("marc", "flip_rate")
#: A selection test that is a level-2 test of its own when it reads another cutoff than the flip table
#: (the selection ratio's McNemar at ``k.group`` ≠ ``k.counterfactual``, which the impact ratio shares;
#: issue 29 §7). It joins the secondaries of a system only where it is tested and not shared.
SEPARATE = ("selection_ratio",)
NOTE_NOT_TESTED = "not tested: level 1 did not reject (the category's score test, {family})"
NOTE_INTERVAL_ONLY = "read by its interval only under analysis.multiplicity {method}: p_adj empty"
ERR_METHOD = "multiplicity must be one of {methods}, got {got!r}"


@dataclass(frozen=True)
class Adjusted:
    """The adjusted p-values of a metrics frame and the family each was adjusted in.

    Attributes
    ----------
    p_adj : numpy.ndarray, shape (n_rows,)
        Adjusted p-value on the α scale (rejected: ``p_adj < alpha``); nan for a row without a test, a
        shared test (counted once, at the row that owns it), a secondary not tested, or a row read by
        its interval only.
    family : list of str
        ``adj_family``: ``run``, ``<system>/<metric>``, ``<system>/level1``,
        ``<system>/<condition>/<variant>/level2``, ``<system>/graph``; empty for a row without a test.
    m : numpy.ndarray, shape (n_rows,)
        ``adj_m``: the number of tests in that family (nan when none).
    notes : list of str
        A note to add to the row ("" none).
    """

    p_adj: np.ndarray
    family: list[str]
    m: np.ndarray
    notes: list[str]


def adjust(rows: pd.DataFrame, p_values: np.ndarray, tested: np.ndarray, *, method: str, alpha: float,
           shared: np.ndarray | None = None) -> Adjusted:
    """Adjust the p-values of a metrics frame under ``analysis.multiplicity`` (issue 29 §4).

    Parameters
    ----------
    rows : pandas.DataFrame
        Columns ``system, condition, variant, metric`` (one row per metrics row).
    p_values : numpy.ndarray, shape (n_rows,)
        Raw p-values (nan: no test).
    tested : numpy.ndarray of bool, shape (n_rows,)
        Rows whose test enters an adjustment (not the reference's, not a test that cannot reject in the
        design, not a shared test).
    method : {"hierarchical", "graphical", "per_metric", "run"}
        ``run``: BH over every tested row of the run (seed 000 §3.5; methods 6's ``p_adj``). ``per_metric``:
        BH over one metric's rows of one system. ``hierarchical``: per system, BH over the categories'
        score tests (level 1), then in each rejected category its MARC and McNemar tests (and the impact
        ratio's McNemar when it reads another cutoff, :data:`SEPARATE`) by BH at α·R/m₁
        (:func:`benjamini_bogomolov`); other tests are read by their interval only.
        ``graphical``: per system, the graph of :func:`score_graph` (FWER).
    alpha : float
        The level (the hierarchy's selection depends on it).
    shared : numpy.ndarray, optional
        Per row, the metric id of the row of the same cell that carries its test ("" when the row's test
        is its own; ``True`` reads as ``flip_rate``): the impact and selection ratios share the flip
        table's McNemar test at one cutoff. No p_adj; the family of that row.

    Raises
    ------
    ValueError
        ``ERR_METHOD``; ``ERR_ALPHA``.
    """
    if method not in METHODS:
        raise ValueError(ERR_METHOD.format(methods=", ".join(METHODS), got=method))
    if not (isinstance(alpha, (int, float)) and 0 < alpha < 1):
        raise ValueError(ERR_ALPHA.format(got=alpha))
    n = len(rows)
    p = np.where(np.asarray(tested, dtype=bool), np.asarray(p_values, dtype=float), np.nan)
    out = np.full(n, np.nan)
    family = [""] * n
    m = np.full(n, np.nan)
    notes = [""] * n
    system = rows["system"].astype(str).to_numpy()
    condition = rows["condition"].astype(str).to_numpy()
    variant = rows["variant"].astype(str).to_numpy()
    metric = rows["metric"].astype(str).to_numpy()
    defined = ~np.isnan(p)

    def put(index: np.ndarray, name: str, values: np.ndarray) -> None:
        for i, v in zip(index, values):
            out[i], family[i], m[i] = v, name, len(index)

    if method == "run":
        idx = np.flatnonzero(defined)
        put(idx, "run", benjamini_hochberg(p[idx]))
    elif method == "per_metric":
        for key in sorted(set(zip(system[defined], metric[defined]))):
            idx = np.flatnonzero(defined & (system == key[0]) & (metric == key[1]))
            put(idx, f"{key[0]}/{key[1]}", benjamini_hochberg(p[idx]))
    else:
        for sys_id in sorted(set(system[defined])):
            in_sys = defined & (system == sys_id)
            cats = [(c, v) for c, v, mt in zip(condition[in_sys], variant[in_sys], metric[in_sys]) if mt == PRIMARY]
            cell = {(c, v, mt): i for i, (c, v, mt) in enumerate(zip(condition, variant, metric)) if in_sys[i]}
            heads = np.array([cell[(c, v, PRIMARY)] for c, v in cats], dtype=int)
            names = SECONDARY + tuple(s for s in SEPARATE if np.any(in_sys & (metric == s)))
            seconds = [[cell.get((c, v, s), -1) for s in names] for c, v in cats]
            if method == "hierarchical":
                q1, q2, _ = benjamini_bogomolov(p[heads], [[p[j] if j >= 0 else math.nan for j in sec]
                                                           for sec in seconds], alpha=alpha)
                put(heads, f"{sys_id}/level1", q1)
                for (c, v), sec, vals in zip(cats, seconds, q2):
                    name = f"{sys_id}/{c}/{v}/level2"
                    idx = np.array([j for j in sec if j >= 0], dtype=int)
                    put(idx, name, vals[[k for k, j in enumerate(sec) if j >= 0]])
                    if np.isnan(vals).all():
                        for j in idx:
                            notes[j] = NOTE_NOT_TESTED.format(family=f"{sys_id}/level1")
            else:
                w, g = score_graph(len(cats), len(names))
                order = [j for head, sec in zip(heads, seconds) for j in (head, *sec)]
                adj = graphical([p[j] if j >= 0 else math.nan for j in order], w, g)
                idx = np.array([j for j in order if j >= 0], dtype=int)
                put(idx, f"{sys_id}/graph", adj[[k for k, j in enumerate(order) if j >= 0]])
            for i in np.flatnonzero(in_sys):
                if not family[i]:
                    notes[i] = (NOTE_NOT_TESTED.format(family=f"{sys_id}/level1") if metric[i] in names
                                else NOTE_INTERVAL_ONLY.format(method=method))
    if shared is not None:
        at = {(s, c, v, mt): i for i, (s, c, v, mt) in enumerate(zip(system, condition, variant, metric))}
        for i, who in enumerate(shared):
            if not who:
                continue
            j = at.get((system[i], condition[i], variant[i], "flip_rate" if who is True else str(who)))
            if j is not None and family[j]:
                family[i], m[i] = family[j], m[j]
    return Adjusted(p_adj=out, family=family, m=m, notes=notes)
