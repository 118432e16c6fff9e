"""The Laplace mechanism (Dwork, McSherry, Nissim & Smith 2006).

M(D) = f(D) + Z with Z_j i.i.d. Lap(b), density (1/(2b)) exp(−|z|/b). For a query of
L1 sensitivity Δ (under the neighbouring relation the accountant uses) it is (Δ/b)-DP
(Dwork & Roth 2014, Thm 3.6).

The default sampler uses numpy's continuous Laplace draws, i.e. idealised real arithmetic: the
textbook guarantee does not hold for floating-point outputs (Mironov 2012). ``float_safe=True``
releases Mironov's snapping mechanism instead (:mod:`dpkit.mechanisms.float_safe`), with its own
accounted ε.
"""

from __future__ import annotations

import dataclasses
import math
from fractions import Fraction
from typing import Any

import numpy as np

from dpkit._validation import check_positive, check_rng
from dpkit.accounting.events import LaplaceEvent, PureDPEvent
from dpkit.mechanisms.base import Mechanism, check_size, check_value, finish, output_shape
from dpkit.mechanisms.float_safe import DEFAULT_BOUND_RATIO, check_scalar
from dpkit.mechanisms.snapping import SnappingMechanism, power_of_two_at_least


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

    **Not private as executed** (default ``float_safe=False``). Its raw float outputs leak the
    input through their low-order bits (Mironov 2012, §3; Haney et al. 2022): the default
    :func:`dpkit.audit.audit` refutes it from the outputs alone (``docs/audit.md``, "Float bits
    from the outputs alone"). ``float_safe=True`` releases Mironov's snapping mechanism instead
    (:class:`~dpkit.mechanisms.snapping.SnappingMechanism` with λ = ``scale``, clamping bound
    ``bound``, default 2³⁰λ): ε = (Δ′ + 2⁻⁴⁹B)/λ (Mironov 2012, Thm 1; Δ′ the smallest power of two
    ≥ Δ), a scalar query per call, and its :attr:`event` is that ε (``PureDPEvent``). On integer
    queries, :class:`~dpkit.mechanisms.discrete.DiscreteLaplaceMechanism` is exact.

    Parameters
    ----------
    scale
        Noise scale b > 0.
    sensitivity
        L1 sensitivity Δ > 0 of the query.
    float_safe
        ``True``: snap (see above); the guarantee then holds for the floating-point outputs.
    bound
        ``float_safe=True`` only: the clamping bound B of input and output, in (b, 2⁴⁶b)
        (default 2³⁰b).

    Examples
    --------
    >>> mech = LaplaceMechanism.from_epsilon(1.0, sensitivity=2.0)
    >>> mech.scale, mech.epsilon
    (2.0, 1.0)
    >>> mech.sample([1.0, 2.0], size=4, rng=0).shape
    (4, 2)
    >>> safe = LaplaceMechanism.from_epsilon(1.0, float_safe=True)
    >>> safe.epsilon <= 1.0, safe.floating_point_safe, type(safe.event).__name__
    (True, True, 'PureDPEvent')
    >>> out = safe.sample(3.7, size=1000, rng=0)     # multiples of the lattice 2
    >>> bool(np.all(out % 2.0 == 0.0))
    True
    """

    scale: float
    sensitivity: float = 1.0
    float_safe: bool = False
    bound: float | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "scale", check_positive("scale", self.scale))
        object.__setattr__(self, "sensitivity", check_positive("sensitivity", self.sensitivity))
        if not isinstance(self.float_safe, (bool, np.bool_)):
            raise TypeError(f"float_safe must be True or False, got float_safe={self.float_safe!r}")
        object.__setattr__(self, "float_safe", bool(self.float_safe))
        if self.float_safe:
            bound = DEFAULT_BOUND_RATIO * self.scale if self.bound is None else self.bound
            object.__setattr__(self, "bound", SnappingMechanism(self.scale, bound, self.sensitivity).bound)
        elif self.bound is not None:
            raise ValueError(f"bound applies to float_safe=True only, got bound={self.bound!r} with float_safe=False")

    @classmethod
    def from_epsilon(cls, epsilon: float, sensitivity: float = 1.0, *, float_safe: bool = False,
                     bound: float | None = None) -> "LaplaceMechanism":
        """The ε-DP Laplace mechanism: b = Δ/ε (rounded up, never less noise than needed).

        ``float_safe=True``: the smallest λ (rounded up) whose snapping ε = (Δ′ + 2⁻⁴⁹B)/λ is ≤ ε,
        with B = ``bound`` or, by default, 2³⁰Δ′/ε.
        """
        if not float_safe:
            if bound is not None:
                raise ValueError(f"bound applies to float_safe=True only, got bound={bound!r}")
            return cls(scale=laplace_scale(epsilon, sensitivity), sensitivity=sensitivity)
        epsilon = check_positive("epsilon", epsilon)
        sensitivity = check_positive("sensitivity", sensitivity)
        if bound is None:
            bound = DEFAULT_BOUND_RATIO * power_of_two_at_least(sensitivity) / epsilon
        snapping = SnappingMechanism.from_epsilon(epsilon, bound, sensitivity)
        return cls(scale=snapping.scale, sensitivity=sensitivity, float_safe=True, bound=snapping.bound)

    @property
    def floating_point_safe(self) -> bool:  # type: ignore[override]
        """Whether the guarantee holds for the floating-point outputs: ``float_safe``."""
        return self.float_safe

    @property
    def snapping(self) -> SnappingMechanism | None:
        """``float_safe=True``: the snapping mechanism that is released (``None`` otherwise)."""
        if not self.float_safe:
            return None
        return SnappingMechanism(self.scale, float(self.bound), self.sensitivity)

    @property
    def epsilon(self) -> float:
        """Δ/b, the pure-DP parameter; ``float_safe=True``: the snapping ε (Δ′ + 2⁻⁴⁹B)/b, rounded up."""
        snapping = self.snapping
        return snapping.epsilon if snapping is not None else self.sensitivity / self.scale

    @property
    def event(self) -> LaplaceEvent | PureDPEvent:
        """:class:`~dpkit.accounting.events.LaplaceEvent` (scale, sensitivity); ``float_safe=True``:
        the snapping mechanism's :class:`~dpkit.accounting.events.PureDPEvent` (its accounted ε)."""
        snapping = self.snapping
        if snapping is not None:
            return snapping.event
        return LaplaceEvent(scale=self.scale, sensitivity=self.sensitivity)

    def sample(self, value: Any, size: int | None = None, rng: Any = None) -> Any:
        """``value`` + Lap(b) noise; shape ``value.shape`` or ``(size,) + value.shape``.
        ``float_safe=True``: the snapped output(s) for a scalar ``value``."""
        snapping = self.snapping
        if snapping is not None:
            check_scalar(value)
            return snapping.sample(value, size=size, rng=rng)
        array = check_value(value)
        size = check_size(size)
        generator = check_rng(rng)
        noise = generator.laplace(0.0, self.scale, size=output_shape(size, array.shape))
        return finish(np.asarray(array + noise), size)
