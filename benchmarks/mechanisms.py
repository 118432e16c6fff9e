"""Throughput of dpkit.mechanisms samplers on one core.

Acceptance targets: scalar Laplace and Gaussian ≥ 10⁶ outputs/s through the
vectorised path; SVT with 10 queries ≥ 10⁵ runs/s. Run:

    python benchmarks/mechanisms.py [--json]

Each figure is the best of ``--repeat`` timed calls (default 3) after one warm-up call.
"""

from __future__ import annotations

import argparse
import json
import time
from fractions import Fraction
from typing import Any, Callable

import numpy as np

from dpkit.mechanisms import (
    BinaryRandomizedResponse,
    DiscreteGaussianMechanism,
    DiscreteLaplaceMechanism,
    ExponentialMechanism,
    GaussianMechanism,
    LaplaceMechanism,
    NumericSparse,
    PermuteAndFlip,
    RandomizedResponse,
    ReportNoisyMax,
    SnappingMechanism,
    SparseVector,
    sample_l2_laplace,
)

TARGETS = {"laplace scalar": 1e6, "gaussian scalar": 1e6, "svt 10 queries (c=3)": 1e5}


def rate(call: Callable[[], Any], count: int, repeat: int) -> float:
    """Best items/s over ``repeat`` timed calls of ``call`` (each producing ``count`` items)."""
    call()
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        call()
        best = min(best, time.perf_counter() - start)
    return count / best


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print a JSON object instead of a table")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    rng = np.random.default_rng(0)
    n = 1_000_000
    queries = np.linspace(-5.0, 5.0, 10)
    scores = np.linspace(0.0, 5.0, 10)
    cases: list[tuple[str, Callable[[], Any], int]] = [
        ("laplace scalar", lambda: LaplaceMechanism(1.0).sample(0.0, size=n, rng=rng), n),
        ("gaussian scalar", lambda: GaussianMechanism(1.0).sample(0.0, size=n, rng=rng), n),
        ("snapping scalar", lambda: SnappingMechanism(1.0, 100.0).sample(0.0, size=n, rng=rng), n),
        ("svt 10 queries (c=3)", lambda: SparseVector.from_epsilon(1.0, 0.0, 3).sample(queries, size=n // 10, rng=rng), n // 10),
        ("numeric sparse 10 queries (c=3)", lambda: NumericSparse(0.1, 0.5, 0.4, 0.0, 3).sample(queries, size=n // 10, rng=rng), n // 10),
        ("binary rr", lambda: BinaryRandomizedResponse(1.0).sample(1, size=n, rng=rng), n),
        ("k-ary rr (k=10)", lambda: RandomizedResponse(1.0, 10).sample(3, size=n, rng=rng), n),
        ("rnm laplace 10 candidates", lambda: ReportNoisyMax(1.0).sample(scores, size=n // 10, rng=rng), n // 10),
        ("exponential mechanism 10 candidates", lambda: ExponentialMechanism(1.0).sample(scores, size=n, rng=rng), n),
        ("permute-and-flip 10 candidates", lambda: PermuteAndFlip(1.0).sample(scores, size=n // 10, rng=rng), n // 10),
        ("l2-laplace vectors d=10", lambda: sample_l2_laplace(1.0, 10, size=n // 10, rng=rng), n // 10),
        ("discrete laplace (exact, t=10)", lambda: DiscreteLaplaceMechanism(10).sample(0, size=2_000, rng=rng), 2_000),
        ("discrete gaussian (exact, s2=100)", lambda: DiscreteGaussianMechanism(Fraction(100)).sample(0, size=2_000, rng=rng), 2_000),
    ]
    results = {name: rate(call, count, args.repeat) for name, call, count in cases}
    if args.json:
        print(json.dumps({"per_second": results, "targets": TARGETS}, indent=2))
        return 0
    print(f"{'sampler':40s} {'per second':>14s}  target")
    for name, value in results.items():
        target = TARGETS.get(name)
        verdict = "" if target is None else (f">= {target:.0e}  " + ("ok" if value >= target else "MISSED"))
        print(f"{name:40s} {value:14.3e}  {verdict}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
