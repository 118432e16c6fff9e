"""dpkit's accountant inside the real Opacus ``PrivacyEngine`` on a tiny model (extra ``opacus``)."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.compare
torch = pytest.importorskip("torch")
opacus = pytest.importorskip("opacus")

from dpkit.interop.opacus import DpkitAccountant, opacus_accountant_class, register_with_opacus  # noqa: E402


def _setup(examples=256, batch=32, seed=0):
    torch.manual_seed(seed)
    x = torch.randn(examples, 4)
    y = (x[:, 0] > 0).long()
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, y), batch_size=batch)
    model = torch.nn.Linear(4, 2)
    return model, torch.optim.SGD(model.parameters(), lr=0.1), loader


def _train(model, optimizer, loader, epochs=1):
    steps = 0
    for _ in range(epochs):
        for x, y in loader:
            optimizer.zero_grad()
            torch.nn.functional.cross_entropy(model(x), y).backward()
            optimizer.step()
            steps += 1
    return steps


def test_dpkit_accountant_counts_every_step_and_is_no_looser_than_opacus_rdp():
    engine = opacus.PrivacyEngine()
    engine.accountant = opacus_accountant_class()()
    assert isinstance(engine.accountant, opacus.accountants.IAccountant)
    model, optimizer, loader = _setup()
    model, optimizer, loader = engine.make_private(module=model, optimizer=optimizer, data_loader=loader,
                                                   noise_multiplier=1.0, max_grad_norm=1.0)
    steps = _train(model, optimizer, loader, epochs=2)
    assert len(engine.accountant) == steps
    assert engine.accountant.history == [(1.0, 1 / 8, steps)]
    theirs = opacus.accountants.RDPAccountant()
    theirs.history = list(engine.accountant.history)
    ours_rdp = DpkitAccountant("rdp")
    ours_rdp.history = list(engine.accountant.history)
    # dpkit optimises the RDP order continuously, Opacus over a grid: never above Opacus's RDP ε.
    assert ours_rdp.get_epsilon(1e-5) <= theirs.get_epsilon(1e-5)
    assert ours_rdp.get_epsilon(1e-5) == pytest.approx(theirs.get_epsilon(1e-5), rel=1e-2)
    result = engine.accountant.get_result(1e-5)
    assert result.epsilon_lower <= engine.get_epsilon(1e-5) == result.epsilon <= ours_rdp.get_epsilon(1e-5)


def test_make_private_with_epsilon_through_the_registry_meets_the_target():
    register_with_opacus()
    engine = opacus.PrivacyEngine(accountant="dpkit")
    model, optimizer, loader = _setup()
    model, optimizer, loader = engine.make_private_with_epsilon(
        module=model, optimizer=optimizer, data_loader=loader, target_epsilon=2.0, target_delta=1e-5, epochs=2,
        max_grad_norm=1.0)
    _train(model, optimizer, loader, epochs=2)
    assert engine.accountant.mechanism() == "dpkit"
    assert engine.get_epsilon(1e-5) <= 2.0


# --- batchings other than Poisson: make_private(poisson_sampling=False) keeps the data loader it is given ----------

def _indexed_loader(examples=256, batch=32, shuffle=False, seed=0):
    torch.manual_seed(seed)
    x = torch.randn(examples, 4)
    y = (x[:, 0] > 0).long()
    dataset = torch.utils.data.TensorDataset(x, y, torch.arange(examples))
    return torch.utils.data.DataLoader(dataset, batch_size=batch, shuffle=shuffle)


def _private(accountant, loader, noise_multiplier=1.0, loss_reduction="mean"):
    engine = opacus.PrivacyEngine()
    engine.accountant = accountant
    model = torch.nn.Linear(4, 2)
    model, optimizer, loader = engine.make_private(
        module=model, optimizer=torch.optim.SGD(model.parameters(), lr=0.1), data_loader=loader,
        noise_multiplier=noise_multiplier, max_grad_norm=1.0, poisson_sampling=False, loss_reduction=loss_reduction)
    return engine, model, optimizer, loader


def _train_epoch(model, optimizer, loader, stop_after=None):
    """One pass over ``loader`` (or its first ``stop_after`` steps); the example indices of each step."""
    seen = []
    for step, (x, y, index) in enumerate(loader):
        if step == stop_after:
            break
        optimizer.zero_grad()
        torch.nn.functional.cross_entropy(model(x), y, reduction="sum").backward()  # "sum": defined when empty
        optimizer.step()
        seen.append(index.tolist())
    return seen


def test_random_allocation_sampler_in_opacus_is_accounted_as_random_allocation():
    from dpkit.accounting.events import GaussianEvent, RandomAllocationEvent, SelfComposedEvent
    from dpkit.accounting.registry import make_accountant
    from dpkit.interop.batching import random_allocation_data_loader

    loader = random_allocation_data_loader(_indexed_loader(), generator=torch.Generator().manual_seed(0))
    sampler = loader.batch_sampler
    accountant = opacus_accountant_class()(batching="random-allocation", sampler=sampler)
    engine, model, optimizer, private_loader = _private(accountant, loader)
    assert private_loader.batch_sampler is sampler and len(private_loader) == 8  # t = len(loader) = 256/32
    for _ in range(2):
        seen = _train_epoch(model, optimizer, private_loader)
        assert len(seen) == 8 and sorted(sum(seen, [])) == list(range(256))  # each example once per epoch
    _train_epoch(model, optimizer, private_loader, stop_after=3)  # a partial third epoch
    steps = 2 * 8 + 3
    # Opacus passes sample_rate = 1/len(data_loader) = 1/t at every step
    assert engine.accountant.history == [(1.0, 1 / 8, steps)] and sampler.allocations_drawn == 3
    event = SelfComposedEvent(RandomAllocationEvent(GaussianEvent(sigma=1.0), 8), 3)  # the partial epoch counts
    expected = make_accountant("pld", neighbouring="add-remove").compose(event).get_epsilon(1e-5)
    result = engine.accountant.get_result(1e-5)
    assert engine.get_epsilon(1e-5) == result.epsilon == expected.epsilon
    assert result.epsilon_lower == expected.epsilon_lower and "3 epoch(s) of 8 steps" in result.notes[-1]
    assert all(torch.isfinite(p).all() for p in model.parameters())


def test_empty_random_allocation_batches_still_take_a_noisy_step():
    from dpkit.interop.batching import random_allocation_data_loader

    # 4 examples in 8 steps: at least 4 empty batches an epoch; each is collated to zero rows and
    # still takes a (noise-only) step, which Opacus records like any other.
    loader = random_allocation_data_loader(_indexed_loader(examples=4, batch=1), steps_per_epoch=8,
                                           generator=torch.Generator().manual_seed(1))
    accountant = opacus_accountant_class()("rdp", batching="random-allocation", sampler=loader.batch_sampler)
    engine, model, optimizer, private_loader = _private(accountant, loader, loss_reduction="sum")
    before = [p.detach().clone() for p in model.parameters()]
    seen = _train_epoch(model, optimizer, private_loader)
    assert len(seen) == 8 and seen.count([]) >= 4 and sorted(sum(seen, [])) == [0, 1, 2, 3]
    assert len(engine.accountant) == 8 and engine.accountant.history == [(1.0, 1 / 8, 8)]
    assert all(torch.isfinite(p).all() and not torch.equal(p, b) for p, b in zip(model.parameters(), before))


def test_shuffled_batches_get_the_no_amplification_bound():
    from dpkit.accounting.events import GaussianEvent
    from dpkit.accounting.registry import make_accountant

    loader = _indexed_loader(shuffle=True)
    engine, model, optimizer, private_loader = _private(opacus_accountant_class()(batching="shuffle"), loader)
    assert private_loader is loader
    for _ in range(2):
        assert sorted(sum(_train_epoch(model, optimizer, private_loader), [])) == list(range(256))
    assert engine.accountant.history == [(1.0, 1 / 8, 16)]
    twice = make_accountant("analytic", neighbouring="add-remove").compose(GaussianEvent(sigma=1.0), 2)
    assert engine.get_epsilon(1e-5) == twice.get_epsilon(1e-5).epsilon  # 2 epochs: 2 Gaussian releases
    poisson = DpkitAccountant()
    poisson.history = list(engine.accountant.history)
    assert engine.get_epsilon(1e-5) > poisson.get_epsilon(1e-5)  # not the (unproven) Poisson number


def test_random_allocation_through_opacus_batch_memory_manager_counts_logical_steps():
    from opacus.utils.batch_memory_manager import BatchMemoryManager

    from dpkit.interop.batching import random_allocation_data_loader

    # physical batches of at most 16 from logical batches of about 64: one accounted step per logical batch
    loader = random_allocation_data_loader(_indexed_loader(batch=64), generator=torch.Generator().manual_seed(2))
    sampler = loader.batch_sampler
    accountant = opacus_accountant_class()("rdp", batching="random-allocation", sampler=sampler)
    engine, model, optimizer, private_loader = _private(accountant, loader)
    for _ in range(2):
        with BatchMemoryManager(data_loader=private_loader, max_physical_batch_size=16, optimizer=optimizer) as memory:
            seen = _train_epoch(model, optimizer, memory)
        assert len(seen) > 4 and sorted(sum(seen, [])) == list(range(256))
    assert engine.accountant.history == [(1.0, 1 / 4, 8)] and sampler.allocations_drawn == 2
    reference = DpkitAccountant("rdp", batching="random-allocation", steps_per_epoch=4)
    reference.history = [(1.0, 0.25, 8)]
    assert engine.get_epsilon(1e-5) == reference.get_epsilon(1e-5)
