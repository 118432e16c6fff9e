"""A-DDP: adaptive distributed DP-SGD of Cheng, Liu, Wang & Lu (AAAI 2020), seed 002.

Every user holds ``m`` records. In each round every still-active user samples **one** of its
records uniformly, computes the logistic-loss gradient at the broadcast model, clips it to
norm ``C`` and adds N(0, σ²I) itself; the server averages the uploads and takes a gradient
step (spec 002 §2.2). There is no secure aggregation: the server sees every noisy upload, so
the privacy unit is one record inside one user's local dataset, under replace-one.

Two accountings are implemented and reported side by side.

**Paper** (``mode="paper"``): per-step budget by the advanced-composition split with the
estimated count ``T`` (:func:`advanced_composition_split`, δ' = ``delta_prime_fraction``·δ),
σ from the analytic Gaussian mechanism with sensitivity ``C`` (spec F6: the true sensitivity
is 2C), and the stopping rule "run while Theorem 1's δ at ε_total stays ≤ δ_total"
(:func:`theorem1_delta`, :func:`theorem1_max_rounds`). The stopping time is data independent,
so the paper's "adaptive" count is the precomputed k_max (spec claim 13).

**Corrected** (``mode="corrected"``): the same σ pipeline with sensitivity 2C; each round is the
event ``SampledWithoutReplacementEvent(GaussianEvent(σ, 2C), 1, m)`` under replace-one, and
rounds are admitted by :class:`ADDPFilter`, which refuses the round that would exceed
(ε_total, δ_total). Its bound is the smaller of two valid ones: RDP of sampling without
replacement (Wang, Balle & Kasiviswanathan 2019, Thm 9, by dpkit's
:class:`~dpkit.accounting.rdp.RdpAccountant` under replace-one; :func:`wor_rdp_epsilon`) and
Theorem 1 with the true sensitivity 2C. The ε reported for a run is that bound for the rounds
actually run.

Theorem 1 ("sampling composition", spec 002 §3) is valid only as the joint-convexity upper bound
δ(ε) ≤ Σᵢ Bin(i; k, p) δ_G(ε; √i H/σ) (it forgoes amplification in ε); see
:func:`theorem1_comparison` for the comparison with exact (PLD) and RDP accounting.

References
----------
.. [1] J. Cheng, W. Liu, X. Wang, X. Lu, "Adaptive Distributed Differential Privacy with SGD",
   AAAI 2020 workshop, Algorithm 1 and Theorem 1.
.. [2] B. Balle and Y.-X. Wang, ICML 2018, arXiv:1805.06530v2, Thm 8 (analytic Gaussian).
.. [3] C. Dwork and A. Roth, 2014, Thm 3.20 (advanced composition).
.. [4] Y.-X. Wang, B. Balle, S. Kasiviswanathan, "Subsampled Rényi Differential Privacy and
   Analytical Moments Accountant", AISTATS 2019, arXiv:1808.00087v2, Theorem 9.
.. [5] C. Canonne, G. Kamath, T. Steinke, "The Discrete Gaussian for DP", NeurIPS 2020,
   Prop. 12 (RDP → (ε, δ) conversion); Balle et al. AISTATS 2020, Thm 21.
.. [6] S. Kasiviswanathan et al. 2011; Balle, Barthe & Gaboardi, NeurIPS 2018, Thm 10
   (amplification ln(1 + p(e^ε − 1)), not pε).
"""

from __future__ import annotations

import dataclasses
import math
import time
import warnings
from typing import Any, Callable, Sequence

import numpy as np
from scipy import optimize, special, stats

from dpkit._validation import (
    check_integer,
    check_nonnegative,
    check_open_unit,
    check_positive,
    check_rng,
    check_unit_interval,
)
from dpkit.accounting.analytic_gaussian import gaussian_delta, gaussian_sigma
from dpkit.accounting.base import AccountingResult, PaperRuleWarning
from dpkit.accounting.events import (
    GaussianEvent,
    PoissonSampledEvent,
    SampledWithoutReplacementEvent,
    SelfComposedEvent,
)
from dpkit.accounting.neighbouring import NeighbouringRelation
from dpkit.accounting.pld import PLDAccountant
from dpkit.accounting.rdp import RdpAccountant

__all__ = [
    "advanced_composition_split",
    "paper_amplification",
    "amplification",
    "theorem1_delta",
    "theorem1_epsilon",
    "theorem1_max_rounds",
    "wor_rdp_epsilon",
    "ADDPFilter",
    "ADDPConfig",
    "addp_noise",
    "addp_round_event",
    "addp_epsilon",
    "theorem1_comparison",
    "k_max_table",
    "transcript",
    "run_addp",
    "train_addp",
]

# --------------------------------------------------------------------------- per-step budget


def _advanced_total(eps: float, k: int, delta_prime: float) -> float:
    return math.sqrt(2.0 * k * math.log(1.0 / delta_prime)) * eps + k * eps * math.expm1(eps)


def advanced_composition_split(epsilon: float, delta: float, k: int, delta_prime_fraction: float = 0.5) -> tuple[float, float, float]:
    """Per-step (ε_step, δ_step) whose k-fold advanced composition is (ε, δ)-DP (line 5 of Alg. 1).

    Solves ε = √(2k ln(1/δ'))·ε_step + k ε_step (e^{ε_step} − 1) with δ' = ``delta_prime_fraction``·δ
    and δ_step = (δ − δ')/k (Dwork & Roth 2014, Thm 3.20). The paper leaves the δ split open
    (spec F7(d)); the default halves it. The returned ε_step is rounded down so that the
    composition never exceeds ε.

    Returns
    -------
    (eps_step, delta_step, delta_prime)

    Examples
    --------
    >>> e, d, dp = advanced_composition_split(1.0, 1e-8, 10)
    >>> round(e, 5), d, dp
    (0.04984, 5e-10, 5e-09)
    """
    epsilon = check_positive("epsilon", epsilon)
    delta = check_open_unit("delta", delta)
    k = check_integer("k", k, minimum=1)
    frac = check_unit_interval("delta_prime_fraction", delta_prime_fraction, include_zero=False, include_one=False)
    delta_prime = frac * delta
    hi = epsilon
    while _advanced_total(hi, k, delta_prime) < epsilon:
        hi *= 2.0
    root = optimize.brentq(lambda e: _advanced_total(e, k, delta_prime) - epsilon, 0.0, hi, xtol=1e-300, rtol=1e-15)
    while _advanced_total(root, k, delta_prime) > epsilon:
        root = math.nextafter(root, 0.0)
    return root, (delta - delta_prime) / k, delta_prime


def paper_amplification(epsilon: float, delta: float, p: float) -> tuple[float, float]:
    """The paper's amplification rule (pε, pδ) — **not a valid bound** (spec F5); warns.

    The correct rule is :func:`amplification`; (pε, pδ) understates ε, e.g. p = 0.01, ε = 5 gives
    0.05 instead of 0.906.
    """
    epsilon = check_nonnegative("epsilon", epsilon)
    delta = check_unit_interval("delta", delta)
    p = check_unit_interval("p", p, include_zero=False)
    warnings.warn("(p*eps, p*delta) amplification of seed 002 understates epsilon; use amplification()",
                  PaperRuleWarning, stacklevel=2)
    return p * epsilon, p * delta


def amplification(epsilon: float, delta: float, p: float) -> tuple[float, float]:
    """Amplification by subsampling: (ln(1 + p(e^ε − 1)), pδ) (Balle, Barthe & Gaboardi 2018, Thm 10).

    >>> round(amplification(5.0, 0.0, 0.01)[0], 5)
    0.90589
    """
    epsilon = check_nonnegative("epsilon", epsilon)
    delta = check_unit_interval("delta", delta)
    p = check_unit_interval("p", p, include_zero=False)
    return math.log1p(p * math.expm1(epsilon)), p * delta


# --------------------------------------------------------------------------- Theorem 1


def _theorem1_log_weights(k: int, p: float) -> tuple[np.ndarray, np.ndarray, float, float]:
    """Window of i ∈ [1, k] carrying the Binomial mass, with bounds on the mass outside it."""
    mean = k * p
    sd = math.sqrt(k * p * (1.0 - p))
    lo = max(1, int(math.floor(mean - 12.0 * sd - 12.0)))
    hi = min(k, int(math.ceil(mean + 12.0 * sd + 12.0)))
    i = np.arange(lo, hi + 1)
    logw = stats.binom.logpmf(i, k, p)
    upper_tail = float(stats.binom.sf(hi, k, p))  # P(i > hi), each term's δ_G ≤ 1
    lower_mass = float(stats.binom.cdf(lo - 1, k, p) - stats.binom.pmf(0, k, p)) if lo > 1 else 0.0
    return i, logw, upper_tail, max(lower_mass, 0.0)


def theorem1_delta(epsilon: float, k: int, p: float, sensitivity: float, sigma: float) -> float:
    """Theorem 1 of seed 002 ("Gaussian sampling composition"), as an upper bound on δ(ε).

    δ ≤ Σ_{i=1}^{k} Bin(i; k, p) · δ_G(ε; √i·H/σ), where δ_G is the exact δ of one Gaussian
    mechanism with μ = √i H/σ (Balle & Wang 2018, Thm 8). The paper writes "=": the right-hand
    side is the δ of the pair (sampling pattern, outputs), i.e. a valid upper bound obtained by
    joint convexity of the hockey-stick divergence when (a) every step is a Gaussian with
    sensitivity ≤ H and noise σ, (b) the differing record is used at each step with probability
    p by a data-independent coin, (c) unused steps have identical conditional laws (spec 002 §3,
    "T1-correct"). It has no amplification in ε.

    Terms more than 12 standard deviations (+12) from kp are bounded by their Binomial mass
    times the largest δ_G they could have (so the result stays an upper bound).

    Examples
    --------
    >>> f"{theorem1_delta(1.0, 1, 0.01, 1.0, 1.0):.5e}"   # k = 1 gives p·δ_G(ε; H/σ)
    '1.26937e-03'
    >>> f"{theorem1_delta(1.0, 100, 0.01, 0.5, 1.0):.4g}"
    '0.01739'
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
    i, logw, upper_tail, lower_mass = _theorem1_log_weights(k, p)
    deltas = np.array([gaussian_delta(sigma, epsilon, sensitivity * math.sqrt(int(j))) for j in i])
    total = float(np.sum(np.exp(logw) * deltas)) + upper_tail + lower_mass * float(deltas[0])
    return min(1.0, total * (1.0 + 1e-12))


def theorem1_epsilon(delta: float, k: int, p: float, sensitivity: float, sigma: float) -> float:
    """The smallest ε (to relative 1e-7, rounded up) with :func:`theorem1_delta` ≤ ``delta``.

    Returns ``inf`` if no finite ε reaches ``delta`` (the Binomial mass at i ≥ 1 alone may
    exceed it only in the limit; δ_G → 0 as ε → ∞, so a finite ε always exists for δ > 0).
    """
    delta = check_open_unit("delta", delta)
    k = check_integer("k", k, minimum=1)

    def excess(eps: float) -> float:
        return theorem1_delta(eps, k, p, sensitivity, sigma) - delta

    if excess(0.0) <= 0.0:
        return 0.0
    hi = 1.0
    while excess(hi) > 0.0:
        hi *= 2.0
        if hi > 1e6:
            return math.inf
    lo = hi / 2.0 if hi > 1.0 else 0.0
    while hi - lo > 1e-7 * hi:
        mid = 0.5 * (lo + hi)
        if excess(mid) > 0.0:
            lo = mid
        else:
            hi = mid
    return hi


def theorem1_max_rounds(epsilon: float, delta: float, p: float, sensitivity: float, sigma: float, limit: int = 10**7) -> int:
    """k_max = max{k : Theorem-1 δ(ε; k) ≤ δ}, the paper's stopping time (spec 002 §2.2, claim 13).

    The stopping check is prospective (a user takes part in round k only if the bound with k
    rounds stays ≤ δ; spec F7(c)). Theorem 1's δ is increasing in k, so doubling then bisection.
    Returns ``limit`` if even ``limit`` rounds stay within δ.
    """
    epsilon = check_nonnegative("epsilon", epsilon)
    delta = check_open_unit("delta", delta)

    def ok(k: int) -> bool:
        return theorem1_delta(epsilon, k, p, sensitivity, sigma) <= delta

    if not ok(1):
        return 0
    lo, hi = 1, 2
    while ok(hi):
        lo, hi = hi, hi * 2
        if hi > limit:
            return limit if ok(limit) else _bisect(ok, lo, limit)
    return _bisect(ok, lo, hi)


def _bisect(ok: Callable[[int], bool], lo: int, hi: int) -> int:
    """Largest k in [lo, hi) with ok(k), given ok(lo) and not ok(hi)."""
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if ok(mid):
            lo = mid
        else:
            hi = mid
    return lo


# --------------------------------------------------------------------------- RDP (corrected accounting)


def wor_rdp_epsilon(event: SampledWithoutReplacementEvent, rounds: int, delta: float,
                    orders: Sequence[float] | None = None) -> AccountingResult:
    """ε(δ) of ``rounds`` copies of ``event`` by RDP under replace-one (an upper bound).

    Delegates to :class:`~dpkit.accounting.rdp.RdpAccountant` (``neighbouring="replace-one"``),
    whose sampling-without-replacement curve is Wang, Balle & Kasiviswanathan (2019), Thm 9
    (capped by the unsampled curve), converted by Canonne, Kamath & Steinke (2020), Prop. 12,
    over a continuous order range (``orders=None``) or exactly the given ``orders``.
    """
    accountant = RdpAccountant(NeighbouringRelation.REPLACE_ONE, orders=orders)
    return accountant.compose(event, check_integer("rounds", rounds, minimum=1)).get_epsilon(delta)


class ADDPFilter:
    """A privacy filter for A-DDP's rounds (identical, data-independent events).

    ``try_spend(event)`` admits a round only if, with it, the k rounds admitted so far still fit
    (ε, δ) by at least one valid bound for this mechanism: the RDP bound of
    :func:`addp_epsilon` or Theorem 1 with the true sensitivity (:func:`theorem1_delta` with
    H = 2C, valid as the joint-convexity bound of spec 002 §3). Otherwise it refuses and records
    nothing. Taking the better of two bounds is valid here because every round is the same
    event and the sequence does not depend on the data (a stopping time fixed in advance);
    for adaptively chosen events use the RDP filter of :mod:`dpkit.accounting.filters`.

    Parameters
    ----------
    epsilon, delta
        The total budget of one record.
    """

    def __init__(self, epsilon: float, delta: float):
        self.epsilon = check_positive("epsilon", epsilon)
        self.delta = check_open_unit("delta", delta)
        self.rounds = 0
        self._event: SampledWithoutReplacementEvent | None = None
        self._capacities: dict[tuple[SampledWithoutReplacementEvent, int], int] = {}
        self._known_fit: dict[SampledWithoutReplacementEvent, int] = {}

    def fits(self, event: SampledWithoutReplacementEvent, rounds: int) -> bool:
        """Whether ``rounds`` copies of ``event`` fit the budget."""
        if not (isinstance(event, SampledWithoutReplacementEvent) and isinstance(event.event, GaussianEvent)):
            raise TypeError(f"event must be a SampledWithoutReplacementEvent of a GaussianEvent, got {event!r}")
        g = event.event
        if theorem1_delta(self.epsilon, rounds, event.rate, g.sensitivity, g.sigma) <= self.delta:
            return True
        return wor_rdp_epsilon(event, rounds, self.delta).epsilon <= self.epsilon

    def capacity(self, event: SampledWithoutReplacementEvent, limit: int = 10**7) -> int:
        """The largest number of copies of ``event`` that fit, searched up to ``limit`` (both bounds are
        monotone in the count, so every count up to the capacity fits)."""
        key = (event, limit)
        if key not in self._capacities:
            self._capacities[key] = self._search(event, limit)
            self._known_fit[event] = max(self._known_fit.get(event, 0), self._capacities[key])
        return self._capacities[key]

    def _search(self, event: SampledWithoutReplacementEvent, limit: int) -> int:
        if not self.fits(event, 1):
            return 0
        lo, hi = 1, 2
        while self.fits(event, hi):
            lo, hi = hi, 2 * hi
            if hi > limit:
                return limit
        return _bisect(lambda k: self.fits(event, k), lo, hi)

    def try_spend(self, event: SampledWithoutReplacementEvent) -> bool:
        """Admit ``event`` if the budget allows one more round (then record it); return whether it did."""
        if self._event is not None and event != self._event:
            raise ValueError("ADDPFilter only composes identical rounds; use dpkit.accounting.filters for others")
        k = self.rounds + 1
        if k > self._known_fit.get(event, 0):
            if not self.fits(event, k):
                return False
            self._known_fit[event] = k
        self._event = event
        self.rounds = k
        return True


# --------------------------------------------------------------------------- configuration and accounting


@dataclasses.dataclass(frozen=True)
class ADDPConfig:
    """A-DDP's privacy parameters for one run, and how they were obtained.

    Attributes
    ----------
    mode
        ``"paper"`` (sensitivity C, Theorem-1 stopping) or ``"corrected"`` (2C, filter).
    epsilon, delta
        The total budget (ε_total, δ_total).
    estimated_rounds
        The paper's estimated T used for the advanced-composition split.
    eps_step, delta_step, delta_prime
        Per-step budget from :func:`advanced_composition_split`.
    sensitivity
        The L2 sensitivity the noise is calibrated to (C or 2C).
    sigma
        Per-user noise standard deviation (analytic Gaussian mechanism).
    records_per_user
        m; each record is sampled in a round with probability p = 1/m.
    max_rounds
        Rounds the stopping rule allows (k_max for the paper; the filter's count for corrected).
    """

    mode: str
    epsilon: float
    delta: float
    estimated_rounds: int
    eps_step: float
    delta_step: float
    delta_prime: float
    clip: float
    sensitivity: float
    sigma: float
    records_per_user: int
    max_rounds: int

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def addp_noise(epsilon: float, delta: float, estimated_rounds: int, clip: float, *, mode: str = "corrected",
               delta_prime_fraction: float = 0.5) -> tuple[float, float, float, float, float]:
    """σ of A-DDP: advanced-composition split of (ε, δ) over T, then the analytic Gaussian σ.

    Sensitivity C for ``mode="paper"``, 2C (replace-one, one sampled record) for ``"corrected"``.

    Returns
    -------
    (sigma, sensitivity, eps_step, delta_step, delta_prime)

    Examples
    --------
    >>> round(addp_noise(1.0, 1e-8, 10, 3.0, mode="paper")[0], 2)    # spec 002 §2.2 table: 301.90
    301.9
    """
    clip = check_positive("clip", clip)
    if mode not in ("paper", "corrected"):
        raise ValueError(f"mode must be 'paper' or 'corrected', got mode={mode!r}")
    eps_step, delta_step, delta_prime = advanced_composition_split(epsilon, delta, estimated_rounds, delta_prime_fraction)
    sensitivity = clip if mode == "paper" else 2.0 * clip
    return float(gaussian_sigma(eps_step, delta_step, sensitivity)), sensitivity, eps_step, delta_step, delta_prime


def addp_round_event(sigma: float, clip: float, records_per_user: int) -> SampledWithoutReplacementEvent:
    """The corrected event of one round for one record: one-of-m sampling, then Gaussian with Δ = 2C."""
    return SampledWithoutReplacementEvent(GaussianEvent(sigma, 2.0 * clip), 1, records_per_user)


def addp_epsilon(sigma: float, clip: float, records_per_user: int, rounds: int, delta: float,
                 orders: Sequence[float] | None = None) -> tuple[float, str]:
    """Corrected ε(δ) of ``rounds`` A-DDP rounds for one record (replace-one, Δ = 2C).

    The smaller of two valid upper bounds: RDP of sampling without replacement (Wang, Balle &
    Kasiviswanathan 2019, Thm 9, by :func:`wor_rdp_epsilon`; ``orders=None`` searches the order
    continuously) and Theorem 1 of the paper with the true sensitivity 2C
    (:func:`theorem1_epsilon`; the general WBK bound is loose at small ε, Theorem 1 at large ε).
    Returns (ε, method).
    """
    rounds = check_integer("rounds", rounds, minimum=0)
    if rounds == 0:
        return 0.0, "no rounds"
    q = 1.0 / check_integer("records_per_user", records_per_user, minimum=1)
    sigma = check_positive("sigma", sigma)
    clip = check_positive("clip", clip)
    rdp = wor_rdp_epsilon(addp_round_event(sigma, clip, records_per_user), rounds, delta, orders)
    eps_t1 = theorem1_epsilon(delta, rounds, q, 2.0 * clip, sigma)
    if eps_t1 < rdp.epsilon:
        return eps_t1, "Theorem 1 of seed 002 with sensitivity 2C (joint-convexity bound)"
    return rdp.epsilon, f"RDP, sampling without replacement (Wang et al. 2019, Thm 9), order {rdp.order:g}"


# --------------------------------------------------------------------------- comparison tables


def theorem1_comparison(settings: Sequence[tuple[float, float, int]], delta: float = 1e-5,
                        pld: bool = True) -> list[dict[str, Any]]:
    """Theorem 1's ε against Poisson-subsampled RDP and PLD at the same δ (spec 002 §3 table).

    Parameters
    ----------
    settings
        ``(p, sigma_over_H, k)`` triples.
    delta
        Target δ.
    pld
        Also compute the PLD column (slower).

    Returns
    -------
    One dict per setting: ``p, sigma_over_H, k, epsilon_theorem1, epsilon_rdp, epsilon_pld, ratio``
    (ratio = Theorem 1 / PLD, or / RDP with ``pld=False``). RDP (:class:`~dpkit.accounting.rdp.RdpAccountant`)
    and PLD (:class:`~dpkit.accounting.pld.PLDAccountant`, its upper bound) are for Poisson
    sampling under add/remove, the model the spec's table uses.
    """
    rows = []
    for p, nm, k in settings:
        eps_t1 = theorem1_epsilon(delta, int(k), float(p), 1.0, float(nm))
        event = PoissonSampledEvent(GaussianEvent(float(nm), 1.0), float(p))
        eps_rdp = RdpAccountant().compose(event, int(k)).get_epsilon(delta).epsilon
        eps_pld = PLDAccountant().compose(event, int(k)).get_epsilon(delta).epsilon if pld else None
        ref = eps_pld if eps_pld else eps_rdp
        rows.append({"p": p, "sigma_over_H": nm, "k": int(k), "epsilon_theorem1": eps_t1, "epsilon_rdp": eps_rdp,
                     "epsilon_pld": eps_pld, "ratio": eps_t1 / ref if ref else math.inf})
    return rows


def k_max_table(epsilons: Sequence[float] = (0.1, 0.5, 1.0, 2.0, 5.0), delta: float = 1e-8, estimated_rounds: int = 10,
                clip: float = 3.0, records_per_user: int = 100) -> list[dict[str, Any]]:
    """The rounds A-DDP's stopping rule allows (spec 002 §2.2 table): k_max with H = C and with H = 2C
    at the paper's σ (Δ = C), plus the rounds the corrected pipeline admits (Δ = 2C, RDP filter)."""
    rows = []
    p = 1.0 / records_per_user
    for eps in epsilons:
        sigma, _, eps_step, _, _ = addp_noise(eps, delta, estimated_rounds, clip, mode="paper")
        sigma_c = addp_noise(eps, delta, estimated_rounds, clip, mode="corrected")[0]
        rows.append({
            "epsilon": eps, "eps_step": eps_step, "sigma": sigma,
            "k_max_H_C": theorem1_max_rounds(eps, delta, p, clip, sigma),
            "k_max_H_2C": theorem1_max_rounds(eps, delta, p, 2 * clip, sigma),
            "sigma_corrected": sigma_c,
            "rounds_corrected": corrected_rounds(eps, delta, sigma_c, clip, records_per_user),
        })
    return rows


def corrected_rounds(epsilon: float, delta: float, sigma: float, clip: float, records_per_user: int,
                     limit: int = 10**7) -> int:
    """The number of rounds :class:`ADDPFilter` admits at (ε, δ) (the largest k that fits)."""
    return ADDPFilter(epsilon, delta).capacity(addp_round_event(sigma, clip, records_per_user), limit)


# --------------------------------------------------------------------------- the algorithm


def _clipped_gradients(w: np.ndarray, X: np.ndarray, y: np.ndarray, clip: float) -> np.ndarray:
    """Per-example logistic gradients −y σ(−y wᵀx) x, clipped to norm ≤ C (line 13)."""
    margin = y * (X @ w)
    g = (-y * special.expit(-margin))[..., None] * X
    norm = np.linalg.norm(g, axis=-1, keepdims=True)
    return g / np.maximum(1.0, norm / clip)


def transcript(X: np.ndarray, y: np.ndarray, n: int, rng: np.random.Generator | int | None = 0, *,
               sigma: float, clip: float = 3.0, w: np.ndarray | None = None, rounds: int = 1) -> np.ndarray:
    """What the server sees from one user: its ``rounds`` noisy uploads at a fixed model ``w``, n runs.

    Each upload is clip(∇ℓ(w, x_J)) + N(0, σ²I) with J uniform over the user's m records
    (lines 11–14 of Alg. 1). Vectorised over runs.

    Parameters
    ----------
    X, y
        The user's records ``(m, d)`` and labels ``(m,)`` in {−1, +1}.
    n
        Number of independent runs.
    sigma
        Noise standard deviation (e.g. ``addp_noise(...)[0]``).
    w
        The broadcast model (zeros by default).

    Returns
    -------
    Array of shape ``(n, rounds, d)``.
    """
    X = np.asarray(X, float)
    y = np.asarray(y, float)
    if X.ndim != 2 or y.shape != (X.shape[0],):
        raise ValueError(f"X must be (m, d) and y (m,), got X.shape={X.shape}, y.shape={y.shape}")
    n = check_integer("n", n, minimum=1)
    rounds = check_integer("rounds", rounds, minimum=1)
    sigma = check_positive("sigma", sigma)
    clip = check_positive("clip", clip)
    gen = check_rng(rng)
    w = np.zeros(X.shape[1]) if w is None else np.asarray(w, float)
    grads = _clipped_gradients(w, X, y, clip)  # (m, d): w is fixed, so per-record gradients are fixed
    J = gen.integers(0, X.shape[0], size=(n, rounds))
    return grads[J] + sigma * gen.standard_normal((n, rounds, X.shape[1]))


def run_addp(
    data: Any,
    *,
    epsilon: float,
    delta: float,
    mode: str = "corrected",
    estimated_rounds: int = 10,
    clip: float = 3.0,
    records_per_user: int = 100,
    learning_rate: float = 0.05,
    max_rounds: int | None = None,
    average: bool = True,
    delta_prime_fraction: float = 0.5,
    rng: np.random.Generator | int | None = 0,
    progress: Callable[[int, int], None] | None = None,
) -> dict[str, Any]:
    """Run A-DDP (Algorithm 1 of seed 002) on a :class:`~dpkit.algorithms.data.Dataset`.

    The records are split into users of ``records_per_user`` records (the remainder is dropped).
    Because the server only uses the average, the users' independent noises are drawn as their
    sum N(0, nσ²I) (identical in distribution; :func:`transcript` gives the per-user uploads).

    Parameters
    ----------
    data
        Training data (``X`` with ‖x‖ ≤ 1 rows, ``y`` in {−1, +1}).
    epsilon, delta
        Total budget (ε_total, δ_total).
    mode
        ``"paper"``: sensitivity C, stop at Theorem 1's k_max. ``"corrected"``: sensitivity 2C,
        rounds admitted by an RDP filter (replace-one, sampling without replacement).
    estimated_rounds
        The paper's T for the advanced-composition split (10 in its experiments).
    clip
        Clipping norm C (3 in the paper).
    learning_rate
        Step size α (not given by the paper).
    max_rounds
        Cap on the rounds run (the paper's rule allows ~10⁴ rounds); ``None`` for no cap. Stopping
        early only spends less. With a cap, ``rounds_allowed`` is only searched up to the cap.
    average
        Return the average of the iterates (post-processing; not in the paper) instead of the last.

    Returns
    -------
    dict with ``w``, ``history`` (round, loss), ``config`` (:class:`ADDPConfig`), ``rounds_run``,
    ``rounds_allowed``, ``events`` (per-record ledger), ``epsilon_paper`` (the paper's claim:
    ε_total at δ_total under its rule), ``epsilon_corrected`` (RDP upper bound for the rounds run,
    Δ = 2C), ``seconds``.
    """
    start = time.perf_counter()
    epsilon = check_positive("epsilon", epsilon)
    delta = check_open_unit("delta", delta)
    m = check_integer("records_per_user", records_per_user, minimum=1)
    learning_rate = check_positive("learning_rate", learning_rate)
    if max_rounds is not None:
        max_rounds = check_integer("max_rounds", max_rounds, minimum=1)
    gen = check_rng(rng)
    X = np.asarray(data.X, float)
    y = np.asarray(data.y, float)
    users = X.shape[0] // m
    if users < 1:
        raise ValueError(f"records_per_user must be <= number of rows {X.shape[0]}, got records_per_user={m}")
    order = gen.permutation(X.shape[0])[: users * m]
    Xu = X[order].reshape(users, m, X.shape[1])
    yu = y[order].reshape(users, m)
    sigma, sensitivity, eps_step, delta_step, delta_prime = addp_noise(
        epsilon, delta, estimated_rounds, clip, mode=mode, delta_prime_fraction=delta_prime_fraction)
    search_limit = 10**7 if max_rounds is None else max_rounds  # rounds allowed are searched up to the cap
    if mode == "paper":
        allowed = theorem1_max_rounds(epsilon, delta, 1.0 / m, clip, sigma, limit=search_limit)
        admit = None
    else:
        admit = ADDPFilter(epsilon, delta)
        allowed = admit.capacity(addp_round_event(sigma, clip, m), limit=search_limit)
    target = allowed
    event = addp_round_event(sigma, clip, m)
    w = np.zeros(X.shape[1])
    w_sum = np.zeros_like(w)
    history: list[dict[str, float]] = []
    rows = np.arange(users)
    rounds_run = 0
    for t in range(target):
        if admit is not None and not admit.try_spend(event):
            break
        J = gen.integers(0, m, size=users)
        grads = _clipped_gradients(w, Xu[rows, J], yu[rows, J], clip)
        noise = sigma * math.sqrt(users) * gen.standard_normal(X.shape[1])
        w = w - learning_rate * (grads.sum(axis=0) + noise) / users
        w_sum += w
        rounds_run += 1
        if progress is not None:
            progress(rounds_run, target)
        if rounds_run % max(1, target // 20) == 0 or rounds_run == target:
            model = w_sum / rounds_run if average else w
            history.append({"round": rounds_run, "loss": float(np.mean(np.logaddexp(0.0, -y * (X @ model)))),
                            "model": model.copy()})
    model = w_sum / rounds_run if (average and rounds_run) else w
    config = ADDPConfig(mode, epsilon, delta, int(estimated_rounds), eps_step, delta_step, delta_prime, float(clip),
                        sensitivity, sigma, m, int(allowed))
    eps_corr, method = addp_epsilon(sigma, clip, m, rounds_run, delta)
    return {
        "w": model,
        "history": history,
        "config": config,
        "users": users,
        "rounds_run": rounds_run,
        "rounds_allowed": int(allowed),
        "events": [(SelfComposedEvent(event, rounds_run) if rounds_run else None)],
        "epsilon_paper": epsilon,
        "epsilon_corrected": eps_corr,
        "corrected_method": method,
        "seconds": time.perf_counter() - start,
    }


def train_addp(data: Any, *, epsilon: float, delta: float, test: Any = None, **kwargs: Any) -> Any:
    """:func:`run_addp` wrapped as a :class:`~dpkit.algorithms.result.TrainingResult`.

    ``guarantees["paper"]``: (ε_total, δ_total) under the paper's rule in ``mode="paper"``
    (sensitivity C and Theorem 1; not a valid bound, spec F6), or the paper's rule applied to the
    rounds run in ``mode="corrected"``; ``guarantees["corrected"]``: the valid ε (sensitivity 2C,
    replace-one) of the rounds actually run, at δ_total. ``config["rounds_run"]`` is the number of
    rounds actually run (the paper never reports it).
    """
    from dpkit.algorithms.evaluation import accuracy
    from dpkit.algorithms.result import TrainingResult

    out = run_addp(data, epsilon=epsilon, delta=delta, **kwargs)
    cfg: ADDPConfig = out["config"]
    relation = NeighbouringRelation.REPLACE_ONE
    rounds = out["rounds_run"]
    p = 1.0 / cfg.records_per_user
    paper_delta = theorem1_delta(cfg.epsilon, rounds, p, cfg.clip, cfg.sigma)
    paper = AccountingResult(
        epsilon=cfg.epsilon, delta=max(paper_delta, 0.0), accountant="seed 002 Theorem 1", neighbouring=relation,
        method="advanced-composition split over T, AGM with sensitivity C, Theorem 1 stopping rule",
        is_upper_bound=False,
        notes=("sensitivity C understates the replace-one sensitivity 2C (spec 002 F6)",
               f"Theorem-1 delta at eps_total for the {rounds} rounds run, with H = C"))
    corrected = AccountingResult(
        epsilon=out["epsilon_corrected"], delta=cfg.delta, accountant="rdp / theorem-1 (2C)", neighbouring=relation,
        method=out["corrected_method"],
        notes=(f"{rounds} rounds run of {out['rounds_allowed']} allowed by the {cfg.mode} stopping rule",
               "one record of one user's local data; the server sees each noisy upload (local model)"))
    history = {"iteration": [h["round"] for h in out["history"]], "empirical_risk": [h["loss"] for h in out["history"]],
               "test_accuracy": [accuracy(h["model"], test) if test is not None else float("nan") for h in out["history"]]}
    ledger_entry = ((out["events"][0], 1),) if rounds else ()
    ledger = tuple(ledger_entry for _ in range(out["users"]))
    w = out["w"]
    acc = accuracy(w, test) if test is not None else None
    config = {**cfg.to_dict(), "iterations": rounds, "rounds_run": rounds, "rounds_allowed": out["rounds_allowed"],
              "users": out["users"]}
    return TrainingResult("a-ddp", w[None, :], w, history, ledger, {"paper": paper, "corrected": corrected}, acc,
                          (acc,) if acc is not None else (), out["seconds"], config,
                          (f"rounds run: {rounds}", "noise of the users drawn as its sum (same distribution)"))


def registry_runner(parts, test, graph, *, epsilon, delta, iterations, rng, progress, accounting="corrected",
                    **options):
    """``dpkit train --algorithm a-ddp``: the agents' data are pooled and re-split into users of
    ``records_per_user`` records; ``iterations`` is the paper's estimated T; ``accounting`` selects
    ``mode`` (``"paper"`` or ``"corrected"``); options clip, learning_rate, records_per_user, max_rounds."""
    from dpkit.algorithms.data import Dataset

    pooled = Dataset(np.concatenate([p.X for p in parts]), np.concatenate([p.y for p in parts]), "pooled")
    return train_addp(pooled, epsilon=epsilon, delta=delta, test=test, mode=accounting, estimated_rounds=iterations,
                      rng=rng, progress=progress, **options)
