"""Entry point of the ``dpkit`` command.

Each sub-command lives in its own module ``dpkit.cli.<name>`` exposing
``register(subparsers)`` (adds its parser, with ``func`` set to its runner) and a
runner ``run(args) -> int``. Library errors (``ValueError``/``TypeError``) become a
one-line message on stderr and exit code 2, like argparse's own usage errors.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from typing import Sequence

from dpkit import __version__

COMMANDS = ("epsilon", "calibrate", "train", "audit")


class OneLineParser(argparse.ArgumentParser):
    """An ArgumentParser whose usage errors are one line: ``dpkit: error: ...``."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(2, f"{self.prog}: error: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(prog="dpkit", description="Differential-privacy accounting, training and auditing.")
    parser.add_argument("--version", action="version", version=f"dpkit {__version__}")
    subparsers = parser.add_subparsers(dest="command", required=True, parser_class=OneLineParser)
    for name in COMMANDS:
        importlib.import_module(f"dpkit.cli.{name}").register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except (ValueError, TypeError) as error:
        print(f"dpkit {args.command}: error: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
