"""Validation runs behind the defaults of ``dpkit.algorithms.substrate.defaults`` (the rows-per-agent floor).

Never touches a test set: for each seed s the table is split as ``dpkit train --seed s`` splits it
(``prepare``: ``n_train`` training rows, the rest test), the test rows are set aside, and the
training rows alone are split again (``train(..., seed=s)`` on them: 75 % fit, 25 % validation).
Every candidate is scored on those validation rows.

For each table, algorithm and candidate floor F the number of agents is
``default_agents(spec, n_fit, floor=F)`` (clamp(n_fit // F, 2 for graph algorithms else 1,
the algorithm's default)); ``--option key=value`` adds an algorithm option to every run.
It prints the validation accuracy (mean ± sd over the seeds) beside the validation split's majority
class, per floor.

Usage::

    python benchmarks/tune_defaults.py [--tables psid7682 doctorvisits adult ...] [--floors 1000 1500 2000]
        [--algorithms NAME ...] [--eps 1] [--seeds 0 1 2] [--option lam=0.01 ...] [--scaling private] [--per-seed]

Results that set ``MIN_ROWS_PER_AGENT`` (see ``docs/algorithms.md``, "Defaults that travel"),
PP-ADMM's ``NOISE_STD`` (``--algorithms pp-admm ipp-admm --floors 1500 --seeds 0 1 2 3
--option noise_std=0.5``; ``docs/algorithms/pp-admm.md``) and DP-ADMM's ``FLAT_SPREAD``
(``--tables fair psid7682 nmes1988 workinghours benefits --algorithms dp-admm --floors 1500
--scaling private --seeds 0 … 15 --option flat_spread=r --per-seed`` for r in inf, 1, 1.414, 2, 4,
each seed paired against r = inf; ``docs/algorithms/dp-admm.md``). hetero-admm's rounds
(``default_rounds(sizes, epsilon)`` = clip(⌈25·7,200/min m_i⌉, 25, cap), cap = clip(⌈50·ε⌉, 25, 100)) have
two parts. The sizes' rule came from ``benchmarks/distributed_gap.py`` (the same validation splits) and
``--tables creditdata flchain nmes1988 wachurn --algorithms hetero-admm --floors 1500 --option
iterations=T`` for T in 25, 50, 100. The ε cap (``ROUNDS_PER_EPSILON`` = 50: 50 rounds at ε = 1, 100
from ε = 2) came from the same split of the ten published tables of ≥ 4,000 rows with a ≥ 5-point
margin, each run with the servers its test run has and the rounds capped at T_max in 35, 50, 70, 75
and 100 (seeds 0–11 at ε = 1, 0–5 at ε = 3; ``docs/algorithms/hetero-admm.md``, "Rounds and ε").
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import warnings

import numpy as np

from dpkit.algorithms.substrate.defaults import default_agents
from dpkit.algorithms.registry import ALGORITHMS
from dpkit.algorithms.substrate.data import Dataset, load_adult
from dpkit.algorithms.substrate.evaluation import majority_accuracy
from dpkit.algorithms.substrate.public_tables import load_public_table
from dpkit.algorithms.training import prepare, train

FIT_SHARE = 0.75


def training_rows(name: str, data: Dataset, seed: int) -> Dataset:
    """The training rows ``dpkit train --algorithm name --seed seed`` would use (its test rows left out)."""
    parts = prepare(ALGORITHMS[name], data, agents=1, seed=seed).parts
    return dataclasses.replace(data, X=np.vstack([p.X for p in parts]), y=np.concatenate([p.y for p in parts]),
                               name=data.name + ":train")


def validate(name: str, data: Dataset, floor: int, epsilon: float, seeds: list[int], options: dict) -> tuple[list, list, int]:
    """(validation accuracies, validation majority accuracies, agents) over ``seeds``."""
    spec = ALGORITHMS[name]
    accuracies, majorities = [], []
    agents = 0
    for seed in seeds:
        rows = training_rows(name, data, seed)
        n_fit = int(FIT_SHARE * rows.n)
        agents = default_agents(spec, n_fit, floor=floor)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            result = train(name, rows, epsilon=epsilon if spec.private else None, agents=agents, seed=seed,
                           n_train=n_fit, **options)
        accuracies.append(result.accuracy)
        majorities.append(result.config["majority_accuracy"])
    return accuracies, majorities, agents


def _value(text: str):
    """An option's value: an int, a float, or the text itself (``average=tail``)."""
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tables", nargs="+", default=["psid7682", "doctorvisits", "randhie"],
                        help="published tables of dpkit.algorithms.substrate.public_tables, or 'adult' (the packaged Adult)")
    parser.add_argument("--floors", type=int, nargs="+", default=[1000, 1500, 2000])
    parser.add_argument("--algorithms", nargs="+", default=[n for n, s in ALGORITHMS.items() if s.private],
                        choices=list(ALGORITHMS))
    parser.add_argument("--eps", type=float, default=1.0)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--option", action="append", default=[], help="key=value, passed to every run")
    parser.add_argument("--scaling", choices=("public", "private"), default="public",
                        help="the tables' column ranges: published, or estimated by each run from its fit rows "
                             "(charged to its eps, as dpkit train reads a file); Adult keeps its encoding")
    parser.add_argument("--per-seed", action="store_true",
                        help="also print each seed's validation accuracy (for paired comparisons of two options)")
    args = parser.parse_args(argv)
    options = {k: _value(v) for k, v in (item.split("=", 1) for item in args.option)}
    print(f"validation split: {FIT_SHARE:.0%} of each seed's training rows fit, the rest score; eps={args.eps:g}; "
          f"{args.scaling} ranges; options={options}")
    for table in args.tables:
        data = load_adult() if table == "adult" else load_public_table(table, args.scaling)
        for name in args.algorithms:
            cells = []
            for floor in args.floors:
                acc, maj, agents = validate(name, data, floor, args.eps, args.seeds, options)
                cells.append(f"F={floor}: {np.mean(acc):.4f}±{np.std(acc):.4f} ({agents} ag)")
                if args.per_seed:
                    cells.append("[" + " ".join(f"{a:.4f}" for a in acc) + "]")
            print(f"{table:<16}{name:<12} majority {np.mean(maj):.4f}  " + "  ".join(cells), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
