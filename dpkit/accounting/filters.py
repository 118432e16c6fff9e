"""Privacy filters: adaptive composition with a budget fixed in advance.

A *filter* is a stopping rule: before each step the run asks ``try_spend(event)``; the filter
accepts (and records) the step only if the total stays within the budget, otherwise it refuses
and records nothing. The steps, their parameters and the decision to stop may all depend on
everything seen so far (fully adaptive composition, Rogers, Roth, Ullman & Vadhan 2016), and
the run as a whole keeps the guarantee of the *budget*, whenever it stops.

The guarantee is the budget's, never the amount actually spent: reporting the spent amount at
a data-dependent stopping time is an *odometer*, which needs a union bound over budget levels
(Rogers et al. 2016, §5; Whitehouse, Ramdas, Rogers & Wu 2023, §5): see
:mod:`dpkit.accounting.odometers`.

Spent amounts are summed exactly (rational arithmetic on the float costs), so float rounding
never accepts a step beyond the budget; each cost's own rounding (a few ulps) is covered by the
margin of the conversion that reports the guarantee.

Filters provided

* :class:`RenyiFilter` — fixed orders α with RDP budgets B(α): valid because adaptively chosen
  RDP costs compose as long as their sum stays ≤ B(α) (Feldman & Zrnic 2021, Thm 3.1). With
  several orders every order must stay within its budget (then each gives a guarantee).
* :class:`ZCDPFilter` — Σρᵢ ≤ ρ: Feldman & Zrnic's filter at every order simultaneously, since
  the rule does not depend on α (see also Whitehouse et al. 2023, §4).
* :class:`GaussianDPFilter` — Σμᵢ² ≤ μ² for Gaussian steps (Smith & Thakurta 2022, Thm 1.1).
* :class:`ApproxDPFilter` — adaptively chosen (εᵢ, δᵢ): ``"basic"`` (Σεᵢ ≤ ε, Σδᵢ ≤ δ; Rogers et
  al. 2016, Thm 3.6) or ``"advanced"`` (Whitehouse et al. 2023, Thm 1: continue while
  √(2 log(1/δ) Σεᵢ²) + ½ Σεᵢ² ≤ ε and Σδᵢ ≤ δ′, guarantee (ε, δ + δ′)).
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Callable, Sequence

import numpy as np

from dpkit._validation import check_nonnegative, check_open_unit, check_positive
from dpkit.accounting import zcdp as zcdp_module
from dpkit.accounting.adaptive_steps import approx_parameters, check_event, float_up, gaussian_mu_squared
from dpkit.accounting.certify import certify
from dpkit.accounting.events import PrivacyEvent
from dpkit.accounting.gdp import gdp_mu_to_epsilon
from dpkit.accounting.neighbouring import NeighbouringRelation
from dpkit.accounting.rdp_conversion import rdp_to_epsilon
from dpkit.accounting.rdp_curves import rdp_curve


class RenyiFilter:
    """Rényi-DP filter at fixed orders (Feldman & Zrnic 2021, Thm 3.1).

    Parameters
    ----------
    orders
        One order α > 1 or a sequence of orders, fixed before the run.
    budgets
        RDP budget at each order (same shape as ``orders``).
    neighbouring
        Relation under which step costs are computed (Poisson subsampling amplifies under
        add/remove).

    Notes
    -----
    A step is accepted only if, at *every* order, the spent RDP plus the step's RDP stays at
    most the budget. At the end the run satisfies (α, B(α))-RDP for every order, so
    :meth:`epsilon` converts each budget and returns the smallest ε. Choose the orders from a
    *planned* run (:meth:`from_target` with ``plan``), never from the data.

    References
    ----------
    V. Feldman and T. Zrnic, "Individual privacy accounting via a Rényi filter", NeurIPS 2021
    (arXiv:2008.11193v4), Thm 3.1.
    """

    def __init__(
        self,
        orders: float | Sequence[float],
        budgets: float | Sequence[float],
        neighbouring: NeighbouringRelation | str = NeighbouringRelation.ADD_REMOVE,
    ):
        orders_arr = np.atleast_1d(np.asarray(orders, dtype=float))
        budgets_arr = np.atleast_1d(np.asarray(budgets, dtype=float))
        if orders_arr.shape != budgets_arr.shape or orders_arr.ndim != 1 or orders_arr.size == 0:
            raise ValueError(f"orders and budgets must have the same non-empty length, got orders={orders!r}, budgets={budgets!r}")
        for a in orders_arr:
            if not (a > 1.0 and math.isfinite(a)):
                raise ValueError(f"orders must be in (1, inf), got order={a}")
        for b in budgets_arr:
            check_positive("budget", b)
        self.orders = tuple(float(a) for a in orders_arr)
        self.budgets = tuple(float(b) for b in budgets_arr)
        self.neighbouring = NeighbouringRelation.parse(neighbouring)
        self._spent = [Fraction(0)] * len(self.orders)  # exact sums of the float costs
        self.steps = 0

    @classmethod
    def from_target(
        cls,
        epsilon: float,
        delta: float,
        order: float | None = None,
        *,
        plan: PrivacyEvent | None = None,
        neighbouring: NeighbouringRelation | str = NeighbouringRelation.ADD_REMOVE,
    ) -> "RenyiFilter":
        """A one-order filter whose budget converts to (ε, δ)-DP.

        The budget is B = ε − log(1 − 1/α) + (log δ + log α)/(α − 1) (Balle et al. 2020,
        Thm 21 — the ``"improved"`` conversion of :mod:`dpkit.accounting.rdp`), checked to
        convert back to at most ε. Give ``order``, or a ``plan`` (the composition you expect
        to run, fixed before seeing data) and the order is chosen as the one that is best for
        the plan.
        """
        epsilon = check_positive("epsilon", epsilon)
        delta = check_open_unit("delta", delta)
        relation = NeighbouringRelation.parse(neighbouring)
        if order is None:
            if plan is None:
                raise ValueError("give either order or plan, got order=None and plan=None")
            curve = rdp_curve(check_event(plan), relation)
            candidates = np.array([1.5, 2, 3, 4, 5, 6, 7, 8, 10, 12, 14, 16, 20, 24, 28, 32, 40, 48, 64, 96, 128,
                                   256, 512], dtype=float)
            scores = [
                rdp_to_epsilon([a], [curve(a)], delta)[0] if math.isfinite(curve(a)) else math.inf
                for a in candidates
            ]
            order = float(candidates[int(np.argmin(scores))])
        if not (order > 1.0 and math.isfinite(order)):
            raise ValueError(f"order must be in (1, inf), got order={order}")
        budget = epsilon - math.log1p(-1.0 / order) + (math.log(delta) + math.log(order)) / (order - 1.0)
        if budget <= 0.0:
            raise ValueError(
                f"order={order} cannot reach epsilon={epsilon} at delta={delta} (budget would be {budget:.3g} <= 0)"
            )
        step = math.ulp(budget)
        while rdp_to_epsilon([order], [budget], delta)[0] > epsilon:
            budget -= step  # one-sided: step down (by doubling steps) until it converts back within ε
            step *= 2.0
        return cls(order, budget, relation)

    def cost(self, event: PrivacyEvent) -> np.ndarray:
        """RDP of ``event`` at each order (raises UnsupportedEventError if it has none)."""
        curve = rdp_curve(check_event(event), self.neighbouring)
        return np.array([curve(a) for a in self.orders])

    def try_spend(self, event: PrivacyEvent) -> bool:
        """Accept and record ``event`` if every order stays within budget; else refuse (record nothing)."""
        cost = self.cost(event)
        if not np.all(np.isfinite(cost)):
            return False
        new = [spent + Fraction(float(c)) for spent, c in zip(self._spent, cost)]
        if any(total > Fraction(budget) for total, budget in zip(new, self.budgets)):
            return False
        self._spent = new
        self.steps += 1
        return True

    @property
    def spent(self) -> tuple[float, ...]:
        """RDP spent so far at each order."""
        return tuple(float_up(v) for v in self._spent)

    @property
    def remaining(self) -> tuple[float, ...]:
        """RDP budget left at each order."""
        return tuple(float(Fraction(b) - s) for b, s in zip(self.budgets, self._spent))

    def epsilon(self, delta: float) -> float:
        """ε of the filter's guarantee (from the budgets, valid at any stopping time) at ``delta``."""
        return certify(rdp_to_epsilon(list(self.orders), list(self.budgets), delta)[0])


class _AdditiveFilter:
    """Accept a step while the spent total plus the step's ``_cost`` stays ≤ one scalar budget."""

    _cost: Callable[[PrivacyEvent], float]  # set by subclasses: one step's cost in the budget's units

    def __init__(self, budget: float):
        self._budget = budget
        self._spent = Fraction(0)  # exact sum of the float costs
        self.steps = 0

    def try_spend(self, event: PrivacyEvent) -> bool:
        """Accept and record ``event`` if the total stays within budget; else refuse (record nothing)."""
        cost = self._cost(check_event(event))
        if not math.isfinite(cost):
            return False
        total = self._spent + Fraction(cost)
        if total > Fraction(self._budget):
            return False
        self._spent = total
        self.steps += 1
        return True

    @property
    def spent(self) -> float:
        """Budget spent so far (ρ for :class:`ZCDPFilter`, Σμᵢ² for :class:`GaussianDPFilter`)."""
        return float_up(self._spent)

    @property
    def remaining(self) -> float:
        """Budget left (ρ − Σρᵢ, or μ² − Σμᵢ²)."""
        return float(Fraction(self._budget) - self._spent)


class ZCDPFilter(_AdditiveFilter):
    """zCDP filter: adaptively chosen ρᵢ-zCDP steps while Σρᵢ ≤ ρ; the run is ρ-zCDP.

    Valid as Feldman & Zrnic's RDP filter (2021, Thm 3.1) applied at every order α at once
    (ρ-zCDP is RDP ρα at every α and the stopping rule Σρᵢ ≤ ρ does not depend on α).
    A step costs its ρ from :func:`dpkit.accounting.zcdp.event_rho`.
    """

    _cost = staticmethod(zcdp_module.event_rho)

    def __init__(self, rho: float):
        self.rho = check_positive("rho", rho)
        super().__init__(self.rho)

    def epsilon(self, delta: float) -> float:
        """ε of the ρ-zCDP guarantee at ``delta`` (optimal conversion of :mod:`dpkit.accounting.zcdp`)."""
        return certify(zcdp_module.zcdp_to_epsilon(self.rho, delta))


class GaussianDPFilter(_AdditiveFilter):
    """μ-GDP filter for Gaussian steps: accept while Σ(Δᵢ/σᵢ)² ≤ μ² (Smith & Thakurta 2022, Thm 1.1).

    Accepts a Gaussian event or a composition of Gaussians.

    References
    ----------
    J. Smith and A. Thakurta, "Fully adaptive composition for Gaussian differential privacy",
    arXiv:2210.17520 (2022).
    """

    _cost = staticmethod(gaussian_mu_squared)

    def __init__(self, mu: float):
        self.mu = check_positive("mu", mu)
        super().__init__(self.mu * self.mu)

    def epsilon(self, delta: float) -> float:
        """ε of the μ-GDP guarantee at ``delta``.

        Each accepted cost (Δᵢ/σᵢ)² is within 3·2⁻⁵³ relative of its true value (a quotient and a
        square) and the sums are exact, so the true Σμᵢ² is at most μ²(1 + 3·2⁻⁵³): the curve is
        evaluated at μ(1 + 8·2⁻⁵³) (rounded up), which covers it."""
        return certify(gdp_mu_to_epsilon(math.nextafter(self.mu * (1.0 + 8.0 * 2.0**-53), math.inf), delta))


class ApproxDPFilter:
    """Filter for adaptively chosen (εᵢ, δᵢ)-DP steps.

    Parameters
    ----------
    epsilon, delta
        Target. ``"basic"``: the run is (ε, δ)-DP while Σεᵢ ≤ ε and Σδᵢ ≤ δ (Rogers, Roth,
        Ullman & Vadhan 2016, Thm 3.6). ``"advanced"``: continue while
        √(2 log(1/δ) Σεᵢ²) + ½ Σεᵢ² ≤ ε and Σδᵢ ≤ ``delta_steps``; the run is
        (ε, δ + delta_steps)-DP (Whitehouse, Ramdas, Rogers & Wu 2023, Thm 1 / ICML 2023).
    method
        ``"basic"`` or ``"advanced"``.
    delta_steps
        ``"advanced"`` only: the budget for the steps' own δᵢ (default 0).
    """

    def __init__(self, epsilon: float, delta: float, method: str = "basic", delta_steps: float = 0.0):
        self.target_epsilon = check_positive("epsilon", epsilon)
        if method not in ("basic", "advanced"):
            raise ValueError(f"method must be 'basic' or 'advanced', got method={method!r}")
        self.method = method
        if method == "basic":
            self.target_delta = check_nonnegative("delta", delta)
            if self.target_delta >= 1.0:
                raise ValueError(f"delta must be in [0, 1), got delta={delta}")
        else:
            self.target_delta = check_open_unit("delta", delta)
        self.delta_steps = check_nonnegative("delta_steps", delta_steps)
        if method == "basic" and delta_steps:
            raise ValueError(f"delta_steps is for method='advanced' only, got delta_steps={delta_steps}")
        self._eps_sum = Fraction(0)  # exact sums of the given floats
        self._eps_sq_sum = Fraction(0)
        self._delta_sum = Fraction(0)
        self.steps = 0

    def _advanced_bound(self, eps_sq: Fraction) -> float:
        """√(2 log(1/δ) Σεᵢ²) + ½ Σεᵢ² (Whitehouse et al. 2023, Thm 1)."""
        eps_sq_up = float_up(eps_sq)
        return certify(math.sqrt(2.0 * math.log(1.0 / self.target_delta) * eps_sq_up) + 0.5 * eps_sq_up, noop=not eps_sq)

    def _fits(self, eps_sum: Fraction, eps_sq: Fraction, delta_sum: Fraction) -> bool:
        if self.method == "basic":
            return eps_sum <= self.target_epsilon and delta_sum <= self.target_delta
        return self._advanced_bound(eps_sq) <= self.target_epsilon and delta_sum <= self.delta_steps

    def try_spend_parameters(self, epsilon: float, delta: float = 0.0) -> bool:
        """Accept an (ε, δ)-DP step chosen adaptively, if the rule allows it."""
        epsilon = check_nonnegative("epsilon", epsilon)
        delta = check_nonnegative("delta", delta)
        # exact sums, so that float rounding never accepts a step beyond the budget
        eps_sum, eps_sq = self._eps_sum + Fraction(epsilon), self._eps_sq_sum + Fraction(epsilon) ** 2
        delta_sum = self._delta_sum + Fraction(delta)
        if not self._fits(eps_sum, eps_sq, delta_sum):
            return False
        self._eps_sum, self._eps_sq_sum, self._delta_sum = eps_sum, eps_sq, delta_sum
        self.steps += 1
        return True

    def try_spend(self, event: PrivacyEvent) -> bool:
        """Accept a single-step event with a pure/approximate DP description (ε from the event)."""
        epsilon, delta = approx_parameters(check_event(event))
        return self.try_spend_parameters(epsilon, delta)

    @property
    def spent(self) -> tuple[float, float]:
        """(Σεᵢ, Σδᵢ) so far."""
        return float_up(self._eps_sum), float_up(self._delta_sum)

    @property
    def remaining(self) -> float:
        """Basic: ε − Σεᵢ. Advanced: ε minus the current value of the advanced bound."""
        if self.method == "basic":
            return float(Fraction(self.target_epsilon) - self._eps_sum)
        return self.target_epsilon - self._advanced_bound(self._eps_sq_sum)

    @property
    def guarantee(self) -> tuple[float, float]:
        """(ε, δ) valid for the run whenever it stops."""
        delta = self.target_delta if self.method == "basic" else self.target_delta + self.delta_steps
        return certify(self.target_epsilon, margin=False), certify(delta, kind="delta", margin=self.method != "basic")
