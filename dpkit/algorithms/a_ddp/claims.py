"""The paper's own privacy calibration of A-DDP and its "sampling composition" theorem, for reproduction.

Cheng, Liu, Wang & Lu (2020), Algorithm 1 calibrates the noise in three steps, all implemented
here exactly as published so that ``variant="paper"`` of :mod:`dpkit.algorithms.a_ddp.algorithm` can be
run and compared:

1. line 5: a per-round budget (ε_iter, δ_iter) whose T-fold *advanced composition* (Dwork &
   Roth 2014, Thm 3.20) is (ε_total, δ_total) for the user's *estimated* number of rounds T
   (:func:`advanced_composition_split`; the paper leaves the split of δ_total between T·δ_iter
   and the slack δ′ open, we take δ′ = δ_total/2);
2. line 14: σ of the analytic Gaussian mechanism (Balle & Wang 2018, Thm 8) for (ε_iter, δ_iter)
   at sensitivity **C** (:func:`paper_sigma`); one upload's true replace-one sensitivity is 2C;
3. lines 2 and 7–10: a user keeps uploading while the δ of Theorem 1 ("sampling composition")
   at ε_total stays ≤ δ_total (:func:`theorem1_delta`, :func:`theorem1_max_rounds`). The rule
   depends on neither the data nor the training, so the number of rounds is fixed in advance.

Theorem 1 states δ = Σ_{i=1}^{k} Bin(i; k, p) δ_G(ε; √i H/σ) for k rounds in which the record is
sampled with probability p, δ_G the exact δ of one Gaussian mechanism. It holds only as an upper
bound (by joint convexity of the hockey-stick divergence, conditioning on how often the record
was sampled) and has no amplification in ε; :func:`theorem1_comparison` compares it with the
PLD and RDP accountants. Nothing here is a dpkit guarantee: a run's guarantee always comes from
the accountants over its ledger, and the paper's rule is reported as a
:class:`~dpkit.algorithms.substrate.result.PaperClaim`.

References
----------
J. Cheng, W. Liu, X. Wang, X. Lu, "Adaptive Distributed Differential Privacy with SGD", AAAI 2020, Algorithm 1 and Theorem 1. B. Balle and Y.-X. Wang, ICML 2018, Thm 8. C. Dwork and A. Roth,
2014, Thm 3.20.
"""

from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np
from scipy import optimize, special

from dpkit._bisection import first_passing
from dpkit._validation import check_integer, check_nonnegative, check_open_unit, check_positive, check_unit_interval
from dpkit.accounting.analytic_gaussian import gaussian_delta, gaussian_sigma
from dpkit.accounting.approx_dp import advanced_composition
from dpkit.accounting.events import GaussianEvent, PoissonSampledEvent
from dpkit.accounting.pld import PLDAccountant
from dpkit.accounting.rdp import RDPAccountant
from dpkit.algorithms.substrate.result import PaperClaim

__all__ = [
    "PAPER_ESTIMATED_ROUNDS", "PAPER_CLIP", "advanced_composition_split", "paper_sigma", "theorem1_delta",
    "theorem1_epsilon", "theorem1_max_rounds", "paper_claim", "theorem1_comparison", "k_max_table",
]

PAPER_ESTIMATED_ROUNDS = 10
"""The estimated number of rounds T of the paper's experiments (Cheng et al. 2020, §Experiments)."""
PAPER_CLIP = 3.0
"""The clipping norm C of the paper's experiments ("clip = 3")."""


def advanced_composition_split(epsilon: float, delta: float, k: int,
                               delta_prime_fraction: float = 0.5) -> tuple[float, float, float]:
    """Per-round (ε_iter, δ_iter) whose k-fold advanced composition is (ε, δ) (Alg. 1 line 5).

    Solves ε = √(2k ln(1/δ′)) ε_iter + k ε_iter (e^{ε_iter} − 1) (the forward formula is
    :func:`dpkit.accounting.approx_dp.advanced_composition`) with δ′ = ``delta_prime_fraction``·δ
    and δ_iter = (δ − δ′)/k. ε_iter is rounded down so that the composition never exceeds ε.

    Returns
    -------
    (eps_iter, delta_iter, delta_prime)

    >>> e, d, dp = advanced_composition_split(1.0, 1e-8, 10)
    >>> round(e, 5), d, dp
    (0.04984, 5e-10, 5e-09)
    """
    epsilon = check_positive("epsilon", epsilon)
    delta = check_open_unit("delta", delta)
    k = check_integer("k", k, minimum=1)
    fraction = check_unit_interval("delta_prime_fraction", delta_prime_fraction, include_zero=False,
                                   include_one=False)
    delta_prime = fraction * delta
    delta_iter = (delta - delta_prime) / k

    def total(eps: float) -> float:
        return advanced_composition(eps, delta_iter, k, delta_prime).epsilon

    high = epsilon
    while total(high) < epsilon:
        high *= 2.0
    root = optimize.brentq(lambda e: total(e) - epsilon, 1e-300, high, xtol=1e-300, rtol=1e-15)
    while total(root) > epsilon:
        root = math.nextafter(root, 0.0)
    return root, delta_iter, delta_prime


def paper_sigma(epsilon: float, delta: float, estimated_rounds: int = PAPER_ESTIMATED_ROUNDS,
                clip: float = PAPER_CLIP) -> float:
    """The paper's per-upload σ: analytic Gaussian σ for the line-5 split, at sensitivity C (Alg. 1 line 14).

    >>> round(paper_sigma(1.0, 1e-8), 2)      # T = 10, C = 3
    301.9
    """
    eps_iter, delta_iter, _ = advanced_composition_split(epsilon, delta, estimated_rounds)
    return float(gaussian_sigma(eps_iter, delta_iter, check_positive("clip", clip)))


def _binomial_window(k: int, p: float) -> tuple[np.ndarray, np.ndarray, float, float]:
    """Counts i ∈ [1, k] carrying the Binomial mass, and bounds on the mass outside the window."""
    mean = k * p
    sd = math.sqrt(k * p * (1.0 - p))
    low = max(1, int(math.floor(mean - 12.0 * sd - 12.0)))
    high = min(k, int(math.ceil(mean + 12.0 * sd + 12.0)))
    counts = np.arange(low, high + 1)
    log_weights = _binomial_logpmf(counts, k, p)
    upper_tail = float(special.bdtrc(high, k, p))  # P[Bin > high]; each omitted term's δ_G is ≤ 1
    lower_mass = float(special.bdtr(low - 1, k, p) - math.exp(special.xlog1py(k, -p))) if low > 1 else 0.0
    return counts, log_weights, upper_tail, max(lower_mass, 0.0)


def _binomial_logpmf(counts: np.ndarray, k: int, p: float) -> np.ndarray:
    """log Bin(i; k, p) = log C(k, i) + i log p + (k − i) log(1 − p), with log-gamma binomial coefficients."""
    log_choose = special.gammaln(k + 1) - special.gammaln(counts + 1) - special.gammaln(k - counts + 1)
    return log_choose + special.xlogy(counts, p) + special.xlog1py(k - counts, -p)


def theorem1_delta(epsilon: float, k: int, p: float, sensitivity: float, sigma: float) -> float:
    """Theorem 1 of Cheng et al. 2020: δ(ε) ≤ Σ_{i=1}^{k} Bin(i; k, p) δ_G(ε; √i·H/σ).

    δ_G is the exact δ of one Gaussian mechanism (Balle & Wang 2018, Thm 8). Terms more than
    12 standard deviations (+12) from kp are bounded by their Binomial mass times the largest
    δ_G they could have, so the result stays an upper bound of the sum.

    >>> f"{theorem1_delta(1.0, 1, 0.01, 1.0, 1.0):.5e}"   # k = 1: p·δ_G(ε; H/σ)
    '1.26937e-03'
    """
    epsilon = check_nonnegative("epsilon", epsilon)
    k = check_integer("k", k, minimum=0)
    p = check_unit_interval("p", p, include_zero=False)
    sensitivity = check_positive("sensitivity", sensitivity)
    sigma = check_positive("sigma", sigma)
    if k == 0:
        return 0.0
    if p == 1.0:
        return gaussian_delta(sigma, epsilon, sensitivity * math.sqrt(k))
    counts, log_weights, upper_tail, lower_mass = _binomial_window(k, p)
    deltas = np.array([gaussian_delta(sigma, epsilon, sensitivity * math.sqrt(int(i))) for i in counts])
    total = float(np.sum(np.exp(log_weights) * deltas)) + upper_tail + lower_mass * float(deltas[0])
    return min(1.0, total * (1.0 + 1e-12))


def theorem1_epsilon(delta: float, k: int, p: float, sensitivity: float, sigma: float) -> float:
    """The smallest ε (to relative 1e-7, rounded up) with :func:`theorem1_delta` ≤ ``delta``."""
    delta = check_open_unit("delta", delta)
    k = check_integer("k", k, minimum=1)

    def excess(eps: float) -> float:
        return theorem1_delta(eps, k, p, sensitivity, sigma) - delta

    if excess(0.0) <= 0.0:
        return 0.0
    high = 1.0
    while excess(high) > 0.0:
        high *= 2.0
    low = high / 2.0 if high > 1.0 else 0.0
    while high - low > 1e-7 * high:
        middle = 0.5 * (low + high)
        if excess(middle) > 0.0:
            low = middle
        else:
            high = middle
    return high


def theorem1_max_rounds(epsilon: float, delta: float, p: float, sensitivity: float, sigma: float,
                        limit: int = 10**7) -> int:
    """The paper's stopping time k_max = max{k : Theorem-1 δ(ε; k) ≤ δ} (Alg. 1 lines 2, 7–10).

    The check is prospective (a user takes part in round k only if the bound with k rounds stays
    ≤ δ). Theorem 1's δ increases with k: doubling, then bisection. Returns ``limit`` if even
    ``limit`` rounds stay within δ.

    >>> theorem1_max_rounds(1.0, 1e-8, 0.01, 3.0, paper_sigma(1.0, 1e-8))
    38324
    """
    epsilon = check_nonnegative("epsilon", epsilon)
    delta = check_open_unit("delta", delta)
    limit = check_integer("limit", limit, minimum=1)

    def fits(k: int) -> bool:
        return theorem1_delta(epsilon, k, p, sensitivity, sigma) <= delta

    if not fits(1):
        return 0
    low, high = 1, 2
    while high <= limit and fits(high):
        low, high = high, 2 * high
    if high > limit:
        if fits(limit):
            return limit
        high = limit
    return first_passing(lambda k: not fits(k), low, high) - 1  # the last k that fits, given fits(low)


def paper_claim(epsilon: float, delta: float, estimated_rounds: int, clip: float, rounds: int,
                allowed: int) -> PaperClaim:
    """What Algorithm 1 claims for a run of ``rounds`` of the ``allowed`` rounds its stopping rule admits."""
    return PaperClaim(
        epsilon=epsilon, delta=delta, valid=False,
        rule=(f"Cheng et al. 2020, Alg. 1: advanced-composition split of (ε, δ) over the estimated T = "
              f"{estimated_rounds} rounds (line 5), analytic Gaussian σ at sensitivity C = {clip:g} (line 14), "
              f"users stop when Theorem 1 with H = C exceeds δ (lines 2, 7–10)"),
        notes=(f"one upload's replace-one sensitivity is 2C = {2 * clip:g}, not C: the rule is not a valid bound "
               "(the ledger records the true events and its guarantee says what this run achieves)",
               f"{rounds} rounds run of the {allowed} the stopping rule allows"),
    )


def theorem1_comparison(settings: Sequence[tuple[float, float, int]], delta: float = 1e-5,
                        pld: bool = True) -> list[dict[str, Any]]:
    """Theorem 1's ε against the RDP and PLD accountants at the same δ.

    Parameters
    ----------
    settings
        ``(p, sigma_over_H, k)`` triples: sampling probability, noise multiplier, rounds.
    delta
        Target δ.
    pld
        Also compute the PLD column (slower).

    Returns
    -------
    One dict per setting: ``p, sigma_over_H, k, epsilon_theorem1, epsilon_rdp, epsilon_pld,
    ratio`` (Theorem 1 over PLD, or over RDP with ``pld=False``). RDP and PLD account for
    Poisson sampling under add/remove, the model of the paper's sampling amplification.
    """
    rows = []
    for p, multiplier, k in settings:
        eps_t1 = theorem1_epsilon(delta, int(k), float(p), 1.0, float(multiplier))
        event = PoissonSampledEvent(GaussianEvent(float(multiplier), 1.0), float(p))
        eps_rdp = RDPAccountant().compose(event, int(k)).get_epsilon(delta).epsilon
        eps_pld = PLDAccountant().compose(event, int(k)).get_epsilon(delta).epsilon if pld else None
        reference = eps_pld if eps_pld else eps_rdp
        rows.append({"p": p, "sigma_over_H": multiplier, "k": int(k), "epsilon_theorem1": eps_t1,
                     "epsilon_rdp": eps_rdp, "epsilon_pld": eps_pld,
                     "ratio": eps_t1 / reference if reference else math.inf})
    return rows


def k_max_table(epsilons: Sequence[float] = (0.1, 0.5, 1.0, 2.0, 5.0), delta: float = 1e-8,
                estimated_rounds: int = PAPER_ESTIMATED_ROUNDS, clip: float = PAPER_CLIP,
                records_per_user: int = 100) -> list[dict[str, Any]]:
    """The rounds the paper's stopping rule admits at its own settings: k_max with H = C (the paper)
    and with the true H = 2C, at the paper's σ."""
    rows = []
    p = 1.0 / records_per_user
    for eps in epsilons:
        eps_iter = advanced_composition_split(eps, delta, estimated_rounds)[0]
        sigma = paper_sigma(eps, delta, estimated_rounds, clip)
        rows.append({"epsilon": eps, "eps_iter": eps_iter, "sigma": sigma,
                     "k_max_H_C": theorem1_max_rounds(eps, delta, p, clip, sigma),
                     "k_max_H_2C": theorem1_max_rounds(eps, delta, p, 2 * clip, sigma)})
    return rows
