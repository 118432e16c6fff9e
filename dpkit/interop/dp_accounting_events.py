"""Convert dp_accounting's ``DpEvent`` objects to dpkit events and back.

dp_accounting (Google's ``dp-accounting`` package, extra ``compare``) is imported lazily, inside
the functions, so importing this module never imports it.

=====================================  =====================================================
dp_accounting                          dpkit
=====================================  =====================================================
``GaussianDpEvent(z)``                 ``GaussianEvent(sigma=z)`` (sensitivity 1)
``LaplaceDpEvent(z)``                  ``LaplaceEvent(scale=z)`` (sensitivity 1)
``DiscreteLaplaceDpEvent(a, Δ)``       ``DiscreteLaplaceEvent(scale=1/a, sensitivity=Δ)``
``RandomizedResponseDpEvent(p, k)``    ``RandomizedResponseEvent(ε = log(1 + k(1−p)/p), k)``
``PoissonSampledDpEvent(q, e)``        ``PoissonSampledEvent(e, rate=q)``
``SampledWithoutReplacementDpEvent``   ``SampledWithoutReplacementEvent``
``SelfComposedDpEvent(e, n)``          ``SelfComposedEvent(e, n)``
``ComposedDpEvent([...])``             ``ComposedEvent((...))``
``SingleEpochTreeAggregationDpEvent``  ``TreeAggregationEvent(sigma=z, step_counts)``
``RepeatAndSelectDpEvent(e, m, η)``    ``RepeatAndSelectEvent(e, m, η)`` (η = ∞ ↔ ``shape=None``)
``ZCDpEvent(ρ, ξ=0)``                  ``ZCDPEvent(ρ)``
``NoOpDpEvent()``                      ``ComposedEvent(())``, the empty composition
``NonPrivateDpEvent()``                ``NonPrivateEvent()`` (every accountant answers ε = ∞)
=====================================  =====================================================

A dp_accounting noise multiplier is σ/Δ with Δ = 1; a dpkit event with another sensitivity is
converted through σ/Δ rounded *down* (less noise: the converted event never claims more
privacy). Where a conversion computes a float (randomized response, discrete Laplace), it is
rounded towards less privacy too, so a round trip returns the same event up to one or two ulps
in the safe direction; every other round trip is exact, except that ``ComposedDpEvent([])``,
``SelfComposedDpEvent(e, 0)`` and ``RandomizedResponseDpEvent(1, k)``, which do nothing, come
back as ``NoOpDpEvent()``, and a one-tree ``step_counts=[T]`` comes back as the scalar ``T``.

Numbers are checked first, under dp_accounting's field names: a zero, negative, infinite, NaN
or subnormal noise parameter, probability, mean or shape raises ``ValueError`` naming the event
kind and the field (``GaussianDpEvent.noise_multiplier must be in (0, inf) ...``), never a
``ZeroDivisionError`` or ``OverflowError``; only ``RepeatAndSelectDpEvent(shape=+inf)`` means
"Poisson" (``shape=None``), ``-inf`` is refused. Events nested more than :data:`MAX_DEPTH` (100)
levels deep raise ``ValueError`` naming that limit, in both directions, instead of
``RecursionError``.

Refused by name (:class:`UnconvertibleEventError`): dp_accounting's ``UnsupportedDpEvent``,
``SampledWithReplacementDpEvent``, ``MixtureOfGaussiansDpEvent``,
``TruncatedSubsampledGaussianDpEvent`` and ``ZCDpEvent`` with ξ ≠ 0; and the dpkit events that
dp_accounting has no event for (pure and approximate DP, discrete Gaussian, exponential
mechanism, sparse vector, shuffling, parallel composition, objective perturbation).
"""

from __future__ import annotations

import math
import numbers
import sys
from fractions import Fraction
from typing import Any

from dpkit.accounting.events import (
    ComposedEvent,
    DiscreteLaplaceEvent,
    GaussianEvent,
    LaplaceEvent,
    NonPrivateEvent,
    PoissonSampledEvent,
    PrivacyEvent,
    RandomizedResponseEvent,
    RepeatAndSelectEvent,
    SampledWithoutReplacementEvent,
    SelfComposedEvent,
    TreeAggregationEvent,
    ZCDPEvent,
)

__all__ = ["MAX_DEPTH", "UnconvertibleEventError", "from_dp_accounting", "to_dp_accounting"]

MAX_DEPTH = 100
"""Deepest nesting of events the converters follow (sampling, composition and repetition each add a level)."""

NO_OP = ComposedEvent(())
"""dpkit's no-op: the empty composition (zero privacy loss in every accountant)."""


class UnconvertibleEventError(ValueError):
    """An event has no counterpart in the other library; ``kind`` names it and ``reason`` says why."""

    def __init__(self, kind: str, reason: str):
        self.kind = kind
        self.reason = reason
        super().__init__(f"{kind} cannot be converted: {reason}")


def _dp_event_module() -> Any:
    try:
        from dp_accounting import dp_event
    except ImportError as error:  # pragma: no cover - depends on the environment
        raise ImportError("dp_accounting is not installed: pip install 'dpkit[compare]'") from error
    return dp_event


def _ratio_down(numerator: float, denominator: float) -> float:
    """numerator/denominator as a float that is never above the exact quotient."""
    value = numerator / denominator
    if Fraction(value) > Fraction(numerator) / Fraction(denominator):
        value = math.nextafter(value, 0.0)
    return value


def _ratio_up(numerator: float, denominator: float) -> float:
    """numerator/denominator as a float that is never below the exact quotient."""
    value = numerator / denominator
    if Fraction(value) < Fraction(numerator) / Fraction(denominator):
        value = math.nextafter(value, math.inf)
    return value


def _too_deep(depth: int) -> None:
    if depth > MAX_DEPTH:
        raise ValueError(f"event is nested more than MAX_DEPTH = {MAX_DEPTH} levels deep (sampling, composition and "
                         f"repetition each add one); the converters follow at most {MAX_DEPTH}")


_NORMAL_MIN = sys.float_info.min


def _real(kind: str, field: str, value: Any, low: float, high: float, *, low_open: bool = True,
          high_open: bool = True) -> float:
    """``value`` of the field ``kind.field`` as a float in the interval [low, high] (ends open as
    told) that is not subnormal; ``ValueError``/``TypeError`` naming the field otherwise."""
    allowed = f"{'(' if low_open else '['}{low:g}, {high:g}{')' if high_open else ']'}"
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{kind}.{field} must be a number in {allowed}, got {field}={value!r}")
    try:
        number = float(value)
    except OverflowError:  # an int beyond the floats
        number = math.copysign(math.inf, value)
    inside = (low < number if low_open else low <= number) and (number < high if high_open else number <= high)
    if not inside or 0.0 < abs(number) < _NORMAL_MIN:
        raise ValueError(f"{kind}.{field} must be in {allowed} and not subnormal (below {_NORMAL_MIN:.4g} in "
                         f"magnitude), got {field}={value!r}")
    return number


def _whole(kind: str, field: str, value: Any, low: int) -> int:
    """``value`` of the field ``kind.field`` as an integer in [low, largest float] (accountants multiply
    by it in floating point); ``ValueError`` naming the field otherwise."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or not low <= value <= sys.float_info.max:
        raise ValueError(f"{kind}.{field} must be an integer in [{low}, {sys.float_info.max:.4g}], got "
                         f"{field}={value!r}")
    return int(value)


# --------------------------------------------------------------------------- dp_accounting -> dpkit


def from_dp_accounting(event: Any) -> PrivacyEvent:
    """The dpkit event equivalent to dp_accounting's ``event`` (recursively).

    >>> dp_accounting = __import__("pytest").importorskip("dp_accounting")
    >>> from_dp_accounting(dp_accounting.SelfComposedDpEvent(
    ...     dp_accounting.PoissonSampledDpEvent(0.01, dp_accounting.GaussianDpEvent(1.1)), 1000))
    SelfComposedEvent(event=PoissonSampledEvent(event=GaussianEvent(sigma=1.1, sensitivity=1.0), rate=0.01), count=1000)

    Raises
    ------
    UnconvertibleEventError
        For a kind dpkit has no event for (named in the message).
    ValueError
        For a field out of range (zero, infinite, NaN, subnormal, ...), named as ``Kind.field``;
        or nesting deeper than :data:`MAX_DEPTH`.
    TypeError
        If ``event`` is not a dp_accounting ``DpEvent``.
    """
    return _from(event, _dp_event_module(), 0)


def _from(event: Any, dp: Any, depth: int) -> PrivacyEvent:
    """:func:`from_dp_accounting` of ``event`` nested ``depth`` levels deep."""
    _too_deep(depth)
    if not isinstance(event, dp.DpEvent):
        raise TypeError(f"event must be a dp_accounting DpEvent, got event={event!r}")
    kind = type(event).__name__
    if isinstance(event, dp.NoOpDpEvent):
        return NO_OP
    if isinstance(event, dp.NonPrivateDpEvent):
        return NonPrivateEvent()
    if isinstance(event, dp.GaussianDpEvent):
        return GaussianEvent(sigma=_real(kind, "noise_multiplier", event.noise_multiplier, 0.0, math.inf))
    if isinstance(event, dp.LaplaceDpEvent):
        return LaplaceEvent(scale=_real(kind, "noise_multiplier", event.noise_multiplier, 0.0, math.inf))
    if isinstance(event, dp.DiscreteLaplaceDpEvent):
        # P(x) ∝ exp(−a|x|) is dpkit's exp(−|x|/b) with b = 1/a, rounded down (more privacy loss).
        a = _real(kind, "noise_parameter", event.noise_parameter, 0.0, math.inf)
        return DiscreteLaplaceEvent(scale=_ratio_down(1.0, a), sensitivity=event.sensitivity)
    if isinstance(event, dp.RandomizedResponseDpEvent):
        return _randomized_response_from(event)
    if isinstance(event, dp.ZCDpEvent):
        xi = _real(kind, "xi", event.xi, -math.inf, math.inf)
        if xi != 0:
            raise UnconvertibleEventError(kind, f"xi = {xi} != 0 (dpkit's ZCDPEvent is (0, rho)-zCDP)")
        return ZCDPEvent(rho=_real(kind, "rho", event.rho, 0.0, math.inf, low_open=False))
    if isinstance(event, dp.SingleEpochTreeAggregationDpEvent):
        steps = event.step_counts
        return TreeAggregationEvent(sigma=_real(kind, "noise_multiplier", event.noise_multiplier, 0.0, math.inf),
                                    step_counts=tuple(steps) if isinstance(steps, (list, tuple)) else (steps,))
    if isinstance(event, dp.PoissonSampledDpEvent):
        rate = _real(kind, "sampling_probability", event.sampling_probability, 0.0, 1.0, high_open=False)
        return PoissonSampledEvent(_from(event.event, dp, depth + 1), rate=rate)
    if isinstance(event, dp.SampledWithoutReplacementDpEvent):
        sample_size = _whole(kind, "sample_size", event.sample_size, 1)
        population = _whole(kind, "source_dataset_size", event.source_dataset_size, sample_size)
        return SampledWithoutReplacementEvent(_from(event.event, dp, depth + 1), sample_size=sample_size,
                                              population_size=population)
    if isinstance(event, dp.SelfComposedDpEvent):
        count = _whole(kind, "count", event.count, 0)
        inner = _from(event.event, dp, depth + 1)
        return NO_OP if count == 0 else SelfComposedEvent(inner, count=count)
    if isinstance(event, dp.ComposedDpEvent):
        return ComposedEvent(tuple(_from(e, dp, depth + 1) for e in event.events))
    if isinstance(event, dp.RepeatAndSelectDpEvent):
        mean = _real(kind, "mean", event.mean, 0.0, math.inf)
        shape = event.shape
        if not (isinstance(shape, numbers.Real) and shape == math.inf):  # +inf alone means Poisson (shape=None)
            shape = _real(kind, "shape", shape, 0.0, math.inf, low_open=False, high_open=False)
        return RepeatAndSelectEvent(_from(event.event, dp, depth + 1), mean=mean,
                                    shape=None if shape == math.inf else shape)
    raise UnconvertibleEventError(kind, _NO_DPKIT_COUNTERPART.get(kind, "dpkit has no event for it"))


_NO_DPKIT_COUNTERPART = {
    "UnsupportedDpEvent": "it describes no mechanism, so nothing can account for it",
    "SampledWithReplacementDpEvent": "dpkit has no analysis of sampling with replacement",
    "MixtureOfGaussiansDpEvent": "dpkit has no mixture-of-Gaussians event",
    "TruncatedSubsampledGaussianDpEvent": "dpkit has no truncated Poisson sampling event",
}


def _randomized_response_from(event: Any) -> PrivacyEvent:
    """dp_accounting's RR keeps the input with probability 1 − p and otherwise outputs a uniform
    bucket of k: P(keep)/P(other) = (1 − p + p/k)/(p/k), so ε = log(1 + k(1 − p)/p)."""
    kind = "RandomizedResponseDpEvent"
    p, k = _real(kind, "noise_parameter", event.noise_parameter, 0.0, 1.0, low_open=False, high_open=False), \
        event.num_buckets
    if isinstance(k, bool) or not isinstance(k, numbers.Integral) or not 2 <= k <= 2**53:
        raise ValueError(f"{kind}.num_buckets must be an integer in [2, 2**53], got num_buckets={k!r}")
    if p == 1:
        return NO_OP
    if p == 0:
        raise UnconvertibleEventError(kind, "noise_parameter = 0 releases the input (not private for any finite epsilon)")
    ratio = k * (1.0 - p) / p
    # past the floats (p near the smallest normal), log(k(1 − p)) − log(p): p/(k(1 − p)) < 1e-290 is lost
    # in the rounding, which the factor and the step up cover
    exact = math.log1p(ratio) if math.isfinite(ratio) else math.log(k * (1.0 - p)) - math.log(p)
    epsilon = math.nextafter(exact * (1.0 + 2.0**-50), math.inf)
    return RandomizedResponseEvent(epsilon=epsilon, k=k)


# --------------------------------------------------------------------------- dpkit -> dp_accounting


def to_dp_accounting(event: PrivacyEvent) -> Any:
    """The dp_accounting ``DpEvent`` equivalent to dpkit's ``event`` (recursively).

    >>> dp_accounting = __import__("pytest").importorskip("dp_accounting")
    >>> from dpkit.accounting import GaussianEvent, PoissonSampledEvent, SelfComposedEvent
    >>> to_dp_accounting(SelfComposedEvent(PoissonSampledEvent(GaussianEvent(1.1), rate=0.01), 1000))
    SelfComposedDpEvent(event=PoissonSampledDpEvent(sampling_probability=0.01, event=GaussianDpEvent(noise_multiplier=1.1)), count=1000)

    Raises
    ------
    UnconvertibleEventError
        For a dpkit event dp_accounting has no event for (named in the message).
    ValueError
        For nesting deeper than :data:`MAX_DEPTH`.
    """
    return _to(event, _dp_event_module(), 0)


def _to(event: PrivacyEvent, dp: Any, depth: int) -> Any:
    """:func:`to_dp_accounting` of ``event`` nested ``depth`` levels deep."""
    _too_deep(depth)
    if not isinstance(event, PrivacyEvent):
        raise TypeError(f"event must be a dpkit PrivacyEvent, got event={event!r}")
    if event == NO_OP:
        return dp.NoOpDpEvent()
    if isinstance(event, NonPrivateEvent):
        return dp.NonPrivateDpEvent()
    if isinstance(event, GaussianEvent):
        return dp.GaussianDpEvent(noise_multiplier=_ratio_down(event.sigma, event.sensitivity))
    if isinstance(event, LaplaceEvent):
        return dp.LaplaceDpEvent(noise_multiplier=_ratio_down(event.scale, event.sensitivity))
    if isinstance(event, DiscreteLaplaceEvent):
        return dp.DiscreteLaplaceDpEvent(noise_parameter=_ratio_up(1.0, event.scale), sensitivity=event.sensitivity)
    if isinstance(event, RandomizedResponseEvent):
        # p = k/(k + e^ε − 1) = k e^−ε/(1 + (k − 1)e^−ε), rounded down (less noise).
        tail = math.exp(-event.epsilon)
        p = math.nextafter(event.k * tail / (1.0 + (event.k - 1) * tail) * (1.0 - 2.0**-50), 0.0)
        return dp.RandomizedResponseDpEvent(noise_parameter=p, num_buckets=event.k)
    if isinstance(event, ZCDPEvent):
        return dp.ZCDpEvent(rho=event.rho)
    if isinstance(event, TreeAggregationEvent):
        steps = event.step_counts
        return dp.SingleEpochTreeAggregationDpEvent(noise_multiplier=_ratio_down(event.sigma, event.sensitivity),
                                                    step_counts=steps[0] if len(steps) == 1 else list(steps))
    if isinstance(event, PoissonSampledEvent):
        return dp.PoissonSampledDpEvent(sampling_probability=event.rate, event=_to(event.event, dp, depth + 1))
    if isinstance(event, SampledWithoutReplacementEvent):
        return dp.SampledWithoutReplacementDpEvent(source_dataset_size=event.population_size,
                                                   sample_size=event.sample_size, event=_to(event.event, dp, depth + 1))
    if isinstance(event, SelfComposedEvent):
        return dp.SelfComposedDpEvent(event=_to(event.event, dp, depth + 1), count=event.count)
    if isinstance(event, ComposedEvent):
        return dp.ComposedDpEvent(events=[_to(e, dp, depth + 1) for e in event.events])
    if isinstance(event, RepeatAndSelectEvent):
        shape = math.inf if event.shape is None else event.shape
        return dp.RepeatAndSelectDpEvent(event=_to(event.event, dp, depth + 1), mean=event.mean, shape=shape)
    raise UnconvertibleEventError(type(event).__name__, f"dp_accounting has no event for dpkit's {event.kind!r} events")
