"""The Gaussian mechanism: classic, analytic and zCDP calibration.

M(D) = f(D) + Z with Z ~ N(0, σ² I) on a query of L2 sensitivity Δ.

* zCDP: Δ²/(2σ²)-zCDP (Bun & Steinke 2016, Prop. 1.6).
* Analytic (ε, δ): the exact δ(ε) of Balle & Wang 2018 (Thm 8), any ε > 0; calibrated by
  :func:`dpkit.accounting.analytic_gaussian.gaussian_sigma` (never less noise than needed).
* Classic (ε, δ): σ = Δ √(2 ln(1.25/δ))/ε, valid only for ε < 1 (Dwork & Roth 2014, Thm A.1).

Like :mod:`dpkit.mechanisms.laplace`, the sampler assumes idealised real arithmetic;
see :mod:`dpkit.mechanisms.discrete` for the exact discrete Gaussian.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, ClassVar

import numpy as np

from dpkit._validation import check_positive, check_rng
from dpkit.accounting.analytic_gaussian import classic_gaussian_sigma, gaussian_epsilon, gaussian_sigma
from dpkit.accounting.events import GaussianEvent
from dpkit.mechanisms.base import Mechanism, check_size, check_value, finish, output_shape

CALIBRATIONS = ("sigma", "analytic", "classic", "zcdp")


def zcdp_sigma(rho: float, sensitivity: float = 1.0) -> float:
    """The smallest float σ with Δ²/(2σ²) ≤ ρ (σ = Δ/√(2ρ), Bun & Steinke 2016, Prop. 1.6).

    >>> zcdp_sigma(0.5)
    1.0
    """
    rho = check_positive("rho", rho)
    sensitivity = check_positive("sensitivity", sensitivity)
    sigma = sensitivity / math.sqrt(2.0 * rho)
    while sensitivity**2 / (2.0 * sigma**2) > rho:
        sigma = math.nextafter(sigma, math.inf)
    return sigma


@dataclasses.dataclass(frozen=True)
class GaussianMechanism(Mechanism):
    """Additive Gaussian noise N(0, σ²I) on a query of L2 sensitivity Δ.

    Guarantee: Δ²/(2σ²)-zCDP (Bun & Steinke 2016, Prop. 1.6) and, for every ε > 0,
    (ε, δ(ε))-DP with the exact δ(ε) of Balle & Wang 2018, Thm 8. Works on scalars and
    arrays (noise i.i.d. per coordinate).

    **Not private as executed.** numpy's ziggurat ``normal`` plus the query answer leaks the
    input through the outputs' low-order bits (Jin et al. 2022; Haney et al. 2022):
    ``dpkit audit --float-events`` refutes ``from_epsilon_delta(1, 1e-5)`` from 10⁶ outputs
    alone at ε ≥ 7.3 (``docs/audit.md``, "Float bits from the outputs alone"). To release an
    integer query, use :class:`~dpkit.mechanisms.discrete.DiscreteGaussianMechanism`.

    Parameters
    ----------
    sigma
        Noise standard deviation σ > 0.
    sensitivity
        L2 sensitivity Δ > 0.
    calibration
        How σ was obtained (``"sigma"`` given directly, ``"analytic"``, ``"classic"`` or
        ``"zcdp"``); informational, it never changes the guarantee.

    Examples
    --------
    >>> mech = GaussianMechanism.from_epsilon_delta(1.0, 1e-5)
    >>> round(mech.sigma, 4)
    3.7306
    >>> round(GaussianMechanism.from_epsilon_delta(0.5, 1e-5, calibration="classic").sigma, 4)
    9.6896
    >>> GaussianMechanism.from_rho(0.125, sensitivity=1.0).sigma
    2.0
    """

    sigma: float
    sensitivity: float = 1.0
    calibration: str = "sigma"

    floating_point_safe: ClassVar[bool] = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "sigma", check_positive("sigma", self.sigma))
        object.__setattr__(self, "sensitivity", check_positive("sensitivity", self.sensitivity))
        if self.calibration not in CALIBRATIONS:
            raise ValueError(f"calibration must be one of {CALIBRATIONS}, got calibration={self.calibration!r}")

    @classmethod
    def from_epsilon_delta(
        cls, epsilon: float, delta: float, sensitivity: float = 1.0, calibration: str = "analytic"
    ) -> "GaussianMechanism":
        """The (ε, δ)-DP Gaussian mechanism.

        ``calibration="analytic"`` (default) gives the smallest σ for any ε > 0 (Balle & Wang
        2018, Alg. 1); ``"classic"`` gives σ = Δ√(2 ln(1.25/δ))/ε and refuses ε ≥ 1.
        """
        if calibration == "analytic":
            sigma = gaussian_sigma(epsilon, delta, sensitivity)
        elif calibration == "classic":
            sigma = classic_gaussian_sigma(epsilon, delta, sensitivity)
        else:
            raise ValueError(f"calibration must be 'analytic' or 'classic', got calibration={calibration!r}")
        return cls(sigma=sigma, sensitivity=sensitivity, calibration=calibration)

    @classmethod
    def from_rho(cls, rho: float, sensitivity: float = 1.0) -> "GaussianMechanism":
        """The ρ-zCDP Gaussian mechanism: σ = Δ/√(2ρ), rounded up."""
        return cls(sigma=zcdp_sigma(rho, sensitivity), sensitivity=sensitivity, calibration="zcdp")

    @property
    def rho(self) -> float:
        """Δ²/(2σ²), the zCDP parameter."""
        return self.sensitivity**2 / (2.0 * self.sigma**2)

    @property
    def noise_multiplier(self) -> float:
        """σ/Δ."""
        return self.sigma / self.sensitivity

    def epsilon(self, delta: float) -> float:
        """The exact ε(δ) of this mechanism (Balle & Wang 2018), an upper bound rounded up."""
        return gaussian_epsilon(self.sigma, delta, self.sensitivity)

    @property
    def event(self) -> GaussianEvent:
        """:class:`~dpkit.accounting.events.GaussianEvent` (σ, Δ)."""
        return GaussianEvent(sigma=self.sigma, sensitivity=self.sensitivity)

    def sample(self, value: Any, size: int | None = None, rng: Any = None) -> Any:
        """``value`` + N(0, σ²) noise; shape ``value.shape`` or ``(size,) + value.shape``."""
        array = check_value(value)
        size = check_size(size)
        generator = check_rng(rng)
        noise = generator.normal(0.0, self.sigma, size=output_shape(size, array.shape))
        return finish(np.asarray(array + noise), size)
