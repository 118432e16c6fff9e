"""Features of the bits of floating-point outputs: the ulp grid an output lies on.

A mechanism proved private over the reals runs on doubles. ``c + noise`` computed in binary64
is exact or rounded to the ulp of the result, so *which* grid an output lies on depends on the
centre ``c``: with ``c = 0`` an output near 0 keeps the full precision of the noise, with
``c = 1`` it is ``fl(1 + noise)`` and a multiple of 2⁻⁵³ (Haney et al., "Precision-based attacks
on differential privacy", PoPETs 2022; Mironov, CCS 2012, §3 for the Laplace case). These
functions turn each output into an integer statistic of its bits, so that the audit's
threshold and likelihood-ratio events (:mod:`dpkit.audit.events`) can compare the two inputs on
them like on any other feature; nothing here assumes how the noise was drawn.

* :func:`granularity`: the exponent ``g`` of the lowest set bit, ``x = odd · 2^g`` (``x`` is a
  multiple of ``2^t`` exactly when ``g ≥ t``): the ulp grid / lattice step an output lies on;
* :func:`trailing_zeros`: the number of low mantissa bits that are zero (``g`` relative to the
  output's own ulp: 0 when the last bit is set, i.e. odd parity of the significand);
* :func:`low_bits`: the low ``k`` bits of the significand (a pattern of the last bits);
* :func:`difference_granularity`: ``g`` of the *exact* difference ``x − c`` from a known centre
  ``c`` (the query answer): the lattice ``c + 2^t ℤ`` an output lies on *relative to the input*.
  Without snapping, ``fl(c + noise) − c`` is a multiple of the ulp of ``c``'s binade near ``c``,
  and the noise's own finer grid elsewhere; a mechanism that rounds only its noise (``c + Λk``)
  is on ``c + Λℤ`` on one input and off it on the other.

A snapped mechanism (outputs rounded to a fixed lattice ``Λ = 2^j``) gives the same statistics
on both inputs and passes; an integer mechanism has ``g ≥ 0`` throughout.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["granularity", "trailing_zeros", "low_bits", "difference_granularity", "ulp_code", "describe_ulp_code",
           "ZERO_GRANULARITY"]

ZERO_GRANULARITY = 2048.0  # 0 is a multiple of every power of two: above every finite exponent
_MANTISSA = np.uint64((1 << 52) - 1)
_HIDDEN = np.uint64(1 << 52)


def _significand_exponent(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(s, e)`` with ``|x| = s · 2^e`` exactly, ``s`` the integer significand (0 ≤ s < 2⁵³)."""
    bits = np.ascontiguousarray(x, dtype=np.float64).view(np.uint64)
    field = (bits >> np.uint64(52)) & np.uint64(0x7FF)
    mantissa = bits & _MANTISSA
    normal = field > 0
    significand = np.where(normal, mantissa | _HIDDEN, mantissa)
    exponent = np.where(normal, field.astype(np.int64) - 1075, -1074)
    return significand, exponent


def _lowest_bit(significand: np.ndarray) -> np.ndarray:
    """Index of the lowest set bit of each nonzero significand (exact: powers of two ≤ 2⁵² are
    floats and ``frexp`` reads their exponent)."""
    low = significand & (~significand + np.uint64(1))
    return np.frexp(np.maximum(low, np.uint64(1)).astype(np.float64))[1] - 1


def granularity(x: np.ndarray) -> np.ndarray:
    """``g`` with ``x = odd · 2^g`` for each finite nonzero ``x``; ``ZERO_GRANULARITY`` for ±0, NaN
    for NaN and ±inf.

    >>> granularity(np.array([1.0, 0.75, 3 * 2.0**-60, 0.0, 6.0])).tolist()
    [0.0, -2.0, -60.0, 2048.0, 1.0]
    """
    x = np.asarray(x, dtype=np.float64)
    significand, exponent = _significand_exponent(x)
    g = (exponent + _lowest_bit(significand)).astype(np.float64)
    g = np.where(x == 0.0, ZERO_GRANULARITY, g)
    return np.where(np.isfinite(x), g, np.nan)


def trailing_zeros(x: np.ndarray) -> np.ndarray:
    """Number of zero bits at the low end of the 53-bit significand (53 for ±0, NaN for NaN and ±inf).

    >>> trailing_zeros(np.array([1.0, 1.0 + 2.0**-52, 1.5]))
    array([52.,  0., 51.])
    """
    x = np.asarray(x, dtype=np.float64)
    significand, _ = _significand_exponent(x)
    tz = np.where(x == 0.0, 53, _lowest_bit(significand)).astype(np.float64)
    return np.where(np.isfinite(x), tz, np.nan)


def low_bits(x: np.ndarray, k: int = 4) -> np.ndarray:
    """The low ``k`` bits of the significand as an integer in ``[0, 2^k)`` (NaN for NaN and ±inf).

    >>> low_bits(np.array([1.0 + 5 * 2.0**-52, 1.0]), k=4)
    array([5., 0.])
    """
    x = np.asarray(x, dtype=np.float64)
    significand, _ = _significand_exponent(x)
    code = (significand & np.uint64((1 << k) - 1)).astype(np.float64)
    return np.where(np.isfinite(x), code, np.nan)


def difference_granularity(x: np.ndarray, centre: float) -> np.ndarray:
    """``g`` with ``x − centre = odd · 2^g`` for the exact (unrounded) difference; ``ZERO_GRANULARITY``
    where ``x == centre``, NaN where ``x`` is NaN or ±inf. ``x − c`` is a multiple of ``2^t``
    exactly when ``g ≥ t``.

    Exact without big integers: where the two granularities differ the difference has the smaller
    one; where they are equal (``g``), ``x/2^g`` and ``c/2^g`` are odd integers below 2⁵³ and their
    difference is exact in int64.

    >>> difference_granularity(np.array([1.0 + 2.0**-52, 1.5, 0.75, 1.0]), 1.0).tolist()
    [-52.0, -1.0, -2.0, 2048.0]
    >>> difference_granularity(np.array([3.0]), 1.0).tolist()  # 3 - 1 = 2 = 1 * 2^1
    [1.0]
    """
    x = np.asarray(x, dtype=np.float64)
    c = float(centre)
    if not math.isfinite(c):
        raise ValueError(f"centre must be finite, got centre={centre!r}")
    gx = granularity(x)
    gc = float(granularity(np.array([c]))[0])
    finite = np.isfinite(x)
    out = np.where(x == 0.0, gc, np.where(c == 0.0, gx, np.minimum(gx, gc)))
    same = finite & (gx == gc) & (x != 0.0) & (c != 0.0)
    if np.any(same):
        shift = -int(gc)
        a = np.ldexp(x[same], shift).astype(np.int64)  # odd integers below 2^53: exact
        b = np.int64(math.ldexp(c, shift))
        d = np.abs(a - b).astype(np.uint64)
        out[same] = np.where(d == 0, ZERO_GRANULARITY, gc + _lowest_bit(d))
    out = np.where(x == c, ZERO_GRANULARITY, out)
    return np.where(finite, out, np.nan)


_CODE_OFFSET = 1100  # binades run from -1073 to 1024


def ulp_code(x: np.ndarray) -> np.ndarray:
    """One integer code per output for the grid it lies on: ``sign · ((e + 1100) · 64 + t)`` with
    ``x = m · 2^e`` (``m ∈ [0.5, 1)``, the binade) and ``t = g − e + 53`` (:func:`granularity` ``g``; the
    :func:`trailing_zeros` of a normal ``x``); 0 for ±0,
    NaN for NaN and ±inf. Two outputs share a code when they lie in the same binade on the same
    power-of-two lattice ``2^(e − 53 + t)`` and no finer.

    >>> [describe_ulp_code(c) for c in ulp_code(np.array([0.75, -3 * 2.0**-60, 0.0]))]
    ['+[0.5, 1) multiple of 2^-2', '-[2^-59, 2^-58) multiple of 2^-60', '0']
    """
    x = np.asarray(x, dtype=np.float64)
    exponent = np.frexp(x)[1].astype(np.float64)
    code = (exponent + _CODE_OFFSET) * 64.0 + (granularity(x) - exponent + 53.0)  # t = tz, subnormals too
    return np.where(x == 0.0, 0.0, np.sign(x) * code)


def describe_ulp_code(code: float) -> str:
    """The grid a :func:`ulp_code` stands for, e.g. ``'+[0.5, 1) multiple of 2^-54'``."""
    if code == 0:
        return "0"
    sign = "-" if code < 0 else "+"
    e, t = divmod(int(abs(code)), 64)
    e -= _CODE_OFFSET
    low = "0.5" if e == 0 else ("1" if e == 1 else f"2^{e - 1}")
    high = {0: "1", 1: "2"}.get(e, f"2^{e}")
    return f"{sign}[{low}, {high}) multiple of 2^{e - 53 + t}"
