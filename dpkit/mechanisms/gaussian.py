"""The Gaussian mechanism: classic, analytic and zCDP calibration.

M(D) = f(D) + Z with Z ~ N(0, σ² I) on a query of L2 sensitivity Δ.

* zCDP: Δ²/(2σ²)-zCDP (Bun & Steinke 2016, Prop. 1.6).
* Analytic (ε, δ): the exact δ(ε) of Balle & Wang 2018 (Thm 8), any ε > 0; calibrated by
  :func:`dpkit.accounting.analytic_gaussian.gaussian_sigma` (never less noise than needed).
* Classic (ε, δ): σ = Δ √(2 ln(1.25/δ))/ε, valid only for ε < 1 (Dwork & Roth 2014, Thm A.1).

Like :mod:`dpkit.mechanisms.laplace`, the default sampler assumes idealised real arithmetic;
``float_safe=True`` releases the discrete Gaussian on a power-of-two grid instead
(:mod:`dpkit.mechanisms.float_safe`), accounted as what it is.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np

from dpkit._validation import check_positive, check_rng
from dpkit.accounting.analytic_gaussian import classic_gaussian_sigma, gaussian_epsilon, gaussian_sigma
from dpkit.accounting.events import DiscreteGaussianEvent, GaussianEvent
from dpkit.accounting.zcdp import rho_for, zcdp_to_epsilon
from dpkit.mechanisms.base import Mechanism, check_size, check_value, finish, output_shape
from dpkit.mechanisms.float_safe import gaussian_grid, grid_rho, grid_sensitivity, sample_grid_gaussian

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

    **Not private as executed** (default ``float_safe=False``). numpy's ziggurat ``normal`` plus
    the query answer leaks the input through the outputs' low-order bits (Jin et al. 2022; Haney
    et al. 2022): the default :func:`dpkit.audit.audit` refutes ``from_epsilon_delta(1, 1e-5)``
    from 10⁶ outputs alone (``docs/audit.md``, "Float bits from the outputs alone").

    ``float_safe=True`` releases, for a scalar answer ``x``, ``(n + Z)·Λ`` with the grid
    ``Λ = 2^(⌊log₂ σ⌋ − 16)``, ``n = round(x/Λ)`` and ``Z ~ N_ℤ(0, (σ/Λ)²)`` drawn exactly
    (Canonne, Kamath & Steinke 2020, Alg. 3), as OpenDP does for floats. Its :attr:`event` is
    ``DiscreteGaussianEvent(σ/Λ, ⌊Δ/Λ⌋ + 1)``: rounding can add one grid step to the integer
    shift, so ρ = (⌊Δ/Λ⌋ + 1)²Λ²/(2σ²) ≤ (Δ + Λ)²/(2σ²) (CKS 2020, Thm 4), and :meth:`epsilon`
    converts ρ by the optimal zCDP conversion (an upper bound; see :mod:`dpkit.mechanisms.float_safe`).

    Parameters
    ----------
    sigma
        Noise standard deviation σ > 0.
    sensitivity
        L2 sensitivity Δ > 0.
    calibration
        How σ was obtained (``"sigma"`` given directly, ``"analytic"``, ``"classic"`` or
        ``"zcdp"``); informational, it never changes the guarantee.
    float_safe
        ``True``: the discrete Gaussian on the grid (see above), one scalar per call.

    Examples
    --------
    >>> mech = GaussianMechanism.from_epsilon_delta(1.0, 1e-5)
    >>> round(mech.sigma, 4)
    3.7306
    >>> round(GaussianMechanism.from_epsilon_delta(0.5, 1e-5, calibration="classic").sigma, 4)
    9.6896
    >>> GaussianMechanism.from_rho(0.125, sensitivity=1.0).sigma
    2.0
    >>> safe = GaussianMechanism.from_epsilon_delta(1.0, 1e-5, float_safe=True)
    >>> safe.epsilon(1e-5) <= 1.0, round(safe.sigma, 3), safe.floating_point_safe, safe.grid == 2.0**-14
    (True, 4.045, True, True)
    """

    sigma: float
    sensitivity: float = 1.0
    calibration: str = "sigma"
    float_safe: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "sigma", check_positive("sigma", self.sigma))
        object.__setattr__(self, "sensitivity", check_positive("sensitivity", self.sensitivity))
        if self.calibration not in CALIBRATIONS:
            raise ValueError(f"calibration must be one of {CALIBRATIONS}, got calibration={self.calibration!r}")
        if not isinstance(self.float_safe, (bool, np.bool_)):
            raise TypeError(f"float_safe must be True or False, got float_safe={self.float_safe!r}")
        object.__setattr__(self, "float_safe", bool(self.float_safe))

    @classmethod
    def from_epsilon_delta(
        cls, epsilon: float, delta: float, sensitivity: float = 1.0, calibration: str = "analytic", *,
        float_safe: bool = False,
    ) -> "GaussianMechanism":
        """The (ε, δ)-DP Gaussian mechanism.

        ``calibration="analytic"`` (default) gives the smallest σ for any ε > 0 (Balle & Wang
        2018, Alg. 1); ``"classic"`` gives σ = Δ√(2 ln(1.25/δ))/ε and refuses ε ≥ 1.
        ``float_safe=True`` (with ``"analytic"``): the smallest σ found whose float-safe ρ
        (:attr:`rho`) is at most the largest ρ with the optimal zCDP conversion ≤ (ε, δ)
        (:func:`~dpkit.accounting.zcdp.rho_for`); ``calibration`` is then recorded as ``"zcdp"``.
        """
        if float_safe:
            if calibration != "analytic":
                raise ValueError(f"float_safe=True calibrates through zCDP; calibration must be 'analytic' "
                                 f"(the default), got calibration={calibration!r}")
            return cls.from_rho(rho_for(epsilon, delta), sensitivity, float_safe=True)
        if calibration == "analytic":
            sigma = gaussian_sigma(epsilon, delta, sensitivity)
        elif calibration == "classic":
            sigma = classic_gaussian_sigma(epsilon, delta, sensitivity)
        else:
            raise ValueError(f"calibration must be 'analytic' or 'classic', got calibration={calibration!r}")
        return cls(sigma=sigma, sensitivity=sensitivity, calibration=calibration)

    @classmethod
    def from_rho(cls, rho: float, sensitivity: float = 1.0, *, float_safe: bool = False) -> "GaussianMechanism":
        """The ρ-zCDP Gaussian mechanism: σ = Δ/√(2ρ), rounded up; ``float_safe=True``: the smallest
        σ found whose float-safe ρ (sensitivity ⌊Δ/Λ⌋ + 1 grid steps) is ≤ ``rho``."""
        sigma = zcdp_sigma(rho, sensitivity)
        if not float_safe:
            return cls(sigma=sigma, sensitivity=sensitivity, calibration="zcdp")
        while grid_rho(sensitivity, sigma) > rho:
            grid = gaussian_grid(sigma)
            needed = grid_sensitivity(sensitivity, grid) * grid / math.sqrt(2.0 * rho)
            sigma = max(math.nextafter(sigma, math.inf), needed)
        return cls(sigma=sigma, sensitivity=sensitivity, calibration="zcdp", float_safe=True)

    @property
    def floating_point_safe(self) -> bool:  # type: ignore[override]
        """Whether the guarantee holds for the floating-point outputs: ``float_safe``."""
        return self.float_safe

    @property
    def grid(self) -> float | None:
        """``float_safe=True``: Λ = 2^(⌊log₂ σ⌋ − 16), the grid of every output (``None`` otherwise)."""
        return gaussian_grid(self.sigma) if self.float_safe else None

    @property
    def rho(self) -> float:
        """Δ²/(2σ²), the zCDP parameter; ``float_safe=True``: (⌊Δ/Λ⌋ + 1)²/(2(σ/Λ)²), rounded up."""
        if self.float_safe:
            return grid_rho(self.sensitivity, self.sigma)
        return self.sensitivity**2 / (2.0 * self.sigma**2)

    @property
    def noise_multiplier(self) -> float:
        """σ/Δ."""
        return self.sigma / self.sensitivity

    def epsilon(self, delta: float) -> float:
        """The exact ε(δ) of this mechanism (Balle & Wang 2018), an upper bound rounded up;
        ``float_safe=True``: the optimal zCDP conversion of :attr:`rho` (an upper bound)."""
        if self.float_safe:
            return zcdp_to_epsilon(self.rho, delta)
        return gaussian_epsilon(self.sigma, delta, self.sensitivity)

    @property
    def event(self) -> GaussianEvent | DiscreteGaussianEvent:
        """:class:`~dpkit.accounting.events.GaussianEvent` (σ, Δ); ``float_safe=True``: the
        :class:`~dpkit.accounting.events.DiscreteGaussianEvent` (σ/Λ, ⌊Δ/Λ⌋ + 1) actually drawn."""
        if self.float_safe:
            grid = gaussian_grid(self.sigma)
            return DiscreteGaussianEvent(sigma=self.sigma / grid, sensitivity=grid_sensitivity(self.sensitivity, grid))
        return GaussianEvent(sigma=self.sigma, sensitivity=self.sensitivity)

    def sample(self, value: Any, size: int | None = None, rng: Any = None) -> Any:
        """``value`` + N(0, σ²) noise; shape ``value.shape`` or ``(size,) + value.shape``.
        ``float_safe=True``: the grid discrete Gaussian output(s) for a scalar ``value``."""
        if self.float_safe:
            return sample_grid_gaussian(value, self.sigma, size, rng)
        array = check_value(value)
        size = check_size(size)
        generator = check_rng(rng)
        noise = generator.normal(0.0, self.sigma, size=output_shape(size, array.shape))
        return finish(np.asarray(array + noise), size)
