"""Sparse vector under RDP (Zhu & Wang 2020): curves, dispatch, exact references, autodp, properties."""

import itertools
import math

import mpmath
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpkit.accounting import rdp_mechanisms as rm
from dpkit.accounting.approx_dp import ApproxDPAccountant
from dpkit.accounting.base import UnsupportedEventError
from dpkit.accounting.events import GaussianSparseVectorEvent, SparseVectorEvent, event_from_dict, repeat
from dpkit.accounting.gdp import GDPAccountant
from dpkit.accounting.pld.accountant import PLDAccountant
from dpkit.accounting.rdp import RDPAccountant, event_rdp
from dpkit.accounting.rdp_sparse_vector import (
    log_binomial_upper,
    rdp_gaussian_sparse_vector,
    rdp_laplace_sparse_vector,
    rho_gaussian_sparse_vector,
    rho_laplace_sparse_vector,
)
from dpkit.accounting.tightest import TightestAccountant
from dpkit.accounting.zcdp import ZCDPAccountant, event_rho

ORDERS = (1.5, 2.0, 4.0, 10.0, 40.0)


# --------------------------------------------------------------------------- exact Rényi divergence of small SVTs


def _outputs(k: int, c: int):
    """Every output of SVT on k queries with cut-off c: tuples of 1 (⊤) / 0 (⊥), stopping at the c-th ⊤."""
    out = []
    for length in range(1, k + 1):
        for answers in itertools.product((0, 1), repeat=length):
            tops = sum(answers)
            stopped = tops == c and answers[-1] == 1
            if stopped or (length == k and tops < c):
                out.append(answers)
    return out


def _law(queries, outputs, threshold_density, query_cdf, kinks):
    """P(output) = ∫ p_ρ(z) Π_i [⊤: 1 − F(z − q_i); ⊥: F(z − q_i)] dz, threshold T = 0, by mpmath quadrature."""
    probs = []
    for answers in outputs:
        def integrand(z, answers=answers):
            value = threshold_density(z)
            for q, a in zip(queries, answers):
                f = query_cdf(z - q)
                value *= (1 - f) if a else f
            return value
        points = [-mpmath.inf] + sorted(set(kinks)) + [mpmath.inf]
        probs.append(mpmath.quad(integrand, points))
    return probs


def _renyi(p, q, alpha):
    total = mpmath.fsum(a**alpha * b ** (1 - alpha) for a, b in zip(p, q))
    return float(mpmath.log(total) / (alpha - 1))


def _laplace(scale):
    density = lambda z: mpmath.exp(-abs(z) / scale) / (2 * scale)
    cdf = lambda x: mpmath.mpf(1) / 2 * mpmath.exp(x / scale) if x < 0 else 1 - mpmath.exp(-x / scale) / 2
    return density, cdf


def _gauss(sigma):
    return (lambda z: mpmath.npdf(z, 0, sigma)), (lambda x: mpmath.ncdf(x, 0, sigma))


def _worst_divergence(k, c, threshold, query, orders):
    """max over neighbouring query vectors (q = t·1, q′ = q + signs, Δ = 1; both directions) of D_α."""
    mpmath.mp.dps = 15
    outputs = _outputs(k, c)
    worst = {a: 0.0 for a in orders}
    for t in (-1.0, 1.0):
        base = [t] * k
        p = _law(base, outputs, threshold[0], query[1], [0.0, t])
        for signs in itertools.product((-1.0, 1.0), repeat=k):
            other = [t + s for s in signs]
            q = _law(other, outputs, threshold[0], query[1], [0.0, t] + other)
            for a in orders:
                worst[a] = max(worst[a], _renyi(p, q, a), _renyi(q, p, a))
    return worst


def test_outputs_enumeration_matches_counting():
    # outputs with j < c tops answer all k queries: C(k, j); with c tops the run stops at the last
    for k, c in [(3, 1), (3, 2), (4, 2)]:
        assert len(_outputs(k, c)) == sum(math.comb(k, j) for j in range(c + 1))


@pytest.mark.parametrize("k,c,b1,b2", [(3, 1, 1.0, 2.0), pytest.param(3, 2, 2.0, 3.0, marks=pytest.mark.slow)])
def test_laplace_curve_bounds_exact_divergence(k, c, b1, b2):
    """Exact Rényi divergence of Laplace SVT (threshold Lap(b1), queries Lap(b2), Δ = 1) ≤ the curve."""
    worst = _worst_divergence(k, c, _laplace(b1), _laplace(b2), ORDERS)
    eps1, eps2 = 1.0 / b1, 2.0 * c / b2  # threshold Lap(Δ/ε₁), queries Lap(2cΔ/ε₂)
    for a in ORDERS:
        bound = rdp_laplace_sparse_vector(a, eps1, eps2, c, k)
        assert worst[a] <= bound, (a, worst[a], bound)
    # the instance is not trivial: it needs more than a quarter of the bound at α = 40
    assert worst[40.0] > 0.25 * rdp_laplace_sparse_vector(40.0, eps1, eps2, c, k)


@pytest.mark.parametrize("k,c,s1,s2", [(3, 1, 1.0, 1.5), pytest.param(3, 2, 1.5, 2.0, marks=pytest.mark.slow)])
def test_gaussian_curve_bounds_exact_divergence(k, c, s1, s2):
    worst = _worst_divergence(k, c, _gauss(s1), _gauss(s2), ORDERS)
    for a in ORDERS:
        bound = rdp_gaussian_sparse_vector(a, s1, s2, c, k)
        assert worst[a] <= bound, (a, worst[a], bound)


def test_closed_forms():
    # k = c: every query shifted, no range term: α/(2z₁²) + k·α·4/(2z₂²)
    assert rdp_gaussian_sparse_vector(3.0, 2.0, 4.0, 5, 5) == pytest.approx(3 / 8 + 5 * 3 * 4 / 32, rel=1e-14)
    # c = 1, k large: the range term log k/(α−1) (Zhu & Wang 2020, Thm 8)
    a, k = 5.0, 1000
    expected = a / 2 + math.log(k) / (a - 1) + a * 4 / (2 * 9.0)
    assert rdp_gaussian_sparse_vector(a, 1.0, 3.0, 1, k) == pytest.approx(expected, rel=1e-12)
    assert rdp_gaussian_sparse_vector(a, 1.0, 3.0, 1, k) >= expected
    # Laplace never exceeds its pure ε₁ + ε₂ curve (Lyu, Su & Li 2017)
    for a in ORDERS:
        assert rdp_laplace_sparse_vector(a, 0.3, 0.7, 2, 50) <= rm.rdp_pure_dp(a, 1.0)


def test_log_binomial_upper_rounds_up():
    for n, m in [(10, 3), (10**6, 15), (10**5, 4000), (7, 7)]:
        exact = mpmath.log(mpmath.binomial(n, m))
        assert log_binomial_upper(n, m) >= exact
        assert log_binomial_upper(n, m) <= exact * (1 + 1e-10) + 1e-10


# --------------------------------------------------------------------------- dispatch


def test_accountants_dispatch():
    lap = SparseVectorEvent(0.4, 0.6, cutoff=2, max_queries=20)
    gauss = GaussianSparseVectorEvent(threshold_sigma=4.0, query_sigma=8.0, max_queries=20, cutoff=2, sensitivity=2.0)
    assert event_rdp(gauss, 3.0) == rdp_gaussian_sparse_vector(3.0, 2.0, 4.0, 2, 20)
    assert event_rdp(lap, 3.0) == rdp_laplace_sparse_vector(3.0, 0.4, 0.6, 2, 20)
    assert event_rho(gauss) == rho_gaussian_sparse_vector(2.0, 4.0, 20)
    assert event_rho(lap) == rho_laplace_sparse_vector(0.4, 0.6, 2, 20)
    # the Laplace event is still pure (ε₁ + ε₂)-DP for the PLD and approx accountants
    for accountant in (PLDAccountant(), ApproxDPAccountant()):
        assert accountant.compose(lap).get_epsilon(1e-6).epsilon == pytest.approx(1.0, abs=1e-4)
    # the Gaussian event has no PLD / GDP / approx description: a clean UnsupportedEventError
    for accountant in (PLDAccountant(), GDPAccountant(), ApproxDPAccountant()):
        with pytest.raises(UnsupportedEventError):
            accountant.compose(gauss).get_epsilon(1e-6)
    assert TightestAccountant().compose(gauss).get_epsilon(1e-6).accountant == "rdp"
    assert event_from_dict(gauss.to_dict()) == gauss and event_from_dict(lap.to_dict()) == lap


def test_rdp_composition_beats_pure_composition():
    """Composing many Laplace SVTs under RDP certifies less than ε₁ + ε₂ per run composed as pure DP."""
    run = SparseVectorEvent(0.05, 0.15, cutoff=1, max_queries=10)
    rdp = RDPAccountant().compose(repeat(run, 200)).get_epsilon(1e-6).epsilon
    pure = RDPAccountant().compose(repeat(SparseVectorEvent(0.05, 0.15, cutoff=1), 200)).get_epsilon(1e-6).epsilon
    assert rdp <= pure


def test_validation():
    with pytest.raises(ValueError, match="max_queries"):
        SparseVectorEvent(0.1, 0.1, max_queries=0)
    with pytest.raises(ValueError, match="threshold_sigma"):
        GaussianSparseVectorEvent(threshold_sigma=-1.0, query_sigma=1.0, max_queries=3)
    with pytest.raises(TypeError, match="max_queries"):
        GaussianSparseVectorEvent(threshold_sigma=1.0, query_sigma=1.0, max_queries=None)
    with pytest.raises(ValueError, match="max_queries"):
        rdp_gaussian_sparse_vector(2.0, 1.0, 1.0, 1, None)
    with pytest.raises(ValueError, match="alpha"):
        rdp_laplace_sparse_vector(1.0, 0.1, 0.1)


# --------------------------------------------------------------------------- properties

_orders = st.floats(1.01, 200.0)
_mult = st.floats(0.2, 50.0)
_eps = st.floats(0.01, 5.0)


@settings(max_examples=40, deadline=None)
@given(a=_orders, z1=_mult, z2=_mult, grow=st.floats(1.0, 3.0), c=st.integers(1, 6), k=st.integers(1, 200))
def test_gaussian_monotone_in_noise_cutoff_and_queries(a, z1, z2, grow, c, k):
    base = rdp_gaussian_sparse_vector(a, z1, z2, c, k)
    assert rdp_gaussian_sparse_vector(a, z1 * grow, z2, c, k) <= base
    assert rdp_gaussian_sparse_vector(a, z1, z2 * grow, c, k) <= base
    assert rdp_gaussian_sparse_vector(a, z1, z2, c + 1, k) >= base
    assert rdp_gaussian_sparse_vector(a, z1, z2, c, k + 1) >= base
    assert rdp_gaussian_sparse_vector(a, z1, z2, c, k, monotonic=True) <= base
    assert event_rho(GaussianSparseVectorEvent(z1, z2, k, c)) * a * (1 + 1e-12) >= base  # (B1) at m = k


@settings(max_examples=40, deadline=None)
@given(a=_orders, e1=_eps, e2=_eps, grow=st.floats(1.0, 3.0), c=st.integers(1, 6), k=st.integers(1, 200))
def test_laplace_monotone_and_capped(a, e1, e2, grow, c, k):
    base = rdp_laplace_sparse_vector(a, e1, e2, c, k)
    assert rdp_laplace_sparse_vector(a, e1 * grow, e2, c, k) >= base
    assert rdp_laplace_sparse_vector(a, e1, e2 * grow, c, k) >= base
    assert rdp_laplace_sparse_vector(a, e1, e2, c, k + 1) >= base
    assert base <= rdp_laplace_sparse_vector(a, e1, e2, c) <= rm.rdp_pure_dp(a, e1 + e2)
    assert base <= a * event_rho(SparseVectorEvent(e1, e2, c, k)) * (1 + 1e-12)


# --------------------------------------------------------------------------- autodp


@pytest.mark.compare
@pytest.mark.filterwarnings("ignore::RuntimeWarning", "ignore::UserWarning")
@pytest.mark.parametrize("b,k,c", [(2.0, 10, 1), (0.5, 1000, 1), (5.0, 50, 3), (1.0, 30, 10)])
def test_laplace_not_above_autodp(b, k, c):
    """autodp's LaplaceSVT_Mechanism(b, k, c) charges 1/b for the threshold and 1/b per ⊤: dpkit's
    SparseVectorEvent(1/b, c/b, c, k). Its c > 1 range term c·log(k/c) is below the provable
    log C(k, c); dpkit's curve is compared with autodp's plus that difference."""
    zoo = pytest.importorskip("autodp.mechanism_zoo")
    mech = zoo.LaplaceSVT_Mechanism({"b": b, "k": k, "c": c})
    gap = log_binomial_upper(k, c) - c * math.log(k / c)
    for a in ORDERS:
        ours = rdp_laplace_sparse_vector(a, 1.0 / b, c / b, c, k)
        assert ours <= mech.RenyiDP(a) * (1 + 1e-12) + gap / (a - 1) + 1e-15


@pytest.mark.compare
@pytest.mark.filterwarnings("ignore::RuntimeWarning", "ignore::UserWarning")
@pytest.mark.parametrize("s1,s2,k", [(3.0, 4.0, 20), (1.0, 1.5, 1000), (10.0, 12.0, 5)])
def test_gaussian_c1_not_above_autodp(s1, s2, k):
    """autodp's Gaussian SVT, c = 1 (Thm 8; σ₂ < √3σ₁ so its Prop. 10 branch, which needs query
    assumptions, is off): log k/(α−1) + α/σ₁² + 2α/σ₂²; dpkit charges the threshold α/(2σ₁²)."""
    zoo = pytest.importorskip("autodp.mechanism_zoo")
    mech = zoo.GaussianSVT_Mechanism({"sigma": s1, "sigma_nu": s2, "k": k}, rdp_c_1=True)
    for a in ORDERS:
        assert rdp_gaussian_sparse_vector(a, s1, s2, 1, k) <= mech.RenyiDP(a) * (1 + 1e-12)
    event = GaussianSparseVectorEvent(s1, s2, k)
    assert RDPAccountant().compose(event).get_epsilon(1e-5).epsilon <= mech.get_approxDP(1e-5) * (1 + 1e-9)


@pytest.mark.compare
@pytest.mark.filterwarnings("ignore::RuntimeWarning", "ignore::UserWarning")
@pytest.mark.parametrize("sigma,k,c", [(3.0, 20, 3), (10.0, 500, 10)])
def test_gaussian_cutoff_not_above_autodp_plus_range_gap(sigma, k, c):
    """autodp's c > 1 curve charges α/(2σ²) per noise draw (threshold σ, queries shifted as by Δ):
    dpkit's (σ₁, σ₂) = (σ, 2σ), compared with autodp plus (log C(k,c) − c log(k/c))/(α−1)."""
    zoo = pytest.importorskip("autodp.mechanism_zoo")
    mech = zoo.GaussianSVT_Mechanism({"sigma": sigma, "k": k, "c": c}, rdp_c_1=False)
    gap = log_binomial_upper(k, c) - c * math.log(k / c)
    assert gap > 0
    for a in ORDERS:
        ours = rdp_gaussian_sparse_vector(a, sigma, 2 * sigma, c, k)
        assert ours <= mech.RenyiDP(a) * (1 + 1e-12) + gap / (a - 1)


def test_fewer_queries_than_cutoff_is_a_shorter_run():
    """k < c: at most k ⊤ answers, so SVT(c, k) is SVT(k, k) with the same noise scales."""
    for a in ORDERS:
        # same threshold and query noise: ε₂/c per ⊤ in both
        assert rdp_laplace_sparse_vector(a, 0.2, 0.5, 5, 2) == pytest.approx(
            rdp_laplace_sparse_vector(a, 0.2, 0.2, 2, 2), rel=1e-12)
        assert rdp_gaussian_sparse_vector(a, 2.0, 3.0, 5, 2) == rdp_gaussian_sparse_vector(a, 2.0, 3.0, 2, 2)


def test_order_search_finds_the_global_minimum_of_a_range_term_curve():
    # c > 1: the bound α/(2z²) + log C(k, c)/(α − 1) + c α/(2z²) first falls, then rises in α, so an order
    # search that stops early (as it may for curves nondecreasing in α) would miss its minimum near α ≈ 64.
    # Reference: the standard conversion ε(α) = RDP(α) + log(1/δ)/(α − 1) minimised over a fine grid.
    import numpy as np
    from scipy.special import gammaln

    from dpkit.accounting import GaussianSparseVectorEvent, RDPAccountant

    runs, k, c, z, delta = 100, 1000, 5, 20.0, 1e-5
    log_binomial = gammaln(k + 1) - gammaln(c + 1) - gammaln(k - c + 1)
    alphas = np.geomspace(1.01, 1e4, 200_000)
    standard = np.min(runs * (log_binomial / (alphas - 1) + (c + 1) * alphas / (2 * z * z)) + np.log(1 / delta) / (alphas - 1))
    event = GaussianSparseVectorEvent(threshold_sigma=z, query_sigma=z, max_queries=k, cutoff=c, monotonic=True)
    assert RDPAccountant().compose(event, runs).get_epsilon(delta).epsilon <= standard


@pytest.mark.parametrize("alpha", [5.0, 20.0, 100.0])  # where m = c beats m = k (all queries shifted)
def test_gaussian_range_term_for_cutoff_above_one_is_log_binomial(alpha):
    """c = 4, k = 500: the curve pays log C(k, c)/(α − 1) (the counting argument of the module
    docstring, C(k, c) c-subsets covering the outputs), not autodp's smaller c·log(k/c)/(α − 1).
    Reference: log C(500, 4) in mpmath, the Gaussian terms α/(2z₁²) + c·α·2²/(2z₂²) (Mironov 2017,
    Prop. 7; shift 2 for non-monotonic queries)."""
    z1, z2, c, k = 10.0, 20.0, 4, 500
    log_binomial = float(mpmath.log(mpmath.binomial(k, c)))
    gaussian = alpha / (2 * z1 * z1) + c * alpha * 4 / (2 * z2 * z2)
    value = rdp_gaussian_sparse_vector(alpha, z1, z2, c, k)
    assert value == pytest.approx(gaussian + log_binomial / (alpha - 1), rel=1e-9)
    assert value >= gaussian + log_binomial / (alpha - 1)
    assert value - gaussian > c * math.log(k / c) / (alpha - 1)
