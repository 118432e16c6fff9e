"""Evaluation of distributed models: accuracy per agent and of the average, empirical risk, consensus gap.

:class:`Evaluator` records two per-iteration records (dicts of equal-length lists) while an
algorithm runs. ``history`` holds only numbers computed from the agents' *published* models and
the held-out test rows, so the run's ε covers it (post-processing of released values):

``iteration``
    t (0 = initial point).
``consensus_gap``
    max_i ||θ_i − θ̄||₂ with θ̄ the average of the agents' published models.
``test_accuracy``
    accuracy of θ̄ on the test set (NaN without one).
``test_risk``
    mean logistic loss ℓ(y θ̄ᵀx) of θ̄ on the test set (NaN without one).

``diagnostics`` holds numbers computed on the agents' private training rows or private state
*without noise*; the run's ε does **not** cover them (:data:`DIAGNOSTIC_LABEL`):

``iteration``
    as above.
``empirical_risk``
    (1/N) Σ_i (1/|D_i|) Σ_n ℓ(y θ_iᵀx) of each agent's current model on its own private data,
    without regulariser or clipping (Ding et al. 2020 §5 "average training loss"; Huang et al. 2019
    §VI "empirical loss").
``dual_sum``
    ||Σ_i λ_i||₂ (0 up to rounding for every ADMM variant here: the dual invariant).
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from dpkit.algorithms.substrate.data import Dataset
from dpkit.algorithms.substrate.losses import empirical_value

__all__ = ["accuracy", "accuracies", "majority_accuracy", "empirical_risk", "consensus_gap", "Evaluator",
           "DIAGNOSTIC_LABEL"]

DIAGNOSTIC_LABEL = "not covered by epsilon: computed on private data without noise"
"""The label every diagnostic carries (in results, ``--out`` files, text output, reports and plots)."""


def accuracy(theta: np.ndarray, data: Dataset) -> float:
    """Fraction of records with sign(θᵀx) = y (θᵀx = 0 counts as +1)."""
    pred = np.where(data.X @ np.asarray(theta, float) >= 0.0, 1.0, -1.0)
    return float(np.mean(pred == data.y))


def accuracies(thetas: np.ndarray, data: Dataset) -> np.ndarray:
    """:func:`accuracy` of each row of ``thetas`` (one matrix product)."""
    pred = np.where(data.X @ np.asarray(thetas, float).T >= 0.0, 1.0, -1.0)
    return np.mean(pred == data.y[:, None], axis=0)


def majority_accuracy(data: Dataset) -> float:
    """Accuracy of the constant predictor of ``data``'s more frequent label (the floor a model must beat).

    >>> majority_accuracy(Dataset(np.zeros((4, 1)), [1, -1, -1, -1]))
    0.75
    """
    positive = float(np.mean(data.y > 0))
    return max(positive, 1.0 - positive)


def empirical_risk(loss, thetas: np.ndarray, parts: Sequence[Dataset]) -> float:
    """(1/N) Σ_i mean loss of agent i's model θ_i on agent i's data."""
    return float(np.mean([empirical_value(loss, thetas[i], p.X, p.y) for i, p in enumerate(parts)]))


def consensus_gap(thetas: np.ndarray) -> float:
    """max_i ||θ_i − mean_j θ_j||₂."""
    thetas = np.asarray(thetas, float)
    return float(np.max(np.linalg.norm(thetas - thetas.mean(axis=0), axis=1)))


class Evaluator:
    """Collects the per-iteration ``history`` and ``diagnostics`` (module docstring); ``every`` thins
    the record (last t always kept)."""

    def __init__(self, loss, parts: Sequence[Dataset], test: Dataset | None = None, every: int = 1):
        self.loss = loss
        self.parts = list(parts)
        self.test = test
        self.every = max(1, int(every))
        self.history: dict[str, list[float]] = {"iteration": [], "consensus_gap": [], "test_accuracy": [],
                                                "test_risk": []}
        self.diagnostics: dict[str, list[float]] = {"iteration": [], "empirical_risk": [], "dual_sum": []}
        self._stacked = None
        sizes = {p.n for p in self.parts}
        if len(sizes) == 1:
            self._stacked = (np.stack([p.X for p in self.parts]), np.stack([p.y for p in self.parts]))

    def _risk(self, thetas: np.ndarray) -> float:
        if self._stacked is not None:
            return float(np.mean(empirical_value(self.loss, thetas, *self._stacked)))
        return empirical_risk(self.loss, thetas, self.parts)

    def due(self, t: int, force: bool = False) -> bool:
        """Whether :meth:`record` records iteration ``t`` (every ``every``-th, or ``force``, once each), so a
        caller can skip building the models of the rounds it would not."""
        h = self.history["iteration"]
        return (force or t % self.every == 0) and not (h and h[-1] == t)

    def record(self, t: int, thetas: np.ndarray, duals: np.ndarray | None = None, force: bool = False) -> None:
        """Record iteration ``t`` (``thetas`` (N, d): the agents' current public models) when :meth:`due`."""
        if not self.due(t, force):
            return
        h = self.history
        h["iteration"].append(int(t))
        h["consensus_gap"].append(consensus_gap(thetas))
        average = thetas.mean(axis=0)
        h["test_accuracy"].append(accuracy(average, self.test) if self.test is not None else float("nan"))
        h["test_risk"].append(float(empirical_value(self.loss, average, self.test.X, self.test.y))
                              if self.test is not None else float("nan"))
        g = self.diagnostics
        g["iteration"].append(int(t))
        g["empirical_risk"].append(self._risk(thetas))
        g["dual_sum"].append(float(np.linalg.norm(np.sum(duals, axis=0))) if duals is not None else 0.0)
