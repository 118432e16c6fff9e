"""``dpkit audit``: test a mechanism's claimed (ε, δ) and print an empirical ε lower bound.

Examples (see ``docs/audit.md``)::

    dpkit audit --mechanism rnm --claimed-epsilon 0.7 --json
    dpkit audit --mechanism svt --cutoff 2 --claimed-epsilon 1 --samples 2000000 --workers 2
    dpkit audit --mechanism mypackage.mech:leaky_sum --pairs statdp-one --claimed-epsilon 1 --json
    dpkit audit --mechanism mymech:count --scalar --pairs-file pairs.json --claimed-epsilon 1

A built-in name runs the corresponding :mod:`dpkit.mechanisms` class calibrated to
``--mechanism-epsilon`` (default: the claimed ε), so a correct mechanism should pass;
``module:function`` imports ``function(database, n, rng)`` (``--scalar``: ``function(database,
rng)`` returning one output), with the current directory importable as under ``python -m``
(:mod:`dpkit.commands.user_code`). A user function needs its neighbouring inputs
(``--pairs NAME``, ``--pairs module:NAME`` or ``--pairs-file``, :mod:`dpkit.commands.audit.pairs`):
dpkit cannot know which inputs the user's claim calls neighbours, and a wrong default either
refutes a correct mechanism or misses a violation. The output always states the relation
and both inputs of the witness pair. ``--algorithm NAME`` is
:mod:`dpkit.commands.audit.algorithm`. Exit code 3 (:data:`~dpkit.commands.errors.EXIT_REFUTED`)
when the claim is refuted, in text and ``--json`` modes alike.
"""

from dpkit.commands.audit.command import register, run

__all__ = ["register", "run"]
