"""dpkit.mechanisms.float_sensitivity: the bounds hold against exact sums, on adversarial inputs in the
style of Casacuberta et al. (CCS 2022) and on hypothesis-generated neighbours; the naive real
sensitivity is exceeded on such inputs, so the bounds are needed."""

from __future__ import annotations

import functools
import math
import operator
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from dpkit.mechanisms import float_sensitivity as F

U = Fraction(1, 2**53)


# --- the summation orders numpy really uses ------------------------------------------------------------------

def _pairwise(x: np.ndarray) -> float:
    return float(np.sum(x))  # 1-D: numpy's pairwise summation, 8 accumulators per block of 128


def _sequential(x: np.ndarray) -> float:
    return float(np.cumsum(x)[-1])  # one accumulator, left to right


def _rows(x: np.ndarray) -> float:
    return float(np.column_stack([x, x]).sum(axis=0)[0])  # axis-0 reduction of a C-ordered array: row by row


def _python(x: np.ndarray) -> float:
    return functools.reduce(operator.add, (float(v) for v in x[::-1]), 0.0)  # reversed, sequential


def _sorted(x: np.ndarray) -> float:
    return float(np.cumsum(np.sort(x))[-1])  # a library that sorts (or groups) first


def _dot(x: np.ndarray) -> float:
    return float(np.ones(len(x)) @ x)  # BLAS


SUMS = [_pairwise, _sequential, _rows, _python, _sorted, _dot]


def exact(values) -> Fraction:
    return sum((Fraction(float(v)) for v in values), Fraction(0))


def binade_attack(k: int = 14, extra: int = 2**13) -> tuple[np.ndarray, np.ndarray]:
    """Values in [−1, 1]: 2^k + 1 ones bring the running sum to 2^k + 2 (D) or 2^k (D′: the first record
    is −1 instead of +1); then ``extra`` values −2^(k−53). Above 2^k each is half an ulp and rounds away
    (ties to even), below 2^k each is exact: the sequential sums differ by 2 + extra·2^(k−53) > 2."""
    t = 2.0 ** (k - 53)
    D = np.r_[1.0, np.ones(2**k + 1), -t * np.ones(extra)]
    D_prime = D.copy()
    D_prime[0] = -1.0
    return D, D_prime


def mixed_magnitude_attack() -> tuple[np.ndarray, np.ndarray]:
    """2^16 values in [2^40, 2^40 + 1] (U − L = 1; ulp(2^40) = 2^−12): one record replaced, and numpy's
    pairwise np.sum of the two datasets differs by 32 (found by a seeded search)."""
    rng = np.random.default_rng(0)
    L, n = 2.0**40, 2**16
    for trial in range(92):
        D = L + rng.integers(0, 4097, n) * 2.0**-12
        indices = rng.integers(0, n, 50)
        if trial == 91:
            D_prime = D.copy()
            D_prime[44904] = L
            assert 44904 in indices
            return D, D_prime
    raise AssertionError("unreachable")


# --- adversarial inputs: the naive sensitivity is exceeded, the float sensitivity is not -------------------

def test_binade_attack_exceeds_the_real_sensitivity_and_stays_within_the_bound():
    D, D_prime = binade_attack()
    n = len(D)
    assert np.all(np.abs(D) <= 1.0) and np.count_nonzero(D != D_prime) == 1
    moved = abs(_sequential(D) - _sequential(D_prime))
    assert exact(D) - exact(D_prime) == 2  # the real sums move by 2C
    assert moved > 2.0 + 1e-8  # ... the computed ones by 2 + 2^13·2^-39: the naive 2C is exceeded
    bound = F.sum_sensitivity(n, 1.0)
    assert moved <= bound
    # the n·γ_{n−1}·C shape is needed: γ_{n−1}·C per side (no factor n) would be exceeded
    assert moved - 2.0 > 2 * float(F.gamma(n - 1))
    # and every order numpy uses stays within it
    for total in SUMS:
        assert abs(total(D) - total(D_prime)) <= bound, total.__name__
        for values in (D, D_prime):
            assert abs(Fraction(total(values)) - exact(values)) <= Fraction(F.sum_error(n, 1.0)), total.__name__


def test_mixed_magnitudes_move_numpys_pairwise_sum_32_times_the_real_sensitivity():
    D, D_prime = mixed_magnitude_attack()
    n, L = len(D), 2.0**40
    assert np.all((L <= D) & (D <= L + 1.0)) and np.count_nonzero(D != D_prime) == 1
    assert abs(exact(D) - exact(D_prime)) <= 1
    moved = abs(_pairwise(D) - _pairwise(D_prime))
    assert moved == 32.0  # U − L = 1: the naive replace-one sensitivity is exceeded 32 times
    bound = F.interval_sum_sensitivity(n, L, L + 1.0)
    assert moved <= bound
    for total in SUMS:
        assert abs(total(D) - total(D_prime)) <= bound, total.__name__
    # the mean (sum divided by the public n) likewise
    mean_moved = abs(float(np.mean(D)) - float(np.mean(D_prime)))
    assert mean_moved > 1.0 / n
    assert mean_moved <= F.interval_mean_sensitivity(n, L, L + 1.0)


def test_reordering_the_same_records_changes_the_sum_but_stays_within_the_error_bound():
    D, _ = binade_attack(k=12, extra=2**11)
    n = len(D)
    results = {total.__name__: total(D) for total in SUMS}
    results["reversed"] = _sequential(D[::-1])
    results["fsum"] = math.fsum(D)
    assert len(set(results.values())) > 1  # the order matters ...
    err = Fraction(F.sum_error(n, 1.0))
    for name, value in results.items():
        assert abs(Fraction(value) - exact(D)) <= err, name  # ... within γ_{n−1}·Σ|x_i| for every order


def test_a_dot_product_and_a_mean_gradient_stay_within_their_bounds():
    # many records near ±C with a few at mixed magnitudes: dp-logreg's (1/n) Xᵀw, replace-one
    rng = np.random.default_rng(3)
    n, d = 4000, 7
    X = rng.normal(size=(n, d)) * rng.choice([1.0, 1e-9, 1e6], size=(n, 1))
    X /= np.linalg.norm(X, axis=1, keepdims=True) * (1 + 4e-16)
    assert np.max(np.sum(X**2, axis=1)) <= 1.0
    w = rng.choice([-1.0, 1.0], n) * (1 - rng.random(n) * 1e-3)
    bound = F.checked_norm_bound(1.0, d)
    sens = F.mean_sensitivity(n, bound, products=True, dimension=d)
    base = X.T @ w / n
    for k in range(0, n, 97):
        Xp, wp = X.copy(), w.copy()
        Xp[k], wp[k] = -X[(k + 1) % n], -w[(k + 1) % n]
        assert float(np.linalg.norm(Xp.T @ wp / n - base)) <= sens
    # the computed mean against the exact one, coordinate by coordinate
    err = Fraction(F.mean_error(n, bound, products=True, dimension=d))
    for j in range(d):
        truth = sum((Fraction(float(a)) * Fraction(float(b)) for a, b in zip(X[:, j], w)), Fraction(0)) / n
        assert abs(Fraction(float(base[j])) - truth) <= err


# --- clipping and row-norm checks ------------------------------------------------------------------------------

def _exact_norm2(v: np.ndarray) -> Fraction:
    return sum((Fraction(float(c)) ** 2 for c in v), Fraction(0))


def _clip(x: np.ndarray, C: float) -> np.ndarray:
    with np.errstate(divide="ignore"):  # an underflowing norm (0) leaves x as it is
        return x * min(1.0, float(np.float64(C) / np.linalg.norm(x)))


def test_clipping_in_floats_can_leave_a_norm_above_the_clip_and_the_bound_covers_it():
    rng = np.random.default_rng(0)
    C, d = 1.0, 50
    above = 0
    worst = Fraction(0)
    for _ in range(3000):
        v = _clip(rng.normal(size=d) * 10, C)
        norm2 = _exact_norm2(v)
        above += norm2 > 1
        worst = max(worst, norm2)
    assert above > 0  # "norm <= C" computed in floats is not ||v|| <= C
    assert worst <= Fraction(F.clipped_norm_bound(C, d)) ** 2


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(-1e3, 1e3, allow_subnormal=False), min_size=1, max_size=40),
       st.floats(2.0**-30, 2.0**30), st.sampled_from(["min", "max", "addp"]))
def test_clipped_norm_bound_holds_for_the_clipping_forms(values, clip, form):
    x = np.array(values)
    assume(np.any(x != 0))
    d = len(x)
    if form == "min":
        v, r = _clip(x, clip), 3
    elif form == "max":
        v, r = x / max(1.0, float(np.linalg.norm(x) / clip)), 3
    else:  # A-DDP's scalar path: the norm of coefficient·x, then the coefficient rescaled
        coefficient = 0.37
        norm = abs(coefficient) * math.sqrt(float(x @ x))  # 0.0 when x @ x underflows: not clipped
        if norm > clip:
            coefficient *= clip / norm
        v, r = coefficient * x, 5
    assert _exact_norm2(v) <= Fraction(F.clipped_norm_bound(clip, d, roundings=r)) ** 2


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(-1.0, 1.0), min_size=1, max_size=60))
def test_checked_norm_bound_covers_every_row_that_passes_the_check(values):
    x = np.array(values)
    scale = math.sqrt(float(np.sum(x**2)))
    if scale > 0:
        x = x / scale  # rows normalised in floats, as the loaders do
    if float(np.sum(x**2)) <= 1.0:
        assert _exact_norm2(x) <= Fraction(F.checked_norm_bound(1.0, len(x))) ** 2


# --- property-based: neighbouring datasets never move further than the bound --------------------------------

def _magnitudes(C: float):
    # many values near ±C, and tiny ones: the mixtures that make rounding depend on the partial sums
    return st.one_of(st.floats(-C, C), st.sampled_from([C, -C, C * (1 - 2.0**-52), -C * (1 - 2.0**-53)]),
                     st.floats(-C * 2.0**-40, C * 2.0**-40))


@st.composite
def neighbours(draw, relation="replace-one"):
    C = draw(st.sampled_from([1.0, 3.0, 2.0**20, 0.1]))
    values = draw(st.lists(_magnitudes(C), min_size=1, max_size=300))
    D = np.array(values)
    i = draw(st.integers(0, len(D) - 1))
    if relation == "replace-one":
        D_prime = D.copy()
        D_prime[i] = draw(_magnitudes(C))
    else:
        D_prime = np.delete(D, i)
    return C, D, D_prime


@settings(max_examples=300, deadline=None)
@given(neighbours(), st.permutations(range(6)))
def test_computed_sums_of_replace_one_neighbours_stay_within_the_bound(case, order):
    C, D, D_prime = case
    n = len(D)
    bound = F.sum_sensitivity(n, C)
    err = Fraction(F.sum_error(n, C))
    for index in order:
        total = SUMS[index]
        assert abs(total(D) - total(D_prime)) <= bound
        assert abs(Fraction(total(D)) - exact(D)) <= err
    assert abs(float(np.mean(D)) - float(np.mean(D_prime))) <= F.mean_sensitivity(n, C)
    assert abs(float(np.mean(D)) - float(np.mean(D_prime))) <= F.interval_mean_sensitivity(n, -C, C)


@settings(max_examples=200, deadline=None)
@given(neighbours("add-remove"))
def test_computed_sums_of_add_remove_neighbours_stay_within_the_bound(case):
    C, D, D_prime = case
    bound = F.sum_sensitivity(len(D), C, neighbouring="add-remove")
    for total in SUMS:
        assert abs(total(D) - (total(D_prime) if len(D_prime) else 0.0)) <= bound
    assert F.interval_sum_sensitivity(len(D), -C, C, neighbouring="add-remove") >= bound


@settings(max_examples=100, deadline=None)
@given(st.integers(1, 200), st.integers(1, 12), st.integers(0, 10**6))
def test_clipped_gradient_sums_of_neighbours_stay_within_the_l2_bound(n, d, seed):
    rng = np.random.default_rng(seed)
    G = rng.normal(size=(n, d)) * rng.choice([1e-3, 1.0, 1e4], size=(n, 1))
    clipped = np.array([_clip(g, 1.0) for g in G])
    other = clipped.copy()
    other[rng.integers(n)] = _clip(rng.normal(size=d) * 1e4, 1.0)
    bound = F.clipped_sum_sensitivity(n, 1.0, d)
    assert float(np.linalg.norm(clipped.sum(axis=0) - other.sum(axis=0))) <= bound
    assert float(np.linalg.norm(np.sum(clipped, axis=0) - np.sum(other, axis=0))) <= bound


# --- monotonicity, rounding up, refusals ------------------------------------------------------------------------

@given(st.integers(1, 10**9), st.integers(1, 10**9), st.floats(1e-10, 1e10), st.floats(1e-10, 1e10))
def test_bounds_are_monotone_in_n_and_the_bound(n1, n2, c1, c2):
    (n1, n2), (c1, c2) = sorted((n1, n2)), sorted((c1, c2))
    for relation in ("replace-one", "add-remove"):
        assert F.sum_sensitivity(n1, c1, neighbouring=relation) <= F.sum_sensitivity(n2, c1, neighbouring=relation)
        assert F.sum_sensitivity(n1, c1, neighbouring=relation) <= F.sum_sensitivity(n1, c2, neighbouring=relation)
    assert F.sum_error(n1, c1) <= F.sum_error(n2, c1) and F.sum_error(n1, c1) <= F.sum_error(n1, c2)
    assert F.mean_error(n1, c1) <= F.mean_error(n2, c1)
    assert F.clipped_norm_bound(c1, n1 % 10**6 + 1) <= F.clipped_norm_bound(c2, n1 % 10**6 + 1)
    assert F.clipped_sum_sensitivity(n1, c1, 3) <= F.clipped_sum_sensitivity(n2, c1, 3)


def test_every_bound_is_rounded_up_from_the_exact_value():
    n, C = 12345, 0.7
    exact_error = F.gamma(n - 1) * n * Fraction(C)
    assert Fraction(F.sum_error(n, C)) >= exact_error
    assert Fraction(math.nextafter(F.sum_error(n, C), 0.0)) < exact_error
    assert Fraction(F.sum_sensitivity(n, C)) >= 2 * Fraction(C) + 2 * exact_error
    for q in (Fraction(1, 3), Fraction(1, 10), Fraction(2, 3) * 2**-1074, Fraction(7, 5) * 10**300):
        up = F.round_up(q)  # the smallest double >= q
        assert Fraction(up) >= q > Fraction(math.nextafter(up, 0.0))
    assert F.round_up(0.1) == 0.1
    assert F.gamma(3) == Fraction(3, 2**53 - 3)


def test_invalid_inputs_are_refused_naming_the_parameter():
    with pytest.raises(ValueError, match="k must satisfy"):
        F.gamma(2**53)
    with pytest.raises(ValueError, match="k must satisfy"):
        F.sum_error(2**53 + 1, 1.0)
    with pytest.raises(TypeError, match="n must be an integer"):
        F.sum_sensitivity(10.0, 1.0)
    with pytest.raises(TypeError, match="n must be an integer"):
        F.sum_sensitivity(True, 1.0)
    with pytest.raises(ValueError, match="n must be an integer >= 1"):
        F.mean_sensitivity(0, 1.0)
    with pytest.raises(ValueError, match="bound must be >= 0"):
        F.sum_error(3, -1.0)
    with pytest.raises(ValueError, match="bound must be finite"):
        F.sum_sensitivity(3, math.inf)
    with pytest.raises(TypeError, match="bound must be a real number"):
        F.sum_sensitivity(3, "1")
    with pytest.raises(ValueError, match="neighbouring"):
        F.sum_sensitivity(3, 1.0, neighbouring="swap")
    with pytest.raises(ValueError, match="low must be < high"):
        F.interval_sum_sensitivity(3, 1.0, 1.0)
    with pytest.raises(ValueError, match="high must be finite"):
        F.interval_mean_sensitivity(3, 0.0, math.nan)
    with pytest.raises(ValueError, match="clip must be > 0"):
        F.clipped_norm_bound(0.0, 3)
    with pytest.raises(ValueError, match="clip must be >= 2\\*\\*-400"):
        F.clipped_norm_bound(2.0**-500, 3)
    with pytest.raises(ValueError, match="dimension must be an integer >= 1"):
        F.clipped_sum_sensitivity(3, 1.0, 0)
    with pytest.raises(ValueError, match="scale must be > 0"):
        F.mean_sensitivity(3, 1.0, scale=0.0)
    with pytest.raises(ValueError, match="threshold must be > 0"):
        F.checked_norm_bound(0.0, 3)
    with pytest.raises(ValueError, match="largest double"):
        F.round_up(Fraction(10) ** 400)
