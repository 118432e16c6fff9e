"""Reproduce Wang et al. 2020 (heterogeneous-privacy ADMM) on UCI Adult; writes docs/reproductions/001.md,
docs/reproductions/001_accuracy.png and experiments/results/001.json.

    python experiments/reproduce_001.py [--adult DIR] [--seeds 5] [--from-json]

Protocol (as ``dpkit train`` and benchmarks/training.py): per seed, 36,000 training rows split
over the SPEC's agents on a random connected graph, the rest for testing; every run goes through
``SPEC.runner`` with its defaults. Rows: hetero-admm corrected (record-level budget, δ = 1e-5) with
its default 5 servers and with the paper's 10; hetero-admm paper (ε = the label ε of Prop. 1;
its ledger's record-level ε at δ = 1e-5 is shown beside it); the centralised baseline dp-logreg
(``dp-logreg``). A rounds sweep of the corrected
variant (2 seeds) shows the accuracy-versus-rounds frontier.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import time

import numpy as np

from dpkit._threads import single_threaded_blas
from dpkit.algorithms.hetero_admm.algorithm import default_rounds
from dpkit.algorithms.registry import ALGORITHMS
from dpkit.algorithms.substrate.budget import Budget
from dpkit.algorithms.substrate.data import load_adult
from dpkit.algorithms.training import prepare
from pages import PAGE_ALGORITHMS, ms, write_page  # experiments/pages.py

HERE = pathlib.Path(__file__).resolve().parent
DOCS = HERE.parent / "docs" / "reproductions"
RESULTS = HERE / "results" / "001.json"
EPS = (0.5, 1.0, 3.0)
# (row label, algorithm, variant, agents (None: SPEC default), options)
RUNS = (("hetero-admm corrected (5 servers)", "hetero-admm", "corrected", None, {}),
        ("hetero-admm corrected (10 servers)", "hetero-admm", "corrected", 10, {}),
        ("hetero-admm paper (10 servers)", "hetero-admm", "paper", 10, {}),
        ("dp-logreg (centralised)", "dp-logreg", "corrected", None, {}))
SWEEP_EPS = (1.0, 3.0)
SWEEP_ROUNDS = (5, 15, 25, 40)
SWEEP_SEEDS = 2
TRAIN_ROWS = ALGORITHMS["hetero-admm"].n_train


def _planned(servers: int, epsilon: float) -> int:
    """The corrected variant's default rounds on ``servers`` equal servers of the :data:`TRAIN_ROWS` training rows."""
    return default_rounds([TRAIN_ROWS // servers] * servers, epsilon)


def _rounds_text() -> str:
    return ", ".join(f"{n} servers of {TRAIN_ROWS // n:,} rows " + (
        f"{_planned(n, EPS[0])} at every ε" if len({_planned(n, e) for e in EPS}) == 1 else
        ", ".join(f"{_planned(n, e)} at ε = {e:g}" for e in EPS))
        for n in (RUNS[0][3] or ALGORITHMS["hetero-admm"].agents, RUNS[1][3]))


def setting(data, spec, agents: int, seed: int):
    prepared = prepare(spec, data, agents=agents, seed=seed)
    return prepared.parts, prepared.test, prepared.graph, prepared.rng


def run(adult: str | None, seeds: int) -> dict:
    data = load_adult(adult)
    out: dict = {"runs": {}, "seconds": {}, "epsilon": {}, "claim": {}, "label_only": {}, "sweep": {},
                 "majority": []}
    for label, name, variant, agents, options in RUNS:
        spec = ALGORITHMS[name]
        for seed in range(seeds):
            for eps in EPS:
                parts, test, graph, gen = setting(data, spec, agents or spec.agents, seed)
                if label == RUNS[0][0] and eps == EPS[0]:
                    out["majority"].append(float(max(np.mean(test.y > 0), np.mean(test.y < 0))))
                key = f"{label}@{eps}"
                t0 = time.perf_counter()
                res = spec.runner(parts, test, graph, budget=Budget(eps, spec.delta), iterations=None, variant=variant,
                                  rng=gen, progress=None, **options)
                out["seconds"].setdefault(key, []).append(time.perf_counter() - t0)
                out["runs"].setdefault(key, []).append(res.accuracy)
                out["epsilon"].setdefault(key, []).append(res.epsilon)
                out["claim"].setdefault(key, []).append(res.epsilon_paper)
                if "label_only" in res.extra_guarantees:
                    out["label_only"].setdefault(key, []).append(res.extra_guarantees["label_only"].epsilon)
        print(label, "done", flush=True)
    spec = ALGORITHMS["hetero-admm"]
    for eps in SWEEP_EPS:
        for T in SWEEP_ROUNDS:
            for seed in range(SWEEP_SEEDS):
                parts, test, graph, gen = setting(data, spec, spec.agents, seed)
                res = spec.runner(parts, test, graph, budget=Budget(eps, spec.delta), iterations=T, variant="corrected",
                                  rng=gen, progress=None)
                out["sweep"].setdefault(f"{eps}/{T}", []).append(res.accuracy)
    print("rounds sweep done", flush=True)
    return out


def render(res: dict, seeds: int) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker

    acc = res["runs"]
    rows = [label for label, *_ in RUNS if f"{label}@{EPS[0]}" in acc]
    five, ten = RUNS[0][0], RUNS[1][0]
    lines = [
        "# Reproduction: Wang et al. 2020 — label randomization + perturbed decentralised ADMM",
        "",
        f"Produced by `python experiments/reproduce_001.py` ({seeds} seeds; mean ± std of the test accuracy of "
        "the returned model). Adult (d = 104 encoding), 36,000 training rows over the servers of a random "
        "connected graph (2n edges), the rest for testing; every run goes through the algorithm's `SPEC.runner` "
        "with its defaults (docs/algorithms/hetero-admm.md). Majority class: "
        f"{np.mean(res['majority']):.4f}.",
        "",
        "* **corrected**: ε is the *record-level* ε (features and label, replace-one, δ = 1e-5) of everything "
        "published, certified by the tightest accountant over the ledger (the label correction released once, "
        "constant Gaussian noise calibrated on the whole run of T = `default_rounds(sizes, ε)` rounds: "
        + _rounds_text()
        + "); the labels are randomized at "
        "ε (a separate ε-LDP guarantee of the label against the collecting server, not charged to the published "
        "values: their sensitivities cover any change of a record's (x, y′)).",
        "* **paper**: ε is the label ε of Prop. 1 (the paper's claim); T = 100, R = 1, ρ = 0.8 (the paper's Adult "
        "study), V = 0.1, β = 0.01, a = 0.01 (not given by the paper). Its ledger's record-level ε is in the "
        "second table.",
        "* **dp-logreg**: centralised DP logistic regression (noisy gradient descent), the baseline a "
        "decentralised protocol cannot beat.",
        "",
        "## Accuracy against ε",
        "",
        "| ε | " + " | ".join(rows) + " |",
        "|---|" + "---|" * len(rows),
    ]
    for e in EPS:
        lines.append(f"| {e:g} | " + " | ".join(ms(acc[f"{r}@{e}"]) for r in rows) + " |")
    secs = {r: np.mean([s for k, v in res["seconds"].items() if k.startswith(r) for s in v]) for r in rows}
    lines += ["", "Seconds per run (mean over ε and seeds): " + ", ".join(f"{r}: {s:.1f}" for r, s in secs.items())
              + ".", ""]
    paper = "hetero-admm paper (10 servers)"
    if f"{paper}@{EPS[0]}" in res["epsilon"]:
        lines += ["## The paper's claim against the ledger's guarantee of the same run", "",
                  "| ε (label, Prop. 1) | paper claim | ledger: label only | ledger: record level (δ = 1e-5) |",
                  "|---|---|---|---|"]
        for e in EPS:
            k = f"{paper}@{e}"
            lines.append(f"| {e:g} | {res['claim'][k][0]:.4g} | {res['label_only'][k][0]:.4g} | "
                         f"{res['epsilon'][k][0]:.4g} |")
        lines += ["", "The claim is label-only (Definition 1 changes only the label; the features reach the "
                  "collecting server in the clear), and the published iterates carry noise whose variance "
                  "decays like ρ^(t−1): their record-level composition diverges.", ""]
    lines += ["## Accuracy against rounds (corrected, 5 servers, "
              f"{SWEEP_SEEDS} seeds; the noise is recalibrated for each T)", "",
              "| T | " + " | ".join(f"ε = {e:g}" for e in SWEEP_EPS) + " |", "|---|" + "---|" * len(SWEEP_EPS)]
    for T in SWEEP_ROUNDS:
        lines.append(f"| {T} | " + " | ".join(ms(res["sweep"][f"{e}/{T}"]) for e in SWEEP_EPS) + " |")
    lines += [
        "",
        "![accuracy vs epsilon](001_accuracy.png)",
        "",
        "## What the paper claimed, and whether the reproduction agrees",
        "- **Accuracy grows with ε and Phase 2 costs accuracy** (Fig. 4(c), Table I): reproduced in trend. The "
        "paper's figures print no Adult accuracies and Table I uses benchmark files dpkit does not ship, so only "
        "trends can be compared.",
        "- **The paper variant** is a label-only claim: at the same nominal ε its accuracy is not comparable with "
        "the corrected rows, whose ε covers the features too; its record-level ε (second table) is astronomical.",
        "- **Why the corrected variant stays below the centralised baseline.** Each server calibrates its own "
        "noise to its own m_i = m/n records, so the consensus average carries gradient noise ∝ √n/m (√5 ≈ 2.2× "
        "the centralised noise at 5 servers, √10 at 10: 10 servers lose "
        + ", ".join(f"{100 * (np.mean(acc[f'{five}@{e}']) - np.mean(acc[f'{ten}@{e}'])):.1f} points at ε = {e:g}"
                    for e in EPS)
        + "; planned rounds as in the first bullet"
        + "); the labels are randomized at ε, so the unbiased loss's "
        "variance grows like coth²(ε/2) (4.7 % of the labels flipped at ε = 3, 27 % at ε = 1); and every ADMM "
        "round costs privacy (σ ∝ √T), so only about 25 rounds fit the budget, where the iterates are still "
        "converging (rounds table: 40 rounds against 25 add "
        + ", ".join(f"{100 * (np.mean(res['sweep'][f'{e}/40']) - np.mean(res['sweep'][f'{e}/25'])):.1f} points "
                    f"at ε = {e:g}"
                    for e in SWEEP_EPS)
        + "). At ε = 3 the Gaussian noise is small and the gap to "
        "dp-logreg is the label noise, the rounds and the √n noise of the consensus.",
        "- **Before this version** the labels were randomized at ε/2 and the randomized-response event was "
        "composed with the Gaussian releases, as if the randomized labels were published. That double-counted "
        "the label: at ε = 1 it doubled the noise multiplier (T = 15: z = 38.4 with RR(0.5) composed, 17.2 "
        "with labels at ε and RR not charged) and cost 1.4–3 points (0.774/0.805/0.814 → this page).",
        "",
    ]
    write_page(DOCS / "001.md", lines, DOCS / "001.md", res, RESULTS, algorithms=PAGE_ALGORITHMS["001"])
    fig, ax = plt.subplots(figsize=(5.8, 3.9))
    for r in rows:
        ys = [np.mean(acc[f"{r}@{e}"]) for e in EPS]
        es = [np.std(acc[f"{r}@{e}"]) for e in EPS]
        ax.errorbar(EPS, ys, yerr=es, marker="o", capsize=3, label=r)
    ax.axhline(np.mean(res["majority"]), color="grey", ls=":", lw=1, label="majority class")
    ax.set_xscale("log")
    ax.set_xticks(EPS, [f"{e:g}" for e in EPS])
    ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
    ax.set_xlabel("target ε (corrected: record level; paper: label only)")
    ax.set_ylabel("test accuracy")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(DOCS / "001_accuracy.png", dpi=110)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--adult", default=None,
                        help="a directory holding adult.data and adult.test (default: the copy packaged with dpkit)")
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--from-json", action="store_true", help="re-render from experiments/results/001.json")
    args = parser.parse_args()
    single_threaded_blas()
    res = json.loads(RESULTS.read_text(encoding="utf-8")) if args.from_json else run(args.adult, args.seeds)
    render(res, args.seeds)


if __name__ == "__main__":
    os.chdir(HERE)
    main()
