"""The sample plan: exact power of the confirmation's refutation (Poissonized counts, the conditional
Clopper–Pearson bound) and the size that reaches a target power."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from dpkit.audit import audit
from dpkit.audit import catalogue as C
from dpkit.audit.sample_plan import detectable_at_power, refutation_power, samples_for_power
from dpkit.audit.statistics import cp_lower, cp_upper, poisson_epsilon_lower_bound, poisson_sample_mean


@pytest.mark.parametrize("p1,p2,m,eps,delta", [
    (0.01 * math.exp(2.0), 0.01, 3_000, 1.5, 0.0),     # about half
    (0.3, 0.05, 400, 1.0, 0.0),                         # large probabilities, small m
    (0.02 + 1e-3, 0.01 * math.exp(-0.4), 20_000, 0.2, 1e-3),  # delta > 0
])
def test_power_matches_a_simulation_of_the_bound(p1, p2, m, eps, delta):
    # simulate the confirmation as the audit runs it: N ~ Poisson(λ) outputs per input capped at m,
    # K ~ Bin(N, p), refute when the conditional bound exceeds ε; the exact power must lie in the
    # 99.9 % Clopper-Pearson interval of the simulated refutation rate
    rng = np.random.default_rng(20240)
    runs = 3000
    mean, spent = poisson_sample_mean(m)
    sizes = np.minimum(rng.poisson(mean, (runs, 2)), m)
    k1, k2 = rng.binomial(sizes[:, 0], p1), rng.binomial(sizes[:, 1], p2)
    hits = sum(poisson_epsilon_lower_bound(int(a), int(b), mean, delta, 0.05, spent) > eps for a, b in zip(k1, k2))
    exact = refutation_power(p1, p2, m, eps, delta, 0.05)
    assert cp_lower(hits, runs, 0.0005) <= exact <= cp_upper(hits, runs, 0.0005)


@pytest.mark.parametrize("m,p1,p2,eps,delta", [(60, 0.5, 0.1, 0.5, 0.0), (45, 0.3, 0.02, 1.0, 0.01)])
def test_power_equals_the_sum_over_every_pair_of_counts(m, p1, p2, eps, delta):
    # small m: sum Pr[K1 = k1] Pr[K2 = k2] (Poisson at the planned mean) over every (k1, k2) whose bound
    # exceeds ε, bound by bound; counts up to 200 leave a tail below 1e-40
    mean, spent = poisson_sample_mean(m)
    ks = np.arange(200)
    w1, w2 = stats.poisson.pmf(ks, mean * p1), stats.poisson.pmf(ks, mean * p2)
    exact = sum(w1[k1] * w2[k2] for k1 in ks for k2 in ks
                if poisson_epsilon_lower_bound(k1, k2, mean, delta, 0.05, spent) > eps)
    assert refutation_power(p1, p2, m, eps, delta, 0.05) == pytest.approx(exact, rel=1e-9, abs=1e-12)


def test_grouped_counts_give_a_lower_bound_on_the_power(monkeypatch):
    # beyond 2048 values of K2 the sum groups them into runs charged their largest value: never above the exact
    import dpkit.audit.sample_plan as plan

    p2, m = 0.01, 3_000_000
    p1 = p2 * math.exp(1.02)
    grouped = refutation_power(p1, p2, m, 1.0)
    monkeypatch.setattr(plan, "_EXACT_MAX", 10**9)
    exact = refutation_power(p1, p2, m, 1.0)
    assert exact - 0.01 <= grouped <= exact


def test_no_power_against_a_true_claim():
    # an event whose ratio is exactly e^ε: a refutation is a false alarm, rarer than the level
    p2 = 0.02
    assert refutation_power(p2 * math.exp(1.0), p2, 100_000, 1.0, 0.0, 0.05) <= 0.05


@settings(max_examples=25, deadline=None)
@given(st.floats(0.001, 0.2), st.floats(0.2, 2.0), st.integers(200, 50_000))
def test_power_grows_with_the_true_epsilon(p2, gap, m):
    # more distance between the true and the claimed ε never lowers the power (the bound grows with K1)
    eps = 0.5
    lo = refutation_power(min(1.0, p2 * math.exp(eps + gap)), p2, m, eps)
    hi = refutation_power(min(1.0, p2 * math.exp(eps + gap + 0.3)), p2, m, eps)
    assert hi >= lo - 1e-12


def test_samples_for_power_reaches_the_target_and_half_does_not():
    p1, p2 = 0.01 * math.exp(2.0), 0.01
    for target in (0.5, 0.8, 0.95):
        m = samples_for_power(p1, p2, 1.5, power=target)
        assert refutation_power(p1, p2, m, 1.5) >= target > refutation_power(p1, p2, m // 2, 1.5)
    assert samples_for_power(0.01 * math.exp(1.0), 0.01, 1.5) is None  # no violation: nothing to refute
    assert samples_for_power(p1, p2, 1.5, max_samples=100) is None


def test_detectable_epsilon_is_the_smallest_refuted_with_the_power():
    p2, m = 0.01, 200_000
    x = detectable_at_power(p2, m, claimed_epsilon=1.0, power=0.8)
    assert refutation_power(p2 * math.exp(x), p2, m, 1.0) >= 0.8 > refutation_power(p2 * math.exp(x - 1e-3), p2, m, 1.0)


def test_auto_states_its_plan_and_its_power():
    kwargs = dict(claimed_epsilon=1.0, samples="auto", rng=0, workers=1)
    r = audit(C.Entry(C.noisy_sum_half, 1.0), "statdp-one", **kwargs)
    plan = r.sample_plan
    assert r.violation and plan["reached"] and plan["power"] >= plan["target_power"] == 0.8
    assert plan["samples_per_input"] == r.witness["samples_per_input"] and plan["predicted_seconds"] > 0
    assert plan["detectable_epsilon"] > 1.0 and any(n.startswith("sample plan:") for n in r.notes)
    # the same selection (same seed) sized for a higher power confirms on at least as many outputs
    high = audit(C.Entry(C.noisy_sum_half, 1.0), "statdp-one", power=0.99, **kwargs).sample_plan
    assert high["samples_per_input"] >= plan["samples_per_input"] and high["power"] >= 0.99
    assert r.to_dict()["sample_plan"] == plan
    with pytest.raises(ValueError, match="power"):
        audit(C.Entry(C.noisy_sum, 1.0), "statdp-one", claimed_epsilon=1.0, samples="auto", power=1.0)
