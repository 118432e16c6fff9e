"""Randomized response: binary (label flipping, Wang et al. 2020) and k-ary (generalised) RR.

* Binary RR (Warner 1965): keep the value with probability 1 − p, flip it with probability
  p = 1/(1 + e^ε). Exactly ε-DP with ε = ln((1 − p)/p) (Wang, Ishii, Du, Cheng & Chen 2020, Prop. 1 and eq. (13)).
* Generalised RR on k values (Kairouz, Oh & Viswanath 2016; Wang et al. 2017): keep with
  probability e^ε/(e^ε + k − 1), else report one of the other k − 1 values uniformly.
  Exactly ε-DP with ε = ln(keep·(k − 1)/(1 − keep)).

The guarantee is local (replace-one of the randomised value): the output probability ratio
between any two inputs is at most e^ε, with equality on the kept value.

Wang et al. (2020) release the features unchanged and randomises only the label, so the guarantee
is *label* DP; :func:`unbiased_label_loss` is the paper's modified loss (eq. (19); Natarajan
et al. 2013) that makes the learning objective unbiased under the flips.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, Callable, ClassVar

import numpy as np

from dpkit._validation import check_integer, check_positive, check_rng, check_unit_interval
from dpkit.accounting.events import RandomizedResponseEvent
from dpkit.mechanisms.base import Mechanism, check_size, output_shape


def _check_epsilons(epsilon: Any) -> float | np.ndarray:
    """ε > 0 finite: a float for a scalar, a float array for an array (one ε per user, Wang et al. 2020, Def. 2)."""
    if np.ndim(epsilon) == 0:
        return check_positive("epsilon", epsilon.item() if isinstance(epsilon, np.ndarray) else epsilon)
    array = np.asarray(epsilon)
    if array.dtype.kind not in "iuf":
        raise TypeError(f"epsilon must be a real number or an array of real numbers, got epsilon={epsilon!r}")
    array = array.astype(float)
    if array.size == 0 or not np.all(np.isfinite(array) & (array > 0)):
        raise ValueError(f"epsilon must be in (0, inf) (every entry, non-empty), got epsilon={epsilon!r}")
    return array


def flip_probability(epsilon: float | np.ndarray) -> float | np.ndarray:
    """p = 1/(1 + e^ε), the binary RR flip probability (Wang et al. 2020, eq. (13)).

    Vectorised: an array of ε (one per user) gives the array of flip probabilities.

    >>> round(flip_probability(1.0), 5)
    0.26894
    >>> flip_probability(np.array([0.4, 2.0])).round(5).tolist()
    [0.40131, 0.1192]
    """
    epsilon = _check_epsilons(epsilon)
    if isinstance(epsilon, float):
        return 1.0 / (1.0 + math.exp(epsilon)) if epsilon < 700 else math.exp(-epsilon)
    return np.where(epsilon < 700, 1.0 / (1.0 + np.exp(np.minimum(epsilon, 700.0))), np.exp(-epsilon))


def binary_rr_epsilon(flip_prob: float) -> float:
    """The exact ε = ln((1 − p)/p) of binary RR with flip probability p ∈ (0, 1/2).

    >>> round(binary_rr_epsilon(0.26894142136999510), 6)
    1.0
    """
    p = check_unit_interval("flip_probability", flip_prob, include_zero=False, include_one=False)
    if not p < 0.5:
        raise ValueError(f"flip_probability must be in (0, 0.5), got flip_probability={p}")
    return math.log1p(-p) - math.log(p)


def grr_epsilon(keep_probability: float, k: int) -> float:
    """The exact ε = ln(keep·(k − 1)/(1 − keep)) of k-ary RR with keep probability in (1/k, 1).

    >>> round(grr_epsilon(math.e / (math.e + 3), 4), 12)
    1.0
    """
    k = check_integer("k", k, minimum=2)
    keep = check_unit_interval("keep_probability", keep_probability, include_zero=False, include_one=False)
    if not keep > 1.0 / k:
        raise ValueError(f"keep_probability must be in (1/k, 1) = ({1.0 / k}, 1), got keep_probability={keep}")
    return math.log(keep) + math.log(k - 1) - math.log1p(-keep)


@dataclasses.dataclass(frozen=True)
class BinaryRandomizedResponse(Mechanism):
    """Binary randomized response (label flipping), exactly ε-DP (Wang et al. 2020, Prop. 1).

    Each entry of ``value`` (one of ``labels``) is replaced by the other label with probability
    p = 1/(1 + e^ε), independently.

    Parameters
    ----------
    epsilon
        ε > 0.
    labels
        The two label values (default ``(-1, 1)``; use ``(0, 1)`` for 0/1 labels).

    Examples
    --------
    >>> rr = BinaryRandomizedResponse(epsilon=1.0)
    >>> round(rr.flip_probability, 5)
    0.26894
    >>> rr.sample([1, -1, 1], size=2, rng=0).shape
    (2, 3)
    """

    epsilon: float
    labels: tuple[int, int] = (-1, 1)

    floating_point_safe: ClassVar[bool] = True

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", check_positive("epsilon", self.epsilon))
        labels = tuple(self.labels)
        if len(labels) != 2 or labels[0] == labels[1]:
            raise ValueError(f"labels must be two distinct values, got labels={self.labels!r}")
        object.__setattr__(self, "labels", labels)

    @property
    def flip_probability(self) -> float:
        """p = 1/(1 + e^ε)."""
        return flip_probability(self.epsilon)

    @property
    def event(self) -> RandomizedResponseEvent:
        """:class:`~dpkit.accounting.events.RandomizedResponseEvent` (ε, k = 2)."""
        return RandomizedResponseEvent(epsilon=self.epsilon, k=2)

    def output_probabilities(self, label: Any) -> dict[Any, float]:
        """The exact output law for an input label: ``{label: 1 − p, other: p}``."""
        other = self._other(np.asarray(label))
        p = self.flip_probability
        return {label: 1.0 - p, other.item(): p}

    def _other(self, values: np.ndarray) -> np.ndarray:
        low, high = self.labels
        is_low, is_high = values == low, values == high
        if not np.all(is_low | is_high):
            raise ValueError(f"value entries must be one of labels={self.labels}, got {values!r}")
        return np.where(is_low, high, low)

    def sample(self, value: Any, size: int | None = None, rng: Any = None) -> Any:
        """Randomised labels: shape ``value.shape`` or ``(size,) + value.shape``."""
        values = np.asarray(value)
        other = self._other(values)
        size = check_size(size)
        generator = check_rng(rng)
        flip = generator.random(output_shape(size, values.shape)) < self.flip_probability
        result = np.where(flip, other, values)
        return result.item() if size is None and result.ndim == 0 else result


@dataclasses.dataclass(frozen=True)
class RandomizedResponse(Mechanism):
    """k-ary (generalised) randomized response on categories {0, …, k − 1}, exactly ε-DP.

    Keep the category with probability e^ε/(e^ε + k − 1), otherwise report one of the other
    k − 1 uniformly (Kairouz, Oh & Viswanath 2016; Wang et al. 2017, "GRR").

    Examples
    --------
    >>> grr = RandomizedResponse(epsilon=1.0, k=4)
    >>> round(grr.keep_probability, 6)
    0.475367
    >>> grr.sample(2, size=5, rng=1).tolist()
    [3, 1, 2, 3, 2]
    """

    epsilon: float
    k: int = 2

    floating_point_safe: ClassVar[bool] = True

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", check_positive("epsilon", self.epsilon))
        object.__setattr__(self, "k", check_integer("k", self.k, minimum=2))

    @property
    def keep_probability(self) -> float:
        """e^ε/(e^ε + k − 1)."""
        return 1.0 / (1.0 + (self.k - 1) * math.exp(-self.epsilon))

    @property
    def event(self) -> RandomizedResponseEvent:
        """:class:`~dpkit.accounting.events.RandomizedResponseEvent` (ε, k)."""
        return RandomizedResponseEvent(epsilon=self.epsilon, k=self.k)

    def output_probabilities(self, category: int) -> np.ndarray:
        """The exact output law (length-k array) for an input category."""
        category = self._check(np.asarray(category)).item()
        other = math.exp(-self.epsilon) / (1.0 + (self.k - 1) * math.exp(-self.epsilon))  # 1/(e^ε + k − 1)
        probs = np.full(self.k, other)
        probs[category] = self.keep_probability
        return probs

    def _check(self, values: np.ndarray) -> np.ndarray:
        if values.dtype.kind not in "iu" or np.any(values < 0) or np.any(values >= self.k):
            raise ValueError(f"value entries must be integers in [0, {self.k - 1}], got value={values!r}")
        return values.astype(np.int64)

    def sample(self, value: Any, size: int | None = None, rng: Any = None) -> Any:
        """Randomised categories: shape ``value.shape`` or ``(size,) + value.shape``."""
        values = self._check(np.asarray(value))
        size = check_size(size)
        generator = check_rng(rng)
        shape = output_shape(size, values.shape)
        keep = generator.random(shape) < self.keep_probability
        other = generator.integers(0, self.k - 1, size=shape)
        other = other + (other >= values)
        result = np.where(keep, values, other)
        return int(result) if size is None and result.ndim == 0 else result


def unbiased_label_loss(
    loss: Callable[[Any, Any], Any], z: Any, observed_label: Any, flip_prob: float
) -> np.ndarray:
    """The unbiased loss under symmetric label flips (Wang et al. 2020, eq. (19); Natarajan et al. 2013, Lemma 1).

    ℓ̃(z, ỹ) = ((1 − p) ℓ(z, ỹ) − p ℓ(z, −ỹ)) / (1 − 2p),

    which equals Wang et al.'s (2020) [e^ε ℓ(ỹ) − ℓ(−ỹ)]/(e^ε − 1) for p = 1/(1 + e^ε) and satisfies
    E_ỹ[ℓ̃(z, ỹ) | y] = ℓ(z, y). Labels are ±1. The map is linear in ℓ, so passing the
    derivative ∂ℓ/∂z as ``loss`` gives ∂ℓ̃/∂z.

    Parameters
    ----------
    loss
        Vectorised ``loss(z, y)`` for labels y ∈ {−1, +1}.
    z
        Margins / scores (e.g. wᵀx), any shape broadcastable with ``observed_label``.
    observed_label
        The randomised labels ỹ ∈ {−1, +1}.
    flip_prob
        p ∈ [0, 1/2).

    Examples
    --------
    >>> logistic = lambda z, y: np.logaddexp(0.0, -y * z)
    >>> p = flip_probability(1.0)
    >>> z, y = 0.3, 1
    >>> mean = (1 - p) * unbiased_label_loss(logistic, z, y, p) + p * unbiased_label_loss(logistic, z, -y, p)
    >>> bool(np.isclose(mean, logistic(z, y)))
    True
    """
    p = check_unit_interval("flip_probability", flip_prob, include_one=False)
    if not p < 0.5:
        raise ValueError(f"flip_probability must be in [0, 0.5), got flip_probability={p}")
    labels = np.asarray(observed_label)
    if not np.all((labels == 1) | (labels == -1)):
        raise ValueError(f"observed_label entries must be -1 or +1, got observed_label={observed_label!r}")
    denominator = 1.0 - 2.0 * p
    return ((1.0 - p) * np.asarray(loss(z, labels)) - p * np.asarray(loss(z, -labels))) / denominator


def modified_logistic_loss(z: Any, observed_label: Any, epsilon: float | np.ndarray) -> np.ndarray:
    """The modified logistic loss of Wang et al. (2020) [e^ε ℓ(ỹz) − ℓ(−ỹz)]/(e^ε − 1), ℓ(u) = ln(1 + e^(−u)) (eq. (19)).

    Computed as [ℓ(ỹz) − e^(−ε) ℓ(−ỹz)]/(1 − e^(−ε)) with ``expm1`` (stable for small ε, no
    overflow for large ε). ``epsilon`` may be an array (one ε per record) broadcasting with ``z``.

    >>> round(float(modified_logistic_loss(0.0, 1, 1.0)), 6)
    0.693147
    """
    epsilon = _check_epsilons(epsilon)
    labels = np.asarray(observed_label)
    if not np.all((labels == 1) | (labels == -1)):
        raise ValueError(f"observed_label entries must be -1 or +1, got observed_label={observed_label!r}")
    margin = labels * np.asarray(z, dtype=float)
    return (np.logaddexp(0.0, -margin) - np.exp(-epsilon) * np.logaddexp(0.0, margin)) / -np.expm1(-epsilon)


def modified_logistic_loss_derivative(z: Any, observed_label: Any, epsilon: float | np.ndarray) -> np.ndarray:
    """∂/∂z of :func:`modified_logistic_loss`: −ỹ[e^ε σ(−ỹz) + σ(ỹz)]/(e^ε − 1) (Wang et al. 2020, eq. (19)).

    Its absolute value is at most coth(ε/2) (Wang et al. 2020, Prop. 2(ii)); ``epsilon`` may be an array.
    """
    epsilon = _check_epsilons(epsilon)
    labels = np.asarray(observed_label)
    if not np.all((labels == 1) | (labels == -1)):
        raise ValueError(f"observed_label entries must be -1 or +1, got observed_label={observed_label!r}")
    margin = labels * np.asarray(z, dtype=float)
    sig_neg = 0.5 * (1.0 - np.tanh(0.5 * margin))
    sig_pos = 1.0 - sig_neg
    return -labels * (sig_neg + np.exp(-epsilon) * sig_pos) / -np.expm1(-epsilon)
