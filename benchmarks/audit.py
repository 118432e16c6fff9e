"""Full-size audit benchmark: power on broken mechanisms, false-positive rate on correct ones.

    python benchmarks/audit.py power            # every broken catalogue entry at ε ∈ {0.2, 0.7, 1.5}, default budget
    python benchmarks/audit.py fpr --runs 120   # ≥ 100 audits of correct mechanisms, binomial test of the flag rate
    python benchmarks/audit.py fpr --runs 100 --samples 1000000 --workers 2
    python benchmarks/audit.py compare          # dpkit vs a minimal Clopper-Pearson auditor: time ratio, power
    python benchmarks/audit.py gaussian         # delta > 0: certified vs Gaussian-curve bound / true epsilon

Both use the default settings of ``dpkit.audit.audit`` (10⁷ samples, confidence 0.95) unless
told otherwise, except ``float_bits=False`` (``EXACT``): the catalogue's true ε are those of its
mechanisms in exact arithmetic, and as executed its continuous ones leak through their float bits.
They print one JSON line per audit plus a summary line. The catalogue is
:mod:`dpkit.audit.catalogue`.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import math
import sys
import time

import numpy as np
from scipy import stats

from dpkit.audit import audit, resolve_pairs
from dpkit.audit import catalogue as C
from dpkit.audit.statistics import epsilon_lower_bound

CLAIMS = (0.2, 0.7, 1.5)
EXACT = {"float_bits": False}  # the real-valued designs, whose true ε the catalogue knows


def power(args: argparse.Namespace, executor) -> int:
    missed = 0
    for name, (function, pairs, true_eps) in C.BROKEN.items():
        for claim in CLAIMS:
            start = time.perf_counter()
            r = audit(C.Entry(function, claim), pairs, claimed_epsilon=claim, samples=args.samples, rng=args.seed,
                      executor=executor, **EXACT)
            expected = true_eps(claim) > claim
            missed += expected and not r.violation
            print(json.dumps({"mechanism": name, "claim": claim, "true_epsilon": str(true_eps(claim)),
                              "should_flag": expected, "violation": r.violation,
                              "epsilon_lower_bound": round(r.epsilon_lower_bound, 4), "samples": r.samples,
                              "seconds": round(time.perf_counter() - start, 1), "pair": r.witness["pair"]["label"]}),
                  flush=True)
    print(json.dumps({"summary": "power", "missed": missed}))
    return int(missed > 0)


def fpr(args: argparse.Namespace, executor) -> int:
    names = sorted(C.CORRECT)
    flags = 0
    for run in range(args.runs):
        name = names[run % len(names)]
        claim = CLAIMS[(run // len(names)) % len(CLAIMS)]
        function, pairs = C.CORRECT[name]
        r = audit(C.Entry(function, claim), pairs, claimed_epsilon=claim, samples=args.samples,
                  rng=10_000 + run, executor=executor, **EXACT)
        flags += r.violation
        print(json.dumps({"run": run, "mechanism": name, "claim": claim, "violation": r.violation,
                          "epsilon_lower_bound": round(r.epsilon_lower_bound, 4)}), flush=True)
    alpha = 1 - 0.95
    p = float(stats.binom.sf(flags - 1, args.runs, alpha)) if flags else 1.0
    print(json.dumps({"summary": "fpr", "runs": args.runs, "flags": flags, "rate": flags / args.runs,
                      "p_value_rate_le_alpha": p, "pass": p >= 0.01}))
    return int(p < 0.01)


MINIMAL_SELECT, MINIMAL_CONFIRM = 200_000, 4_000_000


def minimal_audit(mechanism, pairs, claimed_epsilon: float, *, select: int = MINIMAL_SELECT,
                  confirm: int = MINIMAL_CONFIRM,
                  confidence: float = 0.95, seed: int = 0) -> tuple[float, bool]:
    """The independent reference: choose one event on ``select`` outputs (all pairs
    together), count it on ``confirm`` fresh outputs per input, one-sided Clopper-Pearson at α/2
    each. Events: thresholds on every output coordinate at 64 quantiles (both directions) and,
    for discrete outputs, each exact output row. Returns (bound, violation)."""
    rng = np.random.default_rng(seed)
    alpha = 1.0 - confidence
    pair_list = resolve_pairs(pairs)
    per = max(select // (2 * len(pair_list)), 100)
    best = (-np.inf, None, None)

    def outputs(db, n):
        return np.asarray(mechanism(db, n, rng), dtype=float).reshape(n, -1)

    def event_counts(x, event):
        kind, j, t, row = event
        if kind == "row":
            return int(np.count_nonzero(np.all((x == row) | (np.isnan(x) & np.isnan(row)), axis=1)))
        return int(np.count_nonzero(x[:, j] > t)) if kind == "above" else int(np.count_nonzero(x[:, j] <= t))

    for i, pair in enumerate(pair_list):
        x1, x2 = outputs(pair.first, per), outputs(pair.second, per)
        events = []
        rows = np.unique(np.vstack([x1, x2]), axis=0)
        if len(rows) <= 256:
            events += [("row", -1, 0.0, r) for r in rows]
        for j in range(x1.shape[1]):
            values = np.concatenate([x1[:, j], x2[:, j]])
            values = values[np.isfinite(values)]
            for t in np.unique(np.quantile(values, np.linspace(0.01, 0.99, 64))) if values.size else []:
                events += [("above", j, t, None), ("below", j, t, None)]
        for event in events:
            a, b = event_counts(x1, event), event_counts(x2, event)
            for num, den, reverse in ((a, b, False), (b, a, True)):
                bound = epsilon_lower_bound(num, per, den, per, 0.0, alpha)
                if bound > best[0]:
                    best = (bound, (i, event), reverse)
    if best[1] is None:
        return 0.0, False
    (i, event), reverse = best[1], best[2]
    counts = [0, 0]
    for side, db in enumerate((pair_list[i].first, pair_list[i].second)):
        done = 0
        while done < confirm:
            n = min(1 << 16, confirm - done)
            counts[side] += event_counts(outputs(db, n), event)
            done += n
    num, den = (counts[1], counts[0]) if reverse else (counts[0], counts[1])
    bound = max(0.0, epsilon_lower_bound(num, confirm, den, confirm, 0.0, alpha))
    return bound, bound > claimed_epsilon


def compare(args: argparse.Namespace) -> int:
    """Every catalogue entry at the given claims: dpkit vs :func:`minimal_audit` at the same total
    budget (``--samples``, default 2·10⁵ + 2·4·10⁶), interleaved in one process. Prints wall and CPU
    time ratios (CPU time is the fairer one on a loaded machine) and power (bound / true ε)."""
    budget = args.samples or MINIMAL_SELECT + 2 * MINIMAL_CONFIRM
    confirm = (budget - MINIMAL_SELECT) // 2
    cases = [(name, f, pairs, te) for name, (f, pairs, te) in C.BROKEN.items()]
    cases += [(name, f, pairs, lambda e: e) for name, (f, pairs) in C.CORRECT.items()]
    totals = {"dpkit_wall": 0.0, "minimal_wall": 0.0, "dpkit_cpu": 0.0, "minimal_cpu": 0.0}
    powers: dict[str, list[float]] = {"dpkit": [], "minimal": []}
    disagreements = 0
    for name, function, pairs, true_eps in cases:
        for claim in args.claims:
            mech = C.Entry(function, claim)
            wall, cpu = time.perf_counter(), time.process_time()
            r = audit(mech, pairs, claimed_epsilon=claim, samples=budget, rng=args.seed, **EXACT)
            t_dpkit, c_dpkit = time.perf_counter() - wall, time.process_time() - cpu
            wall, cpu = time.perf_counter(), time.process_time()
            bound, violation = minimal_audit(mech, pairs, claim, select=MINIMAL_SELECT, confirm=confirm, seed=args.seed)
            t_min, c_min = time.perf_counter() - wall, time.process_time() - cpu
            totals["dpkit_wall"] += t_dpkit
            totals["minimal_wall"] += t_min
            totals["dpkit_cpu"] += c_dpkit
            totals["minimal_cpu"] += c_min
            disagreements += violation != r.violation
            truth = true_eps(claim)
            if math.isfinite(truth) and truth > claim:
                powers["dpkit"].append(r.epsilon_lower_bound / truth)
                powers["minimal"].append(bound / truth)
            print(json.dumps({"mechanism": name, "claim": claim, "true_epsilon": str(truth),
                              "dpkit": {"bound": round(r.epsilon_lower_bound, 4), "violation": r.violation,
                                        "seconds": round(t_dpkit, 2), "cpu": round(c_dpkit, 2)},
                              "minimal": {"bound": round(bound, 4), "violation": violation, "seconds": round(t_min, 2),
                                          "cpu": round(c_min, 2)},
                              "cpu_ratio_dpkit_over_minimal": round(c_dpkit / c_min, 3)}), flush=True)
    print(json.dumps({"summary": "compare", "samples": budget, "seconds": {k: round(v, 1) for k, v in totals.items()},
                      "wall_ratio_dpkit_over_minimal": round(totals["dpkit_wall"] / totals["minimal_wall"], 3),
                      "cpu_ratio_dpkit_over_minimal": round(totals["dpkit_cpu"] / totals["minimal_cpu"], 3),
                      "median_power": {k: round(float(np.median(v)), 3) for k, v in powers.items() if v},
                      "verdict_disagreements": disagreements}))
    return 0


class GaussianSum:
    """sum(D) + N(0, σ²), a picklable Gaussian mechanism of sensitivity 1."""

    def __init__(self, sigma: float):
        self.sigma = sigma

    def __call__(self, db, n, rng):
        return np.sum(db) + rng.normal(scale=self.sigma, size=n)


def gaussian(args: argparse.Namespace) -> int:
    """δ = 1e-5: σ from the analytic Gaussian at each claim; certified bound and Gaussian-curve bound
    (``assumption="gaussian"``) divided by the true ε (which equals the claim up to calibration rounding)."""
    from dpkit.accounting.analytic_gaussian import gaussian_epsilon, gaussian_sigma

    delta = 1e-5
    for claim in args.claims:
        sigma = gaussian_sigma(claim, delta)
        truth = gaussian_epsilon(sigma, delta)
        row = {"claim": claim, "delta": delta, "true_epsilon": truth}
        for label, assumption in (("certified", None), ("gaussian", "gaussian")):
            start = time.perf_counter()
            r = audit(GaussianSum(sigma), [([0.0], [1.0])], claimed_epsilon=claim, claimed_delta=delta,
                      samples=args.samples, rng=args.seed, assumption=assumption, **EXACT)
            row[label] = {"power": round(r.epsilon_lower_bound / truth, 4), "violation": r.violation,
                          "seconds": round(time.perf_counter() - start, 2)}
        print(json.dumps(row), flush=True)
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("what", choices=("power", "fpr", "compare", "gaussian"))
    parser.add_argument("--runs", type=int, default=120)
    parser.add_argument("--samples", type=int, default=None, help="per audit (default: audit's 10^7)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--claims", type=float, nargs="+", default=list(CLAIMS), help="compare/gaussian: claimed ε")
    args = parser.parse_args()
    if args.what == "fpr" and args.runs < 100:
        print("warning: fewer than 100 runs", file=sys.stderr)
    executor = concurrent.futures.ProcessPoolExecutor(args.workers) if args.workers > 1 else None
    try:
        if args.what in ("compare", "gaussian"):
            return compare(args) if args.what == "compare" else gaussian(args)
        return power(args, executor) if args.what == "power" else fpr(args, executor)
    finally:
        if executor is not None:
            executor.shutdown()


if __name__ == "__main__":
    sys.exit(main())
