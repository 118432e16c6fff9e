"""Privacy loss of random allocation, by composition on a geometric grid.

Random allocation (one epoch): a mechanism runs ``t`` times and a record takes part in one uniformly
random run. For a Gaussian with μ = Δ/σ, under add/remove neighbours, the dominating pairs are
(Feldman & Shenfeld 2025, "Privacy amplification by random allocation", arXiv 2502.08202, §3; the
same pairs as their 2026 PLD paper, "Efficient privacy loss accounting for subsampling and random
allocation", arXiv 2602.17284, Alg. 1 and 2):

* **remove**: P = (1/t) Σ_i N(μ e_i, I), Q = N(0, I) on ℝ^t. The loss is L = log((1/t) Σ_i e^{ℓ_i})
  with ℓ_i = μ y_i − μ²/2 the loss of one Gaussian step. Under P (the record in step 1, by
  symmetry) ℓ_1 ~ N(μ²/2, μ²) and ℓ_2, …, ℓ_t ~ N(−μ²/2, μ²), all independent.
* **add**: the reverse pair; L = −log((1/t) Σ_i e^{ℓ_i}) under Q, with ℓ_1, …, ℓ_t ~ N(−μ²/2, μ²).

The same holds for any mechanism whose single-step pair is symmetric (Laplace: ℓ_i is the Laplace
loss), which is what :class:`RandomAllocationLoss` takes.

So each direction is the law of the logarithm of a sum of independent log-normal variables. This
module bounds that law from both sides on the geometric grid {e^{kh}} (k ∈ ℤ, spacing h in the
loss), plus atoms at 0 and +∞:

* the single Gaussian step is replaced by its dominating (dominated) discrete pair on the lattice hℤ,
  the connect-the-dots (tangent) construction of Doroshenko et al. 2022 that dpkit uses for every
  Gaussian. A channel maps the dominating pair to the true one; applied to every step it maps the
  allocation of the one to the allocation of the other, so the allocation of a dominating
  (dominated) pair dominates (is dominated by) the true allocation. Its summands e^ℓ sit exactly on
  the grid: this step costs no first-order error;
* sums are formed pairwise in a balanced tree of depth ⌈log₂ t⌉. The sum of the grid values e^{ih}
  and e^{jh} (i ≤ j) is exactly e^{(j + g(j−i))h} with g(d) = log1p(e^{−dh})/h, so it is rounded to
  index j + ⌈g⌉ (up) or j + ⌊g⌋ (down). Pairs with the same rounded offset form a group, and the
  mass of a group for every j is a window sum of the other operand: one pass costs
  O(n · log 2 / h) instead of O(n²) (dp_accounting's geometric convolution maps the same pairs one
  offset at a time);
* the rounding is monotone, so the sum computed with every value rounded up (down) stochastically
  dominates (is dominated by) the sum it replaces: the loss of the remove direction, log(S/t), is
  then larger (smaller), and δ(ε) = E_P[(1 − e^{ε − L})_+] of the resulting pmf is an upper (lower)
  bound at every ε; the add direction rounds S the other way. Both are composed over epochs like
  any other pmf. Each level moves the loss by less than h, so the construction is first order in h
  (``order=1``): the interval is about ⌈log₂ t⌉·h wide.

Float round-off is bounded, not estimated: every mass is a sum of non-negative products (window
sums come from a table of power-of-two block sums, never from differences of prefix sums), so each
computed mass is within a relative (m + 2)·u of the exact one for m accumulated terms; the
pessimistic pmf scales every mass up by that bound, the optimistic one down (every δ here grows with
every mass).
"""

from __future__ import annotations

import dataclasses
import functools
import math

import numpy as np
from scipy import special

from dpkit.accounting.pld.mechanisms import GridTooLargeError, PrivacyLoss, discretise
from dpkit.accounting.pld.pmf import LossPmf, tail_cut

_U = 2.0**-53
#: Largest number of window-sum operations (grid points × rounding groups) one sum may cost when the
#: accountant chooses the grid (a few seconds per epoch of 100 steps), and when the user fixes it (minutes).
MAX_WORK = 3 * 10**7
MAX_WORK_FIXED = 3 * 10**9


@dataclasses.dataclass(frozen=True)
class SumPmf:
    """A non-negative random variable on the grid {e^{(offset + i) h}} plus atoms at 0 and +∞."""

    offset: int
    probs: np.ndarray
    zero: float
    infinity: float

    @property
    def size(self) -> int:
        return int(self.probs.size)


def _ceil_floor(x: np.ndarray, up: bool) -> np.ndarray:
    """⌈x⌉ (``up``) or ⌊x⌋ with a margin of 1e-9 (x carries ~1e-15 relative round-off) on the safe side."""
    margin = 1e-9 * np.maximum(1.0, np.abs(x))
    return (np.ceil(x + margin) if up else np.floor(x - margin)).astype(np.int64)


@functools.lru_cache(maxsize=64)
def _groups(h: float, n: int, up: bool, first_d: int) -> tuple[tuple[int, int, int], ...]:
    """Runs (c, d_lo, d_hi) of equal rounded offset c(d) = ⌈g(d)⌉ (⌊·⌋ if not ``up``) for
    d = first_d … n−1, with g(d) = log1p(e^{−dh})/h: e^{jh} + e^{(j − d)h} = e^{(j + g(d))h}."""
    if n <= first_d:
        return ()
    d = np.arange(first_d, n, dtype=float)
    c = _ceil_floor(np.log1p(np.exp(-d * h)) / h, up)
    starts = np.concatenate(([0], np.nonzero(np.diff(c))[0] + 1))
    ends = np.concatenate((starts[1:], [c.size]))
    return tuple((int(c[s]), int(s) + first_d, int(e) + first_d) for s, e in zip(starts, ends))


class _BlockSums:
    """Power-of-two block sums B_k[i] = Σ_{s < 2^k} p[i + s] of a zero-padded array, for window sums
    made of non-negative terms only (relative error ≤ (k + popcount)·u)."""

    def __init__(self, probs: np.ndarray, pad: int):
        self.pad = pad
        base = np.zeros(probs.size + 2 * pad)
        base[pad:pad + probs.size] = probs
        self.levels = [base]
        width = 1
        while 2 * width <= pad:
            prev = self.levels[-1]
            nxt = prev.copy()
            nxt[:-width] += prev[width:]
            self.levels.append(nxt)
            width *= 2

    def window(self, start: int, length: int, width: int) -> tuple[np.ndarray, bool]:
        """For j = 0 … length−1: Σ p[start + j + s], s = 0 … width−1 (indices of the unpadded array), and
        whether the array is a fresh one (else a read-only view of the table)."""
        pos = start + self.pad
        segments = []
        for k in range(width.bit_length() - 1, -1, -1):
            if width >> k & 1:
                segments.append(self.levels[k][pos:pos + length])
                pos += 1 << k
        if len(segments) == 1:
            return segments[0], False
        out = np.add(segments[0], segments[1])
        for seg in segments[2:]:
            out += seg
        return out, True


def _pairs_pass(low: np.ndarray, high: np.ndarray, h: float, up: bool, first_d: int, out: np.ndarray) -> int:
    """Add Σ over pairs (i, j), j − i = d ≥ first_d, of low[i]·high[j] at out[j + c(d)].

    Both arrays share one grid offset and have the same length n; returns the largest number of
    products summed into one entry (for the round-off bound)."""
    n = low.size
    groups = _groups(h, n, up, first_d)
    if not groups:
        return 0
    widest = max(hi - lo for _, lo, hi in groups)
    blocks = _BlockSums(low, pad=1 << max(1, (max(widest, n)).bit_length()))
    for c, d_lo, d_hi in groups:
        j0 = d_lo  # j < d_lo only pairs with i < 0
        if j0 >= n:
            continue
        window, fresh = blocks.window(j0 - d_hi + 1, n - j0, d_hi - d_lo)  # i ∈ [j − d_hi + 1, j − d_lo]
        out[j0 + c:n + c] += np.multiply(high[j0:], window, out=window if fresh else None)
    return len(groups) + len(blocks.levels) + 1


def _align(a: SumPmf, b: SumPmf) -> tuple[int, np.ndarray, np.ndarray]:
    offset = min(a.offset, b.offset)
    n = max(a.offset + a.size, b.offset + b.size) - offset
    pa, pb = np.zeros(n), np.zeros(n)
    pa[a.offset - offset:a.offset - offset + a.size] = a.probs
    pb[b.offset - offset:b.offset - offset + b.size] = b.probs
    return offset, pa, pb


def add(a: SumPmf, b: SumPmf, h: float, up: bool, pessimistic: bool, tail: float) -> SumPmf:
    """The law of X + Y for independent X ~ a, Y ~ b, every grid sum rounded up (``up``) or down,
    masses scaled to the safe side of their round-off (up if ``pessimistic``), tails of at most
    ``tail`` moved to the safe side (:func:`trim`)."""
    offset, pa, pb = _align(a, b)
    n = pa.size
    out = np.zeros(n + math.ceil(math.log(2.0) / h) + 2)  # the largest offset is c(0) = ⌈log 2 / h⌉
    # pass 1: b at the higher index j, a at i = j − d (d ≥ 0); pass 2: a higher (d ≥ 1). For a self-sum,
    # the pairs d ≥ 1 of one pass are doubled and the diagonal d = 0 is added once.
    if a is b:
        terms = _pairs_pass(pa, pa, h, up, 1, out)
        out *= 2.0
        c0 = int(_ceil_floor(np.array([math.log(2.0) / h]), up)[0])
        out[c0:c0 + n] += pa * pa
        terms += 2
    else:
        terms = _pairs_pass(pa, pb, h, up, 0, out) + _pairs_pass(pb, pa, h, up, 1, out)
    out[:n] += a.zero * pb + b.zero * pa
    terms += 2
    rho = (terms + 4) * _U
    out *= (1.0 + rho) if pessimistic else (1.0 - rho)
    zero = a.zero * b.zero * ((1.0 + 2 * _U) if pessimistic else (1.0 - 2 * _U))
    infinity = a.infinity + b.infinity if pessimistic else max(0.0, a.infinity + b.infinity - a.infinity * b.infinity)
    return trim(SumPmf(offset, out, zero, infinity), up, tail)


def trim(pmf: SumPmf, up: bool, tail: float) -> SumPmf:
    """Drop grid entries with at most ``tail`` mass at each end: rounding up, the low end joins the
    lowest kept point and the high end the +∞ atom; rounding down, the low end joins the atom at 0
    and the high end the highest kept point (both only move values in the rounding direction)."""
    probs = pmf.probs
    nonzero = np.nonzero(probs)[0]
    if nonzero.size == 0:
        return SumPmf(0, np.zeros(1), pmf.zero, pmf.infinity)
    probs = probs[nonzero[0]:nonzero[-1] + 1]
    offset = pmf.offset + int(nonzero[0])
    cut = tail_cut(probs, tail)
    if cut is None:
        return SumPmf(offset, probs, pmf.zero, pmf.infinity)
    lo, hi, low_mass, high_mass = cut
    kept = probs[lo:hi].copy()
    zero, infinity = pmf.zero, pmf.infinity
    if up:
        kept[0] += low_mass
        infinity += high_mass
    else:
        zero += low_mass
        kept[-1] += high_mass
    return SumPmf(offset + lo, kept, zero, infinity)


def iid_sum(single: SumPmf, count: int, h: float, up: bool, pessimistic: bool, tail: float,
            special_first: SumPmf | None = None) -> SumPmf:
    """The law of ``count`` summands, all ~ ``single`` except the first ~ ``special_first`` if
    given, summed in a balanced tree (depth ⌈log₂ count⌉), each partial sum computed once."""
    memo: dict[tuple[int, bool], SumPmf] = {}

    def build(m: int, with_special: bool) -> SumPmf:
        key = (m, with_special)
        if key not in memo:
            if m == 1:
                memo[key] = special_first if with_special else single
            else:
                left = build((m + 1) // 2, with_special)
                right = build(m // 2, False)
                memo[key] = add(left, right, h, up, pessimistic, tail)
        return memo[key]

    return build(count, special_first is not None)


def allocation_parts(steps: int, selected: int) -> list[tuple[int, int]]:
    """Random allocation of ``selected`` = k of ``steps`` = t as compositions of 1-of-t′ allocations:
    [(⌊t/k⌋, k − r), (⌊t/k⌋ + 1, r)] with r = t mod k (parts with a zero count left out).

    Each record's k steps are a uniformly random k-subset; splitting the t steps into k consecutive
    blocks of sizes ⌊t/k⌋ or ⌊t/k⌋ + 1 and putting one of the record's uses in a random step of each
    block is the k-fold composition of 1-of-block allocations, which dominates k-of-t random
    allocation (Feldman & Shenfeld 2025, arXiv 2502.08202, the reduction of k-out-of-t to
    1-out-of-⌊t/k⌋ allocation; dp_accounting's random-allocation PLD uses the same split).

    >>> allocation_parts(10, 3)
    [(3, 2), (4, 1)]
    """
    block, extra = divmod(steps, selected)
    return [(size, count) for size, count in ((block, selected - extra), (block + 1, extra)) if count > 0]


def depth(steps: int) -> int:
    """Rounding levels of :func:`iid_sum` over ``steps`` summands plus the summands' own rounding."""
    return max(0, (steps - 1).bit_length()) + 1


class RandomAllocationLoss(PrivacyLoss):
    """One direction of one epoch of random allocation (1 of ``steps``) of a mechanism whose single-step
    pair (P, Q) is symmetric (the loss of Q against P has the law of the loss of P against Q: Gaussian,
    Laplace) and given by ``base``.

    Discretised by :meth:`direct_pmfs` (its law has no closed-form distribution function);
    see the module notes for the construction and its certificate.
    """

    def __init__(self, base: PrivacyLoss, steps: int, direction: str, max_work: int = MAX_WORK):
        if direction not in ("remove", "add"):
            raise ValueError(f"direction must be 'remove' or 'add', got direction={direction!r}")
        self.max_work = max_work
        self.base = base
        self.steps = int(steps)
        self.direction = direction
        self._cache: dict[tuple[float, float, int], tuple[LossPmf, LossPmf]] = {}

    def cdf_sf(self, t, *, strict=False):
        raise NotImplementedError("random allocation is discretised directly (RandomAllocationLoss.direct_pmfs)")

    def bounds(self, tail: float) -> tuple[float, float]:
        """A range of the loss holding all but about ``tail`` of its mass on each side (for grid sizing):
        the remove loss lies between max_i ℓ_i − log t and max_i ℓ_i, the add loss between −max_i ℓ_i and
        −min_i ℓ_i (the largest of t losses exceeds the single-step bound at tail/t at most that often)."""
        t = self.steps
        lo, _ = self.base.bounds(min(0.5, tail))
        _, hi_t = self.base.bounds(min(0.5, tail / t))
        if self.direction == "remove":
            return lo - math.log(t), hi_t
        return -hi_t, -lo

    def direct_pmfs(self, h: float, tail: float, max_points: int) -> tuple[LossPmf, LossPmf]:
        """(pessimistic, optimistic) pmfs on spacing ``h``: the loss grid is the geometric grid of
        the sum (index k ↔ loss ±(kh − log t)), so no further rounding is needed."""
        key = (h, tail, max_points)
        if key not in self._cache:
            self._cache[key] = (self._pmf(h, tail, max_points, True), self._pmf(h, tail, max_points, False))
        return self._cache[key]

    def _leaves(self, h: float, tail: float, max_points: int,
                pessimistic: bool) -> tuple[SumPmf, SumPmf, float, float]:
        """(base, dual, deficit, shift): the likelihood ratio e^ℓ of one step under P and under Q, from the
        dominating (``pessimistic``) or dominated two-sided discretisation of the step's loss on the lattice
        s + hℤ (:func:`~dpkit.accounting.pld.mechanisms.discretise`; Doroshenko et al. 2022); the sums are
        kept in units of e^s (S = e^s Σ e^{kᵢh}), so s only shifts the final loss. A dominating
        (dominated) single-step pair gives a dominating (dominated) allocation: a channel that maps one pair to
        the other, applied to every step, maps one allocation to the other. P-masses p_k sit at loss s + kh,
        the Q-masses are p_k e^{−(s + kh)}; P-mass at +∞ is the pair's P-only atom, the Q-mass the grid lacks its Q-only
        atom (e^ℓ = 0). The round-off of the Q-masses is taken on the side that raises δ (pessimistic) or lowers
        it (optimistic); ``deficit`` is the dominated pair's over-count allowance."""
        pes, opt = discretise(self.base, h, tail, max_points)
        leaf = pes if pessimistic else opt
        # q_k = p_k e^{−kh}: exp and the computed loss kh carry a few ulps of |kh|
        q_error = (8.0 + 8.0 * np.abs(leaf.losses)) * _U
        q = leaf.probs * np.exp(-leaf.losses)
        if not pessimistic:  # masses only lower: every δ below grows with every mass
            dual = SumPmf(leaf.offset, q * (1.0 - q_error), zero=0.0, infinity=0.0)
        elif self.direction == "remove":
            # masses raised and the Q-only atom lowered to match: mass moves up from e^ℓ = 0, which raises the sum
            q_up = q * (1.0 + q_error)
            zero = math.nextafter(max(0.0, 1.0 - math.fsum(q_up)), 0.0)
            dual = SumPmf(leaf.offset, q_up, zero=zero, infinity=0.0)
        else:  # add: a smaller sum raises the loss; the Q-only atom is taken at least as large as it is
            zero = math.nextafter(max(0.0, 1.0 - math.fsum(q * (1.0 - q_error))), 1.0)
            dual = SumPmf(leaf.offset, q * (1.0 + q_error), zero=zero, infinity=0.0)
        p = leaf.probs if pessimistic else leaf.probs * (1.0 - 2 * _U)
        base = SumPmf(leaf.offset, p, zero=0.0, infinity=leaf.infinity_mass if pessimistic else 0.0)
        return base, dual, leaf.deficit, leaf.shift

    def _pmf(self, h: float, tail: float, max_points: int, pessimistic: bool) -> LossPmf:
        t = self.steps
        remove = self.direction == "remove"
        # remove: L = log S − log t grows with S, so the pessimistic pmf rounds S up; add: L = log t − log S.
        up = pessimistic == remove
        levels = depth(t)
        leaf_tail = tail / (4.0 * t)
        level_tail = tail / (4.0 * levels)
        lo, hi = self.base.bounds(leaf_tail)
        spread = hi - lo  # the leaves' loss range
        n_estimate = spread / h
        work = self.max_work
        if n_estimate * (math.log(2.0) / h + 20.0) > work or n_estimate > max_points:
            # the smallest h with (spread / h)(log 2 / h + 20) ≤ work, and within max_points
            affordable = (20.0 * spread + math.sqrt(400.0 * spread**2 + 4.0 * work * spread * math.log(2.0))) \
                / (2.0 * work)
            finest = 1.01 * max(affordable, spread / max_points)
            raise GridTooLargeError(
                f"random allocation over {t} steps at loss spacing h={h:.3g} would need about "
                f"{n_estimate:.3g} grid points and {n_estimate * math.log(2.0) / h:.3g} operations per sum "
                f"(at most {work:.3g}; h={finest:.3g} fits)",
                needed=int(min(n_estimate, 2**62)), finest=finest)
        base, dual, leaf_deficit, leaf_shift = self._leaves(h, leaf_tail, max_points, pessimistic)
        if remove:  # under P the record is in one step (by symmetry the first): one base summand, t − 1 duals
            total = iid_sum(dual, t, h, up, pessimistic, level_tail, special_first=base)
        else:
            total = iid_sum(dual, t, h, up, pessimistic, level_tail)
        # each of the t summands may over-count its mass by the leaf's deficit; δ is multilinear in the
        # summands' masses with weights in [0, 1], so δ moves by at most t times that.
        deficit = 0.0 if pessimistic else t * leaf_deficit
        log_t = math.log(t) - leaf_shift
        if remove:
            # S = ∞ is loss +∞; S = 0 is loss −∞ (no δ).
            infinity = total.infinity if pessimistic else 0.0
            return LossPmf(h=h, offset=total.offset, probs=total.probs, infinity_mass=min(1.0, infinity),
                           pessimistic=pessimistic, deficit=deficit, shift=-log_t, order=1)
        # add: S = 0 is loss +∞, S = ∞ is loss −∞ (no δ).
        infinity = total.zero if pessimistic else 0.0
        return LossPmf(h=h, offset=-(total.offset + total.size - 1), probs=total.probs[::-1].copy(),
                       infinity_mass=min(1.0, infinity), pessimistic=pessimistic, deficit=deficit, shift=log_t,
                       order=1)
