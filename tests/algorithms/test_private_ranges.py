"""Column ranges from the training rows, with noise charged to the run (substrate/private_ranges.py)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from hypothesis.extra.numpy import arrays
from statsmodels.stats.proportion import proportion_confint

from dpkit.accounting.events import GaussianEvent
from dpkit.accounting.gdp import gdp_mu_for
from dpkit.algorithms import train
from dpkit.algorithms.registry import ALGORITHMS
from dpkit.algorithms.substrate import private_ranges as R
from dpkit.algorithms.substrate.budget import Budget, calibrate_noise
from dpkit.algorithms.substrate.data import Dataset, normalise
from dpkit.mechanisms.ledger import PrivacyLedger

FINITE = st.floats(-1e12, 1e12, allow_nan=False, allow_infinity=False)


@settings(max_examples=60, deadline=None)
@given(arrays(float, st.tuples(st.integers(1, 8), st.integers(1, 4)), elements=FINITE), st.integers(0, 7),
       arrays(float, 4, elements=FINITE))
def test_one_row_moves_one_count_per_column(X, row, replacement):
    """The sensitivity the release is charged at: replacing a row changes 2 counts by 1 in each column
    whose bucket changes (L2 distance <= sqrt(2d)); removing it changes d counts (sqrt(d))."""
    row %= X.shape[0]
    counts = R.bucket_counts(X)
    assert counts.sum(axis=1).tolist() == [X.shape[0]] * X.shape[1]
    other = X.copy()
    other[row] = replacement[:X.shape[1]]
    assert np.linalg.norm(R.bucket_counts(other) - counts) <= math.sqrt(2 * X.shape[1]) + 1e-12
    if X.shape[0] > 1:
        assert np.linalg.norm(R.bucket_counts(np.delete(X, row, axis=0)) - counts) == pytest.approx(math.sqrt(X.shape[1]))


@settings(max_examples=200, deadline=None)
@given(FINITE)
def test_every_value_lies_in_its_bucket(value):
    """The bucket's edges hold the value exactly (frexp, no logarithm rounding), up to the grid's ends."""
    lower, upper = R._edges()
    b = int(np.argmax(R.bucket_counts(np.array([[value]]))[0]))
    if abs(value) < 2.0 ** R.GRID_LOW:
        assert b == R.MAGNITUDES and lower[b] == upper[b] == 0.0
    elif abs(value) <= 2.0 ** (R.GRID_LOW + R.MAGNITUDES):
        assert lower[b] < value <= upper[b] if value > 0 else lower[b] <= value < upper[b]
    else:  # beyond 2**40: the last bucket
        assert b in (0, 2 * R.MAGNITUDES)
    for power in (-3, 0, 1, 10):  # exact powers of two are the top of their bucket
        top = int(np.argmax(R.bucket_counts(np.array([[2.0 ** power]]))[0]))
        assert upper[top] == 2.0 ** power


def test_the_release_is_charged_at_its_share_and_sensitivity():
    """One Gaussian release on the one-agent ledger the budget carries: sensitivity sqrt(2d) (replace-one)
    or sqrt(d) (add/remove), and GDP mu_r = sqrt(share)·mu of the whole budget."""
    X = np.random.default_rng(0).uniform(0, 5, (400, 3))
    for relation, factor in (("replace-one", 2), ("add-remove", 1)):
        budget = Budget(1.0, 1e-5, relation)
        ranges = R.estimate_ranges(X, budget, rng=0)
        [(event, count)] = ranges.budget.spent_before.entries(0)
        assert count == 1 and isinstance(event, GaussianEvent) and event.sensitivity == pytest.approx(math.sqrt(factor * 3))
        assert event.sensitivity / event.sigma == pytest.approx(math.sqrt(R.RANGE_SHARE) * gdp_mu_for(1.0, 1e-5))
        assert ranges.budget.epsilon == 1.0 and budget.spent_before is None  # the caller's budget is untouched
        with pytest.raises(ValueError, match="estimate ranges once"):
            R.estimate_ranges(X, ranges.budget, rng=0)


def test_calibration_and_every_agent_ledger_include_the_release():
    """The run's noise is calibrated on release + run, so less is left for the run; each agent's ledger
    starts with the release."""
    budget = R.estimate_ranges(np.ones((100, 2)), Budget(1.0, 1e-5), rng=0).budget
    run = lambda z: GaussianEvent(z)  # noqa: E731
    assert calibrate_noise(run, budget).parameter > calibrate_noise(run, Budget(1.0, 1e-5)).parameter
    ledger = budget.ledger(3)
    assert [ledger.entries(a) for a in range(3)] == [budget.spent_before.entries(0)] * 3
    with pytest.raises(TypeError, match="spent_before must be a one-agent PrivacyLedger"):
        Budget(1.0, 1e-5, spent_before=PrivacyLedger(2))
    with pytest.raises(ValueError, match="add-remove"):
        Budget(1.0, 1e-5, "add-remove", spent_before=PrivacyLedger(1))
    with pytest.raises(TypeError, match="pooled must be a one-agent PrivacyLedger"):
        PrivacyLedger(2, pooled=PrivacyLedger(3))


def test_ranges_cover_the_bulk_within_a_factor_of_two():
    """Columns whose buckets hold many more rows than the threshold get a range that covers their values
    and is at most twice as wide at each end; an indicator keeps [-1, 1]; a rare column keeps [-1, 1]."""
    gen = np.random.default_rng(3)
    n = 20000
    X = np.column_stack([gen.uniform(17, 90, n), gen.integers(0, 2, n), gen.uniform(-300, -40, n),
                         np.where(gen.uniform(size=n) < 0.001, 5e4, 0.0)])
    ranges = R.estimate_ranges(X, Budget(1.0, 1e-5), rng=4)
    assert 17 / 2 <= ranges.low[0] <= 17 and 90 <= ranges.high[0] <= 2 * 90
    assert (ranges.low[1], ranges.high[1]) == (-1.0, 1.0)
    assert -2 * 300 <= ranges.low[2] <= -300 and -40 <= ranges.high[2] <= -40 / 2
    assert (ranges.low[3], ranges.high[3]) == (-1.0, 1.0)  # 20 of 20,000 rows: below the threshold
    assert ranges.threshold > 20


def test_empty_buckets_survive_at_most_at_the_stated_rate():
    """FALSE_BUCKET_RATE by a union bound: over 3,000 noisy tables whose columns each hold one bucket,
    the Clopper–Pearson interval of the share with any range off must reach below 1 %."""
    gen = np.random.default_rng(11)
    d, trials, sigma = 6, 3000, 10.0
    counts = np.zeros((d, R.BUCKETS))
    counts[:, R.MAGNITUDES + 21] = 1000.0  # every value in (1, 2]
    threshold = sigma * float(-__import__("scipy").special.ndtri(R.FALSE_BUCKET_RATE / (d * R.BUCKETS)))
    wrong = 0
    for _ in range(trials):
        low, high = R.ranges_from_counts(counts + gen.normal(0, sigma, counts.shape), threshold)
        wrong += not (np.all(low == 1.0) and np.all(high == 2.0))
    assert proportion_confint(wrong, trials, alpha=0.01, method="beta")[0] <= R.FALSE_BUCKET_RATE
    # positive control: at half the threshold, empty buckets do survive
    low, high = R.ranges_from_counts(counts + gen.normal(0, sigma, counts.shape), threshold / 2)
    assert not (np.all(low == 1.0) and np.all(high == 2.0))


def _raw_table(n: int = 3000, seed: int = 0) -> Dataset:
    """Two informative columns on very different scales plus an uninformative huge one: used as given,
    the huge column takes every row's norm."""
    gen = np.random.default_rng(seed)
    a, b = gen.normal(size=n), gen.normal(size=n)
    y = np.where(a + b + 0.3 * gen.normal(size=n) > 0.0, 1.0, -1.0)
    X = np.column_stack([50 + 10 * a, 0.01 * b, gen.uniform(1e5, 2e5, n), np.ones(n)])
    return Dataset(X, y, "raw", ("age", "small", "huge", "bias"), private_scaling=True)


@pytest.mark.parametrize("name", [n for n, spec in ALGORITHMS.items() if spec.private])
def test_private_scaling_is_covered_by_the_certified_epsilon(name):
    """Every private algorithm, on data left to private scaling: the certified ε meets the target, every
    agent's ledger starts with the ranges' release, and the config says so and holds the ranges."""
    rounds = {} if name in ("dp-logreg", "a-ddp") else {"iterations": 8}
    result = train(name, _raw_table(), epsilon=1.0, seed=1, **rounds)
    assert 0.99 <= result.guarantee.epsilon <= 1.0
    first = [result.ledger.entries(a)[0] for a in range(result.ledger.agents)]
    assert all(isinstance(e, GaussianEvent) and e.sensitivity == pytest.approx(math.sqrt(2 * 3)) and count == 1
               for e, count in first)
    assert "charged to the run's epsilon" in result.config["scaling"]
    assert result.config["column_ranges"]["low"][3] == -1.0  # the intercept is not estimated


def test_private_scaling_makes_a_raw_table_learnable_and_never_reads_the_test_rows():
    """Used as given, the huge column swamps the rows; with private ranges dp-logreg learns. The ranges
    depend on the training rows only: changing every test row leaves them, and the model, unchanged."""
    data = _raw_table()
    scaled = train("dp-logreg", data, epsilon=1.0, seed=2)
    as_given = train("dp-logreg", Dataset(normalise(data.X, column_max=False), data.y), epsilon=1.0, seed=2)
    majority = scaled.config["majority_accuracy"]
    assert scaled.accuracy >= majority + 0.2 and as_given.accuracy <= majority + 0.1
    n_train = scaled.config["n_train"]
    order = np.random.default_rng(np.random.SeedSequence(2).spawn(4)[0]).permutation(data.n)
    X = data.X.copy()
    X[order[n_train:], :3] *= 1000.0  # the test rows only
    moved = train("dp-logreg", Dataset(X, data.y, data.name, data.feature_names, True), epsilon=1.0, seed=2)
    assert moved.config["column_ranges"] == scaled.config["column_ranges"] and np.array_equal(moved.model, scaled.model)
    X = data.X.copy()
    X[order[:n_train], :3] *= 8.0  # positive control: the training rows set the ranges
    assert train("dp-logreg", Dataset(X, data.y, data.name, data.feature_names, True), epsilon=1.0,
                 seed=2).config["column_ranges"] != scaled.config["column_ranges"]


def test_a_nonprivate_run_takes_the_training_ranges_without_noise():
    result = train("admm", _raw_table(1000), agents=2, iterations=5, seed=0)
    assert result.config["scaling"].startswith("column ranges of the training rows (a non-private run")
    assert result.guarantee is None and result.config["column_ranges"]["low"][3] == -1.0


@pytest.mark.parametrize("kwargs, error, match", [
    ({"X": np.empty((0, 2))}, ValueError, "non-empty 2-D array"),
    ({"budget": (1.0, 1e-5)}, TypeError, "budget must be a Budget"),
    ({"share": 1.0}, ValueError, "share"),
])
def test_bad_input_names_the_parameter(kwargs, error, match):
    arguments = {"X": np.ones((5, 2)), "budget": Budget(1.0, 1e-5), "rng": 0} | kwargs
    with pytest.raises(error, match=match):
        R.estimate_ranges(arguments.pop("X"), arguments.pop("budget"), **arguments)


def test_train_reads_a_file_path_as_the_cli_does(tmp_path):
    """train(name, "file.csv") scales the file privately, as dpkit train --data FILE does; a Dataset loaded
    without private_scaling is used as given."""
    data = _raw_table(1500)
    path = tmp_path / "raw.csv"
    path.write_text("age,small,huge,y\n" + "".join(f"{a},{b},{c},{int(l > 0)}\n" for (a, b, c, _), l in zip(data.X, data.y)))
    result = train("dp-logreg", str(path), epsilon=1.0, seed=0)
    assert "charged to the run's epsilon" in result.config["scaling"] and result.guarantee.epsilon <= 1.0
    from dpkit.algorithms.substrate.data import load_csv

    assert "scaling" not in train("dp-logreg", load_csv(path), epsilon=1.0, seed=0).config


def test_a_runner_refuses_rows_left_to_private_scaling():
    """Only train() scales a private_scaling dataset; a runner called directly refuses it (one line)."""
    from dpkit.algorithms.pp_admm.pp_admm import train_pp_admm
    from dpkit.algorithms.substrate.graphs import ring

    data = _raw_table(600)
    parts = [data.subset(np.arange(k * 200, (k + 1) * 200)) for k in range(3)]
    with pytest.raises(ValueError, match="unscaled columns"):
        train_pp_admm(parts, ring(3), budget=Budget(1.0, 1e-5))
