"""``dpkit audit``: test a mechanism's claimed (ε, δ) and print an empirical ε lower bound.

Examples (see ``docs/audit.md``)::

    dpkit audit --mechanism rnm --claimed-epsilon 0.7 --json
    dpkit audit --mechanism svt --cutoff 2 --claimed-epsilon 1 --samples 2000000 --workers 2
    dpkit audit --mechanism mypackage.mech:leaky_sum --pairs statdp-one --claimed-epsilon 1 --json

A built-in name runs the corresponding :mod:`dpkit.mechanisms` class calibrated to
``--mechanism-epsilon`` (default: the claimed ε), so a correct mechanism should pass;
``module:function`` imports ``function(database, n, rng)``. The target is resolved by
:func:`resolve_target`, the single place a future ``--algorithm NAME`` plugs into.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import importlib
import json
import sys
import time
from typing import Any, Callable


from dpkit._validation import check_nonnegative, check_unit_interval
from dpkit.audit import StatDPPatterns, audit
from dpkit.cli.audit_algorithm import add_arguments as add_algorithm_arguments
from dpkit.cli.audit_algorithm import run_algorithm

PAIR_NAMES = ("statdp", "statdp-one", "statdp-monotone")
_RELATION = {"statdp": "componentwise", "statdp-one": "one", "statdp-monotone": "monotone"}


def _builtin(name: str, args: argparse.Namespace) -> tuple[Any, str]:
    """(dpkit.mechanisms object, default pair family) for a built-in name."""
    from dpkit import mechanisms as m  # the CLI layer may use mechanisms; dpkit.audit never does

    eps = args.mechanism_epsilon if args.mechanism_epsilon is not None else args.claimed_epsilon
    delta = args.mechanism_delta if args.mechanism_delta is not None else args.claimed_delta
    sens = args.sensitivity
    table: dict[str, Callable[[], tuple[Any, str]]] = {
        "laplace": lambda: (m.LaplaceMechanism(scale=sens / eps, sensitivity=sens), "statdp-one"),
        "gaussian": lambda: (m.GaussianMechanism.from_epsilon_delta(eps, delta, sensitivity=sens), "statdp-one"),
        "rnm": lambda: (m.ReportNoisyMax(epsilon=eps, sensitivity=sens, noise=args.noise), "statdp"),
        "exponential": lambda: (m.ExponentialMechanism(epsilon=eps, sensitivity=sens), "statdp"),
        "permute-and-flip": lambda: (m.PermuteAndFlip(epsilon=eps, sensitivity=sens), "statdp"),
        "svt": lambda: (m.SparseVector.from_epsilon(eps, args.threshold, args.cutoff, sens), "statdp"),
        "above-threshold": lambda: (m.AboveThreshold(epsilon=eps, threshold=args.threshold, sensitivity=sens), "statdp"),
    }
    if name not in table:
        raise ValueError(f"--mechanism must be one of {sorted(table)} or module:function, got {name!r}")
    if eps is None or eps <= 0:
        raise ValueError(f"--mechanism-epsilon must be > 0 for built-in mechanisms, got {eps}")
    return table[name]()


BUILTINS = ("laplace", "gaussian", "rnm", "exponential", "permute-and-flip", "svt", "above-threshold")


def resolve_target(args: argparse.Namespace) -> tuple[Callable[..., Any], str, str]:
    """The callable to audit, its default pair family and a description."""
    name = args.mechanism
    if ":" in name:
        module, _, attr = name.partition(":")
        try:
            target = getattr(importlib.import_module(module), attr)
        except (ImportError, AttributeError) as error:
            raise ValueError(f"cannot load --mechanism {name!r}: {error}") from None
        if not callable(target):
            raise TypeError(f"--mechanism {name!r} is not callable")
        return target, "statdp", name
    mech, family = _builtin(name, args)
    return mech.as_audit_callable(), family, repr(mech)


class _Bar:
    """Progress on stderr, only for a terminal and without ``--quiet``."""

    def __init__(self, quiet: bool):
        self.on = not quiet and getattr(sys.stderr, "isatty", lambda: False)()
        self.last = 0.0

    def __call__(self, done: int, total: int) -> None:
        if not self.on or (time.monotonic() - self.last < 0.1 and done < total):
            return
        self.last = time.monotonic()
        filled = min(30, int(30 * done / max(total, 1)))
        sys.stderr.write(f"\raudit [{'#' * filled}{'.' * (30 - filled)}] {done}/{total} samples")
        sys.stderr.flush()

    def close(self) -> None:
        if self.on:
            sys.stderr.write("\n")


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "audit", help="test a claimed (epsilon, delta) of a mechanism; print an empirical epsilon lower bound",
        description="Sample a mechanism on neighbouring inputs and test its claimed (epsilon, delta).",
    )
    parser.add_argument("--mechanism", help=f"one of {', '.join(BUILTINS)}, or module:function (required unless --algorithm)")
    parser.add_argument("--claimed-epsilon", type=float, help="required unless --algorithm")
    parser.add_argument("--claimed-delta", type=float, default=0.0)
    parser.add_argument("--mechanism-epsilon", type=float, help="epsilon the built-in is calibrated to (default: claimed)")
    parser.add_argument("--mechanism-delta", type=float, help="delta of the built-in gaussian (default: claimed)")
    parser.add_argument("--sensitivity", type=float, default=1.0, help="query sensitivity / pattern step (default 1)")
    parser.add_argument("--threshold", type=float, default=1.0, help="svt threshold T (default 1)")
    parser.add_argument("--cutoff", type=int, default=1, help="svt cut-off c (default 1)")
    parser.add_argument("--noise", default="laplace", help="rnm noise: laplace, exponential, gumbel")
    parser.add_argument("--pairs", choices=PAIR_NAMES, help="input patterns (default: per mechanism)")
    parser.add_argument("--length", type=int, default=10, help="number of query answers in the patterns (default 10)")
    parser.add_argument("--samples", type=int, help="total mechanism samples (default 10^7)")
    parser.add_argument("--confidence", type=float, default=0.95)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--workers", type=int, default=1, help="processes (results do not depend on it)")
    parser.add_argument("--sequential", action="store_true", help="anytime-valid mode that may stop early")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    parser.add_argument("--json", action="store_true", help="print a JSON object")
    add_algorithm_arguments(parser)  # --algorithm NAME (engineer H, dpkit/cli/audit_algorithm.py)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if getattr(args, "algorithm", None):  # seed-algorithm audits: dpkit/cli/audit_algorithm.py
        return run_algorithm(args)
    if args.mechanism is None or args.claimed_epsilon is None:
        raise ValueError("--mechanism and --claimed-epsilon are required (or use --algorithm NAME)")
    check_nonnegative("claimed_epsilon", args.claimed_epsilon)
    check_unit_interval("claimed_delta", args.claimed_delta, include_one=False)
    if args.workers < 1:
        raise ValueError(f"--workers must be >= 1, got {args.workers}")
    target, family, description = resolve_target(args)
    family = args.pairs or family
    pairs = StatDPPatterns(length=args.length, relation=_RELATION[family], sensitivity=args.sensitivity)
    bar = _Bar(args.quiet or args.json)
    executor = concurrent.futures.ProcessPoolExecutor(args.workers) if args.workers > 1 else None
    try:
        result = audit(target, pairs, claimed_epsilon=args.claimed_epsilon, claimed_delta=args.claimed_delta,
                       confidence=args.confidence, samples=args.samples, rng=args.seed, executor=executor,
                       sequential=args.sequential, progress=bar)
    finally:
        bar.close()
        if executor is not None:
            executor.shutdown()
    if args.json:
        out = result.to_dict()
        out["mechanism"] = description
        out["pairs"] = family
        print(json.dumps(out))
        return 0
    verdict = "VIOLATION: claim refuted" if result.violation else "no violation found"
    print(f"{description}: claimed ({args.claimed_epsilon:g}, {args.claimed_delta:g})-DP")
    print(f"epsilon lower bound {result.epsilon_lower_bound:.4f} at confidence {result.confidence:g} "
          f"(p = {result.p_value:.3g}): {verdict}")
    w = result.witness
    print(f"witness: pair {w['pair']['label']}, {w['event']['family']} event ({w['event']['shape']}), "
          f"counts {w['count_numerator']} vs {w['count_denominator']} of {w['samples_per_input']}")
    print(f"{result.samples} samples in {result.seconds:.1f} s")
    return 0
