"""Seed 002 (A-DDP): Theorem 1, the k_max table, the corrected accounting and its filter.

Reference values: spec 002 §2.2, §3 and §5 (computed there with numpy/scipy and dp-accounting),
and mpmath at 50 digits for the Gaussian δ.
"""

from __future__ import annotations

import math

import mpmath as mp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from dpkit.accounting.base import PaperRuleWarning
from dpkit.algorithms import a_ddp as A
from dpkit.algorithms.data import make_synthetic

mp.mp.dps = 50


def delta_g_mp(eps: float, mu: float) -> mp.mpf:
    """Exact δ of one Gaussian (Balle & Wang Thm 8), mpmath."""
    ncdf = lambda t: mp.ncdf(t)  # noqa: E731
    eps, mu = mp.mpf(eps), mp.mpf(mu)
    return ncdf(mu / 2 - eps / mu) - mp.e ** eps * ncdf(-mu / 2 - eps / mu)


def theorem1_mp(eps: float, k: int, p: float, mu: float) -> mp.mpf:
    p = mp.mpf(p)
    return mp.fsum(mp.binomial(k, i) * p ** i * (1 - p) ** (k - i) * delta_g_mp(eps, mp.sqrt(i) * mu) for i in range(1, k + 1))


def test_advanced_split_composes_to_budget():
    eps_step, delta_step, delta_prime = A.advanced_composition_split(1.0, 1e-8, 10)
    total = math.sqrt(2 * 10 * math.log(1 / delta_prime)) * eps_step + 10 * eps_step * math.expm1(eps_step)
    assert total <= 1.0 and total > 1.0 - 1e-12
    assert delta_prime + 10 * delta_step == pytest.approx(1e-8, rel=1e-15)
    assert eps_step == pytest.approx(0.04984, abs=5e-6)  # spec 002 §2.2 table


@pytest.mark.parametrize("k, expected", [(1, 6.83e-5), (10, 7.98e-4), (100, 1.739e-2), (1000, 0.3433)])
def test_theorem1_monotone_reference(k, expected):
    # spec 002 §5 item 6: ε = 1, μ = 0.5, p = 0.01
    assert A.theorem1_delta(1.0, k, 0.01, 0.5, 1.0) == pytest.approx(expected, rel=2e-3)


def test_theorem1_special_cases_against_mpmath():
    # k = 1: p·δ_G(ε; H/σ) (spec: 1.26937e-3)
    assert A.theorem1_delta(1.0, 1, 0.01, 1.0, 1.0) == pytest.approx(float(0.01 * delta_g_mp(1.0, 1.0)), rel=1e-9)
    assert A.theorem1_delta(1.0, 1, 0.01, 1.0, 1.0) == pytest.approx(1.26937e-3, rel=1e-5)
    # p = 1: plain Gaussian composition δ_G(ε; √k μ)
    assert A.theorem1_delta(1.0, 100, 1.0, 0.5, 1.0) == pytest.approx(float(delta_g_mp(1.0, 5.0)), rel=1e-9)
    assert A.theorem1_delta(1.0, 100, 0.1, 0.5, 1.0) == pytest.approx(0.3441, rel=1e-3)
    # the full sum, by mpmath
    assert A.theorem1_delta(0.7, 40, 0.2, 0.8, 1.3) == pytest.approx(float(theorem1_mp(0.7, 40, 0.2, 0.8 / 1.3)), rel=1e-9)


@settings(max_examples=25)
@given(eps=st.floats(0.05, 5), k=st.integers(1, 300), p=st.floats(0.001, 0.9), mu=st.floats(0.05, 3))
def test_theorem1_corollary_bound(eps, k, p, mu):
    # spec 002 §5 item 7: Σ Bin·δ_G(√i μ) ≤ (1 − (1−p)^k) δ_G(√k μ)
    lhs = A.theorem1_delta(eps, k, p, mu, 1.0)
    rhs = -math.expm1(k * math.log1p(-p)) * float(delta_g_mp(eps, math.sqrt(k) * mu))
    assert lhs <= rhs * (1 + 1e-9) + 1e-300


@pytest.mark.parametrize("p, nm, k, expected", [(0.01, 1, 10, 4.567), (0.01, 5, 10, 0.654), (0.1, 3, 100, 5.463)])
def test_theorem1_epsilon_reference(p, nm, k, expected):
    # spec 002 §3 table, column "ε Thm1", δ = 1e-5
    assert A.theorem1_epsilon(1e-5, k, p, 1.0, nm) == pytest.approx(expected, abs=1.5e-3)


@pytest.mark.parametrize("eps, k_c, k_2c", [(0.1, 37849, 9115), (1.0, 38324, 9156)])
def test_k_max_table(eps, k_c, k_2c):
    # spec 002 §2.2: T = 10, p = 0.01, C = 3, δ = 1e-8, δ' = δ/2
    sigma = A.addp_noise(eps, 1e-8, 10, 3.0, mode="paper")[0]
    assert A.theorem1_max_rounds(eps, 1e-8, 0.01, 3.0, sigma) == k_c
    assert A.theorem1_max_rounds(eps, 1e-8, 0.01, 6.0, sigma) == k_2c


def test_sigma_reference():
    assert A.addp_noise(1.0, 1e-8, 10, 3.0, mode="paper")[0] == pytest.approx(301.90, abs=0.01)
    assert A.addp_noise(0.1, 1e-8, 10, 3.0, mode="paper")[0] == pytest.approx(2698.4, abs=0.1)
    sigma_c, sens, *_ = A.addp_noise(1.0, 1e-8, 10, 3.0, mode="corrected")
    assert sens == 6.0 and sigma_c == pytest.approx(2 * 301.903, rel=1e-4)


def test_sensitivity_c_understates():
    # spec 002 F6: σ calibrated for Δ = C at (1, 1e-5) has δ(1) ≈ 1.04e-2 for the true Δ = 2C
    sigma = A.gaussian_sigma(1.0, 1e-5, 1.0)
    assert sigma == pytest.approx(3.7306, abs=1e-4)
    assert float(delta_g_mp(1.0, 2.0 / sigma)) == pytest.approx(1.04e-2, rel=1e-2)


@pytest.mark.parametrize("p, eps, expected", [(0.01, 1, 0.01704), (0.01, 5, 0.90589), (0.1, 1, 0.15857),
                                              (0.1, 5, 2.75629), (0.5, 1, 0.62011)])
def test_amplification_table(p, eps, expected):
    assert A.amplification(eps, 0.0, p)[0] == pytest.approx(expected, abs=1e-5)
    with pytest.warns(PaperRuleWarning):
        paper = A.paper_amplification(eps, 1e-6, p)
    assert paper[0] <= A.amplification(eps, 1e-6, p)[0]
    assert paper[1] == A.amplification(eps, 1e-6, p)[1]


@settings(max_examples=5)
@given(eps=st.floats(0.2, 4), log_delta=st.floats(-9, -3), nm=st.floats(1, 4), m=st.integers(2, 20),
       stop=st.floats(0, 1))
def test_filter_never_exceeds_budget(eps, log_delta, nm, m, stop):
    """Whatever the stopping time, the admitted rounds' corrected ε stays within the budget."""
    delta = 10 ** log_delta
    flt = A.ADDPFilter(eps, delta)
    event = A.addp_round_event(nm * 2.0, 1.0, m)
    capacity = flt.capacity(event, limit=2000)
    stop_at = int(stop * min(capacity, 2000))
    admitted = 0
    while admitted < stop_at and flt.try_spend(event):
        admitted += 1
    if admitted:
        assert A.addp_epsilon(nm * 2.0, 1.0, m, admitted, delta)[0] <= eps
    if capacity < 2000:  # spending on until refusal stops exactly at the capacity
        while flt.try_spend(event):
            pass
        assert flt.rounds == capacity
        assert not A.ADDPFilter(eps, delta).fits(event, capacity + 1)


def test_stopping_time_is_data_independent():
    # spec 002 claim 13: rounds run = precomputed k_max, whatever the data
    kwargs = dict(epsilon=2.0, delta=1e-3, mode="paper", estimated_rounds=2, clip=1.0, records_per_user=2, rng=3)
    a = A.run_addp(make_synthetic(40, 3, rng=0), **kwargs)
    b = A.run_addp(make_synthetic(40, 3, rng=1), **kwargs)
    sigma = a["config"].sigma
    k_max = A.theorem1_max_rounds(2.0, 1e-3, 0.5, 1.0, sigma)
    assert a["rounds_run"] == b["rounds_run"] == k_max > 0


def test_local_noise_variance():
    # zero gradients: uploads are pure N(0, σ²I); chi-square test of the variance at α = 1e-3
    X, y = np.zeros((5, 3)), np.ones(5)
    out = A.transcript(X, y, 4000, rng=11, sigma=2.5, clip=1.0).reshape(-1)
    stat = np.sum(out ** 2) / 2.5 ** 2
    p = 2 * min(stats.chi2.cdf(stat, out.size), stats.chi2.sf(stat, out.size))
    assert p > 1e-3


def test_transcript_is_seeded_and_clipped():
    X = np.array([[1.0, 0.0], [0.0, 1.0]])
    y = np.array([1.0, -1.0])
    a = A.transcript(X, y, 50, rng=5, sigma=1.0, clip=0.1, rounds=3)
    assert a.shape == (50, 3, 2)
    assert np.array_equal(a, A.transcript(X, y, 50, rng=5, sigma=1.0, clip=0.1, rounds=3))
    mean = A.transcript(X, y, 20000, rng=1, sigma=1e-9, clip=0.1)
    assert np.max(np.linalg.norm(mean, axis=-1)) <= 0.1 + 1e-6


def test_train_result_reports_rounds(tmp_path):
    data = make_synthetic(400, 4, rng=0)
    res = A.train_addp(data, epsilon=1.0, delta=1e-5, records_per_user=20, max_rounds=50, test=data)
    assert res.config["rounds_run"] == 50 and res.config["rounds_allowed"] >= 50
    assert res.epsilon_corrected <= 1.0
    assert res.guarantees["paper"].is_upper_bound is False
    assert res.to_dict()["iterations"] == 50


@pytest.mark.parametrize("bad", [dict(epsilon=-1.0), dict(delta=1.5), dict(mode="both"), dict(records_per_user=0)])
def test_invalid_inputs(bad):
    kwargs = dict(epsilon=1.0, delta=1e-5, mode="paper", records_per_user=10, max_rounds=2)
    kwargs.update(bad)
    with pytest.raises(ValueError):
        A.run_addp(make_synthetic(100, 3, rng=0), **kwargs)


@pytest.mark.compare
def test_wor_rdp_is_above_dp_accounting():
    """The WBK Thm-9 curve A-DDP's accounting uses (dpkit's RDP core, replace-one) is never below
    dp_accounting's tighter Thm-27 value for the same mechanism."""
    rdp = pytest.importorskip("dp_accounting.rdp.rdp_privacy_accountant")
    from dpkit.accounting.rdp import event_rdp

    for m in (100, 10):  # q = 1/m: one record of m sampled per round
        for nm in (0.8, 2.0, 10.0):
            event = A.addp_round_event(2.0 * nm, 1.0, m)  # Δ = 2C = 2, σ = 2·nm
            for a in (2, 3, 8, 32, 128):
                ours = event_rdp(event, a, "replace-one")
                theirs = rdp._compute_rdp_sample_wor_gaussian_scalar(1.0 / m, nm, a)
                assert ours >= theirs * (1 - 1e-9)


def test_corrected_epsilon_is_the_rdp_core_bound():
    """addp_epsilon is min(Theorem 1 with 2C, the RDP accountant's replace-one WOR bound), and the
    RDP part equals the accountant's result for the same ledger."""
    from dpkit.accounting.rdp import RdpAccountant

    sigma, clip, m, rounds, delta = 4.0, 1.0, 10, 100, 1e-5
    event = A.addp_round_event(sigma, clip, m)
    core = RdpAccountant("replace-one").compose(event, rounds).get_epsilon(delta).epsilon
    assert A.wor_rdp_epsilon(event, rounds, delta).epsilon == core
    eps, method = A.addp_epsilon(sigma, clip, m, rounds, delta)
    assert eps == min(core, A.theorem1_epsilon(delta, rounds, 1.0 / m, 2 * clip, sigma))
    assert ("RDP" in method) == (eps == core)


@pytest.mark.compare
def test_theorem1_is_above_exact_pld():
    """Theorem 1 (with the true sensitivity) is a valid but loose bound: δ_Thm1 ≥ exact δ (spec §5 item 9)."""
    pld = pytest.importorskip("dp_accounting.pld.privacy_loss_distribution")
    for p, nm, k in [(0.01, 1.0, 10), (0.1, 3.0, 100)]:
        dist = pld.from_gaussian_mechanism(nm, sampling_prob=p, value_discretization_interval=1e-4).self_compose(k)
        for eps in (0.5, 1.0, 2.0):
            assert A.theorem1_delta(eps, k, p, 1.0, nm) >= dist.get_delta_for_epsilon(eps)
