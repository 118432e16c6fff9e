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

Every step is a Gaussian of noise multiplier σ (noise std / clipping norm) on the batch the data
loader gave, accounted under add/remove neighbours. ``batching`` says how the loader batches:

- ``"poisson"`` (default; Opacus's ``DPDataLoader``): each example in each step independently
  with the recorded rate q (Abadi et al. 2016; Mironov, Talwar & Zhang 2019).
- ``"random-allocation"`` (:class:`~dpkit.interop.batching.RandomAllocationBatchSampler`, with
  ``make_private(..., poisson_sampling=False)``): each epoch of t steps places every example in k
  of them at random, accounted as ``RandomAllocationEvent`` per epoch (Feldman & Shenfeld 2025,
  arXiv 2502.08202; Chua et al. 2025, "Balls-and-bins sampling for DP-SGD"); certified.
- ``"shuffle"`` (fixed-size batches of a shuffled dataset): no tight bound is proven (Chua et al.
  2024, "How private are DP-SGD implementations?", show shuffling can be far less private than
  Poisson sampling), so the Poisson number papers report is *not* given. ``get_epsilon`` gives
  the proven no-amplification bound instead: each example is in at most one step per epoch, so
  ⌈E⌉ Gaussian releases (the bound ``dpkit dpsgd`` reports for any data order), labelled so in
  :meth:`DpkitAccountant.get_result`'s notes. With fixed-size batches the neighbours are, as in
  Chua et al., zero-out ones (an example replaced by one without gradient), which for the other
  two batchings are the add/remove ones.
"""

from __future__ import annotations

import dataclasses
import math
from collections import OrderedDict
from typing import Any, Callable

from dpkit._validation import check_integer, check_open_unit, check_positive, check_unit_interval
from dpkit.accounting.base import AccountingResult
from dpkit.accounting.calibration import accountant_factory, calibrate, dpsgd_sigma
from dpkit.accounting.events import (
    GaussianEvent,
    PoissonSampledEvent,
    PrivacyEvent,
    RandomAllocationEvent,
    SelfComposedEvent,
)
from dpkit.interop.batching import RandomAllocationBatchSampler

__all__ = ["DpkitAccountant", "get_noise_multiplier", "opacus_accountant_class", "register_with_opacus"]

MECHANISM = "dpkit"
ACCOUNTANTS = ("pld", "rdp")
BATCHINGS = ("poisson", "random-allocation", "shuffle")
_PEER_KEYWORDS = frozenset({"alphas", "eps_error", "delta_error"})
"""Keywords Opacus's own accountants take in ``get_epsilon``; dpkit chooses these itself."""
_RATE_RTOL = 1e-9
"""How far (relatively) 1/sample_rate may be from a whole number t of steps per epoch and still be
read as t: Opacus passes exactly the float 1/len(data_loader)."""


def _epoch_steps(rate: float, batching: str, steps_per_epoch: int | None, selected: int) -> int:
    """The steps per epoch t that a recorded ``sample_rate`` means under epoch-based batching.

    Opacus's ``make_private`` passes ``sample_rate = 1/len(data_loader)`` (times the number of
    batches accumulated into one optimizer step), so 1/rate is the number of optimizer steps per
    epoch, a whole number up to float rounding. A rate whose inverse is not a whole number is
    refused rather than rounded: the optimizer steps would then not tile the epochs (gradient
    accumulation over a number of batches that does not divide the epoch), and neither random
    allocation nor the once-per-epoch bound describes such a run.
    """
    inverse = 1.0 / rate
    steps = round(inverse)
    if abs(inverse - steps) > _RATE_RTOL * inverse:
        raise ValueError(f"sample_rate must be 1/t for a whole number t of steps per epoch under batching={batching!r} "
                         f"(Opacus passes 1/len(data_loader)), got sample_rate={rate!r}")
    if steps_per_epoch is not None and steps != steps_per_epoch:
        raise ValueError(f"sample_rate={rate!r} is one step of an epoch of {steps} steps, but steps_per_epoch="
                         f"{steps_per_epoch} (one optimizer step per batch: gradient accumulation changes the rate)")
    if steps < selected:
        raise ValueError(f"sample_rate={rate!r} gives {steps} steps per epoch, fewer than selected={selected}")
    return steps


def _epoch_event(batching: str, sigma: float, steps_per_epoch: int, selected: int) -> PrivacyEvent:
    """One epoch: random allocation of each example to ``selected`` of ``steps_per_epoch``
    Gaussian steps, or (``"shuffle"``) the one Gaussian release of each example."""
    if batching == "random-allocation":
        return RandomAllocationEvent(GaussianEvent(sigma=sigma), steps_per_epoch, selected)
    return GaussianEvent(sigma=sigma)


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
    (1.515, 1.515)

    ``batching`` is how the data loader forms batches (see the module's docstring):
    ``"poisson"`` (default), ``"random-allocation"`` or ``"shuffle"``. For the last two, each
    recorded step is one batch of an epoch of t = 1/sample_rate steps (what Opacus's
    ``make_private`` passes: ``sample_rate = 1/len(data_loader)``), or t = ``steps_per_epoch``
    when given, which the rates must then match; ``selected`` (random allocation, default 1) is
    how many steps of an epoch each example is in (more than 1 needs ``steps_per_epoch``: from the
    rate alone, k batches accumulated into one optimizer step look like an epoch of t/k steps,
    which is random allocation again only for ``selected=1``). With ``sampler`` (a
    :class:`~dpkit.interop.batching.RandomAllocationBatchSampler`) t and ``selected`` are the
    sampler's.

    Epochs are counted soundly: n recorded steps are ⌈n/t⌉ epochs, a partial epoch counted as a
    whole one (its steps are a prefix of the whole epoch's, a post-processing of it). Without a
    sampler this assumes each epoch's loader is iterated to its end (except the last): an epoch
    left early and restarted draws a fresh allocation (or shuffle) the step count cannot see.
    With a sampler, every epoch it has started (``allocations_drawn``) is counted, however many
    of its steps were taken, so that case is covered. When the noise multiplier changes during
    the run, each epoch is accounted at the smallest noise multiplier of its steps (adding more
    noise is a post-processing), or every epoch at the smallest of the run when a sampler shows
    epochs may not start every t steps.

    Shuffled batches get the proven no-amplification bound (⌈n/t⌉ Gaussian releases under the
    exact analytic Gaussian accountant, whichever ``accountant`` is chosen), never the Poisson
    number; :meth:`get_result`'s notes say so:

    >>> shuffled = DpkitAccountant(batching="shuffle")
    >>> for _ in range(250):                                 # 2.5 epochs of 100 steps
    ...     shuffled.step(noise_multiplier=2.0, sample_rate=0.01)
    >>> from dpkit.accounting import AnalyticGaussianAccountant, GaussianEvent
    >>> three = AnalyticGaussianAccountant().compose(GaussianEvent(sigma=2.0), 3)   # ⌈2.5⌉ releases
    >>> shuffled.get_epsilon(1e-5) == three.get_epsilon(1e-5).epsilon
    True
    >>> print(shuffled.get_result(1e-5).notes[-1][:76])
    shuffled fixed-size batches: the proven no-amplification bound, each example
    """

    def __init__(
        self,
        accountant: str = "pld",
        batching: str = "poisson",
        *,
        steps_per_epoch: int | None = None,
        selected: int | None = None,
        sampler: RandomAllocationBatchSampler | None = None,
    ) -> None:
        if accountant not in ACCOUNTANTS:
            raise ValueError(f"accountant must be one of {ACCOUNTANTS}, got accountant={accountant!r}")
        self.accountant = accountant
        self.batching, self.steps_per_epoch, self.selected = _check_batching(batching, steps_per_epoch, selected,
                                                                            sampler)
        self.sampler = sampler
        self.history: list[tuple[float, float, int]] = []
        self._restored_allocations = 0
        self._sampler_baseline = 0

    @classmethod
    def mechanism(cls) -> str:
        """The name Opacus's registry and state dicts know this accountant by."""
        return MECHANISM

    def step(self, *, noise_multiplier: float, sample_rate: float) -> None:
        """Record one DP-SGD step: Gaussian ``noise_multiplier`` on a batch drawn at
        ``sample_rate`` (Poisson), or one batch of an epoch of 1/``sample_rate`` steps (random
        allocation, shuffling: a rate that is not 1/t for a whole t is refused here)."""
        noise_multiplier = check_positive("noise_multiplier", noise_multiplier)
        sample_rate = check_unit_interval("sample_rate", sample_rate, include_zero=False)
        if self.batching != "poisson":
            _epoch_steps(sample_rate, self.batching, self.steps_per_epoch, self.selected)
        if self.history and self.history[-1][:2] == (noise_multiplier, sample_rate):
            sigma, rate, steps = self.history[-1]
            self.history[-1] = (sigma, rate, steps + 1)
        else:
            self.history.append((noise_multiplier, sample_rate, 1))

    def __len__(self) -> int:
        """Number of steps taken so far."""
        return sum(steps for _, _, steps in self.history)

    def _history_steps_per_epoch(self) -> int:
        """The one number of steps per epoch every history entry means (refuses a mixture)."""
        found = {_epoch_steps(rate, self.batching, self.steps_per_epoch, self.selected) for _, rate, _ in self.history}
        if len(found) > 1:
            raise ValueError(f"the history mixes epochs of {sorted(found)} steps (sample rates of different data "
                             "loaders): account each data loader with its own DpkitAccountant")
        return found.pop() if found else (self.steps_per_epoch or 1)

    def _epoch_sigmas(self, steps_per_epoch: int) -> list[tuple[float, int]]:
        """(σ, number of epochs) runs: the history cut into epochs of ``steps_per_epoch`` steps
        (the last possibly partial), each at the smallest σ of its steps."""
        runs: list[tuple[float, int]] = []

        def push(sigma: float, count: int) -> None:
            if runs and runs[-1][0] == sigma:
                runs[-1] = (sigma, runs[-1][1] + count)
            else:
                runs.append((sigma, count))

        smallest, filled = math.inf, 0
        for sigma, _, steps in self.history:
            remaining = int(steps)
            while remaining:
                if filled == 0 and remaining >= steps_per_epoch:
                    push(float(sigma), remaining // steps_per_epoch)
                    remaining %= steps_per_epoch
                    continue
                take = min(remaining, steps_per_epoch - filled)
                smallest, filled, remaining = min(smallest, float(sigma)), filled + take, remaining - take
                if filled == steps_per_epoch:
                    push(smallest, 1)
                    smallest, filled = math.inf, 0
        if filled:
            push(smallest, 1)
        return runs

    def _allocations_drawn(self) -> int:
        """Epochs the sampler has started (all of them, also any before this accountant existed:
        an overcount is safe), plus those of a loaded state, less the sampler's count at loading."""
        drawn = self._restored_allocations
        if self.sampler is not None:
            drawn += self.sampler.allocations_drawn - self._sampler_baseline
        return drawn

    def get_result(self, delta: float) -> AccountingResult:
        """The full dpkit result at ``delta`` (ε upper bound, PLD's certified lower bound, notes)."""
        delta = check_open_unit("delta", delta)
        if self.batching == "poisson":
            ledger = accountant_factory(self.accountant, "add-remove")()
            for sigma, rate, steps in self.history:
                ledger.compose(PoissonSampledEvent(GaussianEvent(sigma=float(sigma)), rate=float(rate)), int(steps))
            return ledger.get_epsilon(delta)
        per_epoch = self._history_steps_per_epoch()
        runs = self._epoch_sigmas(per_epoch)
        epochs = sum(count for _, count in runs)
        if self.batching == "shuffle":
            ledger = accountant_factory("analytic", "add-remove")()
            note = ("shuffled fixed-size batches: the proven no-amplification bound, each example in at most one "
                    f"step per epoch, {epochs} epoch(s) of {per_epoch} steps (a partial epoch counted as a whole one) "
                    "= as many Gaussian releases, exact under the analytic Gaussian accountant; shuffling has no "
                    "proven amplification, and the Poisson number often reported for it is not a bound (Chua et "
                    "al. 2024, 'How private are DP-SGD implementations?')")
        else:
            allocations = max(epochs, self._allocations_drawn()) if self.history else 0
            if runs and (allocations > epochs or (self.sampler is not None and len(self) != allocations * per_epoch)):
                runs = [(min(sigma for sigma, _ in runs), allocations)]  # epochs may not start every t steps
            ledger = accountant_factory(self.accountant, "add-remove")()
            note = (f"random allocation (Feldman & Shenfeld 2025; Chua et al. 2025): {allocations} epoch(s) of "
                    f"{per_epoch} steps, each example in {self.selected} of them; a partial epoch counted as a whole "
                    "one" + ("" if self.sampler is not None else ", each epoch iterated to its end (no sampler given)"))
        for sigma, count in runs:
            ledger.compose(_epoch_event(self.batching, sigma, per_epoch, self.selected), count)
        result = ledger.get_epsilon(delta)
        return dataclasses.replace(result, notes=result.notes + (note,))

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
        """``history``, ``mechanism``, the dpkit accountant and the batching (with the epochs a
        sampler has started), as Opacus checkpoints them."""
        destination = OrderedDict() if destination is None else destination
        destination["history"] = list(self.history)
        destination["mechanism"] = self.mechanism()
        destination["dpkit_accountant"] = self.accountant
        destination["dpkit_batching"] = self.batching
        destination["dpkit_steps_per_epoch"] = self.steps_per_epoch
        destination["dpkit_selected"] = self.selected if self.batching == "random-allocation" else None
        destination["dpkit_allocations"] = self._allocations_drawn()
        return destination

    def load_state_dict(self, state_dict: Any) -> None:
        """Restore what :meth:`state_dict` saved (refuses another mechanism's state). A state
        without a batching (saved before batchings existed) is Poisson's."""
        if not state_dict or "history" not in state_dict or "mechanism" not in state_dict:
            raise ValueError("state_dict must have the keys 'history' and 'mechanism'")
        if state_dict["mechanism"] != self.mechanism():
            raise ValueError(f"state_dict of mechanism {state_dict['mechanism']!r} cannot be loaded into "
                             f"an accountant of mechanism {self.mechanism()!r}")
        batching, steps_per_epoch, selected = _check_batching(
            state_dict.get("dpkit_batching", "poisson"), state_dict.get("dpkit_steps_per_epoch"),
            state_dict.get("dpkit_selected"), self.sampler)
        allocations = check_integer("dpkit_allocations", state_dict.get("dpkit_allocations", 0), minimum=0)
        history = []
        for entry in state_dict["history"]:
            sigma, rate, steps = entry
            history.append((check_positive("noise_multiplier", sigma),
                            check_unit_interval("sample_rate", rate, include_zero=False),
                            check_integer("num_steps", steps, minimum=1)))
            if batching != "poisson":
                _epoch_steps(history[-1][1], batching, steps_per_epoch, selected)
        self.history = history
        self.accountant = state_dict.get("dpkit_accountant", self.accountant)
        self.batching, self.steps_per_epoch, self.selected = batching, steps_per_epoch, selected
        self._restored_allocations = allocations
        self._sampler_baseline = 0 if self.sampler is None else self.sampler.allocations_drawn


def _check_batching(batching: Any, steps_per_epoch: Any, selected: Any,
                    sampler: Any) -> tuple[str, int | None, int]:
    """(batching, steps per epoch or None, selected), checked together and with ``sampler``."""
    if batching not in BATCHINGS:
        raise ValueError(f"batching must be one of {BATCHINGS}, got batching={batching!r}")
    if sampler is not None:
        if batching != "random-allocation":
            raise ValueError(f"sampler applies to batching='random-allocation' only, got batching={batching!r}")
        for name, given in (("steps_per_epoch", steps_per_epoch), ("selected", selected)):
            if given is not None and given != getattr(sampler, name):
                raise ValueError(f"{name}={given!r} disagrees with the sampler's {name}={getattr(sampler, name)!r}")
        steps_per_epoch, selected = sampler.steps_per_epoch, sampler.selected
    if steps_per_epoch is not None:
        if batching == "poisson":
            raise ValueError("steps_per_epoch applies to batching 'random-allocation' and 'shuffle', not 'poisson'")
        steps_per_epoch = check_integer("steps_per_epoch", steps_per_epoch, minimum=1)
    if selected is not None and batching != "random-allocation":
        raise ValueError(f"selected applies to batching='random-allocation' only, got batching={batching!r}")
    selected = 1 if selected is None else check_integer("selected", selected, minimum=1)
    if selected > 1 and steps_per_epoch is None:
        # t from the rate alone would also accept k accumulated batches (rate k/t) as an epoch of
        # t/k steps; with selected > 1 two of an example's batches may merge into one step.
        raise ValueError(f"selected={selected} needs steps_per_epoch (or the sampler), so that every step is one batch")
    if steps_per_epoch is not None and selected > steps_per_epoch:
        raise ValueError(f"selected must be in [1, steps_per_epoch={steps_per_epoch}], got selected={selected}")
    return batching, steps_per_epoch, selected


def get_noise_multiplier(
    *,
    target_epsilon: float,
    target_delta: float,
    sample_rate: float,
    epochs: float | None = None,
    steps: int | None = None,
    accountant: str = "pld",
    rtol: float = 1e-4,
    batching: str = "poisson",
    selected: int | None = None,
) -> float:
    """The noise multiplier for ``steps`` DP-SGD steps (or ``epochs`` epochs, ⌈epochs/sample_rate⌉
    steps) within (``target_epsilon``, ``target_delta``), never below what the target needs.

    Same signature as Opacus's ``opacus.accountants.utils.get_noise_multiplier``, but the step
    count is rounded *up* (Opacus truncates ``int(epochs / sample_rate)``) and the returned σ is
    re-accounted from scratch by :class:`DpkitAccountant` and checked to meet the target.
    ``batching`` (and ``selected``) as :class:`DpkitAccountant`'s: under ``"random-allocation"``
    and ``"shuffle"`` ``sample_rate`` is 1/t for t steps per epoch, as Opacus passes it, and a
    partial epoch counts as a whole one. (Opacus's ``make_private_with_epsilon`` calibrates with
    a default-constructed accountant, i.e. Poisson: for the other batchings calibrate here and
    call ``make_private``.)

    >>> sigma = get_noise_multiplier(target_epsilon=2.0, target_delta=1e-5, sample_rate=0.01, steps=1000,
    ...                              accountant="rdp")
    >>> acc = DpkitAccountant("rdp"); acc.history = [(sigma, 0.01, 1000)]
    >>> acc.get_epsilon(1e-5) <= 2.0
    True
    """
    if (steps is None) == (epochs is None):
        raise ValueError("give exactly one of steps and epochs")
    sample_rate = check_unit_interval("sample_rate", sample_rate, include_zero=False)
    per_epoch = None if batching != "random-allocation" or selected is None else _epoch_steps(
        sample_rate, batching, None, check_integer("selected", selected, minimum=1))
    check = DpkitAccountant(accountant, batching, selected=selected, steps_per_epoch=per_epoch)
    if batching == "poisson":
        if steps is None:
            steps = math.ceil(check_positive("epochs", epochs) / sample_rate)
        steps = check_integer("steps", steps, minimum=1)
        sigma = float(dpsgd_sigma(sample_rate, steps, target_epsilon, target_delta, accountant=accountant,
                                  rtol=rtol).parameter)
    else:
        per_epoch = _epoch_steps(sample_rate, batching, check.steps_per_epoch, check.selected)
        if steps is None:
            steps = math.ceil(check_positive("epochs", epochs) * per_epoch)
        steps = check_integer("steps", steps, minimum=1)
        count = math.ceil(steps / per_epoch)
        result = calibrate(
            lambda z: SelfComposedEvent(_epoch_event(batching, z, per_epoch, check.selected), count),
            "analytic" if batching == "shuffle" else accountant, target_epsilon=target_epsilon,
            target_delta=target_delta, lower=0.5, upper=2.0, rtol=rtol, neighbouring="add-remove")
        sigma = float(result.parameter)
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

        def __init__(self: Any, accountant: str = "pld", batching: str = "poisson", **kwargs: Any) -> None:
            DpkitAccountant.__init__(self, accountant, batching, **kwargs)

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
