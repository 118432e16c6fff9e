"""Gaussian differential privacy (μ-GDP) and trade-off functions (f-DP).

A mechanism is μ-GDP if distinguishing neighbours is at least as hard as distinguishing
N(0, 1) from N(μ, 1): its trade-off function satisfies f ≥ G_μ, G_μ(α) = Φ(Φ⁻¹(1 − α) − μ)
(Dong, Roth & Su 2022, Def. 2.7). The Gaussian mechanism with noise multiplier σ/Δ is exactly
(Δ/σ)-GDP (Thm 2.7) and μᵢ-GDP mechanisms compose to √(Σμᵢ²)-GDP (Cor. 3.3), so compositions
of Gaussians are accounted *exactly*. μ-GDP is equivalent to (ε, δ(ε))-DP for all ε ≥ 0 with
δ(ε) = Φ(−ε/μ + μ/2) − e^ε Φ(−ε/μ − μ/2) (Cor. 2.13).

Poisson-subsampled Gaussians are not GDP with a finite μ that is both tight and certified;
the central-limit theorem of Bu, Dong, Long & Su (2020, Thm 5 / Dong et al. 2022, Cor. 5.4)
gives μ ≈ q √(T (e^{1/σ²} − 1)) as T → ∞. :class:`GDPAccountant` offers it only when built with
``allow_approximation=True``, and then labels the result ``is_upper_bound=False``.
"""

from __future__ import annotations

import math
import sys
import warnings
from typing import Any, Callable

import numpy as np
from scipy import optimize, special

from dpkit._bisection import bisect_to_adjacent_floats
from dpkit._validation import check_nonnegative, check_positive
from dpkit.accounting.analytic_gaussian import gaussian_mu_upper, squared_multiplier_upper
from dpkit.accounting.certify import certified
from dpkit.accounting.base import (
    Accountant,
    AccountingResult,
    ApproximationWarning,
    UnsupportedEventError,
    check_target_delta,
    check_target_epsilon,
    flatten,
)
from dpkit.accounting.events import (GaussianEvent, ParallelComposedEvent, PoissonSampledEvent, PrivacyEvent,
                                     TreeAggregationEvent)
from dpkit.accounting.gdp_curve import gdp_delta, gdp_log_delta
from dpkit.accounting.neighbouring import NeighbouringRelation
from dpkit.accounting.pld import PLDAccountant

_CLT_NOTE = "central-limit approximation, not a bound (Bu, Dong, Long & Su 2020, Thm 5)"


@certified("delta", noop=lambda mu, epsilon: mu == 0)
def gdp_mu_to_delta(mu: float, epsilon: float) -> float:
    """Exact δ(ε) of μ-GDP: Φ(−ε/μ + μ/2) − e^ε Φ(−ε/μ − μ/2) (Dong, Roth & Su 2022, Cor. 2.13).

    Computed in log space by :func:`dpkit.accounting.gdp_curve.gdp_delta`, so deep tails keep their
    relative accuracy (e^ε alone overflows beyond ε ≈ 709), and rounded up by a bound on the round-off.

    >>> round(gdp_mu_to_delta(1.0, 1.0), 6)
    0.126937
    >>> f"{gdp_mu_to_delta(1.0, 30.0):.6e}"
    '4.709326e-193'
    """
    return gdp_delta(check_positive("mu", mu), epsilon)


def _search_up(predicate: Callable[[float], bool], start: float) -> float:
    """The smallest float ≥ ``start`` with the monotone ``predicate`` true, to the last bit.

    Gallops up from ``start`` with doubling steps (from one ulp, so a root a few ulps away costs a few
    calls, and a start of 0 from an underflowed root still reaches any positive value in at most ~2100
    calls), then bisects between the last float seen false and the first seen true.
    """
    if predicate(start):
        return start
    low, step = start, max(math.ulp(start), 5e-324)
    for _ in range(2200):
        high = low + step
        if high <= low:
            high = math.nextafter(low, math.inf)
        if predicate(high):
            break
        low, step = high, step * 2.0
    else:
        raise RuntimeError("one-sided search did not converge")  # pragma: no cover
    return bisect_to_adjacent_floats(predicate, low, high)  # predicate(low) false, predicate(high) true


@certified("epsilon", noop=lambda mu, delta: mu == 0)
def gdp_mu_to_epsilon(mu: float, delta: float) -> float:
    """Smallest ε ≥ 0 with δ_μ(ε) ≤ delta (an upper bound: never below the true value).

    Brent's root in ε, then stepped up until the target holds (one-sided).

    >>> round(gdp_mu_to_epsilon(1.0, 1e-5), 6)
    4.377178
    """
    mu = check_positive("mu", mu)
    delta = check_target_delta(delta)
    log_target = math.log(delta)
    ok = lambda e: gdp_log_delta(mu, e) <= log_target  # noqa: E731
    if ok(0.0):
        return 0.0
    upper = min(max(1.0, mu * mu), sys.float_info.max)
    while not ok(upper):
        if upper == sys.float_info.max:  # ε beyond every float (μ ≳ 1.3e154): only ε = ∞ holds
            return math.inf
        upper = min(2.0 * upper, sys.float_info.max)
    root = optimize.brentq(lambda e: gdp_log_delta(mu, e) - log_target, 0.0, upper, xtol=1e-15, rtol=4 * np.finfo(float).eps)
    return _search_up(ok, root)


@certified("mu", upper=False)
def gdp_mu_for(epsilon: float, delta: float) -> float:
    """Largest μ whose μ-GDP guarantee implies (ε, δ)-DP (δ_μ(ε) ≤ δ), found one-sidedly.

    >>> mu = gdp_mu_for(1.0, 1e-5)
    >>> gdp_mu_to_delta(mu, 1.0) <= 1e-5
    True
    """
    epsilon = check_nonnegative("epsilon", epsilon)
    delta = check_target_delta(delta)
    log_target = math.log(delta)
    ok = lambda m: gdp_log_delta(m, epsilon) <= log_target  # noqa: E731
    # μ ≈ √(2ε) for large ε and ≈ 2.5δ for tiny ε: every finite target's μ lies in [1e-300, 1e155]
    lo, hi = 1e-12, 1.0
    while ok(hi):
        lo, hi = hi, hi * 2.0
        if hi > 1e155:  # pragma: no cover
            raise ValueError(f"no finite mu reaches the target, got epsilon={epsilon}, delta={delta}")
    near = hi  # the last failing μ seen: the halving below ends with [lo, near] a factor 2 wide
    while not ok(lo):
        lo, near = lo / 2.0, lo
        if lo < 1e-300:  # pragma: no cover
            raise ValueError(f"no mu > 0 meets the target, got epsilon={epsilon}, delta={delta}")
    gap = lambda m: gdp_log_delta(m, epsilon) - log_target  # noqa: E731
    # (an absolute tolerance below μ itself, which reaches 1e-300)
    tolerances = dict(xtol=min(1e-300, 4 * np.finfo(float).eps * lo), rtol=4 * np.finfo(float).eps)
    try:
        root = optimize.brentq(gap, lo, hi, **tolerances)
    except RuntimeError:  # hundreds of orders of magnitude between lo and hi (δ near 1e-300): a narrower bracket
        root = optimize.brentq(gap, lo, near, **tolerances)
    value = root
    while not ok(value):
        value = math.nextafter(value, 0.0)
    return value


def gaussian_tradeoff(mu: float, alphas: Any) -> np.ndarray:
    """Exact trade-off curve of μ-GDP: G_μ(α) = Φ(Φ⁻¹(1 − α) − μ) (Dong, Roth & Su 2022, eq. 2.3).

    >>> [round(float(b), 4) for b in gaussian_tradeoff(1.0, [0.0, 0.05, 1.0])]
    [1.0, 0.7405, 0.0]
    """
    mu = check_nonnegative("mu", mu)
    alphas = _check_alphas(alphas)
    return special.ndtr(-special.ndtri(alphas) - mu)


def _check_alphas(alphas: Any) -> np.ndarray:
    arr = np.asarray(alphas, dtype=float)
    if arr.size == 0 or np.any(np.isnan(arr)) or np.any(arr < 0.0) or np.any(arr > 1.0):
        raise ValueError(f"alphas must be a non-empty array of values in [0, 1], got alphas={alphas!r}")
    return arr


def tradeoff_from_profile(epsilons: np.ndarray, deltas: np.ndarray, alphas: Any) -> np.ndarray:
    """Trade-off curve implied by a privacy profile δ(ε) on a grid of ε ≥ 0 (both directions):

    f(α) = max_ε max(0, 1 − δ(ε) − e^ε α, e^{−ε}(1 − δ(ε) − α))  (Dong, Roth & Su 2022, Prop. 2.12).

    With upper bounds on δ and a finite ε grid the result is a lower bound on the true f
    (a conservative curve).
    """
    alphas = _check_alphas(alphas)
    eps = np.asarray(epsilons, dtype=float)[:, None]
    dl = np.asarray(deltas, dtype=float)[:, None]
    a = alphas[None, :]
    with np.errstate(over="ignore", invalid="ignore"):
        first = 1.0 - dl - np.exp(eps) * a
        second = np.exp(-eps) * (1.0 - dl - a)
    values = np.nan_to_num(np.maximum(first, second), nan=0.0, neginf=0.0)
    return np.clip(np.max(values, axis=0), 0.0, 1.0)


def tradeoff_curve(event_or_accountant: Any, alphas: Any, *, epsilon_max: float | None = None) -> np.ndarray:
    """A certified lower bound on the trade-off curve f(α) of an event or an accountant's ledger.

    Accepts a :class:`~dpkit.accounting.events.PrivacyEvent` (accounted by a fresh
    :class:`~dpkit.accounting.pld.PLDAccountant` under add/remove), a PLD accountant, or a
    :class:`GDPAccountant` without approximations (then the exact G_μ is returned).
    The PLD path evaluates the pessimistic privacy profile on a grid of ε ∈ [0, ε(1e-12)].

    >>> from dpkit.accounting.events import GaussianEvent
    >>> beta = tradeoff_curve(GaussianEvent(sigma=1.0), [0.05])
    >>> exact = gaussian_tradeoff(1.0, [0.05])
    >>> bool(0 <= exact[0] - beta[0] < 1e-3)
    True
    """
    alphas = _check_alphas(alphas)
    if isinstance(event_or_accountant, GDPAccountant):
        if event_or_accountant.uses_approximation:
            raise ValueError("tradeoff_curve needs a certified accountant; this GDP ledger uses the CLT approximation")
        return gaussian_tradeoff(event_or_accountant.mu, alphas)
    if isinstance(event_or_accountant, PrivacyEvent):
        accountant = PLDAccountant()
        accountant.compose(event_or_accountant)
    elif isinstance(event_or_accountant, PLDAccountant):
        accountant = event_or_accountant
    else:
        raise TypeError(
            "event_or_accountant must be a PrivacyEvent, a PLDAccountant or a GDPAccountant, "
            f"got {type(event_or_accountant).__name__}"
        )
    if epsilon_max is None:
        epsilon_max = max(1.0, accountant.epsilon_at_profile_grid(1e-12))
        epsilon_max = min(epsilon_max, 700.0)
    grid = np.unique(np.concatenate((np.linspace(0.0, epsilon_max, 801), np.geomspace(1e-4, epsilon_max, 200))))
    deltas = accountant.delta_curve(grid, pessimistic=True)
    return tradeoff_from_profile(grid, deltas, alphas)


class GDPAccountant(Accountant):
    """μ-GDP accountant: exact for compositions of Gaussian mechanisms.

    Parameters
    ----------
    neighbouring
        The neighbouring relation (sensitivities are measured under it).
    allow_approximation
        Also accept Poisson-subsampled Gaussians through the central-limit approximation
        μ ≈ q √(T (e^{1/σ²} − 1)) (add/remove only). Results then carry
        ``is_upper_bound=False`` and an :class:`~dpkit.accounting.base.ApproximationWarning`.

    Raises
    ------
    UnsupportedEventError
        For every other event (no exact μ exists).
    """

    name = "gdp"
    references = ("dong2022gaussian",)

    def __init__(
        self,
        neighbouring: NeighbouringRelation | str = NeighbouringRelation.ADD_REMOVE,
        allow_approximation: bool = False,
    ):
        super().__init__(neighbouring)
        if not isinstance(allow_approximation, bool):
            raise TypeError(f"allow_approximation must be a bool, got allow_approximation={allow_approximation!r}")
        self.allow_approximation = allow_approximation

    def _leaf_mu(self, leaf: PrivacyEvent) -> tuple[float, bool]:
        """(μ² contribution per use, approximate?) of a leaf."""
        if isinstance(leaf, GaussianEvent):
            return squared_multiplier_upper(leaf.sensitivity, leaf.sigma), False
        if isinstance(leaf, TreeAggregationEvent):  # a Gaussian on the nodes one record touches (Kairouz et al. 2021)
            return squared_multiplier_upper(1.0, leaf.noise_multiplier), False
        if isinstance(leaf, ParallelComposedEvent):
            parts = [list(flatten(e)) for e in leaf.events]
            values = []
            for part in parts:
                terms, approx = [], False
                for sub, mult in part:
                    value, sub_approx = self._leaf_mu(sub)
                    terms.append(mult * value)
                    approx = approx or sub_approx
                values.append((math.fsum(terms), approx))
            # Each record touches one part only: the worst part's μ (Dong, Roth & Su 2022, §3).
            return max(v for v, _ in values), any(a for _, a in values)
        if isinstance(leaf, PoissonSampledEvent) and isinstance(leaf.event, GaussianEvent):
            if not self.allow_approximation:
                raise UnsupportedEventError(
                    leaf, "subsampled Gaussians have no exact mu; construct GDPAccountant(allow_approximation=True) "
                    "for the central-limit approximation"
                )
            if self.neighbouring is not NeighbouringRelation.ADD_REMOVE:
                raise UnsupportedEventError(leaf, "the central-limit approximation is for add-remove neighbouring")
            z = leaf.event.sigma / leaf.event.sensitivity
            return leaf.rate**2 * math.expm1(1.0 / (z * z)), True
        raise UnsupportedEventError(leaf, "GDP accounting is exact only for Gaussian mechanisms")

    def _check(self, event: PrivacyEvent) -> None:
        for leaf, _ in flatten(event):
            self._leaf_mu(leaf)

    def _totals(self) -> tuple[float, bool]:
        terms, approx = [], False
        for leaf, mult in self.leaves():
            value, leaf_approx = self._leaf_mu(leaf)
            terms.append(mult * value)
            approx = approx or leaf_approx
        return math.fsum(terms), approx

    @property
    def mu(self) -> float:
        """μ of the ledger: √Σ countᵢ μᵢ² (exact, or the CLT estimate if approximations are used)."""
        return math.sqrt(self._totals()[0])

    @property
    def uses_approximation(self) -> bool:
        """Whether the ledger contains a step accounted by the central-limit approximation."""
        return self._totals()[1]

    def _finish(self, epsilon: float, delta: float, approx: bool, mu: float) -> AccountingResult:
        notes = [f"mu={mu:.12g}"]
        method = "exact mu-GDP composition (Dong, Roth & Su 2022, Cor. 3.3) and GDP to (eps, delta) (Cor. 2.13)"
        if approx:
            notes.append(_CLT_NOTE)
            warnings.warn(f"GDP result uses the {_CLT_NOTE}", ApproximationWarning, stacklevel=3)
        return self._result(epsilon, delta, method, is_upper_bound=not approx, notes=tuple(notes))

    def get_epsilon(self, delta: float) -> AccountingResult:
        """ε at ``delta`` from μ (exact conversion, rounded up)."""
        delta = check_target_delta(delta)
        total, approx = self._totals()
        mu = gaussian_mu_upper([total])  # μ rounded up: ε(μ) is not understated by the rounding of μ
        epsilon = 0.0 if mu == 0.0 else gdp_mu_to_epsilon(mu, delta)
        return self._finish(epsilon, delta, approx, mu)

    def get_delta(self, epsilon: float) -> AccountingResult:
        """δ at ``epsilon`` from μ (exact conversion)."""
        epsilon = check_target_epsilon(epsilon)
        total, approx = self._totals()
        mu = gaussian_mu_upper([total])
        delta = 0.0 if mu == 0.0 else gdp_mu_to_delta(mu, epsilon)
        return self._finish(epsilon, delta, approx, mu)
