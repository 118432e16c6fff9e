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

Not provided: a zCDP/GDP odometer built from a grid of filters with a union bound over levels
(Whitehouse, Ramdas, Rogers & Wu 2023, §5). Its exact statement could not be confirmed against
the paper's text when this module was written, so it is left out rather than guessed.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from dpkit._validation import check_nonnegative, check_unit_interval
from dpkit.accounting.events import PrivacyEvent
from dpkit.accounting.filters import _approx_parameters, _check_event

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


def _float_up(value: Fraction) -> float:
    """Smallest float ≥ ``value`` (exact rational in, safe float out)."""
    out = float(value)
    if Fraction(out) < value:
        out = math.nextafter(out, math.inf)
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
        epsilon, delta = _approx_parameters(_check_event(event))
        self.spend_parameters(epsilon, delta)

    @property
    def spent(self) -> tuple[float, float]:
        """(Σεᵢ, Σδᵢ) so far, each rounded up to a float."""
        return _float_up(self._eps_sum), _float_up(self._delta_sum)

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
            epsilon=epsilon,
            delta=self.delta,
            steps=self.steps,
            spent_epsilon=spent_eps,
            spent_delta=spent_delta,
            method=_BASIC_METHOD,
            notes=notes,
        )
