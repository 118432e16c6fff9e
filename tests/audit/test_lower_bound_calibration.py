"""The certified lower bound is calibrated: over many seeded audits of mechanisms whose exact ε is
known, the share of bounds above the truth is at most 1 − confidence.

Each mechanism below is audited on its worst-case pair with its exact ε as the claim, ``AUDITS``
times on seeds 0, 1, …, with the default event search (``float_bits=False``: these are the
mechanisms in exact arithmetic, whose ε is the one stated; as executed on doubles the continuous
samplers leak, which other tests cover). A bound is a 95 % statement, so each audit exceeds the
truth with probability at most 0.05, and the count of exceedances is at most Binomial(AUDITS,
0.05) in distribution. The test fails when the one-sided 99.5 % Clopper–Pearson lower limit of
the exceedance rate is above 0.05, i.e. when the data show miscalibration beyond chance: with
250 audits that takes 23 or more exceedances (9.2 %), while a calibrated auditor gives 23 or more
with probability below 0.5 %.
"""

from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np
import pytest
from scipy import special

from dpkit.accounting.analytic_gaussian import gaussian_epsilon
from dpkit.audit import audit

AUDITS = 250  # per mechanism; 1,000 in all
SAMPLES = 4_000  # outputs per audit (both inputs, selection and confirmation)
CONFIDENCE = 0.95
TEST_LEVEL = 0.005  # the chance that this test fails on a calibrated auditor
GAUSSIAN_DELTA = 1e-3
SUBSAMPLING_RATE = 0.5


def laplace(database: Any, n: int, rng: np.random.Generator) -> np.ndarray:
    return float(database[0]) + rng.laplace(0.0, 1.0, n)


def gaussian(database: Any, n: int, rng: np.random.Generator) -> np.ndarray:
    return float(database[0]) + rng.normal(0.0, 1.0, n)


def randomized_response(database: Any, n: int, rng: np.random.Generator) -> np.ndarray:
    flip = rng.random(n) < 1.0 / (1.0 + math.e)  # keep the bit with probability e/(1 + e): ε = 1
    return np.where(flip, 1.0 - float(database[0]), float(database[0]))


def subsampled_laplace(database: Any, n: int, rng: np.random.Generator) -> np.ndarray:
    kept = rng.random(n) < SUBSAMPLING_RATE  # Poisson sampling of the one record that differs
    return np.where(kept, float(database[0]), 0.0) + rng.laplace(0.0, 1.0, n)


CASES: dict[str, tuple[Callable[..., np.ndarray], float, float]] = {
    # name: (mechanism, exact ε on the pair (0) vs (1), δ)
    "laplace": (laplace, 1.0, 0.0),
    # the analytic Gaussian's ε (Balle & Wang 2018, Thm. 8) is an upper bound of the exact ε, so the
    # count of bounds above it is at most the count above the truth
    "gaussian": (gaussian, gaussian_epsilon(1.0, GAUSSIAN_DELTA), GAUSSIAN_DELTA),
    "randomized response": (randomized_response, 1.0, 0.0),
    # amplification by Poisson subsampling (Balle, Barthe & Gaboardi, NeurIPS 2018): ln(1 + q(e^{1/b} − 1)),
    # attained on this pair as the output grows (the likelihood ratio tends to 1 − q + q e^{1/b})
    "subsampled laplace": (subsampled_laplace, math.log1p(SUBSAMPLING_RATE * math.expm1(1.0)), 0.0),
}


def cp_lower_rate(count: int, trials: int, level: float) -> float:
    """One-sided Clopper–Pearson lower limit of a binomial rate at ``1 − level``."""
    return 0.0 if count == 0 else float(special.betaincinv(count, trials - count + 1, level))


def exceedances(name: str) -> int:
    mechanism, truth, delta = CASES[name]
    pairs = [(np.zeros(1), np.ones(1))]
    bounds = [audit(mechanism, pairs, truth, delta, confidence=CONFIDENCE, samples=SAMPLES, rng=seed,
                    float_bits=False, workers=1).epsilon_lower_bound for seed in range(AUDITS)]
    return sum(bound > truth for bound in bounds)


def test_the_failure_threshold_matches_the_stated_level():
    threshold = next(k for k in range(AUDITS + 1) if cp_lower_rate(k, AUDITS, TEST_LEVEL) > 1 - CONFIDENCE)
    assert threshold == 23
    assert special.bdtrc(threshold - 1, AUDITS, 1 - CONFIDENCE) < TEST_LEVEL  # P[count ≥ 23] at rate 0.05


@pytest.mark.parametrize("name", sorted(CASES))
def test_lower_bounds_exceed_the_truth_at_most_at_the_stated_rate(name):
    count = exceedances(name)
    assert cp_lower_rate(count, AUDITS, TEST_LEVEL) <= 1 - CONFIDENCE, (
        f"{name}: {count} of {AUDITS} lower bounds above the exact ε")
