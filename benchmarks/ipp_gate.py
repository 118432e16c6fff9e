"""IPP-ADMM's gate: share of broadcast chances skipped against accuracy, beside PP-ADMM at equal ε.

For each threshold α (on the quality score's own scale: q is a difference of clipped mean losses,
in [−C_loss, C_loss]) and each seed, runs the corrected ``ipp-admm`` with its defaults otherwise,
and ``pp-admm`` at the same ε, on Adult. The rows are those ``dpkit train`` uses for training
(seeded split); 20 % of them are held out as a *validation* set that scores the runs, so the
test rows are never seen. Prints mean validation accuracy, the gate's skip share (⊥ answers over
queries, :func:`dpkit.algorithms.pp_admm.ipp_admm.skip_share`) and broadcasts saved, per α, with
the deadline (the default: an agent with as many releases left as rounds broadcasts, so it makes
all c releases it pays for) and/or without it (Ding et al.'s Alg. 2 as written), and with the
threshold drawn once per agent (the default, Lyu et al.'s Alg. 1) and/or afresh after every ⊤;
``lowest`` is the smallest skip share of one run over the seeds. ``--alphas default`` is the corrected
variant's default threshold (the admitting one, −ADMIT noise scales), ``paper`` the paper's α = 1e-3.

Usage::

    python benchmarks/ipp_gate.py [--eps 1] [--seeds 0 1] [--alphas default paper 0 -0.05] [--deadline on off]
                                  [--redraw on off] [--json]
"""

from __future__ import annotations

import argparse
import json
import sys

import numpy as np

from dpkit._threads import single_threaded_blas
from dpkit.algorithms.substrate.budget import Budget
from dpkit.algorithms.substrate.data import load_adult, train_test_split
from dpkit.algorithms.substrate.partition import partition
from dpkit.algorithms.pp_admm.ipp_admm import ALPHA
from dpkit.algorithms.registry import ALGORITHMS
from dpkit.algorithms.training import prepare

DELTA = 1e-5


def validation_setting(name: str, seed: int):
    """(parts, validation, graph): the training rows of ``dpkit train --seed seed``, 80 % partitioned
    over the agents and 20 % held out for validation."""
    spec = ALGORITHMS[name]
    setting = prepare(spec, load_adult(), seed=seed)
    rows = setting.parts[0]
    for part in setting.parts[1:]:
        rows = type(rows)(np.vstack([rows.X, part.X]), np.concatenate([rows.y, part.y]), rows.name, rows.feature_names)
    fit, validation = train_test_split(rows, 0.8, np.random.default_rng(seed + 1000))
    return partition(fit, len(setting.parts), rng=seed), validation, setting.graph


def run(name: str, seed: int, epsilon: float, **options) -> dict:
    parts, validation, graph = validation_setting(name, seed)
    result = ALGORITHMS[name].runner(parts, validation, graph, budget=Budget(epsilon, DELTA), iterations=None,
                                     variant="corrected", rng=np.random.default_rng(seed), progress=None, **options)
    config = result.config
    return {"accuracy": result.accuracy, "skip_share": config.get("gate_skip_share"),
            "saved": config.get("broadcasts_saved")}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--eps", type=float, default=1.0)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1])
    parser.add_argument("--alphas", nargs="+", default=["default", "paper", "0", "-0.05"])
    parser.add_argument("--deadline", nargs="+", choices=("on", "off"), default=["on"])
    parser.add_argument("--redraw", nargs="+", choices=("on", "off"), default=["off"],
                        help="off: one SVT with cut-off c, its threshold drawn once (the default); "
                             "on: c cut-off-1 SVTs, the threshold drawn afresh after every ⊤")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    rows = []
    with single_threaded_blas():
        pp = [run("pp-admm", seed, args.eps) for seed in args.seeds]
        rows.append({"setting": "pp-admm", "accuracy": float(np.mean([r["accuracy"] for r in pp]))})
        for redraw in args.redraw:
            for deadline in args.deadline:
                for alpha in args.alphas:
                    options = {"deadline": deadline == "on", "redraw": redraw == "on"} | (
                        {} if alpha == "default" else {"alpha": ALPHA if alpha == "paper" else float(alpha)})
                    runs = [run("ipp-admm", seed, args.eps, **options) for seed in args.seeds]
                    setting = f"ipp-admm alpha={alpha} deadline={deadline} redraw={redraw}"
                    rows.append({"setting": setting, "accuracy": float(np.mean([r["accuracy"] for r in runs])),
                                 "skip_share": float(np.mean([r["skip_share"] for r in runs])),
                                 "skip_share_min": float(np.min([r["skip_share"] for r in runs])),
                                 "saved": float(np.mean([r["saved"] for r in runs]))})
                    print(f"... {setting} done", file=sys.stderr, flush=True)
    print(f"{'setting':<52}{'val. accuracy':>14}{'skip share':>12}{'lowest':>8}{'saved':>8}   "
          f"(eps={args.eps:g}, seeds {args.seeds})")
    for row in rows:
        skip = "" if "skip_share" not in row else f"{row['skip_share']:.3f}"
        lowest = "" if "skip_share_min" not in row else f"{row['skip_share_min']:.3f}"
        saved = "" if "saved" not in row else f"{row['saved']:.1f}"
        print(f"{row['setting']:<52}{row['accuracy']:>14.4f}{skip:>12}{lowest:>8}{saved:>8}")
    if args.json:
        print(json.dumps(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
