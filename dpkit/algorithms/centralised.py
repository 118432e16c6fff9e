"""Centralised (non-private) reference: the exact minimiser of the distributed objective.

    min_θ Σ_i (1/|D_i|) Σ_n ℓ(y_n θᵀx_n) + λ R(θ)        (seed 000 eq. 1, seed 004 eq. 1)

i.e. a pooled logistic regression whose record n of agent i has weight 1/|D_i| (equal to
N × the pooled mean loss when all |D_i| are equal). Solved by damped Newton to ||∇||₂ ≤ tol.
"""

from __future__ import annotations

import dataclasses
from typing import Sequence

import numpy as np

from dpkit._validation import check_nonnegative, check_positive
from dpkit.algorithms.data import Dataset
from dpkit.algorithms.losses import L2, Logistic
from dpkit.algorithms.solvers import SolveResult, _newton

__all__ = ["centralised_fit", "WeightedObjective"]


@dataclasses.dataclass(frozen=True)
class WeightedObjective:
    """Σ_n w_n ℓ(y_n θᵀx_n) + λ R(θ)."""

    X: np.ndarray
    y: np.ndarray
    weights: np.ndarray
    loss: object
    regulariser: object
    lam: float

    @property
    def mu(self) -> float:
        return self.lam * self.regulariser.strong_convexity

    def value(self, theta):
        return float(self.weights @ self.loss.value(self.y * (self.X @ theta))) + self.lam * float(self.regulariser.value(theta))

    def gradient(self, theta):
        z = self.y * (self.X @ theta)
        return self.X.T @ (self.weights * self.loss.derivative(z) * self.y) + self.lam * self.regulariser.gradient(theta)

    def hessian(self, theta):
        z = self.y * (self.X @ theta)
        H = (self.X.T * (self.weights * self.loss.second(z))) @ self.X
        H[np.diag_indices_from(H)] += self.lam * self.regulariser.hessian_diag(theta)
        return H


def centralised_fit(parts: Sequence[Dataset] | Dataset, lam: float, *, loss=None, regulariser=None,
                    tol: float = 1e-8, max_iter: int = 100) -> SolveResult:
    """Minimise Σ_i mean loss_i + λR (a single Dataset counts as one agent)."""
    parts = [parts] if isinstance(parts, Dataset) else list(parts)
    lam = check_nonnegative("lam", lam)
    tol = check_positive("tol", tol)
    X = np.vstack([p.X for p in parts])
    y = np.concatenate([p.y for p in parts])
    w = np.concatenate([np.full(p.n, 1.0 / p.n) for p in parts])
    F = WeightedObjective(X, y, w, loss or Logistic(), regulariser or L2(), lam)
    return _newton(F, np.zeros(X.shape[1]), tol, max_iter)
