"""``dpkit audit --algorithm NAME``: test an algorithm's privacy claim on its audit scenario.

The scenarios (:mod:`dpkit.algorithms.audit_instances`) are small worst-case instances that run the
algorithm's own release code on one-record neighbours. ``--variant paper`` (default) tests the
paper's claim, ``--variant corrected`` dpkit's calibration; the claim comes from the scenario,
so ``--mechanism`` and ``--claimed-epsilon`` do not apply. Exit code 3 when the claim is refuted.
"""

from __future__ import annotations

import argparse
import concurrent.futures
from typing import Any

from dpkit.algorithms.audit_instances import SCENARIOS, AuditScenario, make_scenario
from dpkit.audit import Pair
from dpkit.commands import strict_json
from dpkit.commands.audit.algorithm_audits import audit_scenario
from dpkit.commands.audit.options import library_keywords
from dpkit.commands.audit.output import P_VALUE_FLOOR, format_p_value, witness_lines
from dpkit.commands.audit.pairs import describe_change, describe_pairs
from dpkit.commands.errors import EXIT_OK, EXIT_REFUTED

__all__ = ["add_arguments", "build", "run_algorithm"]

ITERATION_SCENARIOS = ("dvp-admm", "dp-admm", "hetero-admm", "dp-logreg")
"""Algorithms whose scenario is a transcript of ``--iterations`` rounds."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add ``--algorithm``, ``--variant`` and ``--iterations`` to the ``audit`` parser."""
    group = parser.add_argument_group("algorithms (instead of --mechanism)")
    group.add_argument("--algorithm", choices=tuple(SCENARIOS),
                       help="audit an algorithm's claim on a small worst-case instance run by its own code")
    group.add_argument("--variant", choices=("paper", "corrected"),
                       help="the paper's claim (default) or dpkit's corrected calibration")
    group.add_argument("--iterations", type=int, default=None,
                       help=f"transcript length T for {', '.join(ITERATION_SCENARIOS)} (default: the scenario's)")


def build(args: argparse.Namespace) -> AuditScenario:
    """The scenario of ``args.algorithm`` in ``args.variant``, with ``args.iterations`` if given."""
    parameters: dict[str, Any] = {}
    iterations = getattr(args, "iterations", None)
    if iterations is not None:
        if args.algorithm not in ITERATION_SCENARIOS:
            raise ValueError(f"--iterations applies to --algorithm {', '.join(ITERATION_SCENARIOS)} only, "
                             f"got --algorithm {args.algorithm}")
        parameters["iterations"] = iterations
    variant = getattr(args, "variant", None) or ("corrected" if args.algorithm == "dp-logreg" else "paper")
    if args.algorithm == "dp-logreg" and variant == "paper":
        raise ValueError("--variant paper does not apply to --algorithm dp-logreg (dpkit's own baseline has no paper claim)")
    return make_scenario(args.algorithm, corrected=variant == "corrected", **parameters)


def run_algorithm(args: argparse.Namespace) -> int:
    """Run the audit of ``args.algorithm`` and print the verdict (or JSON with ``--json``)."""
    scenario = build(args)
    workers = getattr(args, "workers", 1) or 1
    if workers < 1:
        raise ValueError(f"--workers must be >= 1, got {workers}")
    keywords = library_keywords(args, None)
    executor = concurrent.futures.ProcessPoolExecutor(workers) if workers > 1 else None
    try:
        result = audit_scenario(scenario, samples=getattr(args, "samples", None), rng=getattr(args, "seed", 0),
                                confidence=getattr(args, "confidence", 0.95), executor=executor,
                                batch_timeout=getattr(args, "batch_timeout", None), **keywords)
    finally:
        if executor is not None:
            executor.shutdown()
    status = EXIT_REFUTED if result.violation else EXIT_OK
    pairs = [Pair(first, second, f"pair{i}") for i, (first, second) in enumerate(scenario.pairs)]
    relation = describe_pairs(pairs, f"scenario {scenario.name}")
    witness = result.witness
    change = describe_change(Pair(witness["pair"]["first"], witness["pair"]["second"], "")) if "pair" in witness else None
    if getattr(args, "json", False):
        out = result.to_dict()
        out["algorithm"] = args.algorithm
        out["scenario"] = scenario.to_dict()
        out["as_predicted"] = result.violation == scenario.expect_violation
        out["relation"] = relation
        out["witness_change"] = change
        out["p_value_floor"] = result.p_value <= P_VALUE_FLOOR
        print(strict_json.dumps(out, default=str))
        return status
    verdict = "VIOLATION: claim refuted" if result.violation else "no violation found"
    print(f"{args.algorithm} ({scenario.name}): {scenario.claim}")
    print(f"claimed ({scenario.claimed_epsilon:.6g}, {scenario.claimed_delta:g})-DP; epsilon lower bound "
          f"{result.epsilon_lower_bound:.4f} at confidence {result.confidence:g} ({format_p_value(result.p_value)}): {verdict}")
    if scenario.true_epsilon is not None:
        print(f"true epsilon of this instance: {scenario.true_epsilon:.4f} ({scenario.true_epsilon_note})")
    print(f"predicted: {scenario.prediction}")
    if not keywords.get("float_bits", False):
        print("audited in exact arithmetic: the released values only, as the claim is stated (--float-bits audits "
              "the float outputs as executed)")
    print(f"neighbouring relation: {relation}")
    for line in witness_lines(witness, change):
        print(line)
    print(f"{result.samples} samples in {result.seconds:.1f} s")
    return status
