"""DVP ADMM (Zhang & Zhu 2016): the paper's calibration, the noise of every variant, the ledger,
the rounds on the substrate, and the transcript audit."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import optimize, special

from dpkit.accounting.events import PureDPEvent
from dpkit.accounting.tightest import TightestAccountant
from dpkit.algorithms.dvp_admm import algorithm as D
from dpkit.algorithms.dvp_admm import noise as N
from dpkit.algorithms.substrate.budget import Budget
from dpkit.algorithms.substrate.data import make_synthetic
from dpkit.algorithms.dvp_admm.rounds import local_objectives, perturbed_dual_admm
from dpkit.algorithms.substrate.graphs import complete, from_adjacency, random_connected
from dpkit.algorithms.substrate.partition import partition
from dpkit.audit import audit
from dpkit.mechanisms.dual_noise import GaussianObjectiveNoise, L2LaplaceObjectiveNoise, dvp_calibration
from dpkit.mechanisms.ledger import PrivacyLedger

RHO = 10 ** -2.5


def path(n):
    return from_adjacency(np.eye(n, k=1) + np.eye(n, k=-1), "path")


def _parts(P=3, B=60, d=3, seed=0):
    return partition(make_synthetic(P * B, d, rng=seed), P, rng=seed)


# --------------------------------------------------------------------------- the paper's calibration


def test_paper_noise_reproduces_the_calibration_examples():
    """Zhang & Zhu 2016, Alg. 2 (proof's version): α = 0.3, B_p = Cᴿ = 1750, ρ = 10^-2.5, η = 0.5, N_p = 2
    gives ᾱ₀ = 0.2352 (hand computation: 2 ln(1 + 0.25/(ρ + 2))), so the proof's branches leave α − ᾱ₀ = 0.0648
    (Φ = 0) or α/2 = 0.15 (Φ > 0) for the noise; the printed
    algorithm uses ζ = α̂, which the ledger records as ᾱ + 2α̂."""
    jac0 = 2 * math.log1p(0.25 / (RHO + 2.0))
    assert jac0 == pytest.approx(0.2352, abs=1e-4)
    pure = N.pure_noise(Budget(0.3, 1e-5), 1, [1750], [2], loss_weight=1750.0, rho=RHO, eta=0.5)
    alpha = pure.calibration["alpha_per_iteration"]
    assert 0.3 * 0.99 <= alpha <= 0.3
    node = pure.calibration["nodes"][0]
    # the corrected variant takes the branch that leaves more noise budget: max(α − ᾱ₀, α/2), halved
    assert node["zeta"] == pytest.approx(max(alpha - jac0, alpha / 2) / 2, rel=1e-9)
    paper = N.paper_noise(0.3, [1750], [2], loss_weight=1750.0, rho=RHO, eta=0.5)
    lit = paper.calibration["nodes"][0]
    assert lit["zeta"] == pytest.approx(0.3 - jac0, rel=1e-9)  # printed ζ = α̂ (B_p = Cᴿ: the ratio typo is moot)
    assert paper.mechanisms[0].event.epsilon == pytest.approx(jac0 + 2 * (0.3 - jac0), rel=1e-9)
    assert paper.mechanisms[0].event.epsilon > 0.3
    assert paper.mechanisms[0].sensitivity == pytest.approx(2.0)  # 2Cᴿ/B_p in the b-space


def test_ridge_branch_example():
    """α = 0.1, η = 0.01, N_p = 1: Φ = c₁/(e^{α/4} − 1) − ρ − 2η = 9.852 and ᾱ(Φ) = α/2."""
    noise = N.pure_noise(Budget(0.1, 1e-5), 1, [1750], [1], loss_weight=1750.0, rho=RHO, eta=0.01)
    alpha = noise.calibration["alpha_per_iteration"]
    phi = noise.extra_ridge[0]
    assert phi == pytest.approx(0.25 / math.expm1(alpha / 4) - RHO - 0.02, rel=1e-9)
    assert phi == pytest.approx(9.852, rel=2e-3)
    assert 2 * math.log1p(0.25 / (RHO + 0.02 + phi)) == pytest.approx(alpha / 2, rel=1e-9)


def test_literal_step_exceeds_alpha_whitebox():
    """Zhang & Zhu 2016, Appendix: exact per-step log-density ratio at a worst-case history (d = 2,
    B = Cᴿ = 20, ρ = 0.1, η = 0.5, N_p = 1, α = 1): ≤ α with ζ = α̂/2 (0.590), 1.181 > α with the
    printed ζ = α̂. Computed from the calibration with an independent implementation of eq. (20)."""
    B, C, rho, eta, Np, alpha = 20, 20.0, 0.1, 0.5, 1, 1.0
    rng = np.random.default_rng(0)
    X = rng.uniform(-0.5, 0.5, (B, 2))
    y = np.where(rng.uniform(size=B) < 0.5, 1.0, -1.0)
    X[0], y[0] = (0.99995, 0.01), 1.0
    X2 = X.copy()
    X2[0] = (-0.99995, 0.01)
    f = np.array([0.0, -3000.0])

    def parts(Xd, cal, lam):
        z = y * (Xd @ f)
        g = -(y * special.expit(-z))[:, None] * Xd
        phi = cal.extra_regularization
        eps = -g.sum(0) - (B / C) * ((rho + phi) * f + 2 * lam + 2 * eta * Np * f)
        s = special.expit(z) * special.expit(-z)
        H = (Xd.T * s) @ Xd + (B / C) * (rho + phi + 2 * eta * Np) * np.eye(2)
        return eps, np.linalg.slogdet(H)[1]

    for literal, expected in [(False, 0.590), (True, 1.181)]:
        cal = dvp_calibration(alpha, n_samples=B, loss_weight=C, regularization=rho, penalty=eta, degree=Np,
                              literal=literal)
        base, _ = parts(X, cal, np.zeros(2))
        lam = (C / (2 * B)) * (base + 1e4 * np.array([1.0, 0.0]))  # ε_D large and parallel to Δg
        e1, ld1 = parts(X, cal, lam)
        e2, ld2 = parts(X2, cal, lam)
        loss = cal.zeta * (np.linalg.norm(e2) - np.linalg.norm(e1)) + ld1 - ld2
        assert loss == pytest.approx(expected, abs=3e-3)
        assert bool(loss > alpha) is literal
        assert (cal.epsilon >= loss - 1e-9)  # the recorded event bounds the worst case


# --------------------------------------------------------------------------- the Gaussian variant's constants


def test_jacobian_bound_holds_for_a_replaced_record():
    """ξ = log(1 + c₃w/μ) bounds |log det H_D − log det H_D′| for random records and points (property)."""
    rng = np.random.default_rng(5)
    w, mu, d = 0.7, 0.3, 4
    xi = float(N.jacobian_bound(np.array([w]), np.array([mu]))[0])
    X = rng.normal(size=(30, d))
    X /= np.maximum(1, np.linalg.norm(X, axis=1, keepdims=True))
    worst = 0.0
    for _ in range(300):
        theta = rng.normal(scale=3, size=d)
        x_new = rng.normal(size=d)
        x_new /= np.linalg.norm(x_new)
        Xn = X.copy()
        Xn[0] = x_new
        logdets = []
        for data in (X, Xn):
            s = special.expit(data @ theta) * special.expit(-data @ theta)
            logdets.append(np.linalg.slogdet(w * (data.T * s) @ data + mu * np.eye(d))[1])
        worst = max(worst, abs(logdets[0] - logdets[1]))
    assert worst <= xi
    assert worst >= 0.2 * xi  # not vacuous


def test_gaussian_noise_constants():
    """Δ_p = 2Cᴿ/B_p, ξ_p = log(1 + (Cᴿ/B_p)/(4(ρ + 2η|N_p|))), σ_p = zΔ_p, one z for all nodes."""
    sizes, degrees, C, rho, eta = np.array([100, 80]), np.array([1, 3]), 50.0, 0.1, 2.0
    w = C / sizes
    noise = N.gaussian_noise(Budget(1.0, 1e-5), 5, w, rho + 2 * eta * degrees)
    for p, mech in enumerate(noise.mechanisms):
        assert mech.sensitivity == pytest.approx(2 * w[p], rel=1e-15)
        assert mech.jacobian == pytest.approx(math.log1p(w[p] / (4 * (rho + 2 * eta * degrees[p]))), rel=1e-12)
        assert mech.sigma / mech.sensitivity == pytest.approx(noise.calibration["noise_multiplier"], rel=1e-12)
    with pytest.raises(ValueError, match="Jacobian"):
        N.gaussian_noise(Budget(0.1, 1e-5), 50, np.array([1.0]), np.array([0.1]))


@settings(max_examples=8, deadline=None)
@given(st.floats(0.2, 5.0), st.floats(1.05, 3.0), st.integers(1, 30))
def test_more_budget_never_more_noise(eps, factor, T):
    w, mu = np.array([0.5]), np.array([20.0])
    small = N.gaussian_noise(Budget(eps, 1e-5), T, w, mu).mechanisms[0]
    large = N.gaussian_noise(Budget(eps * factor, 1e-5), T, w, mu).mechanisms[0]
    assert large.sigma <= small.sigma
    pure_small = N.pure_noise(Budget(eps, 1e-5), T, [200], [2], loss_weight=100.0, rho=0.1, eta=0.5)
    pure_large = N.pure_noise(Budget(eps * factor, 1e-5), T, [200], [2], loss_weight=100.0, rho=0.1, eta=0.5)
    assert pure_large.mechanisms[0].zeta >= pure_small.mechanisms[0].zeta  # density ∝ exp(−ζ‖b‖)


# --------------------------------------------------------------------------- training: ledger, calibration, outputs


@pytest.mark.parametrize("variant", ["corrected", "corrected-pure", "paper"])
def test_ledger_equals_the_draws(variant, monkeypatch):
    """Instrument the mechanisms' ``sample``: N draws per round, in node order, with each node's scale;
    the ledger holds exactly one event per node per iteration, the event of the mechanism that drew."""
    draws = []
    for cls, scale in [(GaussianObjectiveNoise, "sigma"), (L2LaplaceObjectiveNoise, "zeta")]:
        original = cls.sample

        def sample(self, value, size=None, rng=None, original=original, scale=scale):
            draws.append((getattr(self, scale), self.event))
            return original(self, value, size=size, rng=rng)

        monkeypatch.setattr(cls, "sample", sample)
    parts = _parts(P=3, B=200)
    graph = path(3)
    T = 4
    res = D.train_dvp_admm(parts, graph, budget=Budget(1.0, 1e-5), variant=variant, iterations=T, rng=0,
                           **({} if variant != "corrected" else {"eta": 20.0}))
    assert len(draws) == T * 3
    for p in range(3):
        mine = draws[p::3]
        assert len({scale for scale, _ in mine}) == 1
        assert res.ledger.entries(p) == ((mine[0][1], T),)
    assert res.ledger.draws(0) == T


@pytest.mark.parametrize("variant", ["corrected", "corrected-pure"])
def test_calibrated_on_the_whole_run(variant):
    parts = _parts(P=3, B=300)
    res = D.train_dvp_admm(parts, random_connected(3, 3, 0), budget=Budget(2.0, 1e-5), variant=variant, iterations=6,
                           rng=0)
    assert 0.99 * 2.0 <= res.guarantee.epsilon <= 2.0
    # an independent accountant query on the per-node event repeated T times gives the same ε
    event = res.ledger.agent_event(0)
    again = TightestAccountant("replace-one").compose(event).get_epsilon(1e-5).epsilon
    assert again <= 2.0
    assert res.paper_claim is None


def test_paper_variant_claim_is_invalid_and_the_ledger_composes():
    parts = _parts(P=3, B=300)
    res = D.train_dvp_admm(parts, path(3), budget=Budget(1.0, 1e-5), variant="paper", iterations=10, rng=0)
    assert res.paper_claim.epsilon == 1.0 and res.paper_claim.valid is False
    per_step = res.ledger.entries(0)[0][0]
    assert isinstance(per_step, PureDPEvent) and per_step.epsilon > 1.0  # printed ζ = α̂ (F5)
    assert res.guarantee.epsilon > 2.0  # ten iterations compose
    assert any("exact minimiser" in n for n in res.notes)


@pytest.mark.parametrize("average", [None, "tail", "last"])
def test_outputs_are_the_published_minimisers(average):
    """The returned models are post-processing of the released values (the perturbed minimisers, Zhang & Zhu
    eq. (15)): on 3 nodes by default each node's broadcasts of rounds t >= T/2 averaged, with "last" its last
    broadcast, and the model is their mean; re-running the rounds with the same noise reproduces them from the
    transcript."""
    parts = _parts(P=3, B=200)
    graph = path(3)
    res = D.train_dvp_admm(parts, graph, budget=Budget(3.0, 1e-5), iterations=5, rng=7, average=average)
    noise = N.gaussian_noise(Budget(3.0, 1e-5), 5, res.config["loss_weight"] / np.array([p.n for p in parts]),
                             res.config["rho"] + 2 * res.config["eta"] * graph.degrees)
    F = local_objectives(parts, loss_weight=res.config["loss_weight"], regularisation=res.config["rho"])
    seen = []
    perturbed_dual_admm(F, graph, eta=res.config["eta"], iterations=5, mechanisms=noise.mechanisms,
                        rng=np.random.default_rng(7), ledger=PrivacyLedger(3),
                        on_round=lambda t, published, duals: seen.append(published.copy()))
    expected = seen[-1] if average == "last" else np.mean(seen[2:], axis=0)  # rounds 2, 3, 4 of T = 5
    assert res.config["average"] == (average or "tail")
    assert not np.allclose(seen[-1], np.mean(seen[2:], axis=0), atol=1e-6)  # the two outputs differ here
    np.testing.assert_allclose(res.models, expected, atol=1e-8)
    np.testing.assert_allclose(res.model, expected.mean(axis=0), atol=1e-8)


def test_default_average_rule():
    """The tail mean on graphs of at most TAIL_MAX_NODES nodes (corrected variants), the last broadcast otherwise
    and always in the paper variant."""
    assert [D.default_average("corrected", n) for n in (2, 3, 4, 10)] == ["tail", "tail", "last", "last"]
    assert D.default_average("corrected-pure", 2) == "tail" and D.default_average("paper", 2) == "last"
    with pytest.raises(ValueError, match="nodes"):
        D.default_average("corrected", 0)


def test_admm_converges_to_the_centralised_optimum():
    """Zhang & Zhu 2016, eq. (2): with negligible noise the nodes reach argmin Σ_p (Cᴿ/B_p)Σ L + P·ρ·½‖f‖²."""
    parts = _parts(P=3, B=20, d=2)
    C, rho, eta = 20.0, 0.1, 0.5
    F = local_objectives(parts, loss_weight=C, regularisation=rho)
    quiet = [GaussianObjectiveNoise(sigma=1e-12, sensitivity=1.0)] * 3
    state = perturbed_dual_admm(F, path(3), eta=eta, iterations=300, mechanisms=quiet, rng=np.random.default_rng(0),
                                ledger=PrivacyLedger(3))
    X = np.concatenate([p.X for p in parts])
    y = np.concatenate([p.y for p in parts])
    obj = lambda w: (C / 20) * np.sum(np.logaddexp(0, -y * (X @ w))) + 3 * rho * 0.5 * w @ w  # noqa: E731
    w_star = optimize.minimize(obj, np.zeros(2), method="BFGS", options={"gtol": 1e-12}).x
    assert np.max(np.abs(state.published - w_star)) < 1e-4
    assert np.max(np.abs(state.duals.sum(axis=0))) < 1e-10  # Σ_p λ_p = 0


def test_corrected_defaults_rule():
    d = D.corrected_defaults(1.0, 1750.0, 3600, 3)
    # η = max(Cᴿ/1000, the Jacobian floor), and on Adult's 3,600-row nodes of degree 3 the floor binds
    assert d["iterations"] == 10 and d["eta"] > 1.75
    xi = math.log1p(0.25 * (1750.0 / 3600) / (d["rho"] + 2 * 3 * d["eta"]))
    assert d["iterations"] * xi <= 1.0 / 16 + 1e-12
    assert D.corrected_defaults(0.1, 1750.0, 3600, 3)["iterations"] == 5
    assert D.corrected_defaults(9.0, 1750.0, 3600, 3)["iterations"] == 20
    # fewer nodes reach consensus in fewer rounds: T = ⌈√(10·n·ε)⌉, non-decreasing in n and ε, ⌈10√ε⌉ at n = 10
    rounds = [[D.corrected_defaults(eps, 1750.0, 3600, 1, nodes=n)["iterations"] for n in range(2, 40)]
              for eps in (0.5, 1.0, 3.0)]
    assert all(np.all(np.diff(row) >= 0) for row in rounds) and np.all(np.diff(rounds, axis=0) >= 0)
    assert [row[0] for row in rounds] == [5, 5, 8] and [row[8] for row in rounds] == [8, 10, 18]
    small = D.corrected_defaults(1.0, 100.0, 100, 1)  # the Jacobian floor: T·ξ ≤ ε/16
    xi = math.log1p(0.25 * 1.0 / (small["rho"] + 2 * small["eta"]))
    assert small["iterations"] * xi <= 1.0 / 16 + 1e-12
    # and it binds: a tenth less η would spend more than ε/16 on the Jacobian terms
    xi_less = math.log1p(0.25 * 1.0 / (small["rho"] + 2 * 0.9 * small["eta"]))
    assert small["iterations"] * xi_less > 1.0 / 16


def test_spec():
    assert D.SPEC.name == "dvp-admm" and D.SPEC.variants[0] == "corrected" and D.SPEC.topology == "graph"
    res = D.SPEC.runner(_parts(P=3, B=200), None, complete(3), budget=Budget(1.0, 1e-5), iterations=3,
                        variant="corrected", rng=np.random.default_rng(0), progress=None)
    assert res.algorithm == "dvp-admm" and res.guarantee.epsilon <= 1.0


# --------------------------------------------------------------------------- the transcript audit


def test_paper_transcript_is_not_alpha_dp():
    """Zhang & Zhu 2016, §2.2 ("independent of the number of iterations"): an α-DP transcript has
    KL ≤ α tanh(α/2) (0.462 for α = 1); the mean of the exact transcript log-likelihood ratio over
    20 iterations of the real rounds exceeds it (one-sided 99.9 % bound)."""
    from dpkit.algorithms.audit_instances import make_scenario

    sc = make_scenario("dvp-admm", iterations=20)
    assert sc.expect_violation and sc.claimed_epsilon == 1.0
    llr = sc.mechanism(sc.pairs[0][0], 80, np.random.default_rng(0))
    lower = llr.mean() - 3.1 * llr.std(ddof=1) / math.sqrt(llr.size)
    assert lower > 1.0 * math.tanh(0.5)


def test_corrected_transcript_passes_the_audit():
    from dpkit.algorithms.audit_instances import make_scenario

    sc = make_scenario("dvp-admm", corrected=True, iterations=3)
    assert not sc.expect_violation and sc.claimed_epsilon <= 1.0
    result = audit(sc.mechanism, sc.pairs, sc.claimed_epsilon, sc.claimed_delta, samples=20_000, rng=0,
                   float_bits=False)  # objective perturbation: its proof (and claim) is in exact arithmetic
    assert not result.violation
    assert 0.0 < result.epsilon_lower_bound  # the audit measured the release (a do-nothing audit reports 0)
