"""Split a dataset across N agents (seeded), equally or with given sizes.

The papers divide the training set uniformly at random into N groups of equal size
(Ding et al. 2020 §5: |D_i| = 35000/N; Huang et al. 2019 §VI-A: m_i = 40000/n). :func:`partition` returns one
:class:`~dpkit.algorithms.substrate.data.Dataset` per agent, in agent order.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from dpkit._validation import check_integer, check_rng
from dpkit.algorithms.substrate.data import Dataset

__all__ = ["partition", "partition_sizes"]


def partition_sizes(n: int, n_agents: int) -> list[int]:
    """Equal sizes ``n // N`` for every agent (the remainder ``n % N`` rows are left out, as the papers do)."""
    n = check_integer("n", n, minimum=1)
    n_agents = check_integer("n_agents", n_agents, minimum=1)
    if n_agents > n:
        raise ValueError(f"n_agents must be <= number of rows {n}, got n_agents={n_agents}")
    return [n // n_agents] * n_agents


def partition(
    data: Dataset,
    n_agents: int | None = None,
    *,
    sizes: Sequence[int] | None = None,
    rng: np.random.Generator | int | None = 0,
    shuffle: bool = True,
) -> list[Dataset]:
    """Split ``data`` into agents' local datasets.

    Parameters
    ----------
    data
        The (training) dataset.
    n_agents
        Number of agents for an equal split (each gets ``n // n_agents`` rows).
    sizes
        Explicit sizes (each >= 1, sum <= n); overrides ``n_agents``.
    rng
        Seed or Generator for the random assignment.
    shuffle
        Assign rows at random (True) or in order (False).
    """
    if not isinstance(data, Dataset):
        raise TypeError(f"data must be a Dataset, got {type(data).__name__}")
    if sizes is None:
        if n_agents is None:
            raise ValueError("give n_agents or sizes")
        sizes = partition_sizes(data.n, n_agents)
    else:
        sizes = [check_integer(f"sizes[{k}]", s, minimum=1) for k, s in enumerate(sizes)]
        if not sizes:
            raise ValueError("sizes must not be empty")
        if n_agents is not None and check_integer("n_agents", n_agents, minimum=1) != len(sizes):
            raise ValueError(f"n_agents={n_agents} does not match len(sizes)={len(sizes)}")
        if sum(sizes) > data.n:
            raise ValueError(f"sizes must sum to <= number of rows {data.n}, got sum(sizes)={sum(sizes)}")
    order = check_rng(rng).permutation(data.n) if shuffle else np.arange(data.n)
    parts, start = [], 0
    for i, size in enumerate(sizes):
        parts.append(data.subset(order[start:start + size], f"{data.name}:agent{i}"))
        start += size
    return parts
