"""dpkit's auditor side by side with the minimal reference auditor (``benchmarks/minimal_auditor.py``).

    python benchmarks/audit_vs_minimal.py                          # 10⁶ samples, seed 1 (a few minutes)
    python benchmarks/audit_vs_minimal.py --samples 10000000       # the record (docs/audit.md)
    python benchmarks/audit_vs_minimal.py --cases mean_laplace_half geometric --float-bits both

Both auditors get the same total budget, seed and confidence (0.95) on every case; dpkit runs
with its defaults (``float_bits=True``) unless ``--float-bits`` says otherwise. Each line prints the
bound, the true ε, power = bound / true ε and the wall time of each; the summary gives the median
power over the cases with a finite true ε and the cases where dpkit's bound is below the minimal
one. The additive mechanisms round their outputs to a lattice ``2^(⌊log₂ scale⌋ − 16) ℤ`` (as
dpkit's float-safe mechanisms do), so their true ε as executed is that of the design and the
float-bit events must not win: the records, and hence the shifts, are multiples of the lattice.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import os
import sys
import time
from typing import Any, Callable

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from minimal_auditor import minimal_audit  # noqa: E402

from dpkit.accounting.analytic_gaussian import gaussian_epsilon, gaussian_sigma  # noqa: E402
from dpkit.audit import audit, resolve_pairs  # noqa: E402
from dpkit.audit import catalogue as C  # noqa: E402

DELTA = 1e-5


def _snap(values: np.ndarray, scale: float) -> np.ndarray:
    """Round to the lattice 2^(⌊log₂ scale⌋ − 16) ℤ (exact: a power-of-two grid)."""
    grid = 2.0 ** (math.floor(math.log2(scale)) - 16)
    return np.rint(values / grid) * grid


@dataclasses.dataclass(frozen=True)
class LaplaceMean:
    """Mean of 8 records in [0, 1] (public count 8) + Lap(scale), records Poisson-sampled at ``rate``;
    ``keep_first`` always keeps record 0 (a broken sampler)."""

    scale: float
    rate: float = 1.0
    keep_first: bool = False

    def __call__(self, database: Any, n: int, rng: np.random.Generator) -> np.ndarray:
        records = np.asarray(database, dtype=float)
        if self.rate < 1.0:
            kept = rng.random((n, records.size)) < self.rate
            if self.keep_first:
                kept[:, 0] = True
            total = kept @ records
        else:
            total = np.full(n, records.sum())
        return _snap(total / 8.0 + rng.laplace(scale=self.scale, size=n), self.scale)


@dataclasses.dataclass(frozen=True)
class ClippedGaussianSum:
    """One full-batch DP-SGD step: per-record gradients (rows) clipped to norm 1, summed, + N(0, σ² I)."""

    sigma: float

    def __call__(self, database: Any, n: int, rng: np.random.Generator) -> np.ndarray:
        grads = np.asarray(database, dtype=float).reshape(-1, 2)
        norms = np.maximum(np.linalg.norm(grads, axis=1, keepdims=True), 1.0)
        total = (grads / norms).sum(axis=0)
        return _snap(total + rng.normal(scale=self.sigma, size=(n, 2)), self.sigma)


@dataclasses.dataclass(frozen=True)
class GaussianSum:
    """sum(D) + N(0, σ²) (sensitivity 1)."""

    sigma: float

    def __call__(self, database: Any, n: int, rng: np.random.Generator) -> np.ndarray:
        return _snap(np.sum(database) + rng.normal(scale=self.sigma, size=n), self.sigma)


@dataclasses.dataclass(frozen=True)
class LaplaceHistogram:
    """Histogram + Lap(1/ε) per bin (one bin moves by 1)."""

    epsilon: float

    def __call__(self, database: Any, n: int, rng: np.random.Generator) -> np.ndarray:
        q = np.asarray(database, dtype=float)
        return _snap(q + rng.laplace(scale=1.0 / self.epsilon, size=(n, q.size)), 1.0 / self.epsilon)


@dataclasses.dataclass(frozen=True)
class Geometric:
    """Count + two-sided geometric noise, ε-DP (Ghosh, Roughgarden & Sundararajan 2009); integer outputs."""

    epsilon: float

    def __call__(self, database: Any, n: int, rng: np.random.Generator) -> np.ndarray:
        p = 1.0 - math.exp(-self.epsilon)
        return np.sum(database) + rng.geometric(p, size=n) - rng.geometric(p, size=n)


@dataclasses.dataclass(frozen=True)
class RandomizedResponse:
    """One bit, kept with probability e^ε/(1 + e^ε) (Warner 1965): ε-DP."""

    epsilon: float

    def __call__(self, database: Any, n: int, rng: np.random.Generator) -> np.ndarray:
        keep = rng.random(n) < math.exp(self.epsilon) / (1.0 + math.exp(self.epsilon))
        return np.where(keep, float(np.sum(database)), 1.0 - float(np.sum(database)))


@dataclasses.dataclass(frozen=True)
class Case:
    mechanism: Callable[..., Any]
    pairs: Any
    claim: float
    true_epsilon: float
    delta: float = 0.0


def _cases() -> dict[str, Case]:
    zeros = [0.0] * 8
    one = [1.0] + [0.0] * 7
    poisson_rate, base = 0.37, 1.0
    amplified = math.log1p(poisson_rate * math.expm1(base))
    sigma = gaussian_sigma(1.0, DELTA)
    gauss_true = gaussian_epsilon(sigma, DELTA)
    first_rate = 0.2
    return {
        "mean_laplace_half": Case(LaplaceMean(0.5 * (1 / 8) / 0.3), [(one, zeros)], 0.45, 0.6),
        "poisson_mean": Case(LaplaceMean((1 / 8) / base, poisson_rate), [(one, zeros)], amplified, amplified),
        "dpsgd_clip": Case(ClippedGaussianSum(sigma),
                           [([[0.0, 0.0], [0.3, 0.2], [5.0, 0.0]], [[0.0, 0.0], [0.3, 0.2]])], 1.0, gauss_true, DELTA),
        "analytic_gaussian": Case(GaussianSum(sigma), [([1.0], [0.0])], 1.0, gauss_true, DELTA),
        "subsample_first": Case(LaplaceMean((1 / 8) / 2.0, first_rate, keep_first=True), [(one, zeros)],
                                math.log1p(first_rate * math.expm1(2.0)), 2.0),
        "histogram": Case(LaplaceHistogram(1.0), [([2.0, 1, 1, 1, 1], [1.0, 1, 1, 1, 1])], 1.0, 1.0),
        "geometric": Case(Geometric(0.5), [([1.0], [0.0])], 0.5, 0.5),
        "randomized_response": Case(RandomizedResponse(1.0), [([1.0], [0.0])], 1.0, 1.0),
        "noisy_max_exp_value": Case(C.Entry(C.rnm_exp_value, 0.2), "statdp", 0.2, math.inf),
        "svt_stoddard": Case(C.Entry(C.svt_stoddard, 0.7), "statdp", 0.7, math.inf),
    }


def run(name: str, case: Case, samples: int, seed: int, float_bits: bool) -> dict[str, Any]:
    pairs = [(p.first, p.second) for p in resolve_pairs(case.pairs)]
    start = time.perf_counter()
    r = audit(case.mechanism, pairs, claimed_epsilon=case.claim, claimed_delta=case.delta, samples=samples,
              rng=seed, float_bits=float_bits, workers=1)
    t_dpkit = time.perf_counter() - start
    start = time.perf_counter()
    m = minimal_audit(case.mechanism, pairs, case.claim, case.delta, samples=samples, seed=seed)
    t_min = time.perf_counter() - start
    truth = case.true_epsilon

    def power(bound: float) -> float | None:
        return round(bound / truth, 4) if math.isfinite(truth) else None

    return {"case": name, "claim": round(case.claim, 4), "true_epsilon": round(truth, 4), "float_bits": float_bits,
            "dpkit": {"bound": round(r.epsilon_lower_bound, 4), "power": power(r.epsilon_lower_bound),
                      "violation": r.violation, "seconds": round(t_dpkit, 1)},
            "minimal": {"bound": round(m.bound, 4), "power": power(m.bound), "violation": m.violation,
                        "seconds": round(t_min, 1)}}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--samples", type=int, default=1_000_000, help="total per audit (both inputs)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--cases", nargs="+", default=None, help="subset of case names")
    parser.add_argument("--float-bits", choices=("on", "off", "both"), default="on")
    args = parser.parse_args()
    cases = _cases()
    names = args.cases or list(cases)
    unknown = sorted(set(names) - set(cases))
    if unknown:
        parser.error(f"unknown cases {unknown}; choose from {sorted(cases)}")
    settings = {"on": (True,), "off": (False,), "both": (True, False)}[args.float_bits]
    powers: dict[str, list[float]] = {"dpkit": [], "minimal": []}
    behind = []
    for name in names:
        for float_bits in settings:
            row = run(name, cases[name], args.samples, args.seed, float_bits)
            print(json.dumps(row), flush=True)
            if row["dpkit"]["power"] is not None:
                powers["dpkit"].append(row["dpkit"]["power"])
                powers["minimal"].append(row["minimal"]["power"])
            if row["dpkit"]["bound"] < row["minimal"]["bound"]:
                behind.append(f"{name} (float_bits={float_bits})")
    print(json.dumps({"summary": "audit_vs_minimal", "samples": args.samples, "seed": args.seed,
                      "median_power": {k: round(float(np.median(v)), 3) for k, v in powers.items() if v},
                      "dpkit_below_minimal": behind}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
