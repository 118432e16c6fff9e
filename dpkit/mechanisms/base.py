"""What every mechanism shares: the sampling contract, the audit adapter and input checks.

Contract (every class in :mod:`dpkit.mechanisms`)
-------------------------------------------------
* A mechanism is a frozen dataclass built from its privacy parameter(s) or its noise
  scale and the sensitivity; the constructor validates them.
* ``mech.event`` is the :class:`~dpkit.accounting.events.PrivacyEvent` one call spends,
  so an accountant can compose it.
* ``mech.sample(value, size=None, rng=None)`` returns one output for ``size=None``, or an
  array whose first axis has length ``size`` (independent draws for the same input).
  ``rng`` is a :class:`numpy.random.Generator`, an int seed or ``None``; the same seed
  gives the same outputs.
* ``mech.release(value, rng=..., ledger=..., agent=i)`` draws one output *and* records ``mech.event``
  in a :class:`~dpkit.mechanisms.ledger.PrivacyLedger` in the same call: the only way an
  algorithm publishes a noisy value, so the ledger is what was drawn.
* ``mech.release_each(values, rng=..., ledger=..., agents=[...])`` is the vectorised form for
  several agents at once (one output per agent, first axis; ``mech.event`` recorded once per
  agent, exactly as one ``release`` per agent records). By default it draws the agents in turn
  (:meth:`Mechanism.sample_each`); a mechanism may override ``sample_each`` to draw them at once.
* ``mech.as_audit_callable()`` returns ``f(database, n, rng)`` -> ``sample(database, n, rng)``,
  the signature :func:`dpkit.audit.audit` calls.
* ``floating_point_safe`` says whether the guarantee survives floating-point arithmetic
  (see ``docs/mechanisms.md``): the textbook continuous samplers assume idealised reals. A release
  by a mechanism that is not marks the ledger with its :attr:`~Mechanism.execution_note`, so a run
  says which of its releases are not private as executed.
"""

from __future__ import annotations

import dataclasses

import abc
from typing import Any, Callable, ClassVar

import numpy as np

from dpkit._validation import check_integer, check_rng
from dpkit.accounting.events import PrivacyEvent
from dpkit.mechanisms.ledger import PrivacyLedger


class Mechanism(abc.ABC):
    """Base class of dpkit's mechanisms (see the module docstring for the contract)."""

    floating_point_safe: ClassVar[bool] = False

    @property
    @abc.abstractmethod
    def event(self) -> PrivacyEvent:
        """The privacy event one call of :meth:`sample` spends."""

    @abc.abstractmethod
    def sample(self, value: Any, size: int | None = None, rng: Any = None) -> Any:
        """One output (``size=None``) or ``size`` independent outputs (first axis) for ``value``."""

    def release(self, value: Any, *, rng: Any, ledger: "PrivacyLedger", agent: int = 0) -> Any:
        """One output for ``value``, with :attr:`event` recorded in ``ledger`` for ``agent``.

        The event is recorded only after a successful draw, so a rejected input leaves no trace.
        """
        output = self.sample(value, rng=rng)
        ledger.record(agent, self.event)
        if not self.floating_point_safe:
            ledger.mark_not_as_executed(self.execution_note)
        return output

    @property
    def execution_note(self) -> str:
        """What does not hold as executed when :attr:`floating_point_safe` is false (one line)."""
        return (f"{type(self).__name__} draws continuous floating-point noise: its guarantee is proved in "
                "exact arithmetic, and the low bits of the released doubles can reveal more (Mironov 2012)")

    def sample_each(self, values: Any, rng: Any = None) -> np.ndarray:
        """One independent output per agent (first axis), for the agents' inputs ``values``.

        By default ``values`` is a sequence of :meth:`sample` inputs and each is drawn in turn
        (the same distribution as one :meth:`sample` call per agent). A mechanism overrides this
        to draw for all agents at once; it documents the batched form of ``values`` it takes.
        """
        generator = check_rng(rng)
        return np.stack([np.asarray(self.sample(value, rng=generator)) for value in values])

    def release_each(self, values: Any, *, rng: Any, ledger: "PrivacyLedger", agents: Any) -> np.ndarray:
        """One output per agent of ``agents`` (first axis), with :attr:`event` recorded once for each.

        The vectorised form of calling :meth:`release` for every agent in turn: it records exactly
        the same ledger entries, and its outputs have the same distribution (:meth:`sample_each`).
        The events are recorded only after a successful draw.
        """
        agents = ledger.check_agents(agents)
        output = self.sample_each(values, rng=rng)
        if np.shape(output)[0] != len(agents):
            raise ValueError(f"values must hold one input per agent: {len(agents)} agents, "
                             f"{np.shape(output)[0]} outputs")
        ledger.record_each(agents, self.event, checked=True)
        if not self.floating_point_safe:
            ledger.mark_not_as_executed(self.execution_note)
        return output

    def as_audit_callable(self) -> Callable[[Any, int, Any], Any]:
        """``f(database, n, rng)`` returning ``n`` outputs for the query answer ``database``.

        This is the black-box signature of :func:`dpkit.audit.audit`. The adapter is picklable,
        so it runs under a ``ProcessPoolExecutor``.
        """
        return AuditAdapter(self)


@dataclasses.dataclass(frozen=True)
class AuditAdapter:
    """Picklable ``f(database, n, rng)`` around a mechanism: ``mechanism.sample(database, size=n, rng=rng)``."""

    mechanism: Mechanism

    def __call__(self, database: Any, n: int, rng: Any) -> Any:
        return self.mechanism.sample(database, size=n, rng=rng)

    def query_answer(self, database: Any) -> Any:
        """The exact query answer the noise is centred on: ``database`` itself (the audit's
        ``answer``, for its lattice events relative to the input)."""
        return database


def check_size(size: Any) -> int | None:
    """``None`` or an integer ``>= 1``."""
    if size is None:
        return None
    return check_integer("size", size, minimum=1)


def check_value(value: Any, name: str = "value") -> np.ndarray:
    """The query answer as a float array (any shape), finite and real."""
    if type(value) is np.ndarray and value.dtype == np.float64:  # the algorithms' path: one finiteness check
        if not np.isfinite(value).all():
            raise ValueError(f"{name} must be finite, got {name}={value!r}")
        return value
    if isinstance(value, (str, bytes)) or value is None:
        raise TypeError(f"{name} must be a real number or an array of real numbers, got {name}={value!r}")
    try:
        array = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be a real number or an array of real numbers, got {name}={value!r}") from None
    if np.iscomplexobj(np.asarray(value)) or isinstance(value, bool) or np.asarray(value).dtype == bool:
        raise TypeError(f"{name} must be real (not boolean or complex), got {name}={value!r}")
    if not np.all(np.isfinite(array)):
        raise ValueError(f"{name} must be finite, got {name}={value!r}")
    return array


def check_vector(value: Any, name: str = "value", *, min_length: int = 1) -> np.ndarray:
    """A finite 1-D float array with at least ``min_length`` entries."""
    array = check_value(value, name)
    if array.ndim != 1 or array.shape[0] < min_length:
        raise ValueError(
            f"{name} must be a 1-D array with at least {min_length} entries, got shape {array.shape}"
        )
    return array


def output_shape(size: int | None, shape: tuple[int, ...]) -> tuple[int, ...]:
    """``shape`` for one draw, ``(size,) + shape`` for ``size`` draws."""
    return shape if size is None else (size,) + shape


def finish(result: np.ndarray, size: int | None) -> Any:
    """A Python float for a single scalar draw, else the array."""
    if size is None and result.ndim == 0:
        return float(result)
    return result

