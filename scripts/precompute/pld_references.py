"""Exact reference values for the PLD accountant tests (mpmath, 50 digits).

Writes ``tests/data/pld_references.json``. Every value is computed here from the closed-form
or finite privacy-loss distribution of the mechanism, independently of dpkit:

* ``gaussian``: k-fold Gaussian with noise σ is one Gaussian with μ = √k/σ (Dong, Roth & Su
  2022, Cor. 3.3); δ(ε) = Φ(−ε/μ + μ/2) − e^ε Φ(−ε/μ − μ/2) (Balle & Wang 2018, Thm 8).
* ``laplace``: k-fold Laplace with ε₀ = Δ/b. Per step, under P the loss has atoms +ε₀ (mass
  1/2) and −ε₀ (mass e^{−ε₀}/2) and density e^{−ε₀/2} e^{l/2}/4 on (−ε₀, ε₀). The k-fold sum is
  split by the number of atoms of each kind; the sum of m continuous parts has density
  (e^{−ε₀/2}/4)^m e^{v/2} (2ε₀)^{m−1} f_IH((v + mε₀)/(2ε₀)) with f_IH the Irwin–Hall density;
  δ(ε) = E_P[(1 − e^{ε − S})_+] is integrated in closed form piece by piece.
* ``randomized_response``: k-ary RR composed n times: multinomial over atoms {+ε₀, −ε₀, 0}.
* ``discrete_laplace``: exact enumeration and convolution of the finite loss distribution.

ε(δ) is the root of δ(ε) = δ (bisection to 1e-30 on the monotone δ). Run:
``python scripts/precompute/pld_references.py`` (about a minute).
"""

from __future__ import annotations

import json
from pathlib import Path

import mpmath as mp

mp.mp.dps = 50
OUT = Path(__file__).resolve().parents[2] / "tests" / "data" / "pld_references.json"


def bisect_epsilon(delta_fn, delta, hi=60.0, tol="1e-25", smooth=False):
    """Smallest ε ≥ 0 with delta_fn(ε) ≤ delta (delta_fn decreasing): bisection, and for a
    smooth δ a secant polish started from a 1e-6 bracket (checked to stay inside it)."""
    delta = mp.mpf(delta)
    if delta_fn(mp.mpf(0)) <= delta:
        return mp.mpf(0)
    lo, hi = mp.mpf(0), mp.mpf(hi)
    stop = mp.mpf("1e-6") if smooth else mp.mpf(tol)
    while hi - lo > stop:
        mid = (lo + hi) / 2
        if delta_fn(mid) > delta:
            lo = mid
        else:
            hi = mid
    if smooth:
        root = mp.findroot(lambda e: delta_fn(e) - delta, (lo, hi), solver="secant", tol=mp.mpf(tol) ** 2)
        if not lo <= root <= hi:
            raise RuntimeError("secant left the bracket")
        return root
    return hi


def gaussian_delta(mu, eps):
    return mp.ncdf(-eps / mu + mu / 2) - mp.exp(eps) * mp.ncdf(-eps / mu - mu / 2)


def gaussian_cases():
    out = []
    for sigma, k in [(1.0, 1), (2.0, 10), (5.0, 100), (0.8, 3), (20.0, 1000)]:
        mu = mp.sqrt(k) / mp.mpf(sigma)
        for delta in [1e-5, 1e-3]:
            # secant root, polished by bisection inside a tight bracket
            eps = mp.findroot(lambda e: gaussian_delta(mu, e) - delta, mp.mpf(1.0))
            out.append({"sigma": sigma, "count": k, "delta": delta, "epsilon": float(eps)})
    return out


def _power_exp_integral(n, lam, w0, w1):
    """∫_{w0}^{w1} w^n e^{λw} dw in closed form: e^{λw} Σ_i (−1)^i n!/(n−i)! w^{n−i}/λ^{i+1}."""

    def antiderivative(w):
        return mp.exp(lam * w) * mp.fsum(
            (-1) ** i * mp.factorial(n) / mp.factorial(n - i) * w ** (n - i) / lam ** (i + 1) for i in range(n + 1)
        )

    return antiderivative(w1) - antiderivative(w0)


def _irwin_hall_exp_integral(m, lam, x0, x1):
    """∫_{x0}^{x1} f_IH,m(u) e^{λu} du for 0 ≤ x0 ≤ x1 ≤ m (Irwin–Hall density, piecewise polynomial)."""
    total = mp.mpf(0)
    piece = int(mp.floor(x0))
    while piece < m and piece < x1:
        a, b = max(x0, mp.mpf(piece)), min(x1, mp.mpf(piece + 1))
        if b > a:
            for j in range(piece + 1):
                total += (-1) ** j * mp.binomial(m, j) * mp.exp(lam * j) * _power_exp_integral(m - 1, lam, a - j, b - j)
        piece += 1
    return total / mp.factorial(m - 1)


def laplace_delta(eps0, k, t):
    eps0, t = mp.mpf(eps0), mp.mpf(t)
    c = mp.exp(-eps0 / 2) / 4
    total = mp.mpf(0)
    for a in range(k + 1):
        for b in range(k - a + 1):
            m = k - a - b
            coef = mp.factorial(k) / (mp.factorial(a) * mp.factorial(b) * mp.factorial(m))
            coef *= mp.mpf(0.5) ** a * (mp.exp(-eps0) / 2) ** b
            s0 = (a - b) * eps0
            if m == 0:
                if s0 > t:
                    total += coef * (1 - mp.exp(t - s0))
                continue
            # With v = 2ε₀u − mε₀ (u ∈ (0, m)): ∫ (2ε₀)^m c^m e^{v/2} f_IH(u) (1 − e^{t − s0 − v})_+ du
            #   = (2ε₀c)^m ∫_{u*}^{m} f_IH(u) [e^{−mε₀/2} e^{ε₀u} − e^{t − s0 + mε₀/2} e^{−ε₀u}] du
            u_star = max(mp.mpf(0), (t - s0 + m * eps0) / (2 * eps0))
            if u_star >= m:
                continue
            integral = mp.exp(-m * eps0 / 2) * _irwin_hall_exp_integral(m, eps0, u_star, mp.mpf(m))
            integral -= mp.exp(t - s0 + m * eps0 / 2) * _irwin_hall_exp_integral(m, -eps0, u_star, mp.mpf(m))
            total += coef * (2 * eps0 * c) ** m * integral
    return total


def laplace_cases():
    out = []
    for scale, k in [(1.0, 1), (1.0, 4), (2.0, 10), (0.5, 3), (4.0, 8)]:
        eps0 = 1.0 / scale
        for delta in [1e-5, 1e-3]:
            eps = bisect_epsilon(lambda e: laplace_delta(eps0, k, e), delta, hi=k * eps0 + 1, smooth=True)
            out.append({"scale": scale, "count": k, "delta": delta, "epsilon": float(eps)})
        out.append({"scale": scale, "count": k, "epsilon_query": 0.5,
                    "delta_exact": float(laplace_delta(eps0, k, 0.5))})
    return out


def rr_delta(eps0, kk, n, t):
    eps0, t = mp.mpf(eps0), mp.mpf(t)
    denom = mp.exp(eps0) + kk - 1
    keep, other = mp.exp(eps0) / denom, 1 / denom
    zero = (kk - 2) * other
    total = mp.mpf(0)
    for a in range(n + 1):
        for b in range(n - a + 1):
            c = n - a - b
            if c > 0 and kk == 2:
                continue
            s = (a - b) * eps0
            if s <= t:
                continue
            w = mp.factorial(n) / (mp.factorial(a) * mp.factorial(b) * mp.factorial(c))
            w *= keep**a * other**b * (zero**c if c else 1)
            total += w * (1 - mp.exp(t - s))
    return total


def rr_cases():
    out = []
    for eps0, kk, n in [(1.0, 2, 10), (0.5, 2, 50), (2.0, 4, 5), (0.3, 3, 100), (1.5, 10, 20)]:
        for delta in [1e-5, 1e-3]:
            eps = bisect_epsilon(lambda e: rr_delta(eps0, kk, n, e), delta, hi=n * eps0 + 1)
            out.append({"epsilon0": eps0, "k": kk, "count": n, "delta": delta, "epsilon": float(eps)})
    return out


def dlap_pmf(scale, sens):
    """Loss atoms in units of 1/scale: {integer: (p)} under P."""
    r = mp.exp(-1 / mp.mpf(scale))
    c = (1 - r) / (1 + r)
    atoms = {sens: 1 / (1 + r), -sens: r**sens / (1 + r)}
    for x in range(1, sens):
        atoms[sens - 2 * x] = atoms.get(sens - 2 * x, 0) + c * r**x
    return atoms


def dlap_delta(scale, sens, n, t):
    base = dlap_pmf(scale, sens)
    dist = {0: mp.mpf(1)}
    for _ in range(n):
        new = {}
        for s, p in dist.items():
            for l, q in base.items():
                new[s + l] = new.get(s + l, 0) + p * q
        dist = new
    t = mp.mpf(t)
    return sum(p * (1 - mp.exp(t - s / mp.mpf(scale))) for s, p in dist.items() if s / mp.mpf(scale) > t)


def dlap_cases():
    out = []
    for scale, sens, n in [(1.0, 1, 10), (2.0, 3, 8), (0.7, 2, 5)]:
        for delta in [1e-5, 1e-3]:
            eps = bisect_epsilon(lambda e: dlap_delta(scale, sens, n, e), delta, hi=n * sens / scale + 1)
            out.append({"scale": scale, "sensitivity": sens, "count": n, "delta": delta, "epsilon": float(eps)})
    return out


def main() -> None:
    data = {
        "generator": "scripts/precompute/pld_references.py (mpmath, 50 digits)",
        "gaussian": gaussian_cases(),
        "laplace": laplace_cases(),
        "randomized_response": rr_cases(),
        "discrete_laplace": dlap_cases(),
    }
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(data, indent=1) + "\n")


if __name__ == "__main__":
    main()
