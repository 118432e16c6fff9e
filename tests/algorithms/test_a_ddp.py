"""A-DDP (Cheng et al. 2020): ledger = draws, calibration, outputs covered, monotone noise, the
paper's formulas against independent references, and the upload audit.

Reference values: Algorithm 1's calibration and Theorem 1 of Cheng et al. 2020 evaluated independently
(numpy/scipy and dp-accounting), and mpmath at 50 digits for the Gaussian δ.
"""

from __future__ import annotations

import math
from collections import Counter

import mpmath as mp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from dpkit.accounting.events import GaussianEvent, SampledWithoutReplacementEvent
from dpkit.algorithms.a_ddp import algorithm as A
from dpkit.algorithms.a_ddp import claims as C
from dpkit.algorithms.a_ddp import plan as P
from dpkit.algorithms.a_ddp.upload import UserUpload, clipped_gradients
from dpkit.algorithms.substrate.budget import Budget
from dpkit.algorithms.substrate.data import Dataset, make_synthetic
from dpkit.algorithms.substrate.partition import partition
from dpkit.algorithms.audit_instances import make_scenario
from dpkit.audit import audit
from dpkit.mechanisms.gaussian import GaussianMechanism
from dpkit.mechanisms.ledger import PrivacyLedger

mp.mp.dps = 50


def delta_g_mp(eps: float, mu: float) -> mp.mpf:
    """Exact δ of one Gaussian mechanism (Balle & Wang 2018, Thm 8), mpmath."""
    eps, mu = mp.mpf(eps), mp.mpf(mu)
    return mp.ncdf(mu / 2 - eps / mu) - mp.e ** eps * mp.ncdf(-mu / 2 - eps / mu)


def theorem1_mp(eps: float, k: int, p: float, mu: float) -> mp.mpf:
    p = mp.mpf(p)
    return mp.fsum(mp.binomial(k, i) * p ** i * (1 - p) ** (k - i) * delta_g_mp(eps, mp.sqrt(i) * mu)
                   for i in range(1, k + 1))


def unequal_parts(seed: int = 0) -> list[Dataset]:
    return partition(make_synthetic(120, 3, rng=seed), sizes=[30, 40, 50], rng=seed)


# --------------------------------------------------------------------------- ledger, calibration, coverage


@pytest.mark.parametrize("variant", ["corrected", "paper"])
@pytest.mark.parametrize("sizes", [[30, 40, 50], [40, 40, 50]])
def test_ledger_equals_the_draws(monkeypatch, variant, sizes):
    """Every Gaussian draw is one ledger entry of the user whose data it perturbed, with its σ and 2C."""
    parts = partition(make_synthetic(sum(sizes), 3, rng=0), sizes=sizes, rng=0)
    draws: list[tuple[int, float, float, int]] = []
    current: list[list[int]] = []
    original_upload, original_noise = UserUpload.sample_each, GaussianMechanism.sample

    def upload_sample_each(self, values, rng=None):
        X = values[0]
        # the users whose records were stacked: identify each by its data, not by the code's grouping
        current.append([next(u for u, p in enumerate(parts) if p.X.shape == Xi.shape and np.array_equal(p.X, Xi))
                        for Xi in X])
        return original_upload(self, values, rng)

    def noise_sample(self, value, size=None, rng=None):
        rows = np.atleast_2d(value)
        assert rows.shape == (len(current[-1]), parts[0].d)  # one record's gradient per user and draw
        draws.extend((u, self.sigma, self.sensitivity, 1) for u in current[-1])
        return original_noise(self, value, size, rng)

    monkeypatch.setattr(UserUpload, "sample_each", upload_sample_each)
    monkeypatch.setattr(GaussianMechanism, "sample", noise_sample)
    kwargs = {"iterations": 40} if variant == "corrected" else {"iterations": 1, "max_rounds": 25}
    result = A.train_a_ddp(parts, budget=Budget(2.0, 1e-5), variant=variant, rng=1, **kwargs)
    clip = result.config["clip"]
    sensitivity = UserUpload(1.0, clip, 1).noise.sensitivity  # 2C, as the clip is computed (float_sensitivity)
    assert 2.0 * clip < sensitivity < 2.0 * clip * (1 + 1e-6)
    per_user = Counter(u for u, *_ in draws)
    for u, part in enumerate(parts):
        entries = result.ledger.entries(u)
        assert sum(count for _, count in entries) == per_user[u] == result.config["user_rounds"][u]
        sigmas = {s for v, s, _, _ in draws if v == u}
        assert len(entries) == 1 and sigmas == {entries[0][0].event.sigma}
        assert entries[0][0] == SampledWithoutReplacementEvent(GaussianEvent(sigmas.pop(), sensitivity), 1, part.n)
    assert max(per_user.values()) == result.config["iterations"]
    assert {sens for _, _, sens, _ in draws} == {sensitivity}


def test_release_each_matches_one_release_per_user():
    """The loop's vectorised upload records what one ``release`` per user records, and its uploads have
    the same distribution (two-sample Kolmogorov–Smirnov per coordinate at α = 1e-3)."""
    rng = np.random.default_rng(4)
    X = rng.normal(size=(3, 6, 2))
    X /= np.maximum(1.0, np.linalg.norm(X, axis=2, keepdims=True))
    y, w = np.sign(rng.normal(size=(3, 6))), np.array([0.5, -1.0])
    upload = UserUpload(0.3, 0.5, 6)
    together, one_by_one = PrivacyLedger(4), PrivacyLedger(4)
    gen_a, gen_b = np.random.default_rng(0), np.random.default_rng(1)
    a = np.array([upload.release_each((X, y, w), rng=gen_a, ledger=together, agents=[0, 2, 3]) for _ in range(2000)])
    b = np.array([[upload.release((X[i], y[i], w), rng=gen_b, ledger=one_by_one, agent=agent)
                   for i, agent in enumerate([0, 2, 3])] for _ in range(2000)])
    assert together.to_dict() == one_by_one.to_dict() and together.draws(2) == 2000 and together.draws(1) == 0
    for i in range(3):
        for j in range(2):
            assert stats.ks_2samp(a[:, i, j], b[:, i, j]).pvalue > 1e-3


@pytest.mark.parametrize("epsilon", [0.5, 1.0, 4.0])
def test_calibration_meets_the_budget(epsilon):
    result = A.train_a_ddp(unequal_parts(), budget=Budget(epsilon, 1e-5), iterations=60, rng=0)
    assert 0.99 * epsilon <= result.epsilon <= epsilon
    # the ledger's worst user is the smallest one (largest sampling rate 1/30)
    assert result.guarantee.epsilon == pytest.approx(result.config["calibrated_epsilon"], rel=1e-9)


def test_outputs_are_functions_of_the_uploads(monkeypatch):
    """Different data, same uploads (a stand-in upload that ignores the data) ⇒ identical models."""

    def fake_sample_each(self, values, rng=None):
        X, _, w = values
        return rng.normal(size=(X.shape[0], w.size)) + np.arange(w.size)

    monkeypatch.setattr(UserUpload, "sample_each", fake_sample_each)
    runs = [A.train_a_ddp(unequal_parts(seed), budget=Budget(1.0, 1e-5), iterations=50, rng=7) for seed in (0, 1)]
    assert runs[0].ledger.draws(0) == 50 and np.array_equal(runs[0].model, runs[1].model)
    assert np.any(runs[0].model != 0.0)


@settings(max_examples=4, deadline=None)
@given(eps=st.floats(0.2, 4.0), factor=st.floats(1.05, 3.0))
def test_larger_budget_never_more_noise(eps, factor):
    sizes, budget = [50, 80], Budget(eps, 1e-5)
    small = P.corrected_plan(budget, sizes, 3, rounds=40)
    large = P.corrected_plan(Budget(eps * factor, 1e-5), sizes, 3, rounds=40)
    assert large.sigma <= small.sigma


def test_defaults_follow_their_rules():
    plan = P.corrected_plan(Budget(1.0, 1e-5), [100] * 4, d=9)
    assert plan.clip == 0.5 and plan.rounds == P.EPOCHS * 100  # EPOCHS epochs of 100 records
    assert plan.burn_in == plan.rounds // 10  # the average covers the last 90 % of the iterates
    assert plan.lam == pytest.approx(plan.sigma * math.sqrt(9 / (4 * plan.rounds)) / 10)
    assert P.STEP_DECAYS == 5.0
    assert plan.step_size == pytest.approx(min(1 / (0.25 + plan.lam), P.STEP_DECAYS / (plan.lam * plan.rounds)))
    assert plan.step_size < 1 / (0.25 + plan.lam)  # the rule, not the smoothness cap, sets η here
    # over the run the start is forgotten by (1 − ηλ)^T ≤ e^{−K} where only λ curves the objective, and
    # over the burn-in by ≤ e^{−4} where the data's curvature h is 7λ: (1 − η(h + λ))^{T/10} ≤ e^{−(1 + h/λ)K/10}
    assert (1 - plan.lam * plan.step_size) ** plan.rounds <= math.exp(-P.STEP_DECAYS) + 1e-12
    assert (1 - 8 * plan.lam * plan.step_size) ** plan.burn_in <= math.exp(-4) + 1e-12
    assert P.default_step_size(0.0, plan.rounds) == 4.0  # no regulariser: 1/L


def test_run_averages_the_iterates_after_the_burn_in(monkeypatch):
    """The returned model is the mean of w_{burn_in+1} .. w_T, recomputed from the server steps."""
    parts = unequal_parts()
    iterates = []
    original = A.server_step

    def spy(*args):
        iterates.append(original(*args))
        return iterates[-1]

    monkeypatch.setattr(A, "server_step", spy)
    result = A.train_a_ddp(parts, budget=Budget(1.0, 1e-5), iterations=50, rng=2)
    assert len(iterates) == 50
    assert np.allclose(result.model, np.mean(iterates[5:], axis=0), rtol=1e-12, atol=1e-15)


def test_accuracy_on_synthetic_data():
    """The default corrected run comes within 0.02 of the non-private logistic fit (scipy) on its data."""
    from scipy.optimize import minimize

    data = make_synthetic(4000, 4, rng=3)
    theta = minimize(lambda t: np.mean(np.logaddexp(0, -data.y * (data.X @ t))), np.zeros(4)).x
    reference = np.mean(np.where(data.X @ theta >= 0, 1.0, -1.0) == data.y)
    result = A.train_a_ddp(partition(data, 8, rng=0), budget=Budget(3.0, 1e-5), rng=0, test=data)
    assert result.accuracy >= reference - 0.02


# --------------------------------------------------------------------------- the upload


def test_upload_noise_variance():
    """Zero gradients (x = 0): uploads are pure N(0, σ²); chi-square test of the variance at α = 1e-3."""
    X, y = np.zeros((5, 3)), np.ones(5)
    out = UserUpload(2.5, 1.0, 5).sample((X, y, np.zeros(3)), size=4000, rng=11).reshape(-1)
    stat = np.sum(out ** 2) / 2.5 ** 2
    p = 2 * min(stats.chi2.cdf(stat, out.size), stats.chi2.sf(stat, out.size))
    assert p > 1e-3


def test_clipped_gradients_against_formula():
    rng = np.random.default_rng(0)
    X, y, w = rng.normal(size=(50, 4)), np.sign(rng.normal(size=50)), rng.normal(size=4)
    g = clipped_gradients(w, X, y, 0.3)
    raw = np.array([-yi * xi / (1 + math.exp(yi * (xi @ w))) for xi, yi in zip(X, y)])
    expected = raw / np.maximum(1.0, np.linalg.norm(raw, axis=1) / 0.3)[:, None]
    assert np.allclose(g, expected, rtol=1e-12)
    assert np.allclose([clipped_gradients(w, X[i], y[i], 0.3) for i in range(50)], expected, rtol=1e-12)


# --------------------------------------------------------------------------- the paper's calibration


def test_advanced_split_composes_to_budget():
    eps_iter, delta_iter, delta_prime = C.advanced_composition_split(1.0, 1e-8, 10)
    total = math.sqrt(2 * 10 * math.log(1 / delta_prime)) * eps_iter + 10 * eps_iter * math.expm1(eps_iter)
    assert 1.0 - 1e-12 < total <= 1.0
    assert delta_prime + 10 * delta_iter == pytest.approx(1e-8, rel=1e-15)
    assert eps_iter == pytest.approx(0.04984, abs=5e-6)  # advanced composition (Dwork & Roth 2014, Thm 3.20), ε = 1 over T = 10


def test_paper_sigma_reference():
    assert C.paper_sigma(1.0, 1e-8, 10, 3.0) == pytest.approx(301.90, abs=0.01)
    assert C.paper_sigma(0.1, 1e-8, 10, 3.0) == pytest.approx(2698.4, abs=0.1)


@pytest.mark.parametrize("k", [1, 10, 100, 1000])
def test_theorem1_monotone_reference(k):
    # Theorem 1 of Cheng et al. 2020 at ε = 1, H/σ = 0.5, p = 0.01, summed in mpmath over every i:
    # δ = Σ_i Bin(i; k, p) δ_G(ε; √i H/σ), δ_G(ε; μ) = Φ(μ/2 − ε/μ) − e^ε Φ(−μ/2 − ε/μ) (Balle & Wang 2018, Thm 8)
    def exact(k):
        with mp.workdps(40):
            return sum(mp.binomial(k, i) * mp.mpf("0.01") ** i * mp.mpf("0.99") ** (k - i)
                       * (mp.ncdf(mu / 2 - 1 / mu) - mp.e * mp.ncdf(-mu / 2 - 1 / mu))
                       for i in range(1, k + 1) for mu in [mp.sqrt(i) * mp.mpf("0.5")])
    value = C.theorem1_delta(1.0, k, 0.01, 0.5, 1.0)
    assert exact(k) <= value <= exact(k) * (1 + 1e-9)  # an upper bound (tails bounded above), and tight
    if k > 1:
        assert value > C.theorem1_delta(1.0, k // 10, 0.01, 0.5, 1.0)  # increasing in k


def test_theorem1_special_cases_against_mpmath():
    assert C.theorem1_delta(1.0, 1, 0.01, 1.0, 1.0) == pytest.approx(float(0.01 * delta_g_mp(1.0, 1.0)), rel=1e-9)
    assert C.theorem1_delta(1.0, 100, 1.0, 0.5, 1.0) == pytest.approx(float(delta_g_mp(1.0, 5.0)), rel=1e-9)
    assert C.theorem1_delta(0.7, 40, 0.2, 0.8, 1.3) == pytest.approx(float(theorem1_mp(0.7, 40, 0.2, 0.8 / 1.3)),
                                                                       rel=1e-9)


@settings(max_examples=20, deadline=None)
@given(eps=st.floats(0.05, 5), k=st.integers(1, 300), p=st.floats(0.001, 0.9), mu=st.floats(0.05, 3))
def test_theorem1_corollary_bound(eps, k, p, mu):
    # Theorem 1's sum Σ Bin·δ_G(√i μ) ≤ (1 − (1−p)^k) δ_G(√k μ): δ_G(ε; μ) increases in μ (Dong et al. 2022, Cor. 2.13)
    lhs = C.theorem1_delta(eps, k, p, mu, 1.0)
    rhs = -math.expm1(k * math.log1p(-p)) * float(delta_g_mp(eps, math.sqrt(k) * mu))
    assert lhs <= rhs * (1 + 1e-9) + 1e-300


@pytest.mark.parametrize("p, nm, k, expected", [(0.01, 1, 10, 4.567), (0.01, 5, 10, 0.654), (0.1, 3, 100, 5.463)])
def test_theorem1_epsilon_reference(p, nm, k, expected):
    assert C.theorem1_epsilon(1e-5, k, p, 1.0, nm) == pytest.approx(expected, abs=1.5e-3)


@pytest.mark.parametrize("eps, k_c, k_2c", [(0.1, 37849, 9115), (1.0, 38324, 9156)])
def test_k_max_reference(eps, k_c, k_2c):
    # Algorithm 1's stopping rule (Theorem 1) at T = 10, p = 0.01, C = 3, δ = 1e-8, δ' = δ/2; H = C and H = 2C
    sigma = C.paper_sigma(eps, 1e-8, 10, 3.0)
    assert C.theorem1_max_rounds(eps, 1e-8, 0.01, 3.0, sigma) == k_c
    assert C.theorem1_max_rounds(eps, 1e-8, 0.01, 6.0, sigma) == k_2c


def test_paper_stopping_time_is_data_independent_and_exposed():
    """Paper variant: rounds = Theorem 1's k_max on any data; the ledger (2C) exceeds the claim."""
    budget = Budget(1.0, 1e-5)
    runs = [A.train_a_ddp(partition(make_synthetic(6, 3, rng=s), 3, rng=s), budget=budget, variant="paper", iterations=1,
                    max_rounds=10**6, rng=s) for s in (0, 1)]
    sigma = C.paper_sigma(1.0, 1e-5, 1, 3.0)
    k_max = C.theorem1_max_rounds(1.0, 1e-5, 0.5, 3.0, sigma)
    assert runs[0].config["iterations"] == runs[1].config["iterations"] == k_max > 0
    run = runs[0]
    assert run.paper_claim.epsilon == 1.0 and not run.paper_claim.valid
    assert run.epsilon > run.paper_claim.epsilon  # the true events (2C) break the claimed budget


def test_invalid_inputs():
    parts = unequal_parts()
    with pytest.raises(ValueError):
        A.train_a_ddp(parts, budget=Budget(1.0, 1e-5), variant="both")
    with pytest.raises(ValueError):
        A.train_a_ddp(parts, budget=Budget(1.0, 1e-5), max_rounds=3)
    with pytest.raises(ValueError):
        UserUpload(1.0, 1.0, 4).sample((np.zeros((3, 2)), np.ones(3), np.zeros(2)))


# --------------------------------------------------------------------------- audit


def test_upload_audit_paper_violates_corrected_passes():
    paper = make_scenario("a-ddp")
    assert paper.true_epsilon == pytest.approx(2.155, abs=1e-3)  # noise for (1, 1e-5) at Δ = C; one record moves the upload by 2C
    # the paper's claim is about exact arithmetic: audit the values (float_bits=False), not the float leak
    found = audit(paper.mechanism, paper.pairs, paper.claimed_epsilon, paper.claimed_delta, samples=400_000, rng=0,
                  float_bits=False)
    assert found.violation
    corrected = make_scenario("a-ddp", corrected=True)
    assert corrected.true_epsilon <= corrected.claimed_epsilon
    # the corrected upload draws float-safe noise: it passes as executed too, float bits on
    passed = audit(corrected.mechanism, corrected.pairs, corrected.claimed_epsilon, corrected.claimed_delta,
                   samples=400_000, rng=0)
    assert not passed.violation


def test_scenario_runs_the_real_upload(monkeypatch):
    calls = []
    original = UserUpload.sample

    def spy(self, value, size=None, rng=None):
        calls.append(size)
        return original(self, value, size, rng)

    monkeypatch.setattr(UserUpload, "sample", spy)
    sc = make_scenario("a-ddp")
    out = sc.mechanism(sc.pairs[0][0], 7, np.random.default_rng(0))
    assert calls == [7] and out.shape == (7, 1)
    # At w = 0 the logistic gradient of (4C e₁, ±1) is ∓2C e₁, clipped to ∓C e₁ (Alg. 1), plus N(0, σ²) with
    # σ the analytic-Gaussian σ for (1, 1e-5) at sensitivity C (Balle & Wang 2018, Thm 8; root found in mpmath)
    clip = 3.0
    sigma = clip / float(mp.findroot(lambda mu: delta_g_mp(1.0, mu) - mp.mpf("1e-5"), 0.27))
    for database, centre in zip(sc.pairs[0], (-clip, clip)):
        draws = sc.mechanism(database, 20_000, np.random.default_rng(1))[:, 0]
        assert stats.kstest(draws, stats.norm(centre, sigma).cdf).pvalue > 0.001
