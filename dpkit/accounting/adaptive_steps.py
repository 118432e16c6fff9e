"""Per-step helpers shared by the adaptive accountants (:mod:`~dpkit.accounting.filters`, :mod:`~dpkit.accounting.odometers`).

Each adaptively chosen step is checked to be an event, priced in the unit of the filter or
odometer (its (ε, δ), its Gaussian-DP μ²), and exact rational sums of the float costs are read
back as the smallest float above them.
"""

from __future__ import annotations

import math
from fractions import Fraction

from dpkit.accounting.base import UnsupportedEventError
from dpkit.accounting.events import (
    ApproxDPEvent,
    ComposedEvent,
    DiscreteLaplaceEvent,
    ExponentialMechanismEvent,
    GaussianEvent,
    LaplaceEvent,
    PrivacyEvent,
    PureDPEvent,
    RandomizedResponseEvent,
    SelfComposedEvent,
    SparseVectorEvent,
)

__all__ = ["approx_parameters", "check_event", "float_up", "gaussian_mu_squared"]


def float_up(value: Fraction) -> float:
    """Smallest float ≥ ``value`` (exact rational in, safe float out)."""
    out = float(value)
    if Fraction(out) < value:
        out = math.nextafter(out, math.inf)
    return out


def check_event(event: PrivacyEvent) -> PrivacyEvent:
    """``event`` if it is a PrivacyEvent, else a one-line TypeError."""
    if not isinstance(event, PrivacyEvent):
        raise TypeError(f"event must be a PrivacyEvent, got event={event!r}")
    return event


def gaussian_mu_squared(event: PrivacyEvent) -> float:
    """Σ(Δᵢ/σᵢ)² of a Gaussian step (or composition of Gaussian steps): its μ² in Gaussian DP."""
    if isinstance(event, GaussianEvent):
        return (event.sensitivity / event.sigma) ** 2
    if isinstance(event, ComposedEvent):
        return sum(gaussian_mu_squared(e) for e in event.events)
    if isinstance(event, SelfComposedEvent):
        return event.count * gaussian_mu_squared(event.event)
    raise UnsupportedEventError(event, "the Gaussian-DP filter accepts Gaussian events only")


def approx_parameters(event: PrivacyEvent) -> tuple[float, float]:
    """(ε, δ) of a single-step event with a pure or approximate DP description."""
    if isinstance(event, ApproxDPEvent):
        return event.epsilon, event.delta
    if isinstance(event, (PureDPEvent, RandomizedResponseEvent, ExponentialMechanismEvent, SparseVectorEvent, LaplaceEvent)):
        return event.epsilon, 0.0
    if isinstance(event, DiscreteLaplaceEvent):
        return event.sensitivity / event.scale, 0.0
    raise UnsupportedEventError(event, "the (ε, δ) filter needs a single step with a pure or approximate DP guarantee")
