"""The snapping mechanism (Mironov 2012): a floating-point-safe Laplace mechanism.

Why: a naive floating-point Laplace sampler ``f(D) + b·ln(U)·S`` produces outputs whose
*set of reachable floats* depends on f(D); an observer who sees one output can often tell
f(D) from f(D′) with certainty (Mironov 2012, §3–4). Snapping removes the leak:

    M(D) = clamp_B( round_Λ( clamp_B(f(D)) ⊕ S ⊗ λ ⊗ ln(U*) ) )

with S a uniform sign, U* uniform on the doubles of (0, 1) with probability proportional to
their spacing (a geometric exponent and 52 uniform mantissa bits), Λ the smallest power of
two ≥ λ, ``round_Λ`` rounding to the nearest multiple of Λ (exact in binary floating point)
and ``clamp_B`` clamping to [−B, B].

Guarantee (Mironov 2012, Thm 1, for a query of sensitivity 1, λ < B < 2⁴⁶λ):
(1/λ + 2⁻⁴⁹B/λ)-DP. For sensitivity Δ we use Δ′ = the smallest power of two ≥ Δ, for which
the mechanism is exactly Δ′ times the sensitivity-1 mechanism with (λ/Δ′, B/Δ′), so
ε = (Δ′ + 2⁻⁴⁹B)/λ (conservative when Δ is not a power of two).

Caveat: the theorem assumes a correctly rounded natural logarithm; numpy's ``log`` (the
platform libm) is faithful to < 1 ulp but is not proven correctly rounded.
"""

from __future__ import annotations

import dataclasses
import math
from fractions import Fraction
from typing import Any, ClassVar

import numpy as np

from dpkit._validation import check_positive, check_rng
from dpkit.accounting.events import PureDPEvent
from dpkit.mechanisms.base import Mechanism, check_size, check_value, finish, output_shape

_MANTISSA_BITS = 52
_SLACK = 2.0**-49
_MAX_RATIO = 2.0**46


def power_of_two_at_least(value: float) -> float:
    """The smallest power of two ≥ ``value`` (> 0).

    >>> power_of_two_at_least(3.0), power_of_two_at_least(0.25)
    (4.0, 0.25)
    """
    mantissa, exponent = math.frexp(value)
    return math.ldexp(1.0, exponent - 1) if mantissa == 0.5 else math.ldexp(1.0, exponent)


def _geometric_half(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    """1 + the number of leading zeros of an infinite fair bit string (exact Geometric(1/2) on {1, 2, …}).

    Reads 32-bit words (exactly representable as doubles, so ``frexp`` gives their bit length);
    an all-zero word adds 32 and the next word is read.
    """
    result = np.ones(shape, dtype=np.int64)
    active = np.ones(shape, dtype=bool)
    while active.any():
        words = rng.integers(0, 1 << 32, size=int(active.sum()), dtype=np.int64)
        _, bit_length = np.frexp(words.astype(float))
        zeros = np.where(words == 0, 32, 32 - bit_length)
        result[active] += zeros
        still = active.copy()
        still[active] = words == 0
        active = still
    return result


def uniform_doubles(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    """U* of Mironov 2012: doubles in (0, 1), each with probability proportional to its spacing.

    Exponent e ~ Geometric(1/2) (e ≥ 1, counted exactly from random bits) and 52 uniform
    mantissa bits give
    U = (1 + m/2⁵²)·2⁻ᵉ, uniform within [2⁻ᵉ, 2¹⁻ᵉ). Exponents beyond 1022 (probability
    2⁻¹⁰²²) are capped to stay in the normal range.
    """
    exponent = np.minimum(_geometric_half(rng, shape), 1022)
    mantissa = rng.integers(0, 1 << _MANTISSA_BITS, size=shape, dtype=np.int64)
    return np.ldexp(1.0 + mantissa * 2.0**-_MANTISSA_BITS, -exponent)


def _snapping_epsilon(scale: float, bound: float, sensitivity: float) -> float:
    """The smallest float ≥ (Δ′ + 2⁻⁴⁹B)/λ, computed in exact rational arithmetic."""
    exact = (Fraction(power_of_two_at_least(sensitivity)) + Fraction(_SLACK) * Fraction(bound)) / Fraction(scale)
    value = float(exact)
    return math.nextafter(value, math.inf) if Fraction(value) < exact else value


@dataclasses.dataclass(frozen=True)
class SnappingMechanism(Mechanism):
    """Mironov's snapping mechanism: Laplace noise of scale λ, snapped to multiples of Λ and clamped to [−B, B].

    Guarantee: ε-DP with ε = (Δ′ + 2⁻⁴⁹B)/λ, Δ′ the smallest power of two ≥ Δ (Mironov 2012,
    Thm 1), for floating-point outputs; requires λ < B < 2⁴⁶λ.

    Parameters
    ----------
    scale
        λ, the Laplace scale.
    bound
        B, the clamping bound of input and output.
    sensitivity
        Sensitivity Δ of the scalar query (inputs are clamped to [−B, B] first).

    Examples
    --------
    >>> mech = SnappingMechanism.from_epsilon(1.0, bound=100.0)
    >>> mech.epsilon <= 1.0, mech.lattice
    (True, 2.0)
    >>> out = mech.sample(3.7, size=1000, rng=0)
    >>> bool(np.all(out == np.round(out))), bool(np.all(np.abs(out) <= 100.0))
    (True, True)
    """

    scale: float
    bound: float
    sensitivity: float = 1.0

    floating_point_safe: ClassVar[bool] = True

    def __post_init__(self) -> None:
        object.__setattr__(self, "scale", check_positive("scale", self.scale))
        object.__setattr__(self, "bound", check_positive("bound", self.bound))
        object.__setattr__(self, "sensitivity", check_positive("sensitivity", self.sensitivity))
        if not self.scale < self.bound < _MAX_RATIO * self.scale:
            raise ValueError(
                f"bound must be in (scale, 2^46*scale) = ({self.scale}, {_MAX_RATIO * self.scale}), "
                f"got bound={self.bound}"
            )

    @classmethod
    def from_epsilon(cls, epsilon: float, bound: float, sensitivity: float = 1.0) -> "SnappingMechanism":
        """The smallest λ (rounded up) with (Δ′ + 2⁻⁴⁹B)/λ ≤ ε."""
        epsilon = check_positive("epsilon", epsilon)
        bound = check_positive("bound", bound)
        sensitivity = check_positive("sensitivity", sensitivity)
        scale = (power_of_two_at_least(sensitivity) + _SLACK * bound) / epsilon
        while _snapping_epsilon(scale, bound, sensitivity) > epsilon:
            scale = math.nextafter(scale, math.inf)
        return cls(scale=scale, bound=bound, sensitivity=sensitivity)

    @property
    def lattice(self) -> float:
        """Λ, the smallest power of two ≥ λ: every output is a multiple of Λ."""
        return power_of_two_at_least(self.scale)

    @property
    def epsilon(self) -> float:
        """(Δ′ + 2⁻⁴⁹B)/λ, rounded up (Mironov 2012, Thm 1)."""
        return _snapping_epsilon(self.scale, self.bound, self.sensitivity)

    @property
    def event(self) -> PureDPEvent:
        """:class:`~dpkit.accounting.events.PureDPEvent` (ε)."""
        return PureDPEvent(epsilon=self.epsilon)

    def sample(self, value: Any, size: int | None = None, rng: Any = None) -> Any:
        """Snapped, clamped output(s) for the query answer(s) ``value`` (any shape; per coordinate)."""
        array = check_value(value)
        size = check_size(size)
        generator = check_rng(rng)
        shape = output_shape(size, array.shape)
        sign = np.where(generator.integers(0, 2, size=shape) == 1, 1.0, -1.0)
        noisy = np.clip(array, -self.bound, self.bound) + sign * (self.scale * np.log(uniform_doubles(generator, shape)))
        lattice = self.lattice
        snapped = np.round(noisy / lattice) * lattice
        return finish(np.asarray(np.clip(snapped, -self.bound, self.bound)), size)
