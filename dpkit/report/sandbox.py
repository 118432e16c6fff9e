"""Run a document's recorded command in a child process: a document is data, never code.

A report reruns the command a document records to check its numbers. The document decides
only *which* command: :func:`rerun_plan` checks it first (dpkit's own parser, known commands and
options only), and:

- code the command would import (``audit --mechanism module:function``, ``--pairs module:NAME``,
  or any ``module:NAME`` token in the argv) runs only if the reader allowed that module by name
  (:attr:`RerunPolicy.trusted_modules`, ``--trust-module NAME``); otherwise the rerun is
  skipped (:class:`RerunSkipped`) and the report says how to allow it;
- a file the command reads (``train --data FILE`` or ``FOLDER``, ``audit --pairs-file FILE``) must
  be a relative path inside the current directory (no ``..``, no absolute path); options that
  write (``--out``) are removed and so is ``--workers`` (the default applies).

:func:`run_in_child` then runs it with ``python -m dpkit.report.rerun_child SPEC_FILE`` (a fresh
interpreter, not a fork; the argv travels in a file, not on the command line): stdin closed, a
time limit (:attr:`RerunPolicy.timeout`), in a fresh temporary directory that holds only copies
of the files it reads, each opened once by this process with no symbolic link followed at any
component and written there as a new regular file (:mod:`dpkit.report.rerun_inputs`). Trusted
modules are imported from the installed environment (``sys.path``, ``PYTHONPATH`` included) or from
:attr:`RerunPolicy.trusted_paths` (``--trust-path DIR``), never from the document's folder, the
current directory or the temporary directory. The sandbox confines what a *document* can ask
for; code the reader trusts runs with the reader's rights.
"""

from __future__ import annotations

import json
import math
import os
import re
import signal
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from dpkit.report.document import read_numbers
from dpkit.report.rerun_inputs import stage_inputs

#: Seconds a rerun may take before it is stopped (``dpkit report --rerun-timeout``).
DEFAULT_TIMEOUT = 600.0

#: Largest JSON a rerun may print (bytes); a larger output is an error, not a memory spike.
MAX_OUTPUT_BYTES = 256 * 2**20

#: ``train --data`` values that name packaged or generated data, not files.
BUILTIN_DATA = ("adult", "builtin", "synthetic")

#: The options of each command that name a file it reads (argparse destinations).
FILE_OPTIONS: dict[str, tuple[str, ...]] = {"train": ("data",), "audit": ("pairs_file",)}

#: The file options that may also name a folder (``train --data`` an Adult folder).
FOLDER_OPTIONS = ("data",)

#: The options of each command that name code to import (``module:NAME``).
CODE_OPTIONS: dict[str, tuple[str, ...]] = {"audit": ("mechanism", "pairs")}

_MODULE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*")
_CODE_TOKEN = re.compile(r"(?:--[\w-]+=)?(?P<module>[^\s:=]+):(?P<name>[A-Za-z_][A-Za-z0-9_]*)")


@dataclass(frozen=True)
class RerunPolicy:
    """What a report's reruns may do.

    Attributes
    ----------
    trusted_modules
        Module names (as written before ``:`` in ``module:NAME``) whose code a rerun may import
        and run. Empty by default: only built-in commands and mechanisms rerun.
    trusted_paths
        Directories searched first for trusted modules (absolute after construction).
    timeout
        Seconds each rerun may take.
    """

    trusted_modules: frozenset[str] = frozenset()
    trusted_paths: tuple[str, ...] = ()
    timeout: float = DEFAULT_TIMEOUT

    def __post_init__(self) -> None:
        modules = frozenset(self.trusted_modules)
        for name in modules:
            if not isinstance(name, str) or not _MODULE.fullmatch(name):
                raise ValueError(f"trust_module must be a module name such as mypackage.mech, got {name!r}")
        paths = []
        for path in self.trusted_paths:
            if not isinstance(path, (str, os.PathLike)) or not os.path.isdir(path):
                raise ValueError(f"trust_path {str(path)!r} is not a directory")
            paths.append(os.path.abspath(path))
        if isinstance(self.timeout, bool) or not isinstance(self.timeout, (int, float)) \
                or not math.isfinite(self.timeout) or self.timeout <= 0:
            raise ValueError(f"rerun_timeout must be a positive number of seconds, got {self.timeout!r}")
        object.__setattr__(self, "trusted_modules", modules)
        object.__setattr__(self, "trusted_paths", tuple(paths))
        object.__setattr__(self, "timeout", float(self.timeout))


class RerunSkipped(Exception):
    """A rerun not performed because it would run code the reader has not trusted."""

    def __init__(self, modules: Sequence[str]):
        self.modules = sorted(set(modules))
        self.allow = " ".join(f"--trust-module {m}" for m in self.modules)
        super().__init__(f"it imports and runs code the document names ({', '.join(self.modules)}); "
                         f"to allow it: {self.allow}")


@dataclass(frozen=True)
class RerunPlan:
    """A checked rerun: the argv to execute, the modules it imports, the files it reads."""

    argv: list[str]
    modules: list[str]
    inputs: list[tuple[str, bool]]


def code_modules(argv: Sequence[str], args: Any) -> list[str]:
    """The modules a rerun of ``argv`` (parsed as ``args``) would import: the ``module`` of every
    ``module:NAME`` given to a code option, and of any other argv token of that form.

    Raises ``ValueError`` for code named by something other than a module name (a file path).
    """
    specs = [getattr(args, option, None) for option in CODE_OPTIONS.get(args.command, ())]
    specs = [spec for spec in specs if isinstance(spec, str) and ":" in spec]
    specs += [token for token in argv if _CODE_TOKEN.fullmatch(token)]
    modules = []
    for spec in specs:
        match = _CODE_TOKEN.fullmatch(spec)
        module = match.group("module") if match else spec.partition(":")[0]
        if not _MODULE.fullmatch(module) or module.endswith(".py"):
            raise ValueError(f"the document names code {spec!r} that is not module:NAME with an importable module "
                             f"name; a report reruns only code named by module (--trust-module NAME)")
        modules.append(module)
    return sorted(set(modules))


def input_files(args: Any) -> list[tuple[str, bool]]:
    """The files a rerun reads: each a relative path inside the current directory, and whether it may be
    a folder (``train --data FOLDER``). Only the names are checked here; what they lead to is checked
    when they are copied into the sandbox (:func:`~dpkit.report.rerun_inputs.stage_inputs`).

    Raises
    ------
    ValueError
        A path is absolute, climbs out (``..``), starts with ``~`` or is empty.
    """
    paths = []
    for option in FILE_OPTIONS.get(args.command, ()):
        path = getattr(args, option, None)
        if path is None or (option == "data" and path in BUILTIN_DATA):
            continue
        flag = "--" + option.replace("_", "-")
        if not isinstance(path, str) or not path or "\0" in path or os.path.isabs(path) \
                or ".." in Path(path).parts or path.startswith("~") or not Path(path).parts:
            raise ValueError(f"the document's {flag} {path!r} is not a relative path inside the current directory; "
                             f"refusing to rerun it")
        paths.append((path, option in FOLDER_OPTIONS))
    return paths


def rerun_plan(argv: Sequence[str], args: Any, policy: RerunPolicy) -> RerunPlan:
    """The checked rerun of ``argv`` (already parsed as ``args`` by dpkit's parser).

    Raises :class:`RerunSkipped` if it imports a module not in ``policy.trusted_modules``, and
    ``ValueError`` if it names code by path or reads a file outside the current directory.
    """
    modules = code_modules(argv, args)
    untrusted = [m for m in modules if m not in policy.trusted_modules]
    if untrusted:
        raise RerunSkipped(untrusted)
    return RerunPlan(argv=list(argv), modules=modules, inputs=input_files(args))


def run_in_child(plan: RerunPlan, policy: RerunPolicy, *, full_result: bool = False) -> dict[str, Any]:
    """Execute ``dpkit <plan.argv> --json`` in a fresh interpreter and return its JSON object, its
    non-finite numbers read back as floats (:func:`~dpkit.report.document.read_numbers`).

    With ``full_result`` (``train``), the command also writes its full result into the
    temporary directory; it is returned under ``"_full"``. The files ``plan.inputs`` are copied
    into that directory first (:func:`~dpkit.report.rerun_inputs.stage_inputs`).

    Raises
    ------
    ValueError
        An input was refused, or the rerun failed, printed no JSON object, was killed, or exceeded
        ``policy.timeout`` (one line; paths of this machine are replaced by placeholders).
    """
    with tempfile.TemporaryDirectory(prefix="dpkit-rerun-") as tmp:
        work, private = Path(tmp, "work"), Path(tmp, "private")
        work.mkdir()
        private.mkdir()
        stage_inputs(plan.inputs, work)  # copies at the same relative paths: the argv and its hash are unchanged
        argv = list(plan.argv)
        if "--json" not in argv:
            argv.append("--json")
        full = private / "full.json"
        if full_result:
            argv += ["--out", str(full)]
        spec = {"argv": argv, "modules": plan.modules, "paths": list(policy.trusted_paths),
                "empty": str(private / "empty")}
        (private / "empty").mkdir()
        spec_file = private / "spec.json"
        spec_file.write_text(json.dumps(spec), encoding="utf-8")  # a file, not an argument: no length limit
        env = {**os.environ, "PYTHONSAFEPATH": "1", "PYTHONUNBUFFERED": "1", "PYTHONDONTWRITEBYTECODE": "1"}
        env.pop("PYTHONSTARTUP", None)
        env.pop("PYTHONINSPECT", None)
        with open(private / "stdout", "wb") as out, open(private / "stderr", "wb") as err:
            status = _wait([sys.executable, "-m", "dpkit.report.rerun_child", str(spec_file)], work, env, out, err,
                           policy.timeout)
        printed = _read(private / "stdout", MAX_OUTPUT_BYTES + 1)
        message = _last_error_line(_read(private / "stderr", 1 << 20).decode("utf-8", "replace"))
        if status is None:
            raise ValueError(f"the rerun did not finish within {policy.timeout:g} s and was stopped "
                             f"(--rerun-timeout SECONDS allows more)")
        if status < 0:
            raise ValueError(f"the rerun was killed by signal {_signal_name(-status)}"
                             + (f" ({message})" if message else ""))
        if status not in (0, 3):  # 3: an audit that refuted its claim still prints its object
            raise ValueError(f"the rerun exited {status}: {message or 'without a message'}")
        if len(printed) > MAX_OUTPUT_BYTES:
            raise ValueError(f"the rerun printed more than {MAX_OUTPUT_BYTES >> 20} MiB")
        try:
            result = json.loads(printed.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError, RecursionError):
            raise ValueError("the rerun did not print one JSON object") from None
        if not isinstance(result, dict):
            raise ValueError("the rerun did not print one JSON object")
        if full_result and full.is_file():
            try:
                result["_full"] = json.loads(full.read_text(encoding="utf-8"))
            except (UnicodeDecodeError, json.JSONDecodeError, RecursionError):
                raise ValueError("the rerun's full result is not JSON") from None
    return read_numbers(result)


def _wait(command: list[str], cwd: Path, env: dict[str, str], out: Any, err: Any, timeout: float) -> int | None:
    """Run ``command`` in its own session; its exit status, or ``None`` if it was stopped at ``timeout``.
    The child and every process it started are killed on a timeout or an interrupt."""
    try:
        child = subprocess.Popen(command, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=err,
                                 start_new_session=True)
    except OSError as error:
        raise ValueError(f"the child process could not start ({error.strerror or error})") from None
    try:
        return child.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        return None
    finally:
        _kill_group(child)


def _kill_group(child: subprocess.Popen) -> None:
    """Kill the process group the child leads (its workers too), and reap the child."""
    try:
        os.killpg(child.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    child.wait()


def _read(path: Path, limit: int) -> bytes:
    with open(path, "rb") as handle:
        return handle.read(limit)


def _last_error_line(stderr: str) -> str:
    """The command's one-line error (``dpkit CMD: error: ...``), else the last line, shortened."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith("dpkit ")]
    line = errors[-1] if errors else (lines[-1] if lines else "")
    return line if len(line) <= 500 else line[:497] + "..."


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return str(number)
