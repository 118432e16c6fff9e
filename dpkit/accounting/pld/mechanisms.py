"""Privacy-loss distributions of single mechanisms and their two-sided discretisation.

Each :class:`PrivacyLoss` describes the loss L = log(dP/dQ) of a dominating pair (P, Q) through
the distribution functions of L under P and under Q (both computed accurately in the tails).
:func:`discretise` turns it into two grid mass functions on spacing ``h``:

* **pessimistic** — "connect the dots" (Doroshenko, Ghazi, Kamath, Kumar & Manurangsi 2022,
  Alg. 1 / Thm 4.3): the mass of L in each grid cell (l_k, l_{k+1}] is split between its two
  ends so that both the P-mass and the Q-mass are preserved. The resulting pair dominates the
  true one, and its δ(ε) interpolates the true δ linearly in e^ε between grid points.
* **optimistic** — the same grid, with δ(e^{l_k}) lowered to the smaller of the two tangents of
  the (convex in x = e^ε) hockey-stick curve taken at the neighbouring half-grid points. The
  piecewise-linear interpolation then lies below every tangent, hence below the true curve, and
  the pair it defines is dominated by the true one (Blackwell), so its composition under-estimates
  the composed δ(ε). Where the construction leaves a non-convex kink (a negative mass), the
  kink is smoothed by lowering the curve further; float round-off left after that is clipped
  and its size added to ``deficit`` (subtracted from δ). If more than round-off is left (a
  loss concentrated well inside one cell), the optimistic pmf falls back to the first-order
  coupling bound: the connect-the-dots masses moved down one grid step (``order=1``).

Both constructions are second order in h per step (the error of δ at a grid point is zero for
the pessimistic pmf and O(h²) mass for the optimistic one), which is what makes a certified
interval of width 1e-3 affordable for 10⁴ compositions.

Mass outside the grid: pessimistic — above the grid to +∞, below rounded up to the first point;
optimistic — above rounded down to the last point, below dropped.
"""

from __future__ import annotations

import abc
import math

import numpy as np
from scipy import special

from dpkit.accounting.pld.pmf import LossPmf

#: Clipped negative mass up to this size is float round-off of the tangent construction; above
#: it the optimistic pmf falls back to the first-order coupling bound.
ROUNDOFF_DEFICIT = 1e-12


class GridTooLargeError(ValueError):
    """The requested discretisation needs more grid points than allowed (``needed``, when known).

    The message always names the faster route (the RDP accountant), wherever the grid ran out."""

    def __init__(self, message: str, needed: int | None = None, finest: float | None = None):
        if "rdp" not in message.lower():
            message += "; use the RDP accountant (--accountant rdp), which handles any count"
        super().__init__(message)
        self.needed = needed
        #: The finest spacing the failing construction can afford, when it knows it.
        self.finest = finest


#: The grid spacings a discretisation can use: a normal float (a subnormal or zero spacing divides to
#: ∞), and e^h finite (the optimistic construction needs e^h).
SPACING_RANGE = (2.2250738585072014e-308, 700.0)


def check_spacing(h: float) -> None:
    """Raise :class:`GridTooLargeError` naming the RDP route unless ``h`` lies in :data:`SPACING_RANGE` (a
    ledger whose losses are below ~1e-305, or whose grid would need cells wider than e^700)."""
    if not SPACING_RANGE[0] <= h <= SPACING_RANGE[1]:
        raise GridTooLargeError(f"the PLD grid spacing would be h={h:.3g}, outside what floating point can "
                                f"discretise ([{SPACING_RANGE[0]:.3g}, {SPACING_RANGE[1]:g}]): the losses are too "
                                "small or too spread; use the RDP accountant (--accountant rdp)")


class PrivacyLoss(abc.ABC):
    """The privacy loss of a pair (P, Q): distribution functions of L under P and under Q.

    Subclasses implement :meth:`cdf_sf` (finite part only: the atom at +∞ is
    ``infinity_mass``) and :meth:`bounds`.
    """

    infinity_mass: float = 0.0
    #: P-mass not represented by cdf_sf (pessimistic constructions add it to the +∞ atom).
    unaccounted_mass: float = 0.0
    #: Spacing of a lattice containing every atom of L (None if L has no such lattice).
    spacing: float | None = None
    #: A loss value that should be a grid point (a hard end of the support where mass
    #: concentrates, or an atom); None if any grid will do.
    anchor: float | None = None

    @abc.abstractmethod
    def cdf_sf(self, t: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """``(P(L ≤ t), P(t < L < ∞), Q(L ≤ t), Q(t < L < ∞))`` for an array ``t``."""

    @abc.abstractmethod
    def bounds(self, tail: float) -> tuple[float, float]:
        """``(lo, hi)`` with P- and Q-mass of ``L ≤ lo`` and of ``hi < L < ∞`` at most ``tail``."""

    def direct_pmfs(self, h: float, tail: float, max_points: int) -> tuple[LossPmf, LossPmf] | None:
        """(pessimistic, optimistic) pmfs the loss builds itself on spacing ``h``, or None (then
        :func:`discretise` builds them from :meth:`cdf_sf`)."""
        return None

    def scaled_q_masses(self, edges: np.ndarray, ref: np.ndarray) -> np.ndarray | None:
        """``e^{ref_k} · Q(edges[k, j] < L ≤ edges[k, j+1])`` for each row k, computed without
        subnormal underflow, or None (then :func:`discretise` scales the plain Q-masses)."""
        return None


def _split_masses(cdf: np.ndarray, sf: np.ndarray) -> np.ndarray:
    """Masses of consecutive intervals (t_j, t_{j+1}] from cdf and sf, each side where accurate."""
    masses = cdf[1:] - cdf[:-1]
    np.copyto(masses, sf[:-1] - sf[1:], where=~(cdf[1:] <= 0.5))
    return np.maximum(masses, 0.0, out=masses)


def _scale(masses: np.ndarray, ref: np.ndarray) -> np.ndarray:
    """``e^{ref_k} · masses[k, j]`` (0 stays 0). Where every e^{ref} is a normal float, as a product (within
    2 ulps; a subnormal mass keeps the absolute error it has); otherwise as exp(ref + log mass), which neither
    overflows nor passes through a subnormal factor."""
    if ref.size and -700.0 <= float(np.min(ref)) and float(np.max(ref)) <= 700.0:
        return masses * np.exp(ref)[:, None]
    positive = masses > 0
    with np.errstate(divide="ignore", over="ignore"):
        return np.where(positive, np.exp(ref[:, None] + np.log(np.where(positive, masses, 1.0))), 0.0)


def _ndtr(z: np.ndarray) -> np.ndarray:
    """Φ(z), down to the subnormal range (``special.ndtr`` returns 0 below z ≈ −37.5, where Φ is
    still ≥ 1e-308; exp(log Φ) keeps it down to z ≈ −38.5, which tiny δ needs)."""
    out = special.ndtr(z)
    deep = (z < -37.0) & (z > -40.0)  # (below −40, log Φ < −800: the exponential is 0, as ndtr's value)
    if np.any(deep):
        out[deep] = np.exp(special.log_ndtr(z[deep]))
    return out


def _ndtr_pair(z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(Φ(z), Φ(−z)) with one evaluation of :func:`_ndtr`: the smaller of the two at −|z| (accurate deep in the
    tail), the other as 1 minus it (at least 1/2, so exact to an ulp). Masses are taken from the smaller side
    (:func:`_split_masses`), so nothing is lost, and the Gaussian discretisation evaluates Φ half as often."""
    small = np.abs(z)
    small = _ndtr(np.negative(small, out=small))
    big = 1.0 - small
    positive = z > 0
    cdf = small.copy()
    np.copyto(cdf, big, where=positive)
    np.copyto(big, small, where=positive)
    return cdf, big


#: Spacing of subnormal doubles: the absolute rounding error of a distribution-function value below 2.3e-308.
_SUBNORMAL_ULP = 4.95e-324


class GaussianLoss(PrivacyLoss):
    """Gaussian mechanism with μ = Δ/σ: L ~ N(μ²/2, μ²) under P and N(−μ²/2, μ²) under Q.

    (Balle & Wang 2018, Lemma 3; Dong, Roth & Su 2022, §2.)
    """

    def __init__(self, mu: float):
        self.mu = float(mu)

    def cdf_sf(self, t, *, strict=False):
        t = np.asarray(t, dtype=float)
        mu = self.mu
        z = t - mu * mu / 2.0
        p_cdf, p_sf = _ndtr_pair(np.divide(z, mu, out=z))
        z = t + mu * mu / 2.0
        q_cdf, q_sf = _ndtr_pair(np.divide(z, mu, out=z))
        return p_cdf, p_sf, q_cdf, q_sf

    def bounds(self, tail):
        z = -float(special.ndtri(tail))
        return -self.mu * self.mu / 2.0 - z * self.mu, self.mu * self.mu / 2.0 + z * self.mu

    def scaled_q_masses(self, edges, ref):
        # e^{ref}·Φ(±z) as exp(ref + log Φ(±z)); below the median of Q from the cdf, above from the
        # sf (as _split_masses does); the value used never overflows (e^{l} Q(L > l) ≤ P(L > l)).
        mu = self.mu
        z = (np.asarray(edges, dtype=float) + mu * mu / 2.0) / mu
        r = np.asarray(ref, dtype=float)[:, None]
        with np.errstate(over="ignore", invalid="ignore"):
            cdf = np.exp(r + special.log_ndtr(z))
            sf = np.exp(r + special.log_ndtr(-z))
            from_cdf = cdf[:, 1:] - cdf[:, :-1]
            from_sf = sf[:, :-1] - sf[:, 1:]
        return np.maximum(np.where(z[:, 1:] <= 0.0, from_cdf, from_sf), 0.0)


class LaplaceLoss(PrivacyLoss):
    """Laplace mechanism with ε = Δ/b: atoms at ±ε and a density on (−ε, ε).

    Under P: P(L ≤ t) = e^{(t−ε)/2}/2 on [−ε, ε); under Q: Q(L > t) = e^{−(t+ε)/2}/2 there
    (Koskela, Jälkö, Prediger & Honkela 2021, §6.2; closed forms re-derived in docs/pld.md).
    With ``strict=True`` :meth:`cdf_sf` returns ``(P(L < t), P(L ≥ t), Q(L < t), Q(L ≥ t))``.
    """

    def __init__(self, epsilon: float):
        self.epsilon = float(epsilon)
        self.spacing = self.epsilon
        self.anchor = self.epsilon

    def cdf_sf(self, t, *, strict=False):
        t = np.asarray(t, dtype=float)
        eps = self.epsilon
        below = (t <= -eps) if strict else (t < -eps)
        above = (t > eps) if strict else (t >= eps)
        tc = np.clip(t, -eps, eps)
        p_cdf = np.where(below, 0.0, np.where(above, 1.0, 0.5 * np.exp((tc - eps) / 2.0)))
        p_sf = np.where(below, 1.0, np.where(above, 0.0, 1.0 - 0.5 * np.exp((tc - eps) / 2.0)))
        q_sf = np.where(below, 1.0, np.where(above, 0.0, 0.5 * np.exp(-(tc + eps) / 2.0)))
        q_cdf = np.where(below, 0.0, np.where(above, 1.0, 1.0 - 0.5 * np.exp(-(tc + eps) / 2.0)))
        return p_cdf, p_sf, q_cdf, q_sf

    def bounds(self, tail):
        return -self.epsilon, self.epsilon


class AtomLoss(PrivacyLoss):
    """A loss with finitely many atoms ``losses`` of P-mass ``p`` and Q-mass ``q`` (+ an ∞ atom)."""

    def __init__(self, losses, p, q, *, infinity_mass=0.0, unaccounted_mass=0.0, spacing=None):
        losses = np.asarray(losses, dtype=float)
        order = np.argsort(losses, kind="stable")
        self.losses = losses[order]
        self.p = np.asarray(p, dtype=float)[order]
        self.q = np.asarray(q, dtype=float)[order]
        self.infinity_mass = float(infinity_mass)
        self.unaccounted_mass = float(unaccounted_mass)
        self.spacing = spacing
        self.anchor = float(self.losses[-1])
        zero = np.zeros(1)
        self._p_cdf = np.concatenate((zero, np.cumsum(self.p)))
        self._p_sf = np.concatenate((np.cumsum(self.p[::-1])[::-1], zero))
        self._q_cdf = np.concatenate((zero, np.cumsum(self.q)))
        self._q_sf = np.concatenate((np.cumsum(self.q[::-1])[::-1], zero))

    def cdf_sf(self, t, *, strict=False):
        idx = np.searchsorted(self.losses, np.asarray(t, dtype=float), side="left" if strict else "right")
        return self._p_cdf[idx], self._p_sf[idx], self._q_cdf[idx], self._q_sf[idx]

    def bounds(self, tail):
        return float(self.losses[0]), float(self.losses[-1])

    def direct_pmfs(self, h: float, tail: float, max_points: int) -> tuple[LossPmf, LossPmf] | None:
        """Where ``h`` divides the spacing (:func:`exact_at_lattice`) every atom is put on its grid point:
        both pmfs are the true one (the pessimistic adds the unaccounted mass to its +∞ atom), with
        nothing to allow for but the grid losses' round-off (:attr:`.LossPmf._loss_error`)."""
        if not exact_at_lattice([self], h):
            return None
        shift = self.anchor - math.floor(self.anchor / h) * h  # as in discretise
        if shift > h / 2:
            shift -= h
        index = np.rint((self.losses - shift) / h).astype(np.int64)
        first, size = int(index[0]), int(index[-1] - index[0]) + 1
        if size > max_points:
            raise GridTooLargeError(f"discretisation needs {size} grid points > max_points={max_points}", needed=size)
        probs = np.zeros(size)
        np.add.at(probs, index - first, self.p)
        return (LossPmf(h, first, probs, self.infinity_mass + self.unaccounted_mass, True, shift=shift),
                LossPmf(h, first, probs.copy(), self.infinity_mass, False, shift=shift))


def exact_at_lattice(losses, h: float | None) -> bool:
    """Whether every loss is a finite set of atoms on multiples of its ``spacing`` (randomized response,
    pure and (ε, δ)-DP pairs, discrete Laplace and Gaussian) and ``h`` divides every spacing:
    :func:`discretise` at h then puts each atom on a grid point, so the pessimistic and optimistic pmfs
    agree and the interval's width is round-off only; a finer grid has more points and so more
    round-off, never less width."""
    if h is None or not h > 0:
        return False
    for loss in losses:
        if not isinstance(loss, AtomLoss) or loss.spacing is None:
            return False
        ratio = loss.spacing / h
        if round(ratio) < 1 or abs(ratio - round(ratio)) > 1e-9 * ratio:
            return False
    return True


def randomized_response_loss(epsilon: float, k: int) -> AtomLoss:
    """k-ary randomized response (also the worst ε-DP pair for k = 2; Kairouz, Oh & Viswanath 2015)."""
    denom_log = float(np.logaddexp(epsilon, math.log(k - 1)))
    keep = math.exp(epsilon - denom_log)
    other = math.exp(-denom_log)
    losses, p, q = [epsilon, -epsilon], [keep, other], [other, keep]
    if k > 2:
        losses.append(0.0)
        p.append((k - 2) * other)
        q.append((k - 2) * other)
    return AtomLoss(losses, p, q, spacing=epsilon if epsilon > 0 else None)


def approx_dp_loss(epsilon: float, delta: float) -> AtomLoss:
    """The worst (ε, δ)-DP pair: P = (δ, (1−δ)e^ε/(1+e^ε), (1−δ)/(1+e^ε), 0), Q its mirror
    (Kairouz, Oh & Viswanath 2015, Thm 2.1; Murtagh & Vadhan 2016, Lemma 3.2)."""
    hi = (1.0 - delta) / (1.0 + math.exp(-epsilon))
    # (1 − δ)/(1 + e^ε), as (1 − δ)e^{−ε}/(1 + e^{−ε}) where e^ε overflows
    lo = (1.0 - delta) / (1.0 + math.exp(epsilon)) if epsilon < 700.0 else hi * math.exp(-epsilon)
    return AtomLoss([epsilon, -epsilon], [hi, lo], [lo, hi], infinity_mass=delta,
                    spacing=epsilon if epsilon > 0 else None)


def discrete_laplace_loss(scale: float, sensitivity: int) -> AtomLoss:
    """Discrete Laplace P(x) ∝ e^{−|x|/b} against its shift by Δ: L(x) = (|x−Δ| − |x|)/b."""
    r = math.exp(-1.0 / scale)
    c = -math.expm1(-1.0 / scale) / (1.0 + r)
    delta = sensitivity
    x = np.arange(1, delta)
    losses = np.concatenate(([delta / scale, -delta / scale], (delta - 2.0 * x) / scale))
    p = np.concatenate(([1.0 / (1.0 + r), r**delta / (1.0 + r)], c * np.exp(-x / scale)))
    q = np.concatenate(([r**delta / (1.0 + r), 1.0 / (1.0 + r)], c * np.exp(-(delta - x) / scale)))
    return AtomLoss(losses, p, q, spacing=1.0 / scale)


def discrete_gaussian_loss(sigma: float, sensitivity: int, tail: float) -> AtomLoss:
    """Discrete Gaussian P(x) ∝ e^{−x²/(2σ²)} against its shift by Δ, enumerated over the integers
    where P or Q has mass above ``tail`` (the rest, at most 2·tail, is reported as unaccounted)."""
    z = -float(special.ndtri(tail)) + 2.0
    reach = int(math.ceil(z * sigma)) + sensitivity + 2
    x = np.arange(-reach, reach + 1, dtype=float)
    # σ < 1e-154 makes 2σ² zero and the losses not finite; the accountants answer such a σ with ∞ and its
    # reason (the extreme-parameter guard of dpkit.accounting.base), so the warnings say nothing new
    with np.errstate(divide="ignore", invalid="ignore"):
        log_w = -(x * x) / (2.0 * sigma * sigma)
        log_z = float(special.logsumexp(log_w))
    # Mass beyond the enumerated range, bounded by the Gaussian-integral tail on each side.
    outside = 2.0 * float(special.ndtr(-(reach - sensitivity - 1) / sigma)) * math.sqrt(2 * math.pi) * sigma
    outside = min(1.0, outside * math.exp(-log_z) + 1e-300)
    shifted = x - sensitivity
    with np.errstate(divide="ignore", invalid="ignore"):
        p = np.exp(log_w - log_z)
        q = np.exp(-(shifted * shifted) / (2.0 * sigma * sigma) - log_z)
        losses = (sensitivity * sensitivity - 2.0 * sensitivity * x) / (2.0 * sigma * sigma)
    keep = (p > 0) | (q > 0)
    return AtomLoss(losses[keep], p[keep], q[keep], unaccounted_mass=outside,
                    spacing=sensitivity / (2.0 * sigma * sigma))


def _phi(t: np.ndarray, q: float) -> np.ndarray:
    """Inverse of ψ(ℓ) = log(1 − q + q e^ℓ): φ(t) = log((e^t − 1 + q)/q), −∞ for t ≤ log(1 − q)."""
    t = np.asarray(t, dtype=float)
    out = np.full(t.shape, -np.inf)
    floor = math.log1p(-q) if q < 1.0 else -math.inf
    log_q = math.log(q)
    if t.ndim == 1 and t.size > 1 and (bool(np.all(t[1:] >= t[:-1])) or bool(np.all(t[1:] <= t[:-1]))):
        # a sorted grid (discretise's edges, or their negation): each formula on one slice, no gathers
        ascending = t[0] <= t[-1]
        tt = t if ascending else np.ascontiguousarray(t[::-1])
        start, split = np.searchsorted(tt, [floor, 1.0], side="right")
        with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
            out[start:split] = np.log(np.expm1(tt[start:split]) + q) - log_q
            big = tt[max(start, split):]
            out[max(start, split):] = big + np.log1p(-(1.0 - q) * np.exp(-big)) - log_q
        return out if ascending else np.ascontiguousarray(out[::-1])  # (downstream ufuncs prefer unit strides)
    ok = t > floor
    tt = t[ok]
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        small = tt <= 1.0
        val = np.empty_like(tt)
        val[small] = np.log(np.expm1(tt[small]) + q) - log_q
        big = ~small
        val[big] = tt[big] + np.log1p(-(1.0 - q) * np.exp(-tt[big])) - log_q
    out[ok] = val
    return out


def _mix(b0: np.ndarray, b1: np.ndarray, q: float) -> np.ndarray:
    """(1 − q)·b0 + q·b1 (the mixture of :class:`SubsampledLoss`), with one temporary array."""
    out = np.multiply(b0, 1 - q)
    out += np.multiply(b1, q)
    return out


def _psi(ell: float, q: float) -> float:
    """ψ(ℓ) = log(1 − q + q e^ℓ), stable for large ℓ and (as log1p(q(e^ℓ − 1))) for tiny |ℓ|, where
    the log-sum-exp cancels to round-off (and a positive ψ can come out negative)."""
    if q >= 1.0:
        return ell
    if abs(ell) < 1e-8:
        return math.log1p(q * math.expm1(ell))
    return float(np.logaddexp(math.log1p(-q), math.log(q) + ell))


class SubsampledLoss(PrivacyLoss):
    """Poisson subsampling at rate q of a base pair (B₁, B₀) with loss ℓ = log(dB₁/dB₀).

    ``direction="remove"``: P = (1−q)B₀ + qB₁, Q = B₀, L = ψ(ℓ) = log(1 − q + q e^ℓ).
    ``direction="add"``: P = B₀, Q = (1−q)B₀ + qB₁, L = −ψ(ℓ).
    Under add/remove neighbouring these two pairs are tight dominating pairs of the sampled
    mechanism (Zhu, Dong & Wang 2022, Thm 11; Koskela et al. 2020, §5); the accountant
    composes each separately and reports the worse δ(ε).
    """

    def __init__(self, base: PrivacyLoss, rate: float, direction: str):
        if direction not in ("remove", "add"):
            raise ValueError(f"direction must be 'remove' or 'add', got direction={direction!r}")
        self.base = base
        self.rate = float(rate)
        self.direction = direction
        if self.rate < 1.0:
            floor = math.log1p(-self.rate)
            self.anchor = floor if direction == "remove" else -floor
        else:
            self.anchor = base.anchor if direction == "remove" or base.anchor is None else -base.anchor

    def cdf_sf(self, t, *, strict=False):
        t = np.asarray(t, dtype=float)
        q = self.rate
        if self.direction == "remove":
            b1c, b1s, b0c, b0s = self.base.cdf_sf(_phi(t, q))
            return _mix(b0c, b1c, q), _mix(b0s, b1s, q), b0c, b0s
        # L ≤ t  ⟺  ψ(ℓ) ≥ −t  ⟺  ℓ ≥ φ(−t)
        b1c, b1s, b0c, b0s = self.base.cdf_sf(_phi(-t, q), strict=True)
        return b0s, b0c, _mix(b0s, b1s, q), _mix(b0c, b1c, q)

    def bounds(self, tail):
        lo, hi = self.base.bounds(tail)
        q = self.rate
        floor = math.log1p(-q) if q < 1.0 else lo
        top = _psi(hi, q)
        if self.direction == "remove":
            return floor, top
        return -top, -floor


class WithoutReplacementLoss(PrivacyLoss):
    """Sampling ``m`` of ``n`` records without replacement (γ = m/n) under replace-one neighbouring.

    For a base pair (P, Q) that dominates the mechanism under replace-one, the sampled mechanism
    satisfies (Balle, Barthe & Gaboardi 2018, Thm 10, advanced joint convexity; Zhu, Dong & Wang
    2022, Prop. 30 in arXiv 2106.08567v3):

        H_{e^ε}(M∘S(D) ‖ M∘S(D')) ≤ H_{e^ε}((1−γ)Q + γP ‖ Q)     for ε ≥ 0,
        H_{e^ε}(M∘S(D) ‖ M∘S(D')) ≤ H_{e^ε}(Q ‖ (1−γ)Q + γP)     for ε < 0

    (the second from the first by H_α(μ‖ν) = 1 − α + α H_{1/α}(ν‖μ) and the symmetry of the
    relation). Neither pair alone dominates for every ε, so neither may be composed on its own
    (Lebeda, Regehr, Kamath & Steinke 2024, arXiv 2405.20769). The profile that follows the first
    pair for ε ≥ 0 and the second for ε < 0 equals γ·TV(P, Q) at ε = 0 from both sides, and for
    a *symmetric* base pair (ℓ = log dP/dQ under Q distributed as −ℓ under P: Gaussian, Laplace)
    it is convex in x = e^ε: its slope at x = 1 is −Q(ℓ > 0) = −P(ℓ < 0) on the right and
    −((1−γ)Q + γP)(ℓ < 0) ≤ −P(ℓ < 0) on the left. It is therefore the profile of one pair
    (P̃, Q̃), which dominates for every ε and so composes (the numerical dominating pair built
    from the two-part bound, as suggested after Zhu et al.'s Prop. 30). Its loss L̃ takes the
    tails of the "remove" Poisson-type pair (:class:`SubsampledLoss`) above 0, those of the
    "add" pair below 0, and an atom at 0 of P̃- and Q̃-mass (1−γ)·TV(P, Q).
    """

    def __init__(self, base: PrivacyLoss, rate: float):
        self.base = base
        self.rate = float(rate)
        self.remove = SubsampledLoss(base, self.rate, "remove")
        self.add = SubsampledLoss(base, self.rate, "add")
        self.anchor = 0.0
        if base.spacing is not None and base.anchor is not None:
            # Laplace-like base: atoms of L̃ at 0 and ±ψ(top loss); a lattice of spacing ψ holds all three.
            self.spacing = _psi(base.anchor, self.rate)

    def cdf_sf(self, t):
        t = np.asarray(t, dtype=float)
        upper = self.remove.cdf_sf(t)
        lower = self.add.cdf_sf(t)
        return tuple(np.where(t >= 0.0, u, l) for u, l in zip(upper, lower))

    def bounds(self, tail):
        return self.add.bounds(tail)[0], self.remove.bounds(tail)[1]


def discretise(loss: PrivacyLoss, h: float, tail: float, max_points: int) -> tuple[LossPmf, LossPmf]:
    """Pessimistic (connect-the-dots) and optimistic (tangent) pmfs of ``loss`` on spacing ``h``.

    Parameters
    ----------
    loss
        The privacy loss to discretise.
    h
        Grid spacing.
    tail
        Mass allowed outside the grid on each side (moved to the safe side, see module notes).
    max_points
        Raise :class:`GridTooLargeError` if the grid would be larger.
    """
    check_spacing(h)
    direct = loss.direct_pmfs(h, tail, max_points)
    if direct is not None:
        return direct
    lo, hi = loss.bounds(tail)
    shift = 0.0 if loss.anchor is None else loss.anchor - math.floor(loss.anchor / h) * h
    if shift > h / 2:
        shift -= h
    k0 = int(math.floor((lo - shift) / h))
    k1 = int(math.ceil((hi - shift) / h))
    # One spare point beyond each end: mass sitting exactly at a hard end (an atom, or the
    # concentrated end of a subsampled loss) then lies inside the grid, not in the tail.
    k0 -= 1
    k1 += 1
    n = k1 - k0 + 1
    if n > max_points:
        raise GridTooLargeError(f"discretisation needs {n} grid points > max_points={max_points}", needed=n)
    grid = shift + (k0 + np.arange(n)) * h
    # Each cell (l_k, l_{k+1}] is cut at its midpoint, where most cells take their tangent (see
    # below); the few cells whose tangent moves next to an end are also cut there, on demand.
    edges = np.empty(2 * n - 1)
    edges[0::2] = grid
    edges[1::2] = grid[:-1] + h / 2.0
    p_cdf, p_sf, q_cdf, q_sf = loss.cdf_sf(edges)
    pm = _split_masses(p_cdf, p_sf).reshape(-1, 2)
    below, above = float(p_cdf[0]), float(p_sf[-1])
    p_cell = pm[:, 0] + pm[:, 1]
    left_points = grid[:-1]
    # Q enters only as e^{l_k}·(Q-mass of a part of cell k): of the order of P-masses. A loss that
    # can compute it directly (:meth:`PrivacyLoss.scaled_q_masses`) avoids Q-masses that
    # underflow into subnormals (tiny δ with large losses).
    xqm = loss.scaled_q_masses(np.lib.stride_tricks.sliding_window_view(edges, 3)[::2], left_points)
    scaled = xqm is not None
    if not scaled:
        xqm = _scale(_split_masses(q_cdf, q_sf).reshape(-1, 2), left_points)
    xq_cell = xqm[:, 0] + xqm[:, 1]

    # Connect the dots: b_k = (P_k − e^{l_k} Q_k)/(1 − e^{−h}) to l_{k+1}, the rest to l_k.
    b = np.clip((p_cell - xq_cell) / -math.expm1(-h), 0.0, p_cell)
    ctd = np.zeros(n)
    ctd[:-1] += p_cell - b
    ctd[1:] += b

    pessimistic_probs = ctd.copy()
    pessimistic_probs[0] += below
    # Subnormal distribution-function values carry an absolute error of one subnormal ulp: a
    # cell's P-mass may be short by 2 ulp and its Q-mass long by 2 ulp, which lowers δ(ε) by at
    # most 2 ulp (1 + e^{l_{k+1}}) per cell above ε. Allowed for on the +∞ atom (relevant below δ ≈ 1e-290).
    # With scaled Q-masses only the P side (and e^l Q, of the same order) can be subnormal.
    q_small = np.zeros(edges.size - 1, dtype=bool) if scaled else (q_sf[1:] < 2.3e-308) | (q_cdf[1:] < 2.3e-308)
    p_small = (p_sf[1:] < 2.3e-308) | (p_cdf[1:] < 2.3e-308)
    # (Summed in units of e^700 to avoid overflow; the bound covers every ε ≤ 700.)
    weight = float(np.sum(np.exp(np.minimum(edges[1:][q_small], 700.0) - 700.0)))
    underflow = (2.0 * _SUBNORMAL_ULP * float(np.count_nonzero(p_small | q_small) + (edges.size if scaled else 0))
                 + (2.0 * _SUBNORMAL_ULP * math.exp(700.0)) * weight)
    pessimistic = LossPmf(h, k0, pessimistic_probs, loss.infinity_mass + above + loss.unaccounted_mass + underflow,
                          True, shift=shift)

    # Optimistic: lower δ at each grid point to the smaller tangent of its two cells. Cells use
    # the tangent at their midpoint (second-order error) except where that would leave a
    # negative mass next to them (a concentrated end of the support, an atom at the end of a
    # continuous part); there the tangent moves next to the cell's end (mode -1: l_k + η,
    # +1: l_{k+1} − η, η = 1e-6 h). The first and last cells always do, which keeps the curve
    # exact at both ends of the grid.
    mode = np.zeros(n - 1, dtype=int)
    mode[0] = -1
    if n > 2:
        mode[-1] = 1
    e_h = math.exp(h)
    denominator = math.expm1(h)
    eta = 1e-6 * h
    # P-mass and e^{l_k}·Q-mass of cell k below its tangent point (the midpoint until the cell moves it).
    below_p, below_xq = pm[:, 0].copy(), xqm[:, 0].copy()

    def move(cells: np.ndarray) -> None:
        # cells whose mode became ±1: their masses below l_k + η or l_{k+1} − η
        if cells.size == 0:
            return
        start = left_points[cells]
        cut = np.where(mode[cells] < 0, start + eta, grid[cells + 1] - eta)
        part_edges = np.stack((start, cut), axis=1)
        pc, ps, qc, qs = loss.cdf_sf(part_edges.ravel())
        below_p[cells] = _split_masses(pc, ps)[0::2]
        xq = loss.scaled_q_masses(part_edges, start)
        below_xq[cells] = xq[:, 0] if xq is not None else _scale(_split_masses(qc, qs)[0::2, None], start)[:, 0]

    def build() -> tuple[np.ndarray, np.ndarray]:
        # the deficit at l_k uses the cell mass below the tangent point, at l_{k+1} the mass above.
        d = np.zeros(n)
        np.subtract(below_p, below_xq, out=d[:-1])
        above_xq = xq_cell - below_xq
        above_xq *= e_h
        above_xq -= p_cell - below_p
        np.maximum(d[1:], above_xq, out=d[1:])
        np.maximum(d, 0.0, out=d)
        d[0] = d[-1] = 0.0
        return d, correct(d)

    def correct(d: np.ndarray) -> np.ndarray:
        s = np.diff(d)
        g = np.zeros(n)
        g[:-1] = s
        g[1:] -= e_h * s
        out = ctd - g / denominator
        out[-1] += above
        return out

    # Negative masses below this local level are float round-off, not non-convexity: they
    # are clipped (and counted in the deficit) rather than repaired.
    local = ctd.copy()
    np.maximum(local[1:], ctd[:-1], out=local[1:])
    np.maximum(local[:-1], ctd[1:], out=local[:-1])
    tolerance = -np.maximum(1e-12 * local, 1e-25)  # below 1e-25 absolute: negligible, clipped
    move(np.nonzero(mode)[0])
    d, optimistic_probs = build()
    for _ in range(16):
        bad = np.nonzero(optimistic_probs < tolerance)[0]
        if bad.size == 0:
            break
        lower = bad[bad < n // 2] + 1
        upper = bad[bad >= n // 2] - 2
        lower = lower[(lower < n - 1)]
        upper = upper[(upper >= 0)]
        switch_low = lower[mode[lower] == 0]
        switch_high = upper[mode[upper] == 0]
        if switch_low.size == 0 and switch_high.size == 0:
            break
        mode[switch_low] = -1
        mode[switch_high] = 1
        move(np.concatenate((switch_low, switch_high)))
        d, optimistic_probs = build()
    for _ in range(50):
        bad = np.nonzero(optimistic_probs[1:-1] < tolerance[1:-1])[0] + 1
        if bad.size == 0 or -float(np.sum(optimistic_probs[bad])) > 1e-6:
            break  # nothing left, or too much for smoothing: the fallback below takes over
        d[bad] += -optimistic_probs[bad] * denominator / (1.0 + e_h)
        optimistic_probs = correct(d)
    negative = float(-np.sum(np.minimum(optimistic_probs, 0.0)))
    if negative <= ROUNDOFF_DEFICIT:
        optimistic = LossPmf(h, k0, np.maximum(optimistic_probs, 0.0), loss.infinity_mass, False,
                             deficit=negative, shift=shift)
    else:
        # The tangent construction could not be made convex here (a loss concentrated well
        # inside one cell). Fall back to the coupling bound: the connect-the-dots masses moved
        # down one grid step sit at or below the loss they came from, so every composed
        # δ(ε) = E_P[(1 − e^{ε − ΣL})_+] can only decrease. First order in h.
        shifted = ctd.copy()
        shifted[-1] += above
        optimistic = LossPmf(h, k0 - 1, shifted, loss.infinity_mass, False, shift=shift, order=1)
    return pessimistic, optimistic
