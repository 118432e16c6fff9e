"""Where the distributed algorithms lose the margin to dp-logreg: agents, rounds, scaling, fallback.

Validation splits only, as ``benchmarks/tune_defaults.py`` carves them: for each seed s the table is
split as ``dpkit train --seed s`` splits it, the test rows are set aside, and the training rows are
split again (75 % fit, 25 % validation). Every configuration of every algorithm is scored on the
validation rows, against the majority class and the non-private logistic regression
(:func:`~dpkit.algorithms.baselines.centralised.centralised_fit`, λ = 1e-5) fitted on the same fit rows.

Configurations (one factor at a time, the rest at the defaults of ``dpkit train``):

* ``default``: published column ranges, default agents (``default_agents``), rounds and fallback;
* ``agents=1``: one agent (star algorithms; a graph needs two, which is their default at these sizes);
* ``T/2`` and ``2T``: half and twice the default number of rounds (the noise is recalibrated to the
  budget for the new T, so these measure how the algorithm spends ε over rounds);
* ``private ranges`` and ``clip 0.95``: the raw table scaled by ranges estimated from the fit rows
  with noise, or clipped at private 5 %/95 % quantiles (:mod:`dpkit.algorithms.substrate.private_quantiles`),
  both charged to the run's ε.

For each it prints the mean validation accuracy, the share of the margin (non-private LR − majority)
it recovers, and how often the class-prior fallback returned a constant instead of the trained model.

Usage::

    python benchmarks/distributed_gap.py --tables spam7 creditdata nmes1988 --eps 1 --seeds 0 1 2 \
        [--algorithms NAME ...] [--configs default agents=1 T/2 2T private clip]
"""

from __future__ import annotations

import argparse
import sys
import warnings

import numpy as np

from dpkit.algorithms.baselines.centralised import centralised_fit
from dpkit.algorithms.registry import ALGORITHMS
from dpkit.algorithms.substrate.evaluation import majority_accuracy
from dpkit.algorithms.substrate.public_tables import load_public_table
from dpkit.algorithms.training import prepare, train
from tune_defaults import FIT_SHARE, training_rows

CONFIGS = ("default", "agents=1", "T/2", "2T", "private", "clip")
CLIP_QUANTILE = 0.95


def run(name: str, tables: dict, seed: int, config: str, epsilon: float, default_rounds: dict) -> dict:
    """One validation run of ``name`` under ``config``: its accuracy and whether the fallback chose a constant."""
    raw = config in ("private", "clip")
    rows = training_rows(name, tables["private" if raw else "public"], seed)
    options: dict = {"n_train": int(FIT_SHARE * rows.n)}
    if config == "agents=1":
        options["agents"] = 1
    elif config in ("T/2", "2T"):
        options["iterations"] = max(1, round(default_rounds[(name, seed)] * (0.5 if config == "T/2" else 2.0)))
    elif config == "clip":
        options["clip_quantile"] = CLIP_QUANTILE
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = train(name, rows, epsilon=epsilon, seed=seed, **options)
    if config == "default":
        default_rounds[(name, seed)] = result.config["iterations"]
    chosen = result.config.get("fallback", {}).get("chosen", "trained model")
    return {"accuracy": result.accuracy, "constant": chosen != "trained model", "agents": result.config["agents"]}


def references(data, seed: int) -> tuple[float, float]:
    """(majority, non-private LR) validation accuracy on the seed's validation split (published ranges)."""
    rows = training_rows("dp-logreg", data, seed)
    setting = prepare(ALGORITHMS["dp-logreg"], rows, agents=1, seed=seed, n_train=int(FIT_SHARE * rows.n))
    theta = centralised_fit(setting.parts[0], 1e-5)
    logistic = float(np.mean(np.where(setting.test.X @ theta > 0, 1.0, -1.0) == setting.test.y))
    return majority_accuracy(setting.test), logistic


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tables", nargs="+", required=True, help="published tables (dpkit.algorithms.substrate.public_tables)")
    parser.add_argument("--algorithms", nargs="+", choices=[n for n, s in ALGORITHMS.items() if s.private],
                        default=[n for n, s in ALGORITHMS.items() if s.private and n != "a-ddp"])
    parser.add_argument("--configs", nargs="+", choices=CONFIGS, default=list(CONFIGS))
    parser.add_argument("--eps", type=float, default=1.0)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    args = parser.parse_args(argv)
    configs = ["default"] + [c for c in args.configs if c != "default"]
    for table in args.tables:
        tables = {"public": load_public_table(table), "private": load_public_table(table, "private")}
        refs = [references(tables["public"], seed) for seed in args.seeds]
        majority, logistic = float(np.mean([r[0] for r in refs])), float(np.mean([r[1] for r in refs]))
        margin = logistic - majority
        print(f"\n{table}: validation majority {majority:.4f}, non-private LR {logistic:.4f}, margin {100 * margin:.1f} "
              f"points; eps={args.eps:g}, seeds {args.seeds}")
        print(f"{'algorithm':<13}" + "".join(f"{c:>22}" for c in configs))
        for name in args.algorithms:
            default_rounds: dict = {}
            cells = []
            for config in configs:
                if config == "agents=1" and ALGORITHMS[name].topology == "graph":
                    cells.append("-")
                    continue
                runs = [run(name, tables, seed, config, args.eps, default_rounds) for seed in args.seeds]
                accuracy = float(np.mean([r["accuracy"] for r in runs]))
                share = (accuracy - majority) / margin if margin > 0 else float("nan")
                constants = sum(r["constant"] for r in runs)
                cells.append(f"{accuracy:.3f} {share:5.0%} c{constants}")
            print(f"{name:<13}" + "".join(f"{c:>22}" for c in cells), flush=True)
    print("\ncells: validation accuracy, share of the margin, c = runs whose fallback returned a constant")
    return 0


if __name__ == "__main__":
    sys.exit(main())
