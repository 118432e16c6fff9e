"""Reference values for the RDP / zCDP / (ε, δ)-composition tests, computed with mpmath at 50 digits.

Run from the repository root:  python scripts/precompute/rdp_references.py
Writes tests/data/rdp_references.json. Every value is computed independently of dpkit's code:
Rényi divergences by numerical integration or direct summation of the definition, optima by
root finding on the derivative, compositions by exact summation.
"""

from __future__ import annotations

import json
from pathlib import Path

import mpmath as mp

mp.mp.dps = 50
OUT = Path(__file__).resolve().parents[2] / "tests" / "data" / "rdp_references.json"


def s(x) -> str:
    return mp.nstr(x, 30)


# --------------------------------------------------------------------------- Rényi divergences


def renyi_laplace(alpha, lam):
    """D_α(Lap(0, λ) ‖ Lap(1, λ)) by quadrature of the definition."""
    p = lambda x: mp.exp(-abs(x) / lam) / (2 * lam)
    q = lambda x: mp.exp(-abs(x - 1) / lam) / (2 * lam)
    integral = mp.quad(lambda x: p(x) ** alpha * q(x) ** (1 - alpha), [-mp.inf, 0, 1, mp.inf])
    return mp.log(integral) / (alpha - 1)


def renyi_gaussian_quad(alpha, z):
    integral = mp.quad(lambda x: mp.npdf(x, 1, z) ** alpha * mp.npdf(x, 0, z) ** (1 - alpha), [-mp.inf, 0, 1, mp.inf])
    return mp.log(integral) / (alpha - 1)


def renyi_rr(alpha, eps, k):
    p = mp.e**eps / (mp.e**eps + k - 1)
    r = 1 / (mp.e**eps + k - 1)
    P = [p, r] + [r] * (k - 2)
    Q = [r, p] + [r] * (k - 2)
    return mp.log(mp.fsum(a**alpha * b ** (1 - alpha) for a, b in zip(P, Q))) / (alpha - 1)


def renyi_discrete_laplace(alpha, t, sens):
    """max over shifts d ≤ Δ of D_α(DLap(0,t) ‖ DLap(d,t)) by direct summation."""
    c = mp.tanh(1 / (2 * t))  # normaliser (1 − e^{−1/t})/(1 + e^{−1/t})
    best = mp.mpf(0)
    for d in range(1, sens + 1):
        term = lambda x: c * mp.exp(-alpha * abs(x) / t - (1 - alpha) * abs(x - d) / t)
        total = mp.nsum(term, [-mp.inf, 0]) + mp.fsum(term(x) for x in range(1, d)) + mp.nsum(term, [d, mp.inf])
        best = max(best, mp.log(total) / (alpha - 1))
    return best


def log_a_subsampled(alpha, q, z):
    """log E_{μ0}[(μ/μ0)^α] for the Poisson-subsampled Gaussian, by quadrature (split at z0)."""
    z0 = z * z * mp.log(1 / q - 1) + mp.mpf(1) / 2
    f = lambda x: mp.npdf(x, 0, z) * ((1 - q) + q * mp.exp((2 * x - 1) / (2 * z * z))) ** alpha
    pts = sorted({mp.mpf(-60) * z, mp.mpf(0), z0, mp.mpf(alpha), mp.mpf(alpha) + 60 * z})
    return mp.log(mp.quad(f, [-mp.inf] + pts + [mp.inf], maxdegree=10))


def log_a_subsampled_binomial(alpha: int, q, z):
    return mp.log(
        mp.fsum(mp.binomial(alpha, k) * (1 - q) ** (alpha - k) * q**k * mp.exp((k * k - k) / (2 * z * z)) for k in range(alpha + 1))
    )


def renyi_subsampled_laplace(alpha, q, lam):
    """Both directions D_α(μ‖Q), D_α(Q‖μ) for μ = (1−q)Lap(0,λ) + q Lap(1,λ), Q = Lap(0,λ), by quadrature."""
    p0 = lambda x: mp.exp(-abs(x) / lam) / (2 * lam)
    p1 = lambda x: mp.exp(-abs(x - 1) / lam) / (2 * lam)
    mu = lambda x: (1 - q) * p0(x) + q * p1(x)
    pts = [-mp.inf, 0, 1, mp.inf]
    forward = mp.log(mp.quad(lambda x: mu(x) ** alpha * p0(x) ** (1 - alpha), pts)) / (alpha - 1)
    backward = mp.log(mp.quad(lambda x: p0(x) ** alpha * mu(x) ** (1 - alpha), pts)) / (alpha - 1)
    return forward, backward


def wbk_gaussian(alpha: int, gamma, z):
    """Wang, Balle & Kasiviswanathan 2019 Thm 9 for a Gaussian base (ε(j) = j/(2z²), ε∞ = ∞)."""
    eps = lambda j: mp.mpf(j) / (2 * z * z)
    total = 1 + gamma**2 * mp.binomial(alpha, 2) * min(4 * (mp.e ** eps(2) - 1), 2 * mp.e ** eps(2))
    total += mp.fsum(2 * gamma**j * mp.binomial(alpha, j) * mp.e ** ((j - 1) * eps(j)) for j in range(3, alpha + 1))
    return min(mp.log(total) / (alpha - 1), eps(alpha))


# --------------------------------------------------------------------------- conversions


def improved_eps_gaussian(c, delta):
    """min over α > 1 of αc + log(1 − 1/α) − (log δ + log α)/(α − 1) (RDP curve αc)."""
    f = lambda a: a * c + mp.log(1 - 1 / a) - (mp.log(delta) + mp.log(a)) / (a - 1)
    guess = 1 + mp.sqrt(mp.log(1 / delta) / c)
    a = mp.findroot(lambda a: mp.diff(f, a), guess)
    return f(a), a


def classic_eps_gaussian(c, delta):
    """min over α of αc + log(1/δ)/(α−1) = c + 2√(c log(1/δ))."""
    return c + 2 * mp.sqrt(c * mp.log(1 / delta))


def zcdp_log_delta(rho, eps):
    g = lambda a: (a - 1) * (a * rho - eps) + (a - 1) * mp.log(1 - 1 / a) - mp.log(a)
    a = mp.findroot(lambda a: (2 * a - 1) * rho - eps + mp.log(1 - 1 / a), 1 + (eps + 1) / (2 * rho) if rho > 0 else 2)
    return g(a)


def zcdp_eps(rho, delta):
    return bisect_decreasing(lambda e: zcdp_log_delta(rho, e), mp.log(delta), mp.mpf(0), rho + 2 * mp.sqrt(rho * mp.log(1 / delta)))


def gaussian_exact_delta(mu, eps):
    """Exact δ(ε) of a Gaussian with μ = Δ/σ (Balle & Wang 2018, Thm 8)."""
    return mp.ncdf(mu / 2 - eps / mu) - mp.e**eps * mp.ncdf(-mu / 2 - eps / mu)


def bisect_decreasing(f, target, low, high, steps=200):
    """x in [low, high] with f(x) = target for a decreasing f (plain bisection)."""
    for _ in range(steps):
        mid = (low + high) / 2
        if f(mid) > target:
            low = mid
        else:
            high = mid
    return (low + high) / 2


def gaussian_exact_eps(mu, delta):
    return bisect_decreasing(lambda e: gaussian_exact_delta(mu, e), delta, mp.mpf(0), 10 * mu * mu + 10 * mu * mp.sqrt(2 * mp.log(1 / delta)))


def kov_delta(eps, delta, k, eps_total):
    rr = mp.fsum(
        mp.binomial(k, l) * (mp.e ** ((k - l) * eps) - mp.e ** (eps_total + l * eps))
        for l in range(k + 1)
        if (k - 2 * l) * eps > eps_total
    ) / (1 + mp.e**eps) ** k
    return 1 - (1 - delta) ** k * (1 - rr)


def main() -> None:
    mpf = mp.mpf
    data: dict[str, list] = {}
    data["gaussian_rdp"] = [
        {"alpha": a, "noise_multiplier": z, "rdp": s(renyi_gaussian_quad(mpf(a), mpf(z)))}
        for a, z in [(1.5, 1.0), (2.0, 0.5), (7.25, 3.0), (64.0, 10.0)]
    ]
    data["laplace_rdp"] = [
        {"alpha": a, "scale": b, "rdp": s(renyi_laplace(mpf(a), mpf(b)))}
        for a, b in [(1.01, 1.0), (1.5, 0.5), (2.0, 2.0), (10.0, 1.0), (33.5, 5.0), (200.0, 0.1)]
    ]
    data["rr_rdp"] = [
        {"alpha": a, "epsilon": e, "k": k, "rdp": s(renyi_rr(mpf(a), mpf(e), k))}
        for a, e, k in [(1.5, 1.0, 2), (2.0, 0.1, 2), (10.0, 3.0, 2), (4.5, 2.0, 5), (100.0, 0.5, 10), (1.001, 4.0, 3)]
    ]
    data["discrete_laplace_rdp"] = [
        {"alpha": a, "scale": t, "sensitivity": d, "rdp": s(renyi_discrete_laplace(mpf(a), mpf(t), d))}
        for a, t, d in [(2.0, 1.0, 1), (1.5, 3.0, 2), (10.0, 2.0, 3), (5.5, 0.7, 1)]
    ]
    cases = [
        (2.0, 0.01, 1.1), (5.0, 0.01, 1.1), (32.0, 0.01, 1.1), (3.0, 0.5, 0.8), (10.0, 0.1, 2.0),
        (1.5, 0.01, 1.1), (2.7, 0.01, 1.1), (4.671, 0.01, 1.1), (10.5, 0.01, 1.1), (1.1, 0.2, 1.5), (7.3, 0.05, 0.7),
    ]
    data["subsampled_gaussian_log_a"] = []
    for a, q, z in cases:
        value = log_a_subsampled(mpf(a), mpf(q), mpf(z))
        if float(a).is_integer():
            exact = log_a_subsampled_binomial(int(a), mpf(q), mpf(z))
            assert abs(exact - value) < mpf(10) ** -25 * abs(exact), (a, q, z, exact, value)
            value = exact
        data["subsampled_gaussian_log_a"].append({"alpha": a, "q": q, "noise_multiplier": z, "log_a": s(value)})
    data["subsampled_laplace"] = []
    for a, q, lam in [(2, 0.1, 1.0), (5, 0.1, 1.0), (10, 0.01, 0.5), (3, 0.5, 2.0), (20, 0.3, 0.3), (2.5, 0.1, 1.0)]:
        forward, backward = renyi_subsampled_laplace(mpf(a), mpf(q), mpf(lam))
        data["subsampled_laplace"].append(
            {"alpha": a, "q": q, "scale": lam, "forward": s(forward), "backward": s(backward)}
        )
    data["without_replacement_gaussian"] = [
        {"alpha": a, "gamma": g, "noise_multiplier": z, "rdp": s(wbk_gaussian(a, mpf(g), mpf(z)))}
        for a, g, z in [(2, 0.01, 1.0), (8, 0.01, 2.0), (32, 0.05, 4.0), (3, 0.5, 1.5)]
    ]
    data["gaussian_improved_epsilon"] = []
    for sigma, count, delta in [(10.0, 100, 1e-5), (1.0, 1, 1e-5), (100.0, 10, 1e-10), (3.0, 1000, 1e-6), (0.5, 1, 1e-3)]:
        c = mpf(count) / (2 * mpf(sigma) ** 2)
        eps, a = improved_eps_gaussian(c, mpf(delta))
        mu = mp.sqrt(count) / mpf(sigma)
        data["gaussian_improved_epsilon"].append(
            {
                "sigma": sigma, "count": count, "delta": delta, "epsilon": s(eps), "order": s(a),
                "classic": s(classic_eps_gaussian(c, mpf(delta))), "exact": s(gaussian_exact_eps(mu, mpf(delta))),
            }
        )
    data["zcdp"] = []
    for rho, delta, eps in [(0.5, 1e-5, 3.0), (0.01, 1e-6, 0.5), (2.0, 1e-10, 10.0), (1e-4, 1e-5, 0.05)]:
        data["zcdp"].append(
            {
                "rho": rho, "delta": delta, "epsilon_at_delta": s(zcdp_eps(mpf(rho), mpf(delta))),
                "epsilon": eps, "delta_at_epsilon": s(mp.e ** zcdp_log_delta(mpf(rho), mpf(eps))),
            }
        )
    data["kov"] = []
    for eps, delta, k, eps_total in [(0.1, 1e-6, 100, 3.0), (1.0, 0.0, 10, 4.0), (0.5, 1e-8, 30, 0.2), (0.01, 1e-9, 1000, 0.5)]:
        data["kov"].append(
            {"epsilon": eps, "delta": delta, "k": k, "epsilon_total": eps_total,
             "delta_total": s(kov_delta(mpf(eps), mpf(delta), k, mpf(eps_total)))}
        )
    data["_provenance"] = {"script": "scripts/precompute/rdp_references.py", "mpmath_dps": mp.mp.dps}
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(data, indent=1) + "\n")


if __name__ == "__main__":
    main()
