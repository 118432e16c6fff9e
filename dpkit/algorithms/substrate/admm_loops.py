"""The ADMM substrate: one decentralised loop, one star loop, one dual update of each kind.

Decentralised ADMM (Mateos, Bazerque & Giannakis 2010, in the form of Ding et al. 2020 eqs. 3–4,
Zhang & Zhu 2016 eqs. 13–16 and Wang et al. 2020 eqs. 14–17), synchronous:

    θ_i^{t+1} = argmin f_i(θ) + (2λ_i^t + b_i^t)ᵀθ + η Σ_{j∈𝓑_i} ||½(θ_i^t + θ_j^t) − θ||²
    λ_i^{t+1} = λ_i^t + (η/2) Σ_{j∈𝓑_i} (θ̃_i^{t+1} − θ̃_j^{t+1})

where θ̃ are the *published* values (a private variant releases θ̃ = θ + noise, or keeps the old
value when it does not release) and b_i^t an optional objective perturbation. η Σ_j ||m_j − θ||²
is (κ/2)||θ − c||² + const with κ = 2η|𝓑_i| and c = mean_j m_j, so each round is one call of the
batched solver. With λ^0 = 0, Σ_i λ_i^t = 0 for every t (the dual step is antisymmetric over
edges), whatever is published.

Star ADMM (Huang et al. 2019 Alg. 1, "−⟨γ, ·⟩" sign convention):

    w_i^k = local step of f_i(w) − ⟨γ_i^{k−1}, w − w^{k−1}⟩ + (ρ/2)||w − w^{k−1}||²
    w^k   = mean_i w̃_i^k − mean_i γ_i^{k−1}/ρ ;   γ_i^k = γ_i^{k−1} − ρ (w̃_i^k − w^k)

with w̃ the published local values. For k ≥ 1, Σ_i γ_i^k = 0 exactly.

Private algorithms pass hooks: ``perturb(t)`` returns the objective perturbation b^t (drawn by a
mechanism) and ``publish(t, solutions, previous)`` returns what each agent publishes (drawn by a
mechanism). Everything the loops return is computed from published values, except the
``solutions`` field, which is private state and never leaves an algorithm.
"""

from __future__ import annotations

import dataclasses
import time
from typing import Any, Callable, Sequence

import numpy as np

from dpkit._validation import check_integer, check_nonnegative, check_positive
from dpkit.algorithms.substrate.data import Dataset
from dpkit.algorithms.substrate.evaluation import Evaluator
from dpkit.algorithms.substrate.graphs import Graph
from dpkit.algorithms.substrate.losses import Logistic
from dpkit.algorithms.substrate.result import TrainingResult, finish
from dpkit.algorithms.substrate.solvers import AgentObjectives, solve
from dpkit.mechanisms.ledger import PrivacyLedger

__all__ = [
    "LoopState", "check_parts", "check_parts_on_graph", "decentralised_dual_update", "decentralised_loop",
    "star_aggregate", "star_loop", "exact_local_step", "round_recorder", "decentralised_admm", "star_admm",
    "AVERAGES", "PublishedAverage",
]

Progress = Callable[[int, int], None] | None


def check_parts(parts: Sequence[Dataset]) -> list[Dataset]:
    """Validate the agents' datasets (non-empty list of Datasets with a common dimension, already
    scaled: a dataset whose scaling is left to training, ``private_scaling``, is refused)."""
    parts = list(parts)
    if not parts or not all(isinstance(p, Dataset) for p in parts):
        raise TypeError("parts must be a non-empty sequence of Dataset (one per agent)")
    if any(p.private_scaling for p in parts):
        raise ValueError("parts hold unscaled columns (private_scaling): train them with dpkit.algorithms.train, "
                         "which scales them first")
    dims = {p.d for p in parts}
    if len(dims) != 1:
        raise ValueError(f"all agents' data must have the same dimension, got dimensions {sorted(dims)}")
    return parts


def check_parts_on_graph(parts: Sequence[Dataset], graph: Graph) -> list[Dataset]:
    """:func:`check_parts`, and ``graph`` a :class:`Graph` with one node per agent."""
    parts = check_parts(parts)
    if not isinstance(graph, Graph):
        raise TypeError(f"graph must be a Graph, got {type(graph).__name__}")
    if graph.n != len(parts):
        raise ValueError(f"graph has {graph.n} agents but {len(parts)} datasets were given")
    return parts


def decentralised_dual_update(duals: np.ndarray, published: np.ndarray, graph: Graph, eta: float) -> np.ndarray:
    """λ_i + (η/2) Σ_{j∈𝓑_i} (θ̃_i − θ̃_j) for every agent: λ + (η/2) L θ̃ with L the graph Laplacian."""
    laplacian_theta = graph.degrees[:, None] * published - graph.adjacency.astype(float) @ published
    return duals + 0.5 * eta * laplacian_theta


def star_aggregate(published: np.ndarray, gammas: np.ndarray, rho: float) -> tuple[np.ndarray, np.ndarray]:
    """Huang et al. 2019 Alg. 1 lines 6 and 8: w = mean(w̃) − mean(γ)/ρ; γ_i ← γ_i − ρ(w̃_i − w)."""
    w = published.mean(axis=0) - gammas.mean(axis=0) / rho
    return w, gammas - rho * (published - w)


@dataclasses.dataclass(frozen=True)
class LoopState:
    """End of a loop: ``published`` ``(N, d)`` (last published values), ``duals`` ``(N, d)``, the
    star aggregate ``w`` (None for decentralised), the largest achieved local gradient norm, and
    the wall time."""

    published: np.ndarray
    duals: np.ndarray
    w: np.ndarray | None
    max_grad_norm: float
    seconds: float


def decentralised_loop(
    F: AgentObjectives, graph: Graph, *, eta: float, iterations: int, beta: float, theta0: np.ndarray,
    perturb: Callable[[int], np.ndarray] | None = None,
    publish: Callable[[int, np.ndarray, np.ndarray], np.ndarray] | None = None,
    on_round: Callable[[int, np.ndarray, np.ndarray], None] | None = None,
) -> LoopState:
    """Run ``iterations`` rounds of decentralised ADMM (module docstring) from published ``theta0``.

    ``perturb(t)`` adds b^t to every agent's linear term; ``publish(t, solutions, previous)``
    returns the published values (default: the solutions themselves); ``on_round(t, published,
    duals)`` is called after round t = 1..T.
    """
    N = F.agents
    published = np.array(theta0, float)
    solutions = published.copy()
    duals = np.zeros_like(published)
    kappa = 2.0 * eta * graph.degrees.astype(float)
    adjacency = graph.adjacency.astype(float)
    degrees = np.maximum(graph.degrees, 1)[:, None]
    worst = 0.0
    start = time.perf_counter()
    for t in range(iterations):
        center = 0.5 * (published + adjacency @ published / degrees)
        linear = 2.0 * duals if perturb is None else 2.0 * duals + perturb(t)
        result = solve(F.with_terms(linear=linear, kappa=kappa, center=center), solutions, beta)
        solutions = result.theta
        worst = max(worst, float(result.grad_norms.max()))
        published = solutions.copy() if publish is None else publish(t, solutions, published)
        duals = decentralised_dual_update(duals, published, graph, eta)
        if on_round is not None:
            on_round(t + 1, published, duals)
    assert published.shape[0] == N
    return LoopState(published, duals, None, worst, time.perf_counter() - start)


def star_loop(
    F: AgentObjectives, *, rho: float, iterations: int,
    local_step: Callable[[int, AgentObjectives, np.ndarray], tuple[np.ndarray, float]],
    publish: Callable[[int, np.ndarray], np.ndarray] | None = None,
    on_round: Callable[[int, np.ndarray, np.ndarray], None] | None = None,
) -> LoopState:
    """Run ``iterations`` rounds of star ADMM (module docstring) from w^0 = 0, w̃^0 = 0, γ^0 = 0.

    ``local_step(k, F_k, previous)`` returns each agent's new local value and its achieved
    gradient norm, where ``F_k`` is the round's objective (linear −γ, proximal ρ around w^{k−1})
    and ``previous`` the agents' last published values; ``publish(k, locals)`` returns what is
    published (default: the local values).
    """
    N, d = F.agents, F.X.shape[2]
    w = np.zeros(d)
    published = np.zeros((N, d))
    gammas = np.zeros((N, d))
    worst = 0.0
    start = time.perf_counter()
    for k in range(iterations):
        objective = F.with_terms(linear=-gammas, kappa=rho, center=np.broadcast_to(w, (N, d)))
        local, grad_norm = local_step(k, objective, published)
        worst = max(worst, grad_norm)
        published = local if publish is None else publish(k, local)
        w, gammas = star_aggregate(published, gammas, rho)
        if on_round is not None:
            on_round(k + 1, published, gammas)
    return LoopState(published, gammas, w, worst, time.perf_counter() - start)


def exact_local_step(beta: float) -> Callable[[int, AgentObjectives, np.ndarray], tuple[np.ndarray, float]]:
    """A ``local_step`` for :func:`star_loop` that solves each subproblem to ||∇|| ≤ ``beta``."""
    def step(k: int, objective: AgentObjectives, previous: np.ndarray) -> tuple[np.ndarray, float]:
        result = solve(objective, previous, beta)
        return result.theta, float(result.grad_norms.max())
    return step


AVERAGES = ("tail", "last")
"""How a decentralised run turns its published values into the returned models (:class:`PublishedAverage`)."""


class PublishedAverage:
    """The returned models of a decentralised run, from its published values only (post-processing).

    ``"last"``: each agent's last published value. ``"tail"``: the second half of each agent's
    releases averaged: its releases numbered ⌊R/2⌋ to R − 1 (0-based), R the releases it plans
    (``releases``; default ``rounds``, one per round, so the rounds t ≥ ⌊T/2⌋). A gated agent
    (:meth:`add` with ``sent``) publishes only in some rounds and holds its value in the others;
    only its fresh releases are averaged, and if it made fewer than ⌊R/2⌋ + 1 its last release
    stands alone.

    >>> tail = PublishedAverage("tail", rounds=4, releases=2)
    >>> for t, sent in enumerate([[0, 1], [1], [], [0]]):
    ...     tail.add(t, np.array([[t + 1.0], [10.0 * (t + 1)]]), sent)
    >>> tail.models().ravel().tolist()  # agent 0 released in rounds 0 and 3, agent 1 in rounds 0 and 1
    [4.0, 20.0]
    """

    def __init__(self, how: str, rounds: int, releases: int | None = None):
        if how not in AVERAGES:
            raise ValueError(f"average must be one of {AVERAGES}, got average={how!r}")
        self.how, self.start = how, (rounds if releases is None else releases) // 2
        self.last: np.ndarray | None = None
        self.total: np.ndarray | None = None
        self.made: np.ndarray | None = None

    def add(self, t: int, published: np.ndarray, sent: Sequence[int] | None = None) -> None:
        """Record round ``t``'s (0-based) published values; ``sent``: the agents that released a
        fresh value this round (None: all of them)."""
        published = np.asarray(published, dtype=float)
        if self.made is None:
            self.made = np.zeros(published.shape[0], dtype=int)
            self.total = np.zeros_like(published)
        fresh = np.arange(published.shape[0]) if sent is None else np.asarray(sent, dtype=int)
        counted = fresh[self.made[fresh] >= self.start]
        self.total[counted] += published[counted]
        self.made[fresh] += 1
        self.last = published.copy()

    def models(self) -> np.ndarray:
        """``(N, d)``: the agents' returned models."""
        if self.how == "last":
            return self.last
        counted = np.maximum(self.made - self.start, 0)
        return np.where(counted[:, None] > 0, self.total / np.maximum(counted, 1)[:, None], self.last)


def round_recorder(evaluator: Evaluator, iterations: int, progress: Progress) -> Callable[[int, np.ndarray, np.ndarray], None]:
    """An ``on_round`` hook that records the history (always the last round) and reports progress."""
    def on_round(t: int, published: np.ndarray, duals: np.ndarray) -> None:
        evaluator.record(t, published, duals, force=(t == iterations))
        if progress:
            progress(t, iterations)
    return on_round


def _non_private_setup(
    parts: Sequence[Dataset], lam: float, iterations: int, beta: float, loss: Any, regulariser: Any,
    test: Dataset | None, record_every: int,
) -> tuple[int, float, Any, AgentObjectives, Evaluator]:
    """Checked ``iterations`` and ``beta``, the loss (logistic by default), the agents'
    objectives (each with weight λ/N) and the evaluator, shared by the two non-private runs."""
    T = check_integer("iterations", iterations, minimum=1)
    beta = check_positive("beta", beta)
    loss = loss or Logistic()
    F = AgentObjectives.from_parts(parts, loss, regulariser=regulariser, reg_weight=lam / len(parts))
    return T, beta, loss, F, Evaluator(loss, parts, test, record_every)


def decentralised_admm(
    parts: Sequence[Dataset], graph: Graph, *, lam: float = 1e-5, eta: float = 1e-2, iterations: int = 30,
    beta: float = 1e-8, loss=None, regulariser=None, test: Dataset | None = None, record_every: int = 1,
    progress: Progress = None,
) -> TrainingResult:
    """Non-private decentralised ADMM (Ding et al. 2020 eqs. 3–4), each agent starting at the
    minimiser of its own f_i. ``lam`` is λ̂ of the global objective (each agent uses λ̂/N)."""
    parts = check_parts_on_graph(parts, graph)
    lam = check_positive("lam", lam)
    eta = check_positive("eta", eta)
    T, beta, loss, F, evaluator = _non_private_setup(parts, lam, iterations, beta, loss, regulariser, test,
                                                     record_every)
    theta0 = solve(F, np.zeros((len(parts), parts[0].d)), beta, max_iter=500).theta
    evaluator.record(0, theta0, np.zeros_like(theta0))
    state = decentralised_loop(F, graph, eta=eta, iterations=T, beta=beta, theta0=theta0,
                               on_round=round_recorder(evaluator, T, progress))
    config = {"iterations": T, "agents": len(parts), "lam": lam, "eta": eta, "beta": beta, "graph": graph.to_dict(),
              "loss": loss.name, "regulariser": F.regulariser.name, "max_grad_norm": state.max_grad_norm}
    return finish("admm", "non-private", state.published, state.published.mean(axis=0), evaluator, test,
                  PrivacyLedger(len(parts)), None, state.seconds, config, notes=("non-private: no privacy guarantee",))


def star_admm(
    parts: Sequence[Dataset], *, lam: float = 1e-4, rho: float = 0.1, iterations: int = 100, beta: float = 1e-8,
    loss=None, regulariser=None, test: Dataset | None = None, record_every: int = 1, progress: Progress = None,
) -> TrainingResult:
    """Non-private star ADMM (Huang et al. 2019 Alg. 1) with exact local solves; each agent uses λ/N."""
    parts = check_parts(parts)
    lam = check_nonnegative("lam", lam)
    rho = check_positive("rho", rho)
    T, beta, loss, F, evaluator = _non_private_setup(parts, lam, iterations, beta, loss, regulariser, test,
                                                     record_every)
    evaluator.record(0, np.zeros((len(parts), parts[0].d)), np.zeros((len(parts), parts[0].d)))
    state = star_loop(F, rho=rho, iterations=T, local_step=exact_local_step(beta),
                      on_round=round_recorder(evaluator, T, progress))
    config = {"iterations": T, "agents": len(parts), "lam": lam, "rho": rho, "beta": beta, "loss": loss.name,
              "regulariser": F.regulariser.name, "topology": "star (aggregator)"}
    return finish("star-admm", "non-private", state.published, state.w, evaluator, test, PrivacyLedger(len(parts)),
                  None, state.seconds, config, notes=("non-private: no privacy guarantee",))
