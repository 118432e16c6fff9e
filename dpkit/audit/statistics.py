"""Exact binomial bounds, ε lower bounds from event frequencies, and p-values for a claim.

Every bound here is *one-sided* and exact (Clopper–Pearson), never a normal approximation.
For an event ``S`` and neighbouring inputs ``D, D'`` an (ε, δ)-DP mechanism satisfies
``p1 ≤ e^ε p2 + δ`` with ``p1 = Pr[M(D) ∈ S]``, ``p2 = Pr[M(D') ∈ S]``, so

    ε ≥ ln((p1 − δ) / p2) ≥ ln((p1_lower − δ) / p2_upper)

whenever ``p1_lower ≤ p1`` and ``p2_upper ≥ p2`` (each fails with probability ≤ α/2):
:func:`epsilon_lower_bound`, two binomial counts on fixed sample sizes.

**Poissonized counts, one test for the ratio** (:func:`poisson_epsilon_lower_bound`). When each
input gets ``N ~ Poisson(λ)`` outputs (``N`` drawn independently of them), the counts are
independent ``K1 ~ Poisson(λ p1)`` and ``K2 ~ Poisson(λ p2)`` (thinning), and given
``K1 + K2 = t`` the first is ``Bin(t, p1/(p1 + p2))`` (Przyborowski & Wilenski 1940; Lehmann &
Romano, Sec. 4.5). One Clopper–Pearson bound ``θ_L`` on that binomial at the whole level gives
``p1/p2 ≥ θ_L/(1 − θ_L)``: it spends α on one interval instead of α/2 on each of two, and its
width follows ``√(1/K1 + 1/K2)`` instead of ``1/√K1 + 1/√K2``, about 40 % less deduction at ε = 1.
With δ > 0, ``K1`` is at most ``A + B`` with ``A ~ Poisson(λ(p1 − δ)⁺) ≤ Poisson(e^ε λ p2)`` and
``B ~ Poisson(λδ)``; the test runs on ``K1 − b`` where ``Pr[B > b] ≤`` :data:`DELTA_SHARE` of the
level (the binomial test's p-value falls as its successes grow, so a smaller count is
conservative). The sample sizes are capped at the budget ``m``: ``λ`` is chosen with
``Pr[Poisson(λ) > m]`` ≤ :data:`TRUNCATION`, which the bound spends (:func:`poisson_sample_mean`);
on the other outcomes the capped experiment *is* the Poissonized one.

References
----------
.. [1] C. J. Clopper and E. S. Pearson, "The use of confidence or fiducial limits illustrated
       in the case of the binomial", Biometrika 26(4), 1934.
.. [2] Z. Ding, Y. Wang, G. Wang, D. Zhang, D. Kifer, "Detecting Violations of Differential
       Privacy", CCS 2018 (events on neighbouring inputs, Sec. 3).
.. [3] M. Jagielski, J. Ullman, A. Oprea, "Auditing Differentially Private Machine Learning:
       How Private is Private SGD?", NeurIPS 2020 (Clopper–Pearson ε lower bound, Alg. 2).
.. [4] J. Przyborowski and H. Wilenski, "Homogeneity of results in testing samples from
       Poisson series", Biometrika 31(3/4), 1940 (the conditional test of two Poisson means).
.. [5] E. L. Lehmann and J. P. Romano, *Testing Statistical Hypotheses*, 3rd ed., Springer
       2005, Sec. 4.5 (comparing two Poisson means, conditionally on their sum).
"""

from __future__ import annotations

import math
from typing import Callable

import numpy as np
from scipy import special, stats

from dpkit._bisection import first_passing, threshold_bracket
from dpkit._validation import check_integer, check_open_unit, check_positive, check_unit_interval

__all__ = [
    "cp_lower",
    "cp_upper",
    "epsilon_lower_bound",
    "claim_p_value",
    "TRUNCATION",
    "DELTA_SHARE",
    "poisson_sample_mean",
    "poisson_delta_allowance",
    "poisson_test",
    "logit_cp_lower",
    "poisson_epsilon_lower_bound",
    "poisson_claim_p_value",
    "invert_bound",
    "ceiling_epsilon",
    "samples_to_refute",
    "detectable_epsilon",
]


def cp_lower(k: int | np.ndarray, n: int | np.ndarray, alpha: float) -> np.ndarray | float:
    """One-sided Clopper–Pearson lower bound: ``Pr[p < bound] ≤ alpha`` (0 when ``k = 0``)."""
    k = np.asarray(k, dtype=float)
    n = np.asarray(n, dtype=float)
    with np.errstate(invalid="ignore"):
        out = np.where(k > 0, special.betaincinv(np.maximum(k, 1), np.maximum(n - k + 1, 1), alpha), 0.0)
    return out if out.ndim else float(out)


def cp_upper(k: int | np.ndarray, n: int | np.ndarray, alpha: float) -> np.ndarray | float:
    """One-sided Clopper–Pearson upper bound: ``Pr[p > bound] ≤ alpha`` (1 when ``k = n``)."""
    k = np.asarray(k, dtype=float)
    n = np.asarray(n, dtype=float)
    with np.errstate(invalid="ignore"):
        out = np.where(k < n, special.betaincinv(k + 1, np.maximum(n - k, 1), 1.0 - alpha), 1.0)
    return out if out.ndim else float(out)


def _log_ratio(p1_low: float, p2_up: float, delta: float) -> float:
    if p1_low <= delta:
        return -math.inf
    return math.log(p1_low - delta) - math.log(p2_up)


def epsilon_lower_bound(k1: int, n1: int, k2: int, n2: int, delta: float, alpha: float) -> float:
    """ε lower bound ``ln((p1_lower − δ)/p2_upper)`` for one event and one direction.

    ``k1`` of ``n1`` outputs on D and ``k2`` of ``n2`` outputs on D′ fell in the event. The
    bound fails with probability at most ``alpha`` (α/2 for each Clopper–Pearson bound).
    Returns ``-inf`` when ``p1_lower ≤ δ`` (the event says nothing).
    """
    return _log_ratio(cp_lower(k1, n1, alpha / 2), cp_upper(k2, n2, alpha / 2), delta)


def claim_p_value(k1: int, n1: int, k2: int, n2: int, epsilon: float, delta: float, alpha_cap: float = 1.0) -> float:
    """p-value of H0 "the pair satisfies ``p1 ≤ e^ε p2 + δ``" obtained by inverting the bound.

    ``p = inf{α : epsilon_lower_bound(..., α) > ε}`` (see :func:`invert_bound`).
    """
    return invert_bound(lambda a: epsilon_lower_bound(k1, n1, k2, n2, delta, a), epsilon, alpha_cap)


TRUNCATION = 1e-16  # Pr[Poisson(λ) > m]: the cap of a confirmation's sample sizes, spent from its level
DELTA_SHARE = 0.05  # of the rest of the level, when δ > 0: Pr[B > b] for the δ mass B ~ Poisson(λδ)


def poisson_sample_mean(budget: int) -> tuple[float, float]:
    """The mean ``λ`` of Poissonized sample sizes capped at ``budget`` outputs, and the level the
    cap spends: the largest ``λ`` with ``Pr[Poisson(λ) > budget] ≤`` :data:`TRUNCATION`, and that
    probability (``Pr[Poisson(λ) ≥ m + 1]`` is the regularised lower incomplete gamma
    ``P(m + 1, λ)``, inverted by ``scipy.special.gammaincinv``). A fixed, tiny truncation keeps
    p-values down to about 10⁻¹⁶ for about ``8.2 √m`` fewer expected outputs.

    >>> lam, spent = poisson_sample_mean(1_000_000)
    >>> 0.99 < lam / 1e6 < 1.0, spent <= 1e-16
    (True, True)
    """
    budget = check_integer("budget", budget, minimum=1)
    lam = float(special.gammaincinv(budget + 1.0, TRUNCATION))
    while lam > 0.0 and special.gammainc(budget + 1.0, lam) > TRUNCATION:  # the inverse's last digits, safe side
        lam = math.nextafter(lam, 0.0) * (1.0 - 1e-12)
    return lam, float(special.gammainc(budget + 1.0, lam))


def poisson_delta_allowance(mass: float, alpha: float) -> int:
    """Smallest ``b ≥ 0`` with ``Pr[Poisson(mass) > b] ≤ alpha``: the counts the δ part of an event
    contributes, except with probability ``alpha`` (``mass = λδ``).

    >>> poisson_delta_allowance(0.0, 0.01), poisson_delta_allowance(40.0, 0.0025)
    (0, 59)
    """
    if mass <= 0.0:
        return 0

    def enough(b: int) -> bool:
        return bool(stats.poisson.sf(b, mass) <= alpha)

    high = max(int(mass), 1)
    while not enough(high):
        high *= 2
    return first_passing(enough, -1, high)


def logit_cp_lower(successes: np.ndarray, failures: np.ndarray, alpha: float) -> np.ndarray:
    """``ln(θ_L/(1 − θ_L))`` of the one-sided Clopper–Pearson lower bound ``θ_L`` for ``successes``
    of ``successes + failures`` trials (``Pr[θ < θ_L] ≤ alpha``), elementwise; ``-inf`` where
    ``successes ≤ 0``. ``1 − θ_L`` is the complementary inverse, and ``failures = 0`` the closed form
    ``θ_L = alpha^(1/s)``, so neither end loses digits."""
    x = np.asarray(successes, dtype=float)
    f = np.broadcast_to(np.asarray(failures, dtype=float), x.shape)
    if alpha >= 1.0:  # θ_L → 1: a statement that may fail with probability 1 bounds nothing from above
        return np.where(x > 0.0, np.inf, -np.inf)
    s = np.maximum(x, 1.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        theta = special.betaincinv(s, f + 1.0, alpha)
        rest = special.betaincinv(f + 1.0, s, 1.0 - alpha)
        general = np.log(theta) - np.log(rest)
        log_theta = math.log(alpha) / s
        closed = log_theta - np.log(-np.expm1(log_theta))
        out = np.where(f == 0.0, closed, general)
    return np.where((x > 0.0) & ~np.isnan(out), out, -np.inf)


def poisson_test(mean: float, delta: float, alpha: float, spent: float = 0.0) -> tuple[int, float]:
    """The δ allowance ``b`` and the level of the conditional binomial test that
    :func:`poisson_epsilon_lower_bound` uses (``(0, 0.0)`` when ``alpha ≤ spent``): the bound is
    :func:`logit_cp_lower` of ``(k1 − b, k2)`` at that level."""
    rest = alpha - spent
    if not rest > 0.0:
        return 0, 0.0
    if delta > 0.0:
        return poisson_delta_allowance(mean * delta, DELTA_SHARE * rest), rest * (1.0 - DELTA_SHARE)
    return 0, rest


def poisson_epsilon_lower_bound(k1: int, k2: int, mean: float, delta: float, alpha: float,
                                spent: float = 0.0) -> float:
    """ε lower bound from Poissonized counts (module docstring): ``k1`` outputs of D and ``k2`` of
    D′ fell in the event, each input sampled ``N ~ Poisson(mean)`` times. Fails with probability at
    most ``alpha``, of which ``spent`` went to the cap of the sample sizes
    (:func:`poisson_sample_mean`). With δ > 0, :data:`DELTA_SHARE` of the rest covers the δ mass
    (:func:`poisson_delta_allowance`); the binomial test of ``p1/(p1 + p2)`` gets the remainder.

    Returns ``-inf`` when the counts say nothing (``k1`` no larger than the δ allowance).

    >>> round(poisson_epsilon_lower_bound(2718, 1000, 4e6, 0.0, 0.05), 4)   # CP on each side: 0.9
    0.9386
    """
    return _poisson_bound(check_integer("k1", k1, minimum=0), check_integer("k2", k2, minimum=0),
                          check_positive("mean", mean), check_unit_interval("delta", delta, include_one=False),
                          check_open_unit("alpha", alpha), check_unit_interval("spent", spent))


def _poisson_bound(k1: int, k2: int, mean: float, delta: float, alpha: float, spent: float) -> float:
    """:func:`poisson_epsilon_lower_bound` on checked arguments (any level up to 1, for the p-value)."""
    allowance, rest = poisson_test(mean, delta, alpha, spent)
    if rest <= 0.0:
        return -math.inf
    return float(logit_cp_lower(int(k1) - allowance, int(k2), rest))


def poisson_claim_p_value(k1: int, k2: int, mean: float, epsilon: float, delta: float, spent: float = 0.0,
                          alpha_cap: float = 1.0) -> float:
    """p-value of H0 "the pair satisfies ``p1 ≤ e^ε p2 + δ``" from Poissonized counts, by inverting
    :func:`poisson_epsilon_lower_bound` (which grows with its level; see :func:`invert_bound`)."""
    return invert_bound(lambda a: _poisson_bound(k1, k2, mean, delta, a, spent), epsilon, alpha_cap)


def invert_bound(bound_at: Callable[[float], float], epsilon: float, alpha_cap: float = 1.0) -> float:
    """``inf{α : bound_at(α) > ε}``: the p-value of H0 "true ε ≤ ``epsilon``" for a family of
    lower bounds that hold with probability ≥ 1 − α and grow with α.

    Because the bound increases with α this is a valid p-value (``Pr_H0[p ≤ α] ≤ α``) and
    ``p ≤ α`` exactly when the level-α bound exceeds ε. Bisection (80 halvings in log α)
    returns the upper end of the bracket, so the p-value is never understated. ``alpha_cap``
    (≤ 1) lets callers bracket at their level.
    """
    def exceeds(a: float) -> bool:
        return bound_at(a) > epsilon

    hi = min(1.0, alpha_cap)
    if not exceeds(hi):
        if hi >= 1.0:
            return 1.0
        if not exceeds(1.0):
            return 1.0
        lo, hi = math.log(hi), 0.0
    else:
        lo = math.log(1e-300)
        if exceeds(1e-300):
            return 1e-300
        hi = math.log(hi)
    return math.exp(threshold_bracket(lambda log_level: exceeds(math.exp(log_level)), lo, hi, steps=80)[1])


def ceiling_epsilon(samples_per_input: int, confidence: float = 0.95) -> float:
    """Largest ε lower bound a confirmation of ``samples_per_input`` outputs per input can certify.

    Reached by an event with every output of D inside and none of D′ (a support-boundary
    event), on the most outputs the capped Poisson sizes allow: :func:`poisson_epsilon_lower_bound`
    at ``k1 = m``, ``k2 = 0``. No audit with this many samples can report more, whatever the
    mechanism (the Clopper–Pearson routes, sequential and Gaussian, stop lower).
    """
    alpha = 1.0 - confidence
    mean, spent = poisson_sample_mean(samples_per_input)
    return poisson_epsilon_lower_bound(samples_per_input, 0, mean, 0.0, alpha, spent)


def samples_to_refute(p1: float, p2: float, claimed_epsilon: float, claimed_delta: float = 0.0,
                      confidence: float = 0.95, max_samples: int = 10**10) -> int | None:
    """Outputs per input a confirmation needs to refute the claim with an event of
    probabilities ``p1`` (on D) and ``p2`` (on D′), or ``None`` if ``max_samples`` are not enough.

    The prediction is the smallest budget ``m`` at which :func:`poisson_epsilon_lower_bound`
    evaluated at the *expected* counts ``⌊λ p1⌋``, ``⌈λ p2⌉`` (``λ`` of :func:`poisson_sample_mean`)
    exceeds ``claimed_epsilon``: about half the audits of that size refute the claim, so plan a
    margin above it. Feed it the selection frequencies of an event (shrunk against it, as
    :func:`dpkit.audit.audit` does).

    Examples
    --------
    >>> m = samples_to_refute(0.01, 0.01 * math.exp(-2.0), claimed_epsilon=1.5)
    >>> 10_000 < m < 100_000
    True
    >>> samples_to_refute(0.01, 0.01 * math.exp(-1.0), claimed_epsilon=1.5) is None
    True
    """
    alpha = 1.0 - confidence
    if not (0.0 <= p2 < p1 <= 1.0):
        return None

    def refutes(m: int) -> bool:
        mean, spent = poisson_sample_mean(m)
        k1, k2 = math.floor(p1 * mean), math.ceil(p2 * mean)
        return poisson_epsilon_lower_bound(k1, k2, mean, claimed_delta, alpha, spent) > claimed_epsilon

    if not refutes(max_samples):
        return None
    return first_passing(refutes, 1, max_samples, relative=1000)  # 0.1 % resolution, rounded up


def detectable_epsilon(p2: float, samples_per_input: int, claimed_epsilon: float, claimed_delta: float = 0.0,
                       confidence: float = 0.95, level: float | None = None) -> float:
    """Smallest ε a confirmation of ``samples_per_input`` outputs per input detects with
    probability ≥ ``confidence``, for an event of probability ``p2`` on D′ and
    ``p1 = min(1, e^ε p2 + δ)`` on D.

    Detection means :func:`poisson_epsilon_lower_bound` at ``level`` (default ``1 − confidence``)
    exceeds ``claimed_epsilon``. The counts are set to the Poisson quantiles
    ``k1 = F⁻¹((1 − c)/2; λ p1)`` and ``k2 = F̄⁻¹((1 − c)/2; λ p2)`` (``λ`` of
    :func:`poisson_sample_mean`): both hold together with probability ≥ c, and the bound grows
    with ``k1`` and falls with ``k2``. Returns ``inf`` when no ε is detectable (``p2 = 0`` is
    handled as one count in ``m``).

    Examples
    --------
    >>> x = detectable_epsilon(0.01, 1_000_000, claimed_epsilon=1.0)
    >>> 1.0 < x < 1.1
    True
    """
    c = confidence
    alpha = (1.0 - c) if level is None else level
    m = int(samples_per_input)
    mean, spent = poisson_sample_mean(m)
    q = min(max(p2, 1.0 / m), 1.0)
    k2 = int(stats.poisson.isf((1.0 - c) / 2, mean * q))

    def detected(eps: float) -> bool:
        p1 = min(1.0, math.exp(eps) * q + claimed_delta)
        k1 = int(stats.poisson.ppf((1.0 - c) / 2, mean * p1))
        return poisson_epsilon_lower_bound(k1, k2, mean, claimed_delta, alpha, spent) > claimed_epsilon

    top = math.log(max((1.0 - claimed_delta) / q, 1.0)) + 1e-9
    if not detected(top):
        return math.inf
    return threshold_bracket(detected, claimed_epsilon, top, steps=60)[1]
