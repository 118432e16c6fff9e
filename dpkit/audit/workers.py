"""Where an audit's batches run: a timed pilot, then this process or a pool of worker processes.

:func:`start_workers` times the mechanism (:meth:`dpkit.audit.runner.Runner.pilot`) and, unless
the caller gave an executor or pinned ``workers``, starts a :class:`~concurrent.futures.ProcessPoolExecutor`
with as many processes as :func:`~dpkit.audit.throughput.choose_workers` says. The batches'
seeds name what is sampled, never who samples it, so the result for a seed does not depend on
this choice. A mechanism or pair that cannot be pickled stays in this process, with a note.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import math
import pickle
from typing import Any

from dpkit.audit.runner import Runner
from dpkit.audit.throughput import CallCost, available_cores, choose_workers, hedged_speedup, other_load

__all__ = ["Workers", "start_workers"]


@dataclasses.dataclass
class Workers:
    """The pool an audit runs on (``None``: this process or the caller's executor), and why."""

    count: int
    reason: str
    cost: CallCost
    pool: concurrent.futures.ProcessPoolExecutor | None = None

    def notes(self) -> tuple[str, ...]:
        """A note when the choice matters to the reader: several processes, or one when more were warranted."""
        return (f"throughput: {self.reason}",) if self.count > 1 or "pickled" in self.reason else ()

    def summary(self, runner: Runner) -> dict[str, Any]:
        """``AuditResult.throughput``: the pilot, the workers, every reported estimate ``[elapsed s,
        predicted total s, planned outputs]`` and the start of every phase ``[elapsed s, outputs drawn]``."""
        return {"pilot": self.cost.to_dict(), "workers": self.count, "reason": self.reason,
                "speedup_assumed": runner.estimator.speedup,
                "estimates": [list(e) for e in runner.estimates], "phases": [list(p) for p in runner.phases]}

    def close(self) -> None:
        """Stop the pool this module started (never the caller's executor)."""
        if self.pool is not None:
            self.pool.shutdown(wait=False, cancel_futures=True)
            self.pool = None


def _unpicklable(runner: Runner, pairs: list[Any]) -> str | None:
    try:
        pickle.dumps((runner.mechanism, [(p.first, p.second) for p in pairs]))
    except Exception as error:  # pickling raises PicklingError, AttributeError or TypeError
        return f"{type(error).__name__}: {error}"
    return None


def start_workers(runner: Runner, pairs: list[Any], workers: int | None, executor: Any, planned: int,
                  block: int) -> Workers:
    """Time the pilot on the first pair's first input and set ``runner`` up to run its batches:
    on ``executor`` if given, on ``workers`` processes if pinned, else on the number
    :func:`~dpkit.audit.throughput.choose_workers` gives for ``planned`` outputs in calls of ``block``."""
    cost = runner.pilot(pairs[0].first)
    if executor is not None:
        count = workers or getattr(executor, "_max_workers", None) or available_cores()
        runner.set_workers(executor, count, math.sqrt(count))  # hedged: its cores and their load are unknown
        return Workers(count, "the caller's executor", cost)
    if workers is not None:
        count, reason = workers, f"workers={workers} (pinned)"
    else:
        count, reason = choose_workers(cost, planned, block, available_cores())
        if count > 1:
            why = _unpicklable(runner, pairs)
            if why is not None:
                count, reason = 1, (f"{reason}, but the mechanism or its pairs cannot be pickled ({why}): one "
                                    f"process (use a module-level function or a class instance)")
    if count == 1:
        runner.set_workers(None, 1)
        return Workers(1, reason, cost)
    pool = concurrent.futures.ProcessPoolExecutor(count)
    runner.set_workers(pool, count, hedged_speedup(count, available_cores(), other_load()))
    return Workers(count, reason, cost, pool)
