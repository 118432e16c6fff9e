"""Power properties of the confirmation: a larger budget never loses, the level matches K."""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest
from scipy import stats

from dpkit.audit import catalogue as C
from dpkit.audit import audit


@pytest.mark.slow
@pytest.mark.parametrize("name,claim", [("svt_stoddard", 0.7), ("rnm_value", 0.7)])
def test_a_larger_budget_never_gives_a_smaller_bound(name, claim):
    # the whole confirmation budget goes to the best event's pair (no split across pairs), so
    # quadrupling the budget on the same seed narrows the interval by about half (cases whose
    # bound is still well below the true ε: near it, the order of two bounds is noise; Lee &
    # Clifton's SVT at a claim of 1.5 reaches 2.50 of its true 2.625 at 5·10⁵ samples)
    function, pairs, true_eps = C.BROKEN[name]
    bounds = [audit(C.Entry(function, claim), pairs, claimed_epsilon=claim, samples=n, rng=4).epsilon_lower_bound
              for n in (500_000, 2_000_000)]
    assert bounds[0] <= bounds[1] <= true_eps(claim)


@pytest.mark.parametrize("k", [1, 3])
def test_reported_bound_is_the_conditional_clopper_pearson_bound_at_level_alpha_over_k(k):
    # recompute the witness bound from its counts with independent references: the Poisson mean from
    # mpmath (Pr[Poisson(λ) > m] ≤ 1e-16 and not much below), the conditional binomial's one-sided
    # Clopper-Pearson bound at α/K from scipy's exact binomial test
    r = audit(C.Entry(C.noisy_sum_half, 1.0), "statdp-one", claimed_epsilon=1.0, samples=200_000, rng=2,
              candidates=k)
    w, alpha = r.witness, 1 - r.confidence
    m, mean = w["samples_per_input"], w["poisson_mean"]
    with mpmath.workdps(40):
        over = mpmath.gammainc(m + 1, 0, mean, regularized=True)  # Pr[Poisson(λ) ≥ m + 1]
        assert 1e-17 < over <= 1e-16
    assert w["outputs_numerator"] <= m and w["outputs_denominator"] <= m
    k1, k2 = w["count_numerator"], w["count_denominator"]
    level = alpha / k - float(over)
    low = stats.binomtest(k1, k1 + k2).proportion_ci(confidence_level=1 - 2 * level, method="exact").low
    assert r.candidates == k and r.epsilon_lower_bound == pytest.approx(math.log(low / (1 - low)), rel=1e-9)
    assert ("Bonferroni" in r.method) == (k > 1)
    # confirmation uses the samples left after selection on one pair (Poisson sizes below the cap)
    assert r.samples <= 200_000 and 2 * m >= 0.75 * 200_000


def test_adaptive_k_is_one_at_the_support_boundary_and_hedges_elsewhere():
    # Stoddard's SVT (no query noise) has outputs impossible under the neighbour: the bound sits at
    # the ceiling and K = 1 keeps the full level; a Laplace shift has no such event: K = 4
    boundary = audit(C.Entry(C.svt_stoddard, 0.7), [(np.ones(10), np.r_[2.0, np.ones(9)])], claimed_epsilon=0.7,
                     samples=200_000, rng=0)
    assert boundary.candidates == 1 and boundary.witness["count_denominator"] == 0
    n = boundary.witness["samples_per_input"]
    alpha = 1 - boundary.confidence
    # ceiling: every capped Poisson output of D inside, none of D': θ_L = α^(1/n) in closed form
    ceiling = math.log(alpha) / n - math.log(-math.expm1(math.log(alpha) / n))
    assert boundary.epsilon_lower_bound <= ceiling
    # (the Laplace shift in exact arithmetic: as executed its float bits give boundary events too)
    shift = audit(C.Entry(C.noisy_sum_half, 1.0), [(np.array([1.0, 1.0]), np.array([1.0, 2.0]))], claimed_epsilon=1.0,
                  samples=200_000, rng=0, float_bits=False)
    assert shift.candidates == 4 and shift.witness["count_denominator"] > 0
