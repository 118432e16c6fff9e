"""Conversion of an RDP curve to (ε, δ), minimised over the order α.

Conversions (``conversion=``):

``"improved"`` (default)
    ε = ε(α) + log((α−1)/α) − (log δ + log α)/(α−1)
    (Balle et al. 2020, "Hypothesis testing interpretations and Rényi DP", Thm 21;
    Canonne, Kamath & Steinke 2020, arXiv:2004.00010v5, Prop. 12).
``"classic"``
    ε = ε(α) + log(1/δ)/(α−1) (Mironov 2017, Prop. 3).

Without given orders the minimum is taken over a continuous range [MIN_ORDER, MAX_ORDER]
(coarse log grid, then bounded Brent on the bracket of the best grid point); see
:func:`minimise_over_orders`.
"""

from __future__ import annotations

import math
from typing import Callable, Iterable, Sequence

import numpy as np
from scipy import optimize

from dpkit._validation import check_nonnegative, check_real
from dpkit.accounting.base import check_target_delta, check_target_epsilon
from dpkit.accounting.certify import certified

__all__ = [
    "CONVERSIONS",
    "MIN_ORDER",
    "MAX_ORDER",
    "check_conversion",
    "check_orders",
    "epsilon_at",
    "epsilon_lower_bound",
    "log_delta_at",
    "minimise_over_orders",
    "rdp_to_delta",
    "rdp_to_epsilon",
    "safe_up",
]

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

CONVERSIONS = ("improved", "classic")


def check_conversion(conversion: str) -> str:
    """``conversion`` if it is one of :data:`CONVERSIONS`, else a one-line ValueError."""
    if conversion not in CONVERSIONS:
        raise ValueError(f"conversion must be one of {CONVERSIONS}, got conversion={conversion!r}")
    return conversion


def epsilon_at(alpha: float, rdp: float, log_delta: float, conversion: str) -> float:
    """ε at order α from RDP value ``rdp`` and log δ (see the module docstring for the formulas)."""
    if math.isinf(rdp):
        return math.inf
    if conversion == "classic":
        return rdp - log_delta / (alpha - 1.0)
    return rdp + math.log1p(-1.0 / alpha) - (log_delta + math.log(alpha)) / (alpha - 1.0)


def log_delta_at(alpha: float, rdp: float, epsilon: float, conversion: str) -> float:
    """log δ (≤ 0) at order α from RDP value ``rdp`` and ε: the conversion solved for δ."""
    if math.isinf(rdp):
        return 0.0
    # (α − 1) amplifies the absolute round-off of the curve (its log-sum-exps carry terms of size ~α):
    # allow 2⁻⁴⁰ of (rdp + ε + 1) per unit of α − 1 (a pure-DP ledger at large α came out 2e-12 low).
    value = (alpha - 1.0) * (rdp - epsilon + 2.0**-40 * (rdp + epsilon + 1.0))
    if conversion == "improved":
        value += (alpha - 1.0) * math.log1p(-1.0 / alpha) - math.log(alpha)
    return min(value, 0.0)


def safe_up(value: float) -> float:
    """``value`` raised by the relative margin 2⁻⁴⁰ and one ulp (0 stays 0, ∞ stays ∞)."""
    if value <= 0.0 or math.isinf(value):
        return max(value, 0.0)
    return math.nextafter(value * (1.0 + _SAFETY), math.inf)


def check_orders(orders: Iterable[float]) -> np.ndarray:
    """The distinct orders, sorted, each in (1, ∞); a one-line ValueError otherwise."""
    values = [check_real("orders", a) for a in orders]
    if not values:
        raise ValueError("orders must be a non-empty sequence of numbers in (1, inf), got orders=[]")
    for a in values:
        if not (a > 1.0 and math.isfinite(a)):
            raise ValueError(f"orders must be in (1, inf), got an order {a}")
    return np.unique(np.array(values, dtype=float))


def minimise_over_orders(
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


def epsilon_lower_bound(alpha: float, rdp: float, conversion: str) -> float:
    """A lower bound on the ε of every order α′ ≥ α > 1, given the (nondecreasing) RDP at α.

    Improved: log(1−1/α′) ≥ log(1−1/α), (log(1/δ) − log α′)/(α′−1) ≥ −log α′/(α′−1) ≥ −log α/(α−1)
    (log x/(x−1) decreases on (1, ∞)). Classic: the conversion term is ≥ 0."""
    if conversion == "classic":
        return rdp
    return rdp + math.log1p(-1.0 / alpha) - math.log(alpha) / (alpha - 1.0)


def _check_pairs(orders: Sequence[float], rdp: Sequence[float]) -> tuple[list[float], list[float]]:
    order_list = [float(a) for a in check_orders(orders)] if len(orders) else []
    if len(order_list) != len(orders) or len(orders) != len(rdp) or not order_list:
        raise ValueError(
            f"orders and rdp must be non-empty, of the same length, with distinct orders; "
            f"got {len(orders)} orders and {len(rdp)} rdp values"
        )
    values = [check_nonnegative("rdp", r, allow_inf=True) for r in rdp]
    pairs = sorted(zip([float(a) for a in orders], values))
    return [a for a, _ in pairs], [r for _, r in pairs]


@certified("epsilon", margin=False)  # (its safe_up adds 2⁻⁴⁰)
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
    conversion = check_conversion(conversion)
    order_list, values = _check_pairs(orders, rdp)
    log_delta = math.log(delta)
    eps = [epsilon_at(a, r, log_delta, conversion) for a, r in zip(order_list, values)]
    best = int(np.argmin(eps))
    return safe_up(max(eps[best], 0.0)), order_list[best]


@certified("delta", margin=False)  # (its safe_up adds 2⁻⁴⁰)
def rdp_to_delta(
    orders: Sequence[float], rdp: Sequence[float], epsilon: float, conversion: str = "improved"
) -> tuple[float, float]:
    """Smallest δ over the given orders for RDP values ``rdp`` at ``epsilon``: ``(delta, order)``
    (an upper bound, capped at 1)."""
    epsilon = check_target_epsilon(epsilon)
    conversion = check_conversion(conversion)
    order_list, values = _check_pairs(orders, rdp)
    logs = [log_delta_at(a, r, epsilon, conversion) for a, r in zip(order_list, values)]
    best = int(np.argmin(logs))
    return min(1.0, safe_up(math.exp(logs[best]))), order_list[best]


