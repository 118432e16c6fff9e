"""The one exit for numbers: every ε, δ (and calibrated noise) dpkit returns is certified here.

:func:`certify` is the last step of every public accounting query (accountants' ``get_epsilon``
and ``get_delta`` through :class:`~dpkit.accounting.base.Accountant`, the PLD's ``delta_curve``,
the closed forms of the analytic Gaussian, GDP, zCDP and (ε, δ) composition, filters, odometers
and calibration). It

* rounds outward: an upper end up, a lower end down, by :data:`OUTWARD_MARGIN` relative and one
  ulp (:func:`round_outward`); a δ upper end is capped at 1;
* refuses NaN (:class:`UncertifiableError`, an ``ArithmeticError``): a NaN is never a bound;
* keeps ∞ (the trivial bound) and makes sure a result carries a reason for it
  (:func:`certify_result`);
* never returns an upper ε ≤ 0 or an upper δ = 0 unless the ledger is a no-op (an empty
  ledger): a computed 0 becomes the smallest positive float, which is still an upper bound.

Certified values are recorded while :func:`recording` is active, which is how the test suite
shows that no public numeric path bypasses this module.

>>> x = 0.5708046995596506
>>> x < certify(x) <= x * (1 + 1e-14)
True
>>> certify(0.0, kind="delta"), certify(0.0, kind="delta", noop=True), certify(2.0, kind="delta")
(5e-324, 0.0, 1.0)
>>> certify(0.3, upper=False) < 0.3
True
>>> certify(float("nan"))
Traceback (most recent call last):
...
dpkit.accounting.certify.UncertifiableError: epsilon is NaN: no bound can be certified (an arithmetic step failed)
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import functools
import inspect
import math
from typing import Any, Callable, Iterator, TypeVar

import numpy as np

__all__ = [
    "OUTWARD_MARGIN",
    "UncertifiableError",
    "certify",
    "certify_array",
    "certify_result",
    "certified",
    "recording",
    "round_outward",
]

OUTWARD_MARGIN = 8.0 * 2.0**-52
"""Relative margin by which every reported ε and δ is moved outwards (see :func:`round_outward`).

Error analysis: the last steps by which an accountant turns its internal quantities into ε or δ
(a logarithm, a quotient, a sum of a few terms, a conversion such as ε(α) + log(1/δ)/(α−1))
are at most 16 correctly rounded float operations applied to an already certified quantity, each
losing at most half an ulp, 2⁻⁵³, of relative accuracy: 16·2⁻⁵³ = 8·2⁻⁵². The final
``nextafter`` pays for the rounding of the multiplication itself. Errors an accountant
*amplifies* (cancellation, rounding of its inputs such as μ = √Σ(Δᵢ/σᵢ)²) are larger than this
and are bounded inside that accountant (the analytic Gaussian and GDP accountants round μ up;
the RDP and zCDP conversions add 2⁻⁴⁰ relative; the PLD's pmfs allow for the error of their
losses and sums)."""

_SMALLEST = math.ulp(0.0)
"""The smallest positive float: what a computed upper ε or δ of 0 becomes for a ledger that is not a no-op."""

_KINDS = ("epsilon", "delta", "noise", "mu", "rho")

_TRACE: contextvars.ContextVar[list | None] = contextvars.ContextVar("dpkit_certify_trace", default=None)

T = TypeVar("T")


class UncertifiableError(ArithmeticError):
    """A computed ε or δ is NaN: no bound can be certified (the query raises instead of returning it)."""


def round_outward(value: float, upper: bool = True) -> float:
    """``value`` moved away from the true quantity by :data:`OUTWARD_MARGIN` relative and one ulp.

    ``upper=True`` for an upper bound (moved up), ``False`` for a lower bound (moved down, never
    below 0). 0, ∞ and NaN are returned unchanged.

    >>> x = 6640.607808562279
    >>> x < round_outward(x) <= x * (1 + 1e-14)
    True
    >>> round_outward(0.0), round_outward(math.inf), round_outward(1e-300, upper=False) < 1e-300
    (0.0, inf, True)
    """
    if not math.isfinite(value) or value == 0.0:
        return value
    if upper:
        return math.nextafter(value * (1.0 + OUTWARD_MARGIN), math.inf)
    return max(0.0, math.nextafter(value * (1.0 - OUTWARD_MARGIN), -math.inf))


def _record(value: T) -> T:
    trace = _TRACE.get()
    if trace is not None:
        trace.append(value)
    return value


def certify(value: float, *, kind: str = "epsilon", upper: bool = True, noop: bool = False,
            margin: bool = True) -> float:
    """``value`` as a certified bound: rounded outward, NaN refused, no false 0 (module docstring).

    Parameters
    ----------
    value
        The computed quantity.
    kind
        ``"epsilon"``, ``"delta"`` (capped at 1 when an upper end), ``"noise"`` (a calibrated
        σ or scale: an upper end, as more noise is safe), ``"mu"`` or ``"rho"``.
    upper
        True for an upper end (the side every guarantee is on), False for a lower end.
    noop
        True only when the ledger is a no-op (nothing was released): then 0 is exact.
    margin
        False when the caller's own final step already added a relative margin of at least
        :data:`OUTWARD_MARGIN` (then only the checks apply).
    """
    if kind not in _KINDS:
        raise ValueError(f"kind must be one of {_KINDS}, got kind={kind!r}")
    value = float(value)
    if math.isnan(value):
        raise UncertifiableError(f"{kind} is NaN: no bound can be certified (an arithmetic step failed)")
    if margin:
        value = round_outward(value, upper=upper)
    value = max(value, 0.0)
    if upper:
        if kind == "delta":
            value = min(value, 1.0)
        if value == 0.0 and not noop:
            value = _SMALLEST
    return _record(value)


def certify_array(values: Any, *, kind: str = "delta", upper: bool = True, noop: bool = False) -> np.ndarray:
    """:func:`certify` applied to every entry of ``values`` (an array of the same shape).

    >>> certify_array([0.0, 0.25, 1.0]).tolist()[1] > 0.25
    True
    """
    array = np.asarray(values, dtype=float)
    if np.isnan(array).any():
        raise UncertifiableError(f"{kind} curve has NaN entries: no bound can be certified")
    if kind not in _KINDS:
        raise ValueError(f"kind must be one of {_KINDS}, got kind={kind!r}")
    finite = np.isfinite(array) & (array != 0.0)
    factor, direction = (1.0 + OUTWARD_MARGIN, np.inf) if upper else (1.0 - OUTWARD_MARGIN, -np.inf)
    out = np.where(finite, np.nextafter(array * factor, direction), array)
    out = np.maximum(out, 0.0)
    if upper:
        if kind == "delta":
            out = np.minimum(out, 1.0)
        if not noop:
            out = np.where(out == 0.0, _SMALLEST, out)
    return _record(out)


def certify_result(result: T, query: str, *, noop: bool = False, margin: bool = True) -> T:
    """An :class:`~dpkit.accounting.base.AccountingResult` with its computed side certified.

    ``query="get_epsilon"``: ε (upper) and ``epsilon_lower`` (lower) pass through :func:`certify`
    and δ, the caller's target, is kept; ``"get_delta"``: δ and ``delta_lower`` likewise, ε kept.
    An infinite upper end gets a note saying so if the result gives no reason for it.
    """
    if query not in ("get_epsilon", "get_delta"):
        raise ValueError(f"query must be 'get_epsilon' or 'get_delta', got query={query!r}")
    kind = "epsilon" if query == "get_epsilon" else "delta"
    upper_end = certify(getattr(result, kind), kind=kind, noop=noop, margin=margin)
    lower = getattr(result, f"{kind}_lower")
    changes: dict[str, Any] = {kind: upper_end}
    if lower is not None:
        changes[f"{kind}_lower"] = min(certify(lower, kind=kind, upper=False, margin=margin), upper_end)
    notes = tuple(getattr(result, "notes", ()))
    if math.isinf(upper_end) and not any(f"{kind} = inf" in note or "no finite" in note for note in notes):
        changes["notes"] = (*notes, f"{kind} = inf: no finite bound is certified by the "
                                    f"{getattr(result, 'accountant', 'accountant')} accountant for this ledger")
    return dataclasses.replace(result, **changes)  # type: ignore[type-var]


def certified(kind: str = "epsilon", *, upper: bool = True, noop: Callable[..., bool] | None = None,
              fields: dict[str, tuple[str, bool]] | None = None, margin: bool = True) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Decorator: the function's result leaves through :func:`certify`.

    A float result is certified as ``kind`` (``upper`` end); a tuple's first entry likewise (e.g.
    ``(epsilon, order)``); with ``fields`` (name → (kind, upper)), those fields of a dataclass result
    are. ``noop`` receives the call's arguments and says whether nothing was released (then a 0 is
    exact); ``margin=False`` for a function whose own last step already adds :data:`OUTWARD_MARGIN` or more. The wrapper is marked ``_dpkit_certified`` (the test suite checks every public ε/δ
    function of :mod:`dpkit.accounting` for it).

    >>> @certified("delta")
    ... def half(x): return x / 2
    >>> half(0.5) > 0.25, half(0.0) > 0.0
    (True, True)
    """

    def decorate(function: Callable[..., Any]) -> Callable[..., Any]:
        signature = inspect.signature(function)

        @functools.wraps(function)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            result = function(*args, **kwargs)
            is_noop = False
            if noop is not None:
                bound = signature.bind(*args, **kwargs)
                bound.apply_defaults()
                is_noop = bool(noop(**bound.arguments))
            if fields is not None:
                changes = {name: certify(getattr(result, name), kind=k, upper=u, noop=is_noop, margin=margin)
                           for name, (k, u) in fields.items()}
                return dataclasses.replace(result, **changes)
            if isinstance(result, tuple):
                return (certify(result[0], kind=kind, upper=upper, noop=is_noop, margin=margin), *result[1:])
            return certify(result, kind=kind, upper=upper, noop=is_noop, margin=margin)

        wrapper._dpkit_certified = True  # type: ignore[attr-defined]
        return wrapper

    return decorate


@contextlib.contextmanager
def recording() -> Iterator[list]:
    """Collect every value certified inside the ``with`` block (scalars and arrays, in order).

    >>> with recording() as seen:
    ...     x = certify(0.25)
    >>> seen == [x]
    True
    """
    trace: list = []
    token = _TRACE.set(trace)
    try:
        yield trace
    finally:
        _TRACE.reset(token)
