"""ADMM with primal variable perturbation, ADMM-PVP (seed 004, Algorithm 2; baseline after Zhang & Zhu 2017).

Star topology. Iteration k, agent i: exact local solve of seed 004 eq. (6)

    w_i^k = argmin f_i(w) − ⟨γ_i^{k−1}, w − w^{k−1}⟩ + (ρ/2)||w − w^{k−1}||²,

then w̃_i^k = w_i^k + N(0, σ_i² I) with the constant σ_i = Δ_PVP √(2 ln(1.25/δ))/ε,
Δ_PVP = 2c1/(m_i(λ/n + ρ)) (Supplementary Appendix A of the paper; the subproblem is
(λμ_R/n + ρ)-strongly convex). Aggregation and dual update as in DP-ADMM.

The exact argmin is computed to ||∇|| ≤ β, so the released point is within β/μ of the true minimiser
and the corrected sensitivity is Δ = 2c1/(m_i μ) + 2β/μ (μ = λ/n + ρ). ``budget="total"`` calibrates
σ so that the tight (GDP) total over t iterations with the corrected Δ meets (ε, δ);
``budget="per_iteration"`` uses the paper's σ_i for a per-iteration (ε, δ). Guarantees as in
:mod:`dpkit.algorithms.dp_admm` (the paper gives no total: ``"paper"`` is None).
"""

from __future__ import annotations

import math
import time
from typing import Callable, Sequence

import numpy as np

from dpkit._validation import check_integer, check_nonnegative, check_positive, check_rng
from dpkit.accounting.events import GaussianEvent
from dpkit.algorithms.admm import _end_round, check_parts, finish, star_aggregate, star_objective
from dpkit.algorithms.data import Dataset
from dpkit.algorithms.dp_admm import noise_multiplier, seed004_guarantees
from dpkit.algorithms.evaluation import Evaluator
from dpkit.algorithms.losses import L2, Logistic
from dpkit.algorithms.solvers import solve

__all__ = ["admm_pvp", "pvp_sensitivity"]


def pvp_sensitivity(m: int, rho: float, lam_over_n: float, c1: float = 1.0, beta: float = 0.0) -> float:
    """2c1/(m μ) + 2β/μ with μ = λ/n + ρ (β = 0: the paper's Δ_PVP)."""
    mu = check_nonnegative("lam_over_n", lam_over_n) + check_positive("rho", rho)
    return 2.0 * c1 / (m * mu) + 2.0 * check_nonnegative("beta", beta) / mu


def admm_pvp(
    parts: Sequence[Dataset],
    *,
    epsilon: float,
    delta: float = 1e-5,
    iterations: int = 100,
    rho: float = 0.1,
    lam_over_n: float = 1e-6,
    beta: float = 1e-6,
    loss=None,
    budget: str = "total",
    test: Dataset | None = None,
    rng: np.random.Generator | int | None = 0,
    solver: str = "newton",
    record_every: int = 1,
    progress: Callable[[int, int], None] | None = None,
):
    """Run ADMM-PVP (seed 004 Algorithm 2) with an l2 regulariser; see the module docstring."""
    parts = check_parts(parts)
    T = check_integer("iterations", iterations, minimum=1)
    rho = check_positive("rho", rho)
    lam_over_n = check_nonnegative("lam_over_n", lam_over_n)
    beta = check_positive("beta", beta)
    loss = loss or Logistic()
    if not loss.smooth:
        raise ValueError("ADMM-PVP's exact local solve needs a smooth loss; got " + loss.name)
    z, eps_it = noise_multiplier(epsilon, delta, T, budget)
    gen = check_rng(rng)
    n, d = len(parts), parts[0].d
    reg = L2()
    sens_paper = np.array([pvp_sensitivity(p.n, rho, lam_over_n, loss.c1) for p in parts])
    sens = np.array([pvp_sensitivity(p.n, rho, lam_over_n, loss.c1, beta) for p in parts])
    if budget == "total":
        sigmas = z * sens
        eps_it = math.sqrt(2.0 * math.log(1.25 / delta)) * sens_paper[0] / sigmas[0]
    else:
        sigmas = z * sens_paper
    w = np.zeros(d)
    locals_ = np.zeros((n, d))
    sent = np.zeros((n, d))
    gammas = np.zeros((n, d))
    ev = Evaluator(loss, parts, test, record_every)
    ev.record(0, sent, gammas)
    start = time.perf_counter()
    for k in range(T):
        for i in range(n):
            F = star_objective(parts[i], loss, reg, lam_over_n, gammas[i], w, rho)
            locals_[i] = solve(F, locals_[i], beta, method=solver).theta
        sent = locals_ + gen.standard_normal((n, d)) * sigmas[:, None]
        w, gammas = star_aggregate(sent, gammas, rho)
        _end_round(ev, k + 1, T, sent, gammas, progress)
    seconds = time.perf_counter() - start
    ledgers = [[(GaussianEvent(float(sigmas[i]), float(sens[i])), T)] for i in range(n)]
    guarantees = seed004_guarantees(ledgers, delta, eps_it,
                                    "seed 004 §III-A: sigma = Delta_PVP sqrt(2 ln(1.25/delta))/eps per iteration "
                                    "(Delta_PVP ignores the solver tolerance beta)")
    config = {"iterations": T, "agents": n, "rho": rho, "lam_over_n": lam_over_n, "beta": beta, "loss": loss.name,
              "budget": budget, "noise_multiplier_paper": float(sigmas[0] / sens_paper[0]),
              "epsilon_per_iteration": eps_it, "delta_per_iteration": delta, "sigma": float(sigmas[0]),
              "sensitivity_paper": float(sens_paper[0]), "sensitivity_corrected": float(sens[0])}
    notes = ["epsilon_paper is null: the paper gives no total for PVP",
             "corrected sensitivity adds 2*beta/mu for the inexact local solve"]
    return finish("admm-pvp", sent.copy(), w, ev, test, ledgers, guarantees, seconds, config, notes)
