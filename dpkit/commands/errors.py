"""Exit codes and errors of the ``dpkit`` commands (one table, used by every command).

The table lives here only and is rendered into ``docs/index.md`` (:func:`exit_code_table`);
:mod:`dpkit.commands.runner` maps exceptions to codes.
"""

from __future__ import annotations

EXIT_OK, EXIT_FAILURE, EXIT_USAGE, EXIT_REFUTED, EXIT_INTERRUPTED = 0, 1, 2, 3, 130
EXIT_CODES = {
    EXIT_OK: "success",
    EXIT_FAILURE: "run-time failure: a file cannot be read or written (a concurrent writer won, a permission or "
                  "disk error), a user's function raised, exited or timed out, a computation failed, an internal "
                  "error; or a report rerun that did not reproduce its numbers",
    EXIT_USAGE: "usage error: a bad option or value (argparse's own errors too), an input path that does not exist "
                "or is not what the option needs, an `--out` that exists without `--force`",
    EXIT_REFUTED: "`dpkit audit`: the claim was refuted (a violation was found)",
    EXIT_INTERRUPTED: "interrupted (Ctrl-C, at any moment, start-up included); the line says what was or was not "
                      "written",
}
"""The exit codes of every ``dpkit`` command; ``docs/index.md`` holds :func:`exit_code_table` of it."""


def exit_code_table() -> str:
    """:data:`EXIT_CODES` as the Markdown table in ``docs/index.md``.

    >>> print(exit_code_table().splitlines()[2])
    | 0 | success |
    """
    return "\n".join(["| code | meaning |", "|---|---|", *(f"| {code} | {text} |" for code, text in EXIT_CODES.items())])


class CommandError(ValueError):
    """A recorded command could not be run (bad argv, or it failed); ``status`` is its exit code."""

    def __init__(self, message: str, status: int = EXIT_USAGE):
        super().__init__(message)
        self.status = status


class UserCodeError(RuntimeError):
    """The user's code failed (exit code 1): their module did not import, or their mechanism or pairs
    function raised. Not a usage error: the options were valid."""
