"""The Gaussian mechanism: classic, analytic and zCDP calibration.

M(D) = f(D) + Z with Z ~ N(0, σ² I) on a query of L2 sensitivity Δ.

* zCDP: Δ²/(2σ²)-zCDP (Bun & Steinke 2016, Prop. 1.6).
* Analytic (ε, δ): the exact δ(ε) of Balle & Wang 2018 (Thm 8), any ε > 0; calibrated by
  :func:`dpkit.accounting.analytic_gaussian.gaussian_sigma` (never less noise than needed).
* Classic (ε, δ): σ = Δ √(2 ln(1.25/δ))/ε, valid only for ε < 1 (Dwork & Roth 2014, Thm A.1).

Private as executed by default: the output is the continuous mechanism's output rounded exactly to a
power-of-two lattice (:mod:`dpkit.mechanisms.float_safe`), which keeps every guarantee above by
post-processing. ``float_safe=False`` opts out to numpy's continuous sampler, labelled as not
private as executed.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np

from dpkit._validation import check_positive, check_rng
from dpkit.accounting.analytic_gaussian import classic_gaussian_sigma, gaussian_epsilon, gaussian_sigma
from dpkit.accounting.events import GaussianEvent
from dpkit.mechanisms.base import Mechanism, check_size, check_value, finish, output_shape
from dpkit.mechanisms.float_safe import check_float_safe_scale, lattice, resolve_float_safe, sample_lattice_gaussian

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
    arrays of any shape (noise i.i.d. per coordinate; Δ is the L2 sensitivity of the whole array).

    **Private as executed** (default ``float_safe=True``): every output coordinate is
    ``m·Λ`` with ``m = ⌊(x + σY)/Λ + ½⌋``, ``Y ~ N(0, 1)`` sampled exactly and the lattice
    ``Λ = 2^(⌊log₂ σ⌋ − 16)`` (:attr:`grid`), a post-processing of the continuous mechanism: the
    guarantee above holds for the doubles released, with no inflation of σ or Δ
    (:mod:`dpkit.mechanisms.float_safe`). ``float_safe=False`` draws numpy's ziggurat ``normal``
    instead, whose raw outputs leak the input through their low-order bits (Jin et al. 2022;
    Haney et al. 2022): the default :func:`dpkit.audit.audit` refutes it from 10⁶ outputs alone
    (``docs/audit.md``, "Float bits from the outputs alone"); runs that use it carry the "not
    private as executed" note.

    Parameters
    ----------
    sigma
        Noise standard deviation σ > 0 (at least 2⁻¹⁰⁰⁰ when ``float_safe``).
    sensitivity
        L2 sensitivity Δ > 0.
    calibration
        How σ was obtained (``"sigma"`` given directly, ``"analytic"``, ``"classic"`` or
        ``"zcdp"``); informational, it never changes the guarantee.
    float_safe
        ``True``: the exactly rounded output; ``False``: numpy's continuous sampler; ``None`` (default):
        ``True``, unless built inside :func:`~dpkit.mechanisms.float_safe.continuous_noise` (the opt-out).

    Examples
    --------
    >>> mech = GaussianMechanism.from_epsilon_delta(1.0, 1e-5)
    >>> round(mech.sigma, 4), mech.floating_point_safe, mech.grid == 2.0**-15
    (3.7306, True, True)
    >>> round(GaussianMechanism.from_epsilon_delta(0.5, 1e-5, calibration="classic").sigma, 4)
    9.6896
    >>> GaussianMechanism.from_rho(0.125, sensitivity=1.0).sigma
    2.0
    >>> out = mech.sample(np.zeros(3), size=2, rng=0)
    >>> out.shape, bool(np.all(out / mech.grid == np.round(out / mech.grid)))
    ((2, 3), True)
    """

    sigma: float
    sensitivity: float = 1.0
    calibration: str = "sigma"
    float_safe: bool | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "sigma", check_positive("sigma", self.sigma))
        object.__setattr__(self, "sensitivity", check_positive("sensitivity", self.sensitivity))
        if self.calibration not in CALIBRATIONS:
            raise ValueError(f"calibration must be one of {CALIBRATIONS}, got calibration={self.calibration!r}")
        object.__setattr__(self, "float_safe", resolve_float_safe(self.float_safe))
        if self.float_safe:
            check_float_safe_scale("sigma", self.sigma)

    @classmethod
    def from_epsilon_delta(
        cls, epsilon: float, delta: float, sensitivity: float = 1.0, calibration: str = "analytic", *,
        float_safe: bool | None = None,
    ) -> "GaussianMechanism":
        """The (ε, δ)-DP Gaussian mechanism.

        ``calibration="analytic"`` (default) gives the smallest σ for any ε > 0 (Balle & Wang
        2018, Alg. 1); ``"classic"`` gives σ = Δ√(2 ln(1.25/δ))/ε and refuses ε ≥ 1. The float-safe
        form needs no more noise than the continuous one (it is its post-processing).
        """
        if calibration == "analytic":
            sigma = gaussian_sigma(epsilon, delta, sensitivity)
        elif calibration == "classic":
            sigma = classic_gaussian_sigma(epsilon, delta, sensitivity)
        else:
            raise ValueError(f"calibration must be 'analytic' or 'classic', got calibration={calibration!r}")
        return cls(sigma=sigma, sensitivity=sensitivity, calibration=calibration, float_safe=float_safe)

    @classmethod
    def from_rho(cls, rho: float, sensitivity: float = 1.0, *, float_safe: bool | None = None) -> "GaussianMechanism":
        """The ρ-zCDP Gaussian mechanism: σ = Δ/√(2ρ), rounded up."""
        return cls(sigma=zcdp_sigma(rho, sensitivity), sensitivity=sensitivity, calibration="zcdp",
                   float_safe=float_safe)

    @property
    def floating_point_safe(self) -> bool:  # type: ignore[override]
        """Whether the guarantee holds for the floating-point outputs: ``float_safe``."""
        return self.float_safe

    @property
    def grid(self) -> float | None:
        """``float_safe=True``: Λ = 2^(⌊log₂ σ⌋ − 16), the lattice of every output (``None`` otherwise)."""
        return lattice(self.sigma) if self.float_safe else None

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
        """:class:`~dpkit.accounting.events.GaussianEvent` (σ, Δ), for both samplers."""
        return GaussianEvent(sigma=self.sigma, sensitivity=self.sensitivity)

    def sample(self, value: Any, size: int | None = None, rng: Any = None) -> Any:
        """``value`` + N(0, σ²) noise; shape ``value.shape`` or ``(size,) + value.shape``
        (``float_safe=True``: rounded exactly to :attr:`grid`)."""
        if self.float_safe:
            return sample_lattice_gaussian(value, self.sigma, size, rng)
        array = check_value(value)
        size = check_size(size)
        generator = check_rng(rng)
        noise = generator.normal(0.0, self.sigma, size=output_shape(size, array.shape))
        return finish(np.asarray(array + noise), size)
