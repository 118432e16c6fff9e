"""ERM perturbation: objective/output perturbation, Ding et al. (2020)'s σ_i1/λ̂/σ_i2, Zhang & Zhu (2016)'s DVP calibration."""

from __future__ import annotations

import math
import warnings

import mpmath as mp
import numpy as np
import pytest
from _mech_stats import ALPHA
from scipy import stats

from dpkit.accounting.base import PaperRuleWarning
from dpkit.accounting.events import ObjectivePerturbationEvent, PureDPEvent
from dpkit.accounting.zcdp import event_rho
from dpkit.mechanisms import (
    ApproximateMinimizerNoise,
    GaussianMechanism,
    GaussianObjectivePerturbation,
    L2LaplaceMechanism,
    ObjectivePerturbation,
    ding_min_regularization,
    ding_objective_sigma,
    dvp_calibration,
    output_perturbation,
    output_perturbation_sensitivity,
    uniform_objective_noise,
)
from dpkit.mechanisms.dual_noise import GaussianObjectiveNoise, L2LaplaceObjectiveNoise


# --------------------------------------------------------------------------- CMS objective perturbation


def test_objective_perturbation_no_extra_ridge_branch():
    op = ObjectivePerturbation(epsilon=1.0, n_samples=1000, regularization=0.01, smoothness=0.25)
    with mp.workdps(40):
        jac = 2 * mp.log(1 + mp.mpf(0.25) / (1000 * mp.mpf(0.01)))
        assert op.noise_epsilon == pytest.approx(float(1 - jac), rel=1e-12)
        assert op.noise_epsilon <= 1 - jac
    assert op.extra_regularization == 0.0
    assert op.zeta == op.noise_epsilon / 2
    assert op.event == PureDPEvent(1.0)
    norms = np.linalg.norm(op.sample_noise(4, size=20_000, rng=1), axis=1)
    assert stats.kstest(norms, "gamma", args=(4, 0, 1 / op.zeta)).pvalue > ALPHA


def test_objective_perturbation_extra_ridge_branch():
    op = ObjectivePerturbation(epsilon=0.1, n_samples=100, regularization=1e-3, smoothness=0.25)
    ridge = op.extra_regularization
    assert ridge == pytest.approx(0.25 / (100 * math.expm1(0.025)) - 1e-3, rel=1e-9)
    with mp.workdps(40):  # CMS: the Jacobian factor then costs exactly ε/2
        assert 2 * mp.log(1 + mp.mpf(0.25) / (100 * (mp.mpf(1e-3) + mp.mpf(ridge)))) <= mp.mpf(0.05)
    assert op.noise_epsilon == 0.05


def test_objective_perturbation_requires_replace_one():
    with pytest.raises(ValueError, match="replace-one"):
        ObjectivePerturbation(1.0, 100, 0.1, neighbouring="add-remove")
    with pytest.raises(ValueError, match="n_samples"):
        ObjectivePerturbation(1.0, 0, 0.1)


# --------------------------------------------------------------------------- Ding et al. 2020 (PP-ADMM)


@pytest.mark.parametrize(
    "eps1,sigma,lam",
    [(0.0914674, 0.0137051, 0.546643), (0.183387, 0.00683565, 0.272648), (0.368581, 0.00340106, 0.135655)],
)
def test_ding_sigma_i1_and_lambda_rule_match_derived_table(eps1, sigma, lam):
    """Derived from the paper's §3.4 pipeline (|D_i| = 7000, N = 5, δ_i1 = 1e-4, ε_i3 = 0.99 ε_i1)."""
    with mp.workdps(40):
        want = 2 * mp.sqrt(2 * mp.log(mp.mpf(1.25) / mp.mpf("1e-4"))) / (7000 * mp.mpf(0.99 * eps1))
    assert ding_objective_sigma(0.99 * eps1, 1e-4, 7000) == pytest.approx(float(want), rel=1e-12)
    assert ding_objective_sigma(0.99 * eps1, 1e-4, 7000) == pytest.approx(sigma, rel=2e-5)
    assert ding_min_regularization(eps1, 0.99 * eps1, 7000, 5) == pytest.approx(lam, rel=2e-5)


def test_ding_epsilon_noise_above_one_warns():
    with pytest.warns(PaperRuleWarning, match="Thm A.1"):
        sigma = ding_objective_sigma(0.99 * 1.91522, 1e-4, 7000)
    assert sigma == pytest.approx(6.54531e-4, rel=2e-5)
    with pytest.raises(ValueError, match="epsilon_noise"):
        ding_min_regularization(0.5, 0.5, 10)


def test_gaussian_objective_perturbation_event_and_law():
    mech = GaussianObjectivePerturbation(sigma=0.02, n_samples=500, strong_convexity=0.1, smoothness=0.25)
    event = mech.event
    assert isinstance(event, ObjectivePerturbationEvent)
    assert event.sigma == 0.02
    assert event.sensitivity == pytest.approx(2 / 500, rel=1e-15) and event.sensitivity >= 2 / 500
    with mp.workdps(40):  # ξ = log(1 + c₃/(nμ)), a rank-one Hessian change (CMS 2011, proof of Thm 9)
        xi = mp.log(1 + mp.mpf(0.25) / (500 * mp.mpf("0.1")))
    assert event.jacobian >= float(xi) and event.jacobian == pytest.approx(float(xi), rel=1e-14)
    base = np.array([1.0, -2.0, 0.5])
    draws = mech.sample(base, size=20_000, rng=2) - base
    assert stats.kstest(draws.ravel(), "norm", args=(0, 0.02)).pvalue > ALPHA


def test_sigma_i2_switch_and_events():
    """The paper's §3.4 pipeline, ε = 1, |𝓑_i| = 2: σ_i2 = 0.1144 with the paper's sensitivity β/μ."""
    beta, rho = 10**-3.5, 9.0478e-7
    mu = 0.0545296 + 2 * 0.5 * 2
    with pytest.warns(PaperRuleWarning, match=r"4\*rho"):
        paper = ApproximateMinimizerNoise(beta, mu, rho, sensitivity_factor=1)
    assert paper.sigma == pytest.approx(0.1144, abs=5e-5)
    assert event_rho(paper.paper_event) == pytest.approx(rho, rel=1e-12)
    assert event_rho(paper.event) == pytest.approx(4 * rho, rel=1e-12)  # the valid accounting (sensitivity 2β/μ)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        safe = ApproximateMinimizerNoise(beta, mu, rho)
    assert safe.sigma == pytest.approx(2 * paper.sigma, rel=1e-12)
    assert event_rho(safe.event) == pytest.approx(rho, rel=1e-12)
    assert event_rho(safe.event) <= rho * (1 + 1e-12)
    out = safe.sample(np.zeros(3), size=30_000, rng=4)
    assert stats.kstest(out.ravel(), "norm", args=(0, safe.sigma)).pvalue > ALPHA
    with pytest.raises(ValueError, match="sensitivity_factor"):
        ApproximateMinimizerNoise(beta, mu, rho, sensitivity_factor=3)


def test_sigma_i2_factor_two_is_tight_against_adversarial_optimiser():
    """Two compliant minimisers 2β/μ apart give D_α = α(2β/μ)²/(2σ²) = 4ρα for the paper's σ."""
    beta, mu, rho = 1e-3, 0.5, 0.01
    with pytest.warns(PaperRuleWarning):
        paper = ApproximateMinimizerNoise(beta, mu, rho, sensitivity_factor=1)
    shift = 2 * beta / mu
    assert shift**2 / (2 * paper.sigma**2) == pytest.approx(4 * rho, rel=1e-12)
    assert paper.rho_actual == pytest.approx(4 * rho, rel=1e-12)


# --------------------------------------------------------------------------- output perturbation


def test_output_perturbation():
    assert output_perturbation_sensitivity(200, 0.05, lipschitz=1.0) == pytest.approx(0.2, rel=1e-15)
    assert output_perturbation_sensitivity(200, 0.05) >= 2 / (200 * 0.05)
    pure = output_perturbation(1.0, 200, 0.05)
    assert isinstance(pure, L2LaplaceMechanism) and pure.epsilon <= 1.0
    gauss = output_perturbation(1.0, 200, 0.05, delta=1e-5)
    assert isinstance(gauss, GaussianMechanism) and gauss.sensitivity == pytest.approx(0.2)
    with pytest.raises(ValueError, match="replace-one"):
        output_perturbation_sensitivity(200, 0.05, neighbouring="add-remove")


# --------------------------------------------------------------------------- Zhang & Zhu 2016 (DVP)


def test_dvp_calibration_spec_examples():
    """Zhang & Zhu 2016, Algorithm 2's calibration: if-branch ᾱ₀ + 2ζ = α; else-branch Φ > 0 with the
    Jacobian term of eq. (21) equal to α/2 (checked in mpmath below)."""
    a = dvp_calibration(0.3, n_samples=1750, loss_weight=1750, regularization=10**-2.5, penalty=0.5, degree=2)
    assert a.extra_regularization == 0.0
    assert a.jacobian_budget == pytest.approx(0.2352, abs=1e-4)
    assert a.noise_budget == pytest.approx(0.0648, abs=1e-4)
    assert a.zeta == pytest.approx(0.0324, abs=1e-4)
    assert a.jacobian_budget + 2 * a.zeta <= 0.3
    b = dvp_calibration(0.1, n_samples=1750, loss_weight=1750, regularization=10**-2.5, penalty=0.01, degree=1)
    assert b.extra_regularization == pytest.approx(9.852, abs=1e-3)
    assert b.noise_budget == pytest.approx(0.05) and b.zeta == pytest.approx(0.025)
    with mp.workdps(40):  # else-branch identity: the Jacobian costs α/2
        kappa = mp.mpf(10**-2.5) + mp.mpf(0.02)
        jac = 2 * mp.log(1 + mp.mpf(0.25) / (kappa + mp.mpf(b.extra_regularization)))
        assert jac <= mp.mpf(0.05)
        assert jac == pytest.approx(0.05, rel=1e-9)
    assert b.epsilon <= 0.1 and b.event == PureDPEvent(b.epsilon)


def test_dvp_literal_mode_is_not_alpha_dp():
    """Zhang & Zhu 2016, eqs. (21)–(22): ζ = α̂/2 is needed, the literal ζ = α̂ is not α-DP. B = Cᴿ = 20, ρ = 0.1, η = 0.5, N_p = 1, α = 1: ᾱ₀ = 0.410, α̂ = 0.590."""
    kwargs = dict(n_samples=20, loss_weight=20, regularization=0.1, penalty=0.5, degree=1)
    fixed = dvp_calibration(1.0, **kwargs)
    literal = dvp_calibration(1.0, literal=True, **kwargs)
    assert fixed.jacobian_budget == pytest.approx(0.410, abs=1e-3)
    assert fixed.noise_budget == pytest.approx(0.590, abs=1e-3)
    assert literal.zeta == pytest.approx(2 * fixed.zeta, rel=1e-12)
    assert literal.epsilon == pytest.approx(0.410 + 2 * 0.590, abs=2e-3) and literal.epsilon > 1.0
    # literal typo (a): B_p/Cᴿ multiplied — differs when B_p ≠ Cᴿ
    skewed = dvp_calibration(1.0, n_samples=40, loss_weight=20, regularization=0.1, penalty=0.5, degree=1, literal=True)
    assert skewed.jacobian_budget == pytest.approx(2 * math.log1p(0.25 * 20 / (40 * 1.1)), rel=1e-12)
    assert dvp_calibration(1.0, **kwargs).to_dict()["literal"] is False


def test_dvp_noise_law():
    """DVP's linear term b = (Cᴿ/B_p)ε_p with ε_p ∝ exp(−ζ‖ε‖): ‖b‖ ~ Gamma(d, (Cᴿ/B_p)/ζ) (eq. (14))."""
    cal = dvp_calibration(0.5, n_samples=100, loss_weight=100, regularization=0.1, penalty=0.5, degree=2)
    mech = cal.mechanism(0.4)
    norms = np.linalg.norm(mech.sample(np.zeros(5), size=20_000, rng=3), axis=1)
    assert stats.kstest(norms, "gamma", args=(5, 0, 0.4 / cal.zeta)).pvalue > ALPHA
    # the event: noise term 2ζ (‖ε′ − ε‖ ≤ 2) plus the Jacobian term, as in the proof of Thm 1
    assert mech.event.epsilon == pytest.approx(2 * cal.zeta + cal.jacobian_budget, rel=1e-12)
    assert mech.event.epsilon >= cal.epsilon * (1 - 1e-15)


def test_l2_laplace_objective_noise_event():
    mech = L2LaplaceObjectiveNoise(zeta=0.5, sensitivity=0.8, jacobian=0.1)
    assert isinstance(mech.event, PureDPEvent) and 0.5 <= mech.event.epsilon <= 0.5 * (1 + 1e-15)
    out = mech.sample([1.0, -1.0, 0.0], size=5000, rng=2)
    assert stats.kstest(np.linalg.norm(out - [1.0, -1.0, 0.0], axis=1), "gamma", args=(3, 0, 2.0)).pvalue > ALPHA
    with pytest.raises(ValueError, match="1-D"):
        mech.sample(1.0)


def test_gaussian_objective_noise():
    mech = GaussianObjectiveNoise(sigma=1.5, sensitivity=0.5, jacobian=0.02)
    assert mech.event == ObjectivePerturbationEvent(sigma=1.5, sensitivity=0.5, jacobian=0.02)
    out = mech.sample([2.0, 0.0], size=20_000, rng=4)
    assert out.shape == (20_000, 2)
    for axis, centre in enumerate((2.0, 0.0)):
        assert stats.kstest(out[:, axis], "norm", args=(centre, 1.5)).pvalue > ALPHA
    assert abs(stats.pearsonr(out[:, 0], out[:, 1])[0]) < 0.03  # independent coordinates
    with pytest.raises(ValueError, match="sigma"):
        GaussianObjectiveNoise(sigma=0.0, sensitivity=1.0)
    with pytest.raises(ValueError, match="jacobian"):
        GaussianObjectiveNoise(sigma=1.0, sensitivity=1.0, jacobian=-0.1)


# --------------------------------------------------------------------------- Wang et al. 2020, bounded noise


def test_uniform_objective_noise():
    draws = uniform_objective_noise(0.3, 4, size=20_000, rng=5)
    assert stats.kstest(draws.ravel(), "uniform", args=(-0.3, 0.6)).pvalue > ALPHA
    assert np.all(uniform_objective_noise(0.0, 3, rng=1) == 0.0)
    with pytest.raises(ValueError, match="bound"):
        uniform_objective_noise(-1.0, 3)


@pytest.mark.parametrize(
    "build",
    [
        lambda: dvp_calibration(0.0, n_samples=10, loss_weight=10, regularization=0.1, penalty=0.5, degree=1),
        lambda: dvp_calibration(1.0, n_samples=0, loss_weight=10, regularization=0.1, penalty=0.5, degree=1),
        lambda: dvp_calibration(1.0, n_samples=10, loss_weight=10, regularization=-0.1, penalty=0.5, degree=1),
        lambda: ApproximateMinimizerNoise(0.0, 1.0, 0.1),
        lambda: ApproximateMinimizerNoise(1.0, 1.0, 0.0),
        lambda: GaussianObjectivePerturbation(0.0, 10, 0.1),
        lambda: GaussianObjectivePerturbation(1.0, 10, 0.0),
        lambda: ding_objective_sigma(0.5, 1.5, 10),
        lambda: ObjectivePerturbation(1.0, 10, 0.0),
    ],
)
def test_erm_bad_inputs(build):
    with pytest.raises(ValueError):
        build()
