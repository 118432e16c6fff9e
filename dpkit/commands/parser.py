"""The ``dpkit`` argument parser, built from the command modules.

A command module exposes ``register(subparsers)``, which adds its sub-parser with ``func``
set to its runner ``run(args) -> int``. :data:`RUNNABLE` are the commands whose JSON output a
report can rerun; the command line adds its own (``report``, ``demo``) through ``extra``.
"""

from __future__ import annotations

import argparse
from types import ModuleType
from typing import Iterable, NoReturn

from dpkit import __version__
from dpkit.commands import audit, calibrate, dpsgd, epsilon, train

RUNNABLE: tuple[ModuleType, ...] = (epsilon, calibrate, dpsgd, train, audit)
"""Command modules reachable without the command line, in the order ``dpkit --help`` lists them."""


class OneLineParser(argparse.ArgumentParser):
    """An ArgumentParser whose usage errors are one line (``dpkit: error: ...``) and which
    never accepts an abbreviated option (``--eps`` is not ``--epsilon``)."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        kwargs["allow_abbrev"] = False
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]

    def error(self, message: str) -> NoReturn:  # type: ignore[override]
        self.exit(2, f"{self.prog}: error: {message}\n")


def build_parser(extra: Iterable[ModuleType] = ()) -> argparse.ArgumentParser:
    """The ``dpkit`` parser with every command of :data:`RUNNABLE`, then those of ``extra``."""
    parser = OneLineParser(prog="dpkit", description="Differential-privacy accounting, training and auditing.")
    parser.add_argument("--version", action="version", version=f"dpkit {__version__}")
    subparsers = parser.add_subparsers(dest="command", required=True, parser_class=OneLineParser)
    for command in (*RUNNABLE, *extra):
        command.register(subparsers)
    return parser
