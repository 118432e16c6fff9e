"""Audit scenario of the centralised baseline dp-logreg: T noisy gradients on a worst-case pair.

The released values of :func:`dpkit.algorithms.baselines.dp_logreg.train_dp_logreg` are the noisy mean
gradients. The scenario releases T of them at a public point chosen by the adversary, with the
algorithm's own query (:func:`~dpkit.algorithms.baselines.dp_logreg.gradient_query`) and its own
calibration (:func:`~dpkit.algorithms.baselines.dp_logreg.calibrate_gradient_noise`, T steps within the
budget). At θ = (0, −M) the records x = (±√(1 − h²), h), y = +1 have margin −Mh, so their
per-example gradients are ≈ −x: opposite first coordinates, a shift of ≈ 2/m = Δ in the mean
gradient. The claim is the accountant's ε for the T releases (the budget), which the exact
GDP value at the realised shift never exceeds: no audit should find a violation.

The adversary sees the T releases; the mechanism returns their log-likelihood ratio between
the two candidate datasets (a post-processing, which cannot raise ε).
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np

from dpkit._validation import check_integer
from dpkit.accounting.gdp import gdp_mu_to_epsilon
from dpkit.algorithms.substrate.budget import Budget
from dpkit.algorithms.baselines.dp_logreg import calibrate_gradient_noise, gradient_query
from dpkit.algorithms.substrate.audit_instance import AuditScenario
from dpkit.mechanisms.gaussian import GaussianMechanism

__all__ = ["GradientReleases", "dp_logreg_gradients"]


@dataclasses.dataclass(frozen=True)
class GradientReleases:
    """``iterations`` releases of dp-logreg's noisy gradient at ``theta``; output: their log-likelihood
    ratio of ``reference`` against ``neighbour`` (``database`` rows are ``[x, y]``)."""

    theta: np.ndarray
    mechanism: GaussianMechanism
    iterations: int
    reference: np.ndarray
    neighbour: np.ndarray

    def _query(self, rows: np.ndarray) -> np.ndarray:
        return gradient_query(self.theta, rows[:, :-1], rows[:, -1])

    def __call__(self, database: Any, n: int, rng: np.random.Generator) -> np.ndarray:
        value = self._query(np.asarray(database, float))
        released = self.mechanism.sample(value, size=n * self.iterations, rng=rng)
        released = released.reshape(n, self.iterations, -1)
        mean0, mean1 = self._query(self.reference), self._query(self.neighbour)
        sigma2 = self.mechanism.sigma ** 2
        return np.sum(np.sum((released - mean1) ** 2, -1) - np.sum((released - mean0) ** 2, -1), -1) / (2.0 * sigma2)


def dp_logreg_gradients(*, corrected: bool = True, epsilon: float = 1.0, delta: float = 1e-5, iterations: int = 10,
                        records: int = 10, margin: float = 3000.0, tilt: float = 0.01) -> AuditScenario:
    """``iterations`` dp-logreg gradient releases calibrated to (``epsilon``, ``delta``) on ``records`` rows.

    dp-logreg has no paper claim, so only ``corrected=True`` exists.

    >>> scenario = dp_logreg_gradients(iterations=4)
    >>> scenario.claimed_epsilon <= 1.0, scenario.true_epsilon <= scenario.claimed_epsilon
    (True, True)
    """
    if not corrected:
        raise ValueError("dp-logreg has no paper claim to audit: use corrected=True")
    T = check_integer("iterations", iterations, minimum=1)
    m = check_integer("records", records, minimum=2)
    budget = Budget(epsilon, delta)
    mechanism, calibration = calibrate_gradient_noise(m, T, budget)
    a = math.sqrt(1.0 - tilt**2)
    base = np.zeros((m, 3))
    base[:, 0] = np.linspace(-0.5, 0.5, m)
    base[:, 2] = 1.0
    first, second = base.copy(), base.copy()
    first[0] = [a, tilt, 1.0]
    second[0] = [-a, tilt, 1.0]
    theta = np.array([0.0, -margin])
    mech = GradientReleases(theta, mechanism, T, first, second)
    shift = float(np.linalg.norm(mech._query(first) - mech._query(second)))
    true_epsilon = float(gdp_mu_to_epsilon(math.sqrt(T) * shift / mechanism.sigma, budget.delta))
    return AuditScenario(
        name="dp-logreg-gradients", paper="dpkit", samples=2_000_000,
        claim=f"{T} dp-logreg gradient releases on {m} records are ({calibration.epsilon:.4g}, {delta:g})-DP "
              f"(noise calibrated by the {calibration.accountant} accountant for the whole run)",
        claimed_epsilon=float(calibration.epsilon), claimed_delta=budget.delta, mechanism=mech, pairs=[(first, second)],
        true_epsilon=true_epsilon,
        true_epsilon_note=f"exact GDP epsilon at the realised shift {shift:.6g} (<= Delta = {mechanism.sensitivity:.6g})",
        expect_violation=False,
        prediction="no violation: Gaussian steps of sensitivity 2/m composed exactly (mu-GDP)",
        corrected=True,
        parameters={"sigma": mechanism.sigma, "sensitivity": mechanism.sensitivity, "records": m, "iterations": T,
                    "realised_shift": shift, "margin": margin, "tilt": tilt},
    )
