"""``dpkit report``: a reproducibility report from the JSON documents of other dpkit commands.

Example::

    dpkit train --algorithm dp-admm --data builtin --epsilon 1 --agents 5 --iterations 20 --seed 0 --json > run.json
    dpkit audit --mechanism laplace --claimed-epsilon 1 --samples 100000 --json > audit.json
    dpkit report run.json audit.json --out my-report

writes ``report.md``, ``report.json``, ``references.bib`` and PNG plots into ``my-report``
(a new or empty directory; ``--force`` allows a non-empty one) and prints where they are. The
files appear together (written beside the directory, then renamed into place). Unless
``--no-rerun``, the documents' commands are re-executed: that imports and runs code they name.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from typing import Any

from dpkit.report import check_out_dir, load_document, write_report
from dpkit.report.ledger_accounting import PLD_TARGET_WIDTH
from dpkit.report.rerun import code_to_import


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "report",
        help="write a reproducibility report (Markdown, JSON, BibTeX, plots) from dpkit JSON documents",
        description="Write a reproducibility report from the JSON printed by dpkit epsilon/calibrate/train/audit --json. "
                    "WARNING: unless --no-rerun is given, the report re-executes each document's recorded command, "
                    "which imports and runs code the document names (audit --mechanism module:function) and reads "
                    "the files it names (train --data FILE); the modules are listed on stderr before they run. "
                    "A document can only rerun the command it records (never report or demo), and options that "
                    "write files are refused. Use --no-rerun for documents you do not trust. "
                    "Exit codes: 0 report written and reproduced, 1 a rerun did not reproduce its numbers or a "
                    "file could not be written, 2 usage error, 130 interrupted.",
    )
    parser.add_argument("documents", nargs="+", metavar="DOC.json", help="JSON documents (a run and optional audits)")
    parser.add_argument("--out", required=True, metavar="DIR", help="directory to write into (new or empty)")
    parser.add_argument("--no-rerun", dest="rerun", action="store_false",
                        help="do not re-execute the documents' commands (which imports and runs code they name)")
    parser.add_argument("--no-plots", dest="plots", action="store_false", help="do not draw PNG plots")
    parser.add_argument("--force", action="store_true", help="allow writing into a non-empty directory")
    parser.add_argument("--target-width", type=float, metavar="W",
                        help="PLD profiles: refine the grid until each certified epsilon interval is at most W wide")
    parser.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    documents = [load_document(path) for path in args.documents]
    check_out_dir(args.out, args.force)  # before the slow reruns
    if args.rerun:
        for doc in documents:
            for module in code_to_import(doc.argv):
                print(f"dpkit report: rerunning {doc.source} imports and runs {module} "
                      f"(use --no-rerun for documents you do not trust)", file=sys.stderr)
    width = getattr(args, "target_width", None)
    if width is not None and not (math.isfinite(width) and width > 0):
        raise ValueError(f"--target-width must be in (0, inf), got --target-width={width}")
    token = PLD_TARGET_WIDTH.set(width)
    try:
        result = write_report(documents, args.out, args.rerun, overwrite=args.force, plots=args.plots)
    except KeyboardInterrupt as interrupt:
        interrupt.dpkit_note = f"nothing was written to {args.out}"  # type: ignore[attr-defined]
        raise
    finally:
        PLD_TARGET_WIDTH.reset(token)
    if "all plots" in result.skipped_plots and args.plots:
        print(f"dpkit report: no plots: {result.skipped_plots['all plots']}", file=sys.stderr)
    status = 0 if result.rerun_matched is not False else 1
    if args.json:
        print(json.dumps(result.to_dict()))
        return status
    failures = [(section["source"], section["rerun"]["error"]) for section in result.report["documents"]
                if section["rerun"].get("error")]
    rerun = {True: "reproduced", False: "NOT reproduced", None: "not checked"}[result.rerun_matched]
    if failures:
        rerun = f"NOT checked: {len(failures)} rerun(s) failed to run (below)"
    lines = [
        f"report written to {result.out_dir}/",
        f"  markdown:   {result.markdown}",
        f"  json:       {result.json}",
        f"  references: {result.bibtex} ({len(result.references)} entries)",
        *(f"  plot:       {path}" for path in result.plots.values()),
        *(f"  no plot:    {name}: {reason}" for name, reason in result.skipped_plots.items()),
        f"  rerun:      numbers {rerun}",
        *(f"  rerun of {source} failed: {error}" for source, error in failures),
    ]
    print("\n".join(lines))
    return status
