"""Queries that once ran for minutes answer with a sound value or refuse cleanly naming the faster route.

Speed is measured in benchmarks/slow_corners.py; here a generous alarm only turns a hang into a failure.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from time_limit import time_limit
from dpkit.accounting import shuffling
from dpkit.accounting.events import (
    GaussianEvent,
    LaplaceEvent,
    PoissonSampledEvent,
    RandomizedResponseEvent,
    SampledWithoutReplacementEvent,
    repeat,
)
from dpkit.accounting.pld import GridTooLargeError, LossPmf, PLDAccountant, bounded_range_composition_epsilon
from dpkit.accounting.pld import algebra, tilted
from dpkit.accounting.rdp import RDPAccountant

_ALARM = 300  # seconds: a hang, not a slow answer, fails here (CI runs on two loaded cores)


def _guard():
    return time_limit(_ALARM, "the query")


def _answer_or_refusal(accountant, delta):
    """The result, or None after checking that the refusal is one line naming the RDP route."""
    try:
        return accountant.get_epsilon(delta)
    except GridTooLargeError as error:
        assert "rdp" in str(error).lower() and "\n" not in str(error)
        return None


def test_without_replacement_gaussian_answers_within_the_rdp_bound():
    event = repeat(SampledWithoutReplacementEvent(GaussianEvent(0.93), 46, 2400), 184)
    with _guard():
        result = _answer_or_refusal(PLDAccountant("replace-one").compose(event), 3.5e-12)
        rdp = RDPAccountant("replace-one").compose(event).get_epsilon(3.5e-12).epsilon
    assert result is not None and math.isfinite(result.epsilon)
    assert result.epsilon_lower <= result.epsilon <= rdp * (1.0 + 1e-12)


def test_without_replacement_laplace_answers_with_an_interval():
    event = repeat(SampledWithoutReplacementEvent(LaplaceEvent(5.55), 6, 3433), 2946)
    with _guard():
        result = _answer_or_refusal(PLDAccountant("replace-one").compose(event), 1e-5)
    assert result is not None and 0.0 < result.epsilon_lower <= result.epsilon < math.inf


@pytest.mark.parametrize(("event", "count"), [
    (GaussianEvent(1.0), 10**6),
    (PoissonSampledEvent(GaussianEvent(1.0), 0.01), 10**12),
    (PoissonSampledEvent(GaussianEvent(1.0), 1e-300), 1),
])
def test_tiny_delta_huge_counts_answer_or_refuse(event, count):
    with _guard():
        result = _answer_or_refusal(PLDAccountant().compose(event, count), 1e-300)
        rdp = RDPAccountant().compose(event, count).get_epsilon(1e-300).epsilon
    if result is not None:
        assert result.epsilon <= rdp * (1.0 + 1e-12)  # the RDP route, rounded once more on the way out
        assert result.epsilon_lower is None or result.epsilon_lower <= result.epsilon


def test_bounded_range_composition_at_a_hundred_uses_is_between_known_bounds():
    with _guard():
        value = bounded_range_composition_epsilon(1.0, 100, 1e-10)
        # randomized response with ε/2 has losses ±ε/2: it is ε-bounded-range, so its composition bounds the
        # optimum from below; pure composition bounds it from above
        lower = PLDAccountant().compose(RandomizedResponseEvent(0.5), 100).get_epsilon(1e-10).epsilon_lower
    assert lower <= value <= 100.0


def test_bounded_range_composition_refuses_counts_beyond_its_budget():
    with pytest.raises(ValueError, match="count must be in"):
        bounded_range_composition_epsilon(1.0, 10**5, 1e-10)


def test_shuffle_epsilon_with_a_trillion_users_is_certified():
    with _guard():
        value = shuffling.shuffle_epsilon(1e-8, 3.0, 10**12)
    assert 0.0 <= value <= 3.0
    assert shuffling.shuffle_delta(value, 3.0, 10**12) <= 1e-8


def test_merged_clone_counts_bound_the_exact_sum_from_above(monkeypatch):
    exact = [shuffling.shuffle_delta(eps, 1.0, 10**5) for eps in (0.01, 0.05, 0.2)]
    shuffling._clone_blocks.cache_clear()
    monkeypatch.setattr(shuffling, "_MAX_CELLS", 64)
    monkeypatch.setattr(shuffling, "_BLOCKS", 16)
    try:
        merged = [shuffling.shuffle_delta(eps, 1.0, 10**5) for eps in (0.01, 0.05, 0.2)]
    finally:
        shuffling._clone_blocks.cache_clear()
    for e, m in zip(exact, merged):
        assert e <= m <= 1.5 * e + 1e-12


def _random_pmf(seed: int, size: int) -> LossPmf:
    rng = np.random.default_rng(seed)
    probs = rng.random(size) ** 8  # uneven masses, some tiny
    probs /= probs.sum()
    return LossPmf(0.01, -size // 3, probs, 0.0, True)


@pytest.mark.parametrize("seed", range(3))
def test_window_holds_all_but_tail_of_the_composition(seed):
    pmf, count, tail = _random_pmf(seed, 3000), 4, 1e-6
    exact = pmf.probs
    for _ in range(count - 1):
        exact = np.convolve(exact, pmf.probs)
    a, b = algebra._window(pmf, count, tail)
    start = count * pmf.offset
    assert float(np.sum(exact[: max(0, a - start)])) <= tail
    assert float(np.sum(exact[b - start + 1:])) <= tail


@pytest.mark.parametrize("seed", range(3))
def test_chernoff_estimate_stays_above_the_tail(seed):
    pmf, count = _random_pmf(seed, 5000), 3
    exact = pmf.probs
    for _ in range(count - 1):
        exact = np.convolve(exact, pmf.probs)
    losses = count * pmf.offset * pmf.h + pmf.h * np.arange(exact.size)
    for epsilon in (0.0, 5.0, 15.0):
        above = float(np.sum(exact[losses > epsilon]))
        estimate = tilted.chernoff_log_delta([(pmf, count)], np.array([epsilon]))[0]
        assert above == 0.0 or math.log(above) <= estimate + 1e-9


def test_calibration_gives_up_at_once_when_epsilon_has_a_floor():
    from dpkit.accounting.calibration import calibrate
    from dpkit.accounting.events import PureDPEvent

    # ε does not depend on the parameter: no amount of widening can meet the target
    with _guard(), pytest.raises(ValueError, match="stays at") as error:
        calibrate(lambda _: PureDPEvent(1.0), "rdp", target_epsilon=0.5, target_delta=1e-5, lower=1.0, upper=2.0)
    assert "\n" not in str(error.value) and "rdp" in str(error.value)


def test_calibration_to_a_tiny_epsilon_stays_on_the_safe_side():
    from dpkit.accounting.calibration import calibrate

    with _guard():
        result = calibrate(lambda s: repeat(GaussianEvent(s), 10), "pld", target_epsilon=1e-12, target_delta=1e-5,
                           lower=1.0, upper=10.0, rtol=1e-4)
    assert result.epsilon <= 1e-12
    assert PLDAccountant().compose(repeat(GaussianEvent(result.parameter), 10)).get_epsilon(1e-5).epsilon <= 1e-12
    assert result.unsafe_parameter < result.parameter <= result.unsafe_parameter * (1 + 1e-4) * (1 + 1e-9)
