"""Throughput of an audit: the pilot's cost fit, run-time estimates, worker choice, and bit-identical parallel runs.

Nothing here measures time: a mechanism "costs" ``per_call + per_output · n`` seconds by advancing an
injected clock (after a fixed amount of numpy work), so the estimator's arithmetic is checked exactly.
"""

from __future__ import annotations

import concurrent.futures
import json

import numpy as np
import pytest

from dpkit.audit import audit
from dpkit.audit import catalogue as C
from dpkit.audit import workers as W
from dpkit.audit.pairs import resolve_pairs
from dpkit.audit.runner import Runner
from dpkit.audit.throughput import CallCost, RunEstimator, choose_workers, parallel_speedup, time_pilot
from dpkit.cli.main import main


class VirtualClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class VirtualCostMechanism:
    """A Laplace count whose every call advances ``clock`` by ``per_call + per_output · n`` seconds
    (after a fixed amount of numpy work per output)."""

    def __init__(self, clock: VirtualClock, per_call: float, per_output: float):
        self.clock, self.per_call, self.per_output = clock, per_call, per_output
        self.work = np.linspace(0.0, 1.0, 64)

    def __call__(self, db, n, rng):
        for _ in range(min(n, 8)):
            np.cumsum(self.work)
        self.clock.now += self.per_call + self.per_output * n
        return np.sum(db) + rng.laplace(scale=1.0, size=n)


@pytest.mark.parametrize("per_call,per_output", [(0.0, 1e-3), (5e-3, 1e-5), (2e-4, 2e-4)])
def test_pilot_recovers_the_cost_per_call_and_per_output(per_call, per_output):
    clock = VirtualClock()
    runner = Runner(VirtualCostMechanism(clock, per_call, per_output), 0, clock=clock)
    cost = runner.pilot([0.0, 1.0])
    assert cost.per_call == pytest.approx(per_call, rel=1e-6, abs=1e-12)
    assert cost.per_output == pytest.approx(per_output, rel=1e-6)
    assert cost.pilot_seconds >= 0.1 or cost.pilot_outputs > 1 << 16  # it stops at a 0.1 s call or 2^16 outputs


def test_pilot_never_understates_a_noisy_fit():
    # the second size is faster than the first (timer noise): the whole last call is charged per output
    ticks = iter([0.0, 0.5, 0.5, 0.6, 0.6, 0.75])
    cost = time_pilot(lambda n: None, clock=lambda: next(ticks), target=0.05)
    assert cost.per_call == 0.0 and cost.per_output == pytest.approx(0.1 / 16)


class Positive:
    """An event for :meth:`Runner.count`: the first output coordinate is positive."""

    def evaluate(self, outputs, cache):
        return outputs[:, 0] > 0


def test_pilot_keeps_the_faster_of_two_timings_of_its_last_size():
    # n = 4 takes 0.04 s, n = 16 takes 0.32 s once (a burst of other work) and 0.16 s the second time
    ticks = iter([0.0, 0.04, 0.04, 0.36, 0.36, 0.52])
    cost = time_pilot(lambda n: None, clock=lambda: next(ticks), target=0.1)
    assert cost.per_output == pytest.approx(0.01) and cost.per_call == pytest.approx(0.0, abs=1e-12)


@pytest.mark.parametrize("per_call,per_output", [(0.0, 1e-3), (5e-3, 1e-5), (2e-4, 2e-4)])
def test_every_estimate_of_a_slow_run_is_within_twice_the_actual_time(per_call, per_output):
    # a selection-like phase (raw outputs) and a confirmation-like phase (counts), whose requests cut into
    # different batch sizes (the per-call overhead weighs differently in each): every estimate the runner
    # reports is compared with the run's actual time
    clock = VirtualClock()
    runner = Runner(VirtualCostMechanism(clock, per_call, per_output), 0, batch_size=1 << 12, min_tasks=16,
                    clock=clock)
    runner.pilot([0.0, 1.0])
    runner.planned = 4 * 3_000 + 2 * 40_000
    runner.start_phase(3_000)
    for i in range(4):
        runner.sample([0.0, 1.0], 3_000, (9, i))
    runner.start_phase(40_000)
    for i in range(2):
        runner.count([0.0, 1.0], 40_000, (8, i), [Positive()])
    actual = clock.now - runner.estimator.started
    assert runner.samples == runner.planned and runner.estimates
    for _, predicted, planned in runner.estimates:
        assert planned == runner.planned and 0.5 * actual <= predicted <= 2.0 * actual
    # the pilot predicts only where the mechanism sets the pace (>= 50 us per output); otherwise the first
    # estimate waits for the counting phase's own rate
    paced = runner.estimator.cost.per_output_at(256) >= 50e-6
    first = runner.estimates[0][0]
    assert (first < 4 * 3_000 * per_output) == paced


def test_estimator_divides_the_pilot_rate_by_the_speedup_then_measures():
    clock = VirtualClock()
    est = RunEstimator(CallCost(1e-3, 1e-4, 100, 0.1), workers=2, clock=clock, speedup=1.5)
    est.start_phase(block=100)
    assert est.total(10_000) == pytest.approx(10_000 * (1e-4 + 1e-3 / 100) / 1.5)
    for _ in range(3):  # 3 of the 2 × 2 batches that give the phase its own rate
        clock.now += 0.1
        est.batch_done(100)
    assert not est.measured
    clock.now += 0.1
    est.batch_done(100)
    assert est.measured and est.total(1_000) == pytest.approx(0.4 + 1_000 * 0.4 / 400)


def test_parallel_speedup_under_fair_sharing():
    assert parallel_speedup(1, 8) == 1.0 and parallel_speedup(4, 4) == 4.0
    # two busy processes elsewhere on two cores: one process gets 2/3 of a core, two get a whole one
    assert parallel_speedup(2, 2, others=2.0) == pytest.approx(1.0 / (2.0 / 3.0))


def test_choose_workers_uses_all_cores_for_a_slow_call_only():
    slow = CallCost(0.0, 60e-6, 100, 0.1)
    fast = CallCost(0.0, 1e-7, 1 << 16, 0.01)
    assert choose_workers(slow, 10_000, 2048, cores=3)[0] == 3
    assert choose_workers(fast, 10**6, 2048, cores=3)[0] == 1
    assert choose_workers(fast, 10**9, 2048, cores=3)[0] == 3  # 100 s of mechanism time on one core
    assert choose_workers(slow, 10_000, 2048, cores=1)[0] == 1


def test_a_slow_pilot_starts_workers_and_an_unpicklable_mechanism_stays_in_process(monkeypatch):
    monkeypatch.setattr(W, "available_cores", lambda: 2)
    pairs = resolve_pairs([([0.0, 1.0], [1.0, 1.0])])
    clock = VirtualClock()
    runner = Runner(VirtualCostMechanism(clock, 0.0, 1e-3), 0, clock=clock)
    pool = W.start_workers(runner, pairs, None, None, planned=100_000, block=2048)
    try:
        assert pool.count == 2 and isinstance(runner.executor, concurrent.futures.ProcessPoolExecutor)
        assert pool.notes() and "2 worker processes" in pool.notes()[0]
    finally:
        pool.close()
    slow = VirtualCostMechanism(VirtualClock(), 0.0, 1e-3)
    closure = Runner(lambda db, n, rng: slow(db, n, rng), 0, clock=slow.clock)
    monkeypatch.setattr(W, "_fork_available", lambda: False)  # a platform that cannot fork: one process
    single = W.start_workers(closure, pairs, None, None, planned=100_000, block=2048)
    assert single.count == 1 and closure.executor is None and "cannot be pickled" in single.notes()[0]
    pinned = W.start_workers(Runner(C.Entry(C.noisy_sum, 1.0), 0), pairs, 1, None, planned=10**8, block=2048)
    assert pinned.count == 1 and pinned.reason == "workers=1 (pinned)"


class InputCostMechanism:
    """A Laplace count whose call advances ``clock`` by ``per_call[D[0]] + per_output[D[0]] · n`` seconds:
    its cost depends on the input."""

    def __init__(self, clock: VirtualClock, per_output: dict[float, float], per_call: dict[float, float] | None = None):
        self.clock, self.per_output, self.per_call = clock, per_output, per_call or {}

    def __call__(self, db, n, rng):
        self.clock.now += self.per_call.get(float(db[0]), 0.0) + self.per_output[float(db[0])] * n
        return np.sum(db) + rng.laplace(scale=1.0, size=n)


@pytest.mark.parametrize("slow_call", [0.0, 5e-3])
def test_the_pilot_times_every_input_and_predicts_their_weighted_mean_cost(slow_call):
    # D = [0, 1] costs 1 us per output, D' = [1, 1] 1 ms (and slow_call per call): D alone predicts a
    # thousandth of the cost; the mean of the two lines is the cost of a call on an input drawn as the audit does
    clock = VirtualClock()
    runner = Runner(InputCostMechanism(clock, {0.0: 1e-6, 1.0: 1e-3}, {1.0: slow_call}), 0, clock=clock)
    cost = runner.pilot([0.0, 1.0], others=[[1.0, 1.0]], weights=[1, 1])
    assert cost.inputs == 2 and cost.per_output == pytest.approx((1e-6 + 1e-3) / 2, rel=1e-9)
    assert cost.per_call == pytest.approx(slow_call / 2, rel=1e-9, abs=1e-12)
    weighted = runner.pilot([0.0, 1.0], others=[[1.0, 1.0]], weights=[3, 1])  # the audit samples D 3 times as often
    assert weighted.per_output == pytest.approx((3 * 1e-6 + 1e-3) / 4, rel=1e-9)
    assert weighted.per_call == pytest.approx(slow_call / 4, rel=1e-9, abs=1e-12)


def test_an_input_dependent_cost_starts_workers(monkeypatch):
    # 1 000 outputs: 1 ms of work on D alone (one process), 0.5 s at the mean of D and D' (>= 50 us per output)
    monkeypatch.setattr(W, "available_cores", lambda: 2)
    pairs = resolve_pairs([([0.0, 1.0], [1.0, 1.0])])
    clock = VirtualClock()
    runner = Runner(InputCostMechanism(clock, {0.0: 1e-6, 1.0: 1e-3}), 0, clock=clock)
    pool = W.start_workers(runner, pairs, None, None, planned=1_000, block=256)
    try:
        assert pool.count == 2 and pool.cost.inputs == 2
    finally:
        pool.close()


def test_workers_give_bit_identical_results():
    # batches are seeded by what they sample (phase, pair, input, batch), never by the worker
    kwargs = dict(claimed_epsilon=1.0, samples=60_000, rng=7)
    serial = audit(C.Entry(C.noisy_sum_half, 1.0), "statdp-one", workers=1, **kwargs)
    parallel = audit(C.Entry(C.noisy_sum_half, 1.0), "statdp-one", workers=2, **kwargs)
    assert parallel.throughput["workers"] == 2 and serial.throughput["workers"] == 1
    for field in ("epsilon_lower_bound", "p_value", "witness", "samples", "method"):
        assert getattr(parallel, field) == getattr(serial, field)


def test_a_closure_runs_on_forked_workers_with_identical_results():
    # a closure cannot be pickled: the workers are forked after it is registered and inherit it
    def closure(db, n, rng):
        return np.sum(db) + rng.laplace(scale=0.5, size=n)

    kwargs = dict(claimed_epsilon=1.0, samples=40_000, rng=3)
    serial = audit(closure, "statdp-one", workers=1, **kwargs)
    forked = audit(closure, "statdp-one", workers=2, **kwargs)
    assert forked.throughput["workers"] == 2 and "inherit" in forked.throughput["reason"]
    assert (forked.epsilon_lower_bound, forked.p_value, forked.witness) == (serial.epsilon_lower_bound,
                                                                            serial.p_value, serial.witness)
    assert not W._INHERITED  # released when the audit ends


def test_sequential_stream_never_reuses_a_batch_seed():
    # rounds continue one stream: every batch number of a side is drawn once, with one batch size
    seen = []

    class Recorder(Runner):
        def count(self, database, n, key, events, first_batch=0, block=None):
            seen.append((key, first_batch, n, block))
            return super().count(database, n, key, events, first_batch, block)

    import dpkit.audit.api as api
    original = api.Runner
    api.Runner = Recorder
    try:
        audit(C.Entry(C.noisy_sum, 1.0), "statdp-one", claimed_epsilon=1.0, samples=200_000, rng=0, sequential=True)
    finally:
        api.Runner = original
    rounds = [(key, first, n, block) for key, first, n, block in seen if block is not None]
    assert rounds and len({block for *_, block in rounds}) == 1
    for side in {key for key, *_ in rounds}:
        spans = [(first, first + -(-n // block)) for key, first, n, block in rounds if key == side]
        assert all(a_end <= b_start for (_, a_end), (b_start, _) in zip(spans, spans[1:]))


def test_cli_power_sizes_auto_and_needs_it(capsys):
    argv = ["audit", "--mechanism", "laplace", "--mechanism-epsilon", "2", "--claimed-epsilon", "1",
            "--samples", "auto", "--json", "--workers", "1"]
    assert main(argv + ["--power", "0.95"]) == 3
    out = json.loads(capsys.readouterr().out)
    plan = out["sample_plan"]
    assert plan["target_power"] == 0.95 and plan["power"] >= 0.95 and plan["reached"]
    assert plan["samples_per_input"] == out["witness"]["samples_per_input"]
    assert main(["audit", "--mechanism", "laplace", "--claimed-epsilon", "1", "--samples", "1000",
                 "--power", "0.9"]) == 2
    assert "--power applies to --samples auto only" in capsys.readouterr().err
