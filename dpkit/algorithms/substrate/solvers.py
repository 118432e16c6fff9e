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
few batched matrix products. Sparse records (one-hot features: Adult's rows are 12 % non-zero) are
also kept as one CSR matrix per agent, and margins, gradients and Hessians Xᵀ diag(w ℓ″) X use it
(the dense Hessian costs m·d² per agent, the sparse one about m·nnz(row)²). The strong-convexity
modulus μ_i = r_i μ_R + κ_i is what the privacy analyses use (an approximate minimiser θ̂ with ||∇F(θ̂)|| ≤ β is within β/μ_i of the exact one).

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
from scipy import sparse as sp

from dpkit._validation import check_integer, check_positive
from dpkit.algorithms.substrate.data import Dataset
from dpkit.algorithms.substrate.losses import L2

__all__ = ["AgentObjectives", "SparseRows", "SolveResult", "solve", "SPARSE_BELOW"]

SPARSE_BELOW = 0.25
"""Share of non-zero entries of X below which :meth:`AgentObjectives.from_arrays` also keeps the sparse rows."""


@dataclasses.dataclass(frozen=True)
class SparseRows:
    """Agent i's records X_i as CSR matrices (``rows[i]``, m × d, and ``columns[i]`` = X_iᵀ, d × m),
    made from the dense stack ``source`` (an :class:`AgentObjectives` uses them only for that same array)."""

    source: np.ndarray
    rows: tuple
    columns: tuple
    row_of_entry: tuple

    @classmethod
    def from_dense(cls, X: np.ndarray) -> "SparseRows":
        rows = tuple(sp.csr_matrix(x) for x in X)
        return cls(X, rows, tuple(r.T.tocsr() for r in rows),
                   tuple(np.repeat(np.arange(r.shape[0]), np.diff(r.indptr)) for r in rows))

    def times(self, theta: np.ndarray) -> np.ndarray:
        """``(N, m)``: X_i θ_i for every agent."""
        return np.stack([r @ t for r, t in zip(self.rows, theta)])

    def transpose_times(self, coef: np.ndarray) -> np.ndarray:
        """``(N, d)``: X_iᵀ c_i for every agent."""
        return np.stack([c @ v for c, v in zip(self.columns, coef)])

    def gram(self, coef: np.ndarray) -> np.ndarray:
        """``(N, d, d)``: X_iᵀ diag(c_i) X_i for every agent."""
        out = []
        for r, c, row, v in zip(self.rows, self.columns, self.row_of_entry, coef):
            scaled = sp.csr_matrix((r.data * v[row], r.indices, r.indptr), shape=r.shape)
            out.append((c @ scaled).toarray())
        return np.stack(out)


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
    sparse: SparseRows | None = dataclasses.field(default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.sparse is not None and self.sparse.source is not self.X:
            object.__setattr__(self, "sparse", None)  # X was replaced: its sparse copy no longer applies

    @classmethod
    def from_arrays(cls, X: np.ndarray, y: np.ndarray, loss, *, regulariser=None, reg_weight: float = 0.0,
                    weights: np.ndarray | None = None, sparse: bool | None = None) -> "AgentObjectives":
        """Objectives without linear or proximal terms from stacked data (equal weights by default).

        ``sparse``: also keep X as CSR rows (:class:`SparseRows`) and compute with them; None (default)
        when fewer than :data:`SPARSE_BELOW` of X's entries are non-zero. Either way the same objective.
        """
        X = np.asarray(X, float)
        y = np.asarray(y, float)
        if X.ndim != 3 or y.shape != X.shape[:2]:
            raise ValueError(f"X must have shape (N, m, d) and y (N, m), got {X.shape} and {y.shape}")
        if sparse not in (None, True, False):
            raise TypeError(f"sparse must be None, True or False, got sparse={sparse!r}")
        N, m, d = X.shape
        weights = np.full((N, m), 1.0 / m) if weights is None else np.asarray(weights, float)
        if sparse is None:
            sparse = X.size > 0 and np.count_nonzero(X) < SPARSE_BELOW * X.size
        return cls(X, y, weights, loss, regulariser or L2(), np.full(N, float(reg_weight)),
                   np.zeros((N, d)), np.zeros(N), np.zeros((N, d)), SparseRows.from_dense(X) if sparse else None)

    @classmethod
    def from_parts(cls, parts: Sequence[Dataset], loss, *, regulariser=None, reg_weight: float = 0.0,
                   sparse: bool | None = None) -> "AgentObjectives":
        """One objective per agent's dataset; smaller datasets are padded with zero-weight rows
        (``sparse`` as in :meth:`from_arrays`)."""
        m = max(p.n for p in parts)
        d = parts[0].d
        X = np.zeros((len(parts), m, d))
        y = np.ones((len(parts), m))
        weights = np.zeros((len(parts), m))
        for i, part in enumerate(parts):
            X[i, : part.n], y[i, : part.n], weights[i, : part.n] = part.X, part.y, 1.0 / part.n
        return cls.from_arrays(X, y, loss, regulariser=regulariser, reg_weight=reg_weight, weights=weights,
                               sparse=sparse)

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
        if self.sparse is not None:
            return self.y * self.sparse.times(theta)
        return self.y * np.matmul(self.X, theta[:, :, None])[..., 0]

    def value(self, theta: np.ndarray) -> np.ndarray:
        """``(N,)`` values F_i(θ_i) for ``theta`` of shape ``(N, d)``."""
        data = np.sum(self.weights * self.loss.value(self._margins(theta)), axis=1)
        prox = 0.5 * self.kappa * np.sum((theta - self.center) ** 2, axis=1)
        return data + self.reg_weight * self.regulariser.value(theta) + np.sum(self.linear * theta, axis=1) + prox

    def gradient(self, theta: np.ndarray) -> np.ndarray:
        """``(N, d)`` gradients ∇F_i(θ_i)."""
        coef = self.weights * self.y * self.loss.derivative(self._margins(theta))
        if self.sparse is not None:
            data = self.sparse.transpose_times(coef)
        else:
            data = np.matmul(coef[:, None, :], self.X)[:, 0, :]
        return (data + self.reg_weight[:, None] * self.regulariser.gradient(theta) + self.linear
                + self.kappa[:, None] * (theta - self.center))

    def hessian(self, theta: np.ndarray) -> np.ndarray:
        """``(N, d, d)`` Hessians."""
        coef = self.weights * self.loss.second(self._margins(theta))
        if self.sparse is not None:
            H = self.sparse.gram(coef)
        else:
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


_VALUE_ROUNDING = 1e-12
"""Relative change of an objective value treated as rounding by :func:`solve`'s line search."""


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
            # Armijo; near the optimum the value change is below rounding: there a full step that
            # halves the gradient is accepted, but never one that raises the value beyond rounding
            # (that rule alone let the iterates cycle between two points far from the optimum)
            flat = np.abs(cand_value - value) <= _VALUE_ROUNDING * (1.0 + np.abs(value))
            accept = pending & ((cand_value <= value - 1e-4 * t * slope)
                                | ((t == 1.0) & flat & (cand_norms <= 0.5 * norms)))
            theta[accept], value[accept], grad[accept], norms[accept] = (
                candidate[accept], cand_value[accept], cand_grad[accept], cand_norms[accept])
            pending &= ~accept
            if (t[pending] < 1e-10).any():
                raise RuntimeError(f"Newton line search failed at gradient norm {norms[pending].max():.3g} (tolerance {tol:.3g})")
            t[pending] *= 0.5
    raise RuntimeError(f"Newton solver did not reach gradient norm {tol:.3g} in {max_iter} iterations "
                       f"(at {norms.max():.3g})")
