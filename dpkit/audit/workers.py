"""Where an audit's batches run: a timed pilot, then this process or a pool of worker processes.

:func:`start_workers` times the mechanism (:meth:`dpkit.audit.runner.Runner.pilot`) and, unless
the caller gave an executor or pinned ``workers``, starts a :class:`~concurrent.futures.ProcessPoolExecutor`
with as many processes as :func:`~dpkit.audit.throughput.choose_workers` says. The batches'
seeds name what is sampled, never who samples it, so the result for a seed does not depend on
this choice. A mechanism that cannot be pickled (a closure, a library's object) runs on workers
that inherit it by ``fork`` (:class:`InheritedMechanism`); pairs that cannot be pickled, or a
platform without ``fork``, keep the audit in this process, with a note.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import itertools
import math
import multiprocessing
import pickle
from typing import Any

from dpkit.audit.runner import Runner
from dpkit.audit.throughput import CallCost, available_cores, choose_workers, hedged_speedup, other_load

__all__ = ["InheritedMechanism", "Workers", "start_workers"]


@dataclasses.dataclass
class Workers:
    """The pool an audit runs on (``None``: this process or the caller's executor), and why."""

    count: int
    reason: str
    cost: CallCost
    pool: concurrent.futures.ProcessPoolExecutor | None = None
    inherited: Any = None  # an InheritedMechanism to release when the pool stops

    def notes(self) -> tuple[str, ...]:
        """A note when the choice matters to the reader: several processes, or one when more were warranted."""
        return (f"throughput: {self.reason}",) if self.count > 1 or "pickled" in self.reason else ()

    def summary(self, runner: Runner) -> dict[str, Any]:
        """``AuditResult.throughput``: the pilot, the workers, every reported estimate ``[elapsed s,
        predicted total s, planned outputs]`` and the start of every phase ``[elapsed s, outputs drawn]``."""
        return {"pilot": self.cost.to_dict(), "workers": self.count, "reason": self.reason,
                "speedup_assumed": runner.estimator.speedup,
                "estimates": [list(e) for e in runner.estimates], "phases": [list(p) for p in runner.phases]}

    def close(self, wait: bool = True) -> None:
        """Stop the pool this module started (never the caller's executor): after a finished run, wait
        for its idle processes to exit; after an error (a batch may hang), cancel and do not wait."""
        if self.pool is not None:
            self.pool.shutdown(wait=wait, cancel_futures=True)
            self.pool = None
        if self.inherited is not None:
            self.inherited.release()
            self.inherited = None


def _unpicklable(value: Any) -> str | None:
    try:
        pickle.dumps(value)
    except Exception as error:  # pickling raises PicklingError, AttributeError or TypeError
        return f"{type(error).__name__}: {error}"
    return None


_INHERITED: dict[int, Any] = {}  # mechanisms that forked workers inherit (they cannot be pickled)
_TOKENS = itertools.count()


class InheritedMechanism:
    """A picklable handle to a mechanism that cannot be pickled (a closure, a library object): the
    worker processes are forked after it is registered here, so they inherit it and look it up."""

    def __init__(self, mechanism: Any):
        self.token = next(_TOKENS)
        self.name = repr(mechanism)
        _INHERITED[self.token] = mechanism

    def __call__(self, database: Any, n: int, rng: Any) -> Any:
        return _INHERITED[self.token](database, n, rng)

    def release(self) -> None:
        _INHERITED.pop(self.token, None)

    def __repr__(self) -> str:
        return f"inherited({self.name})"


def _fork_available() -> bool:
    return "fork" in multiprocessing.get_all_start_methods()


def start_workers(runner: Runner, pairs: list[Any], workers: int | None, executor: Any, planned: int,
                  block: int) -> Workers:
    """Time the pilot on the first pair's first input and set ``runner`` up to run its batches:
    on ``executor`` if given, on ``workers`` processes if pinned, else on the number
    :func:`~dpkit.audit.throughput.choose_workers` gives for ``planned`` outputs in calls of ``block``.

    A mechanism that cannot be pickled runs on workers forked after it is registered
    (:class:`InheritedMechanism`) where the platform forks (Linux); elsewhere, or when the pairs
    cannot be pickled, in this process, with a note."""
    cost = runner.pilot(pairs[0].first)
    if executor is not None:
        count = workers or getattr(executor, "_max_workers", None) or available_cores()
        runner.set_workers(executor, count, math.sqrt(count))  # hedged: its cores and their load are unknown
        return Workers(count, "the caller's executor", cost)
    if workers is not None:
        count, reason = workers, f"workers={workers} (pinned)"
    else:
        count, reason = choose_workers(cost, planned, block, available_cores())
    if count == 1:
        runner.set_workers(None, 1)
        return Workers(1, reason, cost)
    why = _unpicklable([(p.first, p.second) for p in pairs])
    inherited = None
    if why is None and _unpicklable(runner.mechanism) is not None:
        if _fork_available():
            inherited = InheritedMechanism(runner.mechanism)
            runner.mechanism = inherited
            reason += " (the mechanism cannot be pickled: the workers are forked and inherit it)"
        else:
            why = _unpicklable(runner.mechanism)
    if why is not None:
        runner.set_workers(None, 1)
        return Workers(1, f"{reason}, but the mechanism or its pairs cannot be pickled ({why}): one process "
                          f"(use a module-level function or a class instance)", cost)
    context = multiprocessing.get_context("fork") if inherited is not None else None
    pool = concurrent.futures.ProcessPoolExecutor(count, mp_context=context)
    runner.set_workers(pool, count, hedged_speedup(count, available_cores(), other_load()))
    return Workers(count, reason, cost, pool, inherited)
