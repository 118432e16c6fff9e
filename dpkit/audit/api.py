"""``audit``: test a claimed (ε, δ) of a black-box mechanism and bound its true ε from below.

Scheme (one error budget α = 1 − confidence per call):

1. **Selection.** Every pair gets a small sample on each input; the three most promising
   pairs get as much again. All event families of :mod:`dpkit.audit.events` are built
   from these samples and ranked by the bound they are expected to give on the
   confirmation sample.
2. **Confirmation.** The best ``K`` candidates (from at most two pairs) are counted on
   *fresh* samples, streamed in batches. Each gets level α/K (Bonferroni); its bound
   ``ln((p1_lower − δ)/p2_upper)`` uses one-sided Clopper–Pearson intervals at α/(2K).
   The reported bound is the largest, floored at 0; it holds with probability ≥ 1 − α
   whatever the selection did, because the selection sample is never reused.
3. **Sequential mode** (``sequential=True``) replaces step 2's fixed sample by rounds of
   batches and Clopper–Pearson by betting confidence sequences (anytime valid), stopping
   as soon as the claim is refuted or every candidate looks hopeless.

References
----------
.. [1] Z. Ding et al., "Detecting Violations of Differential Privacy", CCS 2018.
.. [2] B. Bichsel et al., "DP-Sniper: Black-Box Discovery of Differential Privacy
       Violations using Classifiers", IEEE S&P 2021.
.. [3] M. Lyu, D. Su, N. Li, "Understanding the Sparse Vector Technique for Differential
       Privacy", PVLDB 10(6), 2017.
"""

from __future__ import annotations

import concurrent.futures
import math
import time
from typing import Any, Callable

import numpy as np
from scipy import stats

from dpkit._validation import check_integer, check_nonnegative, check_open_unit, check_positive, check_unit_interval
from dpkit.audit.events import Candidate, select_candidates
from dpkit.audit.pairs import resolve_pairs
from dpkit.audit.result import AuditResult
from dpkit.audit.runner import Runner
from dpkit.audit.sequential import BettingBound
from dpkit.audit.statistics import claim_p_value, cp_lower, cp_upper, epsilon_lower_bound

__all__ = ["audit", "DEFAULT_SAMPLES"]

DEFAULT_SAMPLES = 10_000_000
_SELECT, _CONFIRM, _REFINE = 0, 1, 2
_REFINED_PAIRS = 3


def _entropy(rng: Any) -> tuple[int, Any]:
    """Root entropy for all batch seeds, and the value to record as the result's seed."""
    if rng is None:
        entropy = int(np.random.SeedSequence().entropy)
        return entropy, entropy
    if isinstance(rng, np.random.Generator):
        entropy = int(rng.integers(0, 2**63))
        return entropy, entropy
    if isinstance(rng, np.random.SeedSequence):
        return int(rng.entropy), int(rng.entropy)
    if isinstance(rng, (bool, float)) or not isinstance(rng, (int, np.integer)):
        raise TypeError(f"rng must be a numpy.random.Generator, an int seed or None, got rng={rng!r}")
    if int(rng) < 0:
        raise ValueError(f"rng seed must be >= 0, got rng={rng}")
    return int(rng), int(rng)


def _choose(cands: list[Candidate], k: int, max_pairs: int = 2) -> list[Candidate]:
    cands = sorted(cands, key=lambda c: -c.predicted)
    chosen: list[Candidate] = []
    pairs: list[int] = []
    for c in cands:
        if len(chosen) == k:
            break
        if c.pair_index not in pairs:
            if len(pairs) == max_pairs:
                continue
            pairs.append(c.pair_index)
        chosen.append(c)
    return chosen


def audit(mechanism: Callable[[Any, int, np.random.Generator], Any], pairs: Any, claimed_epsilon: float,
          claimed_delta: float = 0.0, confidence: float = 0.95, samples: int | None = None, rng: Any = 0,
          executor: concurrent.futures.Executor | None = None, *, sequential: bool = False,
          candidates: int = 4, selection_fraction: float = 0.2, batch_size: int = 1 << 16,
          progress: Callable[[int, int], None] | None = None, batch_timeout: float | None = None) -> AuditResult:
    """Test the claim "``mechanism`` is (ε, δ)-DP" and lower-bound its true ε.

    Parameters
    ----------
    mechanism
        ``mechanism(database, n, rng)`` returning ``n`` independent outputs, first axis =
        sample (use :func:`~dpkit.audit.from_scalar` for ``f(database, rng)``). Outputs are
        numbers or fixed-length vectors; encode ⊥ as NaN or a sentinel code.
    pairs
        Neighbouring inputs: a list of ``(D, D′)``, a name (``"statdp"``, ``"statdp-one"``,
        ``"statdp-monotone"``) or a :class:`~dpkit.audit.StatDPPatterns`.
    claimed_epsilon, claimed_delta
        The claim under test; ``claimed_delta`` also enters the bound ``ln((p1 − δ)/p2)``.
    confidence
        ``1 − α``: the bound holds, and a true claim is flagged, with probability ≥ / ≤ as stated.
    samples
        Total mechanism outputs (both inputs, selection and confirmation); default 10⁷.
    rng
        Seed (int), ``Generator`` or ``None`` (fresh entropy, recorded in ``result.seed``).
    executor
        Any :class:`concurrent.futures.Executor`; results do not depend on it.
    sequential
        Anytime-valid confirmation that may stop before using all ``samples``.
    candidates
        ``K``, the number of confirmed events sharing α (Bonferroni).
    selection_fraction
        Share of ``samples`` spent on selection.
    batch_size
        Outputs per task (part of the seed derivation).
    progress
        Callback ``progress(done, total)`` (the CLI draws a bar with it).
    batch_timeout
        Seconds one batch of ``batch_size`` outputs may take (default ``None``: no limit); a
        slower batch raises :class:`~dpkit.audit.runner.AuditTimeoutError` (a ``TimeoutError``)
        instead of hanging.

    Returns
    -------
    AuditResult
        ``epsilon_lower_bound``, ``violation``, ``p_value``, ``witness``, ``samples``, ``seconds``...

    Raises
    ------
    ValueError, TypeError
        Invalid arguments or pairs (the message names the parameter and the allowed range).
    MechanismError
        ``mechanism`` raised (a ``RuntimeError`` whose message shows the mechanism's own
        traceback lines).
    AuditTimeoutError
        A batch took longer than ``batch_timeout``.

    Examples
    --------
    >>> import numpy as np
    >>> def leaky(db, n, rng):          # Laplace count with half the noise it needs
    ...     return np.sum(db) + rng.laplace(scale=0.5, size=n)
    >>> r = audit(leaky, [([0, 1], [1, 1])], claimed_epsilon=1.0, samples=400_000, rng=1)
    >>> r.violation, r.epsilon_lower_bound > 1.5
    (True, True)
    """
    start = time.perf_counter()
    if not callable(mechanism):
        raise TypeError(f"mechanism must be callable as mechanism(database, n, rng), got {mechanism!r}")
    claimed_epsilon = check_nonnegative("claimed_epsilon", claimed_epsilon)
    claimed_delta = check_unit_interval("claimed_delta", claimed_delta, include_one=False)
    confidence = check_open_unit("confidence", confidence)
    total = DEFAULT_SAMPLES if samples is None else check_integer("samples", samples, minimum=1)
    k_max = check_integer("candidates", candidates, minimum=1)
    selection_fraction = check_open_unit("selection_fraction", selection_fraction)
    batch_size = check_integer("batch_size", batch_size, minimum=1)
    if executor is not None and not isinstance(executor, concurrent.futures.Executor) and not hasattr(executor, "submit"):
        raise TypeError(f"executor must be a concurrent.futures.Executor, got {executor!r}")
    if batch_timeout is not None:
        batch_timeout = check_positive("batch_timeout", batch_timeout)
    pair_list = resolve_pairs(pairs)
    entropy, seed = _entropy(rng)
    alpha = 1.0 - confidence

    # selection budget: half screens every pair, half refines the most promising ones
    n_sel = int(selection_fraction * total) // (4 * len(pair_list))
    if n_sel < 100:
        raise ValueError(f"samples={total} is too small for {len(pair_list)} pairs: need at least "
                         f"{int(math.ceil(400 * len(pair_list) / selection_fraction))}")
    refine = min(_REFINED_PAIRS, len(pair_list))
    n_ref = int(selection_fraction * total) // (4 * refine)
    runner = Runner(mechanism, entropy, executor, batch_size, progress, batch_timeout)
    runner.planned = total

    # 1. selection (stage 1: screen all pairs; stage 2: more outputs for the best pairs)
    remaining = total - 2 * n_sel * len(pair_list) - 2 * n_ref * refine
    z = float(stats.norm.isf(alpha / (2 * k_max)))
    confirm_guess = max(remaining // 2, 1)
    samples_of: dict[int, tuple[np.ndarray, np.ndarray]] = {}
    per_pair: dict[int, list[Candidate]] = {}
    for i, pair in enumerate(pair_list):
        x1 = runner.sample(pair.first, n_sel, (_SELECT, i, 0))
        x2 = runner.sample(pair.second, n_sel, (_SELECT, i, 1))
        if x1.shape[1] != x2.shape[1]:
            raise ValueError(f"outputs on the two inputs of pair {pair.label!r} must have the same shape, "
                             f"got {x1.shape[1]} and {x2.shape[1]} values per output")
        samples_of[i] = (x1, x2)
        per_pair[i] = select_candidates(x1, x2, i, delta=claimed_delta, confirm_size=confirm_guess, z=z)
    ranking = sorted(per_pair, key=lambda i: -max((c.predicted for c in per_pair[i]), default=-math.inf))
    for i in ranking[:refine]:
        pair = pair_list[i]
        x1 = np.vstack([samples_of[i][0], runner.sample(pair.first, n_ref, (_REFINE, i, 0))])
        x2 = np.vstack([samples_of[i][1], runner.sample(pair.second, n_ref, (_REFINE, i, 1))])
        per_pair[i] = select_candidates(x1, x2, i, delta=claimed_delta, confirm_size=confirm_guess, z=z)
    samples_of.clear()
    found = [c for cands in per_pair.values() for c in cands]
    chosen = _choose(found, k_max)
    if not chosen:  # no event has probability above δ on either input: nothing to confirm
        return AuditResult(0.0, False, 1.0, {"note": "no event had a selection frequency above claimed_delta"},
                           int(runner.samples), time.perf_counter() - start, claimed_epsilon, claimed_delta,
                           confidence, seed, "select-then-confirm: nothing selected", 0,
                           ("no candidate event; the bound 0 is trivially valid", *_pair_notes(pair_list)))
    k = len(chosen)
    by_pair: dict[int, list[int]] = {}
    for j, c in enumerate(chosen):
        by_pair.setdefault(c.pair_index, []).append(j)
    m = remaining // (2 * len(by_pair))
    if m < 1:
        raise ValueError(f"samples={total} leaves nothing for confirmation")

    # 2. confirmation
    counts = np.zeros((k, 2), dtype=np.int64)  # counts on (pair.first, pair.second)
    used = np.zeros(k, dtype=np.int64)
    level = alpha / k
    stopped_early = False
    if not sequential:
        for pi, idx in by_pair.items():
            events = [chosen[j].event for j in idx]
            c1 = runner.count(pair_list[pi].first, m, (_CONFIRM, pi, 0), events)
            c2 = runner.count(pair_list[pi].second, m, (_CONFIRM, pi, 1), events)
            for t, j in enumerate(idx):
                counts[j] = (c1[t], c2[t])
                used[j] = m
        bounds, pvals, p1s, p2s = [], [], [], []
        for j, c in enumerate(chosen):
            a, b = (counts[j, 1], counts[j, 0]) if c.reverse else (counts[j, 0], counts[j, 1])
            bounds.append(epsilon_lower_bound(a, m, b, m, claimed_delta, level))
            pvals.append(claim_p_value(a, m, b, m, claimed_epsilon, claimed_delta, alpha_cap=level))
            p1s.append(cp_lower(a, m, level / 2))
            p2s.append(cp_upper(b, m, level / 2))
        method = (f"select-then-confirm: events chosen on {n_sel} outputs per input of each of {len(pair_list)} pairs "
                  f"(+{n_ref} for the best {refine}), "
                  f"confirmed on {m} fresh outputs per input; one-sided Clopper-Pearson; Bonferroni over {k} candidates")
    else:
        rounds_batches = max(1, (m // batch_size) // 20)  # ~20 looks at the data
        lows = [BettingBound(level / 2, "lower") for _ in chosen]
        ups = [BettingBound(level / 2, "upper") for _ in chosen]
        next_batch = 0
        bounds = [-math.inf] * k
        history: list[list[tuple[int, int, int]]] = [[] for _ in chosen]  # (numerator, denominator, n) per round
        while used.max(initial=0) < m:
            n_round = min(rounds_batches * batch_size, m - int(used.max()))
            for pi, idx in by_pair.items():
                events = [chosen[j].event for j in idx]
                c1 = runner.count(pair_list[pi].first, n_round, (_CONFIRM, pi, 0), events, next_batch)
                c2 = runner.count(pair_list[pi].second, n_round, (_CONFIRM, pi, 1), events, next_batch)
                for t, j in enumerate(idx):
                    a, b = (c2[t], c1[t]) if chosen[j].reverse else (c1[t], c2[t])
                    lows[j].update(int(a), n_round)
                    ups[j].update(int(b), n_round)
                    history[j].append((int(a), int(b), n_round))
                    counts[j] += (c1[t], c2[t])
                    used[j] += n_round
            next_batch += rounds_batches
            for j in range(k):
                lo, up = lows[j].bound(), ups[j].bound()
                bounds[j] = math.log(lo - claimed_delta) - math.log(up) if lo > claimed_delta else -math.inf
            if max(bounds) > claimed_epsilon:
                stopped_early = used.max() < m
                break
            if _hopeless(chosen, counts, used, claimed_epsilon, claimed_delta):
                stopped_early = used.max() < m
                break
        p1s = [b.bound() for b in lows]
        p2s = [b.bound() for b in ups]
        pvals = [_sequential_p_value(history[j], claimed_epsilon, claimed_delta, level) for j in range(k)]
        method = (f"select-then-confirm (sequential): events chosen on {n_sel} outputs per input of each of "
                  f"{len(pair_list)} pairs, confirmed with betting confidence sequences (anytime valid) on up to "
                  f"{m} outputs per input; Bonferroni over {k} candidates" + ("; stopped early" if stopped_early else ""))
    best = int(np.argmax(bounds))
    eps_lb = max(0.0, float(bounds[best]))
    p_value = min(1.0, k * min(pvals))
    c = chosen[best]
    pair = pair_list[c.pair_index]
    a, b = (counts[best, 1], counts[best, 0]) if c.reverse else (counts[best, 0], counts[best, 1])
    witness = {
        "pair": pair.to_dict(),
        "direction": "Pr[M(D') in S] vs Pr[M(D) in S]" if c.reverse else "Pr[M(D) in S] vs Pr[M(D') in S]",
        "event": c.event.describe(),
        "count_numerator": int(a), "count_denominator": int(b), "samples_per_input": int(used[best]),
        "p_numerator_lower": float(p1s[best]), "p_denominator_upper": float(p2s[best]),
        "bound": float(bounds[best]),
    }
    return AuditResult(
        epsilon_lower_bound=eps_lb,
        violation=bool(eps_lb > claimed_epsilon),
        p_value=float(p_value),
        witness=witness,
        samples=int(runner.samples),
        seconds=time.perf_counter() - start,
        claimed_epsilon=claimed_epsilon,
        claimed_delta=claimed_delta,
        confidence=confidence,
        seed=seed,
        method=method,
        candidates=k,
        notes=_pair_notes(pair_list),
        references=_references(c, sequential),
    )


def _pair_notes(pair_list: list[Any]) -> tuple[str, ...]:
    """Say which pairs were taken as add/remove neighbours (inputs of different lengths)."""
    return tuple(f"pair {p.label!r} was audited as add/remove neighbours: its inputs have shapes "
                 f"{np.shape(p.first)} and {np.shape(p.second)} (one record more or less)"
                 for p in pair_list if p.add_remove)


def _references(witness: Candidate, sequential: bool) -> tuple[str, ...]:
    """Bibliography keys of the bound: Clopper & Pearson 1934 (fixed-sample mode) and Bichsel et
    al. 2021 when the witness event thresholds a learned score."""
    keys = () if sequential else ("clopper1934use",)
    feature = getattr(witness.event, "feature", None)
    if getattr(feature, "kind", None) == "score":
        keys += ("bichsel2021dpsniper",)
    return keys


def _sequential_bound(history: list[tuple[int, int, int]], delta: float, level: float) -> float:
    """The betting-sequence bound at ``level`` replayed on the recorded rounds."""
    low, up = BettingBound(level / 2, "lower"), BettingBound(level / 2, "upper")
    for a, b, n in history:
        low.update(a, n)
        up.update(b, n)
    lo, hi = low.bound(), up.bound()
    return math.log(lo - delta) - math.log(hi) if lo > delta else -math.inf


def _sequential_p_value(history: list[tuple[int, int, int]], epsilon: float, delta: float, level: float) -> float:
    """``inf{α : bound_α > ε}`` at the stopping time, by bisection in log α (upper end returned).

    Valid at any stopping time: for each α, ``Pr_H0[∃t: bound_α(t) > ε] ≤ α`` (the bounds are
    time-uniform), hence ``Pr_H0[p ≤ α] ≤ α``. Bracketed at ``level`` so that ``p ≤ level``
    exactly when the level-``level`` bound exceeds ε.
    """
    if _sequential_bound(history, delta, level) > epsilon:
        lo, hi = math.log(1e-300), math.log(level)
    elif _sequential_bound(history, delta, 0.999) > epsilon:
        lo, hi = math.log(level), math.log(0.999)
    else:
        return 1.0
    for _ in range(40):
        mid = 0.5 * (lo + hi)
        if _sequential_bound(history, delta, math.exp(mid)) > epsilon:
            hi = mid
        else:
            lo = mid
    return math.exp(hi)


def _hopeless(chosen: list[Candidate], counts: np.ndarray, used: np.ndarray, eps: float, delta: float) -> bool:
    """Futility rule for the sequential mode (any stopping rule keeps the bounds valid)."""
    for j, c in enumerate(chosen):
        n = max(int(used[j]), 1)
        a, b = (counts[j, 1], counts[j, 0]) if c.reverse else (counts[j, 0], counts[j, 1])
        p1, p2 = a / n, b / n
        hi = p1 + 4 * math.sqrt(max(p1, 1.0 / n) / n) - delta
        lo = p2 - 4 * math.sqrt(max(p2, 1.0 / n) / n)
        if hi > 0 and (lo <= 0 or math.log(hi) - math.log(lo) > eps):
            return False
    return True
