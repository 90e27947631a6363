"""What a metric implementation receives (:class:`Pairing`) and returns (:class:`CellResult`)."""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from fractions import Fraction

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

    @property
    def scored_as_reference(self) -> bool:
        """Whether every variant resume scored exactly as its reference resume (the reference compared with itself,
        or a variant the system does not tell apart): a selection or retention statistic then has no sampling error
        (methods 14: otherwise a statistic that no resample moves reads Wilson's interval on a count seen 0 times)."""
        return self.is_reference or bool(np.array_equal(self.score_var, self.score_ref))

    @property
    def ranked_as_reference(self) -> bool:
        """:attr:`scored_as_reference`, or under per-variant ranking every variant resume holds its reference resume's
        place in its own pool (a shift that keeps the order, such as a uniform penalty): a retention or impact ratio,
        which read only those places there, is then exactly the reference's (methods 14)."""
        if self.scored_as_reference:
            return True
        return bool(self.per_variant and np.array_equal(self.pool_var[0], self.rank_ref))

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
        """Probability that each candidate is in both the reference's and the variant's top-K (issue 29
        §7; seed 000 §3.4.1-§3.4.2: the ``n_in,in`` cell of the flip table and ``|B_j ∩ V_j|``).

        The order that breaks a tie belongs to the candidate, not to the pool: each candidate i draws
        one uniform priority ``u_i``, and both of its resumes (reference and variant) use it against
        every tied competitor, in either ranking mode (per-variant: the competitors' variant resumes;
        swap-in: their reference resumes). A variant whose scores equal the reference's therefore has
        the same tie order in both rankings: nothing flips and everything is retained, as for the
        reference compared with itself.

        Where either membership is decided (``p_ref`` or ``p_var`` is 0 or 1) the joint probability
        is ``p_ref · p_var``, as before. Where both are split by a tie it is
        :func:`joint_top_share` of the candidate's two tie groups (who ties with it in each ranking)
        and the slots each group has left: ``min(p_ref, p_var)`` when the groups are the same set of
        candidates (comonotone), an exact fraction in general. Under a threshold rule nothing is
        split and this is ``sel_ref · sel_var``.

        Parameters
        ----------
        k : int
            Shortlist size.

        Returns
        -------
        numpy.ndarray of float
            One probability per candidate, in ``[max(0, p_ref + p_var - 1), min(p_ref, p_var)]``.
        """
        p_ref, p_var = self.in_top(k)
        if self.is_reference:
            return p_ref
        both = p_ref * p_var
        if self.thresholded:
            return both
        split = np.flatnonzero((p_ref > 0) & (p_ref < 1) & (p_var > 0) & (p_var < 1))
        if split.size == 0:
            return both
        both = both.copy()
        for j in np.unique(self.job[split]):
            members = np.flatnonzero(self.job == j)
            for i in split[self.job[split] == j]:
                got = self._coupled_joint(i, members, k)
                if got is not None:
                    both[i] = got
        return both

    def _coupled_joint(self, i: int, members: np.ndarray, k: int) -> float | None:
        """:meth:`joint_in` of candidate ``i`` whose two memberships are both split by a tie; None
        (keep ``p_ref · p_var``) if the tie groups read from the scores disagree with ``tie_ref`` /
        ``tie_var`` (two raw scores merged by the normalisation to [0, 1], a float artefact)."""
        others = members[members != i]
        ref_mates = others[self.rank_ref[others] == self.rank_ref[i]]   # mid-ranks tie exactly as scores
        if self.per_variant:
            var_mates = others[self.rank_var[others] == self.rank_var[i]]
        else:  # swap-in: i's variant resume against the other candidates' reference resumes
            var_mates = others[self.score_ref[others] == self.score_var[i]]
        if ref_mates.size != self.tie_ref[i] - 1 or var_mates.size != self.tie_var[i] - 1:
            return None
        common = int(np.intersect1d(ref_mates, var_mates).size)
        slots_ref = int(round(k - (self.rank_ref[i] - (self.tie_ref[i] - 1) / 2) + 1))
        slots_var = int(round(k - (self.rank_var[i] - (self.tie_var[i] - 1) / 2) + 1))
        return float(joint_top_share(common, ref_mates.size - common, var_mates.size - common,
                                     slots_ref, slots_var))

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


@functools.lru_cache(maxsize=4096)
def joint_top_share(common: int, only_ref: int, only_var: int, slots_ref: int, slots_var: int) -> Fraction:
    """Exact probability that a candidate is in both top-Ks when one shared random order breaks the
    ties of both rankings (issue 29 §7; :meth:`Pairing.joint_in`).

    Model: every candidate draws one uniform priority, used by its reference and its variant resume
    alike. Candidate i ties in the reference ranking with a set T of ``common + only_ref`` others, of
    which ``slots_ref`` fit in the top-K (``slots_ref = K - a + 1`` for a group at positions
    ``a .. a + |T|``), and in the variant ranking with a set S of ``common + only_var`` others
    (``|T ∩ S| = common``), ``slots_var`` slots. i is in the reference top-K when fewer than
    ``slots_ref`` members of T precede it, in the variant's when fewer than ``slots_var`` members of
    S do. The relative order of i and the ``N = |T ∪ S|`` others is uniformly random: i has
    ``s = 0 .. N`` of them before it with probability ``1 / (N + 1)`` each, and those s are a
    uniformly random s-subset. Counting the subsets with ``x`` members in T ∩ S, ``y`` in T − S,
    ``z`` in S − T,

    ``P = Σ_s (1 / ((N + 1) · C(N, s))) Σ_{x + y + z = s, x + y < slots_ref, x + z < slots_var}
    C(common, x) C(only_ref, y) C(only_var, z)``

    ``= Σ ... · s! (N − s)! / (N + 1)!``, an integer over ``(N + 1)!``: returned as an exact
    fraction. Its marginals are ``slots_ref / (|T| + 1)`` and ``slots_var / (|S| + 1)``
    (:func:`top_share`); for ``T = S`` it is ``min(slots_ref, slots_var) / (|T| + 1)`` (the two
    events are comonotone); in general it is at least the product of the marginals (both events
    favour a small priority of i and, given it, few earlier competitors: positively associated), so
    coupling never adds expected flips. Slots are clipped to ``0 .. |T| + 1`` (``0 ..
    |S| + 1``).

    Parameters
    ----------
    common, only_ref, only_var : int
        ``|T ∩ S|``, ``|T − S|``, ``|S − T|``.
    slots_ref, slots_var : int
        Top-K slots left to the reference's and the variant's tie group.

    Returns
    -------
    fractions.Fraction
    """
    n = common + only_ref + only_var
    a = max(0, min(slots_ref, common + only_ref + 1))
    b = max(0, min(slots_var, common + only_var + 1))
    # prefix[w][y] = Σ_{y' < y} C(only_ref, y') C(only_var, w - y'): the (y, z) pairs with y + z = w
    prefix = []
    for w in range(only_ref + only_var + 1):
        row = [0]
        for y in range(only_ref + 1):
            z = w - y
            row.append(row[-1] + (math.comb(only_ref, y) * math.comb(only_var, z) if 0 <= z <= only_var else 0))
        prefix.append(row)
    num = 0
    for s in range(n + 1):
        count = 0
        for x in range(max(0, s - only_ref - only_var), min(common, s) + 1):
            w = s - x                                   # y + z
            lo = max(0, w - only_var, s - b + 1)       # z <= only_var; x + z = s - y < b
            hi = min(only_ref, w, a - 1 - x)           # x + y < a
            if lo <= hi:
                count += math.comb(common, x) * (prefix[w][hi + 1] - prefix[w][lo])
        num += count * math.factorial(s) * math.factorial(n - s)
    return Fraction(num, math.factorial(n + 1))


@dataclass
class CellResult:
    """What one metric implementation returns for one :class:`Pairing`.

    ``diagnostics`` holds the family-specific columns of ``metrics.csv`` (``marc_raw``,
    ``flip_in_rate``, ``retained``, ``tp`` ...); columns it does not name are left empty.
    ``not_informative`` says why the cell's test cannot reject in this design (its p-value is then
    kept in ``p_value`` but left out of the BH family and never shown as evidence); empty when the
    test is informative. ``shared_test`` says which other row carries the same test in BH (the
    row keeps its p-value and stays out of BH: one test is counted once); ``shared_with`` is the
    metric id of that row (``flip_rate`` when empty).

    ``decision_on`` names the statistic the row's status decides on when it is not ``value`` (issue 30
    §2: the flip rate, retention and the impact ratio decide on the selection ratio at their cutoff),
    with its 95% interval ``decision_low`` / ``decision_high``.
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
    shared_with: str = ""
    decision_on: str = "value"
    decision_low: float = math.nan
    decision_high: float = math.nan
    #: Monte Carlo SE of the decision interval's ends (the larger; issue 39 §3) when ``decision_on`` is not
    #: ``value`` (for ``value``: the row's ``ci_mc_se`` diagnostic); decides whether the cell is redrawn.
    decision_mc_se: float = math.nan

    @classmethod
    def undefined(cls, note: str, **diagnostics: float) -> CellResult:
        """A metric whose value is undefined (status N/A), with the reason."""
        return cls(value=math.nan, notes=[note], diagnostics=dict(diagnostics))
