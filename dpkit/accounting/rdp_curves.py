"""RDP curves α ↦ ε(α) of privacy events: dispatch from an event to its (upper-bound) curve.

Per-mechanism formulas live in :mod:`dpkit.accounting.rdp_mechanisms` (and the sparse-vector,
bounded-range, repeat-and-select and shuffling modules); this module maps each event type, its
compositions and its subsampled forms to them. Composition adds curves (Mironov 2017, Prop. 1),
parallel composition takes their pointwise maximum.
"""

from __future__ import annotations

import math
from collections import Counter
from typing import Callable

from dpkit.accounting import rdp_mechanisms as rm
from dpkit.accounting import rdp_sparse_vector as rsv
from dpkit.accounting.base import UnsupportedEventError, flatten
from dpkit.accounting.events import (
    ApproxDPEvent,
    ComposedEvent,
    DiscreteGaussianEvent,
    DiscreteLaplaceEvent,
    ExponentialMechanismEvent,
    GaussianEvent,
    GaussianSparseVectorEvent,
    LaplaceEvent,
    ObjectivePerturbationEvent,
    ParallelComposedEvent,
    PoissonSampledEvent,
    PrivacyEvent,
    PureDPEvent,
    RandomAllocationEvent,
    RandomizedResponseEvent,
    RepeatAndSelectEvent,
    SampledWithoutReplacementEvent,
    SelfComposedEvent,
    ShuffledEvent,
    SparseVectorEvent,
    TreeAggregationEvent,
    ZCDPEvent,
)
from dpkit.accounting.neighbouring import NeighbouringRelation
from dpkit.accounting.rdp_bounded_range import rdp_bounded_range
from dpkit.accounting.rdp_conversion import log_delta_at
from dpkit.accounting.rdp_random_allocation import random_allocation_curve
from dpkit.accounting.rdp_repeat_select import repeat_and_select_curve
from dpkit.accounting.rdp_shuffled import rdp_shuffled, shuffled_rdp_atoms
from dpkit.accounting.rdp_without_replacement_gaussian import rdp_sampled_without_replacement_gaussian

__all__ = ["Curve", "event_rdp", "has_range_term", "pure_epsilon", "rdp_curve", "sum_curve"]

Curve = Callable[[float], float]


def pure_epsilon(event: PrivacyEvent) -> float:
    """ε∞: the pure-DP parameter of an event (``inf`` when it has none), for Wang et al.'s bound."""
    if isinstance(event, LaplaceEvent):
        return event.epsilon
    if isinstance(event, DiscreteLaplaceEvent):
        return event.sensitivity / event.scale
    if isinstance(event, (RandomizedResponseEvent, PureDPEvent, ExponentialMechanismEvent, SparseVectorEvent)):
        return event.epsilon
    if isinstance(event, ApproxDPEvent) and event.delta == 0.0:
        return event.epsilon
    if isinstance(event, (ComposedEvent, SelfComposedEvent)):
        return sum(count * pure_epsilon(leaf) for leaf, count in flatten(event))
    if isinstance(event, ParallelComposedEvent):
        return max(pure_epsilon(e) for e in event.events)
    return math.inf


def sum_curve(parts: list[tuple[Curve, int]]) -> Curve:
    """α ↦ Σ count · curve(α): the curve of a composition (Mironov 2017, Prop. 1)."""
    return lambda alpha: sum(count * curve(alpha) for curve, count in parts)


def rdp_curve(event: PrivacyEvent, neighbouring: NeighbouringRelation | str = "add-remove") -> Curve:
    """The RDP curve α ↦ ε(α) (an upper bound, for every α > 1) of ``event``.

    Raises
    ------
    UnsupportedEventError
        If the event (or a sub-event) has no RDP curve under ``neighbouring``.
    """
    relation = NeighbouringRelation.parse(neighbouring)
    if not isinstance(event, PrivacyEvent):
        raise TypeError(f"event must be a PrivacyEvent, got event={event!r}")
    if isinstance(event, (GaussianEvent, DiscreteGaussianEvent)):
        z = event.sigma / event.sensitivity
        return lambda a: rm.rdp_gaussian(a, z)
    if isinstance(event, LaplaceEvent):
        return lambda a: rm.rdp_laplace(a, event.scale, event.sensitivity)
    if isinstance(event, DiscreteLaplaceEvent):
        return lambda a: rm.rdp_discrete_laplace(a, event.scale, event.sensitivity)
    if isinstance(event, RandomizedResponseEvent):
        return lambda a: rm.rdp_randomized_response(a, event.epsilon, event.k)
    if isinstance(event, SparseVectorEvent):
        return lambda a: rsv.rdp_laplace_sparse_vector(a, event.epsilon1, event.epsilon2, event.cutoff,
                                                       event.max_queries)
    if isinstance(event, GaussianSparseVectorEvent):
        z1, z2 = event.threshold_sigma / event.sensitivity, event.query_sigma / event.sensitivity
        return lambda a: rsv.rdp_gaussian_sparse_vector(a, z1, z2, event.cutoff, event.max_queries, event.monotonic)
    if isinstance(event, PureDPEvent):
        return lambda a: rm.rdp_pure_dp(a, event.epsilon)
    if isinstance(event, ApproxDPEvent):
        if event.delta > 0.0:
            raise UnsupportedEventError(
                event, "an (ε, δ)-DP event with δ > 0 has no finite Rényi divergence in general; use the PLD or approx accountant"
            )
        return lambda a: rm.rdp_pure_dp(a, event.epsilon)
    if isinstance(event, ZCDPEvent):
        return lambda a: rm.rdp_zcdp(a, event.rho)
    if isinstance(event, ExponentialMechanismEvent):
        return lambda a: rdp_bounded_range(a, event.epsilon)
    if isinstance(event, TreeAggregationEvent):
        return lambda a: rm.rdp_gaussian(a, event.noise_multiplier)
    if isinstance(event, RepeatAndSelectEvent):
        return repeat_and_select_curve(
            rdp_curve(event.event, relation), event.mean, event.shape,
            lambda order, rdp, eps: log_delta_at(order, rdp, eps, "improved"),
        )
    if isinstance(event, ShuffledEvent):
        if relation is not NeighbouringRelation.REPLACE_ONE:
            raise UnsupportedEventError(
                event, "amplification by shuffling is analysed under replace-one neighbours (Feldman, McMillan & "
                "Talwar 2021); use neighbouring='replace-one'",
            )
        try:
            shuffled_rdp_atoms(event.epsilon0, event.n_users)
        except ValueError as error:
            raise UnsupportedEventError(event, str(error)) from None
        return lambda a: rdp_shuffled(a, event.epsilon0, event.n_users)
    if isinstance(event, ObjectivePerturbationEvent):
        return lambda a: rm.rdp_objective_perturbation(a, event.noise_multiplier, event.jacobian)
    if isinstance(event, (ComposedEvent, SelfComposedEvent)):
        grouped = Counter()
        for leaf, count in flatten(event):
            grouped[leaf] += count
        return sum_curve([(rdp_curve(leaf, relation), count) for leaf, count in grouped.items()])
    if isinstance(event, ParallelComposedEvent):
        curves = [rdp_curve(e, relation) for e in event.events]
        return lambda a: max(c(a) for c in curves)
    if isinstance(event, PoissonSampledEvent):
        return _poisson_curve(event, relation)
    if isinstance(event, SampledWithoutReplacementEvent):
        return _without_replacement_curve(event, relation)
    if isinstance(event, RandomAllocationEvent):  # Feldman & Shenfeld 2025, Gaussian only
        return random_allocation_curve(event, relation)
    raise UnsupportedEventError(event, "no RDP curve is known for this event type")


def _poisson_curve(event: PoissonSampledEvent, relation: NeighbouringRelation) -> Curve:
    inner = event.event
    if event.rate == 1.0:
        return rdp_curve(inner, relation)
    if relation is not NeighbouringRelation.ADD_REMOVE:
        raise UnsupportedEventError(
            event,
            "Poisson subsampling is analysed under add/remove neighbours (Mironov, Talwar & Zhang 2019); "
            "use neighbouring='add-remove' or sampling without replacement under replace-one",
        )
    q = event.rate
    if isinstance(inner, GaussianEvent):
        z = inner.sigma / inner.sensitivity
        return lambda a: rm.rdp_poisson_subsampled_gaussian(a, q, z)
    if isinstance(inner, LaplaceEvent):
        return lambda a: rm.rdp_poisson_subsampled_laplace(a, q, inner.scale, inner.sensitivity)
    pure = pure_epsilon(inner)
    if math.isfinite(pure):  # any ε-DP event: amplified pure DP, then the randomized response curve
        amplified = rm.amplified_pure_epsilon(pure, q)
        return lambda a: rm.rdp_pure_dp(a, amplified)
    raise UnsupportedEventError(
        event,
        "Poisson subsampling is supported for a single Gaussian or Laplace event and for pure-DP events, "
        f"got {type(inner).__name__}",
    )


def _without_replacement_curve(event: SampledWithoutReplacementEvent, relation: NeighbouringRelation) -> Curve:
    if relation is not NeighbouringRelation.REPLACE_ONE:
        raise UnsupportedEventError(
            event,
            "sampling without replacement is analysed under replace-one neighbours (Wang, Balle & "
            "Kasiviswanathan 2019); use neighbouring='replace-one'",
        )
    base = rdp_curve(event.event, relation)
    if event.sample_size == event.population_size:
        return base
    gamma, eps_inf = event.rate, pure_epsilon(event.event)
    leaves = list(flatten(event.event))
    if all(type(leaf) is GaussianEvent for leaf, _ in leaves):
        # Gaussians on the same subset compose into one of z = (Σ count·(Δ/σ)²)^{-1/2} (their RDP curves add).
        ratios = [(leaf.sensitivity / leaf.sigma, count) for leaf, count in leaves]
        top = max(r for r, _ in ratios)  # scaled, so that tiny ratios do not underflow when squared
        z = 1.0 / (top * math.sqrt(math.fsum(count * (r / top) ** 2 for r, count in ratios)))

        def integer_curve(alpha: int) -> float:  # Wang et al. 2019, Thm 27: never above the generic Thm 9
            return rdp_sampled_without_replacement_gaussian(alpha, z, gamma)
    else:

        def integer_curve(alpha: int) -> float:
            return rm.rdp_sampled_without_replacement(alpha, base, eps_inf, gamma)

    cache: dict[int, float] = {}

    def cached(alpha: int) -> float:
        if alpha not in cache:
            cache[alpha] = integer_curve(alpha)
        return cache[alpha]

    def curve(alpha: float) -> float:
        if alpha > 4096:  # the bound's sum has α terms; above this use the base curve (valid)
            return base(alpha)
        return rm.interpolate_integer_curve(alpha, cached)

    return curve


def event_rdp(event: PrivacyEvent, alpha: float, neighbouring: NeighbouringRelation | str = "add-remove") -> float:
    """RDP of ``event`` at order ``alpha`` (an upper bound); see :func:`rdp_curve`."""
    return float(rdp_curve(event, neighbouring)(rm.check_order(alpha)))


def has_range_term(event: PrivacyEvent) -> bool:
    """Whether the event's RDP bound has the decreasing range term of Zhu & Wang (2020), Thm 8."""
    if isinstance(event, GaussianSparseVectorEvent):
        return True
    return isinstance(event, SparseVectorEvent) and event.max_queries is not None
