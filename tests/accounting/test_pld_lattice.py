"""Direct-convolution composition of lattice pmfs (dpkit.accounting.pld.lattice): its masses bound the
exact convolution of its inputs (computed in rational arithmetic) on the safe side, entry by entry,
and a randomized-response ledger is discretised exactly and composed to a round-off-only width."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from dpkit.accounting import PLDAccountant
from dpkit.accounting.events import RandomizedResponseEvent
from dpkit.accounting.pld import lattice
from dpkit.accounting.pld.pmf import LossPmf


def exact_power(probs: list[float], count: int) -> list[Fraction]:
    result = [Fraction(1)]
    base = [Fraction(p) for p in probs]
    for _ in range(count):
        out = [Fraction(0)] * (len(result) + len(base) - 1)
        for i, a in enumerate(result):
            for j, b in enumerate(base):
                out[i + j] += a * b
        result = out
    return result


masses = st.lists(st.floats(0.0, 1.0, allow_subnormal=True), min_size=1, max_size=6)


@settings(max_examples=60, deadline=None)
@given(probs=masses, count=st.integers(1, 9), tiny=st.booleans())
def test_self_composition_bounds_the_exact_convolution_on_the_safe_side(probs, count, tiny):
    values = np.array(probs) * (1e-160 if tiny else 1.0)  # tiny: products underflow into subnormals
    total = float(values.sum()) or 1.0
    values = values / total if not tiny else values
    exact = exact_power(list(values), count)
    upper = lattice.self_compose(LossPmf(0.5, -1, values, 0.0, True), count)
    lower = lattice.self_compose(LossPmf(0.5, -1, values, 0.0, False), count)
    assert upper.offset == lower.offset == -count and upper.probs.size == len(exact)
    # pessimistic: every mass at least the exact one (the underflow allowance sits on the +∞ atom)
    shortfall = sum(max(Fraction(0), e - Fraction(float(u))) for e, u in zip(exact, upper.probs))
    assert shortfall <= Fraction(upper.infinity_mass)
    # optimistic: total excess over the exact masses within the deficit
    excess = sum(max(Fraction(0), Fraction(float(v)) - e) for e, v in zip(exact, lower.probs))
    assert excess <= Fraction(lower.deficit)
    if not tiny and all(v == 0.0 or v >= 1e-30 for v in values):  # no product underflows: entrywise
        assert all(Fraction(float(u)) >= e >= Fraction(float(v)) for e, u, v in zip(exact, upper.probs, lower.probs))


def test_composition_of_different_pmfs_matches_the_exact_one():
    first, second = np.array([0.25, 0.5, 0.25]), np.array([0.1, 0.9])
    exact = [Fraction(0)] * 4
    for i, a in enumerate(first):
        for j, b in enumerate(second):
            exact[i + j] += Fraction(a) * Fraction(b)
    upper = lattice.compose_all([LossPmf(1.0, 0, first, 0.01, True), LossPmf(1.0, 2, second, 0.02, True)])
    lower = lattice.compose_all([LossPmf(1.0, 0, first, 0.01, False), LossPmf(1.0, 2, second, 0.02, False)])
    assert upper.offset == 2 and all(Fraction(float(u)) >= e >= Fraction(float(v))
                                     for e, u, v in zip(exact, upper.probs, lower.probs))
    # 1 − 0.99·0.98, rounded outwards
    assert upper.infinity_mass >= 0.0298 >= lower.infinity_mass


def test_randomized_response_ledger_is_composed_to_a_round_off_width():
    result = PLDAccountant().compose(RandomizedResponseEvent(1.0, 3), 1000).get_epsilon(1e-5)
    assert any("h=1," in note or "h=1 " in note for note in result.notes)  # the lattice spacing ε₀
    assert result.epsilon - result.epsilon_lower <= 1e-9 * result.epsilon
