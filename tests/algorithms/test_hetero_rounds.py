"""hetero-admm's planned rounds from the servers' sizes (hetero_admm.default_rounds)."""

from __future__ import annotations

import math

from hypothesis import given, settings, strategies as st

from dpkit.algorithms import train
from dpkit.algorithms.hetero_admm.algorithm import CORRECTED_ROUNDS, MAX_ROUNDS, ROUNDS_ROWS, default_rounds
from dpkit.algorithms.substrate.data import make_synthetic


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(1, 100_000), min_size=2, max_size=8), st.integers(1, 1000))
def test_rounds_stay_in_range_and_never_rise_with_the_rows(sizes, extra):
    rounds = default_rounds(sizes)
    assert CORRECTED_ROUNDS <= rounds <= MAX_ROUNDS
    assert default_rounds([m + extra for m in sizes]) <= rounds
    if min(sizes) >= ROUNDS_ROWS:
        assert rounds == CORRECTED_ROUNDS


def test_a_small_run_plans_the_rule_and_its_ledger_holds_every_round():
    """Two servers of 1,600 rows: ⌈25·7200/1600⌉ = 113 is capped at 100 rounds; the calibrated run stays
    within its budget and every server's ledger holds one release per planned round (and no fewer)."""
    result = train("hetero-admm", make_synthetic(4000, 5, rng=0), epsilon=1.0, agents=2, n_train=3200, seed=0)
    assert math.ceil(CORRECTED_ROUNDS * ROUNDS_ROWS / 1600) > MAX_ROUNDS
    assert result.config["iterations"] == MAX_ROUNDS
    assert result.epsilon <= 1.0
    assert all(result.ledger.draws(agent) >= MAX_ROUNDS for agent in range(2))
