"""What a confirmation sample buys: the exact power of the confirmation's refutation, and the
sample size that reaches a target power.

A confirmation of budget ``m`` counts the witness event on ``N ~ Poisson(λ)`` outputs of each
input (``λ`` of :func:`dpkit.audit.statistics.poisson_sample_mean`, capped at ``m``), so
``K1 ~ Poisson(λ p1)`` and ``K2 ~ Poisson(λ p2)`` independently, and refutes the claim (ε, δ)
when :func:`dpkit.audit.statistics.poisson_epsilon_lower_bound` exceeds ε: the conditional
Clopper–Pearson bound on ``x/(x + K2)`` with ``x = K1 − b`` (``b`` the δ allowance). The bound
grows with ``K1`` and falls with ``K2``, so for each ``k2`` the refutation needs ``K1 ≥ k1*(k2)``
(found by bisection against the bound itself), and

    power(m) = Σ_k2 Pr[K2 = k2] · Pr[K1 ≥ k1*(k2)]

summed over all ``k2`` but a tail of 10⁻¹² — the power of one event at ``level``, a lower bound
on the audit's power when several events share α (the audit refutes if any of them does); the
cap of the sizes changes it by at most :data:`~dpkit.audit.statistics.TRUNCATION`. When more
than 2 048 values of ``k2`` carry that mass, they are grouped into 1 024 runs of consecutive
values, each charged the threshold of its largest ``k2`` (``k1*`` does not decrease with
``k2``): the sum is then a lower bound on the power, never above it.

:func:`plan_samples` is what ``samples="auto"`` uses: the smallest ``m`` whose power at the
selection's estimates ``(p1, p2)`` of the witness event reaches the target, and the smallest
true ε the plan refutes with that power on an event with the same ``p2``. The power holds *if
those estimates are right*; they come from a selection sample, so the plan says so.

References
----------
.. [1] C. J. Clopper and E. S. Pearson, "The use of confidence or fiducial limits illustrated in
       the case of the binomial", Biometrika 26(4), 1934.
.. [2] J. Przyborowski and H. Wilenski, "Homogeneity of results in testing samples from Poisson
       series", Biometrika 31(3/4), 1940.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np
from scipy import stats

from dpkit._bisection import first_passing, threshold_bracket
from dpkit._validation import check_integer, check_nonnegative, check_open_unit, check_unit_interval
from dpkit.audit.statistics import logit_cp_lower, poisson_sample_mean, poisson_test

__all__ = ["SamplePlan", "refutation_power", "samples_for_power", "detectable_at_power", "plan_samples"]

_TAIL = 1e-12
_EXACT_MAX = 2048  # values of k2 summed one by one; beyond, _BINS runs of them (a lower bound)
_BINS = 1024


def _needed_k1(k2: np.ndarray, top: int, epsilon: float, allowance: int, level: float) -> np.ndarray:
    """Smallest ``k1 ≤ top`` with ``logit_cp_lower(k1 − allowance, k2, level) > epsilon`` for each ``k2``
    (``top + 1`` where none is): a bisection of all ``k2`` at once against the bound itself."""
    def refutes(k1: np.ndarray) -> np.ndarray:
        return logit_cp_lower(k1 - allowance, k2, level) > epsilon

    low = np.full(k2.shape, allowance, dtype=np.int64)  # fails: no success left after the allowance
    high = np.full(k2.shape, top, dtype=np.int64)
    some = refutes(high)
    while np.any(some & (high - low > 1)):
        mid = (low + high) // 2
        ok = refutes(mid)
        high = np.where(some & ok, mid, high)
        low = np.where(some & ~ok, mid, low)
    return np.where(some, high, top + 1)


def refutation_power(p1: float, p2: float, m: int, claimed_epsilon: float, claimed_delta: float = 0.0,
                     level: float = 0.05) -> float:
    """Probability that an event with probabilities ``p1`` (on D) and ``p2`` (on D′), counted by a
    confirmation of budget ``m`` per input, gives a bound above ``claimed_epsilon`` at ``level``
    (see the module docstring).

    >>> p2 = 0.01
    >>> low = refutation_power(p2 * math.exp(2.0), p2, 2_000, claimed_epsilon=1.5)
    >>> high = refutation_power(p2 * math.exp(2.0), p2, 10_000, claimed_epsilon=1.5)
    >>> 0.0 < low < 0.9 < high <= 1.0
    True
    >>> refutation_power(p2 * math.exp(1.0), p2, 10**6, claimed_epsilon=1.5) < 1e-6   # true ε below the claim
    True
    """
    m = check_integer("m", m, minimum=1)
    p1 = check_unit_interval("p1", p1)
    p2 = check_unit_interval("p2", p2)
    claimed_epsilon = check_nonnegative("claimed_epsilon", claimed_epsilon)
    claimed_delta = check_unit_interval("claimed_delta", claimed_delta, include_one=False)
    level = check_open_unit("level", level)
    mean, spent = poisson_sample_mean(m)
    mu1, mu2 = mean * p1, mean * p2
    lo = max(int(stats.poisson.ppf(_TAIL, mu2)), 0)
    hi = int(stats.poisson.isf(_TAIL, mu2)) + 1
    if hi - lo + 1 <= _EXACT_MAX:
        k2 = np.arange(lo, hi + 1)
        weights = stats.poisson.pmf(k2, mu2)
    else:  # runs [a, b] of consecutive k2, each charged the threshold of b (the largest)
        edges = np.unique(np.linspace(lo, hi + 1, _BINS + 1).astype(np.int64))
        k2 = edges[1:] - 1
        weights = stats.poisson.cdf(k2, mu2) - stats.poisson.cdf(edges[:-1] - 1, mu2)
    top = int(stats.poisson.isf(_TAIL, mu1)) + 1
    allowance, rest = poisson_test(mean, claimed_delta, level, spent)
    need = _needed_k1(k2, top, claimed_epsilon, allowance, rest)
    hit = np.where(need <= top, stats.poisson.sf(need - 1, mu1), 0.0)
    return float(min(1.0, max(0.0, np.sum(weights * hit))))


def samples_for_power(p1: float, p2: float, claimed_epsilon: float, claimed_delta: float = 0.0,
                      level: float = 0.05, power: float = 0.8, max_samples: int = 10**9) -> int | None:
    """Smallest ``m`` (to 1 %) with :func:`refutation_power` ≥ ``power``, or ``None`` beyond ``max_samples``.

    The power is not exactly monotone in ``m`` (the binomial lattice), so the search brackets on
    a doubling grid, bisects, and returns an ``m`` whose own power has been checked.

    >>> m = samples_for_power(0.01 * math.exp(2.0), 0.01, claimed_epsilon=1.5, power=0.8)
    >>> refutation_power(0.01 * math.exp(2.0), 0.01, m, claimed_epsilon=1.5) >= 0.8
    True
    """
    power = check_open_unit("power", power)
    max_samples = check_integer("max_samples", max_samples, minimum=1)
    if not p1 > min(1.0, math.exp(min(claimed_epsilon, 700.0)) * p2 + claimed_delta):
        return None  # the event does not violate the claim: no sample size refutes it (beyond α)

    def enough(m: int) -> bool:
        return refutation_power(p1, p2, m, claimed_epsilon, claimed_delta, level) >= power

    hi = 16
    while not enough(min(hi, max_samples)):
        if hi >= max_samples:
            return None
        hi *= 2
    hi = min(hi, max_samples)
    return first_passing(enough, hi // 2, hi, relative=100)


def detectable_at_power(p2: float, m: int, claimed_epsilon: float, claimed_delta: float = 0.0, level: float = 0.05,
                        power: float = 0.8) -> float:
    """Smallest true ε (to 10⁻³) that ``m`` outputs per input refute with probability ≥ ``power``
    on an event of probability ``p2`` on D′ and ``min(1, e^ε p2 + δ)`` on D; ``inf`` if none.

    >>> x = detectable_at_power(0.01, 1_000_000, claimed_epsilon=1.0)
    >>> 1.0 < x < 1.1
    True
    """
    power = check_open_unit("power", power)

    def refuted(eps: float) -> bool:
        p1 = min(1.0, math.exp(eps) * p2 + claimed_delta)
        return refutation_power(p1, p2, m, claimed_epsilon, claimed_delta, level) >= power

    top = math.log(max((1.0 - claimed_delta) / max(p2, 1e-300), 1.0)) + 1e-9
    if top <= claimed_epsilon or not refuted(top):
        return math.inf
    return threshold_bracket(refuted, claimed_epsilon, top, absolute=1e-3)[1]


@dataclasses.dataclass(frozen=True)
class SamplePlan:
    """A confirmation size and what it buys (see the module docstring).

    Attributes
    ----------
    samples_per_input
        ``m``: confirmation outputs per input.
    target_power
        The power asked for.
    power
        Power of the confirmation's refutation at ``m`` if the witness event's selection
        estimates ``p1``, ``p2`` are its true probabilities.
    detectable_epsilon
        Smallest true ε refuted with probability ≥ ``target_power`` at ``m`` on an event with
        the same ``p2`` (``inf``: none).
    p1, p2, level
        The estimates and the event's level (α shared over the confirmed events).
    reached
        Whether ``power ≥ target_power`` (``False`` when the cap or the estimates did not allow it).
    """

    samples_per_input: int
    target_power: float
    power: float
    detectable_epsilon: float
    p1: float
    p2: float
    level: float
    reached: bool

    def describe(self) -> str:
        """One line for the result's notes."""
        power = (f"power {self.power:.2f} to refute the claim if the selected event's estimated probabilities "
                 f"({self.p1:.3g} on D, {self.p2:.3g} on D') are right")
        detect = (f"a true epsilon of {self.detectable_epsilon:.4g} or more on an event this likely is refuted with "
                  f"probability >= {self.target_power:g}" if math.isfinite(self.detectable_epsilon)
                  else f"no true epsilon on an event this likely is refuted with probability >= {self.target_power:g}")
        return (f"sample plan: {self.samples_per_input} confirmation outputs per input; {power}; {detect} "
                f"(exact power of the conditional Poisson bound at level {self.level:.3g})")

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def plan_samples(p1: float, p2: float, claimed_epsilon: float, claimed_delta: float, level: float,
                 power: float, max_samples: int, fallback: int) -> SamplePlan:
    """The smallest ``m ≤ max_samples`` reaching ``power`` at ``(p1, p2)``, else ``fallback``, with
    what it buys (:class:`SamplePlan`).

    >>> plan = plan_samples(0.01 * math.exp(2.0), 0.01, 1.5, 0.0, 0.05, power=0.8, max_samples=10**7, fallback=10**6)
    >>> plan.reached, plan.power >= 0.8, plan.detectable_epsilon <= 2.0
    (True, True, True)
    """
    need = samples_for_power(p1, p2, claimed_epsilon, claimed_delta, level, power, max_samples)
    m = fallback if need is None else need
    return describe_plan(m, p1, p2, claimed_epsilon, claimed_delta, level, power)


def describe_plan(m: int, p1: float, p2: float, claimed_epsilon: float, claimed_delta: float, level: float,
                  power: float) -> SamplePlan:
    """What ``m`` confirmation outputs per input buy (:class:`SamplePlan`)."""
    got = refutation_power(p1, p2, m, claimed_epsilon, claimed_delta, level)
    detect = detectable_at_power(p2, m, claimed_epsilon, claimed_delta, level, power)
    return SamplePlan(int(m), float(power), got, detect, float(p1), float(p2), float(level), bool(got >= power))
