"""Local solvers: minimise an agent's strongly convex subproblem to a gradient-norm tolerance β.

Every ADMM variant in dpkit asks an agent to (approximately) minimise a
:class:`LocalObjective`

    F(θ) = (1/m) Σ_n ℓ(y_n θᵀx_n) + w_R R(θ) + aᵀθ + (κ/2) ||θ − c||²,

which covers

* seed 000 eq. (3)/(5): w_R = λ̂/N, a = 2λ_i (+ b_i1), κ = 2η|𝓑_i|, c = mean_j ½(θ_i^t + θ_j^t);
* seed 004 Alg. 1/2 line 4: w_R = λ/n, a = −γ_i, κ = ρ, c = w^{k−1}.

Its strong-convexity modulus is ``mu = w_R·μ_R + κ`` (μ_R = 1 for ½||θ||²).

:func:`solve` returns a :class:`SolveResult` with the point, the **achieved** gradient norm
||∇F(θ̂)||₂ (always ≤ β on success: the optimizer 𝒪(F, β) of seed 000 §2.1) and the number of
iterations. Methods: ``"newton"`` (damped Newton with Armijo backtracking; d ≤ a few hundred) and
``"lbfgs"`` (scipy.optimize L-BFGS-B with gtol = β/√d, finished by Newton steps if the 2-norm is
still above β). A solver that cannot reach β in ``max_iter`` steps raises ``RuntimeError`` rather
than return a point that breaks the privacy analysis (σ_i2 assumes ||∇F(θ̂)|| ≤ β).
"""

from __future__ import annotations

import dataclasses

import numpy as np
import scipy.optimize

from dpkit._validation import check_integer, check_positive
from dpkit.algorithms.losses import L2, empirical_gradient, empirical_hessian, empirical_value

__all__ = ["LocalObjective", "SolveResult", "solve"]


@dataclasses.dataclass(frozen=True)
class LocalObjective:
    """F(θ) = mean ℓ(y θᵀx) + reg_weight·R(θ) + linearᵀθ + (kappa/2)||θ − center||² (see module docstring)."""

    X: np.ndarray
    y: np.ndarray
    loss: object
    regulariser: object = dataclasses.field(default_factory=L2)
    reg_weight: float = 0.0
    linear: np.ndarray | None = None
    kappa: float = 0.0
    center: np.ndarray | None = None

    @property
    def mu(self) -> float:
        """Strong-convexity modulus reg_weight·μ_R + κ (a lower bound; the loss adds ≥ 0)."""
        return self.reg_weight * self.regulariser.strong_convexity + self.kappa

    def value(self, theta: np.ndarray) -> float:
        v = float(empirical_value(self.loss, theta, self.X, self.y)) + self.reg_weight * float(self.regulariser.value(theta))
        if self.linear is not None:
            v += float(self.linear @ theta)
        if self.kappa:
            c = 0.0 if self.center is None else self.center
            v += 0.5 * self.kappa * float(np.sum((theta - c) ** 2))
        return v

    def gradient(self, theta: np.ndarray) -> np.ndarray:
        g = empirical_gradient(self.loss, theta, self.X, self.y) + self.reg_weight * self.regulariser.gradient(theta)
        if self.linear is not None:
            g = g + self.linear
        if self.kappa:
            c = 0.0 if self.center is None else self.center
            g = g + self.kappa * (theta - c)
        return g

    def hessian(self, theta: np.ndarray) -> np.ndarray:
        H = empirical_hessian(self.loss, theta, self.X, self.y)
        H[np.diag_indices_from(H)] += self.reg_weight * self.regulariser.hessian_diag(theta) + self.kappa
        return H


@dataclasses.dataclass(frozen=True)
class SolveResult:
    """A solver's output: ``theta``, the achieved ``grad_norm`` = ||∇F(theta)||₂, ``iterations``, ``method``."""

    theta: np.ndarray
    grad_norm: float
    iterations: int
    method: str


def _newton(F: LocalObjective, theta: np.ndarray, tol: float, max_iter: int, start_iter: int = 0) -> SolveResult:
    g = F.gradient(theta)
    gn = float(np.linalg.norm(g))
    value = F.value(theta)
    it = start_iter
    while gn > tol:
        if it >= max_iter:
            raise RuntimeError(f"Newton solver did not reach gradient norm {tol:.3g} in {max_iter} iterations (at {gn:.3g})")
        H = F.hessian(theta)
        try:
            step = np.linalg.solve(H, g)
        except np.linalg.LinAlgError:
            step = g / max(F.mu, 1e-12)
        t = 1.0
        slope = float(g @ step)
        while True:
            candidate = theta - t * step
            cv = F.value(candidate)
            if cv <= value - 1e-4 * t * slope:
                break
            if t == 1.0 and np.linalg.norm(F.gradient(candidate)) <= 0.5 * gn:
                break  # near the optimum the value change is below rounding: accept on the gradient
            if t < 1e-10:
                raise RuntimeError(f"Newton line search failed at gradient norm {gn:.3g} (tolerance {tol:.3g})")
            t *= 0.5
        theta, value = candidate, cv
        g = F.gradient(theta)
        gn = float(np.linalg.norm(g))
        it += 1
    return SolveResult(theta, gn, it, "newton")


def solve(
    F: LocalObjective,
    x0: np.ndarray,
    tol: float,
    *,
    method: str = "newton",
    max_iter: int = 200,
) -> SolveResult:
    """Minimise ``F`` from ``x0`` until ||∇F||₂ ≤ ``tol`` (the β of seed 000); report the achieved norm.

    Raises
    ------
    ValueError
        For a non-positive tolerance or an unknown method.
    RuntimeError
        If ``tol`` is not reached within ``max_iter`` iterations.
    """
    tol = check_positive("tol", tol)
    max_iter = check_integer("max_iter", max_iter, minimum=1)
    theta = np.array(x0, dtype=float)
    if not getattr(F.loss, "smooth", True) or not getattr(F.regulariser, "smooth", True):
        raise ValueError("solve needs a smooth loss and regulariser (use DP-ADMM's first-order step for hinge/l1)")
    if method == "newton":
        return _newton(F, theta, tol, max_iter)
    if method == "lbfgs":
        d = theta.size
        res = scipy.optimize.minimize(
            F.value, theta, jac=F.gradient, method="L-BFGS-B",
            options={"gtol": tol / np.sqrt(d), "maxiter": max_iter, "ftol": 0.0},
        )
        out = _newton(F, np.asarray(res.x, float), tol, max_iter + int(res.nit), int(res.nit))
        return SolveResult(out.theta, out.grad_norm, out.iterations, "lbfgs")
    raise ValueError(f"method must be 'newton' or 'lbfgs', got method={method!r}")

