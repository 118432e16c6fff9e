"""The float-safe samplers (:mod:`dpkit.mechanisms.float_safe`), the default of the Gaussian and Laplace
mechanisms: the continuous mechanism's output rounded exactly to a power-of-two lattice.

What is checked, each against an independent reference:

* the fast path's decisions against the same uniforms evaluated in 200-bit mpmath arithmetic, on
  adversarial offsets next to the rounding boundaries;
* the rigorous slow path against mpmath's interval arithmetic at the refined uniforms;
* the released distribution against the exact lattice probabilities (Φ and the Laplace CDF in
  mpmath) with Clopper–Pearson intervals, and the independence of a Box–Muller pair;
* the accounting: the same events and ε as the continuous mechanism (post-processing);
* the default audit (float bits on) passes, and refutes the continuous opt-out from its outputs alone.
"""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from statsmodels.stats.proportion import proportion_confint

from dpkit.accounting.analytic_gaussian import gaussian_epsilon
from dpkit.accounting.events import GaussianEvent, LaplaceEvent
from dpkit.audit import audit
from dpkit.mechanisms import (
    ApproximateMinimizerNoise,
    GaussianMechanism,
    LaplaceMechanism,
    NumericSparse,
    PrivacyLedger,
    SparseVectorWithGap,
)
from dpkit.mechanisms import float_safe
from dpkit.mechanisms.float_safe import continuous_noise, lattice, sample_lattice_gaussian, sample_lattice_laplace

W53, W52 = 2.0**-53, 2.0**-52


def _exact_round(value: mpmath.mpf) -> int:
    return int(mpmath.floor(value + mpmath.mpf(0.5)))


# ---------------------------------------------------------------- the fast path against 200-bit arithmetic


def _gaussian_replay(seed: int, count: int) -> list[mpmath.mpf]:
    """The N(0, 1) values the sampler stands for, Φ⁻¹ of the same uniforms (200 bits)."""
    draws = np.random.default_rng(seed).random(count)
    return [mpmath.sqrt(2) * mpmath.erfinv(2 * mpmath.mpf(float(draw)) - 1) for draw in draws]


def _laplace_replay(seed: int, count: int) -> list[mpmath.mpf]:
    """The Laplace(1) values the sampler stands for, from the same uniforms (200 bits)."""
    draws = np.random.default_rng(seed).random(count)
    values = []
    for draw in draws:
        negative = draw >= 0.5
        top = 1 - (2 * mpmath.mpf(float(draw)) - int(negative))
        values.append(mpmath.log(top) if negative else -mpmath.log(top))
    return values


@pytest.mark.parametrize("units_of,replay,slow", [(float_safe._gaussian_units, _gaussian_replay, "_resolve_gaussian"),
                                                  (float_safe._laplace_units, _laplace_replay, "_resolve")])
@pytest.mark.parametrize("seed", [0, 1])
def test_fast_path_decisions_equal_the_exact_rounding_next_to_every_boundary(units_of, replay, slow, seed,
                                                                             monkeypatch):
    # Offsets chosen from the replayed noise so that f + units·Y lies 2⁻ᵏ from a rounding boundary,
    # k = 4..44: the fast path must decide the far ones exactly and hand the near ones to the slow path.
    # (Laplace's Y is −ln U or ln U at the end of the uniform's interval; the Gaussian's Φ⁻¹(U) at its start.)
    count, units = 2000, 1.75 * 2.0**16
    distances = [2.0**-k for k in (4, 12, 20, 28, 36, 44)]
    resolved = []
    original = getattr(float_safe, slow)
    monkeypatch.setattr(float_safe, slow, lambda *a: resolved.append(a[0]) or original(*a))
    with mpmath.workprec(200):
        noise = replay(seed, count)
        offsets, exact, near = np.empty(count), [], 0
        for index, value in enumerate(noise):
            scaled = units * value
            distance = distances[index % len(distances)] * (1 if index % 2 else -1)
            offsets[index] = float(mpmath.mpf(0.5) - (scaled - mpmath.floor(scaled)) + distance)
            exact.append(_exact_round(mpmath.mpf(offsets[index]) + scaled))
            near += abs(distance) <= 2.0**-28
        rounded = units_of(offsets, units, np.random.default_rng(seed))
    for index in range(count):
        if abs(distances[index % len(distances)]) >= 2.0**-20:  # far beyond the drawn interval's spread
            assert rounded[index] == exact[index], index
        else:  # the slow path draws more bits of U: the rounding at the interval's end, or its neighbour
            assert abs(rounded[index] - exact[index]) <= 1, index
    assert len(resolved) >= near  # every coordinate within 2⁻²⁸ of a boundary went to the slow path


def _certified(values) -> tuple[mpmath.mpf, mpmath.mpf]:
    saved = mpmath.iv.prec
    try:
        with mpmath.workprec(300):
            mpmath.iv.prec = 300
            value = values()
            return mpmath.floor(mpmath.mpf(value.a)), mpmath.floor(mpmath.mpf(value.b))
    finally:
        mpmath.iv.prec = saved


@pytest.mark.parametrize("transform", [float_safe._exponential, float_safe._negative_exponential])
def test_the_laplace_slow_path_returns_the_rounding_its_refined_uniform_certifies(transform):
    # start from 6-bit intervals, so the value straddles a boundary and bits must be drawn; at the end the
    # refined interval must certify the returned integer in independent 300-bit interval arithmetic
    generator = np.random.default_rng(5)
    for trial in range(40):
        state = [[int(generator.integers(1, 64)), 6]]
        offset, units = float(generator.uniform(-0.5, 0.5)), 3.0 * 2.0**16
        result = float_safe._resolve(offset, units, transform, state, generator)
        assert state[0][1] > 6  # the refinement loop ran
        (n, b), = state

        def values():
            uniform = mpmath.iv.mpf([mpmath.mpf((n, -b)), mpmath.mpf((n + 1, -b))])
            return transform([uniform]) * units + offset + mpmath.mpf(0.5)

        assert _certified(values) == (result, result)


def test_the_gaussian_slow_path_returns_the_rounding_its_refined_uniform_certifies():
    # offsets put f + units·Φ⁻¹(r) 10⁻¹² below or above a boundary; the 53-bit interval [r, r + 2⁻⁵³] moves
    # the value up by more than 2.7·10⁻¹¹, so it straddles the boundary in the first case only, and bits are
    # drawn then; at the end Φ⁻¹ at both ends of the refined interval (mpmath's erfinv at 300 bits, an
    # independent route from the CDF series the slow path uses) must round to the returned integer
    generator = np.random.default_rng(6)
    units = 1.5 * 2.0**16
    refined = 0
    for trial in range(12):
        draw = float(generator.random())
        with mpmath.workprec(200):
            scaled = units * mpmath.sqrt(2) * mpmath.erfinv(2 * mpmath.mpf(draw) - 1)
            offset = float(mpmath.mpf(0.5) - (scaled - mpmath.floor(scaled)) + (1e-12 if trial % 2 else -1e-12))
        if abs(offset) > 0.5:  # the boundary below was the one meant: shift by one lattice step
            offset -= math.copysign(1.0, offset)
        state = [round(draw / 2.0**-53), 53]
        result = float_safe._resolve_gaussian(offset, units, state, generator)
        refined += state[1] > 53
        with mpmath.workprec(300):
            ends = [mpmath.mpf((state[0] + k, -state[1])) for k in (0, 1)]
            rounded = {int(mpmath.floor(offset + units * mpmath.sqrt(2) * mpmath.erfinv(2 * u - 1) + mpmath.mpf(0.5)))
                       for u in ends}
        assert rounded == {int(result)}
    assert refined == 6


@pytest.mark.parametrize("x", [-30.0, -8.5, -3.0, -0.4, 0.0, 1e-9, 2.2, 6.0, 12.0])
def test_the_normal_cdf_enclosure_contains_mpmaths_value_and_is_narrow(x):
    # at the slow path's precision rule (target bits + x² for the series' cancellation), the enclosure
    # holds mpmath's ncdf and is narrower than 2⁻²⁵⁰ (what a comparison with a 250-bit uniform needs)
    saved = mpmath.iv.prec
    precision = 300 + int(x * x)
    try:
        with mpmath.workprec(precision):
            mpmath.iv.prec = precision
            enclosure = float_safe._normal_cdf(mpmath.iv.mpf(x))
            exact = mpmath.ncdf(mpmath.mpf(x))
            low, high = mpmath.mpf(enclosure.a), mpmath.mpf(enclosure.b)
            assert low <= exact <= high and high - low < mpmath.ldexp(1, -250)
    finally:
        mpmath.iv.prec = saved


# ---------------------------------------------------------------- the released distribution

ALPHA = 1e-4  # per interval; at most ~20 intervals in this module: family-wise error < 0.2 %


def _check_cdf(out: np.ndarray, cdf, points) -> None:
    for point in points:
        below = int(np.sum(out <= point))
        low, high = proportion_confint(below, out.size, alpha=ALPHA, method="beta")
        assert low <= cdf(point) <= high, (point, below / out.size, cdf(point))


def test_gaussian_outputs_follow_the_exact_lattice_distribution():
    sigma, answer, n = 1.3, 0.3, 200_000
    step = lattice(sigma)
    out = sample_lattice_gaussian(answer, sigma, n, rng=11)
    assert np.all(out / step == np.round(out / step))

    def cdf(point: float) -> float:  # P(m·Λ ≤ t) = Φ(((⌊t/Λ⌋ + ½)Λ − x)/σ), in 50 digits
        with mpmath.workdps(50):
            edge = (mpmath.floor(mpmath.mpf(point) / step) + mpmath.mpf(0.5)) * step
            return float(mpmath.ncdf((edge - answer) / sigma))

    _check_cdf(out, cdf, [-2.5, -1.0, 0.0, 0.3, 1.1, 2.9])


def test_laplace_outputs_follow_the_exact_lattice_distribution():
    scale, answer, n = 0.7, -2.0, 200_000
    step = lattice(scale)
    out = sample_lattice_laplace(np.full(4, answer), scale, n // 4, rng=12).ravel()
    assert np.all(out / step == np.round(out / step))

    def cdf(point: float) -> float:
        with mpmath.workdps(50):
            z = ((mpmath.floor(mpmath.mpf(point) / step) + mpmath.mpf(0.5)) * step - answer) / scale
            return float(mpmath.mpf(0.5) * mpmath.exp(z) if z < 0 else 1 - mpmath.mpf(0.5) * mpmath.exp(-z))

    _check_cdf(out, cdf, [-5.0, -2.5, -2.0, -1.6, 0.0])


def test_neighbouring_coordinates_are_independent():
    # each coordinate is Φ⁻¹ of its own uniform: P(both > 0) = 1/4 and P(|both| > 1) = (2Φ(−1))²
    out = sample_lattice_gaussian(np.zeros(100_000), 1.0, None, rng=13)
    first, second = out[0::2], out[1::2]
    for both, probability in [((first > 0) & (second > 0), 0.25),
                              ((np.abs(first) > 1) & (np.abs(second) > 1), (2 * float(mpmath.ncdf(-1))) ** 2)]:
        low, high = proportion_confint(int(both.sum()), both.size, alpha=ALPHA, method="beta")
        assert low <= probability <= high


def test_seeded_shapes_and_scalars():
    mech = GaussianMechanism(sigma=2.0)
    assert np.array_equal(mech.sample(np.arange(5.0), size=3, rng=4), mech.sample(np.arange(5.0), size=3, rng=4))
    assert mech.sample(np.zeros((2, 3)), rng=0).shape == (2, 3)
    assert mech.sample(np.zeros((2, 3)), size=4, rng=0).shape == (4, 2, 3)
    assert isinstance(mech.sample(1.0, rng=0), float) and mech.sample(1.0, size=1, rng=0).shape == (1,)
    assert LaplaceMechanism(scale=1.0).sample(np.zeros(0), rng=0).shape == (0,)
    # an answer beyond the largest double times Λ is clamped there (finite outputs, no warning)
    assert np.isfinite(GaussianMechanism(sigma=1.0).sample(-1.7e308, size=2, rng=1)).all()


# ---------------------------------------------------------------- the mechanisms: accounting and defaults


@settings(max_examples=40, deadline=None)
@given(sigma=st.floats(1e-6, 1e6), sensitivity=st.floats(1e-3, 1e2))
def test_float_safe_is_the_default_with_the_continuous_accounting_and_a_power_of_two_lattice(sigma, sensitivity):
    mech = GaussianMechanism(sigma=sigma, sensitivity=sensitivity)
    assert mech.float_safe and mech.floating_point_safe
    assert mech.event == GaussianEvent(sigma=sigma, sensitivity=sensitivity)
    assert mech.epsilon(1e-5) == gaussian_epsilon(sigma, 1e-5, sensitivity)
    assert math.frexp(mech.grid)[0] == 0.5 and 2**16 <= sigma / mech.grid < 2**17
    laplace = LaplaceMechanism(scale=sigma, sensitivity=sensitivity)
    assert laplace.float_safe and laplace.event == LaplaceEvent(scale=sigma, sensitivity=sensitivity)
    assert math.frexp(laplace.lattice)[0] == 0.5 and 2**16 <= sigma / laplace.lattice < 2**17


def test_calibration_needs_no_more_noise_than_the_continuous_form():
    assert GaussianMechanism.from_epsilon_delta(1.0, 1e-5).sigma == \
        GaussianMechanism.from_epsilon_delta(1.0, 1e-5, float_safe=False).sigma
    assert LaplaceMechanism.from_epsilon(0.3, 2.0).scale == LaplaceMechanism.from_epsilon(0.3, 2.0, float_safe=False).scale


def test_the_opt_out_marks_the_ledger_and_the_default_does_not():
    ledger = PrivacyLedger()
    GaussianMechanism(sigma=1.0).release(np.zeros(3), rng=0, ledger=ledger)
    LaplaceMechanism(scale=1.0).release_each([0.0, 1.0], rng=0, ledger=PrivacyLedger(2), agents=[0, 1])
    assert ledger.not_as_executed == ()
    with continuous_noise():
        continuous = GaussianMechanism(sigma=1.0)
    assert not continuous.float_safe and GaussianMechanism(sigma=1.0).float_safe  # the block ended
    continuous.release(np.zeros(3), rng=0, ledger=ledger)
    LaplaceMechanism(scale=1.0, float_safe=False).release(0.0, rng=0, ledger=ledger)
    assert [note.split(" ")[0] for note in ledger.not_as_executed] == ["GaussianMechanism", "LaplaceMechanism"]
    assert PrivacyLedger(2, pooled=ledger).not_as_executed == ledger.not_as_executed


def test_invalid_arguments():
    with pytest.raises(TypeError, match="float_safe must be True, False or None"):
        GaussianMechanism(sigma=2.0, float_safe="yes")
    with pytest.raises(ValueError, match="sigma must be at least 2\\^-1000"):
        GaussianMechanism(sigma=1e-305)
    with pytest.raises(ValueError, match="scale must be at least 2\\^-1000"):
        LaplaceMechanism(scale=1e-305)
    assert GaussianMechanism(sigma=1e-305, float_safe=False).sigma == 1e-305
    with pytest.raises(ValueError, match="value must be finite"):
        GaussianMechanism(sigma=1.0).sample([0.0, math.nan], rng=0)


# ---------------------------------------------------------------- the default audit, outputs alone

PAIRS = [([0.0], [1.0])]
VECTOR_PAIRS = [([0.0, 0.0, 0.0], [1.0, 0.0, 0.0])]


@pytest.mark.parametrize("make,delta", [
    (lambda: LaplaceMechanism.from_epsilon(1.0), 0.0),
    (lambda: GaussianMechanism.from_epsilon_delta(1.0, 1e-5), 1e-5),
])
@pytest.mark.parametrize("pairs", [PAIRS, VECTOR_PAIRS])
def test_default_mechanisms_pass_the_default_audit(make, delta, pairs):
    mech = make()
    r = audit(mech.as_audit_callable(), pairs, 1.0, delta, samples=100_000, rng=0)
    assert not r.violation, r.witness


@pytest.mark.parametrize("make", [
    lambda: LaplaceMechanism.from_epsilon(1.0, float_safe=False),
    lambda: GaussianMechanism.from_epsilon_delta(1.0, 1e-5, float_safe=False),
])
def test_the_continuous_opt_out_is_refuted_by_the_default_audit(make):
    mech = make()
    r = audit(mech.as_audit_callable(), PAIRS, 1.0, 1e-5, samples=100_000, rng=0)
    assert r.violation and r.witness["event"]["family"].startswith("float")


def test_a_generator_whose_bits_decide_nothing_raises_instead_of_looping():
    # U in [0, 2⁻⁵³] with every further word 0 (a crafted, constant generator): Φ⁻¹ and ln stay unbounded on the
    # interval, so no number of bits decides; a random generator needs 8 refinements with probability < 2⁻²⁵⁰
    from dpkit.audit.float_events import crafted_generator

    with pytest.raises(ValueError, match="rng: 8 refinements of 32 bits did not decide"):
        float_safe._resolve_gaussian(0.25, 1.5 * 2.0**16, [0, 53], crafted_generator([0]))
    with pytest.raises(ValueError, match="rng: 8 refinements of 32 bits did not decide"):
        float_safe._resolve(0.25, 1.5 * 2.0**16, float_safe._exponential, [[0, 52]], crafted_generator([0]))


def test_the_second_tier_decides_a_call_whose_draws_reach_past_three_and_a_half(monkeypatch):
    # Offsets put every f + units·Y 2⁻¹⁴ lattice units from a boundary (above the second tier's margin of
    # 2⁻¹⁶·⁶, below the per-call distance the first tier needs only when |Y| ≤ 3.5); the seed's draws include
    # |Y| in (3.5, 4.99) and none beyond: the call must be decided by the second tier (one ndtri call, no
    # per-coordinate work) and agree with the exact rounding of every coordinate
    import types

    count, units, seed = 2000, 1.75 * 2.0**16, 2
    with mpmath.workprec(200):
        noise = _gaussian_replay(seed, count)
        reach = max(abs(float(y)) for y in noise)
        assert 3.5 < reach < 4.99
        offsets, exact = np.empty(count), []
        for index, value in enumerate(noise):
            scaled = units * value
            distance = 2.0**-14 if index % 2 else -(2.0**-14)
            offsets[index] = float(mpmath.mpf(0.5) - (scaled - mpmath.floor(scaled)) + distance)
            exact.append(_exact_round(mpmath.mpf(offsets[index]) + scaled))
    calls, ndtri = [], float_safe.special.ndtri
    proxy = types.SimpleNamespace(ndtri=lambda x: calls.append(1) or ndtri(x))
    monkeypatch.setattr(float_safe, "special", proxy)
    rounded = float_safe._gaussian_units(offsets, units, np.random.default_rng(seed))
    assert len(calls) == 1 and list(rounded) == exact


@pytest.mark.parametrize("make,pairs", [
    (lambda: (LaplaceMechanism.from_epsilon(1.0), 1.0, 0.0), PAIRS),
    (lambda: (LaplaceMechanism.from_epsilon(1.0), 1.0, 0.0), VECTOR_PAIRS),
    (lambda: (ApproximateMinimizerNoise(beta=0.25, strong_convexity=1.0, rho=0.5), 1.0, 1e-5),
     [([0.0, 0.0, 0.0], [0.5, 0.0, 0.0])]),  # a shift of its sensitivity 2β/μ = 0.5
    (lambda: (NumericSparse(0.3, 0.3, 0.4, threshold=0.0, cutoff=1), 1.0, 0.0),
     [([0.0, 0.0, 0.0], [1.0, 1.0, 1.0])]),
    (lambda: (SparseVectorWithGap(0.5, 0.5, threshold=0.0, cutoff=1), 1.0, 0.0), [([0.0, 0.0, 0.0], [1.0, 1.0, 1.0])]),
])
def test_default_float_outputs_pass_the_default_audit_at_a_million_samples(make, pairs):
    # every default mechanism whose outputs are doubles, scalar and vector, at its claim (the 10⁶)
    mech, epsilon, delta = make()
    if isinstance(mech, ApproximateMinimizerNoise):  # its event is a Gaussian's: claim that event's ε(δ)
        epsilon = GaussianMechanism(sigma=mech.sigma, sensitivity=mech.valid_sensitivity).epsilon(delta)
    assert mech.floating_point_safe
    r = audit(mech.as_audit_callable(), pairs, epsilon, delta, samples=1_000_000, rng=0)
    assert not r.violation, r.witness
