"""Float sensitivity: how far a sum or mean computed in doubles can move between neighbouring datasets.

A mechanism's sensitivity must hold for the answer the code really computes. A sum of n values
clipped to [L, U] computed in doubles is not the real sum: its rounding error depends on the
values and on the order of the additions, so between neighbours the computed sum can move by
more than U − L (Casacuberta, Shoemate, Vadhan & Wagaman, "Widespread underestimates of
sensitivity in differentially private libraries and how to fix them", CCS 2022, §5, where
reordering and rounding at mixed magnitudes make the released float sum of neighbours differ by
far more than the real sensitivity). The noise is sampled exactly
(:mod:`dpkit.mechanisms.float_safe`); this module bounds the answer's own error, so the
sensitivity passed to the mechanism covers the computed answer.

**Model.** IEEE 754 binary64 with round to nearest, unit roundoff u = 2⁻⁵³, and Higham's standard
model fl(a op b) = (a op b)(1 + δ), |δ| ≤ u (Higham, *Accuracy and Stability of Numerical
Algorithms*, 2nd ed., SIAM 2002, eq. (2.4)); gradual underflow adds an absolute error of at most
2⁻¹⁰⁷⁵ to a product or a quotient, never to a sum (Higham 2002, §2.1, eq. (2.8)), and the bounds
below add that allowance wherever a product or quotient is rounded. γ_k = ku/(1 − ku) for ku < 1
(Higham 2002, §3.1, eq. (3.8)); a product of k factors (1 + δ_i)^{±1} is 1 + θ_k with |θ_k| ≤ γ_k
(Lemma 3.1).

**Sums in any order.** Every way numpy (or BLAS) can add n numbers — sequential loops
(``np.sum(X, axis=0)`` over the rows of a C-ordered array, ``np.cumsum``), pairwise or blocked
summation with several accumulators (``np.sum`` of a 1-D array), dot and matrix-vector products
with or without fused multiply-add — is a tree of additions in which each operand goes through at
most n − 1 of them, so the computed ŝ = Σᵢ xᵢ(1 + θ⁽ⁱ⁾) with |θ⁽ⁱ⁾| ≤ γ_{n−1} and

    |ŝ − s| ≤ γ_{n−1} Σᵢ |xᵢ|    (Higham 2002, §4.2, eq. (4.4); Higham 1993, SIAM J. Sci. Comput. 14(4), (2.6)).

A term that is itself a rounded product (a dot product) goes through one more rounding: γ_n
(Higham 2002, §3.1, eq. (3.5)); dividing the sum by a public n, or scaling it by a public
constant, adds one more each (Lemma 3.1). **Vectors.** The bound holds per coordinate, so for
vector terms with ‖xᵢ‖₂ ≤ B (any norm that depends only on the absolute values of the
coordinates: ℓ₁, ℓ₂, ℓ∞), ‖ŝ − s‖ ≤ γ_{n−1} ‖Σᵢ |xᵢ|‖ ≤ γ_{n−1} Σᵢ ‖xᵢ‖ ≤ γ_{n−1} n B by the
triangle inequality: no factor √d (only the underflow allowance grows with the dimension d).

**Sensitivity.** With f̂ the computed answer and f the exact one of the same terms,
|f̂(D) − f̂(D′)| ≤ |f(D) − f(D′)| + |f̂(D) − f(D)| + |f̂(D′) − f(D′)|: the real sensitivity plus
both sides' rounding errors. Every bound is computed in exact rational arithmetic
(:class:`fractions.Fraction`) and rounded up to the next double (:func:`round_up`).

**Clipping.** A vector scaled so that its *computed* norm is at most C can have a real norm
slightly above C: :func:`clipped_norm_bound`. A row accepted by a float check
``sum(x**2) <= T``: :func:`checked_norm_bound`.

>>> sum_sensitivity(1000, 1.0)           # values in [-1, 1], replace-one: 2 plus both sides' rounding errors
2.000000000221823
>>> relative = mean_sensitivity(36000, 1.0, products=True, dimension=105) / (2.0 / 36000) - 1
>>> 1e-7 < relative < 2e-7               # a mean gradient over 36,000 rows: about n²u/2 more than 2/n
True
"""

from __future__ import annotations

import math
import numbers
from fractions import Fraction
from typing import Union

import numpy as np

from dpkit.accounting.adaptive_steps import float_up

__all__ = [
    "UNIT_ROUNDOFF", "DIMENSION_LIMIT", "gamma", "round_up", "sum_error", "mean_error", "sum_sensitivity",
    "mean_sensitivity", "interval_sum_sensitivity", "interval_mean_sensitivity", "clipped_norm_bound",
    "checked_norm_bound", "clipped_sum_sensitivity", "sqrt_up",
]

Number = Union[int, float, Fraction]

UNIT_ROUNDOFF = Fraction(1, 2**53)
"""u = 2⁻⁵³: binary64 with round to nearest."""

DIMENSION_LIMIT = 2**31
"""The largest vector dimension dpkit's algorithms declare in a float sensitivity computed before
the data are seen (the row-norm and clipping bounds grow with d through γ_{d+1}); they refuse
wider data."""

_UNDERFLOW = Fraction(1, 2**1074)
"""Twice the absolute error of one rounded product or quotient under gradual underflow (2⁻¹⁰⁷⁵)."""
_MIN_CLIP = Fraction(1, 2**400)
_MAX_NORM = 2**400


def _count(name: str, value: object, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (numbers.Integral, np.integer)):
        raise TypeError(f"{name} must be an integer, got {name}={value!r} ({type(value).__name__})")
    value = int(value)
    if value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {name}={value}")
    return value


def _exact(name: str, value: object, *, positive: bool = False) -> Fraction:
    """``value`` as an exact Fraction (a double is taken exactly); finite, >= 0 (> 0 if ``positive``)."""
    if isinstance(value, bool) or not isinstance(value, (numbers.Real, np.floating, np.integer)):
        raise TypeError(f"{name} must be a real number, got {name}={value!r} ({type(value).__name__})")
    if isinstance(value, (float, np.floating)) and not math.isfinite(float(value)):
        raise ValueError(f"{name} must be finite, got {name}={value}")
    exact = Fraction(value) if isinstance(value, (numbers.Rational, float)) else Fraction(float(value))
    if exact < 0 or (positive and exact == 0):
        raise ValueError(f"{name} must be {'> 0' if positive else '>= 0'}, got {name}={value}")
    return exact


def _signed(name: str, value: object) -> Fraction:
    if isinstance(value, bool) or not isinstance(value, (numbers.Real, np.floating, np.integer)):
        raise TypeError(f"{name} must be a real number, got {name}={value!r} ({type(value).__name__})")
    if isinstance(value, (float, np.floating)) and not math.isfinite(float(value)):
        raise ValueError(f"{name} must be finite, got {name}={value}")
    return Fraction(value) if isinstance(value, (numbers.Rational, float)) else Fraction(float(value))


def _relation(neighbouring: object) -> str:
    value = getattr(neighbouring, "value", neighbouring)
    if value not in ("replace-one", "add-remove"):
        raise ValueError(f"neighbouring must be 'replace-one' or 'add-remove', got neighbouring={neighbouring!r}")
    return str(value)


def gamma(k: int) -> Fraction:
    """γ_k = ku/(1 − ku), exactly (Higham 2002, eq. (3.8)); ValueError unless ku < 1.

    >>> gamma(0), gamma(1) == Fraction(1, 2**53 - 1)
    (Fraction(0, 1), True)
    """
    k = _count("k", k, 0)
    ku = k * UNIT_ROUNDOFF
    if ku >= 1:
        raise ValueError(f"k must satisfy k*u < 1 (k < 2**53) for gamma_k to bound the rounding, got k={k}")
    return ku / (1 - ku)


def round_up(value: Number) -> float:
    """The smallest double >= ``value`` (exact for a double); ValueError beyond the largest double.

    >>> round_up(Fraction(1, 3)) > 1 / 3, round_up(0.5)
    (True, 0.5)
    """
    exact = _signed("value", value)
    try:
        result = float_up(exact)
    except OverflowError:
        raise ValueError("value exceeds the largest double") from None
    if math.isinf(result):
        raise ValueError("value exceeds the largest double")
    return result


def _sqrt_up(square: Fraction) -> float:
    root = math.sqrt(round_up(square))
    while Fraction(root) ** 2 < square:
        root = math.nextafter(root, math.inf)
    return root


def sqrt_up(value: Number) -> float:
    """A double >= √``value`` (within an ulp or two): ``math.sqrt`` rounds to nearest, which may be below.

    >>> Fraction(math.sqrt(6.0)) ** 2 < 6, Fraction(sqrt_up(6)) ** 2 >= 6, sqrt_up(2) == math.sqrt(2.0)
    (True, True, True)
    """
    return _sqrt_up(_exact("value", value))


def _sum_error(n: int, bound: Fraction, products: bool, dimension: int) -> Fraction:
    if n <= 1 and not products:
        return Fraction(0)
    p = int(products)
    return gamma(n - 1 + p) * n * bound + p * dimension * n * _UNDERFLOW


def _mean_error(n: int, bound: Fraction, products: bool, scale: Fraction, dimension: int) -> Fraction:
    p, q = int(products), int(scale != 1)
    return scale * gamma(n + p + q) * bound + dimension * (scale * (p + 1) + 1) * _UNDERFLOW


def sum_error(n: int, bound: Number, *, products: bool = False, dimension: int = 1) -> float:
    """Bound on |ŝ − s| for the sum of ``n`` terms of magnitude (or norm) at most ``bound``, added in any order.

    γ_{n−1}·n·B (Higham 2002, eq. (4.4)); with ``products=True`` the terms are products formed
    inside the sum (a dot product or matrix-vector product: ``X.T @ w``), γ_n·n·B (eq. (3.5)) plus
    the underflow allowance d·n·2⁻¹⁰⁷⁴. For vector terms ``bound`` bounds each term's ℓ₂ (or ℓ₁,
    ℓ∞) norm and the result bounds the error's norm (module docstring); ``dimension`` d enters
    only the underflow allowance.

    >>> sum_error(1, 5.0), sum_error(2, 1.0), sum_error(1000, 1.0)
    (0.0, 2.2204460492503136e-16, 1.1091128016006544e-10)
    """
    n = _count("n", n, 1)
    return round_up(_sum_error(n, _exact("bound", bound), bool(products), _count("dimension", dimension, 1)))


def mean_error(n: int, bound: Number, *, products: bool = False, scale: Number = 1,
               dimension: int = 1) -> float:
    """Bound on |m̂ − c·s/n| for m̂ = fl(c·fl(ŝ/n)): the sum ŝ of ``n`` terms (norm ≤ ``bound``,
    any order) divided by the public n and, if ``scale`` c ≠ 1, multiplied by c.

    Each term goes through at most n − 1 + p + 1 + q roundings (p = 1 for ``products``, q = 1 when
    scaled), so the error is c·γ_{n+p+q}·B (Higham 2002, eq. (4.4) and Lemma 3.1) plus the
    underflow allowance d·(c(p + 1) + 1)·2⁻¹⁰⁷⁴.

    >>> mean_error(4, 1.0) >= 4 * 2.0**-53
    True
    """
    n = _count("n", n, 1)
    return round_up(_mean_error(n, _exact("bound", bound), bool(products), _exact("scale", scale, positive=True),
                                _count("dimension", dimension, 1)))


def sum_sensitivity(n: int, bound: Number, *, neighbouring: str = "replace-one", products: bool = False,
                    dimension: int = 1) -> float:
    """Sensitivity of the *computed* sum of at most ``n`` terms of norm ≤ ``bound`` B (any summation order).

    Replace-one (both datasets of n terms): 2B + 2·γ_{n−1}·n·B; add/remove (n and n − 1 terms):
    B + γ_{n−1}·n·B + γ_{n−2}·(n − 1)·B — the real sensitivity plus both sides' errors
    (:func:`sum_error`; Higham 2002, eq. (4.4)). Under add/remove the size is private: ``n`` must
    be a public upper bound on it (the bound increases with n). Scalars or vectors (ℓ₂ norm: no √d).

    >>> sum_sensitivity(3, 1.0), sum_sensitivity(1, 1.0, neighbouring="add-remove")
    (2.0000000000000018, 1.0)
    """
    n = _count("n", n, 1)
    B = _exact("bound", bound)
    d = _count("dimension", dimension, 1)
    if _relation(neighbouring) == "replace-one":
        return round_up(2 * B + 2 * _sum_error(n, B, bool(products), d))
    smaller = _sum_error(n - 1, B, bool(products), d) if n > 1 else Fraction(0)
    return round_up(B + _sum_error(n, B, bool(products), d) + smaller)


def mean_sensitivity(n: int, bound: Number, *, products: bool = False, scale: Number = 1,
                     dimension: int = 1) -> float:
    """Replace-one sensitivity of the computed c·(Σᵢ xᵢ)/n, n public, terms of norm ≤ ``bound`` B.

    2cB/n + 2·(c·γ_{n+p+q}·B + underflow) (:func:`mean_error`): the real sensitivity 2cB/n plus
    both sides' errors. Only replace-one: the divisor n must be public, and under add/remove it
    is not.

    >>> mean_sensitivity(1, 1.0), mean_sensitivity(1000, 1.0) * 1000
    (2.0000000000000004, 2.0000000002220446)
    """
    n = _count("n", n, 1)
    B = _exact("bound", bound)
    c = _exact("scale", scale, positive=True)
    return round_up(2 * c * B / n + 2 * _mean_error(n, B, bool(products), c, _count("dimension", dimension, 1)))


def _interval(low: object, high: object) -> tuple[Fraction, Fraction]:
    L, U = _signed("low", low), _signed("high", high)
    if not L < U:
        raise ValueError(f"low must be < high, got low={low}, high={high}")
    return L, U


def interval_sum_sensitivity(n: int, low: Number, high: Number, *, neighbouring: str = "replace-one") -> float:
    """Sensitivity of the computed sum of at most ``n`` values clipped to [``low``, ``high``] = [L, U].

    Replace-one: (U − L) + 2·γ_{n−1}·n·M; add/remove: M + γ_{n−1}·n·M + γ_{n−2}·(n − 1)·M, with
    M = max(|L|, |U|) (Higham 2002, eq. (4.4)). At mixed magnitudes (U − L ≪ M) the error term
    dominates: that is Casacuberta et al.'s (2022) observation, and why OpenDP adds it.

    >>> interval_sum_sensitivity(1024, 2.0**40, 2.0**40 + 1)   # U - L = 1, but 1024 values near 2**40
    256.7500000002617
    """
    n = _count("n", n, 1)
    L, U = _interval(low, high)
    M = max(abs(L), abs(U))
    if _relation(neighbouring) == "replace-one":
        return round_up((U - L) + 2 * _sum_error(n, M, False, 1))
    smaller = _sum_error(n - 1, M, False, 1) if n > 1 else Fraction(0)
    return round_up(M + _sum_error(n, M, False, 1) + smaller)


def interval_mean_sensitivity(n: int, low: Number, high: Number) -> float:
    """Replace-one sensitivity of the computed mean (sum divided by the public ``n``) of values in [L, U]:
    (U − L)/n + 2·(γ_n·M + 2⁻¹⁰⁷³), M = max(|L|, |U|) (:func:`mean_error`).

    >>> interval_mean_sensitivity(10, 0.0, 1.0)
    0.10000000000000223
    """
    n = _count("n", n, 1)
    L, U = _interval(low, high)
    M = max(abs(L), abs(U))
    return round_up((U - L) / n + 2 * _mean_error(n, M, False, Fraction(1), 1))


def clipped_norm_bound(clip: Number, dimension: int, *, roundings: int = 3) -> float:
    """Upper bound on the real ℓ₂ norm of a vector the code scaled so that its *computed* norm is ≤ ``clip`` C.

    The norm is computed as √(fl(Σⱼ xⱼ²)) over d = ``dimension`` coordinates (``np.linalg.norm``,
    ``np.sqrt(x @ x)``, an einsum): fl(Σ xⱼ²) ≥ (1 − γ_{d+1})‖x‖² (Higham 2002, eq. (3.5); the
    extra 1 covers underflowing squares); the square root, the scale factor and the output
    product add ``roundings`` further factors (1 + δ)^{±1}: 3 for ``x * min(1, C/norm)`` or
    ``x / max(1, norm/C)``, one more for each extra product or quotient in the scale factor. By
    Lemma 3.1 of Higham (2002) the output's norm is at most

        C·(1 + γ_r)/√(1 − γ_{d+1}) + d·2⁻¹⁰⁷⁰        (the last term: underflow in the products)

    whether or not the vector was scaled. Assumes finite inputs with ‖x‖ ≤ 2⁴⁰⁰ and a scale
    coefficient of magnitude ≤ 1 (dpkit's rows have norm ≤ 1); refuses C < 2⁻⁴⁰⁰.

    >>> clipped_norm_bound(1.0, 100), clipped_norm_bound(0.5, 105, roundings=5)
    (1.0000000000000062, 0.5000000000000034)
    """
    C = _exact("clip", clip, positive=True)
    if C < _MIN_CLIP:
        raise ValueError(f"clip must be >= 2**-400 (no underflow in the squared norm), got clip={clip}")
    d = _count("dimension", dimension, 1)
    r = _count("roundings", roundings, 0)
    scale = C * (1 + gamma(r))
    squared = scale * scale / (1 - gamma(d + 1))
    return round_up(Fraction(_sqrt_up(squared)) + d * Fraction(1, 2**1070))


def checked_norm_bound(threshold: Number, dimension: int) -> float:
    """Upper bound on the real ‖x‖₂ of a row that passed the float check ``np.sum(x**2) <= threshold`` T.

    fl(Σⱼ xⱼ²) ≥ (1 − γ_{d+1})‖x‖² when ‖x‖² ≥ d·2⁻¹⁰²¹ (d squares, d − 1 additions, each
    underflowing square off by at most 2⁻¹⁰⁷⁵: Higham 2002, eq. (3.5)), so
    ‖x‖ ≤ √(max(T/(1 − γ_{d+1}), d·2⁻¹⁰²¹)).

    >>> checked_norm_bound(1.0, 105), checked_norm_bound(1.0, 2**31)
    (1.000000000000006, 1.0000001192093395)
    """
    T = _exact("threshold", threshold, positive=True)
    d = _count("dimension", dimension, 1)
    return _sqrt_up(max(T / (1 - gamma(d + 1)), d * Fraction(1, 2**1021)))


def clipped_sum_sensitivity(n: int, clip: Number, dimension: int, *, neighbouring: str = "replace-one",
                            roundings: int = 3) -> float:
    """ℓ₂ sensitivity of the computed sum of at most ``n`` clipped vectors (e.g. per-example gradients).

    :func:`sum_sensitivity` with B = :func:`clipped_norm_bound` (``clip``, ``dimension``,
    ``roundings``): 2B + 2γ_{n−1}nB under replace-one, B + γ_{n−1}nB + γ_{n−2}(n − 1)B under
    add/remove, no factor √d (module docstring).

    >>> clipped_sum_sensitivity(10_000, 1.0, 1000)
    2.000000022202353
    """
    bound = clipped_norm_bound(clip, dimension, roundings=roundings)
    return sum_sensitivity(n, bound, neighbouring=neighbouring, dimension=dimension)
