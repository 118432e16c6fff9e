"""``dpkit audit --algorithm NAME``: audit a seed algorithm's privacy claim on a small worst-case instance.

The instances are :mod:`dpkit.algorithms.audit_scenarios` (one-record neighbours, the release
the paper protects, the claim as an (ε, δ)); ``--variant corrected`` audits dpkit's corrected
calibration or accounting instead of the paper's claim. Examples::

    dpkit audit --algorithm a-ddp --samples 400000
    dpkit audit --algorithm dvp-admm --iterations 30 --samples 4000 --json
    dpkit audit --algorithm pp-admm --variant corrected

The claim comes from the scenario, so ``--mechanism`` and ``--claimed-epsilon`` are not used.
Wiring (in :mod:`dpkit.cli.audit`): ``add_arguments(parser)`` in ``register`` and, first thing in
``run``, ``if getattr(args, "algorithm", None): return run_algorithm(args)``.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
from typing import TYPE_CHECKING, Any

from dpkit.audit import audit

if TYPE_CHECKING:
    from dpkit.algorithms.audit_scenarios import AuditScenario

# algorithm name (as in ``dpkit train``) -> (scenario, what is audited)
ALGORITHMS: dict[str, tuple[str, str]] = {
    "pp-admm": ("seed000-approx-minimizer",
                "seed 000 output perturbation with an adversarial compliant optimiser (F5/A1)"),
    "ipp-admm": ("seed000-svt", "seed 000 sparse vector step (A4)"),
    "a-ddp": ("seed002-sensitivity", "seed 002 one upload, sensitivity C vs 2C (F6)"),
    "dvp-admm": ("seed003-dvp-transcript", "seed 003 T-iteration transcript vs per-iteration alpha (§3.2)"),
    "dp-admm": ("seed004-gaussian-release", "seed 004 one iterate vs Theorem 1's (epsilon, delta)"),
}
# the scenario names of dpkit.algorithms.audit_scenarios.SCENARIOS (kept literal so that `dpkit` starts
# without importing the algorithms; a test checks they agree)
SCENARIO_NAMES = ("seed000-approx-minimizer", "seed000-svt", "seed002-sensitivity", "seed003-dvp-transcript",
                  "seed004-gaussian-release")
ALGORITHM_NAMES = tuple(ALGORITHMS) + SCENARIO_NAMES


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add ``--algorithm``, ``--variant`` and ``--iterations`` to the ``audit`` parser."""
    group = parser.add_argument_group("seed algorithms (instead of --mechanism)")
    group.add_argument("--algorithm", choices=ALGORITHM_NAMES,
                       help="audit a seed algorithm's claim on a small worst-case instance")
    group.add_argument("--variant", choices=("paper", "corrected"), default="paper",
                       help="the paper's claim (default) or dpkit's corrected one")
    group.add_argument("--iterations", type=int, default=None,
                       help="dvp-admm: transcript length T (default 30); dp-admm --variant corrected: T (default 10)")


def build(args: argparse.Namespace) -> "AuditScenario":
    """The scenario named by ``args.algorithm`` / ``args.variant`` / ``args.iterations``."""
    from dpkit.algorithms.audit_scenarios import make_scenario

    name = ALGORITHMS[args.algorithm][0] if args.algorithm in ALGORITHMS else args.algorithm
    kwargs: dict[str, Any] = {}
    iterations = getattr(args, "iterations", None)
    if name == "seed003-dvp-transcript":
        kwargs["iterations"] = 30 if iterations is None else iterations
    elif name == "seed004-gaussian-release" and getattr(args, "variant", "paper") == "corrected":
        kwargs["iterations"] = 10 if iterations is None else iterations
    elif iterations is not None:
        raise ValueError(f"--iterations applies to dvp-admm and to dp-admm --variant corrected only, "
                         f"got --algorithm {args.algorithm}")
    return make_scenario(name, corrected=getattr(args, "variant", "paper") == "corrected", **kwargs)


def run_algorithm(args: argparse.Namespace) -> int:
    """Run the audit of ``args.algorithm`` and print the verdict (or JSON with ``--json``)."""
    scenario = build(args)
    workers = getattr(args, "workers", 1) or 1
    if workers < 1:
        raise ValueError(f"--workers must be >= 1, got {workers}")
    samples = getattr(args, "samples", None)
    if samples is None:
        samples = 20_000 if scenario.seed == "003" else 2_000_000
    executor = concurrent.futures.ProcessPoolExecutor(workers) if workers > 1 else None
    try:
        result = audit(scenario.mechanism, scenario.pairs, scenario.claimed_epsilon, scenario.claimed_delta,
                       confidence=getattr(args, "confidence", 0.95), samples=samples, rng=getattr(args, "seed", 0),
                       executor=executor)
    finally:
        if executor is not None:
            executor.shutdown()
    if getattr(args, "json", False):
        out = result.to_dict()
        out["algorithm"] = args.algorithm
        out["scenario"] = scenario.to_dict()
        out["as_predicted"] = result.violation == scenario.expect_violation
        print(json.dumps(out, default=str))
        return 0
    verdict = "VIOLATION: claim refuted" if result.violation else "no violation found"
    print(f"{args.algorithm} ({scenario.name}): {scenario.claim}")
    print(f"claimed ({scenario.claimed_epsilon:.6g}, {scenario.claimed_delta:g})-DP; epsilon lower bound "
          f"{result.epsilon_lower_bound:.4f} at confidence {result.confidence:g} (p = {result.p_value:.3g}): {verdict}")
    if scenario.true_epsilon is not None:
        print(f"true epsilon of this instance: {scenario.true_epsilon:.4f} ({scenario.true_epsilon_note})")
    print(f"spec predicts: {scenario.prediction}")
    print(f"{result.samples} samples in {result.seconds:.1f} s")
    return 0
