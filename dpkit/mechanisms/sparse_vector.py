"""The sparse vector technique (SVT) family, vectorised over independent runs.

Sparse with cut-off c (Lyu, Su & Li 2017, Alg. 1 — the corrected SVT):

1. draw the noisy threshold T̂ = T + Lap(Δ/ε₁) **once**;
2. for each query i: ν_i ~ Lap(2cΔ/ε₂) (cΔ/ε₂ for monotonic queries), fresh;
3. answer ⊤ if q_i + ν_i ≥ T̂, else ⊥;
4. stop after the c-th ⊤.

It is (ε₁ + ε₂)-DP (Lyu, Su & Li 2017, Thm 2), hence ½(ε₁ + ε₂)²-zCDP (Bun & Steinke 2016,
Prop. 1.4); the event :class:`~dpkit.accounting.events.SparseVectorEvent` carries ε₁, ε₂, c and,
when the mechanism is given ``max_queries`` k (it then refuses a (k+1)-th query), k, with which the
RDP accountant applies Zhu & Wang (2020)'s tighter Rényi-DP bound.

:class:`GaussianSparseVector` is the same algorithm with Gaussian noise N(0, σ₁²) on the threshold and
N(0, σ₂²) on each query (Zhu & Wang 2020, "Gaussian SVT"): not ε-DP, but its Rényi-DP curve
(:class:`~dpkit.accounting.events.GaussianSparseVectorEvent`, which needs k) composes well with
Gaussian releases.

Output encoding (``sample``), one row per run, one column per query, ``int8``:

* ``1``  — ⊤ (noisy answer above the noisy threshold);
* ``0``  — ⊥ (below);
* ``-1`` — not answered (the run stopped after its c-th ⊤).

:class:`NumericSparse` and :class:`SparseVectorWithGap` return ``float64`` arrays instead:
the released number for ⊤ and ``NaN`` for ⊥ *and* for unanswered queries (which of the two
is determined by the number of ⊤ before it, so nothing is lost).

The threshold is a scalar; for per-query thresholds T_i pass the queries q_i − T_i with
threshold 0 (same sensitivity).

**Private as executed** (default ``float_safe=True``): every ⊤/⊥ is the comparison of the exact reals
q_i + ν_i and T + ρ, with the noise sampled exactly and ρ one real shared by all the queries of a run
(:mod:`dpkit.mechanisms.exact_comparison`), so the output law is the analysed mechanism's and the events
above hold for the codes released. Released numbers are rounded exactly to a power-of-two lattice, a
post-processing (the answers of :class:`NumericSparse` through
:func:`~dpkit.mechanisms.float_safe.sample_lattice_laplace`, the gaps of :class:`SparseVectorWithGap`
by :func:`~dpkit.mechanisms.exact_comparison.decide_above`). ``float_safe=False`` opts out to numpy's
continuous samplers compared in doubles; runs that use it carry the "not private as executed" note.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, ClassVar

import numpy as np

from dpkit._validation import check_finite, check_integer, check_positive, check_rng
from dpkit.accounting.events import (
    ComposedEvent,
    GaussianSparseVectorEvent,
    LaplaceEvent,
    PrivacyEvent,
    SelfComposedEvent,
    SparseVectorEvent,
)
from dpkit.mechanisms.base import Mechanism, check_size, check_vector
from dpkit.mechanisms.exact_comparison import NoiseVector, UnitNoise, decide_above
from dpkit.mechanisms.float_safe import check_float_safe_scale, lattice, resolve_float_safe, sample_lattice_laplace

THRESHOLD_NOISES = ("lyu", "ding")
ABOVE, BELOW, UNANSWERED = 1, 0, -1
_BATCH_ELEMENTS = 1 << 22
_EXACT_BATCH_ELEMENTS = 1 << 20  # the exact comparisons keep more arrays alive per element


def svt_budget_split(epsilon: float, cutoff: int, monotonic: bool = False) -> tuple[float, float]:
    """(ε₁, ε₂) with ε₁ : ε₂ = 1 : (2c)^{2/3} (1 : c^{2/3} for monotonic queries) and ε₁ + ε₂ ≤ ε.

    The ratio minimises the variance of q_i + ν_i − T̂ (Lyu, Su & Li 2017, §4.2); Ding et al. (2020)
    uses it with c = 15 (ε₁ = 0.0938536 ε).

    >>> e1, e2 = svt_budget_split(1.0, 15)
    >>> round(e1, 7), round(e2 / e1, 6)
    (0.0938536, 9.654894)
    """
    epsilon = check_positive("epsilon", epsilon)
    cutoff = check_integer("cutoff", cutoff, minimum=1)
    ratio = (cutoff if monotonic else 2 * cutoff) ** (2.0 / 3.0)
    epsilon1 = epsilon / (1.0 + ratio)
    epsilon2 = epsilon - epsilon1
    while epsilon1 + epsilon2 > epsilon:
        epsilon2 = math.nextafter(epsilon2, 0.0)
    return epsilon1, epsilon2


def _svt_runs(
    gate: "SparseVector | GaussianSparseVector", queries: np.ndarray, runs: int, generator: np.random.Generator,
    unit: float | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """(codes int8 (runs, m), gaps float (runs, m)) for ``runs`` independent runs of ``gate``. Float-safe
    gates decide exactly and, given the lattice ``unit``, round the ⊤ gaps exactly to it (the gaps are NaN
    without it, and where ⊥)."""
    m = queries.size
    if gate.max_queries is not None and m > gate.max_queries:
        raise ValueError(f"queries must have at most max_queries={gate.max_queries} entries, got {m}")
    threshold, cutoff = gate.threshold, gate.cutoff
    codes = np.empty((runs, m), dtype=np.int8)
    gaps = np.full((runs, m), np.nan)
    step = max(1, (_EXACT_BATCH_ELEMENTS if gate.float_safe else _BATCH_ELEMENTS) // m)
    for start in range(0, runs, step):
        rows = min(step, runs - start)
        if gate.float_safe:
            noisy_threshold = NoiseVector(gate.noise_kind, rows, generator)
            noise = UnitNoise(gate.noise_kind, rows * m, generator)
            above, gap = decide_above(queries, threshold, noise, gate.query_scale, noisy_threshold,
                                      gate.threshold_scale, unit)
        else:
            noisy = threshold + gate.threshold_noise_draw(generator, (rows, 1))
            gap = queries + gate.query_noise_draw(generator, (rows, m)) - noisy
            above = gap >= 0.0
        before = np.cumsum(above, axis=1) - above
        codes[start : start + rows] = np.where(before < cutoff, above, UNANSWERED)
        if gap is not None:
            gaps[start : start + rows] = gap
    return codes, gaps


def _restarted_runs(
    gate: "SparseVector | GaussianSparseVector", restarts: int, queries: np.ndarray, runs: int,
    generator: np.random.Generator,
) -> np.ndarray:
    """int8 codes (runs, m) of ``restarts`` runs of ``gate`` back to back, a fresh threshold after each
    run's c-th ⊤ (:class:`GatedRelease` with ``restarts`` > 1); one column at a time. A float-safe gate
    decides exactly, each run's threshold noise one refinable real until it is redrawn."""
    m = queries.size
    codes = np.full((runs, m), UNANSWERED, dtype=np.int8)
    step = max(1, _BATCH_ELEMENTS // m)
    if gate.float_safe:  # one column at a time: at most this many runs' arrays alive
        step = min(step, _EXACT_BATCH_ELEMENTS)
    for start in range(0, runs, step):
        rows = min(step, runs - start)
        if gate.float_safe:
            noisy = NoiseVector(gate.noise_kind, rows, generator)
        else:
            threshold = gate.threshold + gate.threshold_noise_draw(generator, rows)
        above_count = np.zeros(rows, dtype=np.int64)
        run_queries = np.zeros(rows, dtype=np.int64)
        for j in range(m):
            active = above_count < restarts * gate.cutoff
            if gate.max_queries is not None:
                active &= run_queries < gate.max_queries
            if gate.float_safe:
                noise = UnitNoise(gate.noise_kind, rows, generator)
                above = active & decide_above(queries[j : j + 1], gate.threshold, noise, gate.query_scale, noisy,
                                              gate.threshold_scale)[0][:, 0]
            else:
                above = active & (queries[j] + gate.query_noise_draw(generator, rows) >= threshold)
            codes[start : start + rows, j] = np.where(active, above, UNANSWERED)
            run_queries += active
            above_count += above
            ended = above & (above_count % gate.cutoff == 0) & (above_count < restarts * gate.cutoff)
            if gate.float_safe:
                noisy.redraw(np.flatnonzero(ended), generator)
            else:
                threshold[ended] = gate.threshold + gate.threshold_noise_draw(generator, int(ended.sum()))
            run_queries[ended] = 0
    return codes


@dataclasses.dataclass(frozen=True)
class SparseVector(Mechanism):
    """Sparse with cut-off c (Lyu, Su & Li 2017, Alg. 1): (ε₁ + ε₂)-DP.

    Parameters
    ----------
    epsilon1, epsilon2
        Threshold and query budgets (see :func:`svt_budget_split`).
    threshold
        The public threshold T.
    cutoff
        c, the number of ⊤ answers after which the run stops.
    sensitivity
        Δ, the sensitivity of every query.
    monotonic
        All queries move in the same direction between neighbours: query noise cΔ/ε₂.
    threshold_noise
        ``"lyu"`` (default): Lap(Δ/ε₁). ``"ding"``: Lap(cΔ/ε₁) as printed in Ding et al.
        (2020), Alg. 2: more noise than needed, same guarantee.
    max_queries
        k, the most queries a run answers (None: unbounded). With k the event lets the RDP
        accountant use Zhu & Wang (2020); ``sample`` and online runs refuse more than k queries.
    float_safe
        ``True``: every answer is the exact comparison of the reals q_i + ν_i and T + ρ, the noise sampled
        exactly (:mod:`dpkit.mechanisms.exact_comparison`); ``False``: numpy's continuous samplers compared
        in doubles, not private as executed; ``None`` (default): ``True``, unless built inside
        :func:`~dpkit.mechanisms.float_safe.continuous_noise` (the opt-out). The event is the same.

    Examples
    --------
    >>> svt = SparseVector(epsilon1=0.5, epsilon2=0.5, threshold=10.0, cutoff=2)
    >>> svt.threshold_scale, svt.query_scale
    (2.0, 8.0)
    >>> svt.sample([0.0, 100.0, 100.0, 100.0], size=3, rng=0).tolist()
    [[0, 1, 1, -1], [0, 1, 1, -1], [0, 1, 1, -1]]
    """

    epsilon1: float
    epsilon2: float
    threshold: float
    cutoff: int = 1
    sensitivity: float = 1.0
    monotonic: bool = False
    threshold_noise: str = "lyu"
    max_queries: int | None = None
    float_safe: bool | None = None

    noise_kind: ClassVar[str] = "laplace"

    def __post_init__(self) -> None:
        object.__setattr__(self, "float_safe", resolve_float_safe(self.float_safe))
        object.__setattr__(self, "epsilon1", check_positive("epsilon1", self.epsilon1))
        object.__setattr__(self, "epsilon2", check_positive("epsilon2", self.epsilon2))
        object.__setattr__(self, "threshold", check_finite("threshold", self.threshold))
        object.__setattr__(self, "cutoff", check_integer("cutoff", self.cutoff, minimum=1))
        object.__setattr__(self, "sensitivity", check_positive("sensitivity", self.sensitivity))
        if not isinstance(self.monotonic, (bool, np.bool_)):
            raise TypeError(f"monotonic must be a bool, got monotonic={self.monotonic!r}")
        if self.threshold_noise not in THRESHOLD_NOISES:
            raise ValueError(
                f"threshold_noise must be one of {THRESHOLD_NOISES}, got threshold_noise={self.threshold_noise!r}"
            )
        if self.max_queries is not None:
            object.__setattr__(self, "max_queries", check_integer("max_queries", self.max_queries, minimum=1))
        if self.float_safe:
            check_float_safe_scale("threshold_scale", self.threshold_scale)
            check_float_safe_scale("query_scale", self.query_scale)

    @classmethod
    def from_epsilon(
        cls, epsilon: float, threshold: float, cutoff: int = 1, sensitivity: float = 1.0, monotonic: bool = False,
        *, float_safe: bool | None = None,
    ) -> "SparseVector":
        """ε-DP SVT with the 1 : (2c)^{2/3} split of :func:`svt_budget_split`."""
        epsilon1, epsilon2 = svt_budget_split(epsilon, cutoff, monotonic)
        return cls(epsilon1, epsilon2, threshold, cutoff, sensitivity, monotonic, float_safe=float_safe)

    @property
    def floating_point_safe(self) -> bool:  # type: ignore[override]
        """Whether the guarantee holds for the outputs as computed: ``float_safe``."""
        return self.float_safe

    @property
    def epsilon(self) -> float:
        """ε₁ + ε₂."""
        return self.epsilon1 + self.epsilon2

    @property
    def threshold_scale(self) -> float:
        """Δ/ε₁ (``"lyu"``) or cΔ/ε₁ (``"ding"``)."""
        factor = self.cutoff if self.threshold_noise == "ding" else 1
        return factor * self.sensitivity / self.epsilon1

    @property
    def query_scale(self) -> float:
        """2cΔ/ε₂, or cΔ/ε₂ for monotonic queries."""
        factor = self.cutoff if self.monotonic else 2 * self.cutoff
        return factor * self.sensitivity / self.epsilon2

    @property
    def event(self) -> PrivacyEvent:
        """:class:`~dpkit.accounting.events.SparseVectorEvent` (ε₁, ε₂, c, k)."""
        return SparseVectorEvent(epsilon1=self.epsilon1, epsilon2=self.epsilon2, cutoff=self.cutoff,
                                 max_queries=self.max_queries)

    def below_probability(self, query: float) -> float:
        """P(⊥) for one query of value ``query`` taken alone: P(q + ν < T + ρ) with ν ~ Lap(b₂) and
        ρ ~ Lap(b₁) independent (b₁, b₂ = :attr:`threshold_scale`, :attr:`query_scale`), i.e. the CDF
        at T − q of ν − ρ, whose tail beyond x ≥ 0 is (b₂²e^{−x/b₂} − b₁²e^{−x/b₁}) / (2(b₂² − b₁²))
        (the sum of two independent Laplace variables; (2 + x/b)e^{−x/b}/4 when b₁ = b₂ = b).
        Later queries of a run share ρ, so their answers are not independent of this one's.

        >>> svt = SparseVector(1.0, 1.0, threshold=0.0, cutoff=1)
        >>> svt.below_probability(0.0), round(svt.below_probability(-1e3), 12), round(svt.below_probability(1e3), 12)
        (0.5, 1.0, 0.0)
        """
        x = self.threshold - check_finite("query", query)
        a, b = self.query_scale, self.threshold_scale
        z = abs(x)
        if abs(a - b) <= 1e-6 * max(a, b):
            scale = 0.5 * (a + b)
            tail = (2.0 + z / scale) * math.exp(-z / scale) / 4.0
        else:
            tail = (a * a * math.exp(-z / a) - b * b * math.exp(-z / b)) / (2.0 * (a - b) * (a + b))
        return 1.0 - tail if x >= 0 else tail

    def threshold_noise_draw(self, generator: np.random.Generator, shape: Any) -> np.ndarray:
        """Threshold noise Lap(:attr:`threshold_scale`) of the given shape, numpy's continuous sampler
        (``float_safe=False``; the float-safe runs draw :class:`~dpkit.mechanisms.exact_comparison.UnitNoise`)."""
        return generator.laplace(0.0, self.threshold_scale, size=shape)

    def query_noise_draw(self, generator: np.random.Generator, shape: Any) -> np.ndarray:
        """Query noise Lap(:attr:`query_scale`) of the given shape, numpy's continuous sampler
        (``float_safe=False``)."""
        return generator.laplace(0.0, self.query_scale, size=shape)

    def _run(self, value: Any, size: int | None, rng: Any,
             unit: float | None = None) -> tuple[np.ndarray, np.ndarray, int | None]:
        queries = check_vector(value, "queries")
        size = check_size(size)
        generator = check_rng(rng)
        codes, gaps = _svt_runs(self, queries, 1 if size is None else size, generator, unit)
        return codes, gaps, size

    def sample(self, value: Any, size: int | None = None, rng: Any = None) -> np.ndarray:
        """int8 codes (1 = ⊤, 0 = ⊥, −1 = unanswered) of shape (m,) or (size, m) for query answers ``value``."""
        codes, _, size = self._run(value, size, rng)
        return codes[0] if size is None else codes


@dataclasses.dataclass(frozen=True)
class AboveThreshold(Mechanism):
    """AboveThreshold (Dwork & Roth 2014, Alg. 1, Thm 3.23): stop at the first ⊤; ε-DP.

    T̂ = T + Lap(2Δ/ε), ν_i ~ Lap(4Δ/ε) (2Δ/ε for monotonic queries), i.e.
    :class:`SparseVector` with c = 1 and ε₁ = ε₂ = ε/2. Same output encoding, and the same
    ``float_safe`` (exact comparisons by default).

    >>> AboveThreshold(epsilon=1.0, threshold=0.0).sample([-50.0, 50.0, 50.0], rng=0).tolist()
    [0, 1, -1]
    """

    epsilon: float
    threshold: float
    sensitivity: float = 1.0
    monotonic: bool = False
    float_safe: bool | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "float_safe", resolve_float_safe(self.float_safe))
        object.__setattr__(self, "epsilon", check_positive("epsilon", self.epsilon))
        self.sparse_vector  # validates the rest

    @property
    def floating_point_safe(self) -> bool:  # type: ignore[override]
        """Whether the guarantee holds for the outputs as computed: ``float_safe``."""
        return self.float_safe

    @property
    def sparse_vector(self) -> SparseVector:
        """The equivalent :class:`SparseVector` (c = 1, ε₁ = ε₂ = ε/2)."""
        half = self.epsilon / 2.0
        return SparseVector(half, half, self.threshold, 1, self.sensitivity, self.monotonic,
                            float_safe=self.float_safe)

    @property
    def event(self) -> PrivacyEvent:
        """SparseVectorEvent(ε/2, ε/2, cutoff=1)."""
        return self.sparse_vector.event

    def sample(self, value: Any, size: int | None = None, rng: Any = None) -> np.ndarray:
        """int8 codes, as :meth:`SparseVector.sample`."""
        return self.sparse_vector.sample(value, size, rng)


@dataclasses.dataclass(frozen=True)
class SparseVectorWithGap(SparseVector):
    """Sparse with cut-off c that also releases the noisy gap q_i + ν_i − T̂ of every ⊤ answer.

    Same noise and the same (ε₁ + ε₂)-DP guarantee as :class:`SparseVector`: the gap comes
    for free (Ding, Wang, Zhang & Kifer 2019, "Free gap information from the differentially
    private sparse vector and noisy max mechanisms", PVLDB 13(3), Sparse-Vector-with-Gap).
    ``sample`` returns float64: the gap (≥ 0) for ⊤, NaN for ⊥ and unanswered.

    ``float_safe=True`` (default): the gap G = q_i + ν_i − T − ρ of the exact reals, rounded exactly to the
    lattice Λ = :attr:`lattice` (``⌊G/Λ + ½⌋·Λ``, a post-processing of the gap; the double nearest it),
    decided for the same reals as the answer. Queries with ``|q_i − T| ≥ 2⁵³Λ`` are exact too, but each
    of their ⊤ gaps goes through the slow path.

    >>> gaps = SparseVectorWithGap(0.5, 0.5, threshold=0.0, cutoff=1).sample([-100.0, 100.0, 100.0], rng=0)
    >>> bool(np.isnan(gaps[0])), bool(gaps[1] > 0), bool(np.isnan(gaps[2]))
    (True, True, True)
    """

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.float_safe:
            check_float_safe_scale("min(threshold_scale, query_scale)", min(self.threshold_scale, self.query_scale))

    @property
    def lattice(self) -> float | None:
        """``float_safe=True``: Λ = 2^(⌊log₂ b⌋ − 16) for b the smaller of the two noise scales, the lattice
        of every released gap (``None`` otherwise)."""
        return lattice(min(self.threshold_scale, self.query_scale)) if self.float_safe else None

    def sample(self, value: Any, size: int | None = None, rng: Any = None) -> np.ndarray:
        """float64 gaps for ⊤, NaN otherwise; shape (m,) or (size, m)."""
        codes, gaps, size = self._run(value, size, rng, self.lattice)
        out = np.where(codes == ABOVE, gaps, np.nan)
        return out[0] if size is None else out


@dataclasses.dataclass(frozen=True)
class NumericSparse(Mechanism):
    """Numeric sparse: SVT with cut-off c that releases q_i + Lap(cΔ/ε₃) for every ⊤ answer.

    Guarantee: (ε₁ + ε₂ + ε₃)-DP — the SVT part is (ε₁ + ε₂)-DP (Lyu, Su & Li 2017, Alg. 1 /
    §4.3 "numeric outputs") and the ≤ c Laplace releases, each (ε₃/c)-DP with noise
    independent of the SVT noise, compose adaptively to ε₃ (cf. Dwork & Roth 2014, Alg. 3).
    ``sample`` returns float64: the noisy answer for ⊤, NaN for ⊥ and unanswered.

    ``float_safe=True`` (default): exact comparisons (as :class:`SparseVector`) and every answer released
    by the float-safe Laplace sampler (:func:`~dpkit.mechanisms.float_safe.sample_lattice_laplace`: the
    continuous answer rounded exactly to the lattice of :attr:`answer_scale`, a post-processing).

    >>> ns = NumericSparse(0.1, 0.5, 0.4, threshold=0.0, cutoff=1)
    >>> ns.answer_scale, round(ns.epsilon, 10), ns.floating_point_safe
    (2.5, 1.0, True)
    """

    epsilon1: float
    epsilon2: float
    epsilon3: float
    threshold: float
    cutoff: int = 1
    sensitivity: float = 1.0
    monotonic: bool = False
    float_safe: bool | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "float_safe", resolve_float_safe(self.float_safe))
        object.__setattr__(self, "epsilon3", check_positive("epsilon3", self.epsilon3))
        self.sparse_vector  # validates the rest
        if self.float_safe:
            check_float_safe_scale("answer_scale", self.answer_scale)

    @property
    def floating_point_safe(self) -> bool:  # type: ignore[override]
        """Whether the guarantee holds for the outputs as computed: ``float_safe``."""
        return self.float_safe

    @property
    def sparse_vector(self) -> SparseVector:
        """The SVT part."""
        return SparseVector(self.epsilon1, self.epsilon2, self.threshold, self.cutoff, self.sensitivity,
                            self.monotonic, float_safe=self.float_safe)

    @property
    def epsilon(self) -> float:
        """ε₁ + ε₂ + ε₃."""
        return self.epsilon1 + self.epsilon2 + self.epsilon3

    @property
    def answer_scale(self) -> float:
        """cΔ/ε₃, the Laplace scale of each released answer."""
        return self.cutoff * self.sensitivity / self.epsilon3

    @property
    def event(self) -> PrivacyEvent:
        """SparseVectorEvent(ε₁, ε₂, c) composed with c LaplaceEvent(cΔ/ε₃, Δ)."""
        release = LaplaceEvent(scale=self.answer_scale, sensitivity=self.sensitivity)
        return ComposedEvent((self.sparse_vector.event, SelfComposedEvent(release, self.cutoff)))

    def sample(self, value: Any, size: int | None = None, rng: Any = None) -> np.ndarray:
        """float64 noisy answers for ⊤, NaN otherwise; shape (m,) or (size, m)."""
        queries = check_vector(value, "queries")
        size = check_size(size)
        generator = check_rng(rng)
        svt = self.sparse_vector
        runs = 1 if size is None else size
        codes, _ = _svt_runs(svt, queries, runs, generator)
        if self.float_safe:
            answers = sample_lattice_laplace(queries, self.answer_scale, runs, generator)
        else:
            answers = queries + generator.laplace(0.0, self.answer_scale, size=codes.shape)
        out = np.where(codes == ABOVE, answers, np.nan)
        return out[0] if size is None else out


@dataclasses.dataclass(frozen=True)
class GaussianSparseVector(Mechanism):
    """Gaussian SVT with cut-off c (Zhu & Wang 2020, Alg. 1 with Gaussian noise).

    T̂ = T + N(0, σ₁²) drawn once; ν_i ~ N(0, σ₂²) fresh per query; ⊤ iff q_i + ν_i ≥ T̂; stop after
    the c-th ⊤ or the k-th query. Same output encoding as :class:`SparseVector`. Its event
    :class:`~dpkit.accounting.events.GaussianSparseVectorEvent` has an RDP curve (Zhu & Wang 2020,
    Thms 8 and 11; :mod:`dpkit.accounting.rdp_sparse_vector`) but no pure-DP guarantee.

    Parameters
    ----------
    threshold_sigma, query_sigma
        σ₁ and σ₂ (absolute, not divided by Δ).
    threshold
        The public threshold T.
    max_queries
        k, the most queries a run answers (required: the RDP bound pays log C(k, c)).
    cutoff, sensitivity, monotonic
        As in :class:`SparseVector`.
    float_safe
        As in :class:`SparseVector`: exact comparisons of the reals, the Gaussian noise sampled exactly by
        Box–Muller (default), or numpy's ziggurat compared in doubles (``False``).

    >>> svt = GaussianSparseVector(threshold_sigma=1.0, query_sigma=2.0, threshold=0.0, max_queries=4, cutoff=1)
    >>> svt.sample([-100.0, 100.0, 100.0, 100.0], rng=0).tolist()
    [0, 1, -1, -1]
    """

    threshold_sigma: float
    query_sigma: float
    threshold: float
    max_queries: int
    cutoff: int = 1
    sensitivity: float = 1.0
    monotonic: bool = False
    float_safe: bool | None = None

    noise_kind: ClassVar[str] = "gaussian"

    def __post_init__(self) -> None:
        object.__setattr__(self, "float_safe", resolve_float_safe(self.float_safe))
        object.__setattr__(self, "threshold", check_finite("threshold", self.threshold))
        if not isinstance(self.monotonic, (bool, np.bool_)):
            raise TypeError(f"monotonic must be a bool, got monotonic={self.monotonic!r}")
        object.__setattr__(self, "monotonic", bool(self.monotonic))
        self.event  # validates σ₁, σ₂, k, c and Δ
        if self.float_safe:
            check_float_safe_scale("threshold_sigma", self.threshold_sigma)
            check_float_safe_scale("query_sigma", self.query_sigma)

    @property
    def event(self) -> PrivacyEvent:
        """:class:`~dpkit.accounting.events.GaussianSparseVectorEvent` (σ₁, σ₂, k, c, Δ)."""
        return GaussianSparseVectorEvent(
            threshold_sigma=self.threshold_sigma, query_sigma=self.query_sigma, max_queries=self.max_queries,
            cutoff=self.cutoff, sensitivity=self.sensitivity, monotonic=self.monotonic,
        )

    @property
    def floating_point_safe(self) -> bool:  # type: ignore[override]
        """Whether the guarantee holds for the outputs as computed: ``float_safe``."""
        return self.float_safe

    @property
    def threshold_scale(self) -> float:
        """σ₁, the scale of the threshold noise."""
        return self.threshold_sigma

    @property
    def query_scale(self) -> float:
        """σ₂, the scale of each query's noise."""
        return self.query_sigma

    def threshold_noise_draw(self, generator: np.random.Generator, shape: Any) -> np.ndarray:
        """Threshold noise N(0, σ₁²) of the given shape, numpy's continuous sampler (``float_safe=False``)."""
        return generator.normal(0.0, self.threshold_sigma, size=shape)

    def query_noise_draw(self, generator: np.random.Generator, shape: Any) -> np.ndarray:
        """Query noise N(0, σ₂²) of the given shape, numpy's continuous sampler (``float_safe=False``)."""
        return generator.normal(0.0, self.query_sigma, size=shape)

    def sample(self, value: Any, size: int | None = None, rng: Any = None) -> np.ndarray:
        """int8 codes (1 = ⊤, 0 = ⊥, −1 = unanswered), shape (m,) or (size, m), m ≤ k."""
        queries = check_vector(value, "queries")
        size = check_size(size)
        codes, _ = _svt_runs(self, queries, 1 if size is None else size, check_rng(rng))
        return codes[0] if size is None else codes


@dataclasses.dataclass(frozen=True)
class GatedRelease(Mechanism):
    """Sparse with cut-off c whose every ⊤ answer also releases a value through a second mechanism.

    The gate is a :class:`SparseVector` (Lyu, Su & Li 2017, Alg. 1: threshold noise drawn once,
    fresh query noise, stop after the c-th ⊤); on ⊤ the caller's value goes through ``release``
    (e.g. a :class:`~dpkit.mechanisms.gaussian.GaussianMechanism`) with noise independent of the
    gate's. This is the gated broadcast of Ding et al. (2020, Alg. 2 lines 9–13), and generalises
    :class:`NumericSparse` (whose release is the query answer itself plus Laplace noise).

    Guarantee: the gate is (ε₁ + ε₂)-DP for adaptively chosen queries, and at most c releases
    happen, each chosen adaptively after the gate's public answer; the interleaving is a
    concurrent composition, which holds for pure and approximate DP, RDP and f-DP alike
    (Vadhan & Wang 2021; Lyu 2022; Vadhan & Zhang 2023). :attr:`event` is therefore the gate's
    event composed with c releases — the worst case, whatever the number of ⊤ answers, since
    that number is data-dependent.

    ``restarts`` r > 1 runs the gate r times back to back, each run with its own threshold
    noise, drawn when the run takes its first query: with a gate of cut-off 1 this is Dwork &
    Roth (2014, Alg. 2, "Sparse"), whose threshold is drawn afresh after every ⊤. Each run sees
    the adaptively chosen queries that follow the previous run's last ⊤, so :attr:`event` is r
    gate events composed with r·c releases (adaptive composition); :attr:`cutoff` is r·c.

    Private as executed when both parts are (:attr:`floating_point_safe`; the defaults are): the gate
    decides exactly, online too (each run's threshold noise one refinable real), and the release rounds
    exactly (e.g. the float-safe :class:`~dpkit.mechanisms.gaussian.GaussianMechanism`). Otherwise
    :meth:`open` marks the ledger with :attr:`execution_note`.

    Online use (one query per round, as in an iterative algorithm): :meth:`open` draws the noisy
    threshold, records :attr:`event` in a ledger and returns a :class:`GatedReleaseRun`.
    Batch use (:meth:`sample`, for audits): ``value`` has shape (m, 1 + k): column 0 holds the m
    query answers and the other k columns the vectors to release; the output has shape (m, k),
    NaN rows for ⊥ and unanswered queries.

    >>> from dpkit.mechanisms.gaussian import GaussianMechanism
    >>> from dpkit.mechanisms.ledger import PrivacyLedger
    >>> gate = SparseVector(0.5, 0.5, threshold=0.0, cutoff=1)
    >>> mech = GatedRelease(gate, GaussianMechanism(sigma=1.0))
    >>> ledger = PrivacyLedger(1)
    >>> run = mech.open(rng=0, ledger=ledger, agent=0)
    >>> run.step(-100.0, [5.0]) is None, run.step(100.0, [5.0]).shape, run.step(100.0, [5.0]), run.exhausted
    (True, (1,), None, True)
    >>> ledger.draws(0)
    1
    """

    gate: "SparseVector | GaussianSparseVector"
    release: Mechanism
    restarts: int = 1

    def __post_init__(self) -> None:
        if not isinstance(self.gate, (SparseVector, GaussianSparseVector)):
            raise TypeError(f"gate must be a SparseVector or GaussianSparseVector, got gate={self.gate!r}")
        if not isinstance(self.release, Mechanism):
            raise TypeError(f"release must be a Mechanism, got release={self.release!r}")
        object.__setattr__(self, "restarts", check_integer("restarts", self.restarts, minimum=1))

    @property
    def cutoff(self) -> int:
        """The most releases: ``restarts`` × the gate's cut-off c."""
        return self.restarts * self.gate.cutoff

    @property
    def event(self) -> PrivacyEvent:
        """The gate's event (``restarts`` times) composed with :attr:`cutoff` release events."""
        gate = self.gate.event if self.restarts == 1 else SelfComposedEvent(self.gate.event, self.restarts)
        return ComposedEvent((gate, SelfComposedEvent(self.release.event, self.cutoff)))

    @property
    def floating_point_safe(self) -> bool:  # type: ignore[override]
        """Whether the guarantee holds as computed: the gate's and the release's ``floating_point_safe``."""
        return bool(self.gate.floating_point_safe and self.release.floating_point_safe)

    @property
    def execution_note(self) -> str:
        """The notes of the gate and the release, for those that are not float-safe."""
        parts = [part for part in (self.gate, self.release) if not part.floating_point_safe]
        return "; ".join(part.execution_note for part in parts) or super().execution_note

    def open(self, *, rng: Any, ledger: Any, agent: int = 0) -> "GatedReleaseRun":
        """Start one online run: draw the noisy threshold and record :attr:`event` for ``agent`` (and,
        when the gate or the release is not float-safe, :attr:`execution_note` in the ledger)."""
        generator = check_rng(rng)
        noisy_threshold = _online_threshold(self.gate, generator)
        ledger.record(agent, self.event)
        if not self.floating_point_safe:
            ledger.mark_not_as_executed(self.execution_note)
        return GatedReleaseRun(self, generator, noisy_threshold)

    def answers(self, value: Any, size: int | None = None, rng: Any = None) -> np.ndarray:
        """The gate's answers alone for query answers ``value`` (m,): int8 codes as in
        :meth:`SparseVector.sample` (1 = ⊤, 0 = ⊥, −1 = unanswered), shape (m,) or (size, m)."""
        queries = check_vector(value, "queries")
        size = check_size(size)
        codes = self._codes(queries, 1 if size is None else size, check_rng(rng))
        return codes[0] if size is None else codes

    def _codes(self, queries: np.ndarray, runs: int, generator: np.random.Generator) -> np.ndarray:
        if self.restarts == 1:
            return _svt_runs(self.gate, queries, runs, generator)[0]
        return _restarted_runs(self.gate, self.restarts, queries, runs, generator)

    def sample(self, value: Any, size: int | None = None, rng: Any = None) -> np.ndarray:
        """Released vectors (m, k) for ⊤ rows, NaN otherwise; shape (m, k) or (size, m, k)."""
        array = np.asarray(value, dtype=float)
        if array.ndim != 2 or array.shape[1] < 2:
            raise ValueError(f"value must have shape (m, 1 + k) with k >= 1, got shape {array.shape}")
        size = check_size(size)
        generator = check_rng(rng)
        queries, vectors = check_vector(array[:, 0], "queries"), array[:, 1:]
        runs = 1 if size is None else size
        codes = self._codes(queries, runs, generator)
        out = np.full((runs,) + vectors.shape, np.nan)
        for r, q in zip(*np.nonzero(codes == ABOVE)):
            out[r, q] = self.release.sample(vectors[q], rng=generator)
        return out[0] if size is None else out


def _online_threshold(gate: "SparseVector | GaussianSparseVector",
                      generator: np.random.Generator) -> "float | NoiseVector":
    """A run's noisy threshold: one exact draw (float-safe gates) or T + the continuous draw."""
    if gate.float_safe:
        return NoiseVector(gate.noise_kind, 1, generator)
    return gate.threshold + float(gate.threshold_noise_draw(generator, None))


class GatedReleaseRun:
    """One online run of a :class:`GatedRelease` (created by :meth:`GatedRelease.open`).

    Attributes
    ----------
    releases
        Number of releases so far (⊤ answers and :meth:`release_now`).
    queries
        Number of queries answered so far (a :meth:`release_now` counts as one, answered ⊤).
    exhausted
        True after the last ⊤ (the mechanism's :attr:`~GatedRelease.cutoff`) or when the current
        gate run has answered k queries (the gate's ``max_queries``): every later :meth:`step`
        answers None without drawing.
    """

    def __init__(self, mechanism: GatedRelease, generator: np.random.Generator,
                 noisy_threshold: "float | NoiseVector"):
        self._mechanism = mechanism
        self._generator = generator
        self._threshold: "float | NoiseVector | None" = noisy_threshold
        self._run_queries = 0
        self.releases = 0
        self.queries = 0

    @property
    def exhausted(self) -> bool:
        gate = self._mechanism.gate
        return self.releases >= self._mechanism.cutoff or (gate.max_queries is not None and
                                                           self._run_queries >= gate.max_queries)

    @property
    def remaining(self) -> int:
        """Releases left before the cut-off."""
        return self._mechanism.cutoff - self.releases

    def _answered(self, above: bool) -> None:
        # One query of the current gate run; its c-th ⊤ ends the run, and the next query draws a new threshold.
        self.queries += 1
        self._run_queries += 1
        if not above:
            return
        self.releases += 1
        if self.releases % self._mechanism.gate.cutoff == 0 and self.releases < self._mechanism.cutoff:
            self._threshold, self._run_queries = None, 0

    def release_now(self, value: Any) -> Any:
        """Release ``value`` without consulting the gate: one of the c releases, spent because of a
        public rule (e.g. a deadline: as many rounds left as releases). To the SVT this is a query
        shifted by a public +∞ and answered ⊤ whatever the data, so the guarantee of :attr:`GatedRelease.event`
        still holds (the threshold may be chosen adaptively from public answers; ⊤ counts toward c).
        Only the release's noise is drawn.

        >>> from dpkit.mechanisms.gaussian import GaussianMechanism
        >>> from dpkit.mechanisms.ledger import PrivacyLedger
        >>> mech = GatedRelease(SparseVector(0.5, 0.5, threshold=0.0, cutoff=1), GaussianMechanism(sigma=1.0))
        >>> run = mech.open(rng=0, ledger=PrivacyLedger(1))
        >>> run.release_now([5.0]).shape, run.remaining, run.step(100.0, [5.0])
        ((1,), 0, None)
        """
        if self.exhausted:
            raise ValueError(f"the run has no release left (cut-off {self._mechanism.cutoff}, "
                             f"max_queries = {self._mechanism.gate.max_queries})")
        self._answered(True)
        return self._mechanism.release.sample(value, rng=self._generator)

    def step(self, query: float, value: Any) -> Any:
        """The noisy release of ``value`` if ``query`` + fresh noise ≥ the noisy threshold (⊤), else None.

        >>> from dpkit.mechanisms.gaussian import GaussianMechanism
        >>> from dpkit.mechanisms.ledger import PrivacyLedger
        >>> gate = SparseVector(0.5, 0.5, threshold=0.0, cutoff=1)
        >>> mech = GatedRelease(gate, GaussianMechanism(sigma=1.0), restarts=2)
        >>> run = mech.open(rng=0, ledger=PrivacyLedger(1))
        >>> run.step(100.0, [5.0]) is not None, run.remaining, run.step(100.0, [5.0]) is not None, run.exhausted
        (True, 1, True, True)
        """
        query = check_finite("query", query)
        if self.exhausted:
            return None
        gate = self._mechanism.gate
        if self._threshold is None:
            self._threshold = _online_threshold(gate, self._generator)
        if isinstance(self._threshold, NoiseVector):
            noise = UnitNoise(gate.noise_kind, 1, self._generator)
            above = bool(decide_above(np.array([query]), gate.threshold, noise, gate.query_scale, self._threshold,
                                      gate.threshold_scale)[0][0, 0])
        else:
            above = query + float(gate.query_noise_draw(self._generator, None)) >= self._threshold
        self._answered(above)
        return self._mechanism.release.sample(value, rng=self._generator) if above else None
