"""Path-specific effects of a protected attribute on a score: TE, NDE, NIE, BIE, RIE (seed 001).

Data frames / arrays in, result records out; no I/O.

Model (seed 001 §2.2, Fig. 2b): the standard fairness model with the mediators split into
business-necessity mediators ``B`` (education, experience) and redlining mediators ``R`` (name,
region). With ``x0`` the reference level and ``x1`` the other level of the protected attribute X,
and Z the confounders, five potential-outcome means are estimated (seed 001 §3.2, App. C.1,
Eqs. 6-10), each of the nested form

    psi(a, b, c) = sum_{b', r, z} E[Y | a, b', r, z] P(b' | b, r, z) P(r | c, z) P(z)

with (a, b, c) = (x0, x0, x0) for E[Y_x0], (x1, x1, x1) for E[Y_x1], (x1, x0, x0) for
E[Y_{x1,W_x0}], (x1, x0, x1) for E[Y_{x1,B_{x0,R_x1},R_x1}] (Eq. 9) and (x1, x1, x0) for
E[Y_{x1,B_{x1,R_x0},R_x0}] (Eq. 10). Then (Eqs. 1-5)

    TE  = E[Y_x1] - E[Y_x0]
    NDE = E[Y_{x1,W_x0}] - E[Y_x0]
    NIE = E[Y_x1] - E[Y_{x1,W_x0}]
    BIE = 1/2 (E[Y_x1] - psi_9 + psi_10 - E[Y_{x1,W_x0}])
    RIE = 1/2 (E[Y_x1] - psi_10 + psi_9 - E[Y_{x1,W_x0}])
    (NIE is computed as BIE + RIE and TE as NDE + NIE, so both identities hold exactly in floating point)

Each psi is estimated by the doubly robust, cross-fitted DML-UCA estimator of seed 001 Lemma 1
(Jung et al. 2024) with the influence function of Eq. 11 generalised to (a, b, c):

    phi = pi3 (Y - mu3(B,R,X,Z)) + pi2 (mu3(B,R,a,Z) - mu2(R,X,Z))
          + pi1 (mu2(R,b,Z) - mu1(X,Z)) + mu1(c,Z)
    mu3 = E[Y | B,R,X,Z],  mu2 = E[mu3(B,R,a,Z) | R,X,Z],  mu1 = E[mu2(R,b,Z) | X,Z]
    pi1 = 1[X=c] / P(c|Z)
    pi2 = 1[X=b] P(c|R,Z) / (P(b|R,Z) P(c|Z))
    pi3 = 1[X=a] P(b|B,R,Z) P(c|R,Z) / (P(a|B,R,Z) P(b|R,Z) P(c|Z))

which is seed 001 Table 1 for (x1, x1, x0) and reduces to the AIPW estimator when a = b = c.
Nuisances are gradient-boosted trees (scikit-learn ``HistGradientBoosting*``, the counterpart of
the paper's XGBoost), tuned on the grid of App. C.5 (Brier score for P(X|.), MSE for E[Y|.]).
**Repeated cross-fitting** (methods v6; Chernozhukov et al. 2018, §3.4, Definition 3.3): the
hyperparameters are searched once, and the cross-fitting runs on ``repeats`` (default 5) independent
fold assignments s. The estimate is the mean of the split estimates, theta = mean_s theta_s, and its
variance mean_s (sigma_s^2 + (theta_s - theta)^2) adds the spread between splits to each split's
variance. With a single split the multiplier-bootstrap SE missed part of the variability from
estimating the nuisances (NIE covered 92.3% in the linear SCM, mean SE 7% below the empirical SD).
The mean (not the median of the paper's main text) keeps every effect a linear function of the
five psi, so the identities below hold exactly.

Each split's sigma_s comes from a Gaussian multiplier bootstrap of its influence function (one set
of multipliers shared by the five psi and by the splits, so every effect is a linear function of
the same draws). The per-effect interval is estimate ± z_{1-alpha/2} · SE (the draws are Gaussian
given the data, so this is their percentile interval up to Monte Carlo error); its coverage is measured in ``bench/bench_causal_coverage.py``, against an oracle (the same influence
function with the true nuisances of a linear SCM, :meth:`runtime.analysis.causal_sim.LinearSCM.oracle_phi`).

**Multiplicity** (issue 13): five effects are tested at once, and a case of seed 001 §5.2 is named
when any of them is significant, so per-effect 95% intervals name some case in about 13% of
audits where no effect exists. "Significant" therefore means that the **simultaneous** 95% band
excludes 0: the max-t band of the same multiplier draws (Chernozhukov, Chetverikov & Kato 2013;
the band of Chernozhukov et al. 2018 for DML), estimate ± c · SE with c the (1 − α) quantile over
the draws of max_e |draw_e − estimate_e| / SE_e (the mean of the splits' c, applied to the
aggregated SE). It controls the family-wise error over the five
effects; the per-effect (marginal) interval and its decision are kept in ``ci_low/ci_high`` and
``significant_marginal``.

**Equivalence** (issue 39 §7, :func:`decide_effects`): seed 001 §5.1 reads an interval that contains 0
as "≃ 0", so a case that needs an effect ≃ 0 (C2: TE; C3, business necessity: NDE and RIE; C4: NDE and
BIE) was named on absence of evidence, and a status PASS meant only "nothing detected". An effect is
now ≃ 0 only when it is **equivalent** to 0 within a margin: its (1 − 2α) interval lies inside
±margin (TOST); otherwise, and when not significant, it is **undetermined**. :func:`path_status`: FAIL
when NDE or RIE is significant, PASS when both are equivalent, INCONCLUSIVE otherwise, with their MDEs.

**RIE's SE** (issue 39 §7; ``bench/causal_rie_se.py``): in the null SCM at n = 3,000 RIE's mean SE
read 5.7% below its empirical SD. 4.1 points of that are Monte Carlo error of the SD over the 844 data
sets: the oracle (the true influence function, whose variance is exact) shows them on the same data.
Against the control-variate SD the SE is 1.7% low (MC SE 0.4%), the o(1/n) variance of the estimated
nuisances; coverage 94.6% instead of 95%. The variance formula is kept.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

#: The five potential-outcome means, as (a, b, c) with 1 = x1 and 0 = x0 (see the module doc).
QUANTITIES: dict[str, tuple[int, int, int]] = {
    "E[Y_x0]": (0, 0, 0),
    "E[Y_x1]": (1, 1, 1),
    "E[Y_x1,W_x0]": (1, 0, 0),
    "E[Y_x1,B_x0R_x1,R_x1]": (1, 0, 1),
    "E[Y_x1,B_x1R_x0,R_x0]": (1, 1, 0),
}
#: Effect ids in report order (seed 001 Eqs. 1-5).
EFFECTS: tuple[str, ...] = ("TE", "NDE", "NIE", "BIE", "RIE")
#: Hyperparameter grid of seed 001 App. C.5 (XGBoost names -> HistGradientBoosting names:
#: n_estimators -> max_iter, max_depth -> max_depth, reg_lambda -> l2_regularization).
PARAM_GRID: dict[str, list] = {
    "max_iter": [5, 10, 20, 50, 100],
    "max_depth": [1, 2, 3, 4, 5],
    "l2_regularization": [0.5, 1.0, 2.0, 5.0],
}
#: Learning rate of every booster: XGBoost's default ``eta`` (0.3), which the C.5 grid assumes.
LEARNING_RATE = 0.3
#: Propensities are clipped to [CLIP, 1 - CLIP] before they enter a weight.
CLIP = 0.01
#: Share of clipped propensities (P(X|R,Z) or P(X|B,R,Z)) above which positivity is called violated:
#: the mediators then nearly determine X, and NDE/NIE/BIE/RIE extrapolate beyond the data (TE does not
#: use those propensities and stays identified).
POSITIVITY_LIMIT = 0.05
#: Candidates drawn from :data:`PARAM_GRID` and rows used by the hyperparameter search.
SEARCH_CANDIDATES = 12
SEARCH_ROWS = 6000
SEARCH_CV = 3
#: Splits of the repeated cross-fitting (Chernozhukov et al. 2018, §3.4): the cross-fitting runs on
#: ``REPEATS`` independent fold assignments and the estimates are aggregated by their mean, the
#: variance adding the spread between splits (methods v6; 1 = a single split, as up to v5).
REPEATS = 5

ERR_BINARY = "x must hold only 0 (x0) and 1 (x1); got values {values}"
ERR_LENGTHS = "x, y, z, b and r must have the same number of rows; got {lengths}"
ERR_FOLDS = "folds must be an integer >= 2 and <= the number of rows in each arm; got {folds}"
ERR_REPEATS = "repeats must be an integer >= 1; got {repeats}"
ERR_ARM = "each level of the protected attribute needs at least {need} rows; x0 has {n0}, x1 has {n1}"
ERR_NONFINITE = "y must be finite; {n} rows are NaN or infinite"

#: Nuisance models tuned by the search: propensities P(X|Z), P(X|R,Z), P(X|B,R,Z) and mu3.
NUISANCES = ("p_x_z", "p_x_rz", "p_x_brz", "mu3")


@dataclass(frozen=True)
class PSEResult:
    """Estimates of seed 001 Eqs. 1-5 with multiplier-bootstrap CIs.

    Attributes
    ----------
    table : pandas.DataFrame
        One row per quantity (the five psi) and per effect (TE, NDE, NIE, BIE, RIE); columns
        ``kind`` (``quantity``/``effect``), ``term``, ``estimate`` (mean over the splits), ``se``
        (sqrt of mean_s of the split's bootstrap variance plus its squared distance to the
        estimate), ``ci_low``, ``ci_high`` (per-effect interval estimate ± z · se),
        ``sim_low``, ``sim_high`` (simultaneous max-t band over the five effects),
        ``significant`` (the band excludes 0) and ``significant_marginal`` (the per-effect
        interval does); the last four for effects only (quantities get nan / ``None``). Units: the
        score's units; positive = x1 favoured.
    n : int
        Rows used.
    params : dict
        Hyperparameters chosen per nuisance (:data:`NUISANCES`).
    diagnostics : dict
        ``clipped_share``: share of propensities clipped per model (over all splits); ``folds``;
        ``repeats``; ``split_sd``: per effect, the SD of the split estimates (0 for one split);
        ``split_estimates``, ``split_se``: per effect, each split's estimate and multiplier-bootstrap SE;
        ``n_bootstrap``; ``alpha``; ``positivity``; ``band_critical``: the max-t critical value c
        of the simultaneous band (1.96 ≤ c ≤ about 2.6).
    phi : numpy.ndarray
        Influence-function values averaged over the splits, shape (n, 5), columns in
        :data:`QUANTITIES` order.
    """

    table: pd.DataFrame
    n: int
    params: dict[str, dict]
    diagnostics: dict = field(default_factory=dict)
    phi: np.ndarray | None = None

    def effect(self, term: str) -> pd.Series:
        """The row of one effect (``TE`` ... ``RIE``) or quantity."""
        return self.table.set_index("term").loc[term]

    def significant(self) -> dict[str, bool]:
        """Effect -> whether its CI excludes 0."""
        t = self.table[self.table["kind"] == "effect"]
        return {row.term: bool(row.significant) for row in t.itertuples()}


def _matrix(parts: Sequence[pd.DataFrame]) -> tuple[pd.DataFrame, list[bool]]:
    """Concatenate feature frames; categorical columns become integer codes (HGB native categories)."""
    frames = [p for p in parts if p is not None and p.shape[1] > 0]
    if not frames:
        return pd.DataFrame(index=range(0)), []
    df = pd.concat([f.reset_index(drop=True) for f in frames], axis=1)
    cats: list[bool] = []
    out = {}
    for name in df.columns:
        col = df[name]
        is_cat = isinstance(col.dtype, pd.CategoricalDtype) or col.dtype == object or col.dtype == bool
        if is_cat:
            codes = pd.Categorical(col).codes.astype(float)
            out[name] = codes
        else:
            out[name] = col.to_numpy(dtype=float)
        cats.append(bool(is_cat))
    return pd.DataFrame(out), cats


def _model(kind: str, params: Mapping, cats: list[bool], seed: int):
    from sklearn.ensemble import HistGradientBoostingClassifier, HistGradientBoostingRegressor

    cls = HistGradientBoostingClassifier if kind == "clf" else HistGradientBoostingRegressor
    # Category codes enter as numbers (ordinal splits), not as native categories: scikit-learn's
    # native-category path re-encodes the input on every fit and predict (over half the run time
    # at 60k rows), and after the App. C.4 grouping every categorical has <= 5 levels, which a
    # depth >= 2 tree isolates with two threshold splits. ``cats`` is kept for the record.
    del cats
    return cls(learning_rate=LEARNING_RATE, early_stopping=False, categorical_features=None,
               random_state=seed % (2**32), **params)


class _Constant:
    """A fitted model that predicts a constant (used when a feature set is empty)."""

    def __init__(self, value: float):
        self.value = value

    def predict(self, X):
        return np.full(len(X), self.value)

    def predict_proba(self, X):
        return np.column_stack([np.full(len(X), 1 - self.value), np.full(len(X), self.value)])


class _Numpy:
    """A fitted booster fed plain float arrays (no per-call pandas validation)."""

    def __init__(self, model):
        self.model = model

    def predict(self, X):
        return self.model.predict(np.asarray(X, dtype=float))

    def predict_proba(self, X):
        return self.model.predict_proba(np.asarray(X, dtype=float))


def _fit(kind: str, X: pd.DataFrame, y: np.ndarray, params: Mapping, cats: list[bool], seed: int):
    if X.shape[1] == 0:
        return _Constant(float(np.mean(y)))
    if kind == "clf" and len(np.unique(y)) < 2:
        return _Constant(float(y[0]))
    return _Numpy(_model(kind, params, cats, seed).fit(np.asarray(X, dtype=float), y))


def _proba(model, X: pd.DataFrame) -> np.ndarray:
    return np.clip(model.predict_proba(X)[:, 1], CLIP, 1 - CLIP)


def search_params(kind: str, X: pd.DataFrame, y: np.ndarray, cats: list[bool], *, seed: int,
                  n_candidates: int = SEARCH_CANDIDATES, max_rows: int = SEARCH_ROWS) -> dict:
    """Pick hyperparameters from :data:`PARAM_GRID` (seed 001 App. C.5).

    A randomized search (``n_candidates`` grid points, ``SEARCH_CV``-fold CV on at most ``max_rows``
    rows drawn with ``seed``) minimising the Brier score (``kind="clf"``) or the MSE (``"reg"``).
    Returns the chosen ``{max_iter, max_depth, l2_regularization}``.
    """
    from sklearn.model_selection import KFold, ParameterSampler, StratifiedKFold

    rng = np.random.default_rng(seed)
    if len(y) > max_rows:
        idx = np.sort(rng.choice(len(y), size=max_rows, replace=False))
        X, y = X.iloc[idx].reset_index(drop=True), y[idx]
    if X.shape[1] == 0 or (kind == "clf" and len(np.unique(y)) < 2):
        return {"max_iter": 100, "max_depth": 3, "l2_regularization": 1.0}
    X = np.asarray(X, dtype=float)
    cv = (StratifiedKFold if kind == "clf" else KFold)(SEARCH_CV, shuffle=True, random_state=seed % (2**32))
    splits = list(cv.split(X, y))
    best, best_loss = None, np.inf
    # a plain loop rather than RandomizedSearchCV: its joblib dispatch ignores the OpenMP thread
    # limit set by estimate_pse and ran 30x slower on a busy 2-core machine
    for cand in ParameterSampler(PARAM_GRID, n_iter=n_candidates, random_state=seed % (2**32)):
        loss = 0.0
        for tr, va in splits:
            m = _model(kind, cand, cats, seed).fit(X[tr], y[tr])
            pred = m.predict_proba(X[va])[:, 1] if kind == "clf" else m.predict(X[va])
            loss += float(np.mean((pred - y[va]) ** 2)) * len(va)  # Brier score / MSE
        if loss < best_loss - 1e-12:
            best, best_loss = cand, loss
    return {k: best[k] for k in PARAM_GRID}


def _folds(n: int, x: np.ndarray, folds: int, rng: np.random.Generator) -> np.ndarray:
    """Fold id per row, stratified by x (each fold holds both levels)."""
    fold = np.empty(n, dtype=int)
    for level in (0, 1):
        idx = np.flatnonzero(x == level)
        idx = idx[rng.permutation(len(idx))]
        fold[idx] = np.arange(len(idx)) % folds
    return fold


def _with_x(X: pd.DataFrame, value: int) -> pd.DataFrame:
    out = X.copy()
    out["__x__"] = float(value)
    return out


def estimate_pse(*, x: np.ndarray, y: np.ndarray, z: pd.DataFrame, b: pd.DataFrame, r: pd.DataFrame,
                 seed: int, folds: int = 5, repeats: int = REPEATS, n_bootstrap: int = 500, alpha: float = 0.05,
                 params: Mapping[str, Mapping] | None = None, n_threads: int = 1,
                 search_candidates: int = SEARCH_CANDIDATES) -> PSEResult:
    """Estimate TE, NDE, NIE, BIE and RIE with DML-UCA (seed 001 §3.2, Lemma 1, App. C).

    Parameters
    ----------
    x : array of int, shape (n,)
        Protected attribute: 1 = x1, 0 = x0 (the reference). Positive effects favour x1.
    y : array of float, shape (n,)
        Outcome (the system's score).
    z, b, r : pandas.DataFrame, n rows each
        Confounders, business-necessity mediators, redlining mediators. Numeric columns are used
        as they are; object, bool or categorical columns are native categories of the boosted trees
        (group high-cardinality columns first, seed 001 App. C.4). ``b`` or ``r`` may have no column.
    seed : int
        Seeds the folds, the search and the bootstrap multipliers.
    folds : int
        L of Lemma 1 (default 5), stratified by x.
    repeats : int
        Independent fold assignments of the repeated cross-fitting (default :data:`REPEATS`). The
        hyperparameters are searched once; the nuisances are fitted ``folds × repeats`` times.
    n_bootstrap : int
        Multiplier-bootstrap draws (default 500).
    alpha : float
        1 - confidence level of the percentile CIs.
    params : mapping, optional
        Hyperparameters per nuisance (:data:`NUISANCES`); searched (App. C.5) when not given.
    search_candidates : int
        Grid points tried by the App. C.5 search (100 = the whole grid).
    n_threads : int
        OpenMP threads of the boosted trees (default 1: many small fits run fastest single-threaded,
        and more threads than free cores slow them down by an order of magnitude).

    Returns
    -------
    PSEResult

    Raises
    ------
    ValueError
        x not binary, lengths differ, a level with fewer than 2 * folds rows, non-finite y,
        repeats < 1.
    """
    import sklearn.ensemble  # noqa: F401  (load its OpenMP runtime first: threadpoolctl limits loaded libraries only)
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=n_threads, user_api="openmp"):
        return _estimate(x=x, y=y, z=z, b=b, r=r, seed=seed, folds=folds, repeats=repeats, n_bootstrap=n_bootstrap,
                         alpha=alpha, params=params, search_candidates=search_candidates)


def _estimate(*, x, y, z, b, r, seed, folds, repeats, n_bootstrap, alpha, params, search_candidates) -> PSEResult:
    x = np.asarray(x)
    y = np.asarray(y, dtype=float)
    n = len(y)
    lengths = {"x": len(x), "y": n, "z": len(z), "b": len(b), "r": len(r)}
    if len(set(lengths.values())) != 1:
        raise ValueError(ERR_LENGTHS.format(lengths=lengths))
    values = set(np.unique(x).tolist())
    if not values <= {0, 1}:
        raise ValueError(ERR_BINARY.format(values=sorted(values)))
    x = x.astype(int)
    if not np.isfinite(y).all():
        raise ValueError(ERR_NONFINITE.format(n=int((~np.isfinite(y)).sum())))
    if not isinstance(folds, int) or folds < 2:
        raise ValueError(ERR_FOLDS.format(folds=folds))
    if not isinstance(repeats, int) or repeats < 1:
        raise ValueError(ERR_REPEATS.format(repeats=repeats))
    n1, n0 = int(x.sum()), int(n - x.sum())
    if min(n0, n1) < 2 * folds:
        raise ValueError(ERR_ARM.format(need=2 * folds, n0=n0, n1=n1))

    from runtime.seeding import derive_seed

    s = lambda *labels: derive_seed(seed, "causal", *labels)  # noqa: E731
    Xz, cz = _matrix([z])
    Xrz, crz = _matrix([r, z])
    Xbrz, cbrz = _matrix([b, r, z])
    X3, c3 = _matrix([b, r, z])
    X3["__x__"] = x.astype(float)
    c3 = c3 + [False]
    X2 = Xrz.copy()
    X2["__x__"] = x.astype(float)
    c2 = crz + [False]
    X1 = Xz.copy()
    X1["__x__"] = x.astype(float)
    c1 = cz + [False]

    if params is None:
        params = {
            "p_x_z": search_params("clf", Xz, x, cz, seed=s("search", "p_x_z"), n_candidates=search_candidates),
            "p_x_rz": search_params("clf", Xrz, x, crz, seed=s("search", "p_x_rz"), n_candidates=search_candidates),
            "p_x_brz": search_params("clf", Xbrz, x, cbrz, seed=s("search", "p_x_brz"), n_candidates=search_candidates),
            "mu3": search_params("reg", X3, y, c3, seed=s("search", "mu3"), n_candidates=search_candidates),
        }
    params = {k: dict(v) for k, v in params.items()}

    names = list(QUANTITIES)
    psis, phis, sds, crits = [], [], [], []
    clipped = {"p_x_z": 0, "p_x_rz": 0, "p_x_brz": 0}
    chunk = max(1, 2_000_000 // max(n, 1))
    for split in range(repeats):
        phi = _cross_fit(split, folds=folds, x=x, y=y, X=(Xz, Xrz, Xbrz, X3, X2, X1), cats=(cz, crz, cbrz, c3, c2, c1),
                         params=params, clipped=clipped, s=s)
        psi = phi.mean(axis=0)
        centred = phi - psi
        # Gaussian multiplier bootstrap of the influence function: one set of multipliers, shared by the
        # five psi and (re-drawn from the same seed) by every split
        boot_rng = np.random.default_rng(s("bootstrap"))
        draws = np.empty((n_bootstrap, len(names)))
        for start in range(0, n_bootstrap, chunk):
            m = min(chunk, n_bootstrap - start)
            draws[start:start + m] = psi + boot_rng.standard_normal((m, n)) @ centred / n
        q_draws, e_draws = draws, effects_from_quantities(draws)
        e_point = effects_from_quantities(psi)
        psis.append(np.concatenate([psi, [float(e_point[e]) for e in EFFECTS]]))
        sds.append(np.concatenate([np.std(q_draws, axis=0, ddof=1), [float(np.std(e_draws[e], ddof=1)) for e in EFFECTS]]))
        crits.append(max_t_critical({e: e_draws[e] for e in EFFECTS}, {e: float(e_point[e]) for e in EFFECTS}, alpha))
        phis.append(phi)
    theta_s, sd_s = np.array(psis), np.array(sds)
    # mean aggregation over the splits (Chernozhukov et al. 2018, §3.4, Def. 3.3 and Remark 3.1):
    # theta = mean_s theta_s, sigma^2 = mean_s (sigma_s^2 + (theta_s - theta)^2); the mean is linear, so the
    # effects of the mean psi are the mean effects and TE = NDE + NIE, NIE = BIE + RIE still hold exactly
    theta = theta_s.mean(axis=0)
    e_mean = effects_from_quantities(theta[:len(names)])
    theta[len(names):] = [float(e_mean[e]) for e in EFFECTS]
    se = np.sqrt(np.mean(sd_s ** 2 + (theta_s - theta) ** 2, axis=0))
    crit = float(np.mean(crits))
    from scipy.stats import norm

    z = float(norm.ppf(1 - alpha / 2))
    rows = []
    k = len(names)
    for j, name in enumerate(names):
        rows.append(("quantity", name, theta[j], se[j], theta[j] - z * se[j], theta[j] + z * se[j],
                     np.nan, np.nan, None, None))
    for i, name in enumerate(EFFECTS):
        est, sd = float(theta[k + i]), float(se[k + i])
        lo, hi = est - z * sd, est + z * sd
        s_lo, s_hi = est - crit * sd, est + crit * sd
        rows.append(("effect", name, est, sd, lo, hi, s_lo, s_hi, bool(s_lo > 0 or s_hi < 0), bool(lo > 0 or hi < 0)))
    table = pd.DataFrame(rows, columns=["kind", "term", "estimate", "se", "ci_low", "ci_high", "sim_low", "sim_high",
                                        "significant", "significant_marginal"])
    shares = {key: v / (n * repeats) for key, v in clipped.items()}
    split_sd = theta_s.std(axis=0, ddof=1) if repeats > 1 else np.zeros(len(theta))
    diagnostics = {"folds": folds, "repeats": repeats, "n_bootstrap": n_bootstrap, "alpha": alpha, "n_x0": n0,
                   "n_x1": n1, "band_critical": crit,
                   "split_sd": {e: float(split_sd[k + i]) for i, e in enumerate(EFFECTS)},
                   "split_estimates": {e: theta_s[:, k + i].tolist() for i, e in enumerate(EFFECTS)},
                   "split_se": {e: sd_s[:, k + i].tolist() for i, e in enumerate(EFFECTS)},
                   "clipped_share": shares,
                   "positivity": "violated" if max(shares["p_x_rz"], shares["p_x_brz"]) > POSITIVITY_LIMIT else "ok"}
    phi = np.mean(phis, axis=0)
    return PSEResult(table=table, n=n, params=params, diagnostics=diagnostics, phi=phi)


def _cross_fit(split: int, *, folds, x, y, X, cats, params, clipped, s) -> np.ndarray:
    """Influence-function values (n, 5) of one split of the rows into ``folds`` folds (seed 001 Lemma 1).

    Split ``split`` draws its own stratified folds; the nuisances are fitted on the training folds and
    evaluated on the held-out fold. ``clipped`` counts clipped propensities (updated in place).
    """
    Xz, Xrz, Xbrz, X3, X2, X1 = X
    cz, crz, cbrz, c3, c2, c1 = cats
    n = len(y)
    fold = _folds(n, x, folds, np.random.default_rng(s("folds", split)))
    phi = np.empty((n, len(QUANTITIES)))
    for ell in range(folds):
        tr, te = fold != ell, fold == ell
        fs = s("fold", split, ell)
        m_z = _fit("clf", Xz[tr], x[tr], params["p_x_z"], cz, fs)
        m_rz = _fit("clf", Xrz[tr], x[tr], params["p_x_rz"], crz, fs)
        m_brz = _fit("clf", Xbrz[tr], x[tr], params["p_x_brz"], cbrz, fs)
        m3 = _fit("reg", X3[tr], y[tr], params["mu3"], c3, fs)
        p1 = {"z": _proba(m_z, Xz[te]), "rz": _proba(m_rz, Xrz[te]), "brz": _proba(m_brz, Xbrz[te])}
        for key, model, X in (("p_x_z", m_z, Xz), ("p_x_rz", m_rz, Xrz), ("p_x_brz", m_brz, Xbrz)):
            raw = model.predict_proba(X[te])[:, 1]
            clipped[key] += int(((raw < CLIP) | (raw > 1 - CLIP)).sum())
        # nested regressions, fitted on the training folds (seed 001 App. C.2, Eqs. 12-13)
        mu3_at = {a: m3.predict(_with_x(X3[tr].drop(columns="__x__"), a)) for a in (0, 1)}
        m2 = {a: _fit("reg", X2[tr], mu3_at[a], params["mu3"], c2, fs) for a in (0, 1)}
        m1 = {}
        for a, bb in {(a, bb) for a, bb, _ in QUANTITIES.values()}:
            target = m2[a].predict(_with_x(X2[tr].drop(columns="__x__"), bb))
            m1[(a, bb)] = _fit("reg", X1[tr], target, params["mu3"], c1, fs)
        xt, yt = x[te], y[te]
        X3t, X2t, X1t = X3[te], X2[te], X1[te]
        mu3_obs = m3.predict(X3t)
        mu3_te = {a: m3.predict(_with_x(X3t.drop(columns="__x__"), a)) for a in (0, 1)}
        mu2_obs = {a: m2[a].predict(X2t) for a in (0, 1)}

        for j, (a, bb, c) in enumerate(QUANTITIES.values()):
            phi[te, j] = influence_function(
                (a, bb, c), x=xt, y=yt, p_z=p1["z"], p_rz=p1["rz"], p_brz=p1["brz"], mu3_obs=mu3_obs,
                mu3_a=mu3_te[a], mu2_obs=mu2_obs[a],
                mu2_b=m2[a].predict(_with_x(X2t.drop(columns="__x__"), bb)),
                mu1_obs=m1[(a, bb)].predict(X1t),
                mu1_c=m1[(a, bb)].predict(_with_x(X1t.drop(columns="__x__"), c)))

    return phi


def max_t_critical(draws: Mapping[str, np.ndarray], estimate: Mapping[str, float], alpha: float) -> float:
    """Critical value of the simultaneous max-t band over several effects from shared bootstrap draws.

    ``c`` = the (1 − α) quantile over the draws of ``max_e |draw_e − estimate_e| / SE_e``, SE_e the
    SD of effect e's draws; effects with SE 0 are left out (their band is the point). The band
    ``estimate_e ± c · SE_e`` covers every effect at once with probability about 1 − α (Chernozhukov,
    Chetverikov & Kato 2013). Returns the normal quantile z_{1−α/2} when no effect varies.
    """
    from scipy.stats import norm

    cols = []
    for e, d in draws.items():
        sd = float(np.std(d, ddof=1))
        if sd > 0:
            cols.append(np.abs(np.asarray(d) - estimate[e]) / sd)
    if not cols:
        return float(norm.ppf(1 - alpha / 2))
    return float(np.quantile(np.max(np.column_stack(cols), axis=1), 1 - alpha))


def influence_function(abc: tuple[int, int, int], *, x: np.ndarray, y: np.ndarray, p_z: np.ndarray,
                       p_rz: np.ndarray, p_brz: np.ndarray, mu3_obs: np.ndarray, mu3_a: np.ndarray,
                       mu2_obs: np.ndarray, mu2_b: np.ndarray, mu1_obs: np.ndarray,
                       mu1_c: np.ndarray) -> np.ndarray:
    """Influence-function values of psi(a, b, c) from nuisance values (seed 001 Eq. 11, Table 1).

    Parameters
    ----------
    abc : (a, b, c)
        Levels (0 = x0, 1 = x1) of the nested quantity (see the module doc and :data:`QUANTITIES`).
    x, y : arrays, shape (n,)
        Protected attribute (0/1) and outcome.
    p_z, p_rz, p_brz : arrays, shape (n,)
        P(X=1|Z), P(X=1|R,Z), P(X=1|B,R,Z) at each row (already clipped away from 0 and 1).
    mu3_obs, mu3_a : arrays, shape (n,)
        mu3(B,R,X,Z) and mu3(B,R,a,Z).
    mu2_obs, mu2_b : arrays, shape (n,)
        mu2_a(R,X,Z) and mu2_a(R,b,Z), where mu2_a = E[mu3(B,R,a,Z) | R,X,Z].
    mu1_obs, mu1_c : arrays, shape (n,)
        mu1_ab(X,Z) and mu1_ab(c,Z), where mu1_ab = E[mu2_a(R,b,Z) | X,Z].

    Returns
    -------
    numpy.ndarray, shape (n,)
        phi; its mean estimates psi(a, b, c). Also used with the true nuisances of
        :mod:`runtime.analysis.causal_sim` (the oracle check in ``tests/test_causal.py``).
    """
    a, b, c = abc

    def prob(p: np.ndarray, level: int) -> np.ndarray:
        return p if level == 1 else 1 - p

    pi1 = (x == c) / prob(p_z, c)
    pi2 = (x == b) * prob(p_rz, c) / (prob(p_rz, b) * prob(p_z, c))
    pi3 = (x == a) * prob(p_brz, b) * prob(p_rz, c) / (prob(p_brz, a) * prob(p_rz, b) * prob(p_z, c))
    return pi3 * (y - mu3_obs) + pi2 * (mu3_a - mu2_obs) + pi1 * (mu2_b - mu1_obs) + mu1_c


def effects_from_quantities(psi: np.ndarray) -> dict[str, np.ndarray]:
    """TE, NDE, NIE, BIE, RIE from the five quantities (last axis in :data:`QUANTITIES` order).

    Eqs. 1-5 of seed 001. BIE and RIE follow Eqs. 4 and 5; NIE is computed as BIE + RIE and TE as
    NDE + NIE, equal to Eqs. 3 and 1 algebraically, so that NIE = BIE + RIE and TE = NDE + NIE hold
    exactly in floating point too (a reader summing the rows of ``causal.csv`` gets the same number).
    """
    psi = np.asarray(psi, dtype=float)
    y0, y1, yw, y9, y10 = (psi[..., j] for j in range(5))
    nde = yw - y0
    bie = 0.5 * ((y1 - y9) + (y10 - yw))
    rie = 0.5 * ((y1 - y10) + (y9 - yw))
    nie = bie + rie
    te = nde + nie
    return {"TE": te, "NDE": nde, "NIE": nie, "BIE": bie, "RIE": rie}


# ----------------------------------------------------------------------------------------------
# Decisions per effect: significant, equivalent (≃ 0), undetermined (issue 39 §7)

#: Power at which :func:`decide_effects` states an effect's minimum detectable effect (MDE).
MDE_POWER = 0.8
#: An effect's decision (``causal.csv`` column ``decision``).
DECISIONS = ("significant", "equivalent", "undetermined")


def decide_effects(table: pd.DataFrame, *, margin: float, alpha: float = 0.05,
                   power: float = MDE_POWER) -> pd.DataFrame:
    """Each effect's decision: significant, equivalent to 0 within ±margin (≃ 0), or undetermined.

    Seed 001 §5.1 calls an effect "negligible (≃ 0)" whenever its interval contains 0, which reads
    absence of evidence as evidence of absence. Here (issue 39 §7):

    - **significant** (≠ 0): the simultaneous (1 − α) max-t band over the five effects excludes 0
      (``significant``, :func:`max_t_critical`);
    - **equivalent** (≃ 0): a TOST at α against ±``margin`` rejects, i.e. the (1 − 2α) per-effect
      interval ``estimate ± z_{1−α} · se`` (``eq_low``, ``eq_high``) lies strictly inside
      (−margin, +margin) (Schuirmann 1987; seed 003's TOST). Every decision that needs an effect ≃ 0
      needs several at once (PASS: NDE and RIE; case C3: NDE and RIE; C4: NDE and BIE; C2: TE), an
      intersection–union test, whose level is α without a multiplicity adjustment (Berger 1982);
    - **undetermined**: neither. Nothing is concluded about its size; ``mde`` says how large an
      effect the band would detect.

    An effect can be both significant and equivalent (precisely estimated, small but not 0): its
    ``decision`` is ``significant`` and ``equivalent`` stays True.

    Parameters
    ----------
    table : pandas.DataFrame
        :attr:`PSEResult.table` (columns ``kind, term, estimate, se, sim_low, sim_high, significant``).
    margin : float
        Equivalence margin, > 0, on the same scale as the estimates (the score's units).
    alpha : float
        Level of the TOST (the interval is 1 − 2α) and of the band, in (0, 0.5).
    power : float
        Power of the stated MDE, in (0, 1).

    Returns
    -------
    pandas.DataFrame
        ``table`` with columns ``eq_low``, ``eq_high`` (the 1 − 2α interval), ``equivalent`` (bool),
        ``decision`` (one of :data:`DECISIONS`), ``mde`` (``(c + z_power) · se``, c the band's critical
        value: the |effect| the band declares significant with probability ``power``, a normal
        approximation) and ``margin``; quantities get NaN / None.

    Raises
    ------
    ValueError
        ``margin`` not a finite number > 0, or ``alpha`` outside (0, 0.5).
    """
    from scipy.stats import norm

    if not (np.isfinite(margin) and margin > 0):
        raise ValueError(f"margin must be a finite number > 0; got {margin}")
    if not 0 < alpha < 0.5:
        raise ValueError(f"alpha must lie in (0, 0.5); got {alpha}")
    out = table.copy()
    eff = out["kind"] == "effect"
    z = float(norm.ppf(1 - alpha))
    est, se = out["estimate"].astype(float), out["se"].astype(float)
    lo, hi = est - z * se, est + z * se
    equivalent = (lo > -margin) & (hi < margin)
    with np.errstate(invalid="ignore", divide="ignore"):
        crit = np.where(se > 0, (out["sim_high"].astype(float) - est) / se, np.nan)
    out["eq_low"] = np.where(eff, lo, np.nan)
    out["eq_high"] = np.where(eff, hi, np.nan)
    out["equivalent"] = [bool(q) if e else None for q, e in zip(equivalent, eff)]
    out["decision"] = [("significant" if bool(s) else "equivalent" if bool(q) else "undetermined") if e else None
                       for s, q, e in zip(out["significant"], equivalent, eff)]
    out["mde"] = np.where(eff, (crit + float(norm.ppf(power))) * se, np.nan)
    out["margin"] = np.where(eff, float(margin), np.nan)
    return out


# ----------------------------------------------------------------------------------------------
# Verdicts (seed 001 §5.2)

#: Case id -> (short name, plain-language reading). Several cases can hold at once (the paper
#: reports e.g. "C1, C5"). "≠ 0" is significant by the simultaneous 95% band; "≃ 0" is equivalent to
#: 0 within the margin (:func:`decide_effects`), never merely "not significant": a case that needs an
#: effect ≃ 0 is not named while that effect is undetermined (the short names are ``causal.csv``'s
#: ``verdict``).
CASES: dict[str, tuple[str, str]] = {
    "C1": ("direct discrimination without explicit demographics",
           "The score changes with the protected attribute along the direct path (NDE is significant) even "
           "though the resumes state no demographics: the system infers the attribute from other "
           "content and uses it beyond what qualifications and name/region proxies carry."),
    "C2": ("discrimination masked by cancellation",
           "The total effect is equivalent to 0 (within the margin), but the direct and indirect "
           "effects are both significant and of opposite sign: an outcome-level metric (score gap, "
           "impact ratio) would call this system fair while substantial causal effects exist."),
    "C3": ("business necessity",
           "The disparity runs through job-relevant qualifications (education, experience) only: "
           "BIE is significant while NDE and RIE are equivalent to 0 (their 90% intervals lie inside the "
           "margin). This may be defensible if the employer can show the qualifications are a business necessity."),
    "C4": ("proxy discrimination",
           "The disparity runs through demographic proxies (name, region): RIE is significant "
           "while NDE and BIE are equivalent to 0 (their 90% intervals lie inside the margin). Using name or "
           "geography as a stand-in for a protected attribute is impermissible (the redlining doctrine)."),
    "C5": ("mixed mediation",
           "Both the qualification path (BIE) and the proxy path (RIE) are significant: the system uses "
           "qualifications and demographic proxies at once; they may amplify or offset each other "
           "inside NIE."),
}
VERDICT_NONE = ("no significant path-specific effect",
                "No effect's simultaneous 95% band excludes 0 at this sample size: no pathway is detected. "
                "This is not proof of absence: only an effect whose 90% interval lies inside the margin is "
                "equivalent to 0; the MDEs say how large an undetected effect could be.")
VERDICT_OTHER = ("significant effect, no named case",
                 "Some effect is significant but the pattern matches none of the five cases of seed 001 "
                 "§5.2: an effect a case needs to be equivalent to 0 is undetermined (neither significant nor "
                 "inside the margin), or a total or indirect effect is significant while its parts are not.")


@dataclass(frozen=True)
class Verdict:
    """The cases of seed 001 §5.2 that hold, with their plain-language readings."""

    cases: tuple[str, ...]
    label: str
    reading: str


def classify_cases(significant: Mapping[str, bool], estimate: Mapping[str, float],
                   equivalent: Mapping[str, bool]) -> Verdict:
    """Classify one system x attribute into the cases of seed 001 §5.2.

    A case's "≠ 0" reads ``significant`` and its "≃ 0" reads ``equivalent`` (issue 39 §7): C1 NDE ≠ 0;
    C2 TE ≃ 0, NDE ≠ 0, NIE ≠ 0, NDE · NIE < 0; C3 NDE ≃ 0, RIE ≃ 0, BIE ≠ 0; C4 NDE ≃ 0, BIE ≃ 0,
    RIE ≠ 0; C5 BIE ≠ 0, RIE ≠ 0. An effect that is significant is never read as ≃ 0, even when its
    1 − 2α interval lies inside the margin.

    Parameters
    ----------
    significant : mapping
        Effect id -> its simultaneous band excludes 0; keys TE, NDE, NIE, BIE, RIE.
    estimate : mapping
        Effect id -> point estimate (for the sign condition of C2).
    equivalent : mapping
        Effect id -> equivalent to 0 within the margin (:func:`decide_effects`).

    Returns
    -------
    Verdict
        ``cases`` in C1..C5 order (possibly several, e.g. ("C1", "C5")); ``label`` joins their
        names; ``reading`` their readings. With no case: :data:`VERDICT_NONE` or
        :data:`VERDICT_OTHER`.
    """
    s = {k: bool(significant[k]) for k in EFFECTS}
    q = {k: bool(equivalent[k]) and not s[k] for k in EFFECTS}
    cases = []
    if s["NDE"]:
        cases.append("C1")
    if q["TE"] and s["NDE"] and s["NIE"] and estimate["NDE"] * estimate["NIE"] < 0:
        cases.append("C2")
    if q["NDE"] and q["RIE"] and s["BIE"]:
        cases.append("C3")
    if q["NDE"] and q["BIE"] and s["RIE"]:
        cases.append("C4")
    if s["BIE"] and s["RIE"]:
        cases.append("C5")
    if not cases:
        label, reading = VERDICT_OTHER if any(s.values()) else VERDICT_NONE
        return Verdict((), label, reading)
    return Verdict(tuple(cases), "; ".join(CASES[c][0] for c in cases),
                   " ".join(CASES[c][1] for c in cases))


def path_status(decision: Mapping[str, str], *, positivity: str = "ok") -> str:
    """The status of one system x job from its effects' decisions (issue 39 §7).

    FAIL when NDE or RIE is significant (a direct or proxy path: the disparate-treatment and redlining
    doctrines, seed 001 §5.2); else INCONCLUSIVE when positivity is violated (NDE and RIE are then
    extrapolated, so they cannot be cleared); else PASS when NDE and RIE are both equivalent to 0
    within the margin (an intersection–union test at level α); else INCONCLUSIVE.

    Parameters
    ----------
    decision : mapping
        Effect id -> one of :data:`DECISIONS` (at least NDE and RIE).
    positivity : str
        ``"violated"`` or ``"ok"`` (:attr:`PSEResult.diagnostics`).

    Returns
    -------
    str
        ``"FAIL"``, ``"PASS"`` or ``"INCONCLUSIVE"``.
    """
    if "significant" in (decision["NDE"], decision["RIE"]):
        return "FAIL"
    if positivity == "violated":
        return "INCONCLUSIVE"
    if decision["NDE"] == decision["RIE"] == "equivalent":
        return "PASS"
    return "INCONCLUSIVE"
