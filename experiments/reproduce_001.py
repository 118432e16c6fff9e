"""Reproduce seed 001 (two-phase heterogeneous-privacy ADMM): the Adult convergence study and Table I.

Writes ``docs/reproductions/001.md`` and the numbers behind it to ``experiments/results/001.json``
(read by ``experiments/plot_reproductions.py``). Usage::

    /work/venv/bin/python experiments/reproduce_001.py [--adult DIR] [--m 1000] [--iterations 60]
    /work/venv/bin/python experiments/reproduce_001.py --table1 FILE.csv|FILE.libsvm [...]

The paper's Adult study uses 10 servers on a random connected graph with 13 links and
m_i = 4,500 records (d = 105); the default here reduces m_i to 1,000 so the whole sweep runs in
minutes on a shared laptop (``--m 4500`` for the paper's size). V_i, β, a, T and the η
distribution are not given by the paper: V = 0.1, β = 0.01, a = 0.01, η ~ U[−R, R]^d.
Empirical risk = the true-label objective (1) of the running averages w̄_i(t).
``--table1`` runs the Table I settings (non-private; modified loss ε = 0.4, 1 with R = 0; perturbed
ADMM ε ∈ {0.4, 1} × R ∈ {1, 9}) on any benchmark file the user supplies (70/30 split).
"""

from __future__ import annotations

import argparse
import math
import pathlib

import numpy as np

from dpkit.algorithms import hetero_admm as H
from dpkit.algorithms.data import load_adult, load_dataset, train_test_split
from dpkit.algorithms.graphs import random_connected
from dpkit.algorithms.partition import partition
from pages import write_page  # experiments/pages.py

ROOT = pathlib.Path(__file__).resolve().parents[1]
RESULTS = ROOT / "experiments" / "results" / "001.json"
CURVES = [("modified loss ε=1, R=0, V=0", dict(epsilon=1.0, R=0.0, V=0.0, rho=0.8)),
          ("perturbed ε=1, R=1, V=0.1, ρ=0.8", dict(epsilon=1.0, R=1.0, V=0.1, rho=0.8)),
          ("perturbed ε=1, R=9, V=0.1, ρ=0.8", dict(epsilon=1.0, R=9.0, V=0.1, rho=0.8))]

def objective(parts, models, a: float) -> float:
    """The paper's objective (1) with true labels: Σ_i [mean ℓ(y w_iᵀx) + (a/n)·½||w_i||²]."""
    n = len(parts)
    return float(sum(np.mean(np.logaddexp(0, -p.y * (p.X @ w))) + (a / n) * 0.5 * w @ w for p, w in zip(parts, models)))


def run(parts, graph, test, T, seed, **kw):
    res = H.train_hetero_admm(parts, graph, iterations=T, test=test, rng=seed, **kw)
    return res, objective(parts, res.models, kw.get("a", 0.01))


def number(x) -> float | None:
    """A float for JSON (None for ±inf / NaN)."""
    x = float(x)
    return x if math.isfinite(x) else None


def risk_curves(parts, g, test, T, common) -> dict:
    """The risk-versus-iteration runs (Fig. 3(b), 4(a)): label -> (iterations, risk, ε, final risk, result)."""
    curves = {}
    for label, kw in CURVES:
        res, risk = run(parts, g, test, T, 0, **kw, **common)
        curves[label] = (res.history["iteration"], res.history["empirical_risk"], res.history["epsilon_phase2"], risk, res)
    return curves


def curves_json(curves: dict) -> dict:
    return {label: {"iteration": [int(t) for t in its], "empirical_risk": [number(r) for r in risk],
                    "epsilon_phase2": [number(e) for e in eps], "final_risk": number(final),
                    "test_accuracy": number(res.accuracy)}
            for label, (its, risk, eps, final, res) in curves.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--adult", default=str(ROOT.parent / "shared" / "data" / "adult"))
    parser.add_argument("--m", type=int, default=1000, help="records per server (paper: 4500)")
    parser.add_argument("--iterations", type=int, default=60)
    parser.add_argument("--table1", nargs="*", help="benchmark files for Table I")
    args = parser.parse_args()
    common = dict(a=0.01, beta=0.01, delta=1e-5)
    T = args.iterations

    if args.table1:
        lines = ["| dataset | non-private | ML ε=0.4 R=0 | ML ε=1 R=0 | PA ε=0.4 R=1 | ε=0.4 R=9 | ε=1 R=1 | ε=1 R=9 |",
                 "|---|---|---|---|---|---|---|---|"]
        for path in args.table1:
            data = load_dataset(path)
            train, test = train_test_split(data, 0.7, 0)
            m = train.n // 10
            parts = partition(train, 10, rng=0)
            g = random_connected(10, 13, 0)
            accs = [run(parts, g, test, T, 0, epsilon=None, R=0.0, V=0.0, rho=0.8, **common)[0].accuracy]
            for eps, R, V in [(0.4, 0, 0), (1, 0, 0), (0.4, 1, 0.1), (0.4, 9, 0.1), (1, 1, 0.1), (1, 9, 0.1)]:
                accs.append(run(parts, g, test, T, 0, epsilon=eps, R=float(R), V=V, rho=0.8, **common)[0].accuracy)
            lines.append(f"| {data.name} (m_i={m}) | " + " | ".join(f"{100 * a:.2f}" for a in accs) + " |")
        print("\n".join(lines))
        return

    data = load_adult(args.adult, "105")
    n_train = 10 * args.m
    train, test = train_test_split(data, n_train, 0)
    parts = partition(train, 10, rng=0)
    g = random_connected(10, 13, 0)
    lines = ["# Seed 001 reproduction: heterogeneous-privacy ADMM (Wang et al., IEEE TSP 2020)", "",
             "Generated by `experiments/reproduce_001.py` (seeded). Spec: `../shared/spec/001.md`.", "",
             f"Adult, d = {data.d}, n = 10 servers, random connected graph with 13 links, m_i = {args.m} "
             f"(paper: 4,500), T = {T}, a = 0.01, β = 0.01, V = 0.1 (V, β, a not given by the paper), "
             "η ~ U[−R, R]^d. Risk = objective (1) with true labels at the running averages w̄_i(T); "
             f"test accuracy on {test.n} held-out rows. ε corrected = the record's ε(δ = 1e-5) against the other servers "
             "from the published iterates (exact Gaussian composition, η ignored).", ""]

    ref, ref_risk = run(parts, g, test, T, 0, epsilon=None, R=0.0, V=0.0, rho=0.8, **common)
    results = {"setting": {"m": args.m, "iterations": T, "servers": 10, "links": 13, "d": data.d, **common, "V": 0.1},
               "reference": {"risk": number(ref_risk), "test_accuracy": number(ref.accuracy)}, "sweeps": {}}
    lines += [f"Reference (general ADMM, true labels, no perturbation): risk {ref_risk:.4f}, accuracy {ref.accuracy:.4f}.", ""]

    # risk versus iterations (Fig. 3(b) / 4(a))
    curves = risk_curves(parts, g, test, T, common)
    results["curves"] = curves_json(curves)
    its = curves[next(iter(curves))][0]
    pick = [i for i, t in enumerate(its) if t in (0, 1, 2, 5, 10, 20, 30, 40, 50, 60, T)]
    lines += ["## Empirical risk versus iterations (Fig. 3(b), 4(a))", "",
              "Average over servers of the mean loss of w̄_i(t) on its own data (true labels); ε columns: record's ε(δ=1e-5).", "",
              "| t | " + " | ".join(curves) + " | ε after t (R=1 run) |", "|---" * (len(curves) + 2) + "|"]
    for i in pick:
        row = [f"{curves[k][1][i]:.4f}" for k in curves]
        eps_t = curves["perturbed ε=1, R=1, V=0.1, ρ=0.8"][2][i]
        lines.append(f"| {its[i]} | " + " | ".join(row) + f" | {eps_t:.4g} |")
    lines += ["", "![Seed 001: empirical risk and record-level epsilon against the iteration](001_risk.png)", "",
              "Plot: `experiments/plot_reproductions.py` from `experiments/results/001.json`.", ""]

    def sweep(title, values, make):
        out = ["## " + title, "", "| value | final risk (objective 1) | test accuracy | ε label | ε corrected (δ = 1e-5) |",
               "|---|---|---|---|---|"]
        rows = results["sweeps"].setdefault(title, [])
        for v in values:
            res, risk = run(parts, g, test, T, 0, **make(v), **common)
            rows.append({"value": v, "risk": number(risk), "test_accuracy": number(res.accuracy),
                         "epsilon_label": res.epsilon_paper, "epsilon_corrected": number(res.epsilon_corrected)})
            out.append(f"| {v} | {risk:.4f} | {res.accuracy:.4f} | {res.epsilon_paper} | {res.epsilon_corrected:.4g} |")
        return out + [""]

    lines += sweep("Risk versus R (Fig. 4(a); ε = 1, ρ = 0.8)", (0.0, 1.0, 3.0, 9.0),
                   lambda R: dict(epsilon=1.0, R=R, V=0.1, rho=0.8))
    lines += sweep("Risk versus ρ (Fig. 4(b); ε = 1, R = 1)", (0.5, 0.8, 0.95),
                   lambda rho: dict(epsilon=1.0, R=1.0, V=0.1, rho=rho))
    lines += sweep("Risk versus ε (Fig. 4(c); Phase 1 only: R = 0, V = 0)", (0.2, 0.4, 0.6, 1.0, 2.0),
                   lambda e: dict(epsilon=e, R=0.0, V=0.0, rho=0.8))
    lines += sweep("Risk versus ε (Fig. 4(c); Phases 1 + 2: R = 1, V = 0.1, ρ = 0.8)", (0.2, 0.4, 0.6, 1.0, 2.0),
                   lambda e: dict(epsilon=e, R=1.0, V=0.1, rho=0.8))
    common_a = dict(common, a=0.1)
    lines += ["## Risk versus R with a stronger regulariser (a = 0.1; ε = 1, ρ = 0.8)", "",
              "| value | final risk (objective 1) | test accuracy | ε label | ε corrected (δ = 1e-5) |", "|---|---|---|---|---|"]
    for R in (0.0, 1.0, 9.0):
        res, risk = run(parts, g, test, T, 0, epsilon=1.0, R=R, V=0.1, rho=0.8, **common_a)
        lines.append(f"| {R} | {risk:.4f} | {res.accuracy:.4f} | {res.epsilon_paper} | {res.epsilon_corrected:.4g} |")
    lines += ["", "## Verdict", "",
              "* Phase 1 (randomized labels + the unbiased loss) behaves as the paper says: risk decreases with ε and is "
              "close to the reference for ε ≥ 0.6 (Fig. 4(c)), and it converges like general ADMM (first table).",
              "* Phase 2 with the (1/n)η_iᵀw objective perturbation of eq. (14) and a = 0.01: the perturbed optimum is far "
              "from the reference (risk grows with R by orders of magnitude and the running-average risk rises after "
              "t ≈ 10 while the iterates converge to the perturbed optimum). With a stronger regulariser (a = 0.1) R = 1 costs "
              "about 2 points of accuracy but still multiplies the objective; R = 9 is never 'comparable'. The paper's a, V_i and β are not given, so its Fig. 4 "
              "cannot be matched quantitatively; the ordering risk(R) increasing and 'Phase 1 only ≤ Phases 1 + 2' hold.",
              "* ρ only changes the noise schedule; with V = 0.1 its effect on the risk is negligible at T = 60 (Fig. 4(b)'s "
              "'larger ρ converges slower' is not visible at this V).",
              "* Privacy: the label guarantee is exactly ε-label-LDP (tested). The paper's Phase-2 '(ε_p, δ_p)-DP' is never "
              "quantified; the record-level ε of the published iterates grows geometrically with T because the noise "
              "variance decays (spec 001 flag 3.4.4): see the ε column of the first table and the ρ sweep.",
              "* Table I: run `--table1 FILE ...` on the Rätsch benchmark files (not shipped with dpkit).", ""]
    write_page(ROOT / "docs" / "reproductions" / "001.md", lines, ROOT / "docs" / "reproductions" / "001.md", results, RESULTS)


if __name__ == "__main__":
    main()
