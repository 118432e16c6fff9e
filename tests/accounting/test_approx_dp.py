"""Tests of (ε, δ) composition: basic, advanced, optimal homogeneous (KOV 2015) and the accountant.

Optimal-composition references: tests/data/rdp_references.json (exact mpmath sums, 50 digits).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpkit.accounting.approx_dp import (
    ApproxDPAccountant,
    advanced_composition,
    basic_composition,
    optimal_homogeneous_composition,
    optimal_homogeneous_delta,
)
from dpkit.accounting.base import UnsupportedEventError
from dpkit.accounting.events import (
    ApproxDPEvent,
    ComposedEvent,
    GaussianEvent,
    LaplaceEvent,
    ParallelComposedEvent,
    PureDPEvent,
    RandomizedResponseEvent,
    SelfComposedEvent,
)

REF = json.loads((Path(__file__).resolve().parents[1] / "data" / "rdp_references.json").read_text())


@pytest.mark.parametrize("case", REF["kov"])
def test_optimal_delta_matches_exact_sum(case):
    value = optimal_homogeneous_delta(case["epsilon"], case["delta"], case["k"], case["epsilon_total"])
    ref = float(case["delta_total"])
    assert ref <= value <= ref * (1 + 1e-10)


def test_optimal_matches_kov_grid_formula_at_k_minus_2i():
    # KOV 2015 Thm 3.3 at ε̃ = (k − 2i)ε: δ = 1 − (1−δ)^k (1 − δ_i), δ_i from their sum; k = 10, δ = 0.
    eps, k = 0.7, 10
    for i in range(1, 5):
        di = sum(math.comb(k, l) * (math.exp((k - l) * eps) - math.exp((k - 2 * i + l) * eps)) for l in range(i))
        di /= (1 + math.exp(eps)) ** k
        assert optimal_homogeneous_delta(eps, 0.0, k, (k - 2 * i) * eps) == pytest.approx(di, rel=1e-12)


def test_optimal_inverse_is_one_sided():
    r = optimal_homogeneous_composition(0.1, 1e-6, 100, 1.1e-4)
    assert optimal_homogeneous_delta(0.1, 1e-6, 100, r.epsilon) <= 1.1e-4
    assert optimal_homogeneous_delta(0.1, 1e-6, 100, r.epsilon * (1 - 1e-9)) > 1.1e-4


@settings(max_examples=40)
@given(eps=st.floats(0.01, 2.0), k=st.integers(1, 300), dp=st.sampled_from([1e-3, 1e-6, 1e-9]))
def test_optimal_never_worse_than_basic_or_advanced(eps, k, dp):
    delta = 1e-8
    total = k * delta + dp
    opt = optimal_homogeneous_composition(eps, delta, k, total).epsilon
    assert opt <= advanced_composition(eps, delta, k, dp).epsilon
    assert opt <= basic_composition(eps, delta, k).epsilon


def test_closed_forms():
    b = basic_composition(0.5, 1e-6, 4)
    assert b.epsilon == pytest.approx(2.0, rel=1e-11) and b.epsilon >= 2.0
    a = advanced_composition(0.1, 1e-7, 50, 1e-6)
    expected = math.sqrt(2 * 50 * math.log(1e6)) * 0.1 + 50 * 0.1 * math.expm1(0.1)
    assert expected <= a.epsilon <= expected * (1 + 1e-11)
    assert a.delta == pytest.approx(50 * 1e-7 + 1e-6, rel=1e-11)


def test_accountant_picks_best_and_records_it():
    acc = ApproxDPAccountant().compose(LaplaceEvent(10.0), 100)
    res = acc.get_epsilon(1e-5)
    assert res.method.startswith("optimal")
    optimal = optimal_homogeneous_composition(0.1, 0.0, 100, 1e-5).epsilon
    assert optimal <= res.epsilon <= optimal * (1 + 1e-14)  # rounded outwards by a few ulps
    few = ApproxDPAccountant().compose(PureDPEvent(1.0), 2).get_epsilon(1e-9)
    assert few.epsilon <= 2.0 * (1 + 1e-11)
    back = acc.get_delta(res.epsilon)
    assert back.delta <= 1e-5 * (1 + 1e-9)


def test_heterogeneous_ledger_uses_worst_step_and_says_so():
    acc = ApproxDPAccountant().compose(PureDPEvent(0.1), 10).compose(ApproxDPEvent(0.2, 1e-7), 5)
    res = acc.get_epsilon(1e-5)
    assert any("heterogeneous" in n for n in res.notes)
    assert res.epsilon <= 0.1 * 10 + 0.2 * 5 + 1e-9  # never worse than basic


def test_composition_forms_agree():
    event = RandomizedResponseEvent(0.3, 3)
    forms = [ApproxDPAccountant().compose(event, 6), ApproxDPAccountant().compose(SelfComposedEvent(event, 6)),
             ApproxDPAccountant().compose(ComposedEvent((event,) * 6))]
    assert len({acc.get_epsilon(1e-6).epsilon for acc in forms}) == 1
    par = ApproxDPAccountant().compose(ParallelComposedEvent((PureDPEvent(0.3), PureDPEvent(0.1))), 6)
    assert par.get_epsilon(1e-6).epsilon == forms[0].get_epsilon(1e-6).epsilon


def test_unsupported_and_invalid():
    acc = ApproxDPAccountant()
    with pytest.raises(UnsupportedEventError):
        acc.compose(GaussianEvent(1.0))
    assert acc.ledger == ()
    with pytest.raises(ValueError, match="epsilon"):
        basic_composition(-1.0, 0.0, 2)
    with pytest.raises(ValueError, match="epsilon"):
        advanced_composition(float("nan"), 0.0, 2, 1e-5)
    with pytest.raises(ValueError, match="delta"):
        basic_composition(1.0, 1.0, 2)
    with pytest.raises(ValueError, match="k"):
        basic_composition(1.0, 0.0, 0)
    with pytest.raises(ValueError, match="delta_prime"):
        advanced_composition(1.0, 0.0, 2, 0.0)
    with pytest.raises(ValueError, match="delta_total"):
        optimal_homogeneous_composition(1.0, 1e-3, 10, 1e-3)
    # a target δ below what the (ε, δ) steps spend: ε = ∞ with the reason, not an exception
    below = ApproxDPAccountant().compose(ApproxDPEvent(1.0, 1e-3), 10).get_epsilon(1e-4)
    assert below.epsilon == math.inf and any("below the delta" in note for note in below.notes)
