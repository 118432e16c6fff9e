"""Exit codes and errors of the ``dpkit`` commands (one table, used by every command).

The table is also in ``docs/index.md``; :mod:`dpkit.commands.runner` maps exceptions to codes.
"""

from __future__ import annotations

EXIT_OK, EXIT_FAILURE, EXIT_USAGE, EXIT_REFUTED, EXIT_INTERRUPTED = 0, 1, 2, 3, 130
EXIT_CODES = {
    EXIT_OK: "success",
    EXIT_FAILURE: "run-time failure, or a report rerun that did not reproduce its numbers",
    EXIT_USAGE: "usage error (bad option or value)",
    EXIT_REFUTED: "dpkit audit: the claim was refuted",
    EXIT_INTERRUPTED: "interrupted (Ctrl-C)",
}
"""The exit codes of every ``dpkit`` command (the table in ``docs/index.md``)."""


class CommandError(ValueError):
    """A recorded command could not be run (bad argv, or it failed); ``status`` is its exit code."""

    def __init__(self, message: str, status: int = EXIT_USAGE):
        super().__init__(message)
        self.status = status


class UserCodeError(RuntimeError):
    """The user's code failed (exit code 1): their module did not import, or their mechanism or pairs
    function raised. Not a usage error: the options were valid."""
