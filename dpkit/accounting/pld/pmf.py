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

#: Grid points per block of the tail sums of :meth:`LossPmf.epsilon`.
_BLOCK = 1024


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
    noise
        A bound on the absolute round-off of every entry of ``probs`` that is not yet in
        ``infinity_mass`` or ``deficit`` (the noise floor of an FFT power,
        :func:`~dpkit.accounting.pld.algebra.self_compose`): δ(ε) moves by at most ``noise`` times the
        number of entries above ε, which :meth:`delta`, :meth:`delta_many` and :meth:`epsilon` add on the
        safe side. Anything else that reads the masses first calls :meth:`settled`.
    """

    h: float
    offset: int
    probs: np.ndarray
    infinity_mass: float
    pessimistic: bool
    deficit: float = 0.0
    shift: float = 0.0
    order: int = 2
    noise: float = 0.0

    def settled(self) -> "LossPmf":
        """This pmf with :attr:`noise` paid for every entry at once (on the +∞ atom if pessimistic, in the
        deficit if optimistic), for uses that do not count the entries above ε."""
        if not self.noise:
            return self
        paid = self.noise * self.size
        if self.pessimistic:
            return dataclasses.replace(self, infinity_mass=min(1.0, self.infinity_mass + paid), noise=0.0)
        return dataclasses.replace(self, deficit=self.deficit + paid, noise=0.0)

    def _noise_above(self, count):
        """The allowance for :attr:`noise` over ``count`` entries, signed towards safety."""
        return (self.noise if self.pessimistic else -self.noise) * count

    @functools.cached_property
    def losses(self) -> np.ndarray:
        """The loss value of every entry of ``probs`` (computed once)."""
        losses = np.arange(self.offset, self.offset + self.probs.size, dtype=float)
        losses *= self.h
        losses += self.shift
        return losses

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
        value += self.infinity_mass + self._noise_above(int(np.count_nonzero(mask)))
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

    @functools.cached_property
    def _block_tail_sums(self) -> tuple[np.ndarray, np.ndarray] | None:
        """Tail sums at the block starts k = bB (b = 0..⌈n/B⌉, B = :data:`_BLOCK`): S1_k and W_k = Σ_{i≥k} p_i
        e^{l_0 − l_i}, the linear sums of :meth:`_tail_sums`; None for a grid wider than 600 (logarithmic sums).

        A block's terms are weighted relative to its first point by a dot product with (e^{−jh})_{j<B} and
        then scaled by e^{−bBh}: each term's factor is the one of :meth:`_tail_sums` up to a few ulps (its
        subnormal caveat applies to the block sums instead of the terms), with no per-point exponential."""
        if not self.size or self.losses[-1] - self.losses[0] > 600.0:
            return None
        full = self.size // _BLOCK
        head, rest = self.probs[: full * _BLOCK].reshape(full, _BLOCK), self.probs[full * _BLOCK:]
        ratio = np.exp(-self.h * np.arange(_BLOCK))
        mass = np.concatenate((head.sum(axis=1), [rest.sum()] if rest.size else []))
        # (einsum's own loop, not a BLAS call whose idle threads would spin on a shared machine)
        dot = np.einsum("ij,j->i", head, ratio)
        if rest.size:
            dot = np.concatenate((dot, [float(np.sum(rest * ratio[: rest.size]))]))
        weighted = dot * np.exp(-self.h * _BLOCK * np.arange(mass.size))
        s1 = np.concatenate((np.cumsum(mass[::-1])[::-1], [0.0]))
        return s1, np.concatenate((np.cumsum(weighted[::-1])[::-1], [0.0]))

    @functools.cached_property
    def _wide_tail_sums(self) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`_tail_sums` computed once, for the grids whose sums are not blocked (:attr:`_block_tail_sums`)."""
        return self._tail_sums()

    @functools.cached_property
    def _tail_roundoff(self) -> float:
        """Relative round-off bound of the tail sums :meth:`epsilon` uses (non-negative terms, each within a
        few ulps of its exact value): blocked sums (:attr:`_block_tail_sums`) add at most B + ⌈n/B⌉ + 2B terms
        in a row (a block, the blocks above, the points up to the next block start; B = min(n, :data:`_BLOCK`));
        the per-point sums of :meth:`_tail_sums` (wide grids) at most n. Never below :attr:`_roundoff`."""
        blocked = self._block_tail_sums is not None
        chain = 3 * min(self.size, _BLOCK) + -(-self.size // _BLOCK) if blocked else self.size
        return max(self._roundoff, (8.0 + chain) * 2.0**-53)

    def _tail_sums_between(self, lo: int, hi: int) -> tuple[np.ndarray, np.ndarray]:
        """S1_k and log S2_k of :meth:`_tail_sums` for k = lo..hi only (0 ≤ lo ≤ hi ≤ n, hi − lo ≤ B): the
        points from lo up to the next block start, then the block tail sums there."""
        if self._block_tail_sums is None:
            s1, log_s2 = self._wide_tail_sums
            return s1[lo: hi + 1], log_s2[lo: hi + 1]
        block_s1, block_w = self._block_tail_sums
        b = -(-hi // _BLOCK)
        p = self.probs[lo: min(b * _BLOCK, self.size)]
        s1 = np.cumsum(np.concatenate(([block_s1[b]], p[::-1])))[::-1]
        w = np.cumsum(np.concatenate(([block_w[b]], (p * np.exp(-self.h * np.arange(lo, lo + p.size)))[::-1])))[::-1]
        with np.errstate(divide="ignore"):
            log_s2 = np.log(w[: hi - lo + 1]) - (self.shift + self.offset * self.h)
        return s1[: hi - lo + 1], log_s2

    def _crossing(self, delta: float, extra: float, r: float) -> int | None:
        """The first grid index j with l_j ≥ 0 and A_j(1 + r) − e^{l_j} B_j(1 − r) + extra ≤ ``delta`` (A_j, B_j:
        S1 and S2 above j, :meth:`_tail_sums`; with :attr:`noise` paid on the entries above j), or None. Where
        the sums are blocked (:attr:`_block_tail_sums`) this δ(l_j) is evaluated at the last point of each block,
        then point by point in the first block that crosses. (δ(l_j) is non-increasing for a pessimistic pmf;
        for an optimistic one the noise subtracted may make it rise again, and any crossing found is then still
        a lower bound on ε: δ(ε) is decreasing inside each cell, so the crossing has δ above the target below it.)"""
        losses = self.losses
        if self._block_tail_sums is None:
            s1, log_s2 = self._wide_tail_sums
            above = self._noise_above(self.size - 1 - np.arange(self.size))
            with np.errstate(over="ignore", invalid="ignore"):
                deltas = s1[1:] * (1.0 + r) - np.exp(np.minimum(losses + log_s2[1:], 1.0)) * (1.0 - r) + extra + above
            candidates = np.nonzero((losses >= 0.0) & (deltas <= delta))[0]
            return int(candidates[0]) if candidates.size else None
        block_s1, block_w = self._block_tail_sums
        ends = np.minimum(_BLOCK * np.arange(1, block_s1.size), self.size) - 1
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            log_s2 = np.log(block_w[1:]) - (self.shift + self.offset * self.h)
            deltas = (block_s1[1:] * (1.0 + r) - np.exp(np.minimum(losses[ends] + log_s2, 1.0)) * (1.0 - r) + extra
                      + self._noise_above(self.size - 1 - ends))
        crossed = np.nonzero((losses[ends] >= 0.0) & (deltas <= delta))[0]
        if crossed.size == 0:
            return None
        b = int(crossed[0])
        lo = max(int(np.searchsorted(losses, 0.0, side="left")), int(ends[b - 1]) + 1 if b > 0 else 0)
        hi = int(ends[b])
        s1, log_s2 = self._tail_sums_between(lo + 1, hi + 1)
        with np.errstate(over="ignore", invalid="ignore"):
            deltas = (s1 * (1.0 + r) - np.exp(np.minimum(losses[lo: hi + 1] + log_s2, 1.0)) * (1.0 - r) + extra
                      + self._noise_above(self.size - 1 - np.arange(lo, hi + 1)))
        fine = np.nonzero(deltas <= delta)[0]
        return lo + int(fine[0]) if fine.size else hi

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
        values = np.maximum(values, 0.0) + self.infinity_mass + self._noise_above(self.size - first)
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
        # (1e-60: the linear tail sums' subnormal allowance, see _tail_sums and _block_tail_sums.)
        extra = self.infinity_mass + 1e-60 if self.pessimistic else self.infinity_mass - self.deficit - 1e-60
        if extra >= delta:
            return math.inf
        losses = self.losses
        r = self._tail_roundoff if self.pessimistic else -self._tail_roundoff
        first_positive = int(np.searchsorted(losses, 0.0, side="right"))
        s1_zero, log_s2_zero = self._tail_sums_between(first_positive, first_positive)
        with np.errstate(over="ignore", invalid="ignore"):
            delta_at_zero = (float(s1_zero[0]) - math.exp(min(float(log_s2_zero[0]), 1.0)) + extra
                             + self._noise_above(self.size - first_positive))
        if delta_at_zero <= delta:
            return 0.0
        # δ = A − e^ε B cancels: its round-off is relative to A, not to δ. A pessimistic pmf
        # solves with A and B moved apart by that round-off (δ over-estimated), an optimistic one
        # with them moved together; the loss error then moves the crossing by at most e.
        j = self._crossing(delta, extra, r)
        if j is None:  # the top grid point has δ = extra < delta unless round-off says otherwise
            return math.inf if self.pessimistic else float(losses[-1])
        # On [max(0, l_{j-1}), l_j], δ(ε) = A − e^ε B with the sums above index j − 1.
        s1_j, log_s2_j = self._tail_sums_between(j, j)
        a_sum = float(s1_j[0]) * (1.0 + r) + extra + self._noise_above(self.size - j)
        log_b = float(log_s2_j[0]) + math.log1p(-r)
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
    pmf = pmf.settled()
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
