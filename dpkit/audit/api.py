"""``audit``: test a claimed (ε, δ) of a black-box mechanism and bound its true ε from below.

Scheme (one error budget α = 1 − confidence per call):

1. **Selection.** Every pair gets a small screening sample on each input (at most 2¹⁵
   outputs, kept in memory while its event families are fixed); the three most promising
   pairs get more outputs, *streamed* into per-bin counts of the features behind their eight
   best events (and per-pattern counts for discrete outputs), so memory does not grow with
   the budget. All event families of :mod:`dpkit.audit.events` (by default including the
   bits of float outputs, ``float_bits=True``, kept on a pair only when a pre-test on its
   screening sample finds the bits more telling than the values) are scored on these
   counts by the bound they should give on the confirmation sample; the eight best (from at
   most two pairs) are re-scored on held-out *validation* counts pooled with their selection
   counts, which dilutes the luck of the selection sample.
2. **Confirmation.** The best event and the next ``K − 1`` of its pair and family are counted
   on the whole confirmation budget of *fresh* outputs of that pair, streamed in batches; each
   gets level α/K (Bonferroni). ``K`` is 1 at a support boundary and for δ > 0, and 4
   otherwise, unless ``candidates`` fixes it. Each input gets ``N ~ Poisson(λ)`` outputs, capped at the budget
   (``Pr[N > budget] ≤ 10⁻¹⁶``), so the counts are independent Poisson variables and, given
   their sum, the first is binomial with success probability ``p1/(p1 + p2)``: one
   Clopper–Pearson bound on it bounds the ratio ``p1/p2`` (after a Poisson allowance for δ),
   instead of two at α/2 each (:func:`dpkit.audit.statistics.poisson_epsilon_lower_bound`).
   The reported bound is the largest, floored at 0. It holds with probability ≥ 1 − α
   whatever the selection did, because the selection sample is never reused.
3. **Sequential mode** (``sequential=True``) replaces step 2's fixed sample by rounds of
   batches and Clopper–Pearson by betting confidence sequences (anytime valid), stopping
   as soon as the claim is refuted or every candidate looks hopeless.
4. **Gaussian trade-off curve** (``assumption="gaussian"``, δ > 0): events are scored and
   confirmed by the μ-GDP bound they give (:mod:`dpkit.audit.curve`); the result is ε at the
   claimed δ of ``G_μ`` at the μ lower bound, labelled with its assumption.

References
----------
.. [1] Z. Ding et al., "Detecting Violations of Differential Privacy", CCS 2018.
.. [2] B. Bichsel et al., "DP-Sniper: Black-Box Discovery of Differential Privacy
       Violations using Classifiers", IEEE S&P 2021.
.. [3] M. Lyu, D. Su, N. Li, "Understanding the Sparse Vector Technique for Differential
       Privacy", PVLDB 10(6), 2017.
.. [4] M. Nasr et al., "Tight Auditing of Differentially Private Machine Learning",
       USENIX Security 2023, Sec. 4 (the Gaussian trade-off route).
.. [5] J. Przyborowski and H. Wilenski, "Homogeneity of results in testing samples from
       Poisson series", Biometrika 31(3/4), 1940 (the conditional test of the confirmation).
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import math
import time
from typing import Any, Callable

import numpy as np
from scipy import stats

from dpkit._bisection import threshold_bracket
from dpkit._validation import check_integer, check_nonnegative, check_open_unit, check_positive, check_unit_interval, seed_entropy
from dpkit.audit.curve import GAUSSIAN_ASSUMPTION, gaussian_claim_p_value, gaussian_epsilon_lower_bound, mu_lower_bound
from dpkit.audit.events import (
    BIT_KINDS,
    Candidate,
    Families,
    FeatureSetEvent,
    Tally,
    candidates_from_tallies,
    predicted_bound,
    shrunk_frequencies,
)
from dpkit.audit.float_events import UNREACHABLE_MASS, FloatReachability, float_reachability
from dpkit.audit.pairs import resolve_pairs
from dpkit.audit.result import AuditResult
from dpkit.audit.runner import Runner
from dpkit.audit.sample_plan import describe_plan, plan_samples
from dpkit.audit.sequential import BettingBound
from dpkit.audit.statistics import (
    cp_lower,
    cp_upper,
    detectable_epsilon,
    epsilon_lower_bound,
    poisson_claim_p_value,
    poisson_epsilon_lower_bound,
    poisson_sample_mean,
)
from dpkit.audit.workers import Workers, start_workers

__all__ = ["audit", "DEFAULT_SAMPLES", "AUTO_MAX_SAMPLES", "ASSUMPTIONS", "GOALS", "FLOAT_ASSUMPTION"]

DEFAULT_SAMPLES = 10_000_000
AUTO_MAX_SAMPLES = 100_000_000
ASSUMPTIONS = ("gaussian",)
GOALS = ("verdict", "bound")
_SELECT, _CONFIRM, _REFINE, _VALIDATE, _SIZES = 0, 1, 2, 4, 5
_REFINED_PAIRS = 3
_REFINED_EVENTS = 8  # refinement tallies the features of this many best screening events (and patterns)
_SCREEN_CAP = 1 << 15  # outputs per input and pair held in memory while the event families are fixed
_REFINE_CAP = 1 << 19  # streamed refinement outputs per input of each of the best pairs
_BOUNDARY_COUNT, _BOUNDARY_SUPPORT, _HEDGE_K = 2, 50, 4  # candidates=None: see _adaptive_k
_HEDGE_SHARE = 0.5  # hedging candidates are predicted at least this share of the best one (see _choose)
_VALIDATED_EVENTS, _VALIDATED_PAIRS = 8, 2  # the best events (from at most two pairs) counted on held-out outputs
_AUTO_SELECTION = 1_000_000  # samples="auto": select as an audit of this size would
_MIN_CONFIRM = 10_000
_MIN_TASKS = 16  # a request is cut into at least this many batches (of >= 256 outputs), for the workers
_FLOAT_CAP = 20_000  # as-executed outputs for the floating-point check (each replayed ~110 times)
_FLOAT_MIN_PER_INPUT = 250  # fewer draws say too little about assumption (A)
_BITS_MARGIN, _BITS_HELD_OUT = 0.05, 4  # the float-bit pre-test (_bits_differ)
_STRONGER_MARGIN = 0.05  # goal="verdict": the smallest gain worth a note on the bound the default budget buys
FLOAT_ASSUMPTION = ("assumption (A) of dpkit.audit.float_events: each output coordinate is a monotone function of "
                    "one uniform double drawn through the numpy Generator API (checked on the pair, not proved)")


@dataclasses.dataclass(frozen=True)
class _Plan:
    """Selection sizes per input: ``screen`` on every pair, ``refine`` (streamed) on the best
    ``refined``, ``validate`` (held-out counts) on each pair of the validated events."""

    screen: int
    refine: int
    refined: int
    validate: int

    def selection(self, pairs: int) -> int:
        return 2 * (self.screen * pairs + self.refine * self.refined + self.validate * min(pairs, _VALIDATED_PAIRS))


def minimum_samples(pairs: int, selection_fraction: float = 0.2) -> int:
    """The smallest ``samples`` :func:`audit` accepts for ``pairs`` input pairs: the selection must
    screen at least 100 outputs per input of every pair.

    >>> minimum_samples(1), minimum_samples(3, selection_fraction=0.5)
    (2000, 2400)
    """
    pairs = check_integer("pairs", pairs, minimum=1)
    return int(math.ceil(400 * pairs / check_open_unit("selection_fraction", selection_fraction)))


def _plan(total: int, pairs: int, fraction: float) -> _Plan:
    budget = int(fraction * total)
    screen = min(budget // (4 * pairs), _SCREEN_CAP)
    if screen < 100:
        raise ValueError(f"samples={total} is too small for {pairs} pairs: need at least "
                         f"{minimum_samples(pairs, fraction)}")
    refined = min(_REFINED_PAIRS, pairs)
    rest = budget - 2 * screen * pairs
    refine = min(rest // (4 * refined), _REFINE_CAP)
    validate = min(rest // (4 * min(pairs, _VALIDATED_PAIRS)), _REFINE_CAP)
    return _Plan(screen, max(refine, 0), refined, max(validate, 0))


def _entropy(rng: Any) -> tuple[int, Any]:
    """Root entropy for all batch seeds, and the value to record as the result's seed."""
    entropy = seed_entropy(rng)
    return entropy, entropy


def _family(c: Candidate) -> Any:
    """Events of one family share their per-batch work (a feature's values, or the row hashes)."""
    return getattr(c.event, "feature", "pattern")


def _choose(cands: list[Candidate], k: int) -> list[Candidate]:
    """The best candidate and the next best ``k − 1`` of its pair and family: they share its
    outputs and its per-batch work, and hedge the noise in choosing among near neighbours. Only
    near neighbours: an event predicted below ``_HEDGE_SHARE`` of the best one (e.g. the whole
    output space of a two-valued mechanism) would take a share of α and could not win."""
    cands = sorted(cands, key=lambda c: -c.predicted)
    if not cands:
        return []
    best = cands[0]
    return [c for c in cands if c.pair_index == best.pair_index and _family(c) == _family(best)
            and (c is best or c.predicted >= _HEDGE_SHARE * best.predicted > 0)][:k]


def _adaptive_k(cands: list[Candidate], delta: float) -> int:
    """``K`` for ``candidates=None``: 1 for a claim with δ > 0, whose best events lie deep in a tail
    where the bound is flat across neighbouring thresholds (within 0.01 of its top from 3.3σ to
    3.65σ for a Gaussian at δ = 10⁻⁵), so a hedge gains little and its Bonferroni split costs width
    on events with few counts (12 seeds at 10⁷ samples: the analytic Gaussian 0.870 against 0.860
    with ``K = 4``, the DP-SGD step 0.889 against 0.875, paired gains of about two standard errors
    each). For δ = 0: 1 when the best event is a support-boundary event (at most
    ``_BOUNDARY_COUNT`` held-out outputs of the denominator input fall in it, and at least
    ``_BOUNDARY_SUPPORT`` of the numerator's), where the bound sits at the ceiling and Bonferroni
    costs directly; ``_HEDGE_K`` otherwise, where several near-equivalent events hedge the noise of
    choosing one for a small cost in level. A far tail with a handful of held-out outputs on one
    input and none on the other is no boundary: among the many tail thresholds one is that lucky
    (e.g. 4 vs 0 of 33 616 for a Laplace tail with ratio e^0.6), and the hedge keeps the bulk events
    beside it."""
    if not cands or delta > 0:
        return 1
    best = max(cands, key=lambda c: c.predicted)
    return 1 if best.counts[2] <= _BOUNDARY_COUNT and best.counts[0] >= _BOUNDARY_SUPPORT else _HEDGE_K


def _shortlist(cands: list[Candidate]) -> list[Candidate]:
    """The best ``_VALIDATED_EVENTS`` candidates, from at most ``_VALIDATED_PAIRS`` pairs."""
    chosen: list[Candidate] = []
    pairs: list[int] = []
    for c in sorted(cands, key=lambda c: -c.predicted):
        if len(chosen) == _VALIDATED_EVENTS:
            break
        if c.pair_index not in pairs:
            if len(pairs) == _VALIDATED_PAIRS:
                continue
            pairs.append(c.pair_index)
        chosen.append(c)
    return chosen


def _validate(runner: Runner, pair_list: list[Any], shortlist: list[Candidate], n: int, delta: float, confirm: int,
              z: float, objective: str) -> list[Candidate]:
    """Re-score the shortlisted events on ``n`` held-out outputs per input of their pairs, pooled with
    their selection counts and shrunk against the event (:func:`~dpkit.audit.events.shrunk_frequencies`):
    the selection's ranking favours events whose counts were lucky, the fresh counts dilute that
    luck, and the pooled counts are less noisy than the held-out ones alone (rare events with a few
    dozen counts would otherwise be ranked by the luck of the validation instead). A
    likelihood-ratio set is the exception: its codes were picked one by one for their selection
    counts (e.g. three rare float-bit codes with 35 outputs on one input and 1 on the other among
    thousands of codes), so its selection counts are mostly luck and pooling keeps it on top; its
    score is capped by the held-out counts alone (unshrunk). The candidates keep the held-out
    counts alone, unbiased, to plan the confirmation (``samples="auto"``)."""
    out: list[Candidate] = []
    for pi in dict.fromkeys(c.pair_index for c in shortlist):
        mine = [c for c in shortlist if c.pair_index == pi]
        events = [c.event for c in mine]
        c1 = runner.count(pair_list[pi].first, n, (_VALIDATE, pi, 0), events)
        c2 = runner.count(pair_list[pi].second, n, (_VALIDATE, pi, 1), events)
        for j, c in enumerate(mine):
            a, b = _oriented(c, (c1[j], c2[j]))
            pooled = (a + c.counts[0], n + c.counts[1], b + c.counts[2], n + c.counts[3])
            pred = float(predicted_bound(objective, *pooled, confirm_size=confirm, z=z, delta=delta))
            if c.event.shape == "likelihood-ratio set":  # chosen code by code on the selection: capped by held-out
                pred = min(pred, float(predicted_bound(objective, a, n, b, n, confirm_size=confirm, z=z, delta=delta,
                                                       shrink=0.0)))
            out.append(dataclasses.replace(c, predicted=pred, counts=(a, n, b, n)))  # unbiased: plans the confirmation
    return out


def _selection(runner: Runner, pair_list: list[Any], plan: _Plan, delta: float, confirm: int, z: float,
               objective: str, alpha: float, bits: bool = True, answer: Callable[[Any], Any] | None = None,
               used: set[str] | None = None) -> list[Candidate]:
    """Screen every pair (in-memory sample, dropped after use), refine the best ones (streamed).
    ``used`` collects the kinds of the features built (``"ulp"``, ``"lattice"``, ...)."""
    state: dict[int, tuple[Families, Tally, Tally]] = {}
    found: dict[int, list[Candidate]] = {}
    for i, pair in enumerate(pair_list):
        x1 = runner.sample(pair.first, plan.screen, (_SELECT, i, 0))
        x2 = runner.sample(pair.second, plan.screen, (_SELECT, i, 1))
        if x1.shape[1] != x2.shape[1]:
            raise ValueError(f"outputs on the two inputs of pair {pair.label!r} must have the same shape, "
                             f"got {x1.shape[1]} and {x2.shape[1]} values per output")
        centres = (_centre(answer, pair.first), _centre(answer, pair.second)) if bits and answer is not None else ()
        families = Families.from_sample(x1, x2, bits=bits, centres=centres)
        if used is not None:
            used.update(f.kind for f in families.features)
        state[i] = (families, families.tally(x1), families.tally(x2))
        found[i] = candidates_from_tallies(families, state[i][1], state[i][2], i, delta=delta, confirm_size=confirm,
                                           z=z, objective=objective)
        if bits and any(f.kind in BIT_KINDS for f in families.features) and \
                not _bits_differ(families, x1, x2, i, delta, alpha):
            found[i] = [c for c in found[i] if not _is_bit_event(c)]
            if used is not None:
                used.add("bits-gated")
    if plan.refine > 0:
        ranking = sorted(found, key=lambda i: -max((c.predicted for c in found[i]), default=-math.inf))
        for i in ranking[: plan.refined]:
            families, t1, t2 = state[i]
            ranked = sorted(found[i], key=lambda c: -c.predicted)
            best = ranked[:_REFINED_EVENTS]
            if bits and any(_is_bit_event(c) for c in best):  # keep values in play: the float_bits=False verdict
                best += [c for c in ranked if not _is_bit_event(c)][:2]
            narrow = families.narrowed({c.event.feature for c in best if isinstance(c.event, FeatureSetEvent)},
                                       patterns=t1.patterns is not None and t2.patterns is not None)
            more1 = runner.tally(pair_list[i].first, plan.refine, (_REFINE, i, 0), narrow)
            more2 = runner.tally(pair_list[i].second, plan.refine, (_REFINE, i, 1), narrow)
            t1, t2 = families.restrict(t1, narrow).merge(more1), families.restrict(t2, narrow).merge(more2)
            found[i] = candidates_from_tallies(narrow, t1, t2, i, delta=delta, confirm_size=confirm, z=z,
                                               objective=objective)
    return [c for cands in found.values() for c in cands]


def _is_bit_event(c: Candidate) -> bool:
    return isinstance(c.event, FeatureSetEvent) and c.event.feature.kind in BIT_KINDS


def _bits_differ(families: Families, x1: np.ndarray, x2: np.ndarray, pair_index: int, delta: float,
                 alpha: float) -> bool:
    """The float-bit pre-test, on the screening sample only (so it costs no α): do the bits of the
    outputs tell the inputs apart better than their values do? Events are built on one half of
    the screening outputs and the best ``_BITS_HELD_OUT`` of each kind (float-bit families, value
    families) by their Clopper–Pearson bound there are re-counted on the other half; the bits are
    kept when their best held-out bound beats the values' by ``_BITS_MARGIN``. On outputs that
    lie on a lattice the bit codes are coarse functions of the value (sign and binade are value
    thresholds at powers of two; sets of rare codes only fit the noise of the half that chose
    them) and at best tie; a floating-point leak (outputs one input never produces) wins by far."""
    half = min(len(x1), len(x2)) // 2
    a1, a2, b1, b2 = x1[:half], x2[:half], x1[half:2 * half], x2[half:2 * half]
    cands = candidates_from_tallies(families, families.tally(a1), families.tally(a2), pair_index, delta=delta,
                                    confirm_size=half, z=1.0)
    best = {True: -math.inf, False: -math.inf}
    for bits in (True, False):
        group = [c for c in cands if _is_bit_event(c) == bits]
        group.sort(key=lambda c: -epsilon_lower_bound(*c.counts, delta, alpha))
        cache1: dict[Any, np.ndarray] = {}
        cache2: dict[Any, np.ndarray] = {}
        for c in group[:_BITS_HELD_OUT]:
            k1 = int(np.count_nonzero(c.event.evaluate(b1, cache1)))
            num, den = _oriented(c, (k1, int(np.count_nonzero(c.event.evaluate(b2, cache2)))))
            best[bits] = max(best[bits], epsilon_lower_bound(num, half, den, half, delta, alpha))
    return best[True] > max(best[False], 0.0) + _BITS_MARGIN


def _centre(answer: Callable[[Any], Any], database: Any) -> np.ndarray:
    """The query answer of ``database`` as a flat float array (one value per output coordinate)."""
    try:
        value = answer(database)
        return np.empty(0) if value is None else np.asarray(value, dtype=float).reshape(-1)
    except (TypeError, ValueError) as error:
        raise ValueError(f"answer must map an input to its query answer (numbers, one per output coordinate); "
                         f"it failed on {database!r}: {error}") from None


def _resolve_answer(mechanism: Any, answer: Any) -> Callable[[Any], Any] | None:
    """``answer``, else the mechanism's own ``query_answer`` (dpkit's adapters know it), else None."""
    if answer is None:
        answer = getattr(mechanism, "query_answer", None)
    if answer is not None and not callable(answer):
        raise TypeError(f"answer must be callable as answer(database) -> query answer, got {answer!r}")
    return answer


def _float_result(witness: Any, pair_list: list[Any], used: int, start: float, claimed_epsilon: float,
                  claimed_delta: float, confidence: float, alpha: float, seed: Any) -> AuditResult:
    """The result of a floating-point witness (:mod:`dpkit.audit.float_events`): the set ``S`` of
    outputs unreachable on the other input has probability ≤ 2⁻⁵³ there under that module's
    assumption (A), so ``ε ≥ ln((p_lower − δ)/2⁻⁵³)`` with p_lower at level ``alpha`` (this test's
    share of 1 − ``confidence``); its p-value is the exact binomial tail
    ``Pr[Bin(n, δ + e^ε 2⁻⁵³) ≥ count]`` (the Clopper–Pearson dual)."""
    pair = pair_list[witness.pair_index]
    bound = float(witness.epsilon_lower_bound(claimed_delta, 1.0 - alpha))
    null_mass = min(1.0, claimed_delta + math.exp(min(claimed_epsilon, 700.0)) * UNREACHABLE_MASS)
    p_value = float(stats.binom.sf(witness.count - 1, witness.samples, null_mass)) if witness.count else 1.0
    p_value = min(1.0, p_value * (1.0 - confidence) / alpha)  # Bonferroni-adjusted to the overall level
    return AuditResult(
        epsilon_lower_bound=bound, violation=bool(bound > claimed_epsilon), p_value=p_value,
        witness={"pair": pair.to_dict(), "event": {"family": "float", "value": float(witness.value),
                                                    "description": witness.describe()},
                 "count_first": int(witness.count_first), "count_second": int(witness.count_second),
                 "samples_per_input": int(witness.samples), "bound": bound},
        samples=int(used), seconds=time.perf_counter() - start, claimed_epsilon=claimed_epsilon,
        claimed_delta=claimed_delta, confidence=confidence, seed=seed,
        method="floating-point witness (dpkit.audit.float_events): outputs the implementation produces on one "
               "input and cannot produce on the other; one-sided Clopper-Pearson on their frequency",
        candidates=1,
        notes=("as executed, not as designed: the floating-point implementation outputs values on one input "
               "that it cannot output on the other (the ideal real-valued mechanism may still be private)",
               *_pair_notes(pair_list)),
        assumption=FLOAT_ASSUMPTION)


def _float_check_summary(reach: FloatReachability) -> str:
    """One line on what the replay check of ``float_events=True`` did (it spends α only if it ran)."""
    if reach.analysed:
        return (f"replayed on pairs {list(reach.analysed)}" + (f", skipped {[i for i, _ in reach.skipped]}"
                                                                if reach.skipped else "")
                + ("; unreachable outputs found" if reach.witness is not None else "; no unreachable output found"))
    reason = reach.skipped[0][1] if reach.skipped else "no pair"
    return ("not run: the mechanism cannot be replayed through crafted numpy uniforms (" + reason
            + "); no error budget was spent on it, the float-bit events of the outputs were still audited")


def audit(mechanism: Callable[[Any, int, np.random.Generator], Any], pairs: Any, claimed_epsilon: float,
          claimed_delta: float = 0.0, confidence: float = 0.95, samples: int | str | None = None, rng: Any = 0,
          executor: concurrent.futures.Executor | None = None, *, sequential: bool = False,
          candidates: int | None = None, selection_fraction: float = 0.2, batch_size: int = 1 << 16,
          progress: Callable[[int, int], None] | None = None, batch_timeout: float | None = None,
          assumption: str | None = None, float_events: bool = False, float_bits: bool = True,
          answer: Callable[[Any], Any] | None = None, on_estimate: Callable[[float], None] | None = None,
          workers: int | None = None, power: float = 0.8, goal: str = "verdict") -> AuditResult:
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
        ``"auto"``: select as for 10⁶, then confirm on the fewest outputs whose exact
        Clopper–Pearson power at the selection's estimates of the witness event reaches
        ``power`` (:func:`~dpkit.audit.sample_plan.plan_samples`), at most ``AUTO_MAX_SAMPLES``
        = 10⁸ in total; the default budget when no refutation is in reach. ``result.sample_plan``
        and a note state the plan, the power it buys and the smallest true ε it refutes with
        that power.
    rng
        Seed (int), ``Generator`` or ``None`` (fresh entropy, recorded in ``result.seed``).
    executor
        Any :class:`concurrent.futures.Executor`; results do not depend on it.
    workers
        Without ``executor``: ``None`` (default) times a pilot of the mechanism
        (:mod:`dpkit.audit.throughput`) and runs the batches on process workers, up to the cores
        available, when one output costs 50 µs or more or the run would take 10 s or more on one
        core (a mechanism that cannot be pickled runs on forked workers that inherit it,
        :mod:`dpkit.audit.workers`); an integer pins the number of processes (1: this process).
        Results do not depend on it.
    power
        ``samples="auto"``: the power the confirmation is sized for (default 0.8).
    goal
        ``samples="auto"``: ``"verdict"`` (default) confirms on the fewest outputs that reach
        ``power`` and, after a refutation, adds a note with the bound the default budget is
        predicted to certify and its cost; ``"bound"`` confirms on the default budget's
        confirmation size (or the plan's, if larger) to tighten the bound.
    sequential
        Anytime-valid confirmation that may stop before using all ``samples``.
    candidates
        ``K``, the number of confirmed events (the best one and the next best of its pair and
        family, on the same outputs) sharing α (Bonferroni). Default ``None``: chosen from the
        validation counts, 1 for a support-boundary event (at most 2 held-out outputs of the
        denominator input in it: the bound is at the ceiling, where Bonferroni costs
        directly) and 4 otherwise (near-equivalent events hedge the noise of choosing one).
    selection_fraction
        Share of ``samples`` spent on selection (at most 2¹⁵ outputs per input and pair for
        screening and 2¹⁹ streamed for each of the three best pairs).
    batch_size
        Outputs per task (part of the seed derivation).
    progress
        Callback ``progress(done, total)`` (the CLI draws a bar with it).
    batch_timeout
        Seconds one batch of ``batch_size`` outputs may take (default ``None``: no limit); a
        slower batch raises :class:`~dpkit.audit.runner.AuditTimeoutError` (a ``TimeoutError``)
        instead of hanging.
    assumption
        ``None`` (default): the bound needs no assumption. ``"gaussian"`` (needs
        ``claimed_delta > 0``, fixed-sample mode): bound μ of a Gaussian trade-off curve and
        report ε at the claimed δ (:mod:`dpkit.audit.curve`; Nasr et al. 2023); valid only if
        the mechanism's trade-off curve is Gaussian, which ``result.assumption`` states.
    float_events
        Also replay the sampler (the float-bit event families of ``float_bits`` are on without
        it): first look for outputs the floating-point implementation produces on one input and
        cannot produce on the other (:func:`dpkit.audit.float_events.find_float_witness` on 1 %
        of the budget, at most 20 000 outputs); if found, the result is the bound
        ``ln((p_lower − δ)/2⁻⁵³)`` of that witness, ε as executed, labelled with the
        module's assumption (A); otherwise the audit goes on with the rest of the budget. The
        two tests share α = 1 − ``confidence`` (α/2 each), so a true claim is still flagged
        with probability at most α. A mechanism the replay cannot analyse (not one uniform
        per output through the numpy ``Generator`` API: ziggurat normals, library samplers
        with their own RNG) gets no replay test and no α is spent on it;
        ``result.float_check`` and a note say which.
    float_bits
        ``True`` (default): the event families include the bits of non-integer outputs
        (:mod:`dpkit.audit.bits`: the ulp grid, binade and last 4 significand bits of each of the
        first 4 coordinates, and, when the query answer is known, the lattice ``answer + 2^t ℤ``
        the output lies on), so a floating-point leak of the mechanism *as executed* (Mironov
        2012; Haney et al. 2022) is refuted from the outputs alone, with no replay and no
        assumption; the events are selected on the selection sample and confirmed like all
        others, at no cost in α, on the pairs where a pre-test on the screening sample finds the
        bits more telling than the values (elsewhere they are dropped, and a note says so). A
        refutation through them starts its notes with ``floating-point leak:`` and puts the
        ``float_bits=False`` verdict beside it (``witness["float_bits_false"]``). Every unsnapped float mechanism (numpy's ``laplace``/``normal``
        plus the answer) is refuted by them: it is not private as executed. ``False``: audit the
        mechanism in exact arithmetic (its values only), e.g. to test the calibration of the
        idealised real-valued design; a note then says so. Not used with
        ``assumption="gaussian"`` (a bit event has no Gaussian trade-off curve).
    answer
        ``answer(database)``: the exact query answer of an input (one number per output
        coordinate), the centre of the noise. Default: the mechanism's ``query_answer`` if it has
        one (dpkit's :meth:`~dpkit.mechanisms.base.Mechanism.as_audit_callable`, the catalogue's
        additive entries), else unknown, and a note says the lattice events relative to the
        input were not run.
    on_estimate
        Callback ``on_estimate(seconds)`` with the predicted total run time of the outputs planned
        so far (with ``samples="auto"``, the selection until the confirmation is sized), from the
        pilot's measured cost per call and per output and the workers: at the start of the
        selection and of the confirmation, once each has measured its own rate, and whenever the
        prediction moves by a quarter (``result.throughput["estimates"]`` lists them). Below 50 µs
        per output, where selecting events rather than the mechanism takes the time, the first
        estimate comes once the confirmation has measured its rate.

    Returns
    -------
    AuditResult
        ``epsilon_lower_bound``, ``violation``, ``p_value``, ``witness``, ``samples``,
        ``seconds``, ``detectable_epsilon`` (on a pass), ...

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
    s = _settings(mechanism, claimed_epsilon, claimed_delta, confidence, samples, executor, sequential, candidates,
                  selection_fraction, batch_size, assumption, float_events, float_bits, answer, workers, power, goal)
    if batch_timeout is not None:
        batch_timeout = check_positive("batch_timeout", batch_timeout)
    _check_assumption(s)
    pair_list = resolve_pairs(pairs)
    entropy, seed = _entropy(rng)
    runner = Runner(mechanism, entropy, executor, s.batch_size, progress, batch_timeout, on_estimate,
                    min_tasks=_MIN_TASKS)
    runner.planned = s.total
    pool = start_workers(runner, pair_list, s.workers, executor, _AUTO_SELECTION if s.auto else s.total,
                         runner.block_size(_SCREEN_CAP))
    try:
        result = _phases(mechanism, s, pair_list, entropy, seed, runner, pool, start)
    except BaseException:
        pool.close(wait=False)
        raise
    pool.close()
    return result


def _phases(mechanism: Any, s: _Settings, pair_list: list[Any], entropy: int, seed: Any, runner: Runner,
            pool: Workers, start: float) -> AuditResult:
    """The float check, the selection and the confirmation of :func:`audit`."""
    floats = _float_phase(mechanism, s, pair_list, entropy, runner, start, seed)
    if floats.result is not None:
        return floats.result
    notes: list[str] = list(pool.notes())
    plan, chosen, m, values_chosen = _select_events(runner, pair_list, s, floats.total, floats.alpha, notes)
    if not chosen:  # no event has probability above δ on either input: nothing to confirm
        return _nothing_selected(s, runner, pair_list, floats.float_check, start, seed, notes, pool)
    level = floats.alpha / len(chosen)
    sample_plan = None
    announced = m  # confirmation outputs per input of the default budget
    if s.auto:
        sample_plan = _auto_confirmation(chosen[0], s, level, m,
                                         (AUTO_MAX_SAMPLES - plan.selection(len(pair_list))) // 2, notes)
        if s.goal == "bound" and sample_plan.samples_per_input < announced:
            notes.append(f"goal='bound': confirmed on the default budget ({announced} outputs per input), not on the "
                         f"{sample_plan.samples_per_input} that the plan predicts refute the claim, to tighten the "
                         "bound")
            sample_plan = describe_plan(announced, sample_plan.p1, sample_plan.p2, s.claimed_epsilon, s.claimed_delta,
                                        level, s.power)
        m = sample_plan.samples_per_input
        runner.planned = runner.samples + 2 * m
    runner.start_phase(m)
    if sample_plan is not None:
        sample_plan = dict(sample_plan.to_dict(), predicted_seconds=runner.estimator.total(2 * m))
    confirmation = (_confirm_sequential(runner, s, pair_list, plan, chosen, m, level, notes) if s.sequential
                    else _confirm_fixed(runner, s, pair_list, plan, chosen, m, level))
    result = _assemble(s, runner, pair_list, chosen, confirmation, notes, floats, level, start, seed)
    if result.violation and _is_bit_event(chosen[0]) and not s.sequential:
        result = _float_leak(result, runner, s, pair_list, plan, values_chosen, confirmation.used, floats.alpha)
    if sample_plan is not None and s.goal == "verdict" and result.violation and m < announced:
        stronger = _stronger_bound(chosen[0], s, level, announced, result.epsilon_lower_bound)
        if stronger is not None:
            rate = runner.estimator.rate()
            result = dataclasses.replace(result, notes=(*result.notes, stronger + (
                f", about {rate * 2 * announced:.0f} s at the measured rate" if rate and math.isfinite(rate) else "")
                + "; goal='bound' (CLI --goal bound) spends them"))
    return dataclasses.replace(result, sample_plan=sample_plan, throughput=pool.summary(runner))


def _float_leak(result: AuditResult, runner: Runner, s: _Settings, pair_list: list[Any], plan: _Plan,
                values: list[Candidate], m: int, alpha: float) -> AuditResult:
    """A refutation through a float-bit event: say whether it shows a floating-point leak (the values
    alone do not refute the claim, or certify less than the bits) or not (they refute it as strongly),
    and put the ``float_bits=False`` verdict beside it: the best value events of the same selection, counted on
    the confirmation outputs of their pair (the same seeds, so the same outputs when the pair is
    the witness's; drawn again, not counted twice in ``samples``) at their own level α/K. Each
    statement holds with probability ≥ 1 − α on its own."""
    bound, event, label = 0.0, None, None  # no value event selected: the trivial bound
    if values:
        spent = runner.samples
        exact = _confirm_fixed(runner, s, pair_list, plan, values, m, alpha / len(values))
        runner.samples = spent
        j = int(np.argmax(exact.bounds))
        bound, event, label = max(0.0, float(exact.bounds[j])), values[j].event.describe(), \
            pair_list[values[0].pair_index].label
    refuted = bound > s.claimed_epsilon
    feature = result.witness["event"].get("feature", "float bits")
    beside = (f"float_bits=False verdict beside it (values only, confirmation outputs the selection never saw): "
              f"epsilon >= {bound:.4g}, claim {'refuted' if refuted else 'not refuted'}")
    if refuted and bound >= result.epsilon_lower_bound:  # the values alone refute it as strongly: no leak shown
        note = (f"float bits: the witness event reads the bits of the outputs ({feature}), but their values alone "
                f"refute the claim as strongly, so this refutation shows no floating-point leak. {beside}")
    elif refuted:
        note = (f"the values alone refute the claim; the bits of the outputs ({feature}) certify more (epsilon >= "
                f"{result.epsilon_lower_bound:.4g}): a floating-point leak beyond the mechanism's real-valued design. "
                f"{beside}")
    else:
        note = (f"floating-point leak: the claim is refuted through the bits of the outputs ({feature}), not through "
                f"their values: the mechanism as executed on doubles tells the inputs apart by bit patterns its "
                f"real-valued design does not have (e.g. floating-point noise added to the answer); outputs snapped to "
                f"a lattice close such leaks (dpkit's float-safe mechanisms). {beside}")
    witness = dict(result.witness, float_bits_false={
        "epsilon_lower_bound": bound, "violation": refuted, "event": event, "pair": label, "candidates": len(values)})
    return dataclasses.replace(result, witness=witness, notes=(note, *result.notes))


def _stronger_bound(best: Candidate, s: _Settings, level: float, m: int, reached: float) -> str | None:
    """``goal="verdict"`` stopped at the fewest outputs that refute the claim: the bound that ``m``
    confirmation outputs per input are predicted to certify, from the selection's (shrunk)
    estimates of the witness event at the expected counts (:func:`poisson_epsilon_lower_bound` at
    ``⌊λ p1⌋`` and ``⌈λ p2⌉``), when it is clearly higher than the bound ``reached``."""
    a, na, b, nb = best.counts
    p1, p2 = (min(float(x), 1.0) for x in shrunk_frequencies(np.array(a, dtype=float), max(na, 1),
                                                              np.array(b, dtype=float), max(nb, 1)))
    mean, spent = poisson_sample_mean(m)
    predicted = poisson_epsilon_lower_bound(math.floor(p1 * mean), math.ceil(p2 * mean), mean, s.claimed_delta,
                                            level, spent)
    if not predicted > reached + _STRONGER_MARGIN:
        return None
    return (f"a stronger bound is in reach: {m} confirmation outputs per input ({2 * m} in all, the default budget) "
            f"are predicted to certify epsilon >= {predicted:.3g} (this bound: {reached:.3g}; from the selection's "
            f"estimates of the witness event)")


@dataclasses.dataclass(frozen=True)
class _Settings:
    """The validated arguments of :func:`audit` that its phases read."""

    claimed_epsilon: float
    claimed_delta: float
    confidence: float
    total: int
    auto: bool
    k_max: int | None
    selection_fraction: float
    batch_size: int
    sequential: bool
    assumption: str | None
    float_events: bool
    float_bits: bool
    answer: Callable[[Any], Any] | None
    workers: int | None
    power: float
    goal: str


def _settings(mechanism: Any, claimed_epsilon: float, claimed_delta: float, confidence: float,
              samples: int | str | None, executor: Any, sequential: bool, candidates: int | None,
              selection_fraction: float, batch_size: int, assumption: str | None, float_events: bool,
              float_bits: bool, answer: Any, workers: int | None, power: float, goal: str) -> _Settings:
    """Validate :func:`audit`'s arguments (one-line errors naming the parameter)."""
    if not callable(mechanism):
        raise TypeError(f"mechanism must be callable as mechanism(database, n, rng), got {mechanism!r}")
    claimed_epsilon = check_nonnegative("claimed_epsilon", claimed_epsilon)
    claimed_delta = check_unit_interval("claimed_delta", claimed_delta, include_one=False)
    confidence = check_open_unit("confidence", confidence)
    auto = isinstance(samples, str)
    if auto and samples != "auto":
        raise ValueError(f"samples must be an integer >= 1, None or 'auto', got samples={samples!r}")
    total = DEFAULT_SAMPLES if samples is None or auto else check_integer("samples", samples, minimum=1)
    k_max = None if candidates is None else check_integer("candidates", candidates, minimum=1)
    selection_fraction = check_open_unit("selection_fraction", selection_fraction)
    batch_size = check_integer("batch_size", batch_size, minimum=1)
    if executor is not None and not isinstance(executor, concurrent.futures.Executor) and not hasattr(executor, "submit"):
        raise TypeError(f"executor must be a concurrent.futures.Executor, got {executor!r}")
    workers = None if workers is None else check_integer("workers", workers, minimum=1)
    power = check_open_unit("power", power)
    if goal not in GOALS:
        raise ValueError(f"goal must be one of {GOALS}, got goal={goal!r}")
    return _Settings(claimed_epsilon, claimed_delta, confidence, total, auto, k_max, selection_fraction, batch_size,
                     sequential, assumption, float_events, bool(float_bits), _resolve_answer(mechanism, answer),
                     workers, power, goal)


def _check_assumption(s: _Settings) -> None:
    """``assumption`` is ``None`` or ``"gaussian"``, the latter with δ > 0 in fixed-sample mode."""
    if s.assumption is not None and s.assumption not in ASSUMPTIONS:
        raise ValueError(f"assumption must be None or one of {ASSUMPTIONS}, got assumption={s.assumption!r}")
    if s.assumption == "gaussian" and (s.claimed_delta == 0.0 or s.sequential):
        raise ValueError("assumption='gaussian' needs claimed_delta > 0 (a Gaussian curve is never (eps, 0)-DP) "
                         f"and sequential=False, got claimed_delta={s.claimed_delta}, sequential={s.sequential}")


@dataclasses.dataclass(frozen=True)
class _FloatPhase:
    """What the floating-point replay check leaves: the budget and error level for the frequency
    audit, the number of tests sharing α, the check's summary and, on a refutation, the result."""

    total: int
    alpha: float
    tests: int
    float_check: str | None
    result: AuditResult | None


def _float_phase(mechanism: Any, s: _Settings, pair_list: list[Any], entropy: int, runner: Runner, start: float,
                 seed: Any) -> _FloatPhase:
    """``float_events=True``: look by replay for outputs unreachable on the other input, on 1 % of
    the budget (:mod:`dpkit.audit.float_events`); a refutation ends the audit."""
    total, alpha = s.total, 1.0 - s.confidence
    if not s.float_events:
        return _FloatPhase(total, alpha, 1, None, None)
    float_budget = min(max(total // 100, _FLOAT_MIN_PER_INPUT * 2 * len(pair_list)), _FLOAT_CAP)
    if total - float_budget < minimum_samples(len(pair_list), s.selection_fraction):
        raise ValueError(f"samples={total} is too small for float_events=True with {len(pair_list)} pairs: need "
                         f"at least {float_budget + minimum_samples(len(pair_list), s.selection_fraction)}")
    reach = float_reachability(mechanism, pair_list, samples=float_budget,
                               rng=np.random.default_rng(np.random.SeedSequence(entropy, spawn_key=(3,))))
    float_check = _float_check_summary(reach)
    total -= float_budget
    runner.samples += float_budget
    if not reach.analysed:
        return _FloatPhase(total, alpha, 1, float_check, None)
    alpha /= 2.0  # two tests of one claim: each gets α/2, so a true claim is flagged with probability ≤ α
    result = None
    if reach.witness is not None:  # the best of 2 directions of every pair: Bonferroni over them
        result = _float_result(reach.witness, pair_list, float_budget, start, s.claimed_epsilon, s.claimed_delta,
                               s.confidence, alpha / (2 * len(pair_list)), seed)
        # otherwise the frequency audit may still refute the claim
        result = dataclasses.replace(result, float_check=float_check) if result.violation else None
    return _FloatPhase(total, alpha, 2, float_check, result)


def _select_events(runner: Runner, pair_list: list[Any], s: _Settings, total: int,
                   alpha: float, notes: list[str]) -> tuple[_Plan, list[Candidate], int, list[Candidate]]:
    """Phase 1: select events on the selection sample, re-score the shortlist on held-out
    outputs, choose the ``K`` to confirm. Returns the plan, the chosen events and the
    confirmation outputs per input that selection and validation left, and, when the best event
    is a float-bit event, the events a ``float_bits=False`` audit would confirm; appends to
    ``notes`` what the float-bit families could not do."""
    spent_before = runner.samples
    plan = _plan(_AUTO_SELECTION if s.auto else total, len(pair_list), s.selection_fraction)
    remaining = total - plan.selection(len(pair_list))
    if remaining < 2:
        raise ValueError(f"samples={total} leaves nothing for confirmation")
    if s.auto:  # the confirmation is sized after the selection: estimate the selection until then
        runner.planned = runner.samples + plan.selection(len(pair_list))
    runner.start_phase(plan.screen)
    z = float(stats.norm.isf(alpha / (2 * (s.k_max or 1))))
    objective = "mu" if s.assumption == "gaussian" else "epsilon"
    bits = s.float_bits and s.assumption is None
    used: set[str] = set()
    selected = _selection(runner, pair_list, plan, s.claimed_delta, remaining // 2, z, objective, alpha, bits=bits,
                          answer=s.answer, used=used)
    shortlist = _shortlist(selected)
    if not s.float_bits and s.assumption is None:
        notes.append("float_bits=False: the bits of float outputs were not audited (the mechanism in exact "
                     "arithmetic, its values only)")
    if "bits-gated" in used:
        notes.append("float bits: on some pair the bits of the outputs told the inputs apart no better than their "
                     "values on the screening sample (pre-test, no error budget spent); their events were dropped "
                     "there")
    if "ulp" in used and s.answer is None:
        notes.append("float bits: the lattice events relative to the input (output - answer on a 2^t grid) were "
                     "not run: the audit does not know the query answer (pass answer=, or give the mechanism a "
                     "query_answer(database) attribute)")
    if plan.validate > 0 and len(shortlist) > 1:
        validated = _validate(runner, pair_list, shortlist, plan.validate, s.claimed_delta, remaining // 2, z,
                              objective)
        shortlist = validated if any(math.isfinite(c.predicted) for c in validated) else shortlist
    tail = s.claimed_delta if s.assumption is None else 0.0  # the rule for δ > 0 was measured on the ε route
    chosen = _choose(shortlist, s.k_max or _adaptive_k(shortlist, tail))
    values = [c for c in selected if not _is_bit_event(c)]
    values_chosen = _choose(values, s.k_max or _adaptive_k(values, tail)) if chosen and _is_bit_event(chosen[0]) else []
    return plan, chosen, (total - (runner.samples - spent_before)) // 2, values_chosen


def _nothing_selected(s: _Settings, runner: Runner, pair_list: list[Any], float_check: str | None, start: float,
                      seed: Any, notes: list[str], pool: Workers) -> AuditResult:
    """The result when no event has probability above δ on either input: the trivial bound 0."""
    return AuditResult(0.0, False, 1.0, {"note": "no event had a selection frequency above claimed_delta"},
                       int(runner.samples), time.perf_counter() - start, s.claimed_epsilon, s.claimed_delta,
                       s.confidence, seed, "select-then-confirm: nothing selected", 0,
                       ("no candidate event; the bound 0 is trivially valid", *notes, *_float_notes(float_check),
                        *_pair_notes(pair_list)),
                       assumption=GAUSSIAN_ASSUMPTION if s.assumption else None, float_check=float_check,
                       throughput=pool.summary(runner))


@dataclasses.dataclass(frozen=True)
class _Confirmation:
    """Counts and bounds of the chosen events on the fresh confirmation outputs."""

    counts: np.ndarray  # (K, 2) counts on (pair.first, pair.second)
    used: int  # outputs per input
    bounds: list[float]
    p_values: list[float]
    p1_lower: list[float]
    p2_upper: list[float]
    method: str
    stopping: int | None
    sizes: tuple[int, int] | None = None  # outputs counted on (pair.first, pair.second), when not ``used`` each
    mean: float | None = None  # the Poisson mean of those sizes (the Poissonized ε route)


def _confirm_fixed(runner: Runner, s: _Settings, pair_list: list[Any], plan: _Plan, chosen: list[Candidate],
                   m: int, level: float) -> _Confirmation:
    """Phase 2: count all chosen events on the same fresh outputs of their pair, at ``level`` each.

    The ε route draws ``N ~ Poisson(λ)`` outputs per input, capped at ``m`` (``λ`` from
    :func:`poisson_sample_mean`; the sizes come from their own seeded stream, independent of the
    outputs), and bounds the ratio by one conditional Clopper–Pearson test
    (:func:`poisson_epsilon_lower_bound`). The Gaussian-assumption route counts ``m`` outputs per
    input and bounds each side by Clopper–Pearson (the μ-GDP bound of :mod:`dpkit.audit.curve`)."""
    pi = chosen[0].pair_index
    pair = pair_list[pi]
    events = [c.event for c in chosen]
    eps, delta = s.claimed_epsilon, s.claimed_delta
    gaussian = s.assumption == "gaussian"
    mean, spent = (float(m), 0.0) if gaussian else poisson_sample_mean(m)
    sizes = (m, m) if gaussian else tuple(int(x) for x in np.minimum(runner.generator((_SIZES, pi)).poisson(mean, 2), m))
    block = runner.block_size(m)
    counts = np.zeros((len(chosen), 2), dtype=np.int64)
    counts[:, 0] = runner.count(pair.first, sizes[0], (_CONFIRM, pi, 0), events, block=block)
    counts[:, 1] = runner.count(pair.second, sizes[1], (_CONFIRM, pi, 1), events, block=block)
    bounds, pvals, p1s, p2s = [], [], [], []
    for j, c in enumerate(chosen):
        a, b = _oriented(c, counts[j])
        na, nb = _oriented(c, sizes)
        if gaussian:
            bounds.append(gaussian_epsilon_lower_bound(a, na, b, nb, delta, level))
            pvals.append(gaussian_claim_p_value(a, na, b, nb, eps, delta, alpha_cap=level))
        else:
            bounds.append(poisson_epsilon_lower_bound(a, b, mean, delta, level, spent))
            pvals.append(poisson_claim_p_value(a, b, mean, eps, delta, spent, alpha_cap=level))
        p1s.append(cp_lower(a, na, level / 2))
        p2s.append(cp_upper(b, nb, level / 2))
    route = ("mu-GDP bound Phi^-1(p1_lower) - Phi^-1(p2_upper) turned into epsilon at claimed_delta (Gaussian "
             "trade-off assumption); one-sided Clopper-Pearson on each side" if gaussian else
             f"Poissonized sample sizes (mean {mean:.6g}, capped at {m}); the ratio p1/p2 bounded by one "
             "Clopper-Pearson bound on the conditional binomial K1 | K1 + K2"
             + (" after a Poisson allowance for delta" if delta > 0 else ""))
    k = len(chosen)
    method = (f"select-then-confirm: events chosen on {plan.screen} outputs per input of each of {len(pair_list)} "
              f"pairs (+{plan.refine} streamed for the best {plan.refined}, the best {_VALIDATED_EVENTS} "
              f"re-scored on {plan.validate} held-out outputs), confirmed on {sizes[0]} and {sizes[1]} fresh outputs "
              f"of the inputs of pair {pair.label!r}; {route}" + (f"; Bonferroni over {k} candidates" if k > 1 else ""))
    return _Confirmation(counts, m, bounds, pvals, p1s, p2s, method, None, sizes, None if gaussian else mean)


def _confirm_sequential(runner: Runner, s: _Settings, pair_list: list[Any], plan: _Plan, chosen: list[Candidate],
                        m: int, level: float, notes: list[str]) -> _Confirmation:
    """Phase 2, sequential: rounds of batches with betting confidence sequences (anytime valid),
    stopping once the claim is refuted or every candidate looks hopeless."""
    pi = chosen[0].pair_index
    pair = pair_list[pi]
    events = [c.event for c in chosen]
    k = len(chosen)
    counts = np.zeros((k, 2), dtype=np.int64)
    block = runner.block_size(max(m // 20, 1))  # one batch size for the whole stream: batch numbers never reused
    rounds_batches = max(1, -(-m // block) // 20)  # ~20 looks at the data
    lows = [BettingBound(level / 2, "lower") for _ in chosen]
    ups = [BettingBound(level / 2, "upper") for _ in chosen]
    next_batch = 0
    bounds = [-math.inf] * k
    history: list[list[tuple[int, int, int]]] = [[] for _ in chosen]  # (numerator, denominator, n) per round
    used = 0
    while used < m:
        n_round = min(rounds_batches * block, m - used)
        c1 = runner.count(pair.first, n_round, (_CONFIRM, pi, 0), events, next_batch, block)
        c2 = runner.count(pair.second, n_round, (_CONFIRM, pi, 1), events, next_batch, block)
        for j, c in enumerate(chosen):
            a, b = _oriented(c, (c1[j], c2[j]))
            lows[j].update(int(a), n_round)
            ups[j].update(int(b), n_round)
            history[j].append((int(a), int(b), n_round))
            counts[j] += (c1[j], c2[j])
        used += n_round
        next_batch += rounds_batches
        for j in range(k):
            lo, up = lows[j].bound(), ups[j].bound()
            bounds[j] = math.log(lo - s.claimed_delta) - math.log(up) if lo > s.claimed_delta else -math.inf
        if max(bounds) > s.claimed_epsilon or _hopeless(chosen, counts, used, s.claimed_epsilon, s.claimed_delta):
            break
    pvals = [_sequential_p_value(history[j], s.claimed_epsilon, s.claimed_delta, level) for j in range(k)]
    method = (f"select-then-confirm (sequential): events chosen on {plan.screen} outputs per input of each of "
              f"{len(pair_list)} pairs, confirmed with betting confidence sequences (anytime valid) on up to "
              f"{m} outputs per input" + (f"; Bonferroni over {k} candidates" if k > 1 else "")
              + ("; stopped early" if used < m else ""))
    notes.append(f"sequential: the bound is the confidence-sequence bound at the stopping time ({used} outputs "
                 "per input); it is valid at that data-dependent time because it holds at all times at once")
    return _Confirmation(counts, used, bounds, pvals, [b.bound() for b in lows], [b.bound() for b in ups], method,
                         used)


def _assemble(s: _Settings, runner: Runner, pair_list: list[Any], chosen: list[Candidate], conf: _Confirmation,
              notes: list[str], floats: _FloatPhase, level: float, start: float, seed: Any) -> AuditResult:
    """The result: the best confirmed bound (floored at 0), its witness, a Bonferroni p-value over
    the confirmed events (and the float check), and on a pass the detectable ε."""
    best = int(np.argmax(conf.bounds))
    eps_lb = max(0.0, float(conf.bounds[best]))
    violation = bool(eps_lb > s.claimed_epsilon)
    p_value = min(1.0, floats.tests * len(chosen) * min(conf.p_values))
    c = chosen[best]
    a, b = _oriented(c, conf.counts[best])
    used = conf.used
    witness = {
        "pair": pair_list[chosen[0].pair_index].to_dict(),
        "direction": "Pr[M(D') in S] vs Pr[M(D) in S]" if c.reverse else "Pr[M(D) in S] vs Pr[M(D') in S]",
        "event": c.event.describe(),
        "count_numerator": int(a), "count_denominator": int(b), "samples_per_input": int(used),
        "p_numerator_lower": float(conf.p1_lower[best]), "p_denominator_upper": float(conf.p2_upper[best]),
        "bound": float(conf.bounds[best]),
    }
    if conf.sizes is not None and conf.mean is not None:  # the Poissonized route: outputs counted, and their mean
        na, nb = _oriented(c, conf.sizes)
        witness.update(outputs_numerator=int(na), outputs_denominator=int(nb), poisson_mean=float(conf.mean))
    detectable = None
    if s.assumption == "gaussian":
        witness["mu_lower_bound"] = max(0.0, mu_lower_bound(int(a), used, int(b), used, level))
        notes.append("epsilon_lower_bound assumes a Gaussian trade-off curve: " + GAUSSIAN_ASSUMPTION)
    elif not violation:
        detectable = detectable_epsilon(b / used, used, s.claimed_epsilon, s.claimed_delta, s.confidence, level)
        notes.append(f"pass: a witness event with probability ratio e^{detectable:.4g} (same probability on D') "
                     f"would have been flagged with probability >= {s.confidence:g} at this budget")
    return AuditResult(
        epsilon_lower_bound=eps_lb, violation=violation, p_value=float(p_value), witness=witness,
        samples=int(runner.samples), seconds=time.perf_counter() - start, claimed_epsilon=s.claimed_epsilon,
        claimed_delta=s.claimed_delta, confidence=s.confidence, seed=seed, method=conf.method, candidates=len(chosen),
        notes=(*notes, *_float_notes(floats.float_check), *_pair_notes(pair_list)),
        references=_references(c, s.sequential, s.assumption), detectable_epsilon=detectable,
        assumption=GAUSSIAN_ASSUMPTION if s.assumption else None, stopping_samples=conf.stopping,
        float_check=floats.float_check,
    )


def _oriented(c: Candidate, counts: Any) -> tuple[int, int]:
    """(numerator, denominator) counts of a candidate from counts on (pair.first, pair.second)."""
    return (int(counts[1]), int(counts[0])) if c.reverse else (int(counts[0]), int(counts[1]))


def _auto_confirmation(best: Candidate, s: _Settings, level: float, default: int, cap: int,
                       notes: list[str]) -> Any:
    """``samples="auto"``: the fewest confirmation outputs per input whose exact Clopper–Pearson power
    at the selection's (shrunk) estimates of the best event reaches ``s.power``
    (:func:`~dpkit.audit.sample_plan.plan_samples`); ``default`` when no refutation is in reach."""
    a, na, b, nb = best.counts
    shrunk1, shrunk2 = shrunk_frequencies(np.array(a, dtype=float), max(na, 1), np.array(b, dtype=float), max(nb, 1))
    p1, p2 = min(float(shrunk1), 1.0), min(float(shrunk2), 1.0)  # shrunk against the event, as the ranking does
    plan = plan_samples(p1, p2, s.claimed_epsilon, s.claimed_delta, level, s.power, max(cap, 1), default)
    if plan.samples_per_input < _MIN_CONFIRM:
        plan = describe_plan(_MIN_CONFIRM, p1, p2, s.claimed_epsilon, s.claimed_delta, level, s.power)
    if plan.reached:
        notes.append(f"samples='auto': the selection predicts power {plan.power:.2f} >= {s.power:g} at "
                     f"{plan.samples_per_input} outputs per input; confirmed on {plan.samples_per_input}")
    else:
        notes.append(f"samples='auto': power {s.power:g} is out of reach within {AUTO_MAX_SAMPLES} samples at the "
                     f"selection's estimates; confirmed on the default budget ({plan.samples_per_input} per input)")
    caveat = ("; computed for the Clopper-Pearson route, not the Gaussian curve" if s.assumption else
              "; computed for the fixed-sample Clopper-Pearson bound: the sequential betting bound has less power"
              if s.sequential else "")
    notes.append(plan.describe() + caveat)
    return plan


def _float_notes(float_check: str | None) -> tuple[str, ...]:
    """The printed note when ``float_events=True`` could not replay the mechanism."""
    return (f"float_events: replay check {float_check}",) if float_check and float_check.startswith("not run") else ()


def _pair_notes(pair_list: list[Any]) -> tuple[str, ...]:
    """Say which pairs were taken as add/remove neighbours (inputs of different lengths)."""
    return tuple(f"pair {p.label!r} was audited as add/remove neighbours: its inputs have shapes "
                 f"{np.shape(p.first)} and {np.shape(p.second)} (one record more or less)"
                 for p in pair_list if p.add_remove)


def _references(witness: Candidate, sequential: bool, assumption: str | None) -> tuple[str, ...]:
    """Bibliography keys of the bound: Clopper & Pearson 1934 (fixed-sample mode) with
    Przyborowski & Wilenski 1940 (the conditional Poisson test of the ε route), Nasr et al. 2023
    and Dong et al. 2022 for the Gaussian route, and Bichsel et al. 2021 when the witness event
    thresholds a learned score."""
    keys = () if sequential else ("clopper1934use",)
    if assumption == "gaussian":
        keys += ("nasr2023tight", "dong2022gaussian")
    elif not sequential:
        keys += ("przyborowski1940homogeneity",)
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

    def exceeds(log_level: float) -> bool:
        return _sequential_bound(history, delta, math.exp(log_level)) > epsilon

    return math.exp(threshold_bracket(exceeds, lo, hi, steps=40)[1])


def _hopeless(chosen: list[Candidate], counts: np.ndarray, used: int, eps: float, delta: float) -> bool:
    """Futility rule for the sequential mode (any stopping rule keeps the bounds valid)."""
    n = max(int(used), 1)
    for j, c in enumerate(chosen):
        a, b = _oriented(c, counts[j])
        p1, p2 = a / n, b / n
        hi = p1 + 4 * math.sqrt(max(p1, 1.0 / n) / n) - delta
        lo = p2 - 4 * math.sqrt(max(p2, 1.0 / n) / n)
        if hi > 0 and (lo <= 0 or math.log(hi) - math.log(lo) > eps):
            return False
    return True
