"""``dpkit demo``: the README's main job, end to end on the UCI Adult copy that ships with dpkit.

1. Calibrate: the Gaussian noise σ needed for common (ε, δ) budgets under each accountant.
2. Train: a private distributed model (:data:`DEMO_ALGORITHM`) on Adult within ε, next to the centralised
   private baseline (:data:`BASELINE_ALGORITHM`) and the non-private
   reference (:data:`REFERENCE_ALGORITHM`); prints its test accuracy beside the majority-class
   accuracy, the floor every model must beat.
3. Audit: test the private algorithm's corrected privacy claim empirically on a small
   worst-case instance (``dpkit audit --algorithm DEMO_ALGORITHM --variant corrected``).
4. Report: Markdown, JSON, BibTeX and plots in a new folder (``--out DIR`` or
   ``dpkit-demo-<timestamp>`` in the current directory); prints where they are.

Every step runs through the same commands a user would type, so each JSON document in
the folder carries the exact command line that reproduces it.
"""

from __future__ import annotations

import argparse
import datetime
import shutil
import sys
from pathlib import Path
from typing import Any, Sequence

from dpkit._validation import check_integer, check_positive
from dpkit.accounting.calibration import calibrate_gaussian_sigma
from dpkit.algorithms.audit_instances import make_scenario
from dpkit.audit import minimum_samples
from dpkit.commands import strict_json
from dpkit.commands.files import install_folder, new_temp_folder
from dpkit.commands.runner import run_json
from dpkit.report import write_report

DEMO_ALGORITHM = "dp-admm"
"""The private algorithm the demo trains and audits: distributed (20 agents and an aggregator), fast, and
clearly above the majority class; dp-logreg, the centralised private baseline, is trained beside it."""
BASELINE_ALGORITHM = "dp-logreg"
"""The centralised private baseline trained beside it at the same budget."""
REFERENCE_ALGORITHM = "admm"
"""The non-private reference trained beside it."""
DEMO_DATA = "adult"
"""The ``--data`` the demo trains on (:func:`dpkit.algorithms.substrate.data.load_dataset`): the packaged UCI Adult."""

BUDGETS = (0.5, 1.0, 2.0, 4.0, 8.0)
DELTA = 1e-5
COMPOSITIONS = 100
TABLE_ACCOUNTANTS = ("analytic", "rdp", "zcdp")


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "demo",
        help="calibrate, train, audit and write a report on UCI Adult (packaged)",
        description="End-to-end demo on UCI Adult: calibration table, private training, audit, report.",
    )
    parser.add_argument("--out", help="folder for the report (default: a new dpkit-demo-<timestamp> folder here)")
    parser.add_argument("--epsilon", type=float, default=1.0, help="training budget epsilon (default 1)")
    parser.add_argument("--iterations", type=int, help="training iterations (default: the algorithm's rule)")
    parser.add_argument("--agents", type=int, help="number of agents (default: the algorithm's)")
    parser.add_argument("--audit-samples", type=int, default=1_000_000, help="audit samples (default 1e6)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--quiet", action="store_true", help="no progress bars")
    parser.set_defaults(func=run)


def calibration_table(budgets: Sequence[float] = BUDGETS, delta: float = DELTA,
                      count: int = COMPOSITIONS) -> list[dict[str, float]]:
    """σ of a Gaussian (sensitivity 1) composed ``count`` times, per budget and accountant.

    >>> rows = calibration_table(budgets=(1.0,), count=10)
    >>> rows[0]["analytic"] <= rows[0]["rdp"] <= rows[0]["zcdp"]
    True
    """
    rows = []
    for epsilon in budgets:
        row: dict[str, float] = {"epsilon": epsilon}
        for accountant in TABLE_ACCOUNTANTS:
            row[accountant] = calibrate_gaussian_sigma(epsilon, delta, count=count, accountant=accountant).parameter
        rows.append(row)
    return rows


def _format_table(rows: list[dict[str, float]]) -> str:
    header = f"{'epsilon':>8}  " + "  ".join(f"{name:>10}" for name in TABLE_ACCOUNTANTS)
    lines = [header] + [
        f"{row['epsilon']:>8g}  " + "  ".join(f"{row[name]:>10.4f}" for name in TABLE_ACCOUNTANTS) for row in rows
    ]
    return "\n".join(lines)


def _target_folder(out: str | None) -> Path:
    """The folder the demo will create: it must not exist yet, and its parent must."""
    if out is None:
        stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
        folder = Path.cwd() / f"dpkit-demo-{stamp}"
    else:
        folder = Path(out)
    if folder.exists():
        raise ValueError(f"--out {folder} already exists; choose a new folder (nothing was overwritten)")
    if not folder.parent.is_dir():
        raise ValueError(f"--out {folder}: the parent folder {folder.parent} does not exist")
    return folder


def _check_arguments(args: argparse.Namespace) -> None:
    """Validate every option before anything is printed or written."""
    check_positive("--epsilon", args.epsilon)
    if args.iterations is not None:
        check_integer("--iterations", args.iterations, minimum=1)
    if args.agents is not None:
        check_integer("--agents", args.agents, minimum=1)
    pairs = len(make_scenario(DEMO_ALGORITHM, corrected=True).pairs)
    check_integer("--audit-samples", args.audit_samples, minimum=minimum_samples(pairs))
    check_integer("--seed", args.seed, minimum=0)


def run(args: argparse.Namespace) -> int:
    """Run the demo into a temporary folder beside the target, then rename it into place."""
    _check_arguments(args)
    target = _target_folder(args.out)
    staging = new_temp_folder(target)
    try:
        _run_into(args, staging, target)
        install_folder(staging, target)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    print(f"everything is in {target}")
    return 0


def _run_into(args: argparse.Namespace, folder: Path, target: Path) -> None:
    say = (lambda text: None) if args.quiet else (lambda text: print(text, file=sys.stderr))
    quiet = ["--quiet"] if args.quiet else []

    say(f"1/4 calibrating: Gaussian sigma for {COMPOSITIONS} compositions at delta={DELTA:g}")
    rows = calibration_table()
    print(f"Gaussian noise sigma (sensitivity 1) for {COMPOSITIONS} compositions at delta={DELTA:g}:")
    print(_format_table(rows))
    print("(analytic: exact for Gaussian compositions, Balle & Wang 2018 with Dong, Roth & Su 2022; rdp and zcdp are "
          "upper-bound analyses, and coincide for Gaussians because the Gaussian's Renyi curve is linear in the order)")
    calibration = run_json(["calibrate", "--mechanism", "gaussian", "--epsilon", str(args.epsilon),
                               "--delta", str(DELTA), "--count", str(COMPOSITIONS), "--accountant", "rdp"])

    say(f"2/4 training {DEMO_ALGORITHM} and {BASELINE_ALGORITHM} (epsilon={args.epsilon:g}) and the non-private "
        f"{REFERENCE_ALGORITHM} on Adult")
    common = ["--data", DEMO_DATA, "--seed", str(args.seed), *quiet]
    sizes = (["--iterations", str(args.iterations)] if args.iterations is not None else []) + \
        (["--agents", str(args.agents)] if args.agents is not None else [])
    private = run_json(["train", "--algorithm", DEMO_ALGORITHM, "--epsilon", str(args.epsilon), "--delta", str(DELTA),
                        *sizes, *common])
    central = run_json(["train", "--algorithm", BASELINE_ALGORITHM, "--epsilon", str(args.epsilon), "--delta",
                        str(DELTA), *common])
    baseline = run_json(["train", "--algorithm", REFERENCE_ALGORITHM, *common])

    say(f"3/4 auditing {DEMO_ALGORITHM}'s corrected privacy claim on a small worst-case instance")
    audit_document = run_json(_audit_argv(args))

    documents = {"calibration.json": calibration, "train.json": private, "train-baseline.json": central,
                 "train-nonprivate.json": baseline, "audit.json": audit_document}
    paths = []
    for name, document in documents.items():
        path = folder / name
        path.write_text(strict_json.dumps(document, indent=1), encoding="utf-8")
        paths.append(path)

    say("4/4 writing the report")
    report = write_report(paths, folder / "report", rerun=False)  # just produced: `dpkit report` reruns them
    majority = private["config"]["majority_accuracy"]
    print(f"test accuracy on Adult: {DEMO_ALGORITHM} {private['accuracy']:.4f} | majority class {majority:.4f} | "
          f"{BASELINE_ALGORITHM} (centralised, same budget) {central['accuracy']:.4f} | non-private "
          f"{REFERENCE_ALGORITHM} {baseline['accuracy']:.4f}")
    print(f"{DEMO_ALGORITHM}: certified epsilon {private['epsilon_corrected']:.4f} at delta={private['delta']:g} "
          f"({private['guarantee']['accountant']} accountant over the ledger of {len(private['ledger']['groups'])} "
          f"agent group(s))")
    verdict = "VIOLATION" if audit_document["violation"] else "no violation"
    print(f"audit of {DEMO_ALGORITHM} on a small worst-case instance: claimed epsilon "
          f"{audit_document['claimed_epsilon']:.4f}, empirical lower bound {audit_document['epsilon_lower_bound']:.4f} "
          f"at confidence {audit_document['confidence']:g}: {verdict}")
    print(f"report written to {target / Path(report.markdown).relative_to(folder)} (to rerun every command and check "
          f"its numbers: dpkit report {target}/*.json --out NEW_FOLDER)")


def _audit_argv(args: argparse.Namespace) -> list[str]:
    """Audit the demo algorithm's corrected claim on its small worst-case scenario."""
    return ["audit", "--algorithm", DEMO_ALGORITHM, "--variant", "corrected", "--samples", str(args.audit_samples),
            "--seed", str(args.seed), *(["--quiet"] if args.quiet else [])]
