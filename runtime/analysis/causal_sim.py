"""Linear structural causal models with closed-form TE, NDE, NIE, BIE and RIE (validation of seed 001 §3).

The SCM follows the standard fairness model with split mediators (seed 001 Fig. 2b):

    Z1 ~ Bernoulli(0.5),  Z2 ~ Uniform{0, 1, 2}                       confounders
    X  ~ Bernoulli(logistic(-0.4 + 0.8 Z1 + 0.3 Z2))                  protected attribute
    R  ~ Bernoulli(0.25 + rx X + 0.1 Z1 + 0.05 Z2)                    redlining mediator
    B  = bx X + br R + 0.5 Z1 + 0.2 Z2 + N(0, 1)                      business-necessity mediator
    Y  = cx X + cb B + cr R + 0.4 Z1 + 0.3 Z2 + N(0, sigma_y^2)       score

Because Y is linear in B and R, and B is linear in R, the effects of moving X from 0 to 1 are
(seed 001 Eqs. 1-5 evaluated on this SCM):

    NDE = cx,   BIE = cb bx,   RIE = rx (cb br + cr),   NIE = BIE + RIE,   TE = NDE + NIE.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd


@dataclass(frozen=True)
class LinearSCM:
    """Coefficients of the SCM in the module doc (defaults: every pathway active)."""

    cx: float = 0.5
    cb: float = 1.0
    cr: float = 1.0
    bx: float = 0.5
    br: float = 0.5
    rx: float = 0.3
    sigma_y: float = 1.0

    def truth(self) -> dict[str, float]:
        """Closed-form TE, NDE, NIE, BIE, RIE."""
        nde = self.cx
        bie = self.cb * self.bx
        rie = self.rx * (self.cb * self.br + self.cr)
        return {"TE": nde + bie + rie, "NDE": nde, "NIE": bie + rie, "BIE": bie, "RIE": rie}

    def sample(self, n: int, rng: np.random.Generator) -> dict:
        """Draw n rows; returns ``{x, y, z, b, r}`` ready for :func:`runtime.analysis.causal.estimate_pse`."""
        z1 = rng.integers(0, 2, n)
        z2 = rng.integers(0, 3, n)
        x = (rng.random(n) < 1 / (1 + np.exp(-(-0.4 + 0.8 * z1 + 0.3 * z2)))).astype(int)
        p_r = 0.25 + self.rx * x + 0.1 * z1 + 0.05 * z2
        if p_r.min() < 0 or p_r.max() > 1:
            raise ValueError("rx makes P(R=1) leave [0, 1]; use |rx| <= 0.4")
        r = (rng.random(n) < p_r).astype(int)
        b = self.bx * x + self.br * r + 0.5 * z1 + 0.2 * z2 + rng.standard_normal(n)
        y = self.cx * x + self.cb * b + self.cr * r + 0.4 * z1 + 0.3 * z2 + self.sigma_y * rng.standard_normal(n)
        return {"x": x, "y": y,
                "z": pd.DataFrame({"z1": z1.astype(float), "z2": z2.astype(float)}),
                "b": pd.DataFrame({"b": b}),
                "r": pd.DataFrame({"r": r.astype(float)})}

    def nuisances(self, data: dict) -> dict:
        """The true nuisance functions of seed 001 Eq. 11 at each row of ``data`` (from :meth:`sample`).

        Returns ``{"p_z", "p_rz", "p_brz"}`` (P(X=1|Z), P(X=1|R,Z), P(X=1|B,R,Z), arrays of shape (n,))
        and callables ``mu3(a)`` -> mu3(B,R,a,Z), ``mu2(a, x)`` -> E[mu3(B,R,a,Z) | R, X=x, Z] and
        ``mu1(a, b, x)`` -> E[mu2(a, b) | X=x, Z], each an array of shape (n,). For the oracle check:
        with these nuisances the influence function's mean is unbiased for psi(a, b, c).
        """
        z1, z2 = data["z"]["z1"].to_numpy(), data["z"]["z2"].to_numpy()
        r, b = data["r"]["r"].to_numpy(), data["b"]["b"].to_numpy()
        e = 1 / (1 + np.exp(-(-0.4 + 0.8 * z1 + 0.3 * z2)))
        q = {v: 0.25 + self.rx * v + 0.1 * z1 + 0.05 * z2 for v in (0, 1)}
        lik_r = {v: np.where(r == 1, q[v], 1 - q[v]) for v in (0, 1)}
        p_rz = e * lik_r[1] / (e * lik_r[1] + (1 - e) * lik_r[0])
        mean_b = {v: self.bx * v + self.br * r + 0.5 * z1 + 0.2 * z2 for v in (0, 1)}
        lik_b = {v: np.exp(-0.5 * (b - mean_b[v]) ** 2) for v in (0, 1)}
        p_brz = p_rz * lik_b[1] / (p_rz * lik_b[1] + (1 - p_rz) * lik_b[0])
        base = 0.4 * z1 + 0.3 * z2

        def mu3(a, xv=None):  # mu3(B, R, a, Z); xv unused (a is the X of mu3)
            return self.cx * a + self.cb * b + self.cr * r + base

        def mu2(a, xv):
            return self.cx * a + self.cb * (self.bx * xv + self.br * r + 0.5 * z1 + 0.2 * z2) + self.cr * r + base

        def mu1(a, bv, xv):
            qx = 0.25 + self.rx * xv + 0.1 * z1 + 0.05 * z2
            return (self.cx * a + self.cb * (self.bx * bv + self.br * qx + 0.5 * z1 + 0.2 * z2)
                    + self.cr * qx + base)

        return {"p_z": e, "p_rz": p_rz, "p_brz": p_brz, "mu3": mu3, "mu2": mu2, "mu1": mu1}

    def oracle_phi(self, data: dict) -> np.ndarray:
        """Influence-function values with the TRUE nuisances plugged in (the oracle estimator).

        Shape (n, 5), columns in :data:`runtime.analysis.causal.QUANTITIES` order. Column means are
        exactly unbiased for the five psi (seed 001 Lemma 2), so ``estimate - oracle`` on the same
        data isolates the error that comes from estimating the nuisances, free of the sampling noise
        both share (the control variate of ``bench/bench_causal_coverage.py``).
        """
        from runtime.analysis.causal import QUANTITIES, influence_function

        nu = self.nuisances(data)
        x = np.asarray(data["x"])

        def at_x(f, *args):
            return np.where(x == 1, f(*args, 1), f(*args, 0))

        cols = [influence_function((a, b, c), x=x, y=np.asarray(data["y"], dtype=float), p_z=nu["p_z"],
                                   p_rz=nu["p_rz"], p_brz=nu["p_brz"], mu3_obs=at_x(nu["mu3"]),
                                   mu3_a=nu["mu3"](a), mu2_obs=at_x(nu["mu2"], a), mu2_b=nu["mu2"](a, b),
                                   mu1_obs=at_x(nu["mu1"], a, b), mu1_c=nu["mu1"](a, b, c))
                for a, b, c in QUANTITIES.values()]
        return np.column_stack(cols)


#: One SCM per case of seed 001 §5.2, with the verdict it must get (effects sized for n ~ 3000).
CASE_SCMS: dict[str, tuple[LinearSCM, tuple[str, ...]]] = {
    "C1": (LinearSCM(cx=0.6, cb=1.0, cr=0.0, bx=0.0, br=0.0, rx=0.0), ("C1",)),
    "C2": (LinearSCM(cx=0.6, cb=1.0, cr=0.0, bx=-0.6, br=0.0, rx=0.0), ("C1", "C2")),
    "C3": (LinearSCM(cx=0.0, cb=1.0, cr=0.0, bx=0.6, br=0.0, rx=0.0), ("C3",)),
    "C4": (LinearSCM(cx=0.0, cb=1.0, cr=2.0, bx=0.0, br=0.0, rx=0.3), ("C4",)),
    "C5": (LinearSCM(cx=0.0, cb=1.0, cr=2.0, bx=0.6, br=0.0, rx=0.3), ("C5",)),
}


#: The null SCM: every pathway from X is cut (NDE = BIE = RIE = 0), the mediators still move the
#: score. Any case label on its data is a false one (bench/bench_causal_coverage.py --scm null).
NULL_SCM = LinearSCM(cx=0.0, cb=1.0, cr=1.0, bx=0.0, br=0.5, rx=0.0)


def _logistic(v: np.ndarray) -> np.ndarray:
    return 1 / (1 + np.exp(-v))


@dataclass(frozen=True)
class NonlinearSCM:
    """A non-linear SCM with interactions and weaker overlap (issue 13), same roles as :class:`LinearSCM`:

        Z1 ~ Bernoulli(0.5),  Z2 ~ Uniform{0, 1, 2}
        X  ~ Bernoulli(logistic(-2.5 + 2.5 Z1 + 0.8 Z2))               P(X=1|Z) from 0.08 to 0.93
        R  ~ Bernoulli(logistic(-1 + rx X + 0.5 Z1 - 0.3 Z2 + 0.8 X Z1))
        B  = bx X + 0.6 R + 0.4 Z1 + 0.2 Z2 + 0.5 X R + N(0, 1)
        Y  = cx X + 0.8 B + 0.6 R + 0.3 Z1 + 0.2 Z2 + 0.4 X B + 0.5 tanh(B) Z2 - 0.15 B^2 + N(0, 1)

    No closed form: :meth:`truth` evaluates the nested counterfactuals of seed 001 Eqs. 6-10 by Monte
    Carlo on one large draw of the exogenous noise (common random numbers across worlds), which under
    independent noises equals the identified functional psi(a, b, c) of
    :mod:`runtime.analysis.causal`.
    """

    cx: float = 0.4
    bx: float = 0.5
    rx: float = 1.0
    sigma_y: float = 1.0
    #: Scale of the non-linear terms (X Z1, X R, X B, tanh(B) Z2, B^2); 0 leaves an SCM whose effects
    #: have a closed form (:meth:`closed_form_without_interactions`), which checks :meth:`truth`.
    interact: float = 1.0

    def closed_form_without_interactions(self) -> dict[str, float]:
        """With ``interact = 0``: NDE = cx, BIE = 0.8 bx, RIE = E_Z[P(R=1|1,Z) − P(R=1|0,Z)] (0.8 · 0.6 + 0.6)."""
        if self.interact != 0:
            raise ValueError("closed form only without interactions (interact = 0)")
        z1, z2 = np.meshgrid([0, 1], [0, 1, 2])
        dr = float(np.mean(self._p_r(1, z1, z2) - self._p_r(0, z1, z2)))
        nde, bie, rie = self.cx, 0.8 * self.bx, dr * (0.8 * 0.6 + 0.6)
        return {"TE": nde + bie + rie, "NDE": nde, "NIE": bie + rie, "BIE": bie, "RIE": rie}

    def _p_x(self, z1, z2):
        return _logistic(-2.5 + 2.5 * z1 + 0.8 * z2)

    def _p_r(self, x, z1, z2):
        return _logistic(-1.0 + self.rx * x + 0.5 * z1 - 0.3 * z2 + self.interact * 0.8 * x * z1)

    def _b(self, x, r, z1, z2, u):
        return self.bx * x + 0.6 * r + 0.4 * z1 + 0.2 * z2 + self.interact * 0.5 * x * r + u

    def _y(self, x, b, r, z1, z2, u):
        return (self.cx * x + 0.8 * b + 0.6 * r + 0.3 * z1 + 0.2 * z2
                + self.interact * (0.4 * x * b + 0.5 * np.tanh(b) * z2 - 0.15 * b * b) + self.sigma_y * u)

    def sample(self, n: int, rng: np.random.Generator) -> dict:
        """Draw n rows; returns ``{x, y, z, b, r}`` ready for :func:`runtime.analysis.causal.estimate_pse`."""
        z1 = rng.integers(0, 2, n)
        z2 = rng.integers(0, 3, n)
        x = (rng.random(n) < self._p_x(z1, z2)).astype(int)
        r = (rng.random(n) < self._p_r(x, z1, z2)).astype(int)
        b = self._b(x, r, z1, z2, rng.standard_normal(n))
        y = self._y(x, b, r, z1, z2, rng.standard_normal(n))
        return {"x": x, "y": y,
                "z": pd.DataFrame({"z1": z1.astype(float), "z2": z2.astype(float)}),
                "b": pd.DataFrame({"b": b}),
                "r": pd.DataFrame({"r": r.astype(float)})}

    def truth(self, n_mc: int = 4_000_000, seed: int = 20261201) -> dict[str, float]:
        """TE, NDE, NIE, BIE, RIE by Monte Carlo over ``n_mc`` draws of (Z, U_R, U_B, U_Y), in chunks.

        Each draw's potential outcomes share its noise: R_x = 1[U_R < P(R=1|x, Z)],
        B_{x,r} = f_B(x, r, Z) + U_B, Y_{x,b,r} = f_Y(x, b, r, Z) + U_Y. The Monte Carlo SE of each
        effect is about sd / sqrt(n_mc) (below 0.001 at the default).
        """
        from runtime.analysis.causal import QUANTITIES, effects_from_quantities

        rng = np.random.default_rng(seed)
        sums = np.zeros(len(QUANTITIES))
        done = 0
        while done < n_mc:
            m = min(500_000, n_mc - done)
            z1, z2 = rng.integers(0, 2, m), rng.integers(0, 3, m)
            u_r, u_b, u_y = rng.random(m), rng.standard_normal(m), rng.standard_normal(m)
            r_at = {v: (u_r < self._p_r(v, z1, z2)).astype(float) for v in (0, 1)}
            for j, (a, bb, c) in enumerate(QUANTITIES.values()):
                # psi(a, b, c): Y under X = a, B as under X = b given R as under X = c, R as under X = c
                r = r_at[c]
                b = self._b(bb, r, z1, z2, u_b)
                sums[j] += self._y(a, b, r, z1, z2, u_y).sum()
            done += m
        eff = effects_from_quantities(sums / n_mc)
        return {e: float(eff[e]) for e in ("TE", "NDE", "NIE", "BIE", "RIE")}
