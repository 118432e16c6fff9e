"""Audit scenarios of PP-ADMM and IPP-ADMM (Ding et al. 2020): the approximate-minimiser release and the SVT gate.

* ``pp-admm-minimizer``: one release θ̂ + b_i2 of PP-ADMM with an adversarial but compliant
  optimiser. Paper: b_i2 from :func:`~dpkit.algorithms.pp_admm.pp_admm.paper_output_mechanism`
  (σ_i2 = β/(√(2ρ)μ), claimed ρ-zCDP); the optimiser returns θ̃ ± (β/μ)e₁ with the sign read from
  the changed record, so neighbouring outputs are 2β/μ apart and the release is 4ρ-zCDP: a
  violation. Corrected: the mechanism of :func:`~dpkit.algorithms.pp_admm.pp_admm.release_mechanisms`
  calibrated to the budget by :func:`~dpkit.algorithms.pp_admm.pp_admm.calibrate_multiplier`; the
  optimiser puts the two approximate minimisers Δ_i = 2(c₁/|D_i| + β)/μ apart (exact minimisers
  2c₁/(|D_i|μ) apart, each approximate one β/μ further out): no violation.
* ``ipp-admm-svt``: IPP-ADMM's gate, the :class:`~dpkit.mechanisms.sparse_vector.SparseVector`
  inside the agent's :class:`~dpkit.mechanisms.sparse_vector.GatedRelease` built by
  :func:`~dpkit.algorithms.pp_admm.ipp_admm.gate_mechanisms` (corrected: Lyu et al.'s noise at the
  sensitivity of :func:`~dpkit.algorithms.pp_admm.ipp_admm.quality_sensitivity`; paper: Alg. 2's noise
  Lap(2cC_loss/ε₁), Lap(4cC_loss/ε₂)), on query streams moved by at most the sensitivity. The
  claim ε₁ + ε₂ (pure DP) is valid in both variants.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from dpkit._validation import check_integer, check_open_unit, check_positive
from dpkit.accounting.analytic_gaussian import gaussian_epsilon
from dpkit.accounting.zcdp import zcdp_to_epsilon
from dpkit.algorithms.substrate.budget import Budget
from dpkit.algorithms.pp_admm.ipp_admm import gate_mechanisms, paper_gate
from dpkit.algorithms.pp_admm.pp_admm import calibrate_multiplier, paper_output_mechanism, release_mechanisms
from dpkit.algorithms.substrate.audit_instance import AuditScenario
from dpkit.mechanisms.gaussian import GaussianMechanism
from dpkit.mechanisms.sparse_vector import SparseVector

__all__ = ["AdversarialMinimizerRelease", "pp_admm_minimizer", "ipp_admm_svt"]


@dataclasses.dataclass(frozen=True)
class AdversarialMinimizerRelease:
    """θ̂ + b_i2 where a compliant optimiser puts θ̂ = s·(shift/2)e₁, s = sign of the last record.

    ``mechanism`` is the agent's release mechanism of the algorithm; ``shift`` the distance
    between the two neighbours' approximate minimisers. ``database`` is a 1-D array of records
    whose last entry's sign the optimiser reads.
    """

    mechanism: GaussianMechanism
    shift: float
    dim: int = 1

    def __call__(self, database: Any, n: int, rng: np.random.Generator) -> np.ndarray:
        sign = 1.0 if float(np.asarray(database, float).reshape(-1)[-1]) >= 0 else -1.0
        theta_hat = np.zeros(self.dim)
        theta_hat[0] = sign * self.shift / 2.0
        return self.mechanism.sample(theta_hat, size=n, rng=rng)


def pp_admm_minimizer(*, corrected: bool = False, rho: float = 0.125, epsilon: float = 1.0, beta: float = 1e-3,
                      strong_convexity: float = 0.5, n_samples: int = 100, delta: float = 1e-5) -> AuditScenario:
    """One PP-ADMM release with an adversarial compliant optimiser (module docstring).

    Paper: claim ρ-zCDP, tested as the optimal conversion's (ε, δ) (an upper bound for every
    ρ-zCDP mechanism); true ε = the analytic-Gaussian ε at shift 2β/μ (Balle & Wang 2018, Thm 8).
    Corrected: claim = the budget (ε, δ) of one release; true ε = the analytic-Gaussian ε at the
    calibrated σ and shift Δ_i (≤ ε).
    """
    delta = check_open_unit("delta", delta)
    beta = check_positive("beta", beta)
    mu = check_positive("strong_convexity", strong_convexity)
    records = np.array([0.5, -0.25, 1.0])
    neighbour = records.copy()
    neighbour[-1] = -1.0
    if corrected:
        budget = Budget(check_positive("epsilon", epsilon), delta)
        z = float(calibrate_multiplier(budget, 1).parameter)
        mech = release_mechanisms([check_integer("n_samples", n_samples, minimum=1)], [mu], beta, z)[0]
        shift = mech.sensitivity
        claimed = budget.epsilon
        claim = f"one corrected PP-ADMM release is ({epsilon}, {delta})-DP"
        prediction = "no violation: sigma calibrated to the sensitivity 2(c1/|D_i| + beta)/mu"
        parameters = {"epsilon": epsilon, "n_samples": n_samples, "noise_multiplier": z}
    else:
        mech = paper_output_mechanism(beta, mu, check_positive("rho", rho))
        shift = 2.0 * beta / mu
        claimed = float(zcdp_to_epsilon(rho, delta))
        claim = (f"the output perturbation sigma_i2 = beta/(sqrt(2 rho) mu) is rho-zCDP (rho={rho}; "
                 "Ding et al. 2020, Thm 3.1); tested via the optimal zCDP conversion")
        prediction = "violation: two compliant optimisers are 2 beta/mu apart, so the step is 4 rho-zCDP"
        parameters = {"rho": rho}
    true_eps = float(gaussian_epsilon(mech.sigma, delta, shift))
    return AuditScenario(
        name="pp-admm-minimizer" + ("-corrected" if corrected else ""), paper="Ding et al. 2020", claim=claim,
        samples=2_000_000,
        claimed_epsilon=claimed, claimed_delta=delta, mechanism=AdversarialMinimizerRelease(mech, shift),
        pairs=[(records, neighbour)], true_epsilon=true_eps,
        true_epsilon_note="exact: Gaussian with the optimiser's shift and sigma, analytic Gaussian epsilon(delta)",
        expect_violation=not corrected, prediction=prediction, corrected=corrected,
        parameters={**parameters, "beta": beta, "strong_convexity": mu, "sigma": mech.sigma, "shift": shift,
                    "delta": delta},
    )


def _query_patterns(n: int, step: float) -> list[tuple[np.ndarray, np.ndarray]]:
    """Ding et al. (CCS 2018, Sec. 5.1) query patterns around 1, every answer moved by ≤ ``step``, plus mirrors.

    (The audit package has the same generator; algorithms may not import it.)
    """
    one, up, down, h = np.ones(n), 1.0 + step, 1.0 - step, n // 2

    def vec(*parts: tuple[float, int]) -> np.ndarray:
        return np.concatenate([np.full(k, v) for v, k in parts])

    asym = [(one, vec((up, 1), (1.0, n - 1))), (one, vec((down, 1), (1.0, n - 1))),
            (one, vec((up, 1), (down, n - 1))), (one, vec((down, 1), (up, n - 1))),
            (one, vec((up, h), (down, n - h))), (vec((1.0, h), (down, n - h)), vec((down, h), (1.0, n - h)))]
    sym = [(one, vec((up, n))), (one, vec((down, n)))]
    return asym + sym + [(a[::-1].copy(), b[::-1].copy()) for a, b in asym]


@dataclasses.dataclass(frozen=True)
class GateAnswers:
    """The gate's ⊤/⊥ codes for a stream of quality scores ``database`` (``svt.sample``)."""

    svt: SparseVector

    def __call__(self, database: Any, n: int, rng: np.random.Generator) -> np.ndarray:
        return self.svt.sample(np.asarray(database, float), size=n, rng=rng)


def ipp_admm_svt(*, corrected: bool = False, epsilon: float = 1.0, cutoff: int = 2, clip: float = 1.0,
                 n_samples: int = 4, length: int = 5) -> AuditScenario:
    """IPP-ADMM's SVT gate for one agent (module docstring); the claim ε₁ + ε₂ is valid.

    A small ``n_samples`` makes the quality sensitivity 2C_loss/|D_i| + Δ_i large enough for the
    Monte-Carlo audit to see the gate react to the queries.
    """
    cutoff = check_integer("cutoff", cutoff, minimum=1)
    clip = check_positive("clip", clip)
    m = check_integer("n_samples", n_samples, minimum=1)
    release = GaussianMechanism(sigma=1.0, sensitivity=0.1)
    if corrected:
        gate = gate_mechanisms([release], [m], epsilon_svt=epsilon, cap=cutoff, clip=clip, alpha=1.0)[0].gate
    else:
        gate = paper_gate(epsilon, cutoff, m, clip, release.sensitivity, 1.0)
    pairs = _query_patterns(check_integer("length", length, minimum=2), gate.sensitivity)
    return AuditScenario(
        name="ipp-admm-svt" + ("-corrected" if corrected else ""), paper="Ding et al. 2020", samples=2_000_000,
        claim=f"the SVT gate is (epsilon1 + epsilon2)-DP = {gate.epsilon:g}-DP (Lyu, Su & Li 2017, Thm 2)",
        claimed_epsilon=gate.epsilon, claimed_delta=0.0, mechanism=GateAnswers(gate), pairs=pairs,
        true_epsilon=None, true_epsilon_note="no closed form; <= epsilon1 + epsilon2 by Lyu, Su & Li 2017, Thm 2",
        expect_violation=False, prediction="no violation: the empirical lower bound stays <= epsilon1 + epsilon2",
        corrected=corrected,
        parameters={"epsilon1": gate.epsilon1, "epsilon2": gate.epsilon2, "cutoff": cutoff,
                    "sensitivity": gate.sensitivity, "threshold_noise": gate.threshold_noise, "queries": length,
                    "pairs": len(pairs)},
    )
