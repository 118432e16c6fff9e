"""Audit a registered algorithm: its privacy claim on its audit instance (one implementation).

:func:`audit_scenario` runs :func:`dpkit.audit.audit` on an instance of
:mod:`dpkit.algorithms.audit_instances` (the algorithm's own release code on one-record neighbours,
its claim); ``dpkit audit --algorithm`` and ``experiments/seed_audits.py`` (which writes
``docs/paper-audits.md``) both call it. :func:`audit_algorithm` builds the instance by registry
name and returns an :class:`AuditRecord`: the claim, the audit's ε lower bound with its
confidence, the verdict, the exact ε where it has a closed form and whether the verdict is the
predicted one. :data:`PLAN` is the set of audits the documentation page shows.
"""

from __future__ import annotations

import dataclasses
import json
import math
from typing import Any

from dpkit.algorithms.audit_instances import AuditScenario, make_scenario
from dpkit.audit import AuditResult, audit, ceiling_epsilon
from dpkit.audit.api import minimum_samples

__all__ = ["AuditRecord", "Planned", "PLAN", "audit_scenario", "run_scenario", "audit_algorithm"]


def audit_scenario(scenario: AuditScenario, *, samples: int | None = None, rng: Any = 0, confidence: float = 0.95,
                   executor: Any = None, **keywords: Any) -> AuditResult:
    """:func:`dpkit.audit.audit` of ``scenario``'s mechanism, pairs and claim (``samples``: default
    ``scenario.samples``; ``keywords`` go to :func:`~dpkit.audit.audit`).

    The papers' claims are about their algorithms in exact (real) arithmetic, so these audits test
    the calibration of the values: ``float_bits=False`` unless ``keywords`` say otherwise. As
    executed, the algorithms' continuous Gaussian releases also leak through their float bits
    (``float_bits=True`` refutes them; ``docs/audit.md``)."""
    samples = scenario.samples if samples is None else samples
    keywords.setdefault("float_bits", False)
    return audit(scenario.mechanism, scenario.pairs, scenario.claimed_epsilon, scenario.claimed_delta,
                 confidence=confidence, samples=samples, rng=rng, executor=executor, **keywords)


@dataclasses.dataclass(frozen=True)
class AuditRecord:
    """One audit of one claim.

    ``epsilon_lower_bound`` holds with probability ≥ ``confidence``; ``violation`` is
    ``epsilon_lower_bound > claimed_epsilon``; ``as_predicted`` compares it with the scenario's
    prediction (``expected_violation``).
    """

    algorithm: str
    variant: str
    name: str
    paper: str
    claim: str
    claimed_epsilon: float
    claimed_delta: float
    epsilon_lower_bound: float
    confidence: float
    samples: int
    seconds: float
    violation: bool
    verdict: str
    true_epsilon: float | None
    true_epsilon_note: str
    expected_violation: bool
    as_predicted: bool
    prediction: str
    p_value: float
    ceiling: float
    audit_seed: int
    witness: dict[str, Any]
    parameters: dict[str, Any]

    def to_dict(self) -> dict[str, Any]:
        out = dataclasses.asdict(self)
        out["witness"] = json.loads(json.dumps(self.witness, default=str))
        out["parameters"] = json.loads(json.dumps(self.parameters, default=str))
        return out


def run_scenario(scenario: AuditScenario, *, algorithm: str, samples: int | None = None, rng: int = 0,
                 confidence: float = 0.95, executor: Any = None) -> AuditRecord:
    """Audit one :class:`AuditScenario` (``samples``: default ``scenario.samples``) and summarise the result."""
    result = audit_scenario(scenario, samples=samples, rng=rng, confidence=confidence, executor=executor)
    per_input = int(result.witness.get("samples_per_input", 0)) if result.witness else 0
    return AuditRecord(
        algorithm=algorithm, variant="corrected" if scenario.corrected else "paper", name=scenario.name,
        paper=scenario.paper, claim=scenario.claim, claimed_epsilon=scenario.claimed_epsilon,
        claimed_delta=scenario.claimed_delta, epsilon_lower_bound=result.epsilon_lower_bound,
        confidence=confidence, samples=result.samples, seconds=result.seconds, violation=result.violation,
        verdict="violation" if result.violation else "no violation", true_epsilon=scenario.true_epsilon,
        true_epsilon_note=scenario.true_epsilon_note, expected_violation=scenario.expect_violation,
        as_predicted=result.violation == scenario.expect_violation, prediction=scenario.prediction,
        p_value=result.p_value, ceiling=float(ceiling_epsilon(per_input, confidence)) if per_input else math.nan,
        audit_seed=int(result.seed), witness=dict(result.witness), parameters=dict(scenario.parameters),
    )


def audit_algorithm(algorithm: str, *, corrected: bool = False, samples: int | None = None, rng: int = 0,
                    confidence: float = 0.95, executor: Any = None, **parameters: Any) -> AuditRecord:
    """Audit ``make_scenario(algorithm, corrected=corrected, **parameters)`` (default: its own sample budget)."""
    scenario = make_scenario(algorithm, corrected=corrected, **parameters)
    return run_scenario(scenario, algorithm=algorithm, samples=samples, rng=rng, confidence=confidence,
                        executor=executor)


@dataclasses.dataclass(frozen=True)
class Planned:
    """One row of the page: ``algorithm`` in ``variant`` with scenario ``parameters`` and ``samples``."""

    algorithm: str
    corrected: bool
    samples: int
    parameters: dict[str, Any] = dataclasses.field(default_factory=dict)

    @property
    def label(self) -> str:
        T = self.parameters.get("iterations")
        return f"{self.algorithm}{'' if T is None else f' T={T}'}"

    def quick(self) -> Planned:
        """A tenth of the samples (at least ``minimum_samples(1)`` = 2,000, the smallest audit of one
        pair), transcripts at most 10 rounds."""
        parameters = dict(self.parameters)
        if "iterations" in parameters:
            parameters["iterations"] = min(parameters["iterations"], 10)
        return dataclasses.replace(self, samples=max(minimum_samples(1), self.samples // 10), parameters=parameters)


PLAN: list[Planned] = [
    Planned("pp-admm", False, 2_000_000),
    Planned("pp-admm", True, 2_000_000),
    Planned("ipp-admm", False, 2_000_000),
    Planned("ipp-admm", True, 2_000_000),
    Planned("dp-admm", False, 2_000_000, {"iterations": 1}),
    Planned("dp-admm", True, 2_000_000, {"iterations": 10}),
    Planned("admm-pvp", False, 2_000_000),
    Planned("admm-pvp", True, 2_000_000),
    Planned("hetero-admm", False, 100_000, {"iterations": 10}),
    Planned("hetero-admm", True, 100_000, {"iterations": 10}),
    Planned("a-ddp", False, 2_000_000),
    Planned("a-ddp", True, 2_000_000),
    Planned("dvp-admm", False, 5_000, {"iterations": 1}),
    Planned("dvp-admm", False, 5_000, {"iterations": 10}),
    Planned("dvp-admm", False, 2_500, {"iterations": 30}),
    Planned("dvp-admm", True, 250_000),
    Planned("dp-logreg", True, 2_000_000, {"iterations": 10}),
]
"""What ``main()`` runs: every algorithm, the paper's claim and dpkit's corrected one (dp-logreg:
corrected only); about 5 minutes with 2 workers."""
