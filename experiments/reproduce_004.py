"""Reproduce Huang et al. (IEEE TIFS 2019), DP-ADMM and ADMM-PVP, on UCI Adult.

Writes ``docs/reproductions/004.md``, ``docs/reproductions/004_accuracy.png`` and the numbers to
``experiments/results/004.json``. Usage::

    python experiments/reproduce_004.py [--adult DIR] [--seeds 5] [--render-only]

Adult (d = 104): 40,000 training rows split over the agents, the other 5,222 rows for testing,
δ = 1e-5. Corrected variants at their SPEC defaults (total budget); paper variants at the paper's
setting (100 agents of 400 rows, per-iteration budget); the centralised baseline ``dp-logreg`` at
its defaults on the same 40,000 rows. Runtime ≈ 4 minutes of CPU on 2 cores.
"""

from __future__ import annotations

import argparse
import json
import pathlib

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from dpkit._threads import single_threaded_blas  # noqa: E402
from dpkit.algorithms.baselines import dp_logreg  # noqa: E402
from dpkit.algorithms.dp_admm import admm_pvp, dp_admm  # noqa: E402
from dpkit.algorithms.substrate.budget import Budget  # noqa: E402
from dpkit.algorithms.substrate.data import load_adult  # noqa: E402
from dpkit.algorithms.training import prepare  # noqa: E402
from pages import PAGE_ALGORITHMS, write_page  # noqa: E402  (experiments/pages.py)

ROOT = pathlib.Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs" / "reproductions"
RESULTS = ROOT / "experiments" / "results" / "004.json"
DELTA = 1e-5
TOTAL_EPS = (0.5, 1.0, 3.0)
ITER_EPS = (0.05, 0.1, 0.2)


def run(spec, data, seed: int, eps: float, agents: int | None = None, variant: str = "corrected", **options):
    setting = prepare(spec, data, agents=agents, seed=seed, n_train=40_000)
    r = spec.runner(setting.parts, setting.test, setting.graph, budget=Budget(eps, DELTA), iterations=None,
                    variant=variant, rng=setting.rng, progress=None, **options)
    return {"accuracy": r.accuracy, "epsilon": r.epsilon, "seconds": r.seconds, "iterations": r.config["iterations"],
            "paper_epsilon": r.epsilon_paper}


def ms(rows, key="accuracy") -> str:
    v = np.array([r[key] for r in rows], float)
    digits = 1 if key == "seconds" else 4
    return f"{v.mean():.{digits}f} ± {v.std(ddof=1) if len(v) > 1 else 0.0:.{digits}f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--adult", default=None,
                        help="a directory holding adult.data and adult.test (default: the copy packaged with dpkit)")
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--render-only", action="store_true", help="rewrite the page from experiments/results/004.json")
    args = parser.parse_args()
    if args.render_only:
        render(json.loads(RESULTS.read_text(encoding="utf-8")), args.seeds)
        return
    single_threaded_blas()
    data = load_adult(args.adult, "104")
    seeds = range(args.seeds)
    res: dict = {"corrected": {}, "paper": {}, "frontier_100_agents": {}}
    for name, spec in (("dp-admm", dp_admm.SPEC), ("admm-pvp", admm_pvp.SPEC), ("dp-logreg", dp_logreg.SPEC)):
        for eps in TOTAL_EPS:
            res["corrected"][f"{name}@{eps}"] = [run(spec, data, s, eps) for s in seeds]
        print(name, "done", flush=True)
    for eps in TOTAL_EPS[1:]:
        res["frontier_100_agents"][f"dp-admm@{eps}"] = [run(dp_admm.SPEC, data, s, eps, agents=100)
                                                        for s in seeds[:3]]
    for eps in ITER_EPS:
        res["paper"][f"dp-admm@{eps}"] = [run(dp_admm.SPEC, data, s, eps, agents=100, variant="paper") for s in seeds]
    res["paper"]["admm-pvp@0.1"] = [run(admm_pvp.SPEC, data, s, 0.1, agents=100, variant="paper") for s in seeds[:2]]
    render(res, args.seeds)


def render(res: dict, seeds: int) -> None:
    c, p = res["corrected"], res["paper"]
    lines = [
        "# Reproduction: DP-ADMM and ADMM-PVP (Huang et al., IEEE TIFS 2019)",
        "",
        f"Produced by `python experiments/reproduce_004.py` ({seeds} seeds; mean ± standard deviation). Adult, d = 104, "
        "40,000 training rows, the other 5,222 rows for testing, δ = 1e-5; test accuracy of the returned model: for "
        "the corrected variants the mean of the agents' released iterates over the second half of the rounds "
        "(their default `average=\"tail\"`), for the paper variants the aggregator's w^T. The algorithms are described in "
        "[docs/algorithms/dp-admm.md](../algorithms/dp-admm.md).",
        "",
        "## Corrected variants: total budget, dpkit's defaults",
        "",
        "Each run meets the total (ε, δ) of the whole run (noise multiplier calibrated by the tightest accountant on all "
        "rounds; the ε column is the ledger's certified ε). DP-ADMM: 20 agents, ρ = 0.1, η = 1/(c3 + λ/n), λ/n = 1/N, "
        "T = clip(⌈2000 μ⌉, 100, 600). ADMM-PVP: 20 agents, ρ = 0.01, λ/n = 1/N, T = 10, β = 1e-6. `dp-logreg`: "
        "centralised DP logistic regression on the pooled 40,000 rows (its own defaults), the reference a distributed "
        "method can at best approach.",
        "",
        "| total ε | DP-ADMM | rounds | certified ε | s/run | ADMM-PVP | certified ε | s/run | dp-logreg (centralised) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for eps in TOTAL_EPS:
        a, b, g = c[f"dp-admm@{eps}"], c[f"admm-pvp@{eps}"], c[f"dp-logreg@{eps}"]
        lines.append(f"| {eps} | {ms(a)} | {a[0]['iterations']} | {max(r['epsilon'] for r in a):.4f} | {ms(a, 'seconds')} "
                     f"| {ms(b)} | {max(r['epsilon'] for r in b):.4f} | {ms(b, 'seconds')} | {ms(g)} |")
    f = res["frontier_100_agents"]
    lines += [
        "",
        "**The paper's 100 agents (m_i = 400) under the corrected calibration** (3 seeds, same rules otherwise): "
        + "; ".join(f"ε = {k.split('@')[1]}: {ms(v)}" for k, v in f.items())
        + ". At a fixed total number of records the aggregate's noise grows as √n (Lemma 1's sensitivity ∝ 1/m_i, "
          "averaged over n agents), so dpkit's default uses 20 agents of 2,000 rows.",
        "",
        "![accuracy vs epsilon](004_accuracy.png)",
        "",
        "## Paper variant: per-iteration budget, the paper's setting",
        "",
        "100 agents of 400 rows, t = 100, ρ = 0.1, λ/n = 1e-6, step sizes eq. (34) with c_w = 89, σ from Theorem 1 for "
        "the per-iteration (ε, δ). The paper states each iteration is (ε, δ)-DP; its total (Theorem 2, c0·√t·ε) has no "
        "value for c0. dpkit's ledger gives the exact total of what was drawn.",
        "",
        "| per-iteration ε (paper's claim) | DP-ADMM accuracy | certified total ε of the run (ledger) | s/run |",
        "|---|---|---|---|",
    ]
    for eps in ITER_EPS:
        a = p[f"dp-admm@{eps}"]
        lines.append(f"| {eps} | {ms(a)} | {a[0]['epsilon']:.4f} | {ms(a, 'seconds')} |")
    b = p["admm-pvp@0.1"]
    lines += [
        "",
        f"ADMM-PVP (Alg. 2) at per-iteration ε = 0.1, same setting, {len(b)} seeds: {ms(b)} (certified total "
        f"{b[0]['epsilon']:.4f}, {ms(b, 'seconds')} s/run).",
        "",
        "**Paper's claims** (Figs. 1–6, TABLE II): accuracy rises with ε and δ; it falls as n grows; DP-ADMM beats "
        "ADMM-PVP at equal per-iteration budget and is about 10× faster. **Reproduction:** accuracy rises with ε in "
        "both variants, and the 100-agent frontier is below the 20-agent default (agrees). At equal budget ADMM-PVP is "
        "not worse than DP-ADMM here (the comparison with the paper's Fig. 6 is not reproduced), and DP-ADMM's "
        "closed-form round is much cheaper than PVP's Newton solve per round (agrees). The paper prints no numbers, so "
        "only these trends can be compared.",
        "",
        "## Differences from the paper",
        "",
        "- Budget: the corrected variant takes the total (ε, δ) of the run; the paper fixes a per-iteration (ε, δ).",
        "- Defaults: c_w = 89/23 and λ/n = 1e-6 came from non-private tuning on the data in the paper (not accounted); "
        "the corrected variant uses data-independent values (constant step 1/(c3 + λ/n), λ/n = 1/N), more rounds and "
        "fewer, larger agents.",
        "- DVP (Zhang & Zhu) and distributed DPSGD baselines are not part of this reproduction.",
        "",
    ]
    fig, ax = plt.subplots(figsize=(5.5, 3.8))
    for key, label, style in (("dp-admm", "DP-ADMM (corrected, 20 agents)", "o-"),
                              ("admm-pvp", "ADMM-PVP (corrected, 20 agents)", "s-"),
                              ("dp-logreg", "dp-logreg (centralised)", "^--")):
        rows = [c[f"{key}@{e}"] for e in TOTAL_EPS]
        ax.errorbar(TOTAL_EPS, [np.mean([r["accuracy"] for r in v]) for v in rows],
                    yerr=[np.std([r["accuracy"] for r in v]) for v in rows], fmt=style, capsize=3, label=label)
    rows = [p[f"dp-admm@{e}"] for e in ITER_EPS]
    ax.errorbar([v[0]["epsilon"] for v in rows], [np.mean([r["accuracy"] for r in v]) for v in rows],
                yerr=[np.std([r["accuracy"] for r in v]) for v in rows], fmt="x:", capsize=3,
                label="DP-ADMM (paper, 100 agents; at its ledger total)")
    ax.set_xscale("log")
    ax.set_xlabel("total ε of the run (δ = 1e-5)")
    ax.set_ylabel("test accuracy")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(DOCS / "004_accuracy.png", dpi=110)
    (DOCS / "004_agents.png").unlink(missing_ok=True)
    write_page(DOCS / "004.md", lines, DOCS / "004.md", res, RESULTS, algorithms=PAGE_ALGORITHMS["004"])


if __name__ == "__main__":
    main()
