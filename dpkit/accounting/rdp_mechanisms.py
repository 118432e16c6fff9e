"""Rényi-DP curves of single mechanisms: ε(α) such that D_α(M(D) ‖ M(D′)) ≤ ε(α).

Every function here returns an **upper bound** on the Rényi divergence of order ``alpha``
between the output distributions on neighbouring inputs (exact where the docstring says so),
computed in log space. The accountant in :mod:`dpkit.accounting.rdp` composes them and
converts to (ε, δ).

Functions take a scalar order ``alpha > 1`` (fractional orders are allowed unless stated)
and return a float (possibly ``inf``).
"""

from __future__ import annotations

import functools
import math
import weakref

import numpy as np
from scipy import special

from dpkit._validation import check_integer, check_nonnegative, check_positive, check_unit_interval

__all__ = [
    "check_order",
    "rdp_gaussian",
    "rdp_laplace",
    "rdp_randomized_response",
    "rdp_pure_dp",
    "rdp_zcdp",
    "rdp_objective_perturbation",
    "rdp_discrete_laplace",
    "log_a_poisson_subsampled_gaussian",
    "rdp_poisson_subsampled_gaussian",
    "rdp_sampled_without_replacement",
    "amplified_pure_epsilon",
    "rdp_poisson_subsampled_laplace",
    "interpolate_integer_curve",
    "rho_randomized_response",
    "rho_pure_dp",
    "rho_laplace",
]

#: Largest order at which the Poisson-subsampled Gaussian is evaluated by its series; above it
#: the (valid, looser) unsampled bound α/(2σ²) is used (subsampling never increases a Rényi
#: divergence, by joint quasi-convexity: van Erven & Harremoës 2014, Thm 13).
SUBSAMPLED_EXACT_MAX_ORDER = 2.0**15

#: Largest number of terms of the fractional-order series (Mironov, Talwar & Zhang 2019, §3.3).
#: If it is reached the partial sum is still a certified upper bound (see
#: :func:`log_a_poisson_subsampled_gaussian`), only a looser one; the chord between the
#: neighbouring integer orders (also an upper bound, by convexity) is then used if smaller.
_FRACTIONAL_MAX_TERMS = 2**12

#: Terms of magnitude below e^-40 (≈ 4e-18) are negligible against A_α ≥ 1.
_LOG_TERM_TOLERANCE = -40.0


def check_order(alpha: float) -> float:
    """Validate a Rényi order α ∈ (1, ∞)."""
    alpha = check_positive("alpha", alpha)
    if not alpha > 1.0:
        raise ValueError(f"alpha must be in (1, inf), got alpha={alpha}")
    return alpha


def _lse(values) -> float:
    """log Σ exp(values), stable (max-shifted); −inf for an empty or all −inf input.

    A lean replacement for ``scipy.special.logsumexp`` on 1-D float input (which is ~10× slower
    per call here, and these sums sit inside the order search)."""
    x = np.asarray(values, dtype=float)
    if x.size == 0:
        return -math.inf
    m = float(np.max(x))
    if not math.isfinite(m):
        return m
    return m + math.log(float(np.sum(np.exp(x - m))))


# --------------------------------------------------------------------------- closed forms


def rdp_gaussian(alpha: float, noise_multiplier: float) -> float:
    """RDP of the Gaussian mechanism: α/(2 z²) with z = σ/Δ (exact).

    References
    ----------
    Mironov (2017), "Rényi Differential Privacy", Prop. 7.
    """
    alpha = check_order(alpha)
    z = check_positive("noise_multiplier", noise_multiplier)
    denominator = 2.0 * z * z
    return alpha / denominator if denominator > 0.0 else math.inf  # z² underflows: no noise, only ∞ holds


def rdp_laplace(alpha: float, scale: float, sensitivity: float = 1.0) -> float:
    """RDP of the Laplace mechanism with scale b and L1 sensitivity Δ (exact, log space).

    With λ = b/Δ,
    ε(α) = 1/(α−1) · log( α/(2α−1) · e^{(α−1)/λ} + (α−1)/(2α−1) · e^{−α/λ} ).

    References
    ----------
    Mironov (2017), "Rényi Differential Privacy", Prop. 6 (Table II).
    """
    alpha = check_order(alpha)
    lam = check_positive("scale", scale) / check_positive("sensitivity", sensitivity)
    if math.isinf(lam):  # Δ/b below ~5.6e-309: D_α ≤ αε²/2 is far below the smallest float
        return 0.0
    if (alpha - 1.0) / lam <= 1.0:  # near α = 1 the log-sum-exp cancels: use the form without cancellation
        return min(float(_laplace_cgf(1.0 / lam, np.array([alpha - 1.0]))[0]) / (alpha - 1.0), 1.0 / lam)
    log_den = math.log(2.0 * alpha - 1.0)
    log_a = np.logaddexp(
        math.log(alpha) - log_den + (alpha - 1.0) / lam,
        math.log(alpha - 1.0) - log_den - alpha / lam,
    )
    return min(float(log_a) / (alpha - 1.0), 1.0 / lam)


def rdp_randomized_response(alpha: float, epsilon: float, k: int = 2) -> float:
    """RDP of k-ary randomized response with parameter ε (exact, log space).

    The two output distributions of neighbouring inputs are P = (p, r, r, …) and
    Q = (r, p, r, …) with p = e^ε/(e^ε+k−1), r = 1/(e^ε+k−1), so
    ε(α) = 1/(α−1) · log( p^α r^{1−α} + r^α p^{1−α} + (k−2) r ).
    For k = 2 this is the binary randomized response curve, which dominates every ε-DP
    mechanism (see :func:`rdp_pure_dp`).
    """
    alpha = check_order(alpha)
    epsilon = check_nonnegative("epsilon", epsilon)
    k = check_integer("k", k, minimum=2)
    if epsilon == 0.0:
        return 0.0
    if (alpha - 1.0) * epsilon <= 1.0:  # near α = 1 the log-sum-exp cancels: use the form without cancellation
        value = float(_rr_cgf(epsilon, k, np.array([alpha - 1.0]))[0]) / (alpha - 1.0)
        return min(max(value, 0.0), epsilon)
    # log p = ε − log(e^ε + k − 1), log r = −log(e^ε + k − 1)
    log_norm = float(np.logaddexp(epsilon, math.log(k - 1)))
    log_p = epsilon - log_norm
    log_r = -log_norm
    terms = [alpha * log_p + (1.0 - alpha) * log_r, alpha * log_r + (1.0 - alpha) * log_p]
    if k > 2:
        terms.append(math.log(k - 2) + log_r)
    value = float(_lse(terms)) / (alpha - 1.0)
    return min(max(value, 0.0), epsilon)


def rdp_pure_dp(alpha: float, epsilon: float) -> float:
    """RDP bound of any ε-DP mechanism: the binary randomized response curve (exact worst case).

    Every ε-DP pair of distributions is a post-processing of binary randomized response with
    parameter ε (Kairouz, Oh & Viswanath 2015, Thm 2.1 and its proof), so by data processing
    ε(α) = 1/(α−1) · log( (e^{αε} + e^{(1−α)ε}) / (1 + e^ε) ), which is ≤ min(ε, αε²/2)
    (Bun & Steinke 2016, Prop. 3.3).
    """
    return rdp_randomized_response(alpha, epsilon, 2)


def rdp_zcdp(alpha: float, rho: float) -> float:
    """RDP of a ρ-zCDP mechanism: ρα (Bun & Steinke 2016, Def. 1.1)."""
    return check_nonnegative("rho", rho) * check_order(alpha)


def rdp_objective_perturbation(alpha: float, noise_multiplier: float, jacobian: float) -> float:
    """RDP of Gaussian objective perturbation of a GLM (exact minimiser), an upper bound:

        ε(α) = ξ + α/(2z²) + log(2Φ((α − 1)/z))/(α − 1),    z = σ/Δ.

    Derivation (any order α > 1, both directions). With b = −∇F_D(θ) the noise that produced
    θ under D, the privacy loss at θ is L = J + (‖g‖² − 2bᵀg)/(2σ²), where g = ∇F_{D′} − ∇F_D and
    J is the log-ratio of the Hessian determinants (Chaudhuri, Monteleoni & Sarwate 2011, proof
    of Thm 9): |J| ≤ ξ (a rank-one change of a Hessian ≥ μI). For a GLM g = (a′x′ − ax)/m with
    |a|, |a′| ≤ c, so ‖g‖ ≤ Δ and |bᵀg| ≤ (c/m)(|bᵀx| + |bᵀx′|) with bᵀx, bᵀx′ ~ N(0, σ²) under
    D whatever θ is (b is the noise itself). By Cauchy–Schwarz and E e^{κ|Z|} = 2Φ(κ)e^{κ²/2},
    E_D[e^{(α−1)L}] ≤ e^{(α−1)(ξ + Δ²/(2σ²))} · 2Φ(κ) e^{κ²/2} with κ = (α−1)Δ/σ (replace-one,
    Δ = 2c/m; under add/remove the single term gives the same form with Δ = c/m).
    The last term grows like Δ/σ, not (Δ/σ)²: the bound pays for not knowing the sign of bᵀg.

    >>> round(rdp_objective_perturbation(2.0, 10.0, 0.0), 6) == round(0.01 + math.log(2 * special.ndtr(0.1)), 6)
    True
    """
    alpha = check_order(alpha)
    z = check_positive("noise_multiplier", noise_multiplier)
    xi = check_nonnegative("jacobian", jacobian)
    if math.isinf(alpha):
        return math.inf
    kappa = (alpha - 1.0) / z
    return xi + alpha / (2.0 * z * z) + (math.log(2.0) + float(special.log_ndtr(kappa))) / (alpha - 1.0)


#: Largest sensitivity whose shifts d = 1..Δ :func:`rdp_discrete_laplace` enumerates; above it the
#: pure-DP curve of ε = Δ/t is used (a valid, looser bound).
_DISCRETE_LAPLACE_MAX_SHIFTS = 2**20


def rdp_discrete_laplace(alpha: float, scale: float, sensitivity: int = 1) -> float:
    """RDP of the discrete Laplace mechanism P(x) ∝ e^{−|x|/t} on an integer query of
    sensitivity Δ (exact, by closed-form geometric sums, maximised over shifts d = 1..Δ).

    With s = 1/t, c = (1−e^{−s})/(1+e^{−s}) and a shift d, the sum
    Σ_x P(x)^α P(x−d)^{1−α} = c · [ (e^{s(α−1)d} + e^{−sαd}) / (1−e^{−s})
    + e^{s(α−1)d} Σ_{x=1}^{d−1} e^{−s(2α−1)x} ] (derived in docs/accounting.md).
    The result is capped by the pure-DP bound Δ/t. Above Δ = 2²⁰ shifts the pure-DP curve of
    ε = Δ/t (:func:`rdp_pure_dp`) is returned instead; ∞ where Δ/t overflows.
    """
    alpha = check_order(alpha)
    s = 1.0 / check_positive("scale", scale)
    delta_max = check_integer("sensitivity", sensitivity, minimum=1)
    if math.isinf(delta_max * s):  # t so small that Δ/t overflows: no noise, only ∞ holds
        return math.inf
    if delta_max > _DISCRETE_LAPLACE_MAX_SHIFTS:
        # too many shifts to enumerate: the mechanism is (Δ/t)-DP, so the binary randomized response
        # curve bounds it (Kairouz, Oh & Viswanath 2015, Thm 2.1; see rdp_pure_dp)
        return rdp_pure_dp(alpha, delta_max * s)
    d = np.arange(1, delta_max + 1, dtype=float)
    log_c = math.log(-math.expm1(-s)) - math.log1p(math.exp(-s))
    log_geo = -math.log(-math.expm1(-s))  # log 1/(1−e^{−s})
    outer = np.logaddexp(s * (alpha - 1.0) * d, -s * alpha * d) + log_geo
    a = s * (2.0 * alpha - 1.0)
    # Σ_{x=1}^{d−1} e^{−a x} = e^{−a}(1 − e^{−a(d−1)})/(1 − e^{−a}); zero when d = 1
    with np.errstate(divide="ignore"):
        log_inner = np.where(
            d > 1,
            -a + np.log(-np.expm1(-a * np.maximum(d - 1.0, 1.0))) - math.log(-math.expm1(-a)) + s * (alpha - 1.0) * d,
            -np.inf,
        )
    log_sum = log_c + np.logaddexp(outer, log_inner)
    value = float(np.max(log_sum)) / (alpha - 1.0)
    return min(max(value, 0.0), delta_max * s)


# --------------------------------------------------------------------------- Poisson subsampling


def _log_a_integer(alpha: int, q: float, z: float) -> float:
    k = np.arange(alpha + 1, dtype=float)
    log_binom = special.gammaln(alpha + 1.0) - special.gammaln(k + 1.0) - special.gammaln(alpha - k + 1.0)
    terms = log_binom + (alpha - k) * math.log1p(-q) + k * math.log(q) + (k * k - k) / (2.0 * z * z)
    return float(_lse(terms))


def _log_a_fractional(alpha: float, q: float, z: float) -> float:
    """Two-series expansion of Mironov, Talwar & Zhang (2019), §3.3, with a certified stop.

    A_α = Σ_i C(α,i) [ T0_i + T1_i ], where T0_i = q^i (1−q)^{α−i} e^{(i²−i)/(2z²)} Φ((z0−i)/z) and
    T1_i = q^{α−i} (1−q)^i e^{((α−i)²−(α−i))/(2z²)} Φ((α−i−z0)/z), z0 = z² log(1/q−1) + 1/2.
    T0_i and T1_i decrease in i (they integrate r^i resp. r^{α−i} over the region where r ≤ 1
    resp. r > 1), and C(α,i) alternates in sign with decreasing magnitude for i > ⌊α⌋. The tail
    from i0 = ⌊α⌋+1 (first term positive) is therefore an alternating series with decreasing
    terms: a partial sum that ends on a positive term is an upper bound on A_α. We stop on such
    a term once the next term is below e^-40 (A_α ≥ 1), or at the term cap.
    """
    log_q, log_1mq = math.log(q), math.log1p(-q)
    z0 = z * z * (math.log1p(-q) - math.log(q)) + 0.5
    i0 = math.floor(alpha) + 1
    n = max(64, 4 * i0 + 16)
    while True:
        i = np.arange(n, dtype=float)
        j = alpha - i
        log_abs_binom = special.gammaln(alpha + 1.0) - special.gammaln(i + 1.0) - special.gammaln(j + 1.0)
        sign = special.gammasgn(j + 1.0)
        log_t0 = i * log_q + j * log_1mq + (i * i - i) / (2.0 * z * z) + special.log_ndtr((z0 - i) / z)
        log_t1 = j * log_q + i * log_1mq + (j * j - j) / (2.0 * z * z) + special.log_ndtr((j - z0) / z)
        log_abs = log_abs_binom + np.logaddexp(log_t0, log_t1)
        # candidate last indices: i0 + 2m (positive terms of the alternating tail)
        last = np.arange(i0, n - 1, 2)
        small = last[log_abs[last + 1] < _LOG_TERM_TOLERANCE]
        if small.size or n >= _FRACTIONAL_MAX_TERMS:
            stop = int(small[0]) if small.size else int(last[-1])
            keep = slice(0, stop + 1)
            pos = sign[keep] > 0
            log_pos = _lse(log_abs[keep][pos])
            log_neg = _lse(log_abs[keep][~pos]) if (~pos).any() else -np.inf
            value = float(log_pos + np.log1p(-np.exp(log_neg - log_pos)))
            if not small.size:  # not converged: the chord of the convex log A_α may be tighter
                value = min(value, _chord(alpha, q, z))
            return value
        n = min(2 * n, _FRACTIONAL_MAX_TERMS)


def _chord(alpha: float, q: float, z: float) -> float:
    """Upper bound on log A_α from the neighbouring integer orders: log A_α is convex in α and
    log A_1 = 0 (van Erven & Harremoës 2014, Cor. 2)."""
    n = math.floor(alpha)
    low = 0.0 if n == 1 else _log_a_cached(float(n), q, z)
    return (n + 1 - alpha) * low + (alpha - n) * _log_a_cached(float(n + 1), q, z)


@functools.lru_cache(maxsize=8192)
def _log_a_cached(alpha: float, q: float, z: float) -> float:
    if alpha.is_integer():
        return _log_a_integer(int(alpha), q, z)
    return _log_a_fractional(alpha, q, z)


def log_a_poisson_subsampled_gaussian(alpha: float, q: float, noise_multiplier: float) -> float:
    """log A_α = (α−1)·D_α for the Poisson-subsampled Gaussian (add/remove), an upper bound.

    A_α = E_{x∼μ0}[(μ(x)/μ0(x))^α] with μ0 = N(0, z²), μ = (1−q)μ0 + q N(1, z²).
    Integer α: the binomial expansion Σ_k C(α,k)(1−q)^{α−k} q^k e^{(k²−k)/(2z²)} (exact);
    fractional α: the two-series expansion with a certified alternating-series stop (see
    ``_log_a_fractional``). Both are summed in log space (logsumexp, log_ndtr, gammaln).
    Values are cached per (α, q, z).

    References
    ----------
    Mironov, Talwar & Zhang (2019), "Rényi Differential Privacy of the Sampled Gaussian
    Mechanism", arXiv:1908.10530, §3.1 (integer α), §3.3 (fractional α), Thm 5 (the direction
    D_α(μ‖μ0) dominates D_α(μ0‖μ)).
    """
    alpha = check_order(alpha)
    q = check_unit_interval("q", q, include_zero=False)
    z = check_positive("noise_multiplier", noise_multiplier)
    if q == 1.0:
        return (alpha - 1.0) * alpha / (2.0 * z * z)
    return _log_a_cached(alpha, q, z)


def rdp_poisson_subsampled_gaussian(alpha: float, q: float, noise_multiplier: float) -> float:
    """RDP of the Poisson-subsampled Gaussian mechanism (add/remove neighbours), an upper bound.

    ``min(log A_α/(α−1), α/(2z²))``; above order 2^15 only the unsampled bound α/(2z²) is used
    (valid, since subsampling cannot increase a Rényi divergence).
    """
    alpha = check_order(alpha)
    z = check_positive("noise_multiplier", noise_multiplier)
    plain = alpha / (2.0 * z * z)  # z * z is inf (not an OverflowError) beyond 1e154: then the RDP is 0 to the last bit
    if alpha > SUBSAMPLED_EXACT_MAX_ORDER:
        return plain
    value = log_a_poisson_subsampled_gaussian(alpha, q, noise_multiplier) / (alpha - 1.0)
    return min(max(value, 0.0), plain)


def amplified_pure_epsilon(epsilon: float, q: float) -> float:
    """ε′ = log(1 + q(e^ε − 1)): an ε-DP mechanism on a Poisson subsample of rate q is ε′-DP under
    add/remove neighbours (Li, Qardaji & Su 2012, Thm 1; Balle, Barthe & Gaboardi 2018, Thm 8)."""
    epsilon = check_nonnegative("epsilon", epsilon, allow_inf=True)
    q = check_unit_interval("q", q, include_zero=False)
    if epsilon <= 700.0:
        return math.log1p(q * math.expm1(epsilon))
    if math.isinf(epsilon):
        return math.inf
    # e^ε overflows: ε′ = log1p(e^x) with x = log(q(e^ε − 1)) = log q + ε + log1p(−e^{−ε}), x raised by
    # a bound on its rounding error (a few ulps of its largest term, which cancel when q e^ε is small)
    log_q = math.log(q)
    x = log_q + epsilon + math.log1p(-math.exp(-epsilon)) + 4.0 * math.ulp(max(epsilon, -log_q))
    value = x + math.log1p(math.exp(-x)) if x > 0.0 else math.log1p(math.exp(x))
    return math.nextafter(value, math.inf)


def rdp_poisson_subsampled_laplace(alpha: float, q: float, scale: float, sensitivity: float = 1.0) -> float:
    """RDP of the Poisson-subsampled Laplace mechanism (add/remove neighbours), an upper bound.

    At integer α the exact formula of Zhu & Wang (2019), which holds for the Laplace mechanism:
    ε(α) = 1/(α−1) log{ (1−q)^{α−1}(1 + (α−1)q) + Σ_{l=2}^{α} C(α,l) q^l (1−q)^{α−l} e^{(l−1)ε_L(l)} },
    with ε_L the Laplace curve (:func:`rdp_laplace`); fractional α by the chord between the
    neighbouring integer orders (convexity, :func:`interpolate_integer_curve`); always capped by
    the amplified pure-DP curve (:func:`amplified_pure_epsilon`). Above order 4096 only the cap
    is used.

    References
    ----------
    Zhu & Wang (2019), "Poisson Subsampled Rényi Differential Privacy", ICML, §3 (exact formula
    for the Gaussian and Laplace mechanisms).
    """
    alpha = check_order(alpha)
    q = check_unit_interval("q", q, include_zero=False)
    lam = check_positive("scale", scale) / check_positive("sensitivity", sensitivity)
    cap = rdp_pure_dp(alpha, amplified_pure_epsilon(1.0 / lam, q))
    if q == 1.0:
        return rdp_laplace(alpha, lam)
    if alpha > 4096:
        return cap
    return min(cap, interpolate_integer_curve(alpha, functools.partial(_subsampled_laplace_integer, q=q, lam=lam)))


@functools.lru_cache(maxsize=8192)
def _subsampled_laplace_integer(alpha: int, q: float, lam: float) -> float:
    log_q, log_1mq = math.log(q), math.log1p(-q)
    head = (alpha - 1) * log_1mq + math.log1p((alpha - 1) * q)
    if alpha < 2:
        return 0.0
    l = np.arange(2, alpha + 1, dtype=float)
    log_den = np.log(2.0 * l - 1.0)
    # (l−1)·ε_L(l) = log( l/(2l−1) e^{(l−1)/λ} + (l−1)/(2l−1) e^{−l/λ} )  (Mironov 2017, Prop. 6)
    cgf = np.logaddexp(np.log(l) - log_den + (l - 1.0) / lam, np.log(l - 1.0) - log_den - l / lam)
    log_binom = special.gammaln(alpha + 1.0) - special.gammaln(l + 1.0) - special.gammaln(alpha - l + 1.0)
    terms = np.concatenate([[head], log_binom + l * log_q + (alpha - l) * log_1mq + cgf])
    return max(_lse(terms), 0.0) / (alpha - 1.0)


# --------------------------------------------------------------------------- sampling w/o replacement


def _log_expm1_power(eps_inf: float, j: np.ndarray) -> np.ndarray:
    """log min(2, (e^{ε∞} − 1)^j), with ε∞ = inf allowed."""
    if math.isinf(eps_inf):
        return np.full_like(j, math.log(2.0))
    if eps_inf == 0.0:
        return np.full_like(j, -np.inf)
    log_em1 = eps_inf + math.log(-math.expm1(-eps_inf))
    return np.minimum(j * log_em1, math.log(2.0))


#: base_curve -> array of its values at the integer orders 0..n (entries 0, 1 unused), per curve object.
_BASE_VALUES: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def _base_values(base_curve, alpha: int) -> np.ndarray:
    """``base_curve(j)`` for j = 0..α (index j; entries 0 and 1 are NaN), memoised per curve object.

    The bound of :func:`rdp_sampled_without_replacement` at order α needs the base curve at every
    j ≤ α, and an order search evaluates many α: without the memo the base curve is called
    O(α²) times in total (e.g. ~10⁵ calls, 1.3 s, for one search reaching α ≈ 4096). Curves are
    pure functions of the order, so each value is computed once per curve object; callables that
    cannot be weakly referenced are simply not memoised.
    """
    try:
        values = _BASE_VALUES.get(base_curve)
    except TypeError:  # not hashable / not weak-referenceable
        values = None
    if values is None or values.size <= alpha:
        start = 2 if values is None else values.size
        head = np.full(2, np.nan) if values is None else values
        new = np.array([float(base_curve(float(x))) for x in range(start, alpha + 1)], dtype=float)
        values = np.concatenate([head, new])
        try:
            _BASE_VALUES[base_curve] = values
        except TypeError:
            pass
    return values


def rdp_sampled_without_replacement(alpha: int, base_curve, eps_inf: float, gamma: float) -> float:
    """RDP bound of a mechanism run on a subset of fixed size m drawn without replacement from n
    records (γ = m/n), replace-one neighbours, integer orders α ≥ 2.

    ε′(α) ≤ 1/(α−1) · log( 1 + γ² C(α,2) min{4(e^{ε(2)}−1), e^{ε(2)} min{2, (e^{ε(∞)}−1)²}}
    + Σ_{j=3}^{α} γ^j C(α,j) e^{(j−1)ε(j)} min{2, (e^{ε(∞)}−1)^j} ),
    and also ε′(α) ≤ ε(α) (joint quasi-convexity). ``base_curve(j)`` is the base mechanism's RDP
    at order j, ``eps_inf`` its pure-DP parameter (``inf`` for the Gaussian).

    References
    ----------
    Wang, Balle & Kasiviswanathan (2019), "Subsampled Rényi Differential Privacy and Analytical
    Moments Accountant", AISTATS, Thm 9.
    """
    alpha = check_integer("alpha", alpha, minimum=2)
    gamma = check_unit_interval("gamma", gamma, include_zero=False)
    base_alpha = float(base_curve(float(alpha)))
    if gamma == 1.0:
        return base_alpha
    eps2 = float(base_curve(2.0))
    log_gamma = math.log(gamma)
    two = np.array([2.0])
    log_min2 = min(
        math.log(4.0) + eps2 + math.log(-math.expm1(-eps2)) if eps2 > 0 else -math.inf,
        eps2 + float(_log_expm1_power(eps_inf, two)[0]),
    )
    terms = [2.0 * log_gamma + math.log(alpha * (alpha - 1.0) / 2.0) + log_min2]
    if alpha >= 3:
        j = np.arange(3, alpha + 1, dtype=float)
        eps_j = _base_values(base_curve, alpha)[3 : alpha + 1]
        log_binom = special.gammaln(alpha + 1.0) - special.gammaln(j + 1.0) - special.gammaln(alpha - j + 1.0)
        terms.extend(j * log_gamma + log_binom + (j - 1.0) * eps_j + _log_expm1_power(eps_inf, j))
    rest = float(_lse(terms))  # log(1 + e^rest) by log1p, so that a tiny sum does not round to 0
    value = (math.log1p(math.exp(rest)) if rest < 0.0 else rest + math.log1p(math.exp(-rest))) / (alpha - 1.0)
    return min(max(value, 0.0), base_alpha)


def interpolate_integer_curve(alpha: float, integer_curve) -> float:
    """Extend an RDP bound known at integer orders to α > 1 (a valid upper bound).

    (α−1)·D_α is convex in α (it is a cumulant generating function of the privacy loss; van Erven
    & Harremoës 2014, Cor. 2) and zero at α = 1, so it lies below the chord between the
    neighbouring integer orders: (α−1)D_α ≤ (n+1−α)(n−1)ε(n) + (α−n)·n·ε(n+1), n = ⌊α⌋.
    """
    alpha = check_order(alpha)
    if alpha.is_integer():
        return float(integer_curve(int(alpha)))
    n = math.floor(alpha)
    low = 0.0 if n == 1 else (n - 1) * float(integer_curve(n))
    high = n * float(integer_curve(n + 1))
    return ((n + 1 - alpha) * low + (alpha - n) * high) / (alpha - 1.0)


# --------------------------------------------------------------------------- tightest zCDP of pure-DP mechanisms

_U = 2.0**-53

#: Relative gap between the certified upper and lower bounds at which :func:`_certified_rho` stops.
_RHO_TOLERANCE = 1e-10


def _rr_cgf(epsilon: float, k: int, t: np.ndarray) -> np.ndarray:
    """K(t) = log E_P[e^{tL}] = t·D_{1+t}(P‖Q) of k-ary randomized response, accurate to ~10u relative.

    With r = 1/(e^ε + k − 1) the loss is +ε (mass e^ε r), −ε (mass r), 0 (the rest), and
    E_P[e^{tL}] − 1 = r[4 sinh²(tε/2) + (e^ε − 1)(e^{tε} − 1)], a sum of two non-negative terms
    (no cancellation), so log1p of it is accurate for tε ≤ 1; for tε > 1 the direct
    log-sum-exp is used (its terms are positive and K is not small)."""
    log_r = -float(np.logaddexp(epsilon, math.log(k - 1)))
    with np.errstate(over="ignore"):  # tε → ∞: the log-sum-exp branch gives K = ∞, a bound that holds
        te = t * epsilon
    clipped = np.minimum(te, 1.0)
    r_expm1 = math.exp(log_r + epsilon + math.log(-math.expm1(-epsilon)))  # r(e^ε − 1), no overflow
    small = np.log1p(math.exp(log_r) * 4.0 * np.sinh(clipped / 2.0) ** 2 + r_expm1 * np.expm1(clipped))
    terms = [epsilon + log_r + te, log_r - te]
    if k > 2:
        terms.append(np.full_like(t, math.log(k - 2) + log_r))
    large = np.logaddexp.reduce(np.stack(terms), axis=0)
    return np.where(te <= 1.0, small, large)


def _rr_cgf_upper(epsilon: float, k: int, t: np.ndarray) -> np.ndarray:
    """:func:`_rr_cgf` plus a round-off allowance: 64u relative, and 32u·tε absolute where the
    log-sum-exp branch (tε > 1) adds terms of size tε. An upper bound."""
    with np.errstate(over="ignore"):  # tε → ∞ gives K = ∞, a bound that holds
        te = t * epsilon
        return _rr_cgf(epsilon, k, t) * (1.0 + 64.0 * _U) + np.where(te > 1.0, 32.0 * _U * te, 0.0)


def _exp_minus_linear(y: np.ndarray) -> np.ndarray:
    """e^y − 1 − y ≥ 0 without cancellation: its Taylor series Σ_{n≥2} yⁿ/n! for |y| < 1/2 (the
    omitted tail is below 2⁻²⁴ of the first term), ``expm1(y) − y`` otherwise."""
    y = np.asarray(y, dtype=float)
    near = np.clip(y, -0.5, 0.5)  # the series is used only there (no overflow elsewhere)
    series = np.zeros_like(y)
    for n in range(24, 1, -1):  # Horner: y²(1/2! + y(1/3! + …))
        series = series * near + 1.0 / math.factorial(n)
    series = series * near * near
    with np.errstate(over="ignore"):
        direct = np.expm1(np.minimum(y, 700.0)) - y
    return np.where(np.abs(y) < 0.5, series, direct)


def _laplace_cgf(epsilon: float, t: np.ndarray) -> np.ndarray:
    """K(t) = t·D_{1+t} of the Laplace mechanism with ε = Δ/b (Mironov 2017, Prop. 6), accurate for tε ≤ 1.

    With α = 1 + t, α/(2α−1)·e^{tε} + t/(2α−1)·e^{−αε} − 1 = [α·h(tε) + t·h(−αε)]/(2α − 1) where
    h(y) = e^y − 1 − y ≥ 0 (the linear terms αtε − tαε cancel exactly), a sum of two non-negative
    terms; K is its log1p. For tε > 1 the direct log-sum-exp is used."""
    t = np.asarray(t, dtype=float)
    alpha = 1.0 + t
    small = np.log1p((alpha * _exp_minus_linear(np.minimum(t, 1.0 / epsilon) * epsilon)
                      + t * _exp_minus_linear(-alpha * epsilon)) / (2.0 * alpha - 1.0))
    log_den = np.log(2.0 * alpha - 1.0)
    with np.errstate(divide="ignore"):
        large = np.logaddexp(np.log(alpha) - log_den + t * epsilon, np.log(t) - log_den - alpha * epsilon)
    return np.where(t * epsilon <= 1.0, small, large)


def _laplace_cgf_upper(epsilon: float, t: np.ndarray) -> np.ndarray:
    """:func:`_laplace_cgf` plus a round-off allowance, as in :func:`_rr_cgf_upper`: an upper bound."""
    te = t * epsilon
    return _laplace_cgf(epsilon, t) * (1.0 + 64.0 * _U) + np.where(te > 1.0, 32.0 * _U * te, 0.0)


def _chord_maxima(t: np.ndarray, k_up: np.ndarray) -> np.ndarray:
    """On each [a, b] = [tᵢ, tᵢ₊₁], the maximum of c(t)/(t(1+t)) with c the chord through (a, K(a)),
    (b, K(b)): c(t) = s·t + c₀ with c₀ ≤ 0 (a chord of a convex K with K(0) = 0). The derivative of
    (s t + c₀)/(t + t²) vanishes at s t² + 2c₀ t + c₀ = 0, i.e. t* = (−c₀ + √(c₀² − s c₀))/s."""
    a, b, ka, kb = t[:-1], t[1:], k_up[:-1], k_up[1:]
    slope = (kb - ka) / (b - a)
    intercept = np.minimum(ka - slope * a, 0.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        star = (-intercept + np.sqrt(intercept * intercept - slope * intercept)) / slope
    star = np.where((slope > 0) & (star > a) & (star < b), star, a)
    candidates = [(slope * x + intercept) / (x * (1.0 + x)) for x in (a, b, star)]
    return np.maximum.reduce(candidates)


def _certified_rho(cgf_upper, epsilon: float) -> float:
    """sup_{α>1} D_α/α, certified from above, for a pair whose privacy loss is bounded by ε.

    With t = α − 1 and the cumulant generating function K(t) = t·D_{1+t} (convex, K(0) = 0,
    K(t) ≤ tε; van Erven & Harremoës 2014), D_α/α = K(t)/(t(1+t)). On a grid 0 < t₀ < … < t_N,
    K lies below its chords, so on [tᵢ, tᵢ₊₁] the ratio is at most the maximum of chord/(t(1+t)),
    found in closed form (``_chord_maxima``); on (0, t₀] it is ≤ K(t₀)/t₀ (K(t)/t increases);
    beyond t_N it is ≤ ε/(1 + t_N). The largest of these bounds the supremum. Intervals whose
    bound exceeds the best value seen, K(tᵢ)/(tᵢ(1+tᵢ)), by more than 1e-10 relative are split
    until none does; the bound is then rounded up (16u, for the arithmetic of the chords)."""
    if epsilon > 1e100:  # the grid would overflow (tε, ε²); D_α ≤ ε for every α, so D_α/α ≤ ε holds
        return epsilon
    t = np.geomspace(1e-12, 1e12, 2401)
    upper = math.inf
    for _ in range(60):
        k_up = cgf_upper(t)
        lower = float(np.max(k_up / (t * (1.0 + t))))
        pieces = _chord_maxima(t, k_up)
        upper = max(float(k_up[0] / t[0]), float(np.max(pieces)), epsilon / (1.0 + float(t[-1])))
        wide = pieces > lower * (1.0 + _RHO_TOLERANCE)
        if not wide.any():
            break
        t = np.sort(np.concatenate((t, np.sqrt(t[:-1][wide] * t[1:][wide]))))
    return math.nextafter(upper * (1.0 + 16.0 * _U), math.inf)


def rho_randomized_response(epsilon: float, k: int = 2) -> float:
    """The smallest ρ such that k-ary randomized response with parameter ε is ρ-zCDP, rounded up.

    ρ = sup_{α>1} D_α(P‖Q)/α (Bun & Steinke 2016, Def. 1.1) for the exact Rényi curve of
    :func:`rdp_randomized_response`, computed as a certified upper bound (within ~1e-10 relative
    of the supremum; see ``_certified_rho``). For k = 2 this is the tightest ρ of *every* ε-DP
    mechanism (:func:`rho_pure_dp`). It is never above ε²/2 (Bun & Steinke 2016, Prop. 3.3) and
    tends to ε·tanh(ε/2), the KL divergence, at α → 1 when that is where the supremum sits.

    >>> rho = rho_randomized_response(1.0)
    >>> round(rho, 6), rho < 0.5
    (0.462117, True)
    """
    epsilon = check_nonnegative("epsilon", epsilon, allow_inf=True)
    k = check_integer("k", k, minimum=2)
    if epsilon == 0.0:
        return 0.0
    if math.isinf(epsilon):  # a parameter that overflowed (e.g. Δ/b with b = 5e-324): no privacy, ρ = ∞
        return math.inf
    if k == 2 and epsilon <= 1e-8:
        # ρ = ε tanh(ε/2) − O(ε⁴) here, so Bun & Steinke's ε²/2 is within ε²/12 < 1e-17 relative: the
        # certified search (slow for tiny ε, whose curve is flat over its whole grid) gains nothing.
        return epsilon * epsilon / 2.0
    return _rho_randomized_response(epsilon, k)


@functools.lru_cache(maxsize=4096)
def _rho_randomized_response(epsilon: float, k: int) -> float:
    return min(_certified_rho(lambda t: _rr_cgf_upper(epsilon, k, t), epsilon), epsilon * epsilon / 2.0)


def rho_pure_dp(epsilon: float) -> float:
    """The smallest ρ such that every ε-DP mechanism is ρ-zCDP: that of binary randomized response.

    Every ε-DP pair of distributions is a post-processing of binary randomized response with
    parameter ε (Kairouz, Oh & Viswanath 2015, Thm 2.1), so its Rényi divergences are at most those
    of randomized response (data processing) and ρ = sup_α D_α(RR_ε)/α, which is attained by RR
    itself. Smaller than Bun & Steinke's ε²/2 (2016, Prop. 3.3) for every ε > 1e-8 (below, ε²/2
    itself is returned: it is within ε²/12 relative).
    """
    return rho_randomized_response(epsilon, 2)


def rho_laplace(scale: float, sensitivity: float = 1.0) -> float:
    """The smallest ρ such that the Laplace mechanism (scale b, L1 sensitivity Δ) is ρ-zCDP, rounded up.

    ρ = sup_{α>1} D_α/α of the exact Laplace Rényi curve (Mironov 2017, Prop. 6; see
    :func:`rdp_laplace`), certified from above as in :func:`rho_randomized_response`; at most the
    pure-DP value :func:`rho_pure_dp` of ε = Δ/b.

    >>> rho_laplace(1.0) < rho_pure_dp(1.0) < 0.5
    True
    """
    epsilon = check_positive("sensitivity", sensitivity) / check_positive("scale", scale)
    if epsilon <= 1e-8:  # ρ = ε²/2·(1 − ε/3 + …): the pure-DP value is as tight, and fast
        return rho_pure_dp(epsilon)
    return _rho_laplace(epsilon)


@functools.lru_cache(maxsize=4096)
def _rho_laplace(epsilon: float) -> float:
    return min(_certified_rho(lambda t: _laplace_cgf_upper(epsilon, t), epsilon), rho_pure_dp(epsilon))
