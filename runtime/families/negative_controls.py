"""Family ``negative_controls`` (issue 38 §4): each system's noise floor, measured on placebo variants of
the reference résumé, and every demographic row of ``metrics.csv`` read against it.

The placebo scores (``RunContext.controls``) never enter ``paired.csv``, BH or the risk score of the metric
suite: this family ranks the reference rows with the placebo rows as :func:`runtime.rank.paired_frame` does
and runs the metric suite on that frame alone (:func:`runtime.families.base.suite`), as the effects family's
self-test does. Tables:

- ``control_paired``: that frame (the paired frame's columns; ``variant`` = the control id);
- ``negative_controls``: its metric rows (``metrics.csv`` columns, ``variant`` = the control id, empty
  statuses), with ``perturbation`` (a score-file control: empty) and ``window_share``;
- ``noise_floor``: one row per demographic row (:func:`runtime.analysis.noise_floor.noise_floor`).

``metrics.csv``, ``metrics_by_job.csv``, ``risk.csv``, ``effects.csv`` and ``paired.csv`` keep their bytes.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from runtime.families import AuditFamily, FamilyResult, family
from runtime.families.base import suite

#: The statuses a placebo row does not get (it is no finding).
EMPTY_STATUSES = ("status", "status_operational", "status_seed000", "status_seed000_operational", "disadvantaged")
SCORE_COLUMNS = ["system", "condition", "replicate", "job_id", "cv_id", "variant", "score", "is_true_match"]


def placebo_frame(scores: pd.DataFrame, controls: pd.DataFrame, *, reference: str, axes, reference_levels,
                  control_ids: list[str]) -> pd.DataFrame:
    """The reference rows of ``scores`` with every placebo row, ranked as the paired frame is
    (``control_paired.csv``): each control takes the reference variant's levels."""
    from runtime.rank import paired_frame

    frame = pd.concat([scores.loc[scores["variant"] == reference, SCORE_COLUMNS], controls[SCORE_COLUMNS]],
                      ignore_index=True)
    levels = {reference: dict(reference_levels), **{c: dict(reference_levels) for c in control_ids}}
    return paired_frame(frame, axes, levels)


@family("negative_controls")
class NegativeControls(AuditFamily):
    """Placebo metrics, the noise floor and the demographic rows against it."""

    title = "negative controls"

    def analyse(self, ctx) -> FamilyResult:
        from runtime.analysis.noise_floor import noise_floor

        r = ctx.resolved
        ref = r["variants"]["reference"]
        controls = r["variants"]["negative_controls"]
        ids = [c["id"] for c in controls]
        if ctx.controls is None or len(ctx.controls) == 0:
            raise RuntimeError("negative controls are declared but no placebo résumé was scored (a bug: please report it)")
        paired = placebo_frame(ctx.scores, ctx.controls, reference=ref, axes=r["axes"],
                               reference_levels=r["variants"]["table"][ref], control_ids=ids)
        levels = {v: dict(r["variants"]["table"][ref]) for v in [ref, *ids]}
        metrics = suite(ctx, paired, per_job=False, variant_levels=levels).metrics
        placebo = metrics[metrics["variant"] != ref].copy()
        for col in EMPTY_STATUSES:
            if col in placebo:
                placebo[col] = ""
        kind = {c["id"]: c.get("perturbation", "") for c in controls}
        placebo["perturbation"] = placebo["variant"].map(kind).fillna("")
        placebo["window_share"] = np.nan  # filled for systems with a token window (issue 38 part B)
        placebo = placebo.reset_index(drop=True)
        demographic = ctx.results["metric_suite"].data["result"].metrics
        floor = noise_floor(demographic, placebo, reference=ref)
        summary = []
        for system, g in floor.groupby("system", sort=False):
            above = int(g["exceeds_floor"].sum())
            worst = g.dropna(subset=["floor"]).drop_duplicates(["condition", "metric"])
            text = ", ".join(f"{m.metric} {m.floor:.3g} ({m.floor_control})" for m in worst.itertuples())
            summary.append(f"noise floor   {system}: {text or 'none'}; {above} of {len(g)} demographic rows above "
                           f"it (noise_floor.csv)")
        out = FamilyResult(tables={"control_paired": paired, "negative_controls": placebo, "noise_floor": floor},
                           summary=summary)
        if "validity" in r["analysis"]:  # issue 38 §5: a default check of the protocol once controls are declared
            from runtime.analysis.classify import classify
            from runtime.analysis.noise_floor import floor_check

            out.failed = floor_check(placebo, ctx.settings.thresholds, classify=classify)
            out.verdict = "INCONCLUSIVE" if out.failed else "VALID"
            out.summary.append(f"validity check noise_floor: {'failed' if out.failed else 'passed'}"
                               + (f" ({len(out.failed)} placebo rows not PASS)" if out.failed else ""))
        return out
