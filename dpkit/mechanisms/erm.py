"""Perturbation mechanisms for (regularised) empirical risk minimisation.

Setting (Chaudhuri, Monteleoni & Sarwate 2011, "CMS"): minimise
J(f) = (1/n) Σᵢ ℓ(yᵢ fᵀxᵢ) + (Λ/2)‖f‖² with ‖xᵢ‖ ≤ 1, |ℓ′| ≤ 1, |ℓ″| ≤ c, neighbours
differing by **one replaced record** (the only relation these analyses cover).

* :class:`ObjectivePerturbation` — CMS Alg. 2: add (1/n)bᵀf (+ an extra ridge Δ if needed)
  with b ∝ exp(−(ε′/2)‖b‖); ε-DP for the *exact* minimiser (CMS Thm 9).
* :class:`GaussianObjectivePerturbation` — Gaussian noise on the linear term of a strongly convex
  GLM objective (Ding et al. 2020, Alg. 1 line 6), accounted for the exact minimiser by its RDP
  curve; :func:`ding_objective_sigma` and :func:`ding_min_regularization` are Ding et al.'s own
  σ_i1 and λ̂ rules (reproduced as printed, no published proof).
* :func:`output_perturbation` — CMS Alg. 1: the exact minimiser has L2 sensitivity
  2L/(nΛ) (CMS Cor. 8); add ℓ2-Laplace (ε-DP) or Gaussian ((ε, δ)-DP, analytic) noise.
* :class:`ApproximateMinimizerNoise` — Ding et al.'s (2020) output noise σ_i2 on an approximate
  minimiser (‖∇F(θ̂)‖ ≤ β, F μ-strongly convex) with the switch ``sensitivity_factor``
  between the paper's β/μ and the valid 2β/μ.
* :func:`uniform_objective_noise` — Wang et al.'s (2020) bounded objective noise (no DP guarantee).
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
from dpkit.accounting.events import GaussianEvent, ObjectivePerturbationEvent, PureDPEvent
from dpkit.accounting.neighbouring import NeighbouringRelation
from dpkit.mechanisms.base import Mechanism, check_size, check_value, finish, output_shape
from dpkit.mechanisms.dual_noise import L2LaplaceMechanism, objective_perturbation_note, sample_l2_laplace
from dpkit.mechanisms.float_safe import resolve_float_safe, sample_lattice_gaussian
from dpkit.mechanisms.gaussian import GaussianMechanism, zcdp_sigma


def _require_replace_one(neighbouring: Any) -> NeighbouringRelation:
    relation = NeighbouringRelation.parse(neighbouring)
    if relation is not NeighbouringRelation.REPLACE_ONE:
        raise ValueError(
            f"neighbouring must be 'replace-one' (the ERM analyses of Chaudhuri et al. 2011 and Ding et al. 2020 "
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
class GaussianObjectivePerturbation(Mechanism):
    """Gaussian objective perturbation of a strongly convex GLM (Ding et al. 2020, Alg. 1 line 6).

    The local objective F(θ) = (1/n) Σ ℓ(y θᵀx) + Q(θ) + aᵀθ, with Q data-independent and
    μ-strongly convex, gets its linear term perturbed: a ↦ a + b, b ~ N(0, σ²I)
    (:meth:`sample` returns a + b). The exact minimiser θ̃ of the perturbed objective is what
    :attr:`event` accounts: :class:`~dpkit.accounting.events.ObjectivePerturbationEvent` with
    gradient sensitivity 2L/n (replace-one, |ℓ′| ≤ L, ‖x‖ ≤ 1) and Jacobian term
    ξ = log(1 + c₃/(nμ)) (|ℓ″| ≤ c₃; Chaudhuri, Monteleoni & Sarwate 2011, proof of Thm 9), whose
    RDP curve is :func:`~dpkit.accounting.rdp_mechanisms.rdp_objective_perturbation`. Releasing
    an *approximate* minimiser needs a further mechanism (e.g. Gaussian output noise with
    sensitivity 2β/μ given θ̃, see :class:`ApproximateMinimizerNoise`).

    Ding et al.'s own calibration of σ and of the regulariser is :func:`ding_objective_sigma`
    and :func:`ding_min_regularization` (reproduction only; no published proof).

    Examples
    --------
    >>> mech = GaussianObjectivePerturbation(sigma=0.01, n_samples=1000, strong_convexity=0.5)
    >>> round(mech.event.sensitivity, 12), round(mech.event.jacobian, 6)
    (0.002, 0.0005)
    >>> mech.sample(np.zeros(3), rng=0).shape
    (3,)
    """

    sigma: float
    n_samples: int
    strong_convexity: float
    lipschitz: float = 1.0
    smoothness: float = 0.25

    floating_point_safe: ClassVar[bool] = False

    @property
    def execution_note(self) -> str:
        """Objective perturbation is not private as executed (:func:`~dpkit.mechanisms.dual_noise.objective_perturbation_note`)."""
        return objective_perturbation_note(self)

    def __post_init__(self) -> None:
        object.__setattr__(self, "sigma", check_positive("sigma", self.sigma))
        object.__setattr__(self, "n_samples", check_integer("n_samples", self.n_samples, minimum=1))
        object.__setattr__(self, "strong_convexity", check_positive("strong_convexity", self.strong_convexity))
        object.__setattr__(self, "lipschitz", check_positive("lipschitz", self.lipschitz))
        object.__setattr__(self, "smoothness", check_positive("smoothness", self.smoothness))

    @property
    def event(self) -> ObjectivePerturbationEvent:
        """ObjectivePerturbationEvent(σ, 2L/n, log(1 + c₃/(nμ))), sensitivity and ξ rounded up."""
        sensitivity = math.nextafter(2.0 * self.lipschitz / self.n_samples, math.inf)
        jacobian = math.nextafter(math.log1p(self.smoothness / (self.n_samples * self.strong_convexity)), math.inf)
        return ObjectivePerturbationEvent(sigma=self.sigma, sensitivity=sensitivity, jacobian=jacobian)

    def sample(self, value: Any, size: int | None = None, rng: Any = None) -> Any:
        """The perturbed linear term ``value`` + N(0, σ²I): shape ``value.shape`` or ``(size,) + value.shape``."""
        array = check_value(value)
        size = check_size(size)
        noise = check_rng(rng).normal(0.0, self.sigma, size=output_shape(size, array.shape))
        return finish(np.asarray(array + noise), size)


def ding_objective_sigma(epsilon_noise: float, delta: float, n_samples: int) -> float:
    """σ_i1 = 2√(2 ln(1.25/δ))/(|D_i| ε₃) of Ding et al. (2020, Alg. 1 line 6), as printed.

    The classical Gaussian constant on the gradient sensitivity 2/|D_i|; the paper claims
    (ε₁, δ)-DP for the exact perturbed minimiser but publishes no proof, and the constant is
    only proven for ε₃ < 1 (Dwork & Roth 2014, Thm A.1): ε₃ ≥ 1 warns :class:`PaperRuleWarning`.
    Alg. 2 line 6 writes ε₁ for ε₃, a typo (the text says ε₃ scales the noise).

    >>> round(ding_objective_sigma(0.99 * 0.183387, 1e-4, 7000), 7)
    0.0068356
    """
    epsilon_noise = check_positive("epsilon_noise", epsilon_noise)
    delta = check_open_unit("delta", delta)
    n_samples = check_integer("n_samples", n_samples, minimum=1)
    if epsilon_noise >= 1.0:
        warnings.warn(
            f"epsilon_noise={epsilon_noise} >= 1: the classic Gaussian constant sqrt(2 ln(1.25/delta)) is only "
            "proven for epsilon < 1 (Dwork & Roth 2014, Thm A.1)",
            PaperRuleWarning,
            stacklevel=2,
        )
    return 2.0 * math.sqrt(2.0 * math.log(1.25 / delta)) / (n_samples * epsilon_noise)


def ding_min_regularization(epsilon: float, epsilon_noise: float, n_samples: int, n_agents: int = 1,
                            smoothness: float = 0.25) -> float:
    """λ̂ = 2.8 N c₁/((ε₁ − ε₃)|D_i|), the regulariser lower bound of Ding et al. (2020, Alg. 1 line 3).

    c₁ bounds ℓ″ (1/4 for the logistic loss). The constant 2.8 is unexplained in the paper; it is
    sufficient (a Jacobian term log(1 + N c₁/(|D_i| λ̂)) ≤ ε₁ − ε₃ needs only 1).

    >>> round(ding_min_regularization(0.183387, 0.99 * 0.183387, 7000, 5), 5)
    0.27265
    """
    epsilon = check_positive("epsilon", epsilon)
    epsilon_noise = check_positive("epsilon_noise", epsilon_noise)
    if not epsilon_noise < epsilon:
        raise ValueError(f"epsilon_noise must be in (0, epsilon) = (0, {epsilon}), got epsilon_noise={epsilon_noise}")
    n_samples = check_integer("n_samples", n_samples, minimum=1)
    n_agents = check_integer("n_agents", n_agents, minimum=1)
    smoothness = check_positive("smoothness", smoothness)
    return 2.8 * n_agents * smoothness / ((epsilon - epsilon_noise) * n_samples)


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
    """Gaussian noise on an approximate minimiser (PP-ADMM, Ding et al. 2020, Alg. 1 line 9).

    θ̂ satisfies ‖∇F(θ̂)‖ ≤ β for a μ-strongly convex F, so ‖θ̂ − θ̃‖ ≤ β/μ. The paper adds
    N(0, σ²I) with σ = β/(√(2ρ) μ), i.e. sensitivity β/μ. Between neighbours (same θ̃) two
    compliant optimisers can return points 2β/μ apart, so the valid sensitivity is 2β/μ
    (an adversarial but compliant optimiser attains it).

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
    float_safe: bool | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "float_safe", resolve_float_safe(self.float_safe))
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
                "sensitivity_factor=1 reproduces Ding et al. (2020)'s sigma_i2 (sensitivity beta/mu); the valid "
                "sensitivity is 2*beta/mu, so the step is 4*rho-zCDP, not rho",
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

    @property
    def floating_point_safe(self) -> bool:  # type: ignore[override]
        """Whether the noise is the float-safe sampler's (``float_safe``, the default)."""
        return self.float_safe

    def sample(self, value: Any, size: int | None = None, rng: Any = None) -> Any:
        """θ̂ + N(0, σ²I): shape ``value.shape`` or ``(size,) + value.shape`` (``float_safe``: rounded
        exactly to the lattice of σ, :mod:`dpkit.mechanisms.float_safe`)."""
        if self.float_safe:
            return sample_lattice_gaussian(value, self.sigma, size, rng)
        array = check_value(value)
        size = check_size(size)
        noise = check_rng(rng).normal(0.0, self.sigma, size=output_shape(size, array.shape))
        return finish(np.asarray(array + noise), size)


def uniform_objective_noise(bound: float, dim: int, size: int | None = None, rng: Any = None) -> np.ndarray:
    """η ~ Uniform([−R, R]^d), the bounded objective noise of Wang et al. (2020)
    (the paper gives no value of R; the default is dpkit's).

    **No differential-privacy guarantee**: bounded noise of any law leaks with positive
    probability once a sensitivity shift moves mass outside its support. Provided only to reproduce the paper; there is deliberately no event.
    ``bound=0`` returns zeros (no perturbation).
    """
    bound = check_nonnegative("bound", bound)
    dim = check_integer("dim", dim, minimum=1)
    size = check_size(size)
    return check_rng(rng).uniform(-bound, bound, size=output_shape(size, (dim,)))
