"""The fast paths of the PLD grid code: :meth:`LossPmf.epsilon` reads blocked tail sums
(``_block_tail_sums``, ``_tail_sums_between``, ``_crossing``) and must stay on the safe side of the exact
crossing of its grid pmf, computed here with mpmath; ``_phi`` on a sorted grid (slices) must equal
its element-wise path (gathers) bit for bit."""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest

from dpkit.accounting.pld import mechanisms
from dpkit.accounting.pld.pmf import _BLOCK, LossPmf


def exact_delta(pmf: LossPmf, epsilon: float) -> mpmath.mpf:
    """δ(ε) = Σ_{l_k > ε} p_k (1 − e^{ε − l_k}) + p_∞ of the pmf, grid losses shift + k h taken exactly."""
    eps = mpmath.mpf(epsilon)
    total = mpmath.mpf(pmf.infinity_mass)
    for k, p in enumerate(pmf.probs):
        loss = mpmath.mpf(pmf.shift) + (pmf.offset + k) * mpmath.mpf(pmf.h)
        if p > 0 and loss > eps:
            total += mpmath.mpf(float(p)) * (1 - mpmath.exp(eps - loss))
    return total


def random_pmf(size: int, h: float, offset: int, seed: int, pessimistic: bool) -> LossPmf:
    rng = np.random.default_rng(seed)
    probs = rng.random(size) ** 6
    probs[rng.random(size) < 0.2] = 0.0  # empty points and whole empty stretches
    probs /= probs.sum() * (1.0 + 1e-3)
    return LossPmf(h, offset, probs, 1e-9, pessimistic, shift=0.37 * h)


# sizes below, at and above one block and not a multiple of it; offsets putting the zero loss in the first
# block, inside a later one, or below the grid; h such that the grid spans less than 600 (blocked sums) or more
@pytest.mark.parametrize("size,h,offset", [
    (700, 0.01, -100), (_BLOCK, 0.004, -_BLOCK // 2), (3 * _BLOCK + 17, 0.002, -1500), (2 * _BLOCK + 5, 0.003, 40),
    (1500, 0.5, -200),
])
@pytest.mark.parametrize("pessimistic", [True, False])
def test_epsilon_brackets_the_exact_crossing_of_its_pmf(size, h, offset, pessimistic):
    pmf = random_pmf(size, h, offset, seed=size + offset, pessimistic=pessimistic)
    assert (pmf._block_tail_sums is None) == (pmf.losses[-1] - pmf.losses[0] > 600.0)
    with mpmath.workdps(40):
        for delta in (0.3, 1e-2, 1e-3, 1e-5):
            eps = pmf.epsilon(delta)
            assert math.isfinite(eps) and eps >= 0.0
            if eps == 0.0:
                assert exact_delta(pmf, 0.0) <= delta or not pessimistic
                continue
            if pessimistic:  # δ(ε) ≤ δ at the answer, and the answer is tight to far below the grid spacing
                assert exact_delta(pmf, eps) <= delta
                assert exact_delta(pmf, eps - 1e-9) > delta
            else:  # the optimistic answer is at or below the crossing, and tight
                assert exact_delta(pmf, eps) >= delta
                assert exact_delta(pmf, eps + 1e-9) < delta


def test_blocked_tail_sums_agree_with_the_per_point_sums():
    pmf = random_pmf(5 * _BLOCK + 333, 0.001, -2000, seed=7, pessimistic=True)
    s1, log_s2 = pmf._tail_sums()
    for lo, hi in ((0, 0), (5, 900), (_BLOCK - 1, 2 * _BLOCK - 1), (pmf.size - 10, pmf.size)):
        b1, b2 = pmf._tail_sums_between(lo, hi)
        np.testing.assert_allclose(b1, s1[lo: hi + 1], rtol=pmf._tail_roundoff, atol=0.0)
        np.testing.assert_allclose(np.exp(b2), np.exp(log_s2[lo: hi + 1]), rtol=pmf._tail_roundoff + 1e-13, atol=0.0)


@pytest.mark.parametrize("q", [1e-9, 0.01, 0.5, 1.0])
def test_phi_on_a_sorted_grid_equals_its_elementwise_path(q):
    grid = np.concatenate(([-np.inf, -5.0], np.linspace(math.log1p(-min(q, 0.5)) - 0.1, 40.0, 20001), [800.0, np.inf]))
    order = np.random.default_rng(3).permutation(grid.size)
    elementwise = np.empty_like(grid)
    elementwise[order] = mechanisms._phi(grid[order], q)  # shuffled: the gather path
    np.testing.assert_array_equal(mechanisms._phi(grid, q), elementwise)
    np.testing.assert_array_equal(mechanisms._phi(-grid[::-1], q)[::-1], mechanisms._phi(-grid[order], q)[np.argsort(order)])
