"""Privacy events: immutable, validated descriptions of what a private step did.

An event says *what happened* (a Gaussian with σ and sensitivity Δ, a
Poisson-sampled step at rate q, 100 repetitions of something), never how to
account for it; accountants (:mod:`dpkit.accounting.rdp`, ``zcdp``, ``pld``
…) turn events into guarantees.

Compatibility contract (after dp_accounting's ``dp_event.py``): an event type
is never removed, a new field is always optional, and the meaning of a field
never changes.

Every event validates its fields at construction, so an invalid event never
reaches a ledger. Events serialise to plain dictionaries with
:meth:`PrivacyEvent.to_dict` and back through :func:`event_from_dict`, which only
knows the types registered in this module (it never imports what a payload names).
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, ClassVar, Iterable, Mapping

from dpkit._validation import (
    check_integer,
    check_nonnegative,
    check_positive,
    check_unit_interval,
)

_REGISTRY: dict[str, type["PrivacyEvent"]] = {}


@dataclasses.dataclass(frozen=True)
class PrivacyEvent:
    """Base class of every privacy event."""

    kind: ClassVar[str] = "event"

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "kind" in cls.__dict__:
            _REGISTRY[cls.kind] = cls

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dictionary ``{"kind": ..., field: value, ...}``; nested events become dictionaries."""
        out: dict[str, Any] = {"kind": self.kind}
        for field in dataclasses.fields(self):
            out[field.name] = _to_plain(getattr(self, field.name))
        return out


def _to_plain(value: Any) -> Any:
    if isinstance(value, PrivacyEvent):
        return value.to_dict()
    if isinstance(value, tuple):
        return [_to_plain(v) for v in value]
    return value


def event_from_dict(payload: Mapping[str, Any]) -> PrivacyEvent:
    """Rebuild an event from :meth:`PrivacyEvent.to_dict` output (only registered kinds).

    >>> e = SelfComposedEvent(GaussianEvent(sigma=2.0), count=10)
    >>> event_from_dict(e.to_dict()) == e
    True
    """
    if not isinstance(payload, Mapping) or "kind" not in payload:
        raise TypeError(f"payload must be a mapping with a 'kind' key, got {payload!r}")
    kind = payload["kind"]
    if kind not in _REGISTRY:
        raise ValueError(f"unknown event kind {kind!r}; known kinds: {sorted(_REGISTRY)}")
    cls = _REGISTRY[kind]
    kwargs = {}
    for field in dataclasses.fields(cls):
        if field.name not in payload:
            continue
        value = payload[field.name]
        if isinstance(value, Mapping) and "kind" in value:
            value = event_from_dict(value)
        elif isinstance(value, list):
            value = tuple(event_from_dict(v) if isinstance(v, Mapping) else v for v in value)
        kwargs[field.name] = value
    return cls(**kwargs)


def _set(obj: Any, name: str, value: Any) -> None:
    object.__setattr__(obj, name, value)


# --------------------------------------------------------------------------- leaves


@dataclasses.dataclass(frozen=True)
class GaussianEvent(PrivacyEvent):
    """Additive Gaussian noise N(0, σ²I) on a query of L2 sensitivity Δ.

    Privacy depends only on the noise multiplier σ/Δ. ρ = Δ²/(2σ²)-zCDP
    (Bun & Steinke 2016, Prop. 1.6); RDP of order α is αΔ²/(2σ²) (Mironov 2017, Prop. 7).
    The sensitivity is measured under the accountant's neighbouring relation.
    """

    kind: ClassVar[str] = "gaussian"
    sigma: float
    sensitivity: float = 1.0

    def __post_init__(self) -> None:
        _set(self, "sigma", check_positive("sigma", self.sigma))
        _set(self, "sensitivity", check_positive("sensitivity", self.sensitivity))

    @property
    def noise_multiplier(self) -> float:
        """σ/Δ."""
        return self.sigma / self.sensitivity


@dataclasses.dataclass(frozen=True)
class LaplaceEvent(PrivacyEvent):
    """Additive Laplace noise of scale b on a query of L1 sensitivity Δ: (Δ/b)-DP (Dwork et al. 2006)."""

    kind: ClassVar[str] = "laplace"
    scale: float
    sensitivity: float = 1.0

    def __post_init__(self) -> None:
        _set(self, "scale", check_positive("scale", self.scale))
        _set(self, "sensitivity", check_positive("sensitivity", self.sensitivity))

    @property
    def epsilon(self) -> float:
        """Δ/b, the pure-DP parameter."""
        return self.sensitivity / self.scale


@dataclasses.dataclass(frozen=True)
class DiscreteLaplaceEvent(PrivacyEvent):
    """Discrete Laplace noise P(x) ∝ exp(−|x|/b) on an integer query of sensitivity Δ ∈ ℕ:
    (Δ/b)-DP (Canonne, Kamath & Steinke 2020, §2)."""

    kind: ClassVar[str] = "discrete_laplace"
    scale: float
    sensitivity: int = 1

    def __post_init__(self) -> None:
        _set(self, "scale", check_positive("scale", self.scale))
        _set(self, "sensitivity", check_integer("sensitivity", self.sensitivity, minimum=1))


@dataclasses.dataclass(frozen=True)
class DiscreteGaussianEvent(PrivacyEvent):
    """Discrete Gaussian noise P(x) ∝ exp(−x²/(2σ²)) on an integer query of sensitivity Δ ∈ ℕ:
    Δ²/(2σ²)-zCDP (Canonne, Kamath & Steinke 2020, Thm 4)."""

    kind: ClassVar[str] = "discrete_gaussian"
    sigma: float
    sensitivity: int = 1

    def __post_init__(self) -> None:
        _set(self, "sigma", check_positive("sigma", self.sigma))
        _set(self, "sensitivity", check_integer("sensitivity", self.sensitivity, minimum=1))


@dataclasses.dataclass(frozen=True)
class RandomizedResponseEvent(PrivacyEvent):
    """k-ary (generalised) randomized response with parameter ε (Warner 1965; Kairouz et al. 2016).

    The true value is kept with probability e^ε/(e^ε + k − 1) and otherwise replaced by one of
    the k − 1 other values uniformly; ``k = 2`` is binary randomized response (label flipping
    with probability 1/(1 + e^ε)). Exactly ε-DP under replace-one of the randomised value.
    """

    kind: ClassVar[str] = "randomized_response"
    epsilon: float
    k: int = 2

    def __post_init__(self) -> None:
        _set(self, "epsilon", check_positive("epsilon", self.epsilon))
        _set(self, "k", check_integer("k", self.k, minimum=2))

    @property
    def keep_probability(self) -> float:
        """P(output = input) = e^ε/(e^ε + k − 1), computed without overflow."""
        return 1.0 / (1.0 + (self.k - 1) * math.exp(-self.epsilon))


@dataclasses.dataclass(frozen=True)
class PureDPEvent(PrivacyEvent):
    """Any ε-DP mechanism (worst case over all ε-DP mechanisms)."""

    kind: ClassVar[str] = "pure_dp"
    epsilon: float

    def __post_init__(self) -> None:
        _set(self, "epsilon", check_nonnegative("epsilon", self.epsilon))


@dataclasses.dataclass(frozen=True)
class NonPrivateEvent(PrivacyEvent):
    """A step that releases private data with no privacy guarantee (dp_accounting's ``NonPrivateDpEvent``).

    Every accountant accepts it and answers with the trivial bound, ε = ∞ (``get_epsilon``) and
    δ = 1 (``get_delta``), with a note naming it, for any ledger that holds it.

    >>> from dpkit.accounting import RDPAccountant, GaussianEvent, compose
    >>> RDPAccountant().compose(compose(GaussianEvent(1.0), NonPrivateEvent())).get_epsilon(1e-5).epsilon
    inf
    """

    kind: ClassVar[str] = "non_private"


@dataclasses.dataclass(frozen=True)
class ApproxDPEvent(PrivacyEvent):
    """Any (ε, δ)-DP mechanism (worst case over all such mechanisms)."""

    kind: ClassVar[str] = "approx_dp"
    epsilon: float
    delta: float

    def __post_init__(self) -> None:
        _set(self, "epsilon", check_nonnegative("epsilon", self.epsilon))
        _set(self, "delta", check_unit_interval("delta", self.delta, include_one=False))


@dataclasses.dataclass(frozen=True)
class ZCDPEvent(PrivacyEvent):
    """Any ρ-zCDP mechanism (Bun & Steinke 2016, Def. 1.1): D_α(M(D)‖M(D′)) ≤ ρα for all α > 1."""

    kind: ClassVar[str] = "zcdp"
    rho: float

    def __post_init__(self) -> None:
        _set(self, "rho", check_nonnegative("rho", self.rho))


@dataclasses.dataclass(frozen=True)
class ObjectivePerturbationEvent(PrivacyEvent):
    """The exact minimiser of a strongly convex GLM objective with a Gaussian linear term bᵀθ.

    The released θ̃ = argmin_θ (1/m) Σ_n ℓ(y_n θᵀx_n) + Q(θ) + bᵀθ, b ~ N(0, σ²I), where Q is
    data-independent and μ-strongly convex, |ℓ′| ≤ c, 0 ≤ ℓ″ ≤ c₃ and ‖x‖ ≤ 1 (Chaudhuri,
    Monteleoni & Sarwate 2011, Alg. 2, with Gaussian noise as in Kifer, Smith & Thakurta 2012).
    ``sensitivity`` Δ bounds the change of the objective's gradient between neighbours (2c/m
    under replace-one, c/m under add/remove) and ``jacobian`` ξ = log(1 + c₃/(mμ)) bounds the
    log-ratio of the Hessian determinants. The RDP curve is in
    :func:`dpkit.accounting.rdp_mechanisms.rdp_objective_perturbation`.
    """

    kind: ClassVar[str] = "objective_perturbation"
    sigma: float
    sensitivity: float
    jacobian: float

    def __post_init__(self) -> None:
        _set(self, "sigma", check_positive("sigma", self.sigma))
        _set(self, "sensitivity", check_positive("sensitivity", self.sensitivity))
        _set(self, "jacobian", check_nonnegative("jacobian", self.jacobian))

    @property
    def noise_multiplier(self) -> float:
        """σ/Δ."""
        return self.sigma / self.sensitivity


@dataclasses.dataclass(frozen=True)
class ExponentialMechanismEvent(PrivacyEvent):
    """The exponential mechanism or report-noisy-max with Gumbel noise, as an ε-bounded-range
    mechanism: ε-DP and ε²/8-zCDP (Cesar & Rogers 2021, Lemma 3.2; Durfee & Rogers 2019). The
    exact Rényi curve of the class is in :mod:`dpkit.accounting.rdp_bounded_range`, its
    dominating pair and exact adaptive composition in :mod:`dpkit.accounting.pld.bounded_range`."""

    kind: ClassVar[str] = "exponential_mechanism"
    epsilon: float

    def __post_init__(self) -> None:
        _set(self, "epsilon", check_positive("epsilon", self.epsilon))


@dataclasses.dataclass(frozen=True)
class SparseVectorEvent(PrivacyEvent):
    """The sparse vector technique of Lyu, Su & Li (2017), Alg. 1, with cut-off c.

    Threshold noise Lap(Δ/ε₁) drawn once, query noise Lap(2cΔ/ε₂) (or cΔ/ε₂ for monotone
    queries); stops after c positive answers. (ε₁ + ε₂)-DP (Lyu, Su & Li 2017, Thm 2).
    ``max_queries`` k (optional; None: unbounded) caps the number of queries answered, which
    lets the RDP accountant use Zhu & Wang (2020)'s bound (:mod:`dpkit.accounting.rdp_sparse_vector`).
    """

    kind: ClassVar[str] = "sparse_vector"
    epsilon1: float
    epsilon2: float
    cutoff: int = 1
    max_queries: int | None = None

    def __post_init__(self) -> None:
        _set(self, "epsilon1", check_positive("epsilon1", self.epsilon1))
        _set(self, "epsilon2", check_positive("epsilon2", self.epsilon2))
        _set(self, "cutoff", check_integer("cutoff", self.cutoff, minimum=1))
        if self.max_queries is not None:
            _set(self, "max_queries", check_integer("max_queries", self.max_queries, minimum=1))

    @property
    def epsilon(self) -> float:
        """ε₁ + ε₂."""
        return self.epsilon1 + self.epsilon2


@dataclasses.dataclass(frozen=True)
class TreeAggregationEvent(PrivacyEvent):
    """Gaussian tree aggregation of DP-FTRL (Kairouz et al. 2021, "Practical and private (deep)
    learning without sampling or shuffling", ICML, §4 and App. D).

    Prefix sums over ``step_counts[i]`` steps are released through a binary tree whose every
    completed node carries N(0, σ²) noise; the tree is restarted after each entry of
    ``step_counts``, and each record enters at most one leaf across all trees (one epoch;
    several epochs are a :class:`SelfComposedEvent`). A tree over T steps releases the nodes of
    levels 0..⌊log₂ T⌋, so one record changes at most ⌊log₂ T⌋ + 1 = ⌈log₂(T + 1)⌉ nodes, each
    by at most ``sensitivity`` (L2, under the accountant's relation): a Gaussian of noise
    multiplier σ/(Δ √nodes). With the tree-completion trick, pass the padded step count.
    """

    kind: ClassVar[str] = "tree_aggregation"
    sigma: float
    step_counts: tuple[int, ...]
    sensitivity: float = 1.0

    def __post_init__(self) -> None:
        _set(self, "sigma", check_positive("sigma", self.sigma))
        steps = (self.step_counts,) if not isinstance(self.step_counts, Iterable) else tuple(self.step_counts)
        if not steps:
            raise ValueError("step_counts must be a non-empty sequence of integers >= 1, got step_counts=()")
        _set(self, "step_counts", tuple(check_integer("step_counts", s, minimum=1) for s in steps))
        _set(self, "sensitivity", check_positive("sensitivity", self.sensitivity))

    @property
    def nodes(self) -> int:
        """Most tree nodes one record changes: ⌊log₂ max T⌋ + 1."""
        return max(self.step_counts).bit_length()

    @property
    def noise_multiplier(self) -> float:
        """σ/(Δ √nodes): the noise multiplier of the equivalent single Gaussian."""
        return self.sigma / (self.sensitivity * math.sqrt(self.nodes))


@dataclasses.dataclass(frozen=True)
class RepeatAndSelectEvent(PrivacyEvent):
    """``event`` run K times independently, only the best run released (Papernot & Steinke 2022,
    "Hyperparameter tuning with Rényi differential privacy", ICLR).

    K is random with mean ``mean`` ≥ 1: Poisson (``shape=None``; K = 0 is possible, §3.2) or
    the truncated negative binomial of shape η = ``shape`` ≥ 0 (Def. 1: η = 1 geometric, η = 0
    logarithmic). The RDP bounds are in :mod:`dpkit.accounting.rdp_repeat_select`.
    """

    kind: ClassVar[str] = "repeat_and_select"
    event: PrivacyEvent
    mean: float
    shape: float | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.event, PrivacyEvent):
            raise TypeError(f"event must be a PrivacyEvent, got event={self.event!r}")
        mean = check_positive("mean", self.mean)
        if mean < 1.0:
            raise ValueError(f"mean must be in [1, inf), got mean={mean}")
        if self.shape is not None:
            _set(self, "shape", check_nonnegative("shape", self.shape))
        _set(self, "mean", mean)


@dataclasses.dataclass(frozen=True)
class ShuffledEvent(PrivacyEvent):
    """``n_users`` users each apply an ε₀-LDP randomizer to their own record; the reports are
    released in uniformly random order (Feldman, McMillan & Talwar 2021, "Hiding among the
    clones", FOCS). Analysed under replace-one neighbours (one user's record changes).
    """

    kind: ClassVar[str] = "shuffled"
    epsilon0: float
    n_users: int

    def __post_init__(self) -> None:
        _set(self, "epsilon0", check_positive("epsilon0", self.epsilon0))
        _set(self, "n_users", check_integer("n_users", self.n_users, minimum=2))


# --------------------------------------------------------------------------- sparse vector under RDP


@dataclasses.dataclass(frozen=True)
class GaussianSparseVectorEvent(PrivacyEvent):
    """Gaussian sparse vector (Zhu & Wang 2020, Alg. 1 with Gaussian noise): threshold noise
    N(0, σ₁²) drawn once, fresh query noise N(0, σ₂²) per query, stop after c ⊤ answers or k
    queries. Not ε-DP for any finite ε; its RDP curve is in :mod:`dpkit.accounting.rdp_sparse_vector`.

    ``monotonic``: all queries move in the same direction between neighbours (query shift Δ
    instead of 2Δ).
    """

    kind: ClassVar[str] = "gaussian_sparse_vector"
    threshold_sigma: float
    query_sigma: float
    max_queries: int
    cutoff: int = 1
    sensitivity: float = 1.0
    monotonic: bool = False

    def __post_init__(self) -> None:
        _set(self, "threshold_sigma", check_positive("threshold_sigma", self.threshold_sigma))
        _set(self, "query_sigma", check_positive("query_sigma", self.query_sigma))
        _set(self, "max_queries", check_integer("max_queries", self.max_queries, minimum=1))
        _set(self, "cutoff", check_integer("cutoff", self.cutoff, minimum=1))
        _set(self, "sensitivity", check_positive("sensitivity", self.sensitivity))
        if not isinstance(self.monotonic, bool):
            raise TypeError(f"monotonic must be a bool, got monotonic={self.monotonic!r}")


# --------------------------------------------------------------------------- combinators


@dataclasses.dataclass(frozen=True)
class ComposedEvent(PrivacyEvent):
    """Sequential (adaptive) composition of a list of events on the same data."""

    kind: ClassVar[str] = "composed"
    events: tuple[PrivacyEvent, ...]

    def __post_init__(self) -> None:
        events = tuple(self.events) if isinstance(self.events, Iterable) else self.events
        if not isinstance(events, tuple) or not all(isinstance(e, PrivacyEvent) for e in events):
            raise TypeError(f"events must be a sequence of PrivacyEvent, got events={self.events!r}")
        _set(self, "events", events)


@dataclasses.dataclass(frozen=True)
class SelfComposedEvent(PrivacyEvent):
    """``event`` repeated ``count`` times (adaptive composition of identical steps)."""

    kind: ClassVar[str] = "self_composed"
    event: PrivacyEvent
    count: int

    def __post_init__(self) -> None:
        if not isinstance(self.event, PrivacyEvent):
            raise TypeError(f"event must be a PrivacyEvent, got event={self.event!r}")
        _set(self, "count", check_integer("count", self.count, minimum=1))


@dataclasses.dataclass(frozen=True)
class ParallelComposedEvent(PrivacyEvent):
    """Events run on disjoint parts of the data: one record touches only one of them, so the
    guarantee is the worst single event (McSherry 2009, Thm 4)."""

    kind: ClassVar[str] = "parallel_composed"
    events: tuple[PrivacyEvent, ...]

    def __post_init__(self) -> None:
        events = tuple(self.events) if isinstance(self.events, Iterable) else self.events
        if not isinstance(events, tuple) or not events or not all(isinstance(e, PrivacyEvent) for e in events):
            raise TypeError(f"events must be a non-empty sequence of PrivacyEvent, got events={self.events!r}")
        _set(self, "events", events)


@dataclasses.dataclass(frozen=True)
class PoissonSampledEvent(PrivacyEvent):
    """``event`` run on a Poisson subsample: each record is included independently with
    probability ``rate`` (amplification under add/remove; Mironov, Talwar & Zhang 2019)."""

    kind: ClassVar[str] = "poisson_sampled"
    event: PrivacyEvent
    rate: float

    def __post_init__(self) -> None:
        if not isinstance(self.event, PrivacyEvent):
            raise TypeError(f"event must be a PrivacyEvent, got event={self.event!r}")
        _set(self, "rate", check_unit_interval("rate", self.rate, include_zero=False))


@dataclasses.dataclass(frozen=True)
class RandomAllocationEvent(PrivacyEvent):
    """One epoch of random allocation ("balls and bins"): ``event`` runs ``steps`` times and each
    record takes part in ``selected`` of the runs, chosen uniformly at random without repetition,
    independently of the other records (Feldman & Shenfeld 2025, "Privacy amplification by random
    allocation"; Chua et al. 2025, "Balls-and-bins sampling for DP-SGD"). Analysed under add/remove
    neighbours. E epochs are ``SelfComposedEvent(RandomAllocationEvent(...), E)``: each epoch
    allocates afresh.
    """

    kind: ClassVar[str] = "random_allocation"
    event: PrivacyEvent
    steps: int
    selected: int = 1

    def __post_init__(self) -> None:
        if not isinstance(self.event, PrivacyEvent):
            raise TypeError(f"event must be a PrivacyEvent, got event={self.event!r}")
        _set(self, "steps", check_integer("steps", self.steps, minimum=1))
        _set(self, "selected", check_integer("selected", self.selected, minimum=1))
        if self.selected > self.steps:
            raise ValueError(f"selected must be in [1, steps={self.steps}], got selected={self.selected}")


@dataclasses.dataclass(frozen=True)
class SampledWithoutReplacementEvent(PrivacyEvent):
    """``event`` run on a uniformly random subset of fixed size ``sample_size`` drawn without
    replacement from ``population_size`` records (Wang, Balle & Kasiviswanathan 2019; the
    natural relation is replace-one)."""

    kind: ClassVar[str] = "sampled_without_replacement"
    event: PrivacyEvent
    sample_size: int
    population_size: int

    def __post_init__(self) -> None:
        if not isinstance(self.event, PrivacyEvent):
            raise TypeError(f"event must be a PrivacyEvent, got event={self.event!r}")
        _set(self, "sample_size", check_integer("sample_size", self.sample_size, minimum=1))
        _set(self, "population_size", check_integer("population_size", self.population_size, minimum=1))
        if self.sample_size > self.population_size:
            raise ValueError(
                f"sample_size must be in [1, population_size={self.population_size}], "
                f"got sample_size={self.sample_size}"
            )

    @property
    def rate(self) -> float:
        """sample_size / population_size."""
        return self.sample_size / self.population_size


def compose(*events: PrivacyEvent) -> ComposedEvent:
    """Shorthand for ``ComposedEvent(events)``."""
    return ComposedEvent(tuple(events))


def repeat(event: PrivacyEvent, count: int) -> SelfComposedEvent:
    """Shorthand for ``SelfComposedEvent(event, count)``."""
    return SelfComposedEvent(event, count)
