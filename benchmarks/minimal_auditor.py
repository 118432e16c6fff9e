"""A minimal, independent select-then-confirm auditor: the reference dpkit's auditor must match.

It imports nothing from ``dpkit`` (only numpy and scipy), so a regression in dpkit's event search,
statistics or sample split cannot hide in it.

Procedure, for a mechanism ``mechanism(database, n, rng)`` returning ``n`` outputs (first axis):

1. **Selection.** A ``selection_fraction`` of the budget is split evenly over the pairs and their
   two inputs. On each pair the events are

   * hashed discrete output patterns (when the rows repeat): each pattern, and the unions of
     patterns in likelihood-ratio order;
   * threshold and atom events on scalar statistics of a row: each column (at most 32), and for
     vectors the max, min, sum and a diagonal-LDA projection ``Σ_j (m1_j − m2_j) x_j / v_j``;
     thresholds at fixed quantiles of the pooled selection sample and at the support boundaries
     (each input's min and max, and just below the min), atoms ``{value}`` for statistics with at
     most 64 values.

   Every event is scored in both directions by the Clopper–Pearson bound it gives on the
   selection sample, ``ln((CP_lower(k1) − δ)/CP_upper(k2))`` with each side at α/2, α = 1 −
   confidence; the best one wins.
2. **Confirmation.** The winner is counted on fresh outputs of its pair (the rest of the budget,
   half per input) and the reported bound is ``max(0, ln((CP_lower(k1) − δ)/CP_upper(k2)))``,
   each one-sided Clopper–Pearson bound at level α/2 (Clopper & Pearson 1934). It holds with
   probability ≥ 1 − α because the confirmation outputs are never seen by the selection.

Usage::

    from minimal_auditor import minimal_audit
    result = minimal_audit(mechanism, [(D, D2)], claimed_epsilon=1.0, samples=10**6, seed=1)
    result.bound, result.violation
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, Callable, Sequence

import numpy as np
from scipy import stats

__all__ = ["MinimalResult", "minimal_audit", "cp_bound"]

_QUANTILES = np.unique(np.concatenate([np.geomspace(1e-5, 0.05, 30), np.linspace(0.0, 1.0, 101),
                                       1.0 - np.geomspace(1e-5, 0.05, 30)]))
_MAX_COLUMNS = 32
_MAX_ATOMS = 64
_MAX_PATTERNS = 4096
_BATCH = 1 << 16


@dataclasses.dataclass(frozen=True)
class MinimalResult:
    """The confirmed bound, whether it refutes the claim, and the witness event."""

    bound: float
    violation: bool
    event: str
    counts: tuple[int, int]
    samples_per_input: int
    selection_score: float


def cp_bound(k1: Any, k2: Any, n1: int, n2: int, delta: float, alpha: float) -> np.ndarray:
    """``ln((CP_lower(k1) − δ)/CP_upper(k2))``, each one-sided Clopper–Pearson bound at ``alpha/2``
    (−inf where the lower bound does not exceed δ)."""
    k1, k2 = np.asarray(k1, dtype=float), np.asarray(k2, dtype=float)
    half = alpha / 2
    with np.errstate(invalid="ignore", divide="ignore"):
        low = np.where(k1 > 0, stats.beta.ppf(half, np.maximum(k1, 1), np.maximum(n1 - k1 + 1, 1)), 0.0)
        up = np.where(k2 < n2, stats.beta.ppf(1 - half, k2 + 1, np.maximum(n2 - k2, 1)), 1.0)
        return np.where(low > delta, np.log(np.maximum(low - delta, 1e-300)) - np.log(up), -np.inf)


def _rows(outputs: Any, n: int) -> np.ndarray:
    return np.asarray(outputs, dtype=float).reshape(n, -1)


def _hash(x: np.ndarray) -> np.ndarray:
    """64-bit hash of each row (NaN and ±0 normalised), to match exact output patterns."""
    bits = (np.where(np.isnan(x), np.nan, x) + 0.0).view(np.uint64)
    h = np.full(x.shape[0], np.uint64(1469598103934665603))
    with np.errstate(over="ignore"):
        for j in range(bits.shape[1]):
            h = (h ^ bits[:, j]) * np.uint64(1099511628211)
            h ^= h >> np.uint64(31)
    return h


@dataclasses.dataclass(frozen=True)
class _Statistic:
    """A scalar of an output row: ``column`` j, ``max``, ``min``, ``sum`` or ``lda`` (weights)."""

    kind: str
    index: int = -1
    weights: tuple[float, ...] = ()

    def __call__(self, x: np.ndarray) -> np.ndarray:
        filled = np.where(np.isnan(x), 0.0, x)
        if self.kind == "column":
            return x[:, self.index]
        if self.kind == "max":
            return np.where(np.isnan(x), -np.inf, x).max(axis=1)
        if self.kind == "min":
            return np.where(np.isnan(x), np.inf, x).min(axis=1)
        if self.kind == "sum":
            return filled.sum(axis=1)
        return filled @ np.asarray(self.weights)


@dataclasses.dataclass(frozen=True)
class _Event:
    """``statistic ∈ (low, high]`` (``atom``: ``== low``), or the row hash in ``patterns``."""

    statistic: _Statistic | None
    low: float = -math.inf
    high: float = math.inf
    atom: bool = False
    patterns: np.ndarray | None = None  # sorted or not: np.isin does not care

    def count(self, x: np.ndarray) -> int:
        if self.statistic is None:
            return int(np.count_nonzero(np.isin(_hash(x), self.patterns)))
        v = self.statistic(x)
        if self.atom:
            return int(np.count_nonzero(v == self.low))
        inside = v <= self.high if self.low == -math.inf else (v > self.low) & (v <= self.high)
        return int(np.count_nonzero(inside))

    def describe(self) -> str:
        if self.statistic is None:
            return f"{len(self.patterns)} output pattern(s)"
        name = self.statistic.kind + (f"[{self.statistic.index}]" if self.statistic.kind == "column" else "")
        return f"{name} == {self.low:.6g}" if self.atom else f"{name} in ({self.low:.6g}, {self.high:.6g}]"


def _statistics(x1: np.ndarray, x2: np.ndarray) -> list[_Statistic]:
    d = x1.shape[1]
    out = [_Statistic("column", j) for j in range(min(d, _MAX_COLUMNS))]
    if d > 1:
        f1, f2 = np.where(np.isnan(x1), 0.0, x1), np.where(np.isnan(x2), 0.0, x2)
        var = 0.5 * (f1.var(axis=0) + f2.var(axis=0))
        w = (f1.mean(axis=0) - f2.mean(axis=0)) / np.where(var > 0, var, 1.0)
        out += [_Statistic("max"), _Statistic("min"), _Statistic("sum"), _Statistic("lda", weights=tuple(w))]
    return out


def _candidate_events(x1: np.ndarray, x2: np.ndarray) -> tuple[list[_Event], np.ndarray, np.ndarray]:
    """Every event of the pair, with its counts on ``x1`` and ``x2`` (computed in bulk)."""
    events: list[_Event] = []
    c1s: list[np.ndarray] = []
    c2s: list[np.ndarray] = []
    h1, h2 = _hash(x1), _hash(x2)
    keys = np.unique(np.concatenate([h1, h2]))
    if len(keys) <= min(_MAX_PATTERNS, (len(h1) + len(h2)) // 10):  # discrete outputs
        p1 = np.bincount(np.searchsorted(keys, h1), minlength=len(keys))
        p2 = np.bincount(np.searchsorted(keys, h2), minlength=len(keys))
        for a, b in ((p1, p2), (p2, p1)):
            order = np.argsort(-(a + 0.5) / (b + 0.5), kind="stable")
            sorted_keys = keys[order]
            events += [_Event(None, patterns=sorted_keys[: i + 1]) for i in range(len(order))]
            c1s.append(np.cumsum(p1[order]))
            c2s.append(np.cumsum(p2[order]))
        events += [_Event(None, patterns=keys[i : i + 1]) for i in range(len(keys))]
        c1s.append(p1)
        c2s.append(p2)
    for stat in _statistics(x1, x2):
        v1, v2 = stat(x1), stat(x2)
        pooled = np.concatenate([v1, v2])
        pooled = pooled[np.isfinite(pooled)]
        if pooled.size == 0:
            continue
        s1, s2 = np.sort(v1[~np.isnan(v1)]), np.sort(v2[~np.isnan(v2)])
        values = np.unique(pooled)
        if values.size <= _MAX_ATOMS:
            cuts = values
            events += [_Event(stat, float(v), float(v), atom=True) for v in values]
            c1s.append(np.searchsorted(s1, values, "right") - np.searchsorted(s1, values, "left"))
            c2s.append(np.searchsorted(s2, values, "right") - np.searchsorted(s2, values, "left"))
        else:
            cuts = np.quantile(pooled, _QUANTILES)
        ends = [f(v[np.isfinite(v)]) for v in (v1, v2) if np.isfinite(v).any() for f in (np.min, np.max)]
        cuts = np.unique(np.concatenate([cuts, ends, [np.nextafter(e, -np.inf) for e in ends]]))
        below1, below2 = np.searchsorted(s1, cuts, "right"), np.searchsorted(s2, cuts, "right")
        events += [_Event(stat, -math.inf, float(t)) for t in cuts]
        c1s.append(below1)
        c2s.append(below2)
        events += [_Event(stat, float(t), math.inf) for t in cuts]
        c1s.append(len(s1) - below1)
        c2s.append(len(s2) - below2)
    return events, np.concatenate(c1s), np.concatenate(c2s)


def _draw(mechanism: Callable[..., Any], database: Any, n: int, rng: np.random.Generator) -> np.ndarray:
    return _rows(mechanism(database, n, rng), n)


def minimal_audit(mechanism: Callable[[Any, int, np.random.Generator], Any], pairs: Sequence[tuple[Any, Any]],
                  claimed_epsilon: float, claimed_delta: float = 0.0, *, samples: int = 10**6, seed: int = 0,
                  confidence: float = 0.95, selection_fraction: float = 0.2) -> MinimalResult:
    """Select one event on ``selection_fraction`` of ``samples`` and certify it on the rest (see the
    module docstring). ``pairs`` is a list of neighbouring ``(D, D′)``."""
    if not 0 < confidence < 1 or not 0 < selection_fraction < 1:
        raise ValueError("confidence and selection_fraction must lie in (0, 1)")
    rng = np.random.default_rng(seed)
    alpha = 1.0 - confidence
    pairs = list(pairs)
    per = max(int(selection_fraction * samples) // (2 * len(pairs)), 100)
    best: tuple[float, int, _Event | None, bool] = (-math.inf, 0, None, False)
    for i, (first, second) in enumerate(pairs):
        x1, x2 = _draw(mechanism, first, per, rng), _draw(mechanism, second, per, rng)
        events, c1, c2 = _candidate_events(x1, x2)
        for reverse, (a, b) in ((False, (c1, c2)), (True, (c2, c1))):
            scores = cp_bound(a, b, per, per, claimed_delta, alpha)
            j = int(np.argmax(scores))
            if scores[j] > best[0]:
                best = (float(scores[j]), i, events[j], reverse)
    score, i, event, reverse = best
    confirm = max((samples - 2 * per * len(pairs)) // 2, 1)
    if event is None:
        return MinimalResult(0.0, False, "none", (0, 0), confirm, -math.inf)
    counts = []
    for database in pairs[i]:
        total, done = 0, 0
        while done < confirm:
            n = min(_BATCH, confirm - done)
            total += event.count(_draw(mechanism, database, n, rng))
            done += n
        counts.append(total)
    k1, k2 = (counts[1], counts[0]) if reverse else (counts[0], counts[1])
    bound = max(0.0, float(cp_bound(k1, k2, confirm, confirm, claimed_delta, alpha)))
    return MinimalResult(bound, bound > claimed_epsilon, event.describe() + (" (reversed)" if reverse else ""),
                         (int(k1), int(k2)), confirm, score)
