"""Discretised privacy-loss mass functions (the representation layer of the PLD accountant).

A :class:`LossPmf` is a mass function of the privacy loss L = log(dP/dQ) of a pair of
distributions (P, Q), with L ~ P, supported on the grid ``{shift + k h : k = offset, offset+1, ...}``
plus an atom at +∞ (``infinity_mass``: P-mass where Q has none). Its hockey-stick divergence is

    δ(ε) = Σ_{l_k > ε} p_k (1 − e^{ε − l_k}) + p_∞          (Meiser & Mohammadi 2018, eq. 5;
                                                           Sommer, Meiser & Mohammadi 2019, Thm 5)

A *pessimistic* pmf over-estimates δ(ε) for every ε (its pair dominates the true one); an
*optimistic* one under-estimates it, up to ``deficit``, a certified bound on the mass it may
over-count (tail and round-off allowances), which is subtracted from δ.
"""

from __future__ import annotations

import dataclasses
import functools
import math

import numpy as np


@dataclasses.dataclass(frozen=True)
class LossPmf:
    """Privacy-loss mass function on the grid ``(offset + i) * h`` plus an infinity atom.

    Attributes
    ----------
    h
        Grid spacing (the value discretisation interval).
    offset
        Grid index of ``probs[0]``.
    probs
        Non-negative masses (float64).
    infinity_mass
        Mass at loss +∞ (counted fully in δ for every ε).
    pessimistic
        True if δ(ε) of this pmf is an upper bound on the true δ(ε), False if a lower bound.
    deficit
        Optimistic pmfs only: an upper bound on the mass over-counted by the construction
        (subtracted from δ, so that the lower bound stays a lower bound).
    shift
        A constant added to every grid loss (``shift + (offset + i) h``); it lets a leaf align
        a hard end of its support with a grid point. Shifts add under composition.
    order
        Order in h of the discretisation error (2: connect-the-dots / tangent construction;
        1: the first-order optimistic fallback of :func:`~dpkit.accounting.pld.mechanisms.discretise`).
        A composition has the smallest order of its parts.
    """

    h: float
    offset: int
    probs: np.ndarray
    infinity_mass: float
    pessimistic: bool
    deficit: float = 0.0
    shift: float = 0.0
    order: int = 2

    @functools.cached_property
    def losses(self) -> np.ndarray:
        """The loss value of every entry of ``probs`` (computed once)."""
        return self.shift + (self.offset + np.arange(self.probs.size)) * self.h

    @functools.cached_property
    def finite_log(self) -> tuple[np.ndarray, np.ndarray]:
        """Losses and log-masses of the non-zero entries (computed once)."""
        keep = self.probs > 0
        return self.losses[keep], np.log(self.probs[keep])

    @property
    def size(self) -> int:
        """Number of grid points."""
        return int(self.probs.size)

    @property
    def _roundoff(self) -> float:
        """Relative float round-off allowance of a sum over this grid (pairwise summation)."""
        return (16.0 + math.log2(max(2, self.size))) * 2.0**-53

    @functools.cached_property
    def _loss_error(self) -> float:
        """Absolute error bound of a computed grid loss ``shift + k h`` (two roundings, a few ulps).

        A loss off by e moves a term p (1 − e^{ε − l}) by at most p·e, so δ(ε) moves by at most e
        times the mass with loss above ε − e (:meth:`_slack`), and the crossing ε(δ) by at most e."""
        if not self.size:
            return 0.0
        return 4.0 * 2.0**-52 * (abs(self.shift) + max(abs(float(self.losses[0])), abs(float(self.losses[-1]))))

    def _slack(self, epsilons: np.ndarray) -> np.ndarray:
        """Absolute allowance on δ(ε) for the errors of the inputs of the sum: every mass is off by up to
        :attr:`_roundoff` relative to the mass it was split from (a neighbouring cell's at most) and every
        loss by :attr:`_loss_error`, so both are paid on the mass with loss above ε − h − (loss error)."""
        s1 = np.concatenate((np.cumsum(self.probs[::-1])[::-1], [0.0]))
        edge = np.asarray(epsilons, dtype=float) - self.h - self._loss_error
        return (self._roundoff + self._loss_error) * s1[np.searchsorted(self.losses, edge, side="right")]

    def delta(self, epsilon: float) -> float:
        """δ(ε) of this pmf (upper bound if pessimistic, lower bound if optimistic), with the
        float round-off of the sum and of the grid losses allowed for in the safe direction."""
        losses = self.losses
        mask = losses > epsilon
        value = float(np.sum(self.probs[mask] * -np.expm1(epsilon - losses[mask])))
        slack = float(self._slack(np.array([epsilon]))[0])
        value += self.infinity_mass
        if self.pessimistic:
            value = value * (1.0 + self._roundoff) + slack
        else:
            value = value * (1.0 - self._roundoff) - slack - self.deficit
        return min(1.0, max(0.0, value))

    def _tail_sums(self) -> tuple[np.ndarray, np.ndarray]:
        """For k = 0..n: S1_k = Σ_{i≥k} p_i and log S2_k = log Σ_{i≥k} p_i e^{−l_i}.

        If the grid spans at most 600 in loss, S2 is summed in linear space relative to the
        lowest loss (p_i e^{l_0 − l_i} ∈ [p_i e^{−600}, p_i]: a term only loses precision if
        p_i < 1e-47, and then by at most one subnormal ulp, worth < 1e-62 in any δ(ε)); wider
        grids use a logarithmic accumulation (e^{−l} over- or underflows beyond ±709).
        """
        losses = self.losses
        s1 = np.concatenate((np.cumsum(self.probs[::-1])[::-1], [0.0]))
        if self.size and losses[-1] - losses[0] <= 600.0:
            scaled = self.probs * np.exp(losses[0] - losses)
            with np.errstate(divide="ignore"):
                log_s2 = np.log(np.concatenate((np.cumsum(scaled[::-1])[::-1], [0.0]))) - losses[0]
            return s1, log_s2
        with np.errstate(divide="ignore"):
            log_terms = np.log(self.probs) - losses
        log_s2 = np.concatenate((np.logaddexp.accumulate(log_terms[::-1])[::-1], [-np.inf]))
        return s1, log_s2

    def delta_many(self, epsilons: np.ndarray) -> np.ndarray:
        """δ(ε) for an array of ε at once (same bounds as :meth:`delta`), via tail sums."""
        eps = np.asarray(epsilons, dtype=float)
        s1, log_s2 = self._tail_sums()
        first = np.searchsorted(self.losses, eps, side="right")  # first grid loss > ε
        with np.errstate(over="ignore", invalid="ignore"):
            subtrahend = np.exp(np.minimum(eps + log_s2[first], 1.0))
            values = s1[first] - subtrahend
        # δ = S1 − e^ε S2 cancels: its round-off is relative to S1 + e^ε S2, not to δ.
        slack = self._roundoff * (s1[first] + subtrahend) + 1e-16 * s1[first] + self._slack(eps)
        values = np.maximum(values, 0.0) + self.infinity_mass
        if self.pessimistic:
            values = values * (1.0 + self._roundoff) + slack
        else:
            values = values * (1.0 - self._roundoff) - slack - self.deficit
        return np.clip(values, 0.0, 1.0)

    def epsilon(self, delta: float) -> float:
        """The smallest ε ≥ 0 with δ(ε) ≤ ``delta`` for this pmf (exact for the discrete pmf).

        Between grid points δ(ε) = A − e^ε B with fixed A, B, so the crossing is solved in
        closed form; the result is rounded up (pessimistic) or down (optimistic) by one ulp.
        Returns ``inf`` if the infinity mass alone exceeds ``delta``.
        """
        # Solve against a target moved by the round-off allowance, in the safe direction.
        delta = delta / (1.0 + self._roundoff) if self.pessimistic else delta / (1.0 - self._roundoff)
        # (1e-60: the linear tail sums' subnormal allowance, see _tail_sums.)
        extra = self.infinity_mass + 1e-60 if self.pessimistic else self.infinity_mass - self.deficit - 1e-60
        if extra >= delta:
            return math.inf
        losses = self.losses
        s1_all, log_s2_all = self._tail_sums()
        first_positive = int(np.searchsorted(losses, 0.0, side="right"))
        with np.errstate(over="ignore", invalid="ignore"):
            delta_at_zero = s1_all[first_positive] - math.exp(min(float(log_s2_all[first_positive]), 1.0)) + extra
        if delta_at_zero <= delta:
            return 0.0
        # Sums strictly above grid point j: index j + 1 of the inclusive tail sums.
        # δ = A − e^ε B cancels: its round-off is relative to A, not to δ. A pessimistic pmf
        # solves with A and B moved apart by that round-off (δ over-estimated), an optimistic one
        # with them moved together; the loss error then moves the crossing by at most e.
        r = self._roundoff if self.pessimistic else -self._roundoff
        s1, log_s2 = s1_all[1:], log_s2_all[1:]
        with np.errstate(over="ignore", invalid="ignore"):
            deltas = s1 * (1.0 + r) - np.exp(np.minimum(losses + log_s2, 1.0)) * (1.0 - r) + extra
        candidates = np.nonzero((losses >= 0.0) & (deltas <= delta))[0]
        if candidates.size == 0:  # the top grid point has δ = extra < delta unless round-off says otherwise
            return math.inf if self.pessimistic else float(losses[-1])
        j = int(candidates[0])
        # On [max(0, l_{j-1}), l_j], δ(ε) = A − e^ε B with the sums above index j − 1.
        a_sum = float(s1_all[j]) * (1.0 + r) + extra
        log_b = float(log_s2_all[j]) + math.log1p(-r)
        lower_end = float(losses[j - 1]) if j > 0 else -math.inf
        if not math.isfinite(log_b) or a_sum <= delta:
            value = lower_end if j > 0 else float(losses[j])
        else:
            value = math.log(a_sum - delta) - log_b
            value += (1.0 if self.pessimistic else -1.0) * 4.0 * 2.0**-53 * (abs(value) + abs(log_b))
        value = min(max(value, lower_end), float(losses[j]))
        value += self._loss_error if self.pessimistic else -self._loss_error
        value = max(value, 0.0)
        return math.nextafter(value, math.inf if self.pessimistic else -math.inf) if value > 0 else 0.0


def tail_cut(probs: np.ndarray, tail: float) -> tuple[int, int, float, float] | None:
    """``(lo, hi, low_mass, high_mass)``: the entries ``probs[lo:hi]`` left when at most ``tail`` mass is
    cut at each end, and the masses cut; None when fewer than two entries would be left."""
    low_cum = np.cumsum(probs)
    high_cum = np.cumsum(probs[::-1])
    lo = int(np.searchsorted(low_cum, tail, side="right"))
    hi_drop = int(np.searchsorted(high_cum, tail, side="right"))
    hi = probs.size - hi_drop
    if lo >= hi - 1:
        return None
    return lo, hi, float(low_cum[lo - 1]) if lo > 0 else 0.0, float(high_cum[hi_drop - 1]) if hi_drop > 0 else 0.0


def truncate(pmf: LossPmf, tail: float) -> LossPmf:
    """Drop grid entries carrying at most ``tail`` mass at each end, on the safe side.

    Pessimistic: the upper tail moves to the infinity atom, the lower tail is rounded up to
    the lowest kept point. Optimistic: the upper tail is rounded down to the highest kept
    point, the lower tail is dropped (both only lower δ(ε)).
    """
    probs = pmf.probs
    if probs.size <= 2:
        return pmf
    cut = tail_cut(probs, tail)
    if cut is None:
        return pmf
    lo, hi, low_mass, high_mass = cut
    kept = probs[lo:hi].copy()
    infinity = pmf.infinity_mass
    if pmf.pessimistic:
        kept[0] += low_mass
        infinity += high_mass
    else:
        kept[-1] += high_mass
    return dataclasses.replace(pmf, offset=pmf.offset + lo, probs=kept, infinity_mass=infinity)
