"""Accuracy and wall time of every registered algorithm on UCI Adult, against the layer's targets.

Runs :func:`dpkit.algorithms.train` with each algorithm's defaults (corrected variant,
δ = 1e-5) at ε ∈ {0.5, 1, 3} over 3 seeds (a non-private algorithm once per seed) and prints
mean ± std accuracy per ε, seconds per run, the majority-class accuracy, and PASS/FAIL per
target:

* every private distributed algorithm: ≥ 0.80 at ε = 1 and ≥ 0.82 at ε = 3;
* the centralised baseline ``dp-logreg``: ≥ 0.82 at ε = 1;
* the non-private ``admm``: ≥ 0.845;
* accuracy does not fall as ε rises beyond seed noise (a drop of mean accuracy between
  consecutive ε larger than 2·√((s₁² + s₂²)/seeds), s the across-seed standard deviations, fails);
* every run takes ≤ 60 s.

Usage::

    python benchmarks/training.py [--data adult] [--eps 0.5 1 3] [--seeds 0 1 2] [--algorithms NAME ...] [--json]

Exit status 1 when a target fails.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time

import numpy as np

from dpkit._threads import single_threaded_blas
from dpkit.algorithms.substrate.data import load_dataset
from dpkit.algorithms.registry import ALGORITHMS
from dpkit.algorithms import train

DELTA = 1e-5
MAX_SECONDS = 60.0
NON_PRIVATE_TARGET = 0.845
BASELINE_TARGET = {1.0: 0.82}
DISTRIBUTED_TARGETS = {1.0: 0.80, 3.0: 0.82}


def run_algorithm(name: str, data, epsilons: list[float], seeds: list[int]) -> dict:
    """Accuracies and seconds of ``name`` per ε (key None for a non-private algorithm)."""
    spec = ALGORITHMS[name]
    variant = "corrected" if "corrected" in spec.variants else None
    budgets = epsilons if spec.private else [None]
    runs: dict = {}
    majority = []
    for epsilon in budgets:
        accuracies, seconds = [], []
        for seed in seeds:
            kwargs = {"epsilon": epsilon, "delta": DELTA} if spec.private else {}
            start = time.perf_counter()
            result = train(name, data, seed=seed, variant=variant, **kwargs)
            seconds.append(time.perf_counter() - start)
            accuracies.append(result.accuracy)
            majority.append(result.config["majority_accuracy"])
        runs[epsilon] = {"accuracy": accuracies, "seconds": seconds}
    return {"name": name, "private": spec.private, "topology": spec.topology, "runs": runs,
            "majority": float(np.mean(majority))}


def verdicts(row: dict, seeds: int) -> list[tuple[str, bool]]:
    """(target, passed) for one algorithm's results."""
    runs = row["runs"]
    mean = {e: float(np.mean(r["accuracy"])) for e, r in runs.items()}
    out = [(f"every run <= {MAX_SECONDS:g} s", max(max(r["seconds"]) for r in runs.values()) <= MAX_SECONDS)]
    if not row["private"]:
        out.append((f"accuracy >= {NON_PRIVATE_TARGET}", mean[None] >= NON_PRIVATE_TARGET))
        return out
    targets = BASELINE_TARGET if row["topology"] == "central" else DISTRIBUTED_TARGETS
    for epsilon, target in targets.items():
        if epsilon in mean:
            out.append((f"accuracy >= {target} at eps={epsilon:g}", mean[epsilon] >= target))
    ordered = sorted(runs)
    for low, high in zip(ordered, ordered[1:]):
        spread = math.sqrt((np.std(runs[low]["accuracy"]) ** 2 + np.std(runs[high]["accuracy"]) ** 2) / seeds)
        out.append((f"no drop eps {low:g} -> {high:g}", mean[high] >= mean[low] - 2.0 * spread))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default="adult", help="dataset name or path (default: the packaged Adult)")
    parser.add_argument("--eps", type=float, nargs="+", default=[0.5, 1.0, 3.0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--algorithms", nargs="+", default=list(ALGORITHMS), choices=list(ALGORITHMS))
    parser.add_argument("--json", action="store_true", help="print the raw results as JSON")
    args = parser.parse_args(argv)
    data = load_dataset(args.data)
    rows = []
    with single_threaded_blas():
        for name in args.algorithms:
            rows.append(run_algorithm(name, data, args.eps, args.seeds))
            print(f"... {name} done", file=sys.stderr, flush=True)
    failed = False
    header = f"{'algorithm':<14}" + "".join(f"{'eps=' + format(e, 'g'):>18}" for e in args.eps) + f"{'s/run':>8}  targets"
    print(header)
    for row in rows:
        cells = []
        for epsilon in args.eps:
            run = row["runs"].get(epsilon if row["private"] else None)
            acc = run["accuracy"]
            cells.append(f"{np.mean(acc):.4f} ± {np.std(acc):.4f}")
        seconds = np.mean([s for r in row["runs"].values() for s in r["seconds"]])
        checks = verdicts(row, len(args.seeds))
        failed |= not all(ok for _, ok in checks)
        label = row["name"] + ("" if row["private"] else " (np)")
        print(f"{label:<14}" + "".join(f"{c:>18}" for c in cells) + f"{seconds:>8.2f}  "
              + "; ".join(f"{'PASS' if ok else 'FAIL'} {text}" for text, ok in checks))
    print(f"{'majority':<14}" + "".join(f"{rows[0]['majority']:>18.4f}" for _ in args.eps))
    print("(np) = non-private: one run per seed, the same at every eps")
    if args.json:
        print(json.dumps([{**row, "runs": {str(k): v for k, v in row["runs"].items()}} for row in rows]))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
