"""Rényi DP of amplification by shuffling, from the Feldman, McMillan & Talwar (2021, Thm 3.2)
dominating pair (:mod:`dpkit.accounting.shuffling`): C ~ Bin(n − 1, e^{−ε₀}) clones, then the
pair (P_c, Q_c) of A + Δ and A + 1 − Δ with A ~ Bin(c, 1/2).

D_α(P‖Q) = (1/(α−1)) log Σ_c P(C = c) Σ_a P_c(a)^α Q_c(a)^{1−α} (the pair is symmetric, so this is
both directions). Every term is kept — no tail is charged at the largest loss ε₀, which would
dominate at the high orders where shuffling's RDP optimum sits — by two facts:

* (P_{c+1}, Q_{c+1}) is a post-processing of (P_c, Q_c) (add an independent fair coin to A), so
  Σ_a P_c^α Q_c^{1−α} does not increase with c (data processing): the mass of a block of values
  of C may be put on its smallest value (pessimistic);
* given an anchor c, every a ∈ [0, c + 1] is summed, in log space.

Blocks: width max(1, ⌈c/1000⌉) over the central range of C (so the bound is within ~0.05 % of
the exact sum there), geometric (ratio 0.9) below it with the mass P(C < end) of everything
below each block's end, and one block for everything above. Blocks whose mass underflows
(< 2.3e-308) are charged at the largest loss ε₀. The
result is also capped by the pure ε₀-DP curve (shuffling post-processes ε₀-DP reports).
"""

from __future__ import annotations

import functools
import math

import numpy as np
from scipy import special

from dpkit._validation import check_integer, check_positive
from dpkit.accounting.rdp_mechanisms import check_order, rdp_pure_dp

__all__ = ["rdp_shuffled", "shuffled_rdp_atoms"]


def _blocks(epsilon0: float, n_users: int) -> tuple[np.ndarray, np.ndarray]:
    """Anchors (block starts) and an upper bound on the log-probability of each block of C.

    Central blocks: the exact pmf sum. Blocks below: log P(C < end), at least the block's mass
    (the lower tail is accurate through ``logcdf``). The last block runs to n − 1: log P(C ≥ start).
    """
    from scipy import stats  # lazily: scipy.stats costs start-up time to every RDP query

    from dpkit.accounting.shuffling import clone_range

    dist = stats.binom(n_users - 1, math.exp(-epsilon0))
    central = clone_range(epsilon0, n_users)[0]
    low, high = int(central[0]), int(central[-1])
    width = max(1, math.ceil(low / 1000))
    starts = list(range(low, high + 1, width))
    below = []
    c = low
    while c > 0:
        c = int(c * 0.9) if c > 10 else c - 1
        below.append(c)
    anchors = np.array(sorted(below) + starts)
    ends = np.append(anchors[1:], n_users)  # block k is [anchors[k], ends[k])
    log_mass = np.empty(len(anchors))
    for k, (a, b) in enumerate(zip(anchors, ends)):
        if a < low:
            log_mass[k] = float(dist.logcdf(b - 1))
        elif k == len(anchors) - 1:
            log_mass[k] = float(dist.logsf(a - 1))
        else:
            log_mass[k] = float(special.logsumexp(dist.logpmf(np.arange(a, b))))
    return anchors, log_mass


@functools.lru_cache(maxsize=8)
def shuffled_rdp_atoms(epsilon0: float, n_users: int) -> tuple[np.ndarray, np.ndarray]:
    """``(losses, log P-mass)`` of the anchored pair (module docstring), which dominates the shuffled pair.

    Raises ``ValueError`` above :data:`~dpkit.accounting.shuffling.MAX_ATOMS` atoms.
    """
    from scipy import stats

    from dpkit.accounting.shuffling import MAX_ATOMS

    epsilon0 = check_positive("epsilon0", epsilon0)
    n_users = check_integer("n_users", n_users, minimum=2)
    anchors, log_mass = _blocks(epsilon0, n_users)
    keep = np.isfinite(log_mass)
    underflowed = int(np.sum(~keep))  # blocks of mass below the smallest double, ≤ 2.3e-308 each
    anchors, log_mass = anchors[keep], log_mass[keep]
    log_mass = log_mass + max(0.0, -float(special.logsumexp(log_mass)))  # rounding: total mass ≥ 1
    total = int(np.sum(anchors + 2))
    if total > MAX_ATOMS:
        raise ValueError(
            f"the shuffled pair of n_users={n_users}, epsilon0={epsilon0} needs {total} atoms for RDP "
            f"(more than {MAX_ATOMS}); use the PLD accountant or shuffle_epsilon"
        )
    # log(1/(1 + e^{−ε₀})) and log(1/(1 + e^{ε₀})) without overflow beyond ε₀ = 709
    log_alpha, log_one_minus = -float(np.logaddexp(0.0, -epsilon0)), -float(np.logaddexp(0.0, epsilon0))
    losses, log_p_parts = [], []
    for c, lw in zip(anchors, log_mass):
        a = np.arange(0, int(c) + 2)
        log_b = stats.binom.logpmf(a, c, 0.5)
        log_b1 = stats.binom.logpmf(a - 1, c, 0.5)
        log_p = np.logaddexp(log_alpha + log_b, log_one_minus + log_b1)
        log_q = np.logaddexp(log_alpha + log_b1, log_one_minus + log_b)
        losses.append(log_p - log_q)
        log_p_parts.append(lw + log_p)
    if underflowed:  # charged at the largest loss ε₀
        losses.append(np.array([epsilon0]))
        log_p_parts.append(np.array([math.log(underflowed * 2.3e-308)]))
    return np.concatenate(losses), np.concatenate(log_p_parts)


def rdp_shuffled(alpha: float, epsilon0: float, n_users: int) -> float:
    """RDP of order ``alpha`` of ``n_users`` shuffled ``epsilon0``-LDP reports (an upper bound).

    Raises ``ValueError`` if the anchored pair needs more than
    :data:`~dpkit.accounting.shuffling.MAX_ATOMS` atoms.

    >>> rdp_shuffled(2.0, 1.0, 1000) < rdp_pure_dp(2.0, 1.0)
    True
    """
    alpha = check_order(alpha)
    losses, log_p = shuffled_rdp_atoms(float(epsilon0), int(n_users))
    # allowance inside the logarithm for the rounding of the log-pmfs (~1e-13 each), which the
    # order α multiplies, and of the block masses (normalised to sum ≥ 1 in shuffled_rdp_atoms)
    log_sum = float(special.logsumexp(log_p + (alpha - 1.0) * losses)) + 1e-10 + alpha * 1e-12
    value = math.nextafter(max(log_sum, 0.0) / (alpha - 1.0), math.inf)
    return min(value, rdp_pure_dp(alpha, epsilon0))
