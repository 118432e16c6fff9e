"""Entry point of the ``dpkit`` command.

The commands a report can rerun (``epsilon``, ``calibrate``, ``train``, ``audit``) and the
runner live in :mod:`dpkit.commands`; this module adds the two that sit above the report
(``report``, ``demo``) and turns the process arguments into an exit code.

Start-up is cheap and interruptible: this module imports nothing heavy at its top, the parser
imports only the module of the command being run, and a Ctrl-C at any moment (imports
included) ends in one line on stderr and exit code 130.
"""

from __future__ import annotations

import contextlib
import os
import sys
from typing import NoReturn, Sequence

from dpkit import commands  # free: the command modules load on first use, inside main's Ctrl-C handler

__all__ = ["EXTRA_COMMANDS", "main", "run_process"]

EXTRA_COMMANDS = {
    "report": ("dpkit.cli.report",
               "write a reproducibility report (Markdown, JSON, BibTeX, plots) from dpkit JSON documents"),
    "demo": ("dpkit.cli.demo", "calibrate, train, audit and write a report on UCI Adult (packaged)"),
}
"""The commands that sit above :mod:`dpkit.report` (name → module, help line)."""

EXIT_INTERRUPTED = 130  # dpkit.commands.errors.EXIT_INTERRUPTED, spelled here so that Ctrl-C needs no import


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``dpkit`` with ``argv`` (default: the process arguments); returns the exit code."""
    try:
        argv = list(sys.argv[1:] if argv is None else argv)
        commands.user_code.install_interrupt_note()  # a real Ctrl-C is told apart from a user's KeyboardInterrupt
        return commands.runner.run(argv, commands.parser.build_parser(extra=EXTRA_COMMANDS, argv=argv))
    except KeyboardInterrupt:
        print("dpkit: interrupted; nothing was written", file=sys.stderr)
        return EXIT_INTERRUPTED


def run_process() -> NoReturn:
    """The process entry point (the ``dpkit`` script, ``python -m dpkit.cli.main``): exit with
    :func:`main`'s code.

    An interrupted run (130) leaves through ``os._exit`` once its streams are flushed: CPython
    remembers a ``KeyboardInterrupt`` that crossed some of its C entry points while modules were
    being imported, even one that dpkit then caught, and would end the process by SIGINT
    (status −2) instead of the documented 130. Nothing is left to run: nothing was written.
    """
    code = main()
    if code == EXIT_INTERRUPTED:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        os._exit(code)
    sys.exit(code)


if __name__ == "__main__":
    run_process()
