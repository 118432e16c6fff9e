"""The Laplace mechanism (Dwork, McSherry, Nissim & Smith 2006).

M(D) = f(D) + Z with Z_j i.i.d. Lap(b), density (1/(2b)) exp(−|z|/b). For a query of
L1 sensitivity Δ (under the neighbouring relation the accountant uses) it is (Δ/b)-DP
(Dwork & Roth 2014, Thm 3.6).

The sampler uses numpy's continuous Laplace draws, i.e. idealised real arithmetic: the
textbook guarantee does not hold exactly for floating-point outputs (Mironov 2012). Use
:class:`dpkit.mechanisms.snapping.SnappingMechanism` or the exact discrete samplers of
:mod:`dpkit.mechanisms.discrete` when the output itself is released.
"""

from __future__ import annotations

import dataclasses
import math
from fractions import Fraction
from typing import Any, ClassVar

import numpy as np

from dpkit._validation import check_positive, check_rng
from dpkit.accounting.events import LaplaceEvent
from dpkit.mechanisms.base import Mechanism, check_size, check_value, finish, output_shape


def laplace_scale(epsilon: float, sensitivity: float = 1.0) -> float:
    """The smallest float b with Δ/b ≤ ε exactly (b = Δ/ε, rounded up so that ε is never exceeded).

    >>> laplace_scale(0.5, 1.0)
    2.0
    """
    epsilon = check_positive("epsilon", epsilon)
    sensitivity = check_positive("sensitivity", sensitivity)
    scale = sensitivity / epsilon
    # Compare exactly (as rationals): the float quotient Δ/b may round down below ε.
    while Fraction(sensitivity) / Fraction(scale) > Fraction(epsilon):
        scale = math.nextafter(scale, math.inf)
    return scale


@dataclasses.dataclass(frozen=True)
class LaplaceMechanism(Mechanism):
    """Additive Laplace noise of scale ``scale`` on a query of L1 sensitivity ``sensitivity``.

    Guarantee: (Δ/b)-DP, pure (Dwork et al. 2006; Dwork & Roth 2014, Thm 3.6), for idealised
    real arithmetic. Works on scalars and arrays (noise i.i.d. per coordinate; Δ is the L1
    sensitivity of the whole vector).

    **Not private as executed.** Its raw float outputs leak the input through their low-order
    bits (Mironov 2012, §3; Haney et al. 2022): ``dpkit audit --float-events`` refutes it from
    the outputs alone (``docs/audit.md``, "Float bits from the outputs alone"). To release,
    use :class:`~dpkit.mechanisms.snapping.SnappingMechanism` (``from_epsilon(ε, bound)``) or,
    on integer queries, :class:`~dpkit.mechanisms.discrete.DiscreteLaplaceMechanism`.

    Parameters
    ----------
    scale
        Noise scale b > 0.
    sensitivity
        L1 sensitivity Δ > 0 of the query.

    Examples
    --------
    >>> mech = LaplaceMechanism.from_epsilon(1.0, sensitivity=2.0)
    >>> mech.scale, mech.epsilon
    (2.0, 1.0)
    >>> mech.sample([1.0, 2.0], size=4, rng=0).shape
    (4, 2)
    """

    scale: float
    sensitivity: float = 1.0

    floating_point_safe: ClassVar[bool] = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "scale", check_positive("scale", self.scale))
        object.__setattr__(self, "sensitivity", check_positive("sensitivity", self.sensitivity))

    @classmethod
    def from_epsilon(cls, epsilon: float, sensitivity: float = 1.0) -> "LaplaceMechanism":
        """The ε-DP Laplace mechanism: b = Δ/ε (rounded up, never less noise than needed)."""
        return cls(scale=laplace_scale(epsilon, sensitivity), sensitivity=sensitivity)

    @property
    def epsilon(self) -> float:
        """Δ/b, the pure-DP parameter."""
        return self.sensitivity / self.scale

    @property
    def event(self) -> LaplaceEvent:
        """:class:`~dpkit.accounting.events.LaplaceEvent` (scale, sensitivity)."""
        return LaplaceEvent(scale=self.scale, sensitivity=self.sensitivity)

    def sample(self, value: Any, size: int | None = None, rng: Any = None) -> Any:
        """``value`` + Lap(b) noise; shape ``value.shape`` or ``(size,) + value.shape``."""
        array = check_value(value)
        size = check_size(size)
        generator = check_rng(rng)
        noise = generator.laplace(0.0, self.scale, size=output_shape(size, array.shape))
        return finish(np.asarray(array + noise), size)
