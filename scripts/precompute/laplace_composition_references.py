"""Exact ε(δ) of Laplace(b = 1, Δ = 1) composed 10 and 20 times, for the CLI's ``--target-width`` tests.

Writes ``tests/data/laplace_composition_references.json``. δ(ε) is the closed form of
:func:`pld_references.laplace_delta` (atoms ±ε₀ and the Irwin–Hall-distributed sum of the
continuous parts, integrated exactly piece by piece in 50-digit mpmath, independently of
dpkit); ε(δ) is its root (bisection to 1e-6, then a secant polish checked to stay in the
bracket, to 1e-50). Each value is stored as a 30-digit string. Run from the repository root:
``python scripts/precompute/laplace_composition_references.py`` (about a minute).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import mpmath as mp

sys.path.insert(0, str(Path(__file__).resolve().parent))
from pld_references import bisect_epsilon, laplace_delta  # noqa: E402

OUT = Path(__file__).resolve().parents[2] / "tests" / "data" / "laplace_composition_references.json"


def main() -> None:
    cases = []
    for count in (10, 20):
        for delta in (1e-5, 1e-6):
            eps = bisect_epsilon(lambda e: laplace_delta(1.0, count, e), delta, hi=count + 1, smooth=True)  # noqa: B023
            cases.append({"scale": 1.0, "count": count, "delta": delta, "epsilon": mp.nstr(eps, 30)})
            print(cases[-1], flush=True)
    payload = {"generator": "scripts/precompute/laplace_composition_references.py (mpmath, 50 digits)",
               "laplace": cases}
    OUT.write_text(json.dumps(payload, indent=1) + "\n")


if __name__ == "__main__":
    main()
