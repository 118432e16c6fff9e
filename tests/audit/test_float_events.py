"""Floating point as executed: unreachable outputs found exactly, never claimed for clean samplers.

The reference for exactness is a mechanism whose reachable sets are known in closed form:
``c + 8U`` with ``U = k·2⁻⁵³`` (exact: a power-of-two product) on ``c = 0`` gives the
multiples of 2⁻⁵⁰ in [0, 8); on ``c = 2⁻⁵¹`` it gives the odd multiples of 2⁻⁵¹ below 4 and,
after round-half-even, the multiples of 2⁻⁴⁹ in [4, 8). So an output of ``c = 0`` is
unreachable from ``c = 2⁻⁵¹`` with probability 3/4, and one of ``c = 2⁻⁵¹`` from ``c = 0``
with probability 1/2.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from dpkit.audit import audit, ziggurat
from dpkit.audit.float_events import (
    UNREACHABLE_MASS,
    FloatWitness,
    crafted_generator,
    find_float_witness,
    float_reachability,
)
from dpkit.mechanisms.gaussian import GaussianMechanism
from dpkit.mechanisms.snapping import SnappingMechanism

D = np.array([0.0, 1, 0, 1, 1, 0, 1, 0, 0, 1])
D_PRIME = np.r_[1.0, D[1:]]
EPS = 0.3
SCALE = 1.0 / (EPS * D.size)  # Laplace mean of records in [0, 1]: sensitivity 1/n


def laplace_mean(db, n, rng):
    x = np.asarray(db, dtype=float)
    return x.mean() + rng.laplace(0.0, 1.0 / (EPS * x.size), size=n)


def dyadic_uniform(db, n, rng):
    return float(np.asarray(db, dtype=float)[0]) + 8.0 * rng.random(n)


def _binomial_interval(n, p, alpha=1e-6):
    return stats.binom.ppf(alpha / 2, n, p), stats.binom.isf(alpha / 2, n, p)


def test_reachability_matches_closed_form():
    n = 3000
    result = float_reachability(dyadic_uniform, [([0.0], [2.0**-51])], samples=2 * n, rng=3)
    assert result.analysed == (0,) and result.skipped == ()
    (_, forward, backward, per_input), = result.unreachable
    assert per_input == n
    lo, hi = _binomial_interval(n, 0.75)
    assert lo <= forward <= hi
    lo, hi = _binomial_interval(n, 0.5)
    assert lo <= backward <= hi
    w = result.witness
    assert not w.reverse and w.count_first == forward and w.count_second == 0
    multiple = w.value / 2.0**-50  # the witness is an output of c = 0 that c = 2^-51 cannot give
    assert multiple == int(multiple) and (w.value < 4.0 or int(multiple) % 2 == 1)


def test_numpy_laplace_mean_is_flagged():
    w = find_float_witness(laplace_mean, [(D, D_PRIME)], samples=8000, rng=11)
    assert isinstance(w, FloatWitness)
    # Mironov 2012: noise values b·ln(2U) are spaced ≈ b·2^-52·e^{|z|/b}, wider than the doubles
    # near the output once |z| exceeds a few b, i.e. for a sizeable share of outputs
    assert w.count >= 0.2 * w.samples
    assert (w.count_second if not w.reverse else w.count_first) == 0
    # the value really is an output of the source input: it lies in the support of its noise
    centre = (D_PRIME if w.reverse else D).mean()
    assert abs(w.value - centre) < 40 * SCALE
    assert w.epsilon_lower_bound(delta=1e-6) > 30
    assert "no uniform draw" in w.describe() and float.hex(w.value) in w.describe()


def test_epsilon_bound_is_clopper_pearson_over_the_unreachable_mass():
    w = FloatWitness(pair_index=0, value=0.5, count_first=300, count_second=0, samples=1000)
    p_low = stats.beta.ppf(0.05, 300, 701)  # one-sided CP lower bound at 95 %
    assert w.probability_lower(0.95) == pytest.approx(p_low, rel=1e-9)
    expected = math.log(p_low - 0.01) - math.log(2.0**-53)
    assert w.epsilon_lower_bound(delta=0.01) == pytest.approx(expected, rel=1e-12)
    assert w.epsilon_lower_bound(delta=0.01) <= expected
    assert w.epsilon_lower_bound(delta=0.5) == 0.0
    assert UNREACHABLE_MASS == 2.0**-53
    with pytest.raises(ValueError, match="delta"):
        w.epsilon_lower_bound(delta=1.0)


def snapped_single_uniform(db, n, rng, lattice=1.0, bound=20.0):
    """Laplace mean rounded to multiples of a power of two and clamped: one uniform per output."""
    noisy = np.asarray(db, dtype=float).mean() + rng.laplace(0.0, SCALE, size=n)
    return np.clip(np.round(noisy / lattice) * lattice, -bound, bound)


def test_snapped_outputs_are_all_reachable():
    result = float_reachability(snapped_single_uniform, [(D, D_PRIME)], samples=6000, rng=5)
    assert result.analysed == (0,)  # analysed, and found clean (not merely skipped)
    assert result.witness is None and result.unreachable == ((0, 0, 0, 3000),)


def test_dpkit_snapping_mechanism_is_not_flagged():
    mech = SnappingMechanism.from_epsilon(EPS, bound=10.0, sensitivity=0.1)
    result = float_reachability(lambda db, n, rng: mech.sample(np.mean(db), size=n, rng=rng), [(D, D_PRIME)],
                                samples=2000, rng=5)
    # its sampler draws a geometric exponent and 52 mantissa bits: not one double per output
    assert result.witness is None and result.analysed == ()
    assert "32-bit words" in result.skipped[0][1]


def discrete_laplace(db, n, rng, epsilon=0.5):
    """Two-sided geometric noise, P(Z = k) ∝ q^|k| (q = e^-ε), by inverse CDF of one uniform:
    F(k) = q^-k/(1+q) for k < 0 and 1 − q^(k+1)/(1+q) for k ≥ 0. Integer outputs, full support."""
    u = rng.random(n)
    q = math.exp(-epsilon)
    with np.errstate(divide="ignore"):
        negative = np.ceil(-np.log(u * (1 + q)) / math.log(q))
        positive = np.maximum(0.0, np.ceil(np.log((1 - u) * (1 + q)) / math.log(q) - 1))
    return float(np.sum(db)) + np.where(u <= q / (1 + q), negative, positive)


def test_discrete_mechanism_is_not_flagged():
    result = float_reachability(discrete_laplace, [([0, 1, 1], [1, 1, 1])], samples=4000, rng=2)
    assert result.analysed == (0,) and result.witness is None
    assert result.unreachable == ((0, 0, 0, 2000),)
    # positive control: the same noise on a sum divided by 3 gives outputs 2/3 + k and 1 + k, which the other input
    # cannot give: the same analyser finds them
    shifted = float_reachability(lambda db, n, rng: discrete_laplace(np.divide(db, 3.0), n, rng),
                                 [([0, 1, 1], [1, 1, 1])], samples=4000, rng=2)
    assert shifted.witness is not None and shifted.unreachable == ((0, 2000, 2000, 2000),)
    draws = discrete_laplace([0], 200_000, np.random.default_rng(0))  # the sampler is the law it claims
    q = math.exp(-0.5)
    for k in (-2, 0, 3):
        p = (1 - q) / (1 + q) * q ** abs(k)
        lo, hi = _binomial_interval(draws.size, p)
        assert lo <= np.count_nonzero(draws == k) <= hi


def test_vector_outputs_are_checked_per_coordinate():
    def histogram(db, n, rng):
        return np.asarray(db, dtype=float) + rng.laplace(0.0, 2.0, size=(n, 3))

    result = float_reachability(histogram, [([0.3, 1.0, 2.0], [1.3, 1.0, 2.0])], samples=2000, rng=4)
    assert result.analysed == (0,)
    assert result.witness is not None and result.witness.coordinate == 0


def test_gaussian_mechanism_is_not_analysable():
    mech = GaussianMechanism.from_epsilon_delta(1.0, 1e-5, sensitivity=0.1)
    result = float_reachability(lambda db, n, rng: mech.sample(np.mean(db), size=n, rng=rng), [(D, D_PRIME)],
                                samples=2000, rng=1)
    # numpy's ziggurat reads bit fields of a 64-bit word and may reject: not (A), so no claim
    assert result.witness is None and result.analysed == () and len(result.skipped) == 1
    assert "not one double (2 words) per coordinate" in result.skipped[0][1]  # skipped for the reason above


def test_mechanism_with_its_own_randomness_is_skipped():
    def own_rng(db, n, rng):
        return np.mean(db) + rng.laplace(size=n) + np.random.default_rng().random(n)

    result = float_reachability(own_rng, [(D, D_PRIME)], samples=200, rng=1)
    assert result.witness is None and "different outputs" in result.skipped[0][1]


def test_bad_arguments():
    with pytest.raises(ValueError, match="samples"):
        find_float_witness(laplace_mean, [(D, D_PRIME)], samples=1, rng=0)
    with pytest.raises(TypeError, match="rng"):
        find_float_witness(laplace_mean, [(D, D_PRIME)], samples=100, rng=1.5)
    with pytest.raises(TypeError, match="mechanism"):
        find_float_witness(None, [(D, D_PRIME)], samples=100, rng=0)


def test_frequency_audit_passes_what_the_float_check_refutes():
    # the claim holds over the reals, and the frequency audit of the values (exact arithmetic) agrees
    result = audit(laplace_mean, [(D, D_PRIME)], claimed_epsilon=EPS, samples=200_000, rng=0, float_bits=False)
    assert not result.violation
    w = find_float_witness(laplace_mean, [(D, D_PRIME)], samples=2000, rng=0)
    assert w is not None and w.epsilon_lower_bound(delta=1e-6) > 10 * EPS


@settings(max_examples=8, deadline=None)
@given(centre=st.floats(-1e6, 1e6, allow_nan=False), scale=st.floats(1e-3, 1e3))
def test_identical_inputs_never_give_a_witness(centre, scale):
    # no false positive: an output drawn on D is always reachable on D itself (soundness of the
    # reachability search), while the same search at the same scale finds one when the answer
    # moves by scale/3 from 0, where the noise's float grid is finer than the output's (power)
    def mech(db, n, rng):
        return float(np.asarray(db)[0]) + rng.laplace(0.0, scale, size=n)

    result = float_reachability(mech, [([centre], [centre])], samples=400, rng=0)
    assert result.analysed == (0,) and result.witness is None
    assert result.unreachable == ((0, 0, 0, 200),)
    shifted = float_reachability(mech, [([0.0], [scale / 3])], samples=400, rng=0)
    assert shifted.witness is not None and max(shifted.unreachable[0][1:3]) > 0


def test_gaussian_mechanism_leaks_under_the_ziggurat_model():
    widths = ziggurat.layer_widths()
    assert np.all(np.diff(widths[1:]) < 0) or np.all(np.diff(widths[1:]) > 0)  # layers are ordered
    mech = GaussianMechanism.from_epsilon_delta(1.0, 1e-5, sensitivity=0.1, float_safe=False)
    y = np.asarray(mech.sample(0.5, size=300, rng=np.random.default_rng(2)), dtype=float)
    # the model holds on outputs drawn as executed, and some of them are impossible on 0.6
    assert not ziggurat.unreachable(y, 0.5, mech.sigma, widths).any()
    assert ziggurat.unreachable(y, 0.6, mech.sigma, widths).sum() >= 1


def test_crafted_generator_hands_out_the_chosen_words():
    k = np.array([1, 2**40 + 7, 2**53 - 1], dtype=np.uint64)  # uniforms k·2^-53
    words = np.stack([(k >> np.uint64(26)) << np.uint64(5), (k & np.uint64(2**26 - 1)) << np.uint64(6)], axis=1)
    g = crafted_generator(words.reshape(-1))
    assert np.array_equal(g.random(3), k.astype(float) * 2.0**-53)
    assert g.bit_generator.state["state"]["pos"] == 6
    with pytest.raises(ValueError, match="words"):
        crafted_generator([-1])
    with pytest.raises(ValueError, match="words"):
        crafted_generator(np.zeros(625, dtype=np.uint32))
