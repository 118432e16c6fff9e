"""Margin losses ℓ(z), z = y θᵀx, with derivatives and the constants privacy analyses need; regularisers.

A loss object has ``value(z)``, ``derivative(z)`` (ℓ′) and ``second(z)`` (ℓ″) elementwise on
arrays, ``smooth`` (the solver refuses a non-smooth one), and the constants

* ``c1`` ≥ sup |ℓ′(z)| (gradient bound; with ||x|| ≤ 1 the per-example gradient norm is ≤ c1),
* ``c3`` ≥ sup ℓ″(z) (smoothness).

Ding et al. 2020 call the smoothness constant c₁ (𝓛″ ≤ c_1 = 1/4); Huang et al. 2019 call the gradient bound c1
and the smoothness c3. :func:`empirical_value` and :func:`empirical_gradient` give the average over a
dataset of ℓ(y θᵀx), also for a stack of agents' models at once (``theta`` of shape ``(N, d)`` with data ``(N, m, d)``).

Regularisers :class:`L2` (½||θ||², 1-strongly convex, c4 = 1) and :class:`L1` (||θ||₁,
subgradient sign(θ) with sign(0) = 0, c2 = √d).
"""

from __future__ import annotations

import dataclasses

import numpy as np
from scipy.special import expit, log_expit


__all__ = ["Logistic", "L2", "L1", "make_regulariser", "empirical_value", "empirical_gradient"]


@dataclasses.dataclass(frozen=True)
class Logistic:
    """ℓ(z) = log(1 + e^{−z}); ℓ′ = −σ(−z) ∈ (−1, 0); ℓ″ = σ(z)σ(−z) ∈ (0, 1/4]. c1 = 1, c3 = 1/4."""

    name = "logistic"
    c1 = 1.0
    c3 = 0.25
    smooth = True

    def value(self, z: np.ndarray) -> np.ndarray:
        return -log_expit(z)

    def derivative(self, z: np.ndarray) -> np.ndarray:
        return -expit(-z)

    def second(self, z: np.ndarray) -> np.ndarray:
        s = expit(z)
        return s * (1.0 - s)


class _SeparableRegulariser:
    """R(θ) = Σ_j r(θ_j) for an elementwise penalty r: a subclass gives r, r′ (a subgradient) and r″."""

    @staticmethod
    def term(theta: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    @staticmethod
    def term_derivative(theta: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    @staticmethod
    def term_second(theta: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def value(self, theta):
        return np.sum(self.term(np.asarray(theta, float)), axis=-1)

    def gradient(self, theta):
        return self.term_derivative(np.asarray(theta, float))

    def hessian_diag(self, theta):
        return self.term_second(np.asarray(theta, float))


@dataclasses.dataclass(frozen=True)
class L2(_SeparableRegulariser):
    """R(θ) = ½||θ||²: gradient θ, Hessian I, 1-strongly convex (c4 = 1)."""

    name = "l2"
    strong_convexity = 1.0
    smooth = True
    term = staticmethod(lambda theta: 0.5 * theta ** 2)
    term_derivative = staticmethod(lambda theta: theta)
    term_second = staticmethod(np.ones_like)


@dataclasses.dataclass(frozen=True)
class L1(_SeparableRegulariser):
    """R(θ) = ||θ||₁: subgradient sign(θ) (sign(0) = 0), ||R′|| ≤ √d = c2; not strongly convex."""

    name = "l1"
    strong_convexity = 0.0
    smooth = False
    term = staticmethod(np.abs)
    term_derivative = staticmethod(np.sign)
    term_second = staticmethod(np.zeros_like)


def make_regulariser(name: str):
    """Regulariser by name: ``l2`` or ``l1``."""
    if name == "l2":
        return L2()
    if name == "l1":
        return L1()
    raise ValueError(f"regulariser must be one of ('l2', 'l1'), got regulariser={name!r}")


def _margins(theta, X, y):
    # theta (d,) with X (m, d), or theta (N, d) with X (N, m, d)
    return y * (X @ theta) if np.ndim(theta) == 1 else y * np.matmul(X, theta[:, :, None])[..., 0]


def empirical_value(loss, theta, X, y, clip: float | None = None):
    """(1/m) Σ ℓ(y θᵀx), each term clipped at ``clip`` if given; per agent for stacked input."""
    v = loss.value(_margins(theta, X, y))
    if clip is not None:
        v = np.minimum(v, clip)
    return v.mean(axis=-1)


def empirical_gradient(loss, theta, X, y):
    """(1/m) Σ ℓ′(y θᵀx) y x."""
    w = loss.derivative(_margins(theta, X, y)) * y
    if np.ndim(theta) == 1:
        return X.T @ w / X.shape[0]
    return np.matmul(w[:, None, :], X)[:, 0, :] / X.shape[1]
