"""The ``dpkit`` command line: a thin layer over :mod:`dpkit.commands` (parsing, running, printing).

:mod:`dpkit.cli.main` is the entry point; ``report`` and ``demo`` live here because they sit
above :mod:`dpkit.report`. Nothing in dpkit imports this package.
"""
