"""Noise of the heterogeneous-privacy ADMM of Wang et al. (2020): sensitivities, schedules, calibration.

Two guarantees, against two observers (a record is a user's (x, y); replace-one within one
server's data):

* **The collecting server** sees the record's features in the clear and its label through binary
  randomized response at ε_label (Wang et al. 2020, Prop. 1): ε_label-LDP for the label, nothing
  for the features. One :class:`~dpkit.mechanisms.randomized_response.BinaryRandomizedResponse`
  release per server, recorded in the algorithm's *label ledger*.
* **Everyone else** sees the published values only — the Gaussian releases below, recorded in the
  algorithm's main ledger and calibrated to the record-level budget (ε, δ).

Published values:

* **Label correction (objective perturbation).** The unbiased loss of Wang et al. (eq. 19) is the
  logistic loss of the randomized label minus a linear term, ℓ̃(u) = ℓ(u) − K·u with
  K = 1/(e^{ε_label} − 1) (:class:`~dpkit.algorithms.hetero_admm.unbiased_loss.UnbiasedLogistic`), so server
  i's modified objective is its logistic objective on the randomized labels plus the fixed linear
  term b_iᵀθ, b_i = −K·mean_j y′_j x_j. The corrected variant perturbs b_i once with Gaussian noise
  — Wang et al.'s objective perturbation η_i of eq. (14), drawn from a Gaussian instead of an
  unspecified bounded law — and charges it as a release: replacing one record's (x, y′) moves b_i
  by at most 2K/m_i (:func:`correction_sensitivity`).
* **Rounds.** In round t server i publishes w̃_i(t) = w_i(t) + N(0, σ_i²I), where w_i(t) minimises
  the mean logistic loss over its m_i randomized records + the already-released b̃_i + a
  data-independent μ_i-strongly convex part (regulariser r_i·½‖θ‖², ADMM proximal term
  2β|𝓝_i|·½‖θ − c‖², dual term) fixed by the *published* history. Replacing one record's (x, y′)
  changes the gradient by at most 2c/m_i (c = sup|ℓ′| = 1 with ‖x‖ ≤ 1), hence the exact
  minimiser by 2c/(m_i μ_i) (Chaudhuri, Monteleoni & Sarwate 2011, Cor. 8); the solver stops at
  ‖∇‖ ≤ tol, i.e. within tol/μ_i of it, so

      Δ_i = 2 (c/m_i + tol)/μ_i            (:func:`round_sensitivity`).

  Without the split, the modified loss's gradient bound c̃ = 1 + K = 1/(1 − e^{−ε_label}) would
  enter every round's Δ_i (Wang et al.'s Prop. 2(ii) bound coth(ε_label/2) is larger still); with
  it, K is paid once. Conditionally on the published history each round is a Gaussian mechanism
  of sensitivity Δ_i, so all releases compose adaptively (Dong, Roth & Su 2022, Cor. 3.3); the
  other servers' releases are post-processing of server i's (McSherry 2009, Thm 4 across servers).

**Why the label randomization is not charged to the published values.** Write the randomized
labels as y′_j = s_j·y_j with independent signs s_j (P(s_j = −1) = 1/(1 + e^{ε_label})) that do
not depend on the data. For every fixed s, neighbouring D, D′ give inputs (X, y′) that differ in
one record's (x, y′), which the sensitivities above cover; the transcript's law is the average over
s of these Gaussian compositions, with the same weights under D and D′. The hockey-stick
divergence, like every f-divergence, is jointly convex, so every (ε, δ(ε)) of the Gaussian
composition holds for the average.
Composing RR(ε_label) on top, as if the randomized labels were published, double-counts the
label: at ε = 1, δ = 1e-5 and T = 15 it doubles the noise multiplier (z = 17.2 alone, 38.4 with
RR(0.5) composed).

The published transcript of one server is ``compose(Gaussian(r·z), repeat(Gaussian(z), T))`` in
units of each release's sensitivity (:func:`run_event`): that is what the main ledger records and
what the corrected variant calibrates (:func:`calibrate_multiplier`).

>>> from dpkit.accounting.tightest import TightestAccountant
>>> r = correction_ratio(1.0, rounds=20)
>>> z = calibrate_multiplier(rounds=20, ratio=r, budget=Budget(1.0, 1e-5)).parameter
>>> eps = TightestAccountant("replace-one").compose(run_event(multiplier=z, ratio=r, rounds=20)).get_epsilon(1e-5).epsilon
>>> 0.99 <= eps <= 1.0
True
"""

from __future__ import annotations

import math

import numpy as np

from dpkit._validation import check_integer, check_nonnegative, check_positive, check_unit_interval
from dpkit.accounting.calibration import CalibrationResult
from dpkit.accounting.events import PrivacyEvent, compose, repeat
from dpkit.algorithms.substrate.budget import Budget, calibrate_noise
from dpkit.mechanisms.float_sensitivity import DIMENSION_LIMIT, mean_sensitivity
from dpkit.mechanisms.gaussian import GaussianMechanism

__all__ = [
    "LABEL_SHARE", "label_share", "round_sensitivity", "correction_sensitivity", "averaged_rounds",
    "correction_ratio", "run_event", "calibrate_multiplier", "decaying_sigmas",
]

LABEL_SHARE = 1.0
"""ε_label as a fraction of the record-level ε (see :func:`label_share`)."""


def label_share(epsilon: float, share: float = LABEL_SHARE) -> float:
    """ε_label = ``share``·ε, ``share`` ∈ (0, 1]: the label's ε against the collecting server.

    The label randomization is not charged to the published values (module docstring), so ε_label
    is a separate guarantee: the default gives the label the same ε against the server as the
    record has against everyone else. A smaller share protects the label more from the server and
    costs accuracy (more flipped labels, larger K).
    """
    epsilon = check_positive("epsilon", epsilon)
    share = check_unit_interval("share", share, include_zero=False)
    return share * epsilon


def round_sensitivity(c1: float, m: int, mu: float, tol: float) -> float:
    """Δ_i = 2(c/m_i + tol)/μ_i: L2 sensitivity of one published local solution (module docstring).

    >>> round_sensitivity(1.0, 100, 0.5, 0.0)
    0.04
    """
    c1 = check_positive("c1", c1)
    m = check_integer("m", m, minimum=1)
    mu = check_positive("mu", mu)
    tol = check_nonnegative("tol", tol)
    return 2.0 * (c1 / m + tol) / mu


def correction_sensitivity(label_epsilon: float, m: int) -> float:
    """2K/m_i with K = 1/(e^{ε_label} − 1): L2 sensitivity of b_i = −K·mean_j y′_j x_j (‖x‖ ≤ 1), as computed.

    The released b_i is ``-K * np.mean(y[:, None] * X, axis=0)`` in doubles (K the double
    :attr:`~dpkit.algorithms.hetero_admm.unbiased_loss.UnbiasedLogistic.shift`): a sum of m_i
    exact terms y′_j x_j in any order, a division by m_i and a product by K, which adds
    K·γ_{m_i+1} on each side (Higham 2002, eq. (4.4); Casacuberta et al. 2022), so the value is
    :func:`~dpkit.mechanisms.float_sensitivity.mean_sensitivity` (m_i, 1, scale=K), rounded up
    (its underflow allowance taken for d ≤ 2³¹ columns).

    >>> round(correction_sensitivity(math.log(2.0), 10), 12)     # K = 1
    0.2
    """
    label_epsilon = check_positive("label_epsilon", label_epsilon)
    m = check_integer("m", m, minimum=1)
    return mean_sensitivity(m, 1.0, scale=1.0 / math.expm1(label_epsilon), dimension=DIMENSION_LIMIT)


def averaged_rounds(rounds: int) -> int:
    """How many of the last published iterates form the output: T − ⌊T/2⌋ (rounds t > T/2)."""
    rounds = check_integer("rounds", rounds, minimum=1)
    return rounds - rounds // 2


def correction_ratio(label_epsilon: float, *, rounds: int) -> float:
    """r = σ_b/Δ_b ÷ σ/Δ: the correction's noise multiplier relative to the rounds' (data-independent).

    In gradient units (per coordinate, per server) the rounds add noise of variance (2z/m_i)² per
    round, averaged over the T_w = :func:`averaged_rounds` output rounds, and the correction adds
    (2Krz/m_i)² once. Under Gaussian composition the privacy cost is ∝ T + 1/r² (in units of
    1/z²), so the total variance ∝ (T + 1/r²)(1/T_w + K²r²), which is minimised at
    r = (K²·T·T_w)^{−1/4}.

    >>> round(correction_ratio(math.log(2.0), rounds=4), 6)        # K = 1, T = 4, T_w = 2
    0.594604
    """
    label_epsilon = check_positive("label_epsilon", label_epsilon)
    rounds = check_integer("rounds", rounds, minimum=1)
    K = 1.0 / math.expm1(label_epsilon)
    return (K * K * rounds * averaged_rounds(rounds)) ** -0.25


def run_event(*, multiplier: float, ratio: float, rounds: int) -> PrivacyEvent:
    """One server's published transcript in units of each release's sensitivity: the correction
    at σ = ``ratio``·``multiplier``, then ``rounds`` rounds at σ = ``multiplier``. Built from the
    mechanisms' own events (the ledger's events, rescaled). The label randomization is not part of
    it: its output is not published, and the sensitivities cover any change of (x, y′) (module
    docstring)."""
    rounds = check_integer("rounds", rounds, minimum=1)
    multiplier = check_positive("multiplier", multiplier)
    ratio = check_positive("ratio", ratio)
    correction = GaussianMechanism(sigma=ratio * multiplier, sensitivity=1.0).event
    gaussian = GaussianMechanism(sigma=multiplier, sensitivity=1.0).event
    return compose(correction, repeat(gaussian, rounds))


def calibrate_multiplier(*, rounds: int, ratio: float, budget: Budget) -> CalibrationResult:
    """The smallest multiplier z = σ_i/Δ_i for which :func:`run_event` meets ``budget``.

    The event depends on the noise only through z and r, so one z serves every server (each gets
    σ_i = zΔ_i, σ_b,i = rzΔ_b,i and exactly the budget). Calibrated on the whole planned run by the
    tightest accountant (:func:`~dpkit.algorithms.substrate.budget.calibrate_noise`).
    """
    return calibrate_noise(lambda z: run_event(multiplier=z, ratio=ratio, rounds=rounds), budget,
                           lower=1.0, upper=100.0)


def decaying_sigmas(V: float, rho: float, rounds: int) -> np.ndarray:
    """σ_t = ρ^{(t−1)/2} V for t = 1..T: Wang et al. (2020, eq. 16)'s θ_i(t) ~ N(0, ρ^{t−1}V²I).

    >>> decaying_sigmas(1.0, 0.25, 3).tolist()
    [1.0, 0.5, 0.25]
    """
    V = check_positive("V", V)
    rho = check_unit_interval("rho", rho, include_zero=False, include_one=False)
    rounds = check_integer("rounds", rounds, minimum=1)
    return V * rho ** (np.arange(rounds) / 2.0)
