"""Pairs, patterns and events."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from dpkit.audit import StatDPPatterns, check_pair, resolve_pairs
from dpkit.audit.events import Feature, FeatureSetEvent, LinearScore, PatternSetEvent, as_outputs, row_hash


@pytest.mark.parametrize("relation", ["componentwise", "one", "monotone"])
@pytest.mark.parametrize("length", [1, 2, 5, 10])
def test_patterns_satisfy_their_relation(relation, length):
    pairs = StatDPPatterns(length=length, relation=relation, sensitivity=0.5).pairs()
    assert pairs
    for p in pairs:
        diff = p.second - p.first
        assert np.max(np.abs(diff)) <= 0.5 + 1e-12 and np.any(diff != 0)
        if relation == "one":
            assert np.count_nonzero(diff) == 1
        if relation == "monotone":
            assert np.all(diff >= 0) or np.all(diff <= 0)
    keys = {(p.first.tobytes(), p.second.tobytes()) for p in pairs}
    assert len(keys) == len(pairs)


def test_statdp_contains_the_published_patterns():
    labels = {p.label for p in resolve_pairs("statdp")}
    for name in ("one_above", "one_below", "one_above_rest_below", "one_below_rest_above", "half_half",
                 "all_above", "all_below", "x_shape", "one_above_rest_below_reversed"):
        assert name in labels
    multi = StatDPPatterns(length=(3, 6)).pairs()
    assert {len(p.first) for p in multi} == {3, 6}


def test_pair_validation_errors():
    with pytest.raises(ValueError, match="same shape"):
        check_pair([1, 2], [1, 2, 3, 4])
    with pytest.raises(ValueError, match="same shape"):
        check_pair([1.0, 2.0], [1.0], "one")
    assert check_pair([1, 2], [1, 2, 3]).label == ""  # add/remove neighbours
    with pytest.raises(ValueError, match="more than sensitivity"):
        check_pair([1.0, 1.0], [3.0, 1.0], "componentwise")
    with pytest.raises(ValueError, match="exactly 1"):
        check_pair([1.0, 1.0], [2.0, 2.0], "one")
    with pytest.raises(ValueError, match="both directions"):
        check_pair([1.0, 1.0], [2.0, 0.0], "monotone")
    with pytest.raises(ValueError, match="relation must be one of"):
        StatDPPatterns(relation="some")
    with pytest.raises(ValueError, match="length"):
        StatDPPatterns(length=0)
    with pytest.raises(ValueError, match="non-finite"):
        check_pair([np.nan], [1.0])


@given(st.lists(st.lists(st.sampled_from([0.0, 1.0, -0.0, np.nan, 2.5]), min_size=3, max_size=3), min_size=2, max_size=30))
def test_row_hash_matches_row_equality(rows):
    x = np.array(rows, dtype=float)
    h = row_hash(x)
    for i in range(len(x)):
        for j in range(len(x)):
            same = all((a == b) or (np.isnan(a) and np.isnan(b)) for a, b in zip(x[i], x[j]))
            assert (h[i] == h[j]) == same


def test_events_evaluate_as_described():
    x = np.array([[0.0, np.nan], [1.0, 2.0], [3.0, np.nan]])
    lower = FeatureSetEvent(Feature("coord", 0), (0.5, 2.0), (0,), "lower threshold")
    assert lower.evaluate(x).tolist() == [True, False, False]
    nan_bin = FeatureSetEvent(Feature("coord", 1), (0.5,), (2,), "likelihood-ratio set")
    assert nan_bin.evaluate(x).tolist() == [True, False, True]
    pattern = PatternSetEvent((int(row_hash(x[1:2])[0]),), (tuple(x[1]),), "likelihood-ratio set")
    assert pattern.evaluate(x).tolist() == [False, True, False]
    assert Feature("nan_count")(x).tolist() == [1.0, 0.0, 1.0]
    assert Feature("argmax")(x).tolist() == [0.0, 1.0, 0.0]


def test_logistic_attack_separates_shifted_gaussians():
    rng = np.random.default_rng(0)
    a, b = rng.normal(size=(4000, 3)), rng.normal(size=(4000, 3)) + [1.0, 0.0, 0.0]
    score = LinearScore.fit(a, b)
    assert np.mean(score(a)) > np.mean(score(b))
    # Bayes accuracy is Phi(1/2) = 0.691; a fitted linear attack gets close on fresh data
    fa, fb = rng.normal(size=(4000, 3)), rng.normal(size=(4000, 3)) + [1.0, 0.0, 0.0]
    t = np.median(np.concatenate([score(fa), score(fb)]))
    accuracy = (np.mean(score(fa) > t) + np.mean(score(fb) <= t)) / 2
    assert accuracy > 0.66


def test_as_outputs_shapes():
    assert as_outputs(np.arange(4), 4).shape == (4, 1)
    assert as_outputs(np.ones((4, 2, 3)), 4).shape == (4, 6)
    assert as_outputs(np.array([True, False]), 2).dtype == np.float64
    with pytest.raises(ValueError):
        as_outputs(np.ones(3), 4)
