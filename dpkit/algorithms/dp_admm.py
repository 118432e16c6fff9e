"""DP-ADMM (seed 004, Huang et al. 2019, Algorithm 3): linearised ADMM with Gaussian primal perturbation.

Star topology (agents + an honest-but-curious aggregator). Iteration k, agent i (eqs. 10a–10d, 12a):

    g_i^k  = (1/m_i) Σ_j ℓ′(a_ij, b_ij, w̃_i^{k−1}) + (λ/n) R′(w̃_i^{k−1})        (at the *released* point, F4)
    w_i^k  = (−g_i^k + γ_i^{k−1} + ρ w^{k−1} + w̃_i^{k−1}/η_i^k) / (ρ + 1/η_i^k)    (closed form, vectorised)
    w̃_i^k  = w_i^k + N(0, σ_{i,k}² I)                                              (released)
    w^k    = mean_i w̃_i^k − mean_i γ_i^{k−1}/ρ ;  γ_i^k = γ_i^{k−1} − ρ(w̃_i^k − w^k)

with (Theorem 1, eq. 14) σ_{i,k} = 2c1√(2 ln(1.25/δ)) / (m_i ε (ρ + 1/η_i^k)) — the classical Gaussian
mechanism on the sensitivity Δ_{i,k} = 2c1/(m_i(ρ + 1/η_i^k)) of Lemma 1 — and step sizes

    eq. (29), non-smooth (l1 / hinge):  η_i^k = c_w/√(2k) · ((c1 + λc2/n)² + 8dp c1² ln(1.25/δ)/(m_i²ε²))^{-1/2}
    eq. (34), smooth (l2 + logistic):   η_i^k = (c3 + λc4/n + 4c1√(dp k ln(1.25/δ))/(m_i ε c_w))^{-1}

Privacy (spec 004 §3.4): σ_{i,k}/Δ_{i,k} = √(2 ln(1.25/δ))/ε for every k, so each iteration is the
same Gaussian mechanism and the total over t iterations is exactly μ-GDP with μ = √t·ε/√(2 ln(1.25/δ)).
The paper's "Theorem 2" (ε̄ = c0√t ε, c0 unspecified) cannot be implemented: ``guarantees["paper"]``
is None; ``guarantees["per_iteration"]`` is the paper's Theorem 1 (ε, δ) per step; ``"corrected"`` is
the tight total (exact GDP, Dong–Roth–Su); ``"zcdp"`` the RDP/zCDP total (ρ = tε²/(4 ln(1.25/δ)),
CKS conversion).

``budget="total"`` (default) calibrates the per-step noise multiplier so the tight total meets (ε, δ);
the per-iteration ε that the paper's formulas (and step sizes) use is then √(2 ln(1.25/δ))/z.
``budget="per_iteration"`` takes (ε, δ) per step as the paper's experiments do.

c_w (23 for l1, 89 for l2) comes from the paper's non-private pre-training and λ/n from
non-private cross-validation; neither is accounted for (spec 004 flag 8).
"""

from __future__ import annotations

import math
import time
from typing import Callable, Sequence

import numpy as np

from dpkit._validation import check_integer, check_nonnegative, check_open_unit, check_positive, check_rng
from dpkit.accounting.base import AccountingResult
from dpkit.accounting.events import GaussianEvent
from dpkit.accounting.zcdp import zcdp_to_epsilon
from dpkit.algorithms import privacy as P
from dpkit.algorithms.admm import _end_round, check_parts, finish, star_aggregate
from dpkit.algorithms.data import Dataset
from dpkit.algorithms.evaluation import Evaluator
from dpkit.algorithms.losses import L1, L2, Logistic, empirical_gradient

__all__ = ["dp_admm", "step_size_eq29", "step_size_eq34", "noise_multiplier", "seed004_guarantees", "PAPER_C_W"]

PAPER_C_W = {"l1": 23.0, "l2": 89.0}


def step_size_eq29(k, *, m: int, epsilon: float, delta: float, dp: int, c_w: float, lam_over_n: float,
                   c1: float = 1.0, c2: float | None = None):
    """Seed 004 eq. (29) (non-smooth case, Theorem 3); ``k`` may be an array. c2 defaults to √(dp)."""
    c2 = math.sqrt(dp) if c2 is None else c2
    G2 = (c1 + lam_over_n * c2) ** 2 + 8.0 * dp * c1**2 * math.log(1.25 / delta) / (m**2 * epsilon**2)
    return c_w / np.sqrt(2.0 * np.asarray(k, float)) / math.sqrt(G2)


def step_size_eq34(k, *, m: int, epsilon: float, delta: float, dp: int, c_w: float, lam_over_n: float,
                   c1: float = 1.0, c3: float = 0.25, c4: float = 1.0):
    """Seed 004 eq. (34) (smooth case, Theorem 4); ``k`` may be an array."""
    k = np.asarray(k, float)
    return 1.0 / (c3 + lam_over_n * c4 + 4.0 * c1 * np.sqrt(dp * k * math.log(1.25 / delta)) / (m * epsilon * c_w))


def noise_multiplier(epsilon: float, delta: float, iterations: int, budget: str) -> tuple[float, float]:
    """(z = σ/Δ, per-iteration ε of Theorem 1) for a total or per-iteration budget."""
    epsilon = check_positive("epsilon", epsilon)
    delta = check_open_unit("delta", delta)
    L = math.sqrt(2.0 * math.log(1.25 / delta))
    if budget == "per_iteration":
        return L / epsilon, epsilon
    if budget == "total":
        z = P.gaussian_total_sigma(epsilon, delta, iterations)
        return z, L / z
    raise ValueError(f"budget must be 'total' or 'per_iteration', got budget={budget!r}")


def seed004_guarantees(ledgers, delta: float, eps_iter: float, method: str) -> dict[str, AccountingResult | None]:
    """Paper (None: no total is given), per-iteration Theorem 1, tight GDP total and zCDP total."""
    eps_iter = float(eps_iter)
    per_iter = AccountingResult(
        epsilon=eps_iter, delta=delta, accountant="paper-per-iteration", neighbouring=P.REPLACE_ONE,
        method=method, is_upper_bound=bool(eps_iter <= 1.0 and delta <= 0.01),
        notes=("per iteration only; the paper's Theorem 2 total (c0*sqrt(t)*eps) has no c0",)
        + (() if eps_iter <= 1.0 and delta <= 0.01 else ("outside Theorem 1's range (eps <= 1, delta <= 0.01)",)),
    )
    rho = max(P.ledger_rho(entries)[0] for entries in ledgers)
    zcdp = AccountingResult(
        epsilon=zcdp_to_epsilon(rho, delta), delta=delta, accountant="zcdp", neighbouring=P.REPLACE_ONE,
        method="Gaussian zCDP/RDP composition (Bun & Steinke 2016 Prop. 1.6; Mironov 2017) + CKS 2020 Prop. 12",
        notes=(f"rho={rho:.6g}",),
    )
    return {"paper": None, "per_iteration": per_iter, "corrected": P.compose_gaussians_exact(ledgers, delta), "zcdp": zcdp}


def dp_admm(
    parts: Sequence[Dataset],
    *,
    epsilon: float,
    delta: float = 1e-5,
    iterations: int = 100,
    rho: float = 0.1,
    lam_over_n: float = 1e-6,
    regulariser: str = "l2",
    loss=None,
    schedule: str = "auto",
    c_w: float | None = None,
    budget: str = "total",
    test: Dataset | None = None,
    rng: np.random.Generator | int | None = 0,
    record_every: int = 1,
    progress: Callable[[int, int], None] | None = None,
):
    """Run DP-ADMM (seed 004 Algorithm 3). See the module docstring.

    Parameters
    ----------
    parts
        One Dataset per agent (n agents).
    epsilon, delta
        Budget: total over ``iterations`` (``budget="total"``) or per iteration (``"per_iteration"``).
    rho
        ADMM penalty ρ (paper: 0.1).
    lam_over_n
        λ/n (paper: 1e-6).
    regulariser
        ``"l2"`` (½||w||², eq. 39) or ``"l1"`` (||w||₁ with sgn, eq. 38).
    schedule
        ``"eq29"``, ``"eq34"`` or ``"auto"`` (eq. 34 when loss and regulariser are smooth).
    c_w
        ||w*|| bound in the step sizes (default: the paper's 23 for l1, 89 for l2).
    """
    parts = check_parts(parts)
    T = check_integer("iterations", iterations, minimum=1)
    rho = check_positive("rho", rho)
    lam_over_n = check_nonnegative("lam_over_n", lam_over_n)
    if regulariser not in ("l1", "l2"):
        raise ValueError(f"regulariser must be 'l1' or 'l2', got regulariser={regulariser!r}")
    reg = L2() if regulariser == "l2" else L1()
    loss = loss or Logistic()
    c_w = PAPER_C_W[regulariser] if c_w is None else check_positive("c_w", c_w)
    if schedule == "auto":
        schedule = "eq34" if (reg.smooth and loss.smooth) else "eq29"
    if schedule not in ("eq29", "eq34"):
        raise ValueError(f"schedule must be 'eq29', 'eq34' or 'auto', got schedule={schedule!r}")
    if schedule == "eq34" and not (reg.smooth and loss.smooth):
        raise ValueError("schedule eq34 (Theorem 4) needs a smooth loss and regulariser; use eq29")
    z, eps_it = noise_multiplier(epsilon, delta, T, budget)
    gen = check_rng(rng)
    n, d = len(parts), parts[0].d
    sizes = np.array([p.n for p in parts], float)
    c1 = loss.c1
    ks = np.arange(1, T + 1)
    etas = np.empty((n, T))
    for i, m in enumerate(sizes):
        if schedule == "eq29":
            etas[i] = step_size_eq29(ks, m=m, epsilon=eps_it, delta=delta, dp=d, c_w=c_w, lam_over_n=lam_over_n, c1=c1)
        else:
            etas[i] = step_size_eq34(ks, m=m, epsilon=eps_it, delta=delta, dp=d, c_w=c_w, lam_over_n=lam_over_n,
                                     c1=c1, c3=loss.c3, c4=1.0)
    sens = 2.0 * c1 / (sizes[:, None] * (rho + 1.0 / etas))  # Lemma 1, (n, T)
    sigmas = z * sens                                       # Theorem 1 / eq. (14) when budget is per-iteration
    stacked = len(set(sizes)) == 1
    if stacked:
        Xs = np.stack([p.X for p in parts])
        ys = np.stack([p.y for p in parts])
    w = np.zeros(d)
    sent = np.zeros((n, d))
    gammas = np.zeros((n, d))
    ev = Evaluator(loss, parts, test, record_every)
    ev.record(0, sent, gammas)
    start = time.perf_counter()
    for k in range(T):
        if stacked:
            g = empirical_gradient(loss, sent, Xs, ys)
        else:
            g = np.stack([empirical_gradient(loss, sent[i], p.X, p.y) for i, p in enumerate(parts)])
        g = g + lam_over_n * reg.gradient(sent)
        inv_eta = (1.0 / etas[:, k])[:, None]
        local = (-g + gammas + rho * w + sent * inv_eta) / (rho + inv_eta)
        sent = local + gen.standard_normal((n, d)) * sigmas[:, k][:, None]
        w, gammas = star_aggregate(sent, gammas, rho)
        _end_round(ev, k + 1, T, sent, gammas, progress)
    seconds = time.perf_counter() - start
    ledgers = [[(GaussianEvent(float(sigmas[i, k]), float(sens[i, k])), 1) for k in range(T)] for i in range(n)]
    guarantees = seed004_guarantees(ledgers, delta, eps_it,
                                    "seed 004 Thm 1: classical Gaussian mechanism sigma = Delta sqrt(2 ln(1.25/delta))/eps per iteration")
    config = {"iterations": T, "agents": n, "rho": rho, "lam_over_n": lam_over_n, "regulariser": regulariser,
              "loss": loss.name, "schedule": schedule, "c_w": c_w, "budget": budget, "noise_multiplier": z,
              "epsilon_per_iteration": eps_it, "delta_per_iteration": delta,
              "eta_first_last": [float(etas[0, 0]), float(etas[0, -1])],
              "sigma_first_last": [float(sigmas[0, 0]), float(sigmas[0, -1])]}
    notes = ["epsilon_paper is null: the paper's Theorem 2 gives no constant c0 (spec 004 §3.4)",
             "c_w and lambda/n come from non-private tuning in the paper and are not accounted (spec 004 flag 8)"]
    if eps_it > 1.0:
        notes.append(f"per-iteration epsilon {eps_it:.3g} > 1: outside Theorem 1; the total is still exact (GDP)")
    return finish("dp-admm", sent.copy(), w, ev, test, ledgers, guarantees, seconds, config, notes)
