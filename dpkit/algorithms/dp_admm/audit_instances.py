"""Audit scenarios of DP-ADMM (Huang et al., IEEE TIFS 2019): released iterates of one agent,
produced by the algorithm's own step code (:mod:`dpkit.algorithms.dp_admm.steps`)."""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np

from dpkit._validation import check_integer, check_open_unit, check_positive
from dpkit.accounting.analytic_gaussian import gaussian_epsilon
from dpkit.algorithms.substrate.budget import Budget, calibrate_noise
from dpkit.algorithms.dp_admm.steps import (
    linearised_step, run_event, step_mechanisms, step_sensitivity, theorem1_multiplier,
)
from dpkit.algorithms.substrate.losses import Logistic
from dpkit.algorithms.substrate.audit_instance import AuditScenario
from dpkit.algorithms.substrate.solvers import AgentObjectives

__all__ = ["DPADMMIterates", "dp_admm_release"]


def _objectives(database: np.ndarray, n: int) -> AgentObjectives:
    """n copies of one agent holding ``database`` = ``[x, y]`` rows (no regulariser), as views."""
    data = np.asarray(database, float)
    X = np.broadcast_to(data[:, :-1], (n,) + data[:, :-1].shape)
    y = np.broadcast_to(data[:, -1], (n, data.shape[0]))
    return AgentObjectives.from_arrays(X, y, Logistic())


@dataclasses.dataclass(frozen=True)
class DPADMMIterates:
    """``iterations`` released iterates of a single DP-ADMM agent, ``n`` independent runs at once.

    Round k: the agent's subproblem (linear term −γ = 0, proximal ρ around w^{k−1}) is stepped by
    :func:`~dpkit.algorithms.dp_admm.steps.linearised_step` (eq. 12a) from its last released
    w̃^{k−1}, and the Gaussian mechanism of
    :func:`~dpkit.algorithms.dp_admm.steps.step_mechanisms` (Lemma 1's Δ, σ = zΔ) perturbs it.
    With one agent the aggregator gives w^k = w̃^k and γ^k = 0 (eqs. 10c–10d); the public state
    before the audited rounds is w̃ = w = ``w_start``. ``database``: the agent's ``(m, d + 1)``
    rows ``[x, y]``. Output (``statistic="llr"``): the log-likelihood ratio of the released
    iterates under ``reference`` vs ``neighbour`` (a post-processing any adversary knowing both
    may compute); ``"release"``: the iterates, ``(n, T·d)``.
    """

    w_start: np.ndarray
    rho: float
    eta: float
    noise_multiplier: float
    iterations: int
    reference: np.ndarray
    neighbour: np.ndarray
    statistic: str = "llr"

    def __call__(self, database: Any, n: int, rng: np.random.Generator) -> np.ndarray:
        data = np.asarray(database, float)
        m = data.shape[0]
        eta = np.full(n, self.eta)
        mech = step_mechanisms([m], self.rho, eta[:1], self.noise_multiplier)[0]
        objectives = [_objectives(d, n) for d in (data, self.reference, self.neighbour)]
        prev = np.tile(self.w_start, (n, 1))
        llr = np.zeros(n)
        released = []
        for _ in range(self.iterations):
            local, mean_ref, mean_nb = (linearised_step(F.with_terms(kappa=self.rho, center=prev), prev, eta)
                                        for F in objectives)
            new = mech.sample(local, rng=rng)
            llr += (np.sum((new - mean_nb) ** 2, -1) - np.sum((new - mean_ref) ** 2, -1)) / (2.0 * mech.sigma**2)
            released.append(new)
            prev = new
        return llr if self.statistic == "llr" else np.concatenate(released, axis=1)


def dp_admm_release(*, corrected: bool = False, epsilon: float = 1.0, delta: float = 1e-5,
                    iterations: int | None = None, records: int = 10, rho: float = 0.1, eta: float = 1.0,
                    margin: float = 3000.0, tilt: float = 0.01, statistic: str = "llr") -> AuditScenario:
    """DP-ADMM's released iterates on a worst-case pair, against the paper's or dpkit's claim.

    Worst-case pair: at the public point w̃ = (0, −M) the records x = (±√(1 − h²), h), y = +1
    have saturated, opposite first-coordinate gradients, so the step's means differ by ≈ Lemma 1's
    Δ = 2/(m(ρ + 1/η)).

    * Paper (``corrected=False``, ``iterations=1``): Theorem 1, one iterate with
      z = √(2 ln(1.25/δ))/ε is (ε, δ)-DP (needs ε ≤ 1, δ ≤ 0.01). The claim is valid (and loose):
      no violation is predicted. The paper's total over T iterates (Theorem 2, c0·√T·ε) has no
      value for c0 and cannot be audited.
    * Corrected (``corrected=True``, default T = 10): z calibrated by dpkit so that the T iterates
      are (ε, δ)-DP in total (exact GDP composition of Gaussians with σ/Δ = z).
    """
    epsilon = check_positive("epsilon", epsilon)
    delta = check_open_unit("delta", delta)
    if not corrected and epsilon > 1.0:
        raise ValueError(f"epsilon must be in (0, 1] for Theorem 1 of Huang et al. 2019, got epsilon={epsilon}")
    if statistic not in ("llr", "release"):
        raise ValueError(f"statistic must be 'llr' or 'release', got statistic={statistic!r}")
    T = check_integer("iterations", (10 if corrected else 1) if iterations is None else iterations, minimum=1)
    if not corrected and T != 1:
        raise ValueError("the paper's total over iterations (Theorem 2) has no value for its constant c0: "
                         f"use iterations=1 or corrected=True, got iterations={T}")
    m = check_integer("records", records, minimum=1)
    sens = float(step_sensitivity(m, rho, eta))
    if corrected:
        z = calibrate_noise(lambda z: run_event(z, [sens] * T), Budget(epsilon, delta)).parameter
    else:
        z = theorem1_multiplier(epsilon, delta)
    w_start = np.array([0.0, -margin])
    a = math.sqrt(1.0 - tilt**2)
    base = np.tile([0.0, 0.0, 1.0], (m, 1))
    base[:, 0] = np.linspace(-0.5, 0.5, m)
    first, second = base.copy(), base.copy()
    first[0] = [a, tilt, 1.0]
    second[0] = [-a, tilt, 1.0]
    mech = DPADMMIterates(w_start, rho, eta, z, T, first, second, statistic)
    start = np.tile(w_start, (1, 1))
    means = [linearised_step(_objectives(d, 1).with_terms(kappa=rho, center=start), start, np.array([eta]))
             for d in (first, second)]
    shift = float(np.linalg.norm(means[0] - means[1]))
    if corrected:
        claim = (f"{T} DP-ADMM iterates with the noise multiplier calibrated by dpkit (z = {z:.4g}) are "
                 f"({epsilon}, {delta})-DP in total")
        true_eps = None
        note = "<= the claim: exact GDP composition of Gaussians whose mean shifts are <= Delta"
        prediction = "no violation: the GDP total is exact for Gaussian steps of sensitivity <= Delta"
    else:
        claim = (f"each DP-ADMM iterate is ({epsilon}, {delta})-DP (Theorem 1, classical Gaussian on Lemma 1's "
                 "sensitivity)")
        true_eps = float(gaussian_epsilon(z * sens, delta, shift))
        note = f"exact: analytic Gaussian epsilon(delta) at the realised shift {shift:.6g} (<= Delta = {sens:.6g})"
        prediction = "no violation: Theorem 1's per-iteration calibration is valid (and loose)"
    return AuditScenario(
        name="dp-admm-release" + ("-corrected" if corrected else ""), paper="Huang et al. 2019", claim=claim,
        samples=min(2_000_000, max(200_000, 20_000_000 // T)),
        claimed_epsilon=epsilon, claimed_delta=delta, mechanism=mech, pairs=[(first, second)], true_epsilon=true_eps,
        true_epsilon_note=note, expect_violation=False, prediction=prediction, corrected=corrected,
        parameters={"noise_multiplier": z, "sigma": z * sens, "sensitivity": sens, "records": m, "rho": rho,
                    "eta": eta, "iterations": T, "realised_shift": shift, "statistic": statistic},
    )
