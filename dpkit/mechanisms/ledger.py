"""The privacy ledger: what the mechanisms drew, per privacy-unit holder.

A :class:`PrivacyLedger` is written only by :meth:`dpkit.mechanisms.base.Mechanism.release`,
which draws the noise and records the mechanism's event in the same call, so the ledger is
exactly what was drawn. An algorithm whose agents hold disjoint records keeps one entry list per
agent; :meth:`PrivacyLedger.event` is then the :class:`~dpkit.accounting.events.ParallelComposedEvent`
of the agents' sequential compositions (McSherry 2009, Thm 4: one record touches one agent's
computation, and the other agents see it only through that agent's releases, which is
post-processing). Accountants turn that event into a guarantee.

>>> from dpkit.accounting.events import GaussianEvent
>>> from dpkit.mechanisms.gaussian import GaussianMechanism
>>> ledger = PrivacyLedger(agents=2)
>>> mech = GaussianMechanism(sigma=2.0)
>>> _ = [mech.release(0.0, rng=0, ledger=ledger, agent=a) for a in (0, 1, 1)]
>>> ledger.entries(1)
((GaussianEvent(sigma=2.0, sensitivity=1.0), 2),)
>>> ledger.draws(0), ledger.draws(1)
(1, 2)
"""

from __future__ import annotations

from typing import Any

import numpy as np

from dpkit._validation import check_integer
from dpkit.accounting.events import ParallelComposedEvent, PrivacyEvent, compose, repeat
from dpkit.accounting.neighbouring import NeighbouringRelation

__all__ = ["PrivacyLedger", "check_pooled"]


class PrivacyLedger:
    """Per-agent ordered ``(event, count)`` entries of the releases made so far.

    Parameters
    ----------
    agents
        Number of holders of disjoint records (1 for a centralised algorithm).
    neighbouring
        The neighbouring relation the recorded events' sensitivities refer to.
    pooled
        A one-agent ledger of releases computed on all agents' records pooled (made before this
        ledger's run): every agent's entries start with its entries, since each agent's records
        took part in them.
    """

    def __init__(self, agents: int = 1, *, neighbouring: NeighbouringRelation | str = "replace-one",
                 pooled: "PrivacyLedger | None" = None):
        self._entries: list[list[list[Any]]] = [[] for _ in range(check_integer("agents", agents, minimum=1))]
        self._not_as_executed: dict[str, None] = {}
        self.neighbouring = NeighbouringRelation.parse(neighbouring)
        if check_pooled("pooled", pooled, self.neighbouring) is not None:
            self._entries = [[[event, count] for event, count in pooled.entries(0)] for _ in self._entries]
            self._not_as_executed = dict.fromkeys(pooled.not_as_executed)

    @property
    def agents(self) -> int:
        """Number of agents."""
        return len(self._entries)

    def record(self, agent: int, event: PrivacyEvent, count: int = 1) -> None:
        """Append ``event`` × ``count`` to ``agent``'s entries (merged with an equal last entry).

        Called by :meth:`~dpkit.mechanisms.base.Mechanism.release`; algorithms never call it.
        """
        agent = check_integer("agent", agent, minimum=0)
        if agent >= self.agents:
            raise ValueError(f"agent must be in [0, {self.agents - 1}], got agent={agent}")
        if not isinstance(event, PrivacyEvent):
            raise TypeError(f"event must be a PrivacyEvent, got event={event!r}")
        count = check_integer("count", count, minimum=1)
        entries = self._entries[agent]
        if entries and entries[-1][0] == event:
            entries[-1][1] += count
        else:
            entries.append([event, count])

    def mark_not_as_executed(self, note: str) -> None:
        """Record that a release's guarantee does not hold for the doubles it output, and why.

        Called by :meth:`~dpkit.mechanisms.base.Mechanism.release` for a mechanism that is not
        ``floating_point_safe``; algorithms never call it.
        """
        if not isinstance(note, str) or not note:
            raise TypeError(f"note must be a non-empty string, got note={note!r}")
        self._not_as_executed[note] = None

    @property
    def not_as_executed(self) -> tuple[str, ...]:
        """The distinct notes of releases that are not private as executed, in the order first drawn
        (empty when every release was float-safe)."""
        return tuple(self._not_as_executed)

    def check_agents(self, agents: Any) -> list[int]:
        """``agents`` as a list of distinct agent indices in ``[0, agents − 1]``."""
        array = np.asarray(agents)
        if array.ndim != 1 or (array.size and array.dtype.kind not in "iu"):
            raise TypeError(f"agents must be a 1-D sequence of integers, got agents={agents!r}")
        indices = array.tolist()
        if indices and (min(indices) < 0 or max(indices) >= self.agents):
            raise ValueError(f"agents must be in [0, {self.agents - 1}], got agents={agents!r}")
        if len(set(indices)) != len(indices):
            raise ValueError(f"agents must be distinct, got agents={agents!r}")
        return indices

    def record_each(self, agents: Any, event: PrivacyEvent, *, checked: bool = False) -> None:
        """Append ``event`` once to each agent's entries: :meth:`record` for every agent of ``agents``
        (``checked=True``: ``agents`` is already the list :meth:`check_agents` returned).

        Called by :meth:`~dpkit.mechanisms.base.Mechanism.release_each`; algorithms never call it.
        """
        if not isinstance(event, PrivacyEvent):
            raise TypeError(f"event must be a PrivacyEvent, got event={event!r}")
        for agent in (agents if checked else self.check_agents(agents)):
            entries = self._entries[agent]
            if entries and (entries[-1][0] is event or entries[-1][0] == event):
                entries[-1][1] += 1
            else:
                entries.append([event, 1])

    def entries(self, agent: int) -> tuple[tuple[PrivacyEvent, int], ...]:
        """``agent``'s ``(event, count)`` entries in the order they were drawn."""
        return tuple((event, count) for event, count in self._entries[agent])

    def draws(self, agent: int) -> int:
        """How many releases ``agent`` made."""
        return sum(count for _, count in self._entries[agent])

    def agent_event(self, agent: int) -> PrivacyEvent | None:
        """The sequential composition of ``agent``'s releases (None if it released nothing)."""
        parts = [event if count == 1 else repeat(event, count) for event, count in self._entries[agent]]
        if not parts:
            return None
        return parts[0] if len(parts) == 1 else compose(*parts)

    def event(self) -> PrivacyEvent | None:
        """The whole run: agents' compositions in parallel (identical agents counted once)."""
        distinct: list[PrivacyEvent] = []
        for agent in range(self.agents):
            event = self.agent_event(agent)
            if event is not None and event not in distinct:
                distinct.append(event)
        if not distinct:
            return None
        return distinct[0] if len(distinct) == 1 else ParallelComposedEvent(tuple(distinct))

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: the relation and agents with identical entries grouped."""
        groups: dict[str, dict[str, Any]] = {}
        for agent in range(self.agents):
            events = [[event.to_dict(), int(count)] for event, count in self._entries[agent]]
            groups.setdefault(repr(events), {"agents": [], "events": events})["agents"].append(agent)
        return {"neighbouring": self.neighbouring.value, "groups": list(groups.values())}


def check_pooled(name: str, pooled: Any, neighbouring: NeighbouringRelation) -> PrivacyLedger | None:
    """``pooled`` if it is None or a one-agent :class:`PrivacyLedger` under ``neighbouring``
    (TypeError / ValueError naming ``name`` otherwise)."""
    if pooled is None:
        return None
    if not isinstance(pooled, PrivacyLedger) or pooled.agents != 1:
        raise TypeError(f"{name} must be a one-agent PrivacyLedger or None, got {name}={pooled!r}")
    if pooled.neighbouring != neighbouring:
        raise ValueError(f"{name} records {pooled.neighbouring.value} events, not {neighbouring.value} ones")
    return pooled
