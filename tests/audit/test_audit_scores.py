"""Score audits: hand-computed values, and soundness/tightness on quantile-grid Gaussian scores."""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest
from scipy import stats

from dpkit.audit import audit_one_run, audit_scores, audit_scores_gdp, gdp_epsilon, one_run_p_value

MU, DELTA, N = 2.0, 1e-5, 5000


def _grid(n):
    return stats.norm.ppf((np.arange(n) + 0.5) / n)  # deterministic quantile-grid N(0, 1) scores


@pytest.fixture(scope="module")
def true_epsilon():
    # ε(δ) of μ-GDP by mpmath root finding at 50 digits (Dong, Roth & Su 2022, Cor. 2.13)
    mpmath.mp.dps = 50
    m = mpmath.mpf(MU)

    def excess(e):
        return mpmath.ncdf(-e / m + m / 2) - mpmath.exp(e) * mpmath.ncdf(-e / m - m / 2) - mpmath.mpf(DELTA)

    return float(mpmath.findroot(excess, 9.0))


def test_gdp_epsilon_matches_mpmath(true_epsilon):
    assert gdp_epsilon(MU, DELTA) == pytest.approx(true_epsilon, rel=1e-9)
    assert gdp_epsilon(MU, DELTA) <= true_epsilon


def test_sound_and_tight_on_gaussian_scores(true_epsilon):
    g = _grid(N)
    cp = audit_scores(g + MU, g, delta=DELTA)
    gdp = audit_scores_gdp(g + MU, g, delta=DELTA)
    split = audit_scores_gdp(g + MU, g, delta=DELTA, strategy="split", rng=0)
    for r in (cp, gdp, split):
        assert 0 < r.epsilon_lower_bound <= true_epsilon  # soundness
    assert gdp.epsilon_lower_bound >= 0.8 * true_epsilon  # tightness: within 20 %
    assert gdp.details["mu_lower_bound"] <= MU and gdp.details["mu_lower_bound"] >= 0.85 * MU
    assert gdp.assumption and "Gaussian" in gdp.assumption and cp.assumption is None


def test_clopper_pearson_hand_computed():
    ins = np.array([3.0, 2.5, 2.0, 1.0, 4.0, 5.0])
    outs = np.array([0.0, -1.0, 0.5, 0.2, 2.2, 1.5])
    conf, delta = 0.9, 0.0
    thresholds = sorted(set(ins) | set(outs))
    a = (1 - conf) / len(thresholds)
    best = -math.inf
    for t in thresholds:  # explicit loop with scipy.stats.beta, independent of the vectorised code
        tp, fp = int(np.sum(ins >= t)), int(np.sum(outs >= t))
        n_in, n_out = len(ins), len(outs)
        tpr_lo = stats.beta.ppf(a / 2, tp, n_in - tp + 1) if tp > 0 else 0.0
        fpr_up = stats.beta.ppf(1 - a / 2, fp + 1, n_out - fp) if fp < n_out else 1.0
        tnr_lo = stats.beta.ppf(a / 2, n_out - fp, fp + 1) if fp < n_out else 0.0
        fnr_up = stats.beta.ppf(1 - a / 2, n_in - tp + 1, tp) if tp > 0 else 1.0
        for lo, up in ((tpr_lo, fpr_up), (tnr_lo, fnr_up)):
            if lo > delta:
                best = max(best, math.log((lo - delta) / up))
    r = audit_scores(ins, outs, delta=delta, confidence=conf)
    assert r.epsilon_lower_bound == pytest.approx(max(best, 0.0), abs=1e-12)
    # a large perfectly separated set gives a positive bound
    big = audit_scores(np.full(400, 10.0), np.zeros(400), confidence=0.95)
    lo = (0.025 / 2) ** (1 / 400)
    assert big.epsilon_lower_bound == pytest.approx(math.log(lo / (1 - lo)), rel=1e-9)


def test_one_run_p_value_hand_computed():
    m, r, v, eps, delta = 50, 10, 9, 1.0, 1e-3
    q = math.exp(eps) / (1 + math.exp(eps))
    pmf = [math.comb(r, j) * q**j * (1 - q) ** (r - j) for j in range(r + 1)]
    beta = sum(pmf[v:])
    alpha_term = max(sum(pmf[v - i : v]) / i for i in range(1, v + 1))
    assert one_run_p_value(m, r, v, eps, 0.0) == pytest.approx(beta, rel=1e-12)
    assert one_run_p_value(m, r, v, eps, delta) == pytest.approx(beta + 2 * m * delta * alpha_term, rel=1e-12)


def test_one_run_bound_inverts_the_p_value():
    rng = np.random.default_rng(0)
    m = 1000
    included = rng.random(m) < 0.5
    scores = np.where(included, MU, 0.0) + _grid(m)[rng.permutation(m)]
    for delta in (0.0, 1e-5):
        r = audit_one_run(scores, included, delta=delta, num_guesses=100)
        v, guesses = r.details["correct"], r.details["guesses"]
        assert v == int(included[np.argsort(-scores, kind="stable")[:100]].sum())
        eps = r.epsilon_lower_bound
        assert one_run_p_value(m, guesses, v, eps, delta) < 0.05 <= one_run_p_value(m, guesses, v, eps + 1e-6, delta)
    # the δ term can only lower the bound; bound is sound for the 2-GDP Gaussian (ε(1e-5) ≈ 10)
    assert audit_one_run(scores, included, delta=1e-5).epsilon_lower_bound <= audit_one_run(scores, included).epsilon_lower_bound


def test_score_input_errors():
    with pytest.raises(ValueError, match="confidence"):
        audit_scores([1.0], [0.0], confidence=1.5)
    with pytest.raises(ValueError, match="strategy"):
        audit_scores([1.0], [0.0], strategy="median")
    with pytest.raises(ValueError, match="in_scores"):
        audit_scores([], [0.0])
    with pytest.raises(ValueError, match="finite"):
        audit_scores([np.nan], [0.0])
    with pytest.raises(ValueError, match="delta"):
        audit_scores_gdp([1.0], [0.0], delta=0.0)
    with pytest.raises(ValueError, match="same shape"):
        audit_one_run([1.0, 2.0], [True])
    with pytest.raises(ValueError, match="v <= r <= m"):
        one_run_p_value(5, 6, 1, 1.0)
