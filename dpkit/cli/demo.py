"""``dpkit demo``: the README's main job, end to end on the built-in dataset.

1. Calibrate: the Gaussian noise σ needed for common (ε, δ) budgets under each accountant.
2. Train: a private distributed model (DP-ADMM, seed 004) on the dataset that ships with
   statsmodels, next to its non-private baseline.
3. Audit: test the algorithm's corrected privacy claim empirically on a small worst-case instance.
4. Report: Markdown, JSON, BibTeX and plots in a new folder (``--out DIR`` or
   ``dpkit-demo-<timestamp>`` in the current directory); prints where they are.

Every step runs through the same commands a user would type, so each JSON document in
the folder carries the exact command line that reproduces it.
"""

from __future__ import annotations

import argparse
import datetime
import json
import sys
from pathlib import Path
from typing import Any, Sequence

from dpkit.accounting.calibration import calibrate_gaussian_sigma
from dpkit.cli.main import run_json

BUDGETS = (0.5, 1.0, 2.0, 4.0, 8.0)
DELTA = 1e-5
COMPOSITIONS = 100
TABLE_ACCOUNTANTS = ("analytic", "rdp", "zcdp")


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "demo",
        help="calibrate, train, audit and write a report on the built-in dataset",
        description="End-to-end demo on the built-in dataset: calibration table, private training, audit, report.",
    )
    parser.add_argument("--out", help="folder for the report (default: a new dpkit-demo-<timestamp> folder here)")
    parser.add_argument("--epsilon", type=float, default=1.0, help="training budget epsilon (default 1)")
    parser.add_argument("--iterations", type=int, default=30, help="training iterations (default 30)")
    parser.add_argument("--agents", type=int, default=5, help="number of agents (default 5)")
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


def _new_folder(out: str | None) -> Path:
    if out is None:
        stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
        folder = Path.cwd() / f"dpkit-demo-{stamp}"
    else:
        folder = Path(out)
    if folder.exists() and any(folder.iterdir()):
        raise ValueError(f"--out folder {folder} exists and is not empty; choose a new folder (nothing was overwritten)")
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def run(args: argparse.Namespace) -> int:
    from dpkit.report import write_report

    folder = _new_folder(args.out)
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

    say("2/4 training DP-ADMM (seed 004) and its non-private baseline on the built-in dataset")
    common = ["--data", "builtin", "--agents", str(args.agents), "--iterations", str(args.iterations),
              "--seed", str(args.seed), *quiet]
    private = run_json(["train", "--algorithm", "dp-admm", "--epsilon", str(args.epsilon), "--delta", str(DELTA),
                           *common])
    baseline = run_json(["train", "--algorithm", "admm", *common])

    say("3/4 auditing DP-ADMM's corrected privacy claim on a small worst-case instance")
    audit_document = run_json(_audit_argv(args))

    documents = {"calibration.json": calibration, "train.json": private, "train-nonprivate.json": baseline,
                 "audit.json": audit_document}
    paths = []
    for name, document in documents.items():
        path = folder / name
        path.write_text(json.dumps(document, indent=1), encoding="utf-8")
        paths.append(path)

    say("4/4 writing the report")
    report = write_report(paths, folder / "report")
    print(f"private accuracy {private['accuracy']:.4f} (non-private {baseline['accuracy']:.4f}); "
          f"corrected epsilon {private['epsilon_corrected']:.4f} at delta={private['delta']:g}")
    verdict = "VIOLATION" if audit_document["violation"] else "no violation"
    print(f"audit of 10 DP-ADMM iterates on a small worst-case instance: claimed epsilon "
          f"{audit_document['claimed_epsilon']:.4f}, empirical lower bound {audit_document['epsilon_lower_bound']:.4f} "
          f"at confidence {audit_document['confidence']:g}: {verdict}")
    print(f"report written to {report.markdown}")
    print(f"everything is in {folder}")
    return 0


def _audit_argv(args: argparse.Namespace) -> list[str]:
    """Audit DP-ADMM's corrected claim on a small worst-case instance: 10 iterates of a 1-record
    change at the clipping boundary, against the exact Gaussian-DP total of those iterates."""
    return ["audit", "--algorithm", "dp-admm", "--variant", "corrected", "--iterations", "10",
            "--samples", str(args.audit_samples), "--seed", str(args.seed), *(["--quiet"] if args.quiet else [])]
