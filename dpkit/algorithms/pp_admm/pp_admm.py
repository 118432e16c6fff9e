"""PP-ADMM: decentralised ADMM that publishes noisy approximate local minimisers.

Ding, Wang, Liang, Bi & Pan, "Towards Plausible Differentially Private ADMM Based Distributed
Machine Learning", CIKM 2020, Algorithm 1. Round t, agent i (synchronous, over a connected graph):

1. approximately minimise the local objective (eq. 5)
   f_i(θ) + (2λ_i^t + b_i1)ᵀθ + η Σ_{j∈𝓑_i} ‖½(θ_i^t + θ_j^t) − θ‖², f_i = mean loss + (λ̂/N)½‖θ‖²,
   until ‖∇‖ ≤ β (the optimizer 𝒪 of §3.1);
2. publish θ_i^{t+1} = θ̂ + b_i2, b_i2 ~ N(0, σ_i2² I) (lines 9–10);
3. λ_i^{t+1} = λ_i^t + (η/2) Σ_j (θ_i^{t+1} − θ_j^{t+1}) with the published values (lines 15–17).

Steps 1 and 3 are :func:`~dpkit.algorithms.substrate.admm_loops.decentralised_loop`; step 2 is its ``publish``
hook (:func:`publish_round`), one mechanism ``release`` per agent and round. The returned model is
the average of the agents' last published values (the paper does not say which model it scores).

Variants
--------
``"corrected"`` (default: its guarantee is the budget, whatever the data). No b_i1 is drawn
(σ_i1 = 0). Conditionally on the published history the local objective is μ_i-strongly convex,
μ_i = λ̂/N + 2η|𝓑_i|, and replacing one of agent i's |D_i| records changes its gradient by at
most 2c₁/|D_i| (|ℓ′| ≤ c₁ = 1, ‖x‖ ≤ 1), so the exact minimiser moves by at most
2c₁/(|D_i|μ_i) (Chaudhuri, Monteleoni & Sarwate 2011, Cor. 8); any θ̂ with ‖∇‖ ≤ β lies within
β/μ_i of it. The published θ̂ + b_i2 is therefore a Gaussian mechanism of sensitivity

    Δ_i = 2(c₁/|D_i| + β)/μ_i                                  (:func:`release_sensitivity`),

the T rounds compose adaptively (exact GDP: Dong, Roth & Su 2022, Cor. 3.3), and agents hold
disjoint records (parallel composition; other agents use agent i's data only through its
releases). The noise multiplier z = σ_i2/Δ_i is calibrated once on the whole planned run of T
releases (:func:`calibrate_multiplier`). b_i1 buys nothing in this analysis, so it is not drawn.

``"paper"``: the paper's §3.4 budget pipeline (:func:`paper_parameters`): ρ_total = ε²/(4 ln 1/δ)
(an invalid (ε, δ) → zCDP rule, :func:`~dpkit.accounting.zcdp.ding_approx_dp_to_zcdp`),
ρ_i1 = (1 − splits)ρ_total/T, ρ_i2 = splits·ρ_total/T, ε_i1 = ρ_i1 + 2√(ρ_i1 ln 1/δ_i1),
ε_i3 = 0.99 ε_i1, σ_i1 and λ̂ of Alg. 1 lines 3 and 6
(:func:`~dpkit.mechanisms.erm.ding_objective_sigma`, :func:`~dpkit.mechanisms.erm.ding_min_regularization`),
σ_i2 = β/(√(2ρ_i2) μ_i). b_i1 is drawn by a
:class:`~dpkit.mechanisms.erm.GaussianObjectivePerturbation` (its event accounts the exact
perturbed minimiser θ̃ by its RDP curve, Jacobian term included) and b_i2 by a
:class:`~dpkit.mechanisms.gaussian.GaussianMechanism` with the *true* sensitivity 2β/μ_i given θ̃
(two compliant optimisers can return points 2β/μ_i apart; the paper uses β/μ_i). Releasing θ̃
and then θ̂ + b_i2 bounds releasing θ̂ + b_i2 alone, so the ledger's guarantee is honest. The
paper's own claim (Theorems 3.1 and 3.3: ρ = T(ε_i1²/(4 ln 1/δ_i1) + ρ_i2), ε = ρ + 2√(ρ ln 1/δ))
is ``paper_claim``; it is not a valid bound (invalid conversion rule, classical Gaussian constant
outside ε < 1, sensitivity β/μ_i, per-step δ_i1 not counted).

Defaults of the corrected variant (data-independent, from n, d, ε and the loss constants;
``docs/algorithms/pp-admm.md`` shows the validation sweeps behind the rules)
-------------------------------------------------------------------------------------------
* agents N = 5 (the paper's setting; |D_i| ≈ 7000 on Adult) on a random connected graph;
* ``iterations`` T = :data:`ROUNDS` = 20: every round costs privacy (z grows like √T), but
  ``default_eta`` keeps each release's noise at σ₀ (a larger z buys a larger η) and the returned
  tail mean averages the releases of the second half, so more rounds cut the returned model's
  noise. Validation at ε = 1 (seeds 0–23 on Fair, PSID7682, NMES1988 and Workinghours, 0–15 on
  Adult; paired against the former T = 5): +0.46, +1.34, +0.48, 0.00 and +0.42 points; at ε = 0.5
  and 3 on Adult +0.71 and +0.33 (``docs/algorithms/pp-admm.md``);
* ``eta`` = :func:`default_eta`: the proximal weight 2η|𝓑_i| sets μ_i and thus Δ_i; the rule
  keeps it comparable to the loss curvature c₃/d of a normalised record (‖x‖ ≤ 1 spread over d
  features), so each round still moves the local solution while Δ_i stays ~1/(|D_i|η);
* ``lam`` λ̂ = :data:`LAMBDA` (λ̂/N per agent: a weak ridge; the proximal term already makes the
  local problems strongly convex);
* ``beta`` = :func:`default_beta` = 0.01·c₁/min_i |D_i|: the solver tolerance adds 2β/μ_i to Δ_i,
  here 1 % of the data term (Newton reaches it in a few more steps);
* ``average`` = ``"tail"``: the returned models are each agent's published values averaged over
  the rounds t ≥ ⌊T/2⌋ (post-processing; ``"last"`` takes the last ones), chosen on validation
  splits (``docs/algorithms/pp-admm.md``).

Paper variant defaults: T = 30, η = 0.5, β = 10^-3.5, splits = 0.001, ε_i3 = 0.99 ε_i1,
δ_i1 = 1e-4 (Ding et al. 2020, §5), λ̂ from the rule.

Notation: the paper's c₁ bounds ℓ″ (1/4 for the logistic loss): the loss object's ``c3``; the
gradient bound |ℓ′| ≤ 1 is the loss's ``c1``.

Examples: ``docs/algorithms/pp-admm.md`` (doctested).
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, Callable, Sequence

import numpy as np

from dpkit._validation import check_integer, check_open_unit, check_positive, check_rng, check_unit_interval
from dpkit.accounting.calibration import CalibrationResult
from dpkit.accounting.events import GaussianEvent, PrivacyEvent, repeat
from dpkit.accounting.zcdp import ding_approx_dp_to_zcdp, zcdp_to_epsilon
from dpkit.algorithms.substrate.admm_loops import (
    PublishedAverage,
    check_parts_on_graph,
    decentralised_loop,
    round_recorder,
)
from dpkit.algorithms.substrate.budget import Budget, calibrate_noise
from dpkit.algorithms.substrate.data import Dataset
from dpkit.algorithms.substrate.evaluation import Evaluator
from dpkit.algorithms.substrate.graphs import Graph
from dpkit.algorithms.substrate.losses import Logistic
from dpkit.algorithms.substrate.result import PaperClaim, TrainingResult, finish
from dpkit.algorithms.substrate.solvers import AgentObjectives
from dpkit.algorithms.substrate.spec import AlgorithmSpec, graph_runner
from dpkit.mechanisms.base import Mechanism
from dpkit.mechanisms.erm import GaussianObjectivePerturbation, ding_min_regularization, ding_objective_sigma
from dpkit.mechanisms.gaussian import GaussianMechanism
from dpkit.mechanisms.ledger import PrivacyLedger

__all__ = [
    "AGENTS", "ROUNDS", "LAMBDA", "MODEL_NOTES", "NOISE_STD", "PAPER_SETTING", "default_eta", "default_beta", "release_sensitivity",
    "calibrate_multiplier", "release_mechanisms", "publish_round", "PaperParameters", "paper_parameters",
    "paper_mechanisms", "paper_output_mechanism", "paper_claim", "local_objectives", "train_pp_admm", "SPEC",
]

AGENTS = 5
"""Default number of agents (Ding et al. 2020, §5: N = 5)."""
ROUNDS = 20
"""Default planned rounds T of the corrected variant (module docstring: validation sweep)."""
LAMBDA = 1e-3
"""Default λ̂ of the corrected variant (each agent uses λ̂/N)."""
MODEL_NOTES = {
    "tail": "model: average over the agents of each agent's published values averaged over the rounds t >= T/2",
    "last": "model: average of the agents' last published values",
}
"""The result's note on how its model comes from the published values, per ``average``."""
NOISE_STD = 0.5
"""Default per-coordinate release noise σ_i2 that :func:`default_eta` aims at (validation sweeps in
``docs/algorithms/pp-admm.md``: 0.5 and 1 tie on Adult, 0.5 wins on the small tables)."""
PAPER_SETTING = {"iterations": 30, "eta": 0.5, "beta": 10 ** -3.5, "splits": 0.001, "epsilon3_ratio": 0.99,
                 "delta_i1": 1e-4}
"""The paper variant's defaults (Ding et al. 2020, §5)."""


def default_eta(noise_multiplier: float, sizes: Sequence[int], degrees: Sequence[int], beta: float, c1: float = 1.0,
                noise_std: float = 1.0) -> float:
    """η such that the release noise σ_i2 = zΔ_i is about ``noise_std`` per coordinate.

    Δ_i = 2(c₁/|D_i| + β)/μ_i with μ_i ≈ 2η|𝓑_i|, so σ_i2 = ``noise_std`` for the mean |D_i| and
    mean degree at η = z(c₁/m̄ + β)/(noise_std·deg̅). A larger η shrinks the noise but also each
    round's step (the proximal weight freezes the local solution); half a unit of noise per
    coordinate, on the scale of the coefficients of a logistic model on ‖x‖ ≤ 1 features, is the
    balance the validation sweeps of ``docs/algorithms/pp-admm.md`` pick (on Adult 0.5 and 1 tie; on
    tables with 1,000–2,500 rows per agent 0.5 gains up to 2 points). Data-independent: z comes from
    (ε, δ, T), the rest from the sizes and the graph.

    >>> round(default_eta(10.0, [1000, 1000], [1, 1], 0.0), 6)
    0.01
    """
    z = check_positive("noise_multiplier", noise_multiplier)
    m = float(np.mean([check_integer("sizes[i]", v, minimum=1) for v in sizes]))
    degree = float(np.mean([check_integer("degrees[i]", g, minimum=1) for g in degrees]))
    return z * (check_positive("c1", c1) / m + beta) / (check_positive("noise_std", noise_std) * degree)


def default_beta(sizes: Sequence[int], c1: float = 1.0) -> float:
    """β = 0.01·c₁/min_i |D_i|: the solver tolerance's share 2β/μ_i of Δ_i is 1 % of the data term.

    >>> default_beta([1000, 500])
    2e-05
    """
    return 0.01 * check_positive("c1", c1) / min(check_integer("sizes[i]", m, minimum=1) for m in sizes)


def release_sensitivity(n_samples: int, mu: float, beta: float, c1: float = 1.0) -> float:
    """Δ_i = 2(c₁/|D_i| + β)/μ_i: replace-one L2 sensitivity of an approximate local minimiser.

    The exact minimiser of a μ-strongly convex objective whose gradient changes by ≤ 2c₁/|D_i|
    moves by ≤ 2c₁/(|D_i|μ) (Chaudhuri, Monteleoni & Sarwate 2011, Cor. 8); each approximate
    minimiser (‖∇‖ ≤ β) is within β/μ of its exact one. Rounded up.

    >>> round(release_sensitivity(100, 0.5, 0.0), 12)
    0.04
    """
    n_samples = check_integer("n_samples", n_samples, minimum=1)
    mu = check_positive("mu", mu)
    if beta < 0:
        raise ValueError(f"beta must be >= 0, got beta={beta}")
    return math.nextafter(2.0 * (check_positive("c1", c1) / n_samples + beta) / mu, math.inf)


def run_event(noise_multiplier: float, releases: int) -> PrivacyEvent:
    """One agent's whole corrected run: ``releases`` Gaussian releases with σ/Δ = ``noise_multiplier``."""
    return repeat(GaussianEvent(sigma=noise_multiplier, sensitivity=1.0), check_integer("releases", releases, minimum=1))


def calibrate_multiplier(budget: Budget, releases: int) -> CalibrationResult:
    """The smallest z = σ_i2/Δ_i with which ``releases`` Gaussian releases per agent meet ``budget``.

    Calibrated on the whole planned run by the tightest accountant (exact GDP for Gaussians);
    every agent uses the same z, so each one's run has exactly the calibrated guarantee.
    """
    return calibrate_noise(lambda z: run_event(z, releases), budget, lower=0.1, upper=100.0)


def release_mechanisms(sizes: Sequence[int], mu: Sequence[float], beta: float, noise_multiplier: float,
                       c1: float = 1.0) -> list[GaussianMechanism]:
    """Agent i's release mechanism of the corrected variant: σ_i2 = zΔ_i with Δ_i of :func:`release_sensitivity`."""
    out = []
    for m, u in zip(sizes, mu):
        sens = release_sensitivity(m, u, beta, c1)
        out.append(GaussianMechanism(sigma=noise_multiplier * sens, sensitivity=sens))
    return out


def publish_round(solutions: np.ndarray, mechanisms: Sequence[Mechanism], *, rng: np.random.Generator,
                  ledger: PrivacyLedger) -> np.ndarray:
    """θ_i^{t+1} = θ̂_i + b_i2 for every agent (Ding et al. 2020, Alg. 1 lines 9–10): one
    ``release`` of agent i's mechanism per agent, recorded in ``ledger``."""
    return np.stack([mech.release(solutions[i], rng=rng, ledger=ledger, agent=i) for i, mech in enumerate(mechanisms)])


@dataclasses.dataclass(frozen=True)
class PaperParameters:
    """The paper's §3.4 budget pipeline for one run (per-agent tuples in agent order).

    ``releases`` is the number of output releases the per-release budget is spread over (T for
    PP-ADMM, c for IPP-ADMM); ``rho_svt`` the SVT's share (IPP-ADMM; 0 for PP-ADMM).
    """

    epsilon: float
    delta: float
    releases: int
    rho_total: float
    rho_svt: float
    rho_i1: float
    rho_i2: float
    epsilon_i1: float
    epsilon_i3: float
    delta_i1: float
    lam_hat: float
    mu: tuple[float, ...]
    sigma1: tuple[float, ...]
    sigma2: tuple[float, ...]

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def paper_parameters(
    epsilon: float, delta: float, *, sizes: Sequence[int], degrees: Sequence[int], releases: int, eta: float,
    beta: float, splits: float = 0.001, epsilon3_ratio: float = 0.99, delta_i1: float = 1e-4,
    svt_fraction: float = 0.0, c3: float = 0.25,
) -> PaperParameters:
    """Noise scales of Ding et al. (2020, §5 "privacy budget splitting") from a target (ε, δ).

    ρ_total = ε²/(4 ln 1/δ) (warns :class:`~dpkit.accounting.base.PaperRuleWarning`); a share
    ``svt_fraction`` goes to the SVT (IPP-ADMM; the paper gives none), the rest is spread over
    ``releases``: ρ_i1 = (1 − splits)ρ/releases, ρ_i2 = splits·ρ/releases; ε_i1 by Lemma 2.8
    (ρ + 2√(ρ ln 1/δ_i1)), ε_i3 = ratio·ε_i1, σ_i1 (Alg. 1 line 6), λ̂ = the rule of line 3 at
    equality, μ_i = λ̂/N + 2η|𝓑_i|, σ_i2 = β/(√(2ρ_i2) μ_i) (line 9).
    """
    releases = check_integer("releases", releases, minimum=1)
    eta = check_positive("eta", eta)
    beta = check_positive("beta", beta)
    splits = check_unit_interval("splits", splits, include_zero=False, include_one=False)
    ratio = check_unit_interval("epsilon3_ratio", epsilon3_ratio, include_zero=False, include_one=False)
    delta_i1 = check_open_unit("delta_i1", delta_i1)
    svt_fraction = check_unit_interval("svt_fraction", svt_fraction, include_one=False)
    sizes = [check_integer("sizes[i]", m, minimum=1) for m in sizes]
    degrees = [check_integer("degrees[i]", g, minimum=1) for g in degrees]
    N = len(sizes)
    rho_total = ding_approx_dp_to_zcdp(epsilon, delta)
    rho_svt = svt_fraction * rho_total
    per_release = (rho_total - rho_svt) / releases
    rho_i1, rho_i2 = (1.0 - splits) * per_release, splits * per_release
    e_i1 = zcdp_to_epsilon(rho_i1, delta_i1, "classic")
    e_i3 = ratio * e_i1
    lam = max(ding_min_regularization(e_i1, e_i3, m, N, c3) for m in sizes)
    mu = tuple(lam / N + 2.0 * eta * g for g in degrees)
    sigma1 = tuple(ding_objective_sigma(e_i3, delta_i1, m) for m in sizes)
    sigma2 = tuple(beta / (math.sqrt(2.0 * rho_i2) * u) for u in mu)
    return PaperParameters(epsilon, delta, releases, rho_total, rho_svt, rho_i1, rho_i2, e_i1, e_i3, delta_i1, lam,
                           mu, sigma1, sigma2)


def paper_mechanisms(params: PaperParameters, sizes: Sequence[int], beta: float, c1: float = 1.0,
                     c3: float = 0.25) -> tuple[list[GaussianObjectivePerturbation], list[GaussianMechanism]]:
    """Agent i's b_i1 and b_i2 mechanisms under the paper's calibration, with the true sensitivities.

    b_i1: :class:`~dpkit.mechanisms.erm.GaussianObjectivePerturbation` (σ_i1, |D_i|, μ_i);
    b_i2: :class:`~dpkit.mechanisms.gaussian.GaussianMechanism` (σ_i2, 2β/μ_i), the sensitivity of
    an approximate minimiser given the exact perturbed one θ̃ (the paper's σ_i2 assumes β/μ_i).
    """
    objective = [GaussianObjectivePerturbation(sigma=s, n_samples=m, strong_convexity=u, lipschitz=c1, smoothness=c3)
                 for s, m, u in zip(params.sigma1, sizes, params.mu)]
    return objective, [paper_output_mechanism(beta, u, params.rho_i2) for u in params.mu]


def paper_output_mechanism(beta: float, mu: float, rho: float) -> GaussianMechanism:
    """b_i2 of Ding et al. (2020, Alg. 1 line 9): σ_i2 = β/(√(2ρ_i2) μ_i), recorded at the true
    sensitivity 2β/μ_i (so the step is 4ρ_i2-zCDP, not the claimed ρ_i2).

    >>> mech = paper_output_mechanism(1e-3, 0.5, 0.125)
    >>> round(mech.sigma, 6), round(mech.rho / 0.125, 6)
    (0.004, 4.0)
    """
    beta = check_positive("beta", beta)
    mu = check_positive("mu", mu)
    sigma = beta / (math.sqrt(2.0 * check_positive("rho", rho)) * mu)
    return GaussianMechanism(sigma=sigma, sensitivity=math.nextafter(2.0 * beta / mu, math.inf))


def paper_claim(params: PaperParameters, *, svt_epsilon: float = 0.0) -> PaperClaim:
    """Ding et al. (2020) Theorem 3.1/3.3 (Theorem 4.1 with ``svt_epsilon`` = ε₁ + ε₂ for IPP-ADMM).

    ρ = (ε₁+ε₂)²/2 + releases·(ε_i1²/(4 ln 1/δ_i1) + ρ_i2), ε = ρ + 2√(ρ ln 1/δ). Not a valid bound.
    """
    rho_step = ding_approx_dp_to_zcdp(params.epsilon_i1, params.delta_i1)
    rho = 0.5 * svt_epsilon**2 + params.releases * (rho_step + params.rho_i2)
    theorem = "Theorem 4.1" if svt_epsilon else "Theorems 3.1 and 3.3"
    return PaperClaim(
        epsilon=zcdp_to_epsilon(rho, params.delta, "classic"), delta=params.delta,
        rule=f"Ding et al. 2020, {theorem}: rho = releases*(eps_i1^2/(4 ln(1/delta_i1)) + rho_i2)"
             + (" + (eps1+eps2)^2/2" if svt_epsilon else "") + ", eps = rho + 2 sqrt(rho ln(1/delta))",
        valid=False,
        notes=("(eps, delta)-DP => eps^2/(4 ln(1/delta))-zCDP is not a valid conversion (Lemma 2.7 read backwards)",
               "sigma_i1 uses the classical Gaussian constant, proven only for eps < 1, and no proof is published",
               "sigma_i2 assumes sensitivity beta/mu_i; two compliant optimisers can be 2 beta/mu_i apart",
               "the per-step delta_i1 never enters the final delta",
               f"rho = {rho:.6g}"),
    )


def local_objectives(parts: Sequence[Dataset], lam: float, loss=None) -> AgentObjectives:
    """f_i(θ) = mean logistic loss + (λ̂/N)·½‖θ‖² for every agent (Ding et al. 2020, eq. 2)."""
    return AgentObjectives.from_parts(parts, loss or Logistic(), reg_weight=check_positive("lam", lam) / len(parts))


def _check_common(parts, graph, budget, variant) -> tuple[list[Dataset], list[int], list[int]]:
    """The checked agents' datasets, their sizes m_i and their degrees on ``graph`` (PP-ADMM and IPP-ADMM)."""
    parts = check_parts_on_graph(parts, graph)
    if not isinstance(budget, Budget):
        raise TypeError(f"budget must be a Budget, got {type(budget).__name__}")
    if variant not in ("corrected", "paper"):
        raise ValueError(f"variant must be 'corrected' or 'paper', got variant={variant!r}")
    if (graph.degrees < 1).any():
        raise ValueError("every agent needs at least one neighbour (connected graph)")
    return parts, [p.n for p in parts], [int(g) for g in graph.degrees]


def train_pp_admm(
    parts: Sequence[Dataset], graph: Graph, *, budget: Budget, variant: str = "corrected",
    iterations: int | None = None, test: Dataset | None = None, rng: np.random.Generator | int | None = 0,
    progress: Callable[[int, int], None] | None = None, eta: float | None = None, lam: float | None = None,
    beta: float | None = None, noise_std: float | None = None, average: str = "tail",
) -> TrainingResult:
    """Train PP-ADMM (module docstring) and return a :class:`~dpkit.algorithms.substrate.result.TrainingResult`.

    Parameters
    ----------
    parts, graph
        The agents' datasets (‖x‖ ≤ 1, labels ±1) and their connected graph.
    budget
        Total (ε, δ) per record over the whole run (replace-one). The paper variant uses it as the
        paper's target (ε, δ).
    variant
        ``"corrected"`` (default) or ``"paper"``.
    iterations
        Planned rounds T (None: :data:`ROUNDS`, or 30 for the paper variant).
    eta, lam, beta
        ADMM penalty η, regulariser λ̂ (corrected only; the paper variant derives it) and solver
        tolerance β (None: the variant's default, see the module docstring).
    average
        The returned models from the published values: ``"tail"`` (default) each agent's mean over
        the rounds t ≥ ⌊T/2⌋, ``"last"`` its last value
        (:class:`~dpkit.algorithms.substrate.admm_loops.PublishedAverage`).
    """
    parts, sizes, degrees = _check_common(parts, graph, budget, variant)
    paper = variant == "paper"
    gen = check_rng(rng)
    loss = Logistic()
    N, d = len(parts), parts[0].d
    T = check_integer("iterations", iterations if iterations is not None else
                      (PAPER_SETTING["iterations"] if paper else ROUNDS), minimum=1)
    beta = check_positive("beta", beta if beta is not None else
                          (PAPER_SETTING["beta"] if paper else default_beta(sizes, loss.c1)))
    ledger = budget.ledger(N)
    config: dict[str, Any] = {"iterations": T, "agents": N, "beta": beta, "budget": budget.to_dict(),
                              "graph": graph.to_dict(), "loss": loss.name}
    perturb = None
    claim = None
    if paper:
        if lam is not None or noise_std is not None:
            raise ValueError("lam and noise_std apply to the corrected variant only")
        eta = check_positive("eta", eta if eta is not None else PAPER_SETTING["eta"])
        params = paper_parameters(budget.epsilon, budget.delta, sizes=sizes, degrees=degrees, releases=T, eta=eta,
                                  beta=beta, splits=PAPER_SETTING["splits"],
                                  epsilon3_ratio=PAPER_SETTING["epsilon3_ratio"],
                                  delta_i1=PAPER_SETTING["delta_i1"], c3=loss.c3)
        lam = params.lam_hat
        objective_mechs, output_mechs = paper_mechanisms(params, sizes, beta, loss.c1, loss.c3)
        zeros = np.zeros(d)

        def perturb(t: int) -> np.ndarray:
            return np.stack([m.release(zeros, rng=gen, ledger=ledger, agent=i) for i, m in enumerate(objective_mechs)])

        claim = paper_claim(params)
        config["parameters"] = params.to_dict()
    else:
        lam = check_positive("lam", lam if lam is not None else LAMBDA)
        calibration = calibrate_multiplier(budget, T)
        z = float(calibration.parameter)
        noise_std = check_positive("noise_std", noise_std if noise_std is not None else NOISE_STD)
        eta = check_positive("eta", eta if eta is not None else default_eta(z, sizes, degrees, beta, loss.c1, noise_std))
        mu = local_objectives(parts, lam, loss).with_terms(kappa=2.0 * eta * graph.degrees.astype(float)).mu
        output_mechs = release_mechanisms(sizes, [float(u) for u in mu], beta, z, loss.c1)
        config.update({"noise_multiplier": z, "calibrated_epsilon": float(calibration.epsilon),
                       "sensitivity": [m.sensitivity for m in output_mechs],
                       "sigma": [m.sigma for m in output_mechs], "sigma_objective": 0.0})
    config.update({"lam": lam, "eta": eta})
    F = local_objectives(parts, lam, loss)
    returned = PublishedAverage(average, T)
    config["average"] = average

    def publish(t: int, solutions: np.ndarray, previous: np.ndarray) -> np.ndarray:
        out = publish_round(solutions, output_mechs, rng=gen, ledger=ledger)
        returned.add(t, out)
        return out

    evaluator = Evaluator(loss, parts, test, max(1, T // 50))
    evaluator.record(0, np.zeros((N, d)), np.zeros((N, d)))
    state = decentralised_loop(F, graph, eta=eta, iterations=T, beta=beta, theta0=np.zeros((N, d)), perturb=perturb,
                               publish=publish, on_round=round_recorder(evaluator, T, progress))
    config["max_grad_norm"] = state.max_grad_norm
    models = returned.models()
    notes = (MODEL_NOTES[average],)
    if not paper:
        notes += ("no objective perturbation b_i1 is drawn: the release analysis does not need it",)
    return finish("pp-admm", variant, models, models.mean(axis=0), evaluator, test, ledger,
                  budget.delta, state.seconds, config, paper_claim=claim, notes=notes)


SPEC = AlgorithmSpec(
    name="pp-admm", runner=graph_runner(train_pp_admm), topology="graph", agents=AGENTS, n_train=35_000, delta=1e-5,
    description="Decentralised ADMM publishing noisy approximate local minimisers (Ding et al. 2020, CIKM, Alg. 1)",
    options=("eta", "lam", "beta", "noise_std", "average"),
)
