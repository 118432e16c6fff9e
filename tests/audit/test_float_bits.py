"""Float-bit events: a precision leak (Mironov 2012, §3; Haney et al. 2022, "Precision-based attacks
on differential privacy") is refuted from the outputs alone, a snapped mechanism is not.

Why the naive counts leak: with answer 0 an output in (−1/2, 1/2) is the noise itself, on the
noise's own fine grid; with answer 1 it is ``fl(1 + noise)``, a multiple of 2⁻⁵³. So the outputs
of one input lie on grids the other input never produces (probability 0 there, ε = ∞ as
executed). The audit's bound is a one-sided Clopper–Pearson bound on fresh outputs, so asserting
it above the claim is the test of a refutation at level 0.05.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpkit.audit import audit
from dpkit.audit.bits import (
    ZERO_GRANULARITY,
    describe_ulp_code,
    difference_granularity,
    granularity,
    low_bits,
    trailing_zeros,
    ulp_code,
)
from dpkit.audit.events import Families, candidates_from_tallies
from dpkit.mechanisms.snapping import SnappingMechanism


def naive_laplace_count(db, n, rng):
    return np.sum(db) + rng.laplace(0.0, 1.0, size=n)  # 1-DP over the reals


def naive_gaussian_count(db, n, rng):
    return np.sum(db) + rng.normal(0.0, 3.73, size=n)  # (1, 1e-5)-DP over the reals (analytic Gaussian)


finite_doubles = st.floats(allow_nan=False, allow_infinity=False).filter(lambda v: v != 0.0)


@settings(max_examples=200, deadline=None)
@given(finite_doubles)
def test_granularity_is_the_exponent_of_the_lowest_set_bit(x):
    g = int(granularity(np.array([x]))[0])
    q = Fraction(x) / Fraction(2) ** g  # exact rational arithmetic
    assert q.denominator == 1 and q.numerator % 2 == 1


@settings(max_examples=200, deadline=None)
@given(finite_doubles)
def test_ulp_code_names_binade_and_grid(x):
    code = float(ulp_code(np.array([x]))[0])
    text = describe_ulp_code(code)
    assert text.startswith("-" if x < 0 else "+")
    assert text.endswith(f"multiple of 2^{int(granularity(np.array([x]))[0])}")
    tz = int(trailing_zeros(np.array([x]))[0])
    assert 0 <= tz <= 52 and 0 <= low_bits(np.array([x]))[0] < 16


def test_special_values():
    g = granularity(np.array([0.0, -0.0, np.nan, np.inf, 5e-324]))
    assert g[0] == g[1] == ZERO_GRANULARITY and np.isnan(g[2]) and np.isnan(g[3]) and g[4] == -1074


def test_naive_laplace_count_is_refuted_from_outputs_alone():
    r = audit(naive_laplace_count, [([0.0], [1.0])], claimed_epsilon=1.0, samples=1_000_000, rng=0)
    assert r.violation and r.epsilon_lower_bound > 5.0


def test_naive_gaussian_count_is_refuted_without_replay():
    # numpy's ziggurat normal cannot be replayed: the bits alone refute it, at the full α
    r = audit(naive_gaussian_count, [([0.0], [1.0])], claimed_epsilon=1.0, claimed_delta=1e-5, samples=1_000_000,
              rng=0, float_events=True)  # the replay cannot run on a ziggurat normal: no α spent on it
    assert r.violation and r.epsilon_lower_bound > 5.0
    assert r.witness["event"]["family"] == "float bits" and r.float_check.startswith("not run")
    assert r.assumption is None  # a frequency bound on fresh outputs: no assumption


def test_snapped_mechanism_is_not_refuted():
    mech = SnappingMechanism.from_epsilon(1.0, bound=10.0, sensitivity=1.0)
    r = audit(mech.as_audit_callable(), "statdp-one", claimed_epsilon=mech.epsilon, samples=400_000, rng=0)
    assert not r.violation
    # positive control: the same audit refutes a quarter of the snapping mechanism's epsilon
    assert audit(mech.as_audit_callable(), "statdp-one", claimed_epsilon=mech.epsilon / 4, samples=400_000, rng=0,
                 float_events=True).violation


@settings(max_examples=4, deadline=None)
@given(centre=st.floats(-4.0, 4.0), scale=st.floats(0.05, 3.0), seed=st.integers(0, 2**32 - 1))
def test_mechanisms_that_ignore_the_input_are_never_refuted(centre, scale, seed):
    # both inputs give the same output distribution: every event has equal probabilities, so a
    # refutation of even ε = 0 would be a false alarm (probability ≤ 0.05 per audit; the bits of a
    # float output are a function of the output, so they carry no more than it does)
    def same(db, n, rng):
        return centre + rng.laplace(0.0, scale, size=n)

    r = audit(same, [([0.0], [1.0])], claimed_epsilon=0.5, samples=40_000, rng=seed, answer=lambda db: db)
    assert not r.violation
    # positive control: shifted by 8 scales with the input (true ε = 8), the same audit refutes the claim
    shifted = audit(lambda db, n, rng: same(db, n, rng) + 8.0 * scale * db[0], [([0.0], [1.0])], claimed_epsilon=0.5,
                    samples=40_000, rng=seed, float_bits=True)
    assert shifted.violation


def test_dpkit_continuous_gaussian_is_refuted_as_executed():
    # the opt-out's label: floating_point_safe = False; numpy's ziggurat normal cannot be replayed, the bits refute it
    from dpkit.mechanisms.gaussian import GaussianMechanism

    mech = GaussianMechanism.from_epsilon_delta(1.0, 1e-5, float_safe=False)
    assert not mech.floating_point_safe
    r = audit(mech.as_audit_callable(), [([0.0], [1.0])], claimed_epsilon=1.0, claimed_delta=1e-5,
              samples=1_000_000, rng=0)
    assert r.violation and r.epsilon_lower_bound > 5.0


@pytest.mark.parametrize("pairs", [[([0.0], [1.0])], [([0.0, 0.0, 0.0, 0.0], [1.0, 0.0, 0.0, 0.0])]])
def test_dpkit_default_gaussian_passes_the_same_audit(pairs):
    # the default releases the continuous output rounded exactly to a lattice: the bits carry nothing more,
    # at 10⁶ samples, scalar and vector (dpkit.mechanisms.float_safe)
    from dpkit.mechanisms.gaussian import GaussianMechanism

    mech = GaussianMechanism.from_epsilon_delta(1.0, 1e-5)
    assert mech.floating_point_safe
    r = audit(mech.as_audit_callable(), pairs, claimed_epsilon=1.0, claimed_delta=1e-5, samples=1_000_000, rng=0)
    assert not r.violation, r.witness


@settings(max_examples=300, deadline=None)
@given(st.floats(allow_nan=False, allow_infinity=False), st.floats(allow_nan=False, allow_infinity=False))
def test_difference_granularity_is_the_2_adic_valuation_of_the_exact_difference(x, centre):
    g = float(difference_granularity(np.array([x]), centre)[0])
    diff = Fraction(x) - Fraction(centre)  # exact rational arithmetic
    if diff == 0:
        assert g == ZERO_GRANULARITY
    else:
        q = diff / Fraction(2) ** int(g)
        assert q.denominator == 1 and q.numerator % 2 == 1


def test_lattice_events_need_the_answer_and_say_when_it_is_unknown():
    # the numpy Laplace count with the answer known: output - answer lies on the noise's own grid on
    # one input and on the answer's ulp grid on the other; with no answer, a note says the family did not run
    known = audit(naive_laplace_count, [([0.0], [1.0])], claimed_epsilon=1.0, samples=60_000, rng=0,
                  answer=np.sum)
    assert known.violation and not any("does not know the query answer" in n for n in known.notes)
    unknown = audit(naive_laplace_count, [([0.0], [1.0])], claimed_epsilon=1.0, samples=60_000, rng=0)
    assert unknown.violation and any("not run: the audit does not know the query answer" in n for n in unknown.notes)


def test_lattice_family_describes_its_sets():
    rng = np.random.default_rng(0)
    first = (0.0 + rng.laplace(0.0, 1.0, 4000))[:, None]
    second = (1.0 + rng.laplace(0.0, 1.0, 4000))[:, None]
    families = Families.from_sample(first, second, bits=True, centres=(np.array([0.0]), np.array([1.0])))
    lattice = [f for f in families.features if f.kind == "lattice"]
    assert [f.centre for f in lattice] == [0.0, 1.0]
    cands = candidates_from_tallies(families, families.tally(first), families.tally(second), 0, delta=0.0,
                                    confirm_size=10_000, z=2.0)
    best = max((c for c in cands if getattr(c.event, "feature", None) in lattice), key=lambda c: c.predicted)
    described = best.event.describe()
    assert described["family"] == "float lattice" and "2^" in described["set"][0]


def test_float_bits_false_audits_the_values_only():
    r = audit(naive_laplace_count, [([0.0], [1.0])], claimed_epsilon=1.0, samples=60_000, rng=0, float_bits=False)
    assert not r.violation and r.witness["event"]["family"] != "float bits"
