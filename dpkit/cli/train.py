"""``dpkit train``: run a private distributed learning algorithm and report accuracy and privacy.

Example::

    dpkit train --algorithm pp-admm --data ../shared/data/adult --epsilon 1 --delta 1e-4 \
        --agents 5 --iterations 30 --seed 0 --json

The JSON object has at least ``accuracy``, ``epsilon_paper`` (null when the paper states no total),
``epsilon_corrected`` (a valid bound), ``delta``, ``iterations``, ``seconds`` and ``ledger``.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from dpkit._progress import progress as progress_bar
from dpkit._threads import single_threaded_blas
from dpkit.algorithms import registry
from dpkit.algorithms.data import ADULT_VARIANTS, load_dataset

_OPTIONS = {
    "accounting": str, "eta": float, "lam": float, "beta": float, "rho": float, "lam_over_n": float,
    "regulariser": str, "budget": str, "cap": int, "clip": float, "alpha": float, "record_every": int,
    "schedule": str, "splits": float, "R": float, "V": float, "a": float, "C_R": float, "learning_rate": float,
    "records_per_user": int, "max_rounds": int,
}


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "train", help="train a (private) distributed model on Adult, a file or the built-in data",
        description="Run one of the seed papers' algorithms; prints accuracy, the paper's and the corrected epsilon.",
    )
    parser.add_argument("--algorithm", required=True, help="one of: " + ", ".join(sorted(registry.ALGORITHMS)))
    parser.add_argument("--data", default="builtin", help="'builtin', 'synthetic', an Adult directory, or a CSV/LIBSVM file")
    parser.add_argument("--variant", default="104", choices=ADULT_VARIANTS, help="Adult encoding (d)")
    parser.add_argument("--epsilon", type=float, help="total privacy budget epsilon")
    parser.add_argument("--delta", type=float, help="total delta (default: the paper's)")
    parser.add_argument("--agents", type=int, help="number of agents N (default: the paper's)")
    parser.add_argument("--iterations", type=int, help="iterations T (default: the paper's)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--n-train", type=int, help="training rows (default: the paper's, at most 80%%)")
    parser.add_argument("--graph", default="random", choices=("random", "ring", "complete", "star"))
    parser.add_argument("--edges", type=int, help="edges of the random graph")
    for name, kind in _OPTIONS.items():
        parser.add_argument("--" + name.replace("_", "-"), dest=name, type=kind, default=None,
                            help=f"algorithm option {name} (see the algorithm's docstring)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--out", help="also write the full JSON result to this file")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    spec = registry.get_algorithm(args.algorithm)
    try:
        data = load_dataset(args.data, variant=args.variant, rng=args.seed)
    except FileNotFoundError as error:  # main() turns ValueError into a one-line message, exit 2
        raise ValueError(str(error)) from None
    options = {k: getattr(args, k) for k in _OPTIONS if getattr(args, k) is not None}
    bar = None

    def tick(t: int, total: int) -> None:
        nonlocal bar
        if bar is None:
            bar = iter(progress_bar(range(total), total=total, desc=args.algorithm, quiet=args.quiet))
        next(bar, None)

    with single_threaded_blas():
        result = registry.run_algorithm(
            spec.name, data, epsilon=args.epsilon, delta=args.delta, agents=args.agents, iterations=args.iterations,
            seed=args.seed, n_train=args.n_train, graph=args.graph, edges=args.edges, progress=tick, **options,
        )
    if bar is not None:
        for _ in bar:
            pass
    full = result.to_dict()
    if args.out:
        with open(args.out, "w", encoding="utf-8") as handle:
            json.dump(full, handle, indent=1)
    if args.json:
        keys = ("algorithm", "accuracy", "epsilon_paper", "epsilon_corrected", "delta", "iterations", "seconds",
                "ledger", "guarantees", "agent_accuracies", "config", "notes")
        print(json.dumps({k: full[k] for k in keys}))
        return 0
    acc = "n/a" if result.accuracy is None else f"{result.accuracy:.4f}"
    if result.epsilon_paper is not None:
        paper = f"{result.epsilon_paper:.4f} (paper's rule, not a valid bound)"
    else:
        paper = "null (the paper gives no total)" if spec.private else "n/a (non-private)"
    corrected = "n/a (non-private)" if result.epsilon_corrected is None else f"{result.epsilon_corrected:.4f} (valid upper bound)"
    delta = full["delta"]
    print(f"algorithm        {result.algorithm}")
    print(f"test accuracy    {acc}")
    print(f"epsilon paper    {paper}")
    print(f"epsilon correct  {corrected}")
    print(f"delta            {delta}")
    print(f"iterations       {result.config.get('iterations')}")
    print(f"seconds          {result.seconds:.2f}")
    return 0
