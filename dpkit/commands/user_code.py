"""Load and contain the user's own code named ``module:NAME`` or ``path/to/file.py:NAME`` on the
command line (``dpkit audit --mechanism``, ``--pairs``).

Containment. While the user's code is imported and run (:func:`stdout_to_stderr`), everything
written to standard output goes to stderr: Python's ``print``, C code writing to file
descriptor 1, and the worker processes started meanwhile, which inherit both; so ``--json``
output stays one JSON object with its provenance. A ``SystemExit`` or ``KeyboardInterrupt`` the
user's function raises (:class:`UserFunction`, :func:`call_user`) becomes a :class:`UserCodeExit`
(exit code 1, one line naming the function); a real Ctrl-C (:func:`install_interrupt_note`,
installed by the command line) still interrupts. ``os._exit``, a fatal signal or a crash in C
code ends the process at once and cannot be contained in-process: run such code with
``--workers 2`` or more, where the pilot and every batch run in worker processes and a worker's
death is reported as an error naming the function and the signal or exit code.

Like ``python -m``, the current directory is importable: a module beside the user is found
without ``PYTHONPATH``. The directory is put first on ``sys.path`` (so, as with ``python -m``,
it shadows an installed module of the same name) only while the command runs
(:func:`current_directory_importable`), and removed afterwards, so that a run inside another
program (a report's rerun, a test) leaves ``sys.path`` as it found it. Worker processes
started while it is on the path inherit it, so they can unpickle the user's function.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import os
import signal
import sys
import threading
import traceback
from typing import Any, Callable, Iterator

from dpkit.commands.errors import UserCodeError

__all__ = ["UserCodeExit", "UserFunction", "call_user", "current_directory_importable", "stdout_to_stderr",
           "install_interrupt_note", "load_attribute", "split_spec"]


class UserCodeExit(UserCodeError):
    """The user's function raised ``SystemExit`` or ``KeyboardInterrupt`` (exit code 1, one line)."""


_REAL_INTERRUPT = threading.Event()


def _on_sigint(_signum: int, _frame: Any) -> None:
    _REAL_INTERRUPT.set()
    raise KeyboardInterrupt


def install_interrupt_note() -> None:
    """Make a real Ctrl-C (SIGINT) distinguishable from a ``KeyboardInterrupt`` raised by user code."""
    if threading.current_thread() is threading.main_thread() and signal.getsignal(signal.SIGINT) is \
            signal.default_int_handler:
        signal.signal(signal.SIGINT, _on_sigint)


@contextlib.contextmanager
def stdout_to_stderr() -> Iterator[None]:
    """For the duration, standard output goes to stderr: ``sys.stdout`` is ``sys.stderr`` and file
    descriptor 1 a duplicate of descriptor 2 (so C code and the worker processes started meanwhile
    write there too); afterwards both are what they were, for the command's own output."""
    with contextlib.suppress(Exception):
        sys.stdout.flush()
    saved_fd: int | None = None
    try:
        saved_fd = os.dup(1)
        os.dup2(2, 1)
    except OSError:  # no descriptor 1 or 2 (a daemon, a test harness): Python's own streams only
        if saved_fd is not None:
            os.close(saved_fd)
        saved_fd = None
    saved = sys.stdout
    sys.stdout = sys.stderr
    try:
        yield
    finally:
        with contextlib.suppress(Exception):
            sys.stderr.flush()
        sys.stdout = saved
        if saved_fd is not None:
            os.dup2(saved_fd, 1)
            os.close(saved_fd)


def call_user(function: Callable[..., Any], label: str, *args: Any) -> Any:
    """``function(*args)``; ``SystemExit`` and a ``KeyboardInterrupt`` that is not a real Ctrl-C become
    :class:`UserCodeExit` naming ``label``."""
    try:
        return function(*args)
    except SystemExit as exit_:
        raise UserCodeExit(f"{label} called sys.exit({exit_.code!r}); user code must return, not exit") from None
    except KeyboardInterrupt:
        if _REAL_INTERRUPT.is_set():
            raise
        raise UserCodeExit(f"{label} raised KeyboardInterrupt; user code must return, not interrupt") from None


_DPKIT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def user_frames(error: BaseException) -> str:
    """The traceback of ``error`` without dpkit's or importlib's frames (``""`` if none is left)."""
    frames = [f for f in traceback.extract_tb(error.__traceback__)
              if not os.path.abspath(f.filename).startswith(_DPKIT + os.sep) and "importlib" not in f.filename
              and "<frozen" not in f.filename]
    where = "".join(traceback.format_list(frames)).rstrip()
    return f"\nTraceback (the user's own frames, most recent call last):\n{where}" if where else ""


class UserFunction:
    """The user's function ``label`` (e.g. ``--mechanism mymod:fn``), called through :func:`call_user`.

    Picklable when the function is, so worker processes can run it.
    """

    def __init__(self, function: Callable[..., Any], label: str):
        self.function = function
        self.label = label

    def __call__(self, *args: Any) -> Any:
        return call_user(self.function, self.label, *args)

    def __repr__(self) -> str:
        return self.label


@contextlib.contextmanager
def current_directory_importable() -> Iterator[str]:
    """Put ``os.getcwd()`` first on ``sys.path`` for the duration (as ``python -m`` does); yields it."""
    cwd = os.getcwd()
    added = cwd not in sys.path
    if added:
        sys.path.insert(0, cwd)
    try:
        yield cwd
    finally:
        if added:
            with contextlib.suppress(ValueError):
                sys.path.remove(cwd)


def split_spec(spec: str, option: str) -> tuple[str, str]:
    """``"pkg.module:NAME"`` -> ``("pkg.module", "NAME")`` (also ``"path/to/file.py:NAME"``); a
    ``ValueError`` naming ``option`` otherwise."""
    module, sep, name = spec.rpartition(":")
    if not sep or not module or not name or ":" in name:
        raise ValueError(f"{option} must be module:NAME (e.g. mymodule:my_function), got {spec!r}")
    return module, name


def load_attribute(spec: str, option: str) -> Any:
    """The object ``NAME`` of ``module:NAME``, imported with the current directory importable.

    Raises
    ------
    ValueError
        The module cannot be found or has no ``NAME`` (the message says which, names
        ``option`` and the directories searched first).
    UserCodeError
        Importing the module raised (the message carries the module's own traceback lines).
    """
    module_name, name = split_spec(spec, option)
    if module_name.endswith(".py") or os.sep in module_name or (os.altsep and os.altsep in module_name):
        return _load_from_file(spec, option, module_name, name)
    with current_directory_importable() as cwd:
        importlib.invalidate_caches()  # a module written since the last import attempt must be found
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as error:
            if error.name is not None and not (module_name == error.name or module_name.startswith(error.name + ".")):
                raise UserCodeError(_import_raised(spec, option, module_name, error)) from None
            raise ValueError(f"cannot load {option} {spec!r}: import of module {module_name!r} failed: {error} "
                             f"(searched the current directory {cwd!r}, then sys.path; run dpkit from the "
                             f"module's directory or add it to PYTHONPATH)") from None
        except (Exception, SystemExit) as error:  # the user's module raised while being imported
            raise UserCodeError(_import_raised(spec, option, module_name, error)) from None
    try:
        return getattr(module, name)
    except AttributeError:
        where = getattr(module, "__file__", None) or module_name
        local = os.path.join(cwd, *module_name.split(".")) + ".py"
        shadowed = (f"; a module of that name was already imported from {where}, so {local} was not read: "
                    f"rename yours" if os.path.isfile(local) and os.path.abspath(str(where)) != local else "")
        raise ValueError(f"cannot load {option} {spec!r}: module {module_name!r} ({where}) has no attribute "
                         f"{name!r}{shadowed}") from None


def _load_from_file(spec: str, option: str, path: str, name: str) -> Any:
    """``NAME`` of the Python file ``path``, imported as a module named after the file (its folder is
    importable while it loads, so that its own imports of neighbouring modules work)."""
    if not os.path.isfile(path):
        raise ValueError(f"cannot load {option} {spec!r}: file {path!r} does not exist")
    module_name = os.path.splitext(os.path.basename(path))[0]
    if not module_name.isidentifier():
        raise ValueError(f"cannot load {option} {spec!r}: {module_name!r} is not a valid module name; rename the file")
    folder = os.path.dirname(os.path.abspath(path))
    module = sys.modules.get(module_name)
    if module is None or os.path.abspath(getattr(module, "__file__", "") or "") != os.path.abspath(path):
        loader_spec = importlib.util.spec_from_file_location(module_name, path)
        if loader_spec is None or loader_spec.loader is None:
            raise ValueError(f"cannot load {option} {spec!r}: {path!r} is not a Python file")
        module = importlib.util.module_from_spec(loader_spec)
        sys.modules[module_name] = module  # worker processes unpickle the function by this name
        sys.path.insert(0, folder)
        try:
            loader_spec.loader.exec_module(module)
        except (Exception, SystemExit) as error:
            del sys.modules[module_name]
            raise UserCodeError(_import_raised(spec, option, path, error)) from None
        finally:
            with contextlib.suppress(ValueError):
                sys.path.remove(folder)
    try:
        return getattr(module, name)
    except AttributeError:
        raise ValueError(f"cannot load {option} {spec!r}: {path!r} has no attribute {name!r}") from None


def _import_raised(spec: str, option: str, module_name: str, error: BaseException) -> str:
    text = f"cannot load {option} {spec!r}: importing module {module_name!r} raised {type(error).__name__}: {error}"
    return text + user_frames(error)
