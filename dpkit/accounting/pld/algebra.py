"""Composition of discretised privacy-loss distributions by FFT.

The loss of a composition is the sum of independent losses, so its mass function is the
convolution of theirs (Koskela, Jälkö & Honkela 2020, §4; Koskela et al. 2021). This module
convolves two pmfs (heterogeneous composition) and raises one pmf to a power ``count``
directly in the frequency domain (fast self-composition: one FFT, one complex power, one
inverse FFT, whatever the count).

Soundness bookkeeping:

* Self-composition uses a circular FFT on a window [a, b] of the composed grid chosen by a
  Chernoff bound (Koskela et al. 2021, Lemma 8; dp_accounting's ``self_convolve`` bounds): the
  composed mass outside the window is at most ``tail`` on each side. In exact arithmetic that
  mass either wraps into the window (adding non-negative mass) or is dropped; the pessimistic
  pmf therefore adds both tail bounds to its +∞ atom, and the optimistic pmf adds them to its
  deficit (mass it may over-count).
* Floating-point round-off: negative FFT outputs are clipped; the clipped mass plus the
  deviation of the total mass from its exact value are added to the +∞ atom (pessimistic) and
  to the deficit (optimistic). A k-fold power also leaves a noise floor of about k·u/n on every
  entry (the low frequencies' relative error multiplied by k), which neither term sees: twice its
  size, read off entries whose exact mass is at most the grid tails (:func:`_noise_floor`), is the
  composed pmf's ``noise``, paid per entry above ε (:class:`~.pmf.LossPmf`). These are a-posteriori
  round-off estimates, not a proof
  (an a-priori componentwise bound is 10²–10³ times larger: too loose to use at δ ≥ 1e-8).
"""

from __future__ import annotations

import math

import numpy as np
from scipy import fft

from dpkit.accounting.pld.mechanisms import GridTooLargeError
from dpkit.accounting.pld.pmf import LossPmf, truncate


#: Blocks of the coarse pmf on which :func:`_window` searches its Chernoff exponents.
_SEARCH_BLOCKS = 2048

#: A self-composition's FFT runs on its window plus at least this share of it (and 64 entries) more, whose
#: exact mass is at most the grid tails: what they hold is round-off (:func:`_noise_floor`).
_QUIET_SHARE = 1.0 / 16.0
#: Grid tails up to this leave the extra entries' exact mass negligible beside the floor (~1e-19 and up).
QUIET_TAIL = 1e-25


def _log_mgf(indices: np.ndarray, log_probs: np.ndarray, lam: np.ndarray) -> np.ndarray:
    """log Σ_i p_i e^{λ x_i} for each λ in ``lam`` (positive masses only; x in grid index units)."""
    terms = log_probs[None, :] + lam[:, None] * indices[None, :]
    top = np.max(terms, axis=1, keepdims=True)
    return top[:, 0] + np.log(np.sum(np.exp(terms - top), axis=1))


def _blocks(pmf: LossPmf) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(lowest indices, highest indices, log masses) of ``pmf`` merged into at most :data:`_SEARCH_BLOCKS`
    blocks: E[e^{λL}] of the blocks with each block's mass placed at its highest index is at least that of
    ``pmf`` for λ > 0, and with it at its lowest index for λ < 0, a valid Chernoff bound either way."""
    size = max(1, -(-pmf.size // _SEARCH_BLOCKS))
    full = pmf.size // size
    mass = pmf.probs[: full * size].reshape(full, size).sum(axis=1)
    if full * size < pmf.size:
        mass = np.concatenate((mass, [pmf.probs[full * size:].sum()]))
    start = pmf.offset + size * np.arange(mass.size)
    top = np.minimum(start + size - 1, pmf.offset + pmf.size - 1)
    positive = mass > 0
    return start[positive].astype(float), top[positive].astype(float), np.log(mass[positive])


def _window(pmf: LossPmf, count: int, tail: float) -> tuple[int, int]:
    """Grid indices [a, b] of the ``count``-fold sum with at most ``tail`` mass outside on each side.

    Chernoff: P(S ≥ b) ≤ E[e^{λL}]^count e^{−λb} for every λ > 0 (and the mirror bound for the
    lower tail). λ is searched on a geometric grid around the central-limit optimum
    √(2 log(1/tail) / (count · Var L)), on the pmf merged into blocks (:func:`_blocks`, an upper
    bound on the generating function, cheap for any grid); the bound is then evaluated on the
    pmf itself at the λ found. Any λ gives a valid bound.
    """
    lo_idx, hi_idx = count * pmf.offset, count * (pmf.offset + pmf.size - 1)
    if count == 1:
        return lo_idx, hi_idx
    idx = np.arange(pmf.size, dtype=float)
    mass = float(np.sum(pmf.probs))
    mean = float(np.sum(pmf.probs * idx)) / mass
    var = max(float(np.sum(pmf.probs * (idx - mean) ** 2)) / mass, 1e-12)
    centre = math.sqrt(2.0 * -math.log(tail) / (count * var))
    lam = centre * np.geomspace(0.05, 20.0, 16)
    log_tail = math.log(tail)
    low, high, log_mass = _blocks(pmf)
    if pmf.size > _SEARCH_BLOCKS:
        positive = pmf.probs > 0
        indices = (pmf.offset + np.arange(pmf.size))[positive].astype(float)
        log_probs = np.log(pmf.probs[positive])
    ends = []
    for sign, block_indices in ((1.0, high), (-1.0, low)):
        coarse = (count * _log_mgf(block_indices, log_mass, sign * lam) - log_tail) / lam
        if pmf.size <= _SEARCH_BLOCKS:  # blocks of one entry: the bound is already the pmf's own
            ends.append(float(np.min(coarse)))
            continue
        best = np.array([lam[int(np.argmin(coarse))]])
        exact = (count * _log_mgf(indices, log_probs, sign * best) - log_tail) / best
        ends.append(float(min(exact[0], np.min(coarse))))
    b = min(hi_idx, int(math.ceil(ends[0])))
    a = max(lo_idx, int(math.floor(-ends[1])))
    return a, max(a, b)


def _roundoff(values: np.ndarray, expected_mass: float) -> tuple[np.ndarray, float]:
    """Clip negative FFT outputs; return them and an a-posteriori round-off estimate."""
    negative = float(-np.sum(np.minimum(values, 0.0)))
    return np.maximum(values, 0.0), negative + abs(float(np.sum(values)) - expected_mass)


def _noise_floor(quiet: np.ndarray, count: int, tail: float, powered: np.ndarray, length: int) -> float:
    """An estimate of the largest absolute round-off of one entry of a ``count``-fold FFT power of ``length``
    entries (``powered``: its non-zero powered rfft frequencies), from ``quiet``, entries whose exact mass is
    at most the grid tails.

    The error of an FFT power is spread over every entry, about k·u/n each (k = ``count``, n = ``length``):
    the spectrum's relative round-off multiplied by k at the low frequencies, so that it does not show as
    negative mass. The quiet entries are that error alone (with a grid ``tail`` below :data:`QUIET_TAIL`), so
    the largest of them measures it. With a larger tail the model k·u·log₂(n)·Σ|ẑ_j|^k/n is used instead:
    it was 20 to 190 times the measured floor on the long compositions where both were compared.
    """
    if tail <= QUIET_TAIL and quiet.size:
        return float(np.max(np.abs(quiet)))
    spectrum_l1 = 2.0 * float(np.sum(np.abs(powered)))  # the full spectrum: the rfft half twice (an upper bound)
    return count * 2.0**-53 * math.log2(max(2, length)) * spectrum_l1 / length


def self_compose(pmf: LossPmf, count: int, tail: float, max_points: int) -> LossPmf:
    """The ``count``-fold composition of ``pmf`` with itself (FFT power, circular window)."""
    if count == 1:
        return pmf
    finite_mass = float(np.sum(pmf.probs))
    if not finite_mass > 0.0 or count * math.log(finite_mass) < -745.0:
        # the finite part's mass, finite_mass^count, underflows: all of the composition is at +∞ to float
        # precision (its window would be meaningless); pessimistic: the whole mass there, optimistic:
        # 1 − (1 − δ∞)^count there and the rest (below the smallest float) dropped
        infinity = 1.0 if pmf.pessimistic or pmf.infinity_mass >= 1.0 else \
            -math.expm1(count * math.log1p(-pmf.infinity_mass))
        return LossPmf(pmf.h, 0, np.zeros(1), infinity, pmf.pessimistic, deficit=pmf.deficit * count,
                       shift=pmf.shift * count, order=pmf.order)
    a, b = _window(pmf, count, tail)
    n_window = b - a + 1
    if n_window > max_points:
        raise GridTooLargeError(f"self-composition needs {n_window} grid points > max_points={max_points}",
                                needed=n_window)
    length = fft.next_fast_len(n_window + max(64, int(_QUIET_SHARE * n_window)), real=True)
    # Fold the single-step pmf onto the circle of the given length (aliasing is harmless: the
    # composed result is only read modulo ``length``).
    if pmf.size <= length:
        folded = np.zeros(length)
        folded[: pmf.size] = pmf.probs
    else:
        padded = np.zeros(int(math.ceil(pmf.size / length)) * length)
        padded[: pmf.size] = pmf.probs
        folded = padded.reshape(-1, length).sum(axis=0)
    spectrum = fft.rfft(folded)
    # Frequencies whose power underflows (|z|^count < e^{-745}) are zero; skipping them saves the
    # complex power, the costliest step for long runs (most of the spectrum decays).
    magnitude2 = spectrum.real**2
    magnitude2 += spectrum.imag**2
    alive = np.nonzero(magnitude2 > math.exp(max(-745.0, -1490.0 / count)))[0]
    powered = spectrum[alive] ** count
    spectrum[:] = 0.0
    spectrum[alive] = powered
    composed = fft.irfft(spectrum, n=length)
    # Position j holds sums s with s − count*offset ≡ j; we want position s − a.
    start = (a - count * pmf.offset) % length
    composed = np.roll(composed, -start)  # the window first, then the quiet entries (sums outside the window)
    quiet = composed[n_window:]
    composed = composed[:n_window]
    finite_mass = float(np.sum(pmf.probs))
    expected = finite_mass**count
    probs, error = _roundoff(composed, expected)
    noise = 2.0 * _noise_floor(quiet, count, tail, powered, length)
    infinity = -math.expm1(count * math.log1p(-min(pmf.infinity_mass, 1.0))) if pmf.infinity_mass < 1 else 1.0
    window_tail = 0.0 if (a == count * pmf.offset and b == count * (pmf.offset + pmf.size - 1)) else 2.0 * tail
    if pmf.pessimistic:
        return LossPmf(pmf.h, a, probs, min(1.0, infinity + window_tail + error), True, shift=pmf.shift * count,
                       noise=noise)
    return LossPmf(pmf.h, a, probs, infinity, False, deficit=pmf.deficit * count + window_tail + error,
                   shift=pmf.shift * count, order=pmf.order, noise=noise)


def compose(first: LossPmf, second: LossPmf, tail: float) -> LossPmf:
    """The composition of two pmfs on the same spacing (linear FFT convolution), truncated."""
    if first.pessimistic != second.pessimistic or first.h != second.h:
        raise ValueError("can only compose pmfs with the same spacing and direction of error")
    first, second = first.settled(), second.settled()
    size = first.size + second.size - 1
    length = fft.next_fast_len(size, real=True)
    values = fft.irfft(fft.rfft(first.probs, length) * fft.rfft(second.probs, length), n=length)[:size]
    expected = float(np.sum(first.probs)) * float(np.sum(second.probs))
    probs, error = _roundoff(values, expected)
    infinity = 1.0 - (1.0 - first.infinity_mass) * (1.0 - second.infinity_mass)
    shift = first.shift + second.shift
    if first.pessimistic:
        out = LossPmf(first.h, first.offset + second.offset, probs, min(1.0, infinity + error), True, shift=shift)
    else:
        out = LossPmf(first.h, first.offset + second.offset, probs, infinity, False,
                      deficit=first.deficit + second.deficit + error, shift=shift,
                      order=min(first.order, second.order))
    return truncate(out, tail)


def compose_all(pmfs: list[LossPmf], tail: float) -> LossPmf:
    """Compose a list of pmfs (smallest first, to keep intermediate grids short)."""
    ordered = sorted(pmfs, key=lambda p: p.size)
    result = ordered[0]
    for pmf in ordered[1:]:
        result = compose(result, pmf, tail)
    return result
