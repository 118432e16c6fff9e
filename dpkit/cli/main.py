"""Entry point of the ``dpkit`` command.

Each sub-command lives in its own module ``dpkit.cli.<name>`` exposing
``register(subparsers)`` (adds its parser, with ``func`` set to its runner) and a
runner ``run(args) -> int``. Library errors (``ValueError``/``TypeError``) become a
one-line message on stderr and exit code 2, like argparse's own usage errors.

With ``--json``, the object a command prints is wrapped in a provenance envelope: the key
``"dpkit"`` holds the command, its argument vector (so ``dpkit report`` can rerun it), the
full configuration (every option, defaults included), the configuration's SHA-256 and the
software versions. Rerunning the same ``argv`` gives the same ``config_hash``.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import io
import json
import sys
from typing import Any, Sequence

from dpkit import __version__
from dpkit.report.provenance import config_hash, environment

COMMANDS = ("epsilon", "calibrate", "train", "audit", "demo", "report")


class OneLineParser(argparse.ArgumentParser):
    """An ArgumentParser whose usage errors are one line: ``dpkit: error: ...``."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(2, f"{self.prog}: error: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    """The ``dpkit`` argument parser with every sub-command of :data:`COMMANDS`."""
    parser = OneLineParser(prog="dpkit", description="Differential-privacy accounting, training and auditing.")
    parser.add_argument("--version", action="version", version=f"dpkit {__version__}")
    subparsers = parser.add_subparsers(dest="command", required=True, parser_class=OneLineParser)
    for name in COMMANDS:
        importlib.import_module(f"dpkit.cli.{name}").register(subparsers)
    return parser


# Options that change how a run is shown or where it is written, never its numbers.
PRESENTATION_OPTIONS = frozenset({"func", "json", "out", "quiet", "workers"})


def run_configuration(args: argparse.Namespace) -> dict[str, Any]:
    """Every option of a parsed command that can change its numbers, as JSON-ready values.

    Options left unset (``None``) are omitted, so adding a new optional option to a command
    does not change the hash of existing runs.
    """
    config = {}
    for key, value in sorted(vars(args).items()):
        if key in PRESENTATION_OPTIONS or value is None:
            continue
        config[key] = value if isinstance(value, (str, int, float, bool, type(None), list)) else str(value)
    return config


def envelope(args: argparse.Namespace, argv: Sequence[str]) -> dict[str, Any]:
    """The provenance block added under ``"dpkit"`` to every JSON object the CLI prints."""
    config = run_configuration(args)
    return {
        "command": args.command,
        "argv": [arg for arg in argv],
        "config": config,
        "config_hash": config_hash(config),
        "environment": environment(),
    }


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``dpkit`` with ``argv`` (default: the process arguments); returns the exit code."""
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    args = parser.parse_args(argv)
    capture = io.StringIO()
    try:
        if getattr(args, "json", False):
            with contextlib.redirect_stdout(capture):
                status = int(args.func(args) or 0)
        else:
            status = int(args.func(args) or 0)
    except (ValueError, TypeError) as error:
        sys.stdout.write(capture.getvalue())
        print(f"dpkit {args.command}: error: {error}", file=sys.stderr)
        return 2
    if getattr(args, "json", False):
        sys.stdout.write(_with_envelope(capture.getvalue(), args, argv))
    return status


def run_json(argv: Sequence[str]) -> dict[str, Any]:
    """Run ``dpkit ARGV --json`` in-process and return its JSON object (with the provenance envelope).

    Raises ``ValueError`` with the command's own error message when it exits non-zero.
    """
    argv = list(argv)
    if "--json" not in argv:
        argv.append("--json")
    stdout, stderr = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        status = main(argv)
    if status != 0:
        raise ValueError(f"`dpkit {' '.join(argv)}` failed with exit {status}: {stderr.getvalue().strip()}")
    return json.loads(stdout.getvalue())


def _with_envelope(printed: str, args: argparse.Namespace, argv: Sequence[str]) -> str:
    try:
        payload = json.loads(printed)
    except json.JSONDecodeError:
        return printed
    if not isinstance(payload, dict):
        return printed
    payload["dpkit"] = envelope(args, argv)
    return json.dumps(payload) + "\n"


if __name__ == "__main__":
    sys.exit(main())
