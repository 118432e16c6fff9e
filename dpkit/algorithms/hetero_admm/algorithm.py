"""Heterogeneous-privacy distributed learning: label randomization, then perturbed decentralised ADMM.

Wang, Ishii, Du, Cheng & Chen, "Privacy-preserving Distributed Machine Learning via Local
Randomization and ADMM Perturbation", IEEE TSP 2020 (arXiv:1908.01059).

1. **Phase 1** (users, eqs. 12–13): every label goes once through binary randomized response at
   ε_label (:class:`~dpkit.mechanisms.randomized_response.BinaryRandomizedResponse`, one
   ``release`` per server on its label vector, recorded in a separate *label ledger*: the
   collecting server's view); features are sent to the server in the clear.
2. **Phase 2** (servers, eqs. 14–17): decentralised ADMM
   (:func:`~dpkit.algorithms.substrate.admm_loops.decentralised_loop`) on the unbiased modified loss (eq. 19,
   :class:`~dpkit.algorithms.hetero_admm.unbiased_loss.UnbiasedLogistic`) + (a/n)·½‖θ‖²; every round each
   server publishes w̃_i(t) = w_i(t) + N(0, σ_i(t)²I) (eq. 16, one
   :class:`~dpkit.mechanisms.gaussian.GaussianMechanism` release per server and round) and the
   dual step (eq. 17) uses the published values.

The returned models are post-processing of published values only: each server's average of its
published w̃_i(t) (over the second half of the rounds in the corrected variant, over all rounds —
the paper's running average w̄_i — in the paper variant), and their mean across servers.

Variants
--------
``"corrected"`` (default: its guarantee is the budget). ``budget.epsilon`` = E is the
*record-level* ε (features and label together, replace-one) of everything published; the labels
are randomized at ε_label = :func:`~dpkit.algorithms.hetero_admm.privacy.label_share` (E by
default), a separate pure-LDP guarantee of the label against the collecting server. The label
randomization is not charged to the published values: their sensitivities already cover any
change of a record's (x, y′), and averaging over data-independent label flips cannot raise their
ε (:mod:`~dpkit.algorithms.hetero_admm.privacy`). The modified loss is
written as the logistic loss of the randomized labels plus a linear label-correction term
b_iᵀθ (ℓ̃(u) = ℓ(u) − K·u, :attr:`~dpkit.algorithms.hetero_admm.unbiased_loss.UnbiasedLogistic.shift`); b_i is
perturbed once by a Gaussian release — the objective perturbation η_i of eq. (14), Gaussian and
charged to the ledger — so the rounds' sensitivity uses the logistic gradient bound 1 instead of
c̃ = 1/(1 − e^{−ε_label}). The Phase-2 noise is constant over rounds (σ_i = zΔ_i), the correction's
multiplier is r·z (:func:`~dpkit.algorithms.hetero_admm.privacy.correction_ratio`), and z is
calibrated on the whole planned run of published releases
(:func:`~dpkit.algorithms.hetero_admm.privacy.calibrate_multiplier`).

``"paper"``: ε_label = ``budget.epsilon`` (the paper's claim is label-only, Prop. 1), the modified
loss as one loss, η_i ~ U[−R, R]^d drawn once (no distribution is given by the paper;
:func:`~dpkit.mechanisms.erm.uniform_objective_noise`), decaying noise σ_t = ρ^{(t−1)/2}V. Its
ledger records the true events (Δ_i with c̃), so ``guarantee`` shows the record-level ε of what it
publishes (astronomical: the decaying variance makes the composition diverge), while
``paper_claim`` is the label-only ε. Both variants report ``extra_guarantees["label_only"]``, the
accountant's result over the label ledger.

Defaults (``docs/algorithms/hetero-admm.md`` has the sweeps behind them)
--------------------------------------------------------------------------
* ``SPEC.agents`` = 5 on a random connected graph with 2n edges. The consensus average's noise
  grows like √n/m (each server's noise is calibrated to its own m_i = m/n), so fewer servers is
  better for a fixed m; 5 keeps a decentralised graph (n > 2, the paper's condition) and is the
  count used by the other decentralised algorithms of dpkit. The paper's 10 servers cost 1.6 points
  of accuracy at ε = 0.5, 0.5 at ε = 1 and 0.1 at ε = 3 (``docs/reproductions/001.md``).
* corrected ``iterations`` = :func:`default_rounds`: :data:`CORRECTED_ROUNDS` = 25 for servers of
  Adult's size or more, up to 100 for smaller ones, and at most ⌈50·ε⌉ (:data:`ROUNDS_PER_EPSILON`: 50
  at ε = 1; Adult's 25 at every ε). Every round costs privacy (σ grows like √T),
  while the averaged late rounds cut the noise; on a validation split carved from Adult's training
  data 25 rounds beat 15 by 0.2 point at ε = 1 and 3 and tie at ε = 0.5, and 40 are no better.
  Smaller servers take smaller steps under the penalty rule below, so they need more rounds; the
  duals integrate every round's noise, so at small ε they are worth fewer.
* corrected ``penalty`` (ADMM β, eq. 15) = :func:`default_penalty`: the β at which each release's
  noise is σ_i = :data:`NOISE_SCALE`·√z per coordinate (z the calibrated noise multiplier, a
  function of ε, δ and T only). The proximal weight 2β|𝓝_i| sets μ_i and thus Δ_i = 2(1/m_i + tol)/μ_i,
  so σ_i = zΔ_i ≈ z(1/m_i + tol)/(β|𝓝_i|); 1/(2β|𝓝_i|) is also the rounds' step in gradient
  units, so the rule trades the two: noisier runs take smaller steps. The constant reproduces
  the β chosen on a validation split carved from Adult's training data (β = 6.5·10⁻⁴·√z for
  m_i = 7,200 on the complete graph of 5; β ∈ {0.001, …, 0.006} at ε ∈ {0.5, 1, 3}); stated as
  noise rather than as β, it carries to other m_i and graphs (validation splits of Fair, PSID7682,
  NMES1988 and Workinghours at ε = 1: +0.6 to +4.5 points over the β rule, which gave σ_i ≈ 2.5
  there; ``docs/algorithms/hetero-admm.md``).
* ``reg`` (a of eq. 3) = :data:`CORRECTED_REG` = 0.001 (each server a/n). On Adult's validation
  split 0.001 is +0.7 point over 0.01 at ε = 1 and 3 and equal at ε = 0.5; with the penalty rule
  above, 0.001 also beats the earlier size-scaled rule (≈ 0.016 on tables of a few thousand rows)
  on the validation splits of Fair, PSID7682, NMES1988 and Workinghours and ties on DoctorVisits,
  RAND HIE, HealthInsurance and Benefits.
* paper: T = 100 (Fig. 4(a)), R = 1 (Fig. 3, Table I), ρ = 0.8 (Fig. 4(a)); V = 0.1, β = 0.01
  and a = 0.01 are not given by the paper (dpkit's choices).
* ``tol`` (solver tolerance, ‖∇F_i‖) = 1e-8; it enters Δ_i as 2·tol/μ_i.

Examples: ``docs/algorithms/hetero-admm.md`` (doctested).
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, Callable, Sequence

import numpy as np

from dpkit._validation import check_integer, check_nonnegative, check_positive, check_rng, check_unit_interval
from dpkit.algorithms.substrate.admm_loops import LoopState, check_parts_on_graph, decentralised_loop, round_recorder
from dpkit.algorithms.substrate.budget import Budget
from dpkit.algorithms.substrate.data import Dataset
from dpkit.algorithms.substrate.evaluation import Evaluator
from dpkit.algorithms.substrate.graphs import Graph
from dpkit.algorithms.hetero_admm.privacy import (
    averaged_rounds,
    calibrate_multiplier,
    correction_ratio,
    correction_sensitivity,
    decaying_sigmas,
    label_share,
    round_sensitivity,
)
from dpkit.algorithms.substrate.losses import Logistic
from dpkit.algorithms.substrate.result import PaperClaim, TrainingResult, account, finish
from dpkit.algorithms.substrate.solvers import AgentObjectives
from dpkit.algorithms.substrate.spec import AlgorithmSpec, graph_runner
from dpkit.algorithms.hetero_admm.unbiased_loss import UnbiasedLogistic
from dpkit.mechanisms.erm import uniform_objective_noise
from dpkit.mechanisms.gaussian import GaussianMechanism
from dpkit.mechanisms.ledger import PrivacyLedger
from dpkit.mechanisms.randomized_response import BinaryRandomizedResponse

__all__ = [
    "CORRECTED_ROUNDS", "ROUNDS_ROWS", "MAX_ROUNDS", "ROUNDS_PER_EPSILON", "default_rounds", "NOISE_SCALE",
    "CORRECTED_REG", "PAPER_DEFAULTS",
    "default_penalty", "randomize_labels", "local_objectives", "label_correction", "release_correction", "sensitivities",
    "perturbed_admm", "output_models", "train_hetero_admm",
    "SPEC",
]

CORRECTED_ROUNDS = 25
"""Planned rounds T of the corrected variant for servers of :data:`ROUNDS_ROWS` rows or more (:func:`default_rounds`)."""
ROUNDS_ROWS = 7200
"""m_i of Adult's servers (36,000 rows over 5), where :data:`CORRECTED_ROUNDS` was chosen."""
MAX_ROUNDS = 100
"""Most rounds :func:`default_rounds` plans."""
ROUNDS_PER_EPSILON = 50
"""At most ⌈ROUNDS_PER_EPSILON·ε⌉ rounds (within [:data:`CORRECTED_ROUNDS`, :data:`MAX_ROUNDS`]) in
:func:`default_rounds`: 50 at ε = 1, 100 from ε = 2 on."""
NOISE_SCALE = 0.0525
"""σ_i = NOISE_SCALE·√z: the per-coordinate release noise the corrected variant's default penalty aims at
(:func:`default_penalty`)."""
CORRECTED_REG = 0.001
"""Default regularisation weight a of the corrected variant (each server uses a/n)."""
PAPER_DEFAULTS = {"iterations": 100, "R": 1.0, "rho": 0.8, "V": 0.1, "penalty": 0.01, "reg": 0.01}
"""Paper variant: T, R, ρ from the paper's Adult study; V, β, a are not given by the paper."""
TOL = 1e-8


def default_rounds(sizes: Sequence[int], epsilon: float | None = None) -> int:
    """The corrected variant's planned rounds: T = clip(⌈:data:`CORRECTED_ROUNDS`·:data:`ROUNDS_ROWS`/min m_i⌉,
    :data:`CORRECTED_ROUNDS`, cap) with cap = clip(⌈:data:`ROUNDS_PER_EPSILON`·ε⌉, :data:`CORRECTED_ROUNDS`,
    :data:`MAX_ROUNDS`) (:data:`MAX_ROUNDS` without ``epsilon``), a function of the public sizes and ε only.

    Why the sizes: the default penalty fixes each release's noise (:func:`default_penalty`), so β ∝ √z/m_i
    and the rounds' step 1/(2β|𝓝_i|) ∝ m_i/√z: servers 4× smaller than Adult's take 4× smaller steps and
    need about 4× the rounds to travel as far. On validation splits (``benchmarks/distributed_gap.py``,
    seeds 0–2, ~1,500–2,500 rows per server) T = 100 against 25 gained +13 and +20 points of the margin
    on modeldata's credit_data at ε = 1 and 3, +14 and +2 on survival's flchain
    (``docs/algorithms/hetero-admm.md``). Adult's servers (7,200 rows) keep 25.

    Why ε: the duals integrate every round's published noise (σ_i = :data:`NOISE_SCALE`·√z, eq. 17), so
    each added round also moves the iterates by noise, and the more so the smaller ε; the travel the
    sizes ask for is then worth fewer rounds. On the validation splits of the ten published tables
    of ≥ 4,000 rows with a ≥ 5-point margin (75 % fit, 25 % validation, each run with the servers its
    test run has; seeds 0–11 at ε = 1, 0–5 at ε = 3; ``docs/algorithms/hetero-admm.md``) 50 rounds beat
    100 at ε = 1 (mean share of the margin 73 % against 68 %; seeds 0–5: 75 % against 67 %, 35 and 70
    rounds 71 % and 69 %) and 100 beat 75 and 50 at ε = 3 (95 % against 93 % and 91 %).

    >>> default_rounds([7200] * 5), default_rounds([1800, 1800]), default_rounds([400] * 3)
    (25, 100, 100)
    >>> default_rounds([1800, 1800], epsilon=1.0), default_rounds([1800, 1800], epsilon=3.0)
    (50, 100)
    >>> default_rounds([7200] * 5, epsilon=0.1), default_rounds([400] * 3, epsilon=0.1)
    (25, 25)
    """
    smallest = min(check_integer("sizes", m, minimum=1) for m in sizes)
    cap = MAX_ROUNDS
    if epsilon is not None:
        cap = min(MAX_ROUNDS, max(CORRECTED_ROUNDS, math.ceil(ROUNDS_PER_EPSILON * check_positive("epsilon", epsilon))))
    return min(cap, max(CORRECTED_ROUNDS, math.ceil(CORRECTED_ROUNDS * ROUNDS_ROWS / smallest)))


def default_penalty(multiplier: float, sizes: Sequence[int], degrees: Sequence[int], tol: float = TOL) -> float:
    """The corrected variant's default ADMM penalty: β = √z·(1/m̄ + tol)/(:data:`NOISE_SCALE`·deg̅).

    With μ_i ≈ 2β|𝓝_i| (the regulariser a/n is ≤ 1 % of it at the defaults, and only lowers the
    noise), a release's noise σ_i = zΔ_i = 2z(1/m_i + tol)/μ_i is :data:`NOISE_SCALE`·√z for the
    mean size m̄ and mean degree deg̅ (module docstring). Data-independent: z comes from (ε, δ, T),
    the rest from the sizes and the graph.

    >>> round(default_penalty(16.0, [1000, 1000], [1, 1], tol=0.0), 6)
    0.07619
    """
    z = check_positive("multiplier", multiplier)
    m = float(np.mean([check_integer("sizes[i]", v, minimum=1) for v in sizes]))
    degree = float(np.mean([check_integer("degrees[i]", g, minimum=1) for g in degrees]))
    return math.sqrt(z) * (1.0 / m + check_nonnegative("tol", tol)) / (NOISE_SCALE * degree)


def randomize_labels(parts: Sequence[Dataset], mechanism: BinaryRandomizedResponse, rng: np.random.Generator,
                     ledger: PrivacyLedger) -> list[Dataset]:
    """Phase 1 (Wang et al. 2020, eqs. 12–13): each server's labels through ``mechanism.release``.

    One release per server on its label vector (each record's label is randomized once; one record
    is in one entry, so the server's ledger gets one event). Features are kept.
    """
    return [Dataset(p.X, np.asarray(mechanism.release(p.y, rng=rng, ledger=ledger, agent=i), float), p.name,
                    p.feature_names) for i, p in enumerate(parts)]


def local_objectives(noisy_parts: Sequence[Dataset], loss: Logistic | UnbiasedLogistic,
                     reg_weight: float) -> AgentObjectives:
    """The servers' objectives mean ℓ(y′θᵀx) + r·½‖θ‖² (Wang et al. 2020, eqs. 3, 22; r = a/n).

    ``loss``: :class:`~dpkit.algorithms.hetero_admm.unbiased_loss.UnbiasedLogistic` (the paper's modified loss,
    eq. 19) or :class:`~dpkit.algorithms.substrate.losses.Logistic` (corrected: the modified loss minus its
    linear part, which :func:`label_correction` supplies).
    """
    reg_weight = check_positive("reg_weight", reg_weight)
    return AgentObjectives.from_parts(noisy_parts, loss, reg_weight=reg_weight)


def label_correction(noisy_parts: Sequence[Dataset], label_epsilon: float) -> np.ndarray:
    """b_i = −K·mean_j y′_j x_j, K = 1/(e^{ε_label} − 1), shape ``(N, d)``: the linear part of the
    modified loss (ℓ̃(u) = ℓ(u) − K·u, Wang et al. 2020, eq. 19), so mean ℓ̃ = mean ℓ + b_iᵀθ."""
    K = UnbiasedLogistic(label_epsilon).shift
    return np.stack([-K * np.mean(p.y[:, None] * p.X, axis=0) for p in noisy_parts])


def release_correction(correction: np.ndarray, mechanisms: Sequence[GaussianMechanism], rng: np.random.Generator,
                       ledger: PrivacyLedger) -> np.ndarray:
    """b̃_i = ``mechanisms[i].release(b_i)``: the Gaussian objective perturbation of the corrected
    variant (Wang et al. 2020, eq. 14 with Gaussian η_i), one release per server, shape ``(N, d)``."""
    return np.stack([np.asarray(mechanisms[i].release(correction[i], rng=rng, ledger=ledger, agent=i), float)
                     for i in range(len(mechanisms))])


def sensitivities(F: AgentObjectives, parts: Sequence[Dataset], graph: Graph, penalty: float, tol: float) -> np.ndarray:
    """Δ_i = 2(c/m_i + tol)/μ_i with μ_i = a/n + 2β|𝓝_i| and c = ``F.loss.c1`` for every server
    (one round's release)."""
    penalty = check_nonnegative("penalty", penalty)
    mu = F.with_terms(kappa=2.0 * penalty * graph.degrees.astype(float)).mu
    return np.array([round_sensitivity(F.loss.c1, p.n, float(mu[i]), tol) for i, p in enumerate(parts)])


def perturbed_admm(
    F: AgentObjectives, graph: Graph, *, penalty: float, iterations: int, tol: float,
    mechanism: Callable[[int, int], GaussianMechanism], rng: np.random.Generator, ledger: PrivacyLedger,
    perturbation: np.ndarray | None = None,
    on_round: Callable[[int, np.ndarray, np.ndarray], None] | None = None,
) -> tuple[LoopState, np.ndarray]:
    """Phase 2 (Wang et al. 2020, eqs. 15–17) from w̃(0) = 0: ``iterations`` rounds, each server
    publishing through ``mechanism(t, i).release`` (t = 0..T−1).

    ``perturbation`` (N, d) is the fixed linear term (1/n)η_i of eq. (14) (None: none). Returns the
    loop's final state and every published value, shape ``(T, N, d)``.
    """
    published = np.empty((iterations,) + F.linear.shape)

    def publish(t: int, solutions: np.ndarray, previous: np.ndarray) -> np.ndarray:
        out = np.stack([mechanism(t, i).release(solutions[i], rng=rng, ledger=ledger, agent=i)
                        for i in range(F.agents)])
        published[t] = out
        return out

    perturb = None if perturbation is None else (lambda t: perturbation)
    state = decentralised_loop(F, graph, eta=penalty, iterations=iterations, beta=tol, theta0=np.zeros_like(F.linear),
                               perturb=perturb, publish=publish, on_round=on_round)
    return state, published


def output_models(published: np.ndarray, variant: str) -> np.ndarray:
    """Each server's returned model from its published iterates ``(T, N, d)`` (post-processing only).

    ``"paper"``: the running average over all T rounds (Wang et al. 2020, §V-B's w̄_i(t), applied to
    the published w̃_i instead of the private w_i); ``"corrected"``: the average over rounds
    t > T/2, i.e. the last :func:`~dpkit.algorithms.hetero_admm.privacy.averaged_rounds` (the first
    rounds are far from consensus; averaging the rest reduces the noise).
    """
    T = published.shape[0]
    return published.mean(axis=0) if variant == "paper" else published[T - averaged_rounds(T):].mean(axis=0)


def train_hetero_admm(
    parts: Sequence[Dataset], graph: Graph, *, budget: Budget, variant: str = "corrected",
    iterations: int | None = None, test: Dataset | None = None, rng: np.random.Generator | int | None = 0,
    progress: Callable[[int, int], None] | None = None, penalty: float | None = None, reg: float | None = None,
    share: float | None = None, V: float | None = None, rho: float | None = None, R: float | None = None,
    tol: float = TOL,
) -> TrainingResult:
    """Train with the two-phase framework (module docstring) and return a :class:`TrainingResult`.

    Parameters
    ----------
    parts, graph
        The servers' datasets (‖x‖ ≤ 1, labels ±1) and their connected graph.
    budget
        Corrected: the record-level (ε, δ) of the whole run. Paper: ε is the label ε (Prop. 1)
        and δ the δ at which the ledger's guarantee is reported.
    variant
        ``"corrected"`` (default) or ``"paper"``.
    iterations
        Planned rounds T (None: :data:`CORRECTED_ROUNDS` or the paper's 100).
    penalty, reg
        ADMM penalty β and regularisation weight a (None: the variant's default; corrected β:
        :func:`default_penalty`, a: :data:`CORRECTED_REG`).
    share
        Corrected: ε_label = ``share``·ε, ``share`` ∈ (0, 1] (None:
        :data:`~dpkit.algorithms.hetero_admm.privacy.LABEL_SHARE` = 1).
    V, rho, R
        Paper: initial noise scale, variance decay and objective-noise bound (None: paper defaults).
    tol
        Solver tolerance on ‖∇F_i‖ (enters Δ_i).
    """
    parts = check_parts_on_graph(parts, graph)
    if not isinstance(budget, Budget):
        raise TypeError(f"budget must be a Budget, got {type(budget).__name__}")
    if variant not in ("corrected", "paper"):
        raise ValueError(f"variant must be 'corrected' or 'paper', got variant={variant!r}")
    paper = variant == "paper"
    gen = check_rng(rng)
    N, d = len(parts), parts[0].d
    T = check_integer("iterations", iterations if iterations is not None else
                      (PAPER_DEFAULTS["iterations"] if paper else default_rounds([p.n for p in parts], budget.epsilon)),
                      minimum=1)
    reg = check_positive("reg", reg if reg is not None else (PAPER_DEFAULTS["reg"] if paper else CORRECTED_REG))
    tol = check_positive("tol", tol)
    if paper:
        if share is not None:
            raise ValueError("share applies to the corrected variant only")
        eps_label = budget.epsilon
    else:
        if V is not None or rho is not None or R is not None:
            raise ValueError("V, rho and R apply to the paper variant only")
        eps_label = label_share(budget.epsilon) if share is None else label_share(budget.epsilon, share)
    if paper:
        penalty = PAPER_DEFAULTS["penalty"] if penalty is None else penalty
    else:
        ratio = correction_ratio(eps_label, rounds=T)
        calibration = calibrate_multiplier(rounds=T, ratio=ratio, budget=budget)
        z = float(calibration.parameter)
        if penalty is None:
            penalty = default_penalty(z, [p.n for p in parts], [int(g) for g in graph.degrees], tol)
    penalty = check_nonnegative("penalty", penalty)
    ledger = budget.ledger(N)
    labels = PrivacyLedger(N, neighbouring=budget.neighbouring)
    noisy = randomize_labels(parts, BinaryRandomizedResponse(eps_label), gen, labels)
    F = local_objectives(noisy, UnbiasedLogistic(eps_label) if paper else Logistic(), reg / N)
    sens = sensitivities(F, parts, graph, penalty, tol)
    config: dict[str, Any] = {"iterations": T, "agents": N, "budget": budget.to_dict(), "label_epsilon": eps_label,
                              "penalty": penalty, "reg": reg, "tol": tol, "graph": graph.to_dict(),
                              "loss": F.loss.name, "loss_gradient_bound": F.loss.c1, "sensitivity": sens.tolist()}
    if paper:
        V = check_positive("V", V if V is not None else PAPER_DEFAULTS["V"])
        rho = check_unit_interval("rho", rho if rho is not None else PAPER_DEFAULTS["rho"], include_zero=False,
                                  include_one=False)
        R = check_nonnegative("R", R if R is not None else PAPER_DEFAULTS["R"])
        sigmas = decaying_sigmas(V, rho, T)
        mechanisms = [[GaussianMechanism(sigma=float(s), sensitivity=float(sens[i])) for i in range(N)] for s in sigmas]
        eta = uniform_objective_noise(R, d, size=N, rng=gen) if R > 0 else None
        perturbation = None if eta is None else eta / N
        config.update({"V": V, "rho": rho, "R": R, "sigma_first": float(sigmas[0]), "sigma_last": float(sigmas[-1]),
                       "eta_distribution": "uniform[-R, R]^d (not given by the paper)",
                       "output": "running average of the published iterates over all rounds"})
    else:
        correction_sens = [correction_sensitivity(eps_label, p.n) for p in parts]
        perturbation = release_correction(
            label_correction(noisy, eps_label),
            [GaussianMechanism(sigma=ratio * z * s, sensitivity=s) for s in correction_sens], gen, ledger)
        row = [GaussianMechanism(sigma=z * float(sens[i]), sensitivity=float(sens[i])) for i in range(N)]
        mechanisms = [row] * T
        config.update({"label_share": eps_label / budget.epsilon, "noise_multiplier": z,
                       "correction_ratio": ratio, "correction_sensitivity": correction_sens,
                       "sigma": [m.sigma for m in row], "calibrated_epsilon": float(calibration.epsilon),
                       "output": f"average of the published iterates over the last {averaged_rounds(T)} rounds"})

    evaluator = Evaluator(Logistic(), parts, test, max(1, T // 50))
    evaluator.record(0, np.zeros((N, d)), np.zeros((N, d)))
    state, published = perturbed_admm(F, graph, penalty=penalty, iterations=T, tol=tol,
                                      mechanism=lambda t, i: mechanisms[t][i], rng=gen, ledger=ledger,
                                      perturbation=perturbation, on_round=round_recorder(evaluator, T, progress))
    models = output_models(published, variant)
    config["max_grad_norm"] = state.max_grad_norm
    label_only = account(labels, budget.delta)
    # the number rests on the randomized-response mechanism too, which this ledger alone does not name
    label_only = dataclasses.replace(label_only, references=(*label_only.references, "warner1965randomized"))
    notes = ("guarantee: record level (features and label, replace-one) of every published iterate; "
             "extra_guarantees['label_only']: the label against the collecting server (randomized response, "
             "its own ledger; not charged to the published values, whose sensitivities cover any change of (x, y'))",
             "the server collecting a record sees its features in the clear (no protection against it)")
    claim = None
    if paper:
        claim = PaperClaim(
            epsilon=eps_label, delta=0.0, rule="Wang et al. 2020, Prop. 1 (epsilon-LDP of the label, Definition 1)",
            valid=False,
            notes=("label-only: Definition 1 changes only the label; the features are sent in the clear",
                   "the paper gives no guarantee for the published iterates: with variance rho^(t-1) V^2 the "
                   "record-level composition diverges (see guarantee)"))
    return finish("hetero-admm", variant, models, models.mean(axis=0), evaluator, test, ledger, budget.delta,
                  state.seconds, config, paper_claim=claim, notes=notes, extra_guarantees={"label_only": label_only})


SPEC = AlgorithmSpec(
    name="hetero-admm", runner=graph_runner(train_hetero_admm), topology="graph", agents=5, n_train=36_000, delta=1e-5,
    description="Label randomized response + Gaussian-perturbed decentralised ADMM (Wang et al. 2020, IEEE TSP)",
    options=("penalty", "reg", "share", "V", "rho", "R", "tol"),
)
