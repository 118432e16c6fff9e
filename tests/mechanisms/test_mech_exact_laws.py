"""The float-safe (default) sparse vector and selection mechanisms against their exact output laws, and the
default audit (float bits on) against their claimed ε.

Closed forms: one SVT query is ⊥ with :meth:`SparseVector.below_probability` (Laplace noise) or
Φ((T − q)/√(σ₁² + σ₂²)) (Gaussian noise); of two candidates u₀ − u₁ = d ≥ 0 apart, report-noisy-max picks
u₀ with probability 1 − e^{−d/s}/2 (exponential noise: the difference of two Exp(s) is Lap(s)),
1/(1 + e^{−d/s}) (Gumbel noise: the exponential mechanism) and 1 − (2 + d/s)e^{−d/s}/4 (Laplace noise: the
difference of two Lap(s)). Frequencies are tested with Clopper–Pearson intervals at level 1 − 10⁻⁶, at fixed
seeds. The joint laws of several queries (shared threshold) are tested in ``test_mech_sparse_vector.py``,
which runs on the default samplers.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
from scipy import stats
from statsmodels.stats.proportion import proportion_confint

from dpkit.accounting import RDPAccountant
from dpkit.audit import audit
from dpkit.mechanisms import (
    AboveThreshold,
    ExponentialMechanism,
    GaussianSparseVector,
    LaplaceMechanism,
    NumericSparse,
    PermuteAndFlip,
    ReportNoisyMax,
    SparseVector,
    SparseVectorWithGap,
)
from dpkit.mechanisms.sparse_vector import GatedRelease

RUNS = 200_000


def _inside(count: int, runs: int, probability: float) -> bool:
    low, high = proportion_confint(count, runs, alpha=1e-6, method="beta")
    return low <= probability <= high


@pytest.mark.parametrize("query", [-3.0, 0.0, 1.5, 4.0])
def test_one_svt_query_is_below_with_the_closed_form_probability(query):
    svt = SparseVector(0.3, 0.7, threshold=1.5, cutoff=1, sensitivity=1.0)
    assert svt.float_safe
    first = svt.sample([query], size=RUNS, rng=int(query * 10) + 100)[:, 0]
    assert _inside(int(np.sum(first == 0)), RUNS, svt.below_probability(query))


@pytest.mark.parametrize("query", [-2.0, 0.5, 3.0])
def test_one_gaussian_svt_query_is_below_with_the_normal_cdf(query):
    svt = GaussianSparseVector(threshold_sigma=1.2, query_sigma=0.8, threshold=0.5, max_queries=1)
    first = svt.sample([query], size=RUNS, rng=int(query * 10) + 200)[:, 0]
    assert _inside(int(np.sum(first == 0)), RUNS, stats.norm.cdf((0.5 - query) / math.hypot(1.2, 0.8)))


@pytest.mark.parametrize("steps", [0, 3, 70000])
def test_released_gap_tail_is_the_rounded_real_gap_tail(steps):
    """P(released gap ≥ kΛ) = P(G ≥ (k − ½)Λ) exactly (the gap is ⌊G/Λ + ½⌋Λ), which is P(⊤) of the same SVT at
    threshold T + (k − ½)Λ (closed form); k = 0 is P(⊤)."""
    gap = SparseVectorWithGap(0.4, 0.6, threshold=0.2, cutoff=1)
    unit = gap.lattice
    assert unit == 2.0**-16 * 2  # the smaller scale, b₁ = 2.5, has the lattice 2^(1 − 16)
    released = gap.sample([0.7], size=RUNS, rng=steps + 300)[:, 0]
    assert np.all(np.isnan(released) | (released / unit == np.round(released / unit)))
    count = int(np.sum(released >= steps * unit))  # NaN (⊥) compares false
    shifted = dataclasses.replace(gap, threshold=0.2 + (steps - 0.5) * unit) if steps else gap
    assert _inside(count, RUNS, 1.0 - shifted.below_probability(0.7))


def _two_candidates(noise: str, d: float, s: float) -> float:
    x = d / s
    if noise == "exponential":
        return 1.0 - 0.5 * math.exp(-x) if x >= 0 else 0.5 * math.exp(x)
    if noise == "gumbel":
        return 1.0 / (1.0 + math.exp(-x))
    tail = (2.0 + abs(x)) * math.exp(-abs(x)) / 4.0
    return 1.0 - tail if x >= 0 else tail


@pytest.mark.parametrize("make, noise", [
    (lambda: ReportNoisyMax(1.0, noise="laplace"), "laplace"),
    (lambda: ReportNoisyMax(1.0, noise="exponential"), "exponential"),
    (lambda: ReportNoisyMax(1.0, noise="gumbel"), "gumbel"),
    (lambda: ReportNoisyMax(0.7, sensitivity=2.0, monotonic=True, noise="exponential"), "exponential"),
    (lambda: ExponentialMechanism(1.0), "gumbel"),
    (lambda: PermuteAndFlip(1.0), "exponential"),
])
@pytest.mark.parametrize("d", [0.0, 0.8, -2.5])
def test_two_candidates_are_chosen_with_the_closed_form_probability(make, noise, d):
    mech = make()
    assert mech.float_safe
    chosen = mech.sample([d, 0.0], size=RUNS, rng=int(d * 10) + 400)
    assert _inside(int(np.sum(chosen == 0)), RUNS, _two_candidates(noise, d, mech.scale))


def test_numeric_sparse_answers_are_lattice_laplace():
    ns = NumericSparse(0.5, 0.5, 1.0, threshold=0.0, cutoff=1)
    out = ns.sample([1e3, 1e3], size=40_000, rng=9)
    assert np.all(np.isnan(out[:, 1]))
    step = 2.0**-16  # the lattice of the answer scale cΔ/ε₃ = 1
    assert ns.answer_scale == 1.0 and not np.isnan(out[:, 0]).any()
    assert np.all(out[:, 0] / step == np.round(out[:, 0] / step))
    assert stats.kstest(out[:, 0] - 1e3, "laplace", args=(0.0, ns.answer_scale)).pvalue > 1e-3


SAMPLES = 100_000
THREE = [([0.0, 0.0, 0.0], [1.0, 1.0, 1.0]), ([0.0, 1.0, 0.0], [1.0, 0.0, 1.0])]
SCORES = [([0.0, 0.0, 0.0], [1.0, -1.0, -1.0]), ([0.0, 0.5], [1.0, -0.5])]


def _gaussian_svt_claim() -> tuple[GaussianSparseVector, float, float]:
    svt = GaussianSparseVector(threshold_sigma=2.0, query_sigma=3.0, threshold=0.0, max_queries=3, cutoff=1)
    return svt, RDPAccountant().compose(svt.event).get_epsilon(1e-5).epsilon, 1e-5


@pytest.mark.parametrize("make", [
    lambda: (SparseVector(0.5, 0.5, threshold=0.0, cutoff=1), 1.0, 0.0, THREE),
    lambda: (SparseVector(0.3, 0.7, threshold=0.5, cutoff=2), 1.0, 0.0, THREE),
    lambda: (AboveThreshold(1.0, threshold=0.0), 1.0, 0.0, THREE),
    lambda: (SparseVectorWithGap(0.5, 0.5, threshold=0.0, cutoff=1), 1.0, 0.0, THREE),
    lambda: (NumericSparse(0.3, 0.3, 0.4, threshold=0.0, cutoff=1), 1.0, 0.0, THREE),
    lambda: (*_gaussian_svt_claim(), THREE),
    lambda: (ReportNoisyMax(1.0, noise="laplace"), 1.0, 0.0, SCORES),
    lambda: (ReportNoisyMax(1.0, noise="exponential"), 1.0, 0.0, SCORES),
    lambda: (ReportNoisyMax(1.0, noise="gumbel"), 1.0, 0.0, SCORES),
    lambda: (ExponentialMechanism(1.0), 1.0, 0.0, SCORES),
    lambda: (PermuteAndFlip(1.0), 1.0, 0.0, SCORES),
])
def test_default_audit_does_not_refute_the_default_mechanisms(make):
    mech, epsilon, delta, pairs = make()
    assert mech.floating_point_safe
    result = audit(mech.as_audit_callable(), pairs, epsilon, delta, samples=SAMPLES, rng=0, workers=1)
    assert not result.violation, result.witness


def test_default_audit_does_not_refute_the_gated_release():
    gate = SparseVector(0.5, 0.5, threshold=0.0, cutoff=1)
    mech = GatedRelease(gate, LaplaceMechanism.from_epsilon(1.0))
    pairs = [(np.zeros((2, 2)), np.ones((2, 2)))]
    result = audit(mech.as_audit_callable(), pairs, 2.0, 0.0, samples=30_000, rng=0, workers=1)
    assert not result.violation, result.witness


def test_the_same_audits_have_power():
    """Positive controls at the same sample counts: the continuous numeric sparse vector is refuted from its
    outputs' float bits, and claims well below the true ε are refuted."""
    continuous = NumericSparse(0.3, 0.3, 0.4, threshold=0.0, cutoff=1, float_safe=False)
    result = audit(continuous.as_audit_callable(), THREE, 1.0, 0.0, samples=SAMPLES, rng=0, workers=1)
    assert result.violation and result.witness["event"]["family"].startswith("float")
    low = audit(SparseVector(0.5, 0.5, threshold=0.0, cutoff=1).as_audit_callable(), THREE, 0.1, 0.0,
                samples=SAMPLES, rng=0, workers=1)
    assert low.violation
    low = audit(ReportNoisyMax(1.0, noise="exponential").as_audit_callable(), SCORES, 0.5, 0.0, samples=SAMPLES,
                rng=0, workers=1)
    assert low.violation
