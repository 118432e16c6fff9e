"""Substrate: data, partitioning, graphs, losses, solvers, non-private ADMM (spec 000 §5.1 items 11, 14)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from dpkit.algorithms import data as D
from dpkit.algorithms.admm import decentralised_admm, star_admm
from dpkit.algorithms.centralised import centralised_fit
from dpkit.algorithms.graphs import complete, from_adjacency, random_connected, ring, star
from dpkit.algorithms.losses import L1, L2, Hinge, HuberHinge, Logistic, empirical_gradient, empirical_value
from dpkit.algorithms.partition import partition
from dpkit.algorithms.solvers import LocalObjective, solve


# ----------------------------------------------------------------------------- data


@pytest.mark.slow
def test_adult_variants_dimensions(adult_dir):
    # d = 104 (seed 004 §VI-A, 45,222 complete rows), 105 (seed 001), 124 (a9a layout, seed 002)
    expected = {"104": (45222, 104), "105": (45222, 105), "124": (48842, 124)}
    for variant, shape in expected.items():
        ds = D.load_adult(adult_dir, variant)
        assert ds.X.shape == shape
        assert set(np.unique(ds.y)) == {-1.0, 1.0}
        assert np.all(np.sum(ds.X**2, axis=1) <= 1.0)
        assert np.max(np.abs(ds.X)) <= 1.0
    ds = D.load_adult(adult_dir, "104")
    assert int(np.sum(ds.y > 0)) == 11208  # >50K among the 45,222 complete rows (UCI adult.names)


def test_adult_errors(tmp_path, adult_dir):
    with pytest.raises(FileNotFoundError, match="nope"):
        D.load_adult(tmp_path / "nope")
    bad = tmp_path / "adult"
    bad.mkdir()
    lines = (adult_dir / "adult.data").read_text().splitlines()[:5]
    lines.insert(3, "39, State-gov, 77516, Bachelors")
    (bad / "adult.data").write_text("\n".join(lines) + "\n")
    with pytest.raises(ValueError, match="line 4"):
        D.load_adult(bad, files=("adult.data",))
    del lines[3]
    (bad / "adult.data").write_text("\n".join(lines) + "\n")
    with pytest.raises(FileNotFoundError, match="adult.test"):
        D.load_adult(bad)
    with pytest.raises(ValueError, match="variant"):
        D.load_adult(adult_dir, "41")


def test_libsvm_and_csv_loaders(tmp_path):
    f = tmp_path / "toy.svm"
    f.write_text("+1 1:3 3:4\n-1 2:1\n0 1:1\n")
    ds = D.load_libsvm(f, preprocess=False)
    assert ds.X.tolist() == [[3, 0, 4], [0, 1, 0], [1, 0, 0]] and ds.y.tolist() == [1, -1, -1]
    f.write_text("+1 1:3 3:4\n-1 2:x\n")
    with pytest.raises(ValueError, match="line 2"):
        D.load_libsvm(f)
    c = tmp_path / "toy.csv"
    c.write_text("a,b,label\n1,2,1\n3,4,0\n")
    ds = D.load_csv(c)
    assert ds.feature_names == ("a", "b") and ds.y.tolist() == [1, -1]
    assert np.all(np.linalg.norm(ds.X, axis=1) <= 1.0)
    c.write_text("1,2,1\n3,4\n")
    with pytest.raises(ValueError, match="line 2"):
        D.load_csv(c)
    with pytest.raises(FileNotFoundError, match="missing.csv"):
        D.load_csv(tmp_path / "missing.csv")
    with pytest.raises(FileNotFoundError, match="no/such"):
        D.load_dataset("no/such/path")


def test_builtin_and_synthetic():
    ds = D.load_builtin()
    assert ds.n == 6366 and ds.d == 9 and int(np.sum(ds.y > 0)) == 2053
    a, b = D.make_synthetic(50, 3, rng=1), D.make_synthetic(50, 3, rng=1)
    assert np.array_equal(a.X, b.X) and np.array_equal(a.y, b.y)
    assert np.all(np.linalg.norm(a.X, axis=1) <= 1.0)


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
    assert abs(float(loss.derivative(np.array(z)))) <= loss.c1  # spec 000 §5.1 item 11
    assert 0.0 <= float(loss.second(np.array(z))) <= loss.c3


@pytest.mark.parametrize("loss", [Logistic(), HuberHinge(0.5)])
def test_loss_derivatives_by_finite_differences(loss):
    z = np.linspace(-3, 3, 61) + 0.013
    h = 1e-6
    fd1 = (loss.value(z + h) - loss.value(z - h)) / (2 * h)
    fd2 = (loss.derivative(z + h) - loss.derivative(z - h)) / (2 * h)
    assert np.allclose(loss.derivative(z), fd1, atol=1e-6)
    assert np.allclose(loss.second(z), fd2, atol=1e-4)
    assert np.all(np.abs(loss.derivative(z)) <= loss.c1) and np.all(loss.second(z) <= loss.c3 + 1e-12)


def test_hinge_and_regularisers():
    hinge = Hinge()
    assert hinge.value(np.array([0.0, 2.0])).tolist() == [1.0, 0.0]
    assert hinge.derivative(np.array([0.5, 1.5])).tolist() == [-1.0, 0.0]
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


@pytest.mark.parametrize("method", ["newton", "lbfgs"])
@pytest.mark.parametrize("beta", [1e-2, 1e-6])
def test_solver_reaches_tolerance_and_reports_it(method, beta):
    ds = D.make_synthetic(200, 6, rng=2)
    F = LocalObjective(ds.X, ds.y, Logistic(), L2(), 0.1, np.full(6, 0.05), 0.5, np.ones(6))
    res = solve(F, np.zeros(6), beta, method=method)
    assert res.grad_norm <= beta
    assert abs(res.grad_norm - np.linalg.norm(F.gradient(res.theta))) < 1e-15
    exact = solve(F, np.zeros(6), 1e-12).theta
    assert np.linalg.norm(res.theta - exact) <= beta / F.mu  # strong convexity (spec 000 §5.1 item 10)


def test_solver_rejects_bad_input():
    ds = D.make_synthetic(20, 2, rng=0)
    F = LocalObjective(ds.X, ds.y, Logistic(), L2(), 1.0)
    with pytest.raises(ValueError, match="tol"):
        solve(F, np.zeros(2), 0.0)
    with pytest.raises(ValueError, match="method"):
        solve(F, np.zeros(2), 1e-3, method="sgd")


# ----------------------------------------------------------------------------- ADMM


def test_decentralised_admm_reaches_centralised_optimum():
    ds = D.make_synthetic(400, 5, rng=4)
    parts = partition(ds, 4, rng=0)
    g = ring(4)
    lam = 0.5
    ref = centralised_fit(parts, lam).theta
    short = decentralised_admm(parts, g, lam=lam, eta=0.5, iterations=20)
    res = decentralised_admm(parts, g, lam=lam, eta=0.5, iterations=200)
    h = res.history
    assert max(h["dual_sum"]) < 1e-12  # Σ_i λ_i = 0 at every iteration (spec 000 §5.1 item 14)
    assert h["consensus_gap"][-1] < 1e-6
    err_short = np.max(np.linalg.norm(short.models - ref, axis=1))
    err = np.max(np.linalg.norm(res.models - ref, axis=1))
    assert err < 1e-5 and err < err_short


def test_star_admm_reaches_centralised_optimum():
    ds = D.make_synthetic(300, 4, rng=5)
    parts = partition(ds, 3, rng=0)
    lam = 0.3
    ref = centralised_fit(parts, lam).theta
    res = star_admm(parts, lam=lam, rho=0.5, iterations=150)
    assert max(res.history["dual_sum"][1:]) < 1e-12  # spec 004 F3
    assert np.linalg.norm(res.model - ref) < 1e-6


def test_admm_input_errors():
    ds = D.make_synthetic(40, 2, rng=0)
    parts = partition(ds, 2, rng=0)
    with pytest.raises(ValueError, match="agents"):
        decentralised_admm(parts, ring(3))
    with pytest.raises(ValueError, match="eta"):
        decentralised_admm(parts, ring(2), eta=0.0)
