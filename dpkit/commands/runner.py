"""Run a ``dpkit`` command in-process from its argument vector.

:func:`run` is what the ``dpkit`` executable does: it never lets a traceback reach the user
and returns one of the exit codes of :data:`~dpkit.commands.errors.EXIT_CODES` (the one table,
rendered into ``docs/index.md``).

Every error is one line on stderr, ``dpkit COMMAND: error: ...``, that names the option or the
path. :func:`run_json` reruns a recorded command and returns its JSON object, which is how
:mod:`dpkit.report` checks a document's numbers; it raises :class:`CommandError` (a
``ValueError``), never ``SystemExit``.

With ``--json``, the object a command prints is wrapped in a provenance envelope: the key
``"dpkit"`` holds the command, its argument vector, the full configuration (every option,
defaults included), the configuration's SHA-256 and the software versions. Rerunning the same
``argv`` gives the same ``config_hash``.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import sys
from typing import Any, Sequence

from dpkit.commands import strict_json
from dpkit.commands.errors import (  # noqa: F401  (re-exported)
    EXIT_FAILURE, EXIT_INTERRUPTED, EXIT_OK, EXIT_REFUTED, EXIT_USAGE, CommandError, UserCodeError,
)
from dpkit.commands.parser import build_parser
from dpkit.commands.provenance import config_hash, environment

PRESENTATION_OPTIONS = frozenset({"func", "json", "out", "quiet", "workers", "batch_timeout"})
"""Options that change how a run is shown or where it is written, never its numbers."""


def run_configuration(args: argparse.Namespace) -> dict[str, Any]:
    """Every option of a parsed command that can change its numbers, as JSON-ready values.

    Options left unset (``None``) are omitted, so adding a new optional option to a command
    does not change the hash of existing runs.
    """
    config = {}
    for key, value in sorted(vars(args).items()):
        if key in PRESENTATION_OPTIONS or value is None:
            continue
        config[key] = value if isinstance(value, (str, int, float, bool, list)) else str(value)
    return config


def envelope(args: argparse.Namespace, argv: Sequence[str]) -> dict[str, Any]:
    """The provenance block added under ``"dpkit"`` to every JSON object a command prints."""
    config = run_configuration(args)
    return {
        "command": args.command,
        "argv": list(argv),
        "config": config,
        "config_hash": config_hash(config),
        "environment": environment(),
    }


def describe_os_error(error: OSError) -> str:
    """One line that names the path: ``cannot write 'x/y': Permission denied``."""
    path = error.filename if error.filename is not None else None
    reason = error.strerror or str(error)
    if path is None:
        return reason
    text = f"{os.fsdecode(path)!r}: {reason}"
    if error.filename2 is not None:
        text = f"{os.fsdecode(error.filename2)!r} <- " + text
    return text


def parse(argv: Sequence[str], parser: argparse.ArgumentParser | None = None) -> argparse.Namespace:
    """Parse ``argv`` like the ``dpkit`` executable, raising :class:`CommandError` (never ``SystemExit``)."""
    stderr, stdout = io.StringIO(), io.StringIO()
    try:
        with contextlib.redirect_stderr(stderr), contextlib.redirect_stdout(stdout):
            return (parser or build_parser()).parse_args(list(argv))
    except SystemExit as exit_:
        message = (stderr.getvalue() or stdout.getvalue()).strip().splitlines()
        raise CommandError(message[-1] if message else f"cannot parse {list(argv)!r}",
                           exit_.code if isinstance(exit_.code, int) else EXIT_USAGE) from None


def run(argv: Sequence[str], parser: argparse.ArgumentParser | None = None) -> int:
    """Parse ``argv`` with ``parser`` (default: :func:`~dpkit.commands.parser.build_parser`),
    run the command and return its exit code (see :data:`EXIT_CODES`); with ``--json`` its
    output gets the envelope. Never raises (``--help`` and usage errors return 0 and 2)."""
    argv = list(argv)
    try:
        args = (parser or build_parser()).parse_args(argv)
    except SystemExit as exit_:  # --help, --version, usage errors (already printed by argparse)
        return exit_.code if isinstance(exit_.code, int) else EXIT_USAGE
    except KeyboardInterrupt:
        print("dpkit: interrupted; nothing was run", file=sys.stderr)
        return EXIT_INTERRUPTED
    wants_json = bool(getattr(args, "json", False))
    capture = io.StringIO()
    name = f"dpkit {args.command}"
    try:
        if wants_json:
            with contextlib.redirect_stdout(capture):
                status = int(args.func(args) or 0)
        else:
            status = int(args.func(args) or 0)
    except KeyboardInterrupt as interrupt:
        sys.stdout.write(capture.getvalue())
        note = getattr(interrupt, "dpkit_note", None) or "no result was printed and no file was written"
        print(f"{name}: interrupted; {note}", file=sys.stderr)
        return EXIT_INTERRUPTED
    except OSError as error:
        sys.stdout.write(capture.getvalue())
        print(f"{name}: error: {describe_os_error(error)}", file=sys.stderr)
        return EXIT_FAILURE
    except CommandError as error:
        sys.stdout.write(capture.getvalue())
        print(f"{name}: error: {_one_line(error)}", file=sys.stderr)
        return error.status
    except (ValueError, TypeError) as error:
        sys.stdout.write(capture.getvalue())
        print(f"{name}: error: {_one_line(error)}", file=sys.stderr)
        return EXIT_USAGE
    except UserCodeError as error:  # e.g. a user's function raised: its message carries their traceback
        sys.stdout.write(capture.getvalue())
        print(f"{name}: error: {error}", file=sys.stderr)
        return EXIT_FAILURE
    except Exception as error:  # a dpkit bug or an environment failure: one line (DPKIT_DEBUG=1 re-raises)
        if os.environ.get("DPKIT_DEBUG"):
            raise
        sys.stdout.write(capture.getvalue())
        print(f"{name}: error: {type(error).__name__}: {_one_line(error)} (this is a failure inside dpkit; "
              f"please report it with the command line)", file=sys.stderr)
        return EXIT_FAILURE
    if wants_json:
        sys.stdout.write(_with_envelope(capture.getvalue(), args, argv))
    return status


def _one_line(error: BaseException) -> str:
    lines = str(error).strip().splitlines() or [type(error).__name__]
    return lines[0] if len(lines) == 1 else lines[0] + " ..."


def run_json(argv: Sequence[str], *, ok: Sequence[int] = (EXIT_OK, EXIT_REFUTED)) -> dict[str, Any]:
    """Run ``dpkit ARGV --json`` in-process and return its JSON object (with the provenance envelope).

    Raises :class:`CommandError` (a ``ValueError``) with the command's own error message when
    it exits with a status not in ``ok`` (a refuted audit, exit 3, still returns its object);
    never ``SystemExit``.

    >>> result = run_json(["epsilon", "--mechanism", "gaussian", "--sigma", "1", "--delta", "1e-5"])
    >>> result["accountant"], result["dpkit"]["argv"][0]
    ('rdp', 'epsilon')
    """
    argv = list(argv)
    if "--json" not in argv:
        argv.append("--json")
    stdout, stderr = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        status = run(argv)
    if status == EXIT_INTERRUPTED:
        raise KeyboardInterrupt
    if status not in ok:
        raise CommandError(f"`dpkit {' '.join(argv)}` failed with exit {status}: {stderr.getvalue().strip()}",
                           status)
    try:
        return json.loads(stdout.getvalue())
    except json.JSONDecodeError:
        raise CommandError(f"`dpkit {' '.join(argv)}` did not print one JSON object", EXIT_FAILURE) from None


def _with_envelope(printed: str, args: argparse.Namespace, argv: Sequence[str]) -> str:
    try:
        payload = json.loads(printed)
    except json.JSONDecodeError:
        return printed
    if not isinstance(payload, dict):
        return printed
    payload["dpkit"] = envelope(args, argv)
    return strict_json.dumps(payload) + "\n"
