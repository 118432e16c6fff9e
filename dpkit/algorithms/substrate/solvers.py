"""The local solver: every agent's strongly convex subproblem, minimised at once to ||∇|| ≤ β.

Every ADMM variant in dpkit asks each agent i to (approximately) minimise

    F_i(θ) = Σ_n w_in ℓ(y_in θᵀx_in) + r_i R(θ) + a_iᵀθ + (κ_i/2) ||θ − c_i||²,

with w_in = 1/|D_i| (the local average), which covers the local steps of

* Ding et al. 2020 (PP-/IPP-ADMM) eqs. (3) and (5): r = λ̂/N, a = 2λ_i (+ b_i1), κ = 2η|𝓑_i|,
  c = mean_j ½(θ_i^t + θ_j^t);
* Zhang & Zhu 2016 (DVP) eq. (13) and Wang et al. 2020 eq. (14): the same decentralised form;
* Huang et al. 2019 (DP-ADMM/ADMM-PVP) Alg. 1 line 4: r = λ/n, a = −γ_i, κ = ρ, c = w^{k−1}.

:class:`AgentObjectives` holds the N subproblems as stacked arrays (agents with fewer records are
padded with zero-weight rows), so one damped Newton iteration (Armijo backtracking per agent) is a
few batched matrix products. The strong-convexity modulus μ_i = r_i μ_R + κ_i is what the privacy
analyses use (an approximate minimiser θ̂ with ||∇F(θ̂)|| ≤ β is within β/μ_i of the exact one).

:func:`solve` reports the **achieved** gradient norms (≤ β on success: the optimizer 𝒪(F, β) of
Ding et al. §3.1) and raises ``RuntimeError`` rather than return a point that breaks a privacy
analysis that assumes ||∇F(θ̂)|| ≤ β.

>>> import numpy as np
>>> from dpkit.algorithms.substrate.losses import Logistic
>>> X = np.array([[[1.0, 0.0], [0.0, 1.0], [0.6, 0.8]]]); y = np.array([[1.0, -1.0, 1.0]])
>>> F = AgentObjectives.from_arrays(X, y, Logistic(), reg_weight=0.1)
>>> result = solve(F, np.zeros((1, 2)), 1e-10)
>>> bool(result.grad_norms.max() <= 1e-10)
True
"""

from __future__ import annotations

import dataclasses
from typing import Sequence

import numpy as np

from dpkit._validation import check_integer, check_positive
from dpkit.algorithms.substrate.data import Dataset
from dpkit.algorithms.substrate.losses import L2

__all__ = ["AgentObjectives", "SolveResult", "solve"]


@dataclasses.dataclass(frozen=True)
class AgentObjectives:
    """N local objectives F_i (see the module docstring) as stacked arrays.

    Attributes
    ----------
    X, y, weights
        ``(N, m, d)``, ``(N, m)``, ``(N, m)``: records, labels in {−1, +1} and their weights.
    loss, regulariser
        Margin loss and regulariser objects of :mod:`dpkit.algorithms.substrate.losses`.
    reg_weight, kappa
        ``(N,)``: r_i and κ_i.
    linear, center
        ``(N, d)``: a_i and c_i.
    """

    X: np.ndarray
    y: np.ndarray
    weights: np.ndarray
    loss: object
    regulariser: object
    reg_weight: np.ndarray
    linear: np.ndarray
    kappa: np.ndarray
    center: np.ndarray

    @classmethod
    def from_arrays(cls, X: np.ndarray, y: np.ndarray, loss, *, regulariser=None, reg_weight: float = 0.0,
                    weights: np.ndarray | None = None) -> "AgentObjectives":
        """Objectives without linear or proximal terms from stacked data (equal weights by default)."""
        X = np.asarray(X, float)
        y = np.asarray(y, float)
        if X.ndim != 3 or y.shape != X.shape[:2]:
            raise ValueError(f"X must have shape (N, m, d) and y (N, m), got {X.shape} and {y.shape}")
        N, m, d = X.shape
        weights = np.full((N, m), 1.0 / m) if weights is None else np.asarray(weights, float)
        return cls(X, y, weights, loss, regulariser or L2(), np.full(N, float(reg_weight)),
                   np.zeros((N, d)), np.zeros(N), np.zeros((N, d)))

    @classmethod
    def from_parts(cls, parts: Sequence[Dataset], loss, *, regulariser=None, reg_weight: float = 0.0) -> "AgentObjectives":
        """One objective per agent's dataset; smaller datasets are padded with zero-weight rows."""
        m = max(p.n for p in parts)
        d = parts[0].d
        X = np.zeros((len(parts), m, d))
        y = np.ones((len(parts), m))
        weights = np.zeros((len(parts), m))
        for i, part in enumerate(parts):
            X[i, : part.n], y[i, : part.n], weights[i, : part.n] = part.X, part.y, 1.0 / part.n
        return cls.from_arrays(X, y, loss, regulariser=regulariser, reg_weight=reg_weight, weights=weights)

    @property
    def agents(self) -> int:
        return self.X.shape[0]

    @property
    def mu(self) -> np.ndarray:
        """``(N,)`` strong-convexity moduli r_i μ_R + κ_i (lower bounds; the loss adds ≥ 0)."""
        return self.reg_weight * self.regulariser.strong_convexity + self.kappa

    def with_terms(self, *, linear: np.ndarray | None = None, kappa: np.ndarray | float | None = None,
                   center: np.ndarray | None = None) -> "AgentObjectives":
        """A copy with new linear term a, proximal weight κ and/or centre c."""
        changes = {}
        if linear is not None:
            changes["linear"] = np.asarray(linear, float)
        if kappa is not None:
            changes["kappa"] = np.broadcast_to(np.asarray(kappa, float), (self.agents,)).copy()
        if center is not None:
            changes["center"] = np.asarray(center, float)
        return dataclasses.replace(self, **changes)

    def _margins(self, theta: np.ndarray) -> np.ndarray:
        return self.y * np.matmul(self.X, theta[:, :, None])[..., 0]

    def value(self, theta: np.ndarray) -> np.ndarray:
        """``(N,)`` values F_i(θ_i) for ``theta`` of shape ``(N, d)``."""
        data = np.sum(self.weights * self.loss.value(self._margins(theta)), axis=1)
        prox = 0.5 * self.kappa * np.sum((theta - self.center) ** 2, axis=1)
        return data + self.reg_weight * self.regulariser.value(theta) + np.sum(self.linear * theta, axis=1) + prox

    def gradient(self, theta: np.ndarray) -> np.ndarray:
        """``(N, d)`` gradients ∇F_i(θ_i)."""
        coef = self.weights * self.y * self.loss.derivative(self._margins(theta))
        data = np.matmul(coef[:, None, :], self.X)[:, 0, :]
        return (data + self.reg_weight[:, None] * self.regulariser.gradient(theta) + self.linear
                + self.kappa[:, None] * (theta - self.center))

    def hessian(self, theta: np.ndarray) -> np.ndarray:
        """``(N, d, d)`` Hessians."""
        coef = self.weights * self.loss.second(self._margins(theta))
        H = np.matmul(np.swapaxes(self.X, 1, 2) * coef[:, None, :], self.X)
        diag = self.reg_weight[:, None] * self.regulariser.hessian_diag(theta) + self.kappa[:, None]
        idx = np.arange(H.shape[1])
        H[:, idx, idx] += diag
        return H


@dataclasses.dataclass(frozen=True)
class SolveResult:
    """``theta`` ``(N, d)``, the achieved ``grad_norms`` ``(N,)`` and the Newton ``iterations``."""

    theta: np.ndarray
    grad_norms: np.ndarray
    iterations: int


def solve(F: AgentObjectives, x0: np.ndarray, tol: float, *, max_iter: int = 200) -> SolveResult:
    """Damped Newton on every agent at once until each ||∇F_i||₂ ≤ ``tol`` (β).

    Raises
    ------
    ValueError
        For a non-smooth loss or regulariser, or a non-positive tolerance.
    RuntimeError
        If some agent does not reach ``tol`` within ``max_iter`` iterations.
    """
    tol = check_positive("tol", tol)
    max_iter = check_integer("max_iter", max_iter, minimum=1)
    if not getattr(F.loss, "smooth", True) or not getattr(F.regulariser, "smooth", True):
        raise ValueError("solve needs a smooth loss and regulariser (Newton's method)")
    theta = np.array(x0, dtype=float, copy=True)
    value = F.value(theta)
    grad = F.gradient(theta)
    norms = np.linalg.norm(grad, axis=1)
    for iteration in range(max_iter + 1):
        active = norms > tol
        if not active.any():
            return SolveResult(theta, norms, iteration)
        if iteration == max_iter:
            break
        step = np.zeros_like(theta)
        step[active] = np.linalg.solve(F.hessian(theta)[active], grad[active][..., None])[..., 0]
        slope = np.sum(grad * step, axis=1)
        t = np.where(active, 1.0, 0.0)
        pending = active.copy()
        while pending.any():
            candidate = theta - t[:, None] * step
            cand_value = F.value(candidate)
            cand_grad = F.gradient(candidate)
            cand_norms = np.linalg.norm(cand_grad, axis=1)
            # Armijo; near the optimum the value change is below rounding: accept a halved gradient.
            accept = pending & ((cand_value <= value - 1e-4 * t * slope) | ((t == 1.0) & (cand_norms <= 0.5 * norms)))
            theta[accept], value[accept], grad[accept], norms[accept] = (
                candidate[accept], cand_value[accept], cand_grad[accept], cand_norms[accept])
            pending &= ~accept
            if (t[pending] < 1e-10).any():
                raise RuntimeError(f"Newton line search failed at gradient norm {norms[pending].max():.3g} (tolerance {tol:.3g})")
            t[pending] *= 0.5
    raise RuntimeError(f"Newton solver did not reach gradient norm {tol:.3g} in {max_iter} iterations "
                       f"(at {norms.max():.3g})")
