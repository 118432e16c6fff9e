"""Batched, seeded, parallel sampling of a mechanism, with streaming event counts.

Each batch of ``batch_size`` outputs gets its own generator seeded by
``SeedSequence(entropy, spawn_key=(phase, pair, side, batch))``: the key names *what* is
sampled, never which worker samples it, so a given seed gives identical results serially, on
a process pool or on a Dask cluster. Confirmation batches return only event counts, so
10⁸ outputs never sit in memory.
"""

from __future__ import annotations

import concurrent.futures
from typing import Any, Callable, Sequence

import numpy as np

from dpkit.audit.events import as_outputs

__all__ = ["Runner", "ScalarAdapter", "from_scalar"]

Mechanism = Callable[[Any, int, np.random.Generator], Any]


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


def _sample_task(mechanism: Mechanism, database: Any, n: int, entropy: int, key: tuple[int, ...]) -> np.ndarray:
    return as_outputs(mechanism(database, n, _generator(entropy, key)), n)


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
    """

    def __init__(self, mechanism: Mechanism, entropy: int, executor: concurrent.futures.Executor | None = None,
                 batch_size: int = 1 << 16, progress: Callable[[int, int], None] | None = None):
        self.mechanism = mechanism
        self.entropy = int(entropy)
        self.executor = executor
        self.batch_size = int(batch_size)
        self.progress = progress
        self.samples = 0
        self.planned = 0

    def _sizes(self, n: int) -> list[int]:
        full, rest = divmod(n, self.batch_size)
        return [self.batch_size] * full + ([rest] if rest else [])

    def _run(self, tasks: list[tuple[Callable[..., Any], tuple[Any, ...]]]) -> list[Any]:
        results: list[Any] = []
        if self.executor is None:
            for fn, args in tasks:
                results.append(fn(*args))
                self._tick(args[2])
            return results
        futures = [self.executor.submit(fn, *args) for fn, args in tasks]
        for (fn, args), fut in zip(tasks, futures):
            results.append(fut.result())
            self._tick(args[2])
        return results

    def _tick(self, n: int) -> None:
        self.samples += n
        if self.progress is not None:
            self.progress(self.samples, max(self.planned, self.samples))

    def sample(self, database: Any, n: int, key: tuple[int, ...]) -> np.ndarray:
        """``n`` outputs on ``database`` as a ``(n, d)`` float array (batches concatenated)."""
        tasks = [(_sample_task, (self.mechanism, database, size, self.entropy, key + (b,)))
                 for b, size in enumerate(self._sizes(n))]
        parts = self._run(tasks)
        widths = {p.shape[1] for p in parts}
        if len(widths) != 1:
            raise ValueError(f"mechanism outputs must have a fixed shape, got widths {sorted(widths)} across batches")
        return np.vstack(parts)

    def count(self, database: Any, n: int, key: tuple[int, ...], events: Sequence[Any],
              first_batch: int = 0) -> np.ndarray:
        """How many of ``n`` fresh outputs fall in each event (streamed, batch by batch).

        Batches are numbered from ``first_batch`` so that a sequential audit can continue a
        stream where it stopped.
        """
        sizes = self._sizes(n)
        tasks = [(_count_task, (self.mechanism, database, size, self.entropy, key + (first_batch + b,), tuple(events)))
                 for b, size in enumerate(sizes)]
        parts = self._run(tasks)
        return np.sum(parts, axis=0) if parts else np.zeros(len(events), dtype=np.int64)
