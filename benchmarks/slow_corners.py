"""Slow corners of the PLD accountant, calibration and the shuffling / bounded-range bounds: the time of
each query that once took from 30 s to many minutes, which should now answer within 10 s on one core
or refuse at once in one line naming the faster route.

Every case runs in its own process (CLI cases through ``python -m dpkit.cli.main``, library cases
through ``python -c``), killed after ``--timeout`` seconds. Prints, per case: the wall time, the CPU time
of the process (what one quiet core takes, whatever the load), the outcome (``answered``, ``refused``
with exit status 2, ``TIMEOUT``, or ``FAILED``) and the first line of the answer. Exit status 1 if a
case used more than ``--limit`` CPU seconds (default 10) or failed.

Usage: ``PYTHONPATH=$PWD python benchmarks/slow_corners.py [--timeout 60] [--limit 10] [--only NAME ...]``
"""

from __future__ import annotations

import argparse
import math
import resource
import subprocess
import sys
import time

_EPSILON = [sys.executable, "-m", "dpkit.cli.main", "epsilon"]
_CALIBRATE = [sys.executable, "-m", "dpkit.cli.main", "calibrate"]
_WOR_GAUSSIAN = ["--mechanism", "gaussian", "--sigma", "0.93", "--sampling", "without-replacement",
                 "--batch", "46", "--population", "2400", "--count", "184", "--delta", "3.5e-12",
                 "--neighbouring", "replace-one"]
_WOR_LAPLACE = ["--mechanism", "laplace", "--scale", "5.55", "--sampling", "without-replacement",
                "--batch", "6", "--population", "3433", "--count", "2946", "--delta", "1e-5"]


def _python(code: str) -> list[str]:
    return [sys.executable, "-c", code]


_TIGHTEST_WOR = _python(
    "from dpkit.accounting import TightestAccountant\n"
    "from dpkit.accounting.events import GaussianEvent, SampledWithoutReplacementEvent, repeat\n"
    "a = TightestAccountant('replace-one')\n"
    "a.compose(repeat(SampledWithoutReplacementEvent(GaussianEvent(0.93), 46, 2400), 184))\n"
    "r = a.get_epsilon(3.5e-12)\n"
    "print('epsilon <=', r.epsilon, 'by', r.accountant)\n")

CASES: dict[str, list[str]] = {
    "wor-gaussian pld": _EPSILON + _WOR_GAUSSIAN + ["--accountant", "pld"],
    "wor-gaussian tightest": _TIGHTEST_WOR,
    "wor-gaussian rdp": _EPSILON + _WOR_GAUSSIAN + ["--accountant", "rdp"],
    "wor-laplace pld": _EPSILON + _WOR_LAPLACE + ["--accountant", "pld"],
    "dp-sgd x1e6 pld default width": _EPSILON + ["--sigma", "1", "--sampling", "poisson", "--rate", "0.01", "--count",
                                                "1000000", "--delta", "1e-5", "--accountant", "pld"],
    "wor-gaussian pld count 1e12": _EPSILON + ["--mechanism", "gaussian", "--sigma", "1", "--sampling",
                                              "without-replacement", "--batch", "10", "--population", "1000",
                                              "--count", "1000000000000", "--delta", "1e-5", "--accountant", "pld"],
    "gaussian x1e6 delta 1e-300 pld": _EPSILON + ["--sigma", "1", "--count", "1000000", "--delta", "1e-300",
                                                  "--accountant", "pld"],
    "gaussian x1e12 delta 1e-300 pld": _EPSILON + ["--sigma", "1", "--count", "1000000000000", "--delta", "1e-300",
                                                   "--accountant", "pld"],
    "laplace x1e6 delta 1e-300 pld": _EPSILON + ["--mechanism", "laplace", "--scale", "10", "--count", "1000000",
                                                 "--delta", "1e-300", "--accountant", "pld"],
    "laplace x1e12 delta 1e-300 pld": _EPSILON + ["--mechanism", "laplace", "--scale", "10", "--count",
                                                  "1000000000000", "--delta", "1e-300", "--accountant", "pld"],
    "rr x1e9 delta 1e-300 pld": _EPSILON + ["--mechanism", "randomized-response", "--epsilon0", "0.1", "--count",
                                            "1000000000", "--delta", "1e-300", "--accountant", "pld"],
    "poisson x1e6 delta 1e-300 pld": _EPSILON + ["--sigma", "1", "--sampling", "poisson", "--rate", "0.01",
                                                 "--count", "1000000", "--delta", "1e-300", "--accountant", "pld"],
    "poisson x1e12 delta 1e-300 pld": _EPSILON + ["--sigma", "1", "--sampling", "poisson", "--rate", "0.01",
                                                  "--count", "1000000000000", "--delta", "1e-300",
                                                  "--accountant", "pld"],
    "poisson q=1e-300 delta 1e-300 pld": _EPSILON + ["--sigma", "1", "--sampling", "poisson", "--rate", "1e-300",
                                                     "--delta", "1e-300", "--accountant", "pld"],
    "calibrate pld epsilon 1e-12": _CALIBRATE + ["--epsilon", "1e-12", "--delta", "1e-5", "--count", "10",
                                                 "--accountant", "pld"],
    "calibrate pld poisson epsilon 1e-12": _CALIBRATE + ["--epsilon", "1e-12", "--delta", "1e-5", "--count", "100",
                                                         "--sampling", "poisson", "--rate", "0.01",
                                                         "--accountant", "pld"],
    "calibrate pld without-replacement epsilon 1e-12": _CALIBRATE + [
        "--epsilon", "1e-12", "--delta", "1e-5", "--count", "184", "--sampling", "without-replacement", "--batch", "46",
        "--population", "2400", "--accountant", "pld"],
    "bounded_range_composition_epsilon(1, 100, 1e-10)": _python(
        "from dpkit.accounting.pld import bounded_range_composition_epsilon\n"
        "print('epsilon <=', bounded_range_composition_epsilon(1.0, 100, 1e-10))\n"),
    "shuffle_epsilon(1e-6, 1, n=1e12)": _python(
        "from dpkit.accounting.shuffling import shuffle_epsilon\n"
        "print('epsilon <=', shuffle_epsilon(1e-6, 1.0, 10**12))\n"),
}


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_case(argv: list[str], timeout: float) -> tuple[float, float, str, str]:
    """(wall seconds, CPU seconds, outcome, first line of the answer) of one case. The CPU time (of a
    finished process) is what one quiet core would take; the wall time grows with the machine's load."""
    start, cpu = time.perf_counter(), _children_cpu()
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return time.perf_counter() - start, math.nan, "TIMEOUT", ""
    seconds, cpu = time.perf_counter() - start, _children_cpu() - cpu
    lines = [line.strip() for line in (done.stdout + done.stderr).splitlines() if line.strip()]
    first = lines[0] if lines else ""
    outcome = {0: "answered", 2: "refused"}.get(done.returncode, f"FAILED ({done.returncode})")
    return seconds, cpu, outcome, first


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds before a case is killed")
    parser.add_argument("--limit", type=float, default=10.0, help="CPU seconds a case may take")
    parser.add_argument("--only", nargs="*", help="run only the cases whose name contains one of these")
    args = parser.parse_args()
    bad = 0
    for name, argv in CASES.items():
        if args.only and not any(part in name for part in args.only):
            continue
        seconds, cpu, outcome, first = run_case(argv, args.timeout)
        slow = not cpu <= args.limit or outcome not in ("answered", "refused")
        bad += slow
        print(f"{name:<50} {seconds:7.2f} s wall {cpu:7.2f} s CPU  {outcome:<9}{'  SLOW' if slow else ''}  "
              f"{first[:120]}", flush=True)
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
