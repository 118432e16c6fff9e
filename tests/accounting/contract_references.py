"""Independent 50-digit references for the accountant contract suite (mpmath only, no dpkit).

Each function returns a *lower bound* on the true δ(ε) of a mechanism (exact where a closed form
or an exact enumeration exists), so that an accountant's certified ε(δ) must satisfy
``reference_delta(ε) ≤ δ`` and its certified δ(ε) must satisfy ``δ ≥ reference_delta(ε)``.

* Gaussian, n-fold: exact, Φ(μ/2 − ε/μ) − e^ε Φ(−μ/2 − ε/μ) with μ = √n Δ/σ (Balle & Wang 2018,
  Thm 8; Dong, Roth & Su 2022, Cor. 3.3).
* Laplace, one use: exact, (1 − e^{(ε − ε₀)/2})₊ with ε₀ = Δ/b (the hockey-stick divergence of two
  Laplace laws a sensitivity apart); a lower bound for every count ≥ 1.
* k-ary randomized response, n-fold: exact enumeration of the multinomial privacy loss (the loss
  of one use is ε₀, −ε₀ or 0 with P-masses e^ε₀/(e^ε₀ + k − 1), 1/(…), (k − 2)/(…)); binary
  randomized response is also the worst ε₀-DP pair (Kairouz, Oh & Viswanath 2015, Thm 3.3), so it
  is the exact optimal composition of pure DP.
* ε₀-bounded range, one use: the generalised randomized response with t ∈ [0, ε₀] (two losses t and
  t − ε₀, P-masses p_t = (e^ε₀ − e^t)/(e^ε₀ − 1) and 1 − p_t) is ε₀-BR (Dong, Durfee & Rogers 2020,
  §4), so max over a grid of t of its δ(ε) = p_t (1 − e^{ε − t})₊ is a lower bound.
* Poisson or without-replacement sampling of a Gaussian at rate q, one use: the pair
  ((1 − q)Q + qP, Q) is attained by neighbouring datasets, and its hockey-stick divergence at
  e^ε is q·H_{e^ε′}(P ‖ Q), e^ε′ = 1 + (e^ε − 1)/q (Balle, Barthe & Gaboardi 2018, Thm 8, with
  equality for this pair).
"""

from __future__ import annotations

import mpmath as mp

DPS = 50


_FAR = mp.mpf(10) ** 8
"""Beyond this many standard deviations mpmath's erfc series check overflows: the Mills-ratio bounds
φ(z)|z|/(z² + 1) ≤ Φ(z) ≤ φ(z)/|z| (z < 0; Gordon 1941) are used instead, each on the side that
keeps the reference a lower bound."""


def _ncdf(z, upper: bool) -> mp.mpf:
    """Φ(z), exact, or a Mills-ratio bound (upper or lower) far in the tails."""
    if z > _FAR:
        return 1 - _ncdf(-z, not upper)
    if z < -_FAR:
        density = mp.exp(-z * z / 2) / mp.sqrt(2 * mp.pi)
        return density / -z if upper else density * -z / (z * z + 1)
    return mp.ncdf(z)


def gaussian_delta(mu, epsilon) -> mp.mpf:
    """Exact δ(ε) of μ-GDP (the n-fold Gaussian with μ = √n Δ/σ); a lower bound far in the tails.

    For small μ the two terms agree to about log10(1/μ) + log10(1/δ) digits before they differ, so the
    working precision grows with μ's exponent (50 digits are left after the cancellation)."""
    mu, epsilon = mp.mpf(mu), mp.mpf(epsilon)
    if mu == 0:
        return mp.mpf(0)
    lost = max(0, -int(mp.log10(mu))) + max(0, -int(mp.log10(epsilon))) if epsilon > 0 else max(0, -int(mp.log10(mu)))
    with mp.workdps(DPS + 2 * lost + 20):
        mu, epsilon = mp.mpf(mu), mp.mpf(epsilon)
        value = _ncdf(mu / 2 - epsilon / mu, upper=False) - mp.exp(epsilon) * _ncdf(-mu / 2 - epsilon / mu, upper=True)
        return max(mp.mpf(0), value)


def laplace_delta(epsilon0, epsilon) -> mp.mpf:
    """Exact δ(ε) of one Laplace release with ε₀ = Δ/b."""
    with mp.workdps(DPS):
        gap = mp.mpf(epsilon) - mp.mpf(epsilon0)
        return -mp.expm1(gap / 2) if gap < 0 else mp.mpf(0)


def randomized_response_delta(epsilon0, k: int, count: int, epsilon) -> mp.mpf:
    """Exact δ(ε) of ``count``-fold k-ary randomized response (exact enumeration)."""
    with mp.workdps(DPS):
        e0, eps = mp.mpf(epsilon0), mp.mpf(epsilon)
        log_den = mp.log(mp.exp(e0) + (k - 1))
        log_keep, log_other = e0 - log_den, -log_den
        log_zero = mp.log(k - 2) - log_den if k > 2 else None
        total = mp.mpf(0)
        for up in range(count + 1):
            for down in range(count - up + 1):
                zero = count - up - down
                if zero and log_zero is None:
                    continue
                loss = e0 * (up - down)
                if loss <= eps:
                    continue
                log_w = (mp.loggamma(count + 1) - mp.loggamma(up + 1) - mp.loggamma(down + 1) - mp.loggamma(zero + 1)
                         + up * log_keep + down * log_other + (zero * log_zero if zero else 0))
                total += mp.exp(log_w) * -mp.expm1(eps - loss)
        return total


def bounded_range_delta(epsilon0, epsilon, grid: int = 64) -> mp.mpf:
    """A lower bound on the worst δ(ε) of one ε₀-bounded-range use (max over a grid of t)."""
    with mp.workdps(DPS):
        e0, eps = mp.mpf(epsilon0), mp.mpf(epsilon)
        best = mp.mpf(0)
        # t close to ε₀ matters most: s = ε₀ − t on a log grid, plus t on a uniform grid
        candidates = [e0 - e0 * mp.mpf(10) ** (-mp.mpf(j) / 4) for j in range(grid)]
        candidates += [e0 * mp.mpf(j) / grid for j in range(1, grid)]
        for t in candidates:
            if t <= eps or t <= 0:
                continue
            # p_t = (e^ε₀ − e^t)/(e^ε₀ − 1) = (1 − e^{t − ε₀})/(1 − e^{−ε₀})
            p_t = mp.expm1(t - e0) / mp.expm1(-e0)
            best = max(best, p_t * -mp.expm1(eps - t))
        return best


def subsampled_gaussian_delta(mu, rate, epsilon) -> mp.mpf:
    """Exact δ(ε) of the pair ((1 − q)Q + qP, Q), P, Q Gaussians μ apart (one sampled use)."""
    with mp.workdps(DPS):
        q = mp.mpf(rate)
        inner = mp.log1p(mp.expm1(mp.mpf(epsilon)) / q)
        return q * gaussian_delta(mu, inner)
