"""Run-time planted-bias self-test (seed 003 §3.7: "the instrument could have seen it").

On a copy of the paired frame, every non-reference variant of every system x condition gets a
declared shift planted in place of its observed effect: with diff_i = score_i(variant) −
score_i(reference) per base candidate, n base candidates and SE = sd(diff)/sqrt(n),

    score'(variant) = score(variant) − mean(diff) + shift_se · SE,

so the paired differences keep their spread and their mean becomes exactly ``shift_se`` standard
errors (the paired t statistic of the planted copy is ``shift_se``). The copy is re-ranked and every
metric is recomputed: the effect-size paired contrast (row ``effect_size_paired``: Cohen's d, paired t, BH over the variants) and the
seed 000 metric suite (:func:`runtime.analysis.analyse`, BH over the run). The same is done on the
**null copy** (shift 0: each variant's differences centred on zero). A metric **detects** the plant
when its adjusted p-value is below α on the planted copy and not on the null copy; a metric that is
significant on the null copy as well reacts to something other than the planted shift (for
example ``impact_ratio``'s Fisher test, which compares selections that differ at any shift), and is
reported as not detecting it. Rank-based metrics cannot see the plant at all: a shift that is the
same for every base candidate of a variant moves no rank within that variant. The result is the sensitivity table: which metrics
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
                     "value_observed", "value_null", "value_planted", "p_adj_observed", "p_adj_null",
                     "p_adj_planted", "detected", "notes")
NOTE_ZERO_SE = "paired differences have zero spread: nothing can be planted (SE = 0)"
NOTE_NULL_SIG = "significant on the null copy too: it does not isolate the planted shift"
#: The self-test row of the paired variant contrast: value = Cohen's d (pooled SD), detection by
#: the paired t-test q (methods 5; the compile-time MDE of the same contrast is on d_z, "effect_size_dz").
EFFECT_METRIC = "effect_size_paired"


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
    null, _ = plant_shift(paired, reference=reference, shift_se=0.0)
    variants = [{"kind": "variant", "variant": v, "reference": reference, "family": "variants"}
                for v in sorted(plants["variant"].unique())]
    key = ["system", "condition", "variant"]
    eff = {}
    for name, frame in (("planted", planted), ("null", null)):
        e = effect_sizes(frame, contrasts=variants, axes=axes, sesoi=sesoi, alpha=alpha)
        eff[name] = e.assign(metric=EFFECT_METRIC, value=e["d"], p_adj=e["q_value"])[key + ["metric", "value", "p_adj"]]
    met = {name: analyse_metrics(frame)[key + ["metric", "value", "p_adj"]]
           for name, frame in (("planted", planted), ("null", null))}
    obs_eff = observed_effects[observed_effects["kind"] == "variant"] if len(observed_effects) else None
    observed = [observed_metrics[key + ["metric", "value", "p_adj"]]]
    if obs_eff is not None:
        observed.append(obs_eff.assign(metric=EFFECT_METRIC, value=obs_eff["d"], p_adj=obs_eff["q_value"])[
            key + ["metric", "value", "p_adj"]])
    obs = pd.concat(observed, ignore_index=True).set_index(key + ["metric"])
    nul = pd.concat([eff["null"], met["null"]], ignore_index=True).set_index(key + ["metric"])
    planted_all = pd.concat([eff["planted"], met["planted"]], ignore_index=True)
    plant_of = plants.set_index(key)
    rows = []
    for r in planted_all[planted_all["variant"] != reference].itertuples():
        k = (r.system, r.condition, r.variant, r.metric)
        rows.append(_row(k, shift_se, plant_of.loc[k[:3]], obs.loc[k] if k in obs.index else None,
                         nul.loc[k] if k in nul.index else None, r.value, r.p_adj, alpha))
    return pd.DataFrame(rows, columns=list(SELF_TEST_COLUMNS))


def _f(x) -> float:
    return float(x) if x is not None and not pd.isna(x) else math.nan


def _row(k, shift_se, plant: Mapping, obs, null, v_pl, q_pl, alpha) -> dict[str, object]:
    se = float(plant["se"])
    q_pl, q_null = _f(q_pl), _f(null["p_adj"]) if null is not None else math.nan
    null_sig = math.isfinite(q_null) and q_null < alpha
    detected = bool(se > 0 and math.isfinite(q_pl) and q_pl < alpha and not null_sig)
    notes = NOTE_ZERO_SE if se <= 0 else (NOTE_NULL_SIG if null_sig else "")
    return {"system": k[0], "condition": k[1], "variant": k[2], "metric": k[3],
            "shift_se": shift_se, "shift": float(plant["shift"]), "se": se,
            "value_observed": _f(obs["value"]) if obs is not None else math.nan,
            "value_null": _f(null["value"]) if null is not None else math.nan, "value_planted": _f(v_pl),
            "p_adj_observed": _f(obs["p_adj"]) if obs is not None else math.nan, "p_adj_null": q_null,
            "p_adj_planted": q_pl, "detected": detected, "notes": notes}
