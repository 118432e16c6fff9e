"""DP-ADMM and ADMM-PVP (Huang et al., IEEE TIFS 2019): paper formulas, ledger = draws, calibration,
outputs covered, monotonicity, audit scenarios.

Independent references: the step sizes, noise scales and totals printed in the paper's derived
tables (eq. 29/34 at m_i = 400, ρ = 0.1, λ/n = 1e-6, d = 104), the exact GDP total 0.7510 of
100 iterations at per-iteration (0.1, 1e-5), and scipy's numerical argmin of eq. (8).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.optimize
import scipy.stats
from hypothesis import given, settings
from hypothesis import strategies as st

from dpkit.algorithms.dp_admm.admm_pvp import train_admm_pvp, pvp_sensitivity
from dpkit.algorithms.substrate.budget import Budget
from dpkit.algorithms.substrate.data import Dataset, make_synthetic
from dpkit.algorithms.dp_admm.dp_admm import FLAT_SPREAD, default_iterations, default_regularisation, train_dp_admm
from dpkit.algorithms.dp_admm.steps import (
    linearised_step, step_sensitivity, step_size_eq29, step_size_eq34, theorem1_multiplier,
)
from dpkit.algorithms.substrate.losses import L2, Logistic
from dpkit.algorithms.substrate.partition import partition
from dpkit.algorithms.audit_instances import make_scenario
from dpkit.algorithms.dp_admm import admm_pvp_audit_instances as pvp_scenario
from dpkit.algorithms.substrate.solvers import AgentObjectives
from dpkit.audit import audit
from dpkit.mechanisms.gaussian import GaussianMechanism

KW = dict(m=400, epsilon=0.1, delta=1e-5, dp=104, lam=1e-6)


def _parts(n_agents=4, m=60, d=5, seed=0, sizes=None):
    ds = make_synthetic(n_agents * m if sizes is None else sum(sizes), d, rng=seed)
    parts = partition(ds, n_agents, rng=seed) if sizes is None else partition(ds, sizes=sizes, rng=seed)
    return parts, ds


# ----------------------------------------------------------------------------- paper formulas


def test_step_sizes_and_noise_match_the_papers_settings():
    # eq. (29), c_w = 23 and eq. (34), c_w = 89 at (0.1, 1e-5), m = 400 (5 printed decimals)
    assert step_size_eq29([1, 100], c_w=23, **KW) == pytest.approx([6.10237, 0.61024], abs=6e-6)
    assert step_size_eq34([1, 10, 100], c_w=89, **KW) == pytest.approx([3.45715, 2.67284, 1.55631], abs=6e-6)
    z = theorem1_multiplier(0.1, 1e-5)
    for eta, sigma in [(6.10237329, 0.91803), (0.61023733, 0.13932), (3.45715278, 0.62232), (1.556312, 0.32623)]:
        assert z * step_sensitivity(400, 0.1, eta) == pytest.approx(sigma, abs=6e-6)
    # (ρ + 1/η)σ is constant: 2c1√(2 ln(1.25/δ))/(mε) = 0.2422
    assert z * step_sensitivity(400, 0.1, 2.0) * (0.1 + 0.5) == pytest.approx(0.2422, abs=1e-4)
    # ADMM-PVP σ = Δ_PVP·√(2 ln(1.25/δ))/ε = 2.4224
    assert pvp_sensitivity(400, 0.1 + 1e-6) * z == pytest.approx(2.4224, rel=1e-4)


def test_paper_l1_step_formula_matches_eq29():
    # the paper's explicit l1 formula differs from (29) only by λ vs λ/n (~1e-5 relative)
    k = np.arange(1, 101)
    paper = 23 * (2 * k * (1 + 1e-6 * math.sqrt(104) / 100) ** 2
                  + 1664 * k * math.log(1.25 / 1e-5) / (400**2 * 0.01)) ** -0.5
    assert step_size_eq29(k, c_w=23, **KW) == pytest.approx(paper, rel=1e-4)


def test_linearised_step_is_the_argmin_of_eq8():
    rng = np.random.default_rng(1)
    parts, _ = _parts(n_agents=1, m=50, d=6)
    X, y = parts[0].X, parts[0].y
    wt, wg, gam = rng.normal(size=6), rng.normal(size=6), rng.normal(size=6)
    rho, eta, lam = 0.1, 0.7, 1e-2
    F = AgentObjectives.from_parts(parts, Logistic(), regulariser=L2(), reg_weight=lam)
    Fk = F.with_terms(linear=-gam[None], kappa=rho, center=wg[None])
    closed = linearised_step(Fk, wt[None], np.array([eta]))[0]
    g = -(X * (y / (1 + np.exp(y * (X @ wt))))[:, None]).mean(axis=0) + lam * wt
    obj = lambda w: g @ (w - wt) - gam @ (w - wg) + rho / 2 * np.sum((w - wg) ** 2) + np.sum((w - wt) ** 2) / (2 * eta)
    numerical = scipy.optimize.minimize(obj, np.zeros(6), method="BFGS", options={"gtol": 1e-12}).x
    assert np.allclose(closed, numerical, atol=1e-6)


@given(st.integers(0, 10_000))
@settings(max_examples=40, deadline=None)
def test_lemma1_bounds_the_replace_one_change(seed):
    rng = np.random.default_rng(seed)
    m, rho, eta = 30, 0.1, rng.uniform(0.05, 10)
    X = rng.normal(size=(m, 5))
    X /= np.maximum(1, np.linalg.norm(X, axis=1))[:, None]
    y = rng.choice([-1.0, 1.0], m)
    X2, y2 = X.copy(), y.copy()
    X2[0], y2[0] = -X[0], rng.choice([-1.0, 1.0])
    F = AgentObjectives.from_arrays(np.stack([X, X2]), np.stack([y, y2]), Logistic())
    F = F.with_terms(kappa=rho, center=np.zeros((2, 5)))
    w = np.tile(rng.normal(0, 10, 5), (2, 1))
    out = linearised_step(F, w, np.full(2, eta))
    assert np.linalg.norm(out[0] - out[1]) <= step_sensitivity(m, rho, eta) * (1 + 1e-12)


def test_paper_variant_noise_claim_and_total():
    # paper: σ_{i,k} = Theorem 1 z × Lemma 1 Δ with eq. (34) steps; 100 iterations at (0.1, 1e-5) total 0.7510
    parts, ds = _parts(n_agents=2, m=400, d=6)
    res = train_dp_admm(parts, ds, budget=Budget(0.1, 1e-5), variant="paper", rng=0)
    eta = step_size_eq34([1, 100], c_w=89, m=400, epsilon=0.1, delta=1e-5, dp=6, lam=1e-6)
    want = 2 * math.sqrt(2 * math.log(1.25e5)) / (400 * 0.1 * (0.1 + 1 / eta))
    assert res.config["sigma_first_last"] == pytest.approx(want, rel=1e-9)
    assert res.paper_claim.epsilon == pytest.approx(0.1) and res.paper_claim.valid
    assert res.guarantee.epsilon == pytest.approx(0.7510, abs=6e-5)
    assert max(res.diagnostics["history"]["dual_sum"][1:]) < 1e-10  # Σ_i γ_i^k = 0 for k ≥ 1


# ----------------------------------------------------------------------------- ledger, calibration, outputs


class DrawLog:
    """Instrumented GaussianMechanism.sample: every draw's (σ, Δ) in order."""

    def __init__(self, monkeypatch):
        self.draws = []
        original = GaussianMechanism.sample

        def sample(mech, value, size=None, rng=None):
            self.draws.append((mech.sigma, mech.sensitivity))
            return original(mech, value, size=size, rng=rng)

        monkeypatch.setattr(GaussianMechanism, "sample", sample)


@pytest.mark.parametrize("run", ["dp-admm", "admm-pvp"])
def test_ledger_equals_the_draws(monkeypatch, run):
    log = DrawLog(monkeypatch)
    parts, ds = _parts(n_agents=3, sizes=[40, 70, 100])
    T = 6
    algo = train_dp_admm if run == "dp-admm" else train_admm_pvp
    res = algo(parts, ds, budget=Budget(1.0, 1e-5), iterations=T, rng=0)
    assert len(log.draws) == 3 * T  # one draw per agent per round, agents in order within a round
    for agent, part in enumerate(parts):
        drawn = log.draws[agent::3]
        recorded = [(e.sigma, e.sensitivity) for e, count in res.ledger.entries(agent) for _ in range(count)]
        assert recorded == drawn
        # true replace-one sensitivity of agent i: Lemma 1 (DP-ADMM) or 2c1/(mμ) + 2β/μ (PVP)
        mu = (res.config["rho"] if run == "admm-pvp" else 0.01) + 1.0 / 210
        want = 2.0 / (part.n * (0.1 + 0.25 + res.config["lam"])) if run == "dp-admm" else 2.0 / (part.n * mu) + 2e-6 / mu
        assert drawn[0][1] == pytest.approx(want, rel=1e-12)


@pytest.mark.parametrize("run,eps", [("dp-admm", 0.5), ("dp-admm", 3.0), ("admm-pvp", 1.0)])
def test_calibrated_to_the_whole_run(run, eps):
    parts, ds = _parts()
    algo = train_dp_admm if run == "dp-admm" else train_admm_pvp
    res = algo(parts, ds, budget=Budget(eps, 1e-5), iterations=15, rng=0)
    assert 0.99 * eps <= res.guarantee.epsilon <= eps
    assert res.ledger.draws(0) == 15


def test_default_rounds_follow_the_budget():
    # T = clip(⌈2000 μ⌉, 100, 600) with μ the GDP parameter: μ(1, 1e-5) = 0.2680 (Dong, Roth & Su)
    from dpkit.accounting.gdp import gdp_mu_to_epsilon

    T = default_iterations(Budget(1.0, 1e-5))
    mu = (T - 0.5) / 2000
    assert gdp_mu_to_epsilon(mu - 0.0005, 1e-5) < 1.0 < gdp_mu_to_epsilon(mu + 0.0005, 1e-5)
    assert default_iterations(Budget(0.01, 1e-5)) == 100 and default_iterations(Budget(50.0, 1e-5)) == 600


@settings(max_examples=60, deadline=None)
@given(m=st.integers(50, 10**6), z=st.floats(1.0, 500.0), rho=st.floats(0.01, 1.0))
def test_default_regularisation_caps_one_agents_stationary_spread(m, z, rho):
    """One agent, a direction no row constrains: the round is w ← (1 − sλ)w̃, s = 1/(ρ + c3 + λ), plus
    N(0, (z·2s/m)²), an AR(1) of stationary variance σ²/(1 − (1 − sλ)²). Where the default λ exceeds
    1/N and stays below its cap c3, that variance is r²·2a/(2a + λ) ≤ r² (a = ρ + c3); elsewhere λ is
    1/N or c3. The released noise z·Δ = 2z/(m(a + λ)) grows with z."""
    lam = default_regularisation([m], noise_multiplier=z, rho=rho)
    s = 1.0 / (rho + 0.25 + lam)
    stationary = (z * 2.0 * s / m) ** 2 / (1.0 - (1.0 - s * lam) ** 2)
    assert 1.0 / m <= lam <= 0.25
    if 1.0 / m < lam < 0.25:
        a = rho + 0.25
        assert stationary == pytest.approx(FLAT_SPREAD ** 2 * 2 * a / (2 * a + lam), rel=1e-9)
        assert stationary <= FLAT_SPREAD ** 2
    elif lam == 1.0 / m:
        assert default_regularisation([m], noise_multiplier=z, rho=rho, spread=math.inf) == 1.0 / m
    more = default_regularisation([m], noise_multiplier=1.01 * z, rho=rho)
    assert more >= lam and 1.01 * z / (rho + 0.25 + more) >= z / (rho + 0.25 + lam)


def test_default_regularisation_holds_the_noise_along_an_unconstrained_column():
    """One agent of 2,500 rows with 40 all-zero columns at ε = 1: along each, the returned tail mean is a
    sum of the rounds' noise through the AR(1) above, so Σ w_j²/v ~ χ²_40 with v its variance at the
    run's λ; the check fails with probability 2e-6. At λ = 1/N (the old default) v is 3.3× larger, and
    the statistic sits near 130 (seeds 5–7: 126, 205, 125), beyond the upper bound (≈ 98)."""
    q, base = 40, make_synthetic(2500, 3, rng=0)
    data = Dataset(np.column_stack([base.X, np.zeros((base.n, q))]), base.y, "zeros",
                   base.feature_names + tuple(f"zero{j}" for j in range(q)))
    result = train_dp_admm([data], data, budget=Budget(1.0, 1e-5), rng=5)
    cfg = result.config
    T, lam, z = cfg["iterations"], cfg["lam"], cfg["noise_multiplier"]
    assert lam == default_regularisation([2500], noise_multiplier=z, rho=cfg["rho"]) > 1 / 2500

    def tail_variance(lam: float) -> float:
        s = 1.0 / (cfg["rho"] + 0.25 + lam)
        decay, start = 1.0 - s * lam, T // 2
        weights = [sum(decay ** (t - j) for t in range(max(j, start), T)) / (T - start) for j in range(T)]
        return (z * 2.0 * s / 2500) ** 2 * float(np.sum(np.square(weights)))

    statistic = float(np.sum(result.model[3:] ** 2)) / tail_variance(lam)
    assert scipy.stats.chi2.ppf(1e-6, q) <= statistic <= scipy.stats.chi2.ppf(1 - 1e-6, q)
    assert tail_variance(1 / 2500) > 3 * tail_variance(lam)


def test_outputs_are_post_processing_of_the_releases(monkeypatch):
    # published values that ignore the local solutions: different data must give the same outputs
    def sample(mech, value, size=None, rng=None):
        return np.random.default_rng(rng).normal(size=np.shape(value))

    monkeypatch.setattr(GaussianMechanism, "sample", sample)
    runs = []
    for seed in (0, 1):
        parts, ds = _parts(seed=seed)
        runs.append(train_dp_admm(parts, ds, budget=Budget(1.0, 1e-5), iterations=5, rng=3))
    assert np.array_equal(runs[0].model, runs[1].model) and np.array_equal(runs[0].models, runs[1].models)


@pytest.mark.parametrize("run", ["dp-admm", "admm-pvp"])
def test_returned_models_are_the_stated_means_of_the_released_iterates(monkeypatch, run):
    # average="tail" (corrected default): each agent's releases of rounds k >= T/2 averaged, the model their
    # mean; "last" (paper default): the last releases and the aggregator's w^T; anything else is refused
    algo = train_dp_admm if run == "dp-admm" else train_admm_pvp
    released = []
    original = GaussianMechanism.sample

    def sample(mech, value, size=None, rng=None):
        out = original(mech, value, size=size, rng=rng)
        released.append(np.array(out, float))  # the released value w̃_i^k
        return out

    monkeypatch.setattr(GaussianMechanism, "sample", sample)
    parts, ds = _parts(n_agents=3, sizes=[40, 70, 100])
    T = 7
    tail = algo(parts, ds, budget=Budget(1.0, 1e-5), iterations=T, rng=0)
    rounds = np.stack(released).reshape(T, 3, -1)
    assert tail.config["average"] == "tail"
    assert np.allclose(tail.models, rounds[T // 2:].mean(axis=0), rtol=1e-12, atol=1e-15)
    assert np.allclose(tail.model, tail.models.mean(axis=0), rtol=1e-12, atol=1e-15)
    released.clear()
    last = algo(parts, ds, budget=Budget(1.0, 1e-5), iterations=T, rng=0, average="last")
    assert np.allclose(last.models, np.stack(released[-3:]), rtol=1e-12, atol=1e-15)
    assert np.allclose(last.model, last.models.mean(axis=0), rtol=1e-9, atol=1e-12)  # w^T: Σ_i γ_i stays 0
    paper = algo(parts, ds, budget=Budget(1.0, 1e-5), iterations=T, rng=0, variant="paper")
    assert paper.config["average"] == "last"
    with pytest.raises(ValueError, match="average must be one of"):
        algo(parts, ds, budget=Budget(1.0, 1e-5), iterations=T, rng=0, average="first")


@given(st.floats(0.2, 5.0), st.floats(1.05, 3.0))
@settings(max_examples=8, deadline=None)
def test_larger_budget_never_more_noise(eps, factor):
    parts, _ = _parts(n_agents=2, m=30, d=3)
    small, large = (train_dp_admm(parts, budget=Budget(e, 1e-5), iterations=8, rng=0) for e in (eps, eps * factor))
    assert large.config["noise_multiplier"] <= small.config["noise_multiplier"]
    assert large.config["sigma_first_last"][0] <= small.config["sigma_first_last"][0]


def test_invalid_inputs():
    parts, _ = _parts(n_agents=2)
    b = Budget(1.0, 1e-5)
    with pytest.raises(ValueError, match="graph"):
        train_dp_admm(parts, budget=b, graph="ring")
    with pytest.raises(ValueError, match="variant"):
        train_dp_admm(parts, budget=b, variant="weekly")
    with pytest.raises(ValueError, match="eq34"):
        train_dp_admm(parts, budget=b, regulariser="l1", step="eq34")
    with pytest.raises(TypeError, match="budget"):
        train_admm_pvp(parts, budget=1.0)
    with pytest.raises(ValueError, match="rho"):
        train_admm_pvp(parts, budget=b, rho=-1.0)
    for bad, message in ((0.0, r"flat_spread must be in \(0, inf\]"), (float("nan"), "flat_spread must be a number")):
        with pytest.raises(ValueError, match=message):
            train_dp_admm(parts, budget=b, iterations=2, flat_spread=bad)
    with pytest.raises(TypeError, match="flat_spread"):
        train_dp_admm(parts, budget=b, iterations=2, flat_spread="wide")
    for conflict in ({"lam": 0.01}, {"variant": "paper"}, {"regulariser": "l1"}):
        with pytest.raises(ValueError, match="flat_spread sets the corrected variant's default lam"):
            train_dp_admm(parts, budget=b, iterations=2, flat_spread=2.0, **conflict)


# ----------------------------------------------------------------------------- audit scenarios


def test_paper_scenario_one_iterate_holds():
    sc = make_scenario("dp-admm")
    assert sc.parameters["realised_shift"] >= 0.99 * sc.parameters["sensitivity"]  # worst case ≈ Lemma 1's Δ
    assert sc.true_epsilon <= sc.claimed_epsilon
    result = audit(sc.mechanism, sc.pairs, sc.claimed_epsilon, sc.claimed_delta, samples=300_000, rng=0)
    assert not result.violation
    assert 0.0 < result.epsilon_lower_bound <= sc.true_epsilon  # measured, and below the exact epsilon


def test_corrected_scenario_passes_the_audit():
    sc = make_scenario("dp-admm", corrected=True, iterations=5)
    result = audit(sc.mechanism, sc.pairs, sc.claimed_epsilon, sc.claimed_delta, samples=300_000, rng=0)
    assert not result.violation
    assert result.epsilon_lower_bound > 0.2  # the test has power: the claim is nearly tight


def test_scenario_runs_the_algorithms_step():
    # the scenario's iterate mean is DP-ADMM's linearised step at the public start point
    sc = make_scenario("dp-admm", statistic="release")
    out = sc.mechanism(sc.pairs[0][0], 20_000, np.random.default_rng(0))
    F = AgentObjectives.from_arrays(sc.pairs[0][0][None, :, :2], sc.pairs[0][0][None, :, 2], Logistic())
    start = np.array([[0.0, -3000.0]])
    mean = linearised_step(F.with_terms(kappa=0.1, center=start), start, np.array([1.0]))[0]
    assert np.allclose(out.mean(axis=0), mean, atol=5 * sc.parameters["sigma"] / math.sqrt(20_000))
    assert out.std(axis=0) == pytest.approx(sc.parameters["sigma"], rel=0.03)


@pytest.mark.parametrize("corrected", [False, True])
def test_admm_pvp_release_scenario_runs_the_solver_and_passes(corrected):
    """The scenario's minimisers are the real solver's (gradient ≤ 1e-10, checked independently with scipy), the
    realised shift is within the sensitivity, and an audit of the claim finds no violation."""
    sc = make_scenario("admm-pvp", corrected=corrected)
    first, _ = sc.pairs[0]
    rho, lam = sc.parameters["rho"], sc.parameters["lam"]
    X, y = first[:, :-1], first[:, -1]
    objective = lambda w: np.mean(np.logaddexp(0.0, -y * (X @ w))) + 0.5 * (lam + rho) * w @ w
    reference = scipy.optimize.minimize(objective, np.zeros(2), method="BFGS", options={"gtol": 1e-12}).x
    assert sc.parameters["realised_shift"] <= sc.parameters["sensitivity"]
    assert sc.true_epsilon <= sc.claimed_epsilon
    result = audit(sc.mechanism, sc.pairs, sc.claimed_epsilon, sc.claimed_delta, samples=400_000, rng=0)
    assert not result.violation
    np.testing.assert_allclose(pvp_scenario._minimiser(first, rho, lam), reference, atol=1e-6)
