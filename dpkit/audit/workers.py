"""Where an audit's batches run: a timed pilot, then this process or a pool of worker processes.

:func:`start_workers` times the mechanism on every distinct input of the pairs
(:meth:`dpkit.audit.runner.Runner.pilot`) and, unless the caller gave an executor or pinned
``workers``, starts a :class:`~concurrent.futures.ProcessPoolExecutor` with as many processes as
:func:`~dpkit.audit.throughput.choose_workers` says. With ``workers`` pinned to 2 or more the pool
starts first and the pilot runs on it, so a mechanism that crashes (a signal, ``os._exit``) kills
a worker, never this process, from its first call on. The batches' seeds name what is sampled,
never who samples it, so the result for a seed does not depend on this choice. A mechanism that
cannot be pickled (a closure, a library's object) runs on workers that inherit it by ``fork``
(:class:`InheritedMechanism`); pairs that cannot be pickled, or a platform without ``fork``, keep
the audit in this process, with a note. After an error the workers are terminated, killed if they
ignore it, and reaped (:meth:`Workers.close`): a hung worker cannot keep the audit alive.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import itertools
import math
import multiprocessing
import pickle
from typing import Any

import numpy as np

from dpkit.audit.runner import Runner
from dpkit.audit.throughput import CallCost, available_cores, choose_workers, hedged_speedup, other_load
from dpkit.audit.worker_processes import pool_processes, stop_processes

__all__ = ["InheritedMechanism", "Workers", "distinct_inputs", "start_workers"]


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
        for its idle processes to exit; after an error (a batch may hang), cancel the pending batches,
        terminate the workers (kill those that ignore it) and reap them
        (:func:`~dpkit.audit.worker_processes.stop_processes`)."""
        if self.pool is not None:
            processes = pool_processes(self.pool)
            self.pool.shutdown(wait=wait, cancel_futures=True)
            if not wait:
                stop_processes(processes)
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


def distinct_inputs(pairs: list[Any]) -> tuple[list[Any], list[int]]:
    """The distinct inputs of ``pairs`` (in order of first appearance) and how many pair sides each is.

    >>> from dpkit.audit import Pair
    >>> distinct_inputs([Pair([0, 1], [1, 1], "a"), Pair([0, 1], [0, 0], "b")])
    ([[0, 1], [1, 1], [0, 0]], [2, 1, 1])
    """
    inputs: list[Any] = []
    counts: list[int] = []
    index: dict[Any, int] = {}
    for pair in pairs:
        for data in (pair.first, pair.second):
            key = _identity(data)
            if key not in index:
                index[key] = len(inputs)
                inputs.append(data)
                counts.append(0)
            counts[index[key]] += 1
    return inputs, counts


def _identity(data: Any) -> Any:
    """A hashable key equal for equal numeric arrays (else the object's identity)."""
    try:
        array = np.asarray(data)
    except Exception:  # an input numpy cannot read (the mechanism's own type): compared by identity
        return ("object", id(data))
    if array.dtype.kind not in "biuf":
        return ("object", id(data))
    return (array.shape, array.dtype.str, array.tobytes())


def start_workers(runner: Runner, pairs: list[Any], workers: int | None, executor: Any, planned: int,
                  block: int) -> Workers:
    """Time the pilot on every distinct input of ``pairs`` and set ``runner`` up to run its batches:
    on ``executor`` if given, on ``workers`` processes if pinned (the pilot then runs on them too),
    else on the number :func:`~dpkit.audit.throughput.choose_workers` gives for ``planned`` outputs
    in calls of ``block``.

    A mechanism that cannot be pickled runs on workers forked after it is registered
    (:class:`InheritedMechanism`) where the platform forks (Linux); elsewhere, or when the pairs
    cannot be pickled, in this process, with a note."""
    inputs, counts = distinct_inputs(pairs)

    def pilot(on: Any = None) -> CallCost:
        return runner.pilot(inputs[0], on, inputs[1:], counts)

    if executor is not None:  # the pilot runs here: the caller's executor may be shared or remote
        cost = pilot()
        count = workers or getattr(executor, "_max_workers", None) or available_cores()
        runner.set_workers(executor, count, math.sqrt(count))  # hedged: its cores and their load are unknown
        return Workers(count, "the caller's executor", cost)
    if workers is not None and workers > 1:
        started = _pool(runner, pairs, workers, f"workers={workers} (pinned)")
        try:
            started.cost = pilot(started.pool)
        except BaseException:
            started.close(wait=False)
            raise
        return started
    cost = pilot()
    if workers is not None:
        count, reason = workers, f"workers={workers} (pinned)"
    else:
        count, reason = choose_workers(cost, planned, block, available_cores())
    if count == 1:
        runner.set_workers(None, 1)
        return Workers(1, reason, cost)
    started = _pool(runner, pairs, count, reason)
    started.cost = cost
    return started


def _pool(runner: Runner, pairs: list[Any], count: int, reason: str) -> Workers:
    """``count`` worker processes for ``runner`` (one, this process, when the mechanism or the pairs
    cannot be pickled), their pilot's cost still to be set."""
    unknown = CallCost(0.0, 0.0, 0, 0.0)
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
                          f"(use a module-level function or a class instance)", unknown)
    context = multiprocessing.get_context("fork") if inherited is not None else None
    pool = concurrent.futures.ProcessPoolExecutor(count, mp_context=context)
    runner.set_workers(pool, count, hedged_speedup(count, available_cores(), other_load()))
    return Workers(count, reason, unknown, pool, inherited)
