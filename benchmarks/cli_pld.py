"""Whole-process time of 10⁶ DP-SGD steps through ``dpkit epsilon --accountant pld --target-width 1e-2``,
against ``python -c`` running dp_accounting's default PLD accountant on the same ledger.

Ledger: Poisson-subsampled Gaussian (σ = 1, rate 0.01) self-composed 10⁶ times, ε at δ = 1e-5.
Usage: ``PYTHONPATH=$PWD python benchmarks/cli_pld.py [--repeat N]``. Runs both commands N times,
interleaved, prints each one's ε, the medians and the ratio dpkit / dp_accounting (< 1: dpkit is faster).
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time

DPKIT = [sys.executable, "-m", "dpkit.cli.main", "epsilon", "--mechanism", "gaussian", "--sigma", "1",
         "--sampling", "poisson", "--rate", "0.01", "--count", "1000000", "--delta", "1e-5",
         "--accountant", "pld", "--target-width", "1e-2"]
DP_ACCOUNTING = [sys.executable, "-c", (
    "import dp_accounting\n"
    "a = dp_accounting.pld.PLDAccountant()\n"
    "event = dp_accounting.PoissonSampledDpEvent(0.01, dp_accounting.GaussianDpEvent(1.0))\n"
    "a.compose(dp_accounting.SelfComposedDpEvent(event, 10**6))\n"
    "print('epsilon', a.get_epsilon(1e-5))\n")]


def _run(argv: list[str]) -> tuple[float, str]:
    start = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed: {done.stderr.strip()}")
    return elapsed, done.stdout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    commands = {"dpkit epsilon (pld, width 1e-2)": DPKIT, "dp_accounting PLD (default)": DP_ACCOUNTING}
    times: dict[str, list[float]] = {name: [] for name in commands}
    outputs: dict[str, str] = {}
    for _ in range(args.repeat):  # interleaved, so that load on the machine hits both alike
        for name, argv in commands.items():
            seconds, outputs[name] = _run(argv)
            times[name].append(seconds)
    for name, values in times.items():
        answer = next((line.strip() for line in outputs[name].splitlines() if "epsilon" in line), "")
        print(f"{name:<32} median {statistics.median(values):.2f} s  (min {min(values):.2f}, max {max(values):.2f})"
              f"  {answer}")
    dpkit, reference = (statistics.median(times[name]) for name in commands)
    print(f"ratio dpkit / dp_accounting: {dpkit / reference:.2f}")


if __name__ == "__main__":
    main()
