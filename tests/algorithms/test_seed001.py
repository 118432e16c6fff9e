"""Seed 001 (two-phase heterogeneous-privacy ADMM): the testable claims of spec 001 §7."""

from __future__ import annotations

import math

import mpmath as mp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import optimize, special, stats

from dpkit.algorithms import hetero_admm as H
from dpkit.algorithms.data import make_synthetic
from dpkit.algorithms.graphs import random_connected, ring
from dpkit.algorithms.partition import partition

mp.mp.dps = 50


@pytest.mark.parametrize("eps, p", [(0.4, 0.40131), (0.6, 0.35434), (1.0, 0.26894), (2.0, 0.11920)])
def test_flip_probability_table(eps, p):
    assert H.flip_probability(eps) == pytest.approx(p, abs=5e-6)
    assert H.lipschitz_factor(eps) == pytest.approx(float((mp.e ** eps + 1) / (mp.e ** eps - 1)), rel=1e-13)


@pytest.mark.parametrize("eps", [0.4, 1.0])
def test_rr_flip_rate_binomial(eps):
    y = np.ones(200_000)
    flipped = int(np.sum(H.randomize_labels(y, eps, rng=7) != y))
    p = float(1 / (1 + mp.e ** eps))
    assert stats.binomtest(flipped, y.size, p).pvalue > 1e-3  # α = 1e-3


def test_per_record_epsilon_flip_rates():
    """Self-controlled ε (one per record): each group flips at its own 1/(1 + e^ε) (binomial tests,
    α = 1e-3 each), and a scalar ε gives exactly BinaryRandomizedResponse's draws."""
    from dpkit.mechanisms import BinaryRandomizedResponse

    eps = np.repeat([0.3, 1.0, 3.0], 50_000)
    y = np.where(np.arange(eps.size) % 2 == 0, 1.0, -1.0)
    flipped = H.randomize_labels(y, eps, rng=5) != y
    for e in (0.3, 1.0, 3.0):
        group = flipped[eps == e]
        assert stats.binomtest(int(group.sum()), group.size, float(1 / (1 + mp.e ** e))).pvalue > 1e-3
    same = BinaryRandomizedResponse(1.0).sample(y[:1000], size=3, rng=np.random.default_rng(9))
    assert np.array_equal(H.randomize_labels(y[:1000], 1.0, rng=np.random.default_rng(9), size=3), same)


def test_modified_loss_per_record_epsilon_matches_scalar():
    z = np.linspace(-4, 4, 9)
    y = np.where(np.arange(9) % 3 == 0, -1.0, 1.0)
    eps = np.linspace(0.2, 5.0, 9)
    value = H.modified_logistic_loss(z, y, eps)
    slope = H.modified_logistic_loss_derivative(z, y, eps)
    for i in range(9):
        assert value[i] == pytest.approx(float(H.modified_logistic_loss(z[i], y[i], float(eps[i]))), rel=1e-14)
        assert slope[i] == pytest.approx(float(H.modified_logistic_loss_derivative(z[i], y[i], float(eps[i]))),
                                         rel=1e-14)
    with pytest.raises(ValueError):
        H.modified_logistic_loss(z, y, np.array([1.0, 0.0] + [1.0] * 7))


@given(p=st.floats(1e-6, 0.499999))
def test_epsilon_p_round_trip(p):
    assert H.flip_probability(H.binary_rr_epsilon(p)) == pytest.approx(p, rel=1e-9)


def test_likelihood_ratio_is_exactly_e_eps():
    for eps in (0.4, 1.0, 3.0):
        p = H.flip_probability(eps)
        assert (1 - p) / p == pytest.approx(math.exp(eps), rel=1e-12)


@settings(max_examples=80)
@given(z=st.floats(-30, 30), eps=st.floats(0.05, 8), y=st.sampled_from([-1.0, 1.0]))
def test_modified_loss_unbiased_by_enumeration(z, eps, y):
    """E_{y'}[ℓ̃(y', z, ε)] = ℓ(yz): enumerate y' ∈ {y, −y} with probabilities 1 − p, p (mpmath reference)."""
    p = 1 / (1 + mp.e ** eps)
    expected = mp.log(1 + mp.e ** (-mp.mpf(y) * z))
    got = (1 - p) * H.modified_logistic_loss(z, y, eps) + p * H.modified_logistic_loss(z, -y, eps)
    assert float(got) == pytest.approx(float(expected), rel=1e-9, abs=1e-9 * (1 + abs(z) / eps))


def test_modified_loss_unbiased_monte_carlo():
    rng = np.random.default_rng(3)
    z, eps = 0.7, 1.0
    y_noisy = H.randomize_labels(np.ones(400_000), eps, rng)
    vals = H.modified_logistic_loss(z, y_noisy, eps)
    se = vals.std() / math.sqrt(vals.size)
    assert abs(vals.mean() - math.log1p(math.exp(-z))) < 4 * se  # |Z| < 4 at α ≈ 6e-5


@given(z=st.floats(-50, 50), eps=st.floats(0.05, 8), y=st.sampled_from([-1.0, 1.0]))
def test_lipschitz_bound_and_derivative(z, eps, y):
    d = H.modified_logistic_loss_derivative(z, y, eps)
    assert abs(d) <= H.lipschitz_factor(eps) * (1 + 1e-12)
    h = 1e-5 * (1 + abs(z))
    fd = (H.modified_logistic_loss(z + h, y, eps) - H.modified_logistic_loss(z - h, y, eps)) / (2 * h)
    assert d == pytest.approx(fd, rel=1e-5, abs=1e-6 * H.lipschitz_factor(eps))


def test_hessian_is_label_independent():
    z = np.linspace(-6, 6, 25)
    h = 1e-5
    for eps in (0.4, 2.0):
        for y in (-1.0, 1.0):
            second = (H.modified_logistic_loss_derivative(z + h, y, eps) - H.modified_logistic_loss_derivative(z - h, y, eps)) / (2 * h)
            np.testing.assert_allclose(second, special.expit(z) * special.expit(-z), rtol=1e-6, atol=1e-9)


def _parts(n=3, m=30, d=3, seed=0):
    return partition(make_synthetic(n * m, d, rng=seed), n, rng=seed)


def test_non_private_admm_reaches_centralised_optimum():
    """Spec 001 claim 8: V = 0, R = 0, true labels → consensus at argmin Σ_i J_i."""
    parts = _parts()
    g = ring(3)
    a = 0.1
    out = H.run_hetero_admm(parts, g.adjacency, epsilon=None, R=0.0, V=0.0, rho=0.5, a=a, beta=0.2, iterations=400)
    X = np.stack([p.X for p in parts])
    y = np.stack([p.y for p in parts])
    obj = lambda w: np.sum(np.mean(np.logaddexp(0, -y * (X @ w)), axis=1)) + 0.5 * a * w @ w  # noqa: E731
    w_star = optimize.minimize(obj, np.zeros(3), method="BFGS", options={"gtol": 1e-12}).x
    final = out["private"][0, -1]
    assert np.max(np.abs(final - w_star)) < 1e-6
    norms = np.linalg.norm(final, axis=1)
    assert np.max(norms) - np.min(norms) < 1e-6  # Fig. 3(a) metric → 0


def test_dual_sum_invariant_with_noise():
    parts = _parts()
    out = H.run_hetero_admm(parts, random_connected(3, 3, 0).adjacency, epsilon=1.0, R=1.0, V=0.5, rho=0.8,
                            iterations=15, n=3, rng=1)
    assert np.max(np.abs(out["gamma"].sum(axis=1))) < 1e-10


def test_primal_noise_scale():
    """θ_i(t) = w̃_i(t) − w_i(t) ~ N(0, ρ^{t−1}V²I): chi-square test of the variance at every t (α = 1e-3 each,
    Bonferroni over the T tests)."""
    parts = _parts()
    V, rho, T = 0.3, 0.7, 6
    out = H.run_hetero_admm(parts, ring(3).adjacency, epsilon=1.0, R=0.5, V=V, rho=rho, iterations=T, n=400, rng=2)
    theta = out["published"] - out["private"]
    for t in range(T):
        x = theta[:, t].reshape(-1)
        stat = np.sum(x ** 2) / (rho ** t * V * V)
        p = 2 * min(stats.chi2.cdf(stat, x.size), stats.chi2.sf(stat, x.size))
        assert p > 1e-3 / T


def test_leakage_identity_without_noise():
    """Spec 001 claim 9: without θ a neighbour recovers ∇J̄_i(w_i(t+1)) from published values."""
    parts = _parts()
    A = ring(3).adjacency.astype(float)
    beta, a, eps = 0.3, 0.1, 1.0
    out = H.run_hetero_admm(parts, A, epsilon=eps, R=0.0, V=0.0, rho=0.5, a=a, beta=beta, iterations=3, n=1, rng=4)
    w = out["published"][0]
    y_noisy = out["labels"][0]
    X = np.stack([p.X for p in parts])
    deg = A.sum(1)
    gamma1 = beta * (deg[:, None] * w[0] - A @ w[0])  # γ(1) from γ(0) = 0
    g_hat = -gamma1 - beta * (2 * deg[:, None] * w[1] - (deg[:, None] * w[0] + A @ w[0]))
    z = np.einsum("pmd,pd->pm", X, w[1])
    grad = np.einsum("pmd,pm->pd", X, H.modified_logistic_loss_derivative(z, y_noisy, eps)) / X.shape[1] + (a / 3) * w[1]
    np.testing.assert_allclose(g_hat, grad, atol=1e-8)


@pytest.mark.parametrize("T, expected", [(10, 33.25), (50, 2.80e5), (100, 1.96e10)])
def test_gaussian_accounting_diverges(T, expected):
    # spec 001 claim 11: Σ_{t=1}^T ρ^{-(t-1)} at ρ = 0.8
    ref = float(mp.fsum(mp.mpf(0.8) ** (-k) for k in range(T)))
    assert H.phase2_mu(1.0, 1.0, 0.8, T) ** 2 == pytest.approx(ref, rel=1e-9)
    assert ref == pytest.approx(expected, rel=3e-3)


def test_training_reports_growth_and_label_privacy():
    data = make_synthetic(600, 4, rng=0)
    parts = partition(data, 4, rng=0)
    g = random_connected(4, 5, 0)
    res = H.train_hetero_admm(parts, g, epsilon=1.0, R=1.0, V=1.0, rho=0.8, iterations=12, test=data)
    curve = res.history["epsilon_phase2"]
    assert all(b > a for a, b in zip(curve[1:], curve[2:]))  # strictly growing after the first release
    assert res.epsilon_paper == 1.0 and res.guarantees["paper"].method.startswith("seed 001 Proposition 1")
    more_noise = H.train_hetero_admm(parts, g, epsilon=1.0, R=1.0, V=2.0, rho=0.8, iterations=12)
    assert more_noise.epsilon_corrected < res.epsilon_corrected
    assert res.to_dict()["epsilon_corrected"] == pytest.approx(res.epsilon_corrected)


@pytest.mark.parametrize("bad", [dict(epsilon=0.0), dict(rho=1.5), dict(R=-1.0), dict(V=-0.1), dict(beta=0.0)])
def test_invalid_inputs(bad):
    kwargs = dict(epsilon=1.0, R=1.0, V=0.1, rho=0.8, iterations=2)
    kwargs.update(bad)
    with pytest.raises(ValueError):
        H.run_hetero_admm(_parts(), ring(3).adjacency, **kwargs)
