"""Centralised (non-private) reference: the exact minimiser of the distributed objective.

    min_θ Σ_i (1/|D_i|) Σ_n ℓ(y_n θᵀx_n) + λ R(θ)        (Ding et al. 2020 eq. 1; Huang et al. 2019 eq. 1)

i.e. a pooled regression whose record n of agent i has weight 1/|D_i|, solved by the same
Newton solver as the agents' subproblems (:func:`dpkit.algorithms.substrate.solvers.solve`, one "agent").
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from dpkit._validation import check_nonnegative, check_positive
from dpkit.algorithms.substrate.data import Dataset
from dpkit.algorithms.substrate.losses import Logistic
from dpkit.algorithms.substrate.solvers import AgentObjectives, solve

__all__ = ["centralised_fit"]


def centralised_fit(parts: Sequence[Dataset] | Dataset, lam: float, *, loss=None, regulariser=None,
                    tol: float = 1e-8, max_iter: int = 100) -> np.ndarray:
    """The minimiser θ of Σ_i mean loss_i + λR (a single Dataset counts as one agent), to ||∇|| ≤ ``tol``."""
    parts = [parts] if isinstance(parts, Dataset) else list(parts)
    lam = check_nonnegative("lam", lam)
    tol = check_positive("tol", tol)
    X = np.vstack([p.X for p in parts])[None]
    y = np.concatenate([p.y for p in parts])[None]
    weights = np.concatenate([np.full(p.n, 1.0 / p.n) for p in parts])[None]
    F = AgentObjectives.from_arrays(X, y, loss or Logistic(), regulariser=regulariser, reg_weight=lam, weights=weights)
    return solve(F, np.zeros((1, X.shape[2])), tol, max_iter=max_iter).theta[0]
