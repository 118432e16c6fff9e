"""Centralised DP logistic regression: full-batch noisy gradient descent, the baseline of the layer.

One data holder trains logistic regression under the same budget as the distributed
algorithms, so their accuracy can be read against what a single trusted curator achieves.

Algorithm (noisy gradient descent, Song, Chaudhuri & Sarwate 2013; Bassily, Smith & Thakurta
2014, Alg. 1 with full batches; Nesterov 1983 momentum, which is post-processing)::

    θ_0 = θ_{-1} = 0
    for t = 0 .. T−1:
        v_t     = θ_t + t/(t+3) (θ_t − θ_{t−1})
        g̃_t     = (1/n) Σ_k ℓ′(y_k v_tᵀx_k) y_k x_k + N(0, σ² I)     (one GaussianMechanism.release)
        θ_{t+1} = v_t − η (g̃_t + λ v_t)
    return the mean of θ_{⌊T/2⌋+1} .. θ_T                             (tail averaging)

Privacy (corrected variant, the only one: there is no paper to reproduce). With ``||x|| ≤ 1``
and the logistic loss's ``|ℓ′| ≤ 1`` every per-example gradient has norm at most 1, so
replacing one record moves the mean gradient by at most Δ = 2/n in L2 (replace-one
neighbours); λ v_t is data-independent given v_t, which is a function of earlier releases.
As computed in doubles, Δ also covers the rows' norms checked in floats and the rounding of the
mean (1/n)Xᵀw on both sides (:func:`gradient_sensitivity`, a relative excess of about n²u/2 + 1.2·10⁻⁷).
Each step is therefore one Gaussian mechanism with σ/Δ = z, the run is its T-fold adaptive
composition, and :func:`~dpkit.algorithms.substrate.budget.calibrate_noise` picks the smallest z whose
T-fold composition meets the budget under the tightest accountant (exact: μ-GDP with
μ = √T/z, Dong, Roth & Su 2022, Cor. 3.3). The returned model is a post-processing of the
released gradients. No clipping is needed; data whose rows have ``||x|| > 1`` are rejected.

Defaults (data-independent: they depend on n, d and the budget only)

* step size η = 4 = 1/L, with L = c₃·max||x||² = 1/4 the smoothness of the mean logistic loss
  (ℓ″ ≤ 1/4, ``||x|| ≤ 1``);
* λ = 0 (the logistic loss needs no regulariser for gradient descent; ``lam`` adds one);
* T = clip(⌊n μ/√d⌋, 10, 200), μ the Gaussian-DP parameter that meets the budget (the
  accountant's, from one Gaussian release). With T steps the per-step noise norm is
  σ√d = 2√(T d)/(n μ), which this rule makes 2/√T: the noise shrinks as steps are added while
  each step stays informative. The cap 200 bounds the run time (one step is two passes over
  the data); on Adult, 300 steps gain less than 0.003 (docs/algorithms/dp-logreg.md).

Measured on Adult (3 seeds, δ = 1e-5, 36,000 training rows): about 0.83 at ε = 0.5, 0.835 at
ε = 1 and 0.837 at ε = 3 (majority class 0.75, non-private 0.847), a few seconds per run.

>>> from dpkit.algorithms.substrate.budget import Budget
>>> from dpkit.algorithms.substrate.data import make_synthetic
>>> result = train_dp_logreg(make_synthetic(2000, 5, rng=0), budget=Budget(1.0, 1e-5), rng=0)
>>> result.epsilon <= 1.0, result.ledger.draws(0) == result.config["iterations"]
(True, True)
"""

from __future__ import annotations

import math
import time
from typing import Any, Callable, Sequence

import numpy as np

from dpkit._validation import check_integer, check_nonnegative, check_positive, check_rng
from dpkit.accounting.calibration import CalibrationResult
from dpkit.accounting.events import GaussianEvent, repeat
from dpkit.algorithms.substrate.budget import Budget, calibrate_noise
from dpkit.algorithms.substrate.data import Dataset
from dpkit.algorithms.substrate.evaluation import Evaluator
from dpkit.algorithms.substrate.losses import Logistic, empirical_gradient
from dpkit.algorithms.substrate.result import TrainingResult, finish
from dpkit.algorithms.substrate.spec import AlgorithmSpec
from dpkit.mechanisms.float_sensitivity import DIMENSION_LIMIT, checked_norm_bound, mean_sensitivity
from dpkit.mechanisms.gaussian import GaussianMechanism

__all__ = [
    "STEP_SIZE", "MIN_ITERATIONS", "MAX_ITERATIONS", "default_iterations", "gradient_sensitivity",
    "gradient_query", "calibrate_gradient_noise", "train_dp_logreg", "SPEC",
]

STEP_SIZE = 4.0
"""η = 1/L with L = 1/4 the smoothness of the mean logistic loss on rows with ``||x|| ≤ 1``."""
MIN_ITERATIONS = 10
MAX_ITERATIONS = 200


def gradient_sensitivity(n: int) -> float:
    """Replace-one L2 sensitivity of the mean logistic gradient over n rows with ``||x|| ≤ 1``, as computed.

    The real sensitivity is 2B/n with B the largest row norm; a row that passed the float check
    ``sum(x**2) <= 1`` has B ≤ (1 − γ_{d+1})^{−1/2}
    (:func:`~dpkit.mechanisms.float_sensitivity.checked_norm_bound`, d ≤
    :data:`~dpkit.mechanisms.float_sensitivity.DIMENSION_LIMIT`). The released value is the
    computed (1/n)·Xᵀw, |w_k| = |ℓ′| ≤ 1: a matrix-vector product in any order and a division,
    whose rounding adds γ_{n+1}·B on each side (Higham 2002, eqs. (3.5) and (4.4); Casacuberta et
    al. 2022): :func:`~dpkit.mechanisms.float_sensitivity.mean_sensitivity`, rounded up.

    >>> gradient_sensitivity(1000) / (2.0 / 1000) - 1 < 2e-7
    True
    """
    n = check_integer("n", n, minimum=1)
    bound = checked_norm_bound(1.0, DIMENSION_LIMIT)
    return mean_sensitivity(n, bound, products=True, dimension=DIMENSION_LIMIT)


def gradient_query(theta: np.ndarray, X: np.ndarray, y: np.ndarray) -> np.ndarray:
    """The released query: the mean logistic-loss gradient (1/n) Σ ℓ′(y θᵀx) y x at ``theta``."""
    return empirical_gradient(Logistic(), np.asarray(theta, float), X, y)


def calibrate_gradient_noise(n: int, iterations: int, budget: Budget) -> tuple[GaussianMechanism, CalibrationResult]:
    """The Gaussian mechanism of one step, calibrated so that ``iterations`` steps meet ``budget``.

    The calibrated parameter is the noise multiplier z = σ/Δ; the event calibrated is exactly the
    one the mechanism records (``GaussianEvent(zΔ, Δ)``) repeated ``iterations`` times.

    >>> mech, cal = calibrate_gradient_noise(1000, 100, Budget(1.0, 1e-5))
    >>> round(mech.sensitivity, 9), cal.epsilon <= 1.0 < cal.epsilon * 1.01
    (0.002, True)
    """
    sensitivity = gradient_sensitivity(n)
    T = check_integer("iterations", iterations, minimum=1)
    if not isinstance(budget, Budget):
        raise TypeError(f"budget must be a Budget, got budget={budget!r}")
    calibration = calibrate_noise(lambda z: repeat(GaussianEvent(z * sensitivity, sensitivity), T), budget,
                                  lower=0.5 * math.sqrt(T), upper=4.0 * math.sqrt(T))
    return GaussianMechanism(sigma=calibration.parameter * sensitivity, sensitivity=sensitivity), calibration


def default_iterations(n: int, d: int, budget: Budget) -> int:
    """T = clip(⌊n μ/√d⌋, 10, 200) with μ the GDP parameter meeting ``budget`` (module docstring).

    >>> default_iterations(36000, 104, Budget(1.0, 1e-5)), default_iterations(500, 20, Budget(1.0, 1e-5))
    (200, 29)
    """
    n = check_integer("n", n, minimum=1)
    d = check_integer("d", d, minimum=1)
    mu = 1.0 / calibrate_noise(lambda z: GaussianEvent(z), budget).parameter
    return int(min(MAX_ITERATIONS, max(MIN_ITERATIONS, math.floor(n * mu / math.sqrt(d)))))


def train_dp_logreg(
    data: Dataset, *, budget: Budget, iterations: int | None = None, step_size: float = STEP_SIZE, lam: float = 0.0,
    rng: np.random.Generator | int | None = 0, test: Dataset | None = None, record_every: int | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> TrainingResult:
    """Train DP logistic regression on ``data`` within ``budget`` (module docstring).

    Parameters
    ----------
    data
        Training rows, each with ``||x|| ≤ 1`` (as every dpkit loader returns them).
    budget
        Total (ε, δ) of the run for one record, replace-one neighbours.
    iterations
        Planned (and run) steps T; None: :func:`default_iterations`.
    step_size, lam
        η and the L2 regularisation weight λ.
    rng
        Seed or Generator of the noise.
    test
        Held-out rows, used only to score the model.
    record_every
        History thinning (default: about 30 records per run).
    progress
        ``progress(t, T)`` after each step.

    Returns
    -------
    TrainingResult
        ``guarantee`` from the ledger (T Gaussian releases); ``paper_claim`` None.
    """
    if not isinstance(data, Dataset):
        raise TypeError(f"data must be a Dataset, got {type(data).__name__}")
    if not isinstance(budget, Budget):
        raise TypeError(f"budget must be a Budget, got budget={budget!r}")
    if budget.neighbouring.value != "replace-one":
        raise ValueError(f"dp-logreg's sensitivity 2/n is for replace-one neighbours, got {budget.neighbouring.value}")
    if float(np.max(np.sum(data.X**2, axis=1))) > 1.0:
        raise ValueError("every row must have ||x|| <= 1 (the sensitivity 2/n assumes it); normalise the data")
    if data.d > DIMENSION_LIMIT:
        raise ValueError(f"the sensitivity covers rows of at most {DIMENSION_LIMIT} columns, got d={data.d}")
    step_size = check_positive("step_size", step_size)
    lam = check_nonnegative("lam", lam)
    n, d = data.n, data.d
    T = default_iterations(n, d, budget) if iterations is None else check_integer("iterations", iterations, minimum=1)
    every = max(1, T // 30) if record_every is None else check_integer("record_every", record_every, minimum=1)
    gen = check_rng(rng)
    mechanism, calibration = calibrate_gradient_noise(n, T, budget)
    ledger = budget.ledger(1)
    evaluator = Evaluator(Logistic(), [data], test, every)
    theta = np.zeros(d)
    previous = theta
    tail = np.zeros(d)
    tail_start = T // 2
    evaluator.record(0, theta[None])
    start = time.perf_counter()
    for t in range(T):
        v = theta + (t / (t + 3.0)) * (theta - previous)
        noisy = mechanism.release(gradient_query(v, data.X, data.y), rng=gen, ledger=ledger)
        previous, theta = theta, v - step_size * (noisy + lam * v)
        if t >= tail_start:
            tail += theta
        evaluator.record(t + 1, theta[None], force=(t == T - 1))
        if progress:
            progress(t + 1, T)
    model = tail / (T - tail_start)
    seconds = time.perf_counter() - start
    config = {
        "iterations": T, "iterations_default": iterations is None, "agents": 1, "n": n, "dimension": d,
        "step_size": step_size, "lam": lam, "sigma": mechanism.sigma, "sensitivity": mechanism.sensitivity,
        "noise_multiplier": calibration.parameter, "calibration_accountant": calibration.accountant,
        "calibrated_epsilon": calibration.epsilon, "budget": budget.to_dict(), "averaging": "iterates T/2+1..T",
        "momentum": "Nesterov t/(t+3)",
    }
    return finish("dp-logreg", "corrected", model[None], model, evaluator, test, ledger, budget.delta, seconds, config,
                  notes=("centralised baseline: one data holder",))


def _runner(parts: Sequence[Dataset], test: Dataset | None, graph: Any, *, budget: Budget | None,
            iterations: int | None, variant: str, rng: np.random.Generator, progress: Callable[[int, int], None] | None,
            **options: Any) -> TrainingResult:
    parts = list(parts)
    if len(parts) != 1:
        raise ValueError(f"dp-logreg is centralised: agents must be 1, got agents={len(parts)}")
    if variant != "corrected":
        raise ValueError(f"variant must be 'corrected' for dp-logreg (there is no paper variant), got variant={variant!r}")
    if budget is None:
        raise ValueError("dp-logreg is private: give a budget (epsilon)")
    return train_dp_logreg(parts[0], budget=budget, iterations=iterations, rng=rng, test=test, progress=progress, **options)


SPEC = AlgorithmSpec(
    name="dp-logreg", runner=_runner, topology="central", agents=1, n_train=36000, delta=1e-5,
    description="centralised DP logistic regression (noisy gradient descent; the baseline)",
    options=("step_size", "lam", "record_every"), variants=("corrected",),
)
