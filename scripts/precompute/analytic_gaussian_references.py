"""Write tests/data/analytic_gaussian_references.json: 60-digit analytic Gaussian references.

Independent of dpkit: δ(σ, ε) = Φ(Δ/(2σ) − εσ/Δ) − e^ε Φ(−Δ/(2σ) − εσ/Δ) (Balle & Wang 2018,
Thm 8) is evaluated with mpmath at 60 significant digits, and σ(ε, δ), ε(σ, δ) are solved
by bisection in mpmath (log σ, resp. ε) to 1e-40 relative. Run from the repository root:

    python scripts/precompute/analytic_gaussian_references.py
"""

from __future__ import annotations

import json
from pathlib import Path

import mpmath as mp

mp.mp.dps = 60
OUT = Path(__file__).resolve().parents[2] / "tests" / "data" / "analytic_gaussian_references.json"


def delta(sigma, epsilon, sensitivity=1):
    s, e, d = mp.mpf(sigma), mp.mpf(epsilon), mp.mpf(sensitivity)
    return mp.ncdf(d / (2 * s) - e * s / d) - mp.exp(e) * mp.ncdf(-d / (2 * s) - e * s / d)


def bisect(f, lo, hi, rel=mp.mpf("1e-40")):
    """Root of an increasing f on [lo, hi] with f(lo) < 0 < f(hi)."""
    assert f(lo) < 0 < f(hi)
    while hi - lo > rel * abs(hi):
        mid = (lo + hi) / 2
        if f(mid) > 0:
            hi = mid
        else:
            lo = mid
    return hi


def sigma_for(epsilon, target, sensitivity=1):
    log_target = mp.log(mp.mpf(target))

    def f(log_sigma):  # decreasing δ in σ → increasing f
        return log_target - mp.log(delta(mp.exp(log_sigma), epsilon, sensitivity))

    lo, hi = mp.mpf(-1), mp.mpf(1)
    while f(lo) >= 0:
        lo -= 2
    while f(hi) <= 0:
        hi += 2
    return mp.exp(bisect(f, lo, hi, rel=mp.mpf("1e-45")))


def epsilon_for(sigma, target):
    log_target = mp.log(mp.mpf(target))

    def f(eps):
        return log_target - mp.log(delta(sigma, eps))

    hi = mp.mpf(1)
    while f(hi) <= 0:
        hi *= 2
    return bisect(f, mp.mpf(0), hi)


def main() -> None:
    epsilons = [10 ** (-2 + 5 * i / 7) for i in range(8)]  # 0.01 … 1000
    deltas = [10 ** (-30 + 28 * j / 7) for j in range(8)]  # 1e-30 … 1e-2
    extra = [(1e-3, 1e-300), (1e-3, 1e-2), (1e3, 1e-300), (0.5, 1e-300), (1.0, 1e-5)]
    sigma_rows = []
    for eps, dl in [(e, d) for e in epsilons for d in deltas] + extra:
        sigma_rows.append({"epsilon": eps, "delta": dl, "sensitivity": 1.0, "sigma": mp.nstr(sigma_for(eps, dl), 40)})
    for eps, dl, sens in [(1.0, 1e-5, 2.5), (0.1, 1e-8, 0.01)]:
        sigma_rows.append({"epsilon": eps, "delta": dl, "sensitivity": sens, "sigma": mp.nstr(sigma_for(eps, dl, sens), 40)})
    delta_rows = []
    for sigma in [0.05, 0.3, 1.0, 3.0, 20.0, 150.0, 2000.0]:
        for eps in [0.0, 1e-3, 0.1, 1.0, 5.0, 30.0, 300.0]:
            value = delta(sigma, eps)
            if value < mp.mpf("1e-300"):
                continue
            delta_rows.append({"sigma": sigma, "epsilon": eps, "delta": mp.nstr(value, 40), "log_delta": mp.nstr(mp.log(value), 40)})
    epsilon_rows = []
    for sigma in [0.1, 0.7, 1.0, 4.0, 25.0, 300.0]:
        for dl in [1e-30, 1e-10, 1e-5, 1e-2]:
            if delta(sigma, 0) <= dl:
                continue
            epsilon_rows.append({"sigma": sigma, "delta": dl, "epsilon": mp.nstr(epsilon_for(sigma, dl), 40)})
    payload = {
        "generator": "scripts/precompute/analytic_gaussian_references.py",
        "method": "mpmath bisection at 60 digits on delta(sigma, eps) = Phi(D/(2s)-es/D) - e^e Phi(-D/(2s)-es/D)",
        "mpmath_version": mp.__version__,
        "dps": mp.mp.dps,
        "sigma": sigma_rows,
        "delta": delta_rows,
        "epsilon": epsilon_rows,
    }
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(payload, indent=1) + "\n")


if __name__ == "__main__":
    main()
