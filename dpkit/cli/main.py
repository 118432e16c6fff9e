"""Entry point of the ``dpkit`` command.

The commands a report can rerun (``epsilon``, ``calibrate``, ``train``, ``audit``) and the
runner live in :mod:`dpkit.commands`; this module adds the two that sit above the report
(``report``, ``demo``) and turns the process arguments into an exit code.
"""

from __future__ import annotations

import sys
from typing import Sequence

from dpkit.cli import demo, report
from dpkit.commands.parser import build_parser
from dpkit.commands.runner import run

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``dpkit`` with ``argv`` (default: the process arguments); returns the exit code."""
    return run(sys.argv[1:] if argv is None else argv, build_parser(extra=(report, demo)))


if __name__ == "__main__":
    sys.exit(main())
