"""The plan of an A-DDP run: noise σ, rounds, clip, step size and regularisation, from the budget.

Corrected variant (:func:`corrected_plan`, dpkit's default)
------------------------------------------------------------
Every round each user u uploads one clipped gradient of one of its m_u records plus N(0, σ² I):
the event ``SampledWithoutReplacementEvent(GaussianEvent(σ, 2C), 1, m_u)`` under replace-one
(:mod:`dpkit.algorithms.a_ddp.upload`). One record belongs to one user, and the other users see
it only through that user's uploads, so the run is the parallel composition over users
(McSherry 2009, Thm 4) of each user's T-fold adaptive composition (:func:`planned_event`).
σ is the smallest value whose whole planned run meets the budget under the tightest accountant
(:func:`calibrated_sigma`, :func:`~dpkit.algorithms.substrate.budget.calibrate_noise`): for sampling
without replacement under replace-one that is the privacy-loss distribution of the dominating
pair (Zhu, Dong & Wang 2022, Prop. 30), with RDP (Wang, Balle & Kasiviswanathan 2019, Thm 9;
Balle et al. 2020, Thm 21) as the fallback. The run never goes past T.

Defaults (data-independent: from n, d, the number of users and the budget only)

* clip C = 1/2 (:data:`CLIP`): with ||x|| ≤ 1 and |ℓ′| ≤ 1 every logistic gradient has norm
  ≤ 1; clipping at 1/2 halves the sensitivity 2C, hence σ, and changes only the gradients of
  records with |ℓ′|·||x|| > 1/2 (those the model gets wrong or nearly so), whose direction it
  keeps (Abadi et al. 2016, §3.1: a clip below the largest gradient norm trades a small bias
  for less noise). On Adult C = 1/2 gains about 0.002 accuracy over C = 1, and C = 1/4 no more.
  (The paper's C = 3 never clips and only multiplies the noise by 6 against C = 1/2.)
* rounds T = :data:`EPOCHS`·n/U (:func:`default_rounds`): each record is sampled about
  :data:`EPOCHS` times. The accuracy is set by the noise of the averaged gradient,
  ≈ σ√(d/(U T)); σ grows more slowly than √T at these sampling rates (Adult default: σ/(2C) ≈
  0.71 at ε = 3, 1.2 at ε = 1), so more rounds keep helping and T is a run-time choice: every
  upload costs d Gaussian draws (Adult: 80 epochs of 20 users are 2.9 M uploads, 3.6·10⁸ draws).
* regularisation λ = σ√(d/(U T))/R with R = 10 (:func:`default_regularisation`): averaged noisy
  gradient steps approximately minimise F(θ) + bᵀθ with b the mean of all the noise vectors,
  ||b|| ≈ σ√(d/(U T)); the λ-strongly convex objective F + λ/2||θ||² moves by at most ||b||/λ =
  R under that perturbation (R = 10 is the scale of a useful logistic model on unit-norm rows:
  margins of 10 are probabilities within e^{−10} of 0 or 1).
* averaging: the returned model is the mean of the iterates after the first
  ⌊:data:`BURN_IN`·T⌋ = ⌊T/10⌋ rounds (:func:`burn_in_rounds`; Polyak & Juditsky 1992). The
  average's noise falls with the number of iterates it covers, so it covers 90 % of them.
* step size η = min(1/L, K/(λT)) with L = 1/4 + λ and K = :data:`STEP_DECAYS` = 5
  (:func:`default_step_size`). With a constant step the average of the iterates does not converge
  to the minimiser of a non-quadratic loss: its limit is off by a term proportional to η and to
  the covariance of the gradient noise (Dieuleveut, Durmus & Bach, "Bridging the gap between
  constant step size stochastic gradient descent and Markov chains", Ann. Statist. 2020), and here
  the upload noise (σ²d/U a round) dwarfs the gradients, while the averaged noise itself hardly
  depends on η. So η is the smallest that still converges: over the run the iterate forgets the
  start by (1 − ηλ)^T ≈ e^{−K} even where only λ curves the objective, and over the burn-in by
  e^{−4} wherever the data's curvature is ≥ 7λ ((1 − η(h + λ))^{T/10} ≈ e^{−(1 + h/λ)/2}). Chosen
  on validation splits (75 % of each seed's training rows fit, 25 % score, the users of the test
  run, private ranges) of the ten published tables of ≥ 4,000 rows with a ≥ 5-point margin:
  mean share of the margin of non-private logistic regression at ε = 1 (seeds 0–1) 82 % with the
  former K = 40, 86 % at K = 10, 87 % at K = 5 and 2.5; modeldata's credit_data 33 % → 51 %
  (ε = 1) and 38 % → 64 % (ε = 3); Adult unchanged (docs/algorithms/a-ddp.md).

Paper variant (:func:`paper_plan`)
----------------------------------
σ = :func:`~dpkit.algorithms.a_ddp.claims.paper_sigma` (advanced-composition split over the
estimated T = 10 and the analytic Gaussian at sensitivity C = 3), rounds = the stopping time of
Theorem 1 with H = C (:func:`~dpkit.algorithms.a_ddp.claims.theorem1_max_rounds`), capped by
``max_rounds`` (default: the corrected variant's T, a run-time guard: the rule admits ~10⁴–10⁶
rounds), λ = 0 (the paper has no regulariser) and η = 0.05 (the paper gives none). The uploads
still record the true events (sensitivity 2C), so the run's guarantee is honest.

>>> from dpkit.algorithms.substrate.budget import Budget
>>> plan = corrected_plan(Budget(1.0, 1e-5), [500] * 4, d=5)
>>> plan.rounds, plan.burn_in, plan.clip, round(plan.calibration.epsilon, 2)
(40000, 4000, 0.5, 1.0)
"""

from __future__ import annotations

import dataclasses
import functools
import math
from typing import Any, Sequence

from dpkit._validation import check_integer, check_nonnegative, check_positive
from dpkit.accounting.calibration import CalibrationResult, calibrate
from dpkit.accounting.events import ParallelComposedEvent, PrivacyEvent, repeat
from dpkit.algorithms.a_ddp.claims import PAPER_CLIP, PAPER_ESTIMATED_ROUNDS, paper_sigma, theorem1_max_rounds
from dpkit.algorithms.a_ddp.upload import UserUpload
from dpkit.algorithms.substrate.budget import Budget, calibrate_noise

__all__ = [
    "CLIP", "EPOCHS", "MODEL_RADIUS", "BURN_IN", "STEP_DECAYS", "CALIBRATION_RTOL", "PAPER_STEP_SIZE", "ADDPPlan",
    "planned_event",
    "default_rounds", "default_regularisation", "default_step_size", "burn_in_rounds", "calibrated_sigma",
    "corrected_plan", "paper_plan",
]

CLIP = 0.5
"""C: half the largest norm of a logistic gradient on rows with ||x|| ≤ 1 (module docstring)."""
EPOCHS = 80
"""Expected number of times each record is sampled in the default run."""
MODEL_RADIUS = 10.0
"""R of the regularisation rule (module docstring)."""
BURN_IN = 0.1
"""Fraction of the rounds before the returned average starts (module docstring)."""
STEP_DECAYS = 5.0
"""K of the step-size rule η = min(1/L, K/(λT)): ηλT, the e-folds by which the iterate forgets its start over
the run in directions curved only by λ (module docstring)."""
CALIBRATION_RTOL = 2e-3
"""Relative width of σ's final calibration bracket (ε then lies within 1 % of the target)."""
PAPER_STEP_SIZE = 0.05
"""The paper variant's step size (the paper gives none)."""


@dataclasses.dataclass(frozen=True)
class ADDPPlan:
    """Everything the training loop needs, and where each value came from.

    Built once per run by :func:`corrected_plan` or :func:`paper_plan` before any noise is drawn,
    so it depends only on public values (users' sizes, d, ε, δ, the defaults), never on records.

    Attributes
    ----------
    variant
        ``"corrected"`` or ``"paper"``.
    sigma
        Per-upload noise standard deviation.
    clip
        Clipping norm C.
    rounds
        Rounds to run (the loop never runs more).
    burn_in
        Rounds before the returned average starts: the model returned is the mean of the
        iterates after rounds ``burn_in + 1 .. rounds``.
    user_rounds
        Rounds each user takes part in (all ``rounds`` except where the paper's rule stops a
        user earlier).
    step_size, lam
        Server step size η and L2 regularisation λ.
    calibration
        The corrected variant's :class:`~dpkit.accounting.calibration.CalibrationResult`.
    details
        Further values (the paper's split, its stopping time, the sources of the defaults).
    """

    variant: str
    sigma: float
    clip: float
    rounds: int
    burn_in: int
    user_rounds: tuple[int, ...]
    step_size: float
    lam: float
    calibration: CalibrationResult | None
    details: dict[str, Any]

    def to_dict(self) -> dict[str, Any]:
        out = {k: v for k, v in dataclasses.asdict(self).items() if k not in ("calibration", "details")}
        out.update(self.details)
        if self.calibration is not None:
            out["calibrated_epsilon"] = self.calibration.epsilon
            out["calibration_accountant"] = self.calibration.accountant
        return out


def planned_event(sizes: Sequence[int], rounds: int, sigma: float, clip: float) -> PrivacyEvent:
    """The whole run: per user ``rounds`` uploads (:class:`UserUpload` events), users in parallel.

    Users with equal data sizes have identical events and are counted once (as the ledger does).

    >>> planned_event([10, 10], 3, 2.0, 1.0)
    SelfComposedEvent(event=SampledWithoutReplacementEvent(event=GaussianEvent(sigma=2.0, sensitivity=2.0000002384186804), sample_size=1, population_size=10), count=3)
    """
    rounds = check_integer("rounds", rounds, minimum=1)
    events = tuple(repeat(UserUpload(sigma, clip, m).event, rounds) for m in dict.fromkeys(sizes))
    return events[0] if len(events) == 1 else ParallelComposedEvent(events)


def default_rounds(sizes: Sequence[int]) -> int:
    """T = :data:`EPOCHS` · n/U: each record is sampled about :data:`EPOCHS` times (module docstring)."""
    sizes = [check_integer("size", m, minimum=1) for m in sizes]
    return max(1, round(EPOCHS * sum(sizes) / len(sizes)))


def default_regularisation(sigma: float, d: int, users: int, rounds: int) -> float:
    """λ = σ√(d/(U T))/R: the noise of the averaged gradient over the model radius R = 10."""
    return check_positive("sigma", sigma) * math.sqrt(d / (users * rounds)) / MODEL_RADIUS


def default_step_size(lam: float, rounds: int) -> float:
    """η = min(1/L, K/(λT)), K = :data:`STEP_DECAYS`, L = 1/4 + λ the smoothness of the regularised logistic
    loss (||x|| ≤ 1): the smallest step whose iterate still forgets its start (module docstring).

    >>> round(default_step_size(1e-3, 100_000), 6), default_step_size(0.0, 100_000)
    (0.05, 4.0)
    """
    lam = check_nonnegative("lam", lam)
    smooth = 1.0 / (0.25 + lam)
    return smooth if lam == 0.0 else min(smooth, STEP_DECAYS / (lam * check_integer("rounds", rounds, minimum=1)))


def burn_in_rounds(rounds: int) -> int:
    """⌊:data:`BURN_IN` · T⌋: the rounds before the returned average starts (module docstring)."""
    return int(BURN_IN * check_integer("rounds", rounds, minimum=1))


@functools.lru_cache(maxsize=64)
def calibrated_sigma(sizes: tuple[int, ...], rounds: int, clip: float, budget: Budget) -> CalibrationResult:
    """The smallest σ whose whole planned run (:func:`planned_event`) meets ``budget`` (tightest accountant).

    The search starts from the RDP-calibrated σ, which meets the budget (RDP is one of the
    tightest accountant's members), and 0.6 times it; the bracket widens itself if the boundary
    lies outside. Results are cached: runs on equally sized users share one calibration.
    """
    def make_event(sigma: float) -> PrivacyEvent:
        return planned_event(sizes, rounds, sigma, clip)

    start = calibrate(make_event, "rdp", neighbouring=budget.neighbouring, target_epsilon=budget.epsilon,
                      target_delta=budget.delta, lower=clip, upper=4 * clip, rtol=CALIBRATION_RTOL).parameter
    return calibrate_noise(make_event, budget, lower=0.6 * start, upper=start, rtol=CALIBRATION_RTOL)


def corrected_plan(budget: Budget, sizes: Sequence[int], d: int, *, rounds: int | None = None,
                   clip: float = CLIP, step_size: float | None = None, lam: float | None = None) -> ADDPPlan:
    """σ calibrated on the whole planned run, and the documented defaults (module docstring)."""
    sizes = [check_integer("size", m, minimum=1) for m in sizes]
    d = check_integer("d", d, minimum=1)
    clip = check_positive("clip", clip)
    T = default_rounds(sizes) if rounds is None else check_integer("rounds", rounds, minimum=1)
    calibration = calibrated_sigma(tuple(sizes), T, clip, budget)
    sigma = float(calibration.parameter)
    lam_value = default_regularisation(sigma, d, len(sizes), T) if lam is None else check_nonnegative("lam", lam)
    eta = default_step_size(lam_value, T) if step_size is None else check_positive("step_size", step_size)
    details = {"rounds_source": f"default {EPOCHS} n/U" if rounds is None else "given",
               "lam_source": "default sigma sqrt(d/(U T))/10" if lam is None else "given",
               "step_size_source": f"default min(1/L, {STEP_DECAYS:g}/(lam T))" if step_size is None else "given",
               "sensitivity": 2.0 * clip}
    return ADDPPlan("corrected", sigma, clip, T, burn_in_rounds(T), (T,) * len(sizes), eta, lam_value, calibration,
                    details)


def paper_plan(budget: Budget, sizes: Sequence[int], *, estimated_rounds: int | None = None, clip: float = PAPER_CLIP,
               step_size: float = PAPER_STEP_SIZE, max_rounds: int | None = None) -> ADDPPlan:
    """Algorithm 1's calibration as published (module docstring); rounds = min(k_max, ``max_rounds``)."""
    sizes = [check_integer("size", m, minimum=1) for m in sizes]
    T_est = PAPER_ESTIMATED_ROUNDS if estimated_rounds is None else check_integer("estimated_rounds", estimated_rounds,
                                                                                  minimum=1)
    clip = check_positive("clip", clip)
    cap = default_rounds(sizes) if max_rounds is None else check_integer("max_rounds", max_rounds, minimum=1)
    sigma = paper_sigma(budget.epsilon, budget.delta, T_est, clip)
    # a user stops at its own k_max (Alg. 1 lines 7-10); the run ends with the last user
    allowed = {m: theorem1_max_rounds(budget.epsilon, budget.delta, 1.0 / m, clip, sigma, limit=cap + 1)
               for m in dict.fromkeys(sizes)}
    user_rounds = tuple(min(allowed[m], cap) for m in sizes)
    details = {"estimated_rounds": T_est, "sensitivity_claimed": clip, "sensitivity": 2.0 * clip,
               "rounds_allowed": {str(m): (k if k <= cap else f"> {cap}") for m, k in allowed.items()},
               "max_rounds": cap}
    return ADDPPlan("paper", sigma, clip, max(user_rounds), burn_in_rounds(max(user_rounds)), user_rounds, check_positive("step_size", step_size), 0.0,
                    None, details)
