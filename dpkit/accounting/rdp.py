"""Rényi-DP accountant: compose RDP curves, convert to (ε, δ) with a continuous order search.

The ledger is turned into one total curve α ↦ Σ count · ε_event(α) (RDP composes additively,
Mironov 2017, Prop. 1). The conversion to (ε, δ) is minimised over a continuous range of orders
(coarse log grid, then bounded Brent on the bracket of the best grid point); the result records
the winning order and whether it sits on the edge of the searched range. Per-mechanism curves
live in :mod:`dpkit.accounting.rdp_mechanisms`.

Conversions (``conversion=``):

``"improved"`` (default)
    ε = ε(α) + log((α−1)/α) − (log δ + log α)/(α−1)
    (Balle et al. 2020, "Hypothesis testing interpretations and Rényi DP", Thm 21;
    Canonne, Kamath & Steinke 2020, arXiv:2004.00010v5, Prop. 12).
``"classic"``
    ε = ε(α) + log(1/δ)/(α−1) (Mironov 2017, Prop. 3).
"""

from __future__ import annotations

import math
from collections import Counter
from typing import Callable, Iterable, Sequence

import numpy as np
from scipy import optimize

from dpkit._validation import check_nonnegative, check_real
from dpkit.accounting import rdp_mechanisms as rm
from dpkit.accounting import rdp_sparse_vector as rsv
from dpkit.accounting.certify import certified
from dpkit.accounting.base import (
    Accountant,
    AccountingResult,
    UnsupportedEventError,
    check_target_delta,
    check_target_epsilon,
    flatten,
)
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
from dpkit.accounting.rdp_mechanisms import (  # re-exported: the agreed API names them here
    rdp_gaussian,
    rdp_laplace,
    rdp_poisson_subsampled_gaussian,
    rdp_randomized_response,
)
from dpkit.accounting.rdp_repeat_select import repeat_and_select_curve
from dpkit.accounting.rdp_shuffled import rdp_shuffled, shuffled_rdp_atoms

__all__ = [
    "RDPAccountant",
    "event_rdp",
    "rdp_curve",
    "rdp_gaussian",
    "rdp_laplace",
    "rdp_poisson_subsampled_gaussian",
    "rdp_randomized_response",
    "rdp_to_epsilon",
    "rdp_to_delta",
    "MIN_ORDER",
    "MAX_ORDER",
]

Curve = Callable[[float], float]

#: Continuous search range of the order α when no orders are given.
MIN_ORDER = 1.0 + 1e-3
MAX_ORDER = 1e6

#: Coarse grid: dense near 1 and over small integers (where DP-SGD optima sit), then log-spaced.
_GRID = np.unique(
    np.concatenate(
        [
            1.0 + np.array([1e-3, 3e-3, 0.01, 0.03, 0.1, 0.2, 0.35, 0.5, 0.75]),
            np.arange(2.0, 33.0),
            np.round(np.geomspace(36.0, MAX_ORDER, 40)),
        ]
    )
)

#: Relative safety margin added to every reported ε (and δ) to cover floating-point error.
_SAFETY = 2.0**-40

_CONVERSIONS = ("improved", "classic")

_METHODS = {
    "improved": "RDP to (ε, δ), improved conversion (Balle et al. 2020 Thm 21; Canonne, Kamath & Steinke 2020 Prop. 12)",
    "classic": "RDP to (ε, δ), classic conversion (Mironov 2017 Prop. 3)",
}
_CONVERSION_REFERENCES = {"improved": ("balle2020hypothesis", "canonne2020discrete"), "classic": ()}


def _check_conversion(conversion: str) -> str:
    if conversion not in _CONVERSIONS:
        raise ValueError(f"conversion must be one of {_CONVERSIONS}, got conversion={conversion!r}")
    return conversion


# --------------------------------------------------------------------------- curves of events


def _pure_epsilon(event: PrivacyEvent) -> float:
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
        return sum(count * _pure_epsilon(leaf) for leaf, count in flatten(event))
    if isinstance(event, ParallelComposedEvent):
        return max(_pure_epsilon(e) for e in event.events)
    return math.inf


def _sum_curve(parts: list[tuple[Curve, int]]) -> Curve:
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
            lambda order, rdp, eps: _log_delta_at(order, rdp, eps, "improved"),
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
        return _sum_curve([(rdp_curve(leaf, relation), count) for leaf, count in grouped.items()])
    if isinstance(event, ParallelComposedEvent):
        curves = [rdp_curve(e, relation) for e in event.events]
        return lambda a: max(c(a) for c in curves)
    if isinstance(event, PoissonSampledEvent):
        return _poisson_curve(event, relation)
    if isinstance(event, SampledWithoutReplacementEvent):
        return _without_replacement_curve(event, relation)
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
    pure = _pure_epsilon(inner)
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
    gamma, eps_inf = event.rate, _pure_epsilon(event.event)

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


# --------------------------------------------------------------------------- conversions


def _epsilon_at(alpha: float, rdp: float, log_delta: float, conversion: str) -> float:
    if math.isinf(rdp):
        return math.inf
    if conversion == "classic":
        return rdp - log_delta / (alpha - 1.0)
    return rdp + math.log1p(-1.0 / alpha) - (log_delta + math.log(alpha)) / (alpha - 1.0)


def _log_delta_at(alpha: float, rdp: float, epsilon: float, conversion: str) -> float:
    if math.isinf(rdp):
        return 0.0
    # (α − 1) amplifies the absolute round-off of the curve (its log-sum-exps carry terms of size ~α):
    # allow 2⁻⁴⁰ of (rdp + ε + 1) per unit of α − 1 (a pure-DP ledger at large α came out 2e-12 low).
    value = (alpha - 1.0) * (rdp - epsilon + 2.0**-40 * (rdp + epsilon + 1.0))
    if conversion == "improved":
        value += (alpha - 1.0) * math.log1p(-1.0 / alpha) - math.log(alpha)
    return min(value, 0.0)


def _safe_up(value: float) -> float:
    if value <= 0.0 or math.isinf(value):
        return max(value, 0.0)
    return math.nextafter(value * (1.0 + _SAFETY), math.inf)


def _check_orders(orders: Iterable[float]) -> np.ndarray:
    values = [check_real("orders", a) for a in orders]
    if not values:
        raise ValueError("orders must be a non-empty sequence of numbers in (1, inf), got orders=[]")
    for a in values:
        if not (a > 1.0 and math.isfinite(a)):
            raise ValueError(f"orders must be in (1, inf), got an order {a}")
    return np.unique(np.array(values, dtype=float))


def _has_range_term(event: PrivacyEvent) -> bool:
    """Whether the event's RDP bound has the decreasing range term of Zhu & Wang (2020), Thm 8."""
    if isinstance(event, GaussianSparseVectorEvent):
        return True
    return isinstance(event, SparseVectorEvent) and event.max_queries is not None


def _minimise(
    objective: Callable[[float], float],
    orders: np.ndarray | None,
    tail_bound: Callable[[float], float] | None = None,
    floor: Callable[[float], float] | None = None,
) -> tuple[float, float, bool]:
    """(value, order, on_boundary) of the minimum of ``objective`` over ``orders`` (exactly) or,
    when ``orders`` is None, over the continuous range [MIN_ORDER, MAX_ORDER].

    Pruning (only orders that cannot win are skipped, so validity is unaffected): the orders
    ≥ 2 are scanned upwards and the scan stops once ``tail_bound(α)`` (a lower bound on
    ``objective`` at every order ≥ α) reaches the best value; the orders below 2 are then
    scanned downwards, skipping those where ``floor(α)`` (a cheap lower bound at α) does."""
    grid = _GRID if orders is None else orders
    values = np.full(len(grid), np.inf)
    best_value = math.inf
    upper = [i for i, a in enumerate(grid) if a >= 2.0]
    lower = [i for i, a in enumerate(grid) if a < 2.0][::-1]
    for part, indices in enumerate((upper, lower)):
        for index in indices:
            alpha = float(grid[index])
            if part == 0 and tail_bound is not None and tail_bound(alpha) >= best_value:
                break
            if part == 1 and floor is not None and floor(alpha) >= best_value:
                continue
            values[index] = objective(alpha)
            if math.isnan(values[index]):  # never let a NaN pick (or hide) the best order
                raise FloatingPointError(f"RDP conversion gave NaN at order {alpha}")
            best_value = min(best_value, values[index])
    best = int(np.argmin(values))
    value, order = float(values[best]), float(grid[best])
    if orders is None and math.isfinite(value):
        low, high = grid[max(best - 1, 0)], grid[min(best + 1, len(grid) - 1)]
        if high > low:
            res = optimize.minimize_scalar(
                objective, bounds=(float(low), float(high)), method="bounded", options={"xatol": 1e-6 * float(low)}
            )
            if res.fun < value:
                value, order = float(objective(float(res.x))), float(res.x)
    if orders is None:  # the refined order lies in the bracket of an end point of the grid
        on_boundary = order <= grid[1] or order >= grid[-2]
    else:
        on_boundary = order <= grid[0] or order >= grid[-1]
    return value, order, bool(on_boundary)


def _epsilon_lower_bound(alpha: float, rdp: float, conversion: str) -> float:
    """A lower bound on the ε of every order α′ ≥ α > 1, given the (nondecreasing) RDP at α.

    Improved: log(1−1/α′) ≥ log(1−1/α), (log(1/δ) − log α′)/(α′−1) ≥ −log α′/(α′−1) ≥ −log α/(α−1)
    (log x/(x−1) decreases on (1, ∞)). Classic: the conversion term is ≥ 0."""
    if conversion == "classic":
        return rdp
    return rdp + math.log1p(-1.0 / alpha) - math.log(alpha) / (alpha - 1.0)


def _check_pairs(orders: Sequence[float], rdp: Sequence[float]) -> tuple[list[float], list[float]]:
    order_list = [float(a) for a in _check_orders(orders)] if len(orders) else []
    if len(order_list) != len(orders) or len(orders) != len(rdp) or not order_list:
        raise ValueError(
            f"orders and rdp must be non-empty, of the same length, with distinct orders; "
            f"got {len(orders)} orders and {len(rdp)} rdp values"
        )
    values = [check_nonnegative("rdp", r, allow_inf=True) for r in rdp]
    pairs = sorted(zip([float(a) for a in orders], values))
    return [a for a, _ in pairs], [r for _, r in pairs]


@certified("epsilon", margin=False)  # (its _safe_up adds 2⁻⁴⁰)
def rdp_to_epsilon(
    orders: Sequence[float], rdp: Sequence[float], delta: float, conversion: str = "improved"
) -> tuple[float, float]:
    """Smallest ε over the given orders for RDP values ``rdp`` at ``delta``: ``(epsilon, order)``.

    An upper bound (rounded up); see the module docstring for the two conversions.

    >>> eps, order = rdp_to_epsilon([2.0, 4.0, 8.0], [0.5, 1.0, 2.0], 1e-5)
    >>> round(eps, 4), order
    (3.2141, 8.0)
    """
    delta = check_target_delta(delta)
    conversion = _check_conversion(conversion)
    order_list, values = _check_pairs(orders, rdp)
    log_delta = math.log(delta)
    eps = [_epsilon_at(a, r, log_delta, conversion) for a, r in zip(order_list, values)]
    best = int(np.argmin(eps))
    return _safe_up(max(eps[best], 0.0)), order_list[best]


@certified("delta", margin=False)  # (its _safe_up adds 2⁻⁴⁰)
def rdp_to_delta(
    orders: Sequence[float], rdp: Sequence[float], epsilon: float, conversion: str = "improved"
) -> tuple[float, float]:
    """Smallest δ over the given orders for RDP values ``rdp`` at ``epsilon``: ``(delta, order)``
    (an upper bound, capped at 1)."""
    epsilon = check_target_epsilon(epsilon)
    conversion = _check_conversion(conversion)
    order_list, values = _check_pairs(orders, rdp)
    logs = [_log_delta_at(a, r, epsilon, conversion) for a, r in zip(order_list, values)]
    best = int(np.argmin(logs))
    return min(1.0, _safe_up(math.exp(logs[best]))), order_list[best]


# --------------------------------------------------------------------------- the accountant


class RDPAccountant(Accountant):
    """Rényi-DP accountant (Mironov 2017) with a continuous search over the order.

    Parameters
    ----------
    neighbouring
        ``"add-remove"`` (default) or ``"replace-one"``. Poisson subsampling needs add/remove,
        sampling without replacement needs replace-one.
    orders
        ``None`` (default): search α over the continuous range [1.001, 10⁶]. A sequence: use
        exactly these orders.
    conversion
        ``"improved"`` (default) or ``"classic"``; see the module docstring.

    Notes
    -----
    Supported events: Gaussian and discrete Gaussian (αΔ²/2σ²; Canonne, Kamath & Steinke 2020
    Thm 4 for the discrete one), Laplace (Mironov 2017 Prop. 6), discrete Laplace (exact, see
    :func:`~dpkit.accounting.rdp_mechanisms.rdp_discrete_laplace`), k-ary randomized response
    (exact), pure DP, (ε, 0)-DP and sparse vector (binary randomized response curve), zCDP (ρα),
    exponential mechanism (min of pure-DP curve and αε²/8), composition, parallel composition
    (pointwise maximum), Poisson-subsampled Gaussian (Mironov, Talwar & Zhang 2019, add/remove),
    Poisson-subsampled Laplace (Zhu & Wang 2019) and pure-DP events (amplified ε′ = log(1+q(e^ε−1))),
    and sampling without replacement of any supported event (Wang, Balle & Kasiviswanathan 2019
    Thm 9, replace-one, integer orders, extended to fractional orders by convexity).
    Unsupported: (ε, δ)-DP with δ > 0, Poisson subsampling of zCDP or composite events.

    Examples
    --------
    >>> from dpkit.accounting.events import GaussianEvent, PoissonSampledEvent
    >>> acc = RDPAccountant().compose(PoissonSampledEvent(GaussianEvent(1.1), 0.01), 10_000)
    >>> res = acc.get_epsilon(1e-5)
    >>> round(res.epsilon, 3), res.order_on_boundary
    (5.632, False)
    """

    name = "rdp"
    margin_included = True  # every result passes through _safe_up (2⁻⁴⁰ relative, ≥ base.OUTWARD_MARGIN)
    references = ("mironov2017renyi",)

    def __init__(
        self,
        neighbouring: NeighbouringRelation | str = NeighbouringRelation.ADD_REMOVE,
        orders: Sequence[float] | None = None,
        conversion: str = "improved",
    ):
        super().__init__(neighbouring)
        self._orders = None if orders is None else _check_orders(orders)
        self._conversion = _check_conversion(conversion)

    @property
    def orders(self) -> tuple[float, ...] | None:
        """The fixed orders, or None for the continuous search."""
        return None if self._orders is None else tuple(float(a) for a in self._orders)

    @property
    def conversion(self) -> str:
        """``"improved"`` or ``"classic"``."""
        return self._conversion

    def _check(self, event: PrivacyEvent) -> None:
        rdp_curve(event, self._neighbouring)

    def _total_curve(self) -> Curve:
        grouped = Counter()
        for leaf, count in self.leaves():
            grouped[leaf] += count
        return _sum_curve([(rdp_curve(leaf, self._neighbouring), count) for leaf, count in grouped.items()])

    def rdp(self, alpha: float) -> float:
        """Total RDP of the ledger at order ``alpha`` (an upper bound)."""
        return float(self._total_curve()(rm.check_order(alpha)))

    def _notes(self, order: float, on_boundary: bool) -> tuple[str, ...]:
        if self._orders is None:
            notes = [f"order searched over the continuous range [{MIN_ORDER}, {MAX_ORDER:g}]"]
        else:
            notes = [f"order chosen from the {len(self._orders)} given orders"]
        if on_boundary:
            notes.append("the best order is on the edge of the searched range; a wider range may give a smaller value")
        if any(isinstance(leaf, SampledWithoutReplacementEvent) for leaf, _ in self.leaves()) and not order.is_integer():
            notes.append("sampling without replacement: fractional order bounded by convex interpolation of integer orders")
        return tuple(notes)

    def _references(self) -> tuple[str, ...]:
        """The conversion's and, where used, the subsampling bound's bibliography keys."""
        leaves = [leaf for leaf, _ in self.leaves()]
        sampling = []
        if any(isinstance(leaf, PoissonSampledEvent) for leaf in leaves):
            sampling.append("mironov2019sampled")
        if any(isinstance(leaf, SampledWithoutReplacementEvent) for leaf in leaves):
            sampling.append("wang2019subsampled")
        return (*_CONVERSION_REFERENCES[self._conversion], *sampling)

    def get_epsilon(self, delta: float) -> AccountingResult:
        """Smallest certified ε at ``delta`` (an upper bound), with the winning order."""
        delta = check_target_delta(delta)
        if not self._ledger:
            return self._result(0.0, delta, "empty ledger")
        curve, log_delta = self._total_curve(), math.log(delta)

        def objective(alpha: float) -> float:
            return _epsilon_at(alpha, curve(alpha), log_delta, self._conversion)

        def tail_bound(alpha: float) -> float:
            return _epsilon_lower_bound(alpha, curve(alpha), self._conversion)

        def floor(alpha: float) -> float:  # the conversion with zero RDP
            return _epsilon_at(alpha, 0.0, log_delta, self._conversion)

        # The early stop assumes a curve nondecreasing in α, as Rényi divergences are; the sparse-vector
        # bounds with a range term log C(k, c)/(α − 1) decrease at first, so their ledgers scan every order.
        monotone = not any(_has_range_term(leaf) for leaf, _ in self.leaves())
        _, order, on_boundary = _minimise(objective, self._orders, tail_bound if monotone else None, floor)
        epsilon = _safe_up(max(objective(order), 0.0))
        return self._result(
            epsilon,
            delta,
            _METHODS[self._conversion],
            references=self._references(),
            order=order,
            order_on_boundary=on_boundary,
            notes=self._notes(order, on_boundary),
        )

    def get_delta(self, epsilon: float) -> AccountingResult:
        """Smallest certified δ at ``epsilon`` (an upper bound), with the winning order."""
        epsilon = check_target_epsilon(epsilon)
        if not self._ledger:
            return self._result(epsilon, 0.0, "empty ledger")
        curve = self._total_curve()

        def objective(alpha: float) -> float:
            return _log_delta_at(alpha, curve(alpha), epsilon, self._conversion)

        _, order, on_boundary = _minimise(objective, self._orders)
        delta = min(1.0, _safe_up(math.exp(objective(order))))
        return self._result(
            epsilon,
            delta,
            _METHODS[self._conversion],
            references=self._references(),
            order=order,
            order_on_boundary=on_boundary,
            notes=self._notes(order, on_boundary),
        )
