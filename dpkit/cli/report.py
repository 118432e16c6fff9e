"""``dpkit report``: a reproducibility report from the JSON documents of other dpkit commands.

Example::

    dpkit train --algorithm dp-admm --data builtin --epsilon 1 --agents 5 --iterations 20 --seed 0 --json > run.json
    dpkit audit --mechanism laplace --claimed-epsilon 1 --samples 100000 --json > audit.json
    dpkit report run.json audit.json --out my-report

writes ``report.md``, ``report.json``, ``references.bib`` and PNG plots into ``my-report``
(a new or empty directory; ``--force`` replaces an existing report folder as a whole) and prints where they are. The
files appear together (written beside the directory, then renamed into place). Unless
``--no-rerun``, the documents' commands are re-executed, each in a child process (stdin closed,
a time limit, a fresh temporary directory); code a document names runs only for modules the
user trusts by name (``--trust-module NAME``), see :mod:`dpkit.report.sandbox`.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
from typing import Any

from dpkit.commands import strict_json
from dpkit.report import RerunPolicy, check_out_dir, load_document, write_report
from dpkit.report.ledger_accounting import PLD_TARGET_WIDTH
from dpkit.report.rerun import MAX_ARGV_BYTES, MAX_ARGV_TOKENS
from dpkit.report.sandbox import DEFAULT_TIMEOUT


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "report",
        help="write a reproducibility report (Markdown, JSON, BibTeX, plots) from dpkit JSON documents",
        description="Write a reproducibility report from the JSON printed by dpkit epsilon/calibrate/train/audit --json. "
                    "Unless --no-rerun is given, each document's recorded command is checked by dpkit's own parser "
                    "and re-executed in a child process (stdin closed, a time limit, a fresh temporary directory; "
                    "options that write are removed; files it reads must lie inside the current directory and "
                    "are copied into the sandbox, no symbolic link followed, no hard link read; an argv over "
                    f"{MAX_ARGV_TOKENS} tokens or {MAX_ARGV_BYTES >> 10} KiB is not rerun). A "
                    "document is data: a rerun that would import code it names (audit --mechanism module:function, "
                    "--pairs module:NAME) is skipped unless you trust that module with --trust-module NAME; the report "
                    "says which reruns it skipped. "
                    "Exit codes: 0 report written (reruns reproduced, or skipped), 1 a rerun did not reproduce its "
                    "numbers or failed, or a file could not be written, 2 usage error, 130 interrupted.",
    )
    parser.add_argument("documents", nargs="+", metavar="DOC.json", help="JSON documents (a run and optional audits)")
    parser.add_argument("--out", required=True, metavar="DIR", help="directory to write into (new or empty)")
    parser.add_argument("--no-rerun", dest="rerun", action="store_false",
                        help="do not re-execute the documents' commands (which imports and runs code they name)")
    parser.add_argument("--trust-module", action="append", default=[], metavar="NAME",
                        help="let reruns import and run the module NAME (as written before ':' in module:NAME; "
                             "repeatable); without it a rerun of code a document names is skipped")
    parser.add_argument("--trust-path", action="append", default=[], metavar="DIR",
                        help="directory to import trusted modules from (repeatable; default: the installed "
                             "environment only, not the current directory or the document's folder)")
    parser.add_argument("--rerun-timeout", type=float, default=DEFAULT_TIMEOUT, metavar="SECONDS",
                        help=f"time limit of each rerun (default {DEFAULT_TIMEOUT:g})")
    parser.add_argument("--no-plots", dest="plots", action="store_false", help="do not draw PNG plots")
    parser.add_argument("--force", action="store_true", help="replace an existing report folder as a whole (atomically; a folder holding other files is refused)")
    parser.add_argument("--target-width", type=float, metavar="W",
                        help="PLD profiles: refine the grid until each certified epsilon interval is at most W wide")
    parser.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    parser.set_defaults(func=run)


def policy_of(args: argparse.Namespace) -> RerunPolicy:
    """The rerun policy of the command line (a ``ValueError`` naming the option otherwise)."""
    for path in args.trust_path:
        if not os.path.isdir(path):
            raise ValueError(f"--trust-path {path!r} is not a directory")
    try:
        return RerunPolicy(frozenset(args.trust_module), tuple(args.trust_path), args.rerun_timeout)
    except ValueError as error:
        raise ValueError(str(error).replace("trust_module", "--trust-module").replace(
            "rerun_timeout", "--rerun-timeout")) from None


def run(args: argparse.Namespace) -> int:
    policy = policy_of(args)
    documents = [load_document(path) for path in args.documents]
    check_out_dir(args.out, args.force)  # before the slow reruns
    width = getattr(args, "target_width", None)
    if width is not None and not (math.isfinite(width) and width > 0):
        raise ValueError(f"--target-width must be in (0, inf), got --target-width={width}")
    token = PLD_TARGET_WIDTH.set(width)
    try:
        result = write_report(documents, args.out, args.rerun, overwrite=args.force, plots=args.plots, policy=policy)
    except KeyboardInterrupt as interrupt:
        interrupt.dpkit_note = f"nothing was written to {args.out}"  # type: ignore[attr-defined]
        raise
    finally:
        PLD_TARGET_WIDTH.reset(token)
    skipped = [(section["source"], section["rerun"]) for section in result.report["documents"]
               if section["rerun"].get("skipped")]
    for source, rerun in skipped:
        print(f"dpkit report: rerun of {source} skipped: {rerun['reason']}", file=sys.stderr)
    if "all plots" in result.skipped_plots and args.plots:
        print(f"dpkit report: no plots: {result.skipped_plots['all plots']}", file=sys.stderr)
    status = 0 if result.rerun_matched is not False else 1
    if args.json:
        print(strict_json.dumps(result.to_dict()))
        return status
    failures = [(section["source"], section["rerun"]["error"]) for section in result.report["documents"]
                if section["rerun"].get("error")]
    rerun = {True: "reproduced", False: "NOT reproduced", None: "not checked"}[result.rerun_matched]
    if failures:
        rerun = f"NOT checked: {len(failures)} rerun(s) failed to run (below)"
    if skipped:
        rerun += f"; {len(skipped)} rerun(s) skipped: they run code the document names (--trust-module, above)"
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
