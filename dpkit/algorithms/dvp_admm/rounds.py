"""The rounds of dual variable perturbation (DVP) ADMM: local objectives, the noisy dual term, the loop.

Zhang & Zhu 2016, eqs. (13)–(16). Node p's sub-problem at iteration t is

    f_p(t+1) = argmin_f (Cᴿ/B_p) Σ_i L(y_i fᵀx_i) + ((ρ + Φ_p)/2)‖f‖² + 2μ_p(t+1)ᵀf
                        + η Σ_{j∈N_p} ‖f − ½(f_p(t) + f_j(t))‖²,
    2μ_p(t+1) = 2λ_p(t) + b_p(t),        (b_p = (Cᴿ/B_p)ε_p in the paper's eq. (14))
    λ_p(t+1)  = λ_p(t) + (η/2) Σ_{j∈N_p} (f_p(t+1) − f_j(t+1)),

with λ_p(0) = 0 and f_p(0) = 0. On the substrate this is
:class:`~dpkit.algorithms.substrate.solvers.AgentObjectives` with per-record weights Cᴿ/B_p and
regulariser weight ρ + Φ_p (:func:`local_objectives`), and
:func:`~dpkit.algorithms.substrate.admm_loops.decentralised_loop` with the ``perturb`` hook
:func:`dual_perturbation`: every node's b_p(t) is drawn by its mechanism's ``release`` (one
ledger entry per node per iteration). The exact minimiser is released (the loop's default
``publish``), so every published f_p(t) is the perturbed objective's minimiser, to the solver's
tolerance.

:func:`perturbed_dual_admm` runs these rounds; the training function and the audit scenario
both call it.
"""

from __future__ import annotations

import dataclasses
from typing import Callable, Sequence

import numpy as np

from dpkit._validation import check_integer, check_positive
from dpkit.algorithms.substrate.admm_loops import LoopState, decentralised_loop
from dpkit.algorithms.substrate.data import Dataset
from dpkit.algorithms.substrate.graphs import Graph
from dpkit.algorithms.substrate.losses import Logistic
from dpkit.algorithms.substrate.solvers import AgentObjectives
from dpkit.mechanisms.base import Mechanism
from dpkit.mechanisms.ledger import PrivacyLedger

__all__ = ["SOLVER_TOLERANCE", "local_objectives", "dual_perturbation", "perturbed_dual_admm"]

SOLVER_TOLERANCE = 1e-10
"""‖∇F_p‖ reached by every sub-problem solve (the analyses assume the exact minimiser)."""


def local_objectives(parts: Sequence[Dataset], *, loss_weight: float, regularisation: np.ndarray | float) -> AgentObjectives:
    """Every node's Z_p of eq. (3) with the extra ridge: (Cᴿ/B_p) Σ_i L(y_i fᵀx_i) + ((ρ + Φ_p)/2)‖f‖².

    ``loss_weight`` is Cᴿ (each record of node p weighs Cᴿ/B_p); ``regularisation`` is ρ + Φ_p,
    a number or one value per node. The loss is logistic and R = ½‖f‖² (Zhang & Zhu 2016, §5).

    >>> from dpkit.algorithms.substrate.data import make_synthetic
    >>> from dpkit.algorithms.substrate.partition import partition
    >>> F = local_objectives(partition(make_synthetic(40, 2, rng=0), 2, rng=0), loss_weight=10.0,
    ...                      regularisation=[0.1, 0.2])
    >>> float(F.weights[0, 0]), F.reg_weight.tolist()
    (0.5, [0.1, 0.2])
    """
    loss_weight = check_positive("loss_weight", loss_weight)
    F = AgentObjectives.from_parts(parts, Logistic())
    reg = np.broadcast_to(np.asarray(regularisation, float), (F.agents,)).copy()
    if not np.all(np.isfinite(reg) & (reg > 0)):
        raise ValueError(f"regularisation must be in (0, inf) for every node, got regularisation={regularisation!r}")
    # from_parts weighs each record 1/B_p: the paper's Cᴿ/B_p is Cᴿ times that
    return dataclasses.replace(F, weights=F.weights * loss_weight, reg_weight=reg)


def dual_perturbation(mechanisms: Sequence[Mechanism], dim: int, rng: np.random.Generator,
                      ledger: PrivacyLedger) -> Callable[[int], np.ndarray]:
    """The ``perturb`` hook of :func:`~dpkit.algorithms.substrate.admm_loops.decentralised_loop`: b_p(t) for every node.

    Node p's b_p(t) is ``mechanisms[p].release(0, ...)`` (a fresh draw, recorded for agent p), the
    perturbation 2μ_p − 2λ_p of eq. (14).
    """
    zero = np.zeros(dim)

    def perturb(t: int) -> np.ndarray:
        return np.stack([mech.release(zero, rng=rng, ledger=ledger, agent=p) for p, mech in enumerate(mechanisms)])

    return perturb


def perturbed_dual_admm(F: AgentObjectives, graph: Graph, *, eta: float, iterations: int,
                        mechanisms: Sequence[Mechanism], rng: np.random.Generator, ledger: PrivacyLedger,
                        on_round: Callable[[int, np.ndarray, np.ndarray], None] | None = None,
                        tol: float = SOLVER_TOLERANCE) -> LoopState:
    """``iterations`` DVP rounds (module docstring) from f(0) = 0, node p's noise drawn by ``mechanisms[p]``.

    Returns the loop's :class:`~dpkit.algorithms.substrate.admm_loops.LoopState` (the last published minimisers,
    the duals, the largest achieved ‖∇‖).
    """
    eta = check_positive("eta", eta)
    T = check_integer("iterations", iterations, minimum=1)
    if len(mechanisms) != F.agents:
        raise ValueError(f"mechanisms must have one entry per node ({F.agents}), got {len(mechanisms)}")
    d = F.X.shape[2]
    return decentralised_loop(F, graph, eta=eta, iterations=T, beta=tol, theta0=np.zeros((F.agents, d)),
                              perturb=dual_perturbation(mechanisms, d, rng, ledger), on_round=on_round)
