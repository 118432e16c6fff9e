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

__all__ = ["CORRECT", "BROKEN", "Entry", "leaky_sum"]


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


def leaky_sum(database, n, rng):
    """A sum claimed 1-DP with Laplace scale 1/2 (true ε = 2): the CLI's module:function example."""
    return np.asarray(database, dtype=float).sum() + rng.laplace(scale=0.5, size=n)
