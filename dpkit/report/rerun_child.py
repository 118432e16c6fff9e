"""The child process of a report's rerun: ``python -m dpkit.report.rerun_child SPEC_FILE``.

Started by :func:`dpkit.report.sandbox.run_in_child` in a fresh temporary directory with stdin
closed. ``SPEC_FILE`` holds a JSON object (in a file, so a long argv meets no limit of the command
line): ``argv`` (checked by the parent), ``modules`` (the trusted modules it imports) and
``paths`` (the ``--trust-path`` directories). The trusted modules are
imported first, from ``paths`` and the installed environment only (the working directory is
not on ``sys.path``); the command then finds them already imported, although it makes its
working directory importable. Prints what ``dpkit <argv>`` prints; exits with its exit code.
"""

from __future__ import annotations

import importlib
import json
import os
import sys

from dpkit import commands  # free: the command runner loads on first use, after the trusted modules


def import_trusted(module: str, command: str) -> int:
    """Import ``module``; 0, or the exit code after a one-line error on stderr."""
    try:
        with commands.user_code.stdout_to_stderr():  # what it prints goes to stderr: stdout is the command's JSON
            importlib.import_module(module)
        return 0
    except ModuleNotFoundError as error:
        if error.name and (module == error.name or module.startswith(error.name + ".")):
            print(f"{command}: error: the trusted module {module!r} is not installed and not in a --trust-path "
                  f"directory (a rerun does not import from the document's folder or the current directory)",
                  file=sys.stderr)
            return 2
        reason = error
    except BaseException as error:  # noqa: BLE001  (the module's own failure, SystemExit included)
        reason = error
    text = (str(reason).strip().splitlines() or [""])[0]
    print(f"{command}: error: importing the trusted module {module!r} raised {type(reason).__name__}: {text}",
          file=sys.stderr)
    return 1


def main(spec_file: str) -> int:
    with open(spec_file, encoding="utf-8") as handle:
        spec = json.load(handle)
    work = os.getcwd()
    sys.path[:] = [*spec["paths"], *(p for p in sys.path if p and os.path.abspath(p) != work)]
    command = f"dpkit {spec['argv'][0]}"
    for module in spec["modules"]:
        status = import_trusted(module, command)
        if status:
            return status
    return commands.runner.run(spec["argv"])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
