"""Benchmark: dpkit's PLD accountant against dp_accounting's PLDAccountant and prv_accountant.

DP-SGD with Poisson sampling under add/remove, δ = 1e-5. For each run we time

* dpkit ``PLDAccountant(target_width=w)`` — certified interval [epsilon_lower, epsilon];
* dp_accounting ``PLDAccountant()`` at its default discretisation (pessimistic estimate, no
  error bar);
* prv_accountant ``PRVAccountant`` (its own [low, high] interval at ``eps_error``),

and print them side by side with time ratios. Peer libraries that are not installed are
skipped. prv_accountant is skipped above ``--prv-max-steps`` steps (it takes minutes there).

Usage::

    python benchmarks/pld.py                 # the two runs of issue 3
    python benchmarks/pld.py --json          # one JSON object per run
"""

from __future__ import annotations

import argparse
import json
import time

from dpkit.accounting.events import GaussianEvent, PoissonSampledEvent
from dpkit.accounting.pld import PLDAccountant

RUNS = [  # (q, sigma, steps, target width)
    (0.01, 1.1, 10_000, 1e-3),
    (0.01, 1.1, 1_000_000, 1e-2),
]


def run_dpkit(q, sigma, steps, width, delta):
    start = time.perf_counter()
    acc = PLDAccountant(target_width=width)
    acc.compose(PoissonSampledEvent(GaussianEvent(sigma), q), steps)
    result = acc.get_epsilon(delta)
    return {"epsilon_lower": result.epsilon_lower, "epsilon": result.epsilon,
            "width": result.epsilon - result.epsilon_lower, "seconds": time.perf_counter() - start,
            "notes": list(result.notes)}


def run_dp_accounting(q, sigma, steps, delta):
    try:
        import dp_accounting
        from dp_accounting.pld import pld_privacy_accountant
    except ImportError:
        return None
    start = time.perf_counter()
    acc = pld_privacy_accountant.PLDAccountant()
    acc.compose(dp_accounting.PoissonSampledDpEvent(q, dp_accounting.GaussianDpEvent(sigma)), steps)
    eps = acc.get_epsilon(delta)
    return {"epsilon": eps, "seconds": time.perf_counter() - start}


def run_prv(q, sigma, steps, delta, eps_error):
    try:
        from prv_accountant import PRVAccountant
        from prv_accountant.privacy_random_variables import PoissonSubsampledGaussianMechanism
    except ImportError:
        return None
    start = time.perf_counter()
    acc = PRVAccountant(prvs=[PoissonSubsampledGaussianMechanism(sampling_probability=q, noise_multiplier=sigma)],
                        max_self_compositions=[steps], eps_error=eps_error, delta_error=delta * 1e-3)
    low, estimate, high = acc.compute_epsilon(delta=delta, num_self_compositions=[steps])
    return {"epsilon_lower": low, "epsilon": estimate, "epsilon_upper": high, "width": high - low,
            "seconds": time.perf_counter() - start}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--delta", type=float, default=1e-5)
    parser.add_argument("--prv-max-steps", type=int, default=10_000)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    for q, sigma, steps, width in RUNS:
        row = {"q": q, "sigma": sigma, "steps": steps, "delta": args.delta, "target_width": width}
        row["dpkit"] = run_dpkit(q, sigma, steps, width, args.delta)
        row["dp_accounting"] = run_dp_accounting(q, sigma, steps, args.delta)
        row["prv_accountant"] = run_prv(q, sigma, steps, args.delta, width) if steps <= args.prv_max_steps else None
        for peer in ("dp_accounting", "prv_accountant"):
            if row[peer] is not None:
                row[peer]["time_ratio_peer_over_dpkit"] = row[peer]["seconds"] / row["dpkit"]["seconds"]
        if args.json:
            print(json.dumps(row))
            continue
        d = row["dpkit"]
        print(f"q={q} sigma={sigma} steps={steps} delta={args.delta}")
        print(f"  dpkit          eps in [{d['epsilon_lower']:.6f}, {d['epsilon']:.6f}] width {d['width']:.2e}"
              f"  {d['seconds']:7.2f} s")
        if row["dp_accounting"]:
            p = row["dp_accounting"]
            print(f"  dp_accounting  eps = {p['epsilon']:.6f} (no error bar)"
                  f"           {p['seconds']:7.2f} s  ({p['time_ratio_peer_over_dpkit']:.2f}x dpkit)")
        if row["prv_accountant"]:
            p = row["prv_accountant"]
            print(f"  prv_accountant eps in [{p['epsilon_lower']:.6f}, {p['epsilon_upper']:.6f}] width {p['width']:.2e}"
                  f"  {p['seconds']:7.2f} s  ({p['time_ratio_peer_over_dpkit']:.2f}x dpkit)")


if __name__ == "__main__":
    main()
