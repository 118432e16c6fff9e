"""(ε, δ)-DP composition: basic, advanced and optimal homogeneous composition, and an accountant.

Every function returns an upper bound (ε rounded up) on the guarantee of the k-fold adaptive
composition of (ε, δ)-DP mechanisms.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from typing import Any

import numpy as np
from scipy import special

from dpkit._validation import check_integer, check_nonnegative, check_open_unit, check_unit_interval
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
    DiscreteLaplaceEvent,
    ExponentialMechanismEvent,
    LaplaceEvent,
    ParallelComposedEvent,
    PrivacyEvent,
    PureDPEvent,
    RandomizedResponseEvent,
    SparseVectorEvent,
)
from dpkit.accounting.neighbouring import NeighbouringRelation

__all__ = [
    "CompositionResult",
    "basic_composition",
    "advanced_composition",
    "optimal_homogeneous_composition",
    "optimal_homogeneous_delta",
    "ApproxDPAccountant",
]

_SAFETY = 2.0**-40
_BASIC = "basic composition (Dwork & Roth 2014, Thm 3.16)"
_ADVANCED = "advanced composition (Dwork, Rothblum & Vadhan 2010; Dwork & Roth 2014, Thm 3.20)"
_OPTIMAL = "optimal homogeneous composition (Kairouz, Oh & Viswanath 2015, Thm 3.3)"
_REFERENCES = {_BASIC: ("dwork2014algorithmic",), _ADVANCED: ("dwork2010boosting",), _OPTIMAL: ("kairouz2015composition",)}


_MAX_OPTIMAL_K = 10**5
"""Largest count for which the optimal composition (a sum over k + 1 terms, bisected) is tried."""


def _no_release(epsilon: float, delta: float, k: int, **_: float) -> bool:
    """A step with ε = δ = 0 releases nothing: its composition is exactly (0, 0)."""
    return epsilon == 0 and delta == 0


def _expm1(x: float) -> float:
    """e^x − 1, ∞ beyond the float range (a bound that grows with it stays a bound)."""
    return math.expm1(x) if x < 709.0 else math.inf


def _safe_up(value: float) -> float:
    if value <= 0.0 or math.isinf(value):
        return max(value, 0.0)
    return math.nextafter(value * (1.0 + _SAFETY), math.inf)


@dataclasses.dataclass(frozen=True)
class CompositionResult:
    """(ε, δ) guarantee of a k-fold composition and the theorem that gave it."""

    epsilon: float
    delta: float
    k: int
    method: str

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dictionary of every field."""
        return dataclasses.asdict(self)


def _check_step(epsilon: float, delta: float, k: int) -> tuple[float, float, int]:
    return (
        check_nonnegative("epsilon", epsilon),
        check_unit_interval("delta", delta, include_one=False),
        check_integer("k", k, minimum=1),
    )


@certified(fields={"epsilon": ("epsilon", True), "delta": ("delta", True)}, noop=_no_release)
def basic_composition(epsilon: float, delta: float, k: int) -> CompositionResult:
    """k-fold composition of (ε, δ)-DP is (kε, kδ)-DP (Dwork & Roth 2014, Thm 3.16).

    >>> r = basic_composition(0.1, 1e-6, 10)
    >>> round(r.epsilon, 9), round(r.delta, 12), r.method
    (1.0, 1e-05, 'basic composition (Dwork & Roth 2014, Thm 3.16)')
    """
    epsilon, delta, k = _check_step(epsilon, delta, k)
    return CompositionResult(
        _safe_up(k * epsilon), min(1.0, _safe_up(k * delta)), k, _BASIC
    )


@certified(fields={"epsilon": ("epsilon", True), "delta": ("delta", True)}, noop=_no_release)
def advanced_composition(epsilon: float, delta: float, k: int, delta_prime: float) -> CompositionResult:
    """Advanced composition: (ε′, kδ + δ′)-DP with ε′ = √(2k log(1/δ′)) ε + k ε (e^ε − 1).

    References
    ----------
    Dwork, Rothblum & Vadhan (2010), Thm III.3; Dwork & Roth (2014), Thm 3.20.

    >>> r = advanced_composition(0.1, 1e-6, 100, 1e-5)
    >>> round(r.epsilon, 6), round(r.delta, 12)
    (5.850235, 0.00011)
    """
    epsilon, delta, k = _check_step(epsilon, delta, k)
    delta_prime = check_open_unit("delta_prime", delta_prime)
    eps = math.sqrt(2.0 * k * math.log(1.0 / delta_prime)) * epsilon + k * epsilon * _expm1(epsilon)
    return CompositionResult(
        _safe_up(eps),
        min(1.0, _safe_up(k * delta + delta_prime)),
        k,
        _ADVANCED,
    )


@functools.lru_cache(maxsize=16)
def _log_binomial_row(k: int) -> tuple[np.ndarray, np.ndarray]:
    """(l, log C(k, l)) for l = 0..k."""
    l = np.arange(k + 1, dtype=float)
    return l, special.gammaln(k + 1.0) - special.gammaln(l + 1.0) - special.gammaln(k - l + 1.0)


def _log_delta_rr(epsilon_total: float, epsilon: float, k: int) -> float:
    """log of the hockey-stick divergence E_{e^ε̃}(P^k ‖ Q^k) of k-fold binary randomized response
    with parameter ε: Σ_{l: (k−2l)ε > ε̃} C(k,l) (e^{(k−l)ε} − e^{ε̃+lε}) / (1+e^ε)^k."""
    l, log_binom = _log_binomial_row(k)
    gap = (k - 2.0 * l) * epsilon - epsilon_total
    mask = gap > 0
    if not mask.any():
        return -math.inf
    terms = log_binom[mask] + (k - l[mask]) * epsilon + np.log(-np.expm1(-gap[mask]))
    m = float(np.max(terms))
    log_norm = k * float(np.logaddexp(0.0, epsilon))
    return m + math.log(float(np.sum(np.exp(terms - m)))) - log_norm  # positive terms: pairwise sum is accurate


@certified("delta", noop=_no_release)
def optimal_homogeneous_delta(epsilon: float, delta: float, k: int, epsilon_total: float) -> float:
    """The exact smallest δ_total such that k-fold composition of (ε, δ)-DP is (ε̃, δ_total)-DP.

    δ_total = 1 − (1−δ)^k (1 − δ_RR(ε̃)), with δ_RR the hockey-stick divergence of k-fold binary
    randomized response (every (ε, δ)-DP pair is a post-processing of the four-point pair of
    Kairouz, Oh & Viswanath 2015, Thm 2.1; their Thm 3.3 states this at ε̃ = (k−2i)ε, the formula
    holds for every ε̃ ≥ 0). Summed in log space.
    """
    epsilon, delta, k = _check_step(epsilon, delta, k)
    epsilon_total = check_nonnegative("epsilon_total", epsilon_total)
    log_rr = _log_delta_rr(epsilon_total, epsilon, k)
    log_keep = k * math.log1p(-delta)  # log (1−δ)^k
    # 1 − (1−δ)^k (1 − δ_RR) = −expm1(log_keep) + exp(log_keep) δ_RR
    value = -math.expm1(log_keep) + math.exp(log_keep + log_rr)
    return min(1.0, _safe_up(value))


@certified(fields={"epsilon": ("epsilon", True)}, noop=_no_release)
def optimal_homogeneous_composition(epsilon: float, delta: float, k: int, delta_total: float) -> CompositionResult:
    """Smallest ε̃ with k-fold composition of (ε, δ)-DP being (ε̃, δ_total)-DP (exact, then rounded up).

    Bisection on the decreasing :func:`optimal_homogeneous_delta`, keeping the feasible end, down
    to adjacent floats.

    Raises
    ------
    ValueError
        If ``delta_total < 1 − (1−δ)^k`` (no ε̃ is enough).

    References
    ----------
    Kairouz, Oh & Viswanath (2015), "The composition theorem for differential privacy", Thm 3.3.

    >>> r = optimal_homogeneous_composition(0.1, 1e-6, 100, 1.1e-4)
    >>> round(r.epsilon, 6)
    4.306654
    """
    epsilon, delta, k = _check_step(epsilon, delta, k)
    delta_total = check_open_unit("delta_total", delta_total)
    floor = -math.expm1(k * math.log1p(-delta))
    if delta_total < floor:
        raise ValueError(
            f"delta_total must be in [1 − (1 − delta)^k = {floor!r}, 1) for k={k}, delta={delta}, got delta_total={delta_total}"
        )
    method = _OPTIMAL

    def ok(eps_total: float) -> bool:
        return optimal_homogeneous_delta(epsilon, delta, k, eps_total) <= delta_total

    if ok(0.0):
        return CompositionResult(0.0, delta_total, k, method)
    low, high = 0.0, k * epsilon
    if not ok(high):  # only possible through rounding at the floor
        raise ValueError(f"delta_total={delta_total} is too close to the floor 1 − (1 − delta)^k = {floor!r}")
    while True:  # down to adjacent floats: the feasible end is within an ulp of the root
        mid = 0.5 * (low + high)
        if mid in (low, high):
            break
        if ok(mid):
            high = mid
        else:
            low = mid
    return CompositionResult(high, delta_total, k, method)


# --------------------------------------------------------------------------- accountant

def _leaf_epsilon_delta(event: PrivacyEvent) -> tuple[float, float]:
    if isinstance(event, ApproxDPEvent):
        return event.epsilon, event.delta
    if isinstance(event, LaplaceEvent):
        return event.epsilon, 0.0
    if isinstance(event, DiscreteLaplaceEvent):
        return event.sensitivity / event.scale, 0.0
    if isinstance(event, (PureDPEvent, RandomizedResponseEvent, ExponentialMechanismEvent, SparseVectorEvent)):
        return event.epsilon, 0.0
    if isinstance(event, ParallelComposedEvent):
        pairs = [_leaf_epsilon_delta(e) for e in event.events]
        return max(p[0] for p in pairs), max(p[1] for p in pairs)
    raise UnsupportedEventError(
        event, "the approx accountant composes pure-DP and (ε, δ)-DP events only (use rdp/zcdp/pld for Gaussians)"
    )


class ApproxDPAccountant(Accountant):
    """Composes pure-DP and (ε, δ)-DP events by the best of basic, advanced and optimal composition.

    Events: ApproxDPEvent, PureDPEvent, LaplaceEvent, DiscreteLaplaceEvent, RandomizedResponseEvent,
    ExponentialMechanismEvent, SparseVectorEvent (their pure ε), and ParallelComposedEvent of those
    (worst part). Advanced and optimal composition are homogeneous; with different events in the
    ledger every step is bounded by the worst (max ε, max δ), which is recorded in the notes.
    The result's ``method`` names the composition that won.
    """

    name = "approx"

    def __init__(self, neighbouring: NeighbouringRelation | str = NeighbouringRelation.ADD_REMOVE):
        super().__init__(neighbouring)

    def _check(self, event: PrivacyEvent) -> None:
        for leaf, _ in flatten(event):
            _leaf_epsilon_delta(leaf)

    def _steps(self) -> list[tuple[float, float, int]]:
        return [(*_leaf_epsilon_delta(leaf), count) for leaf, count in self.leaves()]

    def _homogeneous(self, steps: list[tuple[float, float, int]]) -> tuple[float, float, int, tuple[str, ...]]:
        eps = max(s[0] for s in steps)
        dlt = max(s[1] for s in steps)
        k = sum(s[2] for s in steps)
        notes: tuple[str, ...] = ()
        if len({(s[0], s[1]) for s in steps}) > 1:
            notes = (f"heterogeneous ledger: advanced/optimal composition use the worst step (epsilon={eps}, delta={dlt})",)
        return eps, dlt, k, notes

    def get_epsilon(self, delta: float) -> AccountingResult:
        """Smallest ε among basic, advanced and optimal composition at total ``delta``."""
        delta = check_target_delta(delta)
        steps = self._steps()
        if not steps:
            return self._result(0.0, delta, "empty ledger")
        candidates: list[tuple[float, str]] = []
        sum_delta = math.fsum(s[1] * s[2] for s in steps)
        if sum_delta <= delta:
            candidates.append((_safe_up(math.fsum(s[0] * s[2] for s in steps)), _BASIC))
        eps, dlt, k, notes = self._homogeneous(steps)
        if k * dlt < delta:
            adv = advanced_composition(eps, dlt, k, delta - k * dlt)
            candidates.append((adv.epsilon, adv.method))
        if k <= _MAX_OPTIMAL_K:
            try:
                opt = optimal_homogeneous_composition(eps, dlt, k, delta)
                candidates.append((opt.epsilon, opt.method))
            except ValueError:
                pass
        else:
            notes = (*notes, f"optimal composition skipped: count {k} > {_MAX_OPTIMAL_K} (its sum has count + 1 terms)")
        if not candidates:  # the worst (ε, δ) steps reveal the data with probability above the target
            return self._result(math.inf, delta, "trivial bound: epsilon = inf", notes=(
                *notes, f"epsilon = inf: delta={delta!r} is below the delta the ledger's (epsilon, delta) steps "
                f"spend ({sum_delta!r} by basic composition, and no other composition fits), so no finite epsilon "
                "is certified"))
        best = min(candidates)
        return self._result(best[0], delta, best[1], _REFERENCES.get(best[1], ()), notes=notes)

    def get_delta(self, epsilon: float) -> AccountingResult:
        """Smallest δ among basic, advanced and optimal composition at total ``epsilon``."""
        epsilon = check_target_epsilon(epsilon)
        steps = self._steps()
        if not steps:
            return self._result(epsilon, 0.0, "empty ledger")
        candidates: list[tuple[float, str]] = [(1.0, "trivial bound")]
        if math.fsum(s[0] * s[2] for s in steps) <= epsilon:
            candidates.append((min(1.0, _safe_up(math.fsum(s[1] * s[2] for s in steps))), _BASIC))
        eps, dlt, k, notes = self._homogeneous(steps)
        slack = epsilon - k * eps * _expm1(eps)
        if eps > 0 and slack > 0:
            ratio = slack / eps  # not slack²/ε²: ε² underflows to 0 below 1e-154
            delta_prime = math.exp(-ratio * ratio / (2.0 * k))
            candidates.append(
                (min(1.0, _safe_up(k * dlt + delta_prime)), _ADVANCED)
            )
        if k <= _MAX_OPTIMAL_K:
            candidates.append((optimal_homogeneous_delta(eps, dlt, k, epsilon), _OPTIMAL))
        else:
            notes = (*notes, f"optimal composition skipped: count {k} > {_MAX_OPTIMAL_K} (its sum has count + 1 terms)")
        best = min(candidates)
        return self._result(epsilon, best[0], best[1], _REFERENCES.get(best[1], ()), notes=notes)
