"""Exact discrete Laplace and discrete Gaussian samplers (Canonne, Kamath & Steinke 2020).

Every step uses Python integers and :class:`fractions.Fraction`; the only source of
randomness is exact uniform integers from a :class:`numpy.random.Generator`
(``rng.integers``, extended to arbitrarily large ranges by rejection over 62-bit limbs).
So the output law is *exactly* the discrete Laplace / discrete Gaussian law, with no
floating-point error (contrast Mironov 2012 for the continuous Laplace; Jin et al. 2022 for
float-based discrete Gaussian samplers).

Algorithms (CKS 2020, arXiv 2004.00010v5):

* :func:`bernoulli_exp` — Bernoulli(exp(−γ)) for rational γ ≥ 0 (Alg. 1);
* :func:`sample_discrete_laplace` — P(x) ∝ exp(−|x|/t) for rational t > 0 (Alg. 2);
* :func:`sample_discrete_gaussian` — P(x) ∝ exp(−x²/(2σ²)) for rational σ² > 0 (Alg. 3).

Speed: these are plain Python loops (about 10⁴–10⁵ draws/s for moderate scales; see
``benchmarks/mechanisms.py``); they are not vectorised.
"""

from __future__ import annotations

import dataclasses
import math
from fractions import Fraction
from typing import Any, ClassVar

import numpy as np

from dpkit._validation import check_integer, check_positive, check_rng
from dpkit.accounting.adaptive_steps import float_up
from dpkit.accounting.events import DiscreteGaussianEvent, DiscreteLaplaceEvent
from dpkit.mechanisms.base import Mechanism, check_size

_LIMB_BITS = 62


def _as_fraction(name: str, value: Any) -> Fraction:
    """A positive exact rational from an int, Fraction or float (floats are converted exactly)."""
    if isinstance(value, Fraction):
        result = value
    elif isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        result = Fraction(int(value))
    else:
        result = Fraction(check_positive(name, value))
    if result <= 0:
        raise ValueError(f"{name} must be in (0, inf), got {name}={value}")
    return result


def uniform_int(rng: np.random.Generator, n: int) -> int:
    """An exactly uniform integer in {0, …, n − 1} for any Python int n ≥ 1."""
    if n <= 1 << _LIMB_BITS:
        return int(rng.integers(0, n))
    bits = (n - 1).bit_length()
    limbs = -(-bits // _LIMB_BITS)
    excess = limbs * _LIMB_BITS - bits
    while True:
        value = 0
        for _ in range(limbs):
            value = (value << _LIMB_BITS) | int(rng.integers(0, 1 << _LIMB_BITS))
        value >>= excess
        if value < n:
            return value


def bernoulli(rng: np.random.Generator, p: Fraction) -> bool:
    """Bernoulli(p) for rational p ∈ [0, 1], exactly."""
    return uniform_int(rng, p.denominator) < p.numerator


def bernoulli_exp(rng: np.random.Generator, gamma: Fraction) -> bool:
    """Bernoulli(exp(−γ)) for rational γ ≥ 0, exactly (CKS 2020, Alg. 1).

    For γ ∈ [0, 1]: draw A_k ~ Bernoulli(γ/k) for k = 1, 2, … until the first A_k = 0 and
    return whether that k is odd. For γ > 1: ⌊γ⌋ independent Bernoulli(e⁻¹) trials and one
    Bernoulli(exp(−(γ − ⌊γ⌋))) must all succeed.
    """
    gamma = Fraction(gamma)
    if gamma < 0:
        raise ValueError(f"gamma must be in [0, inf), got gamma={gamma}")
    if gamma <= 1:
        k = 1
        while bernoulli(rng, gamma / k):
            k += 1
        return k % 2 == 1
    whole = gamma.numerator // gamma.denominator
    for _ in range(whole):
        if not bernoulli_exp(rng, Fraction(1)):
            return False
    return bernoulli_exp(rng, gamma - whole)


def sample_discrete_laplace(rng: np.random.Generator, scale: Fraction) -> int:
    """One draw of the discrete Laplace law P(x) ∝ exp(−|x|/t), t = ``scale`` (CKS 2020, Alg. 2).

    With t = s/r in lowest terms (numerator s, denominator r): U uniform in {0, …, s − 1}
    accepted with probability exp(−U/s); V geometric via Bernoulli(e⁻¹) trials;
    X = U + sV; Y = ⌊X/r⌋ (Geometric(1 − e^(−1/t))); random sign, rejecting (−, 0).
    """
    scale = _as_fraction("scale", scale)
    s, r = scale.numerator, scale.denominator
    while True:
        u = uniform_int(rng, s)
        if not bernoulli_exp(rng, Fraction(u, s)):
            continue
        v = 0
        while bernoulli_exp(rng, Fraction(1)):
            v += 1
        y = (u + s * v) // r
        negative = uniform_int(rng, 2) == 1
        if negative and y == 0:
            continue
        return -y if negative else y


def sample_discrete_gaussian(rng: np.random.Generator, sigma2: Fraction) -> int:
    """One draw of the discrete Gaussian P(x) ∝ exp(−x²/(2σ²)), σ² = ``sigma2`` (CKS 2020, Alg. 3).

    t = ⌊σ⌋ + 1; Y ~ discrete Laplace(t) accepted with probability
    exp(−(|Y| − σ²/t)²/(2σ²)).
    """
    sigma2 = _as_fraction("sigma2", sigma2)
    t = _isqrt_floor(sigma2) + 1
    while True:
        y = sample_discrete_laplace(rng, Fraction(t))
        gamma = (abs(y) - sigma2 / t) ** 2 / (2 * sigma2)
        if bernoulli_exp(rng, gamma):
            return y


def _isqrt_floor(value: Fraction) -> int:
    """⌊√value⌋ for a rational value ≥ 0, exactly."""
    root = math.isqrt(value.numerator // value.denominator)
    while (root + 1) ** 2 <= value:
        root += 1
    return root


def _draw(sampler: Any, parameter: Fraction, value: Any, size: int | None, rng: Any) -> Any:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"value must be an integer (exact mechanisms release integers), got value={value!r}")
    value = int(value)
    size = check_size(size)
    generator = check_rng(rng)
    if size is None:
        return value + sampler(generator, parameter)
    draws = [value + sampler(generator, parameter) for _ in range(size)]
    fits = all(-(2**62) < d < 2**62 for d in draws)
    return np.array(draws, dtype=np.int64 if fits else object)


@dataclasses.dataclass(frozen=True)
class DiscreteLaplaceMechanism(Mechanism):
    """Integer query + discrete Laplace noise P(z) ∝ exp(−|z|/t), sampled exactly.

    Guarantee: (Δ/t)-DP for an integer query of sensitivity Δ (CKS 2020, §2; the geometric
    mechanism of Ghosh, Roughgarden & Sundararajan 2009), exactly, with no floating-point
    caveat. ``scale`` may be an int, a Fraction or a float (a float is taken as the exact
    rational it represents).

    Examples
    --------
    >>> mech = DiscreteLaplaceMechanism(scale=2, sensitivity=1)
    >>> mech.epsilon
    0.5
    >>> mech.sample(10, size=5, rng=0).dtype
    dtype('int64')
    """

    scale: Any
    sensitivity: int = 1

    floating_point_safe: ClassVar[bool] = True

    def __post_init__(self) -> None:
        object.__setattr__(self, "scale", _as_fraction("scale", self.scale))
        object.__setattr__(self, "sensitivity", check_integer("sensitivity", self.sensitivity, minimum=1))

    @property
    def epsilon(self) -> float:
        """Δ/t (rounded up to the next float)."""
        return float_up(self.sensitivity / self.scale)

    @property
    def event(self) -> DiscreteLaplaceEvent:
        """:class:`~dpkit.accounting.events.DiscreteLaplaceEvent` with the scale rounded *down* to a
        float, so the accountant's ε = Δ/scale is never below the true one."""
        return DiscreteLaplaceEvent(scale=_fraction_down(self.scale), sensitivity=self.sensitivity)

    def sample(self, value: Any, size: int | None = None, rng: Any = None) -> Any:
        """``value`` (an int) + exact discrete Laplace noise: an int, or an int array of length ``size``."""
        return _draw(sample_discrete_laplace, self.scale, value, size, rng)


@dataclasses.dataclass(frozen=True)
class DiscreteGaussianMechanism(Mechanism):
    """Integer query + discrete Gaussian noise P(z) ∝ exp(−z²/(2σ²)), sampled exactly.

    Guarantee: Δ²/(2σ²)-zCDP for an integer query of sensitivity Δ (CKS 2020, Thm 4), and
    (ε, δ)-DP with δ from CKS 2020, Thm 7 (computed by the accountants from the event).
    ``sigma2`` is the variance parameter σ² (an int, Fraction or float taken exactly).

    Examples
    --------
    >>> mech = DiscreteGaussianMechanism(sigma2=4, sensitivity=1)
    >>> mech.rho
    0.125
    """

    sigma2: Any
    sensitivity: int = 1

    floating_point_safe: ClassVar[bool] = True

    def __post_init__(self) -> None:
        object.__setattr__(self, "sigma2", _as_fraction("sigma2", self.sigma2))
        object.__setattr__(self, "sensitivity", check_integer("sensitivity", self.sensitivity, minimum=1))

    @property
    def sigma(self) -> float:
        """√σ² as a float (informational)."""
        return float(np.sqrt(float(self.sigma2)))

    @property
    def rho(self) -> float:
        """Δ²/(2σ²), rounded up to the next float."""
        return float_up(Fraction(self.sensitivity**2) / (2 * self.sigma2))

    @property
    def event(self) -> DiscreteGaussianEvent:
        """:class:`~dpkit.accounting.events.DiscreteGaussianEvent` with σ rounded *down* to a float,
        so the accountant never sees more noise than is drawn."""
        return DiscreteGaussianEvent(sigma=_sqrt_down(self.sigma2), sensitivity=self.sensitivity)

    def sample(self, value: Any, size: int | None = None, rng: Any = None) -> Any:
        """``value`` (an int) + exact discrete Gaussian noise: an int, or an int array of length ``size``."""
        return _draw(sample_discrete_gaussian, self.sigma2, value, size, rng)


def _fraction_down(value: Fraction) -> float:
    """The largest float ≤ value."""
    result = float(value)
    if Fraction(result) > value:
        result = math.nextafter(result, -math.inf)
    return result


def _sqrt_down(value: Fraction) -> float:
    """The largest float whose square is ≤ value (exact comparison)."""
    result = math.sqrt(float(value))
    while Fraction(result) ** 2 > value:
        result = math.nextafter(result, -math.inf)
    while Fraction(math.nextafter(result, math.inf)) ** 2 <= value:
        result = math.nextafter(result, math.inf)
    return result
