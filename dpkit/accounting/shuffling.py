"""Amplification by shuffling: the numerical bound of Feldman, McMillan & Talwar (2021).

n users each apply an ε₀-LDP randomizer to their record and the reports are shuffled. Feldman,
McMillan & Talwar (2021, "Hiding among the clones", FOCS, Thm 3.2 and §4.3) show that, under
replace-one neighbours, the shuffled output is a post-processing of the pair

    P = (C, A + Δ),  Q = (C, A + 1 − Δ),   C ~ Bin(n − 1, e^{−ε₀}),  A | C ~ Bin(C, 1/2),
    Δ ~ Bernoulli(α),  α = e^{ε₀}/(e^{ε₀} + 1)

(C is the number of other users whose report is a "clone" of the changed user's). Here the
hockey-stick divergence of that pair is computed exactly: C is observed, so
δ(ε) = Σ_c P(C = c) δ_c(ε); given c the likelihood ratio P_c(a)/Q_c(a) decreases in a, so δ_c is
a combination of two binomial distribution functions at the cut-off a* = ⌊β(c + 1)⌋,
β = R/(1 + R), R = (e^{ε₀} − e^ε)/(e^{ε+ε₀} − 1). The pair is symmetric (a ↦ c + 1 − a swaps
P and Q), so one direction suffices. The values of C below 10⁻³⁰ of tail mass are bounded by
δ_0 ≥ δ_c (pessimistic). ε(δ) is found by bisection and rounded up.

:func:`shuffled_atoms` lists the atoms of the pair (for the PLD and RDP accountants), with the
mass of the binomial tails it leaves out, which those accountants treat pessimistically.
"""

from __future__ import annotations

import functools
import math

import numpy as np
from scipy import stats

from dpkit._validation import check_integer, check_open_unit, check_positive
from dpkit.accounting.certify import certified

__all__ = ["MAX_ATOMS", "clone_range", "shuffle_delta", "shuffle_epsilon", "shuffled_atoms"]

#: Largest number of atoms :func:`shuffled_atoms` builds (about 100 MB of arrays).
MAX_ATOMS = 2**22

#: Mass of the clone count C left out on each side.
_TAIL = 1e-30

#: Relative allowance for the float error of the binomial distribution functions.
_ROUNDING = 1e-12


def clone_range(epsilon0: float, n_users: int) -> tuple[np.ndarray, np.ndarray, float]:
    """Values c of C kept, their probabilities, and the probability of the values left out."""
    p = math.exp(-epsilon0)
    dist = stats.binom(n_users - 1, p)
    low = max(int(dist.ppf(_TAIL)) - 1, 0)
    # the upper end through n − 1 − C ~ Bin(n − 1, 1 − p) (isf loses the far tail in float)
    high = min(n_users - 1 - int(stats.binom(n_users - 1, -math.expm1(-epsilon0)).ppf(_TAIL)) + 1, n_users - 1)
    c = np.arange(low, high + 1)
    left_out = (float(dist.cdf(low - 1)) if low > 0 else 0.0) + float(dist.sf(high))
    return c, dist.pmf(c), left_out


#: Most values of C that :func:`shuffle_delta` evaluates one by one; beyond it they are merged into
#: :data:`_BLOCKS` blocks (a binomial distribution function at c ≈ 10¹¹ costs about 0.3 ms).
_MAX_CELLS = 2**16
_BLOCKS = 128


@functools.lru_cache(maxsize=8)
def _clone_blocks(epsilon0: float, n_users: int) -> tuple[np.ndarray, np.ndarray, float]:
    """:func:`clone_range`, with more than :data:`_MAX_CELLS` kept values merged into :data:`_BLOCKS` blocks of
    consecutive c:
    each block's smallest c and its probability (rounded up for the float sum). δ_c decreases in c (module
    docstring), so Σ_blocks P(block) δ_{min c} bounds Σ_c P(C = c) δ_c from above; very many users
    (n = 10¹² keeps about 10⁷ values) then cost as little as 10⁵ do."""
    c, weights, left_out = clone_range(epsilon0, n_users)
    if c.size <= _MAX_CELLS:
        return c, weights, left_out
    size = -(-c.size // _BLOCKS)
    starts = np.arange(0, c.size, size)
    return c[starts], np.add.reduceat(weights, starts) * (1.0 + 2.0 * size * 2.0**-53), left_out


def _cell_delta(c: np.ndarray, epsilon: float, epsilon0: float) -> np.ndarray:
    """δ_c(ε) of the pair given C = c (exact up to the binomial functions' rounding), vectorised."""
    alpha = 1.0 / (1.0 + math.exp(-epsilon0))
    if epsilon + epsilon0 <= 700.0:
        ratio = (math.exp(epsilon0) - math.exp(epsilon)) / math.expm1(epsilon + epsilon0)
        first = alpha - math.exp(epsilon) * (1.0 - alpha)
        second = (1.0 - alpha) - math.exp(epsilon) * alpha
    else:  # e^{ε + ε₀} overflows (ε < ε₀): the same quantities divided through by e^{ε₀}
        ratio = math.exp(-epsilon) * math.expm1(epsilon - epsilon0) / math.expm1(-epsilon - epsilon0)
        first = alpha - math.exp(epsilon - epsilon0) / (1.0 + math.exp(-epsilon0))  # α − e^ε(1 − α)
        # (1 − α) − e^ε α, with e^ε capped below overflow: only less negative, so δ only larger (and the
        # cells it multiplies are empty unless c ≥ e^709)
        second = math.exp(-epsilon0) / (1.0 + math.exp(-epsilon0)) - math.exp(min(epsilon, 709.0)) * alpha
    beta = ratio / (1.0 + ratio)
    cut = np.floor(beta * (c + 1))
    upper = stats.binom.cdf(cut, c, 0.5)
    lower = np.where(cut >= 1, stats.binom.cdf(cut - 1, c, 0.5), 0.0)
    value = first * upper + second * lower
    return np.maximum(value + _ROUNDING * (abs(first) * upper + abs(second) * lower), 0.0)


@certified("delta")
def shuffle_delta(epsilon: float, epsilon0: float, n_users: int) -> float:
    """δ(ε) of n shuffled ε₀-LDP reports (an upper bound; Feldman, McMillan & Talwar 2021).

    >>> shuffle_delta(1.0, 1.0, 1000)   # 0, certified as the smallest float (a release is never free)
    5e-324
    >>> 0.0 < shuffle_delta(0.1, 1.0, 1000) < 1e-3
    True
    """
    epsilon = float(epsilon)
    if not epsilon >= 0.0:
        raise ValueError(f"epsilon must be in [0, inf), got epsilon={epsilon}")
    epsilon0 = check_positive("epsilon0", epsilon0)
    n_users = check_integer("n_users", n_users, minimum=2)
    if epsilon >= epsilon0:
        return 0.0
    c, weights, left_out = _clone_blocks(epsilon0, n_users)
    cells = _cell_delta(c, epsilon, epsilon0)
    worst = float(_cell_delta(np.array([0]), epsilon, epsilon0)[0])  # δ_c decreases in c
    total = math.fsum(weights * cells) + left_out * worst
    return min(1.0, math.nextafter(total * (1.0 + 1e-12), math.inf))


@certified("epsilon")
def shuffle_epsilon(delta: float, epsilon0: float, n_users: int) -> float:
    """Smallest ε (rounded up, to 1e-9 relative) with ``shuffle_delta(ε) ≤ delta``; never above ε₀.

    >>> eps = shuffle_epsilon(1e-6, 1.0, 10_000)
    >>> 0.0 < eps < 1.0, shuffle_delta(eps, 1.0, 10_000) <= 1e-6
    (True, True)
    """
    delta = check_open_unit("delta", delta)
    epsilon0 = check_positive("epsilon0", epsilon0)
    n_users = check_integer("n_users", n_users, minimum=2)
    if shuffle_delta(0.0, epsilon0, n_users) <= delta:
        return 0.0
    low, high = 0.0, epsilon0
    while high - low > 1e-9 * high:
        mid = 0.5 * (low + high)
        if shuffle_delta(mid, epsilon0, n_users) <= delta:
            high = mid
        else:
            low = mid
    return high


@functools.lru_cache(maxsize=8)
def shuffled_atoms(epsilon0: float, n_users: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
    """``(losses, p, q, left_out)``: the atoms of the pair (module docstring) with their P- and
    Q-masses, and an upper bound on the P-mass of the atoms left out (including an allowance of
    1e-12 plus any shortfall of the total from 1, for the rounding of the binomial pmfs).

    For each kept c, A + Δ is kept within h = ⌈√(35c)⌉ + 2 of ⌊c/2⌋, so a left-out value has
    |A − c/2| ≥ h − 1.5 and by Hoeffding's inequality the left-out mass is at most
    2 exp(−2(h − 1.5)²/c) ≤ 2e⁻⁷⁰. Every loss lies in [−ε₀, ε₀].

    Raises
    ------
    ValueError
        If more than :data:`MAX_ATOMS` atoms would be needed.
    """
    epsilon0 = check_positive("epsilon0", epsilon0)
    n_users = check_integer("n_users", n_users, minimum=2)
    c_values, weights, left_out = clone_range(epsilon0, n_users)
    half = np.ceil(np.sqrt(35.0 * np.maximum(c_values, 1))) + 2
    sizes = np.minimum(c_values + 2, 2 * half + 2).astype(int)
    if int(sizes.sum()) > MAX_ATOMS:
        raise ValueError(
            f"the shuffled pair of n_users={n_users}, epsilon0={epsilon0} needs {int(sizes.sum())} atoms "
            f"(more than {MAX_ATOMS}); use shuffle_epsilon for this event alone"
        )
    alpha = 1.0 / (1.0 + math.exp(-epsilon0))
    losses, p_parts, q_parts = [], [], []
    for c, w, h in zip(c_values, weights, half):
        a = np.arange(max(0, int(c // 2 - h)), min(int(c) + 1, int(c // 2 + h)) + 1)  # A + Δ ∈ [0, c + 1]
        log_b = stats.binom.logpmf(a, c, 0.5)  # A = a
        log_b1 = stats.binom.logpmf(a - 1, c, 0.5)  # A = a − 1
        log_p = np.logaddexp(math.log(alpha) + log_b, math.log1p(-alpha) + log_b1)
        log_q = np.logaddexp(math.log(alpha) + log_b1, math.log1p(-alpha) + log_b)
        losses.append(log_p - log_q)
        p_parts.append(w * np.exp(log_p))
        q_parts.append(w * np.exp(log_q))
        left_out += w * 2.0 * math.exp(-2.0 * (h - 1.5) ** 2 / max(c, 1))
    p_all = np.concatenate(p_parts)
    # the pmfs' rounding (≤ ~1e-13 relative each): any deficit of the total, plus 1e-12, is left out too
    left_out += max(0.0, 1.0 - math.fsum(p_all) - left_out) + 1e-12
    return np.concatenate(losses), p_all, np.concatenate(q_parts), float(left_out)
