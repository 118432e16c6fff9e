"""Gaussian objective perturbation: the RDP bound holds against the exact Rényi divergence of a
1-D instance (computed by mpmath quadrature of the output densities), both directions."""

import math

import mpmath as mp
import pytest

from dpkit.accounting.events import ObjectivePerturbationEvent, repeat
from dpkit.accounting.rdp_mechanisms import rdp_objective_perturbation
from dpkit.accounting.tightest import TightestAccountant

mp.mp.dps = 30


def _output_log_density(records, mu, sigma):
    """log p(θ) of θ̃ = argmin (1/m) Σ log(1 + e^{−y x θ}) + (μ/2)θ² + bθ, b ~ N(0, σ²): the density
    of b = −F′(θ) times |F″(θ)| (change of variables; F″ > 0)."""
    m = len(records)

    def log_p(theta):
        grad = sum(-y * x / (1 + mp.e ** (y * x * theta)) for x, y in records) / m + mu * theta
        hess = sum(x * x * mp.e ** (y * x * theta) / (1 + mp.e ** (y * x * theta)) ** 2 for x, y in records) / m + mu
        return -grad**2 / (2 * sigma**2) - mp.log(mp.sqrt(2 * mp.pi) * sigma) + mp.log(hess)

    return log_p


def _renyi(log_p, log_q, alpha):
    integrand = lambda t: mp.e ** (alpha * log_p(t) + (1 - alpha) * log_q(t))
    return mp.log(mp.quad(integrand, [-mp.inf, -5, 0, 5, mp.inf])) / (alpha - 1)


@pytest.mark.parametrize("sigma", [0.3, 1.0])
@pytest.mark.parametrize("alpha", [1.5, 4.0, 16.0])
def test_rdp_bound_holds_on_a_worst_case_instance(alpha, sigma):
    mu = 0.2
    common = [(0.7, 1.0), (-0.4, 1.0)]
    D = common + [(1.0, 1.0)]
    D_prime = common + [(1.0, -1.0)]  # replace-one: the gradient at every θ moves the most
    m, c, c3 = 3, 1.0, 0.25
    bound = rdp_objective_perturbation(alpha, sigma / (2 * c / m), math.log1p(c3 / (m * mu)))
    p, q = _output_log_density(D, mu, sigma), _output_log_density(D_prime, mu, sigma)
    assert float(_renyi(p, q, alpha)) <= bound
    assert float(_renyi(q, p, alpha)) <= bound


@pytest.mark.parametrize("alpha, z", [(1.01, 0.5), (2.0, 0.5), (7.5, 0.5), (1.01, 3.0), (7.5, 3.0), (30.0, 3.0),
                                      (2.0, 40.0), (100.0, 40.0)])
def test_rdp_formula_matches_its_definition_by_quadrature(alpha, z):
    """ξ + Δ²/(2σ²) + log E[e^{κ|Z|}]/(α − 1), κ = (α − 1)/z, with the expectation integrated."""
    xi = 0.01
    kappa = mp.mpf(alpha - 1) / z
    mgf = mp.quad(lambda u: 2 * mp.npdf(u) * mp.e ** (kappa * u), [0, mp.inf])
    reference = xi + 1 / (2 * mp.mpf(z) ** 2) + mp.log(mgf) / (alpha - 1)
    assert rdp_objective_perturbation(alpha, z, xi) == pytest.approx(float(reference), rel=1e-10)


def test_more_noise_never_costs_more():
    small = ObjectivePerturbationEvent(sigma=1.0, sensitivity=0.01, jacobian=1e-3)
    large = ObjectivePerturbationEvent(sigma=2.0, sensitivity=0.01, jacobian=1e-3)
    eps = [TightestAccountant("replace-one").compose(repeat(e, 20)).get_epsilon(1e-5).epsilon for e in (small, large)]
    assert eps[1] < eps[0]
