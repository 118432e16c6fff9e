"""Batched, seeded, parallel sampling of a mechanism, with streaming event counts.

Each batch gets its own generator seeded by
``SeedSequence(entropy, spawn_key=(phase, pair, side, batch))``: the key names *what* is
sampled, never which worker samples it, so a given seed gives identical results serially, on
a process pool or on a Dask cluster. Confirmation batches return only event counts, so
10⁸ outputs never sit in memory.

A request for ``n`` outputs is cut into batches of ``block_size(n) = min(batch_size,
max(256, ⌈n / min_tasks⌉))`` outputs — a function of ``n``, ``batch_size`` and ``min_tasks``
only, never of the workers or of timing — so that even a small request of a slow mechanism
is spread over ``min_tasks`` batches that workers can run at once.
"""

from __future__ import annotations

import collections
import concurrent.futures
import concurrent.futures.process
import itertools
import threading
import time
import traceback
from typing import Any, Callable, Iterator, Sequence

import numpy as np

from dpkit.audit.events import as_outputs
from dpkit.audit.throughput import SLOW_OUTPUT_SECONDS, CallCost, RunEstimator, time_pilot
from dpkit.audit.worker_processes import dead_worker_exit, describe_exit, pool_processes

__all__ = ["AuditTimeoutError", "MechanismError", "Runner", "ScalarAdapter", "WorkerDiedError", "from_scalar"]

Mechanism = Callable[[Any, int, np.random.Generator], Any]
_WINDOW = 64  # batches in flight on an executor
_MIN_BLOCK = 256  # smallest batch a request is cut into (below it the per-call overhead dominates)
_PILOT_KEY = 6  # spawn-key phase of the pilot's draws (no audit phase uses it; its outputs are discarded)
_REVISION = 0.25  # a run-time estimate is reported again when it moves by this fraction ...
_QUIET = 1.0  # ... and this many seconds have passed since the last one


class ScalarAdapter:
    """Turn ``f(database, rng) -> one output`` into ``mechanism(database, n, rng)`` (a Python loop)."""

    def __init__(self, function: Callable[[Any, np.random.Generator], Any]):
        if not callable(function):
            raise TypeError(f"function must be callable, got {function!r}")
        self.function = function

    def __call__(self, database: Any, n: int, rng: np.random.Generator) -> np.ndarray:
        return np.asarray([self.function(database, rng) for _ in range(n)])

    def __repr__(self) -> str:
        return f"from_scalar({getattr(self.function, '__qualname__', self.function)!r})"


def from_scalar(function: Callable[[Any, np.random.Generator], Any]) -> ScalarAdapter:
    """Adapter for a scalar mechanism ``f(database, rng)``; see :class:`ScalarAdapter`."""
    return ScalarAdapter(function)


def _generator(entropy: int, key: tuple[int, ...]) -> np.random.Generator:
    return np.random.Generator(np.random.PCG64(np.random.SeedSequence(entropy, spawn_key=key)))


class MechanismError(RuntimeError):
    """The audited mechanism raised; the message carries the user's own traceback lines."""


class WorkerDiedError(MechanismError):
    """A worker process running the mechanism ended abruptly (a signal, ``os._exit``, a crash in C
    code); the message says how (``died in a worker with signal SIGSEGV``)."""


class AuditTimeoutError(TimeoutError):
    """A batch of the audited mechanism did not finish within ``batch_timeout`` seconds."""


def _call_mechanism(mechanism: Mechanism, database: Any, n: int, rng: np.random.Generator) -> Any:
    try:
        return mechanism(database, n, rng)
    except Exception as error:
        frames = traceback.extract_tb(error.__traceback__)[1:]  # drop this frame: the rest is the user's code
        where = "".join(traceback.format_list(frames)).rstrip()
        raise MechanismError(f"the mechanism raised {type(error).__name__}: {error}\n"
                             f"Traceback (the mechanism's own frames, most recent call last):\n{where}") from error


def _sample_task(mechanism: Mechanism, database: Any, n: int, entropy: int, key: tuple[int, ...]) -> np.ndarray:
    return as_outputs(_call_mechanism(mechanism, database, n, _generator(entropy, key)), n)


def _tally_task(mechanism: Mechanism, database: Any, n: int, entropy: int, key: tuple[int, ...], families: Any) -> Any:
    return families.tally(_sample_task(mechanism, database, n, entropy, key))


def _count_task(mechanism: Mechanism, database: Any, n: int, entropy: int, key: tuple[int, ...],
                events: Sequence[Any]) -> np.ndarray:
    out = _sample_task(mechanism, database, n, entropy, key)
    cache: dict[Any, np.ndarray] = {}  # features shared by several events are computed once
    return np.array([int(np.count_nonzero(e.evaluate(out, cache))) for e in events], dtype=np.int64)


class Runner:
    """Draws outputs of ``mechanism`` in fixed-size batches, optionally through an executor.

    Parameters
    ----------
    mechanism
        ``mechanism(database, n, rng)`` returning ``n`` outputs (first axis = sample).
    entropy
        Root seed of every batch.
    executor
        Any :class:`concurrent.futures.Executor` (``None``: run in this process). With a
        process pool the mechanism, databases and events must be picklable.
    batch_size
        Outputs per task; part of the seed derivation, so changing it changes the draws.
    progress
        Optional callback ``progress(done, total)`` called after every batch (for a CLI bar).
    batch_timeout
        Seconds one batch may take (``None``: no limit); a slower batch raises
        :class:`AuditTimeoutError`. Without an executor the batch runs in a daemon thread,
        which is abandoned (not killed) on a timeout.
    on_estimate
        Optional callback ``on_estimate(seconds)`` with the predicted total run time of the
        ``planned`` outputs (:class:`~dpkit.audit.throughput.RunEstimator`): called by
        :meth:`start_phase` when the pilot sets the pace (:meth:`_pilot_paced`), when a phase has
        measured its own rate (:meth:`_measured_rate`), and whenever the prediction moves by a
        quarter or more (at most once a second).
    min_tasks
        A request is cut into at least this many batches when they can hold 256 outputs or
        more (see the module docstring); 1 keeps one batch per ``batch_size`` outputs.
    workers
        Batches the executor runs at once (for the estimate only).
    cost
        The pilot's :class:`~dpkit.audit.throughput.CallCost` (see :meth:`pilot`), the rate the
        estimate uses until a phase has measured its own.
    clock
        Seconds (monotone), injectable for tests of the estimate.
    """

    def __init__(self, mechanism: Mechanism, entropy: int, executor: concurrent.futures.Executor | None = None,
                 batch_size: int = 1 << 16, progress: Callable[[int, int], None] | None = None,
                 batch_timeout: float | None = None, on_estimate: Callable[[float], None] | None = None, *,
                 min_tasks: int = 1, workers: int = 1, cost: CallCost | None = None,
                 clock: Callable[[], float] = time.perf_counter):
        self.mechanism = mechanism
        self.entropy = int(entropy)
        self.executor = executor
        self.batch_size = int(batch_size)
        self.min_tasks = max(int(min_tasks), 1)
        self.progress = progress
        self.batch_timeout = batch_timeout
        self.samples = 0
        self.planned = 0
        self.on_estimate = on_estimate
        self.clock = clock
        self.estimator = RunEstimator(cost, workers, clock)
        self.estimates: list[tuple[float, float, int]] = []  # (elapsed, predicted total, planned) of each estimate
        self.phases: list[tuple[float, int]] = []  # (elapsed, outputs drawn) at the start of each phase
        self._measured = False
        self._raw = 0  # requests of the current phase that return raw outputs (:meth:`sample`)
        self._block = self.batch_size  # the current phase's batch size

    def generator(self, key: tuple[int, ...]) -> np.random.Generator:
        """A generator seeded from the root seed and ``key`` alone (for draws that are not outputs,
        e.g. the confirmation's sample sizes); keys must differ from the batches' ``(phase, pair, side,
        batch)``."""
        return _generator(self.entropy, key)

    def block_size(self, n: int) -> int:
        """Outputs per batch of a request for ``n`` (see the module docstring)."""
        return min(self.batch_size, max(_MIN_BLOCK, -(-int(n) // self.min_tasks)))

    def pilot(self, database: Any, executor: concurrent.futures.Executor | None = None, others: Sequence[Any] = (),
              weights: Sequence[float] | None = None) -> CallCost:
        """Time the mechanism on ``database``, then once on each of ``others`` (the weights, one per
        input, ``database`` first, say how often the audit samples each), through the batches' own
        code path (generator seeding, output conversion) with
        :func:`~dpkit.audit.throughput.time_pilot`; the draws use a key no audit phase uses and are
        discarded; each call is held to ``batch_timeout`` and runs on ``executor`` if given (so that
        a crash of the mechanism kills a worker, not this process). Sets the estimate's cost."""
        sizes = iter(range(1 << 30))

        def on(data: Any) -> Callable[[int], Any]:
            def call(n: int) -> Any:
                args = (self.mechanism, data, n, self.entropy, (_PILOT_KEY, next(sizes)))
                if executor is not None:
                    try:
                        return self._result(executor.submit(_sample_task, *args), n)
                    except concurrent.futures.process.BrokenProcessPool:
                        raise self._died(executor) from None
                if self.batch_timeout is None:
                    return _sample_task(*args)
                return self._call_with_timeout(_sample_task, args)
            return call

        cost = time_pilot(on(database), clock=self.clock, others=[on(data) for data in others], weights=weights)
        self.estimator.cost = cost
        return cost

    def set_workers(self, executor: concurrent.futures.Executor | None, workers: int,
                    speedup: float | None = None) -> None:
        """Run later batches on ``executor``, ``workers`` at a time, ``speedup`` times as fast as one
        process (default ``workers``; see :func:`~dpkit.audit.throughput.parallel_speedup`)."""
        self.executor = executor
        self.estimator.workers = max(int(workers), 1)
        self.estimator.speedup = float(self.estimator.workers if speedup is None else speedup)

    def start_phase(self, n: int | None = None) -> None:
        """Mark the start of a phase whose per-output cost differs (selection, confirmation), whose
        requests are of about ``n`` outputs (default: ``batch_size``); report the pilot's estimate
        if the mechanism's cost is what sets the pace (:meth:`_pilot_paced`)."""
        block = self.block_size(n) if n is not None else self.batch_size
        self.estimator.start_phase(block)
        self.phases.append((self.clock() - self.estimator.started, self.samples))
        self._measured = False
        self._raw = 0
        self._block = block
        if self._pilot_paced():
            self._report(force=True)

    def _pilot_paced(self) -> bool:
        """Whether one output costs :data:`~dpkit.audit.throughput.SLOW_OUTPUT_SECONDS` or more: then the
        mechanism sets the pace and the pilot predicts the run; below it, the work done with the
        outputs (selecting and counting events) may dominate, and only a measured rate is reported."""
        cost = self.estimator.cost
        return cost is not None and cost.per_output_at(self._block) >= SLOW_OUTPUT_SECONDS

    def _measured_rate(self) -> bool:
        """Whether the phase's measured rate predicts the rest of it: ``2 × workers`` batches of a phase
        whose batches do all its work (:meth:`tally`, :meth:`count`). A phase that hands raw outputs to
        its caller (:meth:`sample`: the selection) does work between requests that its batches do
        not show and that differs from request to request, so only :meth:`_pilot_paced` reports there."""
        return self.estimator.measured and self._raw == 0

    def _begin_request(self, raw: bool) -> None:
        self._raw += int(raw)
        self._update()

    def _update(self) -> None:
        measured = self._measured_rate()
        newly = measured and not self._measured
        self._measured = measured
        if measured or self._pilot_paced():
            self._report(force=newly)

    def _report(self, force: bool = False) -> None:
        if self.planned <= 0:
            return
        total = self.estimator.total(self.planned - self.samples)
        if total is None:
            return
        elapsed = self.clock() - self.estimator.started
        last = self.estimates[-1] if self.estimates else None
        if force or last is None or (abs(total - last[1]) >= _REVISION * last[1] and elapsed - last[0] >= _QUIET):
            self.estimates.append((elapsed, total, self.planned))
            if self.on_estimate is not None:
                self.on_estimate(total)

    def _timed_out(self, n: int) -> AuditTimeoutError:
        return AuditTimeoutError(f"a batch of {n} mechanism outputs did not finish within batch_timeout="
                                 f"{self.batch_timeout:g} s (the mechanism may hang; raise the limit with "
                                 f"--batch-timeout / batch_timeout= if it is only slow)")

    def _result(self, future: concurrent.futures.Future, n: int) -> Any:
        """``future``'s result within ``batch_timeout``."""
        try:
            return future.result(timeout=self.batch_timeout)
        except concurrent.futures.TimeoutError:
            raise self._timed_out(n) from None

    @staticmethod
    def _died(executor: Any) -> WorkerDiedError:
        """The error for a broken pool: how its dead worker ended (its exit code or signal)."""
        return WorkerDiedError(f"died in a worker with {describe_exit(dead_worker_exit(pool_processes(executor)))}")

    def _call_with_timeout(self, fn: Callable[..., Any], args: tuple[Any, ...]) -> Any:
        box: dict[str, Any] = {}

        def target() -> None:
            try:
                box["result"] = fn(*args)
            except BaseException as error:  # re-raised in the calling thread
                box["error"] = error

        thread = threading.Thread(target=target, name="dpkit-audit-batch", daemon=True)
        thread.start()
        thread.join(self.batch_timeout)
        if thread.is_alive():
            raise self._timed_out(args[2])
        if "error" in box:
            raise box["error"]
        return box["result"]

    def _sizes(self, n: int, block: int | None = None) -> list[int]:
        block = self.block_size(n) if block is None else int(block)
        full, rest = divmod(n, block)
        return [block] * full + ([rest] if rest else [])

    def _run_iter(self, tasks: list[tuple[Callable[..., Any], tuple[Any, ...]]]) -> Iterator[Any]:
        """Results of ``tasks`` in order; with an executor at most ``_WINDOW`` tasks are in flight,
        so finished results never pile up in memory."""
        if self.executor is None:
            for fn, args in tasks:
                result = fn(*args) if self.batch_timeout is None else self._call_with_timeout(fn, args)
                self._tick(args[2])
                yield result
            return
        pending: collections.deque = collections.deque()
        queue = iter(tasks)
        try:
            for fn, args in itertools.islice(queue, _WINDOW):
                pending.append((args, self.executor.submit(fn, *args)))
            while pending:
                args, fut = pending.popleft()
                result = self._result(fut, args[2])
                for fn_next, args_next in itertools.islice(queue, 1):
                    pending.append((args_next, self.executor.submit(fn_next, *args_next)))
                self._tick(args[2])
                yield result
        except concurrent.futures.process.BrokenProcessPool:
            raise self._died(self.executor) from None
        finally:
            for _, fut in pending:
                fut.cancel()

    def _run(self, tasks: list[tuple[Callable[..., Any], tuple[Any, ...]]]) -> list[Any]:
        return list(self._run_iter(tasks))

    def _tick(self, n: int) -> None:
        self.samples += n
        self.estimator.batch_done(n)
        self._update()
        if self.progress is not None:
            self.progress(self.samples, max(self.planned, self.samples))

    def sample(self, database: Any, n: int, key: tuple[int, ...]) -> np.ndarray:
        """``n`` outputs on ``database`` as a ``(n, d)`` float array (batches concatenated)."""
        self._begin_request(raw=True)
        tasks = [(_sample_task, (self.mechanism, database, size, self.entropy, key + (b,)))
                 for b, size in enumerate(self._sizes(n))]
        parts = self._run(tasks)
        widths = {p.shape[1] for p in parts}
        if len(widths) != 1:
            raise ValueError(f"mechanism outputs must have a fixed shape, got widths {sorted(widths)} across batches")
        return np.vstack(parts)

    def tally(self, database: Any, n: int, key: tuple[int, ...], families: Any) -> Any:
        """Selection tally (:class:`~dpkit.audit.events.Tally`) of ``n`` fresh outputs, streamed
        batch by batch: memory does not grow with ``n``."""
        self._begin_request(raw=False)
        tasks = [(_tally_task, (self.mechanism, database, size, self.entropy, key + (b,), families))
                 for b, size in enumerate(self._sizes(n))]
        total = None
        for part in self._run_iter(tasks):
            total = part if total is None else total.merge(part)
        return total

    def count(self, database: Any, n: int, key: tuple[int, ...], events: Sequence[Any],
              first_batch: int = 0, block: int | None = None) -> np.ndarray:
        """How many of ``n`` fresh outputs fall in each event (streamed, batch by batch).

        Batches are numbered from ``first_batch`` so that a sequential audit can continue a
        stream where it stopped; it then fixes ``block`` (outputs per batch) for the whole
        stream, so that batch numbers are never reused.
        """
        self._begin_request(raw=False)
        sizes = self._sizes(n, block)
        tasks = [(_count_task, (self.mechanism, database, size, self.entropy, key + (first_batch + b,), tuple(events)))
                 for b, size in enumerate(sizes)]
        total = np.zeros(len(events), dtype=np.int64)
        for part in self._run_iter(tasks):
            total += part
        return total
