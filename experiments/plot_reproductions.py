"""Plot the reproductions of Cheng et al. 2020 (002) and Zhang & Zhu 2016 (003) from the JSON the reproduce scripts write.

Reads ``experiments/results/00N.json`` (written by ``experiments/reproduce_00N.py``) and writes

* ``docs/reproductions/002_theorem1.png`` — ε of Theorem 1 against exact (PLD) and RDP accounting;
* ``docs/reproductions/003_total_privacy.png`` — DVP's composed ε against T, versus the paper's α.

A seed whose JSON is missing (or lacks the needed part) is skipped with a message; nothing is
parsed from the Markdown pages and nothing is recomputed. Usage::

    python experiments/plot_reproductions.py [--only 002 003]
"""

from __future__ import annotations

import argparse
import json
import pathlib
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[1]
RESULTS = ROOT / "experiments" / "results"
DOCS = ROOT / "docs" / "reproductions"


def load(seed: str, key: str) -> dict | None:
    """The seed's results, or None (with a message) when the file or ``key`` is missing."""
    path = RESULTS / f"{seed}.json"
    if not path.exists():
        print(f"seed {seed}: {path} not found (run experiments/reproduce_{seed}.py); skipped", file=sys.stderr)
        return None
    data = json.loads(path.read_text(encoding="utf-8"))
    if key not in data:
        print(f"seed {seed}: {path} has no '{key}'; skipped", file=sys.stderr)
        return None
    return data


def plot_002(data: dict) -> pathlib.Path:
    rows = data["theorem1"]
    x = list(range(len(rows)))
    width = 0.27
    fig, ax = plt.subplots(figsize=(11, 4.5))
    series = [("epsilon_theorem1", "paper's Theorem 1"), ("epsilon_rdp", "dpkit RDP"),
              ("epsilon_pld", "dpkit PLD (essentially exact)")]
    for j, (key, label) in enumerate(series):
        xs = [i + (j - 1) * width for i, r in zip(x, rows) if r.get(key) is not None]
        ys = [r[key] for r in rows if r.get(key) is not None]
        ax.bar(xs, ys, width, label=label)
    ax.set_yscale("log")
    ax.set_xticks(x)
    ax.set_xticklabels([f"p={r['p']}\nσ/H={r['sigma_over_H']}\nk={r['k']}" for r in rows], fontsize=8)
    ax.set_xlabel("setting: sampling rate p, noise multiplier σ/H, number of steps k")
    ax.set_ylabel(f"ε at δ = {data['theorem1_delta']:g} (log scale)")
    ax.set_title("Cheng et al. 2020 (A-DDP): Theorem 1 versus exact accounting of k Poisson-subsampled Gaussian steps")
    ax.legend()
    ax.grid(True, axis="y", which="both", alpha=0.3)
    fig.tight_layout()
    out = DOCS / "002_theorem1.png"
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out


def plot_003(data: dict) -> pathlib.Path:
    rows = data["total_privacy"]
    alphas = sorted({r["alpha"] for r in rows})
    fig, ax = plt.subplots(figsize=(8, 5))
    for alpha in alphas:
        sel = sorted((r for r in rows if r["alpha"] == alpha), key=lambda r: r["iterations"])
        T = [r["iterations"] for r in sel]
        line, = ax.plot(T, [r["epsilon"] for r in sel], marker="o", label=f"α = {alpha}: dpkit total (smallest valid)")
        ax.plot(T, [r["basic"] for r in sel], linestyle="--", color=line.get_color(), alpha=0.6,
                label=f"α = {alpha}: basic composition Tα")
        ax.plot(T, [alpha] * len(T), linestyle=":", color=line.get_color(), label=f"α = {alpha}: paper's claim (α for any T)")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("iterations T")
    ax.set_ylabel(f"total ε of the transcript (δ = {data['total_delta']:g} for advanced/zCDP)")
    ax.set_title("Zhang & Zhu 2016 (DVP): privacy is not independent of the number of iterations")
    ax.legend(fontsize=7, ncol=2)
    ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    out = DOCS / "003_total_privacy.png"
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out


PLOTS = {"002": ("theorem1", plot_002), "003": ("total_privacy", plot_003)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="*", choices=sorted(PLOTS), default=sorted(PLOTS))
    args = parser.parse_args(argv)
    for seed in args.only:
        key, plot = PLOTS[seed]
        data = load(seed, key)
        if data is not None:
            print(plot(data))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
