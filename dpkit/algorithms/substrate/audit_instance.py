"""The audit scenario type: a small worst-case instance of an algorithm's privacy claim, as a black-box target.

Each builder in :mod:`dpkit.algorithms.audit_instances` returns an :class:`AuditScenario`: a picklable
``mechanism(database, n, rng)`` (``n`` independent outputs, first axis = sample) that runs the
algorithm's own release code, neighbouring pairs ``(D, D′)`` that differ in one record, the claim
under test as an (ε, δ), the paper it comes from, a default sample budget and — where it has a
closed form — the true ε of the instance at the claimed δ. The scenarios are *inputs* for
:func:`dpkit.audit.audit` (called by ``dpkit audit --algorithm`` and ``experiments/seed_audits.py``);
this package imports only accounting, mechanisms and algorithms.

What the adversary sees is the release the paper protects (an upload, a noisy iterate, the
whole transcript). Where the optimal test is known, the mechanism returns a fixed
post-processing of that release (the likelihood-ratio statistic of the two candidate
datasets, which any adversary knowing D and D′ may compute); post-processing cannot raise ε,
so a bound on the statistic is a bound on the release.

Scenarios, by algorithm (``corrected=False``: the paper's claim; ``corrected=True``: dpkit's
calibration or accounting, where no audit should find a violation):

* ``pp-admm`` (Ding et al. 2020, Thm 3.1): one output-perturbation release σ_i2 = β/(√(2ρ)μ)
  of an approximate minimiser. A compliant optimiser may put neighbouring minimisers 2β/μ apart,
  so the step is 4ρ-zCDP, not ρ-zCDP: the claim is false.
* ``ipp-admm`` (Ding et al. 2020; Lyu, Su & Li 2017, Thm 2): the sparse-vector gate on quality
  scores; the claim ε₁ + ε₂ is valid.
* ``dp-admm`` (Huang et al. 2019, Thm 1): one released iterate w̃ = w + N(0, σ²I) with the
  classical Gaussian σ (ε ≤ 1, δ ≤ 0.01); the claim is valid (and loose). Corrected: T iterates
  against dpkit's whole-run calibration.
* ``hetero-admm`` (Wang et al. 2020, Prop. 1): one server's published iterates with decaying
  noise against a label-only ε; a change of a record's features is not covered: the claim is
  false at record level.
* ``a-ddp`` (Cheng et al. 2020, Alg. 1): one upload clip(∇ℓ) + N(0, σ²) with σ for sensitivity
  C; the true sensitivity is 2C: the claim is false.
* ``dvp-admm`` (Zhang & Zhu 2016, Thm 1, §2.2): the T-iteration transcript against the
  per-iteration α claimed as the total: false for T ≥ 2 (visible from T ≈ 10).
* ``dp-logreg`` (dpkit's centralised baseline, no paper): T noisy gradients; corrected only.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable

import numpy as np

__all__ = ["AuditScenario"]


@dataclasses.dataclass(frozen=True)
class AuditScenario:
    """One audit target: the mechanism, the neighbouring pairs and the claim under test.

    Attributes
    ----------
    name
        Scenario name.
    paper
        The paper whose claim is tested, as a citation (``"Ding et al. 2020"``; ``"dpkit"`` for
        dpkit's own baselines).
    claim
        The claim under test, in words.
    claimed_epsilon, claimed_delta
        The claim as an (ε, δ) (δ = 0: pure DP).
    mechanism
        Picklable ``mechanism(database, n, rng)``.
    pairs
        Neighbouring ``(D, D′)`` tuples (numeric arrays; one record differs).
    true_epsilon
        ε of this instance at ``claimed_delta`` when it has a closed form (else ``None``).
    true_epsilon_note
        How ``true_epsilon`` was obtained, or what is known about it.
    expect_violation
        The predicted verdict: ``True`` when the claim is false for this instance.
    prediction
        The prediction, in words.
    corrected
        Whether this is the corrected variant.
    parameters
        The instance's parameters (for the report).
    samples
        Default audit sample budget (total mechanism outputs), sized so that the audit finds the
        predicted verdict and runs in about a minute at most.
    """

    name: str
    paper: str
    claim: str
    claimed_epsilon: float
    claimed_delta: float
    mechanism: Callable[[Any, int, np.random.Generator], Any]
    pairs: list[tuple[np.ndarray, np.ndarray]]
    true_epsilon: float | None
    true_epsilon_note: str
    expect_violation: bool
    prediction: str
    corrected: bool
    parameters: dict[str, Any]
    samples: int

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready summary (without the mechanism and the pairs)."""
        return {
            "name": self.name, "paper": self.paper, "claim": self.claim, "claimed_epsilon": self.claimed_epsilon,
            "claimed_delta": self.claimed_delta, "true_epsilon": self.true_epsilon,
            "true_epsilon_note": self.true_epsilon_note, "expect_violation": self.expect_violation,
            "prediction": self.prediction, "corrected": self.corrected, "parameters": dict(self.parameters),
            "samples": self.samples,
        }


