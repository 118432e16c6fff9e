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

Refused by name (:class:`UnconvertibleEventError`): dp_accounting's ``UnsupportedDpEvent``,
``SampledWithReplacementDpEvent``, ``MixtureOfGaussiansDpEvent``,
``TruncatedSubsampledGaussianDpEvent`` and ``ZCDpEvent`` with ξ ≠ 0; and the dpkit events that
dp_accounting has no event for (pure and approximate DP, discrete Gaussian, exponential
mechanism, sparse vector, shuffling, parallel composition, objective perturbation).
"""

from __future__ import annotations

import math
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

__all__ = ["UnconvertibleEventError", "from_dp_accounting", "to_dp_accounting"]

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
    TypeError
        If ``event`` is not a dp_accounting ``DpEvent``.
    """
    dp = _dp_event_module()
    if not isinstance(event, dp.DpEvent):
        raise TypeError(f"event must be a dp_accounting DpEvent, got event={event!r}")
    kind = type(event).__name__
    if isinstance(event, dp.NoOpDpEvent):
        return NO_OP
    if isinstance(event, dp.NonPrivateDpEvent):
        return NonPrivateEvent()
    if isinstance(event, dp.GaussianDpEvent):
        return GaussianEvent(sigma=event.noise_multiplier)
    if isinstance(event, dp.LaplaceDpEvent):
        return LaplaceEvent(scale=event.noise_multiplier)
    if isinstance(event, dp.DiscreteLaplaceDpEvent):
        # P(x) ∝ exp(−a|x|) is dpkit's exp(−|x|/b) with b = 1/a, rounded down (more privacy loss).
        return DiscreteLaplaceEvent(scale=_ratio_down(1.0, event.noise_parameter), sensitivity=event.sensitivity)
    if isinstance(event, dp.RandomizedResponseDpEvent):
        return _randomized_response_from(event)
    if isinstance(event, dp.ZCDpEvent):
        if event.xi != 0:
            raise UnconvertibleEventError(kind, f"xi = {event.xi} != 0 (dpkit's ZCDPEvent is (0, rho)-zCDP)")
        return ZCDPEvent(rho=event.rho)
    if isinstance(event, dp.SingleEpochTreeAggregationDpEvent):
        steps = event.step_counts
        return TreeAggregationEvent(sigma=event.noise_multiplier,
                                    step_counts=tuple(steps) if isinstance(steps, (list, tuple)) else (steps,))
    if isinstance(event, dp.PoissonSampledDpEvent):
        return PoissonSampledEvent(from_dp_accounting(event.event), rate=event.sampling_probability)
    if isinstance(event, dp.SampledWithoutReplacementDpEvent):
        return SampledWithoutReplacementEvent(from_dp_accounting(event.event), sample_size=event.sample_size,
                                              population_size=event.source_dataset_size)
    if isinstance(event, dp.SelfComposedDpEvent):
        if event.count == 0:
            return NO_OP
        return SelfComposedEvent(from_dp_accounting(event.event), count=event.count)
    if isinstance(event, dp.ComposedDpEvent):
        return ComposedEvent(tuple(from_dp_accounting(e) for e in event.events))
    if isinstance(event, dp.RepeatAndSelectDpEvent):
        shape = None if math.isinf(event.shape) else event.shape
        return RepeatAndSelectEvent(from_dp_accounting(event.event), mean=event.mean, shape=shape)
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
    p, k = event.noise_parameter, event.num_buckets
    if p == 1:
        return NO_OP
    if p == 0:
        raise UnconvertibleEventError("RandomizedResponseDpEvent",
                                      "noise_parameter = 0 releases the input (not private for any finite epsilon)")
    epsilon = math.nextafter(math.log1p(k * (1.0 - p) / p) * (1.0 + 2.0**-50), math.inf)
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
    """
    if not isinstance(event, PrivacyEvent):
        raise TypeError(f"event must be a dpkit PrivacyEvent, got event={event!r}")
    dp = _dp_event_module()
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
        return dp.PoissonSampledDpEvent(sampling_probability=event.rate, event=to_dp_accounting(event.event))
    if isinstance(event, SampledWithoutReplacementEvent):
        return dp.SampledWithoutReplacementDpEvent(source_dataset_size=event.population_size,
                                                   sample_size=event.sample_size, event=to_dp_accounting(event.event))
    if isinstance(event, SelfComposedEvent):
        return dp.SelfComposedDpEvent(event=to_dp_accounting(event.event), count=event.count)
    if isinstance(event, ComposedEvent):
        return dp.ComposedDpEvent(events=[to_dp_accounting(e) for e in event.events])
    if isinstance(event, RepeatAndSelectEvent):
        shape = math.inf if event.shape is None else event.shape
        return dp.RepeatAndSelectDpEvent(event=to_dp_accounting(event.event), mean=event.mean, shape=shape)
    raise UnconvertibleEventError(type(event).__name__, f"dp_accounting has no event for dpkit's {event.kind!r} events")
