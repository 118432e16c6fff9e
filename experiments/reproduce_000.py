"""Reproduce Ding et al. 2020 (PP-ADMM, IPP-ADMM) on UCI Adult; writes docs/reproductions/000.md, its PNG and
experiments/results/000.json.

    python experiments/reproduce_000.py [--adult DIR] [--seeds 5] [--from-json]

Protocol (as ``dpkit train`` and benchmarks/training.py): per seed, 35,000 training rows split over
N = 5 agents, the rest for testing, a random connected graph; each SPEC with its defaults. Corrected
variants at δ = 1e-5; paper variants at the paper's δ = 1e-4 (their guarantee is the ledger's, at 1e-4).
A centralised DP logistic-regression row (``dp-logreg``) is the reference a distributed method can at best approach.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import time
import warnings

import numpy as np

from dpkit._threads import single_threaded_blas
from dpkit.accounting.base import PaperRuleWarning
from dpkit.algorithms.registry import ALGORITHMS
from dpkit.algorithms.substrate.budget import Budget
from dpkit.algorithms.substrate.data import load_adult
from dpkit.algorithms.training import prepare
from pages import PAGE_ALGORITHMS, ms, write_page  # experiments/pages.py

HERE = pathlib.Path(__file__).resolve().parent
DOCS = HERE.parent / "docs" / "reproductions"
RESULTS = HERE / "results" / "000.json"
EPS = (0.5, 1.0, 3.0, 10.0)
RUNS = (("pp-admm", "corrected", 1e-5), ("ipp-admm", "corrected", 1e-5), ("pp-admm", "paper", 1e-4),
        ("ipp-admm", "paper", 1e-4), ("dp-logreg", "corrected", 1e-5))


def run(adult: str | None, seeds: int) -> dict:
    data = load_adult(adult)
    out: dict = {"runs": {}, "seconds": {}, "epsilon": {}, "claim": {}, "broadcasts": {}}
    for name, variant, delta in RUNS:
        spec = ALGORITHMS[name]
        for seed in range(seeds):
            for eps in EPS:
                setting = prepare(spec, data, seed=seed)
                key = f"{spec.name}/{variant}@{eps}"
                t0 = time.perf_counter()
                res = spec.runner(setting.parts, setting.test, setting.graph, budget=Budget(eps, delta),
                                  iterations=None, variant=variant, rng=setting.rng, progress=None)
                out["seconds"].setdefault(key, []).append(time.perf_counter() - t0)
                out["runs"].setdefault(key, []).append(res.accuracy)
                out["epsilon"].setdefault(key, []).append(res.epsilon)
                out["claim"].setdefault(key, []).append(res.epsilon_paper)
                if "broadcasts" in res.config:
                    out["broadcasts"].setdefault(key, []).append(float(np.mean(res.config["broadcasts"])))
        print(name, variant, "done", flush=True)
    return out


def render(res: dict, seeds: int) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    acc = res["runs"]
    columns = [k for k in dict.fromkeys(key.split("@")[0] for key in acc)]
    lines = [
        "# Reproduction: Ding et al. 2020 — PP-ADMM and IPP-ADMM",
        "",
        f"Produced by `python experiments/reproduce_000.py` ({seeds} seeds; mean ± std of the test accuracy of the "
        "returned model). Adult (d = 104 encoding), 35,000 training rows over N = 5 agents on a random connected "
        "graph, the rest for testing. *corrected*: dpkit's defaults (noise calibrated on the whole run, δ = 1e-5; "
        "IPP c = 15 releases over T = 30 rounds behind the admitting gate threshold, 4 noise scales below 0; "
        "see docs/algorithms/pp-admm.md). *paper*: the paper's §5 pipeline (T = 30, η = 0.5, β = 10^-3.5, "
        "splits = 0.001, δ = 1e-4; IPP c = 15, C_loss = 2, α = 1e-3, SVT share 10 % of ρ_total — ours, the paper "
        "gives none).",
        "",
        "## Accuracy against ε",
        "",
        "| ε | " + " | ".join(columns) + " |",
        "|---|" + "---|" * len(columns),
    ]
    for e in EPS:
        lines.append(f"| {e:g} | " + " | ".join(ms(acc[f"{c}@{e}"]) if f"{c}@{e}" in acc else "—" for c in columns) + " |")
    lines += ["", "## The paper's claim against the ledger's guarantee of the same run (paper variant, δ = 1e-4)", "",
              "| ε target | PP claim (Thm 3.3) | PP ledger ε | IPP claim (Thm 4.1) | IPP ledger ε |", "|---|---|---|---|---|"]
    for e in EPS:
        cells = []
        for c in ("pp-admm/paper", "ipp-admm/paper"):
            k = f"{c}@{e}"
            cells += [f"{res['claim'][k][0]:.4f}", f"{res['epsilon'][k][0]:.4f}"] if k in res["claim"] else ["—", "—"]
        lines.append(f"| {e:g} | " + " | ".join(cells) + " |")
    secs = {c: np.mean([s for k, v in res["seconds"].items() if k.startswith(c) for s in v]) for c in columns}
    lines += [
        "",
        "The ledger's ε accounts b_i1 as objective perturbation of the exact minimiser (RDP curve, Jacobian term "
        "included) and b_i2 with the true sensitivity 2β/μ_i (the claimed ρ_i2 is 4× too small). On Adult the "
        "honest ε of the paper's own noise is about 1.5× its claim for PP-ADMM and 2× for IPP-ADMM.",
        "",
        "IPP-ADMM mean broadcasts per agent: " + ", ".join(
            f"{k}: {np.mean(v):.1f}" for k, v in res["broadcasts"].items()) + ".",
        "",
        "Seconds per run (mean over ε and seeds): " + ", ".join(f"{c}: {s:.1f}" for c, s in secs.items()) + ".",
        "",
        "![accuracy vs epsilon](000_accuracy.png)",
        "",
        "## What the paper claimed, and whether the reproduction agrees",
        "- **E3** (error decreases as ε grows, close to non-private): the corrected variants rise with ε and reach "
        "≈ 0.82–0.83. The paper variant stays near the majority class: with η = 0.5, T = 30 and θ⁰ = 0 the "
        "proximal term dominates the loss curvature, and the λ̂ rule forces λ̂ ≈ 0.55/0.27/0.09/0.026 at "
        "ε = 0.5/1/3/10.",
        "- **E2** (IPP needs less privacy than PP): not reproduced. With honest accounting the SVT's query noise "
        "(scale 2cΔ_q/ε₂) dwarfs the per-round loss decrease, so the gate cannot select: at the paper's α = 1e-3 "
        "it is close to a coin flip (paper variant: "
        + f"{np.mean([b for k, v in res['broadcasts'].items() if k.startswith('ipp-admm/paper') for b in v]):.1f}"
        + " broadcasts of c = 15 per agent), and the corrected variant's admitting threshold passes nearly every "
        "chance, which makes it PP-ADMM with c releases over 2c rounds ("
        + ", ".join(f"{np.mean(acc[f'ipp-admm/corrected@{e}']):.4f} against "
                    f"{np.mean(acc[f'pp-admm/corrected@{e}']):.4f} at ε = {e:g}"
                    for e in EPS if f"ipp-admm/corrected@{e}" in acc and f"pp-admm/corrected@{e}" in acc)
        + "). The SVT's pure ε₁ + ε₂ is charged on top of the releases.",
        "- The paper's figures print no values, so only trends can be compared.",
        "",
    ]
    write_page(DOCS / "000.md", lines, DOCS / "000.md", res, RESULTS, algorithms=PAGE_ALGORITHMS["000"])
    fig, ax = plt.subplots(figsize=(5.5, 3.8))
    for c in columns:
        ys = [np.mean(acc[f"{c}@{e}"]) for e in EPS]
        es = [np.std(acc[f"{c}@{e}"]) for e in EPS]
        ax.errorbar(EPS, ys, yerr=es, marker="o", capsize=3, label=c)
    ax.set_xscale("log")
    ax.set_xlabel("target ε")
    ax.set_ylabel("test accuracy")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(DOCS / "000_accuracy.png", dpi=110)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--adult", default=None,
                        help="a directory holding adult.data and adult.test (default: the copy packaged with dpkit)")
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--from-json", action="store_true", help="re-render from experiments/results/000.json")
    args = parser.parse_args()
    single_threaded_blas()
    warnings.simplefilter("ignore", PaperRuleWarning)
    if args.from_json:
        res = json.loads(RESULTS.read_text(encoding="utf-8"))
    else:
        res = run(args.adult, args.seeds)
    render(res, args.seeds)


if __name__ == "__main__":
    os.chdir(HERE)
    main()
