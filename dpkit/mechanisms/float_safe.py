"""Float-safe forms of the Laplace and Gaussian mechanisms (``float_safe=True``).

A continuous sampler plus the query answer, computed in doubles, outputs values whose low bits
depend on the answer (Mironov 2012, §3; Haney et al. 2022), so the textbook guarantee does not
hold as executed. The float-safe forms release a deterministic function of an exactly private
value instead:

* **Laplace** → Mironov's snapping mechanism (:class:`~dpkit.mechanisms.snapping.SnappingMechanism`,
  Mironov 2012, Thm 1): ε = (Δ′ + 2⁻⁴⁹B)/λ, Δ′ the smallest power of two ≥ Δ, B the clamping
  bound (default ``DEFAULT_BOUND_RATIO`` · λ).
* **Gaussian** → the discrete Gaussian on a power-of-two grid, as OpenDP does for floats: with
  ``Λ = 2^(⌊log₂ σ⌋ − GRID_BITS)``, the answer is rounded to the nearest multiple ``nΛ`` (exact
  rational arithmetic), ``Z ~ N_ℤ(0, (σ/Λ)²)`` is drawn exactly (Canonne, Kamath & Steinke 2020,
  Alg. 3, :func:`~dpkit.mechanisms.discrete.sample_discrete_gaussian`) and ``(n + Z)·Λ`` is
  released (the conversion of the integer ``n + Z`` to a double is post-processing).

Accounting of the Gaussian form: two answers at distance ≤ Δ round to integers ``n, n′`` with
``|n − n′| ≤ ⌊Δ/Λ⌋ + 1 =: Δ_ℤ`` (each rounding moves by ≤ Λ/2, and the shift is an integer), so
one release is ``N_ℤ(n, σ_ℤ²)`` against ``N_ℤ(n′, σ_ℤ²)`` with an integer shift ≤ Δ_ℤ, σ_ℤ = σ/Λ
(exact: Λ is a power of two). It is recorded as ``DiscreteGaussianEvent(σ_ℤ, Δ_ℤ)``: Δ_ℤ²/(2σ_ℤ²)-zCDP
(CKS 2020, Thm 4), and the exact (ε, δ) curve of CKS 2020, Thm 7 for the PLD accountant
(σ_ℤ < 2¹⁷). The sensitivity is thereby inflated by at most a factor ``1 + Λ/Δ ≤ 1 + 2⁻¹⁶σ/Δ``.
Both forms release one scalar per call: the theorems are for a scalar query.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import numpy as np

from dpkit._validation import check_rng
from dpkit.accounting.adaptive_steps import float_up
from dpkit.mechanisms.base import check_size, check_value
from dpkit.mechanisms.discrete import sample_discrete_gaussian

__all__ = ["GRID_BITS", "DEFAULT_BOUND_RATIO", "gaussian_grid", "grid_sensitivity", "grid_rho",
           "sample_grid_gaussian", "check_scalar"]

GRID_BITS = 16
"""σ/Λ ∈ [2¹⁶, 2¹⁷): rounding the answer moves it by ≤ 2⁻¹⁷σ, and σ_ℤ stays below the PLD
accountant's exact-enumeration limit."""

DEFAULT_BOUND_RATIO = 2.0**30
"""Snapping's default clamping bound B = 2³⁰λ: the ε slack 2⁻⁴⁹B/λ is 2⁻¹⁹."""


def gaussian_grid(sigma: float) -> float:
    """Λ = 2^(⌊log₂ σ⌋ − GRID_BITS), so that σ/Λ ∈ [2¹⁶, 2¹⁷) exactly.

    >>> gaussian_grid(1.0) == 2.0**-16, gaussian_grid(3.0) == 2.0**-15
    (True, True)
    """
    _, exponent = math.frexp(sigma)  # sigma = m · 2^exponent, m ∈ [0.5, 1)
    return math.ldexp(1.0, exponent - 1 - GRID_BITS)


def grid_sensitivity(sensitivity: float, grid: float) -> int:
    """Δ_ℤ = ⌊Δ/Λ⌋ + 1: the largest integer shift of two answers at distance ≤ Δ rounded to the grid Λ.

    >>> grid_sensitivity(1.0, 0.25), grid_sensitivity(0.3, 0.25)
    (5, 2)
    """
    return math.floor(Fraction(sensitivity) / Fraction(grid)) + 1


def grid_rho(sensitivity: float, sigma: float) -> float:
    """Δ_ℤ²/(2σ_ℤ²) of the float-safe Gaussian (σ_ℤ = σ/Λ), rounded up to the next float.

    >>> grid_rho(1.0, 1.0) == float_up(Fraction(2**16 + 1) ** 2 / (2 * Fraction(2**16) ** 2))
    True
    """
    grid = gaussian_grid(sigma)
    return float_up(Fraction(grid_sensitivity(sensitivity, grid)) ** 2 / (2 * (Fraction(sigma) / Fraction(grid)) ** 2))


def check_scalar(value: Any) -> float:
    """The query answer as one finite float (the float-safe forms release one scalar per call)."""
    array = check_value(value)
    if array.size != 1:
        raise ValueError(f"value must be a scalar for float_safe=True (the guarantee is for one scalar query; "
                         f"release coordinates one at a time), got shape {array.shape}")
    return float(array.reshape(-1)[0])


def sample_grid_gaussian(value: Any, sigma: float, size: int | None, rng: Any) -> Any:
    """``(n + Z)·Λ`` with ``n`` the answer rounded to the grid and ``Z ~ N_ℤ(0, (σ/Λ)²)`` exact;
    one float for ``size=None``, else an array of ``size`` outputs."""
    answer = check_scalar(value)
    size = check_size(size)
    generator = check_rng(rng)
    grid = gaussian_grid(sigma)
    centre = round(Fraction(answer) / Fraction(grid))  # nearest multiple of the grid, exactly
    sigma2 = (Fraction(sigma) / Fraction(grid)) ** 2
    draws = [float(centre + sample_discrete_gaussian(generator, sigma2)) * grid for _ in range(size or 1)]
    return draws[0] if size is None else np.array(draws, dtype=float).reshape((size,) + np.shape(value))
