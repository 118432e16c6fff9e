"""Random-allocation ("balls and bins") batches for DP-SGD in PyTorch, accounted by dpkit.

Random allocation: in each epoch of ``t`` steps every example is placed in ``k`` distinct steps
chosen uniformly at random, independently of the other examples (Feldman & Shenfeld 2025,
"Privacy amplification by random allocation", arXiv 2502.08202; Chua et al. 2025,
"Balls-and-bins sampling for DP-SGD", AISTATS). Unlike shuffled fixed-size batches it has a
tight, certified privacy analysis (:class:`~dpkit.accounting.events.RandomAllocationEvent`), and
unlike Poisson sampling every example is used in every epoch (exactly ``k`` times). Batch sizes
vary: the size of one step's batch is Binomial(n, k/t), and a batch may be empty.

- :func:`allocate` and :func:`allocation_batches` are the numpy core (testable without torch):
  the allocation of one epoch, and its batches.
- :class:`RandomAllocationBatchSampler` is a drop-in ``batch_sampler`` for
  ``torch.utils.data.DataLoader``, seeded by a ``torch.Generator``.
- :func:`random_allocation_data_loader` rebuilds a ``DataLoader`` over the same dataset with that
  sampler and a collate function that turns an empty batch into zero-length tensors, as Opacus's
  ``DPDataLoader`` does for Poisson sampling.

Torch is imported only inside the functions that draw or build loaders, so importing this
module (and :mod:`dpkit.interop`) never imports torch. With Opacus, pass the loader to
``PrivacyEngine.make_private(..., poisson_sampling=False)`` (with ``True`` Opacus replaces the
sampler by its Poisson sampler) and account with
``DpkitAccountant(batching="random-allocation", sampler=...)``
(:mod:`dpkit.interop.opacus`).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, Callable

import numpy as np

from dpkit._validation import check_integer

__all__ = ["RandomAllocationBatchSampler", "allocate", "allocation_batches", "random_allocation_data_loader"]

RandInt = Callable[[int, int], np.ndarray]
"""``randint(high, size)``: ``size`` independent integers uniform on ``{0, …, high − 1}``."""


def _check_shape(num_examples: Any, steps: Any, selected: Any, *, steps_name: str) -> tuple[int, int, int]:
    num_examples = check_integer("num_examples", num_examples, minimum=1)
    steps = check_integer(steps_name, steps, minimum=1)
    selected = check_integer("selected", selected, minimum=1)
    if selected > steps:
        raise ValueError(f"selected must be in [1, {steps_name}={steps}], got selected={selected}")
    return num_examples, steps, selected


def allocate(num_examples: int, steps: int, selected: int, randint: RandInt) -> np.ndarray:
    """One epoch's allocation: an ``(num_examples, selected)`` int64 array whose row i holds the
    ``selected`` distinct steps (in ``{0, …, steps − 1}``) of example i, a uniformly random
    ``selected``-subset, independently across rows.

    Each row is drawn by Floyd's algorithm (Bentley & Floyd 1987, "Programming pearls: a sample
    of brilliance", CACM 30(9)), vectorised over the rows: for j = t − k, …, t − 1 draw r
    uniform on {0, …, j} and keep r, or j when r is already in the row. It gives every k-subset
    with probability 1/C(t, k) and needs O(n·k) memory (O(n·k²) time), never O(n·t).

    >>> rng = np.random.default_rng(0)
    >>> rows = allocate(5, 4, 2, lambda high, size: rng.integers(0, high, size))
    >>> rows.shape, bool(((rows >= 0) & (rows < 4)).all()), bool((rows[:, 0] != rows[:, 1]).all())
    ((5, 2), True, True)
    """
    num_examples, steps, selected = _check_shape(num_examples, steps, selected, steps_name="steps")
    rows = np.empty((num_examples, selected), dtype=np.int64)
    for m, j in enumerate(range(steps - selected, steps)):
        r = np.asarray(randint(j + 1, num_examples), dtype=np.int64).reshape(num_examples)
        if m:
            r = np.where((rows[:, :m] == r[:, None]).any(axis=1), j, r)
        rows[:, m] = r
    return rows


def allocation_batches(rows: np.ndarray, steps: int) -> list[np.ndarray]:
    """The ``steps`` batches of an allocation from :func:`allocate`: batch s holds, in increasing
    order, the examples whose row contains s (an empty array when none does).

    >>> [b.tolist() for b in allocation_batches(np.array([[2], [0], [2]]), 4)]
    [[1], [], [0, 2], []]
    """
    rows = np.asarray(rows, dtype=np.int64)
    steps = check_integer("steps", steps, minimum=1)
    num_examples, selected = rows.shape
    flat = rows.ravel()  # row-major: example i's steps are consecutive
    examples = np.repeat(np.arange(num_examples, dtype=np.int64), selected)
    order = np.argsort(flat, kind="stable")  # stable: examples stay increasing within a step
    counts = np.bincount(flat, minlength=steps)
    return np.split(examples[order], np.cumsum(counts)[:-1])


class RandomAllocationBatchSampler:
    """A ``batch_sampler`` for ``torch.utils.data.DataLoader``: random allocation of
    ``num_examples`` examples to ``steps_per_epoch`` steps, each example in ``selected`` distinct
    steps per epoch, chosen uniformly at random and independently of the others (Feldman &
    Shenfeld 2025, arXiv 2502.08202; Chua et al. 2025, "Balls-and-bins sampling for DP-SGD").

    Every iteration is one epoch with a fresh allocation and yields exactly ``steps_per_epoch``
    lists of indices (``len(sampler) == steps_per_epoch``), of varying sizes, Binomial(n, k/t)
    each. An empty batch is yielded as an empty list, as Opacus's ``UniformWithReplacementSampler``
    (Poisson sampling) yields it: the step still happens (its noise is still added), which the
    accounting assumes. PyTorch's default collate cannot batch an empty list; use
    :func:`random_allocation_data_loader` (or Opacus's ``wrap_collate_with_empty``) for that.

    ``generator`` is a ``torch.Generator`` (``None``: torch's global generator, as Opacus's
    samplers). Memory per epoch is O(num_examples · selected). ``allocations_drawn`` counts the
    epochs started (an epoch broken off early counts); :class:`dpkit.interop.opacus.DpkitAccountant`
    reads it so that an epoch left early and restarted is accounted as two allocations.

    >>> sampler = RandomAllocationBatchSampler(num_examples=10, steps_per_epoch=4)
    >>> len(sampler), sampler.selected, sampler.allocations_drawn
    (4, 1, 0)
    """

    def __init__(self, num_examples: int, steps_per_epoch: int, selected: int = 1, generator: Any = None) -> None:
        self.num_examples, self.steps_per_epoch, self.selected = _check_shape(
            num_examples, steps_per_epoch, selected, steps_name="steps_per_epoch")
        if generator is not None:
            import torch

            if not isinstance(generator, torch.Generator):
                raise ValueError(f"generator must be a torch.Generator or None, got generator={generator!r}")
        self.generator = generator
        self.allocations_drawn = 0

    def __len__(self) -> int:
        return self.steps_per_epoch

    def _randint(self, high: int, size: int) -> np.ndarray:
        import torch

        device = "cpu" if self.generator is None else self.generator.device
        return torch.randint(high, (size,), generator=self.generator, device=device).cpu().numpy()

    def __iter__(self) -> Iterator[list[int]]:
        rows = allocate(self.num_examples, self.steps_per_epoch, self.selected, self._randint)
        self.allocations_drawn += 1
        for batch in allocation_batches(rows, self.steps_per_epoch):
            yield batch.tolist()


class _CollateWithEmpty:
    """``collate_fn`` for batches that may be empty: an empty batch becomes the collated first
    example of ``dataset`` cut to length 0 along the batch dimension (tensors, mappings, lists
    and tuples of them; anything else is refused, as Opacus's ``CollateFnWithEmpty`` refuses it)."""

    def __init__(self, collate_fn: Callable[[list[Any]], Any], dataset: Any) -> None:
        self.collate_fn = collate_fn
        self.dataset = dataset

    def __call__(self, batch: list[Any]) -> Any:
        if len(batch):
            return self.collate_fn(batch)
        return _empty_like(self.collate_fn([self.dataset[0]]))


def _empty_like(value: Any) -> Any:
    import torch

    if isinstance(value, torch.Tensor):
        return value[:0]
    if isinstance(value, Mapping):
        return {key: _empty_like(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_empty_like(item) for item in value)
    raise TypeError(f"cannot make an empty batch of {type(value).__name__}: only tensors, mappings, lists and tuples "
                    "of them (a non-empty stand-in would break the privacy guarantee)")


def random_allocation_data_loader(
    data_loader: Any, *, steps_per_epoch: int | None = None, selected: int = 1, generator: Any = None,
) -> Any:
    """A ``DataLoader`` over ``data_loader``'s dataset with a :class:`RandomAllocationBatchSampler`
    and its other settings (workers, collate function made empty-safe, pinning, …), as Opacus's
    ``DPDataLoader.from_data_loader`` does for Poisson sampling.

    ``steps_per_epoch`` defaults to ``len(data_loader)``, so that the expected batch size
    n·k/t is about the original batch size (for ``selected=1``) and Opacus's
    ``make_private`` sees the sample rate 1/t it would see for Poisson sampling. ``generator``
    defaults to the original loader's.
    """
    import torch

    dataset = data_loader.dataset
    if isinstance(dataset, torch.utils.data.IterableDataset):
        raise ValueError("random allocation needs a map-style dataset, got an IterableDataset in data_loader")
    sampler = RandomAllocationBatchSampler(
        num_examples=len(dataset), steps_per_epoch=len(data_loader) if steps_per_epoch is None else steps_per_epoch,
        selected=selected, generator=data_loader.generator if generator is None else generator)
    collate = data_loader.collate_fn or torch.utils.data.default_collate
    return torch.utils.data.DataLoader(
        dataset, batch_sampler=sampler, collate_fn=_CollateWithEmpty(collate, dataset),
        num_workers=data_loader.num_workers, pin_memory=data_loader.pin_memory, timeout=data_loader.timeout,
        worker_init_fn=data_loader.worker_init_fn, multiprocessing_context=data_loader.multiprocessing_context,
        generator=sampler.generator, prefetch_factor=data_loader.prefetch_factor,
        persistent_workers=data_loader.persistent_workers)
