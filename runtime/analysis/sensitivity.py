"""Run-time planted-bias self-test (seed 003 §3.7: "the instrument could have seen it"; issue 39 §6).

The SESOI's score shift δ* (issue 30 §1, :func:`runtime.analysis.sesoi.sesoi_table`: the shift that
brings the selection ratio at the decision rule to the declared margin, or the shift of a SESOI in
score units or in d) is planted in **one protected category at a time**, every other category null,
on top of the **observed residuals** of the paired differences. With diff_i = score_i(variant) −
score_i(reference) per base candidate (and replicate) of one system x condition, and m its mean over
the variant's rows,

    score'_i(v) = score_i(v) − m_v − δ*   for the planted category v,
    score'_i(u) = score_i(u) − m_u        for every other variant u (null),

and the reference scores are untouched. The paired differences keep their observed spread and shape
(the residuals diff_i − m), their mean becomes −δ* (a disadvantage of the planted category, the
direction δ* is defined in) or 0. The planted paired t is δ*/SE with SE = sd(diff)/√n: it comes
from the data (the spread of the differences, the order statistics behind δ*), it is never fixed by
the plant (methods ≤ 10 set score' = score − m + 2·SE, which made t exactly 2 whatever the data,
so the paired test "detected" every plant by construction, issue 39 "Validity proves no
sensitivity"). Column ``shift_se`` = δ*/SE reports it.

Each planted copy is re-ranked and every metric is recomputed on it: the paired variant contrast
(row ``effect_size_paired``: Cohen's d, paired t, BH over the variants) and the seed 000 metric
suite (:func:`runtime.analysis.analyse` with the run's settings, its multiplicity included). The
**null copy** (every category centred, nothing planted) is analysed once. A metric **detects** the
plant in a category when its adjusted p-value is below α on that category's planted copy and not
on the null copy; a metric significant on the null copy too reacts to something other than the
plant and is reported as not detecting it. Under swap-in ranking (the default, README "Ranking
modes") a lowered variant resume meets the reference resumes of the other candidates of its job,
so MARC, the flip rate, retention, the selection ratio and the impact ratio see a shift shared by
the category's resumes; under per-variant ranking a shift shared by every resume of a variant moves
no rank within it, and those metrics cannot see it. The result is the sensitivity table: per
category, which metrics would have flagged a bias of the SESOI's size in this audit's data. Where
δ* is undefined (``sesoi.csv`` says why) nothing is planted and the rows say so.

No I/O.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence

import numpy as np
import pandas as pd

SELF_TEST_COLUMNS = ("system", "condition", "variant", "metric", "shift", "se", "shift_se",
                     "value_observed", "value_null", "value_planted", "p_adj_observed", "p_adj_null",
                     "p_adj_planted", "detected", "notes")
NOTE_ZERO_SE = "paired differences have zero spread: the paired t is undefined (SE = 0)"
NOTE_NULL_SIG = "significant on the null copy too: it does not isolate the planted shift"
NOTE_NO_SHIFT = "the SESOI's score shift δ* is undefined here (sesoi.csv says why): nothing planted"
#: The self-test row of the paired variant contrast: value = Cohen's d (pooled SD), detection by
#: the paired t-test q (methods 5; the compile-time MDE of the same contrast is on d_z, "effect_size_dz").
EFFECT_METRIC = "effect_size_paired"
_SC = ["system", "condition"]
_KEY = ["system", "condition", "variant"]


def _differences(paired: pd.DataFrame, reference: str) -> tuple[pd.DataFrame, np.ndarray]:
    """Non-reference rows and their paired differences to the reference resume of the same base
    candidate (system, condition, replicate, job)."""
    key = ["system", "condition", "replicate", "job_id", "cv_id"]
    ref = paired[paired["variant"] == reference].set_index(key)["score"]
    other = paired[paired["variant"] != reference]
    diff = other["score"].to_numpy(float) - ref.reindex(pd.MultiIndex.from_frame(other[key])).to_numpy(float)
    return other, diff


def plant_shift(paired: pd.DataFrame, *, reference: str, shifts: Mapping[tuple, float],
                category: str | None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """A copy of ``paired`` with δ* planted in one category on its observed residuals, every other
    category null (module docstring), re-ranked.

    Parameters
    ----------
    paired : pandas.DataFrame
        The paired frame (``system, condition, replicate, job_id, cv_id, variant, score, rank``).
    reference : str
        The reference variant (its scores are never changed).
    shifts : Mapping
        ``(system, condition) -> δ*`` in score units (≥ 0, the lowering the planted category gets);
        a missing, non-finite or negative δ* plants nothing there.
    category : str or None
        The variant planted; None: the null copy (every variant centred on its reference).

    Returns
    -------
    (planted, plants)
        ``planted``: same columns as ``paired``, ranks recomputed (:func:`runtime.rank.rank_within_groups`);
        ``plants``: one row per system x condition x non-reference variant, ``n`` (paired
        differences), ``mean_diff`` (observed m, score units), ``se`` (sd(diff)/√n), ``shift`` (the
        lowering planted: δ* for ``category`` where defined, else 0), ``planted`` (bool).
    """
    from runtime.rank import rank_within_groups

    other, diff = _differences(paired, reference)
    d = other[_KEY].assign(diff=diff)
    g = d.groupby(_KEY, sort=True)["diff"]
    plants = g.agg(n="count", mean_diff="mean", sd=lambda x: x.std(ddof=1)).reset_index()
    plants["se"] = plants["sd"] / np.sqrt(plants["n"])
    delta = np.array([float(shifts.get((s, c), math.nan)) for s, c in zip(plants["system"], plants["condition"])])
    plants["planted"] = (plants["variant"] == category) & np.isfinite(delta) & (delta >= 0)
    plants["shift"] = np.where(plants["planted"], delta, 0.0)
    m = paired[_KEY].merge(plants, on=_KEY, how="left")
    move = (m["variant"] != reference).to_numpy()
    planted = paired.copy()
    planted.loc[move, "score"] = (paired.loc[move, "score"].to_numpy(float) - m.loc[move, "mean_diff"].to_numpy(float)
                                  - m.loc[move, "shift"].to_numpy(float))
    planted = rank_within_groups(planted.drop(columns=["rank"]))[list(paired.columns)]
    return planted, plants.drop(columns=["sd"])


def planted_self_test(paired: pd.DataFrame, *, reference: str, shifts: Mapping[tuple, float], alpha: float,
                      sesoi: float, axes: Sequence[str], observed_metrics: pd.DataFrame,
                      observed_effects: pd.DataFrame, analyse_metrics: Callable[[pd.DataFrame], pd.DataFrame]
                      ) -> pd.DataFrame:
    """Plant δ* in each category in turn (others null) and report which metrics detect it.

    Parameters
    ----------
    paired : pandas.DataFrame
        The paired frame.
    reference : str
        The reference variant.
    shifts : Mapping
        ``(system, condition) -> δ*`` (score units): the pooled rows of ``sesoi.csv``
        (:func:`runtime.analysis.sesoi.shifts_of`).
    alpha, sesoi : float
        Detection level (adjusted p < α) and the SESOI (d) passed to the effect-size contrasts.
    axes : sequence of str
        Axis columns.
    observed_metrics, observed_effects : pandas.DataFrame
        The run's metrics frame and effect-size frame (for the observed values).
    analyse_metrics : callable
        ``frame -> metrics frame``: the seed 000 suite with the run's settings.

    Returns
    -------
    pandas.DataFrame
        :data:`SELF_TEST_COLUMNS`, one row per system x condition x category (non-reference variant)
        x metric. ``shift``: δ* planted (score units; 0 where undefined), ``se``: SE of the category's
        observed paired differences, ``shift_se`` = shift / se (the planted paired t with one
        replicate; nan when se = 0); ``value_*`` and ``p_adj_*`` on the observed data, the null copy
        and the category's planted copy; ``detected``: p_adj_planted < α ≤ p_adj_null.
    """
    from runtime.analysis.effect_size import effect_sizes

    variants = sorted(str(v) for v in paired.loc[paired["variant"] != reference, "variant"].unique())
    contrasts = [{"kind": "variant", "variant": v, "reference": reference, "family": "variants"} for v in variants]

    def analysed(frame: pd.DataFrame) -> pd.DataFrame:
        e = effect_sizes(frame, contrasts=contrasts, axes=axes, sesoi=sesoi, alpha=alpha)
        e = e.assign(metric=EFFECT_METRIC, value=e["d"], p_adj=e["q_value"])[_KEY + ["metric", "value", "p_adj"]]
        met = analyse_metrics(frame)[_KEY + ["metric", "value", "p_adj"]]
        out = pd.concat([e, met], ignore_index=True)
        return out[out["variant"] != reference]

    null_frame, _ = plant_shift(paired, reference=reference, shifts=shifts, category=None)
    null = analysed(null_frame)
    observed = [observed_metrics[_KEY + ["metric", "value", "p_adj"]]]
    obs_eff = observed_effects[observed_effects["kind"] == "variant"] if len(observed_effects) else None
    if obs_eff is not None:
        observed.append(obs_eff.assign(metric=EFFECT_METRIC, value=obs_eff["d"], p_adj=obs_eff["q_value"])[
            _KEY + ["metric", "value", "p_adj"]])
    obs = pd.concat(observed, ignore_index=True).set_index(_KEY + ["metric"])
    nul = null.set_index(_KEY + ["metric"])
    rows = []
    for v in variants:
        frame, plants = plant_shift(paired, reference=reference, shifts=shifts, category=v)
        mine = plants[plants["variant"] == v]
        planted = analysed(frame) if mine["planted"].any() else null
        plant_of = mine.set_index(_KEY)
        for r in planted[planted["variant"] == v].itertuples():
            k = (r.system, r.condition, r.variant, r.metric)
            rows.append(_row(k, plant_of.loc[k[:3]], obs.loc[k] if k in obs.index else None,
                             nul.loc[k] if k in nul.index else None, r.value, r.p_adj, alpha))
    out = pd.DataFrame(rows, columns=list(SELF_TEST_COLUMNS))
    return out.sort_values(["system", "condition", "variant"], kind="mergesort").reset_index(drop=True)


def _f(x) -> float:
    return float(x) if x is not None and not pd.isna(x) else math.nan


def _row(k, plant: Mapping, obs, null, v_pl, q_pl, alpha) -> dict[str, object]:
    se, shift, planted = float(plant["se"]), float(plant["shift"]), bool(plant["planted"])
    q_pl, q_null = _f(q_pl), _f(null["p_adj"]) if null is not None else math.nan
    null_sig = math.isfinite(q_null) and q_null < alpha
    detected = bool(planted and math.isfinite(q_pl) and q_pl < alpha and not null_sig)
    notes = NOTE_NO_SHIFT if not planted else NOTE_NULL_SIG if null_sig else NOTE_ZERO_SE if not se > 0 else ""
    return {"system": k[0], "condition": k[1], "variant": k[2], "metric": k[3],
            "shift": shift, "se": se, "shift_se": shift / se if se > 0 and planted else math.nan,
            "value_observed": _f(obs["value"]) if obs is not None else math.nan,
            "value_null": _f(null["value"]) if null is not None else math.nan, "value_planted": _f(v_pl),
            "p_adj_observed": _f(obs["p_adj"]) if obs is not None else math.nan, "p_adj_null": q_null,
            "p_adj_planted": q_pl, "detected": detected, "notes": notes}
