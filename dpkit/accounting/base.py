"""What every accountant shares: the ledger, atomic composition, results and errors.

An accountant keeps a ledger of ``(event, count)`` entries. :meth:`Accountant.compose`
first checks the *whole* event (one traversal, :meth:`Accountant._check`) and only then
records it, so a rejected event never leaves a partial trace (the anti-pattern STYLE.md
describes in dp_accounting, where ``supports()`` says yes and ``compose`` fails half-way).
Guarantees are computed from the ledger on demand, which lets accountants optimise over
continuous parameters (e.g. the RDP order) instead of a fixed grid.
"""

from __future__ import annotations

import abc
import contextvars
import dataclasses
import functools
import hashlib
import json
import math
from typing import Any, ClassVar, Iterator

from dpkit._validation import check_integer, check_nonnegative, check_open_unit
from dpkit.accounting.certify import UncertifiableError, certify_result
from dpkit.accounting.events import ComposedEvent, NonPrivateEvent, PrivacyEvent, SelfComposedEvent
from dpkit.accounting.neighbouring import NeighbouringRelation


class UnsupportedEventError(ValueError):
    """An accountant cannot account for ``event`` (or a sub-event of it); ``reason`` says why."""

    def __init__(self, event: PrivacyEvent, reason: str):
        self.event = event
        self.reason = reason
        super().__init__(f"{type(event).__name__} is not supported: {reason} (event={event!r})")


class DPKitWarning(UserWarning):
    """Base class of dpkit's warnings."""


class PaperRuleWarning(DPKitWarning):
    """A rule reproduced from a paper was used although it is not a valid bound in general."""


class ApproximationWarning(DPKitWarning):
    """A number was computed by an approximation that is not a certified bound."""


@dataclasses.dataclass(frozen=True)
class AccountingResult:
    """A privacy guarantee and how it was obtained.

    Attributes
    ----------
    epsilon, delta
        The guarantee: the ledger is (epsilon, delta)-DP. ``epsilon`` is an upper bound
        (rounded towards safety) unless ``is_upper_bound`` is False.
    accountant
        Name of the accountant (``"rdp"``, ``"zcdp"``, ``"pld"``, ...).
    neighbouring
        The neighbouring relation the guarantee holds under.
    method
        The conversion or theorem that produced the number, with its reference.
    is_upper_bound
        False only for labelled approximations (e.g. a central-limit estimate).
    epsilon_lower
        A certified lower bound on the true ε of the ledger (PLD), when available.
    delta_lower
        A certified lower bound on the true δ of the ledger (PLD's ``get_delta``), when available.
    order, order_on_boundary
        For RDP: the order α that gave the bound, and whether it lies on the edge of the
        searched range (then a wider range might give a smaller ε).
    notes
        Every approximation or caveat that applies.
    ledger_hash
        SHA-256 of the ledger and relation, to tie the number to what was accounted.
    references
        Bibliography keys (those of :mod:`dpkit.report.bibliography`) of every analysis the
        number rests on: the accounting view, the conversion and, where used, the subsampling
        bound. A report cites exactly these.
    """

    epsilon: float
    delta: float
    accountant: str
    neighbouring: NeighbouringRelation
    method: str
    is_upper_bound: bool = True
    epsilon_lower: float | None = None
    order: float | None = None
    order_on_boundary: bool = False
    notes: tuple[str, ...] = ()
    ledger_hash: str = ""
    delta_lower: float | None = None
    references: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dictionary of every field."""
        out = dataclasses.asdict(self)
        out["neighbouring"] = self.neighbouring.value
        out["notes"] = list(self.notes)
        out["references"] = list(self.references)
        return out


def flatten(event: PrivacyEvent, count: int = 1) -> Iterator[tuple[PrivacyEvent, int]]:
    """Yield ``(leaf, multiplicity)`` pairs of a composition tree.

    :class:`ComposedEvent` and :class:`SelfComposedEvent` are expanded (multiplicities
    multiply); every other event (including sampled and parallel wrappers, which do not
    distribute over composition) is a leaf. The traversal owns the multiplicity, so a
    handler never has to remember ``count``.

    >>> from dpkit.accounting.events import GaussianEvent, LaplaceEvent, compose, repeat
    >>> list(flatten(repeat(compose(GaussianEvent(1.0), LaplaceEvent(2.0)), 3), 2))
    [(GaussianEvent(sigma=1.0, sensitivity=1.0), 6), (LaplaceEvent(scale=2.0, sensitivity=1.0), 6)]
    """
    if isinstance(event, ComposedEvent):
        for sub in event.events:
            yield from flatten(sub, count)
    elif isinstance(event, SelfComposedEvent):
        yield from flatten(event.event, count * event.count)
    else:
        yield event, count


class Accountant(abc.ABC):
    """Base class of dpkit's accountants.

    Parameters
    ----------
    neighbouring
        The neighbouring relation (``"add-remove"`` or ``"replace-one"``) every guarantee of
        this accountant holds under.
    """

    name: ClassVar[str] = "accountant"
    references: ClassVar[tuple[str, ...]] = ()
    """Bibliography keys of the accounting view, added to every result's ``references``."""
    margin_included: ClassVar[bool] = False
    """True when the accountant's own final step already moves ε and δ outwards by a relative
    margin of at least :data:`~dpkit.accounting.certify.OUTWARD_MARGIN` (the RDP and zCDP conversions add 2⁻⁴⁰); otherwise
    the base class rounds every outermost result outwards (:func:`~dpkit.accounting.certify.certify_result`)."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        for method_name in ("get_epsilon", "get_delta"):
            method = cls.__dict__.get(method_name)
            if method is not None and not getattr(method, "_dpkit_guarded", False):
                setattr(cls, method_name, _guard_extreme(method, method_name))

    def _extreme_reason(self) -> str | None:
        """Why the ledger is beyond floating point (a leaf with almost no noise), or None."""
        for event, _ in self._ledger:
            reason = extreme_event_reason(event)
            if reason is not None:
                return reason
        return None

    def __init__(self, neighbouring: NeighbouringRelation | str = NeighbouringRelation.ADD_REMOVE):
        self._neighbouring = NeighbouringRelation.parse(neighbouring)
        self._ledger: list[tuple[PrivacyEvent, int]] = []

    @property
    def neighbouring(self) -> NeighbouringRelation:
        """The neighbouring relation of this accountant's guarantees."""
        return self._neighbouring

    @property
    def ledger(self) -> tuple[tuple[PrivacyEvent, int], ...]:
        """The ``(event, count)`` entries composed so far, in order."""
        return tuple(self._ledger)

    def supports(self, event: PrivacyEvent) -> bool:
        """Whether :meth:`compose` would accept ``event`` (a dry run of the same traversal)."""
        try:
            self._check_event(event)
        except UnsupportedEventError:
            return False
        return True

    def _check_event(self, event: PrivacyEvent) -> None:
        """:meth:`_check`, except that an event whose arithmetic overflows only because a leaf is
        extreme (see :func:`extreme_event_reason`) is accepted: its guarantee is the trivial one."""
        try:
            self._check(event)
        except UnsupportedEventError:
            if _non_private_reason(event) is None:  # a non-private step: the answer is ε = ∞ whatever else
                raise
        except ArithmeticError:
            if extreme_event_reason(event) is None:
                raise

    def compose(self, event: PrivacyEvent, count: int = 1) -> "Accountant":
        """Record ``event`` repeated ``count`` times; returns ``self`` for chaining.

        The event is checked completely before anything is recorded.

        Raises
        ------
        UnsupportedEventError
            If this accountant cannot handle ``event`` or one of its sub-events.
        """
        if not isinstance(event, PrivacyEvent):
            raise TypeError(f"event must be a PrivacyEvent, got event={event!r}")
        count = check_integer("count", count, minimum=1)
        self._check_event(event)
        self._ledger.append((event, count))
        return self

    def leaves(self) -> Iterator[tuple[PrivacyEvent, int]]:
        """The ledger flattened to ``(leaf event, multiplicity)`` pairs (see :func:`flatten`)."""
        for event, count in self._ledger:
            yield from flatten(event, count)

    def ledger_hash(self) -> str:
        """SHA-256 of the ledger and neighbouring relation (stable across runs and platforms)."""
        payload = {
            "neighbouring": self._neighbouring.value,
            "ledger": [[event.to_dict(), count] for event, count in self._ledger],
        }
        return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()

    @abc.abstractmethod
    def _check(self, event: PrivacyEvent) -> None:
        """Raise :class:`UnsupportedEventError` if ``event`` (or a sub-event) is not supported."""

    @abc.abstractmethod
    def get_epsilon(self, delta: float) -> AccountingResult:
        """The smallest ε this accountant certifies at ``delta`` for the ledger (an upper bound)."""

    @abc.abstractmethod
    def get_delta(self, epsilon: float) -> AccountingResult:
        """The smallest δ this accountant certifies at ``epsilon`` for the ledger (an upper bound)."""

    def _result(
        self, epsilon: float, delta: float, method: str, references: tuple[str, ...] = (), **extra: Any
    ) -> AccountingResult:
        """A result of this accountant; ``references`` are added to the class's own."""
        return AccountingResult(
            epsilon=epsilon,
            delta=delta,
            accountant=self.name,
            neighbouring=self._neighbouring,
            method=method,
            ledger_hash=self.ledger_hash(),
            references=tuple(dict.fromkeys((*self.references, *references))),
            **extra,
        )


EXTREME_PRIVACY_LOSS = 1e100
"""A leaf whose single-use privacy parameter (Δ/σ for a Gaussian, Δ/b for Laplace, ε₀ for
randomized response) exceeds this is treated as adding no useful noise: when an accountant's
arithmetic overflows on it, the result is the trivial bound ε = ∞ (or δ = 1) with a note."""


def _sub_events(event: PrivacyEvent) -> Iterator[PrivacyEvent]:
    """``event`` and every event nested in its fields (wrappers and compositions), depth first."""
    stack = [event]
    while stack:
        item = stack.pop()
        yield item
        if dataclasses.is_dataclass(item):
            for field in dataclasses.fields(item):
                value = getattr(item, field.name)
                if isinstance(value, PrivacyEvent):
                    stack.append(value)
                elif isinstance(value, (tuple, list)):
                    stack.extend(v for v in value if isinstance(v, PrivacyEvent))


def _non_private_reason(event: PrivacyEvent) -> str | None:
    """A note naming a :class:`~dpkit.accounting.events.NonPrivateEvent` inside ``event``, or None."""
    if any(isinstance(item, NonPrivateEvent) for item in _sub_events(event)):
        return "the ledger holds a NonPrivateEvent (a step with no privacy guarantee)"
    return None


class _NonPrivateLedger(Exception):
    """Raised inside a guarded query whose ledger holds a non-private step (answered trivially)."""


def extreme_event_reason(event: PrivacyEvent) -> str | None:
    """A note naming the first leaf of ``event`` with a privacy parameter above :data:`EXTREME_PRIVACY_LOSS`."""
    for item in _sub_events(event):
        ratio = None
        sigma, scale = getattr(item, "sigma", None), getattr(item, "scale", None)
        sensitivity = getattr(item, "sensitivity", None)
        if isinstance(sensitivity, int) and not isinstance(sensitivity, bool):  # discrete events: Δ ∈ ℕ
            sensitivity = float(sensitivity)
        if isinstance(sigma, float) and isinstance(sensitivity, float) and sigma > 0:
            ratio, what = sensitivity / sigma, f"sensitivity/sigma = {sensitivity:g}/{sigma:g}"
        elif isinstance(scale, float) and isinstance(sensitivity, float) and scale > 0:
            ratio, what = sensitivity / scale, f"sensitivity/scale = {sensitivity:g}/{scale:g}"
        elif isinstance(getattr(item, "epsilon", None), float):
            ratio, what = item.epsilon, f"epsilon = {item.epsilon:g}"  # type: ignore[attr-defined]
        if ratio is not None and not ratio <= EXTREME_PRIVACY_LOSS:
            return (f"{type(item).__name__} has {what} > {EXTREME_PRIVACY_LOSS:g}: it adds essentially no noise and "
                    "its privacy loss overflows floating point, so no finite epsilon can be certified")
    return None


_QUERY_DEPTH: contextvars.ContextVar[int] = contextvars.ContextVar("dpkit_accountant_query_depth", default=0)
"""Nesting depth of ``get_epsilon``/``get_delta`` calls: only the outermost query certifies its result
(:func:`~dpkit.accounting.certify.certify_result`), so an accountant that asks other accountants
(e.g. the tightest one) rounds once."""


def _guard_extreme(method: Any, method_name: str) -> Any:
    """Wrap ``get_epsilon``/``get_delta``: on a ledger with an extreme leaf, an arithmetic failure
    (overflow, division by zero, a grid that cannot be built) or a NaN becomes the trivial bound
    ε = ∞ (``get_epsilon``) or δ = 1 (``get_delta``), which is always valid, with a note; on any
    other ledger a NaN raises :class:`~dpkit.accounting.certify.UncertifiableError`.

    Every result of the outermost query leaves through the certifying step
    (:func:`~dpkit.accounting.certify.certify_result`: outward rounding, no false 0), so that no
    reported ε or δ is below the true value through the last float operations."""

    @functools.wraps(method)
    def guarded(self: "Accountant", value: float) -> AccountingResult:
        depth = _QUERY_DEPTH.get()
        token = _QUERY_DEPTH.set(depth + 1)
        try:
            reason = next(filter(None, (_non_private_reason(event) for event, _ in self._ledger)), None)
            if reason is not None:
                raise _NonPrivateLedger
            result = method(self, value)
        except _NonPrivateLedger:
            pass
        except UnsupportedEventError:
            raise
        except (ArithmeticError, ValueError):
            reason = self._extreme_reason()
            if reason is None:
                raise
        else:
            if not (math.isnan(result.epsilon) or math.isnan(result.delta)):
                trivial_end = math.isinf(result.epsilon) if method_name == "get_epsilon" else result.delta >= 1.0
                reason = self._extreme_reason() if trivial_end and self._ledger else None
                if reason is not None:
                    result = dataclasses.replace(result, notes=(*result.notes, reason))
                if depth:
                    return result
                return certify_result(result, method_name, noop=not self._ledger, margin=not self.margin_included)
            reason = self._extreme_reason()
            if reason is None:
                raise UncertifiableError(f"{type(self).__name__}.{method_name}({value!r}) computed NaN: no bound "
                                         "can be certified")
        finally:
            _QUERY_DEPTH.reset(token)
        if method_name == "get_epsilon":
            trivial = self._result(math.inf, check_target_delta(value), "trivial bound: epsilon = inf",
                                   notes=(reason + "; epsilon = inf is the only sound answer",))
        else:
            trivial = self._result(check_target_epsilon(value), 1.0, "trivial bound: delta = 1",
                                   notes=(reason + "; delta = 1 is the only sound answer",))
        return trivial if depth else certify_result(trivial, method_name)

    guarded._dpkit_guarded = True  # type: ignore[attr-defined]
    return guarded


def check_target_delta(delta: Any) -> float:
    """Validate a target δ ∈ (0, 1)."""
    return check_open_unit("delta", delta)


def check_target_epsilon(epsilon: Any) -> float:
    """Validate a target ε ∈ [0, ∞)."""
    return check_nonnegative("epsilon", epsilon)


def round_up(value: float) -> float:
    """The next float above ``value`` (one ulp towards safety for a computed upper bound)."""
    return math.nextafter(value, math.inf)
