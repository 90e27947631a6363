"""Simulated correspondence audits with a planted score shift (validation of seed 000 §3.3-3.4).

Used by ``bench/coverage_counterfactual.py`` (interval coverage) and ``bench/power_swap_in.py``
(power and size of the swap-in tests), and by the tests that pin the simulator itself.

The model, for job ``j`` and base candidate ``i`` (``n_per_job`` per job, the first ``n_match`` of
them matching):

    q_i        = 0.8 · match_i + N(0, 1)                          latent qualification
    s_ref,i    = 60 + mu_j + 8 · q_i + N(0, sigma² / 2)            reference score (points of 0-100)
    s_v,i      = 60 + mu_j + 8 · q_i + delta_v + eta_v,j + N(0, sigma² / 2)    variant score

The reference and every variant carry the same independent noise, so with ``delta_v = eta_v,j = 0``
the variant resumes and the reference resumes are exchangeable: a planted null is a null for the
rank and selection metrics too (noise on the variant side only would spread its scores wider and
push more variant resumes over a top-K cutoff in the upper tail than under it).

``mu_j ~ N(0, 5²)`` and ``eta_v,j`` are fixed per design (drawn once from ``job_seed``): the jobs are
the auditor's chosen jobs, and only the candidates are re-drawn from audit to audit, so the
estimand of every interval is the metric's expectation over candidates *for these jobs*.
``eta_v,j`` (heterogeneity: job-specific deviations of the variant's effect, centred to mean 0
over the jobs) has SD ``heterogeneity · sigma / sqrt(n_per_job)``: in units of one job's standard
error. ``delta_v`` is the planted shift: ``-effect_se`` standard errors of the pooled mean paired
difference ``sigma_d / sqrt(n_jobs · n_per_job)`` for the first non-reference variant (a demotion,
for ``effect_se > 0``), 0 for the others. ``sigma_d`` is the SD of one paired difference, rounding
included: the paired t statistic of the score difference then has expectation about ``-effect_se``.

``ties=True`` rounds every score to whole points and clips it to [0, 100] (LLM and vendor scores):
about a third of a pool of 40 shares its score with another candidate. ``ties=False`` keeps the
float scores (embedding similarities: no ties). Every draw is vectorised over audits, jobs and
candidates; :meth:`CorrespondenceSim.frame` returns the paired frame of
:func:`runtime.analysis.analyse` for a batch of audits, one audit per ``condition``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from runtime import seeding

SCORE_RANGE = (0.0, 100.0)
#: SD of one paired score difference before rounding, in points (each score carries SIGMA / sqrt(2)).
SIGMA = 4.0


@dataclass(frozen=True)
class CorrespondenceSim:
    """One simulated design (see the module doc).

    Attributes
    ----------
    n_jobs : int
        Jobs of the design (fixed across audits).
    effect_se : float
        Planted demotion of the first non-reference variant, in standard errors of the pooled mean
        paired score difference (0 = null; ``3`` makes the paired t statistic's expectation -3).
    ties : bool
        Whole-point scores (ties) or float scores (no ties).
    n_per_job, n_match : int
        Base candidates per job, of which the first ``n_match`` are true matches.
    variants : tuple of str
        The reference first; the second carries the planted effect.
    heterogeneity : float
        SD of the job-specific effect deviations, in standard errors of one job's mean difference.
    job_seed : int
        Seed of the fixed job parameters.
    """

    n_jobs: int
    effect_se: float = 0.0
    ties: bool = False
    n_per_job: int = 40
    n_match: int = 20
    variants: tuple[str, ...] = ("BASE", "V01", "V02")
    heterogeneity: float = 0.5
    job_seed: int = 0

    @property
    def sigma_d(self) -> float:
        """SD of one paired score difference in points (whole-point rounding adds 2 · 1/12)."""
        return math.sqrt(SIGMA ** 2 + (2 / 12 if self.ties else 0.0))

    @property
    def delta(self) -> float:
        """The planted shift of the demoted variant in points (negative: a demotion)."""
        return -self.effect_se * self.sigma_d / math.sqrt(self.n_jobs * self.n_per_job)

    def job_parameters(self) -> tuple[np.ndarray, np.ndarray]:
        """``(mu, eta)``: job means ``(n_jobs,)`` and effect deviations ``(n_variants, n_jobs)``
        (row 0, the reference, is zero; each other row is centred to mean 0)."""
        g = seeding.rng(self.job_seed, "counterfactual_sim", "jobs", self.n_jobs)
        mu = g.normal(0.0, 5.0, size=self.n_jobs)
        eta = g.normal(0.0, 1.0, size=(len(self.variants), self.n_jobs))
        eta -= eta.mean(axis=1, keepdims=True) if self.n_jobs > 1 else eta
        eta *= self.heterogeneity * SIGMA / math.sqrt(self.n_per_job)
        eta[0] = 0.0
        return mu, eta

    def scores(self, rng: np.random.Generator, n_audits: int) -> tuple[np.ndarray, np.ndarray]:
        """``(score, match)``: scores ``(n_audits, n_variants, n_jobs, n_per_job)`` in points and the
        match labels ``(n_jobs, n_per_job)`` (0/1)."""
        mu, eta = self.job_parameters()
        match = np.zeros((self.n_jobs, self.n_per_job))
        match[:, : self.n_match] = 1.0
        shape = (n_audits, self.n_jobs, self.n_per_job)
        q = 0.8 * match + rng.normal(size=shape)
        base = 60.0 + mu[None, :, None] + 8.0 * q
        delta = np.zeros(len(self.variants))
        delta[1] = self.delta
        noise = rng.normal(0.0, SIGMA / math.sqrt(2), size=(n_audits, len(self.variants), self.n_jobs, self.n_per_job))
        score = base[:, None] + delta[None, :, None, None] + eta[None, :, :, None] + noise
        if self.ties:
            score = np.clip(np.rint(score), *SCORE_RANGE)
        return score, match

    def frame(self, rng: np.random.Generator, n_audits: int, *, first: int = 0) -> pd.DataFrame:
        """The paired frame of ``n_audits`` audits, one per ``condition`` (``a0000``, ``a0001`` ...,
        numbered from ``first``): columns ``system, condition, replicate, job_id, cv_id, variant,
        score, rank, is_true_match`` (``rank`` 0: :func:`runtime.analysis.frame.cohorts` ranks)."""
        score, match = self.scores(rng, n_audits)
        a, v, j, i = np.indices(score.shape).reshape(4, -1)
        return pd.DataFrame({
            "system": "sim",
            "condition": np.char.add("a", np.char.zfill((a + first).astype(str), 4)),
            "replicate": 0,
            "job_id": np.char.add("j", np.char.zfill(j.astype(str), 2)),
            "cv_id": np.char.add("c", np.char.zfill(i.astype(str), 2)),
            "variant": np.asarray(self.variants)[v],
            "score": score.reshape(-1),
            "rank": 0,
            "is_true_match": match[j, i].astype(np.int64),
        })
