"""Private selection: report-noisy-max, the exponential mechanism, permute-and-flip.

All three take a vector of quality scores u (the "value"; higher is better) whose entries
each change by at most Δ between neighbouring datasets, and return an *index*.
``monotonic=True`` declares that all scores move in the same direction between neighbours
(e.g. counts under add/remove), which halves the noise.

=====================  ===================================  =====================================
mechanism              noise / law                          guarantee (event)
=====================  ===================================  =====================================
RNM, Laplace noise     u_i + Lap(2Δ/ε) (Δ/ε if monotonic)   ε-DP (Dwork & Roth 2014, Claim 3.9)
RNM, exponential noise u_i + Expo(2Δ/ε) (Δ/ε monotonic)     ε-DP; same law as permute-and-flip
                                                            (Ding, Kifer et al. 2021)
RNM, Gumbel noise      u_i + Gumbel(2Δ/ε) (Δ/ε monotonic)   exponential mechanism: ε-DP and
                                                            ε-bounded range → ε²/8-zCDP
Exponential mechanism  P(i) ∝ exp(ε u_i/(2Δ)) (εu_i/Δ mon.) (McSherry & Talwar 2007; Cesar &
                                                            Rogers 2021)
Permute-and-flip       visit candidates in random order,    ε-DP (McKenna & Sheldon 2020, Thm 1)
                       stop w.p. exp(ε(u_i − u*)/(2Δ))
=====================  ===================================  =====================================

Bounded range holds in the monotonic case too: the log-ratio of output probabilities
varies by at most ε·Δ/Δ across outputs when every shift lies in [0, Δ].

**Private as executed** (default ``float_safe=True``): every index is the argmax of the exact reals
u_i + Z_i, the noise sampled exactly (:func:`~dpkit.mechanisms.exact_comparison.noisy_argmax`), so the
output law is exactly the analysed one. The exponential mechanism is drawn as its Gumbel-max form and
permute-and-flip as report-noisy-max with exponential noise (the same output laws), both decided exactly.
``float_safe=False`` opts out to the float samplers (numpy's continuous noise, or probabilities computed
in doubles), whose output law is the analysed one only up to rounding.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable

import numpy as np

from dpkit._validation import check_positive, check_rng
from dpkit.accounting.events import ExponentialMechanismEvent, PrivacyEvent, PureDPEvent
from dpkit.mechanisms.base import Mechanism, check_size, check_vector
from dpkit.mechanisms.exact_comparison import UnitNoise, noisy_argmax
from dpkit.mechanisms.float_safe import check_float_safe_scale, resolve_float_safe

NOISES = ("laplace", "exponential", "gumbel")
_BATCH_ELEMENTS = 1 << 22
_EXACT_BATCH_ELEMENTS = 1 << 20  # the exact argmax keeps more arrays alive per element


def _in_batches(runs: int, width: int, batch_elements: int, argmax: Callable[[int], np.ndarray]) -> np.ndarray:
    """``runs`` indices, ``argmax(rows)`` giving ``rows`` of them at a time, so that at most about
    ``batch_elements`` candidates' noise is alive at once."""
    out = np.empty(runs, dtype=np.int64)
    step = max(1, batch_elements // width)
    for start in range(0, runs, step):
        rows = min(step, runs - start)
        out[start : start + rows] = argmax(rows)
    return out


@dataclasses.dataclass(frozen=True)
class _Selection(Mechanism):
    epsilon: float
    sensitivity: float = 1.0
    monotonic: bool = False
    float_safe: bool | None = dataclasses.field(default=None, kw_only=True)

    def __post_init__(self) -> None:
        object.__setattr__(self, "float_safe", resolve_float_safe(self.float_safe))
        object.__setattr__(self, "epsilon", check_positive("epsilon", self.epsilon))
        object.__setattr__(self, "sensitivity", check_positive("sensitivity", self.sensitivity))
        if not isinstance(self.monotonic, (bool, np.bool_)):
            raise TypeError(f"monotonic must be a bool, got monotonic={self.monotonic!r}")
        if self.float_safe:
            check_float_safe_scale("scale", self.scale)

    @property
    def floating_point_safe(self) -> bool:  # type: ignore[override]
        """Whether the output law is the analysed one as computed: ``float_safe``."""
        return self.float_safe

    @property
    def scale(self) -> float:
        """The noise scale / temperature: 2Δ/ε, or Δ/ε for monotonic scores."""
        return (1.0 if self.monotonic else 2.0) * self.sensitivity / self.epsilon

    def _finish(self, index: np.ndarray, size: int | None) -> Any:
        return int(index[0]) if size is None else index.astype(np.int64)

    def _exact_argmax(self, value: Any, size: int | None, rng: Any, noise: str) -> Any:
        """``size`` indices argmax_i u_i + s·Z_i, decided exactly (:func:`noisy_argmax`)."""
        scores = check_vector(value, "scores")
        size = check_size(size)
        generator = check_rng(rng)
        out = _in_batches(1 if size is None else size, scores.size, _EXACT_BATCH_ELEMENTS,
                          lambda rows: noisy_argmax(scores, self.scale, UnitNoise(noise, rows * scores.size, generator)))
        return self._finish(out, size)


@dataclasses.dataclass(frozen=True)
class ReportNoisyMax(_Selection):
    """Report-noisy-max: the index of max_i (u_i + Z_i) with i.i.d. Laplace, exponential or Gumbel noise.

    Guarantee: ε-DP for every noise (Dwork & Roth 2014, Claim 3.9 for Laplace; McKenna &
    Sheldon 2020 and Ding et al. 2021 for exponential noise, which has the law of
    permute-and-flip); with Gumbel noise it *is* the exponential mechanism, ε-bounded-range
    (event :class:`ExponentialMechanismEvent`, ε²/8-zCDP; Cesar & Rogers 2021).

    ``float_safe=True`` (default): the argmax of the exact reals, the noise sampled exactly
    (:func:`~dpkit.mechanisms.exact_comparison.noisy_argmax`); ``False``: numpy's continuous noise
    added and compared in doubles; ``None``: ``True`` unless built inside
    :func:`~dpkit.mechanisms.float_safe.continuous_noise`.

    Examples
    --------
    >>> rnm = ReportNoisyMax(epsilon=1.0, noise="exponential")
    >>> rnm.scale, rnm.event
    (2.0, PureDPEvent(epsilon=1.0))
    >>> rnm.sample([0.0, 50.0, 1.0], size=6, rng=0).tolist()
    [1, 1, 1, 1, 1, 1]
    """

    noise: str = "laplace"

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.noise not in NOISES:
            raise ValueError(f"noise must be one of {NOISES}, got noise={self.noise!r}")

    @property
    def event(self) -> PrivacyEvent:
        """PureDPEvent(ε), or ExponentialMechanismEvent(ε) for Gumbel noise."""
        if self.noise == "gumbel":
            return ExponentialMechanismEvent(epsilon=self.epsilon)
        return PureDPEvent(epsilon=self.epsilon)

    def sample(self, value: Any, size: int | None = None, rng: Any = None) -> Any:
        """Index (int) of the noisy maximum, or an int array of ``size`` independent indices."""
        if self.float_safe:
            return self._exact_argmax(value, size, rng, self.noise)
        scores = check_vector(value, "scores")
        size = check_size(size)
        generator = check_rng(rng)
        draw = {"laplace": lambda shape: generator.laplace(0.0, self.scale, size=shape),
                "exponential": lambda shape: generator.exponential(self.scale, size=shape),
                "gumbel": lambda shape: generator.gumbel(0.0, self.scale, size=shape)}[self.noise]
        out = _in_batches(1 if size is None else size, scores.size, _BATCH_ELEMENTS,
                          lambda rows: np.argmax(scores + draw((rows, scores.size)), axis=1))
        return self._finish(out, size)


@dataclasses.dataclass(frozen=True)
class ExponentialMechanism(_Selection):
    """The exponential mechanism: P(i) ∝ exp(ε u_i/(2Δ)) (exp(ε u_i/Δ) for monotonic scores).

    Guarantee: ε-DP (McSherry & Talwar 2007, Thm 6) and ε-bounded range, hence ε²/8-zCDP
    (Cesar & Rogers 2021, Lemma 3.2). ``float_safe=True`` (default): sampled as argmax_i u_i + s·G_i
    with G_i i.i.d. standard Gumbel (the Gumbel-max form, of exactly this law), decided exactly: one
    uniform per candidate and sample; ``False``: by inverse CDF from the (log-sum-exp normalised)
    probabilities computed in doubles, one uniform per sample.

    Examples
    --------
    >>> em = ExponentialMechanism(epsilon=2.0)
    >>> np.round(em.probabilities([0.0, 1.0]), 4).tolist()
    [0.2689, 0.7311]
    """

    @property
    def event(self) -> ExponentialMechanismEvent:
        """:class:`~dpkit.accounting.events.ExponentialMechanismEvent` (ε)."""
        return ExponentialMechanismEvent(epsilon=self.epsilon)

    def log_probabilities(self, value: Any) -> np.ndarray:
        """ln P(i) for every candidate (log-sum-exp normalised)."""
        logits = check_vector(value, "scores") / self.scale
        shifted = logits - logits.max()
        return shifted - np.log(np.sum(np.exp(shifted)))

    def probabilities(self, value: Any) -> np.ndarray:
        """P(i) for every candidate."""
        return np.exp(self.log_probabilities(value))

    def sample(self, value: Any, size: int | None = None, rng: Any = None) -> Any:
        """Index (int) drawn from the exponential mechanism, or ``size`` independent indices."""
        if self.float_safe:
            return self._exact_argmax(value, size, rng, "gumbel")
        cumulative = np.cumsum(self.probabilities(value))
        size = check_size(size)
        generator = check_rng(rng)
        uniforms = generator.random(1 if size is None else size) * cumulative[-1]
        index = np.minimum(np.searchsorted(cumulative, uniforms, side="right"), cumulative.size - 1)
        return self._finish(index, size)


@dataclasses.dataclass(frozen=True)
class PermuteAndFlip(_Selection):
    """Permute-and-flip (McKenna & Sheldon 2020, Alg. 1): visit the candidates in a uniformly random
    order and return the first r whose coin Bernoulli(exp(ε(u_r − u*)/(2Δ))) lands heads.

    Guarantee: ε-DP (McKenna & Sheldon 2020, Thm 1; monotonic scores use ε/Δ). Never worse in
    expected quality than the exponential mechanism. Same output law as report-noisy-max with
    exponential noise (Ding, Kifer et al. 2021). ``float_safe=True`` (default): sampled as that
    report-noisy-max, decided exactly; ``False``: the algorithm itself with coins of probabilities
    computed in doubles, vectorised over runs (one random permutation and one row of coins per run).

    Examples
    --------
    >>> pf = PermuteAndFlip(epsilon=1.0)
    >>> pf.sample([0.0, 0.0, 30.0], size=4, rng=0).tolist()
    [2, 2, 2, 2]
    """

    @property
    def event(self) -> PureDPEvent:
        """:class:`~dpkit.accounting.events.PureDPEvent` (ε)."""
        return PureDPEvent(epsilon=self.epsilon)

    def sample(self, value: Any, size: int | None = None, rng: Any = None) -> Any:
        """Index (int) chosen by permute-and-flip, or ``size`` independent indices."""
        if self.float_safe:
            return self._exact_argmax(value, size, rng, "exponential")
        scores = check_vector(value, "scores")
        accept = np.exp((scores - scores.max()) / self.scale)
        size = check_size(size)
        generator = check_rng(rng)
        runs = 1 if size is None else size
        out = np.empty(runs, dtype=np.int64)
        step = max(1, _BATCH_ELEMENTS // scores.size)
        for start in range(0, runs, step):
            rows = min(step, runs - start)
            order = np.argsort(generator.random((rows, scores.size)), axis=1)
            heads = generator.random((rows, scores.size)) < accept[order]
            first = np.argmax(heads, axis=1)
            out[start : start + rows] = order[np.arange(rows), first]
        return self._finish(out, size)
