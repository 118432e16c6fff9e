"""Randomized response: exact ε, output laws, the unbiased label loss of Wang et al. (2020)."""

from __future__ import annotations

import math

import mpmath as mp
import numpy as np
import pytest
from _mech_stats import ALPHA, chisquare_pvalue
from hypothesis import given
from hypothesis import strategies as st
from scipy import stats

from dpkit.accounting.approx_dp import ApproxDPAccountant
from dpkit.mechanisms import (
    BinaryRandomizedResponse,
    RandomizedResponse,
    binary_rr_epsilon,
    flip_probability,
    grr_epsilon,
    modified_logistic_loss,
    modified_logistic_loss_derivative,
    unbiased_label_loss,
)


@pytest.mark.parametrize("epsilon,p", [(0.4, 0.40131), (0.6, 0.35434), (1.0, 0.26894), (2.0, 0.11920)])
def test_flip_probability_matches_spec_table(epsilon, p):
    """Wang et al. 2020, Definition 2: flip probability p = 1/(1 + e^ε) (values computed from it)."""
    assert flip_probability(epsilon) == pytest.approx(p, abs=5e-6)


@given(st.floats(min_value=1e-6, max_value=30.0))
def test_binary_rr_exact_ratio(epsilon):
    rr = BinaryRandomizedResponse(epsilon)
    probs_pos = rr.output_probabilities(1)
    probs_neg = rr.output_probabilities(-1)
    ratio = max(probs_pos[1] / probs_neg[1], probs_neg[-1] / probs_pos[-1])
    assert ratio == pytest.approx(math.exp(epsilon), rel=1e-9)
    assert binary_rr_epsilon(rr.flip_probability) == pytest.approx(epsilon, rel=1e-9, abs=1e-12)


@given(st.floats(min_value=1e-3, max_value=20.0), st.integers(min_value=2, max_value=50))
def test_grr_exact_ratio(epsilon, k):
    rr = RandomizedResponse(epsilon, k)
    a, b = rr.output_probabilities(0), rr.output_probabilities(k - 1)
    with mp.workdps(30):
        expected = mp.exp(epsilon)
    assert np.max(a / b) == pytest.approx(float(expected), rel=1e-9)
    assert np.min(a / b) == pytest.approx(float(1 / expected), rel=1e-9)
    assert a.sum() == pytest.approx(1.0, rel=1e-12)
    assert grr_epsilon(rr.keep_probability, k) == pytest.approx(epsilon, rel=1e-9)


def test_binary_rr_law():
    rr = BinaryRandomizedResponse(1.0, labels=(0, 1))
    out = rr.sample(np.array([0, 1]), size=100_000, rng=7)
    p = flip_probability(1.0)
    assert stats.binomtest(int((out[:, 0] == 1).sum()), out.shape[0], p).pvalue > ALPHA
    assert stats.binomtest(int((out[:, 1] == 0).sum()), out.shape[0], p).pvalue > ALPHA


def test_grr_law_chisquare():
    rr = RandomizedResponse(0.8, k=5)
    out = rr.sample(3, size=60_000, rng=12)
    counts = np.bincount(out, minlength=5)
    assert chisquare_pvalue(counts, rr.output_probabilities(3)) > ALPHA


def test_rr_events():
    assert ApproxDPAccountant().compose(BinaryRandomizedResponse(1.3).event).get_epsilon(1e-9).epsilon <= 1.3 * (1 + 1e-12)
    assert RandomizedResponse(2.0, 7).event.k == 7
    assert binary_rr_epsilon(0.25) == pytest.approx(math.log(3))  # ε = ln((1 − p)/p) (Warner 1965)


def test_unbiased_loss_is_unbiased_and_matches_eq19():
    logistic = lambda z, y: np.logaddexp(0.0, -y * z)  # noqa: E731
    z = np.linspace(-5, 5, 41)
    for epsilon in (0.4, 1.0, 2.0):
        p = flip_probability(epsilon)
        for y in (-1, 1):
            expectation = (1 - p) * unbiased_label_loss(logistic, z, y, p) + p * unbiased_label_loss(logistic, z, -y, p)
            assert np.allclose(expectation, logistic(z, y), rtol=1e-10, atol=1e-12)
            # eq. (19) form [e^ε ℓ(ỹ) − ℓ(−ỹ)]/(e^ε − 1), evaluated independently with mpmath
            ref = [
                float((mp.e**epsilon * mp.log(1 + mp.e ** (-y * zi)) - mp.log(1 + mp.e ** (y * zi))) / (mp.e**epsilon - 1))
                for zi in z
            ]
            assert np.allclose(modified_logistic_loss(z, y, epsilon), ref, rtol=1e-12, atol=1e-12)
            assert np.allclose(unbiased_label_loss(logistic, z, y, p), ref, rtol=1e-9, atol=1e-10)


def test_modified_logistic_derivative_by_finite_difference():
    z = np.linspace(-4, 4, 17)
    h = 1e-6
    for y in (-1, 1):
        fd = (modified_logistic_loss(z + h, y, 0.7) - modified_logistic_loss(z - h, y, 0.7)) / (2 * h)
        assert np.allclose(modified_logistic_loss_derivative(z, y, 0.7), fd, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize(
    "build,error",
    [
        (lambda: BinaryRandomizedResponse(0.0), ValueError),
        (lambda: BinaryRandomizedResponse(1.0, labels=(1, 1)), ValueError),
        (lambda: BinaryRandomizedResponse(1.0).sample([0, 1]), ValueError),
        (lambda: binary_rr_epsilon(0.5), ValueError),
        (lambda: RandomizedResponse(1.0, k=1), ValueError),
        (lambda: RandomizedResponse(1.0, k=3).sample(3), ValueError),
        (lambda: RandomizedResponse(1.0, k=3).sample(1.0), ValueError),
        (lambda: grr_epsilon(0.2, 4), ValueError),
        (lambda: unbiased_label_loss(lambda z, y: z, 0.0, 1, 0.5), ValueError),
        (lambda: unbiased_label_loss(lambda z, y: z, 0.0, 0, 0.1), ValueError),
        (lambda: modified_logistic_loss(0.0, 2, 1.0), ValueError),
    ],
)
def test_rr_bad_inputs(build, error):
    with pytest.raises(error):
        build()
