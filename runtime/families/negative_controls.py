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

    placebo = controls.loc[controls["variant"].isin(control_ids), SCORE_COLUMNS]  # not the positive controls' rows
    frame = pd.concat([scores.loc[scores["variant"] == reference, SCORE_COLUMNS], placebo], ignore_index=True)
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
        placebo["window_share"] = [ctx.window_shares.get((s, v), np.nan)  # NaN: the system reads no fixed window
                                   for s, v in zip(placebo["system"], placebo["variant"])]
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
        section = noise_floor_section(floor, placebo, controls)
        out.sections = [section]
        # page 1 (issue 38 §6): one sentence per system, after the findings
        out.findings_notes = [f"Noise floor (negative controls), {s['sentence']}" for s in section.context["systems"]]
        return out


#: What each perturbation changes, in the report's words.
WHAT = {"summary_synonyms": "synonyms in the professional summary", "date_format": "dates written MM/YYYY",
        "bullet_glyph": "another bullet glyph", "section_order": "EDUCATION and SKILLS swapped",
        "typos": "two letter swaps in bullet words", "line_breaks": "extra blank lines",
        "regenerate": "the same base candidate generated again"}


def noise_floor_section(floor: pd.DataFrame, placebo: pd.DataFrame, controls: list[dict]):
    """The report's "Noise floor" section (issue 38 §6): per system × condition a chart of the demographic and
    placebo deviations per metric on one axis with the floor (:func:`runtime.report.charts.noise_floor_chart_svg`),
    the floor per metric beside its largest demographic deviation, a sentence (also on page 1), and each
    control's window share (0: not read by the encoder, labelled so)."""
    from runtime.analysis.noise_floor import deviation
    from runtime.report.charts import noise_floor_chart_svg
    from runtime.report.formatting import fmt_sig
    from runtime.report.sections import ORDER, Section
    from runtime.report.sections.metric_suite.texts import METRIC_SHORT, metric_in_sentence

    share = pd.to_numeric(placebo["window_share"], errors="coerce") if "window_share" in placebo else None
    read = placebo if share is None else placebo[share.isna() | (share > 0)]
    systems = []
    for (system, condition), g in floor.groupby(["system", "condition"], sort=False):
        rows = []
        here = read[(read["system"] == system) & (read["condition"] == condition)]
        chart = {"metrics": [], "demographic": [], "placebo": [], "floors": []}
        for metric, m in g.groupby("metric", sort=False):
            chart["metrics"].append(METRIC_SHORT.get(metric, metric))  # the page's names; noise_floor.csv keeps ids
            chart["demographic"].append([float(x) for x in m["deviation"]])
            chart["placebo"].append([deviation(metric, v) for v in here.loc[here["metric"] == metric, "value"]])
            chart["floors"].append(float(m["floor"].iloc[0]))
            f = m["floor"].iloc[0]
            rows.append({"metric": METRIC_SHORT.get(metric, metric), "floor": fmt_sig(f), "control": m["floor_control"].iloc[0] or "—",
                         "largest": fmt_sig(m["deviation"].max()), "above": f"{int(m['exceeds_floor'].sum())} of {len(m)}"})
        top = g.dropna(subset=["floor"]).sort_values("floor", ascending=False, kind="mergesort").head(1)
        largest = (f"its largest placebo deviation is {fmt_sig(top['floor'].iloc[0])} on "
                   f"{metric_in_sentence(top['metric'].iloc[0])} ({top['floor_control'].iloc[0]})") if len(top) \
            else "no control it reads gives a floor"
        slug = "".join(ch if ch.isalnum() else "-" for ch in f"{system}-{condition}").lower()
        svg = noise_floor_chart_svg(chart_id=f"noise-floor-{slug}",
                                    title=f"Noise floor of {system} ({condition}): demographic and placebo "
                                          f"deviations per metric", **chart)
        systems.append({"system": system, "condition": condition, "rows": rows, "chart": svg,
                        "sentence": f"{system}: {largest}; {int(g['exceeds_floor'].sum())} of {len(g)} demographic "
                                    f"rows lie above the floor."})
    shares = placebo.drop_duplicates(["system", "variant"])
    window_systems = [s for s in dict.fromkeys(shares["system"])
                      if shares.loc[shares["system"] == s, "window_share"].notna().any()]
    rows = []
    for c in controls:
        cells = []
        for s in window_systems:
            w = shares.loc[(shares["system"] == s) & (shares["variant"] == c["id"]), "window_share"]
            v = float(w.iloc[0]) if len(w) else float("nan")
            cells.append("0 (not read by the encoder)" if v == 0 else fmt_sig(v))
        what = WHAT.get(c.get("perturbation", ""), "")
        note = c.get("description", "")
        rows.append({"id": c["id"], "what": f"{what}. {note}" if what and note else what or note,
                     "shares": cells})
    return Section(id="noise-floor", title="Noise floor", template="sections/noise_floor.html.j2",
                   order=ORDER["noise_floor"], context={"systems": systems, "controls": rows,
                                                        "window_systems": window_systems})
