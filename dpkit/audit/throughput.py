"""How fast a mechanism runs under audit: a timed pilot, the workers it warrants, and run-time estimates.

A real DP library often makes one output per call (12 µs to 10 ms each), so an audit's default
10⁷ outputs can take from minutes to a day. Before sampling, :func:`time_pilot` calls the
mechanism exactly as the audit's batches do (same seeding, same conversion of the outputs) on
4, 16, 64, … outputs until one call takes :data:`PILOT_SECONDS`, and fits the cost of a call
of ``n`` outputs as ``per_call + per_output · n`` (:class:`CallCost`): the per-call overhead of
a library (building a generator, crossing into Rust or C) is measured, not assumed. A mechanism's
cost may depend on its input (a sum over the records, a loop until a condition holds), so every
other distinct input of the audit's pairs is timed too (:func:`average_over_inputs`) and the cost
is the mean of the inputs' fits, weighted by how often the audit samples each.

:func:`choose_workers` turns that cost into a worker count: process workers up to the cores
this process may use (``os.sched_getaffinity``) when one output costs at least
:data:`SLOW_OUTPUT_SECONDS` or the planned run would take at least :data:`PARALLEL_SECONDS`
serially; one worker otherwise (starting processes and pickling outputs would cost more than
they save).

:class:`RunEstimator` predicts the whole run's wall time: the time elapsed plus the outputs
still planned at the current phase's rate. Until a phase has finished ``2 × workers`` batches
the rate is the pilot's cost at the phase's batch size divided by the workers; from then on it
is the rate measured in the phase (which includes the event counting and the workers' real
speed-up). Its clock is injectable, so its arithmetic is tested without timing anything.

On a shared machine ``W`` workers do not run ``W`` times faster: :func:`parallel_speedup` takes
the other runnable processes (:func:`other_load`, from the 1-minute load average) into account,
assuming the scheduler shares the cores fairly between runnable processes. Until the phase has
measured it, the estimate assumes :func:`hedged_speedup`, the geometric mean of 1 and that
fair-share speed-up: the real one lies between the two (other work may start at any time), and
the geometric mean halves the worst ratio of estimate to truth on either side.
"""

from __future__ import annotations

import dataclasses
import math
import os
import time
from typing import Any, Callable, Sequence

__all__ = ["CallCost", "RunEstimator", "available_cores", "choose_workers", "hedged_speedup", "parallel_speedup",
           "other_load",
           "average_over_inputs", "time_pilot", "PILOT_SECONDS", "PARALLEL_SECONDS", "SLOW_OUTPUT_SECONDS"]

PILOT_SECONDS = 0.1
"""The pilot stops at the first call that takes at least this long (or at :data:`PILOT_MAX_OUTPUTS`)."""

PILOT_MAX_OUTPUTS = 1 << 16
"""Largest pilot call (a fast vectorised mechanism reaches it in about a millisecond)."""

SLOW_OUTPUT_SECONDS = 50e-6
"""One output this slow (including its share of the per-call overhead) makes the audit use workers."""

PARALLEL_SECONDS = 10.0
"""A planned run this long on one core makes the audit use workers, however fast one output is."""


@dataclasses.dataclass(frozen=True)
class CallCost:
    """Seconds one call of ``n`` outputs takes: ``per_call + per_output · n`` (fitted by :func:`time_pilot`).

    >>> cost = CallCost(per_call=0.002, per_output=1e-4, pilot_outputs=84, pilot_seconds=0.02)
    >>> round(cost.seconds(10_000, calls=10), 6), round(cost.per_output_at(100), 6)
    (1.02, 0.00012)
    """

    per_call: float
    per_output: float
    pilot_outputs: int
    pilot_seconds: float
    inputs: int = 1
    """Distinct inputs timed (the cost is their weighted mean)."""

    def seconds(self, outputs: int, calls: int) -> float:
        """Serial seconds for ``outputs`` outputs drawn in ``calls`` calls."""
        return self.per_call * calls + self.per_output * outputs

    def per_output_at(self, block: int) -> float:
        """Serial seconds per output when calls draw ``block`` outputs each."""
        return self.per_output + self.per_call / max(int(block), 1)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def time_pilot(call: Callable[[int], Any], clock: Callable[[], float] = time.perf_counter,
               target: float = PILOT_SECONDS, max_outputs: int = PILOT_MAX_OUTPUTS,
               others: Sequence[Callable[[int], Any]] = (), weights: Sequence[float] | None = None) -> CallCost:
    """Time ``call(n)`` for ``n = 4, 16, 64, …`` (after one untimed warm-up call of 1 output) until a
    call takes ``target`` seconds or ``n`` reaches ``max_outputs``, then time the last size once more
    and keep the faster of the two (a burst of other work on a shared machine slows one call, not
    the mechanism); fit ``per_call + per_output · n`` through the last two sizes.

    When the two points do not determine a positive slope (timer noise on a fast mechanism), the
    whole cost of the last call is charged per output, which overstates the cost, never understates it.

    ``others`` are the same mechanism on the audit's other inputs: :func:`average_over_inputs` times
    each and returns the mean of the inputs' fits under ``weights`` (one per input, ``call``'s
    first; default equal).

    >>> ticks = iter([0.0, 0.09, 0.09, 0.30, 0.30, 0.99, 0.99, 3.60, 3.60, 6.21])  # 0.05 s + 0.01 s/output
    >>> cost = time_pilot(lambda n: None, clock=lambda: next(ticks), target=1.0)
    >>> round(cost.per_call, 9), round(cost.per_output, 9), cost.pilot_outputs
    (0.05, 0.01, 597)
    """
    call(1)  # warm-up: imports, caches and first-call set-up are not the per-call cost
    points: list[tuple[int, float]] = []
    n = 4
    while True:
        began = clock()
        call(n)
        points.append((n, max(clock() - began, 0.0)))
        if (points[-1][1] >= target and len(points) >= 2) or n >= max_outputs:
            break
        n = min(4 * n, max_outputs)
    began = clock()
    call(n)
    again = max(clock() - began, 0.0)
    total_outputs = 1 + sum(p[0] for p in points) + n
    total_seconds = sum(p[1] for p in points) + again
    points[-1] = (n, min(points[-1][1], again))
    per_call, per_output = _fit_line(points)
    return average_over_inputs(CallCost(per_call, per_output, total_outputs, total_seconds), others, weights, clock,
                               target, n)


def _fit_line(points: list[tuple[int, float]]) -> tuple[float, float]:
    """``(per_call, per_output)`` through the last two ``(outputs, seconds)`` points, or the whole
    last call charged per output when they do not give a positive slope and intercept (or there is
    one point)."""
    n2, t2 = points[-1]
    if len(points) >= 2:
        n1, t1 = points[-2]
        slope = (t2 - t1) / (n2 - n1)
        if slope > 0.0 and t2 - slope * n2 >= 0.0:
            return t2 - slope * n2, slope
    return 0.0, t2 / n2


def average_over_inputs(cost: CallCost, others: Sequence[Callable[[int], Any]], weights: Sequence[float] | None,
                        clock: Callable[[], float], target: float, largest: int) -> CallCost:
    """``cost`` (fitted on the first input) averaged with the cost of each of ``others`` (the same
    mechanism on the audit's other inputs).

    Each of ``others`` is called on ``1, 4, 16, …`` outputs until a call takes ``target / 10``
    seconds or reaches the size that ``cost`` predicts to take that long on the first input (at
    most ``largest``), and at least twice; ``per_call + per_output · n`` is fitted through its last
    two calls as in :func:`time_pilot`, so an input costs a few tenths of the pilot at most even
    when it is far slower than the first. The result is the mean of the inputs' lines under
    ``weights`` (one per input, the first input first; default equal): the expected cost of a
    call on an input drawn as often as the audit samples it.

    >>> ticks = iter([0.0, 0.04, 0.04, 0.2])          # the second input: 0.04 s per output, 4 times the first
    >>> cost = average_over_inputs(CallCost(0.0, 0.01, 100, 1.0), [lambda n: None], None,
    ...                            lambda: next(ticks), target=1.0, largest=100)
    >>> round(cost.per_output, 9), cost.inputs
    (0.025, 2)
    """
    if not others:
        return cost
    weights = [1.0] * (len(others) + 1) if weights is None else [float(w) for w in weights]
    if len(weights) != len(others) + 1 or min(weights) < 0.0 or sum(weights) <= 0.0:
        raise ValueError(f"weights must be {len(others) + 1} non-negative numbers, not all 0, got {weights!r}")
    goal = target / 10.0
    size = largest if cost.per_output <= 0.0 else math.ceil((goal - cost.per_call) / cost.per_output)
    size = min(max(size, 1), largest)
    lines, outputs, seconds = [(cost.per_call, cost.per_output)], 0, 0.0
    for other in others:
        points: list[tuple[int, float]] = []
        n = 1
        while True:
            began = clock()
            other(n)
            points.append((n, max(clock() - began, 0.0)))
            outputs, seconds = outputs + n, seconds + points[-1][1]
            if len(points) >= 2 and (points[-1][1] >= goal or n >= size):
                break
            n = min(4 * n, size) if n < size else 4 * n
        lines.append(_fit_line(points))
    total = sum(weights)
    per_call = sum(w * line[0] for w, line in zip(weights, lines)) / total
    per_output = sum(w * line[1] for w, line in zip(weights, lines)) / total
    return CallCost(per_call, per_output, cost.pilot_outputs + outputs, cost.pilot_seconds + seconds, len(lines))


def available_cores() -> int:
    """Cores this process may run on (``os.sched_getaffinity``, else ``os.cpu_count()``)."""
    try:
        return max(len(os.sched_getaffinity(0)), 1)
    except AttributeError:  # pragma: no cover - not Linux
        return max(os.cpu_count() or 1, 1)


def other_load() -> float:
    """Runnable processes besides this one: the 1-minute load average less one (0 where unknown)."""
    try:
        return max(os.getloadavg()[0] - 1.0, 0.0)
    except (AttributeError, OSError):  # pragma: no cover - not Unix
        return 0.0


def parallel_speedup(workers: int, cores: int, others: float = 0.0) -> float:
    """Throughput of ``workers`` busy processes over that of one, on ``cores`` cores shared fairly
    with ``others`` runnable processes: ``min(W, c·W/(W + o)) / min(1, c/(1 + o))``.

    >>> parallel_speedup(2, 2), parallel_speedup(2, 2, others=2.0), parallel_speedup(4, 2)
    (2.0, 1.5, 2.0)
    """
    w, c, o = max(int(workers), 1), max(int(cores), 1), max(float(others), 0.0)
    return min(w, c * w / (w + o)) / min(1.0, c / (1.0 + o))


def hedged_speedup(workers: int, cores: int, others: float = 0.0) -> float:
    """``√(parallel_speedup(...))``: the speed-up an estimate assumes before measuring it.

    >>> hedged_speedup(4, 4)
    2.0
    """
    return math.sqrt(parallel_speedup(workers, cores, others))


def choose_workers(cost: CallCost, planned_outputs: int, block: int, cores: int) -> tuple[int, str]:
    """Worker processes for an audit of ``planned_outputs`` outputs in calls of ``block``, and why.

    >>> slow = CallCost(0.0, 1e-3, 100, 0.1)
    >>> choose_workers(slow, 10_000, 256, cores=4)[0], choose_workers(slow, 10_000, 256, cores=1)[0]
    (4, 1)
    >>> choose_workers(CallCost(0.0, 1e-8, 65537, 0.001), 10**7, 65536, cores=4)[0]
    1
    """
    per_output = cost.per_output_at(block)
    serial = per_output * planned_outputs
    if cores <= 1:
        return 1, "one core available"
    if per_output >= SLOW_OUTPUT_SECONDS:
        return cores, (f"one output costs {per_output * 1e6:.3g} us (>= {SLOW_OUTPUT_SECONDS * 1e6:g} us): "
                       f"{cores} worker processes")
    if serial >= PARALLEL_SECONDS:
        return cores, (f"the mechanism's share of the run would take {serial:.3g} s on one core "
                       f"(>= {PARALLEL_SECONDS:g} s): {cores} worker processes")
    return 1, (f"one output costs {per_output * 1e6:.3g} us and the mechanism's share of the run "
               f"{serial:.3g} s: one process")


class RunEstimator:
    """Predicted total wall time of a run (see the module docstring).

    Parameters
    ----------
    cost
        The pilot's :class:`CallCost` (``None``: no prediction until a phase has a measured rate).
    workers
        Batches run at once.
    speedup
        Expected throughput of the ``workers`` over one process (default ``workers``; see
        :func:`parallel_speedup`), used with the pilot's rate.
    clock
        Seconds (monotone); injectable for tests.

    Examples
    --------
    >>> now = [10.0]
    >>> est = RunEstimator(CallCost(0.0, 1e-3, 100, 0.1), workers=2, clock=lambda: now[0])
    >>> est.start_phase(block=100)
    >>> est.total(remaining=10_000)            # pilot: 10 s of mechanism time on 2 workers
    5.0
    >>> now[0] = 12.0; est.batch_done(200); est.batch_done(200); est.batch_done(200); est.batch_done(200)
    >>> est.total(remaining=9_200)             # measured: 800 outputs in 2 s, 9 200 to go
    25.0
    """

    def __init__(self, cost: CallCost | None, workers: int = 1, clock: Callable[[], float] = time.perf_counter,
                 speedup: float | None = None):
        self.cost = cost
        self.workers = max(int(workers), 1)
        self.speedup = float(self.workers if speedup is None else speedup)
        self.clock = clock
        self.started = clock()
        self._phase = (self.started, 0, 0)  # (start time, outputs done, batches done) in the phase
        self._block = 1

    def start_phase(self, block: int) -> None:
        """A new phase (its batches of ``block`` outputs may cost differently per output)."""
        self._phase = (self.clock(), 0, 0)
        self._block = max(int(block), 1)

    def batch_done(self, outputs: int) -> None:
        since, done, batches = self._phase
        self._phase = (since, done + int(outputs), batches + 1)

    @property
    def measured(self) -> bool:
        """Whether the current phase has finished enough batches (``2 × workers``) to give its own rate."""
        return self._phase[2] >= 2 * self.workers

    def rate(self) -> float | None:
        """Wall seconds per output in the current phase (measured, else the pilot's), or ``None``."""
        since, done, _ = self._phase
        if self.measured and done > 0:
            return (self.clock() - since) / done
        if self.cost is None:
            return None
        return self.cost.per_output_at(self._block) / max(self.speedup, 1e-9)

    def total(self, remaining: int) -> float | None:
        """Elapsed seconds plus ``remaining`` outputs at :meth:`rate` (``None`` without a rate)."""
        rate = self.rate()
        if rate is None or not math.isfinite(rate):
            return None
        return (self.clock() - self.started) + rate * max(int(remaining), 0)
