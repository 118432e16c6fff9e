"""The result of a training run: models, history, privacy ledger and guarantees.

:class:`TrainingResult` is a frozen dataclass. ``ledger`` holds, for every agent, the ordered
``(event, count)`` pairs it spent (events of :mod:`dpkit.accounting.events`); privacy is per agent
(each agent's records are disjoint, other agents see agent i's data only through its broadcasts),
so the run's guarantee is the maximum over agents (seed 000 Lemma 3.2).

``guarantees`` maps an accounting name to an :class:`~dpkit.accounting.base.AccountingResult` or
``None``:

``"paper"``
    what the paper's own theorems give for this run (reproduction only; may not be a valid bound —
    its ``notes`` and ``is_upper_bound`` say so), ``None`` when the paper states no total;
``"corrected"``
    a valid upper bound (the method field names the analysis).

``to_dict()`` gives a JSON-ready dictionary (ledgers of agents with identical event lists are grouped).
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np

from dpkit.accounting.base import AccountingResult
from dpkit.accounting.events import PrivacyEvent

__all__ = ["TrainingResult", "Ledger"]

Ledger = tuple[tuple[tuple[PrivacyEvent, int], ...], ...]


def _plain(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        return _plain(value.tolist())
    if isinstance(value, (np.floating, float)):
        v = float(value)
        return v if math.isfinite(v) else None
    if isinstance(value, (np.integer,)):
        return int(value)
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if hasattr(value, "to_dict"):
        return value.to_dict()
    return value


@dataclasses.dataclass(frozen=True)
class TrainingResult:
    """Outcome of one run of a (private) distributed learning algorithm.

    Attributes
    ----------
    algorithm
        Registry name (``"admm"``, ``"pp-admm"``, ...).
    models
        ``(N, d)``: each agent's final public model.
    model
        The model evaluated as the run's output (the agents' average; seed 004: the aggregator's w).
    history
        Per-iteration record (:class:`~dpkit.algorithms.evaluation.Evaluator`).
    ledger
        Per agent, the ``(event, count)`` pairs spent.
    guarantees
        ``{"paper": AccountingResult | None, "corrected": AccountingResult | None}``.
    accuracy
        Test accuracy of ``model`` (None without a test set).
    agent_accuracies
        Test accuracy of each agent's model.
    seconds
        Wall time of the training loop.
    config
        The parameters of the run (budgets, noise scales, hyperparameters, seed).
    notes
        Caveats (approximations, paper rules used, switches).
    """

    algorithm: str
    models: np.ndarray
    model: np.ndarray
    history: dict[str, list[float]]
    ledger: Ledger
    guarantees: dict[str, AccountingResult | None]
    accuracy: float | None
    agent_accuracies: tuple[float, ...]
    seconds: float
    config: dict[str, Any]
    notes: tuple[str, ...] = ()

    @property
    def epsilon_paper(self) -> float | None:
        g = self.guarantees.get("paper")
        return None if g is None else g.epsilon

    @property
    def epsilon_corrected(self) -> float | None:
        g = self.guarantees.get("corrected")
        return None if g is None else g.epsilon

    def ledger_groups(self) -> list[dict[str, Any]]:
        """Agents with identical ledgers grouped: ``[{"agents": [...], "events": [[event_dict, count], ...]}]``."""
        groups: dict[str, dict[str, Any]] = {}
        for agent, entries in enumerate(self.ledger):
            events = [[e.to_dict(), int(c)] for e, c in entries]
            key = repr(events)
            groups.setdefault(key, {"agents": [], "events": events})["agents"].append(agent)
        return list(groups.values())

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dictionary."""
        delta = None
        corrected = self.guarantees.get("corrected")
        if corrected is not None:
            delta = corrected.delta
        return {
            "algorithm": self.algorithm,
            "accuracy": self.accuracy,
            "agent_accuracies": list(self.agent_accuracies),
            "epsilon_paper": self.epsilon_paper,
            "epsilon_corrected": self.epsilon_corrected,
            "delta": delta,
            "iterations": self.config.get("iterations"),
            "seconds": self.seconds,
            "guarantees": {k: (None if v is None else v.to_dict()) for k, v in self.guarantees.items()},
            "ledger": self.ledger_groups(),
            "model": _plain(self.model),
            "history": _plain(self.history),
            "config": _plain(self.config),
            "notes": list(self.notes),
        }
