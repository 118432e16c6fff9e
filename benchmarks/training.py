"""Accuracy and wall time of every registered algorithm on UCI Adult, against the layer's targets.

Runs ``dpkit train`` with each algorithm's defaults (corrected variant, δ = 1e-5) at
ε ∈ {0.5, 1, 3} over 3 seeds (a non-private algorithm once per seed), each run one whole CLI
process (``python -m dpkit.cli.main train ... --json``) whose wall time is the run's time:
interpreter start, data loading, calibration, training and scoring. It prints mean ± std
accuracy per ε, seconds per run, the majority-class accuracy, and PASS/FAIL per target:

* every private distributed algorithm: ≥ 0.80 at ε = 1 and ≥ 0.82 at ε = 3;
* the centralised baseline ``dp-logreg``: ≥ 0.82 at ε = 1;
* the non-private ``admm``: ≥ 0.845;
* accuracy does not fall as ε rises beyond seed noise (a drop of mean accuracy between
  consecutive ε larger than 2·√((s₁² + s₂²)/seeds), s the across-seed standard deviations, fails);
* every run takes ≤ 60 s.

With ``--peer`` it adds IBM diffprivlib's ``LogisticRegression`` (optional extra ``compare``)
beside ``dp-logreg``: trained on the same training rows and scored on the same test rows as
``dpkit train --algorithm dp-logreg --seed s``, with ``data_norm=1`` (the public row-norm bound of
dpkit's preprocessing) and its other defaults. Its privacy model is pure ε-DP (δ = 0; objective
perturbation, Chaudhuri et al. 2011), so it spends no δ where dp-logreg spends δ = 1e-5.

With ``--tables NAME ...`` (published tables of :mod:`dpkit.algorithms.substrate.public_tables`) it
runs every algorithm in-process with the defaults of ``dpkit train`` (the agents from
:func:`dpkit.algorithms.substrate.defaults.default_agents`) and prints, per table, the majority class, the
non-private logistic regression (the centralised minimiser, λ = 1e-5) and each algorithm's mean ± sd
test accuracy per ε against the targets that must hold on any binary table with n ≥ 3,000:

* (a) at every ε ≥ 1, no private algorithm's mean accuracy is more than 1 point below the majority class;
* (b) where the non-private model beats the majority class by ≥ 5 points, every private algorithm at
  ε = 1 recovers ≥ 50 % of that margin;
* (c) there, every private algorithm at ε = 3 recovers ≥ 75 % of it;
* (d) there, every distributed algorithm's mean at ε = 1 is within 5 points of dp-logreg's;
* (e) every run takes ≤ 60 s (``result.seconds``: the whole algorithm call, calibration included;
  the table is loaded once per process, so interpreter start and loading are not counted). The JSON
  also holds each run's CPU seconds (``cpu_seconds``, all threads of the process), which other jobs
  on a shared machine do not inflate.

``--scaling private`` runs the algorithms on the raw tables instead, as ``dpkit train`` reads a
user's file by default: each run estimates the column ranges from its training rows with noise
charged to its ε (:mod:`dpkit.algorithms.substrate.private_ranges`); the majority class and the
non-private model stay those of the public-range table, on the same split.

Usage::

    python benchmarks/training.py --tables fair psid7682 doctorvisits healthinsurance randhie default cps1988 \
        benefits arrests nmes1988 workinghours caravan spam7 star exam flchain wachurn creditdata \
        collegedistance [--eps 1 3] [--seeds 0 1 2] [--scaling private]
    python benchmarks/training.py [--data adult] [--eps 0.5 1 3] [--seeds 0 1 2] [--algorithms NAME ...] [--peer] [--json]

Exit status 1 when a target fails.
"""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
import time

import numpy as np

from dpkit.algorithms.registry import ALGORITHMS

DELTA = 1e-5
MAX_SECONDS = 60.0
NON_PRIVATE_TARGET = 0.845
BASELINE_TARGET = {1.0: 0.82}
DISTRIBUTED_TARGETS = {1.0: 0.80, 3.0: 0.82}


def run_cli(name: str, data: str, seed: int, epsilon: float | None, variant: str | None) -> tuple[dict, float]:
    """One ``dpkit train --json`` process: (its JSON summary, its wall time in seconds)."""
    argv = [sys.executable, "-m", "dpkit.cli.main", "train", "--algorithm", name, "--data", data, "--seed", str(seed),
            "--json", "--quiet"]
    if epsilon is not None:
        argv += ["--epsilon", repr(epsilon), "--delta", repr(DELTA)]
    if variant is not None:
        argv += ["--variant", variant]
    start = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(argv[3:])} failed: {done.stderr.strip()[-500:]}")
    return json.loads(done.stdout), seconds


def run_algorithm(name: str, data: str, epsilons: list[float], seeds: list[int]) -> dict:
    """Accuracies and seconds (whole CLI process) of ``name`` per ε (key None for a non-private algorithm)."""
    spec = ALGORITHMS[name]
    variant = "corrected" if "corrected" in spec.variants else None
    budgets = epsilons if spec.private else [None]
    runs: dict = {}
    majority = []
    for epsilon in budgets:
        accuracies, seconds = [], []
        for seed in seeds:
            result, wall = run_cli(name, data, seed, epsilon, variant)
            seconds.append(wall)
            accuracies.append(result["accuracy"])
            majority.append(result["config"]["majority_accuracy"])
        runs[epsilon] = {"accuracy": accuracies, "seconds": seconds}
    return {"name": name, "private": spec.private, "topology": spec.topology, "runs": runs,
            "majority": float(np.mean(majority))}


def run_peer(data: str, epsilons: list[float], seeds: list[int]) -> dict:
    """diffprivlib's LogisticRegression (pure ε-DP) on dp-logreg's split of each seed."""
    import warnings

    from diffprivlib.models import LogisticRegression  # optional extra "compare"

    from dpkit.algorithms.substrate.data import load_dataset
    from dpkit.algorithms.training import prepare

    dataset = load_dataset(data)
    runs: dict = {}
    for epsilon in epsilons:
        accuracies, seconds = [], []
        for seed in seeds:
            setting = prepare(ALGORITHMS["dp-logreg"], dataset, agents=1, seed=seed)
            train_rows, test = setting.parts[0], setting.test
            start = time.perf_counter()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                model = LogisticRegression(epsilon=epsilon, data_norm=1.0, random_state=seed)
                model.fit(train_rows.X, train_rows.y)
            seconds.append(time.perf_counter() - start)
            accuracies.append(float(np.mean(model.predict(test.X) == test.y)))
        runs[epsilon] = {"accuracy": accuracies, "seconds": seconds}
    return {"name": "diffprivlib LR", "private": True, "topology": "peer", "runs": runs, "majority": float("nan")}


def verdicts(row: dict, seeds: int) -> list[tuple[str, bool]]:
    """(target, passed) for one algorithm's results."""
    runs = row["runs"]
    mean = {e: float(np.mean(r["accuracy"])) for e, r in runs.items()}
    out = [(f"every run <= {MAX_SECONDS:g} s", max(max(r["seconds"]) for r in runs.values()) <= MAX_SECONDS)]
    if not row["private"]:
        out.append((f"accuracy >= {NON_PRIVATE_TARGET}", mean[None] >= NON_PRIVATE_TARGET))
        return out
    if row["topology"] == "peer":
        return [("peer row: pure epsilon-DP (delta = 0), reported, no target", True)]
    targets = BASELINE_TARGET if row["topology"] == "central" else DISTRIBUTED_TARGETS
    for epsilon, target in targets.items():
        if epsilon in mean:
            out.append((f"accuracy >= {target} at eps={epsilon:g}", mean[epsilon] >= target))
    ordered = sorted(runs)
    for low, high in zip(ordered, ordered[1:]):
        spread = math.sqrt((np.std(runs[low]["accuracy"]) ** 2 + np.std(runs[high]["accuracy"]) ** 2) / seeds)
        out.append((f"no drop eps {low:g} -> {high:g}", mean[high] >= mean[low] - 2.0 * spread))
    return out


TABLE_FLOOR_POINTS = 0.01
TABLE_MARGIN_SHARE = 0.5
TABLE_MARGIN_SHARE_HIGH = 0.75
"""Target (c): the share of the margin every private algorithm recovers at ε = 3."""
TABLE_BASELINE_POINTS = 0.05
"""Target (d): how far (accuracy) a distributed algorithm's mean at ε = 1 may trail dp-logreg's."""
TABLE_MARGIN_MIN = 0.05
ROUNDING_GUARD = 1e-9
"""Slack for the float rounding of mean accuracies in the targets' comparisons: accuracies are multiples
of 1/(seeds · test rows), at least 1e-6 apart here, so the guard cannot turn a real miss into a pass; it
keeps an exact 50 % of the margin (e.g. 0.49999999999999883 in floats) from reading as a miss."""


def run_table(table: str, epsilons: list[float], seeds: list[int], names: list[str], scaling: str = "public") -> dict:
    """Majority, non-private LR and every private algorithm's test accuracies on one published table.

    ``scaling="private"`` runs the algorithms on the raw table, whose ranges each run estimates from
    its training rows (charged to its ε); the majority and the non-private LR stay those of the
    public-range table (the same split)."""
    import warnings

    from dpkit.algorithms.baselines.centralised import centralised_fit
    from dpkit.algorithms.substrate.evaluation import majority_accuracy
    from dpkit.algorithms.substrate.public_tables import load_public_table
    from dpkit.algorithms.training import prepare, train

    data = load_public_table(table)
    learned = data if scaling == "public" else load_public_table(table, scaling)
    majority, logistic = [], []
    for seed in seeds:
        setting = prepare(ALGORITHMS["dp-logreg"], data, seed=seed)
        theta = centralised_fit(setting.parts[0], 1e-5)
        logistic.append(float(np.mean(np.where(setting.test.X @ theta > 0, 1.0, -1.0) == setting.test.y)))
        majority.append(majority_accuracy(setting.test))
    rows = {}
    for name in names:
        if not ALGORITHMS[name].private:
            continue
        runs = {}
        for epsilon in epsilons:
            accuracies, seconds, cpu, agents = [], [], [], 0
            for seed in seeds:
                start = time.process_time()
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    result = train(name, learned, epsilon=epsilon, seed=seed)
                cpu.append(time.process_time() - start)
                accuracies.append(result.accuracy)
                seconds.append(result.seconds)
                agents = result.config["agents"]
            runs[epsilon] = {"accuracy": accuracies, "seconds": seconds, "cpu_seconds": cpu, "agents": agents}
        rows[name] = runs
        print(f"... {table}: {name} done", file=sys.stderr, flush=True)
    return {"table": table, "scaling": scaling, "n": data.n, "d": data.d, "majority": float(np.mean(majority)),
            "logistic": float(np.mean(logistic)), "rows": rows}


def table_targets(report: dict, runs: dict) -> dict:
    """One algorithm's targets on one table (module docstring): the ε ≥ 1 whose mean accuracy is more
    than 1 point below the majority class (target (a)), and, where the non-private margin is ≥ 5 points,
    the share of it recovered at ε = 1 and whether that misses 50 % (target (b); None otherwise), the share
    recovered at ε = 3 and whether that misses 75 % (target (c)), and how many points the algorithm trails
    dp-logreg at ε = 1 and whether that exceeds 5 (target (d); when the report holds dp-logreg's runs)."""
    majority, margin = report["majority"], report["logistic"] - report["majority"]
    below = [e for e, run in runs.items()
             if e >= 1.0 and float(np.mean(run["accuracy"])) < majority - TABLE_FLOOR_POINTS - ROUNDING_GUARD]
    recovered = recovered_high = behind = None
    if margin >= TABLE_MARGIN_MIN and 1.0 in runs:
        recovered = (float(np.mean(runs[1.0]["accuracy"])) - majority) / margin
    if margin >= TABLE_MARGIN_MIN and 3.0 in runs:
        recovered_high = (float(np.mean(runs[3.0]["accuracy"])) - majority) / margin
    baseline = report.get("rows", {}).get("dp-logreg")
    if margin >= TABLE_MARGIN_MIN and baseline is not None and 1.0 in baseline and 1.0 in runs:
        behind = float(np.mean(baseline[1.0]["accuracy"])) - float(np.mean(runs[1.0]["accuracy"]))
    return {"floor_misses": below, "recovered": recovered,
            "margin_miss": recovered is not None and recovered < TABLE_MARGIN_SHARE - ROUNDING_GUARD,
            "recovered_high": recovered_high,
            "high_miss": recovered_high is not None and recovered_high < TABLE_MARGIN_SHARE_HIGH - ROUNDING_GUARD,
            "behind_baseline": behind,
            "baseline_miss": behind is not None and behind > TABLE_BASELINE_POINTS + ROUNDING_GUARD}


def table_json(report: dict) -> dict:
    """:func:`run_table`'s report with its ε keys as strings (JSON objects take string keys) and every
    algorithm's :func:`table_targets`."""
    return {**report, "rows": {name: {str(e): run for e, run in runs.items()} for name, runs in report["rows"].items()},
            "targets": {name: table_targets(report, runs) for name, runs in report["rows"].items()}}


def table_verdicts(report: dict, runs: dict) -> list[tuple[str, bool]]:
    """(target, passed) of one algorithm on one table: :func:`table_targets` in words."""
    targets = table_targets(report, runs)
    out = [(f"(a) eps={epsilon:g} >= majority - 1 pt", epsilon not in targets["floor_misses"])
           for epsilon in runs if epsilon >= 1.0]
    if targets["recovered"] is not None:
        out.append((f"(b) {targets['recovered']:.0%} of the margin at eps=1 >= {TABLE_MARGIN_SHARE:.0%}",
                    not targets["margin_miss"]))
    if targets["recovered_high"] is not None:
        out.append((f"(c) {targets['recovered_high']:.0%} of the margin at eps=3 >= {TABLE_MARGIN_SHARE_HIGH:.0%}",
                    not targets["high_miss"]))
    if targets["behind_baseline"] is not None and runs is not report["rows"].get("dp-logreg"):
        out.append((f"(d) {100 * targets['behind_baseline']:.1f} pts behind dp-logreg at eps=1 <= "
                    f"{100 * TABLE_BASELINE_POINTS:g}", not targets["baseline_miss"]))
    if all("seconds" in run for run in runs.values()):
        slowest = max(max(run["seconds"]) for run in runs.values())
        out.append((f"(e) slowest run {slowest:.1f} s <= {MAX_SECONDS:g} s", slowest <= MAX_SECONDS))
    return out


def print_table(report: dict, epsilons: list[float]) -> bool:
    """Print one table's results; True when every target passes."""
    margin = report["logistic"] - report["majority"]
    print(f"\n{report['table']} (n = {report['n']}, d = {report['d']}, {report['scaling']} ranges): "
          f"majority {report['majority']:.4f}, "
          f"non-private LR {report['logistic']:.4f}, margin {100 * margin:.1f} points")
    print(f"{'algorithm':<14}{'agents':>7}" + "".join(f"{'eps=' + format(e, 'g'):>18}" for e in epsilons)
          + f"{'recovered':>11}{'max s':>7}  targets")
    ok_all = True
    for name, runs in report["rows"].items():
        cells = "".join(f"{np.mean(runs[e]['accuracy']):.4f} ± {np.std(runs[e]['accuracy']):.4f}".rjust(18)
                        for e in epsilons)
        recovered = ((np.mean(runs[1.0]["accuracy"]) - report["majority"]) / margin
                     if 1.0 in runs and margin > 0 else float("nan"))
        checks = table_verdicts(report, runs)
        ok_all &= all(ok for _, ok in checks)
        agents = runs[epsilons[0]]["agents"]
        shown = "-" if math.isnan(recovered) else f"{recovered:.0%}"
        slowest = max(max(runs[e].get("seconds", [math.nan])) for e in epsilons)
        print(f"{name:<14}{agents:>7}{cells}{shown:>11}{slowest:>7.1f}  "
              + "; ".join(f"{'PASS' if ok else 'FAIL'} {text}" for text, ok in checks))
    return ok_all


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default="adult", help="dataset name or path (default: the packaged Adult)")
    parser.add_argument("--eps", type=float, nargs="+", default=[0.5, 1.0, 3.0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--algorithms", nargs="+", default=list(ALGORITHMS), choices=list(ALGORITHMS))
    parser.add_argument("--peer", action="store_true",
                        help="add diffprivlib's LogisticRegression (pure epsilon-DP) on dp-logreg's split")
    parser.add_argument("--json", action="store_true", help="print the raw results as JSON (last line)")
    parser.add_argument("--tables", nargs="+", help="published tables (dpkit.algorithms.substrate.public_tables): "
                        "targets (a) and (b) instead of Adult's")
    parser.add_argument("--scaling", choices=("public", "private"), default="public",
                        help="--tables: columns scaled by the published table's ranges (default) or by ranges each "
                             "run estimates from its training rows with noise, charged to its epsilon")
    args = parser.parse_args(argv)
    if args.tables:
        passed, reports = True, []
        for table in args.tables:
            reports.append(run_table(table, args.eps, args.seeds, args.algorithms, args.scaling))
            passed &= print_table(reports[-1], args.eps)
        if args.json:
            print(json.dumps([table_json(r) for r in reports]))
        return 0 if passed else 1
    rows = []
    for name in args.algorithms:
        rows.append(run_algorithm(name, args.data, args.eps, args.seeds))
        print(f"... {name} done", file=sys.stderr, flush=True)
    if args.peer:
        rows.append(run_peer(args.data, args.eps, args.seeds))
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
    print("(np) = non-private: one run per seed, the same at every eps; s/run = whole `dpkit train` process")
    if args.peer:
        print("diffprivlib LR: pure (eps, 0)-DP, dp-logreg's split, data_norm=1; s/run = its fit only")
    if args.json:
        print(json.dumps([{**row, "runs": {str(k): v for k, v in row["runs"].items()}} for row in rows]))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
