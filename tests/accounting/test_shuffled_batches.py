"""Certified lower bounds for DP-SGD with shuffled fixed-size batches (Chua et al., ICML 2024).

The bound is the ε of a real pair of neighbouring datasets, so it must (1) never exceed dpkit's proven
upper bound (E un-amplified Gaussian releases), whatever the order of the batches across epochs, (2) be
attained by that pair (checked by simulating the mechanism itself, with Clopper–Pearson intervals),
(3) shrink as the noise grows, and (4) sit above the Poisson ε where Chua et al. show it does.
"""

from __future__ import annotations

import math
import time

import mpmath
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import special, stats

from dpkit.accounting import shuffled_batches as sb
from dpkit.accounting.events import GaussianEvent, PoissonSampledEvent, SelfComposedEvent
from dpkit.accounting.pld import PLDAccountant
from dpkit.accounting.registry import make_accountant
from dpkit.accounting.shuffled_batches import (
    shuffled_delta_lower,
    shuffled_epsilon_lower,
    shuffled_lower_bound,
)


def unamplified_epsilon(sigma: float, epochs: int, delta: float) -> float:
    """The proven upper bound: every record is used once per epoch, so E epochs are at most E Gaussian
    releases of sensitivity 1 (exact analytic Gaussian of the composition, rounded up)."""
    accountant = make_accountant("analytic")
    accountant.compose(SelfComposedEvent(GaussianEvent(sigma), epochs))
    return accountant.get_epsilon(delta).epsilon


def poisson_accountant(sigma: float, steps: int, epochs: int) -> PLDAccountant:
    """What is usually reported for such a run: Poisson subsampling at rate 1/T for T·E steps."""
    return PLDAccountant().compose(SelfComposedEvent(PoissonSampledEvent(GaussianEvent(sigma), 1.0 / steps),
                                                     steps * epochs))


# ----------------------------------------------------------------------------- (1) below the upper bound


@settings(max_examples=30, deadline=None)
@given(sigma=st.floats(0.2, 8.0), steps=st.integers(1, 10_000), epochs=st.integers(1, 12),
       log_delta=st.floats(-12.0, -1.0), reshuffle=st.booleans())
def test_never_above_the_proven_upper_bound(sigma, steps, epochs, log_delta, reshuffle):
    delta = 10.0**log_delta
    lower = shuffled_epsilon_lower(sigma, steps, epochs, delta, reshuffle=reshuffle)
    assert 0.0 <= lower <= unamplified_epsilon(sigma, epochs, delta)


@pytest.mark.parametrize("sigma,delta", [(0.5, 1e-6), (1.0, 1e-5), (3.0, 1e-3)])
def test_one_step_per_epoch_is_the_gaussian_mechanism_and_the_bound_is_tight(sigma, delta):
    # T = 1: the pair is exactly N(2, σ²) vs N(1, σ²), whose ε the analytic Gaussian gives exactly
    exact = unamplified_epsilon(sigma, 1, delta)
    lower = shuffled_epsilon_lower(sigma, 1, 1, delta)
    assert exact - 1e-4 <= lower <= exact


def test_one_order_for_every_epoch_is_one_epoch_at_sigma_over_root_e():
    # without reshuffling the record sits in the same step every epoch: the epoch mean is sufficient
    assert shuffled_epsilon_lower(1.0, 50, 4, 1e-5, reshuffle=False) == shuffled_epsilon_lower(0.5, 50, 1, 1e-5)


# ---------------------------------------------------------------------------------- (3) monotone in σ


@settings(max_examples=10, deadline=None)
@given(sigma=st.floats(0.2, 6.0), factor=st.floats(1.0, 3.0), steps=st.integers(1, 5_000),
       epochs=st.integers(1, 3), log_delta=st.floats(-10.0, -1.0))
def test_more_noise_never_raises_the_bound(sigma, factor, steps, epochs, log_delta):
    delta = 10.0**log_delta
    assert (shuffled_epsilon_lower(sigma, steps, epochs, delta)
            >= shuffled_epsilon_lower(sigma * factor, steps, epochs, delta))


def test_more_epochs_never_lower_the_bound():
    bounds = [shuffled_epsilon_lower(1.0, 1000, epochs, 1e-5) for epochs in (1, 2, 5, 10)]
    assert bounds == sorted(bounds) and bounds[0] < bounds[-1]


# ------------------------------------------------------------------------- (4) above the Poisson ε


def test_above_poisson_at_the_authors_example():
    # Chua et al. 2024's released example (dpsgd_batch_sampler_accounting/example.py of their code:
    # σ = 0.35, 1000 steps, one epoch, ε from 0.5 to 10) is where their shuffle lower bound exceeds
    # the Poisson δ: here the certified lower δ of shuffling exceeds the Poisson *upper* δ.
    poisson = poisson_accountant(0.35, 1000, 1)
    for epsilon in (2.0, 6.0, 10.0):
        assert shuffled_delta_lower(0.35, 1000, epsilon) > 10 * poisson.get_delta(epsilon).delta


@pytest.mark.parametrize("sigma", [0.7, 1.0])
def test_above_poisson_at_a_thousand_steps(sigma):
    # The same regime as ε at δ = 10⁻⁶ (the paper compares ε of the batch samplers against σ at a
    # fixed number of steps): the Poisson ε is 0.98 and 0.19 where shuffling is ≥ 7.3 and 3.7.
    poisson = poisson_accountant(sigma, 1000, 1).get_epsilon(1e-6).epsilon
    lower = shuffled_epsilon_lower(sigma, 1000, 1, 1e-6)
    assert lower > 2.0 * poisson
    assert lower <= unamplified_epsilon(sigma, 1, 1e-6)


def test_above_poisson_over_several_epochs():
    # Several epochs reshuffled (Chua et al., NeurIPS 2024, "Scalable DP-SGD"): 10 epochs of 100 steps
    poisson = poisson_accountant(1.0, 100, 10).get_epsilon(1e-5).epsilon
    assert shuffled_epsilon_lower(1.0, 100, 10, 1e-5) > 3.0 * poisson


# ------------------------------------------------------------------------ (2) the pair attains it


def shuffled_dp_sgd_maxima(record: float, sigma: float, steps: int, batch: int, epochs: int, samples: int,
                           rng: np.random.Generator) -> np.ndarray:
    """Each epoch's largest noisy batch sum, plus the batch size, of the real mechanism (ABLQ_S) on
    Chua et al.'s dataset: b·T − 1 records at −1 and one at ``record`` (+1 on x, 0 = zeroed out on x′),
    a fresh permutation every epoch."""
    data = np.r_[-np.ones(steps * batch - 1), record]
    maxima = np.empty((samples, epochs))
    for epoch in range(epochs):
        rows = rng.permuted(np.broadcast_to(data, (samples, data.size)), axis=1)
        sums = rows.reshape(samples, steps, batch).sum(axis=2) + rng.normal(scale=sigma, size=(samples, steps))
        maxima[:, epoch] = sums.max(axis=1) + batch
    return maxima


def clopper_pearson(count: int, total: int, alpha: float) -> tuple[float, float]:
    low = stats.beta.ppf(alpha, count, total - count + 1) if count else 0.0
    high = stats.beta.ppf(1 - alpha, count + 1, total - count) if count < total else 1.0
    return float(low), float(high)


@pytest.mark.parametrize("sigma,steps,batch,epochs,delta", [(1.0, 10, 2, 1, 1e-2), (1.5, 8, 1, 3, 1e-2)])
def test_the_pair_attains_delta_by_monte_carlo(sigma, steps, batch, epochs, delta):
    bound = shuffled_lower_bound(sigma, steps, delta, epochs)
    assert bound.direction == "remove"  # the witness is an event more likely with the record present
    rng = np.random.default_rng(20240317)
    samples = 400_000
    hits = [int(bound.witness(shuffled_dp_sgd_maxima(record, sigma, steps, batch, epochs, samples, rng)).sum())
            for record in (1.0, 0.0)]
    alpha = 1e-4  # per one-sided bound
    (p_low, p_high), (q_low, q_high) = (clopper_pearson(k, samples, alpha) for k in hits)
    scale = math.exp(bound.epsilon)
    # The certified masses are consistent with the simulation ...
    assert p_high >= bound.witness_first and q_low <= bound.witness_second
    # ... so the claimed δ is not refuted, and the simulated leak is real and of that size.
    assert p_high - scale * q_low >= delta
    assert p_low - scale * q_high >= 0.5 * delta


def test_the_one_epoch_witness_is_a_threshold_on_the_maximum():
    # Chua et al.'s sets E_C = {max_t w_t > C}: the optimal statistic of one epoch is such a set
    bound = shuffled_lower_bound(1.0, 100, 1e-5)
    inside = bound.witness(np.linspace(-5.0, 15.0, 20001))
    first = int(np.argmax(inside))
    assert inside[first:].all() and not inside[:first].any() and 0 < first < inside.size - 1


def test_the_witness_certifies_delta():
    for epochs in (1, 2):
        bound = shuffled_lower_bound(0.8, 200, 1e-6, epochs)
        assert bound.witness_first - math.exp(bound.epsilon) * bound.witness_second >= 1e-6 * (1 - 1e-9)
        assert shuffled_delta_lower(0.8, 200, bound.epsilon, epochs) >= 1e-6


# ---------------------------------------------------------------------- the numerical enclosures


@mpmath.workdps(50)
def test_log_ndtr_error_allowance_holds_against_mpmath():
    worst = 0.0
    for x in np.linspace(-60.0, 37.0, 4001):
        m = mpmath.mpf(float(x))
        exact = mpmath.log1p(-mpmath.ncdf(-m)) if x > 0 else mpmath.log(mpmath.ncdf(m))
        worst = max(worst, float(abs(mpmath.mpf(float(special.log_ndtr(x))) - exact) / abs(exact)))
    assert worst * 10 <= sb.LOG_NDTR_RELATIVE_ERROR


@pytest.mark.parametrize("sigma,steps,mean", [(1.0, 100, 2.0), (0.4, 7, 1.0), (3.0, 5000, 2.0)])
@mpmath.workdps(60)
def test_cell_masses_enclose_the_exact_masses(sigma, steps, mean):
    edges = sb._edges(sigma, steps, 1e-12)
    lower, upper = sb._cell_masses(edges, sigma, steps, mean)

    def cdf(c):
        a, b = (mpmath.mpf(float(c)) - mean) / sigma, mpmath.mpf(float(c)) / sigma
        return mpmath.ncdf(a) * mpmath.ncdf(b) ** (steps - 1)

    picks = np.unique(np.r_[0, np.linspace(1, edges.size - 1, 40).astype(int), edges.size])
    for j in picks:
        if j == 0:
            exact = cdf(edges[0])
        elif j == edges.size:
            exact = 1 - cdf(edges[-1])
        else:
            exact = cdf(edges[j]) - cdf(edges[j - 1])
        assert lower[j] <= exact <= upper[j], (j, lower[j], float(exact), upper[j])


# ------------------------------------------------------------------------- interface and cost


@pytest.mark.parametrize("call,name", [
    (lambda: shuffled_epsilon_lower(0.0, 10, 1, 1e-5), "noise_multiplier"),
    (lambda: shuffled_epsilon_lower(float("nan"), 10, 1, 1e-5), "noise_multiplier"),
    (lambda: shuffled_epsilon_lower(1.0, 0, 1, 1e-5), "steps_per_epoch"),
    (lambda: shuffled_epsilon_lower(1.0, 10, 0, 1e-5), "epochs"),
    (lambda: shuffled_epsilon_lower(1.0, 10, 1, 0.0), "delta"),
    (lambda: shuffled_epsilon_lower(1.0, 10, 1, 1.0), "delta"),
    (lambda: shuffled_delta_lower(1.0, 10, -1.0), "epsilon"),
    (lambda: shuffled_lower_bound(1.0, 10, 1e-5, tolerance=0.0), "tolerance"),
])
def test_invalid_parameters_are_named(call, name):
    with pytest.raises(ValueError, match=name):
        call()


def test_wrong_types_are_named():
    with pytest.raises(TypeError, match="steps_per_epoch"):
        shuffled_epsilon_lower(1.0, 10.5, 1, 1e-5)
    with pytest.raises(TypeError, match="reshuffle"):
        shuffled_epsilon_lower(1.0, 10, 2, 1e-5, reshuffle="yes")


def test_a_pair_that_cannot_reach_delta_gives_zero():
    bound = shuffled_lower_bound(50.0, 10_000, 0.5)
    assert bound.epsilon == 0.0 and any("bound is 0" in note for note in bound.notes)


def test_fast_at_the_largest_documented_size():
    start = time.perf_counter()
    bound = shuffled_lower_bound(1.0, 10_000, 1e-5, 100)
    assert time.perf_counter() - start < 5.0
    assert 0.0 < bound.epsilon <= unamplified_epsilon(1.0, 100, 1e-5)
