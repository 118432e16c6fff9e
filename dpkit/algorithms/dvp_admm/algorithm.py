"""Dual variable perturbation (DVP) ADMM: Zhang & Zhu, "A Dual Perturbation Approach for
Differential Private ADMM-Based Distributed Empirical Risk Minimization", AISec 2016.

Nodes of a connected graph run decentralised ADMM on the logistic loss with R = ½‖f‖². At every
iteration each node perturbs its dual variable, i.e. adds a fresh random linear term b_p(t) to
its sub-problem (eqs. (13)–(14)), releases the **exact minimiser** to its neighbours (eq. (15))
and updates its dual with the released values (eq. (16)). Each round is Chaudhuri et al.'s
objective perturbation of one ADMM sub-problem (:mod:`dpkit.algorithms.dvp_admm.rounds`).

Variants
--------
``"corrected"`` (default). Gaussian b_p ~ N(0, (zΔ_p)²I), each round accounted as an
:class:`~dpkit.accounting.events.ObjectivePerturbationEvent`, with z calibrated on the whole
planned run (:func:`~dpkit.algorithms.dvp_admm.noise.gaussian_noise`). It is the default
because its guarantee is the budget and its noise norm grows like √d rather than d (the
ℓ2-Laplace noise of the paper has E‖ε‖ = d/ζ), which is what makes DVP useful on Adult.

``"corrected-pure"``. The paper's ℓ2-Laplace noise with the proof's per-iteration calibration
(ζ = α̂/2, Cᴿ/B_p in ᾱ), α per iteration the largest whose T-fold composition meets the budget
(pure ε-DP, δ only from the composition).

``"paper"``. Algorithm 2 as printed, with ``budget.epsilon`` used as the per-iteration α, which
the paper says is the total: "privacy … independent of the number of iterations" (§2.2, §3).
That is false — the rounds compose — and the printed ζ = α̂ is twice what the proof allows. The
ledger records what each round really spends (ᾱ(Φ) + 2ζ, pure DP), so ``guarantee`` is the
honest composed total; ``paper_claim`` is the paper's α, marked invalid.

The analyses assume the exact minimiser; the solver stops at ‖∇F_p‖ ≤ 1e-10
(:data:`~dpkit.algorithms.dvp_admm.rounds.SOLVER_TOLERANCE`), an approximation the results
state in their notes. The returned ``models`` are each node's published minimisers averaged over
the rounds t ≥ ⌊T/2⌋ on graphs of at most :data:`TAIL_MAX_NODES` nodes and its last published
minimiser otherwise (``average``, :func:`default_average`; the paper variant: the last), and ``model``
their mean over nodes (post-processing).

Defaults (``docs/algorithms/dvp-admm.md`` has the sweeps behind them)
---------------------------------------------------------------------
* agents: 10, the number of nodes used on Adult throughout dpkit (the paper gives none; with
  36,000 training rows each node holds 3,600 ≥ Cᴿ = 1,750 records, as the paper requires).
* ``loss_weight`` Cᴿ = min(1750, min_p B_p): the paper's 1,750 (§5), capped by its constraint
  Cᴿ ≤ B_p.
* paper variant: T = 100 (Fig. 2, "t = 100"), ρ = 10^-2.5 (§5), η = 0.5 (not given by the paper).
* corrected variants: T, ρ and η from :func:`corrected_defaults` (data-independent: the number
  of nodes, their sizes and degrees, ε).

References
----------
.. [1] T. Zhang and Q. Zhu, AISec 2016, Alg. 2, eqs. (13)–(16), Thm 1 and its Appendix proof.
.. [2] K. Chaudhuri, C. Monteleoni and A. Sarwate, "Differentially Private Empirical Risk
   Minimization", JMLR 12, 2011, Alg. 2 and Thm 9.
.. [3] D. Kifer, A. Smith and A. Thakurta, "Private Convex Empirical Risk Minimization and
   High-dimensional Regression", COLT 2012 (Gaussian objective perturbation).
"""

from __future__ import annotations

import math
from typing import Any, Callable, Sequence

import numpy as np

from dpkit._validation import check_integer, check_positive, check_rng
from dpkit.algorithms.substrate.admm_loops import PublishedAverage, check_parts_on_graph, round_recorder
from dpkit.algorithms.substrate.budget import Budget
from dpkit.algorithms.substrate.data import Dataset
from dpkit.algorithms.dvp_admm.noise import LOSS_CURVATURE_BOUND, gaussian_noise, paper_noise, pure_noise
from dpkit.algorithms.dvp_admm.rounds import SOLVER_TOLERANCE, local_objectives, perturbed_dual_admm
from dpkit.algorithms.substrate.evaluation import Evaluator
from dpkit.algorithms.substrate.graphs import Graph
from dpkit.algorithms.substrate.losses import Logistic
from dpkit.algorithms.substrate.result import PaperClaim, TrainingResult, finish
from dpkit.algorithms.substrate.spec import AlgorithmSpec, graph_runner

__all__ = ["VARIANTS", "PAPER_DEFAULTS", "TAIL_MAX_NODES", "corrected_defaults", "default_average", "train_dvp_admm",
           "SPEC"]

VARIANTS = ("corrected", "corrected-pure", "paper")

PAPER_DEFAULTS = {"iterations": 100, "rho": 10 ** -2.5, "eta": 0.5, "loss_weight": 1750.0}
"""The paper's setting: T = 100 (Fig. 2), ρ = 10^-2.5 and Cᴿ = 1,750 (§5); η = 0.5 is dpkit's (not given)."""


ROUNDS_NODES, MIN_ROUNDS, MAX_ROUNDS = 10, 5, 20
"""The corrected rounds rule T = clip(⌈√(ROUNDS_NODES·n·ε)⌉, MIN_ROUNDS, MAX_ROUNDS) (:func:`corrected_defaults`):
⌈10√ε⌉ on ROUNDS_NODES = 10 nodes (the Adult sweep)."""
JACOBIAN_SHARE = 1 / 16
"""Largest share of ε the Jacobian terms may take under the default η (:func:`corrected_defaults`)."""
TAIL_MAX_NODES = 3
"""The corrected variants return the tail mean of the published minimisers on graphs of at most this many
nodes, the last ones on larger graphs (:func:`default_average`)."""


def corrected_defaults(epsilon: float, loss_weight: float, min_size: int, min_degree: int,
                       nodes: int = ROUNDS_NODES) -> dict[str, float]:
    """Planned rounds T, ρ and η of the corrected variants (data-independent: ε, Cᴿ, B_p, |N_p|, the number of nodes).

    * T = ⌈√(10·n·ε)⌉ (n = ``nodes``) clipped to [5, 20]: every round is charged, so the per-round
      noise multiplier grows about linearly in T/ε (the objective-perturbation RDP curve has a term
      linear in Δ/σ); the ADMM iterates need ~10 rounds to get near consensus on Adult's 10 nodes,
      fewer on fewer nodes, and a larger budget buys a few more. At n = 10 this is ⌈10√ε⌉, the
      rule of the Adult sweep (``docs/algorithms/dvp-admm.md``); at n = 2 it gives 5 rounds at
      ε = 1, where validation splits preferred 4–8 rounds to 10 (Fair, PSID7682, NMES1988,
      Workinghours, and Adult cut into 2 nodes; ``benchmarks/tune_defaults.py``).
    * η = max(Cᴿ/1000, c₃w/(2|N|(e^{ε/(16T)} − 1))) with w = Cᴿ/min_p B_p and |N| = min_p |N_p|.
      The first term is the proximal weight that worked across the sweep (η ∈ [Cᴿ/1750, Cᴿ/175]
      within one point at ε = 1); the second keeps the Jacobian terms, charged every round
      (ξ_p = log(1 + c₃w_p/(ρ + 2η|N_p|))), below :data:`JACOBIAN_SHARE` = 1/16 of the budget:
      T·ξ_p ≤ ε/16. On small tables (two nodes of 2,000 rows) that floor sets η; chosen on
      validation splits (``benchmarks/tune_defaults.py``: PSID7682, DoctorVisits, RAND HIE at
      ε = 1 and 3, 1/16 against 1/4, 1/8 and 1/32; Adult's validation accuracy moves by < 0.1 point).
    * ρ = 10^-2.5, the paper's (§5).

    >>> corrected_defaults(1.0, 1750.0, 3600, 3, nodes=10)
    {'iterations': 10, 'rho': 0.0031622776601683794, 'eta': 3.230623975205323}
    >>> corrected_defaults(1.0, 1750.0, 3600, 1, nodes=2)["iterations"]
    5
    """
    epsilon = check_positive("epsilon", epsilon)
    loss_weight = check_positive("loss_weight", loss_weight)
    nodes = check_integer("nodes", nodes, minimum=1)
    T = min(MAX_ROUNDS, max(MIN_ROUNDS, math.ceil(math.sqrt(ROUNDS_NODES * nodes * epsilon) - 1e-9)))
    weight = loss_weight / check_integer("min_size", min_size, minimum=1)
    jacobian_floor = LOSS_CURVATURE_BOUND * weight / (2.0 * check_integer("min_degree", min_degree, minimum=1)
                                                      * math.expm1(JACOBIAN_SHARE * epsilon / T))
    return {"iterations": T, "rho": 10 ** -2.5, "eta": max(loss_weight / 1000.0, jacobian_floor)}


def default_average(variant: str, nodes: int) -> str:
    """The returned model when ``average`` is not given: ``"tail"`` (each node's published minimisers of
    rounds t ≥ ⌊T/2⌋ averaged) for the corrected variants on at most :data:`TAIL_MAX_NODES` nodes, else
    ``"last"`` (the last published minimisers; always in the paper variant).

    Every round's minimiser carries fresh noise, so averaging the rounds after consensus cuts the noise
    (Polyak & Juditsky 1992); on few nodes the iterates reach consensus within the first half of the
    corrected rule's 5–10 rounds, on more nodes they are still moving and the average lags. Validation
    splits (75 % of each seed's training rows fit, 25 % score; private ranges, 2 nodes, seeds 0–7,
    ε = 1): +0.25 to +0.63 point on CollegeDistance, credit_data, wachurn, NMES1988, Fair and PSID7682,
    −0.45 on flchain; Adult (ε = 1, seeds 0–3) cut into 2, 3, 5 and 10 nodes: +0.02, +0.01, −0.17 and
    −0.30 point (``docs/algorithms/dvp-admm.md``).

    >>> default_average("corrected", 2), default_average("corrected", 10), default_average("paper", 2)
    ('tail', 'last', 'last')
    """
    nodes = check_integer("nodes", nodes, minimum=1)
    return "tail" if variant != "paper" and nodes <= TAIL_MAX_NODES else "last"


def train_dvp_admm(
    parts: Sequence[Dataset], graph: Graph, *, budget: Budget, variant: str = "corrected",
    iterations: int | None = None, loss_weight: float | None = None, rho: float | None = None,
    eta: float | None = None, test: Dataset | None = None, rng: Any = None,
    progress: Callable[[int, int], None] | None = None, average: str | None = None,
) -> TrainingResult:
    """Train with DVP ADMM (module docstring) and return a :class:`~dpkit.algorithms.substrate.result.TrainingResult`.

    Parameters
    ----------
    parts, graph
        One dataset per node (‖x‖ ≤ 1, y ∈ {−1, +1}) and the connected communication graph.
    budget
        Corrected variants: the total (ε, δ) of one record over the whole run. Paper variant:
        ``budget.epsilon`` is the paper's α per iteration (claimed as the total).
    variant
        ``"corrected"`` (Gaussian, default), ``"corrected-pure"`` or ``"paper"``.
    iterations
        Planned rounds T (None: the variant's default).
    loss_weight, rho, eta
        Cᴿ, ρ and the ADMM penalty η (None: the variant's defaults).
    average
        ``"last"``: each node's last published minimiser; ``"tail"``: each node's published
        minimisers of rounds t ≥ ⌊T/2⌋ averaged (post-processing). None: :func:`default_average`.
    """
    parts = check_parts_on_graph(parts, graph)
    if not isinstance(budget, Budget):
        raise TypeError(f"budget must be a Budget, got {type(budget).__name__}")
    if variant not in VARIANTS:
        raise ValueError(f"variant must be one of {VARIANTS}, got variant={variant!r}")
    gen = check_rng(rng)
    N, d = len(parts), parts[0].d
    sizes = np.array([p.n for p in parts])
    C_R = check_positive("loss_weight", loss_weight if loss_weight is not None
                         else min(PAPER_DEFAULTS["loss_weight"], float(sizes.min())))
    if C_R > sizes.min():
        raise ValueError(f"loss_weight must be <= every node's B_p (Zhang & Zhu 2016, §5), got {C_R} > {sizes.min()}")
    defaults = PAPER_DEFAULTS if variant == "paper" else corrected_defaults(
        budget.epsilon, C_R, int(sizes.min()), int(graph.degrees.min()), N)
    T = check_integer("iterations", iterations if iterations is not None else defaults["iterations"], minimum=1)
    rho = check_positive("rho", rho if rho is not None else defaults["rho"])
    eta = check_positive("eta", eta if eta is not None else defaults["eta"])
    degrees = graph.degrees
    weights = C_R / sizes
    if variant == "paper":
        noise = paper_noise(budget.epsilon, sizes, degrees, loss_weight=C_R, rho=rho, eta=eta)
    elif variant == "corrected-pure":
        noise = pure_noise(budget, T, sizes, degrees, loss_weight=C_R, rho=rho, eta=eta)
    else:
        noise = gaussian_noise(budget, T, weights, rho + 2.0 * eta * degrees)
    F = local_objectives(parts, loss_weight=C_R, regularisation=rho + noise.extra_ridge)
    ledger = budget.ledger(N)
    evaluator = Evaluator(Logistic(), parts, test, max(1, T // 50))
    evaluator.record(0, np.zeros((N, d)), np.zeros((N, d)))
    returned = PublishedAverage(average if average is not None else default_average(variant, N), T)
    record = round_recorder(evaluator, T, progress)

    def on_round(t: int, published: np.ndarray, duals: np.ndarray) -> None:
        returned.add(t - 1, published)
        record(t, published, duals)

    state = perturbed_dual_admm(F, graph, eta=eta, iterations=T, mechanisms=noise.mechanisms, rng=gen, ledger=ledger,
                                on_round=on_round)
    models = returned.models()
    config = {"iterations": T, "agents": N, "budget": budget.to_dict(), "loss_weight": C_R, "rho": rho, "eta": eta,
              "graph": graph.to_dict(), "loss": "logistic", "regulariser": "l2", "solver_tolerance": SOLVER_TOLERANCE,
              "max_grad_norm": state.max_grad_norm, "noise": noise.calibration,
              "extra_ridge": noise.extra_ridge.tolist(), "average": returned.how}
    notes = [f"the analysis assumes the exact minimiser of every sub-problem; the solver stops at "
             f"||grad|| <= {SOLVER_TOLERANCE:g} (the largest achieved norm is a diagnostic), an approximation",
             "each round is private given the public history (published minimisers); rounds compose adaptively"]
    claim = None
    if variant == "paper":
        claim = PaperClaim(
            epsilon=budget.epsilon, delta=0.0,
            rule="Zhang & Zhu 2016, Thm 1 and §2.2: dynamic alpha-DP per iteration, 'independent of the number "
                 "of iterations'",
            valid=False,
            notes=("the released transcript composes over the iterations: the per-iteration alpha is not the total",
                   "Algorithm 2 prints zeta = alpha_hat; the proof needs alpha_hat/2, so even one iteration spends "
                   "more than alpha (see the ledger)"))
    return finish("dvp-admm", variant, models, models.mean(axis=0), evaluator, test, ledger,
                  budget.delta, state.seconds, config, paper_claim=claim, notes=tuple(notes))


SPEC = AlgorithmSpec(
    name="dvp-admm", runner=graph_runner(train_dvp_admm), topology="graph", agents=10, n_train=36_000, delta=1e-5,
    description="Dual variable perturbation ADMM (Zhang & Zhu 2016, AISec)",
    options=("loss_weight", "rho", "eta", "average"), variants=VARIANTS,
)
