"""Sparse vector family: exact output laws (quadrature over the threshold noise), privacy, encoding."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from _mech_stats import ALPHA, chisquare_pvalue
from scipy import integrate, stats

from dpkit.accounting.approx_dp import ApproxDPAccountant
from dpkit.accounting.zcdp import event_rho
from dpkit.mechanisms import AboveThreshold, NumericSparse, SparseVector, SparseVectorWithGap, svt_budget_split
from dpkit.mechanisms.exact_comparison import NoiseVector, UnitNoise


def lap_sf(x: float, b: float) -> float:
    """P(Lap(b) ≥ x)."""
    return 1 - 0.5 * math.exp(x / b) if x < 0 else 0.5 * math.exp(-x / b)


def svt_patterns(m: int, cutoff: int) -> list[tuple[int, ...]]:
    """Every possible output row of Lyu Alg. 1 with m queries and cut-off c."""
    out = []
    for bits in itertools.product((0, 1), repeat=m):
        row, count = [], 0
        for b in bits:
            row.append(b if count < cutoff else -1)
            count += b if count < cutoff else 0
        out.append(tuple(row))
    return sorted(set(out))


def svt_law(queries, threshold, threshold_scale, query_scale, cutoff):
    """Exact P(row) = ∫ Lap density(r) Π_answered P(q_i + ν_i ≥ T + r or not) dr (independent of dpkit)."""
    patterns = svt_patterns(len(queries), cutoff)
    law = {}
    for row in patterns:
        def integrand(r, row=row):
            value = math.exp(-abs(r) / threshold_scale) / (2 * threshold_scale)
            for q, code in zip(queries, row):
                if code == -1:
                    continue
                up = lap_sf(threshold + r - q, query_scale)
                value *= up if code == 1 else 1 - up
            return value
        kinks = sorted({0.0, *[q - threshold for q in queries]})
        edges = [-np.inf, *kinks, np.inf]
        law[row] = sum(integrate.quad(integrand, a, b, epsabs=1e-14, epsrel=1e-11, limit=200)[0]
                       for a, b in zip(edges[:-1], edges[1:]))
    return law


def test_svt_law_matches_exact_and_is_private():
    svt = SparseVector(epsilon1=0.4, epsilon2=0.6, threshold=1.0, cutoff=2, sensitivity=1.0)
    queries = [0.5, 1.5, 0.0, 2.0]
    law = svt_law(queries, svt.threshold, svt.threshold_scale, svt.query_scale, svt.cutoff)
    assert sum(law.values()) == pytest.approx(1.0, abs=1e-9)
    runs = svt.sample(queries, size=100_000, rng=21)
    assert runs.dtype == np.int8
    keys = list(law)
    index = {k: i for i, k in enumerate(keys)}
    counts = np.zeros(len(keys))
    for row, n in zip(*np.unique(runs, axis=0, return_counts=True)):
        counts[index[tuple(int(x) for x in row)]] += n  # KeyError would mean an impossible row
    assert chisquare_pvalue(counts, np.array([law[k] for k in keys])) > ALPHA
    # privacy by exact computation: neighbouring query vectors (each query moves by ≤ Δ)
    for shift in ([1, 1, 1, 1], [-1, -1, -1, -1], [1, -1, 1, -1], [-1, 1, -1, 1], [0, 1, 0, -1]):
        other = svt_law(list(np.add(queries, shift)), svt.threshold, svt.threshold_scale, svt.query_scale, 2)
        worst = max(abs(math.log(law[k] / other[k])) for k in keys)
        assert worst <= svt.epsilon + 1e-7


def test_svt_encoding_and_cutoff():
    svt = SparseVector(0.5, 0.5, threshold=0.0, cutoff=3)
    runs = svt.sample(np.linspace(-3, 3, 12), size=5_000, rng=4)
    assert set(np.unique(runs)) <= {-1, 0, 1}
    tops = (runs == 1).sum(axis=1)
    assert tops.max() <= 3
    for row in runs[:200]:
        hits = np.flatnonzero(row == 1)
        if hits.size == 3:  # everything after the third ⊤ is unanswered, nothing before is
            assert np.all(row[hits[-1] + 1 :] == -1) and np.all(row[: hits[-1]] >= 0)
        else:
            assert np.all(row >= 0)


def test_threshold_drawn_once_per_run():
    """With no query noise variance to speak of, answers of one run share one threshold draw:
    identical queries get identical answers within a run (a redrawn threshold would split them)."""
    svt = SparseVector(epsilon1=1.0, epsilon2=1e6, threshold=0.0, cutoff=10)
    runs = svt.sample(np.zeros(10), size=2_000, rng=6)
    assert np.all((runs == runs[:, :1]) | (runs == -1))
    # each run is all ⊤ or all ⊥ with probability 1/2 (P(Lap ≤ 0)); binomial test
    assert stats.binomtest(int((runs[:, 0] == 1).sum()), 2_000, 0.5).pvalue > ALPHA


def test_budget_split_rule():
    e1, e2 = svt_budget_split(2.0, 15)
    assert e1 / 2.0 == pytest.approx(0.0938536, abs=1e-7)  # 1/(1 + (2c)^{2/3}) at c = 15 (Lyu et al. 2017, Sec. 4.2 ratio)
    assert e2 / e1 == pytest.approx(30 ** (2 / 3), rel=1e-12)
    assert e1 + e2 <= 2.0
    m1, m2 = svt_budget_split(1.0, 8, monotonic=True)
    assert m2 / m1 == pytest.approx(4.0, rel=1e-12)


def test_scales_and_paper_threshold():
    svt = SparseVector(0.2, 0.8, threshold=0.0, cutoff=4, sensitivity=2.0)
    assert svt.threshold_scale == pytest.approx(10.0)
    assert svt.query_scale == pytest.approx(2 * 4 * 2.0 / 0.8)
    assert SparseVector(0.2, 0.8, 0.0, 4, 2.0, monotonic=True).query_scale == pytest.approx(10.0)
    paper = SparseVector(0.2, 0.8, 0.0, 4, 2.0, threshold_noise="ding")
    assert paper.threshold_scale == pytest.approx(40.0)
    assert paper.event == svt.event


def test_svt_events():
    svt = SparseVector.from_epsilon(1.0, threshold=0.0, cutoff=5)
    assert ApproxDPAccountant().compose(svt.event).get_epsilon(1e-9).epsilon <= 1.0 * (1 + 1e-12)
    # (ε₁ + ε₂)-DP: ρ between the KL of binary RR, ε·tanh(ε/2), and ε²/2 (Bun & Steinke 2016, Prop. 3.3)
    assert math.tanh(0.5) <= event_rho(svt.event) <= 0.5
    numeric = NumericSparse(0.1, 0.5, 0.4, threshold=0.0, cutoff=3)
    eps = ApproxDPAccountant().compose(numeric.event).get_epsilon(1e-9).epsilon
    assert 0.99 <= eps <= 1.0 * (1 + 1e-12)
    at = AboveThreshold(1.0, threshold=2.0)
    assert at.event == SparseVector(0.5, 0.5, 2.0, 1).event


def test_above_threshold_is_sparse_vector_with_c1():
    at = AboveThreshold(0.8, threshold=1.0, sensitivity=2.0)
    sv = SparseVector(0.4, 0.4, 1.0, 1, 2.0)
    q = [0.0, 3.0, 1.0, 5.0]
    assert np.array_equal(at.sample(q, size=500, rng=2), sv.sample(q, size=500, rng=2))
    assert at.sparse_vector.threshold_scale == pytest.approx(2 * 2.0 / 0.8)
    assert at.sparse_vector.query_scale == pytest.approx(4 * 2.0 / 0.8)


def test_gap_variant_matches_codes_and_gap_law():
    sv = SparseVector(0.5, 0.5, threshold=0.0, cutoff=2)
    gap = SparseVectorWithGap(0.5, 0.5, threshold=0.0, cutoff=2)
    q = [-1.0, 0.5, 2.0, 0.0]
    codes = sv.sample(q, size=2_000, rng=8)
    gaps = gap.sample(q, size=2_000, rng=8)
    assert gaps.dtype == np.float64
    assert np.array_equal(np.isnan(gaps), codes != 1)
    assert np.all(gaps[codes == 1] >= 0)


def test_numeric_sparse_answers_law():
    ns = NumericSparse(0.5, 0.5, 1.0, threshold=0.0, cutoff=2, sensitivity=1.0)
    out = ns.sample([1e6, -1e6, 1e6, 1e6], size=40_000, rng=9)
    assert np.all(np.isnan(out[:, 1])) and np.all(np.isnan(out[:, 3]))  # ⊥, then unanswered after c = 2
    assert stats.kstest(out[:, 0] - 1e6, "laplace", args=(0.0, ns.answer_scale)).pvalue > ALPHA
    assert ns.answer_scale == pytest.approx(2.0)


def test_svt_same_seed_same_output_and_single_run_shape():
    svt = SparseVector.from_epsilon(1.0, threshold=0.0, cutoff=2)
    q = np.arange(10.0) - 5
    assert np.array_equal(svt.sample(q, size=100, rng=1), svt.sample(q, size=100, rng=1))
    assert svt.sample(q, rng=0).shape == (10,)


@pytest.mark.parametrize(
    "build,error",
    [
        (lambda: SparseVector(0.0, 1.0, 0.0), ValueError),
        (lambda: SparseVector(1.0, -1.0, 0.0), ValueError),
        (lambda: SparseVector(1.0, 1.0, float("nan")), ValueError),
        (lambda: SparseVector(1.0, 1.0, 0.0, cutoff=0), ValueError),
        (lambda: SparseVector(1.0, 1.0, 0.0, cutoff=1.5), TypeError),
        (lambda: SparseVector(1.0, 1.0, 0.0, sensitivity=0.0), ValueError),
        (lambda: SparseVector(1.0, 1.0, 0.0, threshold_noise="paper"), ValueError),
        (lambda: SparseVector(1.0, 1.0, 0.0).sample([[1.0]]), ValueError),
        (lambda: SparseVector(1.0, 1.0, 0.0).sample([]), ValueError),
        (lambda: AboveThreshold(-1.0, 0.0), ValueError),
        (lambda: NumericSparse(1.0, 1.0, 0.0, 0.0), ValueError),
        (lambda: svt_budget_split(1.0, 0), ValueError),
    ],
)
def test_svt_bad_inputs(build, error):
    with pytest.raises(error):
        build()


# --------------------------------------------------------------------------- Gaussian SVT, max_queries (Zhu & Wang 2020)


def gaussian_svt_law(queries, threshold, sigma1, sigma2, cutoff):
    """Exact P(row) for Gaussian SVT by quadrature over the threshold noise (independent of dpkit)."""
    law = {}
    for row in svt_patterns(len(queries), cutoff):
        def integrand(r, row=row):
            value = stats.norm.pdf(r, scale=sigma1)
            for q, code in zip(queries, row):
                if code == -1:
                    continue
                up = stats.norm.sf(threshold + r - q, scale=sigma2)
                value *= up if code == 1 else 1 - up
            return value
        law[row] = integrate.quad(integrand, -np.inf, np.inf, epsabs=1e-14, epsrel=1e-11, limit=200)[0]
    return law


def test_gaussian_svt_law_matches_exact_and_rdp_bounds_it():
    from dpkit.accounting.rdp import event_rdp
    from dpkit.mechanisms.sparse_vector import GaussianSparseVector

    svt = GaussianSparseVector(threshold_sigma=1.0, query_sigma=1.5, threshold=0.5, max_queries=4, cutoff=2)
    queries = [0.0, 1.0, -0.5, 1.5]
    law = gaussian_svt_law(queries, 0.5, 1.0, 1.5, 2)
    assert sum(law.values()) == pytest.approx(1.0, abs=1e-9)
    runs = svt.sample(queries, size=100_000, rng=5)
    keys = list(law)
    index = {k: i for i, k in enumerate(keys)}
    counts = np.zeros(len(keys))
    for row, n in zip(*np.unique(runs, axis=0, return_counts=True)):
        counts[index[tuple(int(x) for x in row)]] += n
    assert chisquare_pvalue(counts, np.array([law[k] for k in keys])) > ALPHA
    # the event's RDP curve bounds the exact Rényi divergence for neighbouring query vectors
    p = np.array([law[k] for k in keys])
    for shift in ([1, 1, 1, 1], [-1, -1, -1, -1], [1, -1, 1, -1], [-1, 1, 1, -1]):
        other = gaussian_svt_law(list(np.add(queries, shift)), 0.5, 1.0, 1.5, 2)
        q = np.array([other[k] for k in keys])
        for alpha in (2.0, 8.0):
            for a, b in ((p, q), (q, p)):
                divergence = math.log(np.sum(a**alpha * b ** (1 - alpha))) / (alpha - 1)
                assert divergence <= event_rdp(svt.event, alpha)


def test_max_queries_is_enforced_and_recorded():
    from dpkit.accounting.events import GaussianSparseVectorEvent, SparseVectorEvent
    from dpkit.mechanisms.gaussian import GaussianMechanism
    from dpkit.mechanisms.ledger import PrivacyLedger
    from dpkit.mechanisms.sparse_vector import GatedRelease, GaussianSparseVector

    svt = SparseVector(0.5, 0.5, threshold=0.0, cutoff=2, max_queries=3)
    assert svt.event == SparseVectorEvent(0.5, 0.5, 2, max_queries=3)
    with pytest.raises(ValueError, match="max_queries=3"):
        svt.sample([0.0] * 4, rng=0)
    gauss = GaussianSparseVector(2.0, 3.0, threshold=0.0, max_queries=2, cutoff=1, sensitivity=0.5)
    assert gauss.event == GaussianSparseVectorEvent(2.0, 3.0, max_queries=2, cutoff=1, sensitivity=0.5)
    with pytest.raises(ValueError, match="max_queries=2"):
        gauss.sample([0.0] * 3, rng=0)
    for gate in (svt, gauss):
        run = GatedRelease(gate, GaussianMechanism(sigma=1.0)).open(rng=0, ledger=PrivacyLedger(1), agent=0)
        answers = [run.step(-1e9, [1.0]) for _ in range(gate.max_queries)]
        assert answers == [None] * gate.max_queries and run.exhausted and run.queries == gate.max_queries
        assert run.step(1e9, [1.0]) is None and run.releases == 0  # no answer after the k-th query
    with pytest.raises(ValueError, match="max_queries"):
        SparseVector(0.5, 0.5, 0.0, max_queries=0)
    with pytest.raises(TypeError, match="max_queries"):
        GaussianSparseVector(1.0, 1.0, 0.0, max_queries=None)
    with pytest.raises(ValueError, match="query_sigma"):
        GaussianSparseVector(1.0, 0.0, 0.0, max_queries=3)


def test_gated_release_with_gaussian_gate_releases_only_on_top():
    from dpkit.accounting.events import GaussianSparseVectorEvent
    from dpkit.mechanisms.gaussian import GaussianMechanism
    from dpkit.mechanisms.sparse_vector import GatedRelease, GaussianSparseVector

    gate = GaussianSparseVector(0.1, 0.1, threshold=0.0, max_queries=4, cutoff=1)
    mech = GatedRelease(gate, GaussianMechanism(sigma=1e-6))
    value = np.array([[-50.0, 1.0], [50.0, 2.0], [50.0, 3.0], [-50.0, 4.0]])
    out = mech.sample(value, size=3, rng=0)
    assert np.isnan(out[:, [0, 2, 3]]).all() and np.allclose(out[:, 1, 0], 2.0, atol=1e-4)
    assert mech.event.events[0] == GaussianSparseVectorEvent(0.1, 0.1, 4, 1)
    assert mech.event.events[1].count == 1


def _replay_threshold(gate, generator):
    """Draw what a run of ``gate`` draws for its threshold: one exact unit noise (float-safe) or numpy's
    continuous draw; returns the noisy threshold's value (an estimate for the exact draw)."""
    if gate.float_safe:
        return gate.threshold + gate.threshold_scale * float(NoiseVector(gate.noise_kind, 1, generator).estimate[0])
    return gate.threshold + float(gate.threshold_noise_draw(generator, None))


def _replay_query_noise(gate, generator):
    if gate.float_safe:
        return gate.query_scale * float(UnitNoise(gate.noise_kind, 1, generator).estimate[0])
    return float(gate.query_noise_draw(generator, None))


@pytest.mark.parametrize("float_safe", [True, False])
def test_release_now_spends_one_of_the_c_releases_without_a_gate_draw(float_safe):
    """A forced release (the deadline) counts toward the cut-off and as one query, draws only the release's
    noise (no query noise: the value is the one the release mechanism draws right after the threshold),
    adds no ledger entry, and is refused once the run is exhausted."""
    from dpkit.mechanisms.gaussian import GaussianMechanism
    from dpkit.mechanisms.ledger import PrivacyLedger
    from dpkit.mechanisms.sparse_vector import GatedRelease

    gate = SparseVector(0.5, 0.5, threshold=0.0, cutoff=2, max_queries=3, float_safe=float_safe)
    mech = GatedRelease(gate, GaussianMechanism(sigma=1.0))
    ledger = PrivacyLedger(1)
    run = mech.open(rng=np.random.default_rng(4), ledger=ledger)
    forced = run.release_now([0.0])
    generator = np.random.default_rng(4)
    _replay_threshold(gate, generator)
    assert forced.tolist() == mech.release.sample([0.0], rng=generator).tolist()
    assert run.releases == 1 and run.queries == 1 and run.remaining == 1
    assert len(ledger.entries(0)) == 1  # only the run's own entry, recorded when it opened
    assert run.step(1e9, [5.0]) is not None and run.exhausted
    with pytest.raises(ValueError, match="no release left"):
        run.release_now([0.0])


@pytest.mark.parametrize("epsilon1, epsilon2", [(0.5, 0.5), (0.3, 0.7), (0.1, 0.9), (0.2, 0.8), (0.2, 0.8000001), (0.2, 0.8001)])
@pytest.mark.parametrize("query", [-7.0, -0.3, 0.0, 2.5, 40.0])
def test_below_probability_is_the_convolution_of_the_two_laplace_noises(epsilon1, epsilon2, query):
    """Closed form against the CDF of ν − ρ integrated with mpmath (50 digits): P(⊥) = ∫ P(ν < T − q + r) dP(r).
    With c = 2 the scales b₁ = Δ/ε₁ and b₂ = 4Δ/ε₂ are equal at (0.2, 0.8), and nearly so next to it."""
    import mpmath

    svt = SparseVector(epsilon1, epsilon2, threshold=1.0, cutoff=2, sensitivity=0.7)
    b1, b2 = mpmath.mpf(svt.threshold_scale), mpmath.mpf(svt.query_scale)
    x = mpmath.mpf(svt.threshold) - mpmath.mpf(query)
    with mpmath.workdps(50):
        laplace_cdf = lambda v: mpmath.e ** (v / b2) / 2 if v < 0 else 1 - mpmath.e ** (-v / b2) / 2
        density = lambda r: mpmath.e ** (-abs(r) / b1) / (2 * b1)
        reference = mpmath.quad(lambda r: laplace_cdf(x + r) * density(r), [-mpmath.inf, *sorted([-x, 0]), mpmath.inf])
    assert svt.below_probability(query) == pytest.approx(float(reference), rel=1e-9, abs=1e-15)


def test_below_probability_matches_the_sampler():
    """First answers of many runs (threshold noise drawn afresh each run) against the closed form,
    inside a Clopper–Pearson interval at level 1 − 1e-6."""
    from statsmodels.stats.proportion import proportion_confint

    svt = SparseVector(0.2, 0.8, threshold=1.5, cutoff=1, sensitivity=1.0)
    runs = 200_000
    first = svt.sample([0.0], size=runs, rng=11)[:, 0]
    low, high = proportion_confint(int(np.sum(first == 0)), runs, alpha=1e-6, method="beta")
    assert low <= svt.below_probability(0.0) <= high


def restarted_law(queries, threshold, threshold_scale, query_scale, restarts):
    """Exact law of ``restarts`` cut-off-1 runs back to back (Dwork & Roth 2014, Alg. 2): a row is a sequence of
    segments ⊥…⊥⊤, each with its own threshold draw, so P(row) is the product of the segments' one-run laws."""
    law = {}
    for bits in itertools.product((0, 1), repeat=len(queries)):
        row, tops = [], 0
        for b in bits:
            row.append(b if tops < restarts else -1)
            tops += b if tops < restarts else 0
        row = tuple(row)
        if row in law:
            continue
        probability, start = 1.0, 0
        for end in [i for i, code in enumerate(row) if code == 1] + [len(row) - 1]:
            segment = [code for code in row[start:end + 1] if code != -1]
            if segment:
                one = svt_law(list(queries[start:start + len(segment)]), threshold, threshold_scale, query_scale, 1)
                probability *= one[tuple(segment) + (-1,) * (end + 1 - start - len(segment))]
            start = end + 1
            if start >= len(row):
                break
        law[row] = probability
    return law


def test_restarted_gate_law_online_and_batch_and_its_privacy():
    """GatedRelease(restarts=2) on a cut-off-1 gate: the batch sampler and the online run both follow the exact
    law of two AboveThreshold runs back to back (chi-square), and neighbouring query vectors change no row's
    probability by more than the event's pure ε = 2(ε₁ + ε₂) (exact computation)."""
    from dpkit.accounting.events import SelfComposedEvent, SparseVectorEvent
    from dpkit.mechanisms.gaussian import GaussianMechanism
    from dpkit.mechanisms.ledger import PrivacyLedger
    from dpkit.mechanisms.sparse_vector import GatedRelease

    gate = SparseVector(epsilon1=0.4, epsilon2=0.6, threshold=1.0, cutoff=1, sensitivity=1.0)
    mech = GatedRelease(gate, GaussianMechanism(sigma=1.0), restarts=2)
    assert mech.cutoff == 2 and mech.event.events[0] == SelfComposedEvent(SparseVectorEvent(0.4, 0.6, 1), 2)
    queries = [0.5, 1.5, 0.0, 2.0]
    law = restarted_law(queries, gate.threshold, gate.threshold_scale, gate.query_scale, 2)
    assert sum(law.values()) == pytest.approx(1.0, abs=1e-9)
    keys = list(law)
    index = {k: i for i, k in enumerate(keys)}
    value = np.column_stack([queries, np.zeros(4)])
    batch = np.where(np.isnan(mech.sample(value, size=60_000, rng=21)[:, :, 0]), 0, 1)
    generator = np.random.default_rng(22)
    online = []
    for _ in range(20_000):
        run = mech.open(rng=generator, ledger=PrivacyLedger(1))
        online.append([int(run.step(q, [0.0]) is not None) for q in queries])
    for rows in (batch, np.array(online)):
        counts = np.zeros(len(keys))
        for row in rows:
            codes, tops = [], 0
            for code in row:  # the sampler's NaN is ⊥ or unanswered: the ⊤ count before it decides
                codes.append(-1 if tops >= 2 else int(code == 1))
                tops += code == 1
            counts[index[tuple(codes)]] += 1
        assert chisquare_pvalue(counts, np.array([law[k] for k in keys])) > ALPHA
    for shift in ([1, 1, 1, 1], [-1, -1, -1, -1], [1, -1, 1, -1], [-1, 1, -1, 1], [0, 1, 0, -1]):
        other = restarted_law(list(np.add(queries, shift)), gate.threshold, gate.threshold_scale, gate.query_scale, 2)
        assert max(abs(math.log(law[k] / other[k])) for k in keys) <= 2 * gate.epsilon + 1e-7


def test_restarted_gate_draws_a_new_threshold_after_each_top():
    """Threshold noise only (query noise ~1e-6): one run of cut-off 2 answers two zero queries alike (both ⊤ with
    probability 1/2), two cut-off-1 runs back to back draw two thresholds (both ⊤ with probability 1/4);
    binomial tests. A forced release ends a run too: the next query draws a threshold, then its own noise."""
    from dpkit.mechanisms.gaussian import GaussianMechanism
    from dpkit.mechanisms.ledger import PrivacyLedger
    from dpkit.mechanisms.sparse_vector import GatedRelease

    value = np.zeros((2, 2))
    runs = 4_000
    once, twice = SparseVector(1.0, 1e6, 0.0, cutoff=2), SparseVector(1.0, 1e6, 0.0, cutoff=1)
    for gate, restarts, p in ((once, 1, 0.5), (twice, 2, 0.25)):
        out = GatedRelease(gate, GaussianMechanism(sigma=1.0), restarts=restarts).sample(value, size=runs, rng=5)
        both = int(np.sum(np.all(~np.isnan(out[:, :, 0]), axis=1)))
        assert stats.binomtest(both, runs, p).pvalue > ALPHA
    for float_safe in (True, False):  # the replay compares the draws' doubles: exact but for probability ~2⁻³⁰
        mech = GatedRelease(SparseVector(0.5, 0.5, 0.0, cutoff=1, float_safe=float_safe), GaussianMechanism(sigma=1.0),
                            restarts=2)
        run = mech.open(rng=np.random.default_rng(4), ledger=PrivacyLedger(1))
        forced = run.release_now([0.0])
        released = run.step(0.0, [0.0])
        replay = np.random.default_rng(4)
        _replay_threshold(mech.gate, replay)
        assert forced.tolist() == mech.release.sample([0.0], rng=replay).tolist()
        new_threshold = _replay_threshold(mech.gate, replay)
        top = _replay_query_noise(mech.gate, replay) >= new_threshold
        assert (released is not None) == top and run.releases == 1 + top and run.queries == 2
    with pytest.raises(ValueError, match="restarts"):
        GatedRelease(SparseVector(1.0, 1.0, 0.0), GaussianMechanism(sigma=1.0), restarts=0)
