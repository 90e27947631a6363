"""What a metric implementation receives (:class:`Pairing`) and returns (:class:`CellResult`)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

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
        Ranks within (job, variant), 1 = best; tied scores share their mid-rank.
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
    tie_ref, tie_var : numpy.ndarray of float, optional
        Size of each candidate's tie group in its (job, variant) pool (1 = untied; default all 1).
    step : float
        The score grid on the normalised scale (0 = continuous): every test on score differences
        runs on differences rounded to it.
    ranking : {"per_variant", "swap_in"}
        How ``rank_var`` was obtained (:func:`runtime.analysis.frame.cohorts`).
    stream : tuple of str
        Extra labels of the bootstrap generators (:meth:`rng`); ``("job", job_id)`` for the pairing of
        one job (:meth:`restrict`), empty for the pooled cell.
    pool_rank_var, pool_tie_var : numpy.ndarray, optional
        The variant's mid-rank and tie size in its own pool (default: ``rank_var``, ``tie_var``): the
        ranking the merit metrics judge. Under swap-in each variant resume is ranked on its own
        against the others' reference resumes, which is no single ranked list to score with nDCG.
    threshold : float, optional
        The decision threshold in the system's units (``analysis.decision.threshold``; issue 15), or
        None under the top-K rule.
    sel_ref, sel_var : numpy.ndarray, optional
        Under a threshold rule, 1.0 where the reference / variant resume scores at or above the
        threshold, else 0.0: what :meth:`in_top` and :meth:`in_top_pool` return instead of top-K
        membership (a threshold selects each resume on its own score, so the ranking mode does not
        matter and no tie is ever split).
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
    tie_ref: np.ndarray | None = None
    tie_var: np.ndarray | None = None
    step: float = 0.0
    ranking: str = "per_variant"
    pool_rank_var: np.ndarray | None = None
    pool_tie_var: np.ndarray | None = None
    stream: tuple[str, ...] = ()
    threshold: float | None = None
    sel_ref: np.ndarray | None = None
    sel_var: np.ndarray | None = None

    @property
    def thresholded(self) -> bool:
        """Whether candidates are selected by a score threshold (``analysis.decision.threshold``)."""
        return self.sel_ref is not None

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

    def in_top(self, k: int) -> tuple[np.ndarray, np.ndarray]:
        """(reference, variant) probability that each candidate is in its pool's top-K, or, under a
        threshold rule (:attr:`thresholded`), whether it is selected (``sel_ref``, ``sel_var``; ``k``
        is then ignored).

        An untied candidate is in (1) or out (0). A tie group of t candidates occupying positions
        ``a .. a + t - 1`` straddling the cutoff puts each of them inside with probability
        ``(K - a + 1) / t``: the expectation over the equally likely orders of the tied candidates
        (McSherry & Najork 2008). Per job these add up to ``min(K, pool size)``.
        """
        if self.thresholded:
            return self.sel_ref, self.sel_var
        return (top_share(self.rank_ref, self.tie_ref, k), top_share(self.rank_var, self.tie_var, k))

    @property
    def pool_var(self) -> tuple[np.ndarray, np.ndarray | None]:
        """(mid-rank, tie size) of the variant in its own pool (``rank_var``, ``tie_var`` when not given)."""
        if self.pool_rank_var is not None:
            return self.pool_rank_var, self.pool_tie_var
        return self.rank_var, self.tie_var

    def in_top_pool(self, k: int) -> tuple[np.ndarray, np.ndarray]:
        """(reference, variant) top-K membership in each variant's own pool (see :meth:`in_top`); the
        selection under a threshold rule."""
        if self.thresholded:
            return self.sel_ref, self.sel_var
        rank, tie = self.pool_var
        return top_share(self.rank_ref, self.tie_ref, k), top_share(rank, tie, k)

    def joint_in(self, k: int) -> np.ndarray:
        """Probability that each candidate is in both top-Ks: ``p_ref · p_var`` (the two pools' tie
        orders are independent), or ``p_ref`` for the reference compared with itself (one order)."""
        p_ref, p_var = self.in_top(k)
        return p_ref if self.is_reference else p_ref * p_var

    def ties_at_cutoff(self, k: int) -> int:
        """Candidates whose top-K membership is decided by a tie (fractional) in either pool."""
        p_ref, p_var = self.in_top(k)
        return int(np.sum(((p_ref > 0) & (p_ref < 1)) | ((p_var > 0) & (p_var < 1))))

    @property
    def per_variant(self) -> bool:
        """Whether the variant was ranked in its own pool (rank and selection tests cannot reject)."""
        return self.ranking == "per_variant"

    @property
    def fixed_shortlist(self) -> bool:
        """Whether each variant fills its own top-K (per-variant ranking under a top-K rule): flips out
        then equal flips in per job, and the selection tests cannot reject. Never under a threshold."""
        return self.per_variant and not self.thresholded

    def rng(self, metric_id: str) -> np.random.Generator:
        """Bootstrap generator of this cell: ``rng(seed, "bootstrap", system, condition, metric, variant,
        *stream)``."""
        return seeding.rng(self.seed, "bootstrap", self.system, self.condition, metric_id, self.variant,
                           *self.stream)

    def restrict(self, job_code: int, job_id: str) -> Pairing:
        """The same cell on the candidates of one job (``n_jobs`` 1; bootstrap stream ``("job", job_id)``).

        Ranks are within (job, variant) pools, swap-in ranks against the same job's reference
        resumes, so every rank and tie size carries over unchanged.
        """
        m = self.job == job_code

        def cut(a: np.ndarray | None) -> np.ndarray | None:
            return None if a is None else a[m]

        match = self.match[m]
        return replace(self, job=np.zeros(int(m.sum()), dtype=self.job.dtype), n_jobs=1,
                       score_ref=self.score_ref[m], score_var=self.score_var[m], rank_ref=self.rank_ref[m],
                       rank_var=self.rank_var[m], match=match,
                       n_unlabelled_jobs=int(bool(np.isnan(match).any())), tie_ref=cut(self.tie_ref),
                       tie_var=cut(self.tie_var), pool_rank_var=cut(self.pool_rank_var),
                       pool_tie_var=cut(self.pool_tie_var), sel_ref=cut(self.sel_ref), sel_var=cut(self.sel_var),
                       stream=("job", str(job_id)))


def exact_sum(weights: np.ndarray) -> float:
    """The correctly rounded sum (``math.fsum``): expected counts over tied orders are fractions
    (1/3 ...) whose float sum would otherwise depend on the order of the candidates, i.e. on their
    labels."""
    return math.fsum(np.asarray(weights, dtype=float).tolist())


def job_sums(job: np.ndarray, weights: np.ndarray, n_jobs: int) -> np.ndarray:
    """Per-job sums of ``weights``, correctly rounded (:func:`exact_sum`); identical to
    ``np.bincount`` when every weight is an integer."""
    w = np.asarray(weights, dtype=float)
    if np.all(w == np.round(w)):
        return np.bincount(job, weights=w, minlength=n_jobs)
    return np.array([exact_sum(w[job == j]) for j in range(n_jobs)])


def job_blocks(job: np.ndarray) -> list[np.ndarray]:
    """Positions of each job as ``(jobs, m)`` index arrays, one per distinct job size m: ``x[:, block]``
    is ``(b, jobs, m)``, so that one vectorised call ranks every job of that size."""
    sizes: dict[int, list[np.ndarray]] = {}
    for j in np.unique(job):
        cols = np.flatnonzero(job == j)
        sizes.setdefault(cols.size, []).append(cols)
    return [np.stack(group) for group in sizes.values()]


def dense_codes(x: np.ndarray, pool: np.ndarray, job: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Integer codes ``0 .. c_j - 1`` of the values of ``x`` and ``pool`` (same shape ``(..., n)``),
    per job over the union of both: within a job, codes order and tie exactly as the values do.

    Ranks counted on codes (:func:`rank_counts`) equal those counted on the values. Coding the
    original data once lets a bootstrap rank every resample by counting (no sort per resample).
    """
    x, pool = np.asarray(x), np.asarray(pool)
    cx, cp = np.empty(x.shape, dtype=np.int64), np.empty(pool.shape, dtype=np.int64)
    for j in np.unique(job):
        cols = np.flatnonzero(job == j)
        a, b = x[..., cols], pool[..., cols]
        _, inv = np.unique(np.concatenate([a.ravel(), b.ravel()]), return_inverse=True)
        cx[..., cols] = inv[:a.size].reshape(a.shape)
        cp[..., cols] = inv[a.size:].reshape(b.shape)
    return cx, cp


def rank_counts(x: np.ndarray, pool: np.ndarray, job: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For each ``x[r, i]``: how many ``pool[r, j]`` of the same row and job lie above it, and how
    many equal it (position i itself included when ``pool`` is ``x``).

    ``x`` and ``pool`` are ``(b, n)`` codes from :func:`dense_codes`; ``job`` is ``(n,)``. Counted by
    a histogram of the pool's codes per row and job and its cumulative sum: O(b · n) time, memory
    ``b x jobs x codes`` per block of equal-sized jobs (at most twice the data's), no sort. Returns
    two ``(b, n)`` int64 arrays.
    """
    x, pool = np.atleast_2d(x), np.atleast_2d(pool)
    above = np.empty(x.shape, dtype=np.int64)
    equal = np.empty(x.shape, dtype=np.int64)
    rows = x.shape[0]
    for cols in job_blocks(job):  # (jobs, m): jobs of equal size counted at once
        xs, ps = x[:, cols], pool[:, cols]                       # (rows, jobs, m)
        n_codes = int(max(xs.max(), ps.max())) + 1
        cell = (np.arange(rows)[:, None, None] * cols.shape[0] + np.arange(cols.shape[0])[None, :, None]) * n_codes
        hist = np.bincount((cell + ps).ravel(), minlength=rows * cols.shape[0] * n_codes)
        higher = np.cumsum(hist.reshape(-1, n_codes)[:, ::-1], axis=1)[:, ::-1].ravel() - hist  # codes > c
        at = (cell + xs).ravel()
        above[:, cols] = higher[at].reshape(xs.shape)
        equal[:, cols] = hist[at].reshape(xs.shape)
    return above, equal


def copies_in_row(ident: np.ndarray) -> np.ndarray:
    """How often each position's identity ``ident[r, i]`` (an int ``0 .. n - 1``) occurs in row r."""
    ident = np.atleast_2d(np.asarray(ident)).astype(np.int64)
    width = int(ident.max()) + 1
    flat = (np.arange(ident.shape[0])[:, None] * width + ident).ravel()
    return np.bincount(flat, minlength=ident.shape[0] * width)[flat].reshape(ident.shape)


def top_share(rank: np.ndarray, tie: np.ndarray | None, k: int) -> np.ndarray:
    """Probability of being in the top-K given a mid-rank and the tie group's size (see
    :meth:`Pairing.in_top`); ``rank <= k`` exactly when nothing is tied."""
    rank = np.asarray(rank, dtype=float)
    if tie is None or np.all(tie == 1):
        return (rank <= k).astype(float)
    first = rank - (tie - 1) / 2
    return np.clip((k - first + 1) / tie, 0.0, 1.0)


@dataclass
class CellResult:
    """What one metric implementation returns for one :class:`Pairing`.

    ``diagnostics`` holds the family-specific columns of ``metrics.csv`` (``marc_raw``,
    ``flip_in_rate``, ``retained``, ``tp`` ...); columns it does not name are left empty.
    ``not_informative`` says why the cell's test cannot reject in this design (its p-value is then
    kept in ``p_value`` but left out of the BH family and never shown as evidence); empty when the
    test is informative. ``shared_test`` says which other row carries the same test in BH (the
    row keeps its p-value and stays out of BH: one test is counted once).
    """

    value: float
    ci_low: float = math.nan
    ci_high: float = math.nan
    p_value: float = math.nan
    test: str = ""
    notes: list[str] = field(default_factory=list)
    diagnostics: dict[str, float] = field(default_factory=dict)
    not_informative: str = ""
    shared_test: str = ""

    @classmethod
    def undefined(cls, note: str, **diagnostics: float) -> CellResult:
        """A metric whose value is undefined (status N/A), with the reason."""
        return cls(value=math.nan, notes=[note], diagnostics=dict(diagnostics))
