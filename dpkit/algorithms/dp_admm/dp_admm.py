"""DP-ADMM: linearised star ADMM with Gaussian perturbation of every released iterate.

Huang, Hu, Guo, Chan-Tin & Gong, "DP-ADMM: ADMM-based distributed learning with differential
privacy", IEEE TIFS 14(6), 2019, Algorithm 3. Agents and an honest-but-curious aggregator (star).
Round k (eqs. 10a–10d, 12a), for every agent i at once:

    w_i^k  = w̃_i^{k−1} − ∇F_i^k(w̃_i^{k−1}) / (ρ + 1/η_i^k)      (linearised at the *released* point)
    w̃_i^k  = w_i^k + N(0, σ_{i,k}² I),  σ_{i,k} = z·Δ_i^k,  Δ_i^k = 2c1/(m_i(ρ + 1/η_i^k))  (Lemma 1)
    w^k    = mean_i w̃_i^k − mean_i γ_i^{k−1}/ρ ;  γ_i^k = γ_i^{k−1} − ρ(w̃_i^k − w^k)

(:mod:`dpkit.algorithms.dp_admm.steps` for one round, :func:`dpkit.algorithms.substrate.admm_loops.star_loop`
for the loop). w̃^0 = w^0 = γ^0 = 0 (data-independent). The returned models are post-processing of
the released iterates (``average``): ``"tail"`` (corrected default) each agent's w̃_i^k averaged over
the rounds k ≥ ⌊T/2⌋ and the model their mean; ``"last"`` (paper default) each agent's last w̃_i^T
and the aggregator's w^T.

Privacy. Every round of every agent is a Gaussian mechanism with noise multiplier σ/Δ = z, the
same in every round (the paper's "time-varying noise" only follows the sensitivity). Each agent's
run is the adaptive composition of T such Gaussians, exactly μ-GDP with μ = √T/z (Dong, Roth & Su
2022, Cor. 3.3); agents hold disjoint records (parallel composition, McSherry 2009, Thm 4). The
ledger records each draw with its true Lemma-1 sensitivity, so ``guarantee`` is exact in both
variants.

Variants
--------
``"corrected"`` (default): ``budget`` is the total (ε, δ) of the whole run; z is calibrated by
:func:`~dpkit.algorithms.substrate.budget.calibrate_noise` on T rounds (z = √T/μ). Default, because it is the
only one that states (and meets) a budget for the run.

``"paper"``: ``budget`` is the *per-iteration* (ε, δ) of the paper's experiments and z =
√(2 ln(1.25/δ))/ε (Theorem 1, the classical Gaussian mechanism, valid for ε ≤ 1, δ ≤ 0.01);
the paper's settings ρ = 0.1, λ/n = 1e-6, T = 100, step sizes eq. (34) with c_w = 89 (l2) or
eq. (29) with c_w = 23 (l1). ``paper_claim`` carries Theorem 1's per-iteration (ε, δ); the paper's
total (Theorem 2, ε̄ = c0·√T·ε) has an unspecified constant c0, so it cannot be evaluated.
c_w (non-private pre-training) and λ/n (non-private cross-validation) are the paper's tuned
values and are not accounted for.

Defaults of the corrected variant (data-independent: functions of n, m_i, d, ε, δ and the
logistic loss's constants c1 = 1, c3 = 1/4 with ||x|| ≤ 1)
--------------------------------------------------------------------------------------------
* agents: 20 (:data:`SPEC`). At a fixed total number of records N, agent i's sensitivity is
  2c1/(m_i(ρ + 1/η)) ∝ n/N and the aggregate averages n agents' noise, so the noise in w^k grows
  as √n/N: fewer, larger agents are more accurate (the paper's Figs. 1 and 4 show it). 20 agents
  keep m_i = 2,000 on Adult's 40,000 training rows; the paper's 100 agents (m_i = 400) stay
  below 0.82 at ε = 3 within 600 rounds (docs/reproductions/004.md).
* λ/n = max(1/N, λ_noise), at most c3 (:func:`default_regularisation`; 1/N with l1): at least
  the weight of one record, and enough to hold the noise in check along a direction no row constrains. There the
  round is w ← (1 − sλ)w̃, s = 1/(ρ + c3 + λ), and the released w̃ adds the agents' mean noise, of
  variance v = z²(2c1·s)²·Σ_i m_i⁻²/n² per coordinate: an AR(1) whose stationary variance
  v/(sλ(2 − sλ)) ≈ v/(2sλ) grows without bound as λ → 0 (exact for one agent, whose dual stays 0;
  the consensus of several agents is only approximately so). λ_noise = v/(2s·r²) with s at λ = 0
  caps that spread at r = :data:`FLAT_SPREAD` = 2. At λ/n = 1/N one agent on a table of a few
  thousand rows wandered to ‖w‖ ≈ 15 (non-private ERM: 8) and scored 1–4 points below the
  majority class on test rows where its training rows had it level. Validation splits at ε = 1
  (``benchmarks/tune_defaults.py --algorithms dp-admm --floors 1500 --scaling private --option
  flat_spread=r --per-seed``, seeds 0–15), paired against 1/N (r = inf) on Fair, PSID7682,
  NMES1988, Workinghours, Benefits: r = 2 +0.03, −0.11, +0.33, +0.11, +0.19 points; r = 4 +0.12 at
  most; r = √2 −0.27, −0.44, +0.31, −0.18, +0.49; r = 1 −0.75, −0.86, +0.01, −0.84, +0.19. Adult
  (seeds 0–3) +0.04 and +0.05 points at ε = 0.5 and 1. λ/n at ε = 1 is 1.3e-3–2.1e-3 on those
  tables (1/N: 2e-4–4e-4) and 1.6e-4 on Adult (1/N = 2.5e-5); at ε = 3 it is within 1.2× of 1/N.
  The paper's 1e-6 came from non-private cross-validation.
* ρ = 0.1, the paper's penalty (no data involved).
* step size η = 1/(c3 + c4·λ/n): the largest step the smoothness bound allows, i.e. eq. (34) in
  the limit of a large c_w (c_w bounds ||w*||; its a-priori bound c1/(λ/n) = N for the l2
  objective makes the noise term of (34) negligible). With l1, c4 = 0.
* ``average`` = ``"tail"``: every round releases fresh noise of the same multiplier, and the
  iterates of the second half are near the noise-free fixed point, so their mean averages that
  noise out. Validation splits (75 % of each seed's training rows fit, 25 % score; seeds 0–7 on
  the small tables, 0–3 on Adult; ``benchmarks/tune_defaults.py --option average=...``) at ε = 1,
  against ``"last"``: Fair +1.4, PSID7682 +1.5, NMES1988 +0.6 and Workinghours +0.8 points (private
  column ranges); Adult +0.2, 0.0 and −0.2 points at ε = 0.5, 1 and 3. Averaging the last quarter
  instead gains less on the small tables (+1.2, +1.0, +0.3, +0.1) and the same on Adult.
* rounds T = clip(⌈2000·μ⌉, 100, 600) with μ the GDP parameter of the budget (the μ with
  μ-GDP ⇒ (ε, δ)-DP; 0.27 at (1, 1e-5)): more rounds as the budget grows, since each round
  costs μ²/T. Measured on Adult: at ε = 1, 300–600 rounds are equally good; at ε = 0.5 more
  than ~300 rounds lose accuracy; beyond 600 rounds the noise-free iteration no longer improves.

>>> from dpkit.algorithms.substrate.budget import Budget
>>> from dpkit.algorithms.substrate.data import make_synthetic
>>> from dpkit.algorithms.substrate.partition import partition
>>> data = make_synthetic(400, 5, rng=0)
>>> result = train_dp_admm(partition(data, 4, rng=0), data, budget=Budget(1.0, 1e-5), iterations=20, rng=0)
>>> result.guarantee.epsilon <= 1.0, result.ledger.draws(0)
(True, 20)
"""

from __future__ import annotations

import math
from typing import Any, Callable, Sequence

import numpy as np

from dpkit._validation import check_integer, check_nonnegative, check_positive, check_rng
from dpkit.accounting.events import GaussianEvent
from dpkit.algorithms.substrate.admm_loops import PublishedAverage, round_recorder, star_loop
from dpkit.algorithms.substrate.budget import Budget, calibrate_noise
from dpkit.algorithms.substrate.data import Dataset
from dpkit.algorithms.dp_admm.steps import (
    check_star_run, iteration_epsilon, linearised_step, release_step, run_event, step_mechanisms, step_sensitivity, step_size_eq29,
    step_size_eq34, theorem1_multiplier,
)
from dpkit.algorithms.substrate.evaluation import Evaluator
from dpkit.algorithms.substrate.losses import Logistic, make_regulariser
from dpkit.algorithms.substrate.result import PaperClaim, TrainingResult, finish
from dpkit.algorithms.substrate.solvers import AgentObjectives
from dpkit.algorithms.substrate.spec import AlgorithmSpec

__all__ = ["train_dp_admm", "default_iterations", "step_sizes", "theorem1_claim", "PAPER_SETTINGS", "SPEC"]

PAPER_SETTINGS: dict[str, Any] = {"iterations": 100, "rho": 0.1, "lam": 1e-6, "c_w": {"l2": 89.0, "l1": 23.0},
                                  "step": {"l2": "eq34", "l1": "eq29"}}
"""Huang et al. 2019 §VI: t = 100, ρ = 0.1, λ/n = 1e-6, c_w = 89 (l2, eq. 34) or 23 (l1, eq. 29)."""

STEPS = ("constant", "eq34", "eq29")
MODEL_NOTES = {
    "tail": "model: mean over the agents of each agent's released iterates averaged over the rounds k >= T/2",
    "last": "model: the aggregator's last w^T (agents' models: their last released iterates)",
}
"""The result's note on how its model comes from the released iterates, per ``average``."""
MIN_ROUNDS, MAX_ROUNDS, ROUNDS_PER_MU = 100, 600, 2000.0
FLAT_SPREAD = 2.0
"""r of :func:`default_regularisation`: the stationary sd of the noise along an unconstrained direction."""


def default_iterations(budget: Budget) -> int:
    """Rounds of the corrected variant: clip(⌈2000·μ⌉, 100, 600), μ the GDP parameter of ``budget``
    (1/z for one Gaussian of multiplier z calibrated to the budget).

    >>> default_iterations(Budget(1.0, 1e-5)), default_iterations(Budget(3.0, 1e-5))
    (537, 600)
    """
    mu = 1.0 / calibrate_noise(lambda z: GaussianEvent(z), budget).parameter
    return int(min(MAX_ROUNDS, max(MIN_ROUNDS, math.ceil(ROUNDS_PER_MU * mu))))


def default_regularisation(sizes: Sequence[float], noise_multiplier: float, rho: float, *, c1: float = 1.0,
                           c3: float = 0.25, spread: float = FLAT_SPREAD) -> float:
    """λ/n of the corrected variant: max(1/N, v/(2s·r²)), s = 1/(ρ + c3), v = z²(2c1·s)²·Σ_i m_i⁻²/n²
    the per-coordinate variance of the agents' mean noise in one round (module docstring; r = ``spread``),
    at most c3: beyond the loss's own curvature bound the regulariser would outweigh every record, and
    below it the released noise z·Δ = 2c1·z/(m(ρ + c3 + λ)) still grows with z, so it shrinks as the budget grows.
    Public quantities only: the agents' sizes m_i, z, ρ and the loss's constants.

    >>> round(default_regularisation([2492], noise_multiplier=84.0, rho=0.1), 5)  # one agent, a small table
    0.00162
    >>> default_regularisation([2000] * 20, noise_multiplier=84.0, rho=0.1) > 1 / 40_000
    True
    """
    sizes = np.asarray(sizes, dtype=float)
    s = 1.0 / (rho + c3)
    variance = noise_multiplier ** 2 * (2.0 * c1 * s) ** 2 * float(np.sum(sizes ** -2.0)) / sizes.size ** 2
    return min(c3, max(1.0 / float(sizes.sum()), variance / (2.0 * s * spread ** 2)))


def step_sizes(step: str, sizes: Sequence[float], iterations: int, *, noise_multiplier: float, delta: float,
               d: int, lam: float, c_w: float | None, regulariser: str, c1: float = 1.0,
               c3: float = 0.25) -> np.ndarray:
    """``(N, T)`` step sizes η_i^k.

    ``"constant"``: 1/(c3 + c4·λ/n) (c4 = 1 for l2, 0 for l1); ``"eq34"`` / ``"eq29"``: Huang et al.
    2019 eqs. (34) / (29) at the per-iteration ε = √(2 ln(1.25/δ))/z that Theorem 1 assigns to the
    noise multiplier z (:func:`~dpkit.algorithms.dp_admm.steps.iteration_epsilon`).
    """
    c4 = 1.0 if regulariser == "l2" else 0.0
    n = len(sizes)
    if step == "constant":
        return np.full((n, iterations), 1.0 / (c3 + c4 * lam))
    ks = np.arange(1, iterations + 1)
    eps_it = iteration_epsilon(noise_multiplier, delta)
    rule = step_size_eq34 if step == "eq34" else step_size_eq29
    extra = {"c3": c3, "c4": c4} if step == "eq34" else {}
    return np.stack([rule(ks, m=m, epsilon=eps_it, delta=delta, dp=d, c_w=c_w, lam=lam, c1=c1, **extra) for m in sizes])


def theorem1_claim(noise_multiplier: float, delta: float) -> PaperClaim:
    """The paper's claim for a run with noise multiplier z: Theorem 1's per-iteration (ε, δ) with
    ε = √(2 ln(1.25/δ))/z (valid for ε ≤ 1, δ ≤ 0.01); the run's total is not stated."""
    eps_it = iteration_epsilon(noise_multiplier, delta)
    valid = eps_it <= 1.0 and delta <= 0.01
    notes = ("a per-iteration claim: each of the T released iterates is (eps, delta)-DP; the paper's total over T "
             "iterations (Theorem 2, c0*sqrt(T)*eps) has no value for c0, so the run's total is the ledger's "
             "guarantee",)
    if not valid:
        notes += ("outside Theorem 1's range (eps <= 1, delta <= 0.01)",)
    return PaperClaim(eps_it, delta, "Huang et al. 2019, Theorem 1 (eq. 14), per iteration", valid, notes)


def train_dp_admm(
    parts: Sequence[Dataset], test: Dataset | None = None, graph: Any = None, *, budget: Budget,
    iterations: int | None = None, variant: str = "corrected", rng: np.random.Generator | int | None = None,
    progress: Callable[[int, int], None] | None = None, rho: float | None = None, lam: float | None = None,
    regulariser: str = "l2", step: str | None = None, c_w: float | None = None, record_every: int | None = None,
    average: str | None = None, flat_spread: float | None = None,
) -> TrainingResult:
    """Run DP-ADMM (Huang et al. 2019, Algorithm 3); see the module docstring.

    Parameters
    ----------
    parts
        One dataset per agent (rows with ||x|| ≤ 1, labels ±1).
    test
        Held-out data, used only to score the returned model.
    graph
        Must be None (star topology: agents and an aggregator).
    budget
        ``"corrected"``: total (ε, δ) of the run; ``"paper"``: per-iteration (ε, δ).
    iterations
        Rounds T (None: :func:`default_iterations` / the paper's 100).
    variant
        ``"corrected"`` or ``"paper"``.
    rho, lam
        ADMM penalty ρ and per-agent regulariser weight λ/n (None: the variant's default).
    regulariser
        ``"l2"`` (½||w||², eq. 39) or ``"l1"`` (||w||₁ with sgn, eq. 38).
    step
        ``"constant"``, ``"eq34"`` or ``"eq29"`` (None: ``"constant"`` / the paper's rule).
    c_w
        The ||w*|| bound of eqs. (29) and (34) (None: the paper's 89 or 23; unused by ``"constant"``).
    record_every
        Record the history every this many rounds (None: about 50 records).
    average
        The returned models from the released iterates: ``"tail"`` each agent's mean over the rounds
        k ≥ ⌊T/2⌋ (and the model their mean), ``"last"`` its last one (and the aggregator's w^T)
        (None: ``"tail"`` corrected, ``"last"`` paper).
    flat_spread
        r of the corrected variant's default λ/n with ``"l2"`` (:func:`default_regularisation`; None:
        :data:`FLAT_SPREAD`); only when ``lam`` is None. With ``"l1"`` the default λ/n stays 1/N (the
        sign's constant pull is another drift than the AR(1) the rule bounds).
    """
    parts = check_star_run(parts, graph, budget, variant, SPEC.variants, "DP-ADMM")
    reg = make_regulariser(regulariser)
    paper = variant == "paper"
    sizes = [p.n for p in parts]
    n, d, total = len(parts), parts[0].d, sum(sizes)
    rho = check_positive("rho", PAPER_SETTINGS["rho"] if rho is None else rho)
    if not 2.0 / (max(sizes) * rho) > 0.0:  # the bound 2c1/(m rho) on the step sensitivity underflows
        raise ValueError(f"rho={rho} is too large: the step sensitivity 2c1/(m(rho + 1/eta)) (Huang et al. 2019, "
                         f"Lemma 1) underflows to 0 for m={max(sizes)}; choose a smaller rho")
    lam_default = lam is None and not paper and regulariser == "l2"
    if flat_spread is not None and not lam_default:
        raise ValueError("flat_spread sets the corrected variant's default lam with the l2 regulariser; it cannot be "
                         "combined with lam, regulariser='l1' or variant='paper'")
    flat_spread = check_positive("flat_spread", FLAT_SPREAD if flat_spread is None else flat_spread, allow_inf=True)
    lam_rule = f"max(1/N, v/(2 s r^2)), r = {flat_spread:g}" if lam_default else "given" if lam is not None else "1/N"
    lam = check_nonnegative("lam", (PAPER_SETTINGS["lam"] if paper else 1.0 / total) if lam is None else lam)
    step = (PAPER_SETTINGS["step"][regulariser] if paper else "constant") if step is None else step
    if step not in STEPS:
        raise ValueError(f"step must be one of {STEPS}, got step={step!r}")
    if step == "eq34" and regulariser != "l2":
        raise ValueError("step 'eq34' (Theorem 4) needs the smooth l2 regulariser; use 'eq29' or 'constant'")
    c_w = check_positive("c_w", PAPER_SETTINGS["c_w"][regulariser] if c_w is None else c_w)
    if iterations is None:
        iterations = PAPER_SETTINGS["iterations"] if paper else default_iterations(budget)
    T = check_integer("iterations", iterations, minimum=1)
    returned = PublishedAverage(average if average is not None else ("last" if paper else "tail"), T)
    loss = Logistic()

    def etas_for(z: float) -> np.ndarray:
        return step_sizes(step, sizes, T, noise_multiplier=z, delta=budget.delta, d=d, lam=lam, c_w=c_w,
                          regulariser=regulariser, c1=loss.c1, c3=loss.c3)

    if paper:
        z = theorem1_multiplier(budget.epsilon, budget.delta)
    else:
        z = calibrate_noise(lambda z: run_event(z, step_sensitivity(sizes[0], rho, etas_for(z)[0], loss.c1)), budget,
                            lower=1.0, upper=100.0).parameter
        if lam_default:  # z does not depend on λ (the run is √T/z-GDP whatever the sensitivities)
            lam = default_regularisation(sizes, z, rho, c1=loss.c1, c3=loss.c3, spread=flat_spread)
    etas = etas_for(z)
    gen = check_rng(rng)
    ledger = budget.ledger(n)
    F = AgentObjectives.from_parts(parts, loss, regulariser=reg, reg_weight=lam)
    every = max(1, T // 50) if record_every is None else check_integer("record_every", record_every, minimum=1)
    evaluator = Evaluator(loss, parts, test, every)
    evaluator.record(0, np.zeros((n, d)), np.zeros((n, d)))

    def local_step(k: int, objective: AgentObjectives, previous: np.ndarray) -> tuple[np.ndarray, float]:
        return linearised_step(objective, previous, etas[:, k]), 0.0

    def publish(k: int, local: np.ndarray) -> np.ndarray:
        released = release_step(local, step_mechanisms(sizes, rho, etas[:, k], z, loss.c1), rng=gen, ledger=ledger)
        returned.add(k, released)
        return released

    state = star_loop(F, rho=rho, iterations=T, local_step=local_step, publish=publish,
                      on_round=round_recorder(evaluator, T, progress))
    sens = step_sensitivity(np.asarray(sizes, float)[:, None], rho, etas, loss.c1)
    config = {
        "iterations": T, "agents": n, "records": total, "rho": rho, "lam": lam, "regulariser": regulariser,
        "loss": loss.name, "step": step, "c_w": c_w if step != "constant" else None, "noise_multiplier": z,
        "epsilon_per_iteration": iteration_epsilon(z, budget.delta), "budget": budget.to_dict(),
        "budget_meaning": "per iteration (Theorem 1)" if paper else "total over the run",
        "eta_first_last": [float(etas[0, 0]), float(etas[0, -1])],
        "sigma_first_last": [float(z * sens[0, 0]), float(z * sens[0, -1])], "average": returned.how,
        "defaults": ("Huang et al. 2019 Sec. VI (rho, lam, c_w tuned non-privately in the paper)" if paper else
                     f"rho = 0.1 (paper); lam = {lam_rule}; eta = 1/(c3 + c4*lam); T = clip(ceil(2000*mu), 100, 600)"),
    }
    notes = (MODEL_NOTES[returned.how],)
    if paper:
        notes += ("c_w and lam/n are the paper's non-privately tuned values; their tuning is not accounted",)
    models = returned.models()
    model = state.w if returned.how == "last" else models.mean(axis=0)
    return finish("dp-admm", variant, models, model, evaluator, test, ledger, budget.delta, state.seconds,
                  config, paper_claim=theorem1_claim(z, budget.delta), notes=notes)


SPEC = AlgorithmSpec(
    name="dp-admm", runner=train_dp_admm, topology="star", agents=20, n_train=40_000, delta=1e-5,
    description="DP-ADMM: linearised star ADMM with Gaussian-perturbed iterates (Huang et al., IEEE TIFS 2019)",
    options=("rho", "lam", "regulariser", "step", "c_w", "record_every", "average", "flat_spread"),
)
