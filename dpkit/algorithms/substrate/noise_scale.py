"""The public size behind an averaged private model's noise, for defaults that adapt to n and ε.

An agent's release noise has standard deviation ∝ 1/(ε·m_i) (sensitivity 2/m_i over a
strong-convexity constant, multiplier ∝ 1/ε), and averaging N agents divides it by √N, so the
noise of the consensus model scales like 1/S with

    S = ε · mean_i(m_i) · √N.

S reads only public quantities (the agents' sizes, N and ε). Regularisation and proximal weights
that a run sets as c/S, clamped to a range whose lower end is the value chosen on Adult, stay at
Adult's value there (S ≈ 8,000 for 20 agents of 1,800 rows at ε = 1) and grow on small tables or
small ε, where they shrink the noisy model towards zero and cut its noise (every sensitivity is
over the strong-convexity constant they raise).

>>> round(noise_scale([1800] * 20, 1.0)), round(noise_scale([2076, 2076], 1.0))
(8050, 2936)
"""

from __future__ import annotations

import math
from typing import Sequence

from dpkit._validation import check_positive

__all__ = ["noise_scale", "scaled_default"]


def noise_scale(sizes: Sequence[int], epsilon: float) -> float:
    """S = ε · mean(sizes) · √len(sizes) (module docstring)."""
    if len(sizes) == 0:
        raise ValueError("sizes must name at least one agent")
    epsilon = check_positive("epsilon", epsilon)
    return epsilon * (sum(sizes) / len(sizes)) * math.sqrt(len(sizes))


def scaled_default(constant: float, sizes: Sequence[int], epsilon: float, low: float, high: float) -> float:
    """clamp(constant / S, low, high) with S = :func:`noise_scale` (module docstring).

    >>> scaled_default(80.0, [1800] * 20, 1.0, 0.01, 0.1), round(scaled_default(80.0, [2076] * 2, 1.0, 0.01, 0.1), 4)
    (0.01, 0.0272)
    """
    return min(high, max(low, constant / noise_scale(sizes, epsilon)))
