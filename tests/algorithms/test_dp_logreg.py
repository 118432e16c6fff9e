"""dp-logreg: calibration on the whole run, ledger = draws, outputs covered, accuracy, audit."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy import optimize, stats

from dpkit.accounting.events import GaussianEvent
from dpkit.algorithms.baselines import dp_logreg as L
from dpkit.algorithms.substrate.budget import Budget
from dpkit.algorithms.substrate.data import Dataset, make_synthetic
from dpkit.algorithms.audit_instances import make_scenario
from dpkit.algorithms import train
from dpkit.audit import audit
from dpkit.mechanisms.gaussian import GaussianMechanism


def _gdp_delta(mu: float, eps: float) -> float:
    """δ(ε) of μ-GDP (Dong, Roth & Su 2022, Cor. 2.13), written out independently."""
    return stats.norm.cdf(-eps / mu + mu / 2) - math.exp(eps) * stats.norm.cdf(-eps / mu - mu / 2)


@pytest.mark.parametrize("epsilon,T,n", [(0.5, 1, 100), (1.0, 50, 1000), (3.0, 200, 36000)])
def test_calibration_meets_the_budget_within_one_percent(epsilon, T, n):
    mech, _ = L.calibrate_gradient_noise(n, T, Budget(epsilon, 1e-5))
    assert mech.sensitivity == L.gradient_sensitivity(n) and 2.0 / n < mech.sensitivity < 2.0 / n * (1 + 1e-6)
    mu = math.sqrt(T) * mech.sensitivity / mech.sigma  # T Gaussian steps compose to √T Δ/σ-GDP exactly
    assert _gdp_delta(mu, epsilon) <= 1e-5  # the budget holds at the target ε ...
    mu_target = optimize.brentq(lambda m: _gdp_delta(m, epsilon) - 1e-5, 1e-3, 20)
    assert mu >= 0.99 * mu_target  # ... with at most 1 % of it wasted


@pytest.mark.parametrize("epsilon", [0.5, 2.0])
def test_run_guarantee_is_the_budget_and_the_ledger_is_the_draws(monkeypatch, epsilon):
    draws = []
    original = GaussianMechanism.sample

    def counting(self, value, size=None, rng=None):
        draws.append((self.sigma, self.sensitivity, np.shape(value)))
        return original(self, value, size=size, rng=rng)

    monkeypatch.setattr(GaussianMechanism, "sample", counting)
    data = make_synthetic(1500, 6, rng=3)
    result = L.train_dp_logreg(data, budget=Budget(epsilon, 1e-5), iterations=25, rng=1)
    assert 0.99 * epsilon <= result.epsilon <= epsilon
    ((event, count),) = result.ledger.entries(0)
    assert count == len(draws) == 25
    assert all(d == (event.sigma, event.sensitivity, (6,)) for d in draws)
    assert event == GaussianEvent(result.config["sigma"], L.gradient_sensitivity(1500))  # 2/n, as computed


def test_model_is_a_function_of_the_released_gradients_only(monkeypatch):
    # replace every release by a fixed public sequence: two different datasets then give the same model
    sequence = np.random.default_rng(0).standard_normal((30, 4)) * 0.1
    calls = iter(range(10**6))
    monkeypatch.setattr(GaussianMechanism, "sample", lambda self, value, size=None, rng=None: sequence[next(calls) % 30])
    budget = Budget(1.0, 1e-5)
    a = L.train_dp_logreg(make_synthetic(800, 4, rng=1), budget=budget, iterations=30)
    b = L.train_dp_logreg(make_synthetic(800, 4, rng=2), budget=budget, iterations=30)
    assert np.array_equal(a.model, b.model)
    # and it is the documented post-processing: Nesterov steps on the releases, tail average
    theta, previous, tail = np.zeros(4), np.zeros(4), []
    for t in range(30):
        v = theta + t / (t + 3) * (theta - previous)
        previous, theta = theta, v - L.STEP_SIZE * sequence[t]
        tail.append(theta)
    assert np.allclose(a.model, np.mean(tail[15:], axis=0), rtol=0, atol=1e-12)


@given(st.floats(0.05, 10), st.floats(1.01, 5))
def test_a_larger_budget_never_gets_more_noise(epsilon, factor):
    small, _ = L.calibrate_gradient_noise(500, 20, Budget(epsilon, 1e-5))
    large, _ = L.calibrate_gradient_noise(500, 20, Budget(epsilon * factor, 1e-5))
    assert large.sigma <= small.sigma
    assert L.default_iterations(500, 10, Budget(epsilon, 1e-5)) <= L.default_iterations(500, 10, Budget(epsilon * factor, 1e-5))


def test_default_iterations_follow_the_rule():
    budget = Budget(1.0, 1e-5)
    mu = optimize.brentq(lambda m: _gdp_delta(m, 1.0) - 1e-5, 1e-3, 20)
    for n, d in [(500, 20), (3000, 50), (20, 4)]:
        expected = min(L.MAX_ITERATIONS, max(L.MIN_ITERATIONS, math.floor(n * mu / math.sqrt(d))))
        assert abs(L.default_iterations(n, d, budget) - expected) <= 1  # μ within 1 % of the exact one
    assert L.default_iterations(36000, 104, budget) == L.MAX_ITERATIONS


def test_accuracy_on_adult_beats_the_majority_class_beyond_sampling_error():
    result = train("dp-logreg", "adult", epsilon=1.0, seed=0)
    n_test = result.config["n_test"]
    correct = round(result.accuracy * n_test)
    lower = stats.beta.ppf(0.0005, correct, n_test - correct + 1)  # one-sided 99.95 % Clopper–Pearson bound
    assert lower > result.config["majority_accuracy"]
    assert result.accuracy >= 0.82  # the baseline's target at ε = 1 (docs/algorithms/dp-logreg.md)
    assert result.epsilon <= 1.0


def test_input_errors():
    budget = Budget(1.0, 1e-5)
    wide = Dataset(np.array([[2.0, 0.0], [0.0, 1.0]]), [1, -1])
    with pytest.raises(ValueError, match=r"\|\|x\|\| <= 1"):
        L.train_dp_logreg(wide, budget=budget)
    with pytest.raises(ValueError, match="replace-one"):
        L.train_dp_logreg(make_synthetic(50, 2), budget=Budget(1.0, 1e-5, "add-remove"))
    with pytest.raises(ValueError, match="step_size"):
        L.train_dp_logreg(make_synthetic(50, 2), budget=budget, step_size=0)
    with pytest.raises(TypeError, match="budget"):
        L.train_dp_logreg(make_synthetic(50, 2), budget=1.0)
    with pytest.raises(ValueError, match="agents"):
        L.SPEC.runner([make_synthetic(50, 2)] * 2, None, None, budget=budget, iterations=None, variant="corrected",
                      rng=np.random.default_rng(0), progress=None)
    with pytest.raises(ValueError, match="variant"):
        L.SPEC.runner([make_synthetic(50, 2)], None, None, budget=budget, iterations=None, variant="paper",
                      rng=np.random.default_rng(0), progress=None)


def test_audit_scenario_passes_and_the_audit_has_power():
    scenario = make_scenario("dp-logreg", corrected=True)
    assert scenario.claimed_epsilon <= 1.0 and 0.99 * scenario.claimed_epsilon <= scenario.true_epsilon
    result = audit(scenario.mechanism, scenario.pairs, scenario.claimed_epsilon, scenario.claimed_delta,
                   samples=200_000, rng=0)
    assert not result.violation and result.epsilon_lower_bound <= scenario.true_epsilon
    # the same releases against a claim well below their true ε are refuted
    low = scenario.true_epsilon / 3
    refuted = audit(scenario.mechanism, scenario.pairs, low, scenario.claimed_delta, samples=200_000, rng=0)
    assert refuted.violation
    with pytest.raises(ValueError, match="paper"):
        make_scenario("dp-logreg", corrected=False)


def test_scenario_releases_the_algorithms_query():
    scenario = make_scenario("dp-logreg", corrected=True, iterations=3, records=6)
    mech = scenario.mechanism
    first, second = scenario.pairs[0]
    assert np.array_equal(mech._query(first), L.gradient_query(mech.theta, first[:, :-1], first[:, -1]))
    assert mech.mechanism == L.calibrate_gradient_noise(6, 3, Budget(1.0, 1e-5))[0]
    assert scenario.parameters["realised_shift"] <= mech.mechanism.sensitivity
