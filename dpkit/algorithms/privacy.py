"""Privacy bookkeeping for the seed-000/004 algorithms: the papers' rules and valid corrections.

Paper rules (reproduction only, labelled in every result)
    * :func:`rho_paper` — ρ = ε²/(4 ln(1/δ)) (seed 000 Lemma 2.7 read backwards, flag F1/F2);
    * :func:`zcdp_epsilon_lemma28` — ε = ρ + 2√(ρ ln(1/δ)) (seed 000 Lemma 2.8; valid);
    * :func:`rho_exact` — the exact inverse of Lemma 2.8.

Valid analyses used by the "corrected" accounting
    * :func:`objective_perturbation_delta` / :func:`objective_perturbation_epsilon` /
      :func:`objective_perturbation_sigma` — Gaussian objective perturbation of a GLM (seed 000
      eq. 5), derived here (docs/algorithms.md, "Corrected accounting"): for the exact minimiser θ̃,
      the privacy loss is at most ξ + ||Pb||Δ/σ² + Δ²/(2σ²), where ξ = log(1 + c₃/(|D| μ)) bounds
      the Jacobian ratio (rank-one update of a Hessian ≥ μI; Chaudhuri et al. 2011 §3.2), Δ = 2c₁/|D|
      bounds the replace-one gradient difference, and P projects onto span{x, x̂} (dimension ≤ 2), so
      ||Pb||/σ is stochastically below χ₂ and P[loss > ε] ≤ exp(−s²/2) with s = (ε−ξ)z − 1/(2z),
      z = σ/Δ. Valid for every ε (unlike the classical constant √(2 ln(1.25/δ)), seed 000 F4).
    * :func:`compose_approx_zcdp` — a ledger of Gaussian, pure-DP, sparse-vector, zCDP and
      (ε, δ)-DP events composed as δ-approximate zCDP (Bun & Steinke 2016, §8: an (ε, δ)-DP step is
      δ-approximate ε²/2-zCDP, an ε-DP step ε²/2-zCDP (Prop. 1.4), a Gaussian Δ²/(2σ²)-zCDP
      (Prop. 1.6); ρ and δ add under adaptive composition), converted with the optimal
      RDP→DP conversion of Canonne, Kamath & Steinke 2020 (Prop. 12) at δ − Σδ_i.
    * :func:`compose_gaussians_exact` — a ledger of Gaussians only is exactly μ-GDP with
      μ = √(Σ(Δ_k/σ_k)²) (Dong, Roth & Su 2022, Cor. 3.3), so the tight ε is the analytic-Gaussian ε
      (Balle & Wang 2018) of :mod:`dpkit.accounting.analytic_gaussian`.

Every ε returned here is rounded up (one ulp) and never below the bound it implements.
"""

from __future__ import annotations

import math
from typing import Iterable, Sequence


from dpkit._validation import check_nonnegative, check_open_unit, check_positive
from dpkit.accounting.analytic_gaussian import gaussian_epsilon, gaussian_sigma
from dpkit.accounting.base import AccountingResult, flatten, round_up
from dpkit.accounting.events import (
    ApproxDPEvent,
    GaussianEvent,
    PrivacyEvent,
    PureDPEvent,
    SparseVectorEvent,
    ZCDPEvent,
)
from dpkit.accounting.neighbouring import NeighbouringRelation
from dpkit.accounting.zcdp import zcdp_to_epsilon

__all__ = [
    "rho_paper", "rho_exact", "zcdp_epsilon_lemma28",
    "objective_perturbation_xi", "objective_perturbation_delta", "objective_perturbation_epsilon",
    "objective_perturbation_sigma", "compose_approx_zcdp", "compose_gaussians_exact",
    "gaussian_total_sigma", "ledger_rho",
]

REPLACE_ONE = NeighbouringRelation.REPLACE_ONE


def rho_paper(epsilon: float, delta: float) -> float:
    """ε²/(4 ln(1/δ)): seed 000's (ε, δ)→ρ rule (Lemma 2.7 read backwards; **not** a valid conversion, F1)."""
    epsilon = check_positive("epsilon", epsilon)
    delta = check_open_unit("delta", delta)
    return epsilon**2 / (4.0 * math.log(1.0 / delta))


def rho_exact(epsilon: float, delta: float) -> float:
    """Largest ρ with ρ + 2√(ρ ln(1/δ)) ≤ ε: (√(ε + ln(1/δ)) − √(ln(1/δ)))² (spec 000 §5.1 item 2)."""
    epsilon = check_nonnegative("epsilon", epsilon)
    delta = check_open_unit("delta", delta)
    L = math.log(1.0 / delta)
    return (epsilon / (math.sqrt(epsilon + L) + math.sqrt(L))) ** 2


def zcdp_epsilon_lemma28(rho: float, delta: float) -> float:
    """ρ + 2√(ρ ln(1/δ)) (Bun & Steinke 2016, Prop. 1.3; seed 000 Lemma 2.8). A valid upper bound."""
    rho = check_nonnegative("rho", rho)
    delta = check_open_unit("delta", delta)
    return round_up(rho + 2.0 * math.sqrt(rho * math.log(1.0 / delta)))


def objective_perturbation_xi(c3: float, n: int, mu: float) -> float:
    """Jacobian term ξ = log(1 + c₃/(n μ)) of objective perturbation (replace-one, loss averaged over n)."""
    return math.log1p(check_nonnegative("c3", c3) / (n * check_positive("mu", mu)))


def objective_perturbation_delta(epsilon: float, sigma: float, sensitivity: float, xi: float) -> float:
    """δ(ε) of the exact minimiser of a Gaussian-perturbed GLM objective: exp(−s²/2), s = (ε−ξ)z − 1/(2z)
    (1 if s ≤ 0), z = σ/Δ. See the module docstring for the derivation."""
    epsilon = check_nonnegative("epsilon", epsilon)
    z = check_positive("sigma", sigma) / check_positive("sensitivity", sensitivity)
    s = (epsilon - check_nonnegative("xi", xi)) * z - 0.5 / z
    return 1.0 if s <= 0 else math.exp(-0.5 * s * s)


def objective_perturbation_epsilon(delta: float, sigma: float, sensitivity: float, xi: float) -> float:
    """Smallest ε with :func:`objective_perturbation_delta` ≤ δ: ξ + (√(2 ln(1/δ)) + 1/(2z))/z (rounded up)."""
    delta = check_open_unit("delta", delta)
    z = check_positive("sigma", sigma) / check_positive("sensitivity", sensitivity)
    return round_up(check_nonnegative("xi", xi) + (math.sqrt(2.0 * math.log(1.0 / delta)) + 0.5 / z) / z)


def objective_perturbation_sigma(epsilon_gauss: float, delta: float, sensitivity: float) -> float:
    """Smallest σ whose objective perturbation spends at most ``epsilon_gauss`` (= ε − ξ) at δ:
    z = (s + √(s² + 2ε))/(2ε), s = √(2 ln(1/δ)); σ = zΔ (rounded up)."""
    eg = check_positive("epsilon_gauss", epsilon_gauss)
    delta = check_open_unit("delta", delta)
    s = math.sqrt(2.0 * math.log(1.0 / delta))
    z = (s + math.sqrt(s * s + 2.0 * eg)) / (2.0 * eg)
    return round_up(z * check_positive("sensitivity", sensitivity))


def ledger_rho(entries: Iterable[tuple[PrivacyEvent, int]]) -> tuple[float, float]:
    """(ρ, δ) of a ledger as δ-approximate zCDP (see module docstring). Unknown events raise ValueError."""
    rho, delta = 0.0, 0.0
    for entry, count in entries:
        for leaf, mult in flatten(entry, count):
            if isinstance(leaf, GaussianEvent):
                rho += mult * 0.5 / leaf.noise_multiplier**2
            elif isinstance(leaf, (PureDPEvent, SparseVectorEvent)):
                rho += mult * 0.5 * leaf.epsilon**2
            elif isinstance(leaf, ZCDPEvent):
                rho += mult * leaf.rho
            elif isinstance(leaf, ApproxDPEvent):
                rho += mult * 0.5 * leaf.epsilon**2
                delta += mult * leaf.delta
            else:
                raise ValueError(f"cannot compose {type(leaf).__name__} as approximate zCDP")
    return rho, delta


def compose_approx_zcdp(ledgers: Sequence[Sequence[tuple[PrivacyEvent, int]]], delta: float) -> AccountingResult:
    """Per-agent approximate-zCDP composition; the run's guarantee is the worst agent's (parallel
    composition over disjoint data). ``delta`` is the total δ; the steps' own δ's are subtracted
    before the zCDP→DP conversion.

    Raises
    ------
    ValueError
        If the steps' δ's already reach ``delta``.
    """
    delta = check_open_unit("delta", delta)
    worst = (-1.0, 0.0, 0.0, -1)
    for agent, entries in enumerate(ledgers):
        rho, used = ledger_rho(entries)
        if used >= delta:
            raise ValueError(f"the steps' δ's sum to {used:.3g} >= delta={delta} for agent {agent}")
        eps = zcdp_to_epsilon(rho, delta - used)
        if eps > worst[0]:
            worst = (eps, rho, used, agent)
    eps, rho, used, agent = worst
    return AccountingResult(
        epsilon=eps, delta=delta, accountant="approx-zcdp", neighbouring=REPLACE_ONE,
        method="δ-approximate zCDP composition (Bun & Steinke 2016 §8) + CKS 2020 Prop. 12 conversion",
        notes=(f"worst agent {agent}: rho={rho:.6g}, steps' delta={used:.3g}, conversion delta={delta - used:.3g}",),
    )


def compose_gaussians_exact(ledgers: Sequence[Sequence[tuple[PrivacyEvent, int]]], delta: float) -> AccountingResult:
    """Tight ε of per-agent ledgers of Gaussian events: μ-GDP with μ² = Σ(Δ/σ)², exact δ(ε) curve."""
    delta = check_open_unit("delta", delta)
    worst_mu, agent_w = 0.0, -1
    for agent, entries in enumerate(ledgers):
        mu2 = 0.0
        for entry, count in entries:
            for leaf, mult in flatten(entry, count):
                if not isinstance(leaf, GaussianEvent):
                    raise ValueError(f"exact Gaussian composition needs Gaussian events, got {type(leaf).__name__}")
                mu2 += mult / leaf.noise_multiplier**2
        if mu2 > worst_mu**2:
            worst_mu, agent_w = math.sqrt(mu2), agent
    eps = gaussian_epsilon(1.0, delta, sensitivity=worst_mu) if worst_mu > 0 else 0.0
    return AccountingResult(
        epsilon=eps, delta=delta, accountant="gdp-exact", neighbouring=REPLACE_ONE,
        method="adaptive composition of Gaussians is exactly mu-GDP (Dong, Roth & Su 2022, Cor. 3.3); "
               "analytic Gaussian epsilon (Balle & Wang 2018, Thm 8)",
        notes=(f"worst agent {agent_w}: mu={worst_mu:.6g}",),
    )


def gaussian_total_sigma(epsilon: float, delta: float, steps: int) -> float:
    """Smallest noise multiplier z = σ/Δ such that ``steps`` Gaussian releases are (ε, δ)-DP in total
    (exact: μ = √steps / z, analytic-Gaussian calibration, never less noise than needed)."""
    return gaussian_sigma(epsilon, delta, sensitivity=math.sqrt(steps))

