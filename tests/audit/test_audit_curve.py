"""The Gaussian trade-off route for δ > 0: μ bound, ε at δ, power at 10⁷ samples, false-alarm rate.

References are independent of dpkit: the Gaussian privacy profile
δ(ε) = Φ(μ/2 − ε/μ) − e^ε Φ(−μ/2 − ε/μ) (Balle & Wang 2018, Thm. 8; Dong et al. 2022, Cor. 2.13)
in 50-digit mpmath, and σ calibrated on it by mpmath root finding (the analytic Gaussian).
"""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest
from scipy import stats

from dpkit.audit import audit
from dpkit.audit.curve import GAUSSIAN_ASSUMPTION, gaussian_epsilon_lower_bound, mu_lower_bound

DELTA = 1e-5


def _delta_mp(mu, eps):
    mpmath.mp.dps = 50
    mu, eps = mpmath.mpf(mu), mpmath.mpf(eps)
    return mpmath.ncdf(mu / 2 - eps / mu) - mpmath.exp(eps) * mpmath.ncdf(-mu / 2 - eps / mu)


def _epsilon_mp(mu, delta):
    return float(mpmath.findroot(lambda e: _delta_mp(mu, e) - delta, (0.0, 60.0), solver="bisect"))


def _sigma_mp(eps, delta):
    """Analytic-Gaussian σ for sensitivity 1: δ(ε) of μ = 1/σ equals δ (rounded up: never less noise)."""
    mu = mpmath.findroot(lambda m: _delta_mp(m, eps) - delta, (1e-3, 20.0), solver="bisect")
    return float(1 / mu) * (1 + 1e-12)


class GaussianSum:
    """sum(D) + N(0, σ²): a picklable Gaussian mechanism of sensitivity 1."""

    def __init__(self, sigma):
        self.sigma = sigma

    def __call__(self, db, n, rng):
        return np.sum(db) + rng.normal(scale=self.sigma, size=n)


PAIR = [([0.0], [1.0])]


def test_mu_bound_of_exact_threshold_frequencies_tends_to_mu():
    # N(μ, 1) vs N(0, 1), any threshold t: Φ⁻¹(P) − Φ⁻¹(Q) = μ exactly; with n = 10^12 the CP
    # widths vanish, so the bound approaches μ from below at every threshold
    mu, n = 0.8, 10**12
    for t in (-1.0, 0.3, 2.5):
        k1, k2 = int(stats.norm.sf(t - mu) * n), int(stats.norm.sf(t) * n)
        lo = mu_lower_bound(k1, n, k2, n, 0.05)
        assert mu - 1e-4 < lo <= mu


def test_epsilon_at_delta_matches_mpmath_profile():
    mu, n = 0.5, 10**12
    k1, k2 = int(stats.norm.sf(0.25 - mu) * n), int(stats.norm.sf(0.25) * n)
    lo = mu_lower_bound(k1, n, k2, n, 0.05)
    eps = gaussian_epsilon_lower_bound(k1, n, k2, n, DELTA, 0.05)
    assert eps == pytest.approx(_epsilon_mp(lo, DELTA), rel=1e-8)
    assert eps <= _epsilon_mp(mu, DELTA)
    assert gaussian_epsilon_lower_bound(0, 100, 50, 100, DELTA, 0.05) == -math.inf


@pytest.mark.slow
def test_gaussian_route_reaches_095_of_the_true_epsilon_at_default_budget():
    # Power: σ from the analytic Gaussian (Balle & Wang 2018, Thm 8) at (1, 1e-5); the certified single-event
    # bound can reach ~0.85 at 10^7 samples, the Gaussian route >= 0.95
    sigma = _sigma_mp(1.0, DELTA)
    true = _epsilon_mp(1 / sigma, DELTA)
    r = audit(GaussianSum(sigma), PAIR, claimed_epsilon=1.0, claimed_delta=DELTA, rng=0, assumption="gaussian")
    assert 0.95 * true <= r.epsilon_lower_bound <= true
    assert not r.violation and r.assumption == GAUSSIAN_ASSUMPTION
    assert "nasr2023tight" in r.references and r.witness["mu_lower_bound"] <= 1 / sigma


def test_gaussian_route_false_alarm_rate_is_at_most_alpha():
    # 100 seeded audits of a Gaussian mechanism exactly at its claim (σ from the analytic
    # Gaussian, true ε = claim): flags must not exceed the Binomial(100, α) allowance
    runs, confidence = 100, 0.9
    sigma = _sigma_mp(1.0, DELTA)
    flags = sum(audit(GaussianSum(sigma), PAIR, claimed_epsilon=1.0, claimed_delta=DELTA, confidence=confidence,
                      samples=4_000, rng=seed, assumption="gaussian").violation for seed in range(runs))
    # H0: flag rate <= 1 - confidence; rejected at level 0.01 if P[Bin(runs, 1 - c) >= flags] < 0.01
    assert stats.binom.sf(flags - 1, runs, 1 - confidence) >= 0.01, flags


def test_gaussian_route_flags_too_little_noise():
    sigma = _sigma_mp(2.0, DELTA)  # calibrated for ε = 2, claimed ε = 1
    r = audit(GaussianSum(sigma), PAIR, claimed_epsilon=1.0, claimed_delta=DELTA, samples=400_000, rng=0,
              assumption="gaussian")
    assert r.violation and r.p_value <= 0.05
    assert 1.0 < r.epsilon_lower_bound <= _epsilon_mp(1 / sigma, DELTA)


@pytest.mark.parametrize("kwargs,match", [
    (dict(assumption="laplace"), "assumption"),
    (dict(assumption="gaussian", claimed_delta=0.0), "claimed_delta"),
    (dict(assumption="gaussian", sequential=True), "sequential"),
])
def test_gaussian_route_arguments(kwargs, match):
    args = dict(claimed_epsilon=1.0, claimed_delta=DELTA, samples=100_000)
    args.update(kwargs)
    with pytest.raises(ValueError, match=match):
        audit(GaussianSum(3.0), PAIR, **args)
