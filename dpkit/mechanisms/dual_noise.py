"""ℓ2-Laplace noise, density ∝ exp(−ζ‖b‖₂) on R^d, and the dual-variable perturbation of Zhang & Zhu (2016).

Sampling (Chaudhuri, Monteleoni & Sarwate 2011, §5; Zhang & Zhu 2016, Alg. 2): in polar
coordinates the density factorises into a uniform direction and a radius with density
∝ r^{d−1} e^{−ζr}, i.e. ‖b‖ ~ Gamma(shape d, scale 1/ζ) and b/‖b‖ uniform on the sphere.

Guarantee as a mechanism: adding b to a vector query of L2 sensitivity Δ is (ζΔ)-DP, since
the density ratio is exp(ζ(‖b′‖ − ‖b‖)) ≤ exp(ζ‖b′ − b‖) (Chaudhuri et al. 2011, Thm 6 for
output perturbation).

Objective perturbation (Chaudhuri et al. 2011, Alg. 2; Zhang & Zhu 2016, eqs. (13)–(14)) adds
a random linear term bᵀθ to a strongly convex objective and releases its exact minimiser. Two
mechanisms draw that b and record what the release of the minimiser spends:

* :class:`L2LaplaceObjectiveNoise`: b with density ∝ exp(−ζ‖b‖), a pure (ζΔ + ξ)-DP release
  (Chaudhuri et al. 2011, Thm 9: ζΔ for the noise density, ξ for the Jacobian);
* :class:`GaussianObjectiveNoise`: b ~ N(0, σ²I), an
  :class:`~dpkit.accounting.events.ObjectivePerturbationEvent` (Kifer, Smith & Thakurta 2012).

Δ bounds the change of the objective's gradient between neighbouring datasets and ξ the
log-ratio of its Hessian determinants. :func:`dvp_calibration` is Zhang & Zhu's (2016) per-step
calibration of dual-variable perturbation (Alg. 2, eqs. (13)–(16), as printed or with its two
formula typos corrected).
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, ClassVar

import numpy as np

from dpkit._validation import check_integer, check_nonnegative, check_positive, check_rng
from dpkit.accounting.base import round_up
from dpkit.accounting.events import ObjectivePerturbationEvent, PureDPEvent
from dpkit.mechanisms.base import Mechanism, check_size, check_value, output_shape


def objective_perturbation_note(mechanism: Mechanism) -> str:
    """The "not private as executed" note of an objective-perturbation mechanism (what its proof needs)."""
    return (f"{type(mechanism).__name__} is objective perturbation: its guarantee is a change of variables from "
            "the noise's density to the exact minimiser's (Chaudhuri, Monteleoni & Sarwate 2011, Thm 9; Kifer, Smith "
            "& Thakurta 2012), while as executed the noise is a double and the minimiser is computed in doubles to "
            "a solver tolerance, which the proof does not cover")


def sample_l2_laplace(zeta: float, dim: int, size: int | None = None, rng: Any = None) -> np.ndarray:
    """Draws with density ∝ exp(−ζ‖b‖₂) on R^d: uniform direction × Gamma(d, 1/ζ) radius.

    Returns shape (dim,) for ``size=None``, else (size, dim).

    >>> b = sample_l2_laplace(2.0, 3, size=4, rng=0)
    >>> b.shape
    (4, 3)
    """
    zeta = check_positive("zeta", zeta)
    dim = check_integer("dim", dim, minimum=1)
    size = check_size(size)
    generator = check_rng(rng)
    shape = output_shape(size, (dim,))
    direction = generator.standard_normal(shape)
    norms = np.linalg.norm(direction, axis=-1, keepdims=True)
    while np.any(norms == 0.0):  # probability 0 in exact arithmetic; redraw such rows
        bad = (norms == 0.0)[..., 0]
        direction[bad] = generator.standard_normal(direction[bad].shape)
        norms = np.linalg.norm(direction, axis=-1, keepdims=True)
    radius = generator.gamma(dim, 1.0 / zeta, size=output_shape(size, (1,)))
    return direction / norms * radius


@dataclasses.dataclass(frozen=True)
class L2LaplaceMechanism(Mechanism):
    """Vector query + noise with density ∝ exp(−ζ‖b‖₂): (ζΔ)-DP for L2 sensitivity Δ.

    (Chaudhuri, Monteleoni & Sarwate 2011, Alg. 1 / Thm 6.) ``value`` must be a 1-D vector.

    Examples
    --------
    >>> mech = L2LaplaceMechanism.from_epsilon(1.0, sensitivity=0.5)
    >>> mech.zeta, mech.epsilon
    (2.0, 1.0)
    """

    zeta: float
    sensitivity: float = 1.0

    floating_point_safe: ClassVar[bool] = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "zeta", check_positive("zeta", self.zeta))
        object.__setattr__(self, "sensitivity", check_positive("sensitivity", self.sensitivity))

    @classmethod
    def from_epsilon(cls, epsilon: float, sensitivity: float = 1.0) -> "L2LaplaceMechanism":
        """ζ = ε/Δ, rounded down so that ζΔ ≤ ε."""
        epsilon = check_positive("epsilon", epsilon)
        sensitivity = check_positive("sensitivity", sensitivity)
        zeta = epsilon / sensitivity
        while zeta * sensitivity > epsilon:
            zeta = math.nextafter(zeta, 0.0)
        return cls(zeta=zeta, sensitivity=sensitivity)

    @property
    def epsilon(self) -> float:
        """ζΔ."""
        return self.zeta * self.sensitivity

    @property
    def event(self) -> PureDPEvent:
        """:class:`~dpkit.accounting.events.PureDPEvent` (ζΔ)."""
        return PureDPEvent(epsilon=self.epsilon)

    def sample(self, value: Any, size: int | None = None, rng: Any = None) -> np.ndarray:
        """``value`` + ℓ2-Laplace noise; shape (d,) or (size, d)."""
        vector = check_value(value)
        if vector.ndim != 1 or vector.size == 0:
            raise ValueError(f"value must be a non-empty 1-D vector, got shape {vector.shape}")
        return vector + sample_l2_laplace(self.zeta, vector.size, size, rng)


def _check_vector(value: Any) -> np.ndarray:
    vector = check_value(value)
    if vector.ndim != 1 or vector.size == 0:
        raise ValueError(f"value must be a non-empty 1-D vector, got shape {vector.shape}")
    return vector


@dataclasses.dataclass(frozen=True)
class L2LaplaceObjectiveNoise(Mechanism):
    """The linear term b of objective perturbation, density ∝ exp(−ζ‖b‖₂): (ζΔ + ξ)-DP.

    Releasing the exact minimiser of F_D(θ) + bᵀθ, with F_D strongly convex, its gradient
    changing by at most Δ (L2) between neighbours and the log-ratio of its Hessian determinants
    at most ξ, is (ζΔ + ξ)-DP (Chaudhuri, Monteleoni & Sarwate 2011, proof of Thm 9; Zhang &
    Zhu 2016, Appendix, eqs. (21)–(22)). ``sample(value)`` returns ``value`` + b, so an
    algorithm releases the perturbed linear term of its objective.

    Examples
    --------
    >>> mech = L2LaplaceObjectiveNoise(zeta=0.5, sensitivity=1.0, jacobian=0.25)
    >>> mech.event.epsilon >= 0.75, mech.sample([0.0, 0.0], rng=0).shape
    (True, (2,))
    """

    zeta: float
    sensitivity: float
    jacobian: float = 0.0

    floating_point_safe: ClassVar[bool] = False

    @property
    def execution_note(self) -> str:
        """Objective perturbation is not private as executed (:func:`objective_perturbation_note`)."""
        return objective_perturbation_note(self)

    def __post_init__(self) -> None:
        object.__setattr__(self, "zeta", check_positive("zeta", self.zeta))
        object.__setattr__(self, "sensitivity", check_positive("sensitivity", self.sensitivity))
        object.__setattr__(self, "jacobian", check_nonnegative("jacobian", self.jacobian))

    @property
    def event(self) -> PureDPEvent:
        """:class:`~dpkit.accounting.events.PureDPEvent` (ζΔ + ξ), rounded up."""
        return PureDPEvent(epsilon=round_up(self.zeta * self.sensitivity + self.jacobian))

    def sample(self, value: Any, size: int | None = None, rng: Any = None) -> np.ndarray:
        """``value`` + b; shape (d,) or (size, d)."""
        vector = _check_vector(value)
        return vector + sample_l2_laplace(self.zeta, vector.size, size, rng)


@dataclasses.dataclass(frozen=True)
class GaussianObjectiveNoise(Mechanism):
    """The linear term b ~ N(0, σ²I) of Gaussian objective perturbation.

    Releasing the exact minimiser of F_D(θ) + bᵀθ (F_D a strongly convex GLM objective whose
    gradient changes by at most Δ between neighbours, Hessian-determinant log-ratio at most ξ)
    spends :class:`~dpkit.accounting.events.ObjectivePerturbationEvent` (σ, Δ, ξ) (Chaudhuri,
    Monteleoni & Sarwate 2011, Alg. 2 with Gaussian noise as in Kifer, Smith & Thakurta 2012;
    RDP curve :func:`~dpkit.accounting.rdp_mechanisms.rdp_objective_perturbation`).
    ``sample(value)`` returns ``value`` + b.

    Examples
    --------
    >>> mech = GaussianObjectiveNoise(sigma=2.0, sensitivity=0.5, jacobian=0.01)
    >>> mech.event.noise_multiplier, mech.sample([0.0, 0.0, 0.0], size=4, rng=0).shape
    (4.0, (4, 3))
    """

    sigma: float
    sensitivity: float
    jacobian: float = 0.0

    floating_point_safe: ClassVar[bool] = False

    @property
    def execution_note(self) -> str:
        """Objective perturbation is not private as executed (:func:`objective_perturbation_note`)."""
        return objective_perturbation_note(self)

    def __post_init__(self) -> None:
        object.__setattr__(self, "sigma", check_positive("sigma", self.sigma))
        object.__setattr__(self, "sensitivity", check_positive("sensitivity", self.sensitivity))
        object.__setattr__(self, "jacobian", check_nonnegative("jacobian", self.jacobian))

    @property
    def event(self) -> ObjectivePerturbationEvent:
        """:class:`~dpkit.accounting.events.ObjectivePerturbationEvent` (σ, Δ, ξ)."""
        return ObjectivePerturbationEvent(sigma=self.sigma, sensitivity=self.sensitivity, jacobian=self.jacobian)

    def sample(self, value: Any, size: int | None = None, rng: Any = None) -> np.ndarray:
        """``value`` + N(0, σ²I); shape (d,) or (size, d)."""
        vector = _check_vector(value)
        generator = check_rng(rng)
        return vector + self.sigma * generator.standard_normal(output_shape(check_size(size), vector.shape))


@dataclasses.dataclass(frozen=True)
class DVPCalibration:
    """Per-step calibration of dual-variable perturbation (Zhang & Zhu 2016, Alg. 2, eqs. (13)–(16)).

    Attributes
    ----------
    alpha
        The per-step budget α_p(t) asked for.
    extra_regularization
        Φ ≥ 0, the ridge added to the sub-problem.
    zeta
        ζ, the noise parameter: ε_p ~ density ∝ exp(−ζ‖ε‖).
    noise_budget
        α̂ (the noise part; the noise term costs 2ζ because ‖ε′ − ε‖ ≤ 2).
    jacobian_budget
        ᾱ(Φ) = 2 ln(1 + c₁Cᴿ/(B_p(ρ + Φ + 2ηN_p))), the Jacobian (determinant) part.
    epsilon
        ᾱ(Φ) + 2ζ, the guarantee this calibration actually gives (≤ α unless ``literal``).
    literal
        Whether Algorithm 2's literal (wrong) formulas were used (its two typos, in the noise scale and in the extra ridge term).
    """

    alpha: float
    extra_regularization: float
    zeta: float
    noise_budget: float
    jacobian_budget: float
    epsilon: float
    literal: bool

    @property
    def event(self) -> PureDPEvent:
        """PureDPEvent(ᾱ(Φ) + 2ζ): the per-step guarantee (exact minimisation assumed)."""
        return PureDPEvent(epsilon=self.epsilon)

    def mechanism(self, loss_weight: float) -> L2LaplaceObjectiveNoise:
        """The mechanism drawing DVP's linear term b = (Cᴿ/B_p)ε_p, ε_p ∝ exp(−ζ‖ε‖) (eq. (14)).

        ``loss_weight`` is Cᴿ/B_p, the weight of each record's loss in the sub-problem. In the
        b-space the density is ∝ exp(−(ζB_p/Cᴿ)‖b‖), the gradient sensitivity is 2Cᴿ/B_p and the
        Jacobian term is ᾱ(Φ), so the event is PureDPEvent(2ζ + ᾱ(Φ)) (= :attr:`epsilon` up to
        rounding).

        >>> cal = dvp_calibration(0.3, n_samples=1750, loss_weight=1750, regularization=10**-2.5,
        ...                       penalty=0.5, degree=2)
        >>> abs(cal.mechanism(1.0).event.epsilon - cal.epsilon) < 1e-12
        True
        """
        scale = check_positive("loss_weight", loss_weight)
        return L2LaplaceObjectiveNoise(zeta=self.zeta / scale, sensitivity=2.0 * scale, jacobian=self.jacobian_budget)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dictionary."""
        return dataclasses.asdict(self)


def dvp_calibration(
    alpha: float,
    *,
    n_samples: int,
    loss_weight: float,
    regularization: float,
    penalty: float,
    degree: int,
    smoothness: float = 0.25,
    literal: bool = False,
    monotone: bool = False,
) -> DVPCalibration:
    """Calibration of one DVP step (Zhang & Zhu 2016, Alg. 2 and the proof of Thm 1).

    With κ = ρ + 2ηN_p: ᾱ₀ = 2 ln(1 + c₁Cᴿ/(B_pκ)); if α − ᾱ₀ > 0 then Φ = 0, α̂ = α − ᾱ₀,
    else Φ = c₁Cᴿ/(B_p(e^{α/4} − 1)) − κ and α̂ = α/2; ζ = α̂/2. The step is then α-DP
    (for an exact sub-problem solver), with ᾱ(Φ) + 2ζ ≤ α.

    ``monotone=True`` switches the branch at α = 2ᾱ₀ instead of α = ᾱ₀ (both give α̂ = α/2 there):
    the noise budget α̂ = max(α − ᾱ₀, α/2) then never shrinks as α grows, while the paper's switch
    gives α̂ → 0 just above α = ᾱ₀, i.e. more noise for a larger budget.

    ``literal=True`` reproduces Algorithm 2 as printed (B_p/Cᴿ multiplied in ᾱ₀ and ζ = α̂),
    which is *not* α-DP; the returned ``epsilon`` is then the true guarantee, computed with
    the proof's formula.

    Parameters
    ----------
    alpha
        Per-step budget α_p(t) > 0.
    n_samples
        B_p, the node's sample count.
    loss_weight
        Cᴿ > 0 (≤ B_p in the paper).
    regularization
        ρ > 0, the regulariser weight (1-strongly convex regulariser).
    penalty
        η > 0, the ADMM penalty.
    degree
        N_p ≥ 1, the node's number of neighbours.
    smoothness
        c₁, the bound on |L''| (1/4 for the logistic loss).
    monotone
        Choose the branch that leaves the larger noise budget (not with ``literal``).

    Examples
    --------
    >>> cal = dvp_calibration(0.3, n_samples=1750, loss_weight=1750, regularization=10**-2.5,
    ...                       penalty=0.5, degree=2)
    >>> round(cal.jacobian_budget, 4), round(cal.noise_budget, 4), round(cal.zeta, 4)
    (0.2352, 0.0648, 0.0324)
    """
    alpha = check_positive("alpha", alpha)
    if literal and monotone:
        raise ValueError("monotone applies to the proof's calibration, not to literal=True")
    n_samples = check_integer("n_samples", n_samples, minimum=1)
    loss_weight = check_positive("loss_weight", loss_weight)
    regularization = check_positive("regularization", regularization)
    penalty = check_nonnegative("penalty", penalty)
    degree = check_integer("degree", degree, minimum=0)
    smoothness = check_positive("smoothness", smoothness)
    kappa = regularization + 2.0 * penalty * degree

    def jacobian(phi: float) -> float:
        return math.nextafter(2.0 * math.log1p(smoothness * loss_weight / (n_samples * (kappa + phi))), math.inf)

    if literal:
        jacobian0 = 2.0 * math.log1p(n_samples / loss_weight * smoothness / kappa)
    else:
        jacobian0 = jacobian(0.0)
    noise_budget = alpha - jacobian0
    # the paper switches at α = ᾱ₀; the proof allows any Φ ≥ 0, and Φ = 0 is the better choice only
    # while it leaves at least α/2 for the noise (α ≥ 2ᾱ₀), which keeps ζ monotone in α
    if (noise_budget >= alpha / 2.0) if monotone else (noise_budget > 0.0):
        phi = 0.0
    else:
        phi = smoothness * loss_weight / (n_samples * math.expm1(alpha / 4.0)) - kappa
        phi = max(phi, 0.0)
        while jacobian(phi) > alpha / 2.0:
            phi = math.nextafter(phi, math.inf) if phi > 0 else math.ulp(kappa)
        noise_budget = alpha / 2.0
    zeta = noise_budget if literal else noise_budget / 2.0
    true_epsilon = math.nextafter(jacobian(phi) + 2.0 * zeta, math.inf)
    while not literal and true_epsilon > alpha:  # absorb the upward rounding into ζ
        zeta = math.nextafter(zeta, 0.0)
        true_epsilon = math.nextafter(jacobian(phi) + 2.0 * zeta, math.inf)
    return DVPCalibration(
        alpha=alpha,
        extra_regularization=phi,
        zeta=zeta,
        noise_budget=noise_budget,
        jacobian_budget=jacobian(phi),
        epsilon=true_epsilon,
        literal=bool(literal),
    )
