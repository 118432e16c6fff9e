"""Audit scenario of ADMM-PVP (Huang et al. 2019, Alg. 2): one agent's first released minimiser.

The agent holds ``records`` rows; in round 1 (w⁰ = 0, γ⁰ = 0) it solves its star subproblem with
the algorithm's own solver step (:func:`~dpkit.algorithms.admm.exact_local_step`) and releases the
minimiser through a Gaussian mechanism whose σ comes from the algorithm's own rule: the paper's
per-iteration calibration on Δ_PVP (Huang et al. 2019, Sec. III-A), or dpkit's calibration of one
release on the sensitivity :func:`~dpkit.algorithms.admm_pvp.pvp_sensitivity`. The neighbouring
databases replace one record by its label-flipped copy. The output is the log-likelihood ratio of
the release between the two candidate databases (a post-processing).

Both claims hold (the solver runs to ||∇|| ≤ 1e-10, so the β the paper ignores is negligible):
no audit should find a violation.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from dpkit._validation import check_integer
from dpkit.accounting.analytic_gaussian import gaussian_epsilon
from dpkit.accounting.events import GaussianEvent
from dpkit.algorithms.admm import exact_local_step
from dpkit.algorithms.admm_pvp import pvp_sensitivity
from dpkit.algorithms.budget import Budget, calibrate_noise
from dpkit.algorithms.dp_admm_steps import theorem1_multiplier
from dpkit.algorithms.losses import L2, Logistic
from dpkit.algorithms.scenarios.base import AuditScenario
from dpkit.algorithms.solvers import AgentObjectives
from dpkit.mechanisms.gaussian import GaussianMechanism

__all__ = ["MinimizerRelease", "admm_pvp_release"]

BETA = 1e-10


def _minimiser(rows: np.ndarray, rho: float, lam: float) -> np.ndarray:
    F = AgentObjectives.from_arrays(rows[None, :, :-1], rows[None, :, -1], Logistic(), regulariser=L2(),
                                    reg_weight=lam)
    round_one = F.with_terms(kappa=rho)  # linear −γ⁰ = 0, centre w⁰ = 0
    theta, _ = exact_local_step(BETA)(0, round_one, np.zeros((1, rows.shape[1] - 1)))
    return theta[0]


@dataclasses.dataclass(frozen=True)
class MinimizerRelease:
    """The released w̃ = w + N(0, σ²I) of one ADMM-PVP round; output: its log-likelihood ratio of
    ``reference`` against ``neighbour``."""

    mechanism: GaussianMechanism
    rho: float
    lam: float
    reference: np.ndarray
    neighbour: np.ndarray

    def __call__(self, database: Any, n: int, rng: np.random.Generator) -> np.ndarray:
        released = self.mechanism.sample(_minimiser(np.asarray(database, float), self.rho, self.lam), size=n, rng=rng)
        mean0 = _minimiser(self.reference, self.rho, self.lam)
        mean1 = _minimiser(self.neighbour, self.rho, self.lam)
        return (np.sum((released - mean1) ** 2, -1) - np.sum((released - mean0) ** 2, -1)) / (2.0 * self.mechanism.sigma ** 2)


def admm_pvp_release(*, corrected: bool = False, epsilon: float = 1.0, delta: float = 1e-5, records: int = 20,
                     rho: float = 0.01) -> AuditScenario:
    """One ADMM-PVP release against the paper's per-iteration claim or dpkit's calibration.

    >>> scenario = admm_pvp_release(corrected=True)
    >>> scenario.true_epsilon <= scenario.claimed_epsilon
    True
    """
    m = check_integer("records", records, minimum=2)
    budget = Budget(epsilon, delta)
    lam = 1.0 / m
    mu = lam + rho
    if corrected:
        sensitivity = float(pvp_sensitivity(m, mu, 1.0, BETA))
        z = calibrate_noise(lambda s: GaussianEvent(s), budget, lower=1.0, upper=100.0).parameter
        claim = f"one ADMM-PVP release is ({epsilon:g}, {delta:g})-DP (dpkit: sigma calibrated on the sensitivity " \
                f"2c1/(m mu) + 2beta/mu by the tightest accountant)"
    else:
        sensitivity = float(pvp_sensitivity(m, mu, 1.0))
        z = theorem1_multiplier(epsilon, delta)
        claim = f"one ADMM-PVP release is ({epsilon:g}, {delta:g})-DP (Huang et al. 2019, Sec. III-A: classical " \
                f"Gaussian on Delta_PVP, per iteration)"
    mechanism = GaussianMechanism(sigma=float(z * sensitivity), sensitivity=sensitivity)
    gen = np.random.default_rng(0)
    base = np.column_stack([gen.uniform(-0.6, 0.6, size=(m, 2)), np.where(gen.random(m) < 0.5, -1.0, 1.0)])
    first, second = base.copy(), base.copy()
    first[0] = [0.6, 0.6, 1.0]
    second[0] = [0.6, 0.6, -1.0]
    release = MinimizerRelease(mechanism, rho, lam, first, second)
    shift = float(np.linalg.norm(_minimiser(first, rho, lam) - _minimiser(second, rho, lam)))
    true_epsilon = float(gaussian_epsilon(mechanism.sigma, delta, shift))
    return AuditScenario(
        name="admm-pvp-release" + ("-corrected" if corrected else ""), paper="Huang et al. 2019", samples=1_000_000,
        claim=claim, claimed_epsilon=epsilon, claimed_delta=delta, mechanism=release, pairs=[(first, second)],
        true_epsilon=true_epsilon,
        true_epsilon_note=f"exact Gaussian epsilon (Balle & Wang 2018) at the realised shift {shift:.6g} "
                          f"(<= sensitivity {sensitivity:.6g})",
        expect_violation=False,
        prediction="no violation: the exact minimiser moves at most 2c1/(m mu); the ignored beta is 1e-10",
        corrected=corrected,
        parameters={"sigma": mechanism.sigma, "sensitivity": sensitivity, "records": m, "rho": rho, "lam": lam,
                    "realised_shift": shift},
    )
