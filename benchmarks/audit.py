"""Full-size audit benchmark: power on broken mechanisms, false-positive rate on correct ones.

    python benchmarks/audit.py power            # every broken catalogue entry at ε ∈ {0.2, 0.7, 1.5}, default budget
    python benchmarks/audit.py fpr --runs 120   # ≥ 100 audits of correct mechanisms, binomial test of the flag rate
    python benchmarks/audit.py fpr --runs 100 --samples 1000000 --workers 2

Both use the default settings of ``dpkit.audit.audit`` (10⁷ samples, confidence 0.95) unless
told otherwise, and print one JSON line per audit plus a summary line. The catalogue lives in
``tests/audit/catalogue.py``.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import sys
import time
from pathlib import Path

from scipy import stats

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "audit"))
import catalogue as C  # noqa: E402

from dpkit.audit import audit  # noqa: E402

CLAIMS = (0.2, 0.7, 1.5)


def power(args: argparse.Namespace, executor) -> int:
    missed = 0
    for name, (function, pairs, true_eps) in C.BROKEN.items():
        for claim in CLAIMS:
            start = time.perf_counter()
            r = audit(C.Entry(function, claim), pairs, claimed_epsilon=claim, samples=args.samples, rng=args.seed,
                      executor=executor)
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
                  rng=10_000 + run, executor=executor)
        flags += r.violation
        print(json.dumps({"run": run, "mechanism": name, "claim": claim, "violation": r.violation,
                          "epsilon_lower_bound": round(r.epsilon_lower_bound, 4)}), flush=True)
    alpha = 1 - 0.95
    p = float(stats.binom.sf(flags - 1, args.runs, alpha)) if flags else 1.0
    print(json.dumps({"summary": "fpr", "runs": args.runs, "flags": flags, "rate": flags / args.runs,
                      "p_value_rate_le_alpha": p, "pass": p >= 0.01}))
    return int(p < 0.01)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("what", choices=("power", "fpr"))
    parser.add_argument("--runs", type=int, default=120)
    parser.add_argument("--samples", type=int, default=None, help="per audit (default: audit's 10^7)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--workers", type=int, default=1)
    args = parser.parse_args()
    if args.what == "fpr" and args.runs < 100:
        print("warning: fewer than 100 runs", file=sys.stderr)
    executor = concurrent.futures.ProcessPoolExecutor(args.workers) if args.workers > 1 else None
    try:
        return power(args, executor) if args.what == "power" else fpr(args, executor)
    finally:
        if executor is not None:
            executor.shutdown()


if __name__ == "__main__":
    sys.exit(main())
