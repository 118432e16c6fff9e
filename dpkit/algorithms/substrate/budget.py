"""A run's privacy budget, and noise calibrated on the whole run.

Every corrected algorithm takes one :class:`Budget` (total ε and δ for one record, with the
neighbouring relation its sensitivities assume), builds the privacy event of the *whole planned
run* as a function of one noise parameter (rounds × releases per round, with subsampling where
the algorithm samples), and asks :func:`calibrate_noise` for the smallest parameter that meets
the budget under :class:`~dpkit.accounting.tightest.TightestAccountant`. The budget is never
split per round by basic or advanced composition.

A release made before the run on the pooled training rows (the column ranges of
:mod:`~dpkit.algorithms.substrate.private_ranges`) travels in the budget as ``spent_before``, a
one-agent ledger: :func:`calibrate_noise` composes its event with the run's, and
:meth:`Budget.ledger` starts every agent's ledger with it, so the certified ε covers it. A
release planned after the run, once per agent on its own rows (the class-prior fallback of
:mod:`~dpkit.algorithms.substrate.prior_fallback`), travels as ``planned_after``, an event that
:func:`calibrate_noise` composes too; it enters the ledger when it is drawn.

>>> from dpkit.accounting.events import GaussianEvent, repeat
>>> result = calibrate_noise(lambda z: repeat(GaussianEvent(z), 30), Budget(1.0, 1e-5))
>>> result.epsilon <= 1.0 < result.epsilon * 1.01, result.accountant
(True, 'gdp')
"""

from __future__ import annotations

import dataclasses
from typing import Callable

from dpkit._validation import check_open_unit, check_positive
from dpkit.accounting.calibration import CalibrationResult, calibrate
from dpkit.accounting.events import PrivacyEvent, compose
from dpkit.accounting.neighbouring import NeighbouringRelation
from dpkit.accounting.tightest import TightestAccountant
from dpkit.mechanisms.ledger import PrivacyLedger, check_pooled

__all__ = ["Budget", "calibrate_noise"]


@dataclasses.dataclass(frozen=True)
class Budget:
    """Total (ε, δ) for one record over the whole run, under ``neighbouring``.

    ``spent_before`` is a one-agent :class:`~dpkit.mechanisms.ledger.PrivacyLedger` of releases
    already made on the pooled training rows, ``planned_after`` the event of a release each agent
    will make after the run (module docstring); None when there is none.
    """

    epsilon: float
    delta: float
    neighbouring: NeighbouringRelation = NeighbouringRelation.REPLACE_ONE
    spent_before: PrivacyLedger | None = None
    planned_after: PrivacyEvent | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", check_positive("epsilon", self.epsilon))
        object.__setattr__(self, "delta", check_open_unit("delta", self.delta))
        object.__setattr__(self, "neighbouring", NeighbouringRelation.parse(self.neighbouring))
        check_pooled("spent_before", self.spent_before, self.neighbouring)
        if self.planned_after is not None and not isinstance(self.planned_after, PrivacyEvent):
            raise TypeError(f"planned_after must be a PrivacyEvent or None, got planned_after={self.planned_after!r}")

    def ledger(self, agents: int) -> PrivacyLedger:
        """A new ledger for ``agents`` agents under the budget's relation, every agent's entries
        starting with ``spent_before``'s."""
        return PrivacyLedger(agents, neighbouring=self.neighbouring, pooled=self.spent_before)

    def to_dict(self) -> dict:
        out = {"epsilon": self.epsilon, "delta": self.delta, "neighbouring": self.neighbouring.value}
        if self.spent_before is not None:
            out["spent_before"] = self.spent_before.to_dict()
        if self.planned_after is not None:
            out["planned_after"] = self.planned_after.to_dict()
        return out


def calibrate_noise(
    make_event: Callable[[float], PrivacyEvent], budget: Budget, *, lower: float = 0.1, upper: float = 10.0,
    rtol: float = 1e-3,
) -> CalibrationResult:
    """The smallest noise parameter (larger = more private) whose whole-run event meets ``budget``.

    The result's ε is certified by the tightest accountant and lies within about ``rtol`` of the
    target (the bracket is widened automatically when [lower, upper] does not contain it). The
    events of ``budget.spent_before`` and ``budget.planned_after`` are composed with every candidate's.
    """
    extra = [event for event in (None if budget.spent_before is None else budget.spent_before.event(),
                                 budget.planned_after) if event is not None]
    return calibrate(
        make_event if not extra else (lambda parameter: compose(*extra, make_event(parameter))), lambda: TightestAccountant(budget.neighbouring), target_epsilon=budget.epsilon,
        target_delta=budget.delta, lower=lower, upper=upper, rtol=rtol,
    )
