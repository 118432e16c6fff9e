"""The accountant contract, checked for every accountant and every event kind (wrappers included).

In the manner of dp_accounting's abstract accountant tests, one suite states what every
accountant owes its caller, and runs it over the whole parameter range (Hypothesis draws noise
σ or 1/ε₀ from 1e-300 to 1e300, counts from 1 to 1e12, δ from 1e-300 to 0.5):

1. An event an accountant does not handle is refused by ``compose`` with
   :class:`~dpkit.accounting.base.UnsupportedEventError`, and ``supports`` says so first.
2. Every answer is a certified upper bound: never NaN, never an ε ≤ 0 or δ = 0 for a release,
   and never below an independent lower reference (:mod:`contract_references`, mpmath at 50
   digits: exact for Gaussians, one Laplace use, k-ary randomized response and pure DP; the
   attained pair for sampled Gaussians; a generalised randomized response for bounded range).
3. Where the accountant composes pure DP by basic composition (``approx``), the answer never
   exceeds the basic-composition bound n·ε₀ (Dwork & Roth 2014, Thm 3.16).
4. Monotone: more uses never lower ε, more noise never raises it, a smaller δ never lowers it.
   Comparisons use the certified lower end where an accountant reports one (an upper bound of
   the larger guarantee need only exceed the lower end of the smaller one).
5. Each call answers within :data:`STATED_SECONDS`, or refuses in one line that names a faster
   route (the PLD's grid limit names the RDP accountant).
"""

from __future__ import annotations

import dataclasses
import math
import os
from typing import Callable

import mpmath as mp
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import contract_references as ref
from time_limit import time_limit
from dpkit.accounting.analytic_gaussian import AnalyticGaussianAccountant
from dpkit.accounting.approx_dp import ApproxDPAccountant
from dpkit.accounting.base import UnsupportedEventError
from dpkit.accounting.events import (
    ExponentialMechanismEvent,
    GaussianEvent,
    GaussianSparseVectorEvent,
    LaplaceEvent,
    ObjectivePerturbationEvent,
    ParallelComposedEvent,
    PoissonSampledEvent,
    RandomAllocationEvent,
    PureDPEvent,
    RandomizedResponseEvent,
    RepeatAndSelectEvent,
    SampledWithoutReplacementEvent,
    ShuffledEvent,
    SparseVectorEvent,
    TreeAggregationEvent,
    compose,
    repeat,
)
from dpkit.accounting.gdp import GDPAccountant
from dpkit.accounting.pld import PLDAccountant
from dpkit.accounting.pld.mechanisms import GridTooLargeError
from dpkit.accounting.rdp import RDPAccountant
from dpkit.accounting.tightest import TightestAccountant
from dpkit.accounting.zcdp import ZCDPAccountant

STATED_SECONDS = 60
"""Every query answers within this (on one shared core), or refuses naming a faster route."""

ACCOUNTANTS: dict[str, Callable] = {
    "rdp": RDPAccountant,
    "zcdp": ZCDPAccountant,
    "pld": PLDAccountant,
    "gdp": GDPAccountant,
    "analytic": AnalyticGaussianAccountant,
    "approx": ApproxDPAccountant,
    "tightest": TightestAccountant,
}

SAMPLE, POPULATION = 10, 200
RATE = 0.05
TREE_STEPS = 8  # ⌊log₂ 8⌋ + 1 = 4 nodes per record


@dataclasses.dataclass(frozen=True)
class Kind:
    """An event family in one noise parameter x (σ or scale, or 1/ε₀: larger x = more noise)."""

    name: str
    build: Callable[[float], object]
    reference: Callable[[float, int, object], mp.mpf] | None = None  # (x, count, ε) → lower bound on δ(ε)
    pure: Callable[[float], float] | None = None  # per-use pure ε, when the event is pure DP
    relation: str = "add-remove"


def _rr_reference(k: int):
    def reference(x: float, count: int, epsilon) -> mp.mpf:
        return ref.randomized_response_delta(1.0 / x, k, count if count <= 12 else 1, epsilon)
    return reference


KINDS = [
    Kind("gaussian", lambda x: GaussianEvent(x),
         lambda x, n, e: ref.gaussian_delta(mp.sqrt(n) / mp.mpf(x), e)),
    Kind("laplace", lambda x: LaplaceEvent(x), lambda x, n, e: ref.laplace_delta(1 / mp.mpf(x), e), lambda x: 1.0 / x),
    Kind("randomized_response", lambda x: RandomizedResponseEvent(1.0 / x), _rr_reference(2), lambda x: 1.0 / x),
    Kind("randomized_response_k5", lambda x: RandomizedResponseEvent(1.0 / x, 5), _rr_reference(5), lambda x: 1.0 / x),
    Kind("pure_dp", lambda x: PureDPEvent(1.0 / x), _rr_reference(2), lambda x: 1.0 / x),
    Kind("exponential", lambda x: ExponentialMechanismEvent(1.0 / x),
         lambda x, n, e: ref.bounded_range_delta(1 / mp.mpf(x), e), lambda x: 1.0 / x),
    Kind("poisson_gaussian", lambda x: PoissonSampledEvent(GaussianEvent(x), RATE),
         lambda x, n, e: ref.subsampled_gaussian_delta(1 / mp.mpf(x), RATE, e)),
    Kind("random_allocation_gaussian", lambda x: RandomAllocationEvent(GaussianEvent(x), 10)),
    Kind("without_replacement_gaussian", lambda x: SampledWithoutReplacementEvent(GaussianEvent(x), SAMPLE, POPULATION),
         lambda x, n, e: ref.subsampled_gaussian_delta(1 / mp.mpf(x), mp.mpf(SAMPLE) / POPULATION, e),
         relation="replace-one"),
    Kind("self_composed", lambda x: repeat(GaussianEvent(x), 3),
         lambda x, n, e: ref.gaussian_delta(mp.sqrt(3 * n) / mp.mpf(x), e)),
    Kind("composed", lambda x: compose(GaussianEvent(x), LaplaceEvent(x)),
         lambda x, n, e: max(ref.gaussian_delta(mp.sqrt(n) / mp.mpf(x), e), ref.laplace_delta(1 / mp.mpf(x), e))),
    Kind("parallel", lambda x: ParallelComposedEvent((GaussianEvent(x), GaussianEvent(2.0 * x))),
         lambda x, n, e: ref.gaussian_delta(mp.sqrt(n) / mp.mpf(x), e)),
    Kind("tree_aggregation", lambda x: TreeAggregationEvent(x, (TREE_STEPS,)),
         lambda x, n, e: ref.gaussian_delta(mp.sqrt(4 * n) / mp.mpf(x), e)),
    Kind("repeat_and_select", lambda x: RepeatAndSelectEvent(GaussianEvent(x), 3.0)),
    Kind("shuffling", lambda x: ShuffledEvent(1.0 / x, 100), relation="replace-one"),
    Kind("sparse_vector", lambda x: SparseVectorEvent(1.0 / x, 1.0 / x), pure=lambda x: 2.0 / x),
    Kind("gaussian_sparse_vector", lambda x: GaussianSparseVectorEvent(x, x, 10)),
    Kind("objective_perturbation", lambda x: ObjectivePerturbationEvent(x, 1.0, 0.5)),
]

PAIRS = [(a, k) for a in ACCOUNTANTS for k in KINDS]
_SUPPORTED = {(a, k.name): ACCOUNTANTS[a](k.relation).supports(k.build(1.0)) for a, k in PAIRS}
SUPPORTED = [(a, k) for a, k in PAIRS if _SUPPORTED[(a, k.name)]]
UNSUPPORTED = [(a, k) for a, k in PAIRS if not _SUPPORTED[(a, k.name)]]


def stated_time(what: str):
    """Fail the query if it runs beyond :data:`STATED_SECONDS`."""
    return time_limit(STATED_SECONDS, what)


class Refused(Exception):
    """The accountant declined in one line naming a faster route."""


def query(accountant: str, kind: Kind, x: float, count: int, method: str, value: float):
    """``get_epsilon(value)`` or ``get_delta(value)`` of ``count`` uses, within the stated time."""
    what = f"{accountant}.{method}({value!r}) of {count} x {kind.name}(x={x!r})"
    with stated_time(what):
        try:
            acc = ACCOUNTANTS[accountant](kind.relation).compose(kind.build(x), count)
            return getattr(acc, method)(value)
        except GridTooLargeError as error:
            message = str(error)
            assert "\n" not in message and "rdp" in message.lower(), f"{what}: refusal must name a faster route"
            raise Refused(message) from None


def lower_end(result, key: str) -> float:
    lower = getattr(result, f"{key}_lower")
    return getattr(result, key) if lower is None else lower


noise = st.one_of(st.floats(-2.0, 2.0), st.floats(-300.0, 300.0)).map(lambda u: 10.0**u)
counts = st.one_of(st.integers(1, 12), st.integers(1, 10**12))
deltas = st.floats(-300.0, math.log10(0.5)).map(lambda u: 10.0**u)
GRID_ACCOUNTANTS = ("pld", "tightest")
"""Accountants whose queries build grids: by default drawn with noise x ∈ [0.3, 1e6], δ ≥ 1e-12 and
counts ≤ 100 (a query there takes about a second at most); the whole range (tilted δ down to 1e-300,
counts to 1e12, near-noiseless steps whose losses span thousands: queries of 10–50 s, which the
stated time still bounds) runs with DPKIT_CONTRACT_FULL=1."""
FULL = os.environ.get("DPKIT_CONTRACT_FULL") == "1"
FEW_EXAMPLES = {"shuffling": 2, "poisson_gaussian": 2, "repeat_and_select": 3, "random_allocation_gaussian": 2}
"""Kinds whose single query costs up to seconds run fewer examples by default (DPKIT_CONTRACT_EXAMPLES overrides)."""
SLOW_CORNERS = {"without_replacement_gaussian": (st.floats(math.log10(0.3), 1.5), st.integers(1, 10), -8.0)}
"""Default-range limits (noise exponent, counts, smallest δ exponent) for kinds whose PLD grid is not
yet sized from the target width: there queries of 5–50 s occur (e.g. x = 1, 35 uses, δ = 1e-12)."""
grid_noise = noise if FULL else st.floats(math.log10(0.3), 6.0).map(lambda u: 10.0**u)
grid_counts = counts if FULL else st.integers(1, 100)
grid_deltas = deltas if FULL else st.floats(-12.0, math.log10(0.5)).map(lambda u: 10.0**u)


# --------------------------------------------------------------------------- 1. unsupported events


@pytest.mark.parametrize("accountant,kind", UNSUPPORTED, ids=[f"{a}-{k.name}" for a, k in UNSUPPORTED])
def test_unsupported_event_is_refused_by_compose(accountant, kind):
    acc = ACCOUNTANTS[accountant](kind.relation)
    with pytest.raises(UnsupportedEventError):
        acc.compose(kind.build(1.0))
    assert acc.ledger == ()  # nothing recorded


def test_every_kind_has_an_accountant_and_every_accountant_a_kind():
    assert {k.name for _, k in SUPPORTED} == {k.name for k in KINDS}
    assert {a for a, _ in SUPPORTED} == set(ACCOUNTANTS)


# --------------------------------------------------------------------------- 2–5. the contract


def _check_epsilon(accountant: str, kind: Kind, x: float, count: int, delta: float, result) -> None:
    epsilon = result.epsilon
    assert not math.isnan(epsilon) and epsilon > 0.0, f"epsilon={epsilon!r} for a release"
    if kind.reference is not None and math.isfinite(epsilon):
        assert kind.reference(x, count, epsilon) <= delta, f"epsilon={epsilon!r} below the reference"
    if kind.pure is not None and accountant == "approx":
        basic = count * kind.pure(x)
        assert epsilon <= basic * (1.0 + 2.0**-30), f"epsilon={epsilon!r} above basic composition {basic!r}"


def _check_delta(kind: Kind, x: float, count: int, epsilon: float, result) -> None:
    delta = result.delta
    assert not math.isnan(delta) and 0.0 < delta <= 1.0, f"delta={delta!r} for a release"
    if kind.reference is not None:
        # (a reference δ near 1 may exceed 1 by its last digit: δ = 1 is the largest value there is)
        assert delta >= min(kind.reference(x, count, epsilon), 1), f"delta={delta!r} below the reference"


@pytest.mark.parametrize("accountant,kind", SUPPORTED, ids=[f"{a}-{k.name}" for a, k in SUPPORTED])
def test_accountant_contract(accountant, kind):
    grid = accountant in GRID_ACCOUNTANTS
    examples = int(os.environ.get("DPKIT_CONTRACT_EXAMPLES", FEW_EXAMPLES.get(kind.name, 4 if grid else 8)))
    x_draw, count_draw, delta_draw = (grid_noise, grid_counts, grid_deltas) if grid else (noise, counts, deltas)
    if grid and not FULL and kind.name in SLOW_CORNERS:
        exponents, count_draw, smallest = SLOW_CORNERS[kind.name]
        x_draw = exponents.map(lambda u: 10.0**u)
        delta_draw = st.floats(smallest, math.log10(0.5)).map(lambda u: 10.0**u)

    @settings(max_examples=examples)
    @given(x=x_draw, count=count_draw, delta=delta_draw)
    def contract(x, count, delta):
        try:
            base = query(accountant, kind, x, count, "get_epsilon", delta)
        except Refused:
            return
        _check_epsilon(accountant, kind, x, count, delta, base)
        floor = lower_end(base, "epsilon")
        for label, args in (("count", (x, min(2 * count, 10**12), delta)), ("delta", (x, count, delta / 10.0))):
            try:
                bigger = query(accountant, kind, args[0], args[1], "get_epsilon", args[2])
            except Refused:
                continue
            assert bigger.epsilon >= floor, f"not monotone in {label}: {bigger.epsilon!r} < {floor!r}"
        try:
            noisier = query(accountant, kind, 2.0 * x, count, "get_epsilon", delta)
            assert noisier.epsilon <= base.epsilon or lower_end(noisier, "epsilon") <= base.epsilon, \
                f"not monotone in the noise: {noisier.epsilon!r} > {base.epsilon!r}"
        except Refused:
            pass
        if math.isfinite(base.epsilon):
            epsilon = base.epsilon / 2.0
            try:
                _check_delta(kind, x, count, epsilon, query(accountant, kind, x, count, "get_delta", epsilon))
            except Refused:
                pass

    contract()
