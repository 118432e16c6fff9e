"""The unbiased logistic loss under binary randomized response, as a margin loss for the solver.

When each label is flipped with probability p = 1/(1 + e^ε) (binary randomized response),
Wang et al. (2020, eq. 19), after Natarajan et al. (2013, Lemma 1), train on

    ℓ̃(u) = [ℓ(u) − e^{−ε} ℓ(−u)] / (1 − e^{−ε}),   u = y′ θᵀx,  ℓ(u) = ln(1 + e^{−u}),

which is [e^ε ℓ(y′z) − ℓ(−y′z)]/(e^ε − 1) with z = θᵀx and satisfies E_{y′}[ℓ̃(y′z) | y] = ℓ(yz)
(Wang et al. 2020, Prop. 2(i)). As a function of the margin u:

* ℓ̃′(u) = −[σ(−u) + e^{−ε} σ(u)]/(1 − e^{−ε}) ∈ (−1/(1 − e^{−ε}), −e^{−ε}/(1 − e^{−ε})), so
  ``c1`` = sup |ℓ̃′| = 1/(1 − e^{−ε}) = e^ε/(e^ε − 1). Wang et al.'s Prop. 2(ii) bound
  coth(ε/2) = (e^ε + 1)/(e^ε − 1) is valid and larger by the factor 1 + e^{−ε};
* ℓ̃″(u) = ℓ″(u) = σ(u)σ(−u) ≤ 1/4 = ``c3`` (ℓ″ is even), so ℓ̃ is convex and the objectives of
  :class:`~dpkit.algorithms.substrate.solvers.AgentObjectives` stay strongly convex; ℓ̃ is unbounded below
  (ℓ̃(u) ≈ −u e^{−ε}/(1 − e^{−ε}) as u → ∞), which a strongly convex regulariser compensates;
* since ℓ(−u) = ℓ(u) + u, ℓ̃(u) = ℓ(u) − K·u exactly, with ``shift`` K = 1/(e^ε − 1): the modified
  loss is the logistic loss of the randomized label plus a term linear in θ (−K y′xᵀθ), which
  :mod:`dpkit.algorithms.hetero_admm.algorithm` releases once instead of in every round.

>>> loss = UnbiasedLogistic(1.0)
>>> round(loss.c1, 6)                      # e/(e − 1)
1.581977
>>> p = 1 / (1 + np.e)                     # flip probability at ε = 1
>>> u = np.array([-2.0, 0.5, 3.0])
>>> expected = (1 - p) * loss.value(u) + p * loss.value(-u)    # E over the flip of y′
>>> bool(np.allclose(expected, np.logaddexp(0.0, -u)))
True
>>> bool(np.allclose(loss.value(u), np.logaddexp(0.0, -u) - loss.shift * u))
True
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
from scipy.special import expit, log_expit

from dpkit._validation import check_positive

__all__ = ["UnbiasedLogistic"]


@dataclasses.dataclass(frozen=True)
class UnbiasedLogistic:
    """The unbiased logistic margin loss for labels flipped at rate 1/(1 + e^ε) (module docstring).

    Its expectation over the label flip equals the logistic loss of the true label (Natarajan et
    al. 2013, Lemma 1), so minimising it on flipped labels targets the non-private minimiser.

    Parameters
    ----------
    epsilon
        The randomized-response ε of the labels, ε > 0.
    """

    epsilon: float
    name = "unbiased_logistic"
    c3 = 0.25
    smooth = True

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", check_positive("epsilon", self.epsilon))

    @property
    def _keep(self) -> float:
        """e^{−ε}."""
        return math.exp(-self.epsilon)

    @property
    def _scale(self) -> float:
        """1/(1 − e^{−ε})."""
        return -1.0 / math.expm1(-self.epsilon)

    @property
    def shift(self) -> float:
        """K = 1/(e^ε − 1): ℓ̃(u) = ℓ(u) − K·u and ℓ̃′ = ℓ′ − K."""
        return 1.0 / math.expm1(self.epsilon)

    @property
    def c1(self) -> float:
        """sup |ℓ̃′| = 1/(1 − e^{−ε}): with ‖x‖ ≤ 1 the per-example gradient norm bound."""
        return self._scale

    def value(self, u: np.ndarray) -> np.ndarray:
        """ℓ̃(u) = [ℓ(u) − e^{−ε} ℓ(−u)]/(1 − e^{−ε})."""
        return self._scale * (-log_expit(u) + self._keep * log_expit(-u))

    def derivative(self, u: np.ndarray) -> np.ndarray:
        """ℓ̃′(u) = −[σ(−u) + e^{−ε} σ(u)]/(1 − e^{−ε})."""
        return -self._scale * (expit(-u) + self._keep * expit(u))

    def second(self, u: np.ndarray) -> np.ndarray:
        """ℓ̃″(u) = σ(u)σ(−u) (label-independent)."""
        s = expit(u)
        return s * (1.0 - s)
