"""Reproduce seed 000 (PP-ADMM, IPP-ADMM; Ding et al.) on UCI Adult; writes docs/reproductions/000.md + PNG.

    python experiments/reproduce_000.py --adult ../shared/data/adult [--seeds 5] [--from-json]

Setting (spec 000 §4): 35,000 training rows over N = 5 agents (|D_i| = 7000), the rest for testing,
a random connected graph (7 edges; the paper does not give its generator), η = 0.5, T = 30, δ = 1e-4,
ε ∈ {0.5, 1, 1.5, 2, 10}, splits = 0.001, ε_i3 = 0.99 ε_i1, δ_i1 = 1e-4, β = 10^-3.5; IPP: c = 15,
C_loss = 2, α = 1e-3, SVT share of the budget 0.1 (not given by the paper, F12). Features: the d = 104
encoding (the paper's 41-feature encoding cannot be reconstructed, F17). Accuracy = test accuracy of the
average of the agents' final models (the paper does not say which model, F17).
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import time
import warnings

import numpy as np

from dpkit.accounting.base import PaperRuleWarning
from dpkit.algorithms.admm import decentralised_admm
from dpkit.algorithms.centralised import centralised_fit
from dpkit.algorithms.data import load_adult, train_test_split
from dpkit.algorithms.evaluation import accuracy
from dpkit.algorithms.graphs import random_connected
from dpkit.algorithms.ipp_admm import ipp_admm
from dpkit.algorithms.partition import partition
from dpkit.algorithms.pp_admm import pp_admm
from dpkit._threads import single_threaded_blas
from pages import kept_flags_section  # experiments/pages.py

HERE = os.path.dirname(os.path.abspath(__file__))
DOCS = os.path.join(HERE, "..", "docs", "reproductions")
EPS = (0.5, 1.0, 1.5, 2.0, 10.0)
VARIANTS = ("pp-paper", "pp-corrected", "pp-corrected-lam0.01", "ipp-paper", "ipp-corrected")


def run(adult: str, seeds: int) -> dict:
    data = load_adult(adult, "104")
    out: dict = {"accuracy": {}, "epsilon": {}, "timing": [], "broadcasts": {}}
    for seed in range(seeds):
        train, test = train_test_split(data, 35_000, seed)
        parts = partition(train, 5, rng=seed)
        g = random_connected(5, 7, rng=seed)
        out["accuracy"].setdefault("centralised (λ=1e-5)", []).append(accuracy(centralised_fit(parts, 1e-5).theta, test))
        r = decentralised_admm(parts, g, lam=1e-5, eta=0.5, iterations=30, test=test, beta=1e-6)
        out["accuracy"].setdefault("admm η=0.5 (paper)", []).append(r.accuracy)
        r = decentralised_admm(parts, g, lam=1e-5, eta=1e-4, iterations=30, test=test, beta=1e-6)
        out["accuracy"].setdefault("admm η=1e-4", []).append(r.accuracy)
        for e in EPS:
            runs = {
                "pp-paper": lambda: pp_admm(parts, g, epsilon=e, test=test, rng=seed),
                "pp-corrected": lambda: pp_admm(parts, g, epsilon=e, accounting="corrected", test=test, rng=seed),
                "pp-corrected-lam0.01": lambda: pp_admm(parts, g, epsilon=e, accounting="corrected", lam=0.01, test=test, rng=seed),
                "ipp-paper": lambda: ipp_admm(parts, g, epsilon=e, test=test, rng=seed),
                "ipp-corrected": lambda: ipp_admm(parts, g, epsilon=e, accounting="corrected", test=test, rng=seed),
            }
            for name, call in runs.items():
                t0 = time.perf_counter()
                res = call()
                if name == "pp-paper":
                    out["timing"].append(time.perf_counter() - t0)
                out["accuracy"].setdefault(f"{name}@{e}", []).append(res.accuracy)
                out["epsilon"][f"{name}@{e}"] = [res.epsilon_paper, res.epsilon_corrected]
                if name.startswith("ipp"):
                    out["broadcasts"].setdefault(f"{name}@{e}", []).append(float(np.mean(res.config["broadcasts"])))
        print("seed", seed, "done", flush=True)
    tuned_column(data, seeds, out)
    return out


TUNED = dict(eta=0.01, splits=0.5, lam=1e-3, accounting="corrected")


def tuned_column(data, seeds: int, out: dict) -> None:
    """PP-ADMM with the corrected accounting and hyperparameters chosen for this encoding (one exploratory
    seed-0 grid over η ∈ {0.05, 0.01}, splits ∈ {0.1, 0.5}, λ̂ ∈ {1e-2, 1e-3}; not the paper's)."""
    for seed in range(seeds):
        train, test = train_test_split(data, 35_000, seed)
        parts = partition(train, 5, rng=seed)
        g = random_connected(5, 7, rng=seed)
        for e in EPS:
            res = pp_admm(parts, g, epsilon=e, test=test, rng=seed, **TUNED)
            out["accuracy"].setdefault(f"pp-tuned@{e}", []).append(res.accuracy)
            out["epsilon"][f"pp-tuned@{e}"] = [res.epsilon_paper, res.epsilon_corrected]


def ms(values) -> str:
    v = np.asarray(values, float)
    return f"{v.mean():.4f} ± {v.std(ddof=1) if len(v) > 1 else 0.0:.4f}"


def render(res: dict, seeds: int) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    acc, eps = res["accuracy"], res["epsilon"]
    lines = [
        "# Reproduction: seed 000 — PP-ADMM and IPP-ADMM (Ding et al.)",
        "",
        f"Produced by `python experiments/reproduce_000.py --adult ../shared/data/adult` ({seeds} seeds; mean ± std of "
        "the test accuracy of the agents' average model). Setting: spec 000 §4 (N = 5, |D_i| = 7000, η = 0.5, T = 30, "
        "δ = 1e-4, splits = 0.001, ε_i3 = 0.99 ε_i1, β = 10^-3.5; IPP c = 15, C_loss = 2, α = 1e-3), Adult encoded with "
        "d = 104, a random connected graph with 7 edges.",
        "",
        "Columns: *paper* = noise from the paper's §3.4 pipeline (its reported ε is then the target, but the valid bound "
        "is much larger); *corrected* = noise calibrated so that dpkit's valid bound meets the target; "
        "*corrected, λ̂ = 0.01* = the same, with λ̂ set freely (the proximal term 2η|𝓑_i| already pays the Jacobian "
        "term, spec 000 F7); *tuned* = corrected accounting with η = 0.01, splits = 0.5, λ̂ = 1e-3 (chosen on a small "
        "seed-0 grid for this encoding; not the paper's hyperparameters, and the tuning itself is not accounted).",
        "",
        "## Accuracy against ε (δ = 1e-4)",
        "",
        "| target ε | PP paper | PP corrected | PP corrected, λ̂ = 0.01 | IPP paper | IPP corrected | PP corrected, tuned |",
        "|---|---|---|---|---|---|---|",
    ]
    for e in EPS:
        tuned = ms(acc[f"pp-tuned@{e}"]) if f"pp-tuned@{e}" in acc else "not run"
        lines.append("| " + " | ".join([f"{e}"] + [ms(acc[f"{v}@{e}"]) for v in VARIANTS] + [tuned]) + " |")
    lines += [
        "",
        f"Non-private: centralised optimum (λ̂ = 1e-5) {ms(acc['centralised (λ=1e-5)'])}; decentralised ADMM eqs. 3–4 "
        f"with the paper's η = 0.5, T = 30: {ms(acc['admm η=0.5 (paper)'])}; with η = 1e-4, T = 30: {ms(acc['admm η=1e-4'])}.",
        "",
        "## The paper's ε against the valid ε of the same run",
        "",
        "| target ε | PP paper: reported → valid | IPP paper: reported → valid | PP corrected (valid) | IPP corrected (valid) |",
        "|---|---|---|---|---|",
    ]
    for e in EPS:
        pp, ip = eps[f"pp-paper@{e}"], eps[f"ipp-paper@{e}"]
        lines.append(f"| {e} | {pp[0]:.4f} → {pp[1]:.3f} | {ip[0]:.4f} → {ip[1]:.3f} | {eps[f'pp-corrected@{e}'][1]:.4f} "
                     f"| {eps[f'ipp-corrected@{e}'][1]:.4f} |")
    t = np.asarray(res["timing"])
    lines += [
        "",
        "The reported column reproduces Theorem 3.3 / 4.1 (e.g. 1.0324 for target 1, 13.484 for target 10, as in "
        "spec 000 §3.4 — F2/F3). The valid column charges each objective-perturbation step as (ε, δ)-DP by the χ₂ "
        "tail bound (no ε < 1 restriction, Jacobian term included), the output noise with sensitivity 2β/μ_i (F5), "
        "and counts every δ (F11); see docs/algorithms.md.",
        "",
        "IPP-ADMM mean broadcasts per agent (of c = 15): "
        + ", ".join(f"ε={e}: {np.mean(res['broadcasts'][f'ipp-paper@{e}']):.1f}" for e in EPS) + ".",
        "",
        f"Timing: PP-ADMM N = 5, T = 30 on Adult took {t.mean():.2f} ± {t.std():.2f} s per run (single-threaded BLAS, "
        "shared 2-core machine); the issue's bound is 60 s.",
        "",
        "![accuracy vs epsilon](000_accuracy.png)",
        "",
        "## What the paper claimed, and whether the reproduction agrees",
        "- **E3** (error decreases as ε grows; PP/IPP approach the non-private error): **not reproduced with the paper's "
        "hyperparameters.** With η = 0.5, T = 30 and θ_i^0 = 0 even non-private decentralised ADMM stays at the "
        "majority-class predictor (≈ 0.752): the proximal weight 2η|𝓑_i| ≥ 1 dominates the loss curvature, so 30 "
        "iterations barely move θ (the paper's 41-feature encoding, F17, may behave differently). Every paper-mode run "
        "therefore sits at ≈ 0.75 whatever ε. In addition the λ̂ rule λ̂ ≥ 2.8Nc₁/((ε_i1−ε_i3)|D_i|) forces λ̂ ≈ "
        "0.55/0.27/0.18/0.14/0.026 for ε = 0.5/1/1.5/2/10, and the centralised optimum at λ̂ = 0.55 is itself the "
        "majority predictor (measured 0.754, seed 0). The *tuned* column (valid accounting) does rise with ε.",
        "- **E2** (IPP needs less privacy than PP): **not reproduced** — IPP is worse than PP here. With Lemma 4.2's "
        "sensitivity 2C_loss (no 1/|D_i|, F8) the SVT noise Lap(4cC_loss/ε₂) dwarfs the quality differences, so the "
        "⊤/⊥ decisions are essentially coin flips (on average 9 of the allowed 15 broadcasts per agent at every ε); "
        "agents whose noisy threshold is high never broadcast and stay at θ = 0, which drags the average model.",
        "- **The paper's ε is not a valid bound**: for the paper's own noise, the valid ε is "
        + ", ".join(f"{eps[f'pp-paper@{e}'][1] / eps[f'pp-paper@{e}'][0]:.1f}×" for e in EPS)
        + " the reported one for PP-ADMM (ε = " + "/".join(f"{e:g}" for e in EPS) + ") and "
        + ", ".join(f"{eps[f'ipp-paper@{e}'][1] / eps[f'ipp-paper@{e}'][0]:.1f}×" for e in EPS) + " for IPP-ADMM.",
        "- The paper's figures print no values (spec 000 §4), so only trends can be compared.",
    ]
    lines += kept_flags_section(pathlib.Path(DOCS) / "000.md")
    with open(os.path.join(DOCS, "000.md"), "w", encoding="utf-8") as handle:
        handle.write("\n".join(lines) + "\n")
    fig, ax = plt.subplots(figsize=(5.5, 3.8))
    for v in VARIANTS + (("pp-tuned",) if f"pp-tuned@{EPS[0]}" in acc else ()):
        ax.errorbar(EPS, [np.mean(acc[f"{v}@{e}"]) for e in EPS], yerr=[np.std(acc[f"{v}@{e}"]) for e in EPS],
                    marker="o", capsize=3, label=v)
    ax.axhline(np.mean(acc["centralised (λ=1e-5)"]), color="k", ls="--", label="centralised")
    ax.axhline(np.mean(acc["admm η=0.5 (paper)"]), color="gray", ls=":", label="ADMM η=0.5, T=30")
    ax.set_xscale("log")
    ax.set_xlabel("target ε (δ = 1e-4)")
    ax.set_ylabel("test accuracy")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(os.path.join(DOCS, "000_accuracy.png"), dpi=110)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--adult", default=os.path.join(HERE, "..", "..", "shared", "data", "adult"))
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--from-json", action="store_true", help="re-render from experiments/results/000.json")
    parser.add_argument("--update-tuned", action="store_true", help="recompute only the tuned PP-ADMM column")
    args = parser.parse_args()
    single_threaded_blas()
    warnings.simplefilter("ignore", PaperRuleWarning)
    path = os.path.join(HERE, "results", "000.json")
    if args.from_json or args.update_tuned:
        with open(path, encoding="utf-8") as handle:
            res = json.load(handle)
        if args.update_tuned:
            tuned_column(load_adult(args.adult, "104"), args.seeds, res)
            with open(path, "w", encoding="utf-8") as handle:
                json.dump(res, handle, indent=1)
    else:
        res = run(args.adult, args.seeds)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as handle:
            json.dump(res, handle, indent=1)
    render(res, args.seeds)


if __name__ == "__main__":
    main()
