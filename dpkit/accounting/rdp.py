"""Rényi-DP accountant: compose RDP curves, convert to (ε, δ) with a continuous order search.

The ledger is turned into one total curve α ↦ Σ count · ε_event(α) (RDP composes additively,
Mironov 2017, Prop. 1). The conversion to (ε, δ) is minimised over a continuous range of orders;
the result records the winning order and whether it sits on the edge of the searched range.

The work is split in three modules with one job each: the curve of every event
(:mod:`dpkit.accounting.rdp_curves`, per-mechanism formulas in
:mod:`dpkit.accounting.rdp_mechanisms`), the conversion to (ε, δ) and the order search
(:mod:`dpkit.accounting.rdp_conversion`, which documents the ``"improved"`` and ``"classic"``
conversions), and the accountant (here). The public names of the first two are re-exported here.
"""

from __future__ import annotations

import math
from collections import Counter
from typing import Sequence

from dpkit.accounting import rdp_mechanisms as rm
from dpkit.accounting.base import Accountant, AccountingResult, check_target_delta, check_target_epsilon
from dpkit.accounting.certify import round_outward
from dpkit.accounting.events import PoissonSampledEvent, PrivacyEvent, SampledWithoutReplacementEvent
from dpkit.accounting.neighbouring import NeighbouringRelation
from dpkit.accounting.rdp_conversion import (
    MAX_ORDER,
    MIN_ORDER,
    check_conversion,
    check_orders,
    epsilon_at,
    epsilon_lower_bound,
    log_delta_at,
    minimise_over_orders,
    rdp_to_delta,
    rdp_to_epsilon,
    safe_up,
)
from dpkit.accounting.rdp_curves import Curve, event_rdp, has_range_term, rdp_curve, sum_curve
from dpkit.accounting.rdp_mechanisms import (  # re-exported: the agreed API names them here
    rdp_gaussian,
    rdp_laplace,
    rdp_poisson_subsampled_gaussian,
    rdp_randomized_response,
)

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

_METHODS = {
    "improved": "RDP to (ε, δ), improved conversion (Balle et al. 2020 Thm 21; Canonne, Kamath & Steinke 2020 Prop. 12)",
    "classic": "RDP to (ε, δ), classic conversion (Mironov 2017 Prop. 3)",
}
_CONVERSION_REFERENCES = {"improved": ("balle2020hypothesis", "canonne2020discrete"), "classic": ()}



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
    A ledger of pure ε-DP steps only is capped at their basic composition Σ count·ε (Dwork & Roth
    2014, Thm 3.16), which the conversion approaches only as α → ∞ and overshoots by its round-off
    margin at huge ε.

    Examples
    --------
    >>> from dpkit.accounting.events import GaussianEvent, PoissonSampledEvent
    >>> acc = RDPAccountant().compose(PoissonSampledEvent(GaussianEvent(1.1), 0.01), 10_000)
    >>> res = acc.get_epsilon(1e-5)
    >>> round(res.epsilon, 3), res.order_on_boundary
    (5.632, False)
    """

    name = "rdp"
    margin_included = True  # every result passes through safe_up (2⁻⁴⁰ relative) or round_outward
    references = ("mironov2017renyi",)

    def __init__(
        self,
        neighbouring: NeighbouringRelation | str = NeighbouringRelation.ADD_REMOVE,
        orders: Sequence[float] | None = None,
        conversion: str = "improved",
    ):
        super().__init__(neighbouring)
        self._orders = None if orders is None else check_orders(orders)
        self._conversion = check_conversion(conversion)

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
        return sum_curve([(rdp_curve(leaf, self._neighbouring), count) for leaf, count in grouped.items()])

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
            return epsilon_at(alpha, curve(alpha), log_delta, self._conversion)

        def tail_bound(alpha: float) -> float:
            return epsilon_lower_bound(alpha, curve(alpha), self._conversion)

        def floor(alpha: float) -> float:  # the conversion with zero RDP
            return epsilon_at(alpha, 0.0, log_delta, self._conversion)

        # The early stop assumes a curve nondecreasing in α, as Rényi divergences are; the sparse-vector
        # bounds with a range term log C(k, c)/(α − 1) decrease at first, so their ledgers scan every order.
        monotone = not any(has_range_term(leaf) for leaf, _ in self.leaves())
        _, order, on_boundary = minimise_over_orders(objective, self._orders, tail_bound if monotone else None, floor)
        epsilon = safe_up(max(objective(order), 0.0))
        notes = self._notes(order, on_boundary)
        pure = self._pure_dp_total()
        if pure is not None and pure < epsilon:
            notes = (*notes, f"capped at the basic composition of the pure-DP steps ({pure!r}; Dwork & Roth 2014, "
                             f"Thm 3.16): the RDP conversion gave {epsilon!r}")
            epsilon = pure
        return self._result(
            epsilon,
            delta,
            _METHODS[self._conversion],
            references=self._references(),
            order=order,
            order_on_boundary=on_boundary,
            notes=notes,
        )

    def _pure_dp_total(self) -> float | None:
        """Σ count·ε of the ledger if every leaf is pure ε-DP (basic composition, Dwork & Roth 2014,
        Thm 3.16, rounded up by its float error), else None. It bounds ε at every δ, and the RDP conversion, which only
        tends to it as α → ∞, can exceed it by its round-off safety margins at huge ε."""
        from dpkit.accounting.approx_dp import _leaf_epsilon_delta
        from dpkit.accounting.base import UnsupportedEventError

        terms = []
        for leaf, count in self.leaves():
            try:
                epsilon, delta = _leaf_epsilon_delta(leaf)
            except UnsupportedEventError:
                return None
            if delta != 0.0:
                return None
            terms.append(epsilon * count)
        total = math.fsum(terms)  # each product and the sum rounded once: within 2⁻⁵² of Σ count·ε
        # moved up by the certified exit's margin (8·2⁻⁵², see margin_included), not by safe_up's 2⁻⁴⁰
        return round_outward(total) if 0.0 < total < math.inf else None

    def get_delta(self, epsilon: float) -> AccountingResult:
        """Smallest certified δ at ``epsilon`` (an upper bound), with the winning order."""
        epsilon = check_target_epsilon(epsilon)
        if not self._ledger:
            return self._result(epsilon, 0.0, "empty ledger")
        curve = self._total_curve()

        def objective(alpha: float) -> float:
            return log_delta_at(alpha, curve(alpha), epsilon, self._conversion)

        _, order, on_boundary = minimise_over_orders(objective, self._orders)
        delta = min(1.0, safe_up(math.exp(objective(order))))
        return self._result(
            epsilon,
            delta,
            _METHODS[self._conversion],
            references=self._references(),
            order=order,
            order_on_boundary=on_boundary,
            notes=self._notes(order, on_boundary),
        )
