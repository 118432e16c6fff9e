"""Searching for neighbouring inputs, not only fixed patterns.

Why
---
The StatDP patterns (Ding et al. 2018, Sec. 5.1) are a few short inputs. A mechanism that is
∞-DP only "in the limit" (the sparse-vector variants of Lyu, Su & Li 2017, Alg. 5–6, whose
privacy loss grows with the number of ⊥ answers) shows a finite, often unremarkable ε on
them. DP-Finder (Bichsel et al. 2018) and CheckDP (Wang et al. 2020) search the input space
instead, and Delta-Siege (Lokna et al. 2023) spends a sample budget on many candidate
inputs before confirming the best. :func:`search_pairs` does the same for mechanisms whose
input is a vector of query answers.

Search space
------------
Pairs of vectors of length ``L`` in ``lengths``; coordinate ``i`` is in one of seven states
``(D_i, D′_i) = (c + aΔ, c + bΔ)`` with ``a, b ∈ {−1, 0, 1}`` and ``|a − b| ≤ 1`` (``c`` the
``centre``, ``Δ`` the sensitivity), so every candidate satisfies the ``"componentwise"``
relation of :mod:`dpkit.audit.pairs` (``relation="one"`` or ``"monotone"`` keeps only the
candidates that satisfy it). The first population holds the StatDP patterns of every length
and random one-, two- and three-block patterns and random vectors.

Procedure (successive halving with mutation)
--------------------------------------------
Round ``j`` draws ``n_j`` fresh outputs per input for each of ``P_j`` candidates and scores
each by its *screening estimate*: :func:`dpkit.audit.events.select_candidates` picks events on
the first half of the outputs, and the best event's bound expected on a confirmation of the
planned size is estimated from its counts on the second half (a plug-in normal/Poisson
approximation; held out, so the many events tried do not inflate it).
The best quarter survives, as many mutants of them (one coordinate changed, two swapped,
the pattern stretched to the next length, mirrored) join, ``n`` doubles and ``P`` halves,
until ``keep`` candidates remain; every round costs the same, so the whole search uses at
most ``budget`` outputs.

What the result means
---------------------
The screening estimate is **not** a certified bound: it is computed on the samples that
chose the pair (winner's curse). Confirm it with :func:`dpkit.audit.audit` on fresh samples,
``audit(mechanism, [result.pair], …)``; :func:`audit_searched` does both, with the
confirmation seeded independently of the search, so its ``epsilon_lower_bound`` holds with
probability ≥ ``confidence`` whatever the search did (the pair is fixed before the
confirmation draws a single output).

References
----------
.. [1] B. Bichsel, T. Gehr, D. Drachsler-Cohen, P. Tsankov, M. Vechev, "DP-Finder: Finding
       Differential Privacy Violations by Sampling and Optimization", CCS 2018.
.. [2] Y. Wang, Z. Ding, D. Kifer, D. Zhang, "CheckDP: An Automated and Integrated Approach
       for Proving Differential Privacy or Finding Precise Counterexamples", CCS 2020.
.. [3] J. Lokna, A. Paradis, D. I. Dimitrov, M. Vechev, "Group and Attack: Auditing
       Differential Privacy Libraries in the Presence of Floating-Point Issues", CCS 2023.
.. [4] M. Lyu, D. Su, N. Li, "Understanding the Sparse Vector Technique for Differential
       Privacy", PVLDB 10(6), 2017.
.. [5] Z. Ding, Y. Wang, G. Wang, D. Zhang, D. Kifer, "Detecting Violations of Differential
       Privacy", CCS 2018.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, Callable, Sequence

import numpy as np
from scipy import stats

from dpkit._validation import check_finite, check_integer, check_nonnegative, check_open_unit, check_positive, check_unit_interval, seed_entropy
from dpkit.audit.api import audit
from dpkit.audit.events import select_candidates
from dpkit.audit.pairs import RELATIONS, Pair, StatDPPatterns, check_pair
from dpkit.audit.result import AuditResult
from dpkit.audit.runner import Runner
from dpkit.audit.workers import start_workers

__all__ = ["SearchResult", "SearchedAudit", "search_pairs", "audit_searched"]

# (a, b): D_i = c + aΔ, D′_i = c + bΔ
_STATES = np.array([(-1, -1), (-1, 0), (0, -1), (0, 0), (0, 1), (1, 0), (1, 1)], dtype=float)
_SAME = {0, 3, 6}  # states where the coordinate does not move
_MIN_SAMPLES = 200  # fewest outputs per input a screening estimate is computed from
_SCREEN_CANDIDATES = 4  # the audit's default K, for the z of the predicted bound
_SEARCH_PHASE = 11  # spawn-key phase of the search draws
_HOLDOUT_EVENTS = 8  # events per pair re-counted on the held-out half
_MAX_VALUES = 1 << 24  # outputs × length held per input while screening (128 MiB of float64)
_MIN_TASKS = 16  # a screening request is cut into at least this many batches (of >= 256 outputs), for the workers


@dataclasses.dataclass(frozen=True)
class SearchResult:
    """The best neighbouring pair a search found, and how it was found.

    Attributes
    ----------
    pair
        The best pair (a validated :class:`~dpkit.audit.Pair`; its label spells the pattern).
    screening_estimate
        Its predicted bound on the last round's sample: an *estimate* chosen on the same data,
        not a certified bound (confirm with :func:`~dpkit.audit.audit` on fresh samples).
    screening_samples
        Outputs per input behind ``screening_estimate``.
    ranking
        ``(label, estimate)`` of the last round's candidates, best first.
    samples
        Mechanism outputs the search used (both inputs, all rounds).
    evaluated
        Distinct candidate pairs screened.
    rounds
        Successive-halving rounds.
    claimed_epsilon, claimed_delta, seed
        Inputs, copied back.
    notes
        Caveats.
    throughput
        The pilot, the workers and the run-time estimates (see :class:`~dpkit.audit.AuditResult`).
    """

    pair: Pair
    screening_estimate: float
    screening_samples: int
    ranking: tuple[tuple[str, float], ...]
    samples: int
    evaluated: int
    rounds: int
    claimed_epsilon: float
    claimed_delta: float
    seed: int
    notes: tuple[str, ...] = ()
    throughput: dict[str, Any] | None = None


@dataclasses.dataclass(frozen=True)
class SearchedAudit:
    """:func:`audit_searched`: the search and the confirming audit (whose bound is the certified one)."""

    search: SearchResult
    audit: AuditResult

    @property
    def epsilon_lower_bound(self) -> float:
        """The confirmed bound (``audit.epsilon_lower_bound``), valid with probability ≥ ``confidence``."""
        return self.audit.epsilon_lower_bound


@dataclasses.dataclass(frozen=True)
class _Candidate:
    states: tuple[int, ...]

    def label(self) -> str:
        code = "".join("ABCDEFG"[s] for s in self.states)
        return f"search[{len(self.states)}]:{code}"


def _child_seed(entropy: int, key: int) -> int:
    """An independent 63-bit seed for stream ``key`` of ``entropy`` (hashed by SeedSequence)."""
    return int(np.random.SeedSequence(entropy, spawn_key=(key,)).generate_state(1, np.uint64)[0] >> np.uint64(1))


def _statdp_states(lengths: Sequence[int], relation: str, sensitivity: float) -> list[_Candidate]:
    """The StatDP patterns (answers 1 and 1 ± Δ) as state vectors."""
    index = {(int(a), int(b)): i for i, (a, b) in enumerate(_STATES)}
    out = []
    for pair in StatDPPatterns(length=tuple(lengths), relation=relation, sensitivity=sensitivity).pairs():
        a = np.rint((np.asarray(pair.first) - 1.0) / sensitivity).astype(int)
        b = np.rint((np.asarray(pair.second) - 1.0) / sensitivity).astype(int)
        out.append(_Candidate(tuple(index[(int(x), int(y))] for x, y in zip(a, b))))
    return out


_UP, _DOWN = (1, 4), (2, 5)  # states moving up (D′ > D) and down


def _random_candidate(length: int, relation: str, gen: np.random.Generator) -> _Candidate:
    """A random one-, two- or three-block pattern or a random vector, with states the relation allows."""
    same = np.array(sorted(_SAME))
    if relation == "one":
        states = gen.choice(same, size=length)
        states[gen.integers(0, length)] = gen.choice(_UP + _DOWN)
        return _Candidate(tuple(int(s) for s in states))
    allowed = np.arange(7) if relation == "componentwise" else np.r_[same, _UP if gen.random() < 0.5 else _DOWN]
    kind = int(gen.integers(0, 4))
    if kind == 3:  # any vector
        return _Candidate(tuple(int(s) for s in gen.choice(allowed, size=length)))
    cuts = np.sort(gen.choice(np.arange(1, length), size=min(kind, length - 1), replace=False)).astype(int)
    states = gen.choice(allowed, size=cuts.size + 1)
    return _Candidate(tuple(int(s) for s in np.repeat(states, np.diff(np.r_[0, cuts, length].astype(int)))))


def _mutate(cand: _Candidate, lengths: Sequence[int], gen: np.random.Generator) -> _Candidate:
    states = np.array(cand.states)
    longer = [n for n in lengths if n > states.size]
    kind = int(gen.integers(0, 5))
    if kind == 0:
        states[gen.integers(0, states.size)] = gen.integers(0, 7)
    elif kind == 1 and states.size > 1:
        i, j = gen.choice(states.size, size=2, replace=False)
        states[[i, j]] = states[[j, i]]
    elif kind == 2 and longer:  # stretch the pattern to the next length
        n = min(longer)
        states = states[np.floor(np.arange(n) * states.size / n).astype(int)]
    elif kind == 3:
        states = states[::-1]
    else:  # move a block boundary / change a run of states
        i = int(gen.integers(0, states.size))
        states[i:] = gen.integers(0, 7)
    return _Candidate(tuple(int(s) for s in states))


def _to_pair(cand: _Candidate, centre: float, sensitivity: float, relation: str) -> Pair | None:
    if all(s in _SAME for s in cand.states):
        return None
    ab = _STATES[list(cand.states)]
    try:
        return check_pair(centre + sensitivity * ab[:, 0], centre + sensitivity * ab[:, 1], relation, sensitivity,
                          cand.label())
    except ValueError:
        return None


def _holdout_estimate(a: int, b: int, n: int, m: int, z: float, delta: float) -> float:
    """Bound expected on ``m`` fresh outputs per input from held-out counts ``a`` (numerator) and
    ``b`` of ``n``: plug-in ``p1 = a/n``, ``p2 = (b + 1)/n``, normal/Poisson interval widths."""
    p1, p2 = a / n, (b + 1.0) / n
    lo = p1 - z * math.sqrt(p1 * (1.0 - p1) / m) - delta
    up = p2 + z * math.sqrt(p2 / m) + z * z / m
    return math.log(lo) - math.log(up) if lo > 0 else -math.inf


def _screen(x1: np.ndarray, x2: np.ndarray, delta: float, confirm_size: int, z: float) -> float:
    """Screening estimate of one pair: events chosen on the first half of each sample, their
    expected confirmed bound estimated from the second half (no winner's curse over events)."""
    half = x1.shape[0] // 2
    found = select_candidates(x1[:half], x2[:half], 0, delta=delta, confirm_size=confirm_size, z=z)
    found = sorted(found, key=lambda c: -c.predicted)[:_HOLDOUT_EVENTS]
    best = -math.inf
    cache1: dict[Any, np.ndarray] = {}
    cache2: dict[Any, np.ndarray] = {}
    h1, h2, n = x1[half:2 * half], x2[half:2 * half], half
    for cand in found:
        in1 = int(np.count_nonzero(cand.event.evaluate(h1, cache1)))
        in2 = int(np.count_nonzero(cand.event.evaluate(h2, cache2)))
        a, b = (in2, in1) if cand.reverse else (in1, in2)
        best = max(best, _holdout_estimate(a, b, n, confirm_size, z, delta))
    return best


def search_pairs(mechanism: Callable[[Any, int, np.random.Generator], Any], *, claimed_epsilon: float,
                 claimed_delta: float = 0.0, budget: int, lengths: Sequence[int] = (5, 10, 20, 40), rng: Any = 0,
                 sensitivity: float = 1.0, centre: float = 1.0, relation: str = "componentwise",
                 confidence: float = 0.95, confirm_samples: int | None = None, population: int = 64,
                 keep: int = 4, workers: int | None = None,
                 on_estimate: Callable[[float], None] | None = None) -> SearchResult:
    """Search neighbouring vectors of query answers for the pair with the largest screening estimate.

    Parameters
    ----------
    mechanism
        ``mechanism(database, n, rng)`` taking a vector of query answers (any length in ``lengths``).
    claimed_epsilon, claimed_delta
        The claim to be confirmed later; ``claimed_delta`` enters the predicted bound.
    budget
        Total mechanism outputs the search may use (both inputs, all rounds). Memory: one
        candidate's outputs at a time, at most 2²⁴ values per input (then fewer are drawn).
    lengths
        Vector lengths to search over (use only lengths the mechanism accepts).
    rng
        Seed (int), ``Generator`` or ``None``.
    sensitivity, centre
        Δ and c: answers are ``c`` and ``c ± Δ``.
    relation
        ``"componentwise"``, ``"one"`` or ``"monotone"`` (see :mod:`dpkit.audit.pairs`).
    confidence, confirm_samples
        Planned confirmation (``confirm_samples`` total outputs, default ``budget``): the
        screening estimate predicts the bound such an audit would give.
    population, keep
        Candidates in the first round, and in the last.
    workers
        ``None`` (default): time a pilot on a vector of the longest length and run on process
        workers when a call is slow, as :func:`~dpkit.audit.audit` does
        (:mod:`dpkit.audit.throughput`); an integer pins the number of processes. The result
        does not depend on it.
    on_estimate
        Callback ``on_estimate(seconds)`` with the predicted run time of the whole search, from the
        pilot and each round's measured rate (at every round's start, once the round has its own
        rate, and when the prediction moves by a quarter).

    Returns
    -------
    SearchResult
        The best pair and its screening estimate (not certified).

    Raises
    ------
    ValueError, TypeError
        Invalid arguments, or a budget too small for ``keep`` candidates.

    Examples
    --------
    >>> import numpy as np
    >>> def chen_svt(q, n, rng, eps=0.5):  # Lyu et al. 2017 Alg. 6: query noise not scaled, no cut-off
    ...     rho = rng.laplace(scale=2 / eps, size=(n, 1))
    ...     return (np.asarray(q) + rng.laplace(scale=2 / eps, size=(n, len(q))) >= 1 + rho).astype(float)
    >>> found = search_pairs(chen_svt, claimed_epsilon=0.5, budget=100_000, lengths=(10, 20), population=16, rng=3)
    >>> found.screening_estimate > 0.5, found.samples <= 100_000
    (True, True)
    """
    if not callable(mechanism):
        raise TypeError(f"mechanism must be callable as mechanism(database, n, rng), got {mechanism!r}")
    claimed_epsilon = check_nonnegative("claimed_epsilon", claimed_epsilon)
    claimed_delta = check_unit_interval("claimed_delta", claimed_delta, include_one=False)
    budget = check_integer("budget", budget, minimum=1)
    if isinstance(lengths, (int, np.integer)) or not lengths:
        raise ValueError(f"lengths must be a non-empty sequence of lengths >= 1, got lengths={lengths!r}")
    lengths = tuple(sorted({check_integer("lengths", n, minimum=1) for n in lengths}))
    sensitivity = check_positive("sensitivity", sensitivity)
    centre = check_finite("centre", centre)
    if relation not in RELATIONS:
        raise ValueError(f"relation must be one of {RELATIONS}, got relation={relation!r}")
    confidence = check_open_unit("confidence", confidence)
    confirm = budget if confirm_samples is None else check_integer("confirm_samples", confirm_samples, minimum=1)
    keep = check_integer("keep", keep, minimum=1)
    population = check_integer("population", population, minimum=keep)
    seed = seed_entropy(rng)
    gen = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(_SEARCH_PHASE,)))

    rounds = max(1, math.ceil(math.log2(population / keep)) + 1)
    while population > keep and budget // (2 * population * rounds) < _MIN_SAMPLES:
        population = max(keep, population // 2)
        rounds = max(1, math.ceil(math.log2(population / keep)) + 1)
    n = min(budget // (2 * population * rounds), _MAX_VALUES // max(lengths))
    if n < _MIN_SAMPLES:
        raise ValueError(f"budget={budget} is too small: screening {keep} candidates needs at least "
                         f"{2 * keep * _MIN_SAMPLES} outputs")
    z = float(stats.norm.isf((1.0 - confidence) / (2 * _SCREEN_CANDIDATES)))
    confirm_size = max(1, int(0.8 * confirm) // 2)  # audit()'s default: 20 % selection, one pair
    runner = Runner(mechanism, seed, on_estimate=on_estimate, min_tasks=_MIN_TASKS)

    pool: list[_Candidate] = []
    seen: set[_Candidate] = set()

    def offer(cand: _Candidate) -> None:
        _offer(cand, pool, seen, centre, sensitivity, relation)

    statdp = _statdp_states(lengths, relation, sensitivity)
    for i in gen.permutation(len(statdp))[:max(population // 2, 1)]:
        offer(statdp[int(i)])
    for _ in range(50 * population):
        if len(pool) >= population:
            break
        offer(_random_candidate(int(gen.choice(lengths)), relation, gen))

    widest = _to_pair(max(pool, key=lambda cand: len(cand.states)), centre, sensitivity, relation)
    workers_used = start_workers(runner, [widest], workers, None, _planned(n, len(pool), keep, rounds, max(lengths)),
                                 runner.block_size(n))
    try:
        evaluated, scored, n = _rounds(runner, pool, seen, gen, rounds, n, keep, lengths, centre, sensitivity,
                                       relation, claimed_delta, confirm_size, z)
    except BaseException:
        workers_used.close(wait=False)
        raise
    workers_used.close()
    best_estimate, best = scored[0]
    pair = _to_pair(best, centre, sensitivity, relation)
    notes = ("screening_estimate is chosen on the search samples (not certified): confirm it on fresh samples "
             "with audit(mechanism, [pair], ...) or use audit_searched", *workers_used.notes())
    return SearchResult(pair=pair, screening_estimate=float(best_estimate), screening_samples=n,
                        ranking=tuple((cand.label(), float(est)) for est, cand in scored),
                        samples=int(runner.samples), evaluated=evaluated, rounds=rounds,
                        claimed_epsilon=claimed_epsilon, claimed_delta=claimed_delta, seed=seed, notes=notes,
                        throughput=workers_used.summary(runner))


def _offer(cand: _Candidate, pool: list[_Candidate], seen: set[_Candidate], centre: float, sensitivity: float,
           relation: str) -> None:
    """Add ``cand`` to ``pool`` if it is new and a valid pair under ``relation``."""
    if cand not in seen and _to_pair(cand, centre, sensitivity, relation) is not None:
        seen.add(cand)
        pool.append(cand)


def _round_sizes(population: int, keep: int, rounds: int) -> list[int]:
    """Candidates screened in each round (the pool halves, down to ``keep``)."""
    sizes = [population]
    for _ in range(rounds - 1):
        sizes.append(max(keep, sizes[-1] // 2))
    return sizes


def _planned(n: int, population: int, keep: int, rounds: int, longest: int, first_round: int = 0) -> int:
    """Outputs of rounds ``first_round``… (both inputs): ``n`` doubles each round up to the memory cap."""
    sizes = _round_sizes(population, keep, rounds)
    return sum(2 * min(n << r, _MAX_VALUES // longest) * sizes[r] for r in range(first_round, rounds))


def _rounds(runner: Runner, pool: list[_Candidate], seen: set[_Candidate], gen: np.random.Generator,
            rounds: int, n: int, keep: int, lengths: Sequence[int], centre: float, sensitivity: float,
            relation: str, claimed_delta: float, confirm_size: int,
            z: float) -> tuple[int, list[tuple[float, _Candidate]], int]:
    """Successive halving with mutation: the candidates screened, the last round's ranking and its
    outputs per input."""
    evaluated = 0
    scored: list[tuple[float, _Candidate]] = []
    runner.planned = runner.samples + _planned(n, len(pool), keep, rounds, max(lengths))
    for r in range(rounds):
        runner.start_phase(n)
        scored = []
        for c, cand in enumerate(pool):
            pair = _to_pair(cand, centre, sensitivity, relation)
            x1 = runner.sample(pair.first, n, (_SEARCH_PHASE, r, c, 0))
            x2 = runner.sample(pair.second, n, (_SEARCH_PHASE, r, c, 1))
            scored.append((_screen(x1, x2, claimed_delta, confirm_size, z), cand))
        evaluated += len(pool)
        scored.sort(key=lambda item: -item[0])
        if r == rounds - 1:
            break
        size = max(keep, len(pool) // 2)
        survivors = [cand for _, cand in scored[:max(1, size // 2)]]
        pool = list(survivors)
        for _ in range(50 * size):
            if len(pool) >= size:
                break
            _offer(_mutate(survivors[int(gen.integers(0, len(survivors)))], lengths, gen), pool, seen, centre,
                   sensitivity, relation)
        for _, cand in scored[len(survivors):]:  # too few new mutants: keep the next best
            if len(pool) >= size:
                break
            pool.append(cand)
        n = min(2 * n, _MAX_VALUES // max(lengths))
    return evaluated, scored, n


def audit_searched(mechanism: Callable[[Any, int, np.random.Generator], Any], *, claimed_epsilon: float,
                   claimed_delta: float = 0.0, budget: int, samples: int, rng: Any = 0, confidence: float = 0.95,
                   float_bits: bool = True, **search_options: Any) -> SearchedAudit:
    """:func:`search_pairs` with ``budget`` outputs, then :func:`~dpkit.audit.audit` of the best
    pair with ``samples`` fresh outputs (seeded independently of the search).

    The confirmed ``epsilon_lower_bound`` holds with probability ≥ ``confidence``: the pair is a
    function of the search samples only, and the audit's bound is valid for any fixed pair.
    The total cost is ``budget + samples`` outputs; ``float_bits`` goes to the audit (``False``: the
    mechanism in exact arithmetic), ``search_options`` to :func:`search_pairs` (``workers`` and
    ``on_estimate`` to the confirming audit as well).

    Examples
    --------
    >>> import numpy as np
    >>> def noisy_sum(q, n, rng):      # 0.5-DP in exact arithmetic: Laplace(2) on a sum moving by ≤ 1
    ...     return np.sum(q) + rng.laplace(scale=2.0, size=n)
    >>> r = audit_searched(noisy_sum, claimed_epsilon=0.5, budget=60_000, samples=60_000, lengths=(1,),
    ...                    relation="one", rng=2, float_bits=False)
    >>> r.audit.violation, r.epsilon_lower_bound <= 0.5
    (False, True)
    """
    seed = seed_entropy(rng)
    shared = {key: search_options[key] for key in ("workers", "on_estimate") if key in search_options}
    found = search_pairs(mechanism, claimed_epsilon=claimed_epsilon, claimed_delta=claimed_delta, budget=budget,
                         rng=_child_seed(seed, 0), confidence=confidence,
                         confirm_samples=check_integer("samples", samples, minimum=1), **search_options)
    result = audit(mechanism, [(found.pair.first, found.pair.second)], claimed_epsilon=claimed_epsilon,
                   claimed_delta=claimed_delta, confidence=confidence, samples=samples, rng=_child_seed(seed, 1),
                   float_bits=float_bits, **shared)
    return SearchedAudit(found, result)
