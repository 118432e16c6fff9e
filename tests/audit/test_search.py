"""Input search: confirmed bounds stay below the true ε, and beat the fixed patterns on ∞-DP SVTs.

The false-alarm rate is checked against its guarantee: each confirmed audit errs with
probability ≤ 1 − confidence = 0.05, so over R independent seeds the number of false
violations is Binomial(R, ≤ 0.05); the tests allow its 0.999 quantile.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from dpkit.audit import catalogue as C
from dpkit.audit import audit
from dpkit.audit.search import SearchedAudit, SearchResult, audit_searched, search_pairs


def test_correct_laplace_sum_never_confirms_more_than_its_epsilon():
    runs = 16
    violations = 0
    for seed in range(runs):
        # the catalogue's Laplace sum is 0.5-DP in exact arithmetic: audited on its values only
        r = audit_searched(C.Entry(C.noisy_sum, 0.5), claimed_epsilon=0.5, budget=20_000, samples=20_000,
                           lengths=(1, 3), relation="one", population=8, rng=seed, float_bits=False)
        assert isinstance(r, SearchedAudit) and r.audit.samples <= 20_000 and r.search.samples <= 20_000
        violations += r.audit.violation
        assert r.epsilon_lower_bound == r.audit.epsilon_lower_bound
    assert violations <= stats.binom.ppf(0.999, runs, 0.05)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_correct_svt_never_confirms_more_than_its_epsilon(seed):
    r = audit_searched(C.Entry(C.svt_lyu, 0.5), claimed_epsilon=0.5, budget=100_000, samples=100_000,
                       lengths=(5, 10), population=32, rng=seed)
    # the search measured the mechanism (a search that found nothing reports 0) and stays below its epsilon
    assert 0.0 < r.epsilon_lower_bound <= 0.5 and not r.audit.violation


def test_search_beats_fixed_patterns_on_unbounded_svt():
    # Chen et al.'s SVT (Lyu, Su & Li 2017, Alg. 6) is ∞-DP: its loss grows with the number of
    # answers that move, so the 10-answer StatDP patterns show only a bounded ε; searching longer inputs shows more
    mech, claim = C.Entry(C.svt_chen, 0.5), 0.5
    searched = audit_searched(mech, claimed_epsilon=claim, budget=150_000, samples=150_000, lengths=(20, 40),
                              population=32, rng=1)
    fixed = audit(mech, "statdp", claimed_epsilon=claim, samples=300_000, rng=1)
    assert searched.audit.violation
    assert searched.epsilon_lower_bound > fixed.epsilon_lower_bound + 0.5


def test_search_result_respects_budget_and_relation():
    res = search_pairs(C.Entry(C.histogram, 1.0), claimed_epsilon=1.0, budget=40_000, lengths=(2, 4),
                       relation="one", population=8, keep=2, rng=3)
    assert isinstance(res, SearchResult)
    assert res.samples <= 40_000 and res.rounds == 3 and len(res.ranking) == 2
    moved = np.count_nonzero(np.asarray(res.pair.second) - np.asarray(res.pair.first))
    assert moved == 1 and len(res.pair.first) in (2, 4)
    assert res.ranking[0] == (res.pair.label, res.screening_estimate)
    assert "not certified" in res.notes[0]


def test_searches_are_reproducible():
    kwargs = dict(claimed_epsilon=1.0, budget=10_000, lengths=(3,), population=4, keep=2)
    a = search_pairs(C.Entry(C.histogram, 1.0), rng=5, **kwargs)
    b = search_pairs(C.Entry(C.histogram, 1.0), rng=5, **kwargs)
    assert (a.pair.label, a.screening_estimate, a.ranking, a.samples) == (b.pair.label, b.screening_estimate,
                                                                       b.ranking, b.samples)


@pytest.mark.parametrize("kwargs,error,match", [
    (dict(budget=100), ValueError, "budget"),
    (dict(budget=10_000, lengths=()), ValueError, "lengths"),
    (dict(budget=10_000, lengths=(0,)), ValueError, "lengths"),
    (dict(budget=10_000, relation="any"), ValueError, "relation"),
    (dict(budget=10_000, rng=1.5), TypeError, "rng"),
    (dict(budget=10_000, sensitivity=0.0), ValueError, "sensitivity"),
    (dict(budget=10_000, keep=8, population=4), ValueError, "population"),
])
def test_bad_arguments(kwargs, error, match):
    with pytest.raises(error, match=match):
        search_pairs(C.Entry(C.histogram, 1.0), claimed_epsilon=1.0, **kwargs)


@settings(max_examples=6, deadline=None)
@given(relation=st.sampled_from(["componentwise", "one", "monotone"]), length=st.integers(1, 6),
       seed=st.integers(0, 2**16))
def test_searched_pair_satisfies_the_relation(relation, length, seed):
    res = search_pairs(C.Entry(C.histogram, 1.0), claimed_epsilon=1.0, budget=4_000, lengths=(length,),
                       relation=relation, population=4, keep=2, rng=seed)
    diff = np.asarray(res.pair.second) - np.asarray(res.pair.first)
    assert np.all(np.abs(diff) <= 1.0) and np.any(diff != 0)
    if relation == "one":
        assert np.count_nonzero(diff) == 1
    if relation == "monotone":
        assert np.all(diff >= 0) or np.all(diff <= 0)
