"""Audits of the papers' privacy claims at reduced size, fixed seeds: the verdicts the papers' mistakes predict.

The audit calls live in ``dpkit.commands.audit.algorithm_audits`` (the code ``dpkit audit --algorithm`` and
``experiments/seed_audits.py`` run); the scenarios in ``dpkit.algorithms.audit_instances``. Reference values are independent closed forms evaluated with
mpmath: the Gaussian privacy profile δ(ε) = Φ(μ/2 − ε/μ) − e^ε Φ(−μ/2 − ε/μ) of two Gaussians
μ standard deviations apart, and the optimal ρ-zCDP conversion.
"""

from __future__ import annotations

import dataclasses
import json
import math
import pathlib
import re
import subprocess
import sys

import mpmath
import numpy as np
import pytest

from dpkit.algorithms.audit_instances import SCENARIOS, AuditScenario, make_scenario
from dpkit.commands.audit import algorithm_audits as A
from dpkit.audit import audit

ROOT = pathlib.Path(__file__).resolve().parents[2]
PAPERS = {
    "pp-admm": "Ding et al. 2020", "ipp-admm": "Ding et al. 2020", "dp-admm": "Huang et al. 2019",
    "admm-pvp": "Huang et al. 2019", "hetero-admm": "Wang et al. 2020", "a-ddp": "Cheng et al. 2020", "dvp-admm": "Zhang & Zhu 2016",
    "dp-logreg": "dpkit",
}




def _gaussian_delta_mp(mu: float, eps: float) -> mpmath.mpf:
    """δ(ε) of N(0, 1) vs N(μ, 1), in 50-digit arithmetic."""
    mpmath.mp.dps = 50
    mu, eps = mpmath.mpf(mu), mpmath.mpf(eps)
    return mpmath.ncdf(mu / 2 - eps / mu) - mpmath.exp(eps) * mpmath.ncdf(-mu / 2 - eps / mu)


def _gaussian_epsilon_mp(mu: float, delta: float) -> float:
    """The ε at which the Gaussian profile of μ equals δ (mpmath root)."""
    mpmath.mp.dps = 50
    return float(mpmath.findroot(lambda e: _gaussian_delta_mp(mu, e) - delta, (0.0, 50.0), solver="bisect"))


def _zcdp_epsilon_mp(rho: float, delta: float) -> float:
    """Optimal ρ-zCDP → (ε, δ) (Canonne, Kamath & Steinke 2020, Prop. 12):
    inf over α > 1 of ρα + log(1/δ)/(α−1) + log(1 − 1/α) − log(α)/(α−1)."""
    mpmath.mp.dps = 30

    def f(a):
        return rho * a + (mpmath.log(1 / mpmath.mpf(delta)) - mpmath.log(a)) / (a - 1) + mpmath.log(1 - 1 / a)

    a0 = 1 + math.sqrt(math.log(1 / delta) / rho)
    return float(f(mpmath.findroot(lambda a: mpmath.diff(f, a), a0)))


# --------------------------------------------------------------------------- the papers' mistakes: violations


def test_pp_admm_adversarial_minimiser_is_a_violation():
    r = A.audit_algorithm("pp-admm", samples=200_000, rng=0)
    assert r.violation and r.as_predicted and r.paper == "Ding et al. 2020"
    assert r.claimed_epsilon < r.epsilon_lower_bound <= r.true_epsilon


def test_a_ddp_sensitivity_c_is_a_violation():
    r = A.audit_algorithm("a-ddp", samples=400_000, rng=0)
    assert r.violation and r.as_predicted and r.paper == "Cheng et al. 2020"
    assert 1.0 < r.epsilon_lower_bound <= r.true_epsilon


def test_hetero_admm_label_only_claim_is_a_violation_at_record_level_and_the_corrected_claim_is_not():
    r = A.audit_algorithm("hetero-admm", samples=10_000, rng=0)
    assert r.violation and r.as_predicted and r.paper == "Wang et al. 2020"
    assert r.epsilon_lower_bound > 3.0 * r.claimed_epsilon  # decaying noise: far beyond the label-only epsilon
    # the same audit at the same budget on the corrected variant (noise calibrated for record-level privacy)
    corrected = A.audit_algorithm("hetero-admm", corrected=True, samples=10_000, rng=0)
    assert not corrected.violation and corrected.as_predicted
    assert corrected.epsilon_lower_bound <= corrected.claimed_epsilon


def test_dvp_admm_transcript_exceeds_per_iteration_alpha():
    r = A.audit_algorithm("dvp-admm", samples=2_000, rng=0, iterations=10)
    assert r.violation and r.as_predicted and r.paper == "Zhang & Zhu 2016"
    assert r.claimed_epsilon == 1.0 < r.epsilon_lower_bound <= 10 * 1.0  # basic composition bounds the truth


# --------------------------------------------------------------------------- valid claims: no violation


@pytest.mark.parametrize("corrected", [False, True])
def test_ipp_admm_svt_within_eps1_plus_eps2(corrected):
    r = A.audit_algorithm("ipp-admm", corrected=corrected, samples=200_000, rng=0)
    assert not r.violation and r.as_predicted
    assert r.epsilon_lower_bound <= r.claimed_epsilon
    assert r.parameters["epsilon1"] + r.parameters["epsilon2"] == pytest.approx(r.claimed_epsilon)
    # positive control: the same gate with a tenth of its query noise is refuted at the same budget
    sc = make_scenario("ipp-admm", corrected=corrected)
    broken = dataclasses.replace(sc.mechanism, svt=dataclasses.replace(sc.mechanism.svt,
                                                                       epsilon2=10 * sc.mechanism.svt.epsilon2))
    assert audit(broken, sc.pairs, sc.claimed_epsilon, sc.claimed_delta, samples=200_000, rng=0).violation


def test_dp_admm_theorem1_release_holds():
    r = A.audit_algorithm("dp-admm", samples=400_000, rng=0)
    assert not r.violation and r.as_predicted and r.paper == "Huang et al. 2019"
    assert 0.0 < r.epsilon_lower_bound <= r.true_epsilon < r.claimed_epsilon


def test_dvp_admm_single_step_respects_alpha():
    # Zhang & Zhu 2016, Thm 1: one step is alpha-DP; the printed calibration's zeta makes it at most
    # jacobian + 2 zeta = 1.59-DP (eqs. 21-22), so the claim alpha = 1 is not refuted, but the audit measures a
    # positive epsilon, and the same audit at the same budget refutes a claim below what it measured
    r = A.audit_algorithm("dvp-admm", samples=2_000, rng=0, iterations=1)
    assert not r.violation and r.as_predicted
    assert 0.0 < r.epsilon_lower_bound <= max(node["epsilon"] for node in r.parameters["noise"]["nodes"])
    sc = make_scenario("dvp-admm", iterations=1)
    low = audit(sc.mechanism, sc.pairs, r.epsilon_lower_bound / 2, sc.claimed_delta, samples=2_000, rng=0)
    assert low.violation


@pytest.mark.parametrize("algorithm", ["pp-admm", "a-ddp", "dp-logreg"])
def test_corrected_gaussian_releases_are_not_contradicted(algorithm):
    r = A.audit_algorithm(algorithm, corrected=True, samples=400_000, rng=0)
    assert not r.violation and r.as_predicted and r.variant == "corrected"
    assert 0.0 < r.epsilon_lower_bound <= r.true_epsilon <= r.claimed_epsilon * (1 + 1e-9)


def test_corrected_dp_admm_total_is_not_contradicted():
    r = A.audit_algorithm("dp-admm", corrected=True, samples=200_000, rng=0, iterations=5)
    assert not r.violation and r.as_predicted
    assert 0.0 < r.epsilon_lower_bound <= r.claimed_epsilon


def test_corrected_dvp_admm_worst_case_round_is_not_contradicted():
    # the saturated worst-case instance: the audit's bound is positive, below the instance's exact epsilon
    r = A.audit_algorithm("dvp-admm", corrected=True, samples=100_000, rng=0)
    assert not r.violation and r.as_predicted and r.paper == "Zhang & Zhu 2016"
    assert 0.0 < r.epsilon_lower_bound <= r.true_epsilon <= r.claimed_epsilon <= 1.0


@pytest.mark.parametrize("corrected", [False, True])
def test_admm_pvp_worst_case_release_is_not_contradicted(corrected):
    r = A.audit_algorithm("admm-pvp", corrected=corrected, samples=400_000, rng=0)
    assert not r.violation and r.as_predicted and r.paper == "Huang et al. 2019"
    assert 0.0 < r.epsilon_lower_bound <= r.true_epsilon <= r.claimed_epsilon


# --------------------------------------------------------------------------- the scenarios' analytic numbers


def test_a_ddp_true_epsilon_matches_mpmath():
    sc = make_scenario("a-ddp")
    sigma, clip = sc.parameters["sigma"], sc.parameters["clip"]
    # sigma is the analytic-Gaussian sigma of (1, 1e-5) at sensitivity C: delta(1) = 1e-5 at mu = C / sigma
    assert float(_gaussian_delta_mp(clip / sigma, 1.0)) == pytest.approx(1e-5, rel=1e-6)
    assert sigma / clip == pytest.approx(3.7306, abs=1e-4)
    # the true sensitivity is 2C
    assert sc.true_epsilon == pytest.approx(_gaussian_epsilon_mp(2 * clip / sigma, 1e-5), rel=1e-6)
    assert sc.true_epsilon == pytest.approx(2.155, abs=1e-3)


def test_a_ddp_corrected_sigma_meets_the_budget_at_2c():
    sc = make_scenario("a-ddp", corrected=True)
    mu = 2 * sc.parameters["clip"] / sc.parameters["sigma"]
    assert float(_gaussian_delta_mp(mu, 1.0)) <= 1e-5 * (1 + 1e-6)


def test_pp_admm_paper_step_is_four_rho_zcdp():
    rho = 0.125
    sc = make_scenario("pp-admm", rho=rho)
    p = sc.parameters
    assert p["shift"] == pytest.approx(2 * p["beta"] / p["strong_convexity"], rel=1e-12)
    # exact Renyi divergence of two Gaussians: shift^2 alpha / (2 sigma^2) = 4 rho alpha
    assert p["shift"] ** 2 / (2 * p["sigma"] ** 2) == pytest.approx(4 * rho, rel=1e-12)
    assert sc.claimed_epsilon == pytest.approx(_zcdp_epsilon_mp(rho, 1e-5), rel=1e-6)
    assert sc.true_epsilon == pytest.approx(_gaussian_epsilon_mp(p["shift"] / p["sigma"], 1e-5), rel=1e-6)
    assert sc.true_epsilon > sc.claimed_epsilon


def test_dp_admm_true_epsilon_and_worst_case_shift():
    sc = make_scenario("dp-admm")
    p = sc.parameters
    assert 0.999 * p["sensitivity"] <= p["realised_shift"] <= p["sensitivity"]
    # Lemma 1 of Huang et al. 2019: Delta = 2 / (m (rho + 1/eta))
    assert p["sensitivity"] == pytest.approx(2 / (p["records"] * (p["rho"] + 1 / p["eta"])), rel=1e-12)
    # Theorem 1: z = sqrt(2 ln(1.25/delta)) / eps
    assert p["noise_multiplier"] == pytest.approx(math.sqrt(2 * math.log(1.25e5)), rel=1e-12)
    assert sc.true_epsilon == pytest.approx(_gaussian_epsilon_mp(p["realised_shift"] / p["sigma"], 1e-5), rel=1e-6)
    assert sc.true_epsilon < sc.claimed_epsilon


def test_dp_logreg_true_epsilon_is_the_gdp_composition():
    T = 4
    sc = make_scenario("dp-logreg", corrected=True, iterations=T)
    p = sc.parameters
    mu = math.sqrt(T) * p["realised_shift"] / p["sigma"]
    assert sc.true_epsilon == pytest.approx(_gaussian_epsilon_mp(mu, 1e-5), rel=1e-6)
    assert sc.true_epsilon <= sc.claimed_epsilon <= 1.0


def test_dp_admm_llr_is_the_gaussian_privacy_loss():
    # one step: under D the log-likelihood ratio is N(mu^2/2, mu^2), mu = shift/sigma (exact for Gaussians)
    from scipy import stats

    sc = make_scenario("dp-admm")
    mu = sc.parameters["realised_shift"] / sc.parameters["sigma"]
    llr = sc.mechanism(sc.pairs[0][0], 20_000, np.random.default_rng(11))
    assert stats.kstest(llr, stats.norm(mu**2 / 2, mu).cdf).pvalue > 1e-3


def test_dvp_single_step_log_likelihood_ratio_is_bounded_by_alpha():
    # Theorem 1 of Zhang & Zhu 2016 (with the corrected zeta): |L_1| <= alpha for every output, in both worlds
    sc = make_scenario("dvp-admm", iterations=1)
    for db in sc.pairs[0]:
        llr = sc.mechanism(db, 300, np.random.default_rng(3))
        assert np.max(np.abs(llr)) <= 1.0 + 1e-9
        assert np.max(np.abs(llr)) > 0.05  # and the statistic does move


def test_corrected_dvp_llr_is_the_gaussian_loss_at_full_sensitivity():
    # the differing record is saturated (margin about -hM): node 0's gradient changes by (2 sqrt(1 - h^2), 0) = the
    # full sensitivity 2w up to exp(-hM), and the Jacobian term vanishes, so under D the transcript log-likelihood
    # ratio is N(mu^2/2, mu^2) and under D' N(-mu^2/2, mu^2), mu = sqrt(T (1 - h^2)) / z (exact for Gaussians)
    from scipy import stats

    for T in (1, 3):
        sc = make_scenario("dvp-admm", corrected=True, iterations=T)
        p = sc.parameters
        mu = math.sqrt(T * (1.0 - p["tilt"] ** 2)) / p["noise"]["noise_multiplier"]
        for sign, db, seed in ((1.0, sc.pairs[0][0], 5), (-1.0, sc.pairs[0][1], 6)):
            llr = sc.mechanism(db, 5_000, np.random.default_rng(seed))
            assert stats.kstest(llr, stats.norm(sign * mu**2 / 2, mu).cdf).pvalue > 1e-3
        assert sc.true_epsilon == pytest.approx(_gaussian_epsilon_mp(mu, sc.claimed_delta), rel=1e-6)
    # one round: the accountant's slack (its Renyi bound, the conversion) leaves the instance within 15 % of the claim
    sc = make_scenario("dvp-admm", corrected=True)
    assert 0.85 * sc.claimed_epsilon <= sc.true_epsilon <= sc.claimed_epsilon


def _dvp_reference_runs(sc, database, runs, seed):
    """``runs`` DVP runs one after another on a real two-node Graph, sharing one generator, without the scenario's
    batching: the algorithm's own entry point from f(0) = 0 (paper instance), its loop, noise and objectives from
    the public start state otherwise."""
    from dpkit.algorithms.substrate.admm_loops import decentralised_loop
    from dpkit.algorithms.substrate.data import Dataset
    from dpkit.algorithms.dvp_admm.rounds import (
        SOLVER_TOLERANCE, dual_perturbation, local_objectives, perturbed_dual_admm,
    )
    from dpkit.algorithms.substrate.graphs import complete
    from dpkit.algorithms.dvp_admm.audit_instances import _noise
    from dpkit.mechanisms.ledger import PrivacyLedger

    p, B, mech = sc.parameters, database.shape[0], sc.mechanism
    noise = _noise(p["variant"], p["epsilon"], mech.delta, p["iterations"], B, p["rho"], p["eta"])
    F = local_objectives([Dataset(database[:, :-1], database[:, -1]), Dataset(mech.other[:, :-1], mech.other[:, -1])],
                         loss_weight=float(B), regularisation=p["rho"] + noise.extra_ridge)
    gen, out = np.random.default_rng(seed), []
    for _ in range(runs):
        rounds = []

        def record(t, published, duals, rounds=rounds):
            rounds.append(published.ravel().copy())

        if p["margin"] == 0.0:
            perturbed_dual_admm(F, complete(2), eta=p["eta"], iterations=p["iterations"], mechanisms=noise.mechanisms,
                                rng=gen, ledger=PrivacyLedger(2), on_round=record)
        else:
            decentralised_loop(F, complete(2), eta=p["eta"], iterations=p["iterations"], beta=SOLVER_TOLERANCE,
                               theta0=np.tile([0.0, -p["margin"]], (2, 1)),
                               perturb=dual_perturbation(noise.mechanisms, 2, gen, PrivacyLedger(2)), on_round=record)
        out.append(np.concatenate(rounds))
    return np.array(out)


@pytest.mark.parametrize("corrected, iterations, runs", [(False, 4, 1), (True, 2, 1), (True, 1, 3)])
def test_dvp_scenario_runs_the_algorithms_rounds(corrected, iterations, runs):
    # the batched scenario publishes exactly what the algorithm's loop publishes on a real two-node graph (runs
    # after one another; with one round the copies draw their noise in the same order)
    sc = make_scenario("dvp-admm", corrected=corrected, iterations=iterations, statistic="transcript")
    db = sc.pairs[0][0]
    batched = sc.mechanism(db, runs, np.random.default_rng(7))
    np.testing.assert_allclose(batched, _dvp_reference_runs(sc, db, runs, 7), rtol=1e-9, atol=1e-9)


def test_admm_pvp_worst_case_pair_moves_the_minimiser_by_the_sensitivity():
    # saturated logistic terms (margins about -hM rho/mu): the minimisers differ by 2 sqrt(1 - h^2)/(m mu) in the first
    # coordinate, Delta_PVP = 2/(m mu) up to sqrt(1 - h^2); the true epsilon is the analytic Gaussian one at that shift
    for corrected in (False, True):
        sc = make_scenario("admm-pvp", corrected=corrected)
        p = sc.parameters
        mu = p["lam"] + p["rho"]
        closed_form = 2.0 * math.sqrt(1.0 - p["tilt"] ** 2) / (p["records"] * mu)
        assert p["realised_shift"] == pytest.approx(closed_form, rel=1e-8)
        assert p["realised_shift"] <= p["sensitivity"]
        assert sc.true_epsilon == pytest.approx(_gaussian_epsilon_mp(p["realised_shift"] / p["sigma"], 1e-5), rel=1e-6)
    assert 0.99 * sc.claimed_epsilon <= sc.true_epsilon <= sc.claimed_epsilon  # corrected: tight on this instance


# --------------------------------------------------------------------------- the registry and its metadata


@pytest.mark.parametrize("algorithm", sorted(SCENARIOS))
def test_scenarios_cite_their_paper_and_carry_a_sample_budget(algorithm):
    variants = [True] if algorithm == "dp-logreg" else [False, True]
    for corrected in variants:
        sc = make_scenario(algorithm, corrected=corrected)
        assert isinstance(sc, AuditScenario) and sc.corrected is corrected
        assert sc.paper == PAPERS[algorithm]
        assert not re.search(r"seed\s*0\d\d", sc.name + sc.claim + sc.paper)
        assert isinstance(sc.samples, int) and 1_000 <= sc.samples <= 2_000_000
        summary = sc.to_dict()
        assert summary["paper"] == sc.paper and summary["samples"] == sc.samples and "seed" not in summary


def test_predicted_verdicts_of_the_papers_claims():
    expected = {"pp-admm": True, "ipp-admm": False, "dp-admm": False, "hetero-admm": True, "a-ddp": True,
                "dvp-admm": True}
    assert {a: make_scenario(a).expect_violation for a in expected} == expected
    assert make_scenario("dvp-admm", iterations=1).expect_violation is False
    assert not any(make_scenario(a, corrected=True).expect_violation for a in SCENARIOS)


def test_transcript_budgets_shrink_with_the_rounds():
    # DVP costs about 70 microseconds per round per sample (batched runs): the default budget keeps an audit under
    # about 20 s (the audit needs at least 2,000 samples per pair, so long transcripts take longer)
    for corrected in (False, True):
        for T in (1, 10, 20, 25):
            assert make_scenario("dvp-admm", corrected=corrected, iterations=T).samples * T <= 250_000
        assert make_scenario("dvp-admm", corrected=corrected, iterations=200).samples == 2_000
    assert make_scenario("hetero-admm", iterations=100).samples < make_scenario("hetero-admm").samples


def test_make_scenario_validates_name_and_arguments():
    with pytest.raises(ValueError, match="algorithm must be one of"):
        make_scenario("seed002-sensitivity")
    with pytest.raises(ValueError, match="epsilon must be in"):
        make_scenario("dp-admm", epsilon=2.0)
    with pytest.raises(ValueError, match="c0"):
        make_scenario("dp-admm", iterations=3)
    with pytest.raises(ValueError, match="statistic"):
        make_scenario("dvp-admm", statistic="x")
    with pytest.raises(ValueError, match="no paper claim"):
        make_scenario("dp-logreg", corrected=False)


# --------------------------------------------------------------------------- the experiment script and its page


def test_plan_covers_every_algorithm_in_both_variants():
    covered = {(p.algorithm, p.corrected) for p in A.PLAN}
    assert covered == {(a, c) for a in SCENARIOS for c in (False, True)} - {("dp-logreg", False)}
    for planned in A.PLAN:
        quick = planned.quick()
        assert quick.samples <= planned.samples and quick.parameters.get("iterations", 0) <= 10


def test_page_renders_and_the_committed_page_is_current(tmp_path):
    r = A.audit_algorithm("pp-admm", samples=20_000, rng=0)
    records = tmp_path / "records.json"
    records.write_text(json.dumps({"pp-admm (paper)": r.to_dict(), "_meta": {"seconds": 1.0, "quick": True}}))
    done = subprocess.run([sys.executable, str(ROOT / "experiments" / "seed_audits.py"), "--from-json", str(records),
                           "--out", str(tmp_path / "page.md")], capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == (0 if r.as_predicted else 1), done.stderr  # exit 1 when a verdict is not as predicted
    page = (tmp_path / "page.md").read_text(encoding="utf-8")
    assert "| pp-admm | Ding et al. 2020 | paper |" in page and ">>> " in page
    committed = (ROOT / "docs" / "paper-audits.md").read_text(encoding="utf-8")
    rows = [line for line in committed.splitlines() if line.startswith("| ") and "| yes |" in line]
    assert len(rows) == len(A.PLAN)  # one row per planned audit, each as predicted
    assert "**NO**" not in committed and "seed00" not in committed and "audit_scenarios" not in committed
