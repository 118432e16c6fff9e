"""An accountant with Opacus's ``IAccountant`` interface and dpkit's certified accounting behind it.

:class:`DpkitAccountant` works without Opacus installed (it is duck-typed: the methods and
attributes Opacus's ``PrivacyEngine`` calls). With Opacus installed,
:func:`opacus_accountant_class` returns the same class as a subclass of
``opacus.accountants.IAccountant`` and :func:`register_with_opacus` registers it under the
mechanism name ``"dpkit"``. Opacus is imported only inside those two functions.

Put it in a ``PrivacyEngine`` (whose constructor takes an accountant *name*) either by
replacing the engine's ``accountant`` attribute before ``make_private`` (which attaches the
accountant's optimizer hook), or by registering the name::

    engine = PrivacyEngine()
    engine.accountant = DpkitAccountant()          # before make_private(...)

    register_with_opacus()                         # or: by name; also used by
    engine = PrivacyEngine(accountant="dpkit")     # make_private_with_epsilon

Every step is a Poisson-subsampled Gaussian (Opacus's DP-SGD step: sampling rate q, noise
multiplier σ = noise std / clipping norm), accounted under add/remove neighbours.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from typing import Any, Callable

from dpkit._validation import check_integer, check_open_unit, check_positive, check_unit_interval
from dpkit.accounting.base import AccountingResult
from dpkit.accounting.calibration import accountant_factory, dpsgd_sigma
from dpkit.accounting.events import GaussianEvent, PoissonSampledEvent

__all__ = ["DpkitAccountant", "get_noise_multiplier", "opacus_accountant_class", "register_with_opacus"]

MECHANISM = "dpkit"
ACCOUNTANTS = ("pld", "rdp")
_PEER_KEYWORDS = frozenset({"alphas", "eps_error", "delta_error"})
"""Keywords Opacus's own accountants take in ``get_epsilon``; dpkit chooses these itself."""


class DpkitAccountant:
    """Opacus's accountant interface backed by dpkit's PLD (default, certified interval) or RDP.

    ``history`` is a list of ``(noise_multiplier, sample_rate, num_steps)`` exactly as in
    Opacus's ``RDPAccountant``: consecutive steps with the same parameters are merged.

    >>> acc = DpkitAccountant(accountant="rdp")
    >>> for _ in range(1000):
    ...     acc.step(noise_multiplier=1.1, sample_rate=0.01)
    >>> acc.history, len(acc), acc.mechanism()
    ([(1.1, 0.01, 1000)], 1000, 'dpkit')
    >>> round(acc.get_epsilon(1e-5), 2)
    1.71
    >>> pld = DpkitAccountant(); pld.history = acc.history
    >>> result = pld.get_result(1e-5)
    >>> round(result.epsilon_lower, 3), round(result.epsilon, 3)
    (1.515, 1.516)
    """

    def __init__(self, accountant: str = "pld") -> None:
        if accountant not in ACCOUNTANTS:
            raise ValueError(f"accountant must be one of {ACCOUNTANTS}, got accountant={accountant!r}")
        self.accountant = accountant
        self.history: list[tuple[float, float, int]] = []

    @classmethod
    def mechanism(cls) -> str:
        """The name Opacus's registry and state dicts know this accountant by."""
        return MECHANISM

    def step(self, *, noise_multiplier: float, sample_rate: float) -> None:
        """Record one DP-SGD step (Poisson sampling at ``sample_rate``, Gaussian ``noise_multiplier``)."""
        noise_multiplier = check_positive("noise_multiplier", noise_multiplier)
        sample_rate = check_unit_interval("sample_rate", sample_rate, include_zero=False)
        if self.history and self.history[-1][:2] == (noise_multiplier, sample_rate):
            sigma, rate, steps = self.history[-1]
            self.history[-1] = (sigma, rate, steps + 1)
        else:
            self.history.append((noise_multiplier, sample_rate, 1))

    def __len__(self) -> int:
        """Number of steps taken so far."""
        return sum(steps for _, _, steps in self.history)

    def get_result(self, delta: float) -> AccountingResult:
        """The full dpkit result at ``delta`` (ε upper bound, PLD's certified lower bound, notes)."""
        delta = check_open_unit("delta", delta)
        ledger = accountant_factory(self.accountant, "add-remove")()
        for sigma, rate, steps in self.history:
            ledger.compose(PoissonSampledEvent(GaussianEvent(sigma=float(sigma)), rate=float(rate)), int(steps))
        return ledger.get_epsilon(delta)

    def get_epsilon(self, delta: float, **kwargs: Any) -> float:
        """ε spent so far at ``delta``: an upper bound. Opacus's tuning keywords (``alphas``,
        ``eps_error``, ``delta_error``) are accepted and ignored (dpkit chooses these itself)."""
        unknown = set(kwargs) - _PEER_KEYWORDS
        if unknown:
            raise TypeError(f"get_epsilon got unexpected keyword arguments {sorted(unknown)}")
        if not self.history:
            return 0.0
        return self.get_result(delta).epsilon

    def get_optimizer_hook_fn(self, sample_rate: float) -> Callable[[Any], None]:
        """The hook Opacus's ``PrivacyEngine.make_private`` attaches to the ``DPOptimizer``
        (the same as Opacus's ``IAccountant.get_optimizer_hook_fn``)."""

        def hook_fn(optim: Any) -> None:
            self.step(noise_multiplier=optim.noise_multiplier,
                      sample_rate=sample_rate * optim.accumulated_iterations)

        return hook_fn

    def state_dict(self, destination: Any = None) -> Any:
        """``history``, ``mechanism`` and the dpkit accountant used, as Opacus checkpoints them."""
        destination = OrderedDict() if destination is None else destination
        destination["history"] = list(self.history)
        destination["mechanism"] = self.mechanism()
        destination["dpkit_accountant"] = self.accountant
        return destination

    def load_state_dict(self, state_dict: Any) -> None:
        """Restore what :meth:`state_dict` saved (refuses another mechanism's state)."""
        if not state_dict or "history" not in state_dict or "mechanism" not in state_dict:
            raise ValueError("state_dict must have the keys 'history' and 'mechanism'")
        if state_dict["mechanism"] != self.mechanism():
            raise ValueError(f"state_dict of mechanism {state_dict['mechanism']!r} cannot be loaded into "
                             f"an accountant of mechanism {self.mechanism()!r}")
        history = []
        for entry in state_dict["history"]:
            sigma, rate, steps = entry
            history.append((check_positive("noise_multiplier", sigma),
                            check_unit_interval("sample_rate", rate, include_zero=False),
                            check_integer("num_steps", steps, minimum=1)))
        self.history = history
        self.accountant = state_dict.get("dpkit_accountant", self.accountant)


def get_noise_multiplier(
    *,
    target_epsilon: float,
    target_delta: float,
    sample_rate: float,
    epochs: float | None = None,
    steps: int | None = None,
    accountant: str = "pld",
    rtol: float = 1e-4,
) -> float:
    """The noise multiplier for ``steps`` DP-SGD steps (or ``epochs`` epochs, ⌈epochs/sample_rate⌉
    steps) within (``target_epsilon``, ``target_delta``), never below what the target needs.

    Same signature as Opacus's ``opacus.accountants.utils.get_noise_multiplier``, but the step
    count is rounded *up* (Opacus truncates ``int(epochs / sample_rate)``) and the returned σ is
    re-accounted from scratch and checked to meet the target.

    >>> sigma = get_noise_multiplier(target_epsilon=2.0, target_delta=1e-5, sample_rate=0.01, steps=1000,
    ...                              accountant="rdp")
    >>> acc = DpkitAccountant("rdp"); acc.history = [(sigma, 0.01, 1000)]
    >>> acc.get_epsilon(1e-5) <= 2.0
    True
    """
    if (steps is None) == (epochs is None):
        raise ValueError("give exactly one of steps and epochs")
    sample_rate = check_unit_interval("sample_rate", sample_rate, include_zero=False)
    if steps is None:
        steps = math.ceil(check_positive("epochs", epochs) / sample_rate)
    steps = check_integer("steps", steps, minimum=1)
    if accountant not in ACCOUNTANTS:
        raise ValueError(f"accountant must be one of {ACCOUNTANTS}, got accountant={accountant!r}")
    sigma = float(dpsgd_sigma(sample_rate, steps, target_epsilon, target_delta, accountant=accountant,
                              rtol=rtol).parameter)
    check = DpkitAccountant(accountant)
    check.history = [(sigma, sample_rate, steps)]
    if not check.get_epsilon(target_delta) <= target_epsilon:  # pragma: no cover - calibration guarantees it
        raise ArithmeticError(f"calibrated noise_multiplier={sigma} misses target_epsilon={target_epsilon}")
    return sigma


def opacus_accountant_class() -> type:
    """:class:`DpkitAccountant` as a subclass of ``opacus.accountants.IAccountant`` (needs Opacus)."""
    global _OPACUS_CLASS
    if _OPACUS_CLASS is None:
        try:
            from opacus.accountants import IAccountant
        except ImportError as error:  # pragma: no cover - depends on the environment
            raise ImportError("opacus is not installed: pip install 'dpkit[opacus]'") from error

        def __init__(self: Any, accountant: str = "pld") -> None:
            DpkitAccountant.__init__(self, accountant)

        _OPACUS_CLASS = type("DpkitOpacusAccountant", (DpkitAccountant, IAccountant),
                             {"__init__": __init__, "__doc__": DpkitAccountant.__doc__, "__module__": __name__})
    return _OPACUS_CLASS


_OPACUS_CLASS: type | None = None


def register_with_opacus(force: bool = True) -> type:
    """Register the Opacus subclass under ``"dpkit"`` in Opacus's accountant registry, so that
    ``PrivacyEngine(accountant="dpkit")`` and ``make_private_with_epsilon`` use it; returns the class."""
    from opacus.accountants import register_accountant

    cls = opacus_accountant_class()
    register_accountant(MECHANISM, cls, force=force)
    return cls
