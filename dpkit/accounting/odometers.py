"""Privacy odometers: a running guarantee for adaptive runs without a budget fixed in advance.

A *filter* (:mod:`dpkit.accounting.filters`) fixes a budget and refuses steps that would
exceed it. An *odometer* never refuses: the run records every step with :meth:`spend` and may
ask at any time for a bound on the privacy loss realised so far (Rogers, Roth, Ullman & Vadhan
2016). Steps and their parameters may depend on everything seen so far.

What "valid" means here (the privacy-loss form of an odometer, Rogers et al. 2016): fix a
failure probability δ_g *before* the run. For every pair of neighbouring datasets and every
adaptive analyst, with ``L_n`` the realised privacy loss of the first ``n`` outputs,

    P[ |L_n| > ε̂_n for some n ] ≤ δ_g,

where ``ε̂_n`` is the odometer's report after ``n`` steps (a function of the realised
parameters only). This is a statement about the realised loss, not an (ε, δ)-DP guarantee for
a run stopped at a data-dependent time with a reported ε chosen after the fact; for the latter
fix the budget in advance and use a filter.

Odometers provided

* :class:`BasicOdometer` — basic composition: ε̂_n = Σ_{i≤n} εᵢ while Σδᵢ ≤ δ_g, ∞ afterwards.

* :class:`RenyiOdometer` — adaptively chosen steps with RDP curves, at a fixed grid of orders.
* :class:`ZCDPOdometer` — adaptively chosen ρᵢ-zCDP steps, stitched over a doubling grid of ρ.
* :class:`GaussianDPOdometer` — adaptively chosen Gaussian steps (μᵢ = Δᵢ/σᵢ, μᵢ-GDP).

The last three are time-uniform bounds on the realised loss from martingale concentration, the
approach of Whitehouse, Ramdas, Rogers & Wu (2023, "Fully-adaptive composition in differential
privacy", ICML, §5), derived here in full (each class's docstring) so that validity does not rest
on a theorem number: for a step that is (α, εᵢ(α))-RDP given the past, E[e^{(α−1)ℓᵢ} | past] =
e^{(α−1)D_α} ≤ e^{(α−1)εᵢ(α)} (ℓᵢ the step's loss under P = M(D)), so
M_n = exp((α−1)(L_n − Σ_{i≤n} εᵢ(α))) is a non-negative supermartingale with M₀ = 1 and Ville's
inequality gives P[∃n: L_n ≥ Σ_{i≤n} εᵢ(α) + log(1/δ_m)/(α−1)] ≤ δ_m. A union bound over a grid of
orders (or, for zCDP, of budgets) with Σδ_m ≤ δ_g makes the minimum over the grid valid for every
n at once. Each holds for every *ordered* pair of neighbours (D, D′), so both directions of the
loss are covered. P[L_n ≤ ε̂_n for all n] ≥ 1 − δ_g implies that the run stopped at any time τ
is (ε̂_τ, δ_g)-DP *for the reported ε̂_τ in the privacy-loss sense above*; it is never below the
ε of the same steps composed non-adaptively (tests/accounting/test_odometers.py checks both).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Sequence

import numpy as np

from dpkit._validation import check_nonnegative, check_open_unit, check_positive, check_unit_interval
from dpkit.accounting.adaptive_steps import approx_parameters, check_event, float_up, gaussian_mu_squared
from dpkit.accounting.certify import certify, round_outward
from dpkit.accounting.events import PrivacyEvent
from dpkit.accounting.neighbouring import NeighbouringRelation
from dpkit.accounting.rdp_curves import rdp_curve
from dpkit.accounting.zcdp import event_rho

_BASIC_METHOD = "basic composition odometer (Rogers, Roth, Ullman & Vadhan 2016)"
_APPROX_NOTE = (
    "steps with delta_i > 0: validity rests on the basic-composition odometer of Rogers et al. 2016 "
    "(arXiv:1605.08294); its theorem number was not checked against the paper's text"
)


@dataclass(frozen=True)
class OdometerGuarantee:
    """An odometer's report at one time and how it was obtained.

    Attributes
    ----------
    epsilon
        Bound on the absolute realised privacy loss so far (rounded up; ``inf`` once the
        steps' δᵢ exceed ``delta``).
    delta
        Probability, over the run, that the realised loss ever exceeds the reported ε (fixed
        before the run).
    steps
        Steps recorded so far.
    spent_epsilon, spent_delta
        Σεᵢ (rounded up) and Σδᵢ (rounded up) of the recorded steps.
    method
        The construction and its reference.
    notes
        Caveats that apply to this report.
    """

    epsilon: float
    delta: float
    steps: int
    spent_epsilon: float
    spent_delta: float
    method: str
    notes: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dictionary of every field."""
        out = dataclasses.asdict(self)
        out["notes"] = list(self.notes)
        return out


class BasicOdometer:
    """Basic-composition odometer for adaptively chosen (εᵢ, δᵢ)-DP steps.

    Parameters
    ----------
    delta
        δ_g in [0, 1), fixed before the run: the probability with which the realised privacy
        loss may exceed the report. With ``delta=0`` only pure steps (δᵢ = 0) keep a finite
        report.

    Notes
    -----
    After ``n`` steps the report is ε̂_n = Σ_{i≤n} εᵢ if Σ_{i≤n} δᵢ ≤ δ_g and ε̂_n = ∞
    otherwise; it never decreases as steps are added. Guarantee, for every neighbouring pair
    and every adaptive choice of steps, parameters and stopping:

    * pure steps (all δᵢ = 0): |L_n| ≤ ε̂_n for every ``n``, surely (probability of exceeding
      is 0). Proof: L_n = Σ ℓᵢ, and each step's loss satisfies |ℓᵢ| ≤ εᵢ because step ``i`` is
      εᵢ-DP given the past and εᵢ is fixed by the past.
    * steps with δᵢ > 0: P[∃n: |L_n| > ε̂_n] ≤ δ_g, the basic-composition odometer
      COMP_{δ_g}(ε₁, δ₁, …, ε_n, δ_n) = Σεᵢ·1{Σδᵢ ≤ δ_g} + ∞·1{Σδᵢ > δ_g} of Rogers et al.
      (2016). The report then carries a note that the theorem number was not checked.

    Sums are exact (rational arithmetic on the floats given) and ε is rounded up to a float,
    so the comparison Σδᵢ ≤ δ_g is never decided by rounding.

    References
    ----------
    R. Rogers, A. Roth, J. Ullman and S. Vadhan, "Privacy odometers and filters: pay-as-you-go
    composition", NeurIPS 2016 (arXiv:1605.08294).
    """

    def __init__(self, delta: float = 0.0):
        self.delta = check_unit_interval("delta", delta, include_one=False)
        self._delta_exact = Fraction(self.delta)
        self._eps_sum = Fraction(0)
        self._delta_sum = Fraction(0)
        self.steps = 0

    def spend_parameters(self, epsilon: float, delta: float = 0.0) -> None:
        """Record an (ε, δ)-DP step whose parameters were chosen adaptively (never refuses)."""
        epsilon = check_nonnegative("epsilon", epsilon)
        delta = check_unit_interval("delta", delta)
        self._eps_sum += Fraction(epsilon)
        self._delta_sum += Fraction(delta)
        self.steps += 1

    def spend(self, event: PrivacyEvent) -> None:
        """Record a single step with a pure or approximate DP description (ε, δ from the event).

        Accepts the events of :class:`dpkit.accounting.filters.ApproxDPFilter`; raises
        ``UnsupportedEventError`` for others (e.g. Gaussian steps, which have no finite pure ε).
        """
        epsilon, delta = approx_parameters(check_event(event))
        self.spend_parameters(epsilon, delta)

    @property
    def spent(self) -> tuple[float, float]:
        """(Σεᵢ, Σδᵢ) so far, each rounded up to a float."""
        return float_up(self._eps_sum), float_up(self._delta_sum)

    def guarantee(self) -> OdometerGuarantee:
        """The current report: ε̂ = Σεᵢ if Σδᵢ ≤ δ_g (else ∞), valid with failure probability δ_g."""
        spent_eps, spent_delta = self.spent
        epsilon = spent_eps if self._delta_sum <= self._delta_exact else math.inf
        notes: tuple[str, ...] = ()
        if self._delta_sum > 0:
            notes = (_APPROX_NOTE,)
        if math.isinf(epsilon):
            notes += (f"sum of step deltas {spent_delta:.6g} exceeds delta={self.delta:.6g}: no finite bound",)
        return OdometerGuarantee(
            epsilon=certify(epsilon, noop=not self.steps, margin=False),  # an exact sum rounded up: no margin needed
            delta=self.delta,
            steps=self.steps,
            spent_epsilon=spent_eps,
            spent_delta=spent_delta,
            method=_BASIC_METHOD,
            notes=notes,
        )


_RENYI_METHOD = "Renyi odometer: Ville's inequality at each order, union bound over the orders (Whitehouse et al. 2023, §5)"
_ZCDP_METHOD = "zCDP odometer: Ville's inequality stitched over a doubling grid of rho (Whitehouse et al. 2023, §5)"
_GDP_METHOD = "Gaussian odometer: Ville's inequality stitched over a doubling grid of mu^2 (Whitehouse et al. 2023, §5)"

#: Levels of the doubling grid of :class:`ZCDPOdometer` (ρ up to ρ_min·2¹⁹⁹; every level is used).
_LEVELS = 200


class RenyiOdometer:
    """Odometer for adaptively chosen steps described by RDP curves, at fixed orders.

    Parameters
    ----------
    delta
        δ_g ∈ (0, 1), fixed before the run.
    orders
        Orders α₁, …, α_M > 1, fixed before the run; each gets δ_g/M of the failure probability.
    neighbouring
        Relation under which the steps' RDP curves are computed.

    Notes
    -----
    Report after n steps: ε̂_n = min_m [Σ_{i≤n} εᵢ(α_m) + log(M/δ_g)/(α_m − 1)] (rounded up), where
    εᵢ is step i's RDP curve, chosen after seeing the outputs of steps 1..i−1. Validity: by
    Ville's inequality at each α_m (see the module docstring) and a union bound over the M orders,
    P[∃n: L_n > ε̂_n] ≤ δ_g. This is the classic RDP conversion (Mironov 2017, Prop. 3) with δ
    split over the orders, valid for data-dependent parameters and stopping.

    >>> from dpkit.accounting.events import GaussianEvent
    >>> odometer = RenyiOdometer(1e-5, orders=[2, 4, 8, 16, 32, 64])
    >>> for _ in range(10):
    ...     odometer.spend(GaussianEvent(5.0))
    >>> round(odometer.guarantee().epsilon, 4)
    3.5007
    """

    def __init__(self, delta: float, orders: Sequence[float] = tuple(range(2, 65)),
                 neighbouring: NeighbouringRelation | str = NeighbouringRelation.ADD_REMOVE):
        self.delta = check_open_unit("delta", delta)
        values = [check_positive("orders", a) for a in orders]
        if not values or any(not (1.0 < a < math.inf) for a in values):
            raise ValueError(f"orders must be a non-empty sequence of numbers in (1, inf), got orders={list(orders)}")
        self.orders = tuple(sorted(set(values)))
        self.neighbouring = NeighbouringRelation.parse(neighbouring)
        self._spent: list[Fraction | float] = [Fraction(0)] * len(self.orders)  # exact sums (inf once a cost is)
        self.steps = 0

    def spend(self, event: PrivacyEvent) -> None:
        """Record one step (its RDP curve at every order, rounded up); never refuses."""
        curve = rdp_curve(check_event(event), self.neighbouring)
        costs = [round_outward(float(curve(a))) for a in self.orders]
        self._spent = [s + Fraction(c) if math.isfinite(c) else math.inf for s, c in zip(self._spent, costs)]
        self.steps += 1

    def guarantee(self) -> OdometerGuarantee:
        """The current report ε̂_n, valid simultaneously for every n with failure probability δ_g."""
        spent = np.array([float_up(s) if isinstance(s, Fraction) else math.inf for s in self._spent])
        values = spent + math.log(len(self.orders) / self.delta) / (np.array(self.orders) - 1.0)
        best = int(np.argmin(values))
        return OdometerGuarantee(
            epsilon=certify(float(values[best]), noop=not self.steps), delta=self.delta, steps=self.steps,
            spent_epsilon=float(spent[best]), spent_delta=0.0, method=_RENYI_METHOD,
            notes=(f"best order {self.orders[best]:g} of {len(self.orders)}; spent_epsilon is the RDP spent at that order",),
        )


class ZCDPOdometer:
    """Odometer for adaptively chosen ρᵢ-zCDP steps (any event with a zCDP parameter).

    Parameters
    ----------
    delta
        δ_g ∈ (0, 1), fixed before the run.
    rho_min
        The smallest level of the doubling grid, ρ_m = ρ_min·2^m (m = 0, 1, …, 199), fixed before
        the run; choose it near the smallest total ρ you expect to report (the bound is within
        a factor ≈ √2 in the deviation term of the best single level anywhere on the grid).

    Notes
    -----
    With R_n = Σ_{i≤n} ρᵢ, a ρᵢ-zCDP step has E[e^{λℓᵢ} | past] ≤ e^{λ(λ+1)ρᵢ} (Bun & Steinke 2016,
    Def. 1.1 at α = λ + 1), so Ville's inequality gives, for each λ > 0 and δ_m,
    P[∃n: L_n ≥ R_n + λR_n + log(1/δ_m)/λ] ≤ δ_m. Level m uses δ_m = δ_g/((m+1)(m+2)) (Σ ≤ δ_g)
    and λ_m = √(log(1/δ_m)/ρ_m), the optimum at R = ρ_m. Report:
    ε̂_n = R_n + min_m [λ_m R_n + log(1/δ_m)/λ_m] (rounded up), valid for every n at once with
    failure probability δ_g, non-decreasing in n.

    >>> from dpkit.accounting.events import GaussianEvent
    >>> odometer = ZCDPOdometer(1e-5, rho_min=1e-3)
    >>> for _ in range(100):
    ...     odometer.spend(GaussianEvent(10.0))
    >>> round(odometer.guarantee().epsilon, 3)  # non-adaptive: 4.377 exact, 5.299 by Bun & Steinke
    6.195
    """

    _method = _ZCDP_METHOD

    def __init__(self, delta: float, rho_min: float = 1e-4):
        self.delta = check_open_unit("delta", delta)
        self.rho_min = check_positive("rho_min", rho_min)
        m = np.arange(_LEVELS, dtype=float)
        self._log_inv_delta = math.log(1.0 / self.delta) + np.log((m + 1.0) * (m + 2.0))
        self._lambdas = np.sqrt(self._log_inv_delta / (self.rho_min * np.exp2(m)))
        self._terms: list[float] = []
        self.steps = 0

    def _cost(self, event: PrivacyEvent) -> float:
        return event_rho(event)

    def spend(self, event: PrivacyEvent) -> None:
        """Record one step (its ρ, rounded up); never refuses."""
        self._terms.append(round_outward(self._cost(check_event(event))))
        self.steps += 1

    def spend_rho(self, rho: float) -> None:
        """Record a ρ-zCDP step whose ρ was chosen adaptively; never refuses."""
        self._terms.append(check_nonnegative("rho", rho))
        self.steps += 1

    @property
    def rho(self) -> float:
        """R_n = Σρᵢ so far (rounded up)."""
        return round_outward(math.fsum(self._terms))

    def guarantee(self) -> OdometerGuarantee:
        """The current report ε̂_n, valid simultaneously for every n with failure probability δ_g."""
        rho = self.rho
        deviation = float(np.min(self._lambdas * rho + self._log_inv_delta / self._lambdas))
        epsilon = certify((rho + deviation) * (1.0 + 8.0 * 2.0**-52), noop=not self.steps)
        return OdometerGuarantee(
            epsilon=epsilon, delta=self.delta, steps=self.steps, spent_epsilon=rho, spent_delta=0.0,
            method=self._method, notes=("spent_epsilon is the total rho (zCDP) of the recorded steps",),
        )


class GaussianDPOdometer(ZCDPOdometer):
    """Odometer for adaptively chosen Gaussian steps, μᵢ = Δᵢ/σᵢ (each μᵢ-GDP given the past).

    Parameters
    ----------
    delta
        δ_g ∈ (0, 1), fixed before the run.
    mu_min
        Smallest level of the doubling grid of μ², as a μ: levels μ_min²·2^m, fixed before the run.

    Notes
    -----
    A Gaussian step's loss given the past is exactly N(μᵢ²/2, μᵢ²) under P, so
    E[e^{λℓᵢ} | past] = e^{λ(λ+1)μᵢ²/2}: the zCDP odometer with ρᵢ = μᵢ²/2 and ρ_min = μ_min²/2
    applies with the same proof and no slack in the moment bound. Report:
    ε̂_n = V_n/2 + min_m [λ_m V_n/2 + log(1/δ_m)/λ_m], V_n = Σμᵢ².
    """

    _method = _GDP_METHOD

    def __init__(self, delta: float, mu_min: float = 1e-2):
        self.mu_min = check_positive("mu_min", mu_min)
        super().__init__(delta, rho_min=self.mu_min**2 / 2.0)

    def _cost(self, event: PrivacyEvent) -> float:
        return gaussian_mu_squared(event) / 2.0

    @property
    def mu(self) -> float:
        """√Σμᵢ² of the recorded steps (rounded up)."""
        return round_outward(math.sqrt(2.0 * self.rho))
