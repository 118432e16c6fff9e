"""Rényi DP of repeat-and-select (Papernot & Steinke 2022, "Hyperparameter tuning with Rényi
differential privacy", ICLR; arXiv:2110.03620v2).

A mechanism Q is run K times independently and only the best run is released; K is random.

Truncated negative binomial K (shape η ≥ 0, parameter γ ∈ (0, 1]; Def. 1), Thm 2: for all
λ > 1 and λ̂ ≥ 1,

    ε′(λ) = ε(λ) + (1 + η)(1 − 1/λ̂) ε(λ̂) + (1 + η) log(1/γ)/λ̂ + log(E[K])/(λ − 1).

Poisson K with mean μ, Thm 6: ε′(λ) = ε(λ) + μ δ̂ + log(μ)/(λ − 1), where Q is (ε̂, δ̂)-DP with
ε̂ = log(1 + 1/(λ − 1)).

Both are valid for every λ̂ (and every δ̂ bound), so minimising over a grid of λ̂ (refined by Brent's method) is sound;
RDP increases with the order, so the curve is also lowered to the smallest value of the bound at
the grid orders above λ (as dp_accounting does).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
from scipy import optimize

from dpkit._bisection import threshold_bracket
from dpkit._validation import check_nonnegative, check_positive

__all__ = ["repeat_and_select_curve", "truncated_negative_binomial_gamma"]

Curve = Callable[[float], float]

#: Orders λ̂ (and the orders above λ used for monotonicity).
_GRID = np.unique(np.concatenate([1.0 + np.array([1e-3, 0.01, 0.05]), np.round(np.arange(1.1, 12.0, 0.1), 10),
                                  np.arange(12.0, 65.0), np.round(np.geomspace(64.0, 1e6, 40))]))


def _tnb_mean(log_gamma: float, shape: float) -> float:
    """E[K] of the truncated negative binomial: η(1/γ − 1)/(1 − γ^η), (1/γ − 1)/log(1/γ) at η = 0."""
    one_minus_gamma = -math.expm1(log_gamma)
    if shape == 0.0:
        return one_minus_gamma / (math.exp(log_gamma) * -log_gamma)
    x = shape * log_gamma
    # (1 − γ^η)/η = −expm1(x)/η = −log γ (1 + x/2 + O(x²)): the series where x is tiny, where the
    # quotient would lose digits or, at a tiny η, divide by an expm1 that underflowed to 0
    scaled = -log_gamma * (1.0 + x / 2.0) if abs(x) < 1e-8 else -math.expm1(x) / shape
    denominator = math.exp(log_gamma) * scaled
    if denominator >= 1e-300:
        return one_minus_gamma / denominator
    # γ and (1 − γ^η)/η both tiny (a huge η): in logs, +inf where the mean passes the floats
    exponent = -log_gamma - (math.log(-math.expm1(x)) - math.log(shape) if abs(x) >= 1e-8 else math.log(scaled))
    return one_minus_gamma * math.exp(exponent) if exponent < 700.0 else math.inf


def truncated_negative_binomial_gamma(mean: float, shape: float) -> float:
    """γ of the truncated negative binomial with ``mean`` and ``shape`` (Papernot & Steinke 2022,
    Def. 1), by bisection on log γ; the smaller end, lowered by 1e-9 relative, is returned (a smaller γ
    only loosens Thm 2, by log(1 + 1e-9)/λ̂).

    >>> truncated_negative_binomial_gamma(10.0, 1.0) <= 0.1
    True
    """
    mean = check_positive("mean", mean)
    shape = check_nonnegative("shape", shape)
    if mean < 1.0:
        raise ValueError(f"mean must be >= 1, got mean={mean}")
    if mean == 1.0:
        return 1.0
    low, high = math.log(1e-300), -1e-300  # mean decreases in γ
    low, _ = threshold_bracket(lambda gamma: _tnb_mean(gamma, shape) <= mean, low, high, relative=1e-15)
    return math.exp(low) * (1.0 - 1e-9)  # covers the float error of the mean formula


def repeat_and_select_curve(
    base: Curve, mean: float, shape: float | None, log_delta_at: Callable[[float, float, float], float]
) -> Curve:
    """The RDP curve of repeat-and-select of a mechanism with RDP curve ``base``.

    ``shape=None`` is Poisson K (Thm 6), otherwise the truncated negative binomial (Thm 2);
    ``log_delta_at(order, rdp, epsilon)`` converts one RDP value of Q to a bound on log δ̂.
    """
    base_on_grid = np.array([base(float(a)) for a in _GRID])
    log_mean = math.log(mean)
    if shape is None:

        def log_delta_hat(alpha: float) -> float:
            eps_hat = math.log1p(1.0 / (alpha - 1.0))
            return min(0.0, min(log_delta_at(float(g), float(r), eps_hat) for g, r in zip(_GRID, base_on_grid)))

        def raw(alpha: float, value: float) -> float:
            return value + mean * math.exp(log_delta_hat(alpha)) + log_mean / (alpha - 1.0)

    else:
        log_inv_gamma = -math.log(truncated_negative_binomial_gamma(mean, shape))

        def hat_term(order: float, value: float) -> float:
            return (1.0 - 1.0 / order) * value + log_inv_gamma / order

        terms = np.array([hat_term(float(g), float(v)) for g, v in zip(_GRID, base_on_grid)])
        best = int(np.argmin(terms))
        low, high = float(_GRID[max(best - 1, 0)]), float(_GRID[min(best + 1, len(_GRID) - 1)])
        best_term = float(terms[best])
        if math.isfinite(best_term):  # (an extreme event's curve is ∞ at every grid order: nothing to refine)
            with np.errstate(invalid="ignore", over="ignore"):  # its curve may still be ∞ inside the bracket
                refined = optimize.minimize_scalar(lambda o: hat_term(o, base(o)), bounds=(low, high),
                                                   method="bounded")
                # any λ̂ is valid: keep the refined order only where it is evaluated again exactly
                best_term = min(best_term, hat_term(float(refined.x), base(float(refined.x))))
        constant = (1.0 + shape) * best_term

        def raw(alpha: float, value: float) -> float:
            return value + constant + log_mean / (alpha - 1.0)

    on_grid = np.array([raw(float(g), float(v)) for g, v in zip(_GRID, base_on_grid)])
    # suffix minima: the best bound at any grid order ≥ each grid order
    suffix = np.minimum.accumulate(on_grid[::-1])[::-1]

    def curve(alpha: float) -> float:
        value = raw(alpha, base(alpha))
        index = int(np.searchsorted(_GRID, alpha, side="left"))
        if index < len(_GRID):
            value = min(value, float(suffix[index]))
        return max(value, 0.0)

    return curve
