"""Perturbation mechanisms for (regularised) empirical risk minimisation.

Setting (Chaudhuri, Monteleoni & Sarwate 2011, "CMS"): minimise
J(f) = (1/n) Σᵢ ℓ(yᵢ fᵀxᵢ) + (Λ/2)‖f‖² with ‖xᵢ‖ ≤ 1, |ℓ′| ≤ 1, |ℓ″| ≤ c, neighbours
differing by **one replaced record** (the only relation these analyses cover).

* :class:`ObjectivePerturbation` — CMS Alg. 2: add (1/n)bᵀf (+ an extra ridge Δ if needed)
  with b ∝ exp(−(ε′/2)‖b‖); ε-DP for the *exact* minimiser (CMS Thm 9).
* :class:`GaussianObjectivePerturbation000` — seed 000's Gaussian objective noise σ_i1 and
  λ̂ rule (spec 000 §2.2, §3.4); reproduced as printed, no published proof (flag F4).
* :func:`output_perturbation` — CMS Alg. 1: the exact minimiser has L2 sensitivity
  2L/(nΛ) (CMS Cor. 8); add ℓ2-Laplace (ε-DP) or Gaussian ((ε, δ)-DP, analytic) noise.
* :class:`ApproximateMinimizerNoise` — seed 000's output noise σ_i2 on an approximate
  minimiser (‖∇F(θ̂)‖ ≤ β, F μ-strongly convex) with the switch ``sensitivity_factor``
  between the paper's β/μ and the valid 2β/μ (flag F5).
* :func:`uniform_objective_noise` — seed 001's bounded objective noise (no DP guarantee).
"""

from __future__ import annotations

import dataclasses
import math
import warnings
from typing import Any, ClassVar

import numpy as np

from dpkit._validation import (
    check_integer,
    check_nonnegative,
    check_open_unit,
    check_positive,
    check_rng,
)
from dpkit.accounting.base import PaperRuleWarning
from dpkit.accounting.events import ApproxDPEvent, GaussianEvent, PureDPEvent
from dpkit.accounting.neighbouring import NeighbouringRelation
from dpkit.mechanisms.base import Mechanism, check_size, check_value, finish, output_shape
from dpkit.mechanisms.dual_noise import L2LaplaceMechanism, sample_l2_laplace
from dpkit.mechanisms.gaussian import GaussianMechanism, zcdp_sigma


def _require_replace_one(neighbouring: Any) -> NeighbouringRelation:
    relation = NeighbouringRelation.parse(neighbouring)
    if relation is not NeighbouringRelation.REPLACE_ONE:
        raise ValueError(
            f"neighbouring must be 'replace-one' (the ERM analyses of Chaudhuri et al. 2011 and seed 000 "
            f"replace one record), got neighbouring={relation.value!r}"
        )
    return relation


@dataclasses.dataclass(frozen=True)
class ObjectivePerturbation:
    """Objective perturbation (Chaudhuri, Monteleoni & Sarwate 2011, Alg. 2; Thm 9): ε-DP.

    Calibration: ε′ = ε − ln(1 + 2c/(nΛ) + c²/(n²Λ²)). If ε′ > 0 the extra ridge is Δ = 0,
    else Δ = c/(n(e^{ε/4} − 1)) − Λ and ε′ = ε/2. Draw b with density ∝ exp(−(ε′/2)‖b‖) and
    minimise J(f) + (1/n) bᵀf + (Δ/2)‖f‖² *exactly*; the minimiser is ε-DP under replace-one
    for ‖x‖ ≤ 1, |ℓ′| ≤ 1, |ℓ″| ≤ c (CMS Thm 9; the proof needs the exact minimiser).

    Parameters
    ----------
    epsilon
        ε > 0.
    n_samples
        n.
    regularization
        Λ > 0 (coefficient of ½‖f‖²).
    smoothness
        c ≥ |ℓ″| (1/4 for the logistic loss, 1/(2h) for the Huber SVM).

    Examples
    --------
    >>> op = ObjectivePerturbation(epsilon=1.0, n_samples=1000, regularization=0.01)
    >>> op.extra_regularization, round(op.noise_epsilon, 4), op.sample_noise(3, size=2, rng=0).shape
    (0.0, 0.9506, (2, 3))
    """

    epsilon: float
    n_samples: int
    regularization: float
    smoothness: float = 0.25
    neighbouring: Any = NeighbouringRelation.REPLACE_ONE

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", check_positive("epsilon", self.epsilon))
        object.__setattr__(self, "n_samples", check_integer("n_samples", self.n_samples, minimum=1))
        object.__setattr__(self, "regularization", check_positive("regularization", self.regularization))
        object.__setattr__(self, "smoothness", check_positive("smoothness", self.smoothness))
        object.__setattr__(self, "neighbouring", _require_replace_one(self.neighbouring))

    def _jacobian_term(self, ridge: float) -> float:
        ratio = self.smoothness / (self.n_samples * ridge)
        return math.nextafter(2.0 * math.log1p(ratio), math.inf)  # ln((1 + ratio)²)

    @property
    def extra_regularization(self) -> float:
        """Δ ≥ 0, the ridge to add (coefficient of ½‖f‖²)."""
        if self.epsilon - self._jacobian_term(self.regularization) > 0:
            return 0.0
        ridge = self.smoothness / (self.n_samples * math.expm1(self.epsilon / 4.0)) - self.regularization
        ridge = max(ridge, 0.0)
        while self._jacobian_term(self.regularization + ridge) > self.epsilon / 2.0:
            ridge = math.nextafter(ridge, math.inf) if ridge > 0 else math.ulp(self.regularization)
        return ridge

    @property
    def noise_epsilon(self) -> float:
        """ε′, the part of ε paid by the noise term."""
        budget = math.nextafter(self.epsilon - self._jacobian_term(self.regularization), 0.0)  # round down
        return budget if budget > 0 else self.epsilon / 2.0

    @property
    def zeta(self) -> float:
        """ε′/2: b has density ∝ exp(−ζ‖b‖) (the noise-space sensitivity is 2)."""
        return self.noise_epsilon / 2.0

    @property
    def event(self) -> PureDPEvent:
        """PureDPEvent(ε) (valid for the exact minimiser)."""
        return PureDPEvent(epsilon=self.epsilon)

    def sample_noise(self, dim: int, size: int | None = None, rng: Any = None) -> np.ndarray:
        """b ∈ R^dim with density ∝ exp(−ζ‖b‖); the objective gets + (1/n) bᵀf."""
        return sample_l2_laplace(self.zeta, dim, size, rng)


@dataclasses.dataclass(frozen=True)
class GaussianObjectivePerturbation000:
    """Seed 000's Gaussian objective perturbation (PP-ADMM, Alg. 1 lines 3 and 6; spec 000 §2.2).

    b_i1 ~ N(0, σ²I) with σ = 2√(2 ln(1.25/δ))/(|D_i| ε₃), added as b_i1ᵀθ to the local
    objective, and the regulariser rule λ̂ ≥ 2.8 N c₁/((ε₁ − ε₃)|D_i|). The paper claims
    (ε₁, δ)-DP for the exact minimiser; **no proof is published** (spec 000 F4) and the
    classic constant needs ε₃ < 1: ε₃ ≥ 1 warns :class:`PaperRuleWarning`. Use Alg. 1's ε₃
    (Alg. 2's ε₁ in σ is a typo, flag F6). :attr:`event` is the *claimed*
    ApproxDPEvent(ε₁, δ); converting it to zCDP is the accounting core's (flagged) business.

    Examples
    --------
    >>> g = GaussianObjectivePerturbation000(epsilon=0.183387, delta=1e-4, epsilon_noise=0.99 * 0.183387,
    ...                                      n_samples=7000, n_agents=5)
    >>> round(g.sigma, 7), round(g.min_regularization, 5)
    (0.0068356, 0.27265)
    """

    epsilon: float
    delta: float
    epsilon_noise: float
    n_samples: int
    n_agents: int = 1
    smoothness: float = 0.25

    is_proven: ClassVar[bool] = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", check_positive("epsilon", self.epsilon))
        object.__setattr__(self, "delta", check_open_unit("delta", self.delta))
        object.__setattr__(self, "epsilon_noise", check_positive("epsilon_noise", self.epsilon_noise))
        object.__setattr__(self, "n_samples", check_integer("n_samples", self.n_samples, minimum=1))
        object.__setattr__(self, "n_agents", check_integer("n_agents", self.n_agents, minimum=1))
        object.__setattr__(self, "smoothness", check_positive("smoothness", self.smoothness))
        if not self.epsilon_noise < self.epsilon:
            raise ValueError(
                f"epsilon_noise must be in (0, epsilon) = (0, {self.epsilon}), got epsilon_noise={self.epsilon_noise}"
            )
        if self.epsilon_noise >= 1.0:
            warnings.warn(
                f"epsilon_noise={self.epsilon_noise} >= 1: the classic Gaussian constant sqrt(2 ln(1.25/delta)) "
                "is only proven for epsilon < 1 (seed 000 flag F4)",
                PaperRuleWarning,
                stacklevel=2,
            )

    @property
    def sigma(self) -> float:
        """σ_i1 = 2√(2 ln(1.25/δ))/(|D_i| ε₃) (gradient sensitivity 2/|D_i|)."""
        return 2.0 * math.sqrt(2.0 * math.log(1.25 / self.delta)) / (self.n_samples * self.epsilon_noise)

    @property
    def min_regularization(self) -> float:
        """λ̂ = 2.8 N c₁/((ε₁ − ε₃)|D_i|), the paper's lower bound on the regulariser weight."""
        return 2.8 * self.n_agents * self.smoothness / ((self.epsilon - self.epsilon_noise) * self.n_samples)

    @property
    def event(self) -> ApproxDPEvent:
        """The paper's claim ApproxDPEvent(ε₁, δ) (unproven, see the class docstring)."""
        return ApproxDPEvent(epsilon=self.epsilon, delta=self.delta)

    def sample_noise(self, dim: int, size: int | None = None, rng: Any = None) -> np.ndarray:
        """b_i1 ~ N(0, σ²I_dim), shape (dim,) or (size, dim)."""
        dim = check_integer("dim", dim, minimum=1)
        size = check_size(size)
        return check_rng(rng).normal(0.0, self.sigma, size=output_shape(size, (dim,)))


def output_perturbation_sensitivity(
    n_samples: int, regularization: float, lipschitz: float = 1.0, neighbouring: Any = "replace-one"
) -> float:
    """L2 sensitivity 2L/(nΛ) of argmin (1/n)Σℓ + (Λ/2)‖f‖² under replace-one (CMS 2011, Cor. 8).

    >>> round(output_perturbation_sensitivity(100, 0.1), 12)
    0.2
    """
    n_samples = check_integer("n_samples", n_samples, minimum=1)
    regularization = check_positive("regularization", regularization)
    lipschitz = check_positive("lipschitz", lipschitz)
    _require_replace_one(neighbouring)
    sensitivity = 2.0 * lipschitz / (n_samples * regularization)
    return math.nextafter(sensitivity, math.inf)


def output_perturbation(
    epsilon: float,
    n_samples: int,
    regularization: float,
    lipschitz: float = 1.0,
    delta: float | None = None,
    neighbouring: Any = "replace-one",
) -> Mechanism:
    """Output perturbation of a strongly convex ERM minimiser (CMS 2011, Alg. 1).

    Returns an :class:`~dpkit.mechanisms.dual_noise.L2LaplaceMechanism` (ε-DP, ``delta=None``)
    or an analytic :class:`~dpkit.mechanisms.gaussian.GaussianMechanism` ((ε, δ)-DP) with
    L2 sensitivity 2L/(nΛ); apply ``.sample(minimiser)`` to the exact minimiser.

    >>> round(output_perturbation(1.0, 100, 0.1).zeta, 12)
    5.0
    """
    sensitivity = output_perturbation_sensitivity(n_samples, regularization, lipschitz, neighbouring)
    if delta is None:
        return L2LaplaceMechanism.from_epsilon(epsilon, sensitivity)
    return GaussianMechanism.from_epsilon_delta(epsilon, delta, sensitivity)


SENSITIVITY_FACTORS = (1, 2)


@dataclasses.dataclass(frozen=True)
class ApproximateMinimizerNoise(Mechanism):
    """Seed 000's Gaussian noise on an approximate minimiser (PP-ADMM Alg. 1 line 9; spec 000 F5).

    θ̂ satisfies ‖∇F(θ̂)‖ ≤ β for a μ-strongly convex F, so ‖θ̂ − θ̃‖ ≤ β/μ. The paper adds
    N(0, σ²I) with σ = β/(√(2ρ) μ), i.e. sensitivity β/μ. Between neighbours (same θ̃) two
    compliant optimisers can return points 2β/μ apart, so the valid sensitivity is 2β/μ
    (flag F5; an adversarial optimiser attains it, spec 000 A1).

    ``sensitivity_factor`` selects σ = factor·β/(√(2ρ) μ): 2 (default) gives a valid ρ-zCDP
    step; 1 reproduces the paper (warns :class:`PaperRuleWarning`). :attr:`event` always
    uses the valid sensitivity 2β/μ (so factor 1 is accounted as 4ρ);
    :attr:`paper_event` is the paper's claim (sensitivity factor·β/μ, i.e. ρ).

    Examples
    --------
    >>> noise = ApproximateMinimizerNoise(beta=1e-3, strong_convexity=0.5, rho=0.01)
    >>> round(noise.sigma, 6), round(noise.rho_actual, 6)
    (0.028284, 0.01)
    """

    beta: float
    strong_convexity: float
    rho: float
    sensitivity_factor: int = 2

    floating_point_safe: ClassVar[bool] = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "beta", check_positive("beta", self.beta))
        object.__setattr__(self, "strong_convexity", check_positive("strong_convexity", self.strong_convexity))
        object.__setattr__(self, "rho", check_positive("rho", self.rho))
        if self.sensitivity_factor not in SENSITIVITY_FACTORS or isinstance(self.sensitivity_factor, bool):
            raise ValueError(
                f"sensitivity_factor must be 1 (paper, beta/mu) or 2 (valid, 2 beta/mu), "
                f"got sensitivity_factor={self.sensitivity_factor!r}"
            )
        if self.sensitivity_factor == 1:
            warnings.warn(
                "sensitivity_factor=1 reproduces seed 000's sigma_i2 (sensitivity beta/mu); the valid "
                "sensitivity is 2*beta/mu, so the step is 4*rho-zCDP, not rho (seed 000 flag F5)",
                PaperRuleWarning,
                stacklevel=2,
            )

    @property
    def valid_sensitivity(self) -> float:
        """2β/μ, rounded up."""
        return math.nextafter(2.0 * self.beta / self.strong_convexity, math.inf)

    @property
    def sigma(self) -> float:
        """σ = factor·β/(√(2ρ) μ), rounded up."""
        return zcdp_sigma(self.rho, self.sensitivity_factor * self.beta / self.strong_convexity)

    @property
    def rho_actual(self) -> float:
        """(2β/μ)²/(2σ²): ρ for factor 2, 4ρ for factor 1."""
        return self.valid_sensitivity**2 / (2.0 * self.sigma**2)

    @property
    def event(self) -> GaussianEvent:
        """GaussianEvent(σ, 2β/μ): the valid guarantee."""
        return GaussianEvent(sigma=self.sigma, sensitivity=self.valid_sensitivity)

    @property
    def paper_event(self) -> GaussianEvent:
        """GaussianEvent(σ, factor·β/μ): what the paper accounts (ρ)."""
        return GaussianEvent(sigma=self.sigma, sensitivity=self.sensitivity_factor * self.beta / self.strong_convexity)

    def sample(self, value: Any, size: int | None = None, rng: Any = None) -> Any:
        """θ̂ + N(0, σ²I): shape ``value.shape`` or ``(size,) + value.shape``."""
        array = check_value(value)
        size = check_size(size)
        noise = check_rng(rng).normal(0.0, self.sigma, size=output_shape(size, array.shape))
        return finish(np.asarray(array + noise), size)


def uniform_objective_noise(bound: float, dim: int, size: int | None = None, rng: Any = None) -> np.ndarray:
    """η ~ Uniform([−R, R]^d), seed 001's bounded objective noise (spec 001 §2.3, a default NOT IN PAPER).

    **No differential-privacy guarantee**: bounded noise of any law leaks with positive
    probability once a sensitivity shift moves mass outside its support (spec 001 §3.4,
    flag 1). Provided only to reproduce the paper; there is deliberately no event.
    ``bound=0`` returns zeros (no perturbation).
    """
    bound = check_nonnegative("bound", bound)
    dim = check_integer("dim", dim, minimum=1)
    size = check_size(size)
    return check_rng(rng).uniform(-bound, bound, size=output_shape(size, (dim,)))
