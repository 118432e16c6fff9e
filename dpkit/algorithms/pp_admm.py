"""PP-ADMM (seed 000, Ding et al., Algorithm 1) with the paper's and a corrected privacy accounting.

Per iteration t and agent i (synchronous):

1. draw b_i1 ~ N(0, σ_i1² I) and approximately minimise the perturbed objective (eq. 5)
   f_i(θ) + (2λ_i^t + b_i1)ᵀθ + η Σ_j ||½(θ_i^t + θ_j^t) − θ||² until ||∇|| ≤ β;
2. release θ_i^{t+1} = θ̂ + b_i2, b_i2 ~ N(0, σ_i2² I), to the neighbours;
3. λ_i^{t+1} = λ_i^t + (η/2) Σ_j (θ_i^{t+1} − θ_j^{t+1}) (noisy values; Σ_i λ_i stays 0).

Noise scales come from a total budget (ε, δ) in one of two ways (``accounting=``):

``"paper"`` — the §3.4 pipeline of spec 000 (its table is a test vector):
    ρ_total = ε²/(4 ln 1/δ) [F1/F2]; ρ_i1 = (1−splits)ρ_total/T, ρ_i2 = splits·ρ_total/T;
    ε_i1 = ρ_i1 + 2√(ρ_i1 ln 1/δ_i1); ε_i3 = 0.99 ε_i1;
    σ_i1 = 2√(2 ln(1.25/δ_i1))/(|D_i| ε_i3); λ̂ = max_i 2.8 N c₁/((ε_i1 − ε_i3)|D_i|);
    σ_i2 = f·β/(√(2ρ_i2)(λ̂/N + 2η|𝓑_i|)) with f = ``sensitivity_factor`` (1 paper, 2 correct; F5).
    The paper's guarantee (Theorems 3.1/3.3): ρ = T(ε_i1²/(4 ln 1/δ_i1) + ρ_i2) [``paper_rho="theorem"``,
    F1] or T(ρ_i1 + ρ_i2) [``"allocated"``], ε = ρ + 2√(ρ ln 1/δ). **Not a valid bound** (F1, F4, F5, F11).

``"corrected"`` — noise calibrated so that the corrected guarantee meets (ε, δ):
    δ/2 pays the objective-perturbation steps (δ/(2T) each), δ/2 the zCDP→DP conversion;
    ρ = largest with CKS-ε(ρ, δ/2) ≤ ε; per step ε_obj = √(2(1−splits)ρ/T), ρ_i2 = splits·ρ/T;
    λ̂ = given ``lam`` or max_i N c₁/(expm1(ε_obj − ε_i3)|D_i|) (ε_i3 = ratio·ε_obj);
    σ_i1 from the χ₂ tail bound of :mod:`dpkit.algorithms.privacy` with ξ_i = log(1 + c₁/(|D_i|μ_i));
    σ_i2 = 2β/(√(2ρ_i2) μ_i) (sensitivity 2β/μ_i, F5).

Whatever calibrated the noise, the result carries both guarantees: ``"paper"`` (the paper's theorem
applied to the run's parameters) and ``"corrected"`` (valid: per iteration an (ε_obj, δ_obj)-DP
objective-perturbation step, ε_obj from the actual σ_i1, plus a Gaussian with sensitivity 2β/μ_i;
composed as approximate zCDP; maximum over agents). Neighbouring relation: replace-one (seed 000 §1.1).

Notation: seed 000's c₁ bounds 𝓛″ (1/4 for logistic) — the loss object's ``c3``; the gradient bound
|𝓛′| ≤ 1 is the loss's ``c1``.
"""

from __future__ import annotations

import dataclasses
import math
import time
import warnings
from typing import Callable, Sequence

import numpy as np

from dpkit._validation import (
    check_integer,
    check_nonnegative,
    check_open_unit,
    check_positive,
    check_rng,
    check_unit_interval,
)
from dpkit.accounting.base import AccountingResult, PaperRuleWarning
from dpkit.accounting.events import ApproxDPEvent, GaussianEvent, PureDPEvent, SparseVectorEvent
from dpkit.accounting.zcdp import rho_for
from dpkit.algorithms import privacy as P
from dpkit.algorithms.admm import _check_parts_on_graph, _end_round, decentralised_dual_update, decentralised_objective, finish
from dpkit.algorithms.data import Dataset
from dpkit.algorithms.evaluation import Evaluator
from dpkit.algorithms.graphs import Graph
from dpkit.algorithms.losses import L2, Logistic
from dpkit.algorithms.solvers import solve

__all__ = ["Seed000Parameters", "seed000_parameters", "seed000_guarantees", "pp_admm"]


@dataclasses.dataclass(frozen=True)
class Seed000Parameters:
    """Derived privacy parameters of a PP-/IPP-ADMM run (per-agent tuples in agent order).

    ``epsilon_i1``/``epsilon_i3`` are the per-step objective-perturbation budgets (paper: from the
    §3.4 pipeline; corrected: ε_obj and ratio·ε_obj), ``rho_i2`` the per-release output budget,
    ``epsilon_svt`` = ε₁ + ε₂ (IPP only), ``objective_steps`` K and ``releases`` the counts that
    enter the accounting.
    """

    accounting: str
    epsilon: float
    delta: float
    rho_total: float
    rho_i1: float
    rho_i2: float
    epsilon_i1: float
    epsilon_i3: float
    delta_i1: float
    lam_hat: float
    mu: tuple[float, ...]
    sigma1: tuple[float, ...]
    sigma2: tuple[float, ...]
    epsilon_svt: float
    epsilon_1: float
    epsilon_2: float
    objective_steps: int
    releases: int
    sensitivity_factor: float

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


def _svt_split(epsilon_svt: float, cap: int) -> tuple[float, float]:
    """Lyu et al. 2017 ratio ε₁:ε₂ = 1:(2c)^{2/3} (non-monotone queries; spec 000 §5.1 item 7)."""
    if epsilon_svt == 0.0:
        return 0.0, 0.0
    e1 = epsilon_svt / (1.0 + (2.0 * cap) ** (2.0 / 3.0))
    return e1, epsilon_svt - e1


def seed000_parameters(
    epsilon: float,
    delta: float,
    *,
    sizes: Sequence[int],
    degrees: Sequence[int],
    iterations: int,
    eta: float,
    beta: float,
    accounting: str = "paper",
    releases: int | None = None,
    objective_steps: int | None = None,
    svt_fraction: float = 0.0,
    cap: int = 1,
    splits: float = 0.001,
    epsilon3_ratio: float = 0.99,
    delta_i1: float = 1e-4,
    lam: float | None = None,
    c1: float = 1.0,
    c3: float = 0.25,
    sensitivity_factor: float = 1.0,
    sigma1_uses: str = "epsilon_i3",
) -> Seed000Parameters:
    """Noise scales of PP-ADMM (``svt_fraction=0``) or IPP-ADMM from a total budget (module docstring).

    Raises
    ------
    ValueError
        For an invalid budget, or when the budget cannot pay for the steps (e.g. ξ ≥ ε_obj).
    """
    epsilon = check_positive("epsilon", epsilon)
    delta = check_open_unit("delta", delta)
    T = check_integer("iterations", iterations, minimum=1)
    eta = check_positive("eta", eta)
    beta = check_positive("beta", beta)
    releases = T if releases is None else check_integer("releases", releases, minimum=1)
    K = T if objective_steps is None else check_integer("objective_steps", objective_steps, minimum=1)
    svt_fraction = check_unit_interval("svt_fraction", svt_fraction, include_one=False)
    splits = check_unit_interval("splits", splits, include_zero=False, include_one=False)
    ratio = check_unit_interval("epsilon3_ratio", epsilon3_ratio, include_zero=False, include_one=False)
    delta_i1 = check_open_unit("delta_i1", delta_i1)
    if sensitivity_factor not in (1, 2, 1.0, 2.0):
        raise ValueError(f"sensitivity_factor must be 1 (paper) or 2 (correct), got sensitivity_factor={sensitivity_factor}")
    if sigma1_uses not in ("epsilon_i3", "epsilon_i1"):
        raise ValueError(f"sigma1_uses must be 'epsilon_i3' or 'epsilon_i1', got sigma1_uses={sigma1_uses!r}")
    sizes = [check_integer("sizes[i]", s, minimum=1) for s in sizes]
    degrees = [check_integer("degrees[i]", g, minimum=0) for g in degrees]
    N = len(sizes)
    if lam is not None:
        lam = check_nonnegative("lam", lam)
    if accounting == "paper":
        warnings.warn("seed 000's budget pipeline uses rho = eps^2/(4 ln(1/delta)) and an invalid (eps,delta)->zCDP "
                      "rule (spec 000 F1-F5); its epsilon is not a valid bound", PaperRuleWarning, stacklevel=2)
        rho_total = P.rho_paper(epsilon, delta)
        rho_svt = svt_fraction * rho_total
        rho_rel = (rho_total - rho_svt) / releases
        rho_i1, rho_i2 = (1.0 - splits) * rho_rel, splits * rho_rel
        e_i1 = rho_i1 + 2.0 * math.sqrt(rho_i1 * math.log(1.0 / delta_i1))
        e_i3 = ratio * e_i1
        rule = max(2.8 * N * c3 / ((e_i1 - e_i3) * m) for m in sizes)
        if lam is None:
            lam = rule
        elif lam < rule:
            raise ValueError(f"lam must be >= {rule:.6g} (paper rule, Alg. 1 line 3), got lam={lam}")
    elif accounting == "corrected":
        rho_total = rho_for(epsilon, delta / 2.0)
        rho_svt = svt_fraction * rho_total
        rho_obj = (1.0 - svt_fraction) * (1.0 - splits) * rho_total
        rho_i1 = rho_obj / K
        rho_i2 = (1.0 - svt_fraction) * splits * rho_total / releases
        e_i1 = math.sqrt(2.0 * rho_i1)
        e_i3 = ratio * e_i1
        if lam is None:
            lam = max(N * c3 / (math.expm1(e_i1 - e_i3) * m) for m in sizes)
    else:
        raise ValueError(f"accounting must be 'paper' or 'corrected', got accounting={accounting!r}")
    mu = [lam / N + 2.0 * eta * g for g in degrees]
    if min(mu) <= 0:
        raise ValueError("the local objective must be strongly convex: give lam > 0 or a graph with edges")
    if accounting == "paper":
        e_sig = e_i3 if sigma1_uses == "epsilon_i3" else e_i1
        sigma1 = [2.0 * math.sqrt(2.0 * math.log(1.25 / delta_i1)) / (m * e_sig) for m in sizes]
    else:
        d_obj = delta / (2.0 * K)
        sigma1 = []
        for m, u in zip(sizes, mu):
            xi = P.objective_perturbation_xi(c3, m, u)
            if xi >= e_i1:
                raise ValueError(f"budget too small: the Jacobian term xi={xi:.3g} exceeds the per-step epsilon {e_i1:.3g}; raise lam or epsilon")
            sigma1.append(P.objective_perturbation_sigma(e_i1 - xi, d_obj, 2.0 * c1 / m))
        sensitivity_factor = 2.0
    sigma2 = [sensitivity_factor * beta / (math.sqrt(2.0 * rho_i2) * u) for u in mu]
    e_svt = math.sqrt(2.0 * rho_svt)
    e1, e2 = _svt_split(e_svt, cap)
    return Seed000Parameters(
        accounting, epsilon, delta, rho_total, rho_i1, rho_i2, e_i1, e_i3, delta_i1, lam, tuple(mu),
        tuple(sigma1), tuple(sigma2), e_svt, e1, e2, K, releases, float(sensitivity_factor),
    )


def seed000_guarantees(
    params: Seed000Parameters,
    *,
    sizes: Sequence[int],
    beta: float,
    c1: float = 1.0,
    c3: float = 0.25,
    paper_rho: str = "theorem",
    svt: tuple[float, float, int] | None = None,
    per_query_epsilon: float | None = None,
    queries: int = 0,
) -> tuple[list[list], dict[str, AccountingResult]]:
    """Per-agent ledgers and the ``{"paper", "corrected"}`` guarantees of a run with ``params``.

    ``svt`` = (effective ε₁, effective ε₂, cap) of the SVT actually run (IPP, threshold drawn once);
    ``per_query_epsilon``/``queries``: the alternative when the threshold is redrawn every round
    (each comparison is then a Laplace mechanism of its own).
    """
    if paper_rho not in ("theorem", "allocated"):
        raise ValueError(f"paper_rho must be 'theorem' or 'allocated', got paper_rho={paper_rho!r}")
    delta = params.delta
    K, R = params.objective_steps, params.releases
    d_obj = delta / (2.0 * K)
    ledgers = []
    for m, u, s1, s2 in zip(sizes, params.mu, params.sigma1, params.sigma2):
        xi = P.objective_perturbation_xi(c3, m, u)
        e_obj = P.objective_perturbation_epsilon(d_obj, s1, 2.0 * c1 / m, xi)
        entries = [(ApproxDPEvent(e_obj, d_obj), K), (GaussianEvent(s2, 2.0 * beta / u), R)]
        if svt is not None:
            entries.append((SparseVectorEvent(svt[0], svt[1], svt[2]), 1))
        if per_query_epsilon is not None and queries:
            entries.append((PureDPEvent(per_query_epsilon), queries))
        ledgers.append(entries)
    corrected = P.compose_approx_zcdp(ledgers, delta)
    L1 = math.log(1.0 / params.delta_i1)
    rho_step = params.epsilon_i1**2 / (4.0 * L1) if paper_rho == "theorem" else params.rho_i1
    rho_paper = R * (rho_step + params.rho_i2) + 0.5 * params.epsilon_svt**2
    paper = AccountingResult(
        epsilon=P.zcdp_epsilon_lemma28(rho_paper, delta), delta=delta, accountant="paper-zcdp",
        neighbouring=P.REPLACE_ONE,
        method="seed 000 Thm 3.1/3.3 (4.1 for IPP): rho = releases*(rho_i1 + rho_i2) [+ (eps1+eps2)^2/2], "
               "eps = rho + 2 sqrt(rho ln(1/delta))",
        is_upper_bound=False,
        notes=(
            f"rho_i1 = {'eps_i1^2/(4 ln(1/delta_i1)) (F1: invalid (eps,delta)->zCDP rule)' if paper_rho == 'theorem' else 'allocated by the pipeline'}",
            "not a valid bound: F1 (conversion), F4 (classical Gaussian constant), F5 (sensitivity beta/mu), F11 (delta_i1 not counted)",
            f"rho = {rho_paper:.6g}",
        ),
    )
    return ledgers, {"paper": paper, "corrected": corrected}


def _setup(parts, graph, epsilon, delta, iterations, eta, beta, loss):
    """Validate PP-/IPP-ADMM arguments; returns (parts, loss, sizes |D_i|, degrees |𝓑_i|)."""
    parts = _check_parts_on_graph(parts, graph)
    check_positive("epsilon", epsilon)
    check_open_unit("delta", delta)
    check_integer("iterations", iterations, minimum=1)
    check_positive("eta", eta)
    check_positive("beta", beta)
    loss = loss or Logistic()
    if not loss.smooth:
        raise ValueError("PP-/IPP-ADMM need a twice-differentiable loss (objective perturbation); got " + loss.name)
    return parts, loss, [p.n for p in parts], [int(g) for g in graph.degrees]


def _objective_step(parts, graph, loss, params, eta, beta, solver, gen):
    """``step(i, thetas, duals)``: agent i's objective-perturbation step of PP-/IPP-ADMM (seed 000 eq. 5):
    draw b_i1 ~ N(0, σ_i1² I), minimise the perturbed objective until ||∇|| ≤ β, return the solver result."""
    reg, nbrs, N = L2(), graph.neighbours, len(parts)

    def step(i: int, thetas: np.ndarray, duals: np.ndarray):
        b1 = gen.normal(0.0, params.sigma1[i], thetas.shape[1])
        F = decentralised_objective(parts[i], loss, reg, params.lam_hat / N, duals[i], thetas[i],
                                    thetas[list(nbrs[i])], eta, extra_linear=b1)
        return solve(F, thetas[i], beta, method=solver)

    return step


def pp_admm(
    parts: Sequence[Dataset],
    graph: Graph,
    *,
    epsilon: float,
    delta: float = 1e-4,
    iterations: int = 30,
    eta: float = 0.5,
    beta: float = 10 ** -3.5,
    accounting: str = "paper",
    splits: float = 0.001,
    epsilon3_ratio: float = 0.99,
    delta_i1: float = 1e-4,
    lam: float | None = None,
    sensitivity_factor: float = 1.0,
    paper_rho: str = "theorem",
    loss=None,
    test: Dataset | None = None,
    rng: np.random.Generator | int | None = 0,
    solver: str = "newton",
    record_every: int = 1,
    progress: Callable[[int, int], None] | None = None,
):
    """Run PP-ADMM (seed 000 Algorithm 1) with a total budget (ε, δ); see the module docstring.

    Parameters
    ----------
    parts, graph
        Agents' data and a connected undirected graph.
    epsilon, delta
        Total budget (per agent, replace-one); δ is also the paper's global δ.
    accounting
        ``"paper"`` (reproduce: §3.4 pipeline) or ``"corrected"`` (noise that makes the valid bound ≤ ε).
    sensitivity_factor
        F5: 1 (paper's σ_i2 with Δ = β/μ_i) or 2 (Δ = 2β/μ_i). Ignored (2) under ``"corrected"``.
    paper_rho
        F1: ``"theorem"`` (ρ_i1 = ε_i1²/(4 ln 1/δ_i1), Thm 3.1) or ``"allocated"`` (the pipeline's ρ_i1).
    lam
        λ̂ (default: the rule of the chosen accounting).

    Returns
    -------
    TrainingResult
        ``guarantees["paper"]`` (labelled, not a valid bound) and ``guarantees["corrected"]`` (valid).
    """
    parts, loss, sizes, degrees = _setup(parts, graph, epsilon, delta, iterations, eta, beta, loss)
    gen = check_rng(rng)
    N, d, T = len(parts), parts[0].d, int(iterations)
    params = seed000_parameters(
        epsilon, delta, sizes=sizes, degrees=degrees, iterations=T, eta=eta, beta=beta, accounting=accounting,
        splits=splits, epsilon3_ratio=epsilon3_ratio, delta_i1=delta_i1, lam=lam, c1=loss.c1, c3=loss.c3,
        sensitivity_factor=sensitivity_factor,
    )
    step = _objective_step(parts, graph, loss, params, eta, beta, solver, gen)
    thetas = np.zeros((N, d))
    duals = np.zeros((N, d))
    ev = Evaluator(loss, parts, test, record_every)
    ev.record(0, thetas, duals)
    max_grad = 0.0
    start = time.perf_counter()
    for t in range(T):
        new = np.empty_like(thetas)
        for i in range(N):
            res = step(i, thetas, duals)
            max_grad = max(max_grad, res.grad_norm)
            new[i] = res.theta + gen.normal(0.0, params.sigma2[i], d)
        thetas = new
        duals = decentralised_dual_update(duals, thetas, graph, eta)
        _end_round(ev, t + 1, T, thetas, duals, progress)
    seconds = time.perf_counter() - start
    ledgers, guarantees = seed000_guarantees(params, sizes=sizes, beta=beta, c1=loss.c1, c3=loss.c3, paper_rho=paper_rho)
    config = {"iterations": T, "agents": N, "eta": eta, "beta": beta, "graph": graph.to_dict(), "loss": loss.name,
              "splits": splits, "epsilon3_ratio": epsilon3_ratio, "paper_rho": paper_rho, "solver": solver,
              "max_grad_norm": max_grad, "parameters": params.to_dict()}
    notes = [f"noise calibrated by the {accounting} accounting",
             "guarantees['paper'] reproduces seed 000 Thm 3.3 and is not a valid bound (spec 000 F1, F4, F5, F11)"]
    return finish("pp-admm", thetas, thetas.mean(axis=0), ev, test, ledgers, guarantees, seconds, config, notes)
