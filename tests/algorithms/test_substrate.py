"""Substrate: partitioning, graphs, losses, the batched solver, the ADMM loops (non-private)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from dpkit.algorithms.substrate import data as D
from dpkit.algorithms.substrate.admm_loops import decentralised_admm, decentralised_loop, exact_local_step, star_admm, star_loop
from dpkit.algorithms.baselines.centralised import centralised_fit
from dpkit.algorithms.substrate.graphs import complete, from_adjacency, random_connected, ring, star
from dpkit.algorithms.substrate.losses import L1, L2, Logistic, empirical_gradient, empirical_value
from dpkit.algorithms.substrate.partition import partition
from dpkit.algorithms.substrate.solvers import AgentObjectives, solve


# ----------------------------------------------------------------------------- partition


def test_partition():
    ds = D.make_synthetic(103, 2, rng=0)
    parts = partition(ds, 4, rng=0)
    assert [p.n for p in parts] == [25] * 4
    rows = np.vstack([p.X for p in parts])
    assert len({tuple(r) for r in rows}) == 100  # disjoint
    assert [p.n for p in partition(ds, sizes=[10, 20, 3], rng=0)] == [10, 20, 3]
    assert np.array_equal(partition(ds, 4, rng=5)[0].X, partition(ds, 4, rng=5)[0].X)
    with pytest.raises(ValueError, match="sum"):
        partition(ds, sizes=[100, 10])
    with pytest.raises(ValueError, match="n_agents"):
        partition(ds, 200)


# ----------------------------------------------------------------------------- graphs


def test_graphs():
    assert ring(5).degrees.tolist() == [2] * 5
    assert complete(4).n_edges == 6
    assert star(4).degrees.tolist() == [3, 1, 1, 1]
    g = random_connected(8, 12, rng=3)
    assert g.n_edges == 12
    with pytest.raises(ValueError, match="connected"):
        from_adjacency([[0, 1, 0, 0], [1, 0, 0, 0], [0, 0, 0, 1], [0, 0, 1, 0]])
    with pytest.raises(ValueError, match="symmetric"):
        from_adjacency([[0, 1], [0, 0]])
    with pytest.raises(ValueError, match="self-loops"):
        from_adjacency([[1, 1], [1, 0]])
    with pytest.raises(ValueError, match="n_edges"):
        random_connected(5, 3)


@given(st.integers(1, 12), st.integers(0, 10_000))
def test_random_graph_is_connected(n, seed):
    g = random_connected(n, rng=seed)  # construction validates connectivity and symmetry
    assert g.n == n


# ----------------------------------------------------------------------------- losses


@given(st.floats(-30, 30))
def test_logistic_constants(z):
    loss = Logistic()
    assert abs(float(loss.derivative(np.array(z)))) <= loss.c1
    assert 0.0 <= float(loss.second(np.array(z))) <= loss.c3


def test_loss_derivatives_by_finite_differences():
    loss = Logistic()
    z = np.linspace(-3, 3, 61) + 0.013
    h = 1e-6
    fd1 = (loss.value(z + h) - loss.value(z - h)) / (2 * h)
    fd2 = (loss.derivative(z + h) - loss.derivative(z - h)) / (2 * h)
    assert np.allclose(loss.derivative(z), fd1, atol=1e-6)
    assert np.allclose(loss.second(z), fd2, atol=1e-4)
    assert np.all(np.abs(loss.derivative(z)) <= loss.c1) and np.all(loss.second(z) <= loss.c3 + 1e-12)


def test_regularisers():
    theta = np.array([1.0, -2.0, 0.0])
    assert L2().value(theta) == 2.5 and L1().value(theta) == 3.0
    assert L1().gradient(theta).tolist() == [1.0, -1.0, 0.0]


def test_gradient_matches_finite_difference_stacked():
    ds = D.make_synthetic(60, 4, rng=0)
    X = np.stack([ds.X[:30], ds.X[30:]])
    y = np.stack([ds.y[:30], ds.y[30:]])
    theta = np.array([[0.3, -0.2, 0.1, 0.5], [-1.0, 0.2, 0.0, 0.4]])
    g = empirical_gradient(Logistic(), theta, X, y)
    for i in range(2):
        for j in range(4):
            e = np.zeros(4)
            e[j] = 1e-6
            fd = (empirical_value(Logistic(), theta[i] + e, X[i], y[i]) - empirical_value(Logistic(), theta[i] - e, X[i], y[i])) / 2e-6
            assert abs(g[i, j] - fd) < 1e-7


# ----------------------------------------------------------------------------- solvers


def _objectives(agents=3, m=80, d=5, seed=2, reg=0.1):
    parts = partition(D.make_synthetic(agents * m, d, rng=seed), agents, rng=0)
    gen = np.random.default_rng(seed)
    F = AgentObjectives.from_parts(parts, Logistic(), reg_weight=reg)
    return F.with_terms(linear=0.05 * gen.standard_normal((agents, d)), kappa=np.linspace(0.2, 1.0, agents),
                        center=gen.standard_normal((agents, d)))


@pytest.mark.parametrize("beta", [1e-2, 1e-6])
def test_solver_reaches_tolerance_and_reports_it(beta):
    F = _objectives()
    res = solve(F, np.zeros((F.agents, 5)), beta)
    assert np.all(res.grad_norms <= beta)
    assert np.allclose(res.grad_norms, np.linalg.norm(F.gradient(res.theta), axis=1), rtol=0, atol=1e-15)
    exact = solve(F, np.zeros((F.agents, 5)), 1e-12).theta
    # strong convexity: ||θ − θ*|| ≤ ||∇F(θ)||/μ (Ding et al. 2020 §3.1)
    assert np.all(np.linalg.norm(res.theta - exact, axis=1) <= res.grad_norms / F.mu + 1e-12)


def test_solver_gradient_matches_finite_differences():
    F = _objectives(agents=2, m=30, d=3)
    theta = np.random.default_rng(0).standard_normal((2, 3))
    grad = F.gradient(theta)
    for j in range(3):
        e = np.zeros((2, 3))
        e[:, j] = 1e-6
        assert np.allclose((F.value(theta + e) - F.value(theta - e)) / 2e-6, grad[:, j], atol=1e-7)


def test_batched_solve_equals_per_agent_solves():
    F = _objectives(agents=3)
    batched = solve(F, np.zeros((3, 5)), 1e-10).theta
    for i in range(3):
        one = AgentObjectives(F.X[i:i + 1], F.y[i:i + 1], F.weights[i:i + 1], F.loss, F.regulariser,
                              F.reg_weight[i:i + 1], F.linear[i:i + 1], F.kappa[i:i + 1], F.center[i:i + 1])
        assert np.allclose(solve(one, np.zeros((1, 5)), 1e-10).theta[0], batched[i], atol=1e-9)


def test_padded_agents_ignore_padding_rows():
    ds = D.make_synthetic(70, 3, rng=1)
    parts = partition(ds, sizes=[50, 20], rng=0)
    F = AgentObjectives.from_parts(parts, Logistic(), reg_weight=0.5)
    theta = solve(F, np.zeros((2, 3)), 1e-10).theta
    for i, part in enumerate(parts):
        assert np.allclose(theta[i], centralised_fit(part, 0.5, tol=1e-10), atol=1e-8)


def test_solver_rejects_bad_input():
    F = _objectives(agents=1)
    with pytest.raises(ValueError, match="tol"):
        solve(F, np.zeros((1, 5)), 0.0)
    with pytest.raises(ValueError, match="smooth"):
        solve(dataclasses.replace(F, regulariser=L1()), np.zeros((1, 5)), 1e-3)


# ----------------------------------------------------------------------------- ADMM


def test_decentralised_admm_reaches_centralised_optimum():
    ds = D.make_synthetic(400, 5, rng=4)
    parts = partition(ds, 4, rng=0)
    g = ring(4)
    lam = 0.5
    ref = centralised_fit(parts, lam)
    short = decentralised_admm(parts, g, lam=lam, eta=0.5, iterations=20)
    res = decentralised_admm(parts, g, lam=lam, eta=0.5, iterations=200)
    h = res.history
    assert max(res.diagnostics["history"]["dual_sum"]) < 1e-12  # Σ_i λ_i = 0 at every iteration (the dual step is antisymmetric)
    assert h["consensus_gap"][-1] < 1e-6
    err_short = np.max(np.linalg.norm(short.models - ref, axis=1))
    err = np.max(np.linalg.norm(res.models - ref, axis=1))
    assert err < 1e-5 and err < err_short


def test_star_admm_reaches_centralised_optimum():
    ds = D.make_synthetic(300, 4, rng=5)
    parts = partition(ds, 3, rng=0)
    lam = 0.3
    ref = centralised_fit(parts, lam)
    res = star_admm(parts, lam=lam, rho=0.5, iterations=150)
    assert max(res.diagnostics["history"]["dual_sum"][1:]) < 1e-12  # Σ_i γ_i = 0 for k ≥ 1
    assert np.linalg.norm(res.model - ref) < 1e-6


def test_admm_input_errors():
    ds = D.make_synthetic(40, 2, rng=0)
    parts = partition(ds, 2, rng=0)
    with pytest.raises(ValueError, match="agents"):
        decentralised_admm(parts, ring(3))
    with pytest.raises(ValueError, match="eta"):
        decentralised_admm(parts, ring(2), eta=0.0)


def test_dual_invariant_holds_whatever_is_published():
    # Σ_i λ_i = λ-sum + (η/2) 1ᵀLθ̃ = 0 for any published θ̃ (the Laplacian's columns sum to zero)
    parts = partition(D.make_synthetic(200, 4, rng=6), 5, rng=0)
    F = AgentObjectives.from_parts(parts, Logistic(), reg_weight=0.01)
    gen = np.random.default_rng(0)
    sums = []
    state = decentralised_loop(F, random_connected(5, 7, rng=1), eta=0.3, iterations=8, beta=1e-8,
                               theta0=np.zeros((5, 4)), publish=lambda t, sol, prev: sol + gen.standard_normal(sol.shape),
                               on_round=lambda t, pub, duals: sums.append(np.linalg.norm(duals.sum(axis=0))))
    assert len(sums) == 8 and max(sums) < 1e-12
    star = star_loop(F, rho=0.5, iterations=6, local_step=exact_local_step(1e-8),
                     publish=lambda k, local: local + gen.standard_normal(local.shape))
    assert np.linalg.norm(star.duals.sum(axis=0)) < 1e-12
