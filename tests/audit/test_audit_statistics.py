"""Clopper–Pearson bounds, the ε lower bound and the p-value of a claim (independent references)."""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy import stats

from dpkit.audit.statistics import (
    ceiling_epsilon,
    claim_p_value,
    cp_lower,
    cp_upper,
    detectable_epsilon,
    epsilon_lower_bound,
    logit_cp_lower,
    poisson_claim_p_value,
    poisson_delta_allowance,
    poisson_epsilon_lower_bound,
    poisson_sample_mean,
    samples_to_refute,
)


@pytest.mark.parametrize("n", [1, 10, 1000])
@pytest.mark.parametrize("alpha", [0.05, 0.001])
def test_closed_forms_at_the_ends(n, alpha):
    # k = 0: upper bound solves (1 - p)^n = alpha; k = n: lower bound solves p^n = alpha
    assert cp_upper(0, n, alpha) == pytest.approx(1 - alpha ** (1 / n), rel=1e-10)
    assert cp_lower(n, n, alpha) == pytest.approx(alpha ** (1 / n), rel=1e-10)
    assert cp_lower(0, n, alpha) == 0.0 and cp_upper(n, n, alpha) == 1.0


@pytest.mark.parametrize("k,n", [(1, 20), (7, 50), (300, 1000)])
def test_bounds_invert_the_binomial_tail(k, n):
    # mpmath at 50 digits: P[Bin(n, lo) >= k] = alpha and P[Bin(n, up) <= k] = alpha
    mpmath.mp.dps = 50
    alpha = 0.025
    lo, up = cp_lower(k, n, alpha), cp_upper(k, n, alpha)

    def tail_ge(p):
        return mpmath.fsum(mpmath.binomial(n, j) * mpmath.mpf(p) ** j * (1 - mpmath.mpf(p)) ** (n - j) for j in range(k, n + 1))

    assert float(tail_ge(lo)) == pytest.approx(alpha, rel=1e-7)
    assert float(1 - tail_ge(up) + mpmath.binomial(n, k) * mpmath.mpf(up) ** k * (1 - mpmath.mpf(up)) ** (n - k)) == pytest.approx(alpha, rel=1e-7)


def test_epsilon_lower_bound_formula():
    a = 0.05
    expected = math.log((cp_lower(900, 1000, a / 2) - 0.01) / cp_upper(100, 1000, a / 2))
    assert epsilon_lower_bound(900, 1000, 100, 1000, 0.01, a) == pytest.approx(expected, rel=1e-12)
    assert epsilon_lower_bound(0, 1000, 0, 1000, 0.0, a) == -math.inf


def test_ceiling_matches_support_boundary_closed_form():
    # every one of the (capped) m Poisson outputs of D inside, none of D': θ_L = (α − 1e-16)^(1/m)
    n, a = 10_000, 0.05
    lo = (a - 1e-16) ** (1 / n)
    assert ceiling_epsilon(n, 0.95) == pytest.approx(math.log(lo / (1 - lo)), rel=1e-9)
    assert ceiling_epsilon(10 * n) > ceiling_epsilon(n)


@pytest.mark.parametrize("x,k2,alpha", [(1, 0, 0.05), (27, 10, 0.05), (272, 100, 0.0125), (2718, 1000, 1e-6),
                                        (5, 300, 0.3)])
def test_logit_bound_inverts_the_conditional_binomial_tail(x, k2, alpha):
    # mpmath at 40 digits: Pr[Bin(x + k2, θ_L) ≥ x] = alpha at θ_L = e^b/(1 + e^b)
    b = float(logit_cp_lower(x, k2, alpha))
    with mpmath.workdps(40):
        theta = mpmath.e ** b / (1 + mpmath.e ** b)
        t = x + k2
        tail = mpmath.betainc(x, t - x + 1, 0, theta, regularized=True)  # Pr[Bin(t, θ) ≥ x]
        assert float(tail) == pytest.approx(alpha, rel=1e-8)


@pytest.mark.parametrize("mu2,eps,delta_mass", [(3.0, 0.5, 0.0), (12.0, 1.0, 0.0), (6.0, 1.0, 4.0), (0.5, 2.0, 1.0)])
def test_poisson_bound_has_its_level_at_the_boundary(mu2, eps, delta_mass):
    # exact size under H0 at its boundary, μ1 = e^ε μ2 + λδ (λ = 1000 outputs per input, δ = mass/λ): the sum of
    # Pr[K1 = k1] Pr[K2 = k2] over the counts whose level-a bound exceeds ε is at most a (counts to 150: tails
    # below 1e-30)
    a, lam = 0.1, 1000.0
    mu1 = math.exp(eps) * mu2 + delta_mass
    ks = np.arange(150)
    w1, w2 = stats.poisson.pmf(ks, mu1), stats.poisson.pmf(ks, mu2)
    size = sum(w1[i] * w2[j] for i in ks for j in ks
               if poisson_epsilon_lower_bound(int(i), int(j), lam, delta_mass / lam, a) > eps)
    assert 0.0 < size <= a


def test_poisson_bound_refuses_bad_arguments():
    for args, name in [((-1, 2, 10.0, 0.0, 0.05), "k1"), ((1, 2, float("nan"), 0.0, 0.05), "mean"),
                       ((1, 2, 10.0, 1.5, 0.05), "delta"), ((1, 2, 10.0, 0.0, 1.0), "alpha")]:
        with pytest.raises(ValueError, match=name):
            poisson_epsilon_lower_bound(*args)
    with pytest.raises(TypeError, match="k2"):
        poisson_epsilon_lower_bound(1, 2.5, 10.0, 0.0, 0.05)


def test_delta_allowance_is_the_smallest_quantile():
    for mass, a in [(0.3, 0.05), (40.0, 0.0025), (1e4, 1e-9)]:
        b = poisson_delta_allowance(mass, a)
        assert stats.poisson.sf(b, mass) <= a < stats.poisson.sf(b - 1, mass)


@given(k1=st.integers(0, 5000), k2=st.integers(0, 5000), delta=st.sampled_from([0.0, 1e-4]),
       alpha=st.floats(1e-6, 0.5))
def test_poisson_bound_is_monotone(k1, k2, delta, alpha):
    b = poisson_epsilon_lower_bound(k1, k2, 1e5, delta, alpha)
    assert poisson_epsilon_lower_bound(k1 + 1, k2, 1e5, delta, alpha) >= b
    assert poisson_epsilon_lower_bound(k1, k2 + 1, 1e5, delta, alpha) <= b
    assert poisson_epsilon_lower_bound(k1, k2, 1e5, delta, min(2 * alpha, 0.9)) >= b
    assert not math.isnan(b)


@given(k1=st.integers(0, 500), k2=st.integers(0, 500), eps=st.floats(0.0, 3.0), alpha=st.floats(1e-4, 0.5))
def test_poisson_p_value_is_dual_to_the_bound(k1, k2, eps, alpha):
    p = poisson_claim_p_value(k1, k2, 1e4, eps, 1e-4, 1e-16, alpha_cap=alpha)
    assert (p <= alpha) == (poisson_epsilon_lower_bound(k1, k2, 1e4, 1e-4, alpha, 1e-16) > eps)
    assert 0.0 < p <= 1.0


@given(k1=st.integers(0, 500), k2=st.integers(0, 500), eps=st.floats(0.0, 3.0), alpha=st.floats(1e-4, 0.5))
def test_p_value_is_dual_to_the_bound(k1, k2, eps, alpha):
    n = 500
    p = claim_p_value(k1, n, k2, n, eps, 0.0, alpha_cap=alpha)
    refuted = epsilon_lower_bound(k1, n, k2, n, 0.0, alpha) > eps
    assert (p <= alpha) == refuted
    assert 0.0 < p <= 1.0


def test_p_value_is_valid_under_the_null():
    # Two identical Bernoulli(0.3) samples (eps = 0 holds): the level-a test (p <= a iff the bound
    # exceeds 0, by the duality test above) rejects with probability <= a; exact enumeration over counts
    n, a = 60, 0.1
    pmf = stats.binom.pmf(range(n + 1), n, 0.3)
    size = sum(pmf[i] * pmf[j] for i in range(n + 1) for j in range(n + 1)
               if epsilon_lower_bound(i, n, j, n, 0.0, a) > 0.0)
    assert size <= a


def _bounds(rng, p1, p2, m, alpha, size):
    """Bounds (δ = 0) of ``size`` simulated confirmations as the audit runs them: ``N ~ Poisson(λ)``
    outputs per input capped at ``m``, ``K ~ Bin(N, p)``, the conditional bound at ``alpha``."""
    mean, spent = poisson_sample_mean(m)
    n = np.minimum(rng.poisson(mean, (size, 2)), m)
    return logit_cp_lower(rng.binomial(n[:, 0], p1), rng.binomial(n[:, 1], p2), alpha - spent)


def test_detectable_epsilon_is_detected_with_the_stated_probability():
    # simulate the confirmation counts at the returned epsilon: the level-alpha bound must exceed the
    # claim in >= confidence of the runs (one-sided binomial test at 0.01 on 2000 seeded runs)
    q, m, claim, conf = 0.02, 200_000, 1.0, 0.95
    x = detectable_epsilon(q, m, claim, 0.0, conf)
    rng = np.random.default_rng(0)
    hits = int(np.sum(_bounds(rng, math.exp(x) * q, q, m, 1 - conf, 2000) > claim))
    assert stats.binom.cdf(hits, 2000, conf) >= 0.01, hits
    # and a ratio well below it is not detected that often
    low = int(np.sum(_bounds(rng, math.exp(claim + 0.5 * (x - claim)) * q, q, m, 1 - conf, 2000) > claim))
    assert low < hits


def test_samples_to_refute_brackets_the_median_refutation_size():
    # at the predicted size the bound at expected counts crosses the claim: about half the runs
    # refute; at 4x the size most do, at a quarter few do (binomial tests at 0.01, 1000 seeded runs)
    p1, claim = 0.01, 1.0
    p2 = p1 * math.exp(-1.6)
    need = samples_to_refute(p1, p2, claim)
    rng = np.random.default_rng(1)

    def rate(m):
        return int(np.sum(_bounds(rng, p1, p2, m, 0.05, 1000) > claim))

    assert stats.binom.sf(rate(4 * need) - 1, 1000, 0.5) < 0.01  # more than half refute
    assert stats.binom.cdf(rate(need // 4), 1000, 0.5) < 0.01  # fewer than half refute
