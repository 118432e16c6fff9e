"""hetero-admm's planned rounds from the servers' sizes and ε (hetero_admm.default_rounds)."""

from __future__ import annotations

import math

from hypothesis import given, settings, strategies as st

from dpkit.algorithms import train
from dpkit.algorithms.hetero_admm.algorithm import (
    CORRECTED_ROUNDS, MAX_ROUNDS, ROUNDS_PER_EPSILON, ROUNDS_ROWS, default_rounds,
)
from dpkit.algorithms.substrate.data import make_synthetic


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(1, 100_000), min_size=2, max_size=8), st.integers(1, 1000),
       st.floats(0.01, 20.0), st.floats(1.0, 4.0))
def test_rounds_stay_in_range_never_rise_with_the_rows_nor_fall_with_epsilon(sizes, extra, epsilon, factor):
    rounds = default_rounds(sizes, epsilon)
    assert CORRECTED_ROUNDS <= rounds <= min(default_rounds(sizes), max(CORRECTED_ROUNDS,
                                                                        math.ceil(ROUNDS_PER_EPSILON * epsilon)))
    assert default_rounds([m + extra for m in sizes], epsilon) <= rounds <= default_rounds(sizes, epsilon * factor)
    if min(sizes) >= ROUNDS_ROWS:
        assert rounds == CORRECTED_ROUNDS


def test_a_small_run_plans_the_rule_and_its_ledger_holds_every_round():
    """Two servers of 1,600 rows: ⌈25·7200/1600⌉ = 113 is capped at 100 rounds at ε = 3 and at
    ⌈50·ε⌉ = 50 at ε = 1; each calibrated run stays within its budget and every server's ledger holds one release per planned
    round (and no fewer)."""
    assert math.ceil(CORRECTED_ROUNDS * ROUNDS_ROWS / 1600) > MAX_ROUNDS
    for epsilon, planned in ((1.0, 50), (3.0, MAX_ROUNDS)):
        result = train("hetero-admm", make_synthetic(4000, 5, rng=0), epsilon=epsilon, agents=2, n_train=3200, seed=0)
        assert result.config["iterations"] == planned
        assert result.epsilon <= epsilon
        assert all(result.ledger.draws(agent) >= planned for agent in range(2))
