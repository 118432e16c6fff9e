"""Seed 004 (DP-ADMM, ADMM-PVP): spec 004 §7 claims T1–T6, T9, T11, invariants, ledgers, errors."""

from __future__ import annotations

import math

import mpmath as mp
import numpy as np
import pytest
import scipy.optimize
from hypothesis import given, settings
from hypothesis import strategies as st

from dpkit.accounting.zcdp import zcdp_to_epsilon
from dpkit.algorithms import privacy as P
from dpkit.algorithms.admm_pvp import admm_pvp, pvp_sensitivity
from dpkit.algorithms.data import make_synthetic
from dpkit.algorithms.dp_admm import dp_admm, noise_multiplier, step_size_eq29, step_size_eq34
from dpkit.algorithms.partition import partition

mp.mp.dps = 50
KW = dict(m=400, epsilon=0.1, delta=1e-5, dp=104, lam_over_n=1e-6)


def test_step_sizes_and_noise_spot_values():
    # spec 004 T5 / §5.7 (values printed to 5 decimals: tolerance half a unit of the last digit)
    assert step_size_eq29([1, 100], c_w=23, **KW) == pytest.approx([6.10237, 0.61024], abs=6e-6)
    assert step_size_eq34([1, 10, 100], c_w=89, **KW) == pytest.approx([3.45715, 2.67284, 1.55631], abs=6e-6)
    z, _ = noise_multiplier(0.1, 1e-5, 100, "per_iteration")
    for eta, sigma in [(6.10237329, 0.91803), (0.61023733, 0.13932), (3.45715278, 0.62232), (1.556312, 0.32623)]:
        delta_k = 2.0 / (400 * (0.1 + 1 / eta))
        assert z * delta_k == pytest.approx(sigma, abs=6e-6)
    # T3 (F2): (ρ + 1/η)σ constant = 2c1√(2 ln(1.25/δ))/(mε)
    want = float(2 * mp.sqrt(2 * mp.log(mp.mpf(1.25) / mp.mpf("1e-5"))) / (400 * mp.mpf("0.1")))
    assert want == pytest.approx(0.2422, abs=1e-4)
    # T6: PVP σ = 2.4224
    assert pvp_sensitivity(400, 0.1, 1e-6) * z == pytest.approx(2.4224, rel=1e-4)


def test_paper_eta_formula_l1_matches_eq29():
    # T5: the paper's explicit l1 formula differs from (29) only through λ vs λ/n (~1e-5 relative)
    k = np.arange(1, 101)
    paper = 23 * (2 * k * (1 + 1e-6 * math.sqrt(104) / 100) ** 2 + 1664 * k * math.log(1.25 / 1e-5) / (400**2 * 0.01)) ** -0.5
    assert step_size_eq29(k, c_w=23, **KW) == pytest.approx(paper, rel=1e-4)


@pytest.mark.parametrize("eps,delta,exact,improved,classic", [
    (0.1, 1e-5, 0.7510, 0.8220, 1.0118), (0.01, 1e-5, 0.0607, 0.0680, 0.0993), (0.2, 1e-3, 1.4488, 1.6544, 2.1087)])
def test_total_privacy_table(eps, delta, exact, improved, classic):
    # spec 004 §3.4 table (T9): t = 100, δ_tot = δ
    z, _ = noise_multiplier(eps, delta, 100, "per_iteration")
    ledger = [[(P.GaussianEvent(z, 1.0), 100)]]
    assert P.compose_gaussians_exact(ledger, delta).epsilon == pytest.approx(exact, abs=6e-5)
    rho = 100 / (2 * z * z)
    assert zcdp_to_epsilon(rho, delta) == pytest.approx(improved, abs=6e-5)
    assert P.zcdp_epsilon_lemma28(rho, delta) == pytest.approx(classic, abs=6e-5)
    assert P.compose_gaussians_exact(ledger, delta).epsilon <= zcdp_to_epsilon(rho, delta) <= P.zcdp_epsilon_lemma28(rho, delta)


def test_theorem2_shape_limit():
    # T11: classical MA total / (√t ε) → √(ln(1/δ)/ln(1.25/δ)) as ε → 0
    eps, delta, t = 1e-4, 1e-5, 100
    z, _ = noise_multiplier(eps, delta, t, "per_iteration")
    ratio = P.zcdp_epsilon_lemma28(t / (2 * z * z), delta) / (math.sqrt(t) * eps)
    assert ratio == pytest.approx(math.sqrt(math.log(1 / delta) / math.log(1.25 / delta)), rel=1e-3)


def _parts(n_agents=5, m=80, d=6, seed=0):
    ds = make_synthetic(n_agents * m, d, rng=seed)
    return partition(ds, n_agents, rng=seed), ds


def test_closed_form_equals_numerical_argmin():
    # T1: one step of (12a) equals argmin of (8)
    parts, _ = _parts(n_agents=1)
    X, y = parts[0].X, parts[0].y
    rng = np.random.default_rng(1)
    wt, wg, gam = rng.normal(size=6), rng.normal(size=6), rng.normal(size=6)
    rho, eta, lam = 0.1, 0.7, 1e-2
    s = 1 / (1 + np.exp(y * (X @ wt)))
    g = -(X * (y * s)[:, None]).mean(axis=0) + lam * wt
    closed = (-g + gam + rho * wg + wt / eta) / (rho + 1 / eta)
    obj = lambda w: g @ (w - wt) - gam @ (w - wg) + rho / 2 * np.sum((w - wg) ** 2) + np.sum((w - wt) ** 2) / (2 * eta)
    num = scipy.optimize.minimize(obj, np.zeros(6), method="BFGS", options={"gtol": 1e-12}).x
    assert np.allclose(closed, num, atol=1e-6)


@given(st.integers(0, 10_000))
@settings(max_examples=40)
def test_lemma1_sensitivity(seed):
    # T2: replace-one changes w_i^k by ≤ 2/(m(ρ + 1/η))
    rng = np.random.default_rng(seed)
    m, rho, eta = 40, 0.1, rng.uniform(0.05, 10)
    X = rng.normal(size=(m, 5))
    X /= np.maximum(1, np.linalg.norm(X, axis=1))[:, None]
    y = rng.choice([-1.0, 1.0], m)
    wt = rng.normal(0, 10, 5)
    grad = lambda X, y: -(X * (y / (1 + np.exp(y * (X @ wt))))[:, None]).mean(axis=0)
    X2, y2 = X.copy(), y.copy()
    X2[0] = -X[0]
    g1, g2 = grad(X, y), grad(X2, y2)
    diff = np.linalg.norm(g1 - g2) / (rho + 1 / eta)
    assert diff <= 2 / (m * (rho + 1 / eta)) + 1e-15


@pytest.mark.parametrize("regulariser", ["l2", "l1"])
def test_dp_admm_invariants_and_ratio(regulariser):
    parts, ds = _parts()
    res = dp_admm(parts, epsilon=1.0, delta=1e-5, iterations=20, regulariser=regulariser, test=ds, rng=2)
    assert max(res.history["dual_sum"][1:]) < 1e-12  # T4
    ratios = {round(e.sigma / e.sensitivity, 9) for e, _ in res.ledger[0]}
    assert len(ratios) == 1  # T3/F1: constant noise multiplier
    assert res.epsilon_paper is None
    assert res.epsilon_corrected <= 1.0 <= res.guarantees["zcdp"].epsilon
    assert P.compose_gaussians_exact(res.ledger, 1e-5).epsilon == res.epsilon_corrected


def test_dp_admm_ledger_matches_rdp_accountant():
    from dpkit.accounting.rdp import RdpAccountant

    parts, _ = _parts(n_agents=3)
    res = dp_admm(parts, epsilon=0.5, delta=1e-5, iterations=10, rng=0)
    acc = RdpAccountant(neighbouring="replace-one")
    for event, count in res.ledger[0]:
        acc.compose(event, count)
    assert acc.get_epsilon(1e-5).epsilon == pytest.approx(res.guarantees["zcdp"].epsilon, rel=1e-3)


def test_dp_admm_budget_monotone_and_utility_trend():
    parts, ds = _parts(n_agents=4, m=150)
    eps_grid = [0.5, 2.0, 50.0]
    runs = [dp_admm(parts, epsilon=e, iterations=30, rng=0, test=ds) for e in eps_grid]
    tight = [r.epsilon_corrected for r in runs]
    assert tight == sorted(tight)
    losses = [r.history["empirical_risk"][-1] for r in runs]
    assert losses[-1] < losses[0]  # T13 (more budget, less noise, lower loss)


def test_admm_pvp_runs_and_accounts():
    parts, ds = _parts(n_agents=3)
    res = admm_pvp(parts, epsilon=1.0, iterations=8, test=ds, rng=0)
    assert max(res.history["dual_sum"][1:]) < 1e-12
    assert res.epsilon_corrected <= 1.0
    paper = admm_pvp(parts, epsilon=0.1, iterations=3, budget="per_iteration", rng=0)
    assert paper.config["sigma"] == pytest.approx(pvp_sensitivity(80, 0.1, 1e-6) * math.sqrt(2 * math.log(1.25e5)) / 0.1)
    assert paper.guarantees["per_iteration"].epsilon == 0.1


def test_invalid_inputs():
    parts, _ = _parts(n_agents=2)
    with pytest.raises(ValueError, match="epsilon"):
        dp_admm(parts, epsilon=0.0)
    with pytest.raises(ValueError, match="delta"):
        dp_admm(parts, epsilon=1.0, delta=0.0)
    with pytest.raises(ValueError, match="budget"):
        dp_admm(parts, epsilon=1.0, budget="weekly")
    with pytest.raises(ValueError, match="eq34"):
        dp_admm(parts, epsilon=1.0, regulariser="l1", schedule="eq34")
    with pytest.raises(ValueError, match="rho"):
        admm_pvp(parts, epsilon=1.0, rho=-1.0)
