"""The risk summary of a metric-suite run: both tiers' risk scores and bands, the key figures (seed 000
§3.6 Eq. 6, §3.7: the two tiers always shown together)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import pandas as pd

from compiler.catalog import RISK_BANDS
from runtime.report.formatting import MISSING, fmt_int, fmt_sig, fmt_text, fmt_threshold, to_float
from runtime.report.sections.metric_suite.common import counts, records
from runtime.report.sections.metric_suite.texts import BAND_TEXT, TIER_LABELS


def risk_context(risk: pd.DataFrame | None) -> dict[str, Any]:
    """The risk rows of both tiers: the run's totals (``system == "ALL"``) and each system × condition,
    with Eq. 6 filled in; a tier without a row is shown as not computed."""
    rows = records(risk)
    bands = " · ".join(
        f"{name} ≥ {fmt_threshold(lo)}" if lo > 0 else f"{name} otherwise" for lo, name in RISK_BANDS
    )

    def fmt_row(r: Mapping[str, Any]) -> dict[str, Any]:
        tier = fmt_text(r.get("tier"), "research")
        band = fmt_text(r.get("band"), "").lower()
        label = TIER_LABELS.get(tier, tier.capitalize())
        score = to_float(r.get("risk_score"))
        n_fail, n_inv = r.get("n_fail"), r.get("n_investigate")
        n_total = r.get("n_total")
        filled = (f"(3 × {fmt_int(n_fail)} + 1 × {fmt_int(n_inv)}) / (3 × {fmt_int(n_total)}) "
                  f"= {fmt_sig(score)}")
        return {
            "tier": tier,
            "tier_label": label,
            "system": fmt_text(r.get("system")),
            "condition": fmt_text(r.get("condition")),
            "band": band if band in BAND_TEXT else "unknown",
            "band_label": BAND_TEXT.get(band, "Risk band not given"),
            "score": fmt_sig(score),
            "score_pct": MISSING if math.isnan(score) else f"{score * 100:.1f}%",
            "n_total": fmt_int(n_total),
            "n_fail": fmt_int(n_fail),
            "n_investigate": fmt_int(n_inv),
            "n_pass": fmt_int(r.get("n_pass")),
            "n_na": fmt_int(r.get("n_na")),
            "formula_filled": filled,
        }

    tier_order = {"research": 0, "operational": 1}
    overall = [fmt_row(r) for r in rows if str(r.get("system")) == "ALL"]
    overall.sort(key=lambda r: (tier_order.get(r["tier"], 9), r["condition"]))
    units = [fmt_row(r) for r in rows if str(r.get("system")) != "ALL"]
    units.sort(key=lambda r: (r["system"], r["condition"], tier_order.get(r["tier"], 9)))
    present = {r["tier"] for r in overall}
    for tier in ("research", "operational"):
        if tier not in present:  # always show both tiers (seed 000 §3.7), even when one is missing
            overall.append({"tier": tier, "tier_label": TIER_LABELS[tier], "band": "unknown",
                            "band_label": "Not computed", "score": MISSING, "score_pct": MISSING,
                            "system": "ALL", "condition": MISSING, "n_total": MISSING,
                            "n_fail": MISSING, "n_investigate": MISSING, "n_pass": MISSING,
                            "n_na": MISSING, "formula_filled": "no risk row for this tier"})
    overall.sort(key=lambda r: tier_order.get(r["tier"], 9))
    return {
        "overall": overall,
        "units": units,
        "formula": "RiskScore = (3 · n_FAIL + 1 · n_INVESTIGATE) / (3 · n_total)",
        "bands": bands,
    }


def kpis(metrics: pd.DataFrame) -> dict[str, Any]:
    """The key figures: results by research-tier status, and by operational-tier status."""
    statuses = [] if metrics is None or len(metrics) == 0 else list(metrics["status"])
    c = counts(statuses)
    ops = [] if metrics is None or len(metrics) == 0 or "status_operational" not in metrics else list(
        metrics["status_operational"])
    co = counts(ops)
    return {
        "total": fmt_int(len(statuses)),
        "fail": fmt_int(c["FAIL"]),
        "inconclusive": fmt_int(c["INCONCLUSIVE"]),
        "pass": fmt_int(c["PASS"]),
        "na": fmt_int(c["N/A"]),
        "has_na": c["N/A"] > 0,
        "operational": {k: fmt_int(v) for k, v in co.items()},
    }
