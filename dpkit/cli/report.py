"""``dpkit report``: a reproducibility report from the JSON documents of other dpkit commands.

Example::

    dpkit train --algorithm dp-admm --data builtin --epsilon 1 --agents 5 --iterations 20 --seed 0 --json > run.json
    dpkit audit --mechanism laplace --claimed-epsilon 1 --samples 100000 --json > audit.json
    dpkit report run.json audit.json --out my-report

writes ``report.md``, ``report.json``, ``references.bib`` and PNG plots into ``my-report``
(a new or empty directory; ``--force`` allows a non-empty one) and prints where they are.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from dpkit.report import write_report


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "report",
        help="write a reproducibility report (Markdown, JSON, BibTeX, plots) from dpkit JSON documents",
        description="Write a reproducibility report from the JSON printed by dpkit epsilon/calibrate/train/audit --json.",
    )
    parser.add_argument("documents", nargs="+", metavar="DOC.json", help="JSON documents (a run and optional audits)")
    parser.add_argument("--out", required=True, metavar="DIR", help="directory to write into (new or empty)")
    parser.add_argument("--no-rerun", dest="rerun", action="store_false",
                        help="do not re-execute the documents' commands to check the numbers")
    parser.add_argument("--no-plots", dest="plots", action="store_false", help="do not draw PNG plots")
    parser.add_argument("--force", action="store_true", help="allow writing into a non-empty directory")
    parser.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    result = write_report(args.documents, args.out, args.rerun, overwrite=args.force, plots=args.plots)
    if args.json:
        print(json.dumps(result.to_dict()))
        return 0
    rerun = {True: "reproduced", False: "NOT reproduced", None: "not checked"}[result.rerun_matched]
    lines = [
        f"report written to {result.out_dir}/",
        f"  markdown:   {result.markdown}",
        f"  json:       {result.json}",
        f"  references: {result.bibtex} ({len(result.references)} entries)",
        *(f"  plot:       {path}" for path in result.plots.values()),
        *(f"  no plot:    {name}: {reason}" for name, reason in result.skipped_plots.items()),
        f"  rerun:      numbers {rerun}",
    ]
    print("\n".join(lines))
    return 0 if result.rerun_matched is not False else 1
