"""The ``dpkit`` commands below the command line: parse a recorded argument vector and run it.

``dpkit epsilon|calibrate|train|audit`` are implemented here (one module per command, each with
``register(subparsers)`` and ``run(args) -> int``), together with the parser that knows them
(:mod:`dpkit.commands.parser`), the provenance envelope of their JSON output
(:mod:`dpkit.commands.provenance`) and the in-process runner (:mod:`dpkit.commands.runner`)
that both the command line (:mod:`dpkit.cli`) and the report's reruns (:mod:`dpkit.report`) use.
Nothing here imports :mod:`dpkit.report` or :mod:`dpkit.cli.main`.
"""

import importlib
import importlib.util


def __getattr__(name: str) -> object:
    """Import the command module ``name`` on first use (PEP 562), so that ``from dpkit import
    commands`` is free and each caller loads only the modules it touches, when it touches them."""
    if name.startswith("_") or importlib.util.find_spec(f"{__name__}.{name}") is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return importlib.import_module(f"{__name__}.{name}")
