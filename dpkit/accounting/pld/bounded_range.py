"""Privacy-loss distribution of ε-bounded-range mechanisms (the exponential mechanism).

Every ε-BR pair is a post-processing of the generalised randomized response with some
t ∈ [0, ε] (Dong, Durfee & Rogers 2020, "Optimal differential privacy composition for
exponential mechanisms", ICML, §4): two outcomes of privacy loss t and t − ε, P-masses p_t and
1 − p_t with p_t = (e^ε − e^t)/(e^ε − 1). Its hockey-stick divergence at ε′ ∈ [0, ε] is
p_t (1 − e^{ε′−t}), maximal over t at t = (ε + ε′)/2, so the privacy profile of the whole class is

    δ(ε′) = (e^{ε/2} − e^{ε′/2})² / (e^ε − 1),   0 ≤ ε′ ≤ ε,

(δ(0) = tanh(ε/4)), extended to ε′ < 0 by the symmetry of the class (t ↦ ε − t swaps the pair).
A convex, decreasing profile in e^{ε′} is the profile of one pair (P, Q) that dominates the
whole class (Zhu, Dong & Wang 2022, "Optimal accounting of differential privacy via
characteristic function", §2). From δ′(ε′) = −e^{ε′} Q(L > ε′) its privacy loss L is continuous
on (−ε, ε) with densities

    p(y) = e^{(ε+y)/2} / (2(e^ε − 1)),   q(y) = e^{(ε−y)/2} / (2(e^ε − 1))

(:class:`BoundedRangeLoss`; derivation in docs/accounting.md, "Events from the peer libraries").
Composing this pair bounds any adaptive composition of ε-BR mechanisms with any other events and
is exact for one mechanism; but it takes the worst t for every ε′ at once, which no single
mechanism does, so for many BR steps alone it is looser than RDP. For a ledger of BR steps only,
:func:`bounded_range_composition_delta` solves the adversary's adaptive choice of t exactly (a
certified interval).
"""

from __future__ import annotations

import math
import sys

import numpy as np

from dpkit._validation import check_integer, check_open_unit, check_positive
from dpkit.accounting.pld.mechanisms import PrivacyLoss

#: Largest count²·grid_points² of the dynamic programme (about a minute on one core).
_MAX_WORK = 4e8

#: Largest count²·grid_points² of one of the ~20 dynamic programmes of
#: :func:`bounded_range_composition_epsilon`'s search (all of them: a few seconds on one core).
_SEARCH_WORK = 5e6

#: Unit round-off of double precision.
_UNIT_ROUNDOFF = 2.0**-53

__all__ = [
    "BoundedRangeLoss",
    "bounded_range_composition_delta",
    "bounded_range_composition_epsilon",
    "bounded_range_delta",
]


class BoundedRangeLoss(PrivacyLoss):
    """The dominating pair of every ε-bounded-range mechanism (module docstring).

    Distribution functions in closed form: P(L ≤ s) = (e^{(ε+s)/2} − 1)/(e^ε − 1) and
    Q(L > s) = (e^{(ε−s)/2} − 1)/(e^ε − 1) on [−ε, ε], each side computed with ``expm1``.
    """

    def __init__(self, epsilon: float):
        self.epsilon = check_positive("epsilon", epsilon)

    def cdf_sf(self, t, *, strict=False):
        eps = self.epsilon
        s = np.clip(np.asarray(t, dtype=float), -eps, eps)
        norm = math.expm1(eps)
        up = np.expm1((eps + s) / 2.0)  # e^{(ε+s)/2} − 1
        down = np.expm1((eps - s) / 2.0)  # e^{(ε−s)/2} − 1
        p_cdf = up / norm
        p_sf = np.exp((eps + s) / 2.0) * down / norm
        q_sf = down / norm
        q_cdf = np.exp((eps - s) / 2.0) * up / norm
        return p_cdf, p_sf, q_cdf, q_sf

    def bounds(self, tail):
        return -self.epsilon, self.epsilon


def bounded_range_delta(epsilon: float, target_epsilon: float) -> float:
    """Exact δ(ε′) of one ε-bounded-range mechanism: (e^{ε/2} − e^{ε′/2})²/(e^ε − 1) for
    0 ≤ ε′ ≤ ε, 0 above ε (Dong, Durfee & Rogers 2020, §4, maximised over t in closed form).

    >>> round(bounded_range_delta(1.0, 0.0), 12) == round(math.tanh(0.25), 12)
    True
    """
    epsilon = check_positive("epsilon", epsilon)
    target_epsilon = float(target_epsilon)
    if not target_epsilon >= 0.0:
        raise ValueError(f"target_epsilon must be in [0, inf), got target_epsilon={target_epsilon}")
    if target_epsilon >= epsilon:
        return 0.0
    # e^{ε/2} − e^{ε′/2} = e^{ε′/2} (e^{(ε−ε′)/2} − 1)
    gap = math.exp(target_epsilon / 2.0) * math.expm1((epsilon - target_epsilon) / 2.0)
    return gap * gap / math.expm1(epsilon)


def bounded_range_composition_delta(
    epsilon: float, count: int, target_epsilon: float, grid_points: int = 200
) -> tuple[float, float]:
    """``(upper, lower)`` bounds on the optimal δ(ε′) of ``count`` adaptively composed ε-BR mechanisms.

    The adversary picks each mechanism, hence each pair_t (module docstring), knowing the
    outputs so far; the privacy loss accumulated so far, s, is all that matters, so the optimum is
    the dynamic programme V₀(s) = (1 − e^{ε′−s})₊,
    V_j(s) = sup_{t∈[0,ε]} p_t V_{j−1}(s + t) + (1 − p_t) V_{j−1}(s + t − ε), δ = V_count(0)
    (the adaptive setting of Dong, Durfee & Rogers 2020, §6, solved numerically here). On the
    grid t_m = mε/M, s ∈ (ε/M)ℤ:

    * upper: V_j is convex in x = e^{−s} (V₀ is, and a supremum of non-negative combinations of
      x ↦ V(x e^{−L}) stays so), so between grid points V lies below the chord in x of its
      values at the two neighbouring grid points. For t = t_m + λh, y = e^{λh} ∈ [1, e^h], both
      chord weights are w = (1 − 1/y)/(1 − e^{−h}) and p_t = (e^ε − e^{t_m}y)/(e^ε − 1), so the
      bound on p_t V(s+t) + (1−p_t) V(s+t−ε) is c₀ + c₁y + c₂/y, maximised over [1, e^h] in
      closed form (end points and y* = √(c₂/c₁) when c₁, c₂ < 0), plus an allowance of
      16u·(|c₀| + |c₁|e^h + |c₂|) for its rounding;
    * lower: the strategies restricted to the grid points t_m (the value of an actual strategy).

    The width shrinks like 1/M² (the chord) or 1/M (the lower strategy grid), whichever is
    larger. The work is about count²·M² vector steps (``ValueError`` above ``_MAX_WORK``).

    >>> upper, lower = bounded_range_composition_delta(1.0, 1, 0.3)
    >>> lower <= bounded_range_delta(1.0, 0.3) <= upper
    True
    """
    epsilon = check_positive("epsilon", epsilon)
    count = check_integer("count", count, minimum=1)
    grid_points = check_integer("grid_points", grid_points, minimum=2)
    target_epsilon = float(target_epsilon)
    if not target_epsilon >= 0.0:
        raise ValueError(f"target_epsilon must be in [0, inf), got target_epsilon={target_epsilon}")
    if count * count * grid_points * grid_points > _MAX_WORK:
        raise ValueError(
            f"count={count} with grid_points={grid_points} needs count²·grid_points² > {_MAX_WORK:.0e} steps; "
            "use fewer grid points (the interval stays certified, only wider)"
        )
    m_points = grid_points
    h = epsilon / m_points
    if not (h >= sys.float_info.min and epsilon <= 700.0):
        # no grid in floating point (h underflows, or e^ε overflows): every ε-BR mechanism is ε-DP, so the
        # composition is (count·ε)-DP, dominated by binary randomized response of that ε (Kairouz, Oh &
        # Viswanath 2015, Thm 2.1): δ(ε′) ≤ (1 − e^{ε′ − count·ε})/(1 + e^{−count·ε}); the lower end is 0
        total = count * epsilon
        if target_epsilon >= total:
            return 0.0, 0.0
        value = -math.expm1(target_epsilon - total) / (1.0 + math.exp(-total))
        return min(1.0, math.nextafter(value * (1.0 + 1e-12), math.inf)), 0.0
    t = h * np.arange(m_points + 1)
    p = np.clip(np.exp(t) * np.expm1(epsilon - t) / math.expm1(epsilon), 0.0, 1.0)  # p_t
    span = count * m_points
    s = h * np.arange(-span, span + 1)
    upper = lower = np.maximum(-np.expm1(target_epsilon - s), 0.0)
    for _ in range(count):
        # keep only the losses still reachable from 0: index i of the new arrays is index i + M
        # of the previous ones; s + t_m is then index i + M + m there and s + t_m − ε index i + m
        size = len(upper) - 2 * m_points
        new_upper = np.zeros(size)
        new_lower = np.zeros(size)
        for m in range(m_points + 1):
            hi, lo = lower[m_points + m:m_points + m + size], lower[m:m + size]
            np.maximum(new_lower, p[m] * hi + (1.0 - p[m]) * lo, out=new_lower)
            if m < m_points:
                corners = (upper[m_points + m:m_points + m + size], upper[m_points + m + 1:m_points + m + 1 + size],
                           upper[m:m + size], upper[m + 1:m + 1 + size])
                np.maximum(new_upper, _chord_step_bound(corners, t[m], h, epsilon), out=new_upper)
        upper, lower = new_upper, new_lower
    value_up = min(1.0, math.nextafter(float(upper[0]) * (1.0 + 1e-12), math.inf))
    return value_up, float(lower[0]) * (1.0 - 1e-12)


def _chord_step_bound(corners, t_m: float, h: float, epsilon: float) -> np.ndarray:
    """Upper bound on sup_{t∈[t_m, t_m+h]} p_t V(s+t) + (1−p_t) V(s+t−ε) from the chords of V in
    x = e^{−s} (see :func:`bounded_range_composition_delta`). ``corners`` are V at s+t_m, s+t_m+h,
    s+t_m−ε, s+t_m+h−ε."""
    u_a, u_b, u_c, u_d = corners
    kappa = 1.0 / -math.expm1(-h)
    norm = math.expm1(epsilon)
    p0, p1 = math.exp(epsilon) / norm, math.exp(t_m) / norm  # p_t = p0 − p1·y
    d1, d2 = u_a - u_c, u_b - u_d
    k0, k1 = d1 + kappa * (d2 - d1), kappa * (d2 - d1)
    spread = kappa * (u_d - u_c)
    c0 = p0 * k0 + p1 * k1 + u_c + spread
    c1 = -p1 * k0
    c2 = -p0 * k1 - spread
    y_end = math.exp(h)
    best = np.maximum(c0 + c1 + c2, c0 + c1 * y_end + c2 / y_end)
    concave = (c1 < 0) & (c2 < 0)
    y_star = np.sqrt(np.where(concave, c2, 1.0) / np.where(concave, c1, 1.0))
    inside = concave & (y_star > 1.0) & (y_star < y_end)
    y_star = np.where(inside, y_star, 1.0)
    best = np.where(inside, np.maximum(best, c0 + c1 * y_star + c2 / y_star), best)
    allowance = 16.0 * _UNIT_ROUNDOFF * (np.abs(c0) + np.abs(c1) * y_end + np.abs(c2))
    return np.minimum(best + allowance, 1.0)


def bounded_range_composition_epsilon(epsilon: float, count: int, delta: float, grid_points: int = 100) -> float:
    """Smallest ε′ (to 1e-4 relative, rounded up) whose certified upper δ of
    :func:`bounded_range_composition_delta` is at most ``delta``: an upper bound on the optimal ε
    of ``count`` adaptively composed ε-BR mechanisms.

    The search asks for about 20 values of δ, so ``grid_points`` is lowered where needed to keep
    count²·grid_points² within 5·10⁶ (the answer stays a certified upper bound, only looser);
    ``ValueError`` if even two grid points exceed that (count above about 1100: use the PLD or RDP
    accountant with ``ExponentialMechanismEvent``).

    >>> eps = bounded_range_composition_epsilon(1.0, 3, 1e-3, grid_points=100)
    >>> 2.0 < eps < 3.0   # pure composition gives 3
    True
    """
    delta = check_open_unit("delta", delta)
    count = check_integer("count", count, minimum=1)
    affordable = int(math.sqrt(_SEARCH_WORK) / count)
    if affordable < 2:
        raise ValueError(f"count must be in [1, {int(math.sqrt(_SEARCH_WORK) / 2)}] for the bounded-range dynamic "
                         f"programme, got count={count}; use the PLD or RDP accountant with ExponentialMechanismEvent")
    grid_points = min(check_integer("grid_points", grid_points, minimum=2), affordable)
    low, high = 0.0, count * check_positive("epsilon", epsilon)
    if bounded_range_composition_delta(epsilon, count, 0.0, grid_points)[0] <= delta:
        return 0.0
    while high - low > 1e-4 * high:
        mid = 0.5 * (low + high)
        if not low < mid < high:  # adjacent floats (subnormal ε)
            break
        if bounded_range_composition_delta(epsilon, count, mid, grid_points)[0] <= delta:
            high = mid
        else:
            low = mid
    return high
