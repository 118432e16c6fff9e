"""IPP-ADMM: PP-ADMM whose broadcasts are gated by the sparse vector technique, at most c per agent.

Ding, Wang, Liang, Bi & Pan, CIKM 2020, Algorithm 2. Round t, agent i: compute the approximate
local minimiser θ̂ as in PP-ADMM (:mod:`dpkit.algorithms.pp_admm.pp_admm`), then

* quality q = Clip[f_i](θ_i^t) − Clip[f_i](θ̂): the decrease of the local mean loss, each record's
  loss clipped at C_loss, from the agent's last published value to θ̂ (:func:`quality_scores`;
  the regulariser is left out, so the clip bounds every record's term);
* if q + Lap(query scale) ≥ α + Lap(threshold scale) (⊤, threshold noise drawn once per agent,
  Lyu, Su & Li 2017, Alg. 1) publish θ_i^{t+1} = θ̂ + b_i2; else (⊥) keep θ_i^t. After the c-th
  ⊤ the agent never publishes again (Alg. 2 line 10);
* the deadline (corrected variant; not in the paper): an agent with as many releases left as
  rounds left publishes without consulting its gate, so it makes all c releases its ledger entry
  pays for (:func:`due`, :func:`publish_gated`; a rule on public counts, the SVT's guarantee is unchanged);
* neighbours that did not publish keep their last value (eqs. 18–20); the dual step uses the
  published values, so Σ_i λ_i stays 0.

The gate and the release of agent i are one :class:`~dpkit.mechanisms.sparse_vector.GatedRelease`
(:func:`gate_mechanisms`, :func:`publish_gated`), opened once per agent: its event, the SVT's
(ε₁ + ε₂)-DP event composed with c releases, is recorded when the agent starts, because the number
of ⊤ answers is data-dependent and only its cap c is not.

Query sensitivity (:func:`quality_sensitivity`). Conditionally on the published history, replacing
one record changes the clipped loss at the public θ_i^t by ≤ C_loss/|D_i| and the clipped loss at
θ̂ by ≤ C_loss/|D_i| + ‖θ̂_D − θ̂_D′‖ (the clipped logistic loss is 1-Lipschitz in the margin and
‖x‖ ≤ 1), so Δ_q = 2C_loss/|D_i| + Δ_i with Δ_i the release sensitivity (corrected: 2(c₁/|D_i| + β)/μ_i;
paper, given the exact perturbed minimiser θ̃: 2β/μ_i). The paper's Lemma 4.2 states 2C_loss:
its proof drops the 1/|D_i| factor and holds θ̂ fixed; the bound holds only by the clip's range.

Variants
--------
``"corrected"`` (default). No objective perturbation; the Gaussian multiplier z = σ_i2/Δ_i is
calibrated on the whole planned run of one agent — the SVT event at ε_SVT = :data:`SVT_SHARE`·ε
(ε₁ : ε₂ = 1 : (2c)^{2/3}, Lyu et al. §4.2; at most T queries) composed with c Gaussian releases —
by the tightest accountant, which takes the smaller of the PLD (SVT as pure ε₁ + ε₂) and the RDP
bound (SVT by Zhu & Wang 2020, :mod:`dpkit.accounting.rdp_sparse_vector`). At the defaults
(c = 15, T = 30; Adult, ε = 1: 1.0 against 1.09 at the calibrated z) and at c = 5, T = 10 the PLD
wins: the RDP bound pays log C(T, c) for the output range, and a Gaussian SVT (RDP only) needs a
larger z for the same ε (docs/algorithms/pp-admm.md, measured).

Why the gate cannot select. The quality's sensitivity Δ_q is dominated by Δ_i
(≈ 0.034 on Adult at the defaults and ε = 1), so the gate's noise (scales Δ_q/ε₁ and 2cΔ_q/ε₂: 18 and
57 at ε = 1 with the 2 % share) is far above any quality value (q is at most the agent's mean loss at its
last published value, log 2 ≈ 0.69 at θ = 0): no threshold can tell good rounds from bad, and the
paper's α = 1e-3 skips broadcasts at random (measured below). The gate gets a small share (:data:`SVT_SHARE`
= 2 %), so ≥ 98 % of ε goes to the releases. Its default threshold (tuned; not the paper's) is stated in
the gate's own noise units, :data:`ADMIT` = 4 noise scales below 0 (``gate_mechanisms(alpha=None)``):
a query whose θ̂ is no worse than the last release (q ≥ 0) is ⊥ with probability ≤ e^{−4} whatever the
data, and only a score below the threshold, which the noise can resolve only when it is small against
C_loss, is likely skipped. Blind, as at the defaults, the gate then admits nearly every chance and is a
cap of c releases (each agent's first c rounds, Adult ε = 1: 0.3 % skipped); the paper's α = 1e-3 stays
available (``alpha=1e-3``, and the paper variant), and skips about half the chances at random (frontier
and the tables under the defaults below).

Returned model (both variants; ``average``): by default (``"tail"``) the second half of each
agent's releases averaged (its releases numbered ⌊c/2⌋ to c − 1, or its last one if it made fewer;
:class:`~dpkit.algorithms.substrate.admm_loops.PublishedAverage`), then averaged over the agents;
``"last"`` takes the last published values. Post-processing of the releases, so ε covers it. With
PP-ADMM's T = c broadcasts this is its own tail mean; averaging the held values over the rounds
t ≥ ⌊T/2⌋ instead weighted an agent's last release by how long its gate skipped.

Why the deadline. The ledger charges each agent c releases whatever the gate answers (the number
of ⊤ is data-dependent), and the paper's gate, skipping about half its chances at random, left an
agent with fewer than c broadcasts in most runs (Adult, ε = 1, at the former c = 5, T = 10: 19.8 of
the 25 paid for, on average) and sometimes with none: noise paid for and not used. With the
deadline every agent makes exactly c releases, so the broadcasts saved against PP-ADMM run for T
rounds are N(T − c) whatever the gate answers; the gate chooses when an agent broadcasts, not how
often. Measured at the former c = 5, T = 10 on the validation splits (75 % of each seed's training
rows fit, 25 % score; ε = 1, seeds 0–23, private ranges), deadline and release tail mean against
the gate as written with the round tail mean: Fair +0.65 ± 0.25, PSID7682 +0.64 ± 0.50, NMES1988
+0.53 ± 0.29 and Workinghours +1.05 ± 0.37 points (paired, ± s.e.); against PP-ADMM at equal ε
−0.36, −1.33, −0.07 and −0.57 points (before: −1.01, −1.97, −0.60 and −1.61). At the defaults
(c = 15, T = 30): −0.39, −1.89, −0.99 and −1.04 points against PP-ADMM at its T = 20.

At the paper's threshold (``alpha=1e-3``, the default until the admitting one replaced it) one run's
skip share varies around its expectation: each agent's threshold noise is drawn once (Lyu et al.,
Alg. 1), and a run has few chances. At the former c = 5, T = 10 (about 31 queries on Adult),
``dpkit train --algorithm ipp-admm --epsilon 1`` (seed 0) skipped 6 of 31 chances (0.194), and over
seeds 0–79 the share had mean 0.490 and sd 0.116, with 2 runs below 0.2. At c = 15, T = 30 (about
110 queries) seed 0 skips 36 of 111 (0.324); over seeds 0–79 the share has
mean 0.497 and sd 0.078 (lowest 0.306, highest 0.676), none outside 20–90 %. Each run reports the
share its gates give on average (``gate_expected_skip_share``, :func:`expected_skip_share`:
0.49–0.51 there), beside the share it realised.

The threshold drawn once or afresh (``redraw``, corrected variant only; off by default).
``redraw=True`` runs c SVTs with cut-off 1 back to back at ε_SVT/c each (Dwork & Roth 2014, Alg. 2:
the threshold drawn afresh after every ⊤; the same pure ε₁ + ε₂ in total, a multiplier z 0.2 %
smaller at c = 5). Measured at the former c = 5, T = 10, it steadied the share on Adult (seeds
0–79: mean 0.606, sd 0.099, none outside 20–90 %; test accuracy 0.8195 against 0.8191; validation,
seeds 0–3: 0.8201 against 0.8185), but it skipped more, and on two-agent tables skipping costs
accuracy: on the four smaller published tables (validation splits, ε = 1, seeds 0–23, paired ± s.e.)
it changed accuracy by −0.13 ± 0.23 (Fair), −0.38 ± 0.87 (PSID7682), −0.68 ± 0.39 (NMES1988) and
−0.74 ± 0.57 (Workinghours) points, and ipp-admm on Workinghours (test split, seeds 0–9) fell from
52 % to 46 % of the margin. At the defaults (c = 15, T = 30) it still costs there: −0.23 ± 0.29,
−1.01 ± 0.68, −0.27 ± 0.50 and −1.48 ± 0.65 points (share 0.66, sd 0.10). The gate being blind, an
admitting gate equals PP-ADMM there (0.7107, 0.7035, 0.8320, 0.7418 against 0.7120, 0.7034, 0.8311,
0.7422, at c = 5) and every skipped chance costs. So the default keeps Lyu's single threshold, and a
run's share is steadied by its number of chances instead (c and T below).

``"paper"``: the paper's pipeline (:func:`~dpkit.algorithms.pp_admm.pp_admm.paper_parameters` with c
releases and an SVT share of ρ_total — the paper gives none, :data:`PAPER_IPP` records ours), Alg. 2's
noise scales Lap(2cC_loss/ε₁) and Lap(4cC_loss/ε₂) (sensitivity 2C_loss of Lemma 4.2), b_i1 in
every round (the SVT query needs θ̂ every round), σ_i1 with ε_i3 (Alg. 2 line 6 writes ε_i1, a typo).
The ledger records the SVT at the true sensitivity (the same noise, so smaller effective ε₁, ε₂)
and b_i2 at 2β/μ_i. ``paper_claim`` is Theorem 4.1: ρ' = (ε₁+ε₂)²/2 + c(ε_i1²/(4 ln 1/δ_i1) + ρ_i2).

Defaults of the corrected variant (data-independent)
----------------------------------------------------
* ``cap`` c = :data:`CAP` = 15 releases and ``iterations`` T = 2c = 30: the paper's setting (§5).
  Against the former c = 5, T = 10 (PP-ADMM's then five releases), at ε = 1: validation accuracy
  +0.31 ± 0.22 points on Adult (seeds 0–15) and +0.43 ± 0.25 (Fair), +0.77 ± 0.72 (PSID7682),
  −0.43 ± 0.39 (NMES1988) and −0.46 ± 0.53 (Workinghours) on the four smaller published tables
  (seeds 0–23; paired ± s.e.); Adult test accuracy over seeds 0–79 0.8199 against 0.8191. More
  releases cost more noise each (z grows as √c), but ``default_eta`` keeps the release noise at
  σ₀ and the tail mean averages more of them. A run's skip share then pools about three times as
  many chances, so it stays near its expectation (above: sd 0.078 against 0.116 on Adult; in the
  96 validation runs on two- and three-agent tables, 1 outside 20–90 % against 7). It costs 20
  more rounds (2.1 s against 0.7 s for a default Adult run). On the test splits of the published
  tables (private ranges, ε = 1) Workinghours went from 36 % to 83 % of the margin (seeds 0–2) and
  from 52 % to 75 % (seeds 0–9);
* ``clip`` C_loss = 2 (the paper's, Fig. 3) and ``alpha`` None: the admitting threshold
  −:data:`ADMIT`·(b₁ + b₂) in each agent's gate noise units (data-independent: b₁, b₂ come from
  ε, c, T, |D_i| and Δ_i). The paper's threshold (Fig. 4), ``alpha`` = :data:`ALPHA` = 1e-3 on the
  quality score's own scale, makes the gate selective in the paper's sense (it skips chances:
  measured below) but, its noise being far above any quality value, it skips at random, and
  IPP-ADMM trailed PP-ADMM at equal ε while it was the default. The measured frontier
  (``benchmarks/ipp_gate.py --seeds 0 1 2 3 --alphas -1000 -150 -75 paper 90 300 --deadline on off``,
  Adult, ε = 1, validation rows held out of the training rows; skip share = ⊥ answers / queries;
  broadcasts saved of N·T = 150; PP-ADMM at equal ε, T = 20: 0.8243):

  ===========================  ===========  ==========  ========  ===========  ==========  ========
  threshold α                  val. acc.    skip share  saved     val. acc.    skip share  saved
                               (deadline)   (deadline)  (deadl.)  (Alg. 2)     (Alg. 2)    (Alg. 2)
  ===========================  ===========  ==========  ========  ===========  ==========  ========
  −1000 (admits all)           0.8246       0.000       75        0.8246       0.000       75
  −150                         0.8250       0.035       75        0.8250       0.035       75
  −75                          0.8241       0.130       75        0.8241       0.130       75
  1e-3 (the paper's)           0.8209       0.443       75        0.8162       0.470       84.0
  90                           0.8219       0.854       75        0.7280       0.892       133.8
  300                          0.8250       0.997       75        0.3715       0.998       149.8
  ===========================  ===========  ==========  ========  ===========  ==========  ========

  No threshold both skips 20–90 % of the chances and matches PP-ADMM (the paper's trails it by
  0.34 points, α = 90 by 0.24; at the former c = 5, T = 10 it trailed PP-ADMM's then T = 5 by 0.48).
  −:data:`ADMIT`·(b₁ + b₂) ≈ −300 (Adult, ε = 1; the default since the paper's α missed the
  margin targets on modeldata's credit_data) admits every query like ``alpha=-1000``: PP-ADMM with c
  broadcasts over 2c rounds. Re-measured with today's code (seeds 0–3, deadline on): the default
  0.8244 (skip share 0.003), the paper's α 0.8129 (0.496), PP-ADMM 0.8257. On the validation splits
  of the ten published tables of ≥ 4,000 rows with a ≥ 5-point margin (75 % of each seed's training
  rows fit, 25 % validate, private ranges, seeds 0–5) the admitting threshold beat the paper's in 19
  of 20 cells (ε = 1 and 3), credit_data 36 % → 66 % of the margin at ε = 1 and 70 % → 75 % at ε = 3
  (seeds 0–11: 32 % → 66 %, 68 % → 81 %; thresholds 0.25, 0.5 and 1 noise scales below 0 skip 42 %,
  31 % and 18 % and recover 52 %, 40 % and 53 % at ε = 1, all below the admitting gate). The paper's
  α keeps its expected skip share in 20–90 % for any data, and simulated Adult runs at α = 1e-3 at the
  extreme constant scores fall outside it with probability below 0.5 % (tests/algorithms/test_ipp_gate.py).
* ``deadline`` on (the corrected variant; off in the paper variant), above.
* η, λ̂, β as in PP-ADMM; ``svt_share`` = :data:`SVT_SHARE`.

Examples
--------
>>> from dpkit.algorithms.substrate.budget import Budget
>>> from dpkit.algorithms.substrate.data import make_synthetic
>>> from dpkit.algorithms.substrate.graphs import ring
>>> from dpkit.algorithms.substrate.partition import partition
>>> data = make_synthetic(2000, 3, rng=0)
>>> result = train_ipp_admm(partition(data, 4, rng=0), ring(4), budget=Budget(1.0, 1e-5), cap=3, iterations=6, rng=0)
>>> result.guarantee.epsilon <= 1.0, max(result.config["broadcasts"]) <= 3
(True, True)
"""

from __future__ import annotations

import dataclasses
import math
from fractions import Fraction
from typing import Any, Callable, Sequence

import numpy as np

from dpkit._validation import check_finite, check_integer, check_positive, check_rng, check_unit_interval
from dpkit.accounting.calibration import CalibrationResult
from dpkit.accounting.events import PrivacyEvent
from dpkit.algorithms.substrate.admm_loops import PublishedAverage, decentralised_loop, round_recorder
from dpkit.algorithms.substrate.budget import Budget, calibrate_noise
from dpkit.algorithms.substrate.data import Dataset
from dpkit.algorithms.substrate.evaluation import Evaluator
from dpkit.algorithms.substrate.graphs import Graph
from dpkit.algorithms.substrate.losses import Logistic, empirical_value
from dpkit.algorithms.pp_admm.pp_admm import (
    AGENTS,
    LAMBDA,
    MODEL_NOTES,
    NOISE_STD,
    PAPER_SETTING,
    _check_common,
    calibrate_multiplier as release_multiplier,
    default_beta,
    default_eta,
    local_objectives,
    paper_claim,
    paper_mechanisms,
    paper_parameters,
    release_mechanisms,
)
from dpkit.algorithms.substrate.result import TrainingResult, finish
from dpkit.algorithms.substrate.spec import AlgorithmSpec, graph_runner
from dpkit.mechanisms.float_sensitivity import UNIT_ROUNDOFF, interval_mean_sensitivity, mean_error, round_up
from dpkit.mechanisms.gaussian import GaussianMechanism
from dpkit.mechanisms.sparse_vector import GatedRelease, GatedReleaseRun, SparseVector, svt_budget_split

__all__ = [
    "CAP", "SVT_SHARE", "ADMIT", "PAPER_IPP", "CLIP", "ALPHA", "EXPECTED_RUNS", "default_cap", "quality_scores",
    "quality_sensitivity",
    "gate_mechanisms", "paper_gate", "due", "gate_counts", "deadline_counts", "simulated_counts", "expected_skip_share",
    "skip_share",
    "calibrate_multiplier", "publish_gated", "train_ipp_admm", "SPEC",
]

CAP = 15
"""Default cap c of both variants, with T = 2c rounds in the corrected one: the paper's setting
(Ding et al. 2020, §5: c = 15 of T = 30; module docstring)."""
SVT_SHARE = 0.02
"""Corrected variant: fraction of ε given to the SVT (ε₁ + ε₂ = SVT_SHARE·ε)."""
ADMIT = 4.0
"""The admitting threshold of ``gate_mechanisms(alpha=None)`` (the corrected variant's default), in noise units:
α_i = −ADMIT·(b₁ + b₂) for agent i's threshold and query Laplace scales b₁, b₂, so a query with q ≥ 0 is
answered ⊥ with probability ≤ P(ν < −ADMIT·b₂) + P(ρ > ADMIT·b₁) = e^{−ADMIT} (< 2 %)."""
PAPER_IPP = {"cap": CAP, "clip": 2.0, "alpha": 1e-3, "svt_fraction": 0.1}
"""Paper variant: c, C_loss, α (Ding et al. 2020, §5) and the SVT's share of ρ_total (not given by the paper)."""
CLIP = 2.0
"""Default loss clip C_loss (Ding et al. 2020, Fig. 3)."""
ALPHA = 1e-3
"""The paper's SVT threshold α (Ding et al. 2020, Fig. 4): the paper variant's default, and the corrected
variant's with ``alpha=ALPHA`` (its default is the admitting threshold, :data:`ADMIT`)."""


def default_cap(iterations: int | None) -> int:
    """c when none is given: :data:`CAP`, or ⌊T/2⌋ if fewer than 2·CAP rounds T are asked for (the
    paper's c/T = 15/30), at least 1.

    >>> default_cap(None), default_cap(100), default_cap(10), default_cap(3)
    (15, 15, 5, 1)
    """
    if iterations is None:
        return CAP
    return max(1, min(CAP, check_integer("iterations", iterations, minimum=1) // 2))


def quality_scores(parts: Sequence[Dataset], previous: np.ndarray, candidates: np.ndarray, clip: float,
                   loss=None) -> np.ndarray:
    """q_i = mean_n min(ℓ, C)(θ_i^t) − mean_n min(ℓ, C)(θ̂_i) for every agent (Ding et al. 2020, Alg. 2 line 9)."""
    loss = loss or Logistic()
    clip = check_positive("clip", clip)
    return np.array([float(empirical_value(loss, previous[i], p.X, p.y, clip) -
                           empirical_value(loss, candidates[i], p.X, p.y, clip)) for i, p in enumerate(parts)])


def quality_sensitivity(n_samples: int, clip: float, release_sensitivity: float) -> float:
    """Δ_q = 2C_loss/|D_i| + Δ_i (module docstring) plus the rounding of the computed score, rounded up.

    q is computed as fl(Â − B̂), Â and B̂ ``np.mean`` of |D_i| clipped losses in [0, C_loss]:
    each mean moves by at most C_loss/|D_i| (+ Δ_i for B̂) plus both sides' rounding
    (:func:`~dpkit.mechanisms.float_sensitivity.interval_mean_sensitivity`, Higham 2002,
    eq. (4.4)), and the subtraction adds u·|Â − B̂| ≤ u·(C_loss + the mean's error) on each side.
    The rounding of the per-record losses themselves at θ̂ (the Δ_i part) is not covered.

    >>> round(quality_sensitivity(100, 2.0, 0.01), 12)
    0.05
    """
    n_samples = check_integer("n_samples", n_samples, minimum=1)
    clip = check_positive("clip", clip)
    mean = Fraction(interval_mean_sensitivity(n_samples, 0.0, clip))
    subtraction = 2 * UNIT_ROUNDOFF * (Fraction(clip) + Fraction(mean_error(n_samples, clip)))
    return round_up(2 * mean + Fraction(check_positive("release_sensitivity", release_sensitivity)) + subtraction)


def gate_mechanisms(releases: Sequence[GaussianMechanism], sizes: Sequence[int], *, epsilon_svt: float, cap: int,
                    clip: float, alpha: float | None, max_queries: int | None = None,
                    redraw: bool = False) -> list[GatedRelease]:
    """Agent i's gated release (corrected variant): an SVT with ε₁ + ε₂ = ``epsilon_svt`` (Lyu's split
    and noise) on queries of sensitivity :func:`quality_sensitivity`, releasing through ``releases[i]``
    (whose sensitivity is Δ_i). Threshold ``alpha``, or None for −:data:`ADMIT`·(b₁ + b₂) (the
    agent's noise scales; data-independent). ``max_queries`` (the number of rounds T) caps the gate's
    queries and goes into its event, so the accountants may also use Zhu & Wang (2020)'s RDP bound.

    ``redraw``: instead of one SVT with cut-off c, c SVTs with cut-off 1 back to back, each at
    ``epsilon_svt``/c (Lyu's split for c = 1), the threshold drawn afresh after every ⊤ (Dwork &
    Roth 2014, Alg. 2; :class:`~dpkit.mechanisms.sparse_vector.GatedRelease` with ``restarts`` = c).
    Same pure ε₁ + ε₂ in total; each agent's skip share is then set by c threshold draws, not one."""
    runs, cutoff = (cap, 1) if redraw else (1, cap)
    eps1, eps2 = svt_budget_split(epsilon_svt / runs, cutoff)
    gates = []
    for rel, m in zip(releases, sizes):
        gate = SparseVector(eps1, eps2, threshold=0.0 if alpha is None else alpha, cutoff=cutoff,
                            sensitivity=quality_sensitivity(m, clip, rel.sensitivity), max_queries=max_queries)
        if alpha is None:
            gate = dataclasses.replace(gate, threshold=-ADMIT * (gate.threshold_scale + gate.query_scale))
        gates.append(GatedRelease(gate, rel, restarts=runs))
    return gates


def paper_gate(epsilon_svt: float, cap: int, n_samples: int, clip: float, release_sensitivity: float,
               alpha: float) -> SparseVector:
    """Agent i's SVT under the paper's calibration (Ding et al. 2020, Alg. 2 line 9).

    Noise Lap(2cC_loss/ε₁) on the threshold and Lap(4cC_loss/ε₂) on each query (Lemma 4.2's
    sensitivity 2C_loss, ε₁ : ε₂ = 1 : (2c)^{2/3}); the mechanism is recorded at the true
    sensitivity Δ_q of :func:`quality_sensitivity`, i.e. with the effective budgets ε·Δ_q/(2C_loss)
    that give exactly these noise scales.

    >>> gate = paper_gate(1.0, 15, 7000, 2.0, 0.01, 1e-3)
    >>> round(gate.query_scale, 6), round(gate.threshold_scale, 4)
    (132.42893, 639.2936)
    """
    eps1, eps2 = svt_budget_split(epsilon_svt, cap)
    true = quality_sensitivity(n_samples, clip, release_sensitivity)
    scale = true / (2.0 * clip)
    return SparseVector(eps1 * scale, eps2 * scale, threshold=alpha, cutoff=cap, sensitivity=true,
                        threshold_noise="ding")


def _run_event(noise_multiplier: float, epsilon_svt: float, cap: int, iterations: int | None,
               redraw: bool = False) -> PrivacyEvent:
    # One agent's gated run; the SVT's event does not depend on its sensitivity, the Gaussian's only on σ/Δ.
    gaussian = GaussianMechanism(sigma=noise_multiplier, sensitivity=1.0)
    return gate_mechanisms([gaussian], [1], epsilon_svt=epsilon_svt, cap=cap, clip=1.0, alpha=0.0,
                           max_queries=iterations, redraw=redraw)[0].event


def calibrate_multiplier(budget: Budget, cap: int, svt_share: float = SVT_SHARE,
                         iterations: int | None = None, redraw: bool = False) -> CalibrationResult:
    """The smallest z = σ_i2/Δ_i for which the SVT at ``svt_share``·ε (at most ``iterations`` queries)
    plus ``cap`` releases meet ``budget``.

    The search starts from the bracket [z₀, z₀/(1 − share)], z₀ the multiplier of the ``cap`` releases
    alone (exact GDP, :func:`~dpkit.algorithms.pp_admm.pp_admm.calibrate_multiplier`): adding the SVT
    can only need more noise, and the releases at (1 − share)·ε plus the SVT meet ε by basic
    composition. Only the bracket is chosen so (it is widened if it misses the boundary); every z
    is judged by the tightest accountant, and the PLD's grids for z near the boundary are small
    (far from it, e.g. z = 0.1, one evaluation alone takes seconds).
    """
    svt_share = check_unit_interval("svt_share", svt_share, include_zero=False, include_one=False)
    cap = check_integer("cap", cap, minimum=1)
    if iterations is not None:
        iterations = check_integer("iterations", iterations, minimum=1)
    releases_alone = float(release_multiplier(budget, cap).parameter)
    return calibrate_noise(lambda z: _run_event(z, svt_share * budget.epsilon, cap, iterations, redraw), budget,
                           lower=releases_alone, upper=releases_alone / (1.0 - svt_share))


def due(made: Any, cap: int, rounds_left: Any) -> Any:
    """The deadline: an agent that has made ``made`` of its ``cap`` releases, with ``rounds_left``
    rounds to go (this one included), must broadcast now to make them all (a rule on public counts).
    Elementwise on arrays (:func:`deadline_counts`).

    >>> bool(due(3, 5, 2)), bool(due(3, 5, 3)), bool(due(5, 5, 1))
    (True, False, False)
    """
    left = cap - made
    return (left > 0) & (left >= rounds_left)


def gate_counts(rounds: Sequence[Sequence[int]], agents: int, cap: int,
                deadline: int | None = None) -> tuple[list[int], list[int], list[int]]:
    """(broadcasts, queries, forced) per agent from the released sequence of who broadcast in each
    round: an agent is queried every round until its c-th broadcast (Lyu et al. 2017, Alg. 1 stops
    there), except in the rounds where the deadline of a run of ``deadline`` = T rounds forces its
    broadcast (:func:`due`): those are ``forced``, not queries.

    >>> gate_counts([[0, 1], [0], [1], [1]], 2, 2)
    ([2, 2], [2, 3], [0, 0])
    >>> gate_counts([[0], [], [1], [0, 1]], 2, 2, deadline=4)  # agent 0 forced in round 3, agent 1 in rounds 2 and 3
    ([2, 2], [3, 2], [1, 2])
    """
    broadcasts, queries, forced = [0] * agents, [0] * agents, [0] * agents
    for t, sent in enumerate(rounds):
        for i in range(agents):
            if broadcasts[i] >= cap:
                continue
            if deadline is not None and due(broadcasts[i], cap, deadline - t):
                forced[i] += 1
            else:
                queries[i] += 1
            broadcasts[i] += i in sent
    return broadcasts, queries, forced


def deadline_counts(codes: np.ndarray, cap: int, rounds: int) -> tuple[np.ndarray, np.ndarray]:
    """(queries, ⊥ answers) per row of gate answers ``codes`` (runs, T) (int8 codes of
    :meth:`~dpkit.mechanisms.sparse_vector.GatedRelease.answers`) under the deadline (:func:`due`):
    from the first round in which an agent has as many releases left as rounds it broadcasts without a
    query, so only the answers before that round count (the gate's draws before it are the same either way).

    >>> codes = np.array([[0, 0, 0, 1, 1], [1, 1, -1, -1, -1]], dtype=np.int8)
    >>> deadline_counts(codes, 2, 5)  # row 0 is forced from round 3 on
    (array([3., 2.]), array([3., 0.]))
    """
    codes = np.asarray(codes)
    made = np.cumsum(codes == 1, axis=1) - (codes == 1)  # releases before each round
    due_now = due(made, cap, rounds - np.arange(codes.shape[1])[None, :])
    cut = np.where(due_now.any(axis=1), due_now.argmax(axis=1), rounds)
    before = np.arange(codes.shape[1])[None, :] < cut[:, None]
    return np.sum((codes >= 0) & before, axis=1).astype(float), np.sum((codes == 0) & before, axis=1).astype(float)


EXPECTED_RUNS = 4000
"""Simulated runs per agent and score behind :func:`expected_skip_share`."""


def simulated_counts(gates: Sequence[GatedRelease], rounds: int, score: float, *, deadline: bool, runs: int,
                     rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """(queries, ⊥ answers) of ``runs`` simulated whole runs of ``gates``, summed over the agents, every
    query scoring ``score``: the mechanism's own sampler
    (:meth:`~dpkit.mechanisms.sparse_vector.GatedRelease.answers`), with the deadline if ``deadline``
    (:func:`deadline_counts`). It reads the gates' public parameters only.

    >>> from dpkit.mechanisms.gaussian import GaussianMechanism
    >>> from dpkit.mechanisms.sparse_vector import GatedRelease, SparseVector
    >>> gate = GatedRelease(SparseVector(1.0, 1.0, threshold=0.0, cutoff=2), GaussianMechanism(sigma=1.0))
    >>> queries, skips = simulated_counts([gate, gate], 4, -1e3, deadline=False, runs=3, rng=np.random.default_rng(0))
    >>> queries.tolist(), skips.tolist()
    ([8.0, 8.0, 8.0], [8.0, 8.0, 8.0])
    """
    rounds = check_integer("rounds", rounds, minimum=1)
    runs = check_integer("runs", runs, minimum=1)
    stream = np.full(rounds, check_finite("score", score))
    queries, skips = np.zeros(runs), np.zeros(runs)
    for gate in gates:
        codes = gate.answers(stream, size=runs, rng=rng)
        if deadline:
            q, k = deadline_counts(codes, gate.cutoff, rounds)
        else:
            q, k = np.sum(codes >= 0, axis=1), np.sum(codes == 0, axis=1)
        queries, skips = queries + q, skips + k
    return queries, skips


def expected_skip_share(gates: Sequence[GatedRelease], rounds: int, scores: Sequence[float], *, deadline: bool,
                        runs: int = EXPECTED_RUNS, seed: int = 0) -> list[float]:
    """The skip share (Σ⊥/Σqueries over the agents) that runs of these gates give on average, for each
    constant quality score in ``scores``: ``runs`` simulated runs (:func:`simulated_counts`, a generator
    seeded by ``seed``, not the run's), with the deadline if ``deadline``. It reads the gates' public
    parameters only. A Monte Carlo estimate (standard error ≈ 0.5/√(runs·agents·queries per run), below
    0.005 at the defaults).

    >>> from dpkit.mechanisms.gaussian import GaussianMechanism
    >>> from dpkit.mechanisms.sparse_vector import GatedRelease, SparseVector
    >>> gate = GatedRelease(SparseVector(1.0, 1.0, threshold=0.0, cutoff=2), GaussianMechanism(sigma=1.0))
    >>> low, high = expected_skip_share([gate], 4, [1e3, -1e3], deadline=False)
    >>> low, high
    (0.0, 1.0)
    """
    generator = np.random.default_rng(seed)
    shares = []
    for score in scores:
        queries, skips = simulated_counts(gates, rounds, score, deadline=deadline, runs=runs, rng=generator)
        total = float(np.sum(queries))
        shares.append(float(np.sum(skips)) / total if total else 0.0)
    return shares


def skip_share(queries: Sequence[int], above: Sequence[int]) -> float:
    """Share of the gate's chances it answered ⊥: Σ(queries − ⊤ answers)/Σ queries over the agents
    (a query is a round in which the agent could still broadcast and was not forced to; computed
    from the gate's public answers, so covered by ε).

    >>> skip_share([10, 8], [5, 5])
    0.4444444444444444
    """
    total = sum(queries)
    return float(sum(q - b for q, b in zip(queries, above)) / total) if total else 0.0


def publish_gated(runs: Sequence[GatedReleaseRun], quality: np.ndarray, solutions: np.ndarray,
                  previous: np.ndarray, forced: Sequence[int] = ()) -> tuple[np.ndarray, list[int]]:
    """One round of gated broadcasts (Alg. 2 lines 9–16): agent i publishes its run's release of θ̂_i
    on ⊤, else keeps θ_i^t. The agents in ``forced`` (the deadline, :func:`due`, decided on public
    counts) publish without consulting their gates
    (:meth:`~dpkit.mechanisms.sparse_vector.GatedReleaseRun.release_now`). Returns the published
    values and the agents that published."""
    out = np.array(previous, float, copy=True)
    sent = []
    for i, run in enumerate(runs):
        released = run.release_now(solutions[i]) if i in forced else run.step(float(quality[i]), solutions[i])
        if released is not None:
            out[i] = released
            sent.append(i)
    return out, sent


def train_ipp_admm(
    parts: Sequence[Dataset], graph: Graph, *, budget: Budget, variant: str = "corrected",
    iterations: int | None = None, test: Dataset | None = None, rng: np.random.Generator | int | None = 0,
    progress: Callable[[int, int], None] | None = None, cap: int | None = None, eta: float | None = None,
    lam: float | None = None, beta: float | None = None, clip: float | None = None, alpha: float | None = None,
    svt_share: float | None = None, noise_std: float | None = None, average: str = "tail",
    deadline: bool | None = None, redraw: bool | None = None,
) -> TrainingResult:
    """Train IPP-ADMM (module docstring) and return a :class:`~dpkit.algorithms.substrate.result.TrainingResult`.

    Parameters
    ----------
    budget, variant, iterations, eta, lam, beta, noise_std, average
        As in :func:`~dpkit.algorithms.pp_admm.pp_admm.train_pp_admm` (T defaults to 2c corrected, 30 paper).
    cap
        c, the most broadcasts per agent (< T; None: :func:`default_cap`, :data:`CAP` = 15, the paper's,
        or ⌊T/2⌋ for fewer than 30 ``iterations``).
    clip, alpha
        C_loss and the SVT threshold α on the quality score's own scale (None: corrected, the admitting
        threshold −:data:`ADMIT`·(b₁ + b₂) in the agent's gate noise units; paper, the paper's :data:`ALPHA`
        = 1e-3, which ``alpha=1e-3`` also gives the corrected variant; ``benchmarks/ipp_gate.py`` measures
        other values).
    svt_share
        Corrected: the SVT's fraction of ε (None: :data:`SVT_SHARE`).
    deadline
        Whether an agent with as many releases left as rounds broadcasts without consulting its gate,
        so that it makes all c releases its ledger entry pays for (None: True corrected, False paper,
        whose Alg. 2 has no such rule).
    redraw
        Corrected only: c SVTs with cut-off 1, the threshold drawn afresh after every ⊤ (Dwork &
        Roth 2014, Alg. 2), instead of one SVT with cut-off c (None: False; module docstring).
    """
    parts, sizes, degrees = _check_common(parts, graph, budget, variant)
    paper = variant == "paper"
    gen = check_rng(rng)
    loss = Logistic()
    N, d = len(parts), parts[0].d
    if iterations is not None:
        iterations = check_integer("iterations", iterations, minimum=1)
    cap = check_integer("cap", cap if cap is not None else default_cap(iterations), minimum=1)
    T = iterations if iterations is not None else (PAPER_SETTING["iterations"] if paper else 2 * cap)
    if cap >= T:
        raise ValueError(f"cap must be < iterations={T} (Ding et al. 2020, Thm 4.1), got cap={cap}")
    beta = check_positive("beta", beta if beta is not None else
                          (PAPER_SETTING["beta"] if paper else default_beta(sizes, loss.c1)))
    clip = check_positive("clip", clip if clip is not None else CLIP)
    if alpha is not None or paper:
        alpha = check_finite("alpha", alpha if alpha is not None else ALPHA)
    deadline = (not paper) if deadline is None else deadline
    if not isinstance(deadline, bool):
        raise TypeError(f"deadline must be True or False, got deadline={deadline!r}")
    redraw = False if redraw is None else redraw
    if not isinstance(redraw, bool):
        raise TypeError(f"redraw must be True or False, got redraw={redraw!r}")
    if paper and redraw:
        raise ValueError("redraw applies to the corrected variant only (the paper variant runs Alg. 2's SVT)")
    ledger = budget.ledger(N)
    config: dict[str, Any] = {"iterations": T, "cap": cap, "agents": N, "beta": beta, "clip": clip,
                              "alpha": alpha, "deadline": deadline, "redraw": redraw, "budget": budget.to_dict(),
                              "graph": graph.to_dict(), "loss": loss.name}
    perturb = None
    claim = None
    if paper:
        if lam is not None or svt_share is not None or noise_std is not None:
            raise ValueError("lam, svt_share and noise_std apply to the corrected variant only")
        eta = check_positive("eta", eta if eta is not None else PAPER_SETTING["eta"])
        params = paper_parameters(budget.epsilon, budget.delta, sizes=sizes, degrees=degrees, releases=cap, eta=eta,
                                  beta=beta, splits=PAPER_SETTING["splits"],
                                  epsilon3_ratio=PAPER_SETTING["epsilon3_ratio"], delta_i1=PAPER_SETTING["delta_i1"],
                                  svt_fraction=PAPER_IPP["svt_fraction"], c3=loss.c3)
        lam = params.lam_hat
        objective_mechs, output_mechs = paper_mechanisms(params, sizes, beta, loss.c1, loss.c3)
        eps_svt = math.sqrt(2.0 * params.rho_svt)
        gates = [GatedRelease(dataclasses.replace(paper_gate(eps_svt, cap, m, clip, rel.sensitivity, alpha),
                                                  max_queries=T), rel)
                 for m, rel in zip(sizes, output_mechs)]
        eps1, eps2 = svt_budget_split(eps_svt, cap)
        zeros = np.zeros(d)

        def perturb(t: int) -> np.ndarray:
            return np.stack([m.release(zeros, rng=gen, ledger=ledger, agent=i) for i, m in enumerate(objective_mechs)])

        claim = paper_claim(params, svt_epsilon=eps1 + eps2)
        config.update({"parameters": params.to_dict(), "epsilon_svt": eps1 + eps2,
                       "svt_fraction": PAPER_IPP["svt_fraction"]})
    else:
        lam = check_positive("lam", lam if lam is not None else LAMBDA)
        svt_share = check_unit_interval("svt_share", svt_share if svt_share is not None else SVT_SHARE,
                                        include_zero=False, include_one=False)
        calibration = calibrate_multiplier(budget, cap, svt_share, T, redraw)
        z = float(calibration.parameter)
        noise_std = check_positive("noise_std", noise_std if noise_std is not None else NOISE_STD)
        eta = check_positive("eta", eta if eta is not None else default_eta(z, sizes, degrees, beta, loss.c1, noise_std))
        mu = local_objectives(parts, lam, loss).with_terms(kappa=2.0 * eta * graph.degrees.astype(float)).mu
        output_mechs = release_mechanisms(sizes, [float(u) for u in mu], beta, z, loss.c1)
        gates = gate_mechanisms(output_mechs, sizes, epsilon_svt=svt_share * budget.epsilon, cap=cap, clip=clip,
                                alpha=alpha, max_queries=T, redraw=redraw)
        config["alpha"] = [g.gate.threshold for g in gates]
        config.update({"noise_multiplier": z, "calibrated_epsilon": float(calibration.epsilon), "svt_share": svt_share,
                       "sensitivity": [m.sensitivity for m in output_mechs], "sigma": [m.sigma for m in output_mechs],
                       "sigma_objective": 0.0})
    config.update({"lam": lam, "eta": eta})
    config["query_sensitivity"] = [g.gate.sensitivity for g in gates]
    config["svt_noise_scales"] = [[g.gate.threshold_scale, g.gate.query_scale] for g in gates]
    # a quality score lies in [−C_loss, C_loss] and P(⊥) falls as it grows: the range is data-independent
    config["gate_skip_probability"] = [min(g.gate.below_probability(clip) for g in gates),
                                       max(g.gate.below_probability(-clip) for g in gates)]
    # the share that runs of these gates give on average, for the extreme constant scores (public parameters only)
    config["gate_expected_skip_share"] = expected_skip_share(gates, T, [clip, -clip], deadline=deadline)
    F = local_objectives(parts, lam, loss)
    returned = PublishedAverage(average, T, releases=cap)
    runs = [gate.open(rng=gen, ledger=ledger, agent=i) for i, gate in enumerate(gates)]
    rounds: list[list[int]] = []

    made = [0] * N

    def publish(t: int, solutions: np.ndarray, previous: np.ndarray) -> np.ndarray:
        forced = [i for i in range(N) if deadline and due(made[i], cap, T - t)]
        out, sent = publish_gated(runs, quality_scores(parts, previous, solutions, clip, loss), solutions, previous,
                                  forced)
        for i in sent:
            made[i] += 1
        rounds.append(sent)
        returned.add(t, out, sent)
        return out

    evaluator = Evaluator(loss, parts, test, max(1, T // 50))
    evaluator.record(0, np.zeros((N, d)), np.zeros((N, d)))
    state = decentralised_loop(F, graph, eta=eta, iterations=T, beta=beta, theta0=np.zeros((N, d)), perturb=perturb,
                               publish=publish, on_round=round_recorder(evaluator, T, progress))
    broadcasts, queries, forced = gate_counts(rounds, N, cap, T if deadline else None)
    config.update({"max_grad_norm": state.max_grad_norm, "broadcasts": broadcasts, "broadcast_rounds": rounds,
                   "gate_queries": queries, "forced_broadcasts": forced,
                   "gate_skip_share": skip_share(queries, [b - f for b, f in zip(broadcasts, forced)]),
                   "broadcasts_saved": N * T - sum(broadcasts)})
    models = returned.models()
    config["average"] = average
    notes = (MODEL_NOTES[average],
             "each agent's ledger entry covers c releases (the cap), whatever the number of broadcasts",
             "the SVT (at most T queries) is charged the smaller of its pure epsilon1 + epsilon2 (PLD) and its "
             "Renyi-DP bound (Zhu & Wang 2020)")
    return finish("ipp-admm", variant, models, models.mean(axis=0), evaluator, test, ledger,
                  budget.delta, state.seconds, config, paper_claim=claim, notes=notes)


SPEC = AlgorithmSpec(
    name="ipp-admm", runner=graph_runner(train_ipp_admm), topology="graph", agents=AGENTS, n_train=35_000, delta=1e-5,
    description="PP-ADMM with sparse-vector-gated broadcasts (Ding et al. 2020, CIKM, Alg. 2)",
    options=("cap", "eta", "lam", "beta", "clip", "alpha", "svt_share", "noise_std", "average", "deadline", "redraw"),
)
