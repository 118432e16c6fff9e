"""The non-private reference ``admm``: decentralised ADMM over a random graph, no noise.

Runs :func:`dpkit.algorithms.substrate.admm_loops.decentralised_admm` (Ding et al. 2020 eqs. 3–4; Mateos,
Bazerque & Giannakis 2010) with each agent starting at the minimiser of its own objective.
It is what the private decentralised algorithms would reach without privacy.

Defaults: 5 agents and 30 rounds (Ding et al. 2020 §5), η = 1e-2 and λ̂ = 1e-5 (the global
objective's L2 weight; each agent uses λ̂/N). The small λ̂ keeps the minimiser close to the
unregularised one (≈ 0.847 on Adult); η = 1e-2 lets the agents' models, which start at their
local minimisers, reach consensus within the 30 rounds.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from dpkit.algorithms.substrate.admm_loops import decentralised_admm
from dpkit.algorithms.substrate.budget import Budget
from dpkit.algorithms.substrate.data import Dataset
from dpkit.algorithms.substrate.graphs import Graph
from dpkit.algorithms.substrate.result import TrainingResult
from dpkit.algorithms.substrate.spec import AlgorithmSpec

__all__ = ["ETA", "LAM", "ITERATIONS", "SPEC"]

ETA = 1e-2
LAM = 1e-5
ITERATIONS = 30


def _runner(parts: Sequence[Dataset], test: Dataset | None, graph: Graph | None, *, budget: Budget | None,
            iterations: int | None, variant: str, rng: np.random.Generator,
            progress: Callable[[int, int], None] | None, **options: Any) -> TrainingResult:
    if budget is not None:
        raise ValueError("admm is not private: it takes no budget (epsilon)")
    options.setdefault("eta", ETA)
    options.setdefault("lam", LAM)
    return decentralised_admm(parts, graph, iterations=ITERATIONS if iterations is None else iterations, test=test,
                              progress=progress, **options)


SPEC = AlgorithmSpec(
    name="admm", runner=_runner, topology="graph", agents=5, n_train=36000, delta=1e-5,
    description="non-private decentralised ADMM (Ding et al. 2020 eqs. 3-4), the reference without noise",
    options=("eta", "lam", "beta", "record_every"), private=False, variants=("non-private",),
)
