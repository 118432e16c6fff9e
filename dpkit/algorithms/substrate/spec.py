"""How an algorithm presents itself to :func:`dpkit.algorithms.train` and ``dpkit train``.

Every algorithm module defines one :class:`AlgorithmSpec` named ``SPEC`` whose ``runner`` has the
uniform signature

    runner(parts, test, graph, *, budget, iterations, variant, rng, progress, **options) -> TrainingResult

``parts`` are the agents' training sets, ``test`` the held-out set used only for scoring the
returned model, ``graph`` the communication graph (None for star-topology algorithms), ``budget``
a :class:`~dpkit.algorithms.substrate.budget.Budget` (None for non-private algorithms), ``iterations`` the
planned number of rounds (None: the algorithm's documented default), ``variant`` one of
``spec.variants`` and ``rng`` a :class:`numpy.random.Generator`.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable

__all__ = ["AlgorithmSpec", "graph_runner"]


@dataclasses.dataclass(frozen=True)
class AlgorithmSpec:
    """A trainable algorithm and its defaults.

    Attributes
    ----------
    name
        The CLI name (``"pp-admm"``).
    runner
        See the module docstring.
    topology
        ``"graph"`` (decentralised over a connected graph), ``"star"`` (agents and an
        aggregator) or ``"central"`` (one data holder).
    agents, n_train, delta
        Defaults: number of agents, training-set size on Adult, δ.
    description
        One line, with the paper.
    options
        Names of the extra keyword options the runner accepts.
    private
        False for non-private references.
    variants
        Accepted variants, the default first (``"corrected"``, ``"paper"``, ...).
    """

    name: str
    runner: Callable[..., Any]
    topology: str
    agents: int
    n_train: int
    delta: float
    description: str
    options: tuple[str, ...] = ()
    private: bool = True
    variants: tuple[str, ...] = ("corrected", "paper")

    def __post_init__(self) -> None:
        if self.topology not in ("graph", "star", "central"):
            raise ValueError(f"topology must be 'graph', 'star' or 'central', got topology={self.topology!r}")


def graph_runner(train: Callable[..., Any]) -> Callable[..., Any]:
    """The uniform runner of a graph-topology algorithm whose training function is
    ``train(parts, graph, *, budget, variant, iterations, test, rng, progress, **options)``."""

    def runner(parts: Any, test: Any, graph: Any, *, budget: Any, iterations: int | None, variant: str, rng: Any,
               progress: Callable[[int, int], None] | None, **options: Any) -> Any:
        return train(parts, graph, budget=budget, variant=variant, iterations=iterations, test=test, rng=rng,
                     progress=progress, **options)

    runner.__doc__ = f"The uniform runner of :func:`{train.__name__}`."
    return runner
