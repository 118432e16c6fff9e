"""A run's privacy budget, and noise calibrated on the whole run.

Every corrected algorithm takes one :class:`Budget` (total ε and δ for one record, with the
neighbouring relation its sensitivities assume), builds the privacy event of the *whole planned
run* as a function of one noise parameter (rounds × releases per round, with subsampling where
the algorithm samples), and asks :func:`calibrate_noise` for the smallest parameter that meets
the budget under :class:`~dpkit.accounting.tightest.TightestAccountant`. The budget is never
split per round by basic or advanced composition.

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
from dpkit.accounting.events import PrivacyEvent
from dpkit.accounting.neighbouring import NeighbouringRelation
from dpkit.accounting.tightest import TightestAccountant

__all__ = ["Budget", "calibrate_noise"]


@dataclasses.dataclass(frozen=True)
class Budget:
    """Total (ε, δ) for one record over the whole run, under ``neighbouring``."""

    epsilon: float
    delta: float
    neighbouring: NeighbouringRelation = NeighbouringRelation.REPLACE_ONE

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", check_positive("epsilon", self.epsilon))
        object.__setattr__(self, "delta", check_open_unit("delta", self.delta))
        object.__setattr__(self, "neighbouring", NeighbouringRelation.parse(self.neighbouring))

    def to_dict(self) -> dict:
        return {"epsilon": self.epsilon, "delta": self.delta, "neighbouring": self.neighbouring.value}


def calibrate_noise(
    make_event: Callable[[float], PrivacyEvent], budget: Budget, *, lower: float = 0.1, upper: float = 10.0,
    rtol: float = 1e-3,
) -> CalibrationResult:
    """The smallest noise parameter (larger = more private) whose whole-run event meets ``budget``.

    The result's ε is certified by the tightest accountant and lies within about ``rtol`` of the
    target (the bracket is widened automatically when [lower, upper] does not contain it).
    """
    return calibrate(
        make_event, lambda: TightestAccountant(budget.neighbouring), target_epsilon=budget.epsilon,
        target_delta=budget.delta, lower=lower, upper=upper, rtol=rtol,
    )
