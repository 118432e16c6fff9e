"""Float-safe Gaussian and Laplace noise: the continuous mechanism's output, rounded exactly to a lattice.

A continuous sampler plus the query answer, computed in doubles, outputs values whose low bits
depend on the answer (Mironov 2012, §3; Haney et al. 2022), so the textbook guarantee does not
hold as executed. The float-safe samplers release a deterministic function of an exactly private
value instead, for answers of any shape and at numpy's speed.

**What is released.** For an answer ``x`` (doubles, any shape) and a noise scale ``s`` (σ for
Gaussian, b for Laplace), fix the lattice ``Λ = 2^(⌊log₂ s⌋ − LATTICE_BITS)`` (it depends on ``s``
alone, never on the data) and release, coordinate by coordinate,

    ``m_j · Λ``  with  ``m_j = ⌊(x_j + s·Y_j)/Λ + ½⌋``,

where ``Y_j`` are i.i.d. N(0, 1) or Laplace(1) in exact real arithmetic; an answer beyond the
largest double times Λ is first clamped there (a 1-Lipschitz map, so no sensitivity grows). The
integer ``m`` is a deterministic function of the continuous mechanism's output ``x + sY``, so it
has *every* guarantee of that
mechanism at the same scale and sensitivity, by post-processing (Dwork & Roth 2014, Prop. 2.1):
the zCDP/RDP curves, the exact δ(ε) of Balle & Wang 2018 and the privacy loss distribution are
those of :class:`~dpkit.accounting.events.GaussianEvent` / ``LaplaceEvent``, unchanged. There is no
sensitivity inflation at any dimension: the rounding happens after the noise. The double ``m·Λ``
is in turn a deterministic function of ``m`` (IEEE 754 rounds correctly, and Λ is a power of two),
so no bit of the output carries anything else.

**Exact sampling.** ``Y`` is a deterministic function of one uniform ``U`` per coordinate: the
inverse CDF, ``Y = Φ⁻¹(U)`` for the Gaussian and a sign bit times ``−ln U`` for Laplace. numpy
draws the leading 53 (Laplace: 52) bits of ``U``; the answer enters only through ``n = rint(x/Λ)``
and ``f = x/Λ − n``, both exact. The fast path evaluates ``f + (s/Λ)·Y`` in doubles (scipy's
``ndtri``, numpy's ``log``) with an error bound that covers every ``U`` in the drawn bits' interval
and a relative error of up to ``2⁻⁴⁴`` in ``ndtri`` (Cephes documents a peak of 2.9·10⁻¹⁶, 2⁻⁵¹·⁶)
and ``2⁻⁴⁰`` in ``log`` (numpy documents at most 4 ulp, 2⁻⁵⁰). Where the bound cannot decide ``m``
(about one coordinate in 10⁷ for the Gaussian, 10⁶ for Laplace), more bits of the same ``U`` are
drawn and ``m`` is decided in mpmath's interval arithmetic, whose bounds are rigorous: ``−ln`` on
the interval for Laplace, and for the Gaussian the comparison of ``U`` with Φ at the two rounding
boundaries, Φ enclosed by its alternating Taylor series (:func:`_resolve`, :func:`_resolve_gaussian`).
So ``m`` has exactly the stated distribution: no total-variation slack is added to δ. The same
``rng`` gives the same output.

The answer's own floating-point error (a sum of clipped values computed in doubles) is a
property of the query, not of the noise: its sensitivity must cover it
(:mod:`dpkit.mechanisms.float_sensitivity`).
"""

from __future__ import annotations

import contextlib
import contextvars
import math
import sys
from typing import Any, Callable, Iterator

import mpmath
import numpy as np
from scipy import special

from dpkit._validation import check_rng
from dpkit.mechanisms.base import check_size, check_value, finish, output_shape

__all__ = ["LATTICE_BITS", "MIN_SCALE", "lattice", "sample_lattice_gaussian", "sample_lattice_laplace",
           "check_float_safe_scale", "continuous_noise", "resolve_float_safe", "refine_uniform", "undecided",
           "MAX_REFINEMENTS"]

LATTICE_BITS = 16
"""``s/Λ ∈ [2¹⁶, 2¹⁷)``: rounding adds variance ``Λ²/12 ≤ 2⁻³⁵s²`` to the noise's ``s²``."""

MIN_SCALE = 2.0**-1000
"""The smallest noise scale with a normal (non-zero) lattice (:func:`check_float_safe_scale`)."""

_SLACK = 2.0**-40          # allowed relative error of each libm call, and of the margin arithmetic
_BITS53 = 2.0**-53         # numpy's random(): k·2⁻⁵³, k uniform in [0, 2⁵³)
_BITS52 = 2.0**-52
_CLAMP = sys.float_info.max  # |x/Λ| is clamped here, so that it stays finite
_REFINE_BITS = 32
MAX_REFINEMENTS = 8  # a slow path undecided after this many refinements raises :func:`undecided`
_NDTRI_SLACK = 2.0**-44    # allowed relative error of scipy's ndtri (Cephes documents a peak of 2.9e-16 < 2⁻⁵¹)
_INSIDE = 3.5              # |Φ⁻¹(U)| ≤ this on the draws that one constant margin decides
with mpmath.workdps(40):  # each constant rounded to nearest, then one ulp towards safety
    _INSIDE_LOW = math.nextafter(float(mpmath.ncdf(-_INSIDE)), 1.0)  # r ≥ this: Φ⁻¹ ≥ −3.5 on [r, r + w]
    _INSIDE_HIGH = math.nextafter(float(mpmath.ncdf(_INSIDE) - mpmath.mpf(_BITS53)), 0.0)  # r ≤ this: Φ⁻¹ ≤ 3.5
    _GAUSSIAN_TIERS = tuple((reach, math.nextafter(float(_BITS53 * mpmath.sqrt(2 * mpmath.pi) * mpmath.exp(reach**2 / 2)
                                                         + (reach + 1) * _NDTRI_SLACK + 2.0**-49), 1.0))
                            for reach in (_INSIDE, 5.0))
"""(reach L, margin) pairs: where every draw of a call has ``|Φ⁻¹(U)| ≤ L`` on its interval, the margin
bounds ``|Y − ndtri(r)|`` in units of Y: the move of Φ⁻¹ over ``[r, r + w]`` (at most ``w/φ(L)``: 2⁻⁴²·⁸
for L = 3.5, 2⁻³³·⁶ for L = 5), ndtri's allowance ``2⁻⁴⁴(L + 1)``, and the rounding of ``units·Y + f``
(within 2⁻⁴⁹ per unit of ``units``). The first tier decides almost every coordinate; the second, looser,
decides a call whose draws reach past 3.5 without the per-coordinate work."""
_CHUNK = 1 << 14           # coordinates per pass: the fast path's temporaries stay in the CPU cache


_CONTINUOUS = contextvars.ContextVar("dpkit_continuous_noise", default=False)


@contextlib.contextmanager
def continuous_noise() -> Iterator[None]:
    """The explicit opt-out: mechanisms built inside this block without a ``float_safe`` argument
    use numpy's continuous samplers, which are not private as executed (each release marks its
    ledger, and a training run says so in its notes). ``dpkit train --continuous-noise`` runs in it.

    >>> from dpkit.mechanisms import GaussianMechanism
    >>> with continuous_noise():
    ...     GaussianMechanism(sigma=1.0).float_safe
    False
    >>> GaussianMechanism(sigma=1.0).float_safe
    True
    """
    token = _CONTINUOUS.set(True)
    try:
        yield
    finally:
        _CONTINUOUS.reset(token)


def resolve_float_safe(float_safe: Any) -> bool:
    """``float_safe`` as a bool; ``None`` means the default: ``True``, or ``False`` inside
    :func:`continuous_noise` (TypeError for anything else)."""
    if float_safe is None:
        return not _CONTINUOUS.get()
    if not isinstance(float_safe, (bool, np.bool_)):
        raise TypeError(f"float_safe must be True, False or None (the default), got float_safe={float_safe!r}")
    return bool(float_safe)


def check_float_safe_scale(name: str, scale: float) -> float:
    """``scale`` if it is finite and at least :data:`MIN_SCALE` (ValueError naming ``name`` otherwise): below,
    the lattice would underflow, and an infinite scale leaves no real value to round or compare; the float-safe
    samplers and comparisons (:mod:`dpkit.mechanisms.exact_comparison`) all check it.

    >>> check_float_safe_scale("scale", 2.0)
    2.0
    """
    if not MIN_SCALE <= scale < math.inf:
        raise ValueError(f"{name} must be at least 2^-1000 and finite for float-safe noise, got {name}={scale!r}; "
                         "pass float_safe=False for the continuous sampler")
    return scale


def lattice(scale: float) -> float:
    """Λ = 2^(⌊log₂ s⌋ − LATTICE_BITS), so that ``s/Λ ∈ [2¹⁶, 2¹⁷)`` exactly.

    >>> lattice(1.0) == 2.0**-16, lattice(3.0) == 2.0**-15
    (True, True)
    """
    _, exponent = math.frexp(scale)  # scale = m · 2^exponent, m ∈ [0.5, 1)
    return math.ldexp(1.0, exponent - 1 - LATTICE_BITS)


def sample_lattice_gaussian(value: Any, sigma: float, size: int | None, rng: Any) -> Any:
    """``value`` + N(0, σ²) noise, rounded exactly to the lattice of σ (see the module docstring).

    Shape ``value.shape`` for ``size=None`` (a float for a scalar), else ``(size,) + value.shape``.

    >>> out = sample_lattice_gaussian([0.0, 1.0], 2.0, 3, rng=0)
    >>> out.shape, bool(np.all(out / lattice(2.0) == np.round(out / lattice(2.0))))
    ((3, 2), True)
    """
    return _sample(value, sigma, size, rng, _gaussian_units)


def sample_lattice_laplace(value: Any, scale: float, size: int | None, rng: Any) -> Any:
    """``value`` + Laplace(b) noise, rounded exactly to the lattice of b (see the module docstring).

    >>> out = sample_lattice_laplace(0.25, 1.0, None, rng=0)
    >>> isinstance(out, float), (out / lattice(1.0)).is_integer()
    (True, True)
    """
    return _sample(value, scale, size, rng, _laplace_units)


def _sample(value: Any, scale: float, size: int | None, rng: Any,
            units_of: Callable[[np.ndarray, float, np.random.Generator], np.ndarray]) -> Any:
    array = check_value(value)
    size = check_size(size)
    generator = check_rng(rng)
    check_float_safe_scale("scale", scale)
    step = lattice(scale)
    units = scale / step
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        scaled = np.divide(array, step, out=np.empty(array.shape))  # exact (Λ a power of two) unless clamped
        if not (scaled.max(initial=0.0) <= _CLAMP and scaled.min(initial=0.0) >= -_CLAMP):  # overflowed to ±∞
            np.clip(scaled, -_CLAMP, _CLAMP, out=scaled)
        centre = np.rint(scaled)
        offsets = scaled - centre  # exact, in [−½, ½]
        if size is not None:
            shape = output_shape(size, array.shape)
            offsets, centre = np.broadcast_to(offsets, shape), np.broadcast_to(centre, shape)
        offsets, centres = offsets.reshape(-1), centre.reshape(-1)
        if offsets.size <= _CHUNK:
            out = units_of(offsets, units, generator)
        else:
            out = np.empty(offsets.size)
            for start in range(0, offsets.size, _CHUNK):  # chunks that stay in the CPU cache
                out[start:start + _CHUNK] = units_of(offsets[start:start + _CHUNK], units, generator)
        out += centres
        out *= step
    return finish(out.reshape(centre.shape), size)


def _gaussian_units(offset: np.ndarray, units: float, generator: np.random.Generator) -> np.ndarray:
    """``⌊f + (σ/Λ)·Y + ½⌋`` per coordinate, ``Y = Φ⁻¹(U)`` (the inverse CDF, scipy's ``ndtri``).

    Error bound of the fast path: ``U ∈ [r, r + w]`` (``w = 2⁻⁵³``). Where ``[r, r + w]`` lies in
    ``[Φ(−3.5), Φ(3.5)]`` (all but 5·10⁻⁴ of the draws), ``Φ⁻¹`` moves by at most ``w·√(2π)e^6.125``
    over it, and ``ndtri``'s own error is allowed ``2⁻⁴⁴(|Y| + 1)``; one constant margin
    (:data:`_GAUSSIAN_TIERS`) decides those. Elsewhere, ``ndtri(r + w) − ndtri(r)`` bounds the move
    coordinate by coordinate (monotonicity), with the same allowance at both ends. The margin is
    about 2⁻²⁵ lattice units, so about one coordinate in 10⁷ takes the slow path."""
    draws = generator.random(offset.size)
    normal = special.ndtri(draws)  # −∞ at r = 0: undecidable, the slow path
    distance = np.multiply(normal, units)
    distance += offset
    rounded = np.rint(distance)
    distance -= rounded
    np.abs(distance, out=distance)  # NaN at r = 0
    # |rounded| ≤ units·(L − 0.01) − 1 gives |ndtri(r)| ≤ L − 0.01, so every [r, r + w] lies where
    # |Φ⁻¹| ≤ L (ndtri's allowance is far below the 0.01 spare): three reductions decide a whole call
    farthest, extent = distance.max(initial=0.0), max(rounded.max(initial=0.0), -rounded.min(initial=0.0))
    for reach, margin in _GAUSSIAN_TIERS:
        if extent <= units * (reach - 0.01) - 1.0 and farthest < 0.5 - (units * margin + 2.0**-49):
            return rounded
    threshold = 0.5 - (units * _GAUSSIAN_TIERS[0][1] + 2.0**-49)
    sure = distance < threshold
    outside = (draws < _INSIDE_LOW) | (draws > _INSIDE_HIGH)
    if outside.any():
        tails = np.flatnonzero(outside)
        low, high = normal[tails], special.ndtri(draws[tails] + _BITS53)  # exact sums: r is a multiple of w
        error = (high - low) * (1.0 + 2.0**-50) + (np.abs(low) + np.abs(high) + 2.0) * (2.0 * _NDTRI_SLACK)
        sure[tails] = distance[tails] < 0.5 - (units * error + 2.0**-49)  # NaN or ∞ error: False
    if sure.all():
        return rounded
    for index in np.flatnonzero(~sure):
        state = [round(float(draws[index]) / _BITS53), 53]  # U ∈ [r, r + 2⁻⁵³]
        rounded[index] = _resolve_gaussian(float(offset[index]), units, state, generator)
    return rounded


def _laplace_units(offset: np.ndarray, units: float, generator: np.random.Generator) -> np.ndarray:
    """``⌊f + (b/Λ)·Y + ½⌋`` per coordinate, ``Y = ±(−ln U)`` from one uniform (sign bit + 52 bits);
    the caller silences numpy's divide warning (``t = w`` gives an infinite width: the slow path).

    Error bound of the fast path: ``U ∈ (t − w, t]`` (``w = 2⁻⁵²``) moves ``−ln U`` by at most
    ``w/(t − w)``; ``log``'s relative error and the rounding of products and sums are covered by
    ``2(E + 1)·2⁻⁴⁰``."""
    draws = generator.random(offset.size)
    negative = draws >= 0.5
    top = 1.0 - (2.0 * draws - negative)  # U ∈ (top − 2⁻⁵², top], top ∈ [2⁻⁵², 1], exact
    magnitude = np.log(top)
    magnitude *= -1.0
    width = _BITS52 / (top - _BITS52)
    width += (magnitude + 1.0) * (2.0 * _SLACK)
    threshold = 0.5 - (units * width + 2.0 * _SLACK)  # −∞ where undecidable (t = w)
    value = np.where(negative, -magnitude, magnitude)
    value *= units
    value += offset
    rounded = np.rint(value)
    sure = np.abs(value - rounded) < threshold
    if sure.all():
        return rounded
    for index in np.flatnonzero(~sure):
        numerator = round(float(top[index]) / _BITS52) - 1  # U ∈ (top − 2⁻⁵², top]
        transform = _negative_exponential if negative[index] else _exponential
        rounded[index] = _resolve(float(offset[index]), units, transform, [[numerator, 52]], generator)
    return rounded


# ---------------------------------------------------------------- the rigorous slow path

def _normal_cdf(x: Any) -> Any:
    """An interval enclosing Φ(x) for the interval ``x`` (mpmath ``iv``, at ``iv.prec``): the Taylor
    series of erf (Abramowitz & Stegun 1964, 7.1.5), alternating with terms that decrease once
    n > z², so the first omitted term bounds the remainder (Leibniz); the caller sets a precision
    that absorbs the series' cancellation (about z²·log₂e bits)."""
    z = x / mpmath.iv.sqrt(2)
    square = z * z
    bound = float(max(abs(mpmath.mpf(z.a)), abs(mpmath.mpf(z.b))))
    term, total, n = z, z, 0
    tolerance = mpmath.ldexp(1, -mpmath.iv.prec)
    while True:
        n += 1
        term = -term * square / n
        addend = term / (2 * n + 1)
        if n > 2 * bound * bound + 2 and mpmath.mpf(abs(addend).b) < tolerance:
            remainder = mpmath.mpf(abs(addend).b)
            total += mpmath.iv.mpf([-remainder, remainder])
            break
        total += addend
    return (1 + total * 2 / mpmath.iv.sqrt(mpmath.iv.pi)) / 2


def _resolve_gaussian(offset: float, units: float, state: list[int], generator: np.random.Generator) -> float:
    """``⌊f + units·Φ⁻¹(U) + ½⌋`` exactly for ``U ∈ [N, N + 1]·2⁻ᴮ`` (``state = [N, B]``, refined in
    place): the answer is ``k`` when ``Φ((k − ½ − f)/units) < U < Φ((k + ½ − f)/units)``, checked
    with :func:`_normal_cdf`'s rigorous enclosures. ``k`` starts at the rounding of Φ⁻¹ at the
    interval's middle (mpmath's ``erfinv``, a guess) and moves one step while the interval lies
    wholly on one side; while it straddles a boundary, 32 more bits of ``U`` are drawn and the guess
    is made again, at most :data:`MAX_REFINEMENTS` times (then :func:`undecided`)."""
    saved = mpmath.iv.prec
    try:
        for _ in range(MAX_REFINEMENTS + 1):
            numerator, bits = state
            with mpmath.workprec(bits + 64):
                low, high = mpmath.mpf((numerator, -bits)), mpmath.mpf((numerator + 1, -bits))
                middle = (low + high) / 2
                guess = int(mpmath.floor(offset + units * mpmath.sqrt(2) * mpmath.erfinv(2 * middle - 1) + 0.5))
            while True:
                edge = max(abs(guess + side - offset) / units for side in (-0.5, 0.5))
                precision = bits + 96 + int(edge * edge)  # the series cancels about 0.72·x² bits
                with mpmath.workprec(precision):
                    mpmath.iv.prec = precision
                    below, above = (_normal_cdf((mpmath.iv.mpf(guess) + side - mpmath.iv.mpf(offset))
                                                / mpmath.iv.mpf(units)) for side in (-0.5, 0.5))
                    if high < mpmath.mpf(below.a):
                        guess -= 1
                    elif low > mpmath.mpf(above.b):
                        guess += 1
                    elif low > mpmath.mpf(below.b) and high < mpmath.mpf(above.a):
                        return float(guess)
                    else:
                        break  # the interval straddles a boundary: more bits
            refine_uniform(state, generator)
        raise undecided(MAX_REFINEMENTS)
    finally:
        mpmath.iv.prec = saved


def refine_uniform(state: list[int], generator: np.random.Generator) -> None:
    """32 more bits of a uniform known as ``[N, B]`` (it lies in ``[N, N + 1]·2⁻ᴮ``), in place: the
    slow paths' one way to draw."""
    state[0] = (state[0] << _REFINE_BITS) + int(generator.integers(0, 2**_REFINE_BITS))
    state[1] += _REFINE_BITS


def undecided(rounds: int) -> ValueError:
    """The error of a slow path still undecided after ``rounds`` refinements of 32 bits: a random
    generator gets there with probability below 2⁻²⁵⁰, so the generator is not random (a constant
    one would otherwise make the loop run for ever)."""
    return ValueError(f"rng: {rounds} refinements of 32 bits did not decide a float-safe output (probability "
                      f"below 2^-250 for a random generator); the generator is not random")


def _exponential(u: list[Any]) -> Any:
    return -mpmath.iv.log(u[0])


def _negative_exponential(u: list[Any]) -> Any:
    return mpmath.iv.log(u[0])


def _resolve(offset: float, units: float, transform: Callable[[list[Any]], Any], state: list[list[int]],
             generator: np.random.Generator) -> float:
    """``⌊f + units·Y + ½⌋`` exactly: ``Y = transform(U)`` with each ``U`` in ``[N, N + 1]·2⁻ᴮ``
    (``state`` holds ``[N, B]`` per uniform and is refined in place), evaluated in mpmath's interval
    arithmetic; while the interval straddles a rounding boundary, 32 more bits of every ``U`` are
    drawn (each refinement divides the intervals by 2³²), at most :data:`MAX_REFINEMENTS` times."""
    saved = mpmath.iv.prec
    try:
        for _ in range(MAX_REFINEMENTS + 1):
            precision = max(bits for _, bits in state) + 64
            with mpmath.workprec(precision):
                mpmath.iv.prec = precision
                uniforms = [mpmath.iv.mpf([mpmath.mpf((n, -bits)), mpmath.mpf((n + 1, -bits))]) for n, bits in state]
                if all(mpmath.mpf(u.a) > 0 for u in uniforms):
                    value = transform(uniforms) * units + offset + mpmath.mpf(0.5)
                    low, high = mpmath.mpf(value.a), mpmath.mpf(value.b)
                    if mpmath.isfinite(low) and mpmath.isfinite(high) and mpmath.floor(low) == mpmath.floor(high):
                        return float(int(mpmath.floor(low)))
            for entry in state:
                refine_uniform(entry, generator)
        raise undecided(MAX_REFINEMENTS)
    finally:
        mpmath.iv.prec = saved
