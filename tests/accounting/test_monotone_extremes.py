"""ε is monotone over the whole parameter range, and the PLD is never ∞ or looser where another route is not.

For every accountant (rdp, zcdp, gdp where it applies, pld, tightest) and noise x (σ, or the scale b
of Laplace noise) from 1e-300 to 1e300, counts up to 1e12 and δ from 1e-300 to 0.5:

* a smaller δ, fewer uses or more noise never give a larger ε — compared, as in the contract suite,
  against the certified lower end where an accountant reports one (two upper bounds of one true ε may
  each sit anywhere in their certified intervals);
* finiteness is monotone: a finite ε at some δ, count and noise stays finite at a larger δ, a smaller
  count and more noise (the PLD once gave ∞ at δ = 1e-10 between finite values at 1e-300 and 1e-5);
* the PLD's ε is at most exact GDP's for Gaussian ledgers, and at most the RDP accountant's plus the
  PLD's target width otherwise (the PLD then certifies ε within that width of the true value);
* one PLD accountant's answers at increasing δ are non-increasing exactly (the monotone envelope).

Every query must answer within :data:`QUERY_SECONDS`. The grid accountants' draws leave out the corner
whose grids take longer (Laplace-type ledgers of a composed ε above 1e3 that still need a grid:
seconds per query there; see ``SLOW_CORNER``).
"""

from __future__ import annotations

import math

import mpmath as mp
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import contract_references as ref
from time_limit import time_limit
from dpkit.accounting.analytic_gaussian import gaussian_epsilon, gaussian_sigma
from dpkit.accounting.base import UnsupportedEventError
from dpkit.accounting.events import (
    DiscreteLaplaceEvent,
    GaussianEvent,
    LaplaceEvent,
    RandomizedResponseEvent,
    TreeAggregationEvent,
)
from dpkit.accounting.pld import PLDAccountant
from dpkit.accounting.pld.mechanisms import GridTooLargeError
from dpkit.accounting.registry import make_accountant

QUERY_SECONDS = 10
"""Every query answers within this."""
ROUNDING = 1e-323
"""Two outward roundings (GDP's closed form, then the PLD's exit) may lift a certified 0 to two subnormal ulps."""

KINDS = {
    "gaussian": GaussianEvent,
    "laplace": LaplaceEvent,
    "discrete_laplace": DiscreteLaplaceEvent,
    "randomized_response": lambda x: RandomizedResponseEvent(1.0 / x),
}
ACCOUNTANT_KINDS = [("rdp", k) for k in KINDS] + [("zcdp", k) for k in KINDS] + [("gdp", "gaussian")] + \
    [("pld", k) for k in KINDS] + [("tightest", k) for k in KINDS]
GRID = ("pld", "tightest")
EXAMPLES = {"pld": 4, "tightest": 3}
"""Examples per kind for the grid accountants (each example asks up to eight queries); 12 for the others."""


def SLOW_CORNER(kind: str, x: float, count: int) -> bool:
    """Laplace-type ledgers whose composed ε (count/x) exceeds 1e3 while their steps are still resolved by
    the grid (1e-100 < x): the PLD takes 2–15 s there (e.g. 10⁶ uses of scale 1e-3 or 1)."""
    return kind != "gaussian" and 1e-100 < x and count / x > 1e3


def within(what: str):
    return time_limit(QUERY_SECONDS, what)


def epsilon_of(name: str, kind: str, x: float, count: int, delta: float):
    """The result of ``get_epsilon(delta)`` for ``count`` uses, or None if the accountant refuses the event."""
    what = f"{name}.get_epsilon({delta!r}) of {count} x {kind}({x!r})"
    with within(what):
        try:
            return make_accountant(name).compose(KINDS[kind](x), count).get_epsilon(delta)
        except UnsupportedEventError:
            return None
        except GridTooLargeError as error:
            assert "\n" not in str(error) and "rdp" in str(error).lower(), what
            return None


def floor(result) -> float:
    """The certified lower end of ``result``'s ε (its upper end where none is reported)."""
    return result.epsilon if result.epsilon_lower is None else result.epsilon_lower


exponent = st.one_of(st.floats(-300.0, 300.0), st.floats(-3.0, 3.0))
counts = st.one_of(st.integers(1, 100), st.integers(1, 10**12))
delta_exponent = st.floats(-300.0, math.log10(0.5))


@pytest.mark.parametrize("name,kind", ACCOUNTANT_KINDS, ids=[f"{a}-{k}" for a, k in ACCOUNTANT_KINDS])
def test_epsilon_is_monotone_over_the_whole_range(name, kind):
    @settings(max_examples=EXAMPLES.get(name, 12), deadline=None, derandomize=True,
              suppress_health_check=[HealthCheck.filter_too_much, HealthCheck.too_slow])
    @given(u=exponent, count=counts, v=delta_exponent)
    def monotone(u, count, v):
        x, delta = 10.0**u, 10.0**v
        more_uses, noisier, smaller_delta = min(10 * count, 10**12), min(10.0 * x, 1e300), max(delta / 1e3, 1e-300)
        if name in GRID:
            assume(not SLOW_CORNER(kind, x, more_uses))
        base = epsilon_of(name, kind, x, count, delta)
        if base is None:
            return
        assert base.epsilon >= 0.0 and not math.isnan(base.epsilon)
        for label, bigger in (("delta", epsilon_of(name, kind, x, count, smaller_delta)),
                              ("count", epsilon_of(name, kind, x, more_uses, delta))):
            if bigger is None:
                continue
            assert bigger.epsilon >= floor(base), f"not monotone in the {label}: {bigger.epsilon!r} < {floor(base)!r}"
            assert math.isfinite(base.epsilon) or math.isinf(bigger.epsilon), f"finite only at the larger {label}"
        smaller = epsilon_of(name, kind, noisier, count, delta)
        if smaller is not None:
            assert floor(smaller) <= base.epsilon, f"not monotone in the noise: {floor(smaller)!r} > {base.epsilon!r}"
            assert math.isinf(base.epsilon) or math.isfinite(smaller.epsilon), "finite only with less noise"
        if name == "pld":
            routes = ["rdp", "gdp"] if kind == "gaussian" else ["rdp"]
            for other in filter(None, (epsilon_of(route, kind, x, count, delta) for route in routes)):
                slack = ROUNDING if other.accountant == "gdp" else PLDAccountant().target_width
                assert base.epsilon <= other.epsilon * (1 + 1e-9) + slack, f"looser than {other.accountant}: " \
                    f"{base.epsilon!r} > {other.epsilon!r}"

    monotone()


# --------------------------------------------------------------------------- the edges that were ∞ or loose


def test_tree_aggregation_is_finite_monotone_and_exact_at_every_delta():
    """10⁶ uses of tree aggregation (σ = 1e10, 2²⁰ steps: 21 nodes) are one Gaussian of μ = √(21·10⁶)/1e10."""
    event, count = TreeAggregationEvent(1e10, (2**20,)), 10**6
    mu = mp.sqrt(21 * count) / mp.mpf(1e10)
    accountant = PLDAccountant().compose(event, count)
    previous = math.inf
    for delta in (1e-300, 1e-10, 1e-5):
        result = accountant.get_epsilon(delta)
        assert 0.0 < result.epsilon <= previous
        assert ref.gaussian_delta(mu, result.epsilon) <= delta  # a bound on the true ε
        gdp = make_accountant("gdp").compose(event, count).get_epsilon(delta).epsilon
        assert result.epsilon <= gdp * (1 + 1e-9) + ROUNDING  # never looser than exact GDP
        assert any(note.startswith("route: ") for note in result.notes)
        fresh = PLDAccountant().compose(event, count).get_epsilon(delta)
        assert fresh.epsilon <= gdp * (1 + 1e-9) + ROUNDING
        previous = result.epsilon
    # at 1e-300 the tilted grid alone was first order (0.017); the exact value is below 2e-5
    assert previous <= 1e-3


def test_discrete_laplace_million_uses_is_finite_between_finite_values():
    """The FFT's round-off allowance grows with the count and exceeded δ = 1e-10 at 10⁶ uses; tilting at
    δ itself, or RDP, still answers. Every value is at least the pure-DP lower bound of the composition."""
    accountant = PLDAccountant().compose(DiscreteLaplaceEvent(1.0), 10**6)
    values = [accountant.get_epsilon(delta) for delta in (1e-300, 1e-10, 1e-5)]
    assert all(math.isfinite(r.epsilon) for r in values)
    assert values[0].epsilon >= values[1].epsilon >= values[2].epsilon
    assert all(floor(r) <= r.epsilon <= 10**6 for r in values)  # never above basic composition n·ε₀
    assert all(any(note.startswith("route: ") for note in r.notes) for r in values)


@pytest.mark.parametrize("sigma", [1e100, 1e160, 1e300])
def test_almost_noiseless_gaussian_agrees_with_its_own_get_delta(sigma):
    """σ ≥ 1e100: the grid cannot resolve losses of 1e-100, but ε(δ) is finite (exact GDP), and never
    above an ε whose certified δ(ε) from the same accountant is at most δ."""
    accountant = PLDAccountant().compose(GaussianEvent(sigma))
    delta_at_one = accountant.get_delta(1.0).delta
    for delta in (1e-300, 1e-5, 0.5):
        result = accountant.get_epsilon(delta)
        assert math.isfinite(result.epsilon)
        if delta_at_one <= delta:
            assert result.epsilon <= 1.0
        assert ref.gaussian_delta(1 / mp.mpf(sigma), result.epsilon) <= delta


def test_inverting_get_delta_gives_a_sound_epsilon():
    """The last route, used when every other gives ∞: the smallest ε of a ladder whose certified δ(ε) ≤ δ."""
    sigma = 1e160
    accountant = PLDAccountant().compose(GaussianEvent(sigma))
    for delta in (1e-300, 1e-5):
        result = accountant._inverted_delta(delta)
        assert result is not None and result.epsilon <= 1.0
        assert accountant.get_delta(result.epsilon).delta <= delta
        assert ref.gaussian_delta(1 / mp.mpf(sigma), result.epsilon) <= delta
    # pure 2e3-DP: δ(ε) ≥ 1 − e^{ε − 2e3} at every ε of the ladder (at most 1e3), so none certifies δ = 0.5
    assert PLDAccountant().compose(RandomizedResponseEvent(2e3))._inverted_delta(0.5) is None


@pytest.mark.parametrize("name", ["pld", "tightest"])
def test_one_accountant_is_exactly_monotone_in_delta(name):
    """Answers of one accountant at increasing δ never increase (the envelope of earlier answers), even
    where two fresh accountants may differ in their last digits."""
    accountant = make_accountant(name).compose(LaplaceEvent(1e-3))
    values = [accountant.get_epsilon(10.0**v).epsilon for v in (-300, -100, -13, -12, -10, -5)]
    assert values == sorted(values, reverse=True)


# --------------------------------------------------------------------------- closed forms


@settings(max_examples=60, deadline=None, derandomize=True)
@given(u=st.floats(-300.0, 300.0), v=st.floats(-300.0, math.log10(0.5)), w=st.floats(0.0, 3.0))
def test_gaussian_closed_forms_are_monotone(u, v, w):
    """gaussian_epsilon is non-increasing in σ and δ; gaussian_sigma non-increasing in ε and δ; no exception."""
    sigma, delta, factor = 10.0**u, 10.0**v, 10.0**w
    epsilon = gaussian_epsilon(sigma, delta)
    assert epsilon >= 0.0
    assert gaussian_epsilon(min(sigma * factor, 1e300), delta) <= epsilon
    assert gaussian_epsilon(sigma, min(delta * factor, 0.5)) <= epsilon
    target = min(10.0**(u / 3.0), 1e100)  # an ε from 1e-100 to 1e100
    needed = gaussian_sigma(target, delta)
    assert gaussian_sigma(target * factor, delta) <= needed
    assert gaussian_sigma(target, min(delta * factor, 0.5)) <= needed
