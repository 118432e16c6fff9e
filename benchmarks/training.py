"""Wall time of the training algorithms at the papers' scales (issue 6's speed targets).

Runs ``dpkit train`` in-process on UCI Adult (``--adult DIR``, default ../shared/data/adult):
non-private ADMM (N = 5, T = 30), PP-ADMM (N = 5, T = 30; target ≤ 60 s), DP-ADMM (N = 100, T = 100;
target ≤ 10 s) and ADMM-PVP (N = 100, T = 100), and prints time and accuracy. Usage::

    python benchmarks/training.py [--adult DIR]
"""

from __future__ import annotations

import argparse
import pathlib
import time

from dpkit._threads import single_threaded_blas
from dpkit.algorithms import registry
from dpkit.algorithms.data import load_adult

RUNS = (
    ("admm", {}),
    ("pp-admm", {"epsilon": 1.0}),
    ("dp-admm", {"epsilon": 1.0}),
    ("admm-pvp", {"epsilon": 1.0}),
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    default = pathlib.Path(__file__).resolve().parents[2] / "shared" / "data" / "adult"
    parser.add_argument("--adult", default=str(default))
    args = parser.parse_args()
    data = load_adult(args.adult)
    print(f"{'algorithm':<10} {'agents':>6} {'T':>4} {'seconds':>8} {'accuracy':>9}")
    with single_threaded_blas():
        for name, kwargs in RUNS:
            spec = registry.get_algorithm(name)
            start = time.perf_counter()
            result = registry.run_algorithm(name, data, seed=0, **kwargs)
            seconds = time.perf_counter() - start
            print(f"{name:<10} {spec.agents:>6} {spec.iterations:>4} {seconds:>8.2f} {result.accuracy:>9.4f}")


if __name__ == "__main__":
    main()
