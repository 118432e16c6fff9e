"""The Gaussian-specific RDP bound for sampling without replacement (Wang, Balle & Kasiviswanathan
2019, arXiv 1808.00087, Thm 27): its forward differences against an independent 1500-digit sum,
soundness against exact Rényi divergences of pairs that the mechanism attains, never above the
generic Thm 9 bound, and never looser than dp_accounting's numbers for the same events
(tests/data/wor_gaussian_dp_accounting.json, written by scripts/precompute/wor_gaussian_dp_accounting.py
in a venv with dp_accounting, which the test venv does not have).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import mpmath
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpkit.accounting import RDPAccountant
from dpkit.accounting import rdp_mechanisms as rm
from dpkit.accounting.events import GaussianEvent, SampledWithoutReplacementEvent, compose, repeat
from dpkit.accounting.rdp_curves import event_rdp
from dpkit.accounting.rdp_without_replacement_gaussian import (
    _log_moments,
    rdp_sampled_without_replacement_gaussian,
)

REFERENCE = json.loads((Path(__file__).resolve().parents[1] / "data" / "wor_gaussian_dp_accounting.json").read_text())

#: dpkit rounds each bound outwards (log terms shifted up by 2⁻⁴⁶ of their size, then the
#: conversion's margin); dp_accounting rounds to nearest. Equal bounds may differ by this much.
OUTWARD = 1e-9


def generic(alpha: int, z: float, gamma: float) -> float:
    return rm.rdp_sampled_without_replacement(alpha, lambda a: rm.rdp_gaussian(a, z), math.inf, gamma)


@pytest.mark.parametrize("z", [0.7, 2.0, 20.0, 1e3])
def test_forward_differences_bound_the_pearson_vajda_moments(z):
    # B(l) = Σ_i (−1)^{l−i} C(l, i) e^{i(i−1)/(2z²)}, summed directly with 1500 digits (the
    # cancellation loses at most l·log10(2) + l²/(2z²)·log10(e) + (l/2)·log10(1/B(2)) ≈ 700 digits here)
    bounds = _log_moments(z)
    with mpmath.workdps(1500):
        c = 1 / (2 * mpmath.mpf(z) ** 2)
        for l in (2, 4, 10, 64, 256):
            exact = mpmath.fsum((-1) ** (l - i) * mpmath.binomial(l, i) * mpmath.exp(c * i * (i - 1)) for i in range(l + 1))
            assert exact > 0
            log_exact = float(mpmath.log(exact))
            # (inf: not evaluated, where e^{l²/(2z²)} is too large and the generic term is smaller)
            assert log_exact <= bounds[l // 2] <= log_exact + 1e-9 * max(1.0, abs(log_exact)) or (
                z < 5 and bounds[l // 2] == math.inf)


def renyi_mixture(alpha: int, z: float, gamma: float, a: float, b: float) -> mpmath.mpf:
    """D_α(P‖Q), P = (1−γ)N(0, z²) + γN(a, z²), Q = (1−γ)N(0, z²) + γN(b, z²), by 20-digit quadrature.

    With |a − b| ≤ 1 this pair is attained: a sum query (sensitivity 1) on n records of which
    one holds a in one dataset and b in its neighbour, the others 0, sampled m of n (γ = m/n)."""
    with mpmath.workdps(20):
        p = lambda x: (1 - gamma) * mpmath.npdf(x, 0, z) + gamma * mpmath.npdf(x, a, z)
        q = lambda x: (1 - gamma) * mpmath.npdf(x, 0, z) + gamma * mpmath.npdf(x, b, z)
        integral = mpmath.quad(lambda x: p(x) ** alpha * q(x) ** (1 - alpha), [-mpmath.inf, 0, 1, mpmath.inf])
        return mpmath.log(integral) / (alpha - 1)


@pytest.mark.parametrize("z, gamma, alpha", [(1.0, 0.5, 2), (1.0, 0.1, 5), (3.0, 0.5, 5), (3.0, 0.1, 2)])
def test_bound_is_above_the_exact_divergence_of_attained_pairs(z, gamma, alpha):
    bound = rdp_sampled_without_replacement_gaussian(alpha, z, gamma)
    for a, b in ((1.0, 0.0), (0.0, 1.0), (0.5, -0.5)):
        assert bound >= float(renyi_mixture(alpha, z, gamma, a, b))


def test_one_sided_pair_matches_its_closed_form():
    # D_α((1−γ)Q + γP ‖ Q) = log Σ_i C(α, i)(1−γ)^{α−i} γ^i e^{i(i−1)/(2z²)} / (α − 1) for integer α:
    # checks the quadrature used above
    z, gamma, alpha = 1.0, 0.5, 6
    with mpmath.workdps(30):
        closed = mpmath.log(mpmath.fsum(mpmath.binomial(alpha, i) * (1 - gamma) ** (alpha - i) * gamma**i
                                        * mpmath.exp(i * (i - 1) / (2 * mpmath.mpf(z) ** 2))
                                        for i in range(alpha + 1))) / (alpha - 1)
    assert abs(renyi_mixture(alpha, z, gamma, 1.0, 0.0) - closed) <= 1e-15


@settings(max_examples=40, deadline=None)
@given(alpha=st.integers(2, 300), z=st.sampled_from([0.5, 0.9, 1.5, 4.0, 30.0]),
       gamma=st.floats(1e-4, 0.9))
def test_never_above_the_generic_bound_nor_the_unsampled_gaussian(alpha, z, gamma):
    value = rdp_sampled_without_replacement_gaussian(alpha, z, gamma)
    assert 0.0 < value <= min(generic(alpha, z, gamma), rm.rdp_gaussian(alpha, z)) * (1 + OUTWARD)


def test_every_moment_is_evaluated_for_large_noise():
    assert all(math.isfinite(v) for v in _log_moments(5.0)) and all(math.isfinite(v) for v in _log_moments(1e20))


def test_tighter_than_the_generic_bound_where_the_gaussian_terms_cancel():
    for alpha in (8, 32, 128):
        assert rdp_sampled_without_replacement_gaussian(alpha, 5.0, 0.01) < 0.9 * generic(alpha, 5.0, 0.01)


@pytest.mark.parametrize("curve", REFERENCE["curves"],
                         ids=lambda c: f"z{c['noise_multiplier']}-m{c['sample_size']}-n{c['population_size']}")
def test_never_looser_than_dp_accounting_at_each_order(curve):
    event = SampledWithoutReplacementEvent(GaussianEvent(curve["noise_multiplier"]), curve["sample_size"],
                                           curve["population_size"])
    for alpha, theirs in zip(curve["orders"], curve["rdp"]):
        assert event_rdp(event, alpha, "replace-one") <= theirs * (1 + OUTWARD)


@pytest.mark.parametrize("ledger", REFERENCE["ledgers"], ids=lambda c: f"z{c['noise_multiplier']}-count{c['count']}")
def test_epsilon_never_looser_than_dp_accounting(ledger):
    event = SampledWithoutReplacementEvent(GaussianEvent(ledger["noise_multiplier"]), ledger["sample_size"],
                                           ledger["population_size"])
    ours = RDPAccountant(neighbouring="replace-one").compose(event, ledger["count"]).get_epsilon(ledger["delta"])
    assert ours.epsilon <= ledger["epsilon"] * (1 + OUTWARD)


def test_composed_gaussians_are_one_gaussian_of_the_combined_noise_multiplier():
    # two Gaussians of z = 2 on the same subset are one of z = √2 (their RDP curves add exactly)
    inner = compose(GaussianEvent(2.0), repeat(GaussianEvent(4.0, 2.0), 1))
    merged = GaussianEvent(math.sqrt(2.0))
    for alpha in (2, 7, 40):
        a = event_rdp(SampledWithoutReplacementEvent(inner, 10, 1000), alpha, "replace-one")
        b = event_rdp(SampledWithoutReplacementEvent(merged, 10, 1000), alpha, "replace-one")
        assert a == pytest.approx(b, rel=1e-12)


def test_large_noise_keeps_a_positive_bound():
    # z = 1e8: the α = 2 term is about 4γ²/(2z²)·... ≈ 4e-20, below the round-off of 1 + it
    value = rdp_sampled_without_replacement_gaussian(2, 1e8, 0.01)
    assert 0.0 < value <= rm.rdp_gaussian(2, 1e8)


@pytest.mark.parametrize("alpha, z, gamma, name", [
    (2.5, 1.0, 0.1, "alpha"), (1, 1.0, 0.1, "alpha"), (3, 0.0, 0.1, "noise_multiplier"),
    (3, math.nan, 0.1, "noise_multiplier"), (3, 1.0, 0.0, "gamma"), (3, 1.0, 1.5, "gamma"),
])
def test_bad_input_is_refused_naming_the_parameter(alpha, z, gamma, name):
    with pytest.raises((ValueError, TypeError), match=name):
        rdp_sampled_without_replacement_gaussian(alpha, z, gamma)
