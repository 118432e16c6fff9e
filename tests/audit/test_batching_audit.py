"""The audit tells shuffled batches from random allocation (Chua et al., ICML 2024).

One epoch of DP-SGD-like linear queries, σ = 1, 16 steps, the same noise and the same neighbours
(zero-out: Chua et al.'s pair, the other records at −1, and the all-zero pair): with shuffled
fixed-size batches the ε reported "as if Poisson" (2.24 at δ = 10⁻⁵) is false — its true ε is at least
4.32 (a certified lower bound) — and the default audit refutes it; with random allocation the same
mechanism passes at its own certified ε. Fixed seeds; every threshold comes from an accountant or a
certified bound, none from a previous run of the audit.
"""

from __future__ import annotations

import numpy as np
import pytest

from dpkit.accounting.events import GaussianEvent, SelfComposedEvent
from dpkit.accounting.registry import make_accountant
from dpkit.audit import audit
from dpkit.audit import catalogue as C
from dpkit.commands.runner import run_json

SAMPLES = 1_000_000


@pytest.fixture(scope="module")
def claims() -> dict[str, float]:
    unamplified = make_accountant("analytic").compose(SelfComposedEvent(GaussianEvent(C.BATCH_SIGMA), 1))
    return {"poisson": C.poisson_claim(), "random_allocation": C.random_allocation_claim(),
            "shuffled_lower": C.shuffled_true_epsilon(),
            "unamplified": unamplified.get_epsilon(C.BATCH_DELTA).epsilon}


def test_the_claims_order_the_samplers(claims):
    # The Poisson number is a false claim for shuffled batches (its true ε is certified above it); random
    # allocation's certified ε lies below the shuffled lower bound: the batching, not the noise, differs.
    assert claims["poisson"] < claims["shuffled_lower"] <= claims["unamplified"]
    assert claims["random_allocation"] < claims["shuffled_lower"]


def test_shuffled_batches_are_refuted_at_the_poisson_claim(claims):
    function, claim, expected = C.BATCHING["shuffled_batches"]
    assert claim is C.poisson_claim and expected == "refute"
    r = audit(function, C.batching_pairs(), claims["poisson"], C.BATCH_DELTA, samples=SAMPLES, rng=0)
    assert r.violation and r.p_value <= 0.05
    assert claims["poisson"] < r.epsilon_lower_bound <= claims["unamplified"]
    # on Chua et al.'s pair (the other records at -1), with the record present more likely in the event
    assert r.witness["pair"]["second"] == [-1.0] * (C.BATCH_STEPS - 1) + [0.0]
    assert r.witness["direction"].startswith("Pr[M(D) in S]")
    assert r.assumption is None and r.witness["event"]["family"] == "feature"  # values, not a float leak


def test_shuffled_batches_pass_at_their_proven_upper_bound(claims):
    # positive control: the same audit does not refute what shuffling does guarantee (no amplification)
    r = audit(C.shuffled_batches, C.batching_pairs(), claims["unamplified"], C.BATCH_DELTA, samples=SAMPLES,
              rng=0)
    assert not r.violation and r.epsilon_lower_bound <= claims["unamplified"]


def test_random_allocation_passes_at_its_certified_claim(claims):
    function, claim, expected = C.BATCHING["random_allocation"]
    assert claim is C.random_allocation_claim and expected == "pass"
    r = audit(function, C.batching_pairs(), claims["random_allocation"], C.BATCH_DELTA, samples=SAMPLES, rng=0)
    assert not r.violation and r.p_value > 0.05
    assert r.epsilon_lower_bound <= claims["random_allocation"]


def test_dpkit_audit_command_refutes_the_poisson_claim(claims):
    r = run_json(["audit", "--mechanism", "dpkit.audit.catalogue:shuffled_batches", "--pairs",
                  "dpkit.audit.catalogue:batching_pairs", "--claimed-epsilon", repr(claims["poisson"]),
                  "--claimed-delta", repr(C.BATCH_DELTA), "--samples", str(SAMPLES), "--seed", "0", "--quiet"])
    assert r["violation"] and r["epsilon_lower_bound"] > claims["poisson"]


def test_the_mechanisms_batch_as_described():
    rng = np.random.default_rng(5)
    records = np.r_[-np.ones(31), 1.0]  # 16 batches of 2
    tiny = 2.0**-30  # noise far below 1/2: rounded to integers, the outputs are the exact batch sums
    shuffled = np.rint(C.shuffled_batches(records, 2000, rng, sigma=tiny))
    allocated = np.rint(C.random_allocation(records, 2000, rng, sigma=tiny))
    assert shuffled.shape == allocated.shape == (2000, 16)
    # shuffled: fixed batch sizes, so every batch sums to -2 except the one holding the +1 record (0)
    assert np.all(np.sort(shuffled, axis=1) == np.r_[-2.0 * np.ones(15), 0.0])
    # random allocation: the batch sums vary, but every record is counted once
    assert np.all(allocated.sum(axis=1) == records.sum()) and np.unique(allocated).size > 3
    # with noise, the outputs lie on the float-safe lattice 2^(floor(log2 sigma) - 16)
    noisy = C.shuffled_batches(records, 100, rng)
    assert np.all(noisy * 2.0**16 == np.round(noisy * 2.0**16))
    for first, second in C.batching_pairs():  # zero-out neighbours: one record's gradient set to 0
        assert np.count_nonzero(first != second) == 1 and second[first != second] == 0.0


def test_records_must_be_clipped_gradients():
    with pytest.raises(ValueError, match=r"\[-1, 1\]"):
        C.shuffled_batches(np.r_[np.zeros(15), 2.0], 4, np.random.default_rng(0))
    with pytest.raises(ValueError, match="steps=16"):
        C.random_allocation(np.zeros(15), 4, np.random.default_rng(0))
