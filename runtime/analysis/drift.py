"""Qualification drift of the variants (seed 000 §3.1.2).

Seed 000 checks that injecting a demographic cue leaves the qualification content alone by
comparing each variant's score with its base resume's score for the same job:
``Δqual(V) = |s(V, job) − s(BASE, job)|``. This module summarises that statistic per
system x condition x variant on the normalised score scale.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

from runtime.analysis.frame import Cohort, cohorts

DRIFT_COLUMNS = ("system", "condition", "variant", "n", "mean_abs_delta", "median_abs_delta",
                 "p95_abs_delta", "max_abs_delta")


def drift_rows(cohort: Cohort) -> list[dict[str, object]]:
    """One drift row per non-reference variant of ``cohort``.

    ``Δqual_i = |s_v,i − s_ref,i|`` on the normalised scale, in [0, 1] for scores inside the
    system's ``score_range``; lower is better. Returns its mean, median, 95th percentile (linear
    interpolation, ``numpy.percentile``) and maximum over the pooled base candidates.
    """
    rows: list[dict[str, object]] = []
    base = cohort.score[cohort.reference]
    for variant in cohort.variants[1:]:
        d = np.abs(cohort.score[variant] - base)
        rows.append({"system": cohort.system, "condition": cohort.condition, "variant": variant,
                     "n": int(d.size), "mean_abs_delta": float(np.mean(d)),
                     "median_abs_delta": float(np.median(d)),
                     "p95_abs_delta": float(np.percentile(d, 95)),
                     "max_abs_delta": float(np.max(d))})
    return rows


def drift_frame(rows: list[dict[str, object]]) -> pd.DataFrame:
    """Assemble drift rows into a frame with the :data:`DRIFT_COLUMNS` columns."""
    return pd.DataFrame(rows, columns=list(DRIFT_COLUMNS)).astype({"n": "int64"})


def qualification_drift(paired: pd.DataFrame, *, reference: str,
                        score_range: Mapping[str, tuple[float, float]]) -> pd.DataFrame:
    """Qualification-drift summary of a paired frame (seed 000 §3.1.2).

    Parameters
    ----------
    paired : pandas.DataFrame
        The paired frame (see :func:`runtime.analysis.analyse`).
    reference : str
        The reference variant.
    score_range : Mapping[str, tuple of float]
        ``(lo, hi)`` per system; scores are normalised to ``(s − lo) / (hi − lo)``.

    Returns
    -------
    pandas.DataFrame
        Columns :data:`DRIFT_COLUMNS`, one row per system x condition x non-reference variant.

    Raises
    ------
    ValueError
        As :func:`runtime.analysis.frame.cohorts`.
    """
    rows: list[dict[str, object]] = []
    for cohort in cohorts(paired, reference=reference, score_range=score_range):
        rows.extend(drift_rows(cohort))
    return drift_frame(rows)
