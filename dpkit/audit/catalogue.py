"""Correct and deliberately broken mechanisms with known true ε, to validate an auditor (vectorised, seeded).

Every entry is ``mechanism(database, n, rng)`` returning ``n`` outputs (first axis = sample);
databases are vectors of query answers (sensitivity Δ = 1). Sparse-vector outputs are code
vectors: 1 = ⊤, 0 = ⊥, NaN = not answered (after the cut-off); Roth's variant outputs the noisy
answer instead of ⊤. Definitions follow Lyu, Su & Li, PVLDB 10(6) 2017, Fig. 1 (Alg. 1–6)
and the StatDP implementations (Ding et al., CCS 2018: iSVT1–4, noisy_max_v1a/b, v2a/b).

:data:`CORRECT` maps a name to ``(function, pairs)`` (the mechanism is ε-DP at the claimed ε under the
named pair patterns of :class:`dpkit.audit.StatDPPatterns`); :data:`BROKEN` maps a name to
``(function, pairs, true_epsilon)`` with ``true_epsilon(claimed)`` the true ε or a lower bound of it
(``inf`` when unbounded). :class:`Entry` binds a function to a claimed ε (picklable, for worker
processes). dpkit's audit tests and ``benchmarks/audit.py`` measure power and false-positive rate on it.
:data:`BATCHING` holds one epoch of DP-SGD-like noisy batch sums under shuffled fixed-size batches and
under random allocation, with Chua et al. 2024's neighbours and the claims each is reported with.

>>> from dpkit.audit import audit
>>> function, pairs, true_epsilon = BROKEN["noisy_sum_half"]
>>> audit(Entry(function, 1.0), pairs, claimed_epsilon=1.0, samples=50_000, rng=0).violation, true_epsilon(1.0)
(True, 2.0)
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, Callable

import numpy as np

from dpkit.accounting.base import UnsupportedEventError
from dpkit.accounting.events import GaussianEvent, PoissonSampledEvent, RandomAllocationEvent, SelfComposedEvent
from dpkit.accounting.registry import make_accountant
from dpkit.accounting.shuffled_batches import shuffled_epsilon_lower

__all__ = ["CORRECT", "BROKEN", "REACHABLE", "Entry", "leaky_sum", "BATCHING", "shuffled_batches",
           "random_allocation", "batching_pairs", "poisson_claim", "random_allocation_claim", "shuffled_true_epsilon"]


def _q(database: Any) -> np.ndarray:
    return np.asarray(database, dtype=float)


def _svt_codes(above: np.ndarray, cutoff: int | None) -> np.ndarray:
    out = above.astype(float)
    if cutoff is not None:
        before = np.cumsum(above, axis=1) - above
        out[before >= cutoff] = np.nan
    return out


def svt_lyu(database, n, rng, epsilon, cutoff=1, threshold=1.0):
    """Lyu et al. Alg. 1 (correct): ρ ~ Lap(2/ε), ν ~ Lap(4c/ε)."""
    q = _q(database)
    rho = rng.laplace(scale=2.0 / epsilon, size=(n, 1))
    nu = rng.laplace(scale=4.0 * cutoff / epsilon, size=(n, q.size))
    return _svt_codes(q + nu >= threshold + rho, cutoff)


def svt_dwork_roth(database, n, rng, epsilon, cutoff=2, threshold=1.0):
    """Lyu et al. Alg. 2 (Dwork & Roth 2014, correct): ρ ~ Lap(c/ε₁), ν ~ Lap(2c/ε₁), ε₁ = ε/2,
    ρ drawn afresh after every ⊤."""
    q = _q(database)
    e1 = epsilon / 2
    rho = rng.laplace(scale=cutoff / e1, size=n)
    count = np.zeros(n, dtype=int)
    out = np.full((n, q.size), np.nan)
    for i in range(q.size):
        live = count < cutoff
        nu = rng.laplace(scale=2.0 * cutoff / e1, size=n)
        top = (q[i] + nu >= threshold + rho) & live
        out[live, i] = top[live]
        count += top
        rho = np.where(top, rng.laplace(scale=cutoff / e1, size=n), rho)
    return out


def svt_lee_clifton(database, n, rng, epsilon, cutoff=1, threshold=1.0):
    """Lyu et al. Alg. 4 (Lee & Clifton 2014), StatDP iSVT3: ρ ~ Lap(4/ε), ν ~ Lap(4/(3ε)) not
    scaled by c. True ε = (1 + 6c) ε / 4 (Lyu et al. Sec. 3.3)."""
    q = _q(database)
    rho = rng.laplace(scale=4.0 / epsilon, size=(n, 1))
    nu = rng.laplace(scale=4.0 / (3.0 * epsilon), size=(n, q.size))
    return _svt_codes(q + nu > threshold + rho, cutoff)


def svt_stoddard(database, n, rng, epsilon, threshold=1.0):
    """Lyu et al. Alg. 5 (Stoddard et al. 2014), StatDP iSVT1: no query noise, no cut-off (∞-DP)."""
    q = _q(database)
    rho = rng.laplace(scale=2.0 / epsilon, size=(n, 1))
    return _svt_codes(np.broadcast_to(q, (n, q.size)) >= threshold + rho, None)


def svt_chen(database, n, rng, epsilon, threshold=1.0):
    """Lyu et al. Alg. 6 (Chen et al. 2015), StatDP iSVT2: ν ~ Lap(2/ε) not scaled, no cut-off (∞-DP)."""
    q = _q(database)
    rho = rng.laplace(scale=2.0 / epsilon, size=(n, 1))
    nu = rng.laplace(scale=2.0 / epsilon, size=(n, q.size))
    return _svt_codes(q + nu >= threshold + rho, None)


def svt_roth(database, n, rng, epsilon, cutoff=1, threshold=1.0):
    """Lyu et al. Alg. 3 (Roth's 2011 notes), StatDP iSVT4: outputs the noisy answer q + ν
    instead of ⊤ (∞-DP); ⊥ and unanswered are NaN."""
    q = _q(database)
    rho = rng.laplace(scale=2.0 / epsilon, size=(n, 1))
    noisy = q + rng.laplace(scale=2.0 * cutoff / epsilon, size=(n, q.size))
    above = noisy > threshold + rho
    before = np.cumsum(above, axis=1) - above
    return np.where(above & (before < cutoff), noisy, np.nan)


def _noisy_answers(database, n, rng, epsilon, noise: str) -> np.ndarray:
    """``n`` rows of the query answers plus i.i.d. ``noise`` (``"laplace"`` or ``"exponential"``) of scale 2/ε."""
    q = _q(database)
    return q + getattr(rng, noise)(scale=2.0 / epsilon, size=(n, q.size))


def rnm_index(database, n, rng, epsilon):
    """Report-noisy-max with Lap(2/ε), returns the index (correct; StatDP noisy_max_v1a)."""
    return np.argmax(_noisy_answers(database, n, rng, epsilon, "laplace"), axis=1)


def rnm_value(database, n, rng, epsilon):
    """Report-noisy-max with Lap(2/ε) returning the noisy maximum (broken; noisy_max_v1b)."""
    return np.max(_noisy_answers(database, n, rng, epsilon, "laplace"), axis=1)


def rnm_exp_index(database, n, rng, epsilon):
    """Report-noisy-max with Exp(2/ε) noise, returns the index (correct; noisy_max_v2a)."""
    return np.argmax(_noisy_answers(database, n, rng, epsilon, "exponential"), axis=1)


def rnm_exp_value(database, n, rng, epsilon):
    """Report-noisy-max with Exp(2/ε) returning the value (broken; noisy_max_v2b)."""
    return np.max(_noisy_answers(database, n, rng, epsilon, "exponential"), axis=1)


def histogram(database, n, rng, epsilon):
    """Laplace histogram, scale 1/ε (correct when one bin moves by ≤ 1)."""
    q = _q(database)
    return q + rng.laplace(scale=1.0 / epsilon, size=(n, q.size))


def histogram_eps(database, n, rng, epsilon):
    """Histogram with Laplace scale ε instead of 1/ε (broken: true ε = 1/ε)."""
    q = _q(database)
    return q + rng.laplace(scale=epsilon, size=(n, q.size))


def noisy_sum(database, n, rng, epsilon):
    """Sum of records in [0, 2] changed one at a time by ≤ 1, Laplace scale 1/ε (correct)."""
    return _q(database).sum() + rng.laplace(scale=1.0 / epsilon, size=n)


def noisy_sum_half(database, n, rng, epsilon):
    """Sum with half the needed noise, scale 1/(2ε) (broken: true ε = 2ε)."""
    return _q(database).sum() + rng.laplace(scale=0.5 / epsilon, size=n)


@dataclasses.dataclass(frozen=True)
class Entry:
    """A catalogue mechanism at a given claimed ε (picklable: module-level function + kwargs)."""

    function: Callable[..., Any]
    epsilon: float
    kwargs: tuple[tuple[str, Any], ...] = ()

    def __call__(self, database, n, rng):
        return self.function(database, n, rng, self.epsilon, **dict(self.kwargs))

    def query_answer(self, database: Any) -> Any:
        """The exact answer the noise is added to, for the additive entries (the audit's lattice
        events relative to the input); ``None`` for the others (selection, sparse vector)."""
        answer = _ANSWERS.get(self.function)
        return None if answer is None else answer(database)


def _total(database: Any) -> np.ndarray:
    return np.array([_q(database).sum()])


_ANSWERS: dict[Callable[..., Any], Callable[[Any], np.ndarray]] = {
    histogram: _q, histogram_eps: _q, noisy_sum: _total, noisy_sum_half: _total}

CORRECT = {
    "svt_lyu": (svt_lyu, "statdp"),
    "svt_dwork_roth": (svt_dwork_roth, "statdp"),
    "rnm_index": (rnm_index, "statdp"),
    "rnm_exp_index": (rnm_exp_index, "statdp"),
    "histogram": (histogram, "statdp-one"),
    "noisy_sum": (noisy_sum, "statdp-one"),
}

BROKEN = {
    "svt_lee_clifton": (svt_lee_clifton, "statdp", lambda e: 1.75 * e),
    "svt_stoddard": (svt_stoddard, "statdp", lambda e: math.inf),
    "svt_chen": (svt_chen, "statdp", lambda e: math.inf),
    "svt_roth": (svt_roth, "statdp", lambda e: math.inf),
    "rnm_value": (rnm_value, "statdp", lambda e: 5.0 * e),  # ≥ (L/2) ε for L = 10 (lower tail of a shift)
    "rnm_exp_value": (rnm_exp_value, "statdp", lambda e: math.inf),
    "histogram_eps": (histogram_eps, "statdp-one", lambda e: 1.0 / e),
    "noisy_sum_half": (noisy_sum_half, "statdp-one", lambda e: 2.0 * e),
}


REACHABLE = {"rnm_exp_value": {0.2: 0.6}}
"""Name → {claimed ε: bound}: what ``audit(..., samples="auto", goal="bound")`` (the default budget of
10⁷ outputs spent on the bound) must certify on a broken entry. Measured on ``rnm_exp_value`` at a
claim of 0.2, seed 1: 0.89 with ``goal="bound"``, 0.50 with ``goal="verdict"`` (the fewest outputs
that refute the claim), 1.29 for a fixed ``samples=10**7`` audit (selection on 2·10⁶ instead of 10⁶)."""


def leaky_sum(database, n, rng):
    """A sum claimed 1-DP with Laplace scale 1/2 (true ε = 2): the CLI's module:function example."""
    return np.asarray(database, dtype=float).sum() + rng.laplace(scale=0.5, size=n)


# --------------------------------------------------------------------------- batch sampling in DP-SGD
# Chua, Ghazi, Kamath, Kumar, Manurangsi, Sinha & Zhang, "How Private are DP-SGD Implementations?",
# ICML 2024: the same noisy batch sums under two batch samplers. Records are clipped gradients in
# [−1, 1] (one dimension, clip norm 1); a step releases the sum of its batch plus N(0, σ²).

BATCH_SIGMA = 1.0
"""Noise multiplier σ of the batching entries."""
BATCH_STEPS = 16
"""Steps t of the one epoch of the batching entries (batches of one record: the datasets have t records)."""
BATCH_DELTA = 1e-5
"""The δ of their claims."""


def _batch_records(database: Any, steps: int) -> np.ndarray:
    records = _q(database).ravel()
    if records.size == 0 or records.size % steps:
        raise ValueError(f"the database must hold a positive multiple of steps={steps} records, got {records.size}")
    if not np.all(np.abs(records) <= 1.0):
        raise ValueError("records are clipped gradients: every entry must lie in [-1, 1]")
    return records


def _noisy_sums(sums: np.ndarray, sigma: float, rng: np.random.Generator) -> np.ndarray:
    """``sums`` + N(0, σ²) from the audit's ``rng``, rounded exactly to the lattice Λ = 2^(⌊log₂ σ⌋ − 16).

    The rounding is a post-processing of the real-valued release, as in dpkit's float-safe
    ``GaussianMechanism`` (which :mod:`dpkit.audit` may not import, docs/design.md): the outputs'
    low-order bits then carry no trace of the input, so the audit's float-bit events test the design,
    not numpy's sampler (sums of records in [−1, 1] with at most 2⁴⁰ records are exact)."""
    grid = 2.0 ** (math.floor(math.log2(sigma)) - 16)
    out = rng.normal(scale=sigma, size=sums.shape)
    out += sums
    out /= grid  # exact: a power of two
    np.rint(out, out=out)
    out *= grid
    return out


def shuffled_batches(database, n, rng, sigma=BATCH_SIGMA, steps=BATCH_STEPS):
    """One epoch of DP-SGD-style linear queries over **shuffled fixed-size batches** (Chua et al. 2024,
    ABLQ_S): the records are permuted uniformly at random and cut into ``steps`` batches of equal size;
    the output is the ``steps`` noisy batch sums (a vector per sample).

    Its privacy is not that of Poisson subsampling: on Chua et al.'s pair (:func:`batching_pairs`)
    its true ε is at least :func:`shuffled_true_epsilon` (4.32 at the defaults), far above the
    Poisson ε papers report for it (:func:`poisson_claim`, 2.24)."""
    records = _batch_records(database, steps)
    rows = rng.permuted(np.broadcast_to(records, (n, records.size)), axis=1)
    return _noisy_sums(rows.reshape(n, steps, -1).sum(axis=2), sigma, rng)


def random_allocation(database, n, rng, sigma=BATCH_SIGMA, steps=BATCH_STEPS):
    """The same linear queries with **random allocation** ("balls and bins"; Chua et al. 2025, Feldman &
    Shenfeld 2025): each record joins one of the ``steps`` batches, uniformly and independently of the
    others, so the batch sizes vary. Its ε is that of ``RandomAllocationEvent(GaussianEvent(σ), steps)``
    (:func:`random_allocation_claim`)."""
    records = _batch_records(database, steps)
    where = rng.integers(0, steps, size=(n, records.size))
    where += steps * np.arange(n)[:, None]
    sums = np.bincount(where.ravel(), weights=np.broadcast_to(records, where.shape).ravel(), minlength=n * steps)
    return _noisy_sums(sums.reshape(n, steps), sigma, rng)


def batching_pairs(steps=BATCH_STEPS):
    """Zero-out neighbours (one record's gradient replaced by 0, Chua et al. 2024's relation; the same as
    removing it for Poisson subsampling and random allocation): Chua et al.'s pair, every other record at
    −1 and the differing one at +1 (the batch that holds it stands out by 2, or by 1 once zeroed), and the
    pair with every other record at 0 (the worst case of random allocation)."""
    others = -np.ones(steps - 1)
    return [(np.r_[others, 1.0], np.r_[others, 0.0]), (np.r_[np.zeros(steps - 1), 1.0], np.zeros(steps))]


def poisson_claim(sigma=BATCH_SIGMA, steps=BATCH_STEPS, delta=BATCH_DELTA):
    """The ε "as papers report it" for one epoch: Poisson subsampling at rate 1/t for t steps, add/remove
    neighbours (the PLD accountant's certified upper bound)."""
    event = SelfComposedEvent(PoissonSampledEvent(GaussianEvent(sigma), 1.0 / steps), steps)
    return make_accountant("pld").compose(event).get_epsilon(delta).epsilon


def random_allocation_claim(sigma=BATCH_SIGMA, steps=BATCH_STEPS, delta=BATCH_DELTA):
    """The certified ε of one epoch of random allocation, ``RandomAllocationEvent(GaussianEvent(σ), t)``:
    the PLD accountant's, or the RDP accountant's (add/remove) where the PLD does not take the event.
    Raises :class:`~dpkit.accounting.base.UnsupportedEventError` when neither does."""
    event = RandomAllocationEvent(GaussianEvent(sigma), steps)
    try:
        accountant = make_accountant("pld").compose(event)
    except UnsupportedEventError:
        accountant = make_accountant("rdp", neighbouring="add-remove").compose(event)
    return accountant.get_epsilon(delta).epsilon


def shuffled_true_epsilon(sigma=BATCH_SIGMA, steps=BATCH_STEPS, delta=BATCH_DELTA):
    """A certified lower bound on the true ε of :func:`shuffled_batches` at ``delta``
    (:func:`dpkit.accounting.shuffled_batches.shuffled_epsilon_lower`)."""
    return shuffled_epsilon_lower(sigma, steps, 1, delta)


BATCHING = {
    "shuffled_batches": (shuffled_batches, poisson_claim, "refute"),
    "random_allocation": (random_allocation, random_allocation_claim, "pass"),
}
"""Name → ``(function, claim, expected)``: the mechanism at the defaults (σ = 1, t = 16, one epoch), the
claim function (ε at δ = 10⁻⁵) and the verdict a correct audit should reach on :func:`batching_pairs`."""
