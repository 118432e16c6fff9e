"""Non-private ADMM: decentralised (seed 000 eqs. 3–4) and star topology (seed 004 Alg. 1).

Both minimise the global objective (seed 000 eq. 1 / seed 004 eq. 1)

    Σ_i (1/|D_i|) Σ_n ℓ(y_n θᵀx_n) + λ R(θ),    i.e.  Σ_i f_i(θ) with f_i = mean loss_i + (λ/N) R,

and are the substrate of the private variants (PP-/IPP-ADMM reuse :func:`decentralised_objective`
and :func:`decentralised_dual_update`; DP-ADMM / ADMM-PVP reuse :func:`star_objective` and
:func:`star_aggregate`).

Decentralised (Mateos et al. 2010 form used by seed 000, synchronous/Jacobi):

    (3) θ_i^{t+1} = argmin f_i(θ) + 2λ_i^tᵀθ + η Σ_{j∈𝓑_i} ||½(θ_i^t + θ_j^t) − θ||²
    (4) λ_i^{t+1} = λ_i^t + (η/2) Σ_{j∈𝓑_i} (θ_i^{t+1} − θ_j^{t+1})

With λ_i^0 = 0, Σ_i λ_i^t = 0 for every t (the updates are antisymmetric over undirected edges).

Star (seed 004 Alg. 1, "−⟨γ, ·⟩" sign convention):

    w_i^k = argmin f_i(w) − ⟨γ_i^{k−1}, w − w^{k−1}⟩ + (ρ/2)||w − w^{k−1}||²
    w^k   = mean_i w_i^k − mean_i γ_i^{k−1}/ρ
    γ_i^k = γ_i^{k−1} − ρ (w_i^k − w^k)

For k ≥ 1, Σ_i γ_i^k = 0 exactly (spec 004 F3).

Both runners take a ``progress`` callback ``progress(t, T)`` (the CLI draws a bar with it; library
code never prints) and return a :class:`~dpkit.algorithms.result.TrainingResult` with an empty ledger.
"""

from __future__ import annotations

import time
from typing import Callable, Sequence

import numpy as np

from dpkit._validation import check_integer, check_nonnegative, check_positive
from dpkit.algorithms.data import Dataset
from dpkit.algorithms.evaluation import Evaluator, accuracies, accuracy
from dpkit.algorithms.graphs import Graph
from dpkit.algorithms.losses import L2, Logistic
from dpkit.algorithms.result import TrainingResult
from dpkit.algorithms.solvers import LocalObjective, solve

__all__ = [
    "decentralised_objective", "decentralised_dual_update", "decentralised_admm",
    "star_objective", "star_aggregate", "star_admm", "check_parts", "finish",
]

Progress = Callable[[int, int], None] | None


def check_parts(parts: Sequence[Dataset]) -> list[Dataset]:
    """Validate the agents' datasets (non-empty list of Datasets with a common dimension)."""
    parts = list(parts)
    if not parts or not all(isinstance(p, Dataset) for p in parts):
        raise TypeError("parts must be a non-empty sequence of Dataset (one per agent)")
    dims = {p.d for p in parts}
    if len(dims) != 1:
        raise ValueError(f"all agents' data must have the same dimension, got dimensions {sorted(dims)}")
    return parts


def _check_parts_on_graph(parts: Sequence[Dataset], graph: Graph) -> list[Dataset]:
    """:func:`check_parts`, and ``graph`` a :class:`Graph` with one node per agent."""
    parts = check_parts(parts)
    if not isinstance(graph, Graph):
        raise TypeError(f"graph must be a Graph, got {type(graph).__name__}")
    if graph.n != len(parts):
        raise ValueError(f"graph has {graph.n} agents but {len(parts)} datasets were given")
    return parts


def decentralised_objective(
    part: Dataset, loss, regulariser, reg_weight: float, dual: np.ndarray, theta_i: np.ndarray,
    theta_nbrs: np.ndarray, eta: float, extra_linear: np.ndarray | None = None,
) -> LocalObjective:
    """Seed 000 eq. (3) (or (5) with ``extra_linear`` = b_i1) as a :class:`LocalObjective`.

    η Σ_j ||m_j − θ||² = (κ/2)||θ − c||² + const with κ = 2η|𝓑_i| and c = mean_j m_j,
    m_j = ½(θ_i^t + θ_j^t); the linear term is 2λ_i^t (+ b_i1).
    """
    degree = len(theta_nbrs)
    linear = 2.0 * dual if extra_linear is None else 2.0 * dual + extra_linear
    center = 0.5 * (theta_i + np.mean(theta_nbrs, axis=0)) if degree else np.zeros_like(theta_i)
    return LocalObjective(part.X, part.y, loss, regulariser, reg_weight, linear, 2.0 * eta * degree, center)


def decentralised_dual_update(duals: np.ndarray, thetas: np.ndarray, graph: Graph, eta: float) -> np.ndarray:
    """Seed 000 eq. (4) for every agent at once: λ + (η/2)(Lθ) with L the graph Laplacian."""
    A = graph.adjacency.astype(float)
    lap_theta = graph.degrees[:, None] * thetas - A @ thetas
    return duals + 0.5 * eta * lap_theta


def star_objective(part: Dataset, loss, regulariser, reg_weight: float, gamma: np.ndarray, w_global: np.ndarray, rho: float) -> LocalObjective:
    """Seed 004 eq. (6): f_i(w) − ⟨γ_i, w − w^{k−1}⟩ + (ρ/2)||w − w^{k−1}||² (constant dropped)."""
    return LocalObjective(part.X, part.y, loss, regulariser, reg_weight, -gamma, rho, w_global)


def star_aggregate(sent: np.ndarray, gammas: np.ndarray, rho: float) -> tuple[np.ndarray, np.ndarray]:
    """Seed 004 lines 6/8 (eqs. 10c–10d): w = mean(sent) − mean(γ)/ρ; γ_i ← γ_i − ρ(sent_i − w)."""
    w = sent.mean(axis=0) - gammas.mean(axis=0) / rho
    return w, gammas - rho * (sent - w)


def finish(
    algorithm: str, models: np.ndarray, model: np.ndarray, evaluator: Evaluator, test: Dataset | None,
    ledger, guarantees, seconds: float, config: dict, notes: Sequence[str] = (),
) -> TrainingResult:
    """Assemble a :class:`TrainingResult` (test accuracies of the output model and of each agent)."""
    acc = accuracy(model, test) if test is not None else None
    agent_acc = tuple(accuracies(models, test)) if test is not None else ()
    return TrainingResult(algorithm, models, model, evaluator.history, tuple(tuple(e) for e in ledger),
                          dict(guarantees), acc, agent_acc, seconds, dict(config), tuple(notes))


def _end_round(evaluator: Evaluator, t: int, T: int, models: np.ndarray, duals: np.ndarray, progress: Progress) -> None:
    """Close round ``t`` of ``T``: record it (always the last one) and report ``progress(t, T)``."""
    evaluator.record(t, models, duals, force=(t == T))
    if progress:
        progress(t, T)


def decentralised_admm(
    parts: Sequence[Dataset],
    graph: Graph,
    *,
    lam: float = 1e-2,
    eta: float = 0.5,
    iterations: int = 30,
    beta: float = 1e-8,
    loss=None,
    regulariser=None,
    test: Dataset | None = None,
    theta0: np.ndarray | str | None = None,
    solver: str = "newton",
    record_every: int = 1,
    progress: Progress = None,
) -> TrainingResult:
    """Non-private decentralised ADMM, seed 000 eqs. (3)–(4) ("Non-private" baseline).

    Parameters
    ----------
    parts
        One Dataset per agent (``graph.n`` of them).
    graph
        Connected undirected communication graph.
    lam
        λ̂ of the global objective (each agent uses λ̂/N).
    eta
        ADMM penalty η > 0 (seed 000: 0.5).
    iterations
        T.
    beta
        Local solver tolerance on ||∇||₂ (exact solve in the limit).
    theta0
        Initial point θ_i^0 (the paper leaves it open): None (zeros), a vector, or ``"local"`` — each agent
        starts at the minimiser of its own f_i (non-private only: it uses the agent's data).
    """
    parts = _check_parts_on_graph(parts, graph)
    lam = check_nonnegative("lam", lam)
    eta = check_positive("eta", eta)
    T = check_integer("iterations", iterations, minimum=1)
    beta = check_positive("beta", beta)
    loss = loss or Logistic()
    regulariser = regulariser or L2()
    N, d = len(parts), parts[0].d
    if isinstance(theta0, str):
        if theta0 != "local":
            raise ValueError(f"theta0 must be None, a vector or 'local', got theta0={theta0!r}")
        if lam == 0:
            raise ValueError("theta0='local' needs lam > 0 (each f_i must have a minimiser)")
        thetas = np.stack([solve(LocalObjective(p.X, p.y, loss, regulariser, lam / N), np.zeros(d), beta,
                                 method=solver, max_iter=500).theta for p in parts])
    else:
        thetas = np.zeros((N, d)) if theta0 is None else np.tile(np.asarray(theta0, float), (N, 1))
    duals = np.zeros((N, d))
    nbrs = graph.neighbours
    ev = Evaluator(loss, parts, test, record_every)
    ev.record(0, thetas, duals)
    grad_norms = []
    start = time.perf_counter()
    for t in range(T):
        new = np.empty_like(thetas)
        for i in range(N):
            F = decentralised_objective(parts[i], loss, regulariser, lam / N, duals[i], thetas[i], thetas[list(nbrs[i])], eta)
            res = solve(F, thetas[i], beta, method=solver)
            new[i] = res.theta
            grad_norms.append(res.grad_norm)
        thetas = new
        duals = decentralised_dual_update(duals, thetas, graph, eta)
        _end_round(ev, t + 1, T, thetas, duals, progress)
    seconds = time.perf_counter() - start
    config = {"iterations": T, "agents": N, "lam": lam, "eta": eta, "beta": beta, "graph": graph.to_dict(),
              "theta0": theta0 if isinstance(theta0, str) or theta0 is None else "vector",
              "loss": loss.name, "regulariser": regulariser.name, "max_grad_norm": max(grad_norms)}
    return finish("admm", thetas, thetas.mean(axis=0), ev, test, [() for _ in range(N)],
                  {"paper": None, "corrected": None}, seconds, config, ("non-private: no privacy guarantee",))


def star_admm(
    parts: Sequence[Dataset],
    *,
    lam: float = 1e-4,
    rho: float = 0.1,
    iterations: int = 100,
    beta: float = 1e-8,
    loss=None,
    regulariser=None,
    test: Dataset | None = None,
    solver: str = "newton",
    record_every: int = 1,
    progress: Progress = None,
) -> TrainingResult:
    """Non-private star-topology ADMM, seed 004 Algorithm 1 (exact local solves to ||∇|| ≤ ``beta``).

    ``lam`` is λ of eq. (1); each agent uses λ/n (seed 004: λ/n = 1e-6).
    """
    parts = check_parts(parts)
    lam = check_nonnegative("lam", lam)
    rho = check_positive("rho", rho)
    T = check_integer("iterations", iterations, minimum=1)
    beta = check_positive("beta", beta)
    loss = loss or Logistic()
    regulariser = regulariser or L2()
    N, d = len(parts), parts[0].d
    w = np.zeros(d)
    locals_ = np.zeros((N, d))
    gammas = np.zeros((N, d))
    ev = Evaluator(loss, parts, test, record_every)
    ev.record(0, locals_, gammas)
    start = time.perf_counter()
    for k in range(T):
        for i in range(N):
            F = star_objective(parts[i], loss, regulariser, lam / N, gammas[i], w, rho)
            locals_[i] = solve(F, locals_[i], beta, method=solver).theta
        w, gammas = star_aggregate(locals_, gammas, rho)
        _end_round(ev, k + 1, T, locals_, gammas, progress)
    seconds = time.perf_counter() - start
    config = {"iterations": T, "agents": N, "lam": lam, "rho": rho, "beta": beta,
              "loss": loss.name, "regulariser": regulariser.name, "topology": "star (aggregator)"}
    return finish("star-admm", locals_.copy(), w, ev, test, [() for _ in range(N)],
                  {"paper": None, "corrected": None}, seconds, config, ("non-private: no privacy guarantee",))
