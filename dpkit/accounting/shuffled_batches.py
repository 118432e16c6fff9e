"""Certified *lower* bounds on the ε of DP-SGD with shuffled fixed-size batches (Chua et al. 2024).

Poisson subsampling has tight accountants; shuffling the data and cutting it into fixed-size batches
(what most implementations do) has none, and its ε is usually *reported* as if the batches were
Poisson samples. Chua, Ghazi, Kamath, Kumar, Manurangsi, Sinha & Zhang, "How Private are DP-SGD
Implementations?" (ICML 2024, arXiv:2403.17673) show that this can understate ε badly, with a pair of
neighbouring datasets on which shuffling leaks more than the Poisson analysis allows. This module
computes the ε that pair forces, rounding every numerical step towards a *smaller* ε, so the number
is a proven lower bound on the true ε of shuffled-batch DP-SGD: no accountant can honestly report
less. (The proven *upper* bound is the un-amplified one: each record is used once per epoch, so E
epochs are at most E Gaussian releases, ``SelfComposedEvent(GaussianEvent(z), E)``.)

**The mechanism** (Chua et al. 2024, ABLQ_S, "adaptive batch linear queries" with the shuffle batch
sampler; DP-SGD is a post-processing of it): ``n = b·T`` records are permuted uniformly at random and
cut into ``T`` batches of ``b``; step ``t`` releases ``Σ_{i ∈ batch t} ψ_t(x_i) + N(0, σ²)`` where
``ψ_t`` maps a record into the unit ball (a clipped gradient, clip norm 1, noise multiplier σ). Each
epoch draws a fresh permutation (``reshuffle=True``) or repeats the first one (``reshuffle=False``).
With a linear loss ℓ(θ; x) = θ·x every iterate reveals the noisy sum of its step, so the bound is for
DP-SGD that releases its iterates (the threat model of every DP-SGD accountant, Poisson's included),
not for a release of the final model alone.

**Neighbours**: *zero-out* adjacency, x′ is x with one record replaced by a ghost ⊥ whose gradient is
``ψ_t(⊥) = 0`` (the relation of the paper; the authors' code calls the two directions REMOVE and ADD).
It keeps the number of records, so the batches keep their size. For Poisson subsampling and for random
allocation a zeroed record is the same as a removed one, so the Poisson number papers report refers to
the same neighbours.

**The pair** (one dimension, non-adaptive ψ = identity): x = (−1, …, −1, +1) and x′ = (−1, …, −1, ⊥).
Every batch without the differing record sums to −b on both; the batch that holds it sums to −b + 2 on
x and to −b + 1 on x′. Adding the public offset b to every coordinate, one epoch's output is

    P_S = (1/T) Σ_t N(2 e_t, σ² I_T)   on x,      Q_S = (1/T) Σ_t N(e_t, σ² I_T)   on x′.

**The test** (the paper's sets E_C = {w : max_t w_t > C}, "cube" sets in the authors' code): the
maximum M = max_t w_t has

    Pr_P[M ≤ C] = Φ((C − 2)/σ) Φ(C/σ)^{T−1},      Pr_Q[M ≤ C] = Φ((C − 1)/σ) Φ(C/σ)^{T−1},

and δ_S(ε) ≥ sup_C P_S(E_C) − e^ε Q_S(E_C) (the paper's lower bound). The pair, the sets and the
zero-out relation were checked against the authors' released code (google-research,
``dpsgd_batch_sampler_accounting``: ``ShuffleAccountant`` with means 2 and 1); the paper's section and
equation numbers are not cited because only its abstract could be consulted. For E epochs with reshuffling
(Chua et al., "Scalable DP-SGD: Shuffling vs. Poisson Subsampling", NeurIPS 2024, arXiv:2411.04205)
the outputs of the epochs are independent, so the pair is (P_S^{⊗E}, Q_S^{⊗E}); without reshuffling
the differing record sits in the same step every epoch and the epoch-average is sufficient: the pair
is the one-epoch pair at σ/√E.

**How the bound is certified here** (this module's construction, valid by post-processing): each
epoch's output is reduced to the cell of its maximum M on a fine grid of thresholds, the cells are
grouped into integer *scores* by their privacy loss, and the statistic is the sum S of the E scores.
δ(ε) of the pair of laws of S is computed exactly from below: the cell masses are enclosed from the
closed forms above (``scipy.special.log_ndtr`` with an explicit relative error allowance, checked
against mpmath in the tests), the laws of S are E-fold convolutions of non-negative arrays whose
float round-off is bounded relative to the result, and δ(ε) = Σ_k (P(S = k) − e^ε Q(S = k))₊ is
summed with the lower enclosure of P and the upper enclosure of Q. Post-processing never increases
δ(ε), so δ of the S-pair is at most δ of the datasets' outputs, which is at most the mechanism's δ(ε).
With one epoch the optimal set of S is (for the monotone losses met in practice) a threshold of M,
i.e. the paper's E_C; both directions (x against x′ and x′ against x) are evaluated and the larger
bound is kept.

>>> eps = shuffled_epsilon_lower(1.0, 100, 1, 1e-5)      # σ = 1, 100 steps per epoch, one epoch
>>> 4.0 < eps < 4.38                                       # Poisson would report about 0.7
True
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np
from scipy import special

from dpkit._validation import check_integer, check_nonnegative, check_open_unit, check_positive
from dpkit.accounting.certify import certified

__all__ = [
    "ShuffledLowerBound",
    "shuffled_lower_bound",
    "shuffled_epsilon_lower",
    "shuffled_delta_lower",
    "max_log_cdf",
]

_U = 2.0**-53
"""Unit round-off of double precision."""

LOG_NDTR_RELATIVE_ERROR = 1e-11
"""Allowance for the relative error of one ``scipy.special.log_ndtr`` value, including the rounding of
its argument (about 2u·x², below 4·10⁻¹³ for |x| ≤ 40): more than ten times what the tests measure
against mpmath at 50 digits."""

_ABSOLUTE_FLOOR = 1e-300
"""Absolute allowance per value for underflow (subnormal results and log-CDFs that round to 0)."""

SCORE_BUDGET = 24_000
"""Largest length of the composed score law (E × number of scores): it bounds the cost of the E-fold
convolutions (direct, O(length²)) to about a second."""

_MAX_EPSILON = 700.0
"""The largest ε searched (e^ε overflows near 709)."""

_MAX_CELLS = 20_000
_FINE_LOSS_STEP = 1e-3
"""Cells of the maximum are about this wide in privacy loss (Δc = 10⁻³ σ²) unless that needs more
than ``_MAX_CELLS`` cells."""


@dataclasses.dataclass(frozen=True)
class ShuffledLowerBound:
    """A certified lower bound on the ε of shuffled-batch DP-SGD and the witness that attains it.

    Attributes
    ----------
    epsilon
        The certified lower bound: the mechanism is not (ε′, ``delta``)-DP for any ε′ < ``epsilon``.
    delta
        The δ the bound is for.
    noise_multiplier, steps_per_epoch, epochs, reshuffle
        The DP-SGD configuration (σ, T, E and whether every epoch draws a new permutation).
    direction
        ``"remove"``: the witness event is more likely on x (the record present, P) than on x′ (the
        record zeroed out, Q); ``"add"``: the reverse.
    edges
        Thresholds c_0 < … < c_K on one epoch's maximum (in the coordinates where the batches without
        the record have mean 0): cell 0 is M ≤ c_0, cell j is c_{j−1} < M ≤ c_j, cell K+1 is M > c_K.
    scores
        The integer score of every cell (length K + 2).
    witness_sums
        The values of the sum S of the E epochs' scores that form the witness event.
    witness_first, witness_second
        A certified lower bound on the probability of the witness event under the first distribution
        of ``direction`` and a certified upper bound under the second: ``witness_first −
        e^epsilon · witness_second ≥ delta`` (up to the float allowance of :func:`_hockey_stick`).
    notes
        How the bound was computed and what limited it.
    """

    epsilon: float
    delta: float
    noise_multiplier: float
    steps_per_epoch: int
    epochs: int
    reshuffle: bool
    direction: str
    edges: np.ndarray
    scores: np.ndarray
    witness_sums: np.ndarray
    witness_first: float
    witness_second: float
    notes: tuple[str, ...]

    def __post_init__(self) -> None:
        # The certificate itself: the witness masses must give at least delta at epsilon (they were
        # summed without the float allowances, which only lowered the computed bound).
        if self.epsilon > 0.0 and (self.witness_first - math.exp(self.epsilon) * self.witness_second
                                   < self.delta * (1.0 - 1e-9)):
            raise ArithmeticError(f"the witness does not certify delta={self.delta} at epsilon={self.epsilon}")

    def witness(self, maxima: Any) -> np.ndarray:
        """Whether outputs fall in the witness event, from each epoch's maximum batch sum.

        ``maxima`` has shape ``(n, epochs)`` (or ``(n,)`` for one epoch): the largest of the T noisy
        batch sums of each epoch *plus the batch size b* (the offset that gives the batches without the
        differing record mean 0, see the module docstring). With ``reshuffle=False`` pass the maximum of
        the epoch-averaged sums (the pair is then the one-epoch pair at σ/√E), shape ``(n,)``.
        """
        values = np.asarray(maxima, dtype=float)
        if values.ndim == 1:
            values = values[:, None]
        cells = np.searchsorted(self.edges, values, side="left")  # cell j: c_{j-1} < M <= c_j
        total = self.scores[cells].sum(axis=1)
        return np.isin(total, self.witness_sums)


def max_log_cdf(threshold: Any, noise_multiplier: float, steps: int, mean: float) -> np.ndarray:
    """log Pr[max_t w_t ≤ threshold] when ``w ~ N(mean·e_1, σ² I_T)`` (float, not enclosed).

    ``mean = 2`` is the differing record's batch on x and ``mean = 1`` on x′ (Chua et al. 2024, the
    masses of the sets E_C): log Φ((c − mean)/σ) + (T − 1) log Φ(c/σ).

    >>> float(np.exp(max_log_cdf(0.0, 1.0, 2, 0.0)))   # two standard normals both ≤ 0
    0.25
    """
    c = np.asarray(threshold, dtype=float)
    return special.log_ndtr((c - mean) / noise_multiplier) + (steps - 1) * special.log_ndtr(c / noise_multiplier)


def _log_cdf_enclosure(c: np.ndarray, sigma: float, steps: int, mean: float) -> tuple[np.ndarray, np.ndarray]:
    """Lower and upper bounds on the exact log Pr[M ≤ c] (both ≤ 0).

    The computed sum L̂ of T log_ndtr values of one sign has relative error at most that of its terms
    (:data:`LOG_NDTR_RELATIVE_ERROR`) plus the round-off of the product and the sum (3u), and absolute
    error at most T times the underflow allowance."""
    value = max_log_cdf(c, sigma, steps, mean)
    error = (LOG_NDTR_RELATIVE_ERROR + 4 * _U) * np.abs(value) + steps * _ABSOLUTE_FLOOR
    return value - error, np.minimum(value + error, 0.0)


def _cell_masses(edges: np.ndarray, sigma: float, steps: int, mean: float) -> tuple[np.ndarray, np.ndarray]:
    """Lower and upper bounds on the mass of every cell of the maximum (length ``len(edges) + 1``).

    A cell's mass is a difference of CDFs, F(c_j) − F(c_{j−1}), and also of survival functions,
    S(c_{j−1}) − S(c_j); each bound takes the tighter of the two (the CDF form in the lower tail, the
    survival form in the upper one, where F ≈ 1 would cancel). exp and expm1 are within 2 ulp."""
    log_lo, log_hi = _log_cdf_enclosure(edges, sigma, steps, mean)
    f_lo = np.maximum(np.exp(log_lo) * (1 - 4 * _U) - _ABSOLUTE_FLOOR, 0.0)
    f_hi = np.minimum(np.exp(log_hi) * (1 + 4 * _U) + _ABSOLUTE_FLOOR, 1.0)
    s_lo = np.maximum(-np.expm1(log_hi) * (1 - 4 * _U) - _ABSOLUTE_FLOOR, 0.0)
    s_hi = np.minimum(-np.expm1(log_lo) * (1 + 4 * _U) + _ABSOLUTE_FLOOR, 1.0)
    inner_lo = np.maximum(np.maximum(f_lo[1:] - f_hi[:-1], s_lo[:-1] - s_hi[1:]), 0.0)
    inner_lo *= 1 - 4 * _U
    inner_hi = np.minimum(f_hi[1:] - f_lo[:-1], s_hi[:-1] - s_lo[1:]) * (1 + 4 * _U) + _ABSOLUTE_FLOOR
    lower = np.concatenate(([f_lo[0]], inner_lo, [s_lo[-1]]))
    upper = np.concatenate(([f_hi[0]], np.maximum(inner_hi, 0.0), [s_hi[-1]]))
    return lower, upper


def _edges(sigma: float, steps: int, tail: float) -> np.ndarray:
    """Thresholds on the maximum covering all but about ``tail`` of either distribution's mass.

    Below: Pr[M ≤ c] ≤ Φ(c/σ)^{T−1} Φ((c − 1)/σ) ≤ Φ(c/σ)^T; above: Pr_P[M > c] ≤ T Φ(−(c − 2)/σ).
    Any thresholds give a valid bound (the tails are cells too); these only set the resolution."""
    low = sigma * float(special.ndtri_exp(math.log(tail) / steps))
    high = 2.0 + sigma * -float(special.ndtri(tail / steps))
    step = max(_FINE_LOSS_STEP * sigma**2, (high - low) / _MAX_CELLS)
    return low + step * np.arange(int(math.ceil((high - low) / step)) + 1)


def _scores(p_lo: np.ndarray, p_hi: np.ndarray, q_lo: np.ndarray, q_hi: np.ndarray,
            levels: int, ranks: bool) -> np.ndarray:
    """Integer scores 0..levels−1 of the cells, increasing with their (estimated) privacy loss.

    Any map is valid (it is a post-processing); grouping cells of nearly equal loss loses least. For one
    epoch (``ranks``) every cell keeps its own score, ranked by loss; for several, the scores are
    equal-width levels of the loss, so that the sum of the epochs' scores follows the total loss."""
    with np.errstate(divide="ignore", invalid="ignore"):
        loss = np.log(0.5 * (p_lo + p_hi)) - np.log(0.5 * (q_lo + q_hi))
    finite = loss[np.isfinite(loss)]
    if finite.size == 0:
        return np.zeros(p_lo.size, dtype=np.int64)
    # Mass on one side only: the extreme scores (+inf: P-only cells; -inf and 0/0: the lowest).
    loss = np.where(loss == np.inf, finite.max() + 1.0, np.where(np.isfinite(loss), loss, finite.min() - 1.0))
    if ranks:
        return np.argsort(np.argsort(loss, kind="stable"), kind="stable").astype(np.int64)
    # Equal-width levels over the loss range that carries the mass (a few cells at the ends of a
    # nearly empty tail would otherwise stretch the range).
    weight = 0.5 * (p_lo + p_hi + q_lo + q_hi)
    order = np.argsort(loss, kind="stable")
    cumulative = np.cumsum(weight[order]) / max(float(weight.sum()), 1e-300)
    low = loss[order][min(int(np.searchsorted(cumulative, 1e-12)), order.size - 1)]
    high = loss[order][min(int(np.searchsorted(cumulative, 1 - 1e-12)), order.size - 1)]
    if not high > low:
        high = low + 1.0
    position = np.floor((loss - low) / (high - low) * (levels - 2)) + 1
    return np.clip(position, 0, levels - 1).astype(np.int64)


def _grouped(masses: np.ndarray, scores: np.ndarray, levels: int, upper: bool) -> np.ndarray:
    """Mass of every score (a sum of non-negative terms: relative error γ_n, rounded outward)."""
    total = np.bincount(scores, weights=masses, minlength=levels)
    gamma = (masses.size + 2) * _U * 1.01
    return total * (1 + gamma) + _ABSOLUTE_FLOOR if upper else total * (1 - gamma)


def _convolution_power(law: np.ndarray, count: int, upper: bool) -> np.ndarray:
    """The ``count``-fold convolution of a non-negative array, rounded outward.

    Direct convolution (``np.convolve``) of non-negative arrays: each output is a sum of at most N
    products of non-negative numbers, so its relative error is at most γ = (N + 1)u/(1 − (N + 1)u);
    relative errors compound multiplicatively over the squarings and products of the binary power, and
    underflow moves a result by at most a few subnormals per product (``_ABSOLUTE_FLOOR``, either way)."""
    result: np.ndarray | None = None
    result_factor = 1.0
    base, base_factor = law, 1.0
    remaining = count
    while remaining:
        if remaining & 1:
            if result is None:
                result, result_factor = base, base_factor
            else:
                gamma = (min(result.size, base.size) + 1) * _U * 1.01
                result = np.convolve(result, base)
                result_factor *= base_factor * (1 + gamma)
        remaining >>= 1
        if remaining:
            gamma = (base.size + 1) * _U * 1.01
            base = np.convolve(base, base)
            base_factor *= base_factor * (1 + gamma)
    assert result is not None
    relative = result_factor - 1.0
    if upper:
        return result * (1 + relative) + _ABSOLUTE_FLOOR
    return np.maximum(result * (1 - relative) - _ABSOLUTE_FLOOR, 0.0)


def _hockey_stick(first_lo: np.ndarray, second_hi: np.ndarray, epsilon: float) -> tuple[float, np.ndarray]:
    """A lower bound on Σ_k (p_k − e^ε q_k)₊ for p ≥ ``first_lo`` and q ≤ ``second_hi`` elementwise,
    and the atoms where the computed term is positive (the witness set).

    Each term is computed with e^ε rounded up; its error is at most 2u (p + e^ε q) ≤ 4u p where it is
    positive (plus a subnormal where e^ε q underflows), and the sum of non-negative terms loses at most
    γ_n of itself."""
    if epsilon > _MAX_EPSILON:
        return 0.0, np.zeros(first_lo.size, dtype=bool)
    scale = math.exp(epsilon) * (1 + 4 * _U)
    terms = first_lo - scale * second_hi
    positive = terms > 0
    total = float(np.sum(terms[positive]))
    gamma = (first_lo.size + 2) * _U * 1.01
    value = (total * (1 - gamma) - 4 * _U * (1 + gamma) * float(np.sum(first_lo[positive]))
             - _ABSOLUTE_FLOOR * int(np.count_nonzero(positive)))
    return max(value, 0.0), positive


@dataclasses.dataclass(frozen=True)
class _Laws:
    """Enclosures of the laws of S under P (record present) and Q (zeroed), and the grid behind them."""

    p_lo: np.ndarray
    p_hi: np.ndarray
    q_lo: np.ndarray
    q_hi: np.ndarray
    edges: np.ndarray
    scores: np.ndarray
    notes: tuple[str, ...]

    def delta(self, epsilon: float) -> tuple[float, str, np.ndarray]:
        """The larger certified lower bound of the two directions, its direction and witness set."""
        remove, remove_set = _hockey_stick(self.p_lo, self.q_hi, epsilon)
        add, add_set = _hockey_stick(self.q_lo, self.p_hi, epsilon)
        return (remove, "remove", remove_set) if remove >= add else (add, "add", add_set)


def _laws(sigma: float, steps: int, epochs: int, tail: float) -> _Laws:
    """The score laws of ``epochs`` independent epochs at noise multiplier ``sigma`` (see the module)."""
    edges = _edges(sigma, steps, tail)
    p_lo, p_hi = _cell_masses(edges, sigma, steps, 2.0)
    q_lo, q_hi = _cell_masses(edges, sigma, steps, 1.0)
    levels = p_lo.size if epochs == 1 else max(3, min(p_lo.size, SCORE_BUDGET // epochs))
    notes = [f"{edges.size + 1} cells of the maximum (spacing {edges[1] - edges[0]:.3g}) grouped into "
             f"{levels} scores by privacy loss"]
    if levels < p_lo.size:
        notes.append(f"the cells share {levels} scores to keep the {epochs}-fold convolution under "
                     f"{SCORE_BUDGET} points (a coarser statistic: a valid but looser bound)")
    scores = _scores(p_lo, p_hi, q_lo, q_hi, levels, ranks=epochs == 1)
    levels = int(scores.max()) + 1
    grouped = [_grouped(m, scores, levels, upper) for m, upper in
               ((p_lo, False), (p_hi, True), (q_lo, False), (q_hi, True))]
    if epochs > 1:
        grouped = [_convolution_power(g, epochs, upper) for g, upper in zip(grouped, (False, True, False, True))]
    return _Laws(*grouped, edges=edges, scores=scores, notes=tuple(notes))


def _validated(noise_multiplier: Any, steps_per_epoch: Any, epochs: Any) -> tuple[float, int, int]:
    sigma = check_positive("noise_multiplier", noise_multiplier)
    steps = check_integer("steps_per_epoch", steps_per_epoch, minimum=1)
    epochs = check_integer("epochs", epochs, minimum=1)
    return sigma, steps, epochs


def _setup(sigma: float, steps: int, epochs: int, reshuffle: bool, delta_scale: float) -> tuple[_Laws, int]:
    if not isinstance(reshuffle, bool):
        raise TypeError(f"reshuffle must be a bool, got reshuffle={reshuffle!r}")
    if not reshuffle and epochs > 1:  # the same order every epoch: the epoch average is sufficient
        sigma, composed = sigma / math.sqrt(epochs), 1
    else:
        composed = epochs
    tail = min(1e-3, delta_scale * 1e-4 / composed)
    return _laws(sigma, steps, composed, tail), composed


@certified("delta", upper=False)
def shuffled_delta_lower(noise_multiplier: float, steps_per_epoch: int, epsilon: float, epochs: int = 1, *,
                         reshuffle: bool = True) -> float:
    """A certified lower bound on δ(ε) of DP-SGD with shuffled fixed-size batches.

    The mechanism and the pair are those of Chua et al. 2024 (module docstring): the returned δ is
    attained, from below, by the outputs on x = (−1, …, −1, +1) and x′ = (−1, …, −1, ⊥) (zero-out
    neighbours), so no (ε, δ′)-DP claim with δ′ below it is true.

    >>> d = shuffled_delta_lower(1.0, 100, 2.0)
    >>> 1e-3 < d < 0.03
    True
    """
    sigma, steps, epochs = _validated(noise_multiplier, steps_per_epoch, epochs)
    epsilon = check_nonnegative("epsilon", epsilon)
    laws, _ = _setup(sigma, steps, epochs, reshuffle, 1e-10)
    return laws.delta(epsilon)[0]


def shuffled_lower_bound(noise_multiplier: float, steps_per_epoch: int, delta: float, epochs: int = 1, *,
                         reshuffle: bool = True, tolerance: float = 1e-6) -> ShuffledLowerBound:
    """The certified lower bound on ε at ``delta`` with its witness (see :class:`ShuffledLowerBound`).

    Parameters
    ----------
    noise_multiplier
        σ: the noise standard deviation over the clip norm (> 0).
    steps_per_epoch
        T = n/b, the number of batches of one epoch (≥ 1).
    delta
        Target δ in (0, 1).
    epochs
        E ≥ 1 full epochs.
    reshuffle
        True (default): a fresh permutation every epoch (PyTorch's ``DataLoader(shuffle=True)``);
        False: one permutation reused for all epochs, a weaker mechanism (the pair becomes one
        epoch at σ/√E).
    tolerance
        Absolute resolution of the search over ε; the result is the lower end of the final
        bracket, so it stays certified.

    Cost: one pass over at most 20 000 thresholds and, for E > 1, E-fold convolutions of at most
    :data:`SCORE_BUDGET` points (about a second for E = 100; independent of T).

    >>> r = shuffled_lower_bound(1.0, 100, 1e-5)
    >>> r.direction, r.witness_first - math.exp(r.epsilon) * r.witness_second >= 1e-5 * (1 - 1e-9)
    ('remove', True)
    """
    sigma, steps, epochs = _validated(noise_multiplier, steps_per_epoch, epochs)
    delta = check_open_unit("delta", delta)
    tolerance = check_positive("tolerance", tolerance)
    laws, composed = _setup(sigma, steps, epochs, reshuffle, delta)

    def found(eps: float) -> bool:
        return laws.delta(eps)[0] >= delta

    capped = False
    if not found(0.0):
        low = 0.0
    else:
        low, high = 0.0, 1.0
        while found(high):
            low, high = high, 2.0 * high
            if high > _MAX_EPSILON:  # e^ε overflows beyond: the search stops at ε = 700
                high, capped = _MAX_EPSILON, True
                break
        while high - low > tolerance * max(1.0, low):
            mid = 0.5 * (low + high)
            if found(mid):
                low = mid
            else:
                high = mid
    value, direction, members = laws.delta(low)
    if direction == "remove":
        first, second = laws.p_lo, laws.q_hi
    else:
        first, second = laws.q_lo, laws.p_hi
    witness = np.nonzero(members)[0]
    notes = list(laws.notes)
    if not reshuffle and epochs > 1:
        notes.append(f"one permutation for all {epochs} epochs: the pair is one epoch at sigma/sqrt({epochs})")
    if capped:
        notes.append(f"the search over epsilon stops at {_MAX_EPSILON:g} (e^epsilon overflows): the true bound may be "
                     "larger")
    if low == 0.0:
        notes.append(f"the pair does not reach delta={delta:g} at epsilon=0: the bound is 0")
    return ShuffledLowerBound(
        epsilon=low, delta=delta, noise_multiplier=sigma, steps_per_epoch=steps, epochs=epochs,
        reshuffle=reshuffle, direction=direction, edges=laws.edges, scores=laws.scores,
        witness_sums=witness, witness_first=float(np.sum(first[members])),
        witness_second=float(np.sum(second[members])), notes=tuple(notes))


@certified("epsilon", upper=False)
def shuffled_epsilon_lower(noise_multiplier: float, steps_per_epoch: int, epochs: int, delta: float, *,
                           reshuffle: bool = True) -> float:
    """A certified lower bound on the ε at ``delta`` of DP-SGD with shuffled fixed-size batches.

    σ = ``noise_multiplier``, T = ``steps_per_epoch`` batches per epoch, E = ``epochs``; zero-out
    neighbours (Chua et al. 2024; module docstring). Compare with the Poisson ε that is often reported
    for such a run (``PoissonSampledEvent(GaussianEvent(σ), 1/T)`` composed T·E times): where this
    bound is larger, the Poisson number is not a valid guarantee for the shuffled implementation.
    See :func:`shuffled_lower_bound` for the witness and the parameters.

    >>> round(shuffled_epsilon_lower(0.5, 1000, 1, 1e-6), 1)   # Poisson: 4.2 at the same setting
    11.0
    """
    return shuffled_lower_bound(noise_multiplier, steps_per_epoch, delta, epochs, reshuffle=reshuffle).epsilon
