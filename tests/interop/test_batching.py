"""Random-allocation batches (Feldman & Shenfeld 2025, "Privacy amplification by random allocation",
arXiv 2502.08202; Chua et al. 2025, "Balls-and-bins sampling for DP-SGD"): each example in exactly
``selected`` distinct steps of an epoch, a uniformly random subset, independently of the other
examples; so a step's batch size is Binomial(n, k/t).

The numpy core is tested without torch; the torch sampler and data loader where torch is installed.
The statistical tests use fixed seeds and reject at a tail probability of at most 1e-6 under the
claimed law (Bonferroni-corrected over the cells checked), so a correct sampler fails them with
probability below 1e-6 for a fresh seed; a sampler with a bias of the kind the last test builds
fails them.
"""

from __future__ import annotations

import importlib.util
import itertools
import math

import numpy as np
import pytest
from scipy import stats

from dpkit.interop.batching import RandomAllocationBatchSampler, allocate, allocation_batches

ALPHA = 1e-6
"""Total false-rejection probability of each statistical test under the claimed law."""


def numpy_randint(seed: int):
    rng = np.random.default_rng(seed)
    return lambda high, size: rng.integers(0, high, size)


def epochs_of(n: int, t: int, k: int, epochs: int, seed: int) -> np.ndarray:
    """(epochs, n, k): the allocations of ``epochs`` epochs from the numpy core."""
    randint = numpy_randint(seed)
    return np.stack([allocate(n, t, k, randint) for _ in range(epochs)])


def binomial_interval(trials: int, p: float, alpha: float) -> tuple[int, int]:
    """The central interval of Binomial(trials, p) holding all but ``alpha`` of its mass."""
    law = stats.binom(trials, p)
    return int(law.ppf(alpha / 2)), int(law.isf(alpha / 2))


def chi_square_p(counts: np.ndarray, expected: np.ndarray) -> float:
    return float(stats.chisquare(counts.ravel(), expected.ravel()).pvalue)


# --- the numpy core -------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("n, t, k", [(1, 1, 1), (7, 1, 1), (50, 10, 1), (50, 10, 3), (20, 6, 6), (1000, 100, 2)])
def test_every_example_is_in_exactly_selected_distinct_steps(n, t, k):
    for rows in epochs_of(n, t, k, epochs=5, seed=1):
        assert rows.shape == (n, k) and rows.dtype == np.int64
        assert ((rows >= 0) & (rows < t)).all()
        assert all(len(set(row)) == k for row in rows.tolist())
        batches = allocation_batches(rows, t)
        assert len(batches) == t
        assert all(list(b) == sorted(b) and len(set(b.tolist())) == len(b) for b in batches)  # increasing, no repeat
        counts = np.bincount(np.concatenate(batches), minlength=n)
        assert (counts == k).all() and sum(len(b) for b in batches) == n * k
        for step, batch in enumerate(batches):  # the batch of step s is exactly the examples allocated to s
            assert set(batch.tolist()) == set(np.flatnonzero((rows == step).any(axis=1)).tolist())


def test_empty_steps_are_empty_batches():
    batches = allocation_batches(np.array([[4], [4], [0]]), 6)
    assert [b.tolist() for b in batches] == [[2], [], [], [], [0, 1], []]
    assert all(b.dtype == np.int64 for b in batches)


def test_memory_is_one_draw_of_n_integers_per_selected_step():
    # O(n·k) memory: k draws of n integers each, never an n×t array (Floyd's algorithm).
    sizes = []
    rng = np.random.default_rng(0)

    def randint(high, size):
        sizes.append((high, size))
        return rng.integers(0, high, size)

    allocate(1000, 10_000, 3, randint)
    assert sizes == [(9998, 1000), (9999, 1000), (10000, 1000)]


def test_each_subset_of_steps_is_equally_likely():
    # t = 6, k = 3: all C(6, 3) = 20 subsets with probability 1/20 (chi-square, 19 degrees of freedom).
    t, k, n = 6, 3, 40_000
    rows = allocate(n, t, k, numpy_randint(2))
    index = {subset: i for i, subset in enumerate(itertools.combinations(range(t), k))}
    counts = np.bincount([index[tuple(sorted(row))] for row in rows.tolist()], minlength=len(index))
    assert chi_square_p(counts, np.full(len(index), n / len(index))) > ALPHA


def test_each_example_step_frequency_is_selected_over_steps():
    # Over E epochs, example i is in step s Binomial(E, k/t) times: every (i, s) within its interval
    # (Bonferroni over the n·t cells), and each example's step counts fit the uniform law (chi-square).
    n, t, k, epochs = 30, 8, 3, 4000
    allocations = epochs_of(n, t, k, epochs, seed=3)
    counts = np.zeros((n, t), dtype=np.int64)
    for rows in allocations:
        np.add.at(counts, (np.repeat(np.arange(n), k), rows.ravel()), 1)
    low, high = binomial_interval(epochs, k / t, ALPHA / (n * t))
    assert counts.min() >= low and counts.max() <= high, (counts.min(), counts.max(), low, high)
    # each row sums to E·k exactly; the pooled chi-square over examples (n(t−1) degrees of freedom)
    # compares with the multinomial law of a k-subset's indicator counts: its variance per cell is
    # E·(k/t)(1 − k/t) rather than the multinomial's, so the statistic is rescaled accordingly.
    expected = epochs * k / t
    statistic = (((counts - expected) ** 2) / (epochs * (k / t) * (1 - k / t))).sum() * (t - 1) / t
    assert stats.chi2(n * (t - 1)).sf(statistic) > ALPHA


def test_examples_are_allocated_independently():
    # The pair (step of example 0, step of example 1) is uniform on t × t (chi-square, t² − 1 dof),
    # and the number of epochs the two share a step is Binomial(E, 1/t).
    n, t, epochs = 5, 4, 20_000
    allocations = epochs_of(n, t, 1, epochs, seed=4)[:, :, 0]
    joint = np.bincount(allocations[:, 0] * t + allocations[:, 1], minlength=t * t)
    assert chi_square_p(joint, np.full(t * t, epochs / t**2)) > ALPHA
    shared = int((allocations[:, 2] == allocations[:, 3]).sum())
    low, high = binomial_interval(epochs, 1 / t, ALPHA)
    assert low <= shared <= high


def test_batch_size_is_binomial():
    # Step 0's batch size over independent epochs against Binomial(n, k/t) (chi-square on the bins
    # of expected count >= 5, the tails pooled); every epoch's sizes add up to n·k exactly.
    n, t, k, epochs = 60, 10, 2, 20_000
    randint = numpy_randint(5)
    sizes = np.empty(epochs, dtype=np.int64)
    for e in range(epochs):
        batches = allocation_batches(allocate(n, t, k, randint), t)
        assert sum(len(b) for b in batches) == n * k
        sizes[e] = len(batches[0])
    law = stats.binom(n, k / t)
    low, high = int(law.ppf(1e-3)), int(law.isf(1e-3))
    observed = np.array([(sizes <= low).sum()] + [(sizes == s).sum() for s in range(low + 1, high)]
                        + [(sizes >= high).sum()])
    expected = epochs * np.array([law.cdf(low)] + [law.pmf(s) for s in range(low + 1, high)] + [law.sf(high - 1)])
    assert expected.min() >= 5
    assert chi_square_p(observed, expected) > ALPHA
    assert abs(sizes.mean() - n * k / t) < 5 * math.sqrt(law.var() / epochs)


def test_the_frequency_test_detects_a_biased_allocation():
    # The power check: Floyd's algorithm without its collision rule (keep r even when already
    # chosen, resample by adding 1) over-selects consecutive steps; the subset test must reject it.
    t, k, n = 6, 3, 40_000
    rng = np.random.default_rng(2)
    rows = np.empty((n, k), dtype=np.int64)
    for m, j in enumerate(range(t - k, t)):
        r = rng.integers(0, j + 1, n)
        if m:
            clash = (rows[:, :m] == r[:, None]).any(axis=1)
            r = np.where(clash, (r + 1) % (j + 1), r)
            r = np.where((rows[:, :m] == r[:, None]).any(axis=1), j, r)  # still distinct, but biased
        rows[:, m] = r
    assert all(len(set(row)) == k for row in rows.tolist())
    index = {subset: i for i, subset in enumerate(itertools.combinations(range(t), k))}
    counts = np.bincount([index[tuple(sorted(row))] for row in rows.tolist()], minlength=len(index))
    assert chi_square_p(counts, np.full(len(index), n / len(index))) < ALPHA


@pytest.mark.parametrize("kwargs, name, error", [
    ({"num_examples": 0, "steps_per_epoch": 3}, "num_examples", ValueError),
    ({"num_examples": 5, "steps_per_epoch": 0}, "steps_per_epoch", ValueError),
    ({"num_examples": 5, "steps_per_epoch": 3, "selected": 0}, "selected", ValueError),
    ({"num_examples": 5, "steps_per_epoch": 3, "selected": 4}, "selected", ValueError),
    ({"num_examples": 5.5, "steps_per_epoch": 3}, "num_examples", TypeError),
    ({"num_examples": 5, "steps_per_epoch": "3"}, "steps_per_epoch", TypeError),
])
def test_bad_arguments_are_named(kwargs, name, error):
    # out-of-range values are ValueErrors, non-integers TypeErrors (as everywhere in dpkit), both naming the argument
    with pytest.raises(error, match=name):
        RandomAllocationBatchSampler(**kwargs)


def test_the_sampler_needs_no_torch_to_be_built():
    sampler = RandomAllocationBatchSampler(num_examples=10, steps_per_epoch=4, selected=2)
    assert (len(sampler), sampler.selected, sampler.allocations_drawn, sampler.generator) == (4, 2, 0, None)


def test_importing_the_interop_layer_does_not_import_torch():
    import subprocess
    import sys

    code = ("import sys, dpkit.interop, dpkit.interop.batching, dpkit.interop.opacus; "
            "print('torch' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"


# --- the torch sampler and data loader ---------------------------------------------------------------------------

needs_torch = pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="needs torch (extra `opacus`)")


@needs_torch
def test_generator_must_be_a_torch_generator():
    with pytest.raises(ValueError, match="generator"):
        RandomAllocationBatchSampler(10, 4, generator=np.random.default_rng(0))


@needs_torch
def test_sampler_in_a_data_loader_gives_every_example_selected_times_per_epoch():
    torch = pytest.importorskip("torch")
    n, t, k = 100, 7, 2
    dataset = torch.utils.data.TensorDataset(torch.arange(n))
    sampler = RandomAllocationBatchSampler(n, t, k, generator=torch.Generator().manual_seed(0))
    loader = torch.utils.data.DataLoader(dataset, batch_sampler=sampler)
    assert len(loader) == t
    for epoch in range(3):
        batches = [x.tolist() for (x,) in loader]  # n·k/t = 28.6 per step: no empty batch (P < 1e-20)
        assert len(batches) == t
        assert sorted(itertools.chain(*batches)) == sorted(list(range(n)) * k)
        assert all(len(set(b)) == len(b) for b in batches)
        assert sampler.allocations_drawn == epoch + 1


@needs_torch
def test_seeded_generator_reproduces_and_the_global_generator_is_the_default():
    torch = pytest.importorskip("torch")

    def draw(generator=None):
        return list(RandomAllocationBatchSampler(50, 5, 2, generator=generator))

    assert draw(torch.Generator().manual_seed(7)) == draw(torch.Generator().manual_seed(7))
    assert draw(torch.Generator().manual_seed(7)) != draw(torch.Generator().manual_seed(8))
    torch.manual_seed(11)
    first = draw()
    torch.manual_seed(11)
    assert draw() == first  # generator=None draws from torch's global generator, as Opacus's samplers


@needs_torch
def test_torch_draws_are_uniform():
    # Through torch.randint: each example's step over 2000 epochs, pooled chi-square (n(t − 1) dof).
    torch = pytest.importorskip("torch")
    n, t, epochs = 20, 5, 2000
    sampler = RandomAllocationBatchSampler(n, t, generator=torch.Generator().manual_seed(1))
    counts = np.zeros((n, t), dtype=np.int64)
    for _ in range(epochs):
        for step, batch in enumerate(sampler):
            counts[batch, step] += 1
    assert (counts.sum(axis=1) == epochs).all()
    statistic = (((counts - epochs / t) ** 2) / (epochs / t)).sum()
    assert stats.chi2(n * (t - 1)).sf(statistic) > ALPHA


@needs_torch
def test_empty_batches_are_empty_lists_like_opacus_poisson_sampler():
    torch = pytest.importorskip("torch")
    batches = list(RandomAllocationBatchSampler(2, 6, generator=torch.Generator().manual_seed(0)))
    assert len(batches) == 6 and batches.count([]) >= 4 and all(isinstance(b, list) for b in batches)
    if importlib.util.find_spec("opacus"):
        from opacus.utils.uniform_sampler import UniformWithReplacementSampler

        # Opacus's Poisson sampler yields an empty batch as [] too (and still takes the step)
        assert list(UniformWithReplacementSampler(num_samples=3, sample_rate=1e-12, steps=2)) == [[], []]


@needs_torch
def test_data_loader_turns_empty_batches_into_zero_length_tensors():
    torch = pytest.importorskip("torch")
    from dpkit.interop.batching import random_allocation_data_loader

    features, labels = torch.randn(3, 2), torch.arange(3)
    base = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(features, labels), batch_size=2)
    loader = random_allocation_data_loader(base, steps_per_epoch=8, generator=torch.Generator().manual_seed(0))
    assert len(loader) == 8 and loader.batch_sampler.num_examples == 3
    seen, empty = [], 0
    for x, y in loader:
        assert x.shape == (len(y), 2) and x.dtype == features.dtype and y.dtype == labels.dtype
        assert torch.equal(x, features[y])
        seen += y.tolist()
        empty += len(y) == 0
    assert sorted(seen) == [0, 1, 2] and empty >= 5
    assert len(random_allocation_data_loader(base)) == len(base) == 2  # steps per epoch default: the loader's length
    with pytest.raises(TypeError, match="empty batch"):
        from dpkit.interop.batching import _CollateWithEmpty

        _CollateWithEmpty(lambda batch: "not a tensor", [0])([])
