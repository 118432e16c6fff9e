"""The solver's sparse rows give the same objective, gradient and Hessian as the dense formulas."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpkit.algorithms.substrate.losses import Logistic
from dpkit.algorithms.substrate.solvers import AgentObjectives, solve


def _sparse_problem(seed: int, density: float = 0.1):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(3, 40, 6)) * (rng.random((3, 40, 6)) < density)
    y = rng.choice([-1.0, 1.0], size=(3, 40))
    weights = np.full((3, 40), 1.0 / 40)
    weights[2, 30:] = 0.0  # a padded agent: its last rows carry no weight
    return X, y, weights


def _reference(X, y, weights, theta, lam, kappa, center, linear):
    """Per-agent value, gradient and Hessian of Σ w ℓ(y xᵀθ) + lam/2‖θ‖² + aᵀθ + κ/2‖θ − c‖², by loops."""
    loss = Logistic()
    out = []
    for i in range(X.shape[0]):
        z = y[i] * (X[i] @ theta[i])
        value = weights[i] @ loss.value(z) + 0.5 * lam * theta[i] @ theta[i] + linear[i] @ theta[i] \
            + 0.5 * kappa * np.sum((theta[i] - center[i]) ** 2)
        grad = X[i].T @ (weights[i] * y[i] * loss.derivative(z)) + lam * theta[i] + linear[i] + kappa * (theta[i] - center[i])
        hess = sum(w * loss.second(zn) * np.outer(x, x) for w, zn, x in zip(weights[i], z, X[i]))
        out.append((value, grad, hess + (lam + kappa) * np.eye(X.shape[2])))
    return out


@settings(max_examples=20, deadline=None)
@given(st.integers(0, 10_000))
def test_sparse_and_dense_rows_agree_with_the_formulas(seed):
    X, y, weights = _sparse_problem(seed)
    rng = np.random.default_rng(seed + 1)
    theta, center, linear = rng.normal(size=(3, 3, 6))
    for sparse in (True, False):
        F = AgentObjectives.from_arrays(X, y, Logistic(), reg_weight=0.1, weights=weights, sparse=sparse)
        F = F.with_terms(linear=linear, kappa=0.5, center=center)
        assert (F.sparse is not None) == sparse
        for i, (value, grad, hess) in enumerate(_reference(X, y, weights, theta, 0.1, 0.5, center, linear)):
            assert F.value(theta)[i] == pytest.approx(value, rel=1e-12, abs=1e-12)
            np.testing.assert_allclose(F.gradient(theta)[i], grad, rtol=1e-10, atol=1e-12)
            np.testing.assert_allclose(F.hessian(theta)[i], hess, rtol=1e-10, atol=1e-12)


def test_sparse_rows_are_chosen_by_density_and_dropped_with_their_array():
    X, y, weights = _sparse_problem(0)
    F = AgentObjectives.from_arrays(X, y, Logistic(), weights=weights)
    assert F.sparse is not None  # 10 % non-zero
    assert AgentObjectives.from_arrays(X + 1.0, y, Logistic()).sparse is None  # dense
    assert F.with_terms(kappa=1.0).sparse is F.sparse  # same X: kept
    assert dataclasses.replace(F, X=2.0 * X).sparse is None  # new X: its old sparse copy would be wrong
    with pytest.raises(TypeError, match="sparse"):
        AgentObjectives.from_arrays(X, y, Logistic(), sparse="yes")


def test_sparse_solve_reaches_the_dense_solution():
    X, y, weights = _sparse_problem(3)
    solutions = [solve(AgentObjectives.from_arrays(X, y, Logistic(), reg_weight=0.1, weights=weights, sparse=s),
                       np.zeros((3, 6)), 1e-10) for s in (True, False)]
    assert all(r.grad_norms.max() <= 1e-10 for r in solutions)
    # both are within β/μ = 1e-9 of the exact minimiser (μ = 0.1)
    np.testing.assert_allclose(solutions[0].theta, solutions[1].theta, atol=2e-9)
