"""Exact Rényi-DP curve of ε-bounded-range mechanisms (the exponential mechanism, report-noisy-max
with Gumbel noise).

A mechanism is ε-bounded-range (ε-BR) if its privacy loss on every pair of neighbours lies in an
interval [t − ε, t] of width ε (Durfee & Rogers 2019, Def. 3.1). Every ε-BR pair is a
post-processing of the generalised randomized response with t ∈ [0, ε] (Dong, Durfee & Rogers
2020, §4): two outcomes, of losses t and t − ε, with P-masses p_t and 1 − p_t,
p_t = (e^ε − e^t)/(e^ε − 1). Its Rényi divergence of order α = 1 + a is

    D_α = (1/a) log[ u^a (A − B u) / (e^ε − 1) ],   u = e^t,  A = e^ε − e^{−aε},  B = 1 − e^{−aε},

and u^a (A − B u) is maximal at u* = aA/((a + 1)B) ∈ (1, e^ε), where it equals u*^a A/(a + 1).
The family is closed under swapping the pair (t ↦ ε − t), so this maximum is the exact RDP of
the ε-BR class (the curve of Cesar & Rogers 2021, §3, which is below both the pure ε-DP curve
and their αε²/8 bound).
"""

from __future__ import annotations

import functools
import math

import numpy as np

from dpkit._validation import check_positive
from dpkit.accounting.rdp_mechanisms import check_order, rdp_pure_dp

__all__ = ["rdp_bounded_range", "rho_bounded_range"]

#: Relative margin covering float error (the maximiser's error only enters at second order).
_RELATIVE_MARGIN = 1e-9


def _log1mexp(x: float) -> float:
    """log(1 − e^{−x}) for x > 0, accurate at both ends."""
    return math.log(-math.expm1(-x)) if x < 0.6931471805599453 else math.log1p(-math.exp(-x))


def _exact_with_margin(alpha: float, epsilon: float) -> float:
    """The maximum over t in closed form (module docstring), raised by the relative margin.

    Written in s = ε − t, the distance of the maximiser below the top of the range, so that no
    step subtracts two numbers of size ε: at ε = 1e12 and beyond, t = ε − 0.69 is not
    representable to the accuracy D_α needs (t − ε once came out as 0, and ε(δ) with it).
    """
    a = alpha - 1.0
    # s* = ε − log u* = log(1 + a) − log a − log(1 − e^{−αε}) + log(1 − e^{−aε})
    s = math.log1p(a) - math.log(a) - _log1mexp(alpha * epsilon) + _log1mexp(a * epsilon)
    s = min(max(s, 0.0), epsilon)
    t = epsilon - s
    # D_α at t, written to avoid cancellation: (t − ε) + log(1 + p_t (e^{aε} − 1))/a
    if a * epsilon <= 1.0:
        p_t = math.expm1(-s) / math.expm1(-epsilon)  # (e^ε − e^t)/(e^ε − 1), without overflow
        exact = -s + math.log1p(p_t * math.expm1(a * epsilon)) / a
    else:  # the same, as t + log(p_t + (1 − p_t) e^{−aε})/a, in s and without overflow:
        # log p_t = log(1 − e^{−s}) − log(1 − e^{−ε}),  log(1 − p_t) = log(1 − e^{−t}) − s − log(1 − e^{−ε})
        log_norm = _log1mexp(epsilon)
        log_p = (_log1mexp(s) if s > 0.0 else -math.inf) - log_norm
        log_q = (_log1mexp(t) if t > 0.0 else -math.inf) - s - log_norm - a * epsilon
        exact = epsilon + (float(np.logaddexp(log_p, log_q)) / a - s)
    return exact * (1.0 + _RELATIVE_MARGIN)


def rdp_bounded_range(alpha: float, epsilon: float) -> float:
    """Exact RDP of order ``alpha`` of the class of ``epsilon``-bounded-range mechanisms.

    Computed in log space from the closed-form maximiser u* (module docstring); the value is
    capped by the pure-DP curve and by αε²/8 (Cesar & Rogers 2021, Lemma 3.2), both upper
    bounds, so float error can never push it above them.

    >>> round(rdp_bounded_range(2.0, 1.0), 6) < round(2.0 * 1.0 / 8.0, 6)
    True
    """
    alpha = check_order(alpha)
    epsilon = check_positive("epsilon", epsilon)
    caps = min(rdp_pure_dp(alpha, epsilon), alpha * epsilon * epsilon / 8.0)
    if (alpha - 1.0) * epsilon == 0.0:  # underflows (ε = 5e-324): the closed form takes log 0; the caps hold
        return max(0.0, caps)
    return max(0.0, min(_exact_with_margin(alpha, epsilon), caps))


@functools.lru_cache(maxsize=1024)
def rho_bounded_range(epsilon: float) -> float:
    """The smallest ρ such that every ε-bounded-range mechanism is ρ-zCDP, certified from above.

    ρ = sup_{α>1} D_α/α (Bun & Steinke 2016, Def. 1.1) of the exact curve. With t = α − 1 the
    cumulant generating function K(t) = t·D_{1+t} is convex with K(0) = 0 (a supremum of
    convex functions), so K(t)/t increases and on [tᵢ, tᵢ₊₁] D_α/α = K(t)/(t(1 + t)) is at most
    D_{1+tᵢ₊₁}/(1 + tᵢ); on (0, t₀] at most D_{1+t₀}; beyond t_N at most ε/(1 + t_N) (the loss is
    at most ε). The grid t ∈ [1e-6, 1e8] has ratio 1.0046, so on [tᵢ, tᵢ₊₁] the bound exceeds the
    value at tᵢ by less than a factor 1 + (tᵢ₊₁ − tᵢ) (about 1e-6 relative in practice, as the
    supremum sits at small t; it tends to the KL divergence log((e^ε − 1)/ε) − 1 + ε/(e^ε − 1) when the
    supremum sits at α → 1). Never above Cesar & Rogers' ε²/8 (2021, Lemma 3.2).

    >>> rho_bounded_range(3.0) < 3.0**2 / 8
    True
    """
    epsilon = check_positive("epsilon", epsilon)
    if epsilon <= 1e-100:  # ρ = ε²/8·(1 − O(ε²)): Cesar & Rogers' bound is as tight (and the grid's 1e-6·ε underflows)
        return epsilon * epsilon / 8.0
    t = np.geomspace(1e-6, 1e8, 7000)
    d = np.array([_exact_with_margin(1.0 + float(x), epsilon) for x in t])
    pieces = d[1:] / (1.0 + t[:-1])
    bound = max(float(d[0]), float(np.max(pieces)), epsilon / (1.0 + float(t[-1])))
    return min(math.nextafter(bound, math.inf), epsilon * epsilon / 8.0)
