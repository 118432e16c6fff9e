"""Exact comparisons (:mod:`dpkit.mechanisms.exact_comparison`): the fast path's bounds hold over the whole
interval of the drawn bits (checked in 200-bit interval arithmetic, at crafted extreme draws as well as random
ones), decisions placed right at the edge of the bounds are never contradicted by the reals, the forced slow
path returns the same outcomes (and the exactly rounded gaps), the same seed gives the same outputs, and the
``float_safe=False`` opt-out still draws numpy's continuous noise."""

from __future__ import annotations

import dataclasses
import math

import mpmath
import numpy as np
import pytest

from dpkit.mechanisms import (
    AboveThreshold,
    ExponentialMechanism,
    GaussianMechanism,
    GaussianSparseVector,
    LaplaceMechanism,
    NumericSparse,
    PermuteAndFlip,
    PrivacyLedger,
    ReportNoisyMax,
    SparseVector,
    SparseVectorWithGap,
)
from dpkit.mechanisms import exact_comparison as ec
from dpkit.mechanisms.exact_comparison import UNIT_BOUND, NoiseVector, UnitNoise, decide_above, noisy_argmax
from dpkit.mechanisms.float_safe import continuous_noise, lattice
from dpkit.mechanisms.sparse_vector import GatedRelease

PRECISION = 200
ULP = 2.0**-53


class Draws:
    """A stand-in for the generator: ``random`` returns the given doubles in turn, ``integers`` (the slow
    path's extra bits) come from a seeded generator."""

    def __init__(self, values, seed=0):
        self._values = [float(v) for v in values]
        self._rng = np.random.default_rng(seed)

    def random(self, count):
        out, self._values = self._values[:count], self._values[count:]
        assert len(out) == count
        return np.array(out)

    def integers(self, low, high):
        return self._rng.integers(low, high)


def _on_grid(x):
    """``x`` rounded down to a multiple of 2⁻⁵³ in [0, 1)."""
    return min(math.floor(x / ULP) * ULP, 1.0 - ULP)


def _tops_to_draws(kind, tops):
    """Draws whose interval has the given upper ends ``t`` (U ∈ (t − w, t])."""
    if kind == "laplace":  # both signs: t = 1 − 2d and t = 2 − 2d
        return [_on_grid((1.0 - t) / 2.0) for t in tops] + [_on_grid(0.5 + (1.0 - t) / 2.0) for t in tops]
    return [_on_grid(1.0 - t) for t in tops]


# upper ends of the uniform's interval at the singular ends and at the edges of the "inside" region
EXTREME_TOPS = [1.0, 1.0 - ULP, 1.0 - 2 * ULP, 1.0 - 2.0**-40, math.exp(-2.0**-19), math.exp(-2.0**-19) * (1 + 1e-12),
                math.exp(-2.0**-19) * (1 - 1e-12), math.exp(-13.8), math.exp(-13.8) * (1 + 1e-12),
                math.exp(-13.8) * (1 - 1e-12), 2.0**-20, 2.0**-30, 2.0**-45, 4 * ULP, 2 * ULP, ULP]


def _noise(kind, count=400, seed=1):
    """A block with the extreme draws first, then random ones."""
    rng = np.random.default_rng(seed)
    if kind == "gaussian":
        firsts = [_on_grid(1.0 - t) for t in EXTREME_TOPS]
        seconds = [0.0, 0.25, 0.5, 0.75, 0.125, _on_grid(0.25 - 1e-9)] * 3
        pairs = (count + 1) // 2
        firsts += list(rng.random(pairs - len(firsts)))
        seconds = seconds[: len(EXTREME_TOPS)] + list(rng.random(pairs - len(EXTREME_TOPS)))
        return UnitNoise(kind, count, Draws(firsts + seconds, seed))
    values = _tops_to_draws(kind, EXTREME_TOPS)
    values += list(rng.random(count - len(values)))
    return UnitNoise(kind, count, Draws(values, seed))


def _enclosure(value_of):
    """The ends (mpf, exact) of the interval ``value_of()`` evaluates to in 200-bit interval arithmetic."""
    saved = mpmath.iv.prec
    try:
        with mpmath.workprec(PRECISION):
            mpmath.iv.prec = PRECISION
            value = value_of()
            return mpmath.mpf(value.a), mpmath.mpf(value.b)
    finally:
        mpmath.iv.prec = saved


@pytest.mark.parametrize("kind", ["laplace", "exponential", "gumbel", "gaussian"])
def test_unit_noise_bounds_hold_over_the_whole_interval(kind):
    """For every draw, the real noise over the whole interval of its drawn bits (200-bit enclosure) lies within
    ``error`` of the double estimate; ``inside`` draws have the constant bound 2⁻³⁰ and |Ŷ| ≤ 14. The extreme
    draws exercise the per-draw bounds and the undecidable ends (infinite bound)."""
    noise = _noise(kind)
    errors = noise.error(np.arange(noise.count))
    assert np.all(errors[noise.inside] == UNIT_BOUND) and np.all(np.abs(noise.estimate[noise.inside]) <= 14.0)
    assert (~noise.inside).sum() >= 6 and np.isinf(errors).sum() >= 1
    for j in range(noise.count):
        low, high = _enclosure(lambda: noise.enclosure(j))
        if not math.isfinite(errors[j]):
            continue
        # the double ends are exact, so these differences (of a 200-bit and a 53-bit number) are exact in 300 bits
        with mpmath.workprec(300):
            assert low >= mpmath.mpf(float(noise.estimate[j])) - mpmath.mpf(errors[j]), (j, low, high, errors[j])
            assert high <= mpmath.mpf(float(noise.estimate[j])) + mpmath.mpf(errors[j]), (j, low, high, errors[j])


def _gap_enclosure(queries, threshold, noise, query_scale, thresholds, threshold_scale, row, column, m, unit=None):
    """Ends of the real gap q − T + b₂ν − b₁ρ over the uniforms' intervals; with ``unit``, of G/Λ + ½."""
    def value():
        rho_noise, rho_index = thresholds.source(row)
        gap = (mpmath.iv.mpf(float(queries[column])) - mpmath.iv.mpf(threshold)
               + mpmath.iv.mpf(query_scale) * noise.enclosure(row * m + column)
               - mpmath.iv.mpf(threshold_scale) * rho_noise.enclosure(rho_index))
        return gap if unit is None else gap / unit + mpmath.iv.mpf(0.5)
    return _enclosure(value)


OFFSETS = [0.0] + [sign * 2.0**-k for k in (52, 48, 44, 40, 36, 33, 31, 29, 26, 20, 14, 8) for sign in (1, -1)]


@pytest.mark.parametrize("kind", ["laplace", "gaussian"])
def test_comparisons_at_the_edge_of_the_bounds_agree_with_the_reals(kind):
    """Queries placed so that the float gap sits at 0, ±2⁻⁵² … ±2⁻⁸ query scales (where the fast path's bound
    decides or not), against extreme and random draws: every answer, fast or slow, agrees with the sign of the
    real gap over the whole remaining interval of the uniforms (200-bit enclosure, never straddling 0). Some
    answers at the edge must come from the fast path, some from the slow path (the test is not vacuous)."""
    query_scale, threshold_scale, threshold = 1.7, 0.9, 0.3
    fast = slow = 0
    for seed in range(3):
        base = _noise(kind, 200, seed)
        thresholds = NoiseVector(kind, 1, np.random.default_rng(seed + 10))
        m = base.count
        columns = np.arange(m)
        offsets = np.array([OFFSETS[j % len(OFFSETS)] for j in columns])
        rho = threshold_scale * thresholds.estimate[0]
        queries = threshold + rho - query_scale * base.estimate + offsets * query_scale
        queries[~np.isfinite(queries)] = 0.0
        above, _ = decide_above(queries, threshold, base, query_scale, thresholds, threshold_scale)
        refined = {j for j in columns if base.bits(j) > (52 if kind == "laplace" else 53)}
        for j in columns:
            low, high = _gap_enclosure(queries, threshold, base, query_scale, thresholds, threshold_scale, 0, j, m)
            assert (low >= 0) if above[0, j] else (high < 0), (j, low, high)
            fast += j not in refined
            slow += j in refined
    assert fast > 300 and slow > 20


@pytest.mark.parametrize("kind", ["laplace", "exponential", "gumbel"])
def test_argmax_at_the_edge_of_the_bounds_agrees_with_the_reals(kind):
    """Two candidates whose float values differ by 0, ±2⁻⁵² … ±2⁻⁸ scales, with extreme and random draws: the
    chosen index has the larger real value over the whole remaining interval (200-bit enclosures)."""
    scale = 1.3
    values = _tops_to_draws(kind, EXTREME_TOPS)
    values += list(np.random.default_rng(5).random(400 - len(values)))
    fast = slow = 0
    for row in range(200):
        noise = UnitNoise(kind, 2, Draws(values[2 * row : 2 * row + 2], row))
        offset = OFFSETS[row % len(OFFSETS)]
        second = scale * (noise.estimate[0] - noise.estimate[1]) + offset * scale
        scores = np.array([0.0, second if math.isfinite(second) else 0.0])
        chosen = int(noisy_argmax(scores, scale, noise)[0])
        real = [_enclosure(lambda c=c: mpmath.iv.mpf(float(scores[c])) + mpmath.iv.mpf(scale) * noise.enclosure(c))
                for c in (0, 1)]
        assert real[chosen][0] > real[1 - chosen][1], (row, real, chosen)
        refined = noise.bits(0) > (52 if kind == "laplace" else 53)
        fast += not refined
        slow += refined
    assert fast > 100 and slow > 10


def _forced_slow(monkeypatch):
    monkeypatch.setattr(ec, "_TINY", math.inf)  # every bound infinite: every outcome through the slow path


@pytest.mark.parametrize("kind", ["laplace", "gaussian"])
def test_forced_slow_path_returns_the_fast_outcomes_and_the_exactly_rounded_gaps(kind, monkeypatch):
    """The slow path alone (all bounds infinite) decides every answer of the same draws as the fast path does,
    and rounds every ⊤ gap to the integer ⌊G/Λ + ½⌋ of the real gap G (200-bit enclosure of the refined
    interval, on one side of every rounding boundary); the fast path's rounded gaps are the same."""
    queries = np.array([0.4, -0.2, 1.1, 0.0, 2.5])
    unit = lattice(0.8)
    outputs = []
    for forced in (False, True):
        if forced:
            _forced_slow(monkeypatch)
        rng = np.random.default_rng(7)
        thresholds = NoiseVector(kind, 40, rng)
        noise = UnitNoise(kind, 40 * queries.size, rng)
        outputs.append(decide_above(queries, 0.3, noise, 1.6, thresholds, 0.8, unit))
    (fast_above, fast_gaps), (slow_above, slow_gaps) = outputs
    assert np.array_equal(fast_above, slow_above) and np.array_equal(fast_gaps, slow_gaps, equal_nan=True)
    assert 30 < fast_above.sum() < fast_above.size - 30
    for row, column in zip(*np.nonzero(slow_above)):  # every one decided in interval arithmetic
        low, high = _gap_enclosure(queries, 0.3, noise, 1.6, thresholds, 0.8, row, column, queries.size, unit)
        units = int(mpmath.floor(low))
        assert units == int(mpmath.floor(high)) and slow_gaps[row, column] == units * unit


def test_huge_offsets_round_exactly_through_the_slow_path():
    """|q − T| ≥ 2⁵³Λ: the gap's integer part does not fit a double's 53 bits, and the gap goes through the slow
    path; the released double is the one nearest the exact lattice point."""
    rng = np.random.default_rng(3)
    queries = np.array([1e20, 3.0e300])
    unit = lattice(1.0)
    thresholds = NoiseVector("laplace", 3, rng)
    noise = UnitNoise("laplace", 6, rng)
    above, gaps = decide_above(queries, -2.5, noise, 1.0, thresholds, 1.0, unit)
    assert above.all()
    for row in range(3):
        for column in range(2):
            low, high = _gap_enclosure(queries, -2.5, noise, 1.0, thresholds, 1.0, row, column, 2, unit)
            units = int(mpmath.floor(low))
            assert units == int(mpmath.floor(high)) and gaps[row, column] == ec.lattice_value(units, unit)


@pytest.mark.parametrize("make", [
    lambda: ReportNoisyMax(1.0, noise="laplace"), lambda: ReportNoisyMax(1.0, noise="exponential"),
    lambda: ReportNoisyMax(1.0, noise="gumbel"), lambda: ExponentialMechanism(1.0), lambda: PermuteAndFlip(1.0),
    lambda: SparseVector(0.5, 0.5, 0.3, cutoff=2), lambda: SparseVectorWithGap(0.5, 0.5, 0.3, cutoff=2),
    lambda: GaussianSparseVector(1.0, 1.5, 0.3, max_queries=5, cutoff=2),
])
def test_mechanisms_give_the_same_outputs_through_the_forced_slow_path(make, monkeypatch):
    mech = make()
    value = [0.1, 0.7, 0.3, 0.0, 0.6]
    fast = np.asarray(mech.sample(value, size=300, rng=11))
    _forced_slow(monkeypatch)
    slow = np.asarray(mech.sample(value, size=300, rng=11))
    assert np.array_equal(fast, slow, equal_nan=True)


def test_gated_release_online_and_restarted_batch_through_the_forced_slow_path(monkeypatch):
    """The online run and the restarted batch sampler (thresholds redrawn and kept refinable across columns)
    give the same answers when every comparison goes through the slow path."""
    mech = GatedRelease(SparseVector(0.5, 0.5, 0.0, cutoff=1), GaussianMechanism(sigma=1.0), restarts=3)
    stream = np.array([0.2, -0.4, 1.0, 0.1, 0.0, 0.5, -1.0, 0.3])

    def online():
        generator = np.random.default_rng(2)
        answers = []
        for _ in range(30):
            run = mech.open(rng=generator, ledger=PrivacyLedger(1))
            answers.append([run.step(float(q), [0.0]) is not None for q in stream])
        return answers

    fast_batch, fast_online = mech.answers(stream, size=200, rng=3), online()
    _forced_slow(monkeypatch)
    assert np.array_equal(mech.answers(stream, size=200, rng=3), fast_batch) and online() == fast_online


@pytest.mark.parametrize("make, value", [
    (lambda: GaussianSparseVector(1.0, 1.5, 0.3, max_queries=5, cutoff=2), [0.1, 0.7, 0.3, 0.0, 0.6]),
    (lambda: GatedRelease(SparseVector(0.5, 0.5, 0.0, cutoff=2), LaplaceMechanism(1.0)),
     np.column_stack([[0.1, 0.7, 0.3], [1.0, 2.0, 3.0]])),
    (lambda: SparseVectorWithGap(0.5, 0.5, 0.3, cutoff=2), [0.1, 0.7, 0.3, 0.0, 0.6]),
])
def test_same_seed_same_outputs(make, value):
    mech = make()
    first = np.asarray(mech.sample(value, size=50, rng=4))
    assert np.array_equal(first, np.asarray(mech.sample(value, size=50, rng=4)), equal_nan=True)
    assert not np.array_equal(first, np.asarray(mech.sample(value, size=50, rng=5)), equal_nan=True)


DEFAULTS = [
    lambda **kw: SparseVector(0.5, 0.5, 0.3, cutoff=2, **kw),
    lambda **kw: AboveThreshold(1.0, 0.3, **kw),
    lambda **kw: SparseVectorWithGap(0.5, 0.5, 0.3, cutoff=2, **kw),
    lambda **kw: NumericSparse(0.3, 0.3, 0.4, 0.3, cutoff=2, **kw),
    lambda **kw: GaussianSparseVector(1.0, 1.5, 0.3, max_queries=5, cutoff=2, **kw),
    lambda **kw: ReportNoisyMax(1.0, noise="gumbel", **kw),
    lambda **kw: ExponentialMechanism(1.0, **kw),
    lambda **kw: PermuteAndFlip(1.0, **kw),
]


@pytest.mark.parametrize("make", DEFAULTS)
def test_float_safe_by_default_and_the_opt_out_marks_the_ledger(make):
    """Float-safe by default; ``float_safe=False`` and the ``continuous_noise()`` context opt out, and a
    release then marks the ledger as not private as executed (the event is the same)."""
    value = [0.1, 0.7, 0.3, 0.0, 0.6]
    default, opted = make(), make(float_safe=False)
    with continuous_noise():
        assert make().float_safe is False and make(float_safe=True).float_safe is True
    assert default.float_safe is True and default.floating_point_safe is True
    assert opted.floating_point_safe is False and opted.event == default.event
    for mech, marked in ((default, False), (opted, True)):
        ledger = PrivacyLedger(1)
        mech.release(value, rng=0, ledger=ledger)
        assert bool(ledger.not_as_executed) == marked
        assert ledger.entries(0) == ((mech.event, 1),)
    with pytest.raises(TypeError, match="float_safe"):
        make(float_safe="yes")


def test_opt_out_is_the_continuous_algorithm():
    """``float_safe=False`` is the old sampler draw for draw: numpy's Laplace threshold then query noise,
    compared in doubles; report-noisy-max adds numpy's noise."""
    svt = SparseVector(0.5, 0.5, 0.3, cutoff=2, float_safe=False)
    queries = np.array([0.1, 0.7, 0.3, 0.0])
    generator = np.random.default_rng(8)
    threshold = 0.3 + generator.laplace(0.0, svt.threshold_scale, size=(100, 1))
    above = queries + generator.laplace(0.0, svt.query_scale, size=(100, 4)) - threshold >= 0.0
    before = np.cumsum(above, axis=1) - above
    assert np.array_equal(svt.sample(queries, size=100, rng=8), np.where(before < 2, above, -1))
    rnm = ReportNoisyMax(1.0, noise="exponential", float_safe=False)
    generator = np.random.default_rng(9)
    expected = np.argmax(queries + generator.exponential(rnm.scale, size=(100, 4)), axis=1)
    assert np.array_equal(rnm.sample(queries, size=100, rng=9), expected)


def test_gated_release_is_float_safe_when_both_parts_are_and_open_marks_the_ledger():
    safe_gate, continuous_gate = SparseVector(0.5, 0.5, 0.0), SparseVector(0.5, 0.5, 0.0, float_safe=False)
    safe_release, continuous_release = GaussianMechanism(sigma=1.0), GaussianMechanism(sigma=1.0, float_safe=False)
    for gate, release in ((safe_gate, safe_release), (continuous_gate, safe_release),
                          (safe_gate, continuous_release), (continuous_gate, continuous_release)):
        mech = GatedRelease(gate, release)
        ledger = PrivacyLedger(1)
        run = mech.open(rng=0, ledger=ledger, agent=0)
        run.step(100.0, [1.0])
        safe = gate.float_safe and release.float_safe
        assert mech.floating_point_safe is safe and bool(ledger.not_as_executed) is (not safe)
        assert ledger.entries(0) == ((mech.event, 1),)
        for part in (gate, release):
            assert (part.execution_note in mech.execution_note) is (not part.floating_point_safe and not safe)
    assert dataclasses.replace(GatedRelease(safe_gate, safe_release), restarts=2).floating_point_safe


@pytest.mark.parametrize("build", [
    lambda **kw: SparseVector(1e-320, 1.0, 0.0, **kw),  # Δ/ε₁ overflows
    lambda **kw: SparseVector(1.0, 1e308, 0.0, sensitivity=1e-300, **kw),  # 2cΔ/ε₂ vanishes
    lambda **kw: GaussianSparseVector(1e-310, 1.0, 0.0, max_queries=2, **kw),
    lambda **kw: ReportNoisyMax(1e-320, **kw),
    lambda **kw: ExponentialMechanism(1e300, sensitivity=1e-300, **kw),
])
def test_scales_without_a_real_comparison_are_refused_unless_continuous(build):
    """An infinite or vanishing noise scale leaves the exact comparison nothing to decide (the slow path would
    not end): refused with a pointer to the opt-out, which still builds."""
    with pytest.raises(ValueError, match="float_safe=False"):
        build()
    assert build(float_safe=False).floating_point_safe is False
