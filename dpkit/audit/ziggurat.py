"""White-box reachability of numpy's Gaussian sampler (the ziggurat of ``random_standard_normal``).

:func:`dpkit.audit.float_events.find_float_witness` skips samplers that are not a monotone function
of one uniform, such as numpy's ``normal`` (Marsaglia & Tsang 2000 ziggurat). This module models
that sampler instead: every output is either ``±fl(r·w_i)`` for a layer ``i ∈ [0, 256)`` and an
integer ``0 ≤ r < 2⁵²`` (fast path and wedge), or a tail value ``|x| > R`` (:data:`TAIL`). The 256
widths ``w_i`` are read from numpy itself through a generator with crafted words
(:func:`~dpkit.audit.float_events.crafted_generator`); :func:`unreachable` decides, by a binary
search per layer and sign, whether an output ``fl(c + fl(σ·x))`` can occur on another centre.
``experiments/float_gaussian.py`` applies it to dpkit's ``GaussianMechanism``.
"""

from __future__ import annotations

import numpy as np

from dpkit.audit.float_events import crafted_generator

__all__ = ["TAIL", "layer_widths", "unreachable"]

TAIL = 3.6541528853610088  # numpy's ziggurat_nor_r
_RABS_MAX = (1 << 52) - 1


def _normal_from_word(word: int) -> float:
    """numpy's standard normal for the 64-bit word ``word`` (uniforms after it are 0)."""
    generator = crafted_generator([word >> 32, word & 0xFFFFFFFF])
    return float(generator.standard_normal())


def layer_widths() -> np.ndarray:
    """The 256 ziggurat widths ``w_i`` of numpy's ``standard_normal``, read through crafted words."""
    widths = np.empty(256)
    for i in range(256):
        one, two = _normal_from_word(i | 1 << 9), _normal_from_word(i | 2 << 9)
        if two != 2 * one or one <= 0:
            raise RuntimeError(f"numpy's normal sampler does not have the expected layout (layer {i})")
        widths[i] = one
    return widths


def unreachable(y: np.ndarray, centre: float, sigma: float, widths: np.ndarray) -> np.ndarray:
    """True where ``y`` is no ``fl(centre + fl(σ·(±r·w_i)))`` and not a possible tail output."""
    w = np.r_[widths, -widths][None, :]
    target = y[:, None]

    def value(r: np.ndarray) -> np.ndarray:
        return centre + (0.0 + sigma * (r.astype(float) * w))

    def at_most(r: np.ndarray) -> np.ndarray:  # the search order: non-decreasing in r for both signs
        v = value(r)
        return np.where(w > 0, v <= target, v >= target)

    shape = (y.size, w.shape[1])
    lo, hi = np.zeros(shape, dtype=np.int64), np.full(shape, _RABS_MAX, dtype=np.int64)
    inside = at_most(lo) & ~at_most(hi)
    while np.any(inside & (hi - lo > 1)):
        mid = lo + (hi - lo) // 2
        below = at_most(mid)
        lo = np.where(inside & below, mid, lo)
        hi = np.where(inside & ~below, mid, hi)
    hit = (inside & (value(lo) == target)) | (value(hi) == target) | (value(np.zeros(shape, np.int64)) == target)
    tail = np.abs(y - centre) >= sigma * TAIL * (1 - 1e-12)
    return ~(hit.any(axis=1) | tail)
