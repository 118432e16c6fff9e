"""Audits of slow mechanisms: run-time estimates against the actual time, and the speed-up of workers.

    python benchmarks/audit_throughput.py                 # synthetic slow mechanisms (fixed numpy work per output)
    python benchmarks/audit_throughput.py --libraries     # also the installed libraries' calls of >= 40 us per output
    python benchmarks/audit_throughput.py --quick         # smaller budgets

For each case the audit runs serially (``workers=1``) and with the default worker choice
(``workers=None``: a timed pilot, then process workers up to the available cores when one output
costs ≥ 50 µs), on the same seed. Printed per run: every run-time estimate the audit reported
(``result.throughput["estimates"]``: when it was made and the total it predicted) as the ratio
predicted / actual time of the outputs it covers, the workers used, the wall time, the speed-up, and whether the two runs
agree bit for bit (bound, p-value, witness; a library that ignores the audit's seed cannot), with the
machine's load average. The claim is "every ratio within [1/2, 2]"; on a machine shared with other
work, the load changes during a run and so do both the ratios and the speed-up.

The synthetic mechanism makes one output per loop iteration (as diffprivlib, python-dp and OpenDP's
scalar calls do) with a fixed amount of numpy work per output: no ``time.sleep``, so a worker
process does the same work, not the same waiting.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from typing import Any

import numpy as np

from dpkit.audit import audit, resolve_pairs
from dpkit.audit.libraries import seed_reproducible


class FixedWorkLaplace:
    """A Laplace sum (scale ``scale``) per output, after ``work`` elements of numpy work (a cumsum)."""

    def __init__(self, scale: float, work: int):
        self.scale, self.work = float(scale), int(work)

    def __call__(self, db: Any, n: int, rng: np.random.Generator) -> np.ndarray:
        x = np.linspace(0.0, 1.0, self.work)  # built per call: the pickled mechanism stays small
        out = np.empty(n)
        total = float(np.sum(db))
        for i in range(n):
            np.cumsum(x)
            out[i] = total + rng.laplace(scale=self.scale)
        return out

    def __repr__(self) -> str:
        return f"FixedWorkLaplace(scale={self.scale}, work={self.work})"


def _ratios(result: Any) -> list[list[float]]:
    """``[made at s, predicted / actual]`` of every estimate: an estimate covers the outputs planned when it
    was made (with samples='auto', the selection until the confirmation is sized), so its actual time is
    when the run had drawn them (the start of the next phase, or the end of the run)."""
    phases = result.throughput["phases"]
    out = []
    for at, total, planned in result.throughput["estimates"]:
        actual = next((t for t, drawn in phases if drawn >= planned), result.seconds)
        out.append([round(at, 2), round(total / actual, 3)])
    return out


def _same(a: Any, b: Any) -> bool:
    return (a.epsilon_lower_bound == b.epsilon_lower_bound and a.p_value == b.p_value and a.witness == b.witness
            and a.samples == b.samples)


def run_case(name: str, mechanism: Any, pairs: Any, claim: float, samples: Any, delta: float = 0.0,
             seed: int = 0) -> dict[str, Any]:
    runs = {}
    for label, workers in (("serial", 1), ("auto", None)):
        began = time.perf_counter()
        r = audit(mechanism, pairs, claimed_epsilon=claim, claimed_delta=delta, samples=samples, rng=seed,
                  workers=workers)
        wall = time.perf_counter() - began
        ratios = _ratios(r)
        runs[label] = r
        print(json.dumps({"case": name, "run": label, "workers": r.throughput["workers"],
                          "speedup_assumed": round(r.throughput["speedup_assumed"], 2),
                          "pilot_us_per_output": round(r.throughput["pilot"]["per_output"] * 1e6, 1),
                          "pilot_ms_per_call": round(r.throughput["pilot"]["per_call"] * 1e3, 3),
                          "samples": r.samples, "seconds": round(r.seconds, 2), "wall": round(wall, 2),
                          "estimates_at_s_and_ratio": ratios,
                          "ratio_range": [min(x[1] for x in ratios), max(x[1] for x in ratios)] if ratios else None,
                          "violation": r.violation, "bound": round(r.epsilon_lower_bound, 4),
                          "sample_plan": r.sample_plan}), flush=True)
    serial, auto = runs["serial"], runs["auto"]
    reproducible = seed_reproducible(mechanism, resolve_pairs(pairs)[0].first)
    summary = {"case": name, "speed_up": round(serial.seconds / auto.seconds, 2),
               "workers": auto.throughput["workers"],
               "identical": _same(serial, auto) if reproducible else "n/a: the mechanism ignores the seed",
               "load_average": round(os.getloadavg()[0], 2)}
    print(json.dumps(summary), flush=True)
    return summary


def run_search_case(name: str, mechanism: Any, budget: int, seed: int = 0) -> dict[str, Any]:
    """The search's own estimates (``SearchResult.throughput``) against its wall time."""
    from dpkit.audit.search import search_pairs

    began = time.perf_counter()
    found = search_pairs(mechanism, claimed_epsilon=1.0, budget=budget, lengths=(5, 10), relation="one",
                         population=16, rng=seed)
    actual = time.perf_counter() - began
    ratios = [[round(at, 2), round(total / actual, 3)] for at, total, _ in found.throughput["estimates"]]
    summary = {"case": name, "run": "search", "workers": found.throughput["workers"], "samples": found.samples,
               "seconds": round(actual, 2), "estimates_at_s_and_ratio": ratios,
               "ratio_range": [min(x[1] for x in ratios), max(x[1] for x in ratios)] if ratios else None}
    print(json.dumps(summary), flush=True)
    return summary


def library_cases(slowest: float) -> list[tuple[str, Any, Any, float, float]]:
    """(name, mechanism, pairs, claimed ε, claimed δ) of the installed libraries' calls whose pilot
    costs at least ``slowest`` seconds per output (the ones the workers are for)."""
    from dpkit.audit.libraries import library_cases as cases
    from dpkit.audit.runner import Runner

    out = []
    for case in cases():
        cost = Runner(case.mechanism, 0).pilot(case.pairs[0][0])
        if cost.per_output_at(256) >= slowest:
            out.append((f"{case.library}: {case.name}", case.mechanism, case.pairs, case.claimed_epsilon,
                        case.claimed_delta))
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--libraries", action="store_true")
    args = parser.parse_args()
    scale = 0.25 if args.quick else 1.0
    pairs = [([0.0, 1.0], [1.0, 1.0])]
    summaries = []
    # ~100 us and ~1 ms per output (numpy work), correct (scale 1) and broken (scale 0.5) at claim 1
    for work, samples in ((20_000, 300_000), (200_000, 30_000)):
        mech = FixedWorkLaplace(0.5, work)
        summaries.append(run_case(f"{mech!r}, fixed budget", mech, pairs, 1.0, int(samples * scale)))
    mech = FixedWorkLaplace(0.5, 20_000)
    summaries.append(run_case(f"{mech!r}, samples='auto'", mech, pairs, 1.0, "auto"))
    summaries.append(run_search_case(f"{mech!r}, search_pairs", mech, int(200_000 * scale)))
    if args.libraries:
        for name, mech, lib_pairs, eps, delta in library_cases(40e-6):
            summaries.append(run_case(name, mech, lib_pairs, eps, int(20_000 * scale), delta))
    print(json.dumps({"summary": summaries}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
