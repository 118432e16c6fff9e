"""Exact ε(δ) of k-ary randomized response composed n times, for tests/data/randomized_response_references.json.

Run from the repository root:  python scripts/precompute/randomized_response_references.py  (a few minutes)
Imports nothing from dpkit. With r = 1/(e^ε₀ + k − 1) one use has privacy loss +ε₀ (P-mass e^ε₀·r),
−ε₀ (r) and 0 ((k − 2)·r) (Kairouz, Oh & Viswanath 2015, Thm 2.1); n uses have loss ε₀(a − b) for the
multinomial counts (a, b, n − a − b), enumerated in 40-digit mpmath and grouped by a − b. δ(ε) =
Σ P(m)(1 − e^{ε − ε₀m})₊ is decreasing in ε, and of the form A − e^ε B between atoms: ε(δ) is solved in
closed form on the segment where δ crosses.
"""

from __future__ import annotations

import json
from pathlib import Path

import mpmath

OUT = Path(__file__).resolve().parents[2] / "tests" / "data" / "randomized_response_references.json"
KS = (2, 3, 10, 1000)
EPSILONS0 = (0.1, 1.0, 5.0)
COUNTS = (1, 10, 1000)
DELTAS = (1e-5, 1e-8, 1e-13)


def loss_atoms(epsilon0: float, k: int, n: int) -> dict[int, mpmath.mpf]:
    """P-mass of each composed loss ε₀·m, keyed by m = a − b."""
    e0 = mpmath.mpf(epsilon0)
    r = 1 / (mpmath.e**e0 + k - 1)
    up, down, zero = mpmath.e**e0 * r, r, (k - 2) * r
    atoms: dict[int, mpmath.mpf] = {}
    if k == 2:
        for a in range(n + 1):
            atoms[2 * a - n] = mpmath.binomial(n, a) * up**a * down ** (n - a)
        return atoms
    for a in range(n + 1):
        weight = mpmath.binomial(n, a) * up**a * zero ** (n - a)  # b = 0
        for b in range(n - a + 1):
            atoms[a - b] = atoms.get(a - b, 0) + weight
            if b < n - a:
                weight = weight * (n - a - b) / (b + 1) * down / zero
    return atoms


def epsilon_at(atoms: dict[int, mpmath.mpf], epsilon0: float, delta: float) -> mpmath.mpf:
    """The smallest ε ≥ 0 with δ(ε) ≤ ``delta``. Between consecutive atoms ε₀(j − 1) ≤ ε < ε₀j,
    δ(ε) = A_j − e^ε B_j with A_j = Σ_{m ≥ j} P(m), B_j = Σ_{m ≥ j} P(m)e^{−ε₀m}: solved in closed form."""
    e0 = mpmath.mpf(epsilon0)
    top = max(atoms)
    a_sum, b_sum = mpmath.mpf(0), mpmath.mpf(0)
    for j in range(top, 0, -1):  # segment [ε₀(j − 1), ε₀j)
        a_sum += atoms.get(j, 0)
        b_sum += atoms.get(j, 0) * mpmath.e ** (-e0 * j)
        low = e0 * (j - 1)
        if a_sum - mpmath.e**low * b_sum > delta:  # δ at the segment's left end exceeds δ: the crossing is here
            return mpmath.log((a_sum - delta) / b_sum)
    return mpmath.mpf(0)


def main() -> None:
    cases = []
    with mpmath.workdps(40):
        for k in KS:
            for epsilon0 in EPSILONS0:
                for n in COUNTS:
                    atoms = loss_atoms(epsilon0, k, n)
                    for delta in DELTAS:
                        eps = epsilon_at(atoms, epsilon0, mpmath.mpf(delta))
                        cases.append({"k": k, "epsilon0": epsilon0, "count": n, "delta": delta,
                                      "epsilon": mpmath.nstr(eps, 30)})
    OUT.write_text(json.dumps({"description": __doc__.split("\n\n", 1)[0], "method": __doc__.split("\n\n", 1)[1],
                               "cases": cases}, indent=1) + "\n")


if __name__ == "__main__":
    main()
