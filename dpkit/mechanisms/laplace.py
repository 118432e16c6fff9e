"""The Laplace mechanism (Dwork, McSherry, Nissim & Smith 2006).

M(D) = f(D) + Z with Z_j i.i.d. Lap(b), density (1/(2b)) exp(−|z|/b). For a query of
L1 sensitivity Δ (under the neighbouring relation the accountant uses) it is (Δ/b)-DP
(Dwork & Roth 2014, Thm 3.6).

Private as executed by default: the output is the continuous mechanism's output rounded exactly to a
power-of-two lattice (:mod:`dpkit.mechanisms.float_safe`), so the guarantee holds for the doubles
released (post-processing). ``float_safe=False`` opts out to numpy's continuous draws, whose
floating-point outputs leak (Mironov 2012), labelled as not private as executed.
"""

from __future__ import annotations

import dataclasses
import math
from fractions import Fraction
from typing import Any

import numpy as np

from dpkit._validation import check_positive, check_rng
from dpkit.accounting.events import LaplaceEvent
from dpkit.mechanisms.base import Mechanism, check_size, check_value, finish, output_shape
from dpkit.mechanisms.float_safe import check_float_safe_scale, lattice, resolve_float_safe, sample_lattice_laplace


def laplace_scale(epsilon: float, sensitivity: float = 1.0) -> float:
    """The smallest float b with Δ/b ≤ ε exactly (b = Δ/ε, rounded up so that ε is never exceeded).

    >>> laplace_scale(0.5, 1.0)
    2.0
    """
    epsilon = check_positive("epsilon", epsilon)
    sensitivity = check_positive("sensitivity", sensitivity)
    scale = max(sensitivity / epsilon, math.ulp(0.0))  # (a quotient that underflows: the smallest positive float)
    # Compare exactly (as rationals): the float quotient Δ/b may round down below ε.
    while math.isfinite(scale) and Fraction(sensitivity) / Fraction(scale) > Fraction(epsilon):
        scale = math.nextafter(scale, math.inf)
    if math.isinf(scale):
        raise ValueError(f"the Laplace scale sensitivity/epsilon = {sensitivity:g}/{epsilon:g} exceeds the largest "
                         "float; choose a larger epsilon or a smaller sensitivity")
    return scale


@dataclasses.dataclass(frozen=True)
class LaplaceMechanism(Mechanism):
    """Additive Laplace noise of scale ``scale`` on a query of L1 sensitivity ``sensitivity``.

    Guarantee: (Δ/b)-DP, pure (Dwork et al. 2006; Dwork & Roth 2014, Thm 3.6). Works on scalars
    and arrays of any shape (noise i.i.d. per coordinate; Δ is the L1 sensitivity of the whole array).

    **Private as executed** (default ``float_safe=True``): every output coordinate is ``m·Λ``
    with ``m = ⌊(x + bY)/Λ + ½⌋``, ``Y ~ Laplace(1)`` sampled exactly and the lattice
    ``Λ = 2^(⌊log₂ b⌋ − 16)`` (:attr:`lattice`), a post-processing of the continuous mechanism: ε = Δ/b
    holds for the doubles released, with no slack (:mod:`dpkit.mechanisms.float_safe`).
    ``float_safe=False`` draws numpy's continuous ``laplace``, whose raw outputs leak the input
    through their low-order bits (Mironov 2012, §3; Haney et al. 2022); runs that use it carry
    the "not private as executed" note. On integer queries,
    :class:`~dpkit.mechanisms.discrete.DiscreteLaplaceMechanism` is exact too.

    Parameters
    ----------
    scale
        Noise scale b > 0 (at least 2⁻¹⁰⁰⁰ when ``float_safe``).
    sensitivity
        L1 sensitivity Δ > 0 of the query.
    float_safe
        ``True``: the exactly rounded output; ``False``: numpy's continuous sampler; ``None`` (default):
        ``True``, unless built inside :func:`~dpkit.mechanisms.float_safe.continuous_noise` (the opt-out).

    Examples
    --------
    >>> mech = LaplaceMechanism.from_epsilon(1.0, sensitivity=2.0)
    >>> mech.scale, mech.epsilon, mech.floating_point_safe
    (2.0, 1.0, True)
    >>> out = mech.sample([1.0, 2.0], size=4, rng=0)
    >>> out.shape, bool(np.all(out / mech.lattice == np.round(out / mech.lattice)))
    ((4, 2), True)
    """

    scale: float
    sensitivity: float = 1.0
    float_safe: bool | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "scale", check_positive("scale", self.scale))
        object.__setattr__(self, "sensitivity", check_positive("sensitivity", self.sensitivity))
        object.__setattr__(self, "float_safe", resolve_float_safe(self.float_safe))
        if self.float_safe:
            check_float_safe_scale("scale", self.scale)

    @classmethod
    def from_epsilon(cls, epsilon: float, sensitivity: float = 1.0, *, float_safe: bool | None = None) -> "LaplaceMechanism":
        """The ε-DP Laplace mechanism: b = Δ/ε (rounded up, never less noise than needed), for both samplers."""
        return cls(scale=laplace_scale(epsilon, sensitivity), sensitivity=sensitivity, float_safe=float_safe)

    @property
    def floating_point_safe(self) -> bool:  # type: ignore[override]
        """Whether the guarantee holds for the floating-point outputs: ``float_safe``."""
        return self.float_safe

    @property
    def lattice(self) -> float | None:
        """``float_safe=True``: Λ = 2^(⌊log₂ b⌋ − 16), the lattice of every output (``None`` otherwise)."""
        return lattice(self.scale) if self.float_safe else None

    @property
    def epsilon(self) -> float:
        """Δ/b, the pure-DP parameter."""
        return self.sensitivity / self.scale

    @property
    def event(self) -> LaplaceEvent:
        """:class:`~dpkit.accounting.events.LaplaceEvent` (scale, sensitivity), for both samplers."""
        return LaplaceEvent(scale=self.scale, sensitivity=self.sensitivity)

    def sample(self, value: Any, size: int | None = None, rng: Any = None) -> Any:
        """``value`` + Lap(b) noise; shape ``value.shape`` or ``(size,) + value.shape``
        (``float_safe=True``: rounded exactly to :attr:`lattice`)."""
        if self.float_safe:
            return sample_lattice_laplace(value, self.scale, size, rng)
        array = check_value(value)
        size = check_size(size)
        generator = check_rng(rng)
        noise = generator.laplace(0.0, self.scale, size=output_shape(size, array.shape))
        return finish(np.asarray(array + noise), size)
