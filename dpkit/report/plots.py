"""Plots of a report (matplotlib, the ``plot`` extra; imported only when a plot is drawn).

Each function takes parts of a report built by :func:`dpkit.report.builder.build_report`,
saves a PNG at ``path`` and returns the :class:`matplotlib.figure.Figure` (so tests can read
the plotted data back from its lines). Figures are created with the object API
(``matplotlib.figure.Figure`` + the Agg canvas), so no display or global pyplot state is used.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from dpkit.accounting.gdp import tradeoff_from_profile

#: Names of the PNG files written by :func:`write_plots` (document plots get a ``docN_`` prefix).
PLOT_FILES = {
    "epsilon_vs_steps": "epsilon_vs_steps.png",
    "privacy_profile": "privacy_profile.png",
    "tradeoff": "tradeoff.png",
    "training": "training.png",
    "audit_roc": "audit_roc.png",
}


def _figure(ncols: int = 1):
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError as error:  # pragma: no cover - depends on the installation
        raise ImportError("plots need matplotlib: pip install 'dpkit[plot]'") from error
    figure = Figure(figsize=(6.4 * ncols, 4.8), dpi=100, layout="constrained")
    FigureCanvasAgg(figure)
    return figure


def _save(figure, path: str | Path):
    figure.savefig(path, format="png")
    return figure


def plot_epsilon_vs_steps(steps: Mapping[str, Any], path: str | Path, title: str = "") -> Any:
    """ε at fixed δ against the number of steps, one line per accountant (upper bounds)."""
    figure = _figure()
    ax = figure.add_subplot()
    for name, epsilons in steps["epsilon"].items():
        ax.plot(steps["steps"], epsilons, marker="o", label=name)
    ax.set_xscale("log")
    ax.set_xlabel("number of steps (compositions)")
    ax.set_ylabel(f"epsilon at delta = {steps['delta']:g} (upper bound)")
    ax.set_title(title or "Privacy loss against steps, per accountant")
    ax.grid(True, alpha=0.3)
    ax.legend(title="accountant")
    return _save(figure, path)


def plot_privacy_profile(profile: Mapping[str, Any], path: str | Path, title: str = "") -> Any:
    """The privacy profile δ(ε) under each accountant (log scale), with PLD's certified lower bound."""
    figure = _figure()
    ax = figure.add_subplot()
    eps = np.asarray(profile["epsilons"])
    floor = 1e-300
    for name, deltas in profile["deltas"].items():
        ax.plot(eps, np.maximum(deltas, floor), label=f"{name} (upper bound)")
    if profile.get("pld_lower"):
        ax.plot(eps, np.maximum(profile["pld_lower"], floor), linestyle="--", color="black", label="pld (lower bound)")
    ax.set_yscale("log")
    values = [v for d in profile["deltas"].values() for v in d if v > 0]
    if values:
        ax.set_ylim(max(min(values), 1e-16) / 2, 1.5)
    ax.set_xlabel("epsilon")
    ax.set_ylabel("delta(epsilon)")
    ax.set_title(title or "Privacy profile: smallest delta for each epsilon")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    return _save(figure, path)


def approx_dp_tradeoff(epsilon: float, delta: float, alphas: np.ndarray) -> np.ndarray:
    """Trade-off curve of (ε, δ)-DP: max(0, 1 − δ − e^ε α, e^{−ε}(1 − δ − α)) (Dong, Roth & Su 2022, Prop. 2.5)."""
    alphas = np.asarray(alphas, dtype=float)
    return np.clip(np.maximum(1.0 - delta - math.exp(epsilon) * alphas, math.exp(-epsilon) * (1.0 - delta - alphas)),
                   0.0, 1.0)


def _audit_points(audit: Mapping[str, Any]) -> tuple[tuple[float, float], tuple[float, float]] | None:
    """(α, β) of the witness test: point estimate and the confidence-corner (most conservative) point."""
    witness = audit.get("witness")
    if not witness or witness.get("p_numerator_estimate") is None:
        return None
    estimate = (witness["p_denominator_estimate"], 1.0 - witness["p_numerator_estimate"])
    corner = (witness["p_denominator_upper"], 1.0 - witness["p_numerator_lower"])
    return estimate, corner


def plot_tradeoff(report: Mapping[str, Any], path: str | Path) -> Any:
    """f-DP trade-off curves (type II error β against type I error α) with the audits' empirical tests.

    For each accounted document: the trade-off curve implied by the tightest privacy profile
    (a certified lower bound on the true curve). For each audit: the curve of the claimed
    (ε, δ)-DP, the curve of the audited ε lower bound, and the witness test's (α, β) point.
    A point below a claimed curve would contradict the claim.
    """
    figure = _figure()
    ax = figure.add_subplot()
    alphas = np.linspace(0.0, 1.0, 401)
    for index, doc in enumerate(report["documents"], start=1):
        profile = (doc.get("accounting") or {}).get("profile")
        if profile and profile["deltas"]:
            tightest = np.min(np.array(list(profile["deltas"].values())), axis=0)
            beta = tradeoff_from_profile(np.asarray(profile["epsilons"]), tightest, alphas)
            ax.plot(alphas, beta, label=f"doc {index} ({doc['command']}): certified trade-off")
        audit = doc.get("audit")
        if audit:
            claimed = approx_dp_tradeoff(audit["claimed_epsilon"], audit["claimed_delta"], alphas)
            ax.plot(alphas, claimed, linestyle="--",
                    label=f"doc {index}: claimed ({audit['claimed_epsilon']:g}, {audit['claimed_delta']:g})-DP")
            lower = approx_dp_tradeoff(audit["epsilon_lower_bound"], audit["claimed_delta"], alphas)
            ax.plot(alphas, lower, linestyle=":", label=f"doc {index}: audited epsilon >= {audit['epsilon_lower_bound']:.3f}")
            points = _audit_points(audit)
            if points:
                (a1, b1), (a2, b2) = points
                ax.plot([a1], [b1], marker="o", linestyle="none", color="red", label=f"doc {index}: attack (estimate)")
                ax.plot([a2], [b2], marker="x", linestyle="none", color="darkred",
                        label=f"doc {index}: attack ({audit['confidence']:g} confidence corner)")
    ax.plot(alphas, 1.0 - alphas, color="grey", linewidth=0.8, label="perfect privacy (beta = 1 - alpha)")
    ax.set_xlim(0.0, 1.0)
    ax.set_ylim(0.0, 1.0)
    ax.set_xlabel("type I error alpha (false positive rate of the attack)")
    ax.set_ylabel("type II error beta (false negative rate)")
    ax.set_title("f-DP trade-off: no test can fall below a curve")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize="small")
    return _save(figure, path)


def plot_training(training: Mapping[str, Any], path: str | Path, title: str = "") -> Any:
    """Test accuracy and test risk against iteration: the private run and the non-private baseline.

    Both curves come from the published models scored on the held-out test rows (the history's
    ``test_accuracy`` and ``test_risk``); the training risk on the private rows is a diagnostic
    not covered by ε and is never plotted (an older document's ``empirical_risk`` is ignored)."""
    figure = _figure(ncols=2)
    acc_ax, risk_ax = figure.subplots(1, 2)
    runs = [("private" if training.get("private", True) else "this run (non-private)", training.get("history"), "-")]
    nonprivate = training.get("nonprivate") or {}
    if nonprivate.get("history"):
        runs.append(("non-private (admm)", nonprivate["history"], "--"))
    for label, history, style in runs:
        if not history:
            continue
        iterations = history["iteration"]
        if history.get("test_accuracy"):
            acc_ax.plot(iterations, history["test_accuracy"], linestyle=style, label=label)
        if history.get("test_risk"):
            risk_ax.plot(iterations, history["test_risk"], linestyle=style, label=label)
    for ax, name in ((acc_ax, "test accuracy"), (risk_ax, "test risk (logistic loss on the test rows)")):
        ax.set_xlabel("iteration")
        ax.set_ylabel(name)
        ax.set_title(f"{name} against iteration")
        ax.grid(True, alpha=0.3)
        ax.legend()
    figure.suptitle(title or "Training: private against non-private")
    return _save(figure, path)


def plot_audit_roc(audits: Sequence[Mapping[str, Any]], path: str | Path) -> Any:
    """The audit attacks' operating points in ROC space with the region the claim allows.

    The audit JSON carries one attack (the witness event), so each audit gives one (FPR, TPR)
    operating point (estimate and confidence corner), not a whole ROC curve. The claimed
    (ε, δ)-DP allows TPR ≤ 1 − f(FPR); a point above that boundary contradicts the claim.
    """
    figure = _figure()
    ax = figure.add_subplot()
    fpr = np.linspace(0.0, 1.0, 401)
    for index, audit in enumerate(audits, start=1):
        boundary = 1.0 - approx_dp_tradeoff(audit["claimed_epsilon"], audit["claimed_delta"], fpr)
        ax.plot(fpr, boundary, linestyle="--",
                label=f"audit {index}: highest TPR allowed by ({audit['claimed_epsilon']:g}, {audit['claimed_delta']:g})-DP")
        points = _audit_points(audit)
        if points:
            (a1, b1), (a2, b2) = points
            ax.plot([a1], [1.0 - b1], marker="o", linestyle="none", color="red", label=f"audit {index}: attack (estimate)")
            ax.plot([a2], [1.0 - b2], marker="x", linestyle="none", color="darkred",
                    label=f"audit {index}: attack ({audit['confidence']:g} confidence corner)")
    ax.plot(fpr, fpr, color="grey", linewidth=0.8, label="random guess")
    ax.set_xlim(0.0, 1.0)
    ax.set_ylim(0.0, 1.0)
    ax.set_xlabel("false positive rate  Pr[M(D) in S]")
    ax.set_ylabel("true positive rate  Pr[M(D') in S]")
    ax.set_title("The audit's distinguishing attack in ROC space")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize="small")
    return _save(figure, path)


def write_plots(report: Mapping[str, Any], out_dir: str | Path) -> tuple[dict[str, str], dict[str, str]]:
    """Draw every plot the report has data for into ``out_dir``.

    Returns ``(plots, skipped)``: plot name → PNG file name (relative to ``out_dir``), and plot
    name → why it was not drawn.
    """
    out_dir = Path(out_dir)
    plots: dict[str, str] = {}
    skipped: dict[str, str] = {}

    def draw(name: str, filename: str, function, *args) -> None:
        figure = function(*args, out_dir / filename)
        figure.clear()
        plots[name] = filename

    for index, doc in enumerate(report["documents"], start=1):
        accounting = doc.get("accounting") or {}
        label = f"doc {index} (dpkit {doc['command']})"
        if accounting.get("steps") and accounting["steps"]["epsilon"]:
            if len(accounting["steps"]["steps"]) > 1:
                draw(f"{label}: epsilon against steps", f"doc{index}_{PLOT_FILES['epsilon_vs_steps']}",
                     plot_epsilon_vs_steps, accounting["steps"])
            else:
                skipped[f"{label}: epsilon against steps"] = "the run has a single step"
        if accounting.get("profile"):
            draw(f"{label}: privacy profile", f"doc{index}_{PLOT_FILES['privacy_profile']}",
                 plot_privacy_profile, accounting["profile"])
        training = doc.get("training")
        if training is not None:
            if training.get("history"):
                draw(f"{label}: training curves", f"doc{index}_{PLOT_FILES['training']}", plot_training, training)
            else:
                skipped[f"{label}: training curves"] = "no training history (rerun disabled and none in the document)"
    has_curves = any((d.get("accounting") or {}).get("profile") or d.get("audit") for d in report["documents"])
    if has_curves:
        draw("f-DP trade-off", PLOT_FILES["tradeoff"], plot_tradeoff, report)
    audits = [d["audit"] for d in report["documents"] if d.get("audit")]
    if audits:
        if any(_audit_points(a) for a in audits):
            draw("audit attack ROC", PLOT_FILES["audit_roc"], plot_audit_roc, audits)
        else:
            skipped["audit attack ROC"] = "the audit JSON has no witness probabilities"
    return plots, skipped
