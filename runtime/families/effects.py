"""Effect sizes, equivalence tests, clustered models and the validity protocol (seed 003 §3.7).

Table ``effects`` (every table of :class:`runtime.analysis.effects.EffectsResult`, stacked with a
``section`` column); with ``analysis.effect_size``, ``sesoi`` (the SESOI in three units, issue 30 §1) and
``power`` (the level-1 test's power at it and its MDE in decision units, issue 30 §3). Verdict: VALID or INCONCLUSIVE (exit 5) when ``analysis.validity`` is declared.
"""

from __future__ import annotations

from runtime.families import AuditFamily, FamilyResult, family

#: Bootstrap resamples of the self-test's metric suite: its detection reads p-values, which do not
#: depend on the bootstrap (only the intervals do), so a small count keeps the stage fast.
SELF_TEST_BOOTSTRAP = 100


#: Page 1's sentence of a validity protocol without a positive control (issue 39 §6).
MSG_SENSITIVITY_NOT_TESTED = ("Validity: sensitivity not tested: no positive control is declared "
                              "(analysis.validity.positive_control: {contrast: control, control: <id>}); the match "
                              "contrast checks relevance only (matching résumés score higher), not that a change "
                              "of the SESOI's size would be seen.")


def sensitivity_notes(validity) -> list[str]:
    """Page 1's sentences on sensitivity (issue 39 §6): per system x condition, whether the positive control was
    detected and its shift in SESOI units; :data:`MSG_SENSITIVITY_NOT_TESTED` without one."""
    rows = validity[(validity["check"] == "positive_control") & (validity["statistic"] == "shift_sesoi")] \
        if len(validity) else validity
    if not len(rows):
        return [MSG_SENSITIVITY_NOT_TESTED]
    return [f"Sensitivity ({r.system}, {r.condition}): the positive control was "
            f"{'detected' if r.passed else 'NOT detected'} (shift {r.value:.3g} SESOI units, one-sided p = "
            f"{r.p_value:.3g}, n = {int(r.n)})." for r in rows.itertuples()]


@family("effects")
class Effects(AuditFamily):
    """Seed 003's contrasts, models, pooling, validity protocol and planted-bias self-test."""

    title = "effect sizes and validity (seed 003)"

    def analyse(self, ctx) -> FamilyResult:
        from runtime.analysis.effects import analyse_effects
        from runtime.families.base import suite

        r = ctx.resolved
        metrics = ctx.results["metric_suite"].data["result"].metrics
        effects = analyse_effects(ctx.paired, r, metrics=metrics,
                                  analyse_metrics=lambda f: suite(ctx, f, n_bootstrap=SELF_TEST_BOOTSTRAP).metrics,
                                  score_range=ctx.score_range(),
                                  score_resolution=ctx.score_resolution(), controls=ctx.controls)
        tables = {"effects": effects.long_frame()}
        if r["analysis"].get("effect_size"):  # issue 30 §1, §3: sealed with the run (REPRODUCIBLE_RESULTS)
            tables["sesoi"], tables["power"] = effects.sesoi_table, effects.power
        out = FamilyResult(tables=tables, data={"effects": effects})
        if r["analysis"].get("validity"):
            out.verdict, out.failed = effects.verdict, list(effects.failed)
            out.summary = [f"validity protocol: {effects.verdict}"]
            out.findings_notes = sensitivity_notes(effects.validity)
        return out

    def sections(self, ctx, result: FamilyResult, meta) -> list:
        from runtime.report import effects_sections

        return effects_sections(result.data["effects"], metrics=ctx.results["metric_suite"].data["result"].metrics,
                                thresholds=ctx.settings.thresholds, score_range=ctx.settings.score_range,
                                label=meta.with_level_labels)
