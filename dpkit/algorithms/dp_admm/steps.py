"""DP-ADMM's per-round pieces: step sizes, the linearised local step, its sensitivity and its noise.

Huang, Hu, Guo, Chan-Tin & Gong, "DP-ADMM: ADMM-based distributed learning with differential
privacy", IEEE TIFS 14(6), 2019 (Algorithm 3). Agent i's round k, with F_i^k the star-ADMM
subproblem f_i(w) − ⟨γ_i^{k−1}, w − w^{k−1}⟩ + (ρ/2)||w − w^{k−1}||² of eq. (6):

* eq. (12a), the minimiser of the linearised augmented Lagrangian (8) taken at the agent's last
  *released* iterate w̃_i^{k−1}, is one gradient step on F_i^k:

      w_i^k = w̃_i^{k−1} − ∇F_i^k(w̃_i^{k−1}) / (ρ + 1/η_i^k)          (:func:`linearised_step`)

* Lemma 1 (eq. 11): replacing one of the m_i records moves w_i^k by at most
  Δ_i^k = 2c1/(m_i(ρ + 1/η_i^k)) (:func:`step_sensitivity`), whatever the (public) inputs;
* eq. (10b): w̃_i^k = w_i^k + N(0, σ_{i,k}² I), drawn by a
  :class:`~dpkit.mechanisms.gaussian.GaussianMechanism` with σ_{i,k} = z·Δ_i^k
  (:func:`step_mechanisms`). Theorem 1 (eq. 14) is z = √(2 ln(1.25/δ))/ε for a per-iteration
  (ε, δ) (:func:`theorem1_multiplier`); the noise multiplier z is the same in every round, so the
  "time-varying noise" of the paper is one Gaussian mechanism repeated.

Step-size rules: eq. (29) (Theorem 3, non-smooth) and eq. (34) (Theorem 4, smooth), both written
with the per-iteration ε of Theorem 1; :func:`iteration_epsilon` maps a noise multiplier back to
that ε.

>>> import numpy as np
>>> round(float(step_size_eq34(1, m=400, epsilon=0.1, delta=1e-5, dp=104, c_w=89.0, lam=1e-6)), 5)
3.45715
>>> round(float(step_sensitivity(400, 0.1, 3.45715278)), 6)
0.012845
"""

from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np

from dpkit._validation import check_open_unit, check_positive
from dpkit.accounting.events import GaussianEvent, PrivacyEvent, compose
from dpkit.algorithms.substrate.admm_loops import check_parts
from dpkit.algorithms.substrate.budget import Budget
from dpkit.algorithms.substrate.data import Dataset
from dpkit.algorithms.substrate.solvers import AgentObjectives
from dpkit.mechanisms.gaussian import GaussianMechanism
from dpkit.mechanisms.ledger import PrivacyLedger

__all__ = [
    "check_star_run",
    "step_size_eq29", "step_size_eq34", "theorem1_multiplier", "iteration_epsilon", "step_sensitivity",
    "linearised_step", "step_mechanisms", "release_step", "run_event",
]


def step_size_eq29(k, *, m: float, epsilon: float, delta: float, dp: int, c_w: float, lam: float,
                   c1: float = 1.0, c2: float | None = None) -> np.ndarray:
    """η_i^k of Huang et al. 2019 eq. (29) (Theorem 3, non-smooth):
    c_w/√(2k) · ((c1 + λc2/n)² + 8dp c1² ln(1.25/δ)/(m_i²ε²))^{−1/2}.

    ``lam`` is λ/n; ``c2`` defaults to √(dp) (the bound on ||sgn(w)||). ``k`` may be an array.
    """
    c2 = math.sqrt(dp) if c2 is None else c2
    g2 = (c1 + lam * c2) ** 2 + 8.0 * dp * c1**2 * math.log(1.25 / delta) / (m**2 * epsilon**2)
    return c_w / np.sqrt(2.0 * np.asarray(k, float)) / math.sqrt(g2)


def step_size_eq34(k, *, m: float, epsilon: float, delta: float, dp: int, c_w: float, lam: float,
                   c1: float = 1.0, c3: float = 0.25, c4: float = 1.0) -> np.ndarray:
    """η_i^k of Huang et al. 2019 eq. (34) (Theorem 4, smooth):
    (c3 + λc4/n + 4c1√(dp·k·ln(1.25/δ))/(m_i ε c_w))^{−1}. ``lam`` is λ/n; ``k`` may be an array."""
    k = np.asarray(k, float)
    return 1.0 / (c3 + lam * c4 + 4.0 * c1 * np.sqrt(dp * k * math.log(1.25 / delta)) / (m * epsilon * c_w))


def theorem1_multiplier(epsilon: float, delta: float) -> float:
    """z = σ/Δ = √(2 ln(1.25/δ))/ε of Huang et al. 2019 Theorem 1 (eq. 14; the classical Gaussian
    mechanism of Dwork & Roth 2014, Thm A.1, valid per iteration for ε ≤ 1, δ ≤ 0.01).

    >>> round(theorem1_multiplier(0.1, 1e-5), 2)
    48.45
    """
    epsilon = check_positive("epsilon", epsilon)
    delta = check_open_unit("delta", delta)
    return math.sqrt(2.0 * math.log(1.25 / delta)) / epsilon


def iteration_epsilon(noise_multiplier: float, delta: float) -> float:
    """The per-iteration ε that Theorem 1 assigns to noise multiplier z: √(2 ln(1.25/δ))/z (the ε
    in the step-size rules (29) and (34)); the inverse of :func:`theorem1_multiplier`."""
    noise_multiplier = check_positive("noise_multiplier", noise_multiplier)
    return math.sqrt(2.0 * math.log(1.25 / check_open_unit("delta", delta))) / noise_multiplier


def step_sensitivity(m, rho: float, eta, c1: float = 1.0):
    """Δ_i^k = 2c1/(m_i(ρ + 1/η_i^k)), Huang et al. 2019 Lemma 1 (eq. 11): the L2 change of
    :func:`linearised_step` when one of agent i's m_i records is replaced (per-example gradient
    norm ≤ c1). Arrays broadcast."""
    return 2.0 * c1 / (np.asarray(m, float) * (rho + 1.0 / np.asarray(eta, float)))


def linearised_step(objective: AgentObjectives, previous: np.ndarray, eta: np.ndarray) -> np.ndarray:
    """Every agent's w_i^k of Huang et al. 2019 eq. (12a), vectorised.

    ``objective`` is the round's star-ADMM subproblem (linear term −γ_i^{k−1}, proximal weight ρ
    around w^{k−1}; see :func:`dpkit.algorithms.substrate.admm_loops.star_loop`), ``previous`` ``(N, d)`` the
    agents' last released iterates w̃_i^{k−1} and ``eta`` ``(N,)`` the step sizes η_i^k. The
    gradient is taken at the released point, so every input is public except the data.
    """
    eta = np.asarray(eta, float)
    return previous - objective.gradient(previous) / (objective.kappa + 1.0 / eta)[:, None]


def step_mechanisms(sizes: Sequence[float], rho: float, eta: np.ndarray, noise_multiplier: float,
                    c1: float = 1.0) -> list[GaussianMechanism]:
    """One :class:`GaussianMechanism` per agent for round k: Δ_i^k of :func:`step_sensitivity`
    (the true replace-one sensitivity) and σ_{i,k} = z·Δ_i^k (eq. 14 when z is Theorem 1's)."""
    sens = step_sensitivity(np.asarray(sizes, float), rho, eta, c1)
    return [GaussianMechanism(sigma=float(noise_multiplier * s), sensitivity=float(s)) for s in sens]


def release_step(local: np.ndarray, mechanisms: Sequence[GaussianMechanism], *, rng: np.random.Generator,
                 ledger: PrivacyLedger) -> np.ndarray:
    """w̃_i^k = w_i^k + N(0, σ_{i,k}² I) for every agent i (eq. 10b), each drawn and recorded in
    ``ledger`` by agent i's mechanism."""
    return np.stack([mech.release(local[i], rng=rng, ledger=ledger, agent=i) for i, mech in enumerate(mechanisms)])


def run_event(noise_multiplier: float, sensitivities: Sequence[float]) -> PrivacyEvent:
    """One agent's whole run: the composition of its rounds' Gaussians GaussianEvent(z·Δ_k, Δ_k)
    (what :func:`release_step` records), the event the noise multiplier is calibrated on."""
    return compose(*[GaussianEvent(float(noise_multiplier * s), float(s)) for s in sensitivities])


def check_star_run(parts: Sequence[Dataset], graph: Any, budget: Any, variant: str, variants: Sequence[str],
                   name: str) -> list[Dataset]:
    """The checked datasets of a star run (DP-ADMM, ADMM-PVP): ``graph`` must be None (agents and an
    aggregator), ``budget`` a :class:`~dpkit.algorithms.substrate.budget.Budget`, ``variant`` one of ``variants``."""
    parts = check_parts(parts)
    if graph is not None:
        raise ValueError(f"graph must be None: {name} runs on a star (agents and an aggregator)")
    if not isinstance(budget, Budget):
        raise TypeError(f"budget must be a Budget, got budget={budget!r}")
    if variant not in variants:
        raise ValueError(f"variant must be one of {tuple(variants)}, got variant={variant!r}")
    return parts
