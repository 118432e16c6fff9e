"""BLAS threading for the training loops.

The distributed algorithms do many small matrix products, for which BLAS threads only add
contention (measured on a loaded 2-core machine: a 5222×104 matrix-vector product took 43 ms
threaded and 1 ms single-threaded), so training runs with one BLAS thread.
"""

from __future__ import annotations

from threadpoolctl import threadpool_limits


def single_threaded_blas() -> threadpool_limits:
    """Limit BLAS to one thread: inside a ``with`` block, or from the call on when not used as one."""
    return threadpool_limits(limits=1, user_api="blas")
