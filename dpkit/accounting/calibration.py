"""One-sided calibration of a monotone privacy parameter to a target (ε, δ).

:func:`calibrate` works with any accountant and any family of events indexed by one
monotone parameter (noise scale, number of steps, sampling rate). It keeps a bracket
``[bad, good]`` in which ``good`` has been *certified* by the accountant to meet the
target (ε(good) ≤ target_epsilon at target_delta) and ``bad`` has been seen to miss it,
shrinks it in log space (Brent's method on log ε vs log parameter, then geometric
bisection) until ``|good − bad| ≤ rtol · good``, and returns ``good`` — never the unsafe
side — with the accounting result that certifies it. Integer parameters (counts) are
bisected to adjacent integers, so the answer is exactly the best count.

This follows the "safe by construction" rule of STYLE.md: unlike a two-sided root finder
(e.g. dp_accounting's ``get_sigma_gaussian``, which returns Brent's root as it is), the
returned parameter always meets the target under the chosen accountant.

Convenience functions: :func:`calibrate_gaussian_sigma` (σ for k Gaussian releases),
:func:`dpsgd_sigma`, :func:`dpsgd_epsilon` and :func:`dpsgd_max_steps` (Poisson-sampled
Gaussian, i.e. DP-SGD; Abadi et al. 2016, Mironov, Talwar & Zhang 2019).
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, Callable

from scipy import optimize

from dpkit._validation import check_integer, check_open_unit, check_positive, check_unit_interval
from dpkit.accounting.analytic_gaussian import gaussian_sigma
from dpkit.accounting.base import Accountant, AccountingResult
from dpkit.accounting.events import GaussianEvent, PoissonSampledEvent, PrivacyEvent, SelfComposedEvent
from dpkit.accounting.neighbouring import NeighbouringRelation
from dpkit.accounting.registry import ACCOUNTANTS, accountant_class

__all__ = [
    "CalibrationResult",
    "accountant_factory",
    "accountant_names",
    "calibrate",
    "calibrate_gaussian_sigma",
    "dpsgd_epsilon",
    "dpsgd_max_steps",
    "dpsgd_sigma",
]

MAX_EXPANSIONS = 64
"""How many times the bracket may be doubled (or halved) before calibration gives up."""

_MAX_EVALUATIONS = 400

_EXCESS_CLAMP = math.log(1e4)
"""|log(ε / target)| is clamped here in Brent's search (the sign decides the bracket)."""

_STALL_WIDENINGS = 8
"""The bracket search gives up when ε has not decreased over this many doublings of the safe end (2⁸ = 256-fold
change of the parameter): the accountant's ε has reached a floor (∞, or a round-off allowance) above the target."""


@dataclasses.dataclass(frozen=True)
class CalibrationResult:
    """A calibrated parameter, the ε it certifiably achieves, and how it was found.

    Attributes
    ----------
    parameter
        The calibrated value (a float, or an int for ``integer=True``). It meets the
        target: ``epsilon <= target_epsilon`` at ``delta``.
    epsilon, delta
        The ε the accountant certifies at ``parameter`` and the target δ.
    accountant
        Name of the accountant that certified it.
    target_epsilon
        The requested ε.
    rtol
        Relative width of the final bracket requested (0 for integers: exact).
    accounting
        The full :class:`~dpkit.accounting.base.AccountingResult` at ``parameter``.
    unsafe_parameter
        The nearest parameter seen to *miss* the target (the other end of the bracket),
        or None when the calibration was done in closed form.
    evaluations
        Number of accountant evaluations.
    method
        How the parameter was found.
    """

    parameter: float | int
    epsilon: float
    delta: float
    accountant: str
    target_epsilon: float
    rtol: float
    accounting: AccountingResult
    unsafe_parameter: float | int | None = None
    evaluations: int = 0
    method: str = "one-sided bracketing in log space (Brent's method, then bisection)"

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dictionary (the accounting result nested)."""
        out = {field.name: getattr(self, field.name) for field in dataclasses.fields(self)}
        out["accounting"] = self.accounting.to_dict()
        return out


def accountant_names() -> list[str]:
    """Every accountant name :func:`accountant_factory` accepts."""
    return sorted(ACCOUNTANTS)


def accountant_factory(
    accountant: str | Callable[[], Accountant],
    neighbouring: NeighbouringRelation | str = NeighbouringRelation.ADD_REMOVE,
) -> Callable[[], Accountant]:
    """A zero-argument factory of fresh accountants from a name or a factory.

    Names are those of :mod:`dpkit.accounting.registry`; any other name gives a ``ValueError``.
    """
    relation = NeighbouringRelation.parse(neighbouring)
    if isinstance(accountant, str):
        if accountant not in ACCOUNTANTS:
            raise ValueError(f"accountant must be one of {accountant_names()} or a factory, got accountant={accountant!r}")
        cls = accountant_class(accountant)
        return lambda: cls(neighbouring=relation)
    if callable(accountant):
        return accountant
    raise TypeError(f"accountant must be a name or a zero-argument factory, got accountant={accountant!r}")


class _Evaluator:
    """ε at a parameter, remembering every certified answer."""

    def __init__(self, make_event, factory, target_epsilon, target_delta, integer):
        self.make_event, self.factory = make_event, factory
        self.target_epsilon, self.target_delta = target_epsilon, target_delta
        self.integer = integer
        self.results: dict[float, AccountingResult] = {}

    def __call__(self, parameter: float) -> AccountingResult:
        if parameter not in self.results:
            if len(self.results) >= _MAX_EVALUATIONS:
                raise RuntimeError(f"calibration did not converge in {_MAX_EVALUATIONS} evaluations")
            event = self.make_event(int(parameter) if self.integer else parameter)
            if not isinstance(event, PrivacyEvent):
                raise TypeError(f"make_event must return a PrivacyEvent, got {event!r}")
            accountant = self.factory()
            if not isinstance(accountant, Accountant):
                raise TypeError(f"accountant factory must return an Accountant, got {accountant!r}")
            self.results[parameter] = accountant.compose(event).get_epsilon(self.target_delta)
        return self.results[parameter]

    def meets(self, parameter: float) -> bool:
        return self(parameter).epsilon <= self.target_epsilon


def calibrate(
    make_event: Callable[[Any], PrivacyEvent],
    accountant: str | Callable[[], Accountant],
    *,
    target_epsilon: float,
    target_delta: float,
    lower: float,
    upper: float,
    increasing_privacy: bool = True,
    rtol: float = 1e-6,
    integer: bool = False,
    neighbouring: NeighbouringRelation | str = NeighbouringRelation.ADD_REMOVE,
) -> CalibrationResult:
    """The parameter at the privacy boundary, on the safe side, certified by ``accountant``.

    Parameters
    ----------
    make_event
        ``make_event(parameter) -> PrivacyEvent``; ε must be monotone in the parameter.
    accountant
        A registry name (``"rdp"``, ``"zcdp"``, ``"pld"``, ``"gdp"``, ``"analytic"``) or a
        zero-argument factory returning a fresh, empty accountant.
    target_epsilon, target_delta
        The budget: ε > 0 and δ ∈ (0, 1).
    lower, upper
        Initial bracket, 0 < lower < upper. It is widened automatically (at most
        ``MAX_EXPANSIONS`` doublings or halvings at each end) when it does not contain the
        boundary.
    increasing_privacy
        True when a larger parameter gives more privacy (noise scale): the smallest
        parameter that meets the target is returned. False when it gives less (number of
        steps, sampling rate): the largest such parameter is returned.
    rtol
        Relative width of the final bracket, in (0, 0.5); ignored for integers (exact).
    integer
        Calibrate an integer parameter (e.g. a count ≥ 1).
    neighbouring
        Relation for accountants given by name.

    Returns
    -------
    CalibrationResult
        ``parameter`` meets the target (recomputing ε there gives ≤ ``target_epsilon``) and
        a parameter ``rtol`` closer to the boundary (one step, for integers) does not.

    Raises
    ------
    ValueError
        If no parameter in the (widened) bracket meets the target, or every one does (the
        boundary is outside it), or an argument is out of range.

    Examples
    --------
    >>> from dpkit.accounting.events import GaussianEvent, repeat
    >>> res = calibrate(lambda s: repeat(GaussianEvent(s), 10), "analytic",
    ...                 target_epsilon=1.0, target_delta=1e-5, lower=1.0, upper=100.0)
    >>> res.epsilon <= 1.0, round(res.parameter, 4)
    (True, 11.7973)
    """
    if not callable(make_event):
        raise TypeError(f"make_event must be callable, got make_event={make_event!r}")
    target_epsilon = check_positive("target_epsilon", target_epsilon)
    target_delta = check_open_unit("target_delta", target_delta)
    factory = accountant_factory(accountant, neighbouring)
    if integer:
        lower = check_integer("lower", lower, minimum=1)
        upper = check_integer("upper", upper, minimum=1)
    else:
        lower = check_positive("lower", lower)
        upper = check_positive("upper", upper)
        rtol = check_unit_interval("rtol", rtol, include_zero=False, include_one=False)
        if rtol >= 0.5:
            raise ValueError(f"rtol must be in (0, 0.5), got rtol={rtol}")
    if not lower < upper:
        raise ValueError(f"lower must be < upper, got lower={lower}, upper={upper}")
    evaluate = _Evaluator(make_event, factory, target_epsilon, target_delta, integer)
    good, bad = _bracket(evaluate, lower, upper, increasing_privacy, integer)
    if integer:  # down to adjacent integers
        good, bad = _bisect(evaluate, good, bad, lambda g, b: (g + b) // 2, lambda g, b: abs(g - b) > 1)
    else:
        good, bad = _shrink(evaluate, good, bad, rtol)
    accounting = evaluate(good)
    return CalibrationResult(
        parameter=int(good) if integer else good,
        epsilon=accounting.epsilon,
        delta=target_delta,
        accountant=accounting.accountant,
        target_epsilon=target_epsilon,
        rtol=0.0 if integer else rtol,
        accounting=accounting,
        unsafe_parameter=int(bad) if integer else bad,
        evaluations=len(evaluate.results),
        method="one-sided integer bisection" if integer else CalibrationResult.method,
    )


def _bracket(evaluate: _Evaluator, lower, upper, increasing_privacy: bool, integer: bool):
    """(good, bad) with good certified to meet the target and bad seen to miss it."""
    safe_end, unsafe_end = (upper, lower) if increasing_privacy else (lower, upper)

    def widen(value, away_from_safe: bool):
        # increasing privacy: the safe end grows, the unsafe end shrinks (and vice versa).
        grow = increasing_privacy != away_from_safe
        if integer:
            return value * 2 if grow else max(1, value // 2)
        return value * 2.0 if grow else value / 2.0

    span = f"[{lower}, {upper}]"
    seen: list[tuple[float, float]] = []
    for _ in range(MAX_EXPANSIONS):
        if evaluate.meets(safe_end):
            break
        seen.append((safe_end, evaluate(safe_end).epsilon))
        if len(seen) > _STALL_WIDENINGS and not seen[-1][1] < seen[-1 - _STALL_WIDENINGS][1]:
            (first, epsilon), last = seen[-1 - _STALL_WIDENINGS], seen[-1][0]
            raise ValueError(
                f"no parameter meets epsilon <= {evaluate.target_epsilon} at delta={evaluate.target_delta}: the "
                f"{evaluate(safe_end).accountant} accountant's epsilon stays at {epsilon:.6g} from parameter {first:g} "
                f"to {last:g}; another accountant (e.g. --accountant rdp) may certify it"
            )
        unsafe_end, safe_end = safe_end, widen(safe_end, away_from_safe=False)
        if safe_end == unsafe_end:  # an integer parameter already at 1
            raise ValueError(
                f"no parameter in {span} (widened to {safe_end}) meets epsilon <= {evaluate.target_epsilon} "
                f"at delta={evaluate.target_delta}"
            )
    else:
        raise ValueError(
            f"no parameter in {span} (widened {MAX_EXPANSIONS} times to {safe_end}) meets "
            f"epsilon <= {evaluate.target_epsilon} at delta={evaluate.target_delta}"
        )
    for _ in range(MAX_EXPANSIONS):
        if not evaluate.meets(unsafe_end):
            return safe_end, unsafe_end
        previous, unsafe_end = unsafe_end, widen(unsafe_end, away_from_safe=True)
        safe_end = previous
        if integer and unsafe_end == previous:  # reached count 1 and it meets
            break
    raise ValueError(
        f"epsilon={evaluate.target_epsilon} at delta={evaluate.target_delta} is met by every parameter tried from "
        f"{span} out to {unsafe_end}, so the least private one cannot be bracketed; choose a smaller epsilon"
    )


def _shrink(evaluate: _Evaluator, good: float, bad: float, rtol: float) -> tuple[float, float]:
    """Shrink [bad, good] in log space to relative width ≤ rtol, keeping each side's status."""
    log_target = math.log(evaluate.target_epsilon)

    def excess(log_parameter: float) -> float:
        # clamped to [1e-4, 1e4] times the target: the sign (all that decides the bracket) is kept, and an ε
        # of 0 or ∞ beside the boundary no longer makes the function too steep for Brent's interpolation
        epsilon = evaluate(math.exp(log_parameter)).epsilon
        return max(-_EXCESS_CLAMP, min(_EXCESS_CLAMP, math.log(max(epsilon, 1e-300)) - log_target))

    increasing = good > bad  # a larger parameter gives more privacy

    def refresh() -> tuple[float, float]:
        # The certified parameter closest to the boundary, and the nearest failure beyond it.
        goods = [p for p, r in evaluate.results.items() if r.epsilon <= evaluate.target_epsilon]
        nearest_good = min(goods) if increasing else max(goods)
        bads = [
            p
            for p, r in evaluate.results.items()
            if r.epsilon > evaluate.target_epsilon and (p < nearest_good if increasing else p > nearest_good)
        ]
        return nearest_good, (max(bads) if increasing else min(bads))

    def width(g: float, b: float) -> float:
        return abs(g - b) / g

    if width(good, bad) > rtol:
        low, high = sorted((math.log(good), math.log(bad)))
        # Brent's method only proposes points; the bracket is rebuilt from certified results.
        try:
            optimize.brentq(excess, low, high, xtol=rtol / 4.0, rtol=1e-15, maxiter=100, disp=False)
        except ValueError:  # ε clamped at the float range on both ends: bisection below still works
            pass
        good, bad = refresh()
    return _bisect(evaluate, good, bad, lambda g, b: math.sqrt(g * b), lambda g, b: width(g, b) > rtol)


def _bisect(evaluate: _Evaluator, good, bad, middle_of: Callable, too_wide: Callable):
    """Bisect [bad, good] at ``middle_of(good, bad)`` while ``too_wide(good, bad)``, keeping each side's status."""
    while too_wide(good, bad):
        middle = middle_of(good, bad)
        if middle in (good, bad):
            break
        if evaluate.meets(middle):
            good = middle
        else:
            bad = middle
    return good, bad


def calibrate_gaussian_sigma(
    epsilon: float,
    delta: float,
    count: int = 1,
    sensitivity: float = 1.0,
    accountant: str | Callable[[], Accountant] = "rdp",
    neighbouring: NeighbouringRelation | str = NeighbouringRelation.ADD_REMOVE,
    rtol: float = 1e-6,
) -> CalibrationResult:
    """σ for ``count`` adaptive releases of a Gaussian mechanism with L2 sensitivity Δ.

    With ``accountant="analytic"`` the answer is exact: k Gaussians with σ compose to one
    Gaussian with σ/√k (Dong, Roth & Su 2022, Cor. 3.3), so σ_k = √k · σ₁(ε, δ, Δ) with σ₁
    from :func:`~dpkit.accounting.analytic_gaussian.gaussian_sigma` (Balle & Wang 2018,
    Thm 8), post-checked (one-sided) with the analytic accountant. Any other accountant is
    calibrated with :func:`calibrate`, starting from a bracket around that exact value
    (no sound accountant can need less noise).

    Examples
    --------
    >>> res = calibrate_gaussian_sigma(1.0, 1e-5, count=100, accountant="analytic")
    >>> round(res.parameter, 4), res.epsilon <= 1.0
    (37.3063, True)
    """
    epsilon = check_positive("epsilon", epsilon)
    delta = check_open_unit("delta", delta)
    count = check_integer("count", count, minimum=1)
    sensitivity = check_positive("sensitivity", sensitivity)
    exact = math.sqrt(count) * gaussian_sigma(epsilon, delta, sensitivity)

    def make_event(sigma: float) -> PrivacyEvent:
        return SelfComposedEvent(GaussianEvent(sigma, sensitivity), count)

    if accountant == "analytic":
        factory = accountant_factory("analytic", neighbouring)
        sigma, step = exact, 2.0**-52
        for _ in range(MAX_EXPANSIONS):
            accounting = factory().compose(make_event(sigma)).get_epsilon(delta)
            if accounting.epsilon <= epsilon:
                break
            sigma, step = sigma * (1.0 + step), step * 2.0
        return CalibrationResult(
            parameter=sigma,
            epsilon=accounting.epsilon,
            delta=delta,
            accountant="analytic",
            target_epsilon=epsilon,
            rtol=rtol,
            accounting=accounting,
            method="closed form: sqrt(count) * gaussian_sigma (Balle & Wang 2018 Thm 8; Dong, Roth & Su 2022 Cor. 3.3)",
        )
    return calibrate(
        make_event,
        accountant,
        target_epsilon=epsilon,
        target_delta=delta,
        lower=exact / 2.0,
        upper=exact * 2.0,
        rtol=rtol,
        neighbouring=neighbouring,
    )


def _dpsgd_event(q: float, sigma: float, steps: int) -> PrivacyEvent:
    return SelfComposedEvent(PoissonSampledEvent(GaussianEvent(sigma), q), steps)


def dpsgd_epsilon(
    q: float,
    sigma: float,
    steps: int,
    delta: float,
    accountant: str | Callable[[], Accountant] = "rdp",
    neighbouring: NeighbouringRelation | str = NeighbouringRelation.ADD_REMOVE,
) -> AccountingResult:
    """ε (an upper bound) of ``steps`` DP-SGD steps: Poisson sampling at rate q, noise multiplier σ.

    Examples
    --------
    >>> round(dpsgd_epsilon(0.01, 1.1, 10_000, 1e-5).epsilon, 1)
    5.6
    """
    q = check_unit_interval("q", q, include_zero=False)
    sigma = check_positive("sigma", sigma)
    steps = check_integer("steps", steps, minimum=1)
    delta = check_open_unit("delta", delta)
    return accountant_factory(accountant, neighbouring)().compose(_dpsgd_event(q, sigma, steps)).get_epsilon(delta)


def dpsgd_sigma(
    q: float,
    steps: int,
    epsilon: float,
    delta: float,
    accountant: str | Callable[[], Accountant] = "rdp",
    neighbouring: NeighbouringRelation | str = NeighbouringRelation.ADD_REMOVE,
    rtol: float = 1e-6,
) -> CalibrationResult:
    """The smallest noise multiplier σ (within ``rtol``, never below) for ``steps`` DP-SGD steps at rate q.

    Examples
    --------
    >>> res = dpsgd_sigma(0.01, 10_000, 2.0, 1e-5)
    >>> res.epsilon <= 2.0, round(res.parameter, 2)
    (True, 2.28)
    """
    q = check_unit_interval("q", q, include_zero=False)
    steps = check_integer("steps", steps, minimum=1)
    epsilon = check_positive("epsilon", epsilon)
    delta = check_open_unit("delta", delta)
    return calibrate(
        lambda sigma: _dpsgd_event(q, sigma, steps),
        accountant,
        target_epsilon=epsilon,
        target_delta=delta,
        lower=0.5,
        upper=2.0,
        rtol=rtol,
        neighbouring=neighbouring,
    )


def dpsgd_max_steps(
    q: float,
    sigma: float,
    epsilon: float,
    delta: float,
    accountant: str | Callable[[], Accountant] = "rdp",
    neighbouring: NeighbouringRelation | str = NeighbouringRelation.ADD_REMOVE,
) -> CalibrationResult:
    """The largest number of DP-SGD steps whose ε stays ≤ ``epsilon`` (steps + 1 would exceed it).

    Raises ``ValueError`` if even one step exceeds the budget.

    Examples
    --------
    >>> res = dpsgd_max_steps(0.01, 1.1, 2.0, 1e-5)
    >>> res.epsilon <= 2.0, dpsgd_epsilon(0.01, 1.1, res.parameter + 1, 1e-5).epsilon > 2.0
    (True, True)
    """
    q = check_unit_interval("q", q, include_zero=False)
    sigma = check_positive("sigma", sigma)
    epsilon = check_positive("epsilon", epsilon)
    delta = check_open_unit("delta", delta)
    return calibrate(
        lambda steps: _dpsgd_event(q, sigma, steps),
        accountant,
        target_epsilon=epsilon,
        target_delta=delta,
        lower=1,
        upper=1024,
        increasing_privacy=False,
        integer=True,
        neighbouring=neighbouring,
    )
