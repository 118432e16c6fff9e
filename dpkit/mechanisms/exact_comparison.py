"""Exact comparisons and argmax of noisy reals: the sparse vector technique and report-noisy-max as executed.

The sparse vector technique answers ⊤ iff ``q_i + ν_i ≥ T + ρ`` (Dwork & Roth 2014, Alg. 1 and 2; Lyu, Su &
Li 2017, Alg. 1) and report-noisy-max returns ``argmax_i u_i + Y_i`` (Dwork & Roth 2014, Claim 3.9). Their
guarantees are proved for real-valued noise; computed in doubles, the comparison sees rounded values, so the
output law is not the one analysed (Mironov 2012 shows what rounded noise can reveal). Here every outcome
is decided on the exact reals, vectorised, at one to three times the cost of the float code.

**Noise as uniforms with intervals.** Each unit noise ``Y`` (scale 1) is a deterministic function of a
uniform ``U``: exponential ``−ln U``, Laplace a sign bit times ``−ln U``, Gumbel ``−ln(−ln U)``, Gaussian
Box & Muller (1958) (``√(−2 ln U₁)·cos 2πU₂`` and ``·sin``, an independent pair). numpy draws the leading 53 bits of each ``U`` (52 and the sign for
Laplace), which place ``U`` in an interval; the remaining bits are drawn only if needed (:class:`UnitNoise`).

**Fast path.** The double estimate ``Ŷ`` comes with a rigorous bound on ``|Y − Ŷ|`` that holds for every
``U`` in its interval and for a relative error of up to ``2⁻⁴⁰`` in each of numpy's ``log``, ``sqrt``,
``cos`` and ``sin`` (IEEE 754 requires ``sqrt`` correctly rounded; numpy documents at most 4 ulp, 2⁻⁵⁰, for
the others). For the bulk of the draws (``Ŷ`` away from the singular ends of the transform, all but about
one draw in 10⁶) the bound is the constant :data:`UNIT_BOUND` = 2⁻³⁰; the others get their own bound. The
comparison's and the argmax's own rounding (at most a few operations, each with relative error 2⁻⁵³ under
round-to-nearest, plus 2⁻¹⁰⁷⁵ absolute for subnormals) is bounded on top, and every bound is computed
rounded up. Where the bounds decide the outcome (all but about one comparison in 10⁸), it is the
exact-real outcome.

**Slow path.** Elsewhere more bits of the *same* uniforms are drawn (32 at a time) and the outcome is
decided in mpmath's interval arithmetic (``mpmath.iv``, whose enclosures are rigorous), at a precision
that grows with the bits drawn, until the enclosures separate (ties have probability 0); a generator whose
bits still decide nothing after :data:`~dpkit.mechanisms.float_safe.MAX_REFINEMENTS` refinements (probability
below 2⁻²⁵⁰ for a random one) raises rather than looping. A noise that takes part in several comparisons (the threshold noise ``ρ`` of a run,
compared with every query; the two halves of a Box–Muller pair) keeps one refinable state, so every
comparison it takes part in is decided for the same real value.

So every discrete outcome is a deterministic function of the exactly uniform ``U``s: the joint law of the
outputs is exactly that of the exact-real mechanism, and its privacy events apply as they are. The same
``rng`` gives the same outputs. What the proof assumes: numpy's ``Generator.random`` returns ``k·2⁻⁵³`` with
``k`` uniform (ideal random bits), the libm allowance above, IEEE 754 double arithmetic with
round-to-nearest (numpy's default), and mpmath's interval arithmetic being correct.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any, Callable, Sequence

import mpmath
import numpy as np

from dpkit.mechanisms.float_safe import MAX_REFINEMENTS, refine_uniform, undecided

__all__ = ["NOISES", "UNIT_BOUND", "UnitNoise", "NoiseVector", "decide_above", "noisy_argmax",
           "lattice_value"]

NOISES = ("laplace", "exponential", "gumbel", "gaussian")

UNIT_BOUND = 2.0**-30
"""``|Y − Ŷ|`` for every draw marked ``inside`` (see :class:`UnitNoise`)."""

_INSIDE_MAX = 14.0         # |Ŷ| ≤ 14 for every draw inside
_BITS52 = 2.0**-52
_BITS53 = 2.0**-53
_LIBM = 2.0**-39           # twice the 2⁻⁴⁰ allowance per libm call: covers 1/(1 − 2⁻⁴⁰) factors
_ROUND = 2.0**-49          # rounding of the comparison's or argmax's few operations, relative to their terms
_TINY = 2.0**-1060         # absolute rounding of those operations near the subnormal range
_UP = 1.0 + 2.0**-44       # a bound computed in a few rounded operations, times this, is an upper bound


class UnitNoise:
    """``count`` i.i.d. unit noises of one kind (:data:`NOISES`), drawn as the leading bits of their uniforms.

    ``estimate`` holds the doubles ``Ŷ``; ``inside`` marks the draws with ``|Y − Ŷ| ≤`` :data:`UNIT_BOUND`
    and ``|Ŷ| ≤ 14`` (all but about 10⁻⁶ of them); :meth:`error` bounds ``|Y − Ŷ|`` for any draw (``inf``
    where the leading bits do not bound ``Y``). :meth:`enclosure` and :meth:`refine` are the slow path:
    an interval that contains ``Y`` for sure, and 32 more bits of its uniforms, drawn from the same
    ``generator`` and kept, so that every later enclosure is of the same real ``Y``.

    Bounds (``w`` = 2⁻⁵³, 2⁻⁵² for Laplace; ``U ∈ (t − w, t]`` with ``t`` exact; ``L̂``, ``R̂²`` the
    estimates of ``−ln U``, ``−2 ln U₁``, each within a relative 2⁻⁴⁰ of ``−ln t``, ``−2 ln t``):

    * exponential, Laplace: ``|E − Ê| ≤ w/(t − w) + 2⁻³⁹Ê``; inside: ``Ê ≤ 13.8``, where ``t > 2⁻²⁰``.
    * Gumbel: ``|L − L̂| ≤ e_L = w/(t − w) + 2⁻³⁹L̂`` and ``|Y − Ŷ| ≤ e_L/(L̂ − e_L) + 2⁻³⁹|Ŷ|``;
      inside: ``2⁻¹⁹ ≤ L̂ ≤ 13.8``, where ``(t − w)L̂ ≥ 2⁻¹⁹(1 − 2⁻¹⁰)``, so the bound is below 2⁻³².
    * Gaussian: ``R² ≥ −2 ln t`` is within ``D = 2⁻³⁹R̂² + 2w/(t − w)`` of ``R̂²``, so ``R`` within
      ``D/(2R̂)·(1 + 2⁻³⁷)`` of ``R̂``; the angle, π's rounding, ``cos``/``sin`` and the product add at most
      ``(R̂ + 1)·2⁻³⁸``; inside: ``2⁻¹⁸ ≤ R̂² ≤ 27.6``, where the sum is below 2⁻³³.

    >>> noise = UnitNoise("laplace", 4, np.random.default_rng(0))
    >>> noise.estimate.shape, bool(noise.inside.all()), float(noise.error(np.arange(4)).max()) == UNIT_BOUND
    ((4,), True, True)
    """

    def __init__(self, kind: str, count: int, generator: np.random.Generator) -> None:
        if kind not in NOISES:
            raise ValueError(f"kind must be one of {NOISES}, got kind={kind!r}")
        self.kind, self.count, self._generator = kind, count, generator
        self._states: dict[int, list[list[int]]] = {}
        with np.errstate(divide="ignore", invalid="ignore"):
            if kind == "gaussian":
                self._draw_gaussian(count, generator)
            else:
                self._draw_logarithmic(kind, count, generator)

    def _draw_logarithmic(self, kind: str, count: int, generator: np.random.Generator) -> None:
        draws = generator.random(count)
        width = _BITS52 if kind == "laplace" else _BITS53
        if kind == "laplace":
            negative = draws >= 0.5
            top = draws * 2.0
            top -= negative
            np.subtract(1.0, top, out=top)  # U ∈ (top − 2⁻⁵², top], exact
        else:
            top = 1.0 - draws  # U ∈ (top − 2⁻⁵³, top], exact
        magnitude = np.log(top)
        np.negative(magnitude, out=magnitude)  # −ln U
        if kind == "gumbel":
            inside = (magnitude >= 2.0**-19) & (magnitude <= 13.8)
            estimate = np.log(magnitude)
            np.negative(estimate, out=estimate)
        else:
            inside = magnitude <= 13.8
            estimate = magnitude
        outside = np.flatnonzero(~inside)
        # −ln U moves by at most w/(t − w) over the interval (inf where t = w)
        error = width / (top[outside] - width) + _LIBM * magnitude[outside]
        if kind == "gumbel":
            low = magnitude[outside] - error
            error = np.where(low > 0.0, error / low, np.inf) + _LIBM * np.abs(estimate[outside])
        elif kind == "laplace":
            np.negative(estimate, out=estimate, where=negative)
        self._draws, self._width = draws, width
        self.estimate, self.inside = estimate, inside
        self._outside, self._outside_error = outside, error * _UP

    def _draw_gaussian(self, count: int, generator: np.random.Generator) -> None:
        pairs = (count + 1) // 2
        first, second = generator.random(pairs), generator.random(pairs)
        top = 1.0 - first  # U₁ ∈ (top − 2⁻⁵³, top], exact
        square = np.log(top)
        square *= -2.0
        radius = np.sqrt(square)
        angle = second * (2.0 * math.pi)
        normal = np.empty(2 * pairs)
        np.cos(angle, out=normal[:pairs])
        np.sin(angle, out=normal[pairs:])
        normal[:pairs] *= radius
        normal[pairs:] *= radius
        inside = (square >= 2.0**-18) & (square <= 27.6)
        outside_pairs = np.flatnonzero(~inside)
        spread = _LIBM * square[outside_pairs] + (2.0 * _BITS53) / (top[outside_pairs] - _BITS53)
        near = radius[outside_pairs]
        pair_error = np.where(near > 0.0, spread / (2.0 * near) * (1.0 + 2.0**-37) + (near + 1.0) * 2.0**-38,
                              np.inf)  # R̂ = ±0 (U₁'s interval reaches 1) bounds nothing
        outside = np.concatenate([outside_pairs, outside_pairs + pairs])
        keep = outside < count
        self._first, self._second, self._pairs = first, second, pairs
        self.estimate, self.inside = normal[:count], np.concatenate([inside, inside])[:count]
        self._outside = outside[keep]
        self._outside_error = np.concatenate([pair_error, pair_error])[keep] * _UP
        order = np.argsort(self._outside)
        self._outside, self._outside_error = self._outside[order], self._outside_error[order]

    def error(self, index: np.ndarray) -> np.ndarray:
        """Rigorous bounds on ``|Y − Ŷ|`` for the draws ``index`` (``inf`` where undecidable)."""
        index = np.asarray(index, dtype=np.int64)
        out = np.full(index.shape, UNIT_BOUND)
        if self._outside.size:
            where = np.minimum(np.searchsorted(self._outside, index), self._outside.size - 1)
            hit = self._outside[where] == index
            out[hit] = self._outside_error[where[hit]]
        return out

    # ------------------------------------------------------------ the slow path

    def key(self, index: int) -> int:
        """The uniforms' key of draw ``index``: the two halves of a Box–Muller pair share theirs."""
        return index % self._pairs if self.kind == "gaussian" else index

    def _state(self, index: int) -> list[list[int]]:
        """``[N, B]`` per uniform of draw ``index``: ``U ∈ [N, N + 1]·2⁻ᴮ`` (shared by a Box–Muller pair)."""
        key = self.key(index)
        state = self._states.get(key)
        if state is None:
            if self.kind == "gaussian":
                state = [[round((1.0 - float(self._first[key])) / _BITS53) - 1, 53],
                         [round(float(self._second[key]) / _BITS53), 53]]
            else:
                draw = float(self._draws[key])
                top = 1.0 - (2.0 * draw - (draw >= 0.5)) if self.kind == "laplace" else 1.0 - draw
                state = [[round(top / self._width) - 1, 52 if self.kind == "laplace" else 53]]
            self._states[key] = state
        return state

    def bits(self, index: int) -> int:
        """The most bits drawn so far of any uniform of draw ``index``."""
        return max(bits for _, bits in self._state(index))

    def refine(self, index: int) -> None:
        """Draw 32 more bits of every uniform of draw ``index`` (kept for all later enclosures)."""
        for entry in self._state(index):
            refine_uniform(entry, self._generator)

    def enclosure(self, index: int) -> Any:
        """An ``mpmath.iv`` interval that contains ``Y`` for every ``U`` consistent with the bits drawn
        (at the current ``mpmath.iv.prec``, which must exceed the bits drawn); may be infinite."""
        iv = mpmath.iv
        u = [iv.mpf([mpmath.mpf((n, -bits)), mpmath.mpf((n + 1, -bits))]) for n, bits in self._state(index)]
        if self.kind == "gaussian":
            radius = iv.sqrt(-2 * iv.log(u[0]))
            angle = 2 * iv.pi * u[1]
            return radius * (iv.sin(angle) if index >= self._pairs else iv.cos(angle))
        magnitude = -iv.log(u[0])
        if self.kind == "gumbel":
            return -iv.log(magnitude)
        if self.kind == "laplace" and float(self._draws[index]) >= 0.5:
            return -magnitude
        return magnitude


class NoiseVector:
    """A vector of unit noises (one per run, e.g. each run's threshold noise), each a draw of some
    :class:`UnitNoise` block: :meth:`redraw` replaces some entries by fresh draws (a new threshold after a
    run ends) and keeps the others' refinable states.

    >>> thresholds = NoiseVector("laplace", 3, np.random.default_rng(0))
    >>> before = thresholds.estimate.copy()
    >>> thresholds.redraw(np.array([1]), np.random.default_rng(1))
    >>> bool(thresholds.estimate[0] == before[0]), bool(thresholds.estimate[1] == before[1])
    (True, False)
    """

    def __init__(self, kind: str, count: int, generator: np.random.Generator) -> None:
        block = UnitNoise(kind, count, generator)
        self.kind = kind
        self.estimate = block.estimate.copy()
        self.error = block.error(np.arange(count))
        self._blocks = [block]
        self._block = np.zeros(count, dtype=np.int64)
        self._element = np.arange(count)

    def __len__(self) -> int:
        return self.estimate.size

    def redraw(self, index: np.ndarray, generator: np.random.Generator) -> None:
        """Fresh draws for the entries ``index`` (in that order)."""
        if index.size == 0:
            return
        block = UnitNoise(self.kind, index.size, generator)
        self.estimate[index] = block.estimate
        self.error[index] = block.error(np.arange(index.size))
        self._block[index] = len(self._blocks)
        self._element[index] = np.arange(index.size)
        self._blocks.append(block)

    def source(self, entry: int) -> tuple[UnitNoise, int]:
        """The block and draw behind entry ``entry``."""
        return self._blocks[int(self._block[entry])], int(self._element[entry])


# ---------------------------------------------------------------- the sparse vector technique

def decide_above(queries: np.ndarray, threshold: float, query_noise: UnitNoise, query_scale: float,
                 threshold_noise: NoiseVector, threshold_scale: float,
                 unit: float | None = None) -> tuple[np.ndarray, np.ndarray | None]:
    """``q_i + b₂ν_ri ≥ T + b₁ρ_r`` decided exactly, for ``rows = len(threshold_noise)`` runs and the
    ``m`` queries ``queries``: ``query_noise`` holds ``rows·m`` unit draws ν (row-major), ``threshold_noise``
    the runs' ρ, shared by all ``m`` comparisons of a run. Returns a bool array (rows, m) and, when ``unit``
    (a power of two Λ) is given, the gaps rounded exactly to it: :func:`lattice_value` of
    ``⌊(q_i + b₂ν − T − b₁ρ)/Λ + ½⌋`` where ⊤ (NaN elsewhere).

    >>> rng = np.random.default_rng(0)
    >>> rho = NoiseVector("laplace", 2, rng)
    >>> above, _ = decide_above(np.array([-50.0, 50.0]), 0.0, UnitNoise("laplace", 4, rng), 1.0, rho, 1.0)
    >>> above.tolist()
    [[False, True], [False, True]]
    """
    rows, m = len(threshold_noise), queries.size
    with np.errstate(invalid="ignore", over="ignore"):  # inf and NaN (huge answers) only make bounds undecided
        offset = queries - threshold  # within 2⁻⁵³|offset| of q_i − T
        rho = threshold_noise.estimate * threshold_scale
        gap = query_noise.estimate.reshape(rows, m) * query_scale
        gap += offset
        gap -= rho[:, None]
        row_bound = (threshold_scale * threshold_noise.error + _ROUND * np.abs(rho)) * _UP
        column_bound = (_ROUND * np.abs(offset) + query_scale * (UNIT_BOUND + _ROUND * _INSIDE_MAX) + _TINY) * _UP
        sure = np.abs(gap) > row_bound[:, None] + column_bound
    sure &= query_noise.inside.reshape(rows, m)
    above = gap >= 0.0
    check = np.flatnonzero(~sure)
    if check.size:  # draws outside, or too close to call: each draw's own bound, then the slow path
        r, i = np.divmod(check, m)
        with np.errstate(invalid="ignore", over="ignore"):
            bound = (query_scale * query_noise.error(check) + threshold_scale * threshold_noise.error[r]
                     + _ROUND * (np.abs(offset[i]) + query_scale * np.abs(query_noise.estimate[check])
                                 + np.abs(rho[r])) + _TINY) * _UP
            late = check[~(np.abs(gap.reshape(-1)[check]) > bound)]
        for index in late:
            row, column = divmod(int(index), m)
            terms = [(query_scale, query_noise, int(index)), (-threshold_scale, *threshold_noise.source(row))]
            above[row, column] = _resolve([([float(queries[column]), -threshold], terms)], _sign)
    if unit is None:
        return above, None
    return above, _rounded_gaps(above, queries, threshold, query_noise, query_scale, threshold_noise,
                                threshold_scale, unit)


def _rounded_gaps(above: np.ndarray, queries: np.ndarray, threshold: float, query_noise: UnitNoise,
                  query_scale: float, threshold_noise: NoiseVector, threshold_scale: float,
                  unit: float) -> np.ndarray:
    """:func:`lattice_value` of ``⌊G/Λ + ½⌋`` for every ⊤ gap ``G`` (NaN elsewhere). ``(q_i − T)/Λ`` is
    split exactly into an integer ``n_i`` and ``f_i ∈ [−½, ½]`` (rounded to a double within 2⁻⁵⁵), so
    the fast path rounds ``f_i + (b₂ν − b₁ρ)/Λ`` only; ``|n_i| ≥ 2⁵³`` goes to the slow path."""
    rows, m = above.shape
    exact = [(Fraction(float(q)) - Fraction(threshold)) / Fraction(unit) for q in queries]
    whole = [round(a) for a in exact]
    fraction = np.array([float(a - n) for a, n in zip(exact, whole)])
    small = np.array([abs(n) < 2**53 for n in whole])
    centre = np.array([float(n) if abs(n) < 2**53 else 0.0 for n in whole])
    out = np.full((rows, m), np.nan)
    index = np.flatnonzero(above)
    r, i = np.divmod(index, m)
    up, down = query_scale / unit, threshold_scale / unit  # exact: Λ is a power of two
    with np.errstate(invalid="ignore", over="ignore"):
        nu = query_noise.estimate[index] * up
        rho = threshold_noise.estimate[r] * down
        value = fraction[i] + nu - rho
        bound = (2.0**-54 + up * query_noise.error(index) + down * threshold_noise.error[r]
                 + _ROUND * (np.abs(fraction[i]) + np.abs(nu) + np.abs(rho)) + _TINY) * _UP
        nearest = np.rint(value)
        sure = (np.abs(value - nearest) + bound < 0.5) & small[i]
    out.reshape(-1)[index[sure]] = (centre[i[sure]] + nearest[sure]) * unit  # one rounding of the integer m
    for k in np.flatnonzero(~sure):
        row, column = int(r[k]), int(i[k])
        terms = [(query_scale, query_noise, int(index[k])), (-threshold_scale, *threshold_noise.source(row))]
        units = _resolve([([float(queries[column]), -threshold], terms)], _nearest, unit)
        out[row, column] = lattice_value(units, unit)
    return out


def lattice_value(units: int, unit: float) -> float:
    """The double nearest ``units·unit`` (``±inf`` beyond the largest double): the one function of the
    exact integer by which every lattice value is released, on the fast path and the slow path alike.

    >>> lattice_value(3, 0.25), lattice_value(2**2000, 2.0**-16)
    (0.75, inf)
    """
    try:
        return float(Fraction(units) * Fraction(unit))
    except OverflowError:
        return math.inf if units > 0 else -math.inf


# ---------------------------------------------------------------- report-noisy-max

def noisy_argmax(scores: np.ndarray, scale: float, noise: UnitNoise) -> np.ndarray:
    """``argmax_i u_i + s·Y_ri`` decided exactly for every row ``r``: ``noise`` holds ``rows·m`` unit
    draws (row-major) for the ``m`` scores ``scores``. Ties have probability 0.

    >>> noise = UnitNoise("gumbel", 6, np.random.default_rng(0))
    >>> noisy_argmax(np.array([0.0, 40.0, 0.0]), 1.0, noise).tolist()
    [1, 1]
    """
    m = scores.size
    rows = noise.count // m
    with np.errstate(invalid="ignore", over="ignore"):
        value = noise.estimate.reshape(rows, m) * scale
        value += scores
        column_bound = (scale * UNIT_BOUND + _ROUND * (np.abs(scores) + scale * _INSIDE_MAX) + _TINY) * _UP
        best = np.argmax(value, axis=1)
        sure = _separated(value, column_bound, best)
    sure &= noise.inside.reshape(rows, m).all(axis=1)
    check = np.flatnonzero(~sure)
    if check.size:  # rows with a draw outside, or too close to call: each draw's own bound, then the slow path
        sub = value[check]
        index = (check[:, None] * m + np.arange(m)).reshape(-1)
        with np.errstate(invalid="ignore", over="ignore"):
            bound = ((scale * noise.error(index) + _ROUND * scale * np.abs(noise.estimate[index])).reshape(-1, m)
                     + _ROUND * np.abs(scores) + _TINY) * _UP
            late = ~_separated(sub, bound, best[check])
            low = sub[np.arange(check.size), best[check]] - bound[np.arange(check.size), best[check]]
            candidates = ~(sub + bound < low[:, None])  # the true maximum is among these (NaN: all)
        for k in np.flatnonzero(late):
            row = int(check[k])
            chosen = [int(c) for c in np.flatnonzero(candidates[k])] or list(range(m))
            values = [([float(scores[c])], [(scale, noise, row * m + c)]) for c in chosen]
            best[row] = chosen[_resolve(values, _largest)]
    return best


def _separated(value: np.ndarray, bound: np.ndarray, best: np.ndarray) -> np.ndarray:
    """Rows whose entry ``best`` is above every other entry for sure: ``value ± bound`` enclose the true
    values (``bound`` covers the rounding of the sums too), compared exactly."""
    rows = np.arange(value.shape[0])
    upper = value + bound
    lower = value[rows, best] - np.broadcast_to(bound, value.shape)[rows, best]
    upper[rows, best] = -np.inf
    return lower > upper.max(axis=1)


# ---------------------------------------------------------------- the slow path

def _sign(enclosures: list[Any]) -> bool | None:
    """``G ≥ 0`` once the enclosure of ``G`` excludes 0 (``G = 0`` has probability 0)."""
    (value,) = enclosures
    if value.a >= 0:
        return True
    if value.b < 0:
        return False
    return None


def _nearest(enclosures: list[Any]) -> int | None:
    """``⌊x + ½⌋`` once the enclosure of ``x`` lies between two rounding boundaries."""
    shifted = enclosures[0] + mpmath.iv.mpf(0.5)
    low, high = mpmath.floor(mpmath.mpf(shifted.a)), mpmath.floor(mpmath.mpf(shifted.b))
    return int(low) if low == high else None


def _largest(enclosures: list[Any]) -> int | None:
    """The position of the largest value once its enclosure lies above all the others'."""
    lows = [mpmath.mpf(v.a) for v in enclosures]
    best = max(range(len(lows)), key=lambda k: lows[k])
    if all(lows[best] > mpmath.mpf(v.b) for k, v in enumerate(enclosures) if k != best):
        return best
    return None


def _resolve(values: Sequence[tuple[list[float], list[tuple[float, UnitNoise, int]]]],
             decide: Callable[[list[Any]], Any], unit: float = 1.0) -> Any:
    """The outcome ``decide`` reads from enclosures of ``(Σ constants + Σ coefficient·Y)/unit`` for each
    entry of ``values`` (doubles, exact in mpmath); while it cannot, 32 more bits of every uniform involved
    are drawn, at most :data:`~dpkit.mechanisms.float_safe.MAX_REFINEMENTS` times. The precision exceeds
    the bits drawn by 64 plus the magnitude of the constants, so the enclosures shrink to points as the
    bits grow."""
    numbers = [x for constants, terms in values for x in constants + [c for c, _, _ in terms] if x != 0.0]
    magnitude = max([0] + [math.frexp(x)[1] - math.frexp(unit)[1] for x in numbers])
    draws = {(id(noise), noise.key(index)): (noise, index) for _, terms in values for _, noise, index in terms}
    saved = mpmath.iv.prec
    try:
        for _ in range(MAX_REFINEMENTS + 1):
            precision = max(noise.bits(index) for noise, index in draws.values()) + 64 + magnitude
            with mpmath.workprec(precision):
                mpmath.iv.prec = precision
                enclosures = []
                for constants, terms in values:
                    total = mpmath.iv.mpf(0)
                    for constant in constants:
                        total += mpmath.iv.mpf(constant)
                    for coefficient, noise, index in terms:
                        total += mpmath.iv.mpf(coefficient) * noise.enclosure(index)
                    enclosures.append(total / unit)
                if all(mpmath.isfinite(v.a) and mpmath.isfinite(v.b) for v in enclosures):
                    outcome = decide(enclosures)
                    if outcome is not None:
                        return outcome
            for noise, index in draws.values():  # each uniform once, however many draws share it
                noise.refine(index)
        raise undecided(MAX_REFINEMENTS)
    finally:
        mpmath.iv.prec = saved
