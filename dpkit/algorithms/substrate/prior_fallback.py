"""The class-prior fallback: a private choice between the trained model and a constant prediction.

A private model trained on a table whose signal is weak, or whose agents hold few rows, can score
below the constant majority-class predictor: its noise outweighs what it learned. The data
carries a constant ``bias`` column (the loaders add it), so the constant predictors are models
too: θ = +e_bias predicts +1 for every row and θ = −e_bias predicts −1. After training, each
agent releases two counts over its own training rows with Gaussian noise,

* how many of its rows the trained model classifies correctly, and
* how many of its rows have label +1,

and the run returns, of the trained model, +e_bias and −e_bias, the one with the most noisy
correct answers over all training rows (the constant −1 scores the row count minus the noisy +1
count; the agents' row counts are public, as every algorithm's sensitivities 1/m_i already take
them to be). Conditionally on the released model, replacing one record changes each count by
at most 1, so the pair has L2 sensitivity √2 (replace-one or add/remove), and each agent's count
depends on its rows only (one entry in its own ledger: parallel composition, as for the training
releases). The choice is post-processing of the released counts; the test rows are never used.

The counts' noise is set before training: the release is μ_s-GDP with μ_s² = ``FALLBACK_SHARE``
· μ², μ the GDP parameter meeting the run's (ε, δ), and the budget carries it as a planned
event (:attr:`~dpkit.algorithms.substrate.budget.Budget.planned_after`), so the training's noise
is calibrated with it and the certified ε covers it.

>>> import numpy as np
>>> from dpkit.algorithms.substrate.budget import Budget
>>> from dpkit.algorithms.substrate.data import Dataset
>>> X, y = np.column_stack([np.zeros(450), np.ones(450)]), np.r_[np.ones(300), -np.ones(150)]
>>> parts = [Dataset(X, y, feature_names=("x", "bias")), Dataset(X, y, feature_names=("x", "bias"))]
>>> budget = with_fallback(Budget(1.0, 1e-5))
>>> choice = choose(np.array([0.0, -1.0]), parts, budget, budget.ledger(2), rng=0)
>>> choice.chosen, choice.model.tolist()
('constant +1', [0.0, 1.0])
"""

from __future__ import annotations

import dataclasses
import math
from typing import Sequence

import numpy as np

from dpkit._validation import check_rng
from dpkit.accounting.gdp import gdp_mu_for
from dpkit.algorithms.substrate.budget import Budget
from dpkit.algorithms.substrate.data import INTERCEPT, Dataset
from dpkit.mechanisms.gaussian import GaussianMechanism
from dpkit.mechanisms.ledger import PrivacyLedger

__all__ = ["FALLBACK_SHARE", "Choice", "fallback_mechanism", "with_fallback", "choose"]

FALLBACK_SHARE = 0.05
"""Share of the run's μ² (GDP) spent on the two counts: the training's noise grows by 1/√0.95 ≈ 1.026."""
SENSITIVITY = math.sqrt(2.0)
"""L2 sensitivity of one agent's (correct, positive) counts."""


def fallback_mechanism(budget: Budget) -> GaussianMechanism:
    """The Gaussian mechanism of one agent's counts: σ = √2/μ_s, μ_s = √FALLBACK_SHARE · μ(ε, δ)."""
    mu = math.sqrt(FALLBACK_SHARE) * gdp_mu_for(budget.epsilon, budget.delta)
    return GaussianMechanism(sigma=SENSITIVITY / mu, sensitivity=SENSITIVITY)


def with_fallback(budget: Budget) -> Budget:
    """``budget`` with the counts' release planned after the run (one per agent, on its own rows)."""
    if budget.planned_after is not None:
        raise ValueError("budget already plans a release after the run (planned_after)")
    return dataclasses.replace(budget, planned_after=fallback_mechanism(budget).event)


@dataclasses.dataclass(frozen=True)
class Choice:
    """The returned model and how it was chosen (released values, covered by the run's ε).

    Attributes
    ----------
    model
        The trained model, or ±e_bias.
    chosen
        ``"trained model"``, ``"constant +1"`` or ``"constant -1"``.
    noisy_correct
        Noisy correct answers over all training rows of the trained model, constant +1, constant −1.
    """

    model: np.ndarray
    chosen: str
    noisy_correct: tuple[float, float, float]

    def to_dict(self) -> dict:
        return {"chosen": self.chosen, "noisy_correct": list(self.noisy_correct),
                "candidates": ["trained model", "constant +1", "constant -1"]}


def choose(model: np.ndarray, parts: Sequence[Dataset], budget: Budget, ledger: PrivacyLedger, *,
           rng: np.random.Generator | int | None) -> Choice:
    """Release every agent's counts on its own rows (recorded in ``ledger``) and return the candidate
    with the most noisy correct answers (module docstring). ``budget`` must plan the release
    (:func:`with_fallback`), and the data must have an ``INTERCEPT`` column."""
    mechanism = fallback_mechanism(budget)
    if budget.planned_after != mechanism.event:
        raise ValueError("budget does not plan the fallback's release; build it with with_fallback(budget)")
    names = parts[0].feature_names
    if INTERCEPT not in names:
        raise ValueError(f"the data have no {INTERCEPT!r} column, so no constant predictor is a model")
    model = np.asarray(model, dtype=float)
    counts = np.array([[np.sum(np.where(p.X @ model >= 0.0, 1.0, -1.0) == p.y), np.sum(p.y == 1.0)] for p in parts],
                      dtype=float)
    noisy = mechanism.release_each(counts, rng=check_rng(rng), ledger=ledger, agents=list(range(len(parts))))
    correct, positive = noisy.sum(axis=0)
    scores = (float(correct), float(positive), float(sum(p.n for p in parts) - positive))
    best = int(np.argmax(scores))
    constant = np.zeros(model.shape)
    constant[names.index(INTERCEPT)] = 1.0
    chosen = (model, constant, -constant)[best]
    return Choice(chosen, ("trained model", "constant +1", "constant -1")[best], scores)
