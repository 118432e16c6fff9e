"""Communication graphs for decentralised ADMM: validated, connected, undirected.

A :class:`Graph` wraps a symmetric boolean adjacency matrix with an empty diagonal. Every
constructor validates the result: a graph that is not undirected, has self-loops or is not
connected raises ``ValueError`` (Ding et al. 2020 §1.1 require a connected undirected graph; ADMM
does not reach consensus otherwise). ``Graph.neighbours[i]`` is the sorted neighbour list
𝓑_i and ``Graph.degrees[i]`` is |𝓑_i|.

Constructors: :func:`ring`, :func:`complete`, :func:`star`, :func:`random_connected`
(random spanning tree plus random extra edges up to ``n_edges``), :func:`from_adjacency`.
Huang et al. 2019's star topology with an aggregator is not a peer graph (the aggregator is not an agent);
:mod:`dpkit.algorithms.substrate.admm_loops` implements it directly.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from dpkit._validation import check_integer, check_rng

__all__ = ["Graph", "ring", "complete", "star", "random_connected", "from_adjacency", "make_graph"]


@dataclasses.dataclass(frozen=True)
class Graph:
    """A connected undirected graph on agents ``0..N-1`` (adjacency: ``(N, N)`` bool, symmetric, no loops)."""

    adjacency: np.ndarray
    name: str = "graph"

    def __post_init__(self) -> None:
        A = np.array(self.adjacency)
        if A.ndim != 2 or A.shape[0] != A.shape[1] or A.shape[0] < 1:
            raise ValueError(f"adjacency must be a square (N, N) matrix with N >= 1, got shape {A.shape}")
        if not np.all(np.isin(A, (0, 1))):
            raise ValueError("adjacency must contain only 0/1 (or False/True) entries")
        A = A.astype(bool)
        if not np.array_equal(A, A.T):
            raise ValueError("adjacency must be symmetric (an undirected graph)")
        if np.any(np.diag(A)):
            raise ValueError("adjacency must have an empty diagonal (no self-loops)")
        n = A.shape[0]
        seen = np.zeros(n, bool)
        seen[0] = True
        frontier = [0]
        while frontier:
            node = frontier.pop()
            for nb in np.flatnonzero(A[node] & ~seen):
                seen[nb] = True
                frontier.append(int(nb))
        if not seen.all():
            raise ValueError(f"graph must be connected; agents {np.flatnonzero(~seen).tolist()} are unreachable from agent 0")
        A.flags.writeable = False
        object.__setattr__(self, "adjacency", A)

    @property
    def n(self) -> int:
        """Number of agents."""
        return int(self.adjacency.shape[0])

    @property
    def degrees(self) -> np.ndarray:
        """|𝓑_i| for every agent."""
        return self.adjacency.sum(axis=1)

    @property
    def neighbours(self) -> tuple[tuple[int, ...], ...]:
        """𝓑_i for every agent (sorted)."""
        return tuple(tuple(int(j) for j in np.flatnonzero(row)) for row in self.adjacency)

    @property
    def n_edges(self) -> int:
        """Number of undirected edges."""
        return int(self.adjacency.sum() // 2)

    def to_dict(self) -> dict:
        """JSON-ready description."""
        return {"name": self.name, "n": self.n, "edges": [[i, j] for i in range(self.n) for j in self.neighbours[i] if j > i]}


def from_adjacency(adjacency, name: str = "custom") -> Graph:
    """A graph from any 0/1 adjacency matrix (validated)."""
    return Graph(np.asarray(adjacency), name)


def ring(n: int) -> Graph:
    """Cycle 0-1-...-(n-1)-0 (for n = 2 a single edge, for n = 1 a lone agent)."""
    n = check_integer("n", n, minimum=1)
    A = np.zeros((n, n), bool)
    for i in range(n):
        if n > 1:
            A[i, (i + 1) % n] = A[(i + 1) % n, i] = True
    return Graph(A, f"ring({n})")


def complete(n: int) -> Graph:
    """Every pair of agents connected."""
    n = check_integer("n", n, minimum=1)
    return Graph(~np.eye(n, dtype=bool), f"complete({n})")


def star(n: int, centre: int = 0) -> Graph:
    """Agent ``centre`` connected to every other agent."""
    n = check_integer("n", n, minimum=1)
    centre = check_integer("centre", centre, minimum=0)
    if centre >= n:
        raise ValueError(f"centre must be in [0, {n - 1}], got centre={centre}")
    A = np.zeros((n, n), bool)
    A[centre, :] = A[:, centre] = True
    A[centre, centre] = False
    return Graph(A, f"star({n})")


def random_connected(n: int, n_edges: int | None = None, rng: np.random.Generator | int | None = 0) -> Graph:
    """A random connected graph with exactly ``n_edges`` edges (default ``min(2n, n(n-1)/2)``).

    A random spanning tree (each node of a random permutation
    attaches to a uniformly chosen earlier node) guarantees connectivity;
    the remaining edges are chosen uniformly among the absent pairs.
    """
    n = check_integer("n", n, minimum=1)
    max_edges = n * (n - 1) // 2
    if n_edges is None:
        n_edges = min(max(n - 1, 2 * n), max_edges) if n > 1 else 0
    n_edges = check_integer("n_edges", n_edges, minimum=0)
    if not (n - 1 <= n_edges <= max_edges):
        raise ValueError(f"n_edges must be in [{n - 1}, {max_edges}] for a connected graph on {n} agents, got n_edges={n_edges}")
    gen = check_rng(rng)
    order = gen.permutation(n)
    A = np.zeros((n, n), bool)
    for k in range(1, n):
        j = order[gen.integers(0, k)]
        A[order[k], j] = A[j, order[k]] = True
    absent = [(i, j) for i in range(n) for j in range(i + 1, n) if not A[i, j]]
    extra = n_edges - (n - 1)
    if extra:
        for idx in gen.choice(len(absent), size=extra, replace=False):
            i, j = absent[idx]
            A[i, j] = A[j, i] = True
    return Graph(A, f"random_connected({n}, {n_edges})")


def make_graph(name: str, n: int, rng: np.random.Generator | int | None = 0, n_edges: int | None = None) -> Graph:
    """Graph by name: ``ring``, ``complete``, ``star`` or ``random``."""
    if name == "ring":
        return ring(n)
    if name == "complete":
        return complete(n)
    if name == "star":
        return star(n)
    if name == "random":
        return random_connected(n, n_edges, rng)
    raise ValueError(f"graph must be one of ('ring', 'complete', 'star', 'random'), got graph={name!r}")
