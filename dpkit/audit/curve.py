"""Trade-off curve route for δ > 0: a μ-GDP lower bound, turned into ε at the claimed δ.

Why: at δ > 0 the best single event for the claimed δ lies far in the tail (for the Gaussian
mechanism at δ = 10⁻⁵ its probabilities are ~10⁻⁴), so even the oracle event certifies only
~0.85 of the true ε with 10⁷ samples. A mechanism whose trade-off curve is Gaussian,
``T(P, Q) = G_μ``, is pinned down by one number μ, which events in the *bulk* of the output
distribution measure precisely (Nasr et al. 2023, Sec. 4; Dong, Roth & Su 2022, Def. 2.7).

The bound: μ-GDP means ``FNR ≥ Φ(Φ⁻¹(1 − FPR) − μ)`` for every test, so for any event ``S``
with ``p1 = Pr[M(D) ∈ S]`` and ``p2 = Pr[M(D′) ∈ S]``

    μ ≥ Φ⁻¹(p1) − Φ⁻¹(p2) ≥ Φ⁻¹(p1_lower) − Φ⁻¹(p2_upper),

with one-sided Clopper–Pearson bounds at α/2 each. The audit's selection sample evaluates
this on every threshold of every feature (the empirical trade-off curve), picks the event
whose bound should be largest, and certifies it on fresh outputs (a selection/confirmation
split: no multiplicity cost). The ε lower bound is ``ε_{G_μ}(δ)`` at ``μ_lower``
(:func:`dpkit.audit.scores.gdp_epsilon`, rounded down).

**Assumption.** The result is a lower bound on the true ε only if the mechanism's privacy
on the audited pair is exactly described by some G_μ (the Gaussian mechanism; DP-SGD in its
CLT regime). For other mechanisms (e.g. Laplace) the μ measured in the bulk does not bound
the tail, and the number can exceed the true ε: the result labels it in ``assumption``.

References
----------
.. [1] M. Nasr, J. Hayes, T. Steinke, B. Balle, F. Tramèr, M. Jagielski, N. Carlini,
       A. Terzis, "Tight Auditing of Differentially Private Machine Learning", USENIX Security
       2023, arXiv:2302.07956, Sec. 4.
.. [2] J. Dong, A. Roth, W. Su, "Gaussian Differential Privacy", JRSS-B 84(1), 2022,
       Def. 2.7 (trade-off function G_μ) and Cor. 2.13 (its privacy profile).
"""

from __future__ import annotations

import math

from scipy import special

from dpkit.accounting.gdp_curve import gdp_delta
from dpkit.audit.scores import gdp_epsilon
from dpkit.audit.statistics import cp_lower, cp_upper, invert_bound

__all__ = ["GAUSSIAN_ASSUMPTION", "mu_lower_bound", "gaussian_epsilon_lower_bound", "gaussian_claim_p_value"]

GAUSSIAN_ASSUMPTION = ("the trade-off curve of the mechanism on the witness pair is Gaussian (mu-GDP, Dong et al. "
                       "2022); the bound is not certified otherwise")


def mu_lower_bound(k1: int, n1: int, k2: int, n2: int, alpha: float) -> float:
    """``Φ⁻¹(p1_lower) − Φ⁻¹(p2_upper)`` with one-sided Clopper–Pearson bounds at ``alpha/2``
    each: a μ-GDP lower bound failing with probability ≤ ``alpha``; ``-inf`` if ``k1 = 0``.

    Examples
    --------
    >>> round(mu_lower_bound(8413, 10_000, 1587, 10_000, 0.05), 2)   # Φ(1) vs Φ(-1): μ = 2
    1.94
    """
    lo, up = cp_lower(k1, n1, alpha / 2), cp_upper(k2, n2, alpha / 2)
    if lo <= 0.0:
        return -math.inf
    return float(special.ndtri(lo) - special.ndtri(up))


def gaussian_epsilon_lower_bound(k1: int, n1: int, k2: int, n2: int, delta: float, alpha: float) -> float:
    """ε at ``delta`` of ``G_μ`` at the :func:`mu_lower_bound` (``-inf`` when μ ≤ 0 is not
    excluded; ``inf`` for an unbounded μ). Valid under the Gaussian assumption only."""
    mu = mu_lower_bound(k1, n1, k2, n2, alpha)
    if not mu > 0.0:
        return -math.inf
    if math.isinf(mu):
        return math.inf
    return gdp_epsilon(mu, delta)


def gaussian_claim_p_value(k1: int, n1: int, k2: int, n2: int, epsilon: float, delta: float,
                           alpha_cap: float = 1.0) -> float:
    """p-value of "the mechanism is (ε, δ)-DP" under the Gaussian assumption (the inverted bound).

    ``ε_{G_μ}(δ) > ε`` exactly when ``δ_{G_μ}(ε) > δ`` (both grow with μ), so the bound is
    inverted on the μ scale without solving for ε at every trial level.
    """
    def refutes(a: float) -> float:
        mu = mu_lower_bound(k1, n1, k2, n2, a)
        return 1.0 if mu > 0.0 and (math.isinf(mu) or gdp_delta(mu, epsilon, upper=False) > delta) else 0.0

    return invert_bound(refutes, 0.5, alpha_cap)
