"""audit(): broken mechanisms flagged, correct ones never, false-positive rate, executors, inputs.

Sizes are reduced to fit the suite's time budget; ``benchmarks/audit.py`` runs full size with
the default settings (10^7 samples).
"""

from __future__ import annotations

import concurrent.futures
import importlib
import math

import numpy as np
import pytest
from scipy import stats

from dpkit.audit import catalogue as C
from dpkit.audit import AuditResult, StatDPPatterns, audit, from_scalar, resolve_pairs
from dpkit.audit.statistics import cp_lower, poisson_epsilon_lower_bound

CLAIMS = (0.2, 0.7, 1.5)

# The catalogue's continuous mechanisms are private only in exact (real) arithmetic: as executed on
# doubles their outputs leak through their low bits (Mironov 2012), which the default audit refutes
# (tests/audit/test_float_bits.py). Tests that compare the audit with their true ε as designed audit
# the values only.
EXACT = dict(float_bits=False)

# (name, claim) -> total samples for the suite; chosen so that the true ε is clearly above the
# claim for the bound the sample size can certify (ceiling table in docs/audit.md)
SUITE_SAMPLES = {
    ("svt_lee_clifton", 0.7): 2_000_000, ("svt_lee_clifton", 1.5): 400_000,
    ("svt_roth", 1.5): 1_000_000,
    ("rnm_exp_value", 0.2): 1_000_000,
}
# The hardest cases need the default 10^7 samples over all 13 patterns (benchmarks/audit.py
# runs them so: all flagged); the suite gives them the pattern the full search picks, at a
# smaller size (Lyu et al. Sec. 3: many ⊥ answers moving one way, the ⊤ answer the other way).
SUITE_PAIRS = {
    ("svt_lee_clifton", 0.2): ([1.0] * 5 + [0.0] * 5, [0.0] * 5 + [1.0] * 5),
    ("svt_roth", 0.2): ([1.0] * 10, [0.0] * 9 + [2.0]),
    ("svt_roth", 0.7): ([1.0] * 10, [2.0] * 5 + [0.0] * 5),
    ("svt_chen", 0.2): ([1.0] * 10, [0.0] * 5 + [2.0] * 5),
}
SUITE_PAIR_SAMPLES = {("svt_lee_clifton", 0.2): 4_000_000, ("svt_roth", 0.2): 4_000_000,
                      ("svt_roth", 0.7): 1_000_000, ("svt_chen", 0.2): 2_000_000}


def _broken_cases():
    for name, (_, _, true_eps) in C.BROKEN.items():
        for claim in CLAIMS:
            if true_eps(claim) > claim:
                samples = SUITE_PAIR_SAMPLES.get((name, claim)) or SUITE_SAMPLES.get((name, claim), 300_000)
                marks = [pytest.mark.slow] if samples >= 1_000_000 else []
                yield pytest.param(name, claim, samples, id=f"{name}-{claim}", marks=marks)


@pytest.mark.parametrize("name,claim,samples", list(_broken_cases()))
def test_broken_mechanisms_are_flagged(name, claim, samples):
    function, pairs, true_eps = C.BROKEN[name]
    if (name, claim) in SUITE_PAIRS:
        pairs = [tuple(np.array(x) for x in SUITE_PAIRS[(name, claim)])]
    result = audit(C.Entry(function, claim), pairs, claimed_epsilon=claim, samples=samples, rng=7, **EXACT)
    assert result.violation, (name, claim, result.epsilon_lower_bound, result.witness)
    assert result.p_value <= 0.05
    assert claim < result.epsilon_lower_bound
    # the reported bound exceeds the truth with probability <= 5 % (tests/audit/test_lower_bound_calibration.py
    # measures that rate); the same counts at level 1e-6 must stay below it
    w = result.witness
    assert poisson_epsilon_lower_bound(w["count_numerator"], w["count_denominator"], w["poisson_mean"], 0.0,
                                       1e-6) <= true_eps(claim)


def test_histogram_eps_not_flagged_where_it_is_private():
    # scale 1.5 gives true ε = 1/1.5 < 1.5: the claim 1.5 holds and must pass
    result = audit(C.Entry(C.histogram_eps, 1.5), "statdp-one", claimed_epsilon=1.5, samples=300_000, rng=3,
                   **EXACT)
    assert not result.violation
    # positive control: the same audit refutes a claim of 0.5, below the true 2/3
    assert audit(C.Entry(C.histogram_eps, 1.5), "statdp-one", claimed_epsilon=0.5, samples=300_000, rng=3).violation


@pytest.mark.parametrize("name", sorted(C.CORRECT))
@pytest.mark.parametrize("claim", CLAIMS)
def test_correct_mechanisms_pass(name, claim):
    function, pairs = C.CORRECT[name]
    result = audit(C.Entry(function, claim), pairs, claimed_epsilon=claim, samples=200_000, rng=11, **EXACT)
    assert not result.violation
    assert result.epsilon_lower_bound <= claim
    assert result.p_value > 0.05


def test_false_positive_rate_binomial():
    # 100 independent audits of a correct mechanism whose events are exactly tight (Laplace sum
    # at its claimed ε, both tails have ratio e^ε): flags must not exceed the binomial allowance
    runs, alpha = 100, 0.05
    pair = [(np.array([1.0, 1.0]), np.array([1.0, 2.0]))]
    flags = sum(audit(C.Entry(C.noisy_sum, 1.0), pair, claimed_epsilon=1.0, samples=6_000, rng=seed, **EXACT).violation
                for seed in range(runs))
    # H0: flag rate <= alpha; reject it at level 0.01 if P[Bin(runs, alpha) >= flags] < 0.01
    assert stats.binom.sf(flags - 1, runs, alpha) >= 0.01, flags


def test_power_targets_at_default_budget():
    # Power: Lee-Clifton SVT (Lyu et al. 2017, Alg. 4) at claim 0.7 (true 1.225, Sec. 3.3) -> >= 1.1; value-returning RNM over
    # 10 queries at claim 0.7 -> >= 1.7. Default samples (10^7) on the StatDP patterns.
    lee = audit(C.Entry(C.svt_lee_clifton, 0.7), "statdp", claimed_epsilon=0.7, rng=0)
    assert 1.1 <= lee.epsilon_lower_bound <= 1.225
    assert lee.samples <= 10_000_000


test_power_targets_at_default_budget = pytest.mark.slow(test_power_targets_at_default_budget)


def test_rnm_value_power():
    rnm = audit(C.Entry(C.rnm_value, 0.7), "statdp", claimed_epsilon=0.7, samples=2_000_000, rng=0)
    assert rnm.epsilon_lower_bound >= 1.7


def test_executor_gives_identical_results():
    mech = C.Entry(C.svt_lee_clifton, 1.0)
    kwargs = dict(claimed_epsilon=1.0, samples=300_000, rng=5, batch_size=20_000)
    serial = audit(mech, StatDPPatterns(length=5), **kwargs)
    with concurrent.futures.ProcessPoolExecutor(2) as pool:
        parallel = audit(mech, StatDPPatterns(length=5), executor=pool, **kwargs)
    with concurrent.futures.ThreadPoolExecutor(3) as pool:
        threaded = audit(mech, StatDPPatterns(length=5), executor=pool, **kwargs)
    for other in (parallel, threaded):
        assert other.epsilon_lower_bound == serial.epsilon_lower_bound
        assert other.p_value == serial.p_value
        assert other.witness == serial.witness
        assert other.samples == serial.samples


def test_same_seed_same_result_and_seed_recorded():
    mech = C.Entry(C.noisy_sum_half, 1.0)
    a = audit(mech, "statdp-one", claimed_epsilon=1.0, samples=100_000, rng=3)
    b = audit(mech, "statdp-one", claimed_epsilon=1.0, samples=100_000, rng=3)
    c = audit(mech, "statdp-one", claimed_epsilon=1.0, samples=100_000, rng=4)
    assert a.epsilon_lower_bound == b.epsilon_lower_bound and a.seed == 3
    assert a.epsilon_lower_bound != c.epsilon_lower_bound
    fresh = audit(mech, "statdp-one", claimed_epsilon=1.0, samples=100_000, rng=None)
    again = audit(mech, "statdp-one", claimed_epsilon=1.0, samples=100_000, rng=fresh.seed)
    assert fresh.epsilon_lower_bound == again.epsilon_lower_bound


def test_result_fields_and_json():
    # Laplace scale 1/2 on a sum of sensitivity 1: true epsilon 2 against the claim 1
    r = audit(C.Entry(C.noisy_sum_half, 1.0), "statdp-one", claimed_epsilon=1.0, samples=100_000, rng=1)
    assert isinstance(r, AuditResult)
    assert r.violation and 1.0 < r.epsilon_lower_bound <= 2.0 and r.p_value <= 0.05
    import json

    d = json.loads(json.dumps(r.to_dict()))  # the JSON carries the result's own numbers, unchanged
    assert d["epsilon_lower_bound"] == r.epsilon_lower_bound and d["p_value"] == r.p_value
    assert d["violation"] is True and d["witness"] == json.loads(json.dumps(r.witness))
    assert (d["claimed_epsilon"], d["claimed_delta"], d["confidence"], d["seed"]) == (1.0, 0.0, 0.95, 1)
    assert d["samples"] == r.samples <= 100_000 and d["method"] == r.method and r.seconds > 0


def test_scalar_adapter():
    def laplace_count(db, rng):
        return float(np.sum(db) + rng.laplace(scale=0.5))

    r = audit(from_scalar(laplace_count), [([0.0], [1.0])], claimed_epsilon=1.0, samples=40_000, rng=2, **EXACT)
    assert r.violation and r.epsilon_lower_bound <= 2.0


def test_delta_enters_the_bound():
    # a (0, 0.2)-style leak: with probability 0.2 the input is revealed, otherwise pure noise
    def leak(db, n, rng):
        reveal = rng.random(n) < 0.2
        return np.where(reveal, np.asarray(db, float)[0], 5.0 + rng.integers(0, 2, n))

    pair = [([0.0], [1.0])]
    strict = audit(leak, pair, claimed_epsilon=1.0, claimed_delta=0.0, samples=100_000, rng=0)
    loose = audit(leak, pair, claimed_epsilon=1.0, claimed_delta=0.25, samples=100_000, rng=0)
    assert strict.violation and not loose.violation


def test_sequential_mode_stops_early_and_is_consistent():
    mech = C.Entry(C.noisy_sum_half, 0.5)
    r = audit(mech, "statdp-one", claimed_epsilon=0.5, samples=2_000_000, rng=0, sequential=True, batch_size=8192,
              **EXACT)
    assert r.violation and r.samples < 2_000_000 and "stopped early" in r.method
    ok = audit(C.Entry(C.noisy_sum, 0.5), "statdp-one", claimed_epsilon=0.5, samples=400_000, rng=0,
               sequential=True, batch_size=8192, **EXACT)
    assert not ok.violation


@pytest.mark.parametrize("kwargs,match", [
    (dict(confidence=1.0), "confidence"),
    (dict(confidence=0.0), "confidence"),
    (dict(claimed_epsilon=-0.1), "claimed_epsilon"),
    (dict(claimed_epsilon=math.nan), "claimed_epsilon"),
    (dict(claimed_delta=1.0), "claimed_delta"),
    (dict(samples=10), "samples"),
])
def test_bad_arguments(kwargs, match):
    args = dict(claimed_epsilon=1.0, samples=100_000)
    args.update(kwargs)
    with pytest.raises(ValueError, match=match):
        audit(C.Entry(C.noisy_sum, 1.0), "statdp-one", **args)


def test_bad_inputs():
    mech = C.Entry(C.noisy_sum, 1.0)
    with pytest.raises(ValueError, match="same shape"):
        audit(mech, [([1.0, 2.0, 3.0], [1.0])], claimed_epsilon=1.0, samples=10_000)
    with pytest.raises(ValueError, match="same shape"):
        audit(mech, [([[1.0, 2.0]], [[1.0, 2.0, 3.0]])], claimed_epsilon=1.0, samples=10_000)
    with pytest.raises(ValueError, match="outputs on the two inputs"):
        audit(lambda db, n, rng: np.zeros((n, len(db))), [([1.0, 2.0], [1.0])], claimed_epsilon=1.0, samples=10_000)
    # add/remove neighbours (one record more) are accepted
    ok = audit(mech, [([1.0, 1.0], [1.0])], claimed_epsilon=1.0, samples=10_000, **EXACT)
    assert not ok.violation
    with pytest.raises(TypeError, match="mechanism"):
        audit("not callable", "statdp", claimed_epsilon=1.0)
    with pytest.raises(ValueError, match="pairs"):
        audit(mech, "nonsense", claimed_epsilon=1.0)
    with pytest.raises(ValueError, match="at least one"):
        audit(mech, [], claimed_epsilon=1.0)
    with pytest.raises(TypeError, match="rng"):
        audit(mech, "statdp-one", claimed_epsilon=1.0, samples=100_000, rng="seed")
    with pytest.raises(ValueError, match="n=.*outputs"):
        audit(lambda db, n, rng: np.zeros(n + 1), "statdp-one", claimed_epsilon=1.0, samples=100_000)
    with pytest.raises(TypeError, match="numeric"):
        audit(lambda db, n, rng: np.array(["a"] * n), "statdp-one", claimed_epsilon=1.0, samples=100_000)


def test_nothing_to_confirm_gives_trivial_result():
    # every event has probability <= delta = 0.9... impossible to beat: bound 0, no violation
    r = audit(C.Entry(C.noisy_sum_half, 1.0), "statdp-one", claimed_epsilon=1.0, claimed_delta=0.999999,
              samples=50_000, rng=0)
    assert r.epsilon_lower_bound == 0.0 and not r.violation and r.p_value == 1.0


@pytest.mark.slow
def test_dask_local_cluster_matches_serial():
    distributed = pytest.importorskip("dask.distributed")
    from dpkit.audit.dask import audit_on_dask

    mech = C.Entry(C.noisy_sum_half, 1.0)
    kwargs = dict(claimed_epsilon=1.0, samples=100_000, rng=2, batch_size=10_000)
    serial = audit(mech, "statdp-one", **kwargs)
    with distributed.LocalCluster(n_workers=2, processes=False) as cluster, distributed.Client(cluster) as client:
        remote = audit_on_dask(client, mech, "statdp-one", **kwargs)
    assert remote.epsilon_lower_bound == serial.epsilon_lower_bound and remote.witness == serial.witness


def test_sequential_p_value_is_consistent_with_the_bound():
    mech = C.Entry(C.noisy_sum_half, 1.0)
    r = audit(mech, "statdp-one", claimed_epsilon=1.0, samples=400_000, rng=3, sequential=True, batch_size=8192)
    assert r.violation and 0 < r.p_value <= 0.05
    close = audit(C.Entry(C.noisy_sum_half, 1.0), "statdp-one", claimed_epsilon=1.9, samples=200_000, rng=3,
                  sequential=True, batch_size=8192)
    assert (close.p_value <= 0.05) == close.violation


def test_pass_reports_the_detectable_violation():
    r = audit(C.Entry(C.noisy_sum, 1.0), "statdp-one", claimed_epsilon=1.0, samples=200_000, rng=11, **EXACT)
    assert not r.violation and 1.0 < r.detectable_epsilon < math.inf
    assert r.to_dict()["detectable_epsilon"] == r.detectable_epsilon and any("flagged" in n for n in r.notes)
    broken = audit(C.Entry(C.noisy_sum_half, 1.0), "statdp-one", claimed_epsilon=1.0, samples=200_000, rng=11,
                   **EXACT)
    assert broken.violation and broken.detectable_epsilon is None


def test_samples_auto_spends_what_the_selection_predicts():
    # true ε = 2 against a claim of 1: a refutation needs far fewer than the default 10^7 samples
    r = audit(C.Entry(C.noisy_sum_half, 1.0), "statdp-one", claimed_epsilon=1.0, samples="auto", rng=0)
    assert r.violation and r.samples < 3_000_000 and any("samples='auto'" in n for n in r.notes)
    with pytest.raises(ValueError, match="samples"):
        audit(C.Entry(C.noisy_sum, 1.0), "statdp-one", claimed_epsilon=1.0, samples="many")


def test_on_estimate_reports_a_run_time_and_progress_reaches_the_total():
    estimates, ticks = [], []
    r = audit(C.Entry(C.noisy_sum, 1.0), "statdp-one", claimed_epsilon=1.0, samples=200_000, rng=0,
              batch_size=10_000, on_estimate=estimates.append, progress=lambda done, total: ticks.append((done, total)))
    assert 1 <= len(estimates) and all(0 < e < 600 for e in estimates)
    assert [e[1] for e in r.throughput["estimates"]] == estimates  # the result lists what the callback got
    assert ticks[-1][0] == r.samples and ticks[-1][1] >= r.samples


def test_sequential_result_names_its_stopping_time():
    r = audit(C.Entry(C.noisy_sum_half, 0.5), "statdp-one", claimed_epsilon=0.5, samples=2_000_000, rng=0,
              sequential=True, batch_size=8192)
    assert r.stopping_samples is not None and r.stopping_samples == r.witness["samples_per_input"]
    assert any("stopping time" in n for n in r.notes)


def test_float_witness_gives_the_bound_of_an_unreachable_output(monkeypatch):
    # a stub with the interface of dpkit.audit.float_events.FloatWitness: 3000 of 10000 outputs on D
    # are unreachable on D' (probability <= 2^-53 there under the module's assumption (A))
    api = importlib.import_module("dpkit.audit.api")
    from dpkit.audit.float_events import FloatReachability, FloatWitness

    calls = []

    def find(mechanism, pairs, *, samples, rng):
        calls.append(samples)
        witness = FloatWitness(pair_index=0, value=0.1, count_first=3000, count_second=0, samples=10_000)
        return FloatReachability(witness, (0,), (), ((0, 3000, 0, 10_000),))

    monkeypatch.setattr(api, "float_reachability", find)
    r = audit(C.Entry(C.noisy_sum, 1.0), "statdp-one", claimed_epsilon=1.0, samples=400_000, rng=0, float_events=True)
    # ln(p_lower / 2^-53) at α/2 (the float check and the frequency audit share α = 0.05), shared again over the
    # 2 directions of every pair, since the witness is the best of them
    pairs = len(resolve_pairs("statdp-one"))
    expected = math.log(cp_lower(3000, 10_000, 0.025 / (2 * pairs))) + 53 * math.log(2)
    assert r.epsilon_lower_bound == pytest.approx(expected, rel=1e-12) and r.violation
    assert r.p_value < 1e-300 or r.p_value == 0.0
    assert r.witness["event"]["family"] == "float" and calls == [4_000] and "(A)" in r.assumption
    assert r.confidence == 0.95  # the overall level; the witness bound itself is at α/2
    assert r.to_dict()["witness"]["count_first"] == 3000 and "as executed" in r.notes[0]

    monkeypatch.setattr(api, "float_reachability",
                        lambda mechanism, pairs, *, samples, rng: FloatReachability(None, (0,), (), ()))
    ok = audit(C.Entry(C.noisy_sum, 1.0), "statdp-one", claimed_epsilon=1.0, samples=400_000, rng=0, float_events=True,
               float_bits=False)
    assert not ok.violation and ok.samples <= 400_000 and ok.assumption is None
    assert ok.float_check.startswith("replayed on pairs [0]")


def test_float_check_that_cannot_replay_spends_no_alpha(monkeypatch):
    # a replay that analysed no pair is not a test: the frequency audit keeps the whole α, so its
    # result equals that of the same audit without the replay budget, and the result says why
    api = importlib.import_module("dpkit.audit.api")
    from dpkit.audit.float_events import FloatReachability

    monkeypatch.setattr(api, "float_reachability", lambda mechanism, pairs, *, samples, rng:
                        FloatReachability(None, (), ((0, "not one uniform per coordinate"),), ()))
    mech = C.Entry(C.noisy_sum, 1.0)
    r = audit(mech, [([0.0], [1.0])], claimed_epsilon=0.5, samples=400_000, rng=0, float_events=True, float_bits=False)
    assert r.float_check.startswith("not run") and "not one uniform per coordinate" in r.float_check
    assert any(n.startswith("float_events: replay check not run") for n in r.notes)
    # the p-value carries no factor 2 for a second test
    plain = audit(mech, [([0.0], [1.0])], claimed_epsilon=0.5, samples=400_000 - 4000, rng=0)
    assert r.p_value == pytest.approx(plain.p_value, rel=1e-9) or r.p_value < 1e-15
