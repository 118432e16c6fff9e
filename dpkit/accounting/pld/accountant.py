"""The PLD accountant: events → privacy-loss pmfs → composed pmfs → certified (ε, δ) intervals.

For every leaf event the accountant builds a dominating pair, discretises it twice
(pessimistic connect-the-dots and optimistic tangent construction, :mod:`.mechanisms`),
composes each discretisation over the ledger (:mod:`.algebra`) and reads off

    epsilon_lower ≤ true ε(δ) ≤ epsilon.

Under add/remove neighbouring a Poisson-subsampled step has different pairs for the removal
and the addition of a record; both directions are composed separately and the worse is
reported (Zhu, Dong & Wang 2022, §5; dp_accounting does the same). Symmetric mechanisms share
one computation. Sampling without replacement under replace-one has one two-part dominating
pair (:class:`~.mechanisms.WithoutReplacementLoss`); its lower end comes from the two
Poisson-type pairs, which actual neighbouring datasets attain.

The discretisation interval h is chosen automatically: start coarse, measure the width of the
certified interval, shrink h (the width is second order in h) until the width is at most
``target_width`` or the grid would exceed ``max_grid_points`` (then the achieved width is
reported in ``notes``). The first h is raised up front when a coarse estimate of the composed
loss range says a finer grid could not fit. With ``value_discretization_interval`` set, that h
is used as given. Below δ = 1e-12, ε is computed by exponential tilting (:mod:`.tilted`); so is
δ(ε) where it is below 1e-9 (:meth:`PLDAccountant.get_delta`, :meth:`PLDAccountant.delta_curve`).
"""

from __future__ import annotations

import collections
import dataclasses
import fractions
import math
from typing import Any

import numpy as np

from dpkit._validation import check_integer, check_open_unit, check_positive
from dpkit.accounting.base import (
    Accountant,
    AccountingResult,
    UnsupportedEventError,
    check_target_delta,
    check_target_epsilon,
    flatten,
)
from dpkit.accounting.events import (
    ApproxDPEvent,
    DiscreteGaussianEvent,
    DiscreteLaplaceEvent,
    ExponentialMechanismEvent,
    GaussianEvent,
    LaplaceEvent,
    ParallelComposedEvent,
    PoissonSampledEvent,
    PrivacyEvent,
    PureDPEvent,
    RandomAllocationEvent,
    RandomizedResponseEvent,
    SampledWithoutReplacementEvent,
    ShuffledEvent,
    SparseVectorEvent,
)
from dpkit.accounting.analytic_gaussian import squared_multiplier_upper
from dpkit.accounting import registry  # the other routes of get_epsilon: a module reference, imported lazily
from dpkit.accounting.certify import certify, certify_array
from dpkit.accounting.neighbouring import NeighbouringRelation
from dpkit.accounting.pld import algebra, tilted
from dpkit.accounting.pld import lattice as lattice_pmf
from dpkit.accounting.pld.mechanisms import (
    SPACING_RANGE,
    GaussianLoss,
    GridTooLargeError,
    LaplaceLoss,
    PrivacyLoss,
    SubsampledLoss,
    WithoutReplacementLoss,
    approx_dp_loss,
    discrete_gaussian_loss,
    discrete_laplace_loss,
    discretise,
    exact_at_lattice,
    randomized_response_loss,
)
from dpkit.accounting.pld.peer_events import peer_event_loss
from dpkit.accounting.pld.pmf import LossPmf
from dpkit.accounting.pld.random_allocation import MAX_WORK, MAX_WORK_FIXED, RandomAllocationLoss, allocation_parts

_UNATTAINED = (SparseVectorEvent, ExponentialMechanismEvent, ShuffledEvent)
"""Leaves whose privacy-loss pair dominates the mechanism without being attained by it: the sparse
vector as pure (ε₁ + ε₂)-DP, the ε-bounded-range pair (tight for one use only: composed, it overstates
even the exact adaptive composition of Dong, Durfee & Rogers 2020 — 7.63 against 7.13 for ten uses at
ε = 1, δ = 1e-5) and the shuffling bound of Feldman, McMillan & Talwar (2021)."""

_MIN_SPACING = 1e-12
"""The finest grid spacing the PLD certifies: below it, losses sit within the round-off of the O(1) log-sums
and the lattice indices that carry them (a pure 1e-20-DP step once came out at 0.96e-20)."""

_METHOD = (
    "PLD: connect-the-dots pessimistic / tangent optimistic discretisation (Doroshenko et al. 2022), "
    "FFT composition (Koskela et al. 2020)"
)
_MAX_DISCRETE_GAUSSIAN_SIGMA = 2e5
_MAX_DISCRETE_LAPLACE_SENSITIVITY = 10**6
#: Below this δ, ε is found by exponential tilting (:mod:`.tilted`): the FFT's absolute round-off, about 1e-16 per
#: grid point and so up to ~1e-14 over 10⁵–10⁶ points, is not negligible beside δ(ε) there, and its a-posteriori
#: estimate (:mod:`.algebra`) missed it: at δ = 1e-9 to 2e-11 the untilted interval's lower end was above the exact
#: ε (2 of 40 compositions of up to 200 Gaussians checked against mpmath; 0 of 40 at this threshold).
TILTED_BELOW = 1e-8
#: The default ``target_width`` of ε: the certified upper end is then at or below dp_accounting's default
#: (value_discretization_interval 1e-4) answer on DP-SGD at 10³ and 10⁴ steps (benchmarks/pld.py), and faster.
DEFAULT_WIDTH = 1e-5
#: The default relative width of δ in :meth:`PLDAccountant.get_delta`.
DEFAULT_DELTA_WIDTH = 1e-4
#: Below TILTED_BELOW a ledger composed directly on its lattice keeps that route down to this δ (its pmf's
#: δ(ε) carries a 1e-60 allowance for subnormal tail sums, :meth:`.LossPmf.epsilon`).
_DIRECT_MIN_DELTA = 1e-40
#: :meth:`PLDAccountant.get_delta` recomputes δ(ε) by tilting when the untilted upper bound is below this.
TILTED_DELTA_BELOW = 1e-9
#: Grid points the lower end of sampling without replacement may use when the dominating pair's grid is smaller.
_REALISABLE_POINTS = 2**17
#: Work budget of one refinement: the single-step grids of all leaves hold at most this many points in all, a
#: random allocation's not counted (it has its own budget), a without-replacement leaf's counted four times (its two-part distribution functions, and the two Poisson-type
#: pairs of its lower end); about 2 s of discretisation on one core. A finer grid is not tried, and the width
#: reached is reported.
_REFINE_POINTS = 2**20
#: The first composed grid of the tilted paths holds about half this many points at most (their log-space sums
#: cost some 3 µs per point).
_TILTED_POINTS = 2**20
#: At most this many grid spacings are tried by the tilted paths.
_TILTED_STEPS = 12
#: The ε at which :meth:`PLDAccountant._best_route` inverts :meth:`PLDAccountant.get_delta` when every other route gives ∞.
_INVERSION_LADDER = tuple(10.0**k for k in range(-6, 4))
#: A ledger of Gaussians whose μ exceeds this is answered by exact GDP alone: its losses span thousands,
#: the grid would take seconds, and nothing is tighter than the exact value.
_GRID_MU_LIMIT = 20.0
#: Earlier answers kept for the monotone envelope of :meth:`PLDAccountant._best_route`.
_REMEMBERED = 64
_ROUTES = {
    "pld": "the PLD's FFT composition",
    "pld-tilted": "the PLD composed by exponential tilting",
    "gdp": "exact mu-GDP of the Gaussian ledger, Dong, Roth & Su 2022, Cor. 3.3",
    "rdp": "the RDP accountant's bound",
    "get_delta inversion": "the smallest epsilon of a ladder whose certified delta(epsilon) is at most delta",
    "monotone envelope": "an earlier answer at a smaller delta",
}
"""What each route of :meth:`PLDAccountant._best_route` is, for the ``route:`` note."""


def _next_factor(target: float, width: float, h: float, previous: tuple[float, float] | None) -> float:
    """The factor for the next h, aiming at 85% of ``target``: width ∝ h^p, with p estimated from the
    previous (h, width) when there is one (clamped to [1, 2]; 2 otherwise), the factor kept in [0.1, 0.7]
    (a grid at most ten times finer per step, so that an unaffordable one is not built at once)."""
    order = 2.0
    if previous is not None and previous[1] > width > 0 and previous[0] > h:
        order = min(2.0, max(1.0, math.log(previous[1] / width) / math.log(previous[0] / h)))
    return min(0.7, max(0.1, (0.85 * target / width) ** (1.0 / order)))


def _stalled(width: float, previous: tuple[float, float] | None) -> bool:
    """Whether the last refinement left the width above 90% of the one before: the interval is then
    limited by something a finer grid does not remove (round-off allowances, a first-order end)."""
    return previous is not None and width > 0.9 * previous[1]


@dataclasses.dataclass(frozen=True)
class _Composed:
    """Pessimistic and optimistic composed pmfs for both directions at one spacing."""

    h: float
    remove: tuple[LossPmf, LossPmf]
    add: tuple[LossPmf, LossPmf]
    grid_points: int


def _dominant(events: list[PrivacyEvent]) -> PrivacyEvent | None:
    """The event among ``events`` whose pair dominates all others (post-processing order), or None."""
    first = events[0]
    if all(e == first for e in events):
        return first
    kinds = {type(e) for e in events}
    if len(kinds) != 1:
        return None
    if isinstance(first, GaussianEvent):
        return max(events, key=lambda e: e.sensitivity / e.sigma)
    if isinstance(first, (LaplaceEvent, PureDPEvent)):
        return max(events, key=lambda e: e.epsilon)
    if isinstance(first, RandomizedResponseEvent) and len({e.k for e in events}) == 1:
        return max(events, key=lambda e: e.epsilon)
    if isinstance(first, DiscreteLaplaceEvent) and len({e.sensitivity for e in events}) == 1:
        return min(events, key=lambda e: e.scale)
    if isinstance(first, DiscreteGaussianEvent) and len({e.sensitivity for e in events}) == 1:
        return min(events, key=lambda e: e.sigma)
    if isinstance(first, ApproxDPEvent):
        top = max(events, key=lambda e: (e.epsilon, e.delta))
        return top if all(e.epsilon <= top.epsilon and e.delta <= top.delta for e in events) else None
    if isinstance(first, PoissonSampledEvent):
        inner = _dominant([e.event for e in events])
        if inner is None or type(inner) not in (GaussianEvent, LaplaceEvent):
            return None
        rate = max(e.rate for e in events)
        # Smaller rate and noisier inner pair are post-processings of the dominant one.
        return PoissonSampledEvent(inner, rate)
    return None


class TargetWidthError(ValueError):
    """:meth:`PLDAccountant.get_epsilon` or :meth:`PLDAccountant.get_delta` cannot certify an interval as narrow
    as the ``target_width`` asked for."""


class PLDAccountant(Accountant):
    """Privacy-loss-distribution accountant with certified two-sided bounds.

    Parameters
    ----------
    neighbouring
        ``"add-remove"`` (default) or ``"replace-one"``. Poisson subsampling is supported
        under add/remove only.
    value_discretization_interval
        Fixed grid spacing h of the loss; ``None`` (default) chooses h automatically.
    target_width
        Automatic mode: shrink h until ``epsilon − epsilon_lower ≤ target_width`` (for
        :meth:`get_epsilon`) or ``delta − delta_lower ≤ target_width · delta`` (for
        :meth:`get_delta`). ``None`` (default): :data:`DEFAULT_WIDTH` for ε (its upper end is then at least as
        tight as dp_accounting's default grid's ε) and :data:`DEFAULT_DELTA_WIDTH` for δ, best effort (a wider interval is returned with a
        note). Given explicitly, :meth:`get_epsilon` raises :class:`TargetWidthError` (one line) when
        it cannot certify an interval that narrow.
    tail_mass
        Mass allowed outside each grid on each side (always moved to the safe side).
    max_grid_points
        Largest grid any step may use (memory: about 40 bytes per point).

    Notes
    -----
    Supported events: Gaussian, Laplace, randomized response (k-ary), discrete Laplace,
    discrete Gaussian, pure ε-DP and (ε, δ)-DP (their worst-case pairs), Poisson-subsampled
    Gaussian and Laplace (add/remove), Gaussian and Laplace sampled without replacement
    (replace-one; the two-part dominating pair of :class:`~.mechanisms.WithoutReplacementLoss`,
    with ``epsilon_lower`` from the composed worst-case datasets of one step), compositions,
    and parallel compositions whose parts are ordered by post-processing (then the dominant
    part is accounted). Compositions of Gaussians are merged exactly into one Gaussian with
    μ = √Σ(Δᵢ/σᵢ)² before discretising.

    Below δ = :data:`TILTED_BELOW` :meth:`get_epsilon` composes by exponential tilting
    (:mod:`.tilted`), which keeps ε finite and certified down to δ = 1e-300 (a ledger composed directly on its
    lattice keeps that exact route down to δ = :data:`_DIRECT_MIN_DELTA`); :meth:`get_delta` and
    :meth:`delta_curve` do the same where δ(ε) is below :data:`TILTED_DELTA_BELOW`. Both tilted
    paths refine h to ``target_width``.

    References
    ----------
    Meiser & Mohammadi, "Tight on budget?", CCS 2018. Sommer, Meiser & Mohammadi, "Privacy
    loss classes", PoPETs 2019. Koskela, Jälkö & Honkela, AISTATS 2020. Doroshenko, Ghazi,
    Kamath, Kumar & Manurangsi, "Connect the dots", PoPETs 2022. Balle, Barthe & Gaboardi,
    "Privacy amplification by subsampling", NeurIPS 2018, Thm 10. Zhu, Dong & Wang, "Optimal
    accounting of differential privacy via characteristic function", AISTATS 2022 (arXiv
    2106.08567, Prop. 30). Lebeda, Regehr, Kamath & Steinke, "Avoiding pitfalls for privacy
    accounting of subsampled mechanisms under composition", arXiv 2405.20769.
    """

    name = "pld"
    references = ("koskela2020computing", "doroshenko2022connect")

    def __init__(
        self,
        neighbouring: NeighbouringRelation | str = NeighbouringRelation.ADD_REMOVE,
        value_discretization_interval: float | None = None,
        target_width: float | None = None,
        *,
        tail_mass: float = 1e-30,
        max_grid_points: int = 2**22,
    ):
        super().__init__(neighbouring)
        if value_discretization_interval is not None:
            value_discretization_interval = check_positive(
                "value_discretization_interval", value_discretization_interval
            )
        self.value_discretization_interval = value_discretization_interval
        #: Whether ``target_width`` was asked for: then :meth:`get_epsilon` refuses a wider interval.
        self.width_asked = target_width is not None
        self.target_width = DEFAULT_WIDTH if target_width is None else check_positive("target_width", target_width)
        #: The relative width :meth:`get_delta` refines to (``target_width`` if given).
        self.delta_width = DEFAULT_DELTA_WIDTH if target_width is None else self.target_width
        self.tail_mass = check_open_unit("tail_mass", tail_mass)
        self.max_grid_points = check_integer("max_grid_points", max_grid_points, minimum=16)
        self._cache: dict[tuple[str, float], _Composed] = {}
        self._discretisations: dict[tuple[int, float, float], tuple[PrivacyLoss, tuple[LossPmf, LossPmf]]] = {}
        self._answered: dict[str, list[tuple[float, float]]] = {}

    # ------------------------------------------------------------------ event handling

    def _resolve(self, event: PrivacyEvent, count: int = 1) -> list[tuple[PrivacyEvent, int]]:
        """Flatten ``event`` into supported leaves (parallel compositions resolved); raise if unsupported."""
        out: list[tuple[PrivacyEvent, int]] = []
        for leaf, mult in flatten(event, count):
            if isinstance(leaf, ParallelComposedEvent):
                parts = [list(flatten(e)) for e in leaf.events]
                if all(p == parts[0] for p in parts):
                    for sub, m in parts[0]:
                        out.extend(self._resolve(sub, m * mult))
                    continue
                if any(len(p) != 1 or p[0][1] != 1 for p in parts):
                    raise UnsupportedEventError(leaf, "parallel parts must be single events or all equal")
                top = _dominant([p[0][0] for p in parts])
                if top is None:
                    raise UnsupportedEventError(
                        leaf, "no part dominates the others (needs parts of one type ordered by post-processing)"
                    )
                out.extend(self._resolve(top, mult))
                continue
            self._loss_pair(leaf, dry_run=True)
            if isinstance(leaf, RandomAllocationEvent) and leaf.selected > 1:
                for steps, epochs in allocation_parts(leaf.steps, leaf.selected):
                    out.append((RandomAllocationEvent(leaf.event, steps), epochs * mult))
                continue
            if isinstance(leaf, SampledWithoutReplacementEvent) and leaf.sample_size == leaf.population_size:
                out.extend(self._resolve(leaf.event, mult))  # the whole data set: the base mechanism
                continue
            out.append((leaf, mult))
        return out

    def _check(self, event: PrivacyEvent) -> None:
        self._resolve(event)

    def _loss_pair(self, leaf: PrivacyEvent, dry_run: bool = False) -> tuple[PrivacyLoss, PrivacyLoss | None] | None:
        """(remove-direction loss, add-direction loss or None if symmetric) of a leaf."""
        if isinstance(leaf, GaussianEvent):
            return None if dry_run else (GaussianLoss(leaf.sensitivity / leaf.sigma), None)
        if isinstance(leaf, LaplaceEvent):
            return None if dry_run else (LaplaceLoss(leaf.epsilon), None)
        if isinstance(leaf, RandomizedResponseEvent):
            return None if dry_run else (randomized_response_loss(leaf.epsilon, leaf.k), None)
        if isinstance(leaf, (PureDPEvent, SparseVectorEvent)):
            # an ε-DP step is dominated by binary randomized response (Kairouz, Oh & Viswanath 2015, Thm 3.5);
            # the sparse vector's guarantee is its pure ε₁ + ε₂ (Lyu, Su & Li 2017, Thm 1)
            return None if dry_run else (randomized_response_loss(leaf.epsilon, 2), None)
        if isinstance(leaf, ApproxDPEvent):
            return None if dry_run else (approx_dp_loss(leaf.epsilon, leaf.delta), None)
        peer = peer_event_loss(leaf, self.neighbouring)  # events from the peer libraries (.peer_events)
        if peer is not None:
            return None if dry_run else (peer, None)
        if isinstance(leaf, DiscreteLaplaceEvent):
            if leaf.sensitivity > _MAX_DISCRETE_LAPLACE_SENSITIVITY:
                raise UnsupportedEventError(leaf, f"sensitivity above {_MAX_DISCRETE_LAPLACE_SENSITIVITY}")
            return None if dry_run else (discrete_laplace_loss(leaf.scale, leaf.sensitivity), None)
        if isinstance(leaf, DiscreteGaussianEvent):
            if leaf.sigma > _MAX_DISCRETE_GAUSSIAN_SIGMA:
                raise UnsupportedEventError(
                    leaf, f"sigma above {_MAX_DISCRETE_GAUSSIAN_SIGMA:g} (exact enumeration would be too large)"
                )
            if leaf.sensitivity > _MAX_DISCRETE_LAPLACE_SENSITIVITY:  # it enumerates about 2Δ integers too
                raise UnsupportedEventError(leaf, f"sensitivity above {_MAX_DISCRETE_LAPLACE_SENSITIVITY} (exact "
                                                  "enumeration would be too large)")
            return None if dry_run else (discrete_gaussian_loss(leaf.sigma, leaf.sensitivity, self.tail_mass), None)
        if isinstance(leaf, PoissonSampledEvent):
            if self.neighbouring is not NeighbouringRelation.ADD_REMOVE:
                raise UnsupportedEventError(leaf, "Poisson subsampling is supported under add-remove neighbouring only")
            inner = leaf.event
            if isinstance(inner, GaussianEvent):
                base: PrivacyLoss | None = None if dry_run else GaussianLoss(inner.sensitivity / inner.sigma)
            elif isinstance(inner, LaplaceEvent):
                base = None if dry_run else LaplaceLoss(inner.epsilon)
            else:
                raise UnsupportedEventError(leaf, "only Poisson-subsampled Gaussian and Laplace events are supported")
            if dry_run:
                return None
            return SubsampledLoss(base, leaf.rate, "remove"), SubsampledLoss(base, leaf.rate, "add")
        if isinstance(leaf, RandomAllocationEvent):
            if self.neighbouring is not NeighbouringRelation.ADD_REMOVE:
                raise UnsupportedEventError(leaf, "random allocation is supported under add-remove neighbouring only")
            inner = leaf.event
            if not isinstance(inner, (GaussianEvent, LaplaceEvent)):  # single-step pairs that are symmetric
                raise UnsupportedEventError(leaf, "only random allocation of Gaussian and Laplace events is supported")
            if dry_run:
                return None
            step = GaussianLoss(inner.sensitivity / inner.sigma) if isinstance(inner, GaussianEvent) \
                else LaplaceLoss(inner.epsilon)
            work = MAX_WORK if self.value_discretization_interval is None else MAX_WORK_FIXED  # a fixed grid is asked for
            return (RandomAllocationLoss(step, leaf.steps, "remove", work),
                    RandomAllocationLoss(step, leaf.steps, "add", work))
        if isinstance(leaf, SampledWithoutReplacementEvent):
            base = self._without_replacement_base(leaf, dry_run)
            if dry_run:
                return None
            return WithoutReplacementLoss(base, leaf.rate), None
        raise UnsupportedEventError(leaf, "the PLD accountant has no privacy-loss distribution for this event")

    def _without_replacement_base(self, leaf: SampledWithoutReplacementEvent, dry_run: bool) -> PrivacyLoss | None:
        """The base loss of a without-replacement leaf (Gaussian or Laplace, replace-one only)."""
        if self.neighbouring is not NeighbouringRelation.REPLACE_ONE:
            raise UnsupportedEventError(
                leaf, "sampling without replacement is supported under replace-one neighbouring only "
                      "(Balle, Barthe & Gaboardi 2018, Thm 10); use neighbouring='replace-one'")
        inner = leaf.event
        if isinstance(inner, GaussianEvent):
            return None if dry_run else GaussianLoss(inner.sensitivity / inner.sigma)
        if isinstance(inner, LaplaceEvent):
            return None if dry_run else LaplaceLoss(inner.epsilon)
        raise UnsupportedEventError(leaf, "only Gaussian and Laplace events sampled without replacement are supported")

    def _realisable_pairs(self, pairs):
        """``pairs`` with every without-replacement loss replaced by its two Poisson-type pairs
        (remove: ((1−γ)Q + γP, Q); add: the reverse), or None if there is none.

        Both pairs are attained by actual neighbouring datasets (the record replaced by one
        that contributes like the others), so the composition of either is a lower bound on the
        true ε, while the composed dominating pair of :class:`WithoutReplacementLoss` may lie
        above it (Lebeda, Regehr, Kamath & Steinke 2024)."""
        if not any(isinstance(remove, WithoutReplacementLoss) for (remove, _), _ in pairs):
            return None
        return [((loss.remove, loss.add) if isinstance(loss, WithoutReplacementLoss) else (loss, add), count)
                for (loss, add), count in pairs]

    def _groups(self) -> tuple[list[tuple[PrivacyEvent, int]], float]:
        """Identical leaves grouped (multiplicities added) and Σ count·μ² of the Gaussian leaves."""
        counts: collections.Counter[PrivacyEvent] = collections.Counter()
        mu_squared = 0.0
        for event, count in self._ledger:
            for leaf, mult in self._resolve(event, count):
                if isinstance(leaf, GaussianEvent):
                    mu_squared += mult * squared_multiplier_upper(leaf.sensitivity, leaf.sigma)
                elif not (isinstance(leaf, PureDPEvent) and leaf.epsilon == 0.0):
                    counts[leaf] += mult
        return sorted(counts.items(), key=lambda item: repr(item[0])), mu_squared

    # ------------------------------------------------------------------ computation

    def _pairs(self) -> list[tuple[tuple[PrivacyLoss, PrivacyLoss | None], int]]:
        groups, mu_squared = self._groups()
        pairs = [(self._loss_pair(leaf), count) for leaf, count in groups]
        if mu_squared > 0.0:
            pairs.append(((GaussianLoss(math.sqrt(mu_squared)), None), 1))
        return pairs

    @staticmethod
    def _lattice(pairs) -> float | None:
        """A common lattice spacing of every atom of every loss, if there is one."""
        spacings = [loss.spacing for (loss, _), _ in pairs if loss.spacing is not None]
        if not spacings:
            return None
        base = spacings[0]
        numerators, denominators = [], []
        for s in spacings:
            ratio = fractions.Fraction(s / base).limit_denominator(64)
            if abs(float(ratio) - s / base) > 1e-12 * (s / base):
                return None
            numerators.append(ratio.numerator)
            denominators.append(ratio.denominator)
        return base * math.gcd(*numerators) / math.lcm(*denominators)

    def _compose_at(self, h: float, pairs) -> _Composed:
        key = (self.ledger_hash(), h)
        if key in self._cache:
            return self._cache[key]
        symmetric = all(add is None for (_, add), _ in pairs)
        results = {}
        points = 0
        for direction in ("remove",) if symmetric else ("remove", "add"):
            pes_list, opt_list = [], []
            steps = [(discretise(remove if direction == "remove" or add is None else add, h, self.tail_mass,
                                 self.max_grid_points), count) for (remove, add), count in pairs]
            # atoms on the grid: a direct convolution with a proven round-off bound (.lattice), if affordable
            direct = self._exact_at(h, pairs) and lattice_pmf.direct_work(
                [(pes.size, count) for (pes, _), count in steps]) <= lattice_pmf.DIRECT_WORK
            for (pes, opt), count in steps:
                for pmf, out in ((pes, pes_list), (opt, opt_list)):
                    out.append(lattice_pmf.self_compose(pmf, count) if direct else
                               algebra.self_compose(pmf, count, self.tail_mass, self.max_grid_points))
            compose_all = lattice_pmf.compose_all if direct else (lambda pmfs: algebra.compose_all(pmfs, self.tail_mass))
            pes_total, opt_total = compose_all(pes_list), compose_all(opt_list)
            points = max(points, pes_total.size, opt_total.size)
            results[direction] = (pes_total, opt_total)
        composed = _Composed(h, results["remove"], results.get("add", results["remove"]), points)
        self._cache = {k: v for k, v in self._cache.items() if k[0] == key[0]}
        self._cache[key] = composed
        return composed

    def _realisable_lower(self, composed: _Composed, pairs) -> list[LossPmf] | None:
        """Optimistic composed pmfs (remove and add directions) of :meth:`_realisable_pairs`; their ε or δ
        is a certified lower bound on the true one. None if no leaf is sampled without replacement.

        The Poisson-type pairs often need the first-order fallback (error ∝ h), so their spacing is the
        target width when that is finer than the dominating pair's h — but never a grid of more than
        :data:`_REALISABLE_POINTS` points (or the dominating pair's own size), nor single-step grids of more
        than 16 times the dominating pair's composed points, so that a fine target width costs at most as
        much as the dominating pair's refinement did."""
        realisable = self._realisable_pairs(pairs)
        if realisable is None:
            return None
        budget = max(_REALISABLE_POINTS, composed.grid_points)
        h = max(min(composed.h, self.target_width), composed.h * composed.grid_points / budget)
        # their single-step grids (often far wider than the dominating pair's: the floor log(1 − γ)) hold at
        # most 16 times the dominating pair's composed points, or :data:`_REALISABLE_POINTS` if fewer
        span = max(hi - lo for (remove, add), _ in realisable for lo, hi in
                   (loss.bounds(self.tail_mass) for loss in (remove, add) if loss is not None))
        if math.isfinite(span):
            h = max(h, span / min(_REALISABLE_POINTS, 16 * composed.grid_points))
        try:
            return self._optimistic_directions(h, realisable)
        except GridTooLargeError:
            try:
                return self._optimistic_directions(composed.h, realisable)
            except GridTooLargeError:  # (their support is far wider than the dominating pair's): the trivial 0
                return [LossPmf(composed.h, 0, np.zeros(1), 0.0, False)]

    def _optimistic_directions(self, h: float, pairs) -> list[LossPmf]:
        """The optimistic composed pmfs of the remove and add directions of ``pairs`` at spacing ``h``."""
        out = []
        for direction in ("remove", "add"):
            opt_list = []
            for (remove, add), count in pairs:
                loss = remove if direction == "remove" or add is None else add
                _, opt = discretise(loss, h, self.tail_mass, self.max_grid_points)
                opt_list.append(algebra.self_compose(opt, count, self.tail_mass, self.max_grid_points))
            out.append(algebra.compose_all(opt_list, self.tail_mass))
        return out

    def _aligned(self, lattice: float | None, h_want: float) -> float:
        """The largest spacing ≤ ``h_want`` that divides the lattice of the atoms (if any)."""
        if lattice is None or not h_want >= SPACING_RANGE[0]:  # (discretise refuses a spacing that underflowed)
            return h_want
        return lattice / max(1, math.ceil(lattice / h_want - 1e-9))

    @staticmethod
    def _exact_at(h: float | None, pairs) -> bool:
        """Whether every loss of ``pairs`` is a set of atoms on multiples of ``h`` (:func:`.exact_at_lattice`)."""
        return exact_at_lattice([loss for (remove, add), _ in pairs for loss in (remove, add) if loss is not None], h)

    def _initial_h(self, pairs, lattice: float | None, notes: list[str], tail: float | None = None,
                   points: int | None = None) -> float:
        """The first spacing of the automatic mode.

        1/50 of the narrowest central spread of a step's loss (at most 0.01), raised if needed so
        that every composition fits in half of ``max_grid_points``. The composed width is
        estimated up front from a coarse (4096-cell) discretisation and the Chernoff window of
        :func:`.algebra._window`, so an infeasible grid is never built (a ledger like σ = 1e-3
        DP-SGD, whose losses reach 10⁵, gets a coarse grid at once instead of failing late).
        """
        tail = self.tail_mass if tail is None else tail
        spreads = [hi - lo for lo, hi in (loss.bounds(0.01) for (loss, _), _ in pairs)]
        h = min([1e-2] + [s / 50.0 for s in spreads if s > 0])
        if self._exact_at(lattice, pairs):  # atoms on the lattice: exact there, a finer grid adds round-off only
            h = lattice
        cap = self.max_grid_points if points is None else min(points, self.max_grid_points)
        # count times a step's range bounds the composed range: when even that fits, no estimate is needed
        crude = sum(count * max(hi - lo for lo, hi in (loss.bounds(tail) for loss in (remove, add) if loss is not None))
                    for (remove, add), count in pairs)
        if math.isfinite(crude) and 2.0 * (crude + 4.0 * h) <= cap * h:
            return self._aligned(lattice, h)
        width = 0.0
        for (remove, add), count in pairs:
            widest = 0.0
            for loss in (remove,) if add is None else (remove, add):
                lo, hi = loss.bounds(tail)
                coarse = (hi - lo) / 4096.0
                if not coarse > 0 or not math.isfinite(coarse):
                    continue
                try:
                    pmf, _ = discretise(loss, coarse, tail, 2**14)
                except (OverflowError, GridTooLargeError):
                    raise GridTooLargeError(f"the losses span {hi - lo:.3g}, beyond any grid of at most "
                                            f"{self.max_grid_points} points; use the RDP accountant "
                                            "(--accountant rdp)") from None
                a, b = algebra._window(pmf, count, tail)
                widest = max(widest, (b - a + 1) * coarse + 2.0 * coarse)
            width += widest
        needed = 2.0 * width / cap
        if needed > h:
            notes.append(f"grid spacing raised to h={needed:.3g} so that the composed grid (loss range about "
                         f"{width:.3g}) fits {cap // 2} points; the interval may be wider than target_width")
            h = needed
        return self._aligned(lattice, h)

    def _affordable_factor(self, pairs, h: float, tail: float | None = None) -> float:
        """The smallest factor f such that the single-step grids at spacing f·h (all leaves, both directions)
        hold at most :data:`_REFINE_POINTS` weighted points in all: refinement goes no finer (discretisation,
        1-5 µs per point, is the cost that grows fastest as h shrinks)."""
        span = 0.0
        for (remove, add), _ in pairs:
            for loss in (remove,) if add is None else (remove, add):
                if isinstance(loss, RandomAllocationLoss):
                    continue  # its geometric grid keeps its own work budget (.random_allocation.MAX_WORK)
                lo, hi = loss.bounds(self.tail_mass if tail is None else tail)
                if math.isfinite(hi - lo):
                    span += (hi - lo) * (4.0 if isinstance(loss, WithoutReplacementLoss) else 1.0)
        if not h > 0.0:  # a spacing that underflowed (losses near 5e-324): no grid is affordable
            return math.inf
        return span / (h * _REFINE_POINTS)

    def _refine(self, measure, target: float) -> tuple[_Composed, Any, list[str]]:
        """Shrink h until ``measure(composed)`` says the interval is narrow enough.

        The next h aims at 85% of the target width assuming the width scales like h² (like
        h where the first-order fallback was used). If the target cannot be reached within
        ``max_grid_points``, one last step goes to a grid of at most 2¹⁹ points (or the cap)
        and the achieved width is reported in ``notes``.
        """
        pairs = self._pairs()
        lattice = self._lattice(pairs)
        notes: list[str] = []
        fixed = self.value_discretization_interval
        if fixed is not None:
            h = fixed
        else:
            h = self._initial_h(pairs, lattice, notes)
        last_step = False
        best = None
        coarsenings = retreats = 0
        while True:
            try:
                composed = self._compose_at(h, pairs)
            except GridTooLargeError as error:
                if best is None and fixed is None and coarsenings < 4:
                    coarsenings += 1
                    factor = max(2.0, 1.25 * (error.needed or 4 * self.max_grid_points) / self.max_grid_points)
                    h = self._aligned(lattice, factor * h) if lattice is None or lattice >= factor * h else factor * h
                    notes.append(f"grid coarsened to h={h:.3g} to fit max_grid_points")
                    continue
                if best is None:
                    raise GridTooLargeError(f"{error}: the PLD grid cannot resolve this ledger (a very long run or an "
                                            "extreme parameter)" + ("" if "rdp" in str(error).lower() else
                                            "; use the RDP accountant (--accountant rdp), which handles any count")
                                            ) from None
                if fixed is None and retreats < 3 and h < 0.8 * best[0].h:
                    # a grid between the last one that fitted and this one may still narrow the interval
                    retreats += 1
                    finest = error.finest if error.finest is not None and h < error.finest < best[0].h else None
                    h = self._aligned(lattice, finest if finest is not None else math.sqrt(h * best[0].h))
                    last_step = True
                    notes.append(f"target width not reached: the finest affordable grid is about h={h:.3g} "
                                 "(set value_discretization_interval for a finer one)")
                    continue
                notes.append(f"target width not reached: h={h:.3g} needs too many points ({error})")
                composed, value = best
                break
            value, width, done = measure(composed)
            best = (composed, value)
            if done or fixed is not None or last_step:
                break
            if self._exact_at(h, pairs):
                notes.append(f"target width not reached: the atoms lie on the grid h={h:.6g}, where the interval's "
                             "width is round-off only, and a finer grid only adds round-off")
                break
            if max(composed.remove[0].losses[-1], composed.add[0].losses[-1]) > 600.0:
                # Beyond losses of ~700 the Q-masses underflow in double precision and the
                # construction is first order; refining would cost much and gain little.
                notes.append("losses above 600: interval not refined further (double-precision limit)")
                break
            order = min(composed.remove[1].order, composed.add[1].order)
            if width <= 0:
                factor = 0.5
            elif order >= 2:
                factor = math.sqrt(0.85 * target / width)
            else:
                factor = 0.85 * target / width
            factor = min(factor, 0.7)
            affordable = self._affordable_factor(pairs, h)
            if factor < affordable:
                if affordable >= 0.7:
                    notes.append(f"target width not reached: a finer grid than h={h:.3g} would discretise more than "
                                 f"{_REFINE_POINTS} single-step points (the work budget of one query)")
                    break
                factor, last_step = affordable, True
                notes.append(f"target width not reached: refinement stops at about {_REFINE_POINTS} single-step grid "
                             "points (the work budget of one query)")
            points = composed.grid_points / factor
            if points > self.max_grid_points:
                budget = min(self.max_grid_points, 2**19)
                factor = composed.grid_points / budget  # the h multiplier that reaches the budget
                if factor >= 0.7:
                    notes.append(f"target width not reached within {self.max_grid_points} grid points")
                    break
                last_step = True
                notes.append(f"target width not reached within {self.max_grid_points} grid points")
            new_h = self._aligned(lattice, h * factor)
            h = new_h if new_h < h else self._aligned(lattice, h / 2)
        if any(add is not None for (_, add), _ in pairs):
            notes.append("add and remove directions composed separately; the worse is reported")
        if any(isinstance(loss, RandomAllocationLoss) for (loss, _), _ in pairs):
            notes.append("random allocation: likelihood-ratio sums on a geometric grid, each rounded to the safe side "
                         "(first order in h; dpkit.accounting.pld.random_allocation)")
        if any(isinstance(loss, GaussianLoss) for (loss, _), _ in pairs):
            notes.append("Gaussian steps merged exactly into one Gaussian with mu = sqrt(sum (sensitivity/sigma)^2)")
        notes.append(f"value discretisation interval h={composed.h:.6g}, {composed.grid_points} grid points")
        if min(composed.remove[1].order, composed.add[1].order) < 2:
            notes.append("lower bound uses the first-order fallback discretisation for some steps (wider interval)")
        return composed, value, notes

    # ------------------------------------------------------------------ queries

    def _result(self, epsilon: float, delta: float, method: str, references: tuple[str, ...] = (),
                **extra: Any) -> AccountingResult:
        """A result; the lower end is dropped (with a note) when a leaf is accounted through a pair that
        dominates its mechanism without being attained by it (:data:`_UNATTAINED`), because that end is
        then a lower bound for the pair only, not for the mechanism (one ε-bounded-range use alone is
        exact: its pair's curve is the worst case over that class at every ε)."""
        leaves = list(self.leaves())
        single_bounded_range = len(leaves) == 1 and leaves[0][1] == 1 and isinstance(leaves[0][0], ExponentialMechanismEvent)
        unattained = [] if single_bounded_range else sorted(
            {type(leaf).__name__ for leaf, _ in leaves if isinstance(leaf, _UNATTAINED)})
        if unattained and (extra.get("epsilon_lower") or extra.get("delta_lower")):
            extra = {**extra, "epsilon_lower": None, "delta_lower": None}
            extra["notes"] = (*extra.get("notes", ()), f"no certified lower end: {', '.join(unattained)} is accounted "
                              "through a dominating pair that the mechanism need not attain, so the interval's "
                              "lower end bounds that pair only")
        return super()._result(epsilon, delta, method, references, **extra)

    def _unresolved(self, delta: float, h: float, notes: list[str]) -> AccountingResult:
        """ε = ∞ for a grid finer than :data:`_MIN_SPACING`: there the losses are below the round-off of
        the unit-scale sums that carry them, and the discretisation cannot be certified."""
        notes.append(f"epsilon = inf: the losses need a grid spacing h={h:.3g} < {_MIN_SPACING:g}, below what the "
                     "PLD's double-precision sums resolve; use the GDP (Gaussians) or RDP accountant")
        return self._result(math.inf, delta, _METHOD, epsilon_lower=0.0, notes=tuple(notes))

    def get_epsilon(self, delta: float) -> AccountingResult:
        """Certified interval for ε at ``delta``: ``epsilon`` (upper) and ``epsilon_lower``.

        The upper end is the smallest of several sound routes (:meth:`_best_route`), so it is never
        ∞, or looser than another of dpkit's bounds, where one of them certifies less; the note
        ``route: …`` names the route that gave it."""
        delta = check_target_delta(delta)
        if not self._ledger or not self._pairs():
            return self._result(0.0, delta, _METHOD, epsilon_lower=0.0, notes=("empty ledger",))
        result = self._best_route(delta)
        if self.width_asked:
            self._check_width(result)
        return result

    def _check_width(self, result: AccountingResult) -> None:
        """Refuse (one line) an interval [epsilon_lower, epsilon] wider than the ``target_width`` asked for."""
        lower, upper = result.epsilon_lower, result.epsilon
        if lower is not None and math.isfinite(upper) and upper - lower <= self.target_width:
            return
        self._refuse_width(result, f"delta={result.delta:g}", None if lower is None else
                           f"the certified interval [{lower!r}, {upper!r}] is {upper - lower:.3g} wide")

    def _refuse_width(self, result: AccountingResult, where: str, interval: str | None) -> None:
        """Raise the one-line :class:`TargetWidthError` of :meth:`_check_width` and :meth:`_check_delta_width`."""
        reason = next((n for n in result.notes if n.startswith(("target width not reached", "epsilon = inf",
                                                                 "no certified lower end"))), "")
        raise TargetWidthError(f"target_width={self.target_width:g} not reached at {where}: "
                               f"{interval or 'no certified lower end'}" + (f" ({reason})" if reason else "")
                               + "; ask for a wider target_width")

    def _tilts(self, delta: float) -> bool:
        """Whether the PLD's own route at ``delta`` is exponential tilting: below :data:`TILTED_BELOW`,
        unless the ledger is composed directly on its lattice (then down to :data:`_DIRECT_MIN_DELTA`)."""
        return delta < TILTED_BELOW and not (delta >= _DIRECT_MIN_DELTA and self._composed_directly())

    def _grid_epsilon(self, delta: float) -> AccountingResult:
        """The PLD's own interval at ``delta`` by the FFT (or direct lattice) composition; :meth:`_best_route`
        asks :meth:`_tiny_delta_epsilon` instead where :meth:`_tilts` says so."""

        def measure(c: _Composed):
            upper = max(c.remove[0].epsilon(delta), c.add[0].epsilon(delta))
            lower = max(c.remove[1].epsilon(delta), c.add[1].epsilon(delta))
            width = 0.0 if upper == lower else (upper - lower if math.isfinite(upper) else math.inf)
            # An infinite upper end comes from the +∞ atom, which no finer grid removes.
            return (upper, lower), width, width <= self.target_width or math.isinf(upper)

        composed, (upper, lower), notes = self._refine(measure, self.target_width)
        if composed.h < _MIN_SPACING:
            return self._unresolved(delta, composed.h, list(notes))
        if math.isinf(upper):
            atom = max(composed.remove[0].infinity_mass, composed.add[0].infinity_mass)
            notes.append(f"epsilon = inf: the +inf atom of the composed pessimistic pmf carries mass {atom:.3g} "
                         f">= delta (genuine infinite losses, grid tails and the FFT round-off allowance, which "
                         f"grows with the count); the PLD certifies no finite epsilon here: use the RDP "
                         f"accountant (--accountant rdp), which handles any count")
        realisable = self._realisable_lower(composed, self._pairs())
        if realisable is not None:
            notes.append(f"dominating pair of sampling without replacement (Zhu, Dong & Wang 2022, Prop. 30): "
                         f"its epsilon lies in [{lower:.9g}, {upper:.9g}]")
            lower = min(lower, max(pmf.epsilon(delta) for pmf in realisable))
            notes.append("epsilon_lower is that of the worst-case datasets of one step composed (the Poisson-type "
                         "pairs, attained by actual neighbours); the true epsilon lies between it and the dominating "
                         "pair's (Lebeda, Regehr, Kamath & Steinke 2024)")
        notes.append(f"certified interval [{lower:.9g}, {upper:.9g}], width {upper - lower if math.isfinite(upper) else math.inf:.3g}")
        return self._result(upper, delta, _METHOD, epsilon_lower=lower, notes=tuple(notes))

    def _composed_directly(self) -> bool:
        """Whether the automatic mode composes this ledger on its lattice by direct convolution (:mod:`.lattice`):
        every composed mass is then certified to relative precision, so at small δ tilting gains nothing."""
        pairs = self._pairs()
        h = self._start_h(pairs, [])
        if not self._exact_at(h, pairs):
            return False
        try:
            sizes = [(discretise(loss, h, self.tail_mass, self.max_grid_points)[0].size, count)
                     for (remove, add), count in pairs for loss in (remove, add) if loss is not None]
        except GridTooLargeError:
            return False
        return lattice_pmf.direct_work(sizes) <= lattice_pmf.DIRECT_WORK

    def _best_route(self, delta: float) -> AccountingResult:
        """ε at ``delta`` as the smallest certified upper bound of these routes (each sound on its own):

        * ``pld``: the FFT or direct lattice composition (:meth:`_grid_epsilon`; exponential tilting below
          :data:`TILTED_BELOW`, except on a lattice composed directly);
        * ``pld-tilted``: exponential tilting at ``delta`` where the FFT's interval is ∞ (its round-off
          allowance, which grows with the count, exceeds δ), wider than ``target_width``, or refused;
        * ``gdp``: exact μ-GDP for ledgers of Gaussians (Dong, Roth & Su 2022, Cor. 3.3), which needs no grid
          (beyond μ = :data:`_GRID_MU_LIMIT` the grid is not built unless ``target_width`` was given: there
          is then no ``epsilon_lower``);
        * ``rdp``: the RDP accountant, asked for other ledgers when the PLD's certified interval is wider
          than ``target_width`` or has no lower end (otherwise no sound route can be lower by more than the width);
        * ``get_delta inversion``: the smallest ε of :data:`_INVERSION_LADDER` whose certified δ(ε) is at
          most ``delta``, when every route above gives ∞;
        * ``monotone envelope``: an earlier answer ε' of this accountant, for the same ledger, at some
          δ' ≤ ``delta`` (an (ε', δ')-DP ledger is (ε', δ)-DP).

        The minimum of upper bounds is an upper bound; ``epsilon_lower`` is the largest certified lower end
        of the PLD's own intervals.
        """
        candidates: list[tuple[str, AccountingResult]] = []
        refusal: GridTooLargeError | None = None
        gdp = self._other_route("gdp", delta)
        own = None
        if gdp is not None:
            candidates.append(("gdp", gdp))
        if gdp is None or self.width_asked or self._gaussian_mu() <= _GRID_MU_LIMIT:
            try:
                tilts = self._tilts(delta)
                own = self._tiny_delta_epsilon(delta) if tilts else self._grid_epsilon(delta)
                candidates.append(("pld-tilted" if tilts else "pld", own))
            except GridTooLargeError as error:
                refusal = error
            if delta >= TILTED_BELOW and not self._narrow(own):
                try:
                    candidates.append(("pld-tilted", self._tiny_delta_epsilon(delta)))
                except (GridTooLargeError, ArithmeticError):  # a route that cannot answer is passed over
                    pass
        lowers = [answer.epsilon_lower for name, answer in candidates
                  if name.startswith("pld") and answer.epsilon_lower is not None]
        lower = max(lowers, default=None)  # (each of the PLD's own intervals is certified)
        best = min((answer.epsilon for _, answer in candidates), default=math.inf)
        if gdp is None and (lower is None or not best - lower <= self.target_width):
            candidates.extend(("rdp", answer) for answer in [self._other_route("rdp", delta)] if answer is not None)
        if not any(math.isfinite(answer.epsilon) for _, answer in candidates):
            inverted = self._inverted_delta(delta)
            if inverted is not None:
                candidates.append(("get_delta inversion", inverted))
        if not candidates:
            raise refusal if refusal is not None else GridTooLargeError(
                "no route certifies this ledger; use the RDP accountant (--accountant rdp)")
        route, winner = min(candidates, key=lambda item: item[1].epsilon)
        epsilon, method = winner.epsilon, winner.method
        notes = list(own.notes if own is not None else winner.notes)
        if winner is not own:
            notes.extend(note for note in winner.notes if note not in notes)
        earlier = self._envelope(delta)
        if earlier is not None and earlier[1] < epsilon:
            route, epsilon = "monotone envelope", earlier[1]
            notes.append(f"an earlier answer of this accountant at delta'={earlier[0]:.6g} <= delta certified "
                         f"epsilon={earlier[1]:.9g}; it holds at delta too")
        others = "; ".join(f"{name}: {answer.epsilon:.6g}" for name, answer in candidates if answer is not winner)
        notes.append(f"route: {route} ({_ROUTES[route]})" + (f"; other routes: {others}" if others else ""))
        self._remember(delta, epsilon)
        if lower is not None:
            lower = min(lower, epsilon)
        references = () if winner is own else winner.references
        return self._result(epsilon, delta, method, references, epsilon_lower=lower, notes=tuple(notes))

    def _narrow(self, result: AccountingResult | None) -> bool:
        """Whether ``result`` is finite and, where it reports a lower end, no wider than ``target_width``
        (a ledger with an unattained pair reports none: its grid's own width is in the notes)."""
        if result is None or not math.isfinite(result.epsilon):
            return False
        return result.epsilon_lower is None or result.epsilon - result.epsilon_lower <= self.target_width

    def _gaussian_mu(self) -> float:
        """μ of the ledger's merged Gaussian steps (0 if it has none)."""
        return math.sqrt(self._groups()[1])

    def _other_route(self, name: str, delta: float) -> AccountingResult | None:
        """The certified ε at ``delta`` of the accountant registered as ``name`` on this ledger's leaves as
        the PLD resolves them (parallel parts by their dominant part, a full-batch sample by its base
        mechanism), or None if it does not support them, cannot answer, or answers with an approximation."""
        accountant = registry.make_accountant(name, neighbouring=self.neighbouring)
        try:
            for event, count in self._ledger:
                for leaf, mult in self._resolve(event, count):
                    accountant.compose(leaf, mult)
            answer = accountant.get_epsilon(delta)
        except (ValueError, ArithmeticError):  # UnsupportedEventError and GridTooLargeError among them
            return None
        return answer if answer.is_upper_bound and not math.isnan(answer.epsilon) else None

    def _inverted_delta(self, delta: float) -> AccountingResult | None:
        """An ε of :data:`_INVERSION_LADDER` whose certified :meth:`get_delta` is at most ``delta``, or None:
        the smallest by bisection (δ(ε) is non-increasing in ε), from the top of the ladder, so that a
        ledger no rung certifies costs one query. Every returned ε is certified by its own query."""

        def certified(index: int) -> AccountingResult | None:
            try:
                answer = self._delta_interval(_INVERSION_LADDER[index])
            except (ValueError, ArithmeticError):
                return None
            return answer if answer.delta <= delta else None

        low, high = -1, len(_INVERSION_LADDER) - 1  # no rung at or below low is known to certify; high does
        best = certified(high)
        if best is None:
            return None
        while high - low > 1:
            middle = (low + high) // 2
            answer = certified(middle)
            if answer is None:
                low = middle
            else:
                high, best = middle, answer
        epsilon = _INVERSION_LADDER[high]
        return self._result(epsilon, delta, best.method, notes=(
            f"get_delta({epsilon:g}) certifies delta={best.delta:.6g} <= {delta:.6g}",))

    def _envelope(self, delta: float) -> tuple[float, float] | None:
        """(δ', ε') with the smallest ε' among this accountant's earlier answers for the same ledger at δ' ≤ δ."""
        seen = [item for item in self._answered.get(self.ledger_hash(), []) if item[0] <= delta]
        return min(seen, key=lambda item: item[1], default=None)

    def _remember(self, delta: float, epsilon: float) -> None:
        """Record an answer for :meth:`_envelope` (the answers of the current ledger only)."""
        key = self.ledger_hash()
        self._answered = {key: [*self._answered.get(key, [])[-_REMEMBERED + 1:], (delta, epsilon)]}

    def _tilted_bound(self, pairs, h: float, tail: float, delta: float, pessimistic: bool,
                      guesses: dict[str, float] | None = None) -> float | None:
        """ε at ``delta`` by exponential tilting (:mod:`.tilted`), worse of both directions; None if
        no lower bound is certified. ``guesses`` (direction → ε from a coarser grid) places the saddle
        point without a Chernoff search, and is updated with the new values; any guess gives valid bounds."""
        values = []
        for direction, steps in zip(self._directions(pairs), self._tilted_steps(pairs, h, tail, pessimistic)):
            guess = None if guesses is None else guesses.get(direction)
            value = tilted.tilted_epsilon(steps, delta, self.tail_mass, self.max_grid_points, guess=guess)
            if guesses is not None and value is not None and math.isfinite(value):
                guesses[direction] = value
            values.append(value)
        if pessimistic:
            return max(values)
        known = [v for v in values if v is not None]
        return max(known) if known else None

    def _tiny_delta_epsilon(self, delta: float) -> AccountingResult:
        """:meth:`get_epsilon` for δ < :data:`TILTED_BELOW`: exponential tilting, grid tails at δ·1e-10.

        h shrinks (as in :meth:`_refine`) until the width is at most ``target_width``, at most
        :data:`_TILTED_STEPS` times, or until the grid would be too large.
        """
        pairs = self._pairs()
        total = sum(count for _, count in pairs)
        tail = min(self.tail_mass, max(delta * 1e-10 / total, 1e-320))
        where = f"delta below {TILTED_BELOW:g}: " if delta < TILTED_BELOW else ""
        notes = [(f"{where}composition by exponential tilting, tail masses in log space "
                  f"(grid tail {tail:.3g} per step)")]
        fixed = self.value_discretization_interval
        lattice = self._lattice(pairs)
        if fixed is not None:
            h = fixed
        else:
            h = self._initial_h(pairs, lattice, notes, tail, points=_TILTED_POINTS)
            affordable = self._affordable_factor(pairs, h, tail)
            if affordable > 1.0:
                h = self._aligned(lattice, h * affordable * 1.01)
                notes.append(f"grid spacing raised to h={h:.3g}: the single-step grids stay within {_REFINE_POINTS} "
                             "points (the work budget of one query); the interval may be wider than target_width")
            if h < _MIN_SPACING:  # no finer grid is certified and no coarser one resolves the losses
                return self._unresolved(delta, h, notes)
        # Every h gives valid bounds: keep the smallest upper and the largest lower end seen.
        upper, lower, last_h, previous = math.inf, None, None, None
        guesses: dict[str, float] = {}
        final = False
        for _ in range(_TILTED_STEPS):
            try:
                step_upper = self._tilted_bound(pairs, h, tail, delta, pessimistic=True, guesses=guesses)
                step_lower = self._tilted_bound(pairs, h, tail, delta, pessimistic=False, guesses=dict(guesses))
            except GridTooLargeError as error:
                notes.append(f"target width not reached: h={h:.3g} needs too many points ({error})")
                break
            upper, last_h = min(upper, step_upper), h
            if step_lower is not None:
                lower = step_lower if lower is None else max(lower, step_lower)
            if fixed is not None or step_lower is None or not math.isfinite(upper) or final:
                break
            width = upper - lower
            if width <= self.target_width:
                break
            if _stalled(width, previous):
                notes.append(f"target width not reached: refining h to {h:.3g} left the width at {width:.3g}")
                break
            factor, previous = _next_factor(self.target_width, width, h, previous), (h, width)
            affordable = self._affordable_factor(pairs, h, tail)
            if factor < affordable:
                notes.append(f"target width not reached: refinement stops at about {_REFINE_POINTS} single-step grid "
                             "points (the work budget of one query)")
                if affordable >= 0.7:
                    break
                factor, final = affordable, True
            new_h = self._aligned(lattice, h * factor)
            h = new_h if new_h < h else self._aligned(lattice, h / 2)
        if last_h is None:
            raise GridTooLargeError(f"the PLD grid cannot resolve this ledger at delta={delta:g}; use the RDP "
                                    "accountant (--accountant rdp)")
        h = last_h
        if lower is None:
            # The tilted optimistic bound needs the construction's round-off allowance below δ; the
            # untilted optimistic composition is still a (looser) lower bound.
            composed = self._compose_at(h, pairs)
            lower = max(composed.remove[1].epsilon(delta), composed.add[1].epsilon(delta))
            notes.append("epsilon_lower from the untilted optimistic composition (the tilted one's round-off "
                         "allowance exceeds delta)")
        realisable = self._realisable_pairs(pairs)
        if realisable is not None:
            notes.append(f"dominating pair of sampling without replacement (Zhu, Dong & Wang 2022, Prop. 30): "
                         f"its epsilon lies in [{lower:.9g}, {upper:.9g}]")
            lower = min(lower, self._tilted_bound(realisable, h, tail, delta, pessimistic=False) or 0.0)
        if math.isinf(upper):
            notes.append("epsilon = inf: the +inf atoms of the dominating pairs (or the grid tails, or the "
                         "round-off allowance) carry more than delta; no finite epsilon is certified by the PLD "
                         "here; the RDP accountant (--accountant rdp) may give one")
        notes.append(f"value discretisation interval h={h:.6g}")
        if h < _MIN_SPACING:
            return self._unresolved(delta, h, notes)
        notes.append(f"certified interval [{lower:.9g}, {upper:.9g}]")
        return self._result(upper, delta, _METHOD, epsilon_lower=lower, notes=tuple(notes))

    def get_delta(self, epsilon: float) -> AccountingResult:
        """Upper bound on δ at ``epsilon``, with the certified lower bound ``delta_lower``.

        With an explicit ``target_width``, an interval wider than ``target_width · delta`` (and than
        1e-15 absolute, the round-off floor of the sums) is refused with :class:`TargetWidthError`."""
        epsilon = check_target_epsilon(epsilon)
        result = self._delta_interval(epsilon)
        if self.width_asked:
            self._check_delta_width(result)
        return result

    def _check_delta_width(self, result: AccountingResult) -> None:
        """Refuse (one line) an interval [delta_lower, delta] wider than ``target_width`` relative to δ."""
        lower, upper = result.delta_lower, result.delta
        if lower is not None and (upper - lower <= self.target_width * upper or upper - lower <= 1e-15):
            return
        self._refuse_width(result, f"epsilon={result.epsilon:g}", None if lower is None else
                           f"the certified interval [{lower!r}, {upper!r}] is {(upper - lower) / upper:.3g} of delta wide")

    def _delta_interval(self, epsilon: float) -> AccountingResult:
        """:meth:`get_delta` without the width contract (the ``get_delta inversion`` route uses it too)."""
        if not self._ledger or not self._pairs():
            return self._result(epsilon, 0.0, _METHOD, delta_lower=0.0, notes=("empty ledger",))

        def measure(c: _Composed):
            upper = max(c.remove[0].delta(epsilon), c.add[0].delta(epsilon))
            lower = max(c.remove[1].delta(epsilon), c.add[1].delta(epsilon))
            width = upper - lower
            return (upper, lower), width / max(upper, 1e-300), width <= self.delta_width * upper or width <= 1e-15

        pairs = self._pairs()
        total = sum(count for _, count in pairs)
        if self._chernoff_log_delta(pairs, self._start_h(pairs, []), np.array([epsilon]))[0] < math.log(
                TILTED_DELTA_BELOW - total * self.tail_mass):
            upper, lower, h = self._tiny_delta_delta(epsilon, 1.0, 0.0, notes := [])  # δ is certainly tiny
            composed = None
        else:
            composed, (upper, lower), notes = self._refine(measure, self.delta_width)
            h = composed.h
            if upper < TILTED_DELTA_BELOW:
                upper, lower, h = self._tiny_delta_delta(epsilon, upper, lower, notes)
        realisable = self._realisable_pairs(pairs)
        if realisable is not None:
            notes.append(f"dominating pair of sampling without replacement (Zhu, Dong & Wang 2022, Prop. 30): "
                         f"its delta lies in [{lower:.9g}, {upper:.9g}]; delta_lower is that of the worst-case "
                         "datasets of one step composed (Lebeda, Regehr, Kamath & Steinke 2024)")
            if composed is None or upper < TILTED_DELTA_BELOW:
                tail = self._tilted_tail(pairs, self._chernoff_log_delta(pairs, h, np.array([epsilon]))[0])
                lower = min(lower, self._tilted_delta_bound(realisable, h, tail, epsilon, pessimistic=False))
            else:
                lower = min(lower, max(pmf.delta(epsilon) for pmf in self._realisable_lower(composed, pairs)))
        return self._result(epsilon, upper, _METHOD, delta_lower=lower, notes=tuple(notes))

    def _start_h(self, pairs, notes: list[str]) -> float:
        """The first spacing: ``value_discretization_interval`` if set, else :meth:`_initial_h`."""
        if self.value_discretization_interval is not None:
            return self.value_discretization_interval
        return self._initial_h(pairs, self._lattice(pairs), notes)

    @staticmethod
    def _directions(pairs) -> tuple[str, ...]:
        return ("remove", "add") if any(add is not None for (_, add), _ in pairs) else ("remove",)

    def _tilted_steps(self, pairs, h: float, tail: float, pessimistic: bool) -> list[list[tuple[LossPmf, int]]]:
        """For each direction, the (single-step pmf, count) pairs discretised at ``h`` with grid tail ``tail``."""
        index = 0 if pessimistic else 1
        return [[(self._discretised(remove if direction == "remove" or add is None else add, h, tail)[index], count)
                 for (remove, add), count in pairs]
                for direction in self._directions(pairs)]

    def _discretised(self, loss: PrivacyLoss, h: float, tail: float) -> tuple[LossPmf, LossPmf]:
        """:func:`.mechanisms.discretise` of ``loss``, remembered for the last few (loss, h, tail): the tilted
        paths ask for the pessimistic and the optimistic pmf of the same grid in turn."""
        key = (id(loss), h, tail)
        hit = self._discretisations.get(key)
        if hit is None or hit[0] is not loss:
            hit = (loss, discretise(loss, h, tail, self.max_grid_points))
            self._discretisations = {**dict(list(self._discretisations.items())[-3:]), key: hit}
        return hit[1]

    def _chernoff_log_delta(self, pairs, h: float, epsilons: np.ndarray) -> np.ndarray:
        """log of the Chernoff bound min_λ E[e^{λ(S − ε)}] on the pessimistic composition at spacing ``h``
        (worse direction), plus the +∞ atoms of the losses (not of the grid tails), for each ε: a cheap
        estimate of the scale of δ(ε), at least δ(ε) up to the grid tails (``tail_mass`` per step)."""
        infinity = max(sum(count * (loss.infinity_mass if add is None or direction == "remove" else add.infinity_mass)
                           for (loss, add), count in pairs) for direction in self._directions(pairs))
        log_finite = np.max([tilted.chernoff_log_delta(steps, epsilons)
                             for steps in self._tilted_steps(pairs, h, self.tail_mass, True)], axis=0)
        return np.logaddexp(log_finite, math.log(infinity)) if infinity > 0 else log_finite

    def _tilted_tail(self, pairs, log_estimate: float) -> float:
        """Grid tail per step for tilted δ(ε): 1e-10 of the estimate exp(``log_estimate``) of δ(ε), shared
        over the steps (the tails go to the +∞ atom, which counts fully in δ)."""
        total = sum(count for _, count in pairs)
        return min(self.tail_mass, max(math.exp(max(float(log_estimate), -745.0)) * 1e-10 / total, 1e-320))

    def _tilted_delta_bound(self, pairs, h: float, tail: float, epsilon: float, pessimistic: bool) -> float:
        """δ at ``epsilon`` by exponential tilting (:func:`.tilted.tilted_delta`), worse of both directions
        (the true δ is the larger direction's: the max of upper, or of lower, bounds)."""
        return max(tilted.tilted_delta(steps, epsilon, tail, self.max_grid_points)
                   for steps in self._tilted_steps(pairs, h, tail, pessimistic))

    def _tiny_delta_delta(self, epsilon: float, upper: float, lower: float,
                          notes: list[str]) -> tuple[float, float, float]:
        """:meth:`get_delta` where the untilted upper bound is below :data:`TILTED_DELTA_BELOW`: exponential
        tilting at the saddle point of ``epsilon``. h shrinks until ``delta − delta_lower ≤ target_width ·
        delta`` (or the grid would be too large); every h gives valid bounds, so the smallest upper and the
        largest lower end seen (the untilted ones included) are kept. Returns (upper, lower, last h)."""
        pairs = self._pairs()
        lattice = self._lattice(pairs)
        fixed = self.value_discretization_interval
        h = self._start_h(pairs, notes)
        tail = self._tilted_tail(pairs, self._chernoff_log_delta(pairs, h, np.array([epsilon]))[0])
        notes.append(f"delta below {TILTED_DELTA_BELOW:g}: composition by exponential tilting at the saddle point "
                     f"of epsilon, tail masses in log space (grid tail {tail:.3g} per step)")
        last_h, previous = h, None
        for _ in range(_TILTED_STEPS):
            try:
                step_upper = self._tilted_delta_bound(pairs, h, tail, epsilon, pessimistic=True)
                step_lower = self._tilted_delta_bound(pairs, h, tail, epsilon, pessimistic=False)
            except GridTooLargeError as error:
                notes.append(f"target width not reached: h={h:.3g} needs too many points ({error})")
                break
            upper, lower, last_h = min(upper, step_upper), max(lower, step_lower), h
            width = (upper - lower) / upper if upper > 1e-300 else 0.0  # below 1e-300: δ = 0 to the bar's precision
            if fixed is not None or width <= self.delta_width:
                break
            # refinement is steered by this grid's own interval: the kept ends may come from the untilted grid
            own = (step_upper - step_lower) / step_upper if step_upper > 1e-300 else 0.0
            if _stalled(own, previous):
                notes.append(f"target width not reached: refining h to {h:.3g} left the relative width at "
                             f"{width:.3g} (the lower end is limited by the optimistic construction's allowances)")
                break
            factor, previous = _next_factor(self.delta_width, own, h, previous), (h, own)
            new_h = self._aligned(lattice, h * factor)
            h = new_h if new_h < h else self._aligned(lattice, h / 2)
        else:
            notes.append(f"target width not reached in {_TILTED_STEPS} refinements")
        notes.append(f"tilted: value discretisation interval h={last_h:.6g}; certified interval "
                     f"[{lower:.9g}, {upper:.9g}]")
        return upper, lower, last_h

    def _profile_h(self, pairs) -> float:
        """The spacing of :meth:`delta_curve`: ``value_discretization_interval``, else 1e-3 (lattice-aligned)."""
        h = self.value_discretization_interval
        return self._aligned(self._lattice(pairs), 1e-3) if h is None else h

    def _profile_pmfs(self, pessimistic: bool) -> tuple[LossPmf, LossPmf]:
        pairs = self._pairs()
        composed = self._compose_at(self._profile_h(pairs), pairs)
        index = 0 if pessimistic else 1
        return composed.remove[index], composed.add[index]

    def epsilon_at_profile_grid(self, delta: float) -> float:
        """Upper ε at ``delta`` on the grid used by :meth:`delta_curve` (no refinement); below
        δ = :data:`TILTED_BELOW` by exponential tilting on that grid, as in :meth:`get_epsilon`."""
        delta = check_target_delta(delta)
        if not self._ledger or not self._pairs():
            return certify(0.0, noop=True)
        if delta < TILTED_BELOW:
            pairs = self._pairs()
            total = sum(count for _, count in pairs)
            tail = min(self.tail_mass, max(delta * 1e-10 / total, 1e-320))
            return certify(self._tilted_bound(pairs, self._profile_h(pairs), tail, delta, pessimistic=True))
        return certify(max(p.epsilon(delta) for p in self._profile_pmfs(True)))

    def delta_curve(self, epsilons, *, pessimistic: bool = True):
        """δ(ε) on an array of ε ∈ ℝ (upper bound if ``pessimistic``, else lower bound), max of both directions.

        Uses ``value_discretization_interval`` if set, else h = 1e-3 (aligned to the lattice
        of the atoms when there is one). Where the FFT composition gives δ below
        :data:`TILTED_DELTA_BELOW`, δ(ε) is recomputed at the same h by exponential tilting
        (:func:`.tilted.tilted_delta`, relative precision down to δ = 1e-300, with its
        round-off allowances), which replaces the FFT value there. The curve leaves through
        :func:`~dpkit.accounting.certify.certify_array` (rounded outward).
        """
        eps = np.atleast_1d(np.asarray(epsilons, dtype=float))
        if not self._ledger or not self._pairs():  # identical distributions: δ(ε) = (1 − e^ε)_+
            return certify_array(np.maximum(0.0, -np.expm1(eps)), upper=pessimistic, noop=True)
        pmfs = self._profile_pmfs(pessimistic)
        values = np.maximum(pmfs[0].delta_many(eps), pmfs[1].delta_many(eps))
        tiny = np.nonzero((values < TILTED_DELTA_BELOW) & (eps >= 0.0))[0]
        if tiny.size:
            pairs = self._pairs()
            h = self._profile_h(pairs)
            tail = self._tilted_tail(pairs, float(np.min(self._chernoff_log_delta(pairs, h, eps[tiny]))))
            directions = self._tilted_steps(pairs, h, tail, pessimistic)
            for i in tiny:
                values[i] = max(tilted.tilted_delta(steps, float(eps[i]), tail, self.max_grid_points)
                                for steps in directions)
        return certify_array(values, upper=pessimistic)
