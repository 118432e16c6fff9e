"""Ledgers of pure ε-DP steps: the RDP and tightest accountants never report more than basic composition.

n uses of an ε₀-DP mechanism are (n·ε₀, 0)-DP (Dwork & Roth 2014, Thm 3.16), so n·ε₀ bounds ε at
every δ. The RDP conversion ε(α) + log(1/δ)/(α − 1) (Mironov 2017, Prop. 3) only tends to n·ε₀ as
α → ∞ and carries round-off margins, so at huge ε₀ it must be capped there. The reference is
n·ε₀ computed exactly (fractions), allowed two outward roundings of the certified exit (a member's
and the tightest accountant's, 8·2⁻⁵² relative each, plus an ulp), and the approx accountant's
certified basic-composition bound.
"""

from __future__ import annotations

import contextlib
import io
import json
from fractions import Fraction

from hypothesis import given, settings, strategies as st

from dpkit.accounting.approx_dp import basic_composition
from dpkit.accounting.events import ExponentialMechanismEvent, LaplaceEvent, PureDPEvent, RandomizedResponseEvent
from dpkit.accounting.registry import make_accountant
from dpkit.cli.main import main

ROUNDING = 2.0**-47  # two outward roundings of 8·2⁻⁵² and an ulp each


def within_basic(value: float, epsilon0: float, count: int) -> bool:
    exact = Fraction(epsilon0) * count
    return Fraction(value) <= exact * (1 + Fraction(ROUNDING)) and value <= basic_composition(epsilon0, 0.0, count).epsilon


KINDS = {
    "exponential": ExponentialMechanismEvent,
    "pure": PureDPEvent,
    "randomized-response": RandomizedResponseEvent,
    "laplace": lambda e: LaplaceEvent(1.0 / e),
}


@settings(max_examples=40, deadline=None)
@given(kind=st.sampled_from(sorted(KINDS)), exponent=st.floats(3.0, 300.0), count=st.integers(1, 10**6),
       delta_exponent=st.floats(1.0, 300.0))
def test_rdp_never_exceeds_basic_composition_of_pure_steps(kind, exponent, count, delta_exponent):
    event = KINDS[kind](10.0**exponent)
    epsilon0 = 1.0 / event.scale if kind == "laplace" else event.epsilon
    result = make_accountant("rdp").compose(event, count).get_epsilon(10.0**-delta_exponent)
    assert 0 < result.epsilon and within_basic(result.epsilon, epsilon0, count)


@settings(max_examples=8, deadline=None)
@given(exponent=st.floats(8.0, 300.0), count=st.integers(1, 100))
def test_tightest_never_exceeds_basic_composition_of_exponential_mechanisms(exponent, count):
    epsilon0 = 10.0**exponent
    result = make_accountant("tightest").compose(ExponentialMechanismEvent(epsilon0), count).get_epsilon(1e-5)
    assert 0 < result.epsilon and within_basic(result.epsilon, epsilon0, count)


def test_cli_default_route_on_a_huge_exponential_mechanism_stays_at_basic_composition():
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["epsilon", "--mechanism", "exponential", "--epsilon0", "1e12", "--delta", "1e-5", "--json"]) == 0
    assert within_basic(json.loads(out.getvalue())["epsilon"], 1e12, 1)


def test_zcdp_on_huge_randomized_response_answers_with_a_bound_through_the_cli():
    # Binary RR at ε₀ has δ(ε) = (1 − e^{ε − ε₀})/(1 + e^{−ε₀}) for ε < ε₀ (Kairouz, Oh & Viswanath 2015,
    # Thm 2.1), so at δ = 1e-5 the true ε is within 1e-4 of ε₀: a zCDP bound must be at least that.
    for epsilon0 in (1e20, 1e50, 1e300):
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            assert main(["epsilon", "--mechanism", "randomized-response", "--epsilon0", repr(epsilon0),
                         "--accountant", "zcdp", "--delta", "1e-5", "--json"]) == 0
        assert epsilon0 - 1e-4 <= json.loads(out.getvalue())["epsilon"] < float("inf")
