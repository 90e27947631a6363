"""What a metric implementation receives (:class:`Pairing`) and returns (:class:`CellResult`)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from compiler import catalog
from runtime import seeding


@dataclass(frozen=True, eq=False)
class Pairing:
    """One system x condition x variant, aligned candidate by candidate with the reference.

    All arrays have one entry per base candidate ``(job_id, cv_id)``, in the same order for the
    variant and the reference (seed 000 §3.3: the paired frame with ``rank_baseline``,
    ``score_baseline``, ``rank_variant``, ``score_variant``).

    Attributes
    ----------
    system, condition, variant, reference : str
        Identify the cell; ``variant == reference`` for the reference row.
    job : numpy.ndarray of int
        Job code ``0 .. n_jobs - 1`` of each candidate.
    n_jobs : int
        Number of jobs.
    score_ref, score_var : numpy.ndarray of float
        Scores normalised to [0, 1] by the system's ``score_range``.
    rank_ref, rank_var : numpy.ndarray of float
        Ranks within (job, variant), 1 = best.
    match : numpy.ndarray of float
        ``is_true_match`` (0/1) of each candidate; ``nan`` for every candidate of a job whose labels
        are unknown.
    n_unlabelled_jobs : int
        Jobs whose ``is_true_match`` is unknown (excluded from the merit family).
    k : Mapping[str, int]
        Shortlist size per family.
    n_bootstrap : int
        Bootstrap resamples.
    seed : int
        The spec's seed.
    """

    system: str
    condition: str
    variant: str
    reference: str
    job: np.ndarray
    n_jobs: int
    score_ref: np.ndarray
    score_var: np.ndarray
    rank_ref: np.ndarray
    rank_var: np.ndarray
    match: np.ndarray
    n_unlabelled_jobs: int
    k: Mapping[str, int]
    n_bootstrap: int
    seed: int

    @property
    def n(self) -> int:
        """Number of paired candidates ``n_v`` (pooled over every job)."""
        return int(self.rank_ref.shape[0])

    @property
    def is_reference(self) -> bool:
        """Whether this is the reference compared with itself."""
        return self.variant == self.reference

    def k_of(self, metric_id: str) -> int:
        """Shortlist size of the family of ``metric_id``."""
        return int(self.k[catalog.METRICS[metric_id].family])

    def rng(self, metric_id: str) -> np.random.Generator:
        """Bootstrap generator of this cell: ``rng(seed, "bootstrap", system, condition, metric, variant)``."""
        return seeding.rng(self.seed, "bootstrap", self.system, self.condition, metric_id, self.variant)


@dataclass
class CellResult:
    """What one metric implementation returns for one :class:`Pairing`.

    ``diagnostics`` holds the family-specific columns of ``metrics.csv`` (``marc_raw``,
    ``flip_in_rate``, ``retained``, ``tp`` ...); columns it does not name are left empty.
    """

    value: float
    ci_low: float = math.nan
    ci_high: float = math.nan
    p_value: float = math.nan
    test: str = ""
    notes: list[str] = field(default_factory=list)
    diagnostics: dict[str, float] = field(default_factory=dict)

    @classmethod
    def undefined(cls, note: str, **diagnostics: float) -> CellResult:
        """A metric whose value is undefined (status N/A), with the reason."""
        return cls(value=math.nan, notes=[note], diagnostics=dict(diagnostics))
