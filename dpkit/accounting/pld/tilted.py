"""ε at tiny δ and δ(ε) down to 1e-300: composition of discretised losses under exponential tilting.

The FFT composition of :mod:`.algebra` has an absolute round-off of about 1e-16 times the
largest mass, so the upper tail that decides δ(ε) for δ ≪ 1e-15 drowns in round-off (and the
default grid tail of 1e-30 alone ends the range). Tilting moves the tail to the centre: for
single-step pmfs p⁽ⁱ⁾ and λ ≥ 0 let q⁽ⁱ⁾_k = p⁽ⁱ⁾_k e^{λ l_k} / M_i(λ), M_i(λ) = Σ_k p⁽ⁱ⁾_k e^{λ l_k}.
The composition of the q⁽ⁱ⁾ is the tilted composition (tilting commutes with convolution), so

    P(S = s) = Q_λ(S = s) · e^{−λ s} · Π_i M_i(λ)^{cᵢ}                (exact),

and with λ chosen so that Q_λ has its mean at the ε sought (the saddle point, as in
Koskela et al. 2021's Chernoff windows) the FFT resolves Q_λ there to relative precision;
the untilting is done in log space. Mass the tilted composition drops or mis-rounds (its
window tails and a-posteriori round-off, D in tilted measure) contributes at most
D · e^{−λ s₀} · Π M_i^{cᵢ} to δ(ε) for every ε ≥ s₀ (since e^{−λs} ≤ e^{−λ s₀} there and
(1 − e^{ε−s})₊ ≤ 1); it is added to the upper bound and subtracted from the lower bound.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import special

from dpkit.accounting.pld import algebra
from dpkit.accounting.pld.pmf import LossPmf

#: The tilted error term may add at most these fractions of δ, tried in turn (s₀ is placed accordingly).
_ERROR_SHARES = (1e-6, 1e-3, 0.1)


#: Blocks per pmf of the generating-function bound that the Chernoff searches use (:func:`_upper_blocks`).
_SEARCH_BLOCKS = 4096


def _finite(pmf: LossPmf) -> tuple[np.ndarray, np.ndarray]:
    """Losses and log-masses of the non-zero finite entries of ``pmf``."""
    return pmf.finite_log


def _upper_blocks(pmf: LossPmf) -> tuple[np.ndarray, np.ndarray]:
    """(losses, log masses) of ``pmf`` merged into at most :data:`_SEARCH_BLOCKS` blocks, each block's mass at
    its highest loss: for λ ≥ 0 its generating function Σ p e^{λl} is at least that of ``pmf``, so the Chernoff
    bounds computed from it still bound P(S > ε) from above (and cost the same for any grid)."""
    size = max(1, -(-pmf.size // _SEARCH_BLOCKS))
    padded = np.zeros(-(-pmf.size // size) * size)
    padded[: pmf.size] = pmf.probs
    mass = padded.reshape(-1, size).sum(axis=1)
    top = pmf.losses[np.minimum(size * np.arange(1, mass.size + 1), pmf.size) - 1]
    keep = mass > 0
    return top[keep], np.log(mass[keep])


def _upper_log_mgf(steps, lams: np.ndarray) -> np.ndarray:
    """An upper bound on K(λ) = Σ cᵢ log Mᵢ(λ) for each λ ≥ 0 in ``lams`` (:func:`_upper_blocks`)."""
    total = np.zeros(lams.size)
    for pmf, count in steps:
        losses, logm = _upper_blocks(pmf)
        total += count * special.logsumexp(logm[None, :] + lams[:, None] * losses[None, :], axis=1)
    return total


def _cumulants(steps, lam: float) -> tuple[float, float, float]:
    """K(λ) = Σ cᵢ log Mᵢ(λ) and the mean and variance of the λ-tilted composed loss."""
    k = mean = var = 0.0
    for pmf, count in steps:
        losses, logp = _finite(pmf)
        log_w = logp + lam * losses
        log_m = float(special.logsumexp(log_w))
        w = np.exp(log_w - log_m)
        m1 = float(np.sum(w * losses))
        k += count * log_m
        mean += count * m1
        var += count * float(np.sum(w * (losses - m1) ** 2))
    return k, mean, var


def _saddle(steps, target: float) -> float:
    """λ ≥ 0 with tilted mean Σ cᵢ E_{q⁽ⁱ⁾}[L] = ``target`` (0 if the untilted mean is already above).

    λ is capped at 1e6 / |target|: untilting subtracts λs from log-masses (s ≈ target), and
    beyond that the cancellation would cost more than about 1e-9 relative accuracy (the
    allowance :func:`_solve` makes for it grows accordingly).
    """
    if _cumulants(steps, 0.0)[1] >= target:
        return 0.0
    cap = 1e6 / max(1.0, abs(target))
    if _cumulants(steps, cap)[1] <= target:
        return cap
    top = sum(count * float(pmf.losses[np.nonzero(pmf.probs)[0][-1]]) for pmf, count in steps)
    if target >= top:
        target = top - 1e-9 * max(1.0, abs(top))
    # Safeguarded Newton on the increasing mean m(λ) = K'(λ), whose slope is the variance K''(λ).
    lo, hi = 0.0, cap
    lam = min(1.0, 0.5 * cap)
    for _ in range(100):
        _, mean, var = _cumulants(steps, lam)
        if abs(mean - target) <= 1e-6 * max(1.0, abs(target)):
            return lam
        if mean < target:
            lo = lam
        else:
            hi = lam
        step = lam + (target - mean) / max(var, 1e-300)
        if not lo < step < hi:
            step = 0.5 * (lo + hi)
        lam = step
    return lam


def chernoff_epsilon(steps, delta: float) -> float:
    """min over λ of (K(λ) − log δ)/λ: where the Chernoff bound on P(S > ε) meets δ (a first guess; K is bounded
    above by :func:`_upper_log_mgf`)."""
    lams = np.geomspace(1e-3, 1e4, 71)
    return float(np.min((_upper_log_mgf(steps, lams) - math.log(delta)) / lams))


def chernoff_log_delta(steps, epsilons: np.ndarray) -> np.ndarray:
    """min over λ of K(λ) − λε ≥ log P(S > ε) ≥ log δ(ε) for each ε (finite part; a first estimate of δ's scale;
    K bounded above by :func:`_upper_log_mgf`, so the value stays an upper bound)."""
    lams = np.geomspace(1e-3, 1e4, 71)
    k = _upper_log_mgf(steps, lams)
    return np.min(k[:, None] - lams[:, None] * np.atleast_1d(epsilons)[None, :], axis=0)


def _tilted_composition(steps, lam: float, tail: float, max_points: int) -> tuple[LossPmf, float]:
    """The composed λ-tilted pmf (its ``infinity_mass`` is the dropped/round-off tilted mass D) and K(λ)."""
    composed = []
    k_total = 0.0
    for pmf, count in steps:
        with np.errstate(divide="ignore"):
            log_w = np.log(pmf.probs) + lam * pmf.losses
        log_m = float(special.logsumexp(log_w))
        k_total += count * log_m
        tilted = LossPmf(pmf.h, pmf.offset, np.exp(log_w - log_m), 0.0, True, shift=pmf.shift)
        composed.append(algebra.self_compose(tilted, count, tail, max_points).settled())  # (D counts all of it)
    ordered = sorted(composed, key=lambda p: p.size)
    result = ordered[0]
    for pmf in ordered[1:]:
        result = algebra.compose(result, pmf, 0.0)  # tail 0: no mass is moved (moving it is unsafe here)
    return result, k_total


def tilted_epsilon(steps: list[tuple[LossPmf, int]], delta: float, tail: float, max_points: int,
                   guess: float | None = None) -> float | None:
    """Certified ε at ``delta`` of the composition of ``steps`` ((single-step pmf, count) pairs,
    all pessimistic or all optimistic, on one spacing), by exponential tilting.

    Pessimistic steps give an upper bound (``inf`` if the +∞ atoms alone exceed ``delta``);
    optimistic steps give a lower bound, or None when no non-trivial one can be certified.
    """
    pessimistic = steps[0][0].pessimistic
    infinity, deficit, top = _atoms(steps)
    if pessimistic and infinity >= delta:
        return math.inf
    if not pessimistic and deficit >= delta:
        return None
    # No finite loss exceeds ``top``, the sum of the steps' largest ones: above it δ(ε) is the +∞ mass alone.
    if guess is None or not math.isfinite(guess):
        guess = min(chernoff_epsilon(steps, delta), top)
    answer = None
    for _ in range(3):
        lam = _saddle(steps, guess)
        composed, k_total = _tilted_composition(steps, lam, tail, max_points)
        answer = _solve(composed, k_total, lam, delta, infinity, deficit, pessimistic)
        if pessimistic:
            answer = min(answer, math.nextafter(max(_top_range(steps)[1], 0.0), math.inf))
        if answer is None or not math.isfinite(answer):
            break
        spread = math.sqrt(max(_cumulants(steps, lam)[2], 1e-300))
        if abs(answer - guess) <= 2.0 * spread:
            break
        guess = answer
    if pessimistic:
        return answer
    atom = _top_atom_epsilon(steps, _top_range(steps)[0], delta, deficit)
    if answer is None or atom is None:
        return answer if atom is None else atom
    return max(answer, atom)


def _top_atom_epsilon(steps, top: float, delta: float, deficit: float) -> float | None:
    """A lower bound on ε at ``delta`` from the top atom alone (optimistic steps), or None; ``top`` is the
    lower end of :func:`_top_range` (placing the atom lower only lowers δ).

    The composed loss equals ``top`` only when every step is at its largest loss, so
    P(S = top) = m = Π pᵢ^{cᵢ} exactly (pᵢ the top masses), no FFT involved, and
    δ(ε) ≥ m(1 − e^{ε − top}) − deficit. For ε′ < top + log(1 − (δ + deficit)/m) this exceeds δ,
    so that value bounds ε from below. It is what certifies ε when δ is below the FFT's round-off
    relative to the top atom (a pure-DP or subsampled Laplace composition at δ = 1e-50: ε is the
    largest loss to within 1e-40)."""
    log_m = sum(count * math.log(float(pmf.probs[np.nonzero(pmf.probs)[0][-1]])) for pmf, count in steps)
    log_m += math.log1p(-1e-12)  # the float log-sum, rounded down
    ratio = (delta + deficit) / math.exp(log_m) if log_m > -745.0 else math.inf
    if ratio >= 1.0:
        return None
    value = top + math.log1p(-ratio)
    return math.nextafter(value, -math.inf) if value > 0 else None


def _top_range(steps) -> tuple[float, float]:
    """An interval around the largest finite composed loss Σ cᵢ·lᵢ: each grid loss shift + k h is a float
    (a few ulps off the grid point it stands for) and so is the sum; the ends are moved by that error so
    that "no loss above top" stays true (upper end) and the top atom is not placed too high (lower end)."""
    tops = [(count, float(pmf.losses[np.nonzero(pmf.probs)[0][-1]]), abs(pmf.shift)) for pmf, count in steps]
    top = sum(count * loss for count, loss, _ in tops)
    error = 8.0 * 2.0**-53 * sum(count * (abs(loss) + shift) for count, loss, shift in tops) + 2.0**-52 * abs(top)
    return top - error, top + error


def _atoms(steps) -> tuple[float, float, float]:
    """(mass of the composed +∞ atom, composed deficit, largest finite composed loss) of ``steps``."""
    log_finite = sum(count * math.log1p(-min(pmf.infinity_mass, 1.0)) if pmf.infinity_mass < 1.0 else -math.inf
                     for pmf, count in steps)
    deficit = sum(count * pmf.deficit for pmf, count in steps)
    top = sum(count * float(pmf.losses[np.nonzero(pmf.probs)[0][-1]]) for pmf, count in steps)
    return -math.expm1(log_finite), deficit, top


def tilted_delta(steps: list[tuple[LossPmf, int]], epsilon: float, tail: float, max_points: int) -> float:
    """Certified δ(ε) of the composition of ``steps`` (as in :func:`tilted_epsilon`), by exponential tilting.

    λ is the saddle point at ε (the tilted composition has its mean there, where the FFT resolves
    it to relative precision), and

        δ(ε) = Σ_{s > ε} P(S = s)(1 − e^{ε − s}) + p_∞ = e^{A}(1 − e^{ε + B − A}) + p_∞,

    with A = log Σ_{s>ε} P(S = s), B = log Σ_{s>ε} P(S = s) e^{−s} summed in log space from the
    untilted log-masses log r_s − λs + K(λ). Tilted mass the composition drops or mis-rounds (D)
    adds at most D e^{K − λε} (every s ≥ ε has e^{−λs} ≤ e^{−λε}); it is added to the upper bound
    and subtracted from the lower one, as are the relative round-off of the sums and of untilting.
    Pessimistic steps give an upper bound, optimistic steps a lower bound (≥ 0).
    """
    pessimistic = steps[0][0].pessimistic
    infinity, deficit, _ = _atoms(steps)
    top_low, top_high = _top_range(steps)
    if epsilon >= (top_high if pessimistic else top_low):  # no finite loss exceeds ε: only the +∞ atoms count
        return min(1.0, infinity) if pessimistic else max(0.0, infinity - deficit)
    lam = _saddle(steps, epsilon)
    composed, k_total = _tilted_composition(steps, lam, tail, max_points)
    losses, log_r = _finite(composed)
    log_p = log_r - lam * losses + k_total
    cancellation = lam * float(np.max(np.abs(losses))) + abs(k_total) + float(np.max(np.abs(log_r)))
    roundoff = (16.0 + math.log2(max(2, composed.size)) + 4.0 * cancellation) * 2.0**-53
    error = composed.infinity_mass * math.exp(min(700.0, k_total - lam * epsilon))
    above = losses > epsilon
    if not np.any(above):
        finite = 0.0
    else:
        log_a = float(special.logsumexp(log_p[above]))
        log_b = float(special.logsumexp(log_p[above] - losses[above]))
        # gap = ε + B − A ≤ 0, a difference of log-sums each off by a few ulps of its size.
        uncertainty = 64.0 * 2.0**-53 * (abs(epsilon) + abs(log_b) + abs(log_a) + 1.0)
        gap = epsilon + log_b - log_a
        gap = min(gap - uncertainty if pessimistic else gap + uncertainty, 0.0)
        finite = math.exp(log_a + math.log(-math.expm1(gap))) if gap < 0 else 0.0
    if pessimistic:
        return min(1.0, math.nextafter(finite * (1.0 + roundoff) + error + infinity, math.inf))
    lower = finite * (1.0 - roundoff) - error - deficit + infinity
    # The top atom alone (see _top_atom_epsilon): P(S = top) = Π pᵢ^{cᵢ}, exactly.
    log_m = sum(count * math.log(float(pmf.probs[np.nonzero(pmf.probs)[0][-1]])) for pmf, count in steps)
    atom = math.exp(log_m + math.log1p(-1e-12)) * -math.expm1(epsilon - top_low) if log_m > -745.0 else 0.0
    lower = max(lower, atom * (1.0 - 1e-12) - deficit + infinity)
    return max(0.0, math.nextafter(lower, -math.inf))


def _solve(composed: LossPmf, k_total: float, lam: float, delta: float, infinity: float, deficit: float,
           pessimistic: bool) -> float | None:
    """Smallest ε ≥ s₀ with the bounded δ(ε) ≤ ``delta`` on the untilted composition (log space).

    The error term's share of δ is tried at :data:`_ERROR_SHARES` in turn (every share gives a
    valid bound, as the term is charged to the budget): a small share keeps the bound tight, a
    larger one moves s₀ down when the mass sits at the top of the loss range (λ large, ε just
    below the largest loss), where e^{K − λs} grows fast below the top."""
    for share in _ERROR_SHARES:
        answer = _solve_at_share(composed, k_total, lam, delta, infinity, deficit, pessimistic, share)
        if answer is not None and math.isfinite(answer):
            return answer
    return answer


def _solve_at_share(composed: LossPmf, k_total: float, lam: float, delta: float, infinity: float, deficit: float,
                    pessimistic: bool, share: float) -> float | None:
    """:func:`_solve` with the error term at most ``share`` · δ from s₀ up."""
    losses, log_r = _finite(composed)
    log_p = log_r - lam * losses + k_total  # log P(S = s) of the finite part
    dropped = composed.infinity_mass
    # Sum round-off, plus the cancellation of untilting (log P = log r − λs + K) in log space.
    cancellation = lam * float(np.max(np.abs(losses))) + abs(k_total) + float(np.max(np.abs(log_r)))
    roundoff = (16.0 + math.log2(max(2, composed.size)) + 4.0 * cancellation) * 2.0**-53
    # s₀: from here up, the error term D e^{K − λ s} is at most share · δ.
    s0 = -math.inf
    error = 0.0
    if dropped > 0 and lam > 0:
        s0 = (k_total + math.log(dropped) - math.log(share * delta)) / lam
        error = dropped * math.exp(min(700.0, k_total - lam * s0))
    elif dropped > 0:
        error = dropped * math.exp(min(700.0, k_total))
    if pessimistic:
        budget = (delta - infinity - error) / (1.0 + roundoff)
    else:
        budget = (delta - infinity + error + deficit) / (1.0 - roundoff)
    if budget <= 0:
        return math.inf if pessimistic else None
    log_budget = math.log(budget)
    # Suffix sums above each point: A_j = log Σ_{i≥j} P_i, B_j = log Σ_{i≥j} P_i e^{−s_i}.
    a = np.concatenate((np.logaddexp.accumulate(log_p[::-1])[::-1], [-np.inf]))
    b = np.concatenate((np.logaddexp.accumulate((log_p - losses)[::-1])[::-1], [-np.inf]))
    # δ just at grid point s_j (mass strictly above it): A_{j+1} + log(1 − e^{s_j + B_{j+1} − A_{j+1}}).
    # gap = s_j + B − A is a difference of O(1) log-sums, each off by a few ulps of its size: when the losses
    # are tiny, gap is lost in that round-off, so it is moved by its error bound to the safe side.
    uncertainty = 64.0 * 2.0**-53 * (np.abs(losses) + np.abs(b[1:]) + np.abs(a[1:]) + 1.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        raw = losses + b[1:] - a[1:]
        gap = np.minimum(raw - uncertainty if pessimistic else raw + uncertainty, 0.0)
        log_delta_at = np.where(np.isneginf(a[1:]), -np.inf, a[1:] + np.log(-np.expm1(gap)))  # no mass above: δ = 0
    ok = (losses >= max(0.0, s0)) & (log_delta_at <= log_budget)
    candidates = np.nonzero(ok)[0]
    if candidates.size == 0:
        return math.inf if pessimistic else None
    j = int(candidates[0])
    floor = max(0.0, s0)
    lower_end = float(losses[j - 1]) if j > 0 else -math.inf
    # On [s_{j−1}, s_j): δ(ε) = e^{A_j} − e^{ε + B_j}; solve = budget.
    a_j, b_j = float(a[j]), float(b[j])
    if a_j <= log_budget:
        value = lower_end
    else:
        value = a_j + math.log(-math.expm1(log_budget - a_j)) - b_j
    value = min(max(value, lower_end), float(losses[j]))
    if pessimistic and uncertainty[j] > 1e-3 * abs(raw[j]):  # the in-cell solution is not resolved: the grid point is
        value = float(losses[j])
    if value < floor:
        # The crossing lies below s₀ (or 0), where the error term is not controlled: ε = s₀ is
        # still a valid upper bound, but no lower bound is certified.
        return floor if pessimistic else None
    return math.nextafter(value, math.inf if pessimistic else -math.inf)
