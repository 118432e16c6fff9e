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
