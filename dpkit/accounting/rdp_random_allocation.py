"""Rényi DP of random allocation of the Gaussian mechanism (Feldman & Shenfeld 2025).

Source: V. Feldman and M. Shenfeld, "Privacy amplification by random allocation", NeurIPS 2025
(arXiv:2502.08202). Theorem, lemma and corollary numbers below are those of the NeurIPS 2025
version; the arXiv revisions number some of them differently.

Setting (their §2): in one epoch the Gaussian mechanism runs ``t`` times and every record takes
part in ``k`` of the runs, chosen uniformly at random; neighbours differ by adding or removing one
record. With z = σ/Δ the Gaussian is tightly dominated by the pair P = N(1, z²), Q = N(0, z²)
(Claim D.3), and by Thm 3.1 random allocation is dominated by the same scheme applied to that
pair, so for k = 1 the two directions are

* remove: D_α(P̄ ‖ Q^t), P̄ = (1/t) Σ_i Q^{i−1}·P·Q^{t−i} (the record's step is uniform);
* add:    D_α(Q^t ‖ P̄).

What is used, and what it covers
--------------------------------
* **remove, k = 1, integer α ≥ 2 — exact** (Thm 4.4, first part of Cor. 4.6, proof in Lemma F.1):
  with X = (dP/dQ)(Y), Y ~ Q, so that E[X^j] = e^{j(j−1)/(2z²)},

      D_α = 1/(α−1) · log( t^{−α} Σ_{i_1+…+i_t=α} α!/(i_1!…i_t!) Π_j E[X^{i_j}] ),

  which Thm 4.4 writes as a sum over the integer partitions of α with at most t parts. Here the
  same sum is evaluated as α!·[x^α] F(x)^t with F(x) = Σ_j E[X^j] x^j/j! (the multinomial theorem
  groups it exactly so), in log space: for α ≤ t + 1 by J. C. P. Miller's recurrence for the
  power of a series, whose terms are then all nonnegative, otherwise by repeated squaring.
  Every term is positive, so nothing cancels; a rounding allowance (see :func:`_log_coefficients`)
  is added, so the value is an upper bound. Orders above :func:`max_exact_order` are charged the
  unamplified Gaussian α/(2z²), an upper bound (each component of P̄ is a Gaussian at distance 1
  from Q, and E_Q[(dP̄/dQ)^α] ≤ (1/t) Σ_i E_Q[(dP_i/dQ)^α] by convexity of x^α).
* **add, k = 1, every real α > 1 — an upper bound** from the argument of Thm 4.5 / Lemma F.3:
  by Jensen's inequality (step (1) of the proof of Lemma F.3) the add-direction privacy loss is at
  most the loss of Q^t against P_{1/t}^{⊗t} minus t·log Z_{1/t}, where P_λ = P^λQ^{1−λ}/Z_λ.
  For the Gaussian P_{1/t} = N(1/t, z²) and Z_{1/t} = e^{−(1/t)(1−1/t)/(2z²)} (proof of Cor. 4.6),
  so the loss bound holds pointwise and carries over to every Rényi order:

      D_α(Q^t ‖ P̄) ≤ α/(2tz²) + (1 − 1/t)/(2z²) = (α + t − 1)/(2tz²).

  The NeurIPS text states this bound in hockey-stick form only (second part of Cor. 4.6); this
  Rényi form is the same pointwise inequality integrated against e^{(α−1)·loss}. It is loose
  when z is small: its constant (1 − 1/t)/(2z²) does not vanish as t grows.
* **k > 1** (Lemma 3.2, and the remark after Cor. 4.6 that the same argument extends the Rényi
  bound): k-out-of-t allocation is bounded by the k-fold composition of 1-out-of-⌊t/k⌋
  allocation, so both directions are k times their k = 1 value at t′ = ⌊t/k⌋. (The proof in App. B
  assumes k | t. Otherwise split [t] at random into k groups of sizes ⌊t/k⌋ and ⌈t/k⌉ and pick
  one step per group: the chosen set is exchangeable, hence a uniform k-subset; the Rényi
  divergence is quasi-convex and additive over independent groups; and both k = 1 divergences
  decrease in t, since for convex φ and i.i.d. X_i, E φ(mean of t + 1) ≤ E φ(mean of t) —
  φ(x) = x^α for remove, x^{1−α} for add. So ⌊t/k⌋ for every group is an upper bound.)
* **fractional α**: the remove value is bounded by the chord of the convex function
  (α−1)·D_α between ⌊α⌋ and ⌈α⌉ (van Erven & Harremoës 2014, Cor. 2), see
  :func:`~dpkit.accounting.rdp_mechanisms.interpolate_integer_curve` — at most the value at ⌈α⌉,
  which Rényi monotonicity in α would give; for 1 < α < 2 it is the value at 2 — or by the
  unamplified α/(2z²) where that is lower (so t′ = 1 gives the Gaussian exactly). The add bound
  holds at every real α.

The curve reported for the add/remove relation is the larger of the two directions. Only the
Gaussian mechanism is covered, and only add/remove neighbours.
"""

from __future__ import annotations

import collections
import math
import sys
import threading
from collections.abc import Callable

import numpy as np
from scipy import special

from dpkit._validation import check_integer, check_positive
from dpkit.accounting.base import UnsupportedEventError
from dpkit.accounting.events import GaussianEvent, RandomAllocationEvent
from dpkit.accounting.neighbouring import NeighbouringRelation
from dpkit.accounting.rdp_mechanisms import check_order, interpolate_integer_curve

__all__ = [
    "max_exact_order",
    "random_allocation_curve",
    "rdp_random_allocation_add",
    "rdp_random_allocation_gaussian",
    "rdp_random_allocation_remove",
]

Curve = Callable[[float], float]

#: Largest exact order when t + 1 ≥ order (Miller's recurrence, O(order²) work).
_MILLER_MAX_ORDER = 4096
#: Largest exact order reached by repeated squaring when t + 1 < order (O(order² log t) work).
_SQUARING_MAX_ORDER = 512
#: First degree computed; the coefficient table then doubles as higher orders are asked.
_INITIAL_DEGREE = 64
_EPS = sys.float_info.epsilon
_CACHE_SIZE = 64

# (z, t) -> (log coefficients, magnitudes of the logs met, rounding allowances), each of length degree + 1
_Table = tuple[np.ndarray, np.ndarray, np.ndarray]
_cache: collections.OrderedDict[tuple[float, int], _Table] = collections.OrderedDict()
_lock = threading.Lock()


def max_exact_order(steps: int) -> int:
    """Largest integer order at which the remove direction of 1-out-of-``steps`` allocation is
    computed exactly (Thm 4.4); above it the unamplified Gaussian bound is used."""
    steps = check_integer("steps", steps, minimum=1)
    return min(_MILLER_MAX_ORDER, max(steps + 1, _SQUARING_MAX_ORDER))


def _log_moments_egf(degree: int, z: float) -> np.ndarray:
    """log of E[X^j]/j! = j(j−1)/(2z²) − log j!, j = 0..degree: the coefficients of F."""
    j = np.arange(degree + 1, dtype=float)
    return j * (j - 1.0) / (2.0 * z * z) - special.gammaln(j + 1.0)


def _miller(log_f: np.ndarray, t: int, log_g: np.ndarray, start: int) -> np.ndarray:
    """Extend log g_n = log [x^n] F^t from n = start to len(log_f) − 1 in place (needs n ≤ t + 1).

    Miller's recurrence for G = F^t with f_0 = 1: n·g_n = Σ_{k=1}^{n} ((t+1)k − n) f_k g_{n−k};
    for n ≤ t + 1 every weight (t+1)k − n is ≥ 0 (zero only at k = 1, n = t + 1), so each g_n
    is a sum of nonnegative terms. Returns a bound on the magnitude of the logs met at each n
    (for the rounding allowance)."""
    degree = len(log_f) - 1
    k = np.arange(1, degree + 1, dtype=float)
    log_t1 = math.log(t + 1.0)
    for n in range(start, degree + 1):
        first = 2 if n == t + 1 else 1
        terms = log_t1 + np.log(k[first - 1 : n] - n / (t + 1.0)) + log_f[first : n + 1] + log_g[n - first :: -1]
        top = float(np.max(terms))
        log_g[n] = top + math.log(float(np.sum(np.exp(terms - top)))) - math.log(n)
    n = np.arange(degree + 1, dtype=float)
    return (np.log((t + 1.0) * np.maximum(n, 1.0)) + np.maximum.accumulate(np.abs(log_f))
            + np.maximum.accumulate(np.abs(log_g)))


def _log_product(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """log-coefficients of the product of two series given by log-coefficients, truncated."""
    degree = len(a) - 1
    n = np.arange(degree + 1)
    shift = n[None, :] - n[:, None]  # row i, column m: b[m − i]
    padded = np.concatenate([b, [-np.inf]])
    terms = a[:, None] + padded[np.where(shift >= 0, shift, degree + 1)]
    top = np.max(terms, axis=0)
    return top + np.log(np.sum(np.exp(terms - top[None, :]), axis=0))


def _squaring(log_f: np.ndarray, t: int) -> tuple[np.ndarray, np.ndarray]:
    """log [x^n] F^t, n = 0..degree, by repeated squaring; and the magnitude of the logs met."""
    result, base, power = None, log_f, t
    magnitude = np.abs(log_f)
    while power:
        if power & 1:
            result = base if result is None else _log_product(result, base)
            magnitude = np.maximum(magnitude, np.abs(result))
        power >>= 1
        if power:
            base = _log_product(base, base)
            magnitude = np.maximum(magnitude, np.abs(base))
    return result, magnitude


def _allowance(magnitude: np.ndarray, t: int) -> np.ndarray:
    """Rounding allowance for log [x^n] F^t: each term is a product of at most n of the f_j and
    ≤ 2 log₂ t + n log-sum-exp steps deep, each adding ≤ a few ulps of the magnitude of the logs
    involved; 16·ε·(n + 2 + 2 log₂ t)·(1 + max magnitude up to n) covers this with room."""
    n = np.arange(len(magnitude), dtype=float)
    running = np.maximum.accumulate(magnitude)
    return 16.0 * _EPS * (n + 2.0 + 2.0 * math.log2(t + 1.0)) * (1.0 + running)


def _log_coefficients(z: float, t: int, degree: int) -> tuple[np.ndarray, np.ndarray]:
    """(log [x^n] F^t, rounding allowance), n = 0..≥degree, for F(x) = Σ_j e^{j(j−1)/(2z²)} x^j/j!.

    Cached per (z, t); the table grows by doubling, so an order search costs about one
    computation at the largest order it reaches."""
    key = (z, t)
    with _lock:
        cached = _cache.get(key)
        if cached is not None and len(cached[0]) > degree:
            _cache.move_to_end(key)
            return cached[0], cached[2]
    old = 0 if cached is None else len(cached[0])
    new_degree = max(_INITIAL_DEGREE, 1 << (degree - 1).bit_length(), 2 * (old - 1))
    new_degree = max(min(new_degree, max_exact_order(t)), degree)
    log_f = _log_moments_egf(new_degree, z)
    with np.errstate(over="ignore", invalid="ignore"):
        if new_degree <= t + 1:  # (then the cached table, if any, is Miller's too)
            log_g = np.full(new_degree + 1, -np.inf)
            log_g[0] = 0.0
            magnitude = np.zeros(new_degree + 1)
            start = 1
            if cached is not None:  # the recurrence is sequential in n: continue where it stopped
                log_g[:old], magnitude[:old] = cached[0], cached[1]
                start = old
            magnitude[start:] = _miller(log_f, t, log_g, start)[start:]
        else:
            log_g, magnitude = _squaring(log_f, t)
    allowance = _allowance(magnitude, t)
    with _lock:
        _cache[key] = (log_g, magnitude, allowance)
        _cache.move_to_end(key)
        while len(_cache) > _CACHE_SIZE:
            _cache.popitem(last=False)
    return log_g, allowance


def _check(noise_multiplier: float, steps: int) -> tuple[float, int]:
    return check_positive("noise_multiplier", noise_multiplier), check_integer("steps", steps, minimum=1)


def rdp_random_allocation_remove(alpha: int, noise_multiplier: float, steps: int) -> float:
    """Remove-direction RDP of 1-out-of-``steps`` random allocation of the Gaussian mechanism with
    noise multiplier z = σ/Δ, at an integer order α ≥ 2: exact up to a rounding allowance, and
    rounded up (Feldman & Shenfeld 2025, Thm 4.4 and first part of Cor. 4.6; see the module
    docstring). Above :func:`max_exact_order` the unamplified Gaussian α/(2z²) (an upper bound).
    """
    order = check_order(alpha)
    if not order.is_integer():
        raise ValueError(f"alpha must be an integer >= 2 (Thm 4.4 is for integer orders), got alpha={alpha!r}")
    alpha = int(order)
    z, t = _check(noise_multiplier, steps)
    plain = alpha / (2.0 * z * z)
    top = max_exact_order(t)
    if t == 1 or alpha > top or not top * top / (2.0 * z * z) < 1e200:  # (the last: logs near overflow)
        return plain
    log_g, allowance = _log_coefficients(z, t, alpha)
    head = float(special.gammaln(alpha + 1.0))
    scale = alpha * math.log(t)
    log_moment = head + float(log_g[alpha]) - scale
    if not math.isfinite(log_moment):
        return plain
    slack = float(allowance[alpha]) + 8.0 * _EPS * (abs(head) + scale + abs(float(log_g[alpha])))
    value = max(log_moment + slack, 0.0) / (alpha - 1.0)
    return min(math.nextafter(value, math.inf), plain)


def rdp_random_allocation_add(alpha: float, noise_multiplier: float, steps: int) -> float:
    """Add-direction RDP bound of 1-out-of-``steps`` random allocation of the Gaussian mechanism,
    (α + t − 1)/(2tz²) for every real α > 1 (the Jensen step of Feldman & Shenfeld 2025,
    Lemma F.3 / Thm 4.5, with the Gaussian constants of Cor. 4.6; see the module docstring)."""
    alpha = check_order(alpha)
    z, t = _check(noise_multiplier, steps)
    if t == 1:  # the Gaussian itself, computed as rdp_mechanisms.rdp_gaussian does
        return alpha / (2.0 * z * z)
    return math.nextafter((alpha + (t - 1.0)) / (2.0 * t * z * z), math.inf)


def rdp_random_allocation_gaussian(alpha: float, noise_multiplier: float, steps: int, selected: int = 1) -> float:
    """RDP at order α > 1 (an upper bound, both add/remove directions) of one epoch of
    k-out-of-t random allocation of the Gaussian mechanism with noise multiplier z = σ/Δ:
    k · max(remove, add) of 1-out-of-⌊t/k⌋ allocation (Feldman & Shenfeld 2025, Lemma 3.2 with
    Thm 4.4 / Thm 4.5 and Cor. 4.6); at fractional orders the remove part is the convex chord of
    the integer values, or α/(2z²) if lower. ``steps`` = t, ``selected`` = k ∈ [1, t].

    >>> round(rdp_random_allocation_remove(2, 1.0, 100), 6)  # log(1 + (e − 1)/100) at α = 2
    0.017037
    >>> round(rdp_random_allocation_gaussian(2, 1.0, 100), 6)  # here the add bound (2 + 99)/200 is larger
    0.505
    >>> rdp_random_allocation_gaussian(3.0, 2.0, 1) == 3.0 / 8.0  # t = 1: the Gaussian itself
    True
    """
    alpha = check_order(alpha)
    z, t = _check(noise_multiplier, steps)
    k = check_integer("selected", selected, minimum=1)
    if k > t:
        raise ValueError(f"selected must be in [1, steps={t}], got selected={k}")
    per_group = t // k
    remove = min(interpolate_integer_curve(alpha, lambda n: rdp_random_allocation_remove(n, z, per_group)),
                 alpha / (2.0 * z * z))  # the chord, or the unamplified Gaussian where that is lower
    add = rdp_random_allocation_add(alpha, z, per_group)
    value = k * max(remove, add)
    return value if k == 1 else math.nextafter(value, math.inf)


def random_allocation_curve(event: RandomAllocationEvent, relation: NeighbouringRelation | str) -> Curve:
    """The RDP curve α ↦ :func:`rdp_random_allocation_gaussian` of a
    :class:`~dpkit.accounting.events.RandomAllocationEvent` of a Gaussian event (add/remove).

    Raises
    ------
    UnsupportedEventError
        For replace-one neighbours, or an inner event other than :class:`GaussianEvent`.
    """
    if NeighbouringRelation.parse(relation) is not NeighbouringRelation.ADD_REMOVE:
        raise UnsupportedEventError(
            event,
            "random allocation is analysed under add/remove neighbours (Feldman & Shenfeld 2025, §2.2); "
            "use neighbouring='add-remove'",
        )
    inner = event.event
    if type(inner) is not GaussianEvent:
        raise UnsupportedEventError(
            event,
            "the Rényi bound of random allocation (Feldman & Shenfeld 2025, Cor. 4.6) is implemented for a "
            f"single GaussianEvent only, got {type(inner).__name__}",
        )
    z, t, k = inner.sigma / inner.sensitivity, event.steps, event.selected
    check_positive("noise multiplier sigma/sensitivity", z)
    return lambda alpha: rdp_random_allocation_gaussian(alpha, z, t, k)
