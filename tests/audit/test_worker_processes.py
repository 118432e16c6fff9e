"""A worker process of an audit that dies is an error naming how it died; stopping a pool's workers
reaps them all, including one that ignores ``SIGTERM``."""

from __future__ import annotations

import concurrent.futures
import multiprocessing
import os
import signal
import time

import numpy as np
import pytest

from dpkit.audit.runner import Runner, WorkerDiedError
from dpkit.audit.worker_processes import pool_processes, stop_processes

pytestmark = pytest.mark.skipif("fork" not in multiprocessing.get_all_start_methods(), reason="needs fork")


def exits_3(db, n, rng):
    os._exit(3)


def count(db, n, rng):
    return np.sum(db) + rng.laplace(size=n)


def ignores_sigterm(ready):
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    ready.set()
    time.sleep(3600)


def test_a_worker_that_exits_during_a_batch_is_a_worker_died_error_with_its_exit_code():
    pool = concurrent.futures.ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("fork"))
    try:
        with pytest.raises(WorkerDiedError, match="^died in a worker with exit code 3$"):
            Runner(exits_3, 0, pool, batch_timeout=60).sample([0.0, 1.0], 1000, (0,))
    finally:
        stop_processes(pool_processes(pool))
        pool.shutdown(wait=True)


def test_the_pilot_runs_on_the_executor_it_is_given():
    pool = concurrent.futures.ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("fork"))
    try:
        with pytest.raises(WorkerDiedError, match="exit code 3"):
            Runner(exits_3, 0, batch_timeout=60).pilot([0.0, 1.0], pool)
    finally:
        pool.shutdown(wait=True)
    assert Runner(count, 0).pilot([0.0, 1.0], None).per_output > 0.0  # without one, in this process


def test_stop_processes_kills_a_worker_that_ignores_sigterm_and_reaps_it():
    context = multiprocessing.get_context("fork")
    ready = context.Event()
    stubborn = context.Process(target=ignores_sigterm, args=(ready,))
    stubborn.start()
    assert ready.wait(30)
    stop_processes([stubborn], grace=0.5)
    assert not stubborn.is_alive() and stubborn.exitcode == -signal.SIGKILL
