"""The noise of dual variable perturbation (DVP) ADMM, one function per variant.

Each function returns one mechanism per node (its ``release`` draws b_p(t), the perturbation of
the linear term of eq. (13) of Zhang & Zhu 2016, and records the event of releasing the exact
minimiser), together with the extra ridge Φ_p of each node and the calibration record.

The constants of node p's sub-problem (logistic loss: |L′| ≤ c = 1, 0 < L″ ≤ c₃ = 1/4,
‖x‖ ≤ 1; R = ½‖f‖²):

* each record's loss weighs w_p = Cᴿ/B_p, so replacing one record changes the gradient of the
  objective by at most Δ_p = 2c·w_p (replace-one; c·w_p under add/remove);
* the data-independent part ((ρ + Φ_p)/2)‖f‖² + η|N_p|‖f − c_p‖² is μ_p-strongly convex with
  μ_p = ρ + Φ_p + 2η|N_p|, and the loss Hessian changes by one rank-one term of norm ≤ c₃w_p
  per record, so the log-ratio of the Hessian determinants is at most
  ξ_p = log(1 + c₃w_p/μ_p) (Chaudhuri, Monteleoni & Sarwate 2011, proof of Thm 9; one
  record's term is removed and one added, each moving log det by at most log(1 + c₃w_p/μ_p) in
  opposite directions, so their difference is at most that much).

Given the public history (the published f(s), s ≤ t, from which λ_p(t) and the proximal centre
are computed), node p's round is one objective-perturbation release with these constants; the
rounds compose adaptively and the nodes in parallel (disjoint records).

* :func:`paper_noise` — Algorithm 2 as printed: per-iteration α, ζ = α̂ and B_p/Cᴿ in the
  α̂ test (Zhang & Zhu 2016, Alg. 2). The ledger records the true per-iteration bound
  ᾱ(Φ) + 2ζ of the proof (eqs. (21)–(22)), which exceeds α.
* :func:`pure_noise` — the same ℓ2-Laplace structure with the proof's calibration (ζ = α̂/2,
  Cᴿ/B_p in ᾱ), α per iteration the largest whose T-fold composition meets the budget
  (:func:`~dpkit.algorithms.substrate.budget.calibrate_noise` on the whole run).
* :func:`gaussian_noise` — b_p ~ N(0, (zΔ_p)²I), z calibrated on the whole run of
  :class:`~dpkit.accounting.events.ObjectivePerturbationEvent` (σ = zΔ_p, Δ_p, ξ_p).
"""

from __future__ import annotations

import dataclasses
from typing import Any, Sequence

import numpy as np

from dpkit._validation import check_integer, check_positive
from dpkit.accounting.events import ObjectivePerturbationEvent, PureDPEvent, repeat
from dpkit.accounting.neighbouring import NeighbouringRelation
from dpkit.algorithms.substrate.budget import Budget, calibrate_noise
from dpkit.mechanisms.base import Mechanism
from dpkit.mechanisms.dual_noise import DVPCalibration, GaussianObjectiveNoise, dvp_calibration

__all__ = ["LOSS_GRADIENT_BOUND", "LOSS_CURVATURE_BOUND", "DualNoise", "gradient_sensitivity", "jacobian_bound",
           "paper_noise", "pure_noise", "gaussian_noise"]

LOSS_GRADIENT_BOUND = 1.0
"""c: |L′| ≤ 1 for the logistic loss (Zhang & Zhu 2016, Assumption 1)."""

LOSS_CURVATURE_BOUND = 0.25
"""c₃ (the paper's c1): 0 < L″ ≤ 1/4 for the logistic loss."""


@dataclasses.dataclass(frozen=True)
class DualNoise:
    """Per-node noise of one DVP run.

    Every release of b_p(t) goes through ``mechanisms[p]``, which records its event in the run's
    ledger in the same call; ``extra_ridge`` is the paper's Φ_p, fixed before the first round.

    Attributes
    ----------
    mechanisms
        One mechanism per node; ``release`` draws b_p(t).
    extra_ridge
        ``(N,)``: Φ_p, added to ρ in the sub-problem.
    calibration
        How the noise was chosen (JSON-ready): per-iteration α, ζ, σ, the calibrated ε...
    """

    mechanisms: tuple[Mechanism, ...]
    extra_ridge: np.ndarray
    calibration: dict[str, Any]


def gradient_sensitivity(loss_weights: np.ndarray, neighbouring: NeighbouringRelation | str = "replace-one") -> np.ndarray:
    """Δ_p = 2c·w_p (replace-one) or c·w_p (add/remove), w_p = Cᴿ/B_p (module docstring).

    >>> gradient_sensitivity(np.array([0.5, 0.25])).tolist()
    [1.0, 0.5]
    """
    relation = NeighbouringRelation.parse(neighbouring)
    factor = 2.0 if relation is NeighbouringRelation.REPLACE_ONE else 1.0
    return factor * LOSS_GRADIENT_BOUND * np.asarray(loss_weights, float)


def jacobian_bound(loss_weights: np.ndarray, strong_convexity: np.ndarray) -> np.ndarray:
    """ξ_p = log(1 + c₃w_p/μ_p), rounded up (module docstring).

    >>> bool(jacobian_bound(np.array([1.0]), np.array([0.25]))[0] == np.nextafter(np.log(2.0), np.inf))
    True
    """
    xi = np.log1p(LOSS_CURVATURE_BOUND * np.asarray(loss_weights, float) / np.asarray(strong_convexity, float))
    return np.nextafter(xi, np.inf)


def _calibrations(alpha: float, sizes: Sequence[int], degrees: Sequence[int], *, loss_weight: float, rho: float,
                  eta: float, literal: bool, monotone: bool = False) -> list[DVPCalibration]:
    return [dvp_calibration(alpha, n_samples=int(B), loss_weight=loss_weight, regularization=rho, penalty=eta,
                            degree=int(k), smoothness=LOSS_CURVATURE_BOUND, literal=literal, monotone=monotone)
            for B, k in zip(sizes, degrees)]


def _l2_laplace(cals: list[DVPCalibration], sizes: Sequence[int], loss_weight: float) -> tuple[tuple[Mechanism, ...], np.ndarray]:
    mechanisms = tuple(cal.mechanism(loss_weight / int(B)) for cal, B in zip(cals, sizes))
    return mechanisms, np.array([cal.extra_regularization for cal in cals])


def paper_noise(alpha: float, sizes: Sequence[int], degrees: Sequence[int], *, loss_weight: float, rho: float,
                eta: float) -> DualNoise:
    """Algorithm 2 of Zhang & Zhu 2016 as printed, at per-iteration α (:func:`~dpkit.mechanisms.dual_noise.dvp_calibration`, ``literal=True``).

    ``sizes`` and ``degrees`` are B_p and |N_p|; ``loss_weight`` is Cᴿ.
    """
    alpha = check_positive("alpha", alpha)
    cals = _calibrations(alpha, sizes, degrees, loss_weight=loss_weight, rho=rho, eta=eta, literal=True)
    mechanisms, phi = _l2_laplace(cals, sizes, loss_weight)
    return DualNoise(mechanisms, phi, {"alpha_per_iteration": alpha, "rule": "Zhang & Zhu 2016, Alg. 2 as printed",
                                       "nodes": [cal.to_dict() for cal in cals]})


def pure_noise(budget: Budget, iterations: int, sizes: Sequence[int], degrees: Sequence[int], *, loss_weight: float,
               rho: float, eta: float) -> DualNoise:
    """The proof's calibration with α per iteration calibrated on the T-fold composition (module docstring).

    The calibrated parameter is 1/α (larger = more private); each node's step is then
    (ᾱ(Φ_p) + 2ζ_p) ≤ α-DP, with the branch that leaves each node the larger noise budget
    (``monotone=True`` of :func:`~dpkit.mechanisms.dual_noise.dvp_calibration`), so a larger budget
    never gets more noise.
    """
    T = check_integer("iterations", iterations, minimum=1)
    result = calibrate_noise(lambda s: repeat(PureDPEvent(1.0 / s), T), budget, lower=T / budget.epsilon / 2,
                             upper=2 * T / budget.epsilon)
    alpha = 1.0 / result.parameter
    cals = _calibrations(alpha, sizes, degrees, loss_weight=loss_weight, rho=rho, eta=eta, literal=False,
                         monotone=True)
    mechanisms, phi = _l2_laplace(cals, sizes, loss_weight)
    return DualNoise(mechanisms, phi, {"alpha_per_iteration": alpha, "calibrated_epsilon": result.epsilon,
                                       "accountant": result.accountant, "nodes": [cal.to_dict() for cal in cals]})


def gaussian_noise(budget: Budget, iterations: int, loss_weights: np.ndarray, strong_convexity: np.ndarray) -> DualNoise:
    """b_p ~ N(0, (zΔ_p)²I) with z the smallest multiplier whose T-round run meets ``budget``.

    ``loss_weights`` are w_p = Cᴿ/B_p and ``strong_convexity`` μ_p = ρ + 2η|N_p| (no extra
    ridge: Φ_p = 0). z is calibrated on T repetitions of
    :class:`~dpkit.accounting.events.ObjectivePerturbationEvent` with the largest ξ_p; node p
    uses σ_p = zΔ_p and its own ξ_p (≤ the largest), so every node's run meets the budget.
    """
    T = check_integer("iterations", iterations, minimum=1)
    sens = gradient_sensitivity(loss_weights, budget.neighbouring)
    xi = jacobian_bound(loss_weights, strong_convexity)
    worst = float(xi.max())
    if T * worst >= budget.epsilon:
        raise ValueError(f"the Jacobian terms alone (T*xi = {T * worst:.4g}) exceed epsilon={budget.epsilon}: "
                         "raise the penalty eta or the regularisation, or plan fewer iterations")
    result = calibrate_noise(lambda z: repeat(ObjectivePerturbationEvent(z, 1.0, worst), T), budget)
    z = float(result.parameter)
    mechanisms = tuple(GaussianObjectiveNoise(sigma=z * float(s), sensitivity=float(s), jacobian=float(x))
                       for s, x in zip(sens, xi))
    return DualNoise(mechanisms, np.zeros(len(mechanisms)), {
        "noise_multiplier": z, "sigma": [m.sigma for m in mechanisms], "sensitivity": sens.tolist(),
        "jacobian": xi.tolist(), "calibrated_epsilon": result.epsilon, "accountant": result.accountant})
