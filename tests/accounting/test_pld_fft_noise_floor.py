"""The FFT composition's round-off allowance covers its noise floor (dpkit.accounting.pld.algebra).

A k-fold FFT power leaves an absolute error of about k·u/n on every entry of the composed pmf: a floor
that is not negative where the exact mass is zero, so clipping negatives does not see it, and that sums
over the ~10⁵–10⁶ entries above ε to more than the allowance that clipping and the total mass give.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from dpkit.accounting.events import GaussianEvent, PoissonSampledEvent
from dpkit.accounting.pld import PLDAccountant, algebra
from dpkit.accounting.pld.mechanisms import discretise


def test_two_fft_lengths_differ_by_less_than_their_allowances():
    # The same composition on windows of two lengths (grid tails 1e-30 and 1e-45) has the same exact δ(ε);
    # each computed δ(ε) is within its own allowance (the +∞ atom, the noise floor over the entries above ε,
    # the sums' round-off) of it, so they differ by at most the sum of the two. Before the noise floor (on
    # windows without the quiet padding) the allowances summed to 5.1e-14 where the curves differed by 1.2e-13.
    accountant = PLDAccountant().compose(PoissonSampledEvent(GaussianEvent(1.0), 0.02), 1)
    (remove, _), _ = accountant._pairs()[0]
    pessimistic, _ = discretise(remove, 5e-5, 1e-30, 10**7)
    short, long = (algebra.self_compose(pessimistic, 2000, tail, 10**7) for tail in (1e-30, 1e-45))
    assert short.size < long.size
    epsilons = np.linspace(0.0, short.losses[-1], 3000)
    bare = [dataclasses.replace(pmf, infinity_mass=0.0, noise=0.0, pessimistic=False).delta_many(epsilons)
            for pmf in (short, long)]  # (optimistic without deficit: the sums with their round-off taken off)
    allowances = [pmf.delta_many(epsilons) - curve for pmf, curve in zip((short, long), bare)]
    relevant = (bare[0] > 1e-12) & (bare[0] < 1e-4)
    assert relevant.sum() > 100
    assert np.all((np.abs(bare[0] - bare[1]) <= allowances[0] + allowances[1])[relevant])


def test_fft_and_tilted_intervals_overlap_where_the_noise_floor_matters():
    # Exponential tilting (dpkit.accounting.pld.tilted) composes the same pmfs with the tail moved to the
    # centre, where the FFT is accurate to relative precision: an independent route to the same ε. Both
    # intervals are certified, so they overlap; before the floor was measured, the FFT's lower end lay
    # above the tilted route's upper end here (7.5984426 > 7.5984418).
    event, count, delta = PoissonSampledEvent(GaussianEvent(1.0), 0.02), 2000, 1e-8
    fft = PLDAccountant(target_width=1e-5).compose(event, count)._grid_epsilon(delta)
    tilted = PLDAccountant(target_width=2e-6).compose(event, count)._tiny_delta_epsilon(delta)
    assert fft.epsilon_lower <= tilted.epsilon and tilted.epsilon_lower <= fft.epsilon
