"""Benchmark: dpkit's PLD accountant against dp_accounting's PLDAccountant and prv_accountant.

DP-SGD with Poisson sampling under add/remove, δ = 1e-5. For each run we time

* dpkit ``PLDAccountant(target_width=w)`` — certified interval [epsilon_lower, epsilon];
* dp_accounting ``PLDAccountant()`` at its default discretisation (pessimistic estimate, no
  error bar);
* prv_accountant ``PRVAccountant`` (its own [low, high] interval at ``eps_error``),

and print them side by side with time ratios. Peer libraries that are not installed are
skipped. prv_accountant is skipped above ``--prv-max-steps`` steps (it takes minutes there).

Two comparisons of the last digits, each timed ``--repeats`` times
interleaved with the peer in one process (medians reported; the machine may be loaded):

* Laplace(b = 1) composed 10 and 20 times at δ = 1e-6: dpkit with ``target_width=1e-6`` (its
  upper end is within 1e-6 of the exact value, tests/accounting/test_pld.py) against
  dp_accounting's default grid;
* 10⁶ DP-SGD steps (σ = 1, q = 0.01, δ = 1e-5): dpkit with ``target_width=1e-2`` against
  dp_accounting's default.

Usage::

    python benchmarks/pld.py                 # all runs
    python benchmarks/pld.py --json          # one JSON object per run
    python benchmarks/pld.py --only last-digits
    python benchmarks/pld.py --only grids    # dp_accounting at h = 1e-3 and 1e-4, 10³ and 10⁴ steps
    python benchmarks/pld.py --only tightness  # the default width against the exact references in tests/data

The grid comparison times dp_accounting's ``PLDAccountant(value_discretization_interval=h)`` (q = 0.01,
z = 1.1) against dpkit at the widest target width whose certified upper ε is at most dp_accounting's ε.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

from dpkit.accounting.events import (
    DiscreteLaplaceEvent,
    GaussianEvent,
    LaplaceEvent,
    PoissonSampledEvent,
    RandomizedResponseEvent,
)
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
        from prv_accountant.privacy_random_variables import (
            PoissonSubsampledGaussianMechanism,
        )
    except ImportError:
        return None
    start = time.perf_counter()
    acc = PRVAccountant(prvs=[PoissonSubsampledGaussianMechanism(sampling_probability=q, noise_multiplier=sigma)],
                        max_self_compositions=[steps], eps_error=eps_error, delta_error=delta * 1e-3)
    low, estimate, high = acc.compute_epsilon(delta=delta, num_self_compositions=[steps])
    return {"epsilon_lower": low, "epsilon": estimate, "epsilon_upper": high, "width": high - low,
            "seconds": time.perf_counter() - start}


LAST_DIGITS = [  # (name, dpkit factory, dp_accounting factory, delta)
    ("laplace b=1 x10", lambda: (LaplaceEvent(1.0), 10, 1e-6), lambda dpa: (dpa.LaplaceDpEvent(1.0), 10), 1e-6),
    ("laplace b=1 x20", lambda: (LaplaceEvent(1.0), 20, 1e-6), lambda dpa: (dpa.LaplaceDpEvent(1.0), 20), 1e-6),
    ("dp-sgd sigma=1 q=0.01 x1e6", lambda: (PoissonSampledEvent(GaussianEvent(1.0), 0.01), 10**6, 1e-2),
     lambda dpa: (dpa.PoissonSampledDpEvent(0.01, dpa.GaussianDpEvent(1.0)), 10**6), 1e-5),
]


def _reference_cases():
    """(label, event, count, delta, exact ε) of the exact references shipped in tests/data (mpmath, 30–60 digits)."""
    data = Path(__file__).resolve().parents[1] / "tests" / "data"
    pld = json.loads((data / "pld_references.json").read_text())
    pld = {kind: [c for c in cases if "delta" in c] for kind, cases in pld.items() if kind != "generator"}
    for c in pld["gaussian"]:
        yield "gaussian", GaussianEvent(c["sigma"]), c["count"], c["delta"], float(c["epsilon"])
    for c in pld["laplace"]:
        yield "laplace", LaplaceEvent(c["scale"]), c["count"], c["delta"], float(c["epsilon"])
    for c in pld["discrete_laplace"]:
        yield ("discrete laplace", DiscreteLaplaceEvent(c["scale"], c["sensitivity"]), c["count"], c["delta"],
               float(c["epsilon"]))
    for c in json.loads((data / "laplace_composition_references.json").read_text())["laplace"]:
        yield "laplace", LaplaceEvent(c["scale"]), c["count"], c["delta"], float(c["epsilon"])
    rr = pld["randomized_response"] + json.loads((data / "randomized_response_references.json").read_text())["cases"]
    for c in rr:
        yield "randomized response", RandomizedResponseEvent(c["epsilon0"], c["k"]), c["count"], c["delta"], \
            float(c["epsilon"])


def tightness(as_json: bool) -> None:
    """The default PLDAccountant (no target_width) on every exact reference: how many upper ends lie within
    1e-6 of the exact ε, how many intervals miss it (must be 0), and the worst excess, per event kind."""
    rows: dict[str, dict] = {}
    for label, event, count, delta, exact in _reference_cases():
        result = PLDAccountant().compose(event, count).get_epsilon(delta)
        row = rows.setdefault(label, {"cases": 0, "within_1e-6": 0, "missed": 0, "worst_excess": 0.0})
        excess = result.epsilon - exact
        row["cases"] += 1
        row["within_1e-6"] += excess <= 1e-6
        row["missed"] += excess < -1e-12 * max(1.0, exact) or (result.epsilon_lower or 0.0) > exact * (1 + 1e-12)
        row["worst_excess"] = max(row["worst_excess"], excess)
    for label, row in rows.items():
        if as_json:
            print(json.dumps({"kind": label, **row}))
        else:
            print(f"{label}: {row['within_1e-6']}/{row['cases']} within 1e-6 of exact, {row['missed']} intervals "
                  f"missing it, worst excess {row['worst_excess']:.3g}")


def last_digits(repeats: int, as_json: bool) -> None:
    """Interleaved timing of dpkit (certified interval) against dp_accounting's default PLD."""
    try:
        import dp_accounting
        from dp_accounting.pld import pld_privacy_accountant
    except ImportError:
        dp_accounting = None
    for name, ours, theirs, delta in LAST_DIGITS:
        dpkit_times, peer_times = [], []
        result = their_eps = None
        for _ in range(repeats):
            event, count, width = ours()
            start = time.perf_counter()
            result = PLDAccountant(target_width=width).compose(event, count).get_epsilon(delta)
            dpkit_times.append(time.perf_counter() - start)
            if dp_accounting is not None:
                peer_event, peer_count = theirs(dp_accounting)
                start = time.perf_counter()
                acc = pld_privacy_accountant.PLDAccountant()
                acc.compose(peer_event, peer_count)
                their_eps = acc.get_epsilon(delta)
                peer_times.append(time.perf_counter() - start)
        row = {"run": name, "delta": delta, "epsilon_lower": result.epsilon_lower, "epsilon": result.epsilon,
               "width": result.epsilon - result.epsilon_lower, "dpkit_seconds": statistics.median(dpkit_times)}
        if peer_times:
            row["dp_accounting_epsilon"] = their_eps
            row["dp_accounting_seconds"] = statistics.median(peer_times)
            row["time_ratio_peer_over_dpkit"] = row["dp_accounting_seconds"] / row["dpkit_seconds"]
        if as_json:
            print(json.dumps(row))
            continue
        print(f"{name} (delta={delta:g})")
        print(f"  dpkit          eps in [{result.epsilon_lower:.9f}, {result.epsilon:.9f}] width {row['width']:.2e}"
              f"  {row['dpkit_seconds']:7.3f} s")
        if peer_times:
            print(f"  dp_accounting  eps = {their_eps:.9f} (no error bar)"
                  f"              {row['dp_accounting_seconds']:7.3f} s  "
                  f"({row['time_ratio_peer_over_dpkit']:.2f}x dpkit)")


GRID_RUNS = [(1_000, 1e-3), (1_000, 1e-4), (10_000, 1e-3), (10_000, 1e-4)]  # (steps, dp_accounting's h)
WIDTH_LADDER = (4.0, 2.0, 1.0, 0.5, 0.25, 0.125)
"""dpkit's target width is tried at these multiples of dp_accounting's h, widest first."""


def _timed(function, repeats: int) -> tuple[float, object]:
    """(median seconds, last result) of ``repeats`` calls (after one warm-up call)."""
    result = function()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        result = function()
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


def grid_comparison(repeats: int, as_json: bool, delta: float = 1e-5) -> None:
    """DP-SGD (q = 0.01, z = 1.1): dp_accounting's PLDAccountant at value_discretization_interval h against
    dpkit at the widest target width (multiples of h in :data:`WIDTH_LADDER`) whose certified upper ε is at
    most dp_accounting's ε (equal or better tightness); median times and their ratio."""
    try:
        import dp_accounting
        from dp_accounting.pld import pld_privacy_accountant
    except ImportError:
        print("grid comparison skipped: dp_accounting is not installed")
        return
    for steps, h in GRID_RUNS:
        def theirs():
            acc = pld_privacy_accountant.PLDAccountant(value_discretization_interval=h)
            acc.compose(dp_accounting.PoissonSampledDpEvent(0.01, dp_accounting.GaussianDpEvent(1.1)), steps)
            return acc.get_epsilon(delta)

        peer_seconds, peer_eps = _timed(theirs, repeats)
        for multiple in WIDTH_LADDER:
            width = multiple * h

            def ours():
                acc = PLDAccountant(target_width=width)
                return acc.compose(PoissonSampledEvent(GaussianEvent(1.1), 0.01), steps).get_epsilon(delta)

            if ours().epsilon <= peer_eps:
                break
        seconds, result = _timed(ours, repeats)
        row = {"steps": steps, "dp_accounting_h": h, "dp_accounting_epsilon": peer_eps,
               "dp_accounting_seconds": peer_seconds, "dpkit_target_width": width, "epsilon": result.epsilon,
               "epsilon_lower": result.epsilon_lower, "dpkit_seconds": seconds,
               "ratio_dpkit_over_dp_accounting": seconds / peer_seconds, "as_tight": result.epsilon <= peer_eps}
        if as_json:
            print(json.dumps(row))
            continue
        print(f"steps={steps} dp_accounting h={h:g}: eps={peer_eps:.6f} {peer_seconds:.3f} s | dpkit width {width:g}: "
              f"[{result.epsilon_lower:.6f}, {result.epsilon:.6f}] {seconds:.3f} s | dpkit/dp_accounting "
              f"{seconds / peer_seconds:.2f}{'' if row['as_tight'] else ' (NOT as tight)'}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--delta", type=float, default=1e-5)
    parser.add_argument("--prv-max-steps", type=int, default=10_000)
    parser.add_argument("--repeats", type=int, default=3, help="interleaved repetitions of the last-digits runs")
    parser.add_argument("--only", choices=("dpsgd", "last-digits", "grids", "tightness"), default=None)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if args.only == "tightness":
        tightness(args.json)
        return
    if args.only in (None, "grids"):
        grid_comparison(max(args.repeats, 5), args.json, args.delta)
    if args.only == "grids":
        return
    if args.only != "dpsgd":
        last_digits(args.repeats, args.json)
    if args.only == "last-digits":
        return
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
