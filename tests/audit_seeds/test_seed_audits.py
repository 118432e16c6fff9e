"""Audits of the seed papers' claims (issue 7) at reduced size, fixed seeds: the verdicts the specs predict.

The audit calls live in ``experiments/seed_audits.py`` (loaded here by path); the scenarios in
``dpkit.algorithms.audit_scenarios``. Reference values are independent closed forms evaluated
with mpmath (the Gaussian privacy profile δ(ε) = Φ(μ/2 − ε/μ) − e^ε Φ(−μ/2 − ε/μ)).
"""

from __future__ import annotations

import importlib.util
import math
import pathlib
import sys

import mpmath
import numpy as np
import pytest

from dpkit.algorithms import audit_scenarios as S

ROOT = pathlib.Path(__file__).resolve().parents[2]


def _load_experiments():
    spec = importlib.util.spec_from_file_location("seed_audits", ROOT / "experiments" / "seed_audits.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("seed_audits", module)
    spec.loader.exec_module(module)
    return module


A = _load_experiments()


def _gaussian_delta_mp(mu: float, eps: float) -> mpmath.mpf:
    mpmath.mp.dps = 50
    mu, eps = mpmath.mpf(mu), mpmath.mpf(eps)
    return mpmath.ncdf(mu / 2 - eps / mu) - mpmath.exp(eps) * mpmath.ncdf(-mu / 2 - eps / mu)


# --------------------------------------------------------------------------- flawed claims: violation


def test_seed000_approx_minimizer_factor_two_gap_is_a_violation():
    r = A.audit_seed000_approx_minimizer(samples=200_000, rng=0)
    assert r.violation and r.as_predicted
    assert r.claimed_epsilon < r.epsilon_lower_bound <= r.true_epsilon


def test_seed002_sensitivity_c_is_a_violation():
    r = A.audit_seed002_sensitivity(samples=400_000, rng=0)
    assert r.violation and r.as_predicted
    assert 1.0 < r.epsilon_lower_bound <= r.true_epsilon


@pytest.mark.slow
def test_seed003_dvp_transcript_exceeds_per_iteration_alpha():
    r = A.audit_seed003_dvp(samples=4_000, rng=0, iterations=30)
    assert r.violation and r.as_predicted
    assert r.epsilon_lower_bound > r.claimed_epsilon == 1.0
    assert r.epsilon_lower_bound <= 30 * 1.0  # basic composition bounds the truth


# --------------------------------------------------------------------------- valid claims: no violation


def test_seed000_svt_within_eps1_plus_eps2():
    r = A.audit_seed000_svt(samples=400_000, rng=0)
    assert not r.violation and r.as_predicted
    assert r.epsilon_lower_bound <= r.claimed_epsilon


def test_seed004_per_iteration_gaussian_release_holds():
    r = A.audit_seed004_gaussian_release(samples=400_000, rng=0)
    assert not r.violation and r.as_predicted


def test_seed003_single_step_respects_alpha():
    r = A.audit_seed003_dvp(samples=4_000, rng=0, iterations=1)
    assert not r.violation and r.as_predicted


@pytest.mark.parametrize("name", ["seed000-approx-minimizer", "seed002-sensitivity"])
def test_corrected_gaussian_steps_are_not_contradicted(name):
    r = A.audit_corrected(name, samples=400_000, rng=0)
    assert not r.violation and r.as_predicted
    assert r.epsilon_lower_bound <= r.true_epsilon <= r.claimed_epsilon * (1 + 1e-12)


@pytest.mark.slow
def test_corrected_dvp_total_is_not_contradicted():
    r = A.audit_corrected("seed003-dvp-transcript", samples=4_000, rng=0, iterations=10)
    assert not r.violation and r.as_predicted
    assert r.claimed_epsilon >= 1.0


# --------------------------------------------------------------------------- the scenarios' analytic numbers


def test_seed002_true_epsilon_matches_spec_and_mpmath():
    sc = S.seed002_sensitivity()
    sigma = sc.parameters["sigma"]
    assert sigma / 3.0 == pytest.approx(3.7306, abs=1e-4)  # spec 002 F6: sigma/C = 3.7306
    assert sc.true_epsilon == pytest.approx(2.155, abs=1e-3)  # spec 002 F6
    assert float(_gaussian_delta_mp(6.0 / sigma, sc.true_epsilon)) == pytest.approx(1e-5, rel=1e-6)


def test_seed000_paper_step_is_four_rho_zcdp():
    rho = 0.125
    sc = S.seed000_approx_minimizer(rho=rho)
    p = sc.parameters
    shift = 2 * p["beta"] / p["strong_convexity"]
    # exact Renyi divergence of two Gaussians: shift^2 tau / (2 sigma^2) = 4 rho tau
    assert shift**2 / (2 * p["sigma"] ** 2) == pytest.approx(4 * rho, rel=1e-12)
    assert float(_gaussian_delta_mp(shift / p["sigma"], sc.true_epsilon)) == pytest.approx(1e-5, rel=1e-6)
    # claimed epsilon is the optimal rho-zCDP conversion, at least the classic one minus nothing
    assert sc.claimed_epsilon <= rho + 2 * math.sqrt(rho * math.log(1e5))
    assert sc.true_epsilon > sc.claimed_epsilon


def test_seed004_realised_shift_is_close_to_lemma1_sensitivity():
    sc = S.seed004_gaussian_release()
    p = sc.parameters
    assert p["realised_shift"] <= p["sensitivity"]
    assert p["realised_shift"] >= 0.999 * p["sensitivity"]
    assert sc.true_epsilon < sc.claimed_epsilon


def test_dvp_single_step_log_likelihood_ratio_is_bounded_by_alpha():
    # Theorem 1 (corrected zeta = alpha_hat / 2): |l_1| <= alpha for every output, in both worlds
    sc = S.seed003_dvp_transcript(iterations=1)
    for db in sc.pairs[0]:
        llr = sc.mechanism(db, 2_000, np.random.default_rng(3))
        assert np.max(np.abs(llr)) <= 1.0 + 1e-9


@pytest.mark.slow
def test_dvp_transcript_kl_exceeds_what_any_alpha_dp_mechanism_allows():
    # spec 003 §3.2: an alpha-DP mechanism has KL <= alpha tanh(alpha/2) = 0.462 for alpha = 1;
    # E_D[L_T] = KL(P_D || P_D'). One-sided 99.9 % normal bound on the sample mean.
    sc = S.seed003_dvp_transcript(iterations=60)
    llr = sc.mechanism(sc.pairs[0][0], 400, np.random.default_rng(5))
    lower = llr.mean() - 3.09 * llr.std(ddof=1) / math.sqrt(llr.size)
    assert lower > math.tanh(0.5)


def test_make_scenario_validates_name_and_arguments():
    with pytest.raises(ValueError, match="name must be one of"):
        S.make_scenario("seed009")
    with pytest.raises(ValueError, match="epsilon must be in"):
        S.seed004_gaussian_release(epsilon=2.0)
    with pytest.raises(ValueError, match="statistic"):
        S.seed003_dvp_transcript(statistic="x")


def test_corrected_dp_admm_total_is_not_contradicted():
    r = A.audit_corrected("seed004-gaussian-release", samples=200_000, rng=0, iterations=5)
    assert not r.violation and r.as_predicted
    assert r.epsilon_lower_bound <= r.claimed_epsilon


def test_seed004_paper_total_is_not_computable():
    with pytest.raises(ValueError, match="c0"):
        S.seed004_gaussian_release(iterations=3)


def test_dp_admm_llr_is_the_gaussian_privacy_loss():
    # one step: under D the log-likelihood ratio is N(mu^2/2, mu^2), mu = shift/sigma (exact for Gaussians)
    from scipy import stats

    sc = S.seed004_gaussian_release()
    mu = sc.parameters["realised_shift"] / sc.parameters["sigma"]
    llr = sc.mechanism(sc.pairs[0][0], 20_000, np.random.default_rng(11))
    assert stats.kstest(llr, stats.norm(mu**2 / 2, mu).cdf).pvalue > 1e-3
