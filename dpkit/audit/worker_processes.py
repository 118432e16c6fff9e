"""The worker processes of an audit's pool: how one of them ended, and stopping all of them.

A :class:`~concurrent.futures.ProcessPoolExecutor` whose worker dies (a signal, ``os._exit``, a
crash in C code) only says that "a process terminated abruptly"; :func:`dead_worker_exit` finds
which exit code or signal ended it, so the error can name it (:func:`describe_exit`). A pool
whose worker hangs cannot be shut down by the executor (its exit handler joins the workers
for ever), so :func:`stop_processes` terminates them, kills those that ignore ``SIGTERM`` and
reaps them all.
"""

from __future__ import annotations

import signal
import time
from typing import Any, Iterable

__all__ = ["STOP_GRACE_SECONDS", "dead_worker_exit", "describe_exit", "pool_processes", "stop_processes"]

STOP_GRACE_SECONDS = 2.0
"""Seconds a worker has to exit after ``SIGTERM`` before it is killed with ``SIGKILL``."""


def describe_exit(exitcode: int | None) -> str:
    """How a process ended, from :attr:`multiprocessing.Process.exitcode` (``-N``: signal ``N``).

    >>> describe_exit(-11), describe_exit(3), describe_exit(None)
    ('signal SIGSEGV', 'exit code 3', 'an unknown exit code')
    """
    if exitcode is None:
        return "an unknown exit code"
    if exitcode < 0:
        try:
            return f"signal {signal.Signals(-exitcode).name}"
        except ValueError:
            return f"signal {-exitcode}"
    return f"exit code {exitcode}"


def pool_processes(executor: Any) -> list[Any]:
    """The worker processes of a :class:`~concurrent.futures.ProcessPoolExecutor` (``[]`` for any
    other executor, or once the pool has shut down)."""
    return list((getattr(executor, "_processes", None) or {}).values())


def dead_worker_exit(processes: Iterable[Any], wait: float = STOP_GRACE_SECONDS) -> int | None:
    """The exit code of the worker that died, or ``None`` if none has an exit code within ``wait`` s.

    Once one worker dies the executor terminates the others (``SIGTERM``), so an exit by another
    cause is preferred; ``-SIGTERM`` is returned only when every dead worker ended that way.
    """
    processes = list(processes)
    deadline = time.monotonic() + wait
    while True:
        codes = [p.exitcode for p in processes]
        own = [c for c in codes if c is not None and c != -signal.SIGTERM]
        if own:
            return own[0]
        if all(c is not None for c in codes) or time.monotonic() >= deadline:
            return next((c for c in codes if c is not None), None)
        time.sleep(0.02)


def stop_processes(processes: Iterable[Any], grace: float = STOP_GRACE_SECONDS) -> None:
    """Terminate ``processes``, kill those still alive after ``grace`` seconds, and reap them all."""
    processes = list(processes)
    for process in processes:
        if process.is_alive():
            process.terminate()
    deadline = time.monotonic() + grace
    for process in processes:
        process.join(max(deadline - time.monotonic(), 0.0))
    for process in processes:
        if process.is_alive():
            process.kill()
            process.join(grace)
