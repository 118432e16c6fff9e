"""Composition of pmfs by direct convolution, with a proven round-off bound.

Where every loss of a ledger is a finite set of atoms on the grid (randomized response, pure and
(ε, δ)-DP pairs, discrete Laplace and Gaussian; :func:`~.mechanisms.exact_at_lattice`), the
discretised pmfs are the true ones and the certified interval's width is round-off only. The FFT
of :mod:`.algebra` has an a-posteriori round-off estimate, about 1e-16 of the total mass per grid
point, which at small δ is neither negligible nor proven. A direct convolution of non-negative
masses is: each entry is a sum of m products of non-negative floats, so it is computed to within
a relative (m + 1)u of the exact convolution of its inputs (u = 2⁻⁵³; Higham 2002, "Accuracy and
Stability of Numerical Algorithms", §3.1, the bound γ_{m+1} for a dot product, which is relative to
the entry itself when no term is negative), plus at most m subnormal ulps for products that
underflow. These bounds are carried through the powering and applied at the end: masses scaled
up by them (pessimistic, with the underflow on the +∞ atom) or down (optimistic, with the
underflow in the deficit), so δ(ε) = Σ p (1 − e^{ε−l})₊ + p∞ stays on its safe side for every ε.
"""

from __future__ import annotations

import math

import numpy as np

from dpkit.accounting.pld.pmf import LossPmf

__all__ = ["DIRECT_WORK", "direct_work", "compose_all", "self_compose"]

_U = 2.0**-53
_SUBNORMAL = 2.0**-1074

#: Largest number of multiply-adds the direct convolutions of one composition may take (about a
#: second of ``numpy.convolve``); a larger ledger is composed by FFT (:mod:`.algebra`).
DIRECT_WORK = 2**28


class _Bounded:
    """Masses with a relative error bound ``rel`` and an absolute (underflow) bound ``floor``."""

    __slots__ = ("probs", "rel", "floor")

    def __init__(self, probs: np.ndarray, rel: float, floor: float):
        self.probs, self.rel, self.floor = probs, rel, floor

    def times(self, other: "_Bounded") -> "_Bounded":
        terms = min(self.probs.size, other.probs.size)
        probs = np.convolve(self.probs, other.probs)
        rel = (1.0 + self.rel) * (1.0 + other.rel) * (1.0 + (terms + 1) * _U / (1.0 - (terms + 1) * _U)) - 1.0
        # an input's absolute error meets masses summing to at most 1 + rel; each product may underflow
        floor = (self.floor + other.floor) * (1.0 + rel) + probs.size * terms * _SUBNORMAL
        return _Bounded(probs, rel * (1.0 + 4.0 * _U), floor)


def _powers(count: int) -> list[int]:
    """The binary digits of ``count``, most significant first (the steps of binary powering)."""
    return [int(b) for b in bin(count)[2:]]


def direct_work(sizes_and_counts: list[tuple[int, int]]) -> float:
    """The multiply-adds of :func:`self_compose` (binary powering, as :func:`_power` does it) for pmfs of
    the given sizes raised to the given counts, and of :func:`compose_all` of the results."""
    work, total = 0.0, 0
    for size, count in sizes_and_counts:
        length = 0  # (size of the partial power) − 1
        for bit in _powers(count):
            work += float(length + 1) ** 2 if length else 0.0
            length *= 2
            if bit:
                work += float(length + 1) * size if length else 0.0
                length += size - 1
        work += float(total + 1) * float(length + 1) if total else 0.0
        total += length
    return work


def _inputs(pmf: LossPmf) -> _Bounded:
    """``pmf``'s masses with their own error: each is taken to be computed from its logarithm by a few
    operations (as the atoms of :mod:`.mechanisms` are), so within (8 + |log p|)·u relatively."""
    positive = pmf.probs[pmf.probs > 0.0]
    worst = float(np.max(-np.log(positive))) if positive.size else 0.0
    return _Bounded(pmf.probs, (8.0 + max(worst, 0.0)) * _U, 0.0)


def self_compose(pmf: LossPmf, count: int) -> LossPmf:
    """The ``count``-fold composition of ``pmf`` by direct convolution (binary powering)."""
    return _finish(pmf, _power(_inputs(pmf), count), count * pmf.offset,
                   _power_infinity(pmf.infinity_mass, count, pmf.pessimistic), pmf.deficit * count,
                   pmf.shift * count, pmf.order)


def compose_all(pmfs: list[LossPmf]) -> LossPmf:
    """The composition of pmfs on one spacing and direction of error, by direct convolution."""
    first = pmfs[0]
    if any(p.pessimistic != first.pessimistic or p.h != first.h for p in pmfs):
        raise ValueError("can only compose pmfs with the same spacing and direction of error")
    if len(pmfs) == 1:
        return first
    product = _Bounded(first.probs, 0.0, 0.0)
    for pmf in pmfs[1:]:
        product = product.times(_Bounded(pmf.probs, 0.0, 0.0))  # (their own errors are in place already)
    survive = math.fsum(math.log1p(-min(p.infinity_mass, 1.0)) if p.infinity_mass < 1.0 else -math.inf for p in pmfs)
    infinity = 1.0 if survive == -math.inf else -math.expm1(survive)
    infinity = _towards_safety(infinity, first.pessimistic, len(pmfs))
    return _finish(first, product, sum(p.offset for p in pmfs), infinity, sum(p.deficit for p in pmfs),
                   sum(p.shift for p in pmfs), min(p.order for p in pmfs))


def _power(base: _Bounded, count: int) -> _Bounded:
    result = None
    for bit in _powers(count):
        result = None if result is None else result.times(result)
        if bit:
            result = base if result is None else result.times(base)
    return result


def _power_infinity(mass: float, count: int, pessimistic: bool) -> float:
    """1 − (1 − mass)^count, rounded towards safety."""
    if mass >= 1.0:
        return 1.0
    if mass <= 0.0:
        return 0.0
    return _towards_safety(-math.expm1(count * math.log1p(-mass)), pessimistic, 4)


def _towards_safety(value: float, up: bool, operations: int) -> float:
    """``value`` moved by (8 + operations) ulps up (pessimistic) or down (optimistic), within [0, 1]."""
    factor = (8 + operations) * 2.0 * _U
    return min(1.0, value * (1.0 + factor)) if up else max(0.0, value * (1.0 - factor))


def _finish(like: LossPmf, product: _Bounded, offset: int, infinity: float, deficit: float, shift: float,
            order: int) -> LossPmf:
    """The composed pmf with the round-off bounds moved to the safe side."""
    if like.pessimistic:
        probs = product.probs * (1.0 + product.rel) * (1.0 + 2.0 * _U)
        return LossPmf(like.h, offset, probs, min(1.0, infinity + product.floor), True, shift=shift, order=order)
    probs = product.probs * (1.0 - product.rel) * (1.0 - 2.0 * _U)
    return LossPmf(like.h, offset, probs, infinity, False, deficit=deficit + product.floor, shift=shift, order=order)
