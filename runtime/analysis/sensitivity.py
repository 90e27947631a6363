"""Run-time planted-bias self-test (seed 003 §3.7: "the instrument could have seen it").

On a copy of the paired frame, every non-reference variant of every system x condition gets a
declared shift planted in place of its observed effect: with diff_i = score_i(variant) −
score_i(reference) per base candidate, n base candidates and SE = sd(diff)/sqrt(n),

    score'(variant) = score(variant) − mean(diff) + shift_se · SE,

so the paired differences keep their spread and their mean becomes exactly ``shift_se`` standard
errors (the paired t statistic of the planted copy is ``shift_se``). The copy is re-ranked and every
metric is recomputed: the effect-size paired contrast (d_z, paired t, BH over variants) and the
seed 000 metric suite (:func:`runtime.analysis.analyse`, BH over the run). A metric **detects** the
plant when its adjusted p-value is below α. The result is the sensitivity table: which metrics
would have flagged a bias of that size. A variant whose differences have zero spread gets no plant
(SE = 0) and is reported as such.

No I/O.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence

import numpy as np
import pandas as pd

SELF_TEST_COLUMNS = ("system", "condition", "variant", "metric", "shift_se", "shift", "se",
                     "value_observed", "value_planted", "p_adj_observed", "p_adj_planted", "detected",
                     "notes")
NOTE_ZERO_SE = "paired differences have zero spread: nothing can be planted (SE = 0)"
EFFECT_METRIC = "effect_size_dz"


def plant_shift(paired: pd.DataFrame, *, reference: str, shift_se: float) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The planted copy (re-ranked) and the plant per system x condition x variant.

    Returns
    -------
    (planted, plants)
        ``planted``: same columns as ``paired``; ``plants``: ``system, condition, variant, n,
        mean_diff, se, shift`` (shift and se in score units).
    """
    from runtime.rank import rank_within_groups

    key = ["system", "condition", "replicate", "job_id", "cv_id"]
    ref = paired[paired["variant"] == reference].set_index(key)["score"]
    other = paired[paired["variant"] != reference]
    diff = other["score"].to_numpy(float) - ref.reindex(pd.MultiIndex.from_frame(other[key])).to_numpy(float)
    d = other[["system", "condition", "variant"]].assign(diff=diff)
    g = d.groupby(["system", "condition", "variant"], sort=True)["diff"]
    plants = g.agg(n="count", mean_diff="mean", sd=lambda x: x.std(ddof=1)).reset_index()
    plants["se"] = plants["sd"] / np.sqrt(plants["n"])
    plants["shift"] = np.where(plants["se"] > 0, shift_se * plants["se"], 0.0)
    planted = paired.copy()
    m = planted.merge(plants, on=["system", "condition", "variant"], how="left")
    move = (m["variant"] != reference) & (m["se"] > 0)
    planted.loc[move.to_numpy(), "score"] = (m.loc[move, "score"] - m.loc[move, "mean_diff"]
                                             + m.loc[move, "shift"]).to_numpy(float)
    planted = rank_within_groups(planted.drop(columns=["rank"]))[list(paired.columns)]
    return planted, plants.drop(columns=["sd"])


def planted_self_test(paired: pd.DataFrame, *, reference: str, shift_se: float, alpha: float,
                      sesoi: float, axes: Sequence[str], observed_metrics: pd.DataFrame,
                      observed_effects: pd.DataFrame, analyse_metrics: Callable[[pd.DataFrame], pd.DataFrame]
                      ) -> pd.DataFrame:
    """Plant ``shift_se`` standard errors per variant and report which metrics detect it.

    Parameters
    ----------
    paired : pandas.DataFrame
        The paired frame.
    reference : str
        The reference variant.
    shift_se : float
        Planted shift in standard errors of each variant's paired difference.
    alpha, sesoi : float
        Detection level (adjusted p < α) and the SESOI passed to the effect-size contrasts.
    axes : sequence of str
        Axis columns.
    observed_metrics, observed_effects : pandas.DataFrame
        The run's metrics frame and effect-size frame (for the observed values).
    analyse_metrics : callable
        ``frame -> metrics frame``: the seed 000 suite with the run's settings.

    Returns
    -------
    pandas.DataFrame
        :data:`SELF_TEST_COLUMNS`, one row per system x condition x variant x metric.
    """
    from runtime.analysis.effect_size import effect_sizes

    planted, plants = plant_shift(paired, reference=reference, shift_se=shift_se)
    variants = [{"kind": "variant", "variant": v, "reference": reference, "family": "variants"}
                for v in sorted(plants["variant"].unique())]
    planted_eff = effect_sizes(planted, contrasts=variants, axes=axes, sesoi=sesoi, alpha=alpha)
    planted_met = analyse_metrics(planted)
    obs_eff = observed_effects[observed_effects["kind"] == "variant"] if len(observed_effects) else observed_effects
    rows = []
    plant_of = plants.set_index(["system", "condition", "variant"])
    for r in planted_eff.itertuples():
        p = plant_of.loc[(r.system, r.condition, r.variant)]
        o = obs_eff[(obs_eff["system"] == r.system) & (obs_eff["condition"] == r.condition)
                    & (obs_eff["variant"] == r.variant)] if len(obs_eff) else obs_eff
        rows.append(_row(r.system, r.condition, r.variant, EFFECT_METRIC, shift_se, p,
                         o["d"].iloc[0] if len(o) else math.nan, r.d,
                         o["q_value"].iloc[0] if len(o) else math.nan, r.q_value, alpha))
    obs = observed_metrics.set_index(["system", "condition", "metric", "variant"])
    for r in planted_met[planted_met["variant"] != reference].itertuples():
        p = plant_of.loc[(r.system, r.condition, r.variant)]
        k = (r.system, r.condition, r.metric, r.variant)
        o = obs.loc[k] if k in obs.index else None
        rows.append(_row(r.system, r.condition, r.variant, r.metric, shift_se, p,
                         o["value"] if o is not None else math.nan, r.value,
                         o["p_adj"] if o is not None else math.nan, r.p_adj, alpha))
    return pd.DataFrame(rows, columns=list(SELF_TEST_COLUMNS))


def _row(system, condition, variant, metric, shift_se, plant: Mapping, v_obs, v_pl, q_obs, q_pl, alpha):
    se = float(plant["se"])
    q_pl = float(q_pl) if q_pl is not None and not pd.isna(q_pl) else math.nan
    return {"system": system, "condition": condition, "variant": variant, "metric": metric,
            "shift_se": shift_se, "shift": float(plant["shift"]), "se": se,
            "value_observed": float(v_obs) if not pd.isna(v_obs) else math.nan,
            "value_planted": float(v_pl) if not pd.isna(v_pl) else math.nan,
            "p_adj_observed": float(q_obs) if not pd.isna(q_obs) else math.nan,
            "p_adj_planted": q_pl, "detected": bool(se > 0 and math.isfinite(q_pl) and q_pl < alpha),
            "notes": "" if se > 0 else NOTE_ZERO_SE}
