"""ERM perturbation: objective/output perturbation, seed 000's σ_i1/λ̂/σ_i2, seed 003's DVP calibration."""

from __future__ import annotations

import math
import warnings

import mpmath as mp
import numpy as np
import pytest
from _mech_stats import ALPHA
from scipy import stats

from dpkit.accounting.base import PaperRuleWarning
from dpkit.accounting.events import ApproxDPEvent, PureDPEvent
from dpkit.accounting.zcdp import event_rho
from dpkit.mechanisms import (
    ApproximateMinimizerNoise,
    GaussianMechanism,
    GaussianObjectivePerturbation000,
    L2LaplaceMechanism,
    ObjectivePerturbation,
    dvp_calibration,
    output_perturbation,
    output_perturbation_sensitivity,
    uniform_objective_noise,
)


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


# --------------------------------------------------------------------------- seed 000


@pytest.mark.parametrize(
    "eps1,sigma,lam",
    [(0.0914674, 0.0137051, 0.546643), (0.183387, 0.00683565, 0.272648), (0.368581, 0.00340106, 0.135655)],
)
def test_seed000_sigma_i1_and_lambda_rule_match_spec_table(eps1, sigma, lam):
    """Spec 000 §3.4 derived table (|D_i| = 7000, N = 5, δ_i1 = 1e-4, ε_i3 = 0.99 ε_i1)."""
    g = GaussianObjectivePerturbation000(eps1, 1e-4, 0.99 * eps1, n_samples=7000, n_agents=5)
    assert g.sigma == pytest.approx(sigma, rel=2e-5)
    assert g.min_regularization == pytest.approx(lam, rel=2e-5)
    assert g.event == ApproxDPEvent(eps1, 1e-4)
    assert g.is_proven is False
    draws = g.sample_noise(3, size=20_000, rng=2)
    assert stats.kstest(draws.ravel(), "norm", args=(0, g.sigma)).pvalue > ALPHA


def test_seed000_epsilon_noise_above_one_warns():
    with pytest.warns(PaperRuleWarning, match="F4"):
        g = GaussianObjectivePerturbation000(1.91522, 1e-4, 0.99 * 1.91522, n_samples=7000, n_agents=5)
    assert g.sigma == pytest.approx(6.54531e-4, rel=2e-5)
    with pytest.raises(ValueError, match="epsilon_noise"):
        GaussianObjectivePerturbation000(0.5, 1e-4, 0.5, n_samples=10)


def test_sigma_i2_switch_and_events():
    """Spec 000 §3.4, ε = 1 row, |𝓑_i| = 2: σ_i2 = 0.1144 with the paper's sensitivity β/μ."""
    beta, rho = 10**-3.5, 9.0478e-7
    mu = 0.0545296 + 2 * 0.5 * 2
    with pytest.warns(PaperRuleWarning, match="F5"):
        paper = ApproximateMinimizerNoise(beta, mu, rho, sensitivity_factor=1)
    assert paper.sigma == pytest.approx(0.1144, abs=5e-5)
    assert event_rho(paper.paper_event) == pytest.approx(rho, rel=1e-12)
    assert event_rho(paper.event) == pytest.approx(4 * rho, rel=1e-12)  # the valid accounting (F5)
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
    """Spec 000 A1: two compliant minimisers 2β/μ apart give D_α = α(2β/μ)²/(2σ²) = 4ρα for the paper's σ."""
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


# --------------------------------------------------------------------------- seed 003 DVP


def test_dvp_calibration_spec_examples():
    """Spec 003 §5 item 4."""
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
    """Spec 003 §5 item 5: B = Cᴿ = 20, ρ = 0.1, η = 0.5, N_p = 1, α = 1: ᾱ₀ = 0.410, α̂ = 0.590."""
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
    cal = dvp_calibration(0.5, n_samples=100, loss_weight=100, regularization=0.1, penalty=0.5, degree=2)
    norms = np.linalg.norm(cal.sample_noise(5, size=20_000, rng=3), axis=1)
    assert stats.kstest(norms, "gamma", args=(5, 0, 1 / cal.zeta)).pvalue > ALPHA


# --------------------------------------------------------------------------- seed 001 bounded noise


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
        lambda: GaussianObjectivePerturbation000(1.0, 1.5, 0.5, n_samples=10),
        lambda: ObjectivePerturbation(1.0, 10, 0.0),
    ],
)
def test_erm_bad_inputs(build):
    with pytest.raises(ValueError):
        build()
