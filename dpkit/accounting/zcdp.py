"""Zero-concentrated DP (Bun & Steinke 2016): ρ composes additively; conversions to (ε, δ).

A mechanism is ρ-zCDP if D_α(M(D) ‖ M(D′)) ≤ ρα for every α > 1 (Bun & Steinke 2016, Def. 1.1).

Conversions to (ε, δ):

``"optimal"`` (default)
    δ(ε) = inf_{α>1} exp((α−1)(αρ − ε)) · (1 − 1/α)^{α−1} / α
    (Canonne, Kamath & Steinke 2020, arXiv:2004.00010v5, Cor. 13, from Prop. 12). log δ(α) is
    convex in α with derivative (2α−1)ρ − ε + log(1 − 1/α), so the minimiser is the unique root
    of that increasing function (found by Brent's method); ε(δ) is the root of the decreasing
    δ(ε), rounded up so that δ(ε) ≤ δ holds at the returned ε. This is the best general
    conversion of a zCDP guarantee we implement; it is not claimed tight for every mechanism.
``"classic"``
    ε = ρ + 2√(ρ log(1/δ)) (Bun & Steinke 2016, Prop. 1.3).
"""

from __future__ import annotations

import math
import sys
import warnings
from collections import Counter

from scipy import optimize

from dpkit._bisection import threshold_bracket
from dpkit._validation import check_nonnegative
from dpkit.accounting import rdp_mechanisms as rm
from dpkit.accounting import rdp_sparse_vector as rsv
from dpkit.accounting.certify import certified
from dpkit.accounting.base import (
    Accountant,
    AccountingResult,
    PaperRuleWarning,
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
    ParallelComposedEvent,
    PrivacyEvent,
    PureDPEvent,
    RandomAllocationEvent,
    RandomizedResponseEvent,
    RepeatAndSelectEvent,
    SelfComposedEvent,
    ShuffledEvent,
    SparseVectorEvent,
    TreeAggregationEvent,
    ZCDPEvent,
)
from dpkit.accounting.neighbouring import NeighbouringRelation
from dpkit.accounting.rdp_bounded_range import rho_bounded_range

__all__ = [
    "ZCDPAccountant",
    "event_rho",
    "zcdp_to_epsilon",
    "zcdp_to_delta",
    "rho_for",
    "ding_approx_dp_to_zcdp",
]

_CONVERSIONS = ("optimal", "classic")
_METHODS = {
    "optimal": "zCDP to (ε, δ), optimal α in Canonne, Kamath & Steinke 2020 Cor. 13",
    "classic": "zCDP to (ε, δ), classic ρ + 2√(ρ log(1/δ)) (Bun & Steinke 2016 Prop. 1.3)",
}
_CONVERSION_REFERENCES = {"optimal": ("canonne2020discrete",), "classic": ()}
_SAFETY = 2.0**-40


def _check_conversion(conversion: str) -> str:
    if conversion not in _CONVERSIONS:
        raise ValueError(f"conversion must be one of {_CONVERSIONS}, got conversion={conversion!r}")
    return conversion


def _safe_up(value: float) -> float:
    if value <= 0.0 or math.isinf(value):
        return max(value, 0.0)
    return math.nextafter(value * (1.0 + _SAFETY), math.inf)


# --------------------------------------------------------------------------- conversions


def _optimal_log_delta(rho: float, epsilon: float) -> tuple[float, float]:
    """(log δ, α*) of the optimal conversion; log δ ≤ 0."""
    if rho == 0.0:
        return -math.inf, math.inf

    def slope(alpha: float) -> float:
        return (2.0 * alpha - 1.0) * rho - epsilon + math.log1p(-1.0 / alpha)

    def log_delta(alpha: float) -> float:
        return (alpha - 1.0) * (alpha * rho - epsilon) + (alpha - 1.0) * math.log1p(-1.0 / alpha) - math.log(alpha)

    low = 1.0 + 1e-12
    if slope(low) >= 0.0:
        return min(log_delta(low), 0.0), low
    high = 2.0
    while slope(high) < 0.0:
        high *= 2.0
    alpha = optimize.brentq(slope, low, high, xtol=1e-15, rtol=1e-15)
    return min(log_delta(alpha), 0.0), alpha


@certified("delta", noop=lambda rho, epsilon, conversion: rho == 0, margin=False)  # (_safe_up: 2⁻⁴⁰)
def zcdp_to_delta(rho: float, epsilon: float, conversion: str = "optimal") -> float:
    """δ such that a ρ-zCDP mechanism is (ε, δ)-DP (an upper bound, capped at 1).

    >>> round(zcdp_to_delta(0.5, 3.0), 8)
    0.00514318
    """
    rho = check_nonnegative("rho", rho, allow_inf=True)
    epsilon = check_target_epsilon(epsilon)
    conversion = _check_conversion(conversion)
    if rho == 0.0:
        return 0.0
    if math.isinf(rho):  # a leaf without noise (σ → 0): only the trivial bound holds
        return 1.0
    if conversion == "classic":
        if epsilon <= rho:
            return 1.0
        return min(1.0, _safe_up(math.exp(-((epsilon - rho) ** 2) / (4.0 * rho))))
    return min(1.0, _safe_up(math.exp(_optimal_log_delta(rho, epsilon)[0])))


@certified("epsilon", noop=lambda rho, delta, conversion: rho == 0, margin=False)  # (_safe_up: 2⁻⁴⁰)
def zcdp_to_epsilon(rho: float, delta: float, conversion: str = "optimal") -> float:
    """ε such that a ρ-zCDP mechanism is (ε, δ)-DP (an upper bound).

    >>> round(zcdp_to_epsilon(0.5, 1e-5), 6), round(zcdp_to_epsilon(0.5, 1e-5, "classic"), 6)
    (4.728387, 5.298526)
    """
    rho = check_nonnegative("rho", rho, allow_inf=True)
    delta = check_target_delta(delta)
    conversion = _check_conversion(conversion)
    if rho == 0.0:
        return 0.0
    if math.isinf(rho):  # a leaf without noise (σ → 0): only the trivial bound holds
        return math.inf
    log_inverse = math.log(1.0 / delta)
    # (2√ρ·√log(1/δ) where the product ρ·log(1/δ) overflows, from ρ ≈ 2.6e305 at δ = 1e-300)
    root = math.sqrt(rho * log_inverse) if rho * log_inverse < math.inf else math.sqrt(rho) * math.sqrt(log_inverse)
    classic = _safe_up(rho + 2.0 * root)
    if conversion == "classic" or math.isinf(classic):  # (∞ only for ρ at the top of the float range)
        return classic
    log_target = math.log(delta)
    if _optimal_log_delta(rho, 0.0)[0] <= log_target:
        return 0.0

    def gap(eps: float) -> float:
        return _optimal_log_delta(rho, eps)[0] - log_target

    if not gap(classic) < 0.0:  # at huge ρ the optimal conversion's float arithmetic cannot beat the classic one
        return classic
    eps = optimize.brentq(gap, 0.0, classic, xtol=1e-300, rtol=1e-15)
    eps = _safe_up(eps)
    step = 1e-12
    while gap(eps) > 0.0:  # one-sided: make sure δ(ε) ≤ δ holds at the returned ε (steps double)
        eps, step = _safe_up(eps * (1.0 + step)), 2.0 * step
    return min(eps, classic)


@certified("rho", upper=False)
def rho_for(epsilon: float, delta: float) -> float:
    """The largest ρ whose optimal conversion gives (ε, δ): ``zcdp_to_epsilon(rho_for(ε, δ), δ) ≤ ε``.

    Found by bisection on ρ (δ(ε) increases with ρ) to 1e-13 relative, keeping the feasible end,
    against ε·(1 − 2^-37) so that the rounded-up conversion stays below ε; the result is below
    the exact largest ρ by at most ~1e-11 relative.

    >>> rho = rho_for(1.0, 1e-5)
    >>> round(rho, 8), zcdp_to_epsilon(rho, 1e-5) <= 1.0
    (0.0305566, True)
    """
    epsilon = check_target_epsilon(epsilon)
    delta = check_target_delta(delta)
    if epsilon == 0.0:
        return 0.0
    log_target = math.log(delta)
    # aim a hair below ε so that zcdp_to_epsilon (which rounds up by 2^-40 relative) stays ≤ ε
    aim = epsilon / (1.0 + 2.0**-37)

    def ok(rho: float) -> bool:
        return _optimal_log_delta(rho, aim)[0] <= log_target

    # the classic conversion is never better, so its ρ is feasible for the optimal one
    low = (math.sqrt(math.log(1.0 / delta) + epsilon) - math.sqrt(math.log(1.0 / delta))) ** 2
    if low == 0.0:  # the difference cancels for ε ≪ log(1/δ) (ρ ≈ ε²/(4 log(1/δ)) there): start from a positive ρ
        low = max(epsilon * epsilon / (4.0 * (math.log(1.0 / delta) + epsilon)), sys.float_info.min)
    if not ok(low):
        low = low / 2.0
        while not ok(low):  # ends: ρ = 0 is feasible
            low /= 2.0
        if low == 0.0:  # the largest feasible ρ is below the smallest float
            return 0.0
    high = low * 2.0
    while ok(high):
        low, high = high, high * 2.0
    return threshold_bracket(lambda rho: not ok(rho), low, high, relative=1e-13)[0]


def ding_approx_dp_to_zcdp(epsilon: float, delta: float) -> float:
    """The rule "(ε, δ)-DP ⇒ ε²/(4 log(1/δ))-zCDP" of Ding et al. (2020) — FALSE in general; always warns.

    Ding, Wang, Liang, Bi & Pan (2020, Lemma 2.7, used in Thms 3.1 and 4.1) reads Bun & Steinke's remark that ρ-zCDP with ρ ≈ ε²/(4 log(1/δ))
    *suffices* for (ε, δ)-DP backwards, as a conversion from (ε, δ)-DP to zCDP. No such
    conversion exists: a mechanism that is (ε, δ)-DP with δ > 0 may reveal its input with
    probability δ and then has infinite Rényi divergence of every order, so it is ρ-zCDP for
    no finite ρ; even pure ε-DP randomized response (which is (ε, δ)-DP for every δ) has
    KL divergence ε·tanh(ε/2), far above the rule's ρ for small δ (see the tests). Offered only
    to reproduce the numbers of Ding et al. (2020). The valid statement is that (ε, δ)-DP implies
    δ-approximate ε²/2-zCDP (Bun & Steinke 2016, Prop. 1.4 and Def. 8.1).

    Warns
    -----
    PaperRuleWarning
        Every time it is called.
    """
    epsilon = check_target_epsilon(epsilon)
    delta = check_target_delta(delta)
    warnings.warn(
        "ding_approx_dp_to_zcdp reproduces the rule (ε,δ)-DP ⇒ ε²/(4 ln(1/δ))-zCDP of Ding et al. "
        "(2020, Lemma 2.7), which is not a valid conversion",
        PaperRuleWarning,
        stacklevel=2,
    )
    return epsilon * epsilon / (4.0 * math.log(1.0 / delta))


# --------------------------------------------------------------------------- events


def _positive(rho: float, parameter: float = 1.0) -> float:
    """``rho`` floored at the smallest normal float when the mechanism is not a no-op (``parameter`` > 0):
    a ρ that underflows to 0 would certify ε = 0 for a mechanism whose true ε is positive at tiny δ."""
    return max(rho, sys.float_info.min) if parameter > 0.0 else rho


def _gaussian_rho(sensitivity: float, sigma: float) -> float:
    """Δ²/(2σ²) (Bun & Steinke 2016, Prop. 1.6): ∞ when σ² underflows, and never 0 for Δ > 0."""
    denominator = 2.0 * sigma * sigma
    return math.inf if denominator == 0.0 else _positive(sensitivity * sensitivity / denominator)


def event_rho(event: PrivacyEvent) -> float:
    """ρ such that ``event`` is ρ-zCDP (an upper bound).

    Raises
    ------
    UnsupportedEventError
        For sampled events and (ε, δ)-DP events with δ > 0.
    """
    if isinstance(event, (GaussianEvent, DiscreteGaussianEvent)):
        # Bun & Steinke 2016 Prop. 1.6; Canonne, Kamath & Steinke 2020 Thm 4 (discrete)
        return _gaussian_rho(event.sensitivity, event.sigma)
    if isinstance(event, LaplaceEvent):
        return _positive(rm.rho_laplace(event.scale, event.sensitivity))  # sup_α D_α/α of its exact Rényi curve
    if isinstance(event, DiscreteLaplaceEvent):
        return _positive(rm.rho_pure_dp(event.sensitivity / event.scale))  # (Δ/t)-DP: the tightest pure-DP ρ
    if isinstance(event, SparseVectorEvent):
        return _positive(rsv.rho_laplace_sparse_vector(event.epsilon1, event.epsilon2, event.cutoff, event.max_queries))
    if isinstance(event, GaussianSparseVectorEvent):
        return _positive(rsv.rho_gaussian_sparse_vector(event.threshold_sigma / event.sensitivity,
                                                        event.query_sigma / event.sensitivity, event.max_queries,
                                                        event.monotonic))
    if isinstance(event, RandomizedResponseEvent):
        return _positive(rm.rho_randomized_response(event.epsilon, event.k))
    if isinstance(event, PureDPEvent):
        return _positive(rm.rho_pure_dp(event.epsilon), event.epsilon)  # via binary RR (Kairouz, Oh & Viswanath 2015)
    if isinstance(event, ApproxDPEvent):
        if event.delta > 0.0:
            raise UnsupportedEventError(
                event, "an (ε, δ)-DP event with δ > 0 is not ρ-zCDP for any finite ρ in general"
            )
        return _positive(rm.rho_pure_dp(event.epsilon), event.epsilon)
    if isinstance(event, ZCDPEvent):
        return event.rho
    if isinstance(event, ExponentialMechanismEvent):
        return _positive(rho_bounded_range(event.epsilon))  # exact BR curve; ≤ ε²/8 (Cesar & Rogers 2021 Lemma 3.2)
    if isinstance(event, TreeAggregationEvent):
        return _gaussian_rho(1.0, event.noise_multiplier)  # Gaussian on √nodes nodes (Kairouz et al. 2021, App. D)
    if isinstance(event, RepeatAndSelectEvent):
        raise UnsupportedEventError(
            event, "repeat-and-select has no zCDP bound (Papernot & Steinke 2022 bound each Rényi order, with a "
            "log(E K)/(λ−1) term); use the RDP accountant",
        )
    if isinstance(event, ShuffledEvent):
        raise UnsupportedEventError(
            event, "shuffled reports have no zCDP bound here; use the RDP or PLD accountant (replace-one)"
        )
    if isinstance(event, RandomAllocationEvent):
        raise UnsupportedEventError(
            event, "random allocation has no zCDP bound here: its amplified Rényi bound (Feldman & Shenfeld 2025) "
            "is computed order by order and is not of the form ρα; use the RDP accountant (add-remove)",
        )
    if isinstance(event, (ComposedEvent, SelfComposedEvent)):
        return sum(count * event_rho(leaf) for leaf, count in flatten(event))
    if isinstance(event, ParallelComposedEvent):
        return max(event_rho(e) for e in event.events)
    raise UnsupportedEventError(event, "zCDP does not account for this event (no amplification by sampling in zCDP)")


class ZCDPAccountant(Accountant):
    """zCDP accountant: ρ adds up under composition (Bun & Steinke 2016, Lemma 2.3).

    Parameters
    ----------
    neighbouring
        Recorded in every result; zCDP of the supported events does not depend on it beyond the
        sensitivities, which are measured under this relation.
    conversion
        ``"optimal"`` (default) or ``"classic"``; see the module docstring.

    Examples
    --------
    >>> from dpkit.accounting.events import GaussianEvent
    >>> acc = ZCDPAccountant().compose(GaussianEvent(10.0), 100)
    >>> acc.rho, round(acc.get_epsilon(1e-5).epsilon, 4)
    (0.5, 4.7284)
    """

    name = "zcdp"
    margin_included = True  # every result passes through _safe_up (2⁻⁴⁰ relative, ≥ base.OUTWARD_MARGIN)
    references = ("bun2016concentrated",)

    def __init__(
        self, neighbouring: NeighbouringRelation | str = NeighbouringRelation.ADD_REMOVE, conversion: str = "optimal"
    ):
        super().__init__(neighbouring)
        self._conversion = _check_conversion(conversion)

    @property
    def conversion(self) -> str:
        """``"optimal"`` or ``"classic"``."""
        return self._conversion

    @property
    def rho(self) -> float:
        """Total ρ of the ledger."""
        grouped = Counter()
        for leaf, count in self.leaves():
            grouped[leaf] += count
        return math.fsum(count * event_rho(leaf) for leaf, count in grouped.items())

    def _check(self, event: PrivacyEvent) -> None:
        event_rho(event)

    def get_epsilon(self, delta: float) -> AccountingResult:
        """Smallest certified ε at ``delta`` (an upper bound)."""
        delta = check_target_delta(delta)
        rho = self.rho
        eps = zcdp_to_epsilon(rho, delta, self._conversion)
        return self._result(
            eps, delta, _METHODS[self._conversion], _CONVERSION_REFERENCES[self._conversion], notes=(f"rho={rho!r}",)
        )

    def get_delta(self, epsilon: float) -> AccountingResult:
        """Smallest certified δ at ``epsilon`` (an upper bound)."""
        epsilon = check_target_epsilon(epsilon)
        rho = self.rho
        delta = zcdp_to_delta(rho, epsilon, self._conversion)
        return self._result(
            epsilon, delta, _METHODS[self._conversion], _CONVERSION_REFERENCES[self._conversion], notes=(f"rho={rho!r}",)
        )
