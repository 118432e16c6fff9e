"""Margin losses ℓ(z), z = y θᵀx, with derivatives and the constants privacy analyses need; regularisers.

A loss object has ``value(z)``, ``derivative(z)`` (ℓ′, a subgradient for the hinge) and
``second(z)`` (ℓ″) elementwise on arrays, and the constants

* ``c1`` ≥ sup |ℓ′(z)| (gradient bound; with ||x|| ≤ 1 the per-example gradient norm is ≤ c1),
* ``c3`` ≥ sup ℓ″(z) (smoothness; ``inf`` for the non-smooth hinge).

Ding et al. 2020 call the smoothness constant c₁ (𝓛″ ≤ c_1 = 1/4); Huang et al. 2019 call the gradient bound c1
and the smoothness c3. :func:`empirical_value`, :func:`empirical_gradient` and
:func:`empirical_hessian` give the average over a dataset of ℓ(y θᵀx), also for a stack of
agents' models at once (``theta`` of shape ``(N, d)`` with data ``(N, m, d)``).

Regularisers :class:`L2` (½||θ||², 1-strongly convex, c4 = 1) and :class:`L1` (||θ||₁,
subgradient sign(θ) with sign(0) = 0, c2 = √d).
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
from scipy.special import expit, log_expit

from dpkit._validation import check_positive

__all__ = ["Logistic", "HuberHinge", "Hinge", "L2", "L1", "make_loss", "make_regulariser",
           "empirical_value", "empirical_gradient", "empirical_hessian"]


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


@dataclasses.dataclass(frozen=True)
class HuberHinge:
    """Smooth (Huber) hinge of Chaudhuri, Monteleoni & Sarwate 2011, eq. (7), with width h:
    0 for z > 1+h; (1+h−z)²/(4h) for |1−z| ≤ h; 1−z for z < 1−h. c1 = 1, c3 = 1/(2h)."""

    h: float = 0.5
    name = "huber_hinge"
    c1 = 1.0
    smooth = True

    def __post_init__(self) -> None:
        object.__setattr__(self, "h", check_positive("h", self.h))

    @property
    def c3(self) -> float:
        return 1.0 / (2.0 * self.h)

    def value(self, z):
        z = np.asarray(z, float)
        h = self.h
        return np.where(z > 1 + h, 0.0, np.where(z < 1 - h, 1.0 - z, (1 + h - z) ** 2 / (4 * h)))

    def derivative(self, z):
        z = np.asarray(z, float)
        h = self.h
        return np.where(z > 1 + h, 0.0, np.where(z < 1 - h, -1.0, -(1 + h - z) / (2 * h)))

    def second(self, z):
        z = np.asarray(z, float)
        return np.where(np.abs(1.0 - z) <= self.h, 1.0 / (2 * self.h), 0.0)


@dataclasses.dataclass(frozen=True)
class Hinge:
    """ℓ(z) = max(0, 1 − z) (non-smooth); subgradient −1 for z < 1, 0 otherwise. c1 = 1, c3 = inf;
    ``second`` is 0 almost everywhere (use only with first-order methods such as DP-ADMM)."""

    name = "hinge"
    c1 = 1.0
    c3 = math.inf
    smooth = False

    def value(self, z):
        return np.maximum(0.0, 1.0 - np.asarray(z, float))

    def derivative(self, z):
        return np.where(np.asarray(z, float) < 1.0, -1.0, 0.0)

    def second(self, z):
        return np.zeros_like(np.asarray(z, float))


@dataclasses.dataclass(frozen=True)
class L2:
    """R(θ) = ½||θ||²: gradient θ, Hessian I, 1-strongly convex (c4 = 1)."""

    name = "l2"
    strong_convexity = 1.0
    smooth = True

    def value(self, theta):
        return 0.5 * np.sum(np.asarray(theta) ** 2, axis=-1)

    def gradient(self, theta):
        return np.asarray(theta, float)

    def hessian_diag(self, theta):
        return np.ones_like(np.asarray(theta, float))


@dataclasses.dataclass(frozen=True)
class L1:
    """R(θ) = ||θ||₁: subgradient sign(θ) (sign(0) = 0), ||R′|| ≤ √d = c2; not strongly convex."""

    name = "l1"
    strong_convexity = 0.0
    smooth = False

    def value(self, theta):
        return np.sum(np.abs(np.asarray(theta)), axis=-1)

    def gradient(self, theta):
        return np.sign(np.asarray(theta, float))

    def hessian_diag(self, theta):
        return np.zeros_like(np.asarray(theta, float))


def make_loss(name: str, h: float = 0.5):
    """Loss by name: ``logistic``, ``huber_hinge`` (smooth hinge of width ``h``) or ``hinge``."""
    if name == "logistic":
        return Logistic()
    if name == "huber_hinge":
        return HuberHinge(h)
    if name == "hinge":
        return Hinge()
    raise ValueError(f"loss must be one of ('logistic', 'huber_hinge', 'hinge'), got loss={name!r}")


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


def empirical_hessian(loss, theta, X, y):
    """(1/m) Σ ℓ″(y θᵀx) x xᵀ (single agent)."""
    s = loss.second(_margins(theta, X, y))
    return (X.T * s) @ X / X.shape[0]
