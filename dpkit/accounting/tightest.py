"""The tightest certified guarantee among several accountants.

:class:`TightestAccountant` composes events like any accountant and answers with the smallest
ε (or δ) that one of its member accountants certifies; every member's answer is a valid upper
bound, so their minimum is one too. Approximations that are not bounds (GDP's central-limit
estimate) are never members' answers. Parallel compositions (disjoint data, McSherry 2009,
Thm 4) are resolved part by part: ε(δ) of the whole is the largest of the parts' ε(δ), each part
answered by its own tightest member, so the members need not support parallel composition
themselves.

A member that cannot answer (the PLD when its grid would be too large) is passed over. The PLD member
itself answers with the best of its routes (its grid, exact GDP, RDP; its ``route: …`` note), and
:meth:`TightestAccountant.get_epsilon` keeps the smaller of that minimum and any earlier answer of the
same accountant and ledger at a δ' ≤ δ (an (ε', δ')-DP ledger is (ε', δ)-DP), so that one accountant's
answers at increasing δ never increase.

Exactness shortcut: when the GDP accountant certifies a ledger of Gaussian releases without
approximation, its answer is the exact ε (Dong, Roth & Su 2022, Cor. 3.3; Balle & Wang 2018,
Thm 8) rounded up, so no other member is asked.

>>> from dpkit.accounting.events import GaussianEvent, LaplaceEvent, compose, repeat
>>> result = TightestAccountant().compose(repeat(GaussianEvent(10.0), 50)).get_epsilon(1e-5)
>>> result.accountant, round(result.epsilon, 4)
('gdp', 2.9432)
>>> TightestAccountant().compose(compose(GaussianEvent(2.0), LaplaceEvent(1.0))).get_epsilon(1e-5).accountant
'pld'
"""

from __future__ import annotations

import dataclasses
from typing import Callable, Sequence

from dpkit.accounting.base import Accountant, AccountingResult, UnsupportedEventError
from dpkit.accounting.events import ParallelComposedEvent, PrivacyEvent, compose, repeat
from dpkit.accounting.neighbouring import NeighbouringRelation
from dpkit.accounting.pld.mechanisms import GridTooLargeError
from dpkit.accounting import registry  # registry registers this class: a module reference, not a name

__all__ = ["TightestAccountant", "DEFAULT_MEMBERS"]

DEFAULT_MEMBERS: tuple[str, ...] = ("gdp", "pld", "rdp")
"""Member accountants, in the order they are asked."""
_REMEMBERED = 64
"""Earlier answers kept for the monotone envelope of :meth:`TightestAccountant.get_epsilon`."""


class TightestAccountant(Accountant):
    """The minimum of several accountants' certified bounds (see the module docstring).

    Parameters
    ----------
    neighbouring
        The relation every member accounts under.
    members
        Registry names of the member accountants.
    """

    name = "tightest"

    def __init__(
        self, neighbouring: NeighbouringRelation | str = NeighbouringRelation.ADD_REMOVE,
        members: Sequence[str] = DEFAULT_MEMBERS,
    ):
        super().__init__(neighbouring)
        self.members = tuple(members)
        self._answered: dict[str, list[tuple[float, float]]] = {}  # ledger hash → earlier (delta, epsilon)
        if not self.members:
            raise ValueError("members must name at least one accountant")
        for member in self.members:
            if member == self.name:
                raise ValueError(f"members must name other accountants, got members={self.members!r}")
            registry.make_accountant(member)  # unknown names fail here, not at the first query

    def _whole(self) -> PrivacyEvent:
        parts = [event if count == 1 else repeat(event, count) for event, count in self._ledger]
        if not parts:
            raise ValueError("the ledger is empty: compose an event first")
        return parts[0] if len(parts) == 1 else compose(*parts)

    def _check(self, event: PrivacyEvent) -> None:
        if isinstance(event, ParallelComposedEvent):
            for part in event.events:
                self._check(part)
            return
        if not any(registry.make_accountant(m, neighbouring=self.neighbouring).supports(event) for m in self.members):
            raise UnsupportedEventError(event, f"none of the accountants {self.members} supports it")

    def _answers(self, event: PrivacyEvent, query: Callable[[Accountant], AccountingResult]) -> list[AccountingResult]:
        answers = []
        for member in self.members:
            accountant = registry.make_accountant(member, neighbouring=self.neighbouring)
            if not accountant.supports(event):
                continue
            try:
                answer = query(accountant.compose(event))
            except GridTooLargeError:
                continue  # the PLD would need too fine a grid; the other members still answer
            if not answer.is_upper_bound:
                continue
            answers.append(answer)
            if member == "gdp":
                break  # exact for Gaussian ledgers: nothing is tighter
        if not answers:
            raise UnsupportedEventError(event, f"none of the accountants {self.members} certifies a bound for it")
        return answers

    def _tightest(self, event: PrivacyEvent, query: Callable[[Accountant], AccountingResult], key: str) -> AccountingResult:
        if isinstance(event, ParallelComposedEvent):
            parts = [self._tightest(part, query, key) for part in dict.fromkeys(event.events)]
            worst = max(parts, key=lambda r: getattr(r, key))
            note = (f"parallel composition of {len(event.events)} parts on disjoint data (McSherry 2009, Thm 4): "
                    f"the worst part's {key}")
            return dataclasses.replace(worst, notes=worst.notes + (note,))
        answers = self._answers(event, query)
        best = min(answers, key=lambda r: getattr(r, key))
        others = "; ".join(f"{a.accountant}: {getattr(a, key):.6g}" for a in answers if a is not best)
        return dataclasses.replace(best, notes=best.notes + ((f"other accountants: {others}",) if others else ()))

    def get_epsilon(self, delta: float) -> AccountingResult:
        """The smallest certified ε at ``delta`` among the members (and this accountant's earlier answers
        for the same ledger at a δ' ≤ ``delta``)."""
        result = self._tightest(self._whole(), lambda a: a.get_epsilon(delta), "epsilon")
        key = self.ledger_hash()
        earlier = [item for item in self._answered.get(key, []) if item[0] <= delta and item[1] < result.epsilon]
        if earlier:
            at, epsilon = min(earlier, key=lambda item: item[1])
            result = dataclasses.replace(result, epsilon=epsilon, notes=result.notes + (
                f"route: monotone envelope (an earlier answer at delta'={at:.6g} <= delta certified epsilon="
                f"{epsilon:.9g}; it holds at delta too)",))
        self._answered = {key: [*self._answered.get(key, [])[-_REMEMBERED + 1:], (delta, result.epsilon)]}
        return result

    def get_delta(self, epsilon: float) -> AccountingResult:
        """The smallest certified δ at ``epsilon`` among the members."""
        return self._tightest(self._whole(), lambda a: a.get_delta(epsilon), "delta")
