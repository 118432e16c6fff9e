"""Events and attacks: the sets ``S`` whose probabilities under D and D′ are compared.

An output batch is a float array of shape ``(n, d)`` (see :func:`as_outputs`). Every event
is a small frozen, picklable value with ``evaluate(outputs) -> bool array`` so that
confirmation can stream through any executor. Families:

* **Output patterns** (:class:`PatternSetEvent`): sets of exact output rows, for discrete
  outputs (integer codes, ⊤/⊥ vectors). A pattern seen under one input and (almost) never
  under the other is a support-boundary event; its bound grows with the sample size, so an
  ∞-DP bug shows as a large ε lower bound.
* **Threshold / interval events on a feature** (:class:`FeatureSetEvent`): a coordinate,
  an aggregate (sum, max, min, number of ⊥, arg-max) or a learned score, binned; the event is
  a union of bins (a threshold, an interval, or any set ordered by likelihood ratio).
* **Bits of floating-point outputs** (features ``ulp`` and ``lowbits``, :mod:`dpkit.audit.bits`):
  per coordinate, the binade and the number of zero low mantissa bits (the ulp grid the output
  lies on), and the last 4 bits of the significand, as discrete codes; an output whose grid is
  impossible on the other input is a support-boundary event (precision attacks, Haney et al.
  2022; Mironov 2012), found from the outputs alone. On by default in :func:`dpkit.audit.audit`
  (``float_bits=True``).
* **Lattice relative to the input** (feature ``lattice``): when the audit knows the query answer
  ``c`` of each input (``answer=``), the power of two dividing the exact difference ``output − c``
  (:func:`dpkit.audit.bits.difference_granularity`), per coordinate and per centre of the pair; the
  upper thresholds are the events "``output − c`` is a multiple of ``2^t``".
* **Learned classifier attack** (:class:`LinearScore`): logistic regression, fitted by
  Newton's method on simple features of vector outputs, as in DP-Sniper (Bichsel et al.,
  S&P 2021, Sec. 5) but thresholded at any level, so the bound is not capped near ln(100).

:class:`Families` fixes the features and bin edges of a pair on a small screening sample;
its :class:`Tally` (bin and pattern counts) of any number of batches adds up, so a selection
sample can be streamed in constant memory. :func:`candidates_from_tallies` (or
:func:`select_candidates` on an in-memory sample) builds every event from the tallies and
ranks them by the bound they are expected to give on a fresh confirmation sample; the
statistics never reuse the selection sample.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from typing import Any

import numpy as np
from scipy import special

from dpkit.audit.bits import describe_ulp_code, difference_granularity, low_bits, ulp_code

__all__ = [
    "as_outputs",
    "row_hash",
    "RowStats",
    "Feature",
    "LinearScore",
    "FeatureSetEvent",
    "PatternSetEvent",
    "Candidate",
    "shrunk_frequencies",
    "predicted_bound",
    "Families",
    "Tally",
    "candidates_from_tallies",
    "select_candidates",
    "BIT_KINDS",
]

_MAX_PATTERNS = 4096
_MAX_COORDS = 32
_DISCRETE_VALUES = 64
BIT_KINDS = ("ulp", "lowbits", "lattice")
_BIT_COORDS = 4  # bit features on the first coordinates only
_MAX_BIT_CODES = 4096


def as_outputs(raw: Any, n: int) -> np.ndarray:
    """Convert ``n`` mechanism outputs to a float64 array of shape ``(n, d)``.

    Booleans become 0/1, integers stay exact up to 2**53, NaN encodes ⊥. The first axis
    must be the sample axis and have length ``n``.
    """
    try:
        arr = np.asarray(raw)
    except ValueError:  # numpy: "setting an array element with a sequence ... inhomogeneous shape"
        raise ValueError("mechanism outputs must all have the same length (a ragged list of outputs was "
                         "returned); pad them, or encode a missing value as NaN") from None
    if arr.dtype == object:
        raise ValueError("mechanism outputs must all have the same length and be numbers (got objects or a "
                         "ragged list); pad them, or encode a missing value as NaN")
    if arr.dtype.kind not in "biuf":
        raise TypeError(
            f"mechanism outputs must be numeric (encode ⊥ as NaN or a sentinel code), got dtype {arr.dtype}"
        )
    if arr.ndim == 0 or arr.shape[0] != n:
        raise ValueError(f"mechanism must return n={n} outputs along the first axis, got shape {arr.shape}")
    return np.ascontiguousarray(arr.reshape(n, -1), dtype=np.float64)


_MULT = np.uint64(0x9E3779B97F4A7C15)


def row_hash(outputs: np.ndarray) -> np.ndarray:
    """64-bit hash of each output row (NaN and ±0 normalised); used to match exact patterns."""
    x = np.where(np.isnan(outputs), np.nan, outputs) + 0.0
    bits = x.view(np.uint64)
    h = np.full(outputs.shape[0], np.uint64(0x243F6A8885A308D3))
    with np.errstate(over="ignore"):
        for j in range(bits.shape[1]):
            h = (h ^ bits[:, j]) * _MULT
            h ^= h >> np.uint64(29)
    return h


class RowStats:
    """Per-row aggregates of one output batch over its non-NaN entries, each computed once and
    shared by the features and the learned score (all-⊥ rows: sum 0, max −inf, min +inf)."""

    def __init__(self, outputs: np.ndarray):
        self.outputs = outputs

    @functools.cached_property
    def nan(self) -> np.ndarray:
        return np.isnan(self.outputs)

    @functools.cached_property
    def any_nan(self) -> bool:
        return bool(self.nan.any())

    @functools.cached_property
    def allnan(self) -> np.ndarray:
        return self.nan.all(axis=1) if self.any_nan else np.zeros(len(self.outputs), dtype=bool)

    @functools.cached_property
    def filled(self) -> np.ndarray:
        return np.where(self.nan, 0.0, self.outputs) if self.any_nan else self.outputs

    @functools.cached_property
    def ninf_filled(self) -> np.ndarray:
        return np.where(self.nan, -np.inf, self.outputs) if self.any_nan else self.outputs

    @functools.cached_property
    def sum(self) -> np.ndarray:
        return _reduce_columns(np.add, self.filled)

    @functools.cached_property
    def max(self) -> np.ndarray:
        return _reduce_columns(np.maximum, self.ninf_filled)

    @functools.cached_property
    def min(self) -> np.ndarray:
        return _reduce_columns(np.minimum, np.where(self.nan, np.inf, self.outputs) if self.any_nan else self.outputs)


def _reduce_columns(ufunc: np.ufunc, x: np.ndarray, weights: np.ndarray | None = None) -> np.ndarray:
    """``ufunc.reduce(x * weights, axis=1)`` as one vector operation per column: several times
    faster than a reduction along short rows, and free of BLAS threads for the weighted sum."""
    out = x[:, 0] * weights[0] if weights is not None else x[:, 0].copy()
    for j in range(1, x.shape[1]):
        ufunc(out, x[:, j] * weights[j] if weights is not None else x[:, j], out=out)
    return out


@dataclasses.dataclass(frozen=True)
class LinearScore:
    """A learned linear score ``w · standardise(φ(x)) + b`` (logistic-regression attack).

    ``φ(x)`` = the coordinates (NaN → 0), NaN indicators (if ``nan_columns``), and the row
    sum, max and min over non-NaN entries.
    """

    weights: tuple[float, ...]
    intercept: float
    mean: tuple[float, ...]
    scale: tuple[float, ...]
    nan_columns: bool

    @staticmethod
    def features(outputs: np.ndarray, nan_columns: bool) -> np.ndarray:
        nan = np.isnan(outputs)
        filled = np.where(nan, 0.0, outputs)
        allnan = nan.all(axis=1)
        mx = np.where(allnan, 0.0, np.where(nan, -np.inf, outputs).max(axis=1))
        mn = np.where(allnan, 0.0, np.where(nan, np.inf, outputs).min(axis=1))
        cols = [filled] + ([nan.astype(float)] if nan_columns else [])
        cols += [filled.sum(axis=1, keepdims=True), mx[:, None], mn[:, None]]
        return np.hstack(cols)

    def __call__(self, outputs: np.ndarray, rows: "RowStats | None" = None) -> np.ndarray:
        # same value as standardise(features(x)) @ w + b, without building the feature matrix
        rows = RowStats(outputs) if rows is None else rows
        d = outputs.shape[1]
        w = np.asarray(self.weights) / np.asarray(self.scale)
        const = self.intercept - float(np.dot(w, self.mean))
        score = _reduce_columns(np.add, rows.filled, w[:d]) + const
        k = d
        if self.nan_columns:
            score += _reduce_columns(np.add, rows.nan, w[d : 2 * d])
            k = 2 * d
        mx = np.where(rows.allnan, 0.0, rows.max)
        mn = np.where(rows.allnan, 0.0, rows.min)
        return score + rows.sum * w[k] + mx * w[k + 1] + mn * w[k + 2]

    @classmethod
    def fit(cls, first: np.ndarray, second: np.ndarray, iterations: int = 8, ridge: float = 1e-3,
            max_rows: int = 5_000) -> "LinearScore":
        """Fit ``Pr[x came from D]`` by ridge-penalised Newton–Raphson (no sklearn needed).

        At most ``max_rows`` evenly spaced rows of each sample are used (the fit only steers
        the search; thresholds are still chosen on the whole selection sample).
        """
        first = first[:: max(1, len(first) // max_rows)]
        second = second[:: max(1, len(second) // max_rows)]
        nan_columns = bool(np.isnan(first).any() or np.isnan(second).any())
        phi = np.vstack([cls.features(first, nan_columns), cls.features(second, nan_columns)])
        y = np.concatenate([np.ones(len(first)), np.zeros(len(second))])
        mean = phi.mean(axis=0)
        scale = phi.std(axis=0)
        scale = np.where(scale > 0, scale, 1.0)
        z = np.hstack([(phi - mean) / scale, np.ones((len(phi), 1))])
        w = np.zeros(z.shape[1])
        penalty = ridge * len(y) * np.eye(z.shape[1])
        penalty[-1, -1] = 0.0
        for _ in range(iterations):
            p = special.expit(z @ w)
            grad = z.T @ (p - y) + penalty @ w
            hess = np.einsum("ni,nj->ij", z * (p * (1 - p))[:, None], z) + penalty + 1e-9 * np.eye(z.shape[1])
            step = np.linalg.solve(hess, grad)
            w -= step
            if np.max(np.abs(step)) < 1e-8:
                break
        return cls(tuple(map(float, w[:-1])), float(w[-1]), tuple(map(float, mean)), tuple(map(float, scale)), nan_columns)


@dataclasses.dataclass(frozen=True)
class Feature:
    """A scalar statistic of an output row: ``coord`` j, ``sum``, ``max``, ``min``, ``nan_count``,
    ``argmax`` (−1 if all ⊥), a learned ``score``, or a bit feature of coordinate j: ``ulp``,
    ``lowbits``, ``lattice`` (relative to ``centre``, the query answer of one input)."""

    kind: str
    index: int = -1
    score: LinearScore | None = None
    centre: float | None = None

    def __call__(self, outputs: np.ndarray, rows: "RowStats | None" = None) -> np.ndarray:
        if self.kind == "coord":
            return outputs[:, self.index]
        if self.kind == "ulp":
            return ulp_code(outputs[:, self.index])
        if self.kind == "lowbits":
            return low_bits(outputs[:, self.index])
        if self.kind == "lattice":
            return difference_granularity(outputs[:, self.index], float(self.centre))
        rows = RowStats(outputs) if rows is None else rows
        if self.kind == "score":
            assert self.score is not None
            return self.score(outputs, rows)
        if self.kind == "nan_count":
            return rows.nan.sum(axis=1).astype(float)
        if self.kind == "sum":
            return np.where(rows.allnan, np.nan, rows.sum)
        if self.kind == "max":
            return np.where(rows.allnan, np.nan, rows.max)
        if self.kind == "min":
            return np.where(rows.allnan, np.nan, rows.min)
        if self.kind == "argmax":
            return np.where(rows.allnan, -1.0, np.argmax(rows.ninf_filled, axis=1).astype(float))
        raise ValueError(f"unknown feature kind {self.kind!r}")

    def describe(self) -> str:
        if self.kind == "coord":
            return f"output[{self.index}]"
        if self.kind == "ulp":
            return f"ulp grid of output[{self.index}] (sign, binade, zero low mantissa bits)"
        if self.kind == "lowbits":
            return f"last 4 significand bits of output[{self.index}]"
        if self.kind == "lattice":
            return f"lattice of output[{self.index}] - {self.centre!r} (the query answer): largest 2^t dividing it"
        if self.kind == "score":
            return "learned logistic score"
        return f"{self.kind}(output)"


def _bin_index(values: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """Bin ``i`` = values in ``(edges[i-1], edges[i]]``; NaN gets the last bin ``len(edges) + 1``."""
    idx = np.searchsorted(edges, values, side="left")
    return np.where(np.isnan(values), len(edges) + 1, idx)


@dataclasses.dataclass(frozen=True)
class FeatureSetEvent:
    """``{x : bin(feature(x)) ∈ bins}`` where bins are cut at ``edges`` (NaN has its own bin)."""

    feature: Feature
    edges: tuple[float, ...]
    bins: tuple[int, ...]
    shape: str

    def evaluate(self, outputs: np.ndarray, cache: dict[Any, np.ndarray] | None = None) -> np.ndarray:
        cache = {} if cache is None else cache
        if self.feature not in cache:
            rows = cache.setdefault("rows", RowStats(outputs))
            cache[self.feature] = self.feature(outputs, rows)
        values = cache[self.feature]
        nan_bin = len(self.edges) + 1
        finite = sorted(b for b in self.bins if b != nan_bin)
        if finite and finite[-1] - finite[0] == len(finite) - 1:  # one interval: two comparisons, no binning
            lo = -math.inf if finite[0] == 0 else self.edges[finite[0] - 1]
            hi = math.inf if finite[-1] == len(self.edges) else self.edges[finite[-1]]
            inside = (values > lo) & (values <= hi) if lo > -math.inf else values <= hi
            return inside | np.isnan(values) if nan_bin in self.bins else inside
        member = np.zeros(len(self.edges) + 2, dtype=bool)
        member[list(self.bins)] = True
        return member[_bin_index(values, np.asarray(self.edges))]

    def describe(self) -> dict[str, Any]:
        edges = np.asarray(self.edges)
        nan_bin = len(edges) + 1
        intervals = []
        for b in sorted(self.bins):
            if b == nan_bin:
                intervals.append("⊥/NaN")
                continue
            lo = -math.inf if b == 0 else float(edges[b - 1])
            hi = math.inf if b == len(edges) else float(edges[b])
            intervals.append([lo, hi])
        merged: list[Any] = []
        for iv in intervals:
            if merged and isinstance(iv, list) and isinstance(merged[-1], list) and merged[-1][1] == iv[0]:
                merged[-1][1] = iv[1]
            else:
                merged.append(iv)
        if self.feature.kind == "ulp":  # codes are not ordered values: name the grids
            codes = [edges[b] for b in sorted(self.bins) if 0 <= b < len(edges)]
            return {"family": "float bits", "feature": self.feature.describe(), "shape": self.shape,
                    "set": [describe_ulp_code(c) for c in codes][:12], "codes": len(codes)}
        if self.feature.kind == "lattice":  # 2-adic valuations: name the lattices c + 2^t Z
            codes = [edges[b] for b in sorted(self.bins) if 0 <= b < len(edges)]
            return {"family": "float lattice", "feature": self.feature.describe(), "shape": self.shape,
                    "set": [f"output - {self.feature.centre!r} exactly " + ("0" if c >= 2048 else f"odd * 2^{int(c)}")
                            for c in codes][:12], "codes": len(codes)}
        return {"family": "feature", "feature": self.feature.describe(), "shape": self.shape,
                "set": [iv if isinstance(iv, str) else f"({iv[0]:.6g}, {iv[1]:.6g}]" for iv in merged][:12]}


@dataclasses.dataclass(frozen=True)
class PatternSetEvent:
    """``{x : row x is one of the exact output patterns}`` (matched by :func:`row_hash`)."""

    keys: tuple[int, ...]
    examples: tuple[tuple[float, ...], ...]
    shape: str

    def evaluate(self, outputs: np.ndarray, cache: dict[Any, np.ndarray] | None = None) -> np.ndarray:
        cache = {} if cache is None else cache
        if "row_hash" not in cache:
            cache["row_hash"] = row_hash(outputs)
        return np.isin(cache["row_hash"], np.asarray(self.keys, dtype=np.uint64))

    def describe(self) -> dict[str, Any]:
        return {"family": "pattern", "shape": self.shape, "patterns": len(self.keys),
                "examples": [["⊥" if math.isnan(v) else v for v in row] for row in self.examples]}


@dataclasses.dataclass(frozen=True)
class Candidate:
    """An event, the pair it was found on, and which input plays the role of D in the bound.

    ``counts = (a, na, b, nb)``: the selection counts of the event on the numerator input
    (``a`` of ``na``) and on the denominator input (``b`` of ``nb``), used to plan the
    confirmation (:func:`dpkit.audit.statistics.samples_to_refute`), never in a bound.
    """

    pair_index: int
    event: FeatureSetEvent | PatternSetEvent
    reverse: bool
    predicted: float
    counts: tuple[int, int, int, int] = (0, 0, 0, 0)


_SHRINK = 1.0
_RICHER, _NEAR_TIE = 4.0, 0.9  # see _picks


def shrunk_frequencies(a: np.ndarray, na: int, b: np.ndarray, nb: int,
                       shrink: float = _SHRINK) -> tuple[np.ndarray, np.ndarray]:
    """Selection frequencies shrunk by one (Poisson) standard deviation against the event (the
    winner's curse of ranking many events; the final choice is made on held-out validation
    counts, see :func:`dpkit.audit.audit`)."""
    return (np.maximum(a - shrink * np.sqrt(a), 0.0) / na,
            (b + 1.0 + shrink * np.sqrt(b + 1.0)) / nb)


def _predicted_bound(a: np.ndarray, na: int, b: np.ndarray, nb: int, m: int, z: float, delta: float,
                     shrink: float = _SHRINK) -> np.ndarray:
    """Heuristic ε bound expected on a fresh sample of ``m`` per input (ranking only, never reported).

    Shrunk selection frequencies give expected Poisson counts ``x1 = m p1`` (less the δ mass
    ``m δ`` and ``z√(m δ)`` of its allowance) and ``x2 = m p2``; the confirmation's conditional
    Clopper–Pearson bound on ``x1/(x1 + x2)`` (:func:`dpkit.audit.statistics.poisson_epsilon_lower_bound`)
    is approximated by its Wilson score bound, in logit form. ``z`` is the two-sided Bonferroni
    quantile ``Φ⁻¹(1 − α/(2K))`` the search uses; the one-sided quantile of the whole level α/K
    follows from it.
    """
    p1, p2 = shrunk_frequencies(a, na, b, nb, shrink)
    p2 = np.minimum(p2, 1.0)
    z1 = float(-special.ndtri(min(2.0 * special.ndtr(-z), 0.5)))
    x1 = m * p1 - (m * delta + z1 * math.sqrt(m * delta) if delta > 0 else 0.0)
    x2 = m * p2
    with np.errstate(divide="ignore", invalid="ignore"):
        spread = z1 * np.sqrt(np.maximum(x1, 0.0) * x2 / np.maximum(x1 + x2, 1e-300) + z1 * z1 / 4)
        low = x1 + z1 * z1 / 2 - spread
        return np.where((x1 > 0) & (low > 0), np.log(np.maximum(low, 1e-300)) - np.log(x2 + z1 * z1 / 2 + spread),
                        -np.inf)


def _predicted_mu(a: np.ndarray, na: int, b: np.ndarray, nb: int, m: int, z: float, delta: float,
                  shrink: float = _SHRINK) -> np.ndarray:
    """Heuristic μ-GDP bound ``Φ⁻¹(p1_lower) − Φ⁻¹(p2_upper)`` expected on ``m`` fresh outputs per input
    (ranking only; see :mod:`dpkit.audit.curve`)."""
    p1, p2 = shrunk_frequencies(a, na, b, nb, shrink)
    p2 = np.minimum(p2, 1.0)
    lo = np.clip(p1 - z * np.sqrt(p1 * (1 - p1) / m), 0.0, 1.0)
    up = np.clip(p2 + z * np.sqrt(p2 * (1 - p2) / m) + z * z / m, 0.0, 1.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        mu = special.ndtri(lo) - special.ndtri(up)
    return np.where(np.isfinite(mu), mu, -np.inf)


_OBJECTIVES = {"epsilon": _predicted_bound, "mu": _predicted_mu}


def predicted_bound(objective: str, a: Any, na: int, b: Any, nb: int, *, confirm_size: int, z: float,
                    delta: float, shrink: float = _SHRINK) -> np.ndarray:
    """The heuristic bound (``objective="epsilon"``: ε; ``"mu"``: μ-GDP) expected on a confirmation
    of ``confirm_size`` outputs per input from counts ``a`` of ``na`` (numerator input) and ``b``
    of ``nb`` (denominator input), shrunk by ``shrink`` standard deviations against the event
    (0 for held-out counts of a few events); for ranking only, never reported."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    return _OBJECTIVES[objective](a, na, b, nb, confirm_size, z, delta, shrink)


def _best_prefixes(h1: np.ndarray, h2: np.ndarray, n1: int, n2: int, predict: Any, n_ordered: int, top: int,
                   ratio_sets: bool = True) -> list[tuple[float, np.ndarray, bool, str, tuple[int, int, int, int]]]:
    """Best unions of codes: prefixes in likelihood-ratio order (``ratio_sets``), and thresholds
    over the first ``n_ordered`` codes (the finite bins of a feature, in increasing order), with
    or without the ⊥/NaN code (the last one) added. ``predict(a, na, b, nb)`` scores them.

    Likelihood-ratio sets are only offered for discrete codes: over fine bins of a continuous
    feature they fit the noise of the selection sample (scattered bins with a few counts). The
    codes are ordered by their ratio of shrunk frequencies (:func:`shrunk_frequencies`), not the
    raw one: a rare code with 5 outputs on one input and none on the other would otherwise lead
    the order and a set of such codes, lucky on the selection sample, win it.
    """
    out = []
    codes = np.arange(len(h1))
    for reverse in (False, True):
        a, na, b, nb = (h2, n2, h1, n1) if reverse else (h1, n1, h2, n2)
        orders = []
        if ratio_sets:
            p1, p2 = shrunk_frequencies(a, na, b, nb)  # rank codes by shrunk ratio: raw ratios of rare codes fit noise
            ratio = p1 / p2
            keep = codes[a > 0]
            orders.append(("likelihood-ratio set", keep[np.argsort(-ratio[keep], kind="stable")]))
        if n_ordered > 1:
            lower, upper = codes[: n_ordered - 1], codes[n_ordered - 1 : 0 : -1]
            orders += [("lower threshold", lower), ("upper threshold", upper)]
            if n_ordered < len(codes) and a[-1] > 0:
                nan = codes[-1:]
                orders += [("⊥ or lower threshold", np.concatenate([nan, lower])),
                           ("⊥ or upper threshold", np.concatenate([nan, upper]))]
        for shape, order in orders:
            if len(order) == 0:
                continue
            ca, cb = np.cumsum(a[order]), np.cumsum(b[order])
            pred = predict(ca, na, cb, nb)
            for i in _picks(pred, cb, top):
                out.append((float(pred[i]), order[: i + 1], reverse, shape, (int(ca[i]), na, int(cb[i]), nb)))
    return out


def _picks(pred: np.ndarray, denominator: np.ndarray, top: int) -> list[int]:
    """Indices of the prefixes offered from one order: the ``top`` best by ``pred``, then, in turn, the
    best of those whose denominator count is at least ``_RICHER`` times that of the last one offered,
    while it is predicted at ``_NEAR_TIE`` of the best or more. The ``top`` best are near neighbours
    of one prefix; when a rare one won by the luck of the selection (a tail threshold of the
    Poisson-subsampled mean at 10⁷ samples: 491 vs 246 selection outputs, a ratio of e^0.69 on a
    plateau of e^0.49), its neighbours share that luck, and the validation (:func:`dpkit.audit.audit`)
    can only pick among them unless near-tied events with many more outputs are offered too."""
    order = np.argsort(-pred, kind="stable")
    ranked = order[np.isfinite(pred[order])]
    chosen = [int(i) for i in ranked[:top]]
    if not chosen:
        return chosen
    near = ranked[pred[ranked] >= _NEAR_TIE * pred[chosen[0]]]
    floor = _RICHER * max(float(denominator[chosen[0]]), 1.0)
    while True:  # each tier holds at least _RICHER times the outputs of the previous one: at most log_4 n tiers
        tier = near[denominator[near] >= floor]
        if tier.size == 0:
            break
        chosen += [int(tier[0])] if int(tier[0]) not in chosen else []
        floor = _RICHER * max(float(denominator[tier[0]]), 1.0)
    return chosen


def _edges(values1: np.ndarray, values2: np.ndarray) -> np.ndarray:
    pooled = np.concatenate([values1, values2])
    pooled = pooled[np.isfinite(pooled)]
    if pooled.size == 0:
        return np.array([0.0])
    uniq = np.unique(pooled)
    if uniq.size <= _DISCRETE_VALUES:
        return uniq
    tail = np.geomspace(1e-5, 0.05, 30)
    levels = np.unique(np.concatenate([tail, np.linspace(0.0, 1.0, 121), 1.0 - tail]))
    pooled = np.sort(pooled)
    qs = pooled[np.round(levels * (pooled.size - 1)).astype(int)]  # empirical quantiles
    extremes = []
    for v in (values1, values2):
        v = v[np.isfinite(v)]
        if v.size:
            extremes += [np.nextafter(v.min(), -np.inf), v.min(), v.max()]
    return np.unique(np.concatenate([qs, extremes]))


def _has_fractions(first: np.ndarray, second: np.ndarray) -> bool:
    """Whether some finite output is not an integer: integer outputs have no float bits to compare
    (their exact patterns and thresholds are the events)."""
    x = np.concatenate([first.ravel(), second.ravel()])
    x = x[np.isfinite(x)]
    return bool(x.size) and bool(np.any(x != np.round(x)))


def _codes(values1: np.ndarray, values2: np.ndarray) -> np.ndarray:
    """Bin edges of a discrete bit feature: every code seen (at most 4096, evenly thinned; an unseen
    code falls into the bin of the next larger edge, so events stay fixed sets)."""
    pooled = np.concatenate([values1, values2])
    uniq = np.unique(pooled[np.isfinite(pooled)])
    if uniq.size == 0:
        return np.array([0.0])
    if uniq.size > _MAX_BIT_CODES:
        uniq = uniq[np.linspace(0, uniq.size - 1, _MAX_BIT_CODES).astype(int)]
    return uniq


@dataclasses.dataclass
class Tally:
    """Counts of one input's outputs in every bin of every feature of a :class:`Families`, and
    in every exact output pattern (``patterns`` is ``None`` once more than 4096 distinct
    patterns were seen: the outputs are not discrete). Tallies of batches add up, so a
    selection sample can be streamed in constant memory."""

    n: int
    bins: list[np.ndarray]
    patterns: dict[int, int] | None
    examples: dict[int, tuple[float, ...]]

    def merge(self, other: "Tally") -> "Tally":
        """The tally of both batches together."""
        bins = [x + y for x, y in zip(self.bins, other.bins)]
        if self.patterns is None or other.patterns is None:
            return Tally(self.n + other.n, bins, None, {})
        patterns = dict(self.patterns)
        for key, count in other.patterns.items():
            patterns[key] = patterns.get(key, 0) + count
        if len(patterns) > _MAX_PATTERNS:
            return Tally(self.n + other.n, bins, None, {})
        examples = {**other.examples, **self.examples}
        return Tally(self.n + other.n, bins, patterns, examples)


def _lattice_features(centres: tuple[np.ndarray, ...], coords: int) -> list[Feature]:
    """``lattice`` features of the first ``coords`` coordinates, one per distinct finite centre."""
    out: list[Feature] = []
    for j in range(coords):
        seen: list[float] = []
        for centre in centres:
            c = np.asarray(centre, dtype=float).reshape(-1)
            if c.size > j and math.isfinite(c[j]) and float(c[j]) not in seen:
                seen.append(float(c[j]))
                out.append(Feature("lattice", j, centre=float(c[j])))
    return out


@dataclasses.dataclass(frozen=True)
class Families:
    """The event families of one pair, fixed on a screening sample: the features and their bin
    edges (quantiles of the screening sample), including a logistic score fitted on it."""

    features: tuple[Feature, ...]
    edges: tuple[np.ndarray, ...]
    patterns: bool = True

    @classmethod
    def from_sample(cls, first: np.ndarray, second: np.ndarray, bits: bool = False,
                    centres: tuple[np.ndarray, ...] = ()) -> "Families":
        """Features of ``(n, d)`` outputs: each coordinate (at most 32), and for vectors the sum,
        max, min, arg-max, number of ⊥ (if any) and a logistic score fitted on both samples; with
        ``bits`` and non-integer outputs, the float-bit features of the first 4 coordinates, and
        the lattice relative to each distinct finite centre of ``centres`` (the query answers of
        the pair's inputs, one value per output coordinate)."""
        d = first.shape[1]
        features = [Feature("coord", j) for j in range(min(d, _MAX_COORDS))]
        if d > 1:
            features += [Feature(k) for k in ("sum", "max", "min", "argmax")]
            if np.isnan(first).any() or np.isnan(second).any():
                features.append(Feature("nan_count"))
            features.append(Feature("score", score=LinearScore.fit(first, second)))
        if bits and _has_fractions(first, second):
            features += [Feature(kind, j) for j in range(min(d, _BIT_COORDS)) for kind in ("ulp", "lowbits")]
            features += _lattice_features(centres, min(d, _BIT_COORDS))
        rows1, rows2 = RowStats(first), RowStats(second)
        edges = tuple((_codes if f.kind in BIT_KINDS else _edges)(f(first, rows1), f(second, rows2))
                      for f in features)
        return cls(tuple(features), edges)

    def narrowed(self, features: set[Feature], patterns: bool) -> "Families":
        """Only the given features (and patterns if ``patterns``): refinement tallies what the
        screening found promising."""
        keep = [i for i, f in enumerate(self.features) if f in features]
        return Families(tuple(self.features[i] for i in keep), tuple(self.edges[i] for i in keep), patterns)

    def restrict(self, tally: Tally, narrower: "Families") -> Tally:
        """A tally of these families, cut down to the features of ``narrower``."""
        bins = [b for f, b in zip(self.features, tally.bins) if f in set(narrower.features)]
        if narrower.patterns:
            return Tally(tally.n, bins, tally.patterns, tally.examples)
        return Tally(tally.n, bins, None, {})

    def tally(self, outputs: np.ndarray) -> Tally:
        """Bin and pattern counts of one batch of outputs."""
        rows = RowStats(outputs)
        bins = [np.bincount(_bin_index(f(outputs, rows), e), minlength=len(e) + 2)
                for f, e in zip(self.features, self.edges)]
        if not self.patterns:
            return Tally(len(outputs), bins, None, {})
        keys, first_row, counts = np.unique(row_hash(outputs), return_index=True, return_counts=True)
        if len(keys) > _MAX_PATTERNS:
            return Tally(len(outputs), bins, None, {})
        patterns = dict(zip(map(int, keys), map(int, counts)))
        examples = {int(k): tuple(map(float, outputs[r])) for k, r in zip(keys, first_row)}
        return Tally(len(outputs), bins, patterns, examples)


def candidates_from_tallies(families: Families, first: Tally, second: Tally, pair_index: int, *, delta: float,
                            confirm_size: int, z: float, top: int = 3, objective: str = "epsilon") -> list[Candidate]:
    """Every event family on one pair's selection tallies, scored by the bound expected on a
    confirmation sample of ``confirm_size`` outputs per input (``objective="epsilon"``: the
    ε bound; ``"mu"``: the μ-GDP bound of :mod:`dpkit.audit.curve`)."""
    n1, n2 = first.n, second.n
    base = _OBJECTIVES[objective]

    def predict(a: np.ndarray, na: int, b: np.ndarray, nb: int) -> np.ndarray:
        return base(a, na, b, nb, confirm_size, z, delta)

    found: list[Candidate] = []

    def add(items: list[Any], make: Any) -> None:
        for pred, codes, reverse, shape, counts in items:
            found.append(Candidate(pair_index, make(codes, shape), reverse, pred, counts))

    if first.patterns is not None and second.patterns is not None:
        keys = np.array(sorted(set(first.patterns) | set(second.patterns)), dtype=np.uint64)
        if len(keys) <= min(_MAX_PATTERNS, (n1 + n2) // 10):  # discrete outputs: patterns repeat
            c1 = np.array([first.patterns.get(int(k), 0) for k in keys])
            c2 = np.array([second.patterns.get(int(k), 0) for k in keys])
            examples = {**second.examples, **first.examples}

            def make_pattern(codes: np.ndarray, shape: str) -> PatternSetEvent:
                return PatternSetEvent(tuple(int(keys[c]) for c in codes),
                                       tuple(examples[int(keys[c])] for c in codes[:5]), shape)

            add(_best_prefixes(c1, c2, n1, n2, predict, 0, top), make_pattern)
    for feature, edges, b1, b2 in zip(families.features, families.edges, first.bins, second.bins):
        discrete = (len(edges) <= _DISCRETE_VALUES and feature.kind != "score") or feature.kind in BIT_KINDS
        items = _best_prefixes(b1, b2, n1, n2, predict, len(edges) + 1, top, ratio_sets=discrete)
        edge_t = tuple(map(float, edges))
        add(items, lambda codes, shape, f=feature, e=edge_t: FeatureSetEvent(f, e, tuple(map(int, codes)), shape))
    return found


def select_candidates(first: np.ndarray, second: np.ndarray, pair_index: int, *, delta: float,
                      confirm_size: int, z: float, top: int = 3, objective: str = "epsilon") -> list[Candidate]:
    """Every event family on one pair's in-memory selection sample, ranked by predicted confirmed bound."""
    families = Families.from_sample(first, second)
    return candidates_from_tallies(families, families.tally(first), families.tally(second), pair_index,
                                   delta=delta, confirm_size=confirm_size, z=z, top=top, objective=objective)
