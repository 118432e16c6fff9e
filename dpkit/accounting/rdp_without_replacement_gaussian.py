"""RDP of the Gaussian mechanism run on a subset of fixed size drawn without replacement.

Replace-one neighbours, sampling ratio γ = m/n. The generic bound of Wang, Balle &
Kasiviswanathan (2019, Thm 9; :func:`~dpkit.accounting.rdp_mechanisms.rdp_sampled_without_replacement`)
bounds the j-th term of the binomial expansion by 2·e^{(j−1)ε(j)} for a mechanism without a
pure-DP parameter. For the Gaussian mechanism the same paper (arXiv 1808.00087, Thm 27, the bound
behind dp_accounting's ``SampledWithoutReplacementDpEvent``) also bounds it by
4·√(B(2⌊j/2⌋)·B(2⌈j/2⌉)), with

    B(l) = Σ_{i=0}^{l} (−1)^{l−i} C(l, i) e^{(i−1)ε(i)} = E_Q[(P/Q − 1)^l],

the l-th forward difference at 0 of i ↦ e^{(i−1)ε(i)} = e^{i(i−1)/(2z²)} (z = σ/Δ), i.e. the
Pearson–Vajda χ^l pseudo-divergence of N(1, z²) from N(0, z²). For even l it is positive but an
alternating sum with terms up to 2^l e^{l²/(2z²)} times larger, so it is evaluated in mpmath at a
precision chosen for it, with a rigorous round-off bound added (an upper bound results).
"""

from __future__ import annotations

import functools
import math

import mpmath
import numpy as np
from scipy import special

from dpkit._validation import check_integer, check_positive, check_unit_interval
from dpkit.accounting import rdp_mechanisms as rm

__all__ = ["GAUSSIAN_TERMS_MAX_ORDER", "rdp_sampled_without_replacement_gaussian"]

#: Terms j ≤ this use the Gaussian-specific bound (as in dp_accounting, whose exact evaluation stops
#: at α = 256); terms above it use the generic 2·e^{(j−1)ε(j)}, which is always valid.
GAUSSIAN_TERMS_MAX_ORDER = 256

#: Fixed-point fraction bits at which B(l) is first evaluated, beyond the estimate of the cancellation;
#: doubled once if some B(l) is not certified, after which that l keeps only the generic term.
_GUARD_BITS = 128

#: Largest fixed-point precision tried (bits): a larger z keeps the generic terms.
_MAX_BITS = 2**15

#: Below this 1/(2z²) the Gaussian terms are not formed (their logarithms would lose all precision).
_SMALLEST_C = 1e-250

#: Largest integer part (bits) of e^{c·l(l−1)} for which B(l) is evaluated (see :func:`_log_moments`).
_MAX_HEADROOM_BITS = 4096

#: B(l) is accepted when its round-off bound is at most 2^-this of it.
_ROUNDOFF_BITS = 40


def _log_forward_differences_at(c: mpmath.mpf, max_l: int, bits: int, work: int) -> list[float | None]:
    """Upper bounds on log B(l), l = 0, 2, …, max_l (index l/2), in ``bits``-bit fixed point; None
    where the round-off bound exceeds 2^-:data:`_ROUNDOFF_BITS` of the computed value.

    f_i = e^{c·i(i−1)} comes from the recurrence f_{i+1} = f_i·g_i, g_{i+1} = g_i·e^{2c} (g_i = e^{2ci})
    with ``work`` bits, so f_i·2^bits is within (4 + 2i²)·2^−work relatively (one rounding per
    product, two for e^{2c}) and its nearest integer F_i within that plus 1. The alternating sum of
    C(l, i)·F_i is exact, so its error is at most 2^−work·(4 + 2l²)·Σ_i C(l, i)F_i + 2^l; twice that
    is added, and the final logarithm (double precision, a few ulps) is rounded up by 2⁻⁴⁸ relatively."""
    out: list[float | None] = []
    with mpmath.workprec(work):
        growth = mpmath.exp(2 * c)
        value, ratio = mpmath.ldexp(1, bits), mpmath.mpf(1)
        fixed = [int(mpmath.nint(value))]
        for _ in range(max_l):
            value, ratio = value * ratio, ratio * growth
            fixed.append(int(mpmath.nint(value)))
    for l in range(0, max_l + 1, 2):
        signed = total = 0
        for i in range(l + 1):
            term = math.comb(l, i) * fixed[i]
            signed += -term if (l - i) % 2 else term
            total += term
        error = 2 * ((((4 + 2 * l * l) * total) >> work) + 1 + 2**l)
        if signed <= 0 or error << _ROUNDOFF_BITS > signed:
            out.append(None)
            continue
        log_value = math.log(signed + error) - bits * math.log(2.0)
        out.append(log_value + 2.0**-48 * (abs(log_value) + bits + 1.0))
    return out


@functools.lru_cache(maxsize=64)
def _log_moments(z: float) -> tuple[float, ...]:
    """Upper bounds on log B(l) for even l ≤ :data:`GAUSSIAN_TERMS_MAX_ORDER` (index l/2), ``inf``
    where none was certified (the generic term is used there).

    Only l with e^{c·l(l−1)} below 2^:data:`_MAX_HEADROOM_BITS` are tried (beyond, B(l) ≈ e^{c·l(l−1)}
    and the generic term 2e^{(j−1)ε(j)} is the smaller anyway; the integers would be huge). Fraction
    bits: B(l) ≥ B(2)^{l/2} (Jensen) and the rounding to integers costs up to 2^l, so
    l + (l/2)·log₂(1/B(2)) bits plus guard bits resolve the cancellation; the working precision adds
    the bits of the largest f_i = e^{c·l(l−1)}."""
    with mpmath.workprec(128):
        c = 1 / (2 * mpmath.mpf(z) ** 2)
        reach = _MAX_HEADROOM_BITS * mpmath.log(2) / c  # l(l − 1) ≤ reach
        max_l = min(GAUSSIAN_TERMS_MAX_ORDER, 2 * int((1 + mpmath.sqrt(1 + 4 * reach)) / 4))
        shortfall = max(0.0, -float(mpmath.log(mpmath.expm1(2 * c), 2))) * max_l / 2
        headroom = int(mpmath.ceil(c * max_l * max_l / mpmath.log(2)))
    bits = int(_GUARD_BITS + max_l + shortfall)
    result: list[float | None] = [None] * (max_l // 2 + 1)
    for _ in range(2 if bits <= _MAX_BITS else 0):  # (z beyond about 1e30: the generic terms only)
        work = bits + headroom + 64
        with mpmath.workprec(work + 64):
            c_work = 1 / (2 * mpmath.mpf(z) ** 2)
        found = _log_forward_differences_at(c_work, max_l, bits, work)
        result = [old if old is not None else new for old, new in zip(result, found)]
        if all(v is not None for v in result[1:]):
            break
        bits *= 2
    padding = [None] * (GAUSSIAN_TERMS_MAX_ORDER // 2 + 1 - len(result))
    return tuple(math.inf if v is None else v for v in result + padding)


def rdp_sampled_without_replacement_gaussian(alpha: int, noise_multiplier: float, gamma: float) -> float:
    """RDP at integer order α ≥ 2 of the Gaussian mechanism (noise multiplier z = σ/Δ) run on m of
    n records drawn without replacement (γ = m/n), replace-one neighbours. An upper bound.

    ε′(α) ≤ 1/(α−1)·log(1 + γ²C(α,2)·min{4(e^{ε(2)}−1), 2e^{ε(2)}}
    + Σ_{j=3}^{α} γ^j C(α,j)·min{4√(B(2⌊j/2⌋)B(2⌈j/2⌉)), 2e^{(j−1)ε(j)}}), ε(j) = j/(2z²),

    with B the forward differences of the module docstring (used for j ≤
    :data:`GAUSSIAN_TERMS_MAX_ORDER`), and ε′(α) ≤ α/(2z²) (joint quasi-convexity). Each term is at
    most the generic one of :func:`~dpkit.accounting.rdp_mechanisms.rdp_sampled_without_replacement`
    (with ε(∞) = ∞), so the bound is never looser than it. Fractional orders: interpolate with
    :func:`~dpkit.accounting.rdp_mechanisms.interpolate_integer_curve` (Wang et al. 2019, Cor. 10).

    References
    ----------
    Wang, Balle & Kasiviswanathan (2019), "Subsampled Rényi Differential Privacy and Analytical
    Moments Accountant", AISTATS; arXiv 1808.00087, Thm 9 and Thm 27.

    >>> round(rdp_sampled_without_replacement_gaussian(8, 2.0, 0.01), 6)  # the generic bound: 0.000488
    0.000468
    """
    alpha = check_integer("alpha", alpha, minimum=2)
    z = check_positive("noise_multiplier", noise_multiplier)
    gamma = check_unit_interval("gamma", gamma, include_zero=False)
    c = 1.0 / (2.0 * z * z)
    full = alpha * c * (1.0 + 2.0**-49)  # α/(2z²), its four roundings undone upwards
    if not c > _SMALLEST_C:  # (αc would round to 0: the generic bound, as for any mechanism)
        return rm.rdp_sampled_without_replacement(alpha, lambda a: rm.rdp_gaussian(a, z), math.inf, gamma)
    if gamma == 1.0:
        return full
    log_gamma = math.log(gamma)
    two_c = 2.0 * c
    log_b2 = two_c + math.log(-math.expm1(-two_c))  # log(e^{2c} − 1), without overflow
    terms = [2.0 * log_gamma + math.log(alpha * (alpha - 1.0) / 2.0) + min(math.log(4.0) + log_b2,
                                                                                  two_c + math.log(2.0))]
    if alpha >= 3:
        j = np.arange(3, alpha + 1)
        generic = math.log(2.0) + (j - 1.0) * j * c
        specific = np.full(j.shape, math.inf)
        low = j[j <= GAUSSIAN_TERMS_MAX_ORDER]
        if low.size:
            moments = np.asarray(_log_moments(z))
            specific[: low.size] = math.log(4.0) + 0.5 * (moments[low // 2] + moments[(low + 1) // 2])
        log_binom = special.gammaln(alpha + 1.0) - special.gammaln(j + 1.0) - special.gammaln(alpha - j + 1.0)
        terms.extend(j * log_gamma + log_binom + np.minimum(specific, generic))
    # Each log term is a sum of parts of size at most log C(α, j) + α·|log γ| + α²c, each within a
    # few ulps (gammaln is accurate to ~1e-15 relatively): shift every term up by 2⁻⁴⁶ of that size.
    slack = 2.0**-46 * (2.0 * float(special.gammaln(alpha + 1.0)) + alpha * abs(log_gamma) + alpha * alpha * c + 8.0)
    return min(_log1p_sum_exp(np.asarray(terms, dtype=float) + slack) / (alpha - 1.0), full)


def _log1p_sum_exp(log_terms: np.ndarray) -> float:
    """log(1 + Σ e^{log_terms}), rounded up: log1p keeps a tiny sum (a large z) from vanishing, and a
    relative allowance of (n + 8) ulps covers the rounding of the n terms' exponentials and sum."""
    top = float(np.max(log_terms))
    if top < 0.0:
        value = math.log1p(float(np.sum(np.exp(log_terms))))
    else:
        value = top + math.log(math.exp(-top) + float(np.sum(np.exp(log_terms - top))))
    return value * (1.0 + (log_terms.size + 8) * 2.0**-52)
