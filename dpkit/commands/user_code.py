"""Load the user's own code named ``module:NAME`` on the command line (``dpkit audit --mechanism``, ``--pairs``).

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
import os
import sys
import traceback
from typing import Any, Iterator

from dpkit.commands.errors import UserCodeError

__all__ = ["current_directory_importable", "load_attribute", "split_spec"]


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
    """``"pkg.module:NAME"`` -> ``("pkg.module", "NAME")``; a ``ValueError`` naming ``option`` otherwise."""
    module, sep, name = spec.partition(":")
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
        except Exception as error:  # the user's module raised while being imported
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


def _import_raised(spec: str, option: str, module_name: str, error: BaseException) -> str:
    frames = traceback.extract_tb(error.__traceback__)
    user = [f for f in frames if "importlib" not in f.filename and f.filename != __file__]
    where = "".join(traceback.format_list(user or frames)).rstrip()
    return (f"cannot load {option} {spec!r}: importing module {module_name!r} raised {type(error).__name__}: "
            f"{error}\nTraceback (the module's own frames, most recent call last):\n{where}")
