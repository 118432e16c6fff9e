"""Train a tiny model with Opacus's PrivacyEngine, dpkit's accountant plugged in, and compare ε.

Needs torch and opacus (extra ``opacus``)::

    python benchmarks/opacus_accountant.py [--epochs 3] [--json]

The engine's accountant is replaced by :class:`dpkit.interop.opacus.DpkitAccountant` before
``make_private`` (which attaches the accountant's step hook to the DP optimizer). After
training, the history the hook recorded is replayed into Opacus's own RDP and PRV accountants
and dpkit's RDP accountant, and every ε is printed at the same δ.
"""

from __future__ import annotations

import argparse
import json
import time


def train(epochs: int, noise_multiplier: float, batch_size: int, examples: int, seed: int) -> dict:
    import torch
    from opacus import PrivacyEngine
    from opacus.accountants import PRVAccountant, RDPAccountant

    from dpkit.interop.opacus import DpkitAccountant, opacus_accountant_class

    torch.manual_seed(seed)
    features = torch.randn(examples, 8)
    labels = (features[:, 0] + 0.5 * features[:, 1] > 0).long()
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(features, labels), batch_size=batch_size)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 2))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.5)

    engine = PrivacyEngine()
    engine.accountant = opacus_accountant_class()()  # before make_private: it attaches the step hook
    model, optimizer, loader = engine.make_private(module=model, optimizer=optimizer, data_loader=loader,
                                                   noise_multiplier=noise_multiplier, max_grad_norm=1.0)
    loss_fn = torch.nn.CrossEntropyLoss()
    for _ in range(epochs):
        for x, y in loader:
            if len(y) == 0:
                continue
            optimizer.zero_grad()
            loss_fn(model(x), y).backward()
            optimizer.step()
    with torch.no_grad():
        accuracy = float((model(features).argmax(1) == labels).float().mean())

    delta = 1.0 / examples
    history = list(engine.accountant.history)
    out = {"history": history, "steps": len(engine.accountant), "delta": delta, "train_accuracy": accuracy}
    timings = {}
    for name, accountant in [("dpkit_pld", engine.accountant), ("dpkit_rdp", DpkitAccountant("rdp")),
                             ("opacus_rdp", RDPAccountant()), ("opacus_prv", PRVAccountant())]:
        accountant.history = list(history)
        start = time.perf_counter()
        out[f"epsilon_{name}"] = accountant.get_epsilon(delta)
        timings[name] = time.perf_counter() - start
    out["epsilon_dpkit_pld_lower"] = engine.accountant.get_result(delta).epsilon_lower
    out["engine_get_epsilon"] = engine.get_epsilon(delta)
    out["seconds"] = timings
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--noise-multiplier", type=float, default=1.1)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--examples", type=int, default=2048)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    out = train(args.epochs, args.noise_multiplier, args.batch, args.examples, args.seed)
    if args.json:
        print(json.dumps(out, indent=2))
        return
    print(f"steps {out['steps']}, history {out['history']}, delta {out['delta']:g}, "
          f"train accuracy {out['train_accuracy']:.3f}")
    print(f"dpkit PLD  : epsilon <= {out['epsilon_dpkit_pld']:.6f} (certified >= {out['epsilon_dpkit_pld_lower']:.6f})")
    for name in ("dpkit_rdp", "opacus_rdp", "opacus_prv"):
        print(f"{name:<11}: epsilon = {out[f'epsilon_{name}']:.6f}")
    print("seconds:", {k: round(v, 4) for k, v in out["seconds"].items()})


if __name__ == "__main__":
    main()
