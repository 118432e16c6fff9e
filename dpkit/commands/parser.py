"""The ``dpkit`` argument parser, built from the command modules.

A command module exposes ``register(subparsers)``, which adds its sub-parser with ``func``
set to its runner ``run(args) -> int``. :data:`COMMANDS` names the commands whose JSON output a
report can rerun (module and one-line help); the command line adds its own (``report``,
``demo``) through ``extra``.

Start-up is kept short: :func:`build_parser` given the argument vector imports only the module
of the command it names (the others appear in ``dpkit --help`` by name and help line), so
``dpkit epsilon`` never imports the audit, the algorithms or matplotlib.
"""

from __future__ import annotations

import argparse
import importlib
from types import ModuleType
from typing import Iterable, Mapping, NoReturn, Sequence

from dpkit import __version__

COMMANDS: dict[str, tuple[str, str]] = {
    "epsilon": ("dpkit.commands.epsilon", "epsilon spent by a (subsampled, repeated) mechanism at a given delta"),
    "calibrate": ("dpkit.commands.calibrate", "noise (sigma or scale) that meets a target (epsilon, delta)"),
    "dpsgd": ("dpkit.commands.dpsgd",
              "DP-SGD privacy statement: epsilon of a training run, or the noise multiplier for a target"),
    "train": ("dpkit.commands.train", "train a (private) model on Adult, a file or the built-in data"),
    "audit": ("dpkit.commands.audit",
              "test a claimed (epsilon, delta) of a mechanism; print an empirical epsilon lower bound"),
}
"""Commands reachable without the command line (name → module, help), in ``dpkit --help`` order."""


class OneLineParser(argparse.ArgumentParser):
    """An ArgumentParser whose usage errors are one line (``dpkit: error: ...``) and which
    never accepts an abbreviated option (``--eps`` is not ``--epsilon``)."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        kwargs["allow_abbrev"] = False
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]

    command: str | None = None
    """The command being parsed (set by :func:`build_parser`), for hints."""

    def error(self, message: str) -> NoReturn:  # type: ignore[override]
        self.exit(2, f"{self.prog}: error: {message}{self._hint(message)}\n")

    def _hint(self, message: str) -> str:
        if self.command != "audit" or not message.startswith("unrecognized arguments:"):
            return ""
        specs = [word for word in message.split()[2:] if ":" in word and not word.startswith("-")]
        return f" (to audit your own function, pass it as --mechanism {specs[0]})" if specs else ""


def build_parser(extra: Mapping[str, tuple[str, str]] | Iterable[ModuleType] = (),
                 argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The ``dpkit`` parser with every command of :data:`COMMANDS`, then those of ``extra``
    (name → (module, help), or command modules).

    With ``argv``, only the command it names is imported and registered in full; the others are
    listed by name and help line (enough for ``dpkit --help`` and for a usage error).
    """
    parser = OneLineParser(prog="dpkit", description="Differential-privacy accounting, training and auditing.")
    parser.add_argument("--version", action="version", version=f"dpkit {__version__}")
    subparsers = parser.add_subparsers(dest="command", required=True, parser_class=OneLineParser)
    modules: dict[str, ModuleType] = {}
    table = dict(COMMANDS)
    if isinstance(extra, Mapping):
        table.update(extra)
    else:
        for module in extra:
            name = module.__name__.rpartition(".")[2]
            table[name], modules[name] = (module.__name__, ""), module
    chosen = None if argv is None else next((a for a in argv if not a.startswith("-")), "")
    parser.command = chosen
    for name, (module_name, help_line) in table.items():
        if chosen is None or name == chosen:
            (modules.get(name) or importlib.import_module(module_name)).register(subparsers)
        else:
            subparsers.add_parser(name, help=help_line)
    return parser
