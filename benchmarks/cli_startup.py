"""Whole-process time of ``dpkit --help`` and an RDP ``dpkit epsilon``, against ``python -c`` doing
the same RDP query with dp_accounting (if installed).

Usage: ``PYTHONPATH=$PWD python benchmarks/cli_startup.py [--repeat N]``. Runs each command N
times, interleaved, and prints the medians and the ratio dpkit / dp_accounting (< 1: dpkit is faster).
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time

QUERY = ["--mechanism", "gaussian", "--sigma", "10", "--count", "100", "--delta", "1e-5", "--accountant", "rdp"]
COMMANDS = {
    "dpkit --help": [sys.executable, "-m", "dpkit.cli.main", "--help"],
    "dpkit epsilon (rdp)": [sys.executable, "-m", "dpkit.cli.main", "epsilon", *QUERY],
    "dp_accounting (rdp)": [sys.executable, "-c", (
        "import dp_accounting\n"
        "a = dp_accounting.rdp.RdpAccountant()\n"
        "a.compose(dp_accounting.SelfComposedDpEvent(dp_accounting.GaussianDpEvent(10.0), 100))\n"
        "print(a.get_epsilon(1e-5))\n")],
}


def _seconds(argv: list[str]) -> float:
    start = time.perf_counter()
    done = subprocess.run(argv, capture_output=True)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed: {done.stderr.decode().strip()}")
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=11)
    args = parser.parse_args()
    try:
        import dp_accounting  # noqa: F401
    except ImportError:
        del COMMANDS["dp_accounting (rdp)"]
    times: dict[str, list[float]] = {name: [] for name in COMMANDS}
    for _ in range(args.repeat):  # interleaved, so that load on the machine hits every command alike
        for name, argv in COMMANDS.items():
            times[name].append(_seconds(argv))
    medians = {name: statistics.median(values) for name, values in times.items()}
    for name, value in medians.items():
        print(f"{name:<22} median {value:.3f} s  (min {min(times[name]):.3f}, max {max(times[name]):.3f})")
    if "dp_accounting (rdp)" in medians:
        reference = medians["dp_accounting (rdp)"]
        for name in ("dpkit --help", "dpkit epsilon (rdp)"):
            print(f"ratio {name} / dp_accounting: {medians[name] / reference:.2f}")


if __name__ == "__main__":
    main()
