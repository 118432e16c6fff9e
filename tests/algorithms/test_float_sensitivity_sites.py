"""Every released sum or mean of the algorithms has a sensitivity that covers its computation in doubles
(dpkit.mechanisms.float_sensitivity): the computed answers of neighbouring inputs, adversarial ones
included, never move further than the sensitivity the mechanism records."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from dpkit.algorithms.a_ddp.upload import UserUpload, clipped_gradients
from dpkit.algorithms.baselines import dp_logreg as L
from dpkit.algorithms.hetero_admm.algorithm import label_correction
from dpkit.algorithms.hetero_admm.privacy import correction_sensitivity
from dpkit.algorithms.pp_admm.ipp_admm import quality_scores, quality_sensitivity
from dpkit.algorithms.substrate import prior_fallback
from dpkit.algorithms.substrate.budget import Budget
from dpkit.algorithms.substrate.data import Dataset
from dpkit.algorithms.substrate.private_ranges import estimate_ranges
from dpkit.mechanisms import float_sensitivity as F


def _norm2(v: np.ndarray) -> Fraction:
    return sum((Fraction(float(c)) ** 2 for c in np.ravel(v)), Fraction(0))


def test_dp_logreg_gradient_sensitivity_covers_the_computed_mean_gradient():
    for n in (1, 10, 1000, 36000, 10**7):
        sens = L.gradient_sensitivity(n)
        assert sens > 2.0 / n
        assert Fraction(sens) >= Fraction(F.mean_sensitivity(n, F.checked_norm_bound(1.0, F.DIMENSION_LIMIT),
                                                             products=True, dimension=F.DIMENSION_LIMIT))
        assert sens / (2.0 / n) - 1 < 2e-7 + n * n * 2.0**-53  # negligible: the noise grows as much
    # neighbours at a point where every per-example gradient is −y·x exactly (the audit scenario's trick)
    rng = np.random.default_rng(1)
    n, d = 3000, 5
    X = rng.normal(size=(n, d)) * rng.choice([1.0, 1e-12], size=(n, 1))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    X = X[np.sum(X**2, axis=1) <= 1.0]
    n = len(X)
    y = np.where(X[:, 0] >= 0, 1.0, -1.0)
    theta = -1e4 * np.sign(X[:, 0].mean()) * np.eye(d)[0]
    base = L.gradient_query(theta, X, y)
    sens = L.gradient_sensitivity(n)
    for k in range(0, n, 37):
        Xp = X.copy()
        Xp[k] = -X[k]
        assert float(np.linalg.norm(L.gradient_query(theta, Xp, y) - base)) <= sens


def test_dp_logreg_refuses_rows_wider_than_its_sensitivity_covers(monkeypatch):
    monkeypatch.setattr(L, "DIMENSION_LIMIT", 3)
    data = Dataset(np.full((20, 4), 0.5), np.r_[np.ones(10), -np.ones(10)])
    with pytest.raises(ValueError, match="at most 3 columns"):
        L.train_dp_logreg(data, budget=Budget(1.0, 1e-5), iterations=1)


def test_a_ddp_upload_sensitivity_covers_gradients_clipped_in_doubles():
    C, d = 0.5, 20
    upload = UserUpload(sigma=1.0, clip=C, records=1)
    sens = Fraction(upload.noise.sensitivity)
    assert sens > 2 * Fraction(C) and upload.event.event.sensitivity == upload.noise.sensitivity
    rng = np.random.default_rng(0)
    worst = Fraction(0)
    for _ in range(2000):
        x = rng.normal(size=d)
        x /= np.linalg.norm(x)
        for scale in (1.0, 4.0):  # at w = 0 the gradient is −x/2: not clipped (norm C), and clipped from 2
            worst = max(worst, _norm2(clipped_gradients(np.zeros(d), scale * x, 1.0, C)))
            batch = clipped_gradients(np.zeros(d), np.stack([scale * x, -scale * x]), np.ones(2), C)
            worst = max(worst, _norm2(batch[0]), _norm2(batch[1]))
            # two opposite clipped gradients: the replace-one change, as computed
            assert _norm2(batch[0] - batch[1]) <= sens**2
    assert worst > Fraction(C) ** 2  # the computed clip leaves norms above C: 2C alone is not enough ...
    assert 4 * worst <= sens**2  # ... 2C' is
    with pytest.raises(ValueError, match="coordinates"):
        import dpkit.algorithms.a_ddp.upload as upload_module
        original = upload_module.DIMENSION_LIMIT
        upload_module.DIMENSION_LIMIT = 1
        try:
            upload.sample((np.zeros((1, 2)), np.ones(1), np.zeros(2)), rng=0)
        finally:
            upload_module.DIMENSION_LIMIT = original


def _binade_parts(k: int = 14, extra: int = 2**13) -> tuple[Dataset, Dataset]:
    """Rows e₁ (label +1) bring the sequential column sum to 2^k + 2, or 2^k when the first record's label
    is −1; then rows t·e₁ with label −1, t = 2^(k−53): half an ulp above 2^k (rounded away), exact below."""
    t = 2.0 ** (k - 53)
    m = 2**k + 2 + extra
    X = np.zeros((m, 2))
    X[: 2**k + 2, 0] = 1.0
    X[2**k + 2:, 0] = t
    y = np.r_[np.ones(2**k + 2), -np.ones(extra)]
    y_prime = y.copy()
    y_prime[0] = -1.0
    return Dataset(X, y), Dataset(X, y_prime)


def test_hetero_label_correction_moves_further_than_2K_over_m_and_stays_within_its_sensitivity():
    D, D_prime = _binade_parts()
    eps = math.log(2.0)  # K = 1
    moved = float(np.linalg.norm(label_correction([D], eps)[0] - label_correction([D_prime], eps)[0]))
    assert moved > 2.0 / D.n * (1 + 1e-9)  # the real sensitivity 2K/m is exceeded (sequential column sums)
    assert moved <= correction_sensitivity(eps, D.n)
    for label_epsilon in (0.1, 1.0, 3.0):
        K = 1.0 / math.expm1(label_epsilon)
        assert Fraction(correction_sensitivity(label_epsilon, 500)) >= 2 * Fraction(K) / 500


def test_ipp_quality_sensitivity_covers_the_computed_scores_of_neighbours():
    rng = np.random.default_rng(2)
    m, d, clip = 500, 3, 2.0
    X = rng.normal(size=(m, d)) * rng.choice([1.0, 1e-9], size=(m, 1))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    y = rng.choice([-1.0, 1.0], m)
    previous, candidate = np.array([[40.0, -3.0, 1.0]]), np.array([[-2.0, 5.0, 0.5]])
    base = quality_scores([Dataset(X, y)], previous, candidate, clip)[0]
    sens = quality_sensitivity(m, clip, 2.0**-1000)  # the candidate is fixed: only the record changes
    assert sens >= 2 * clip / m
    for k in range(0, m, 7):
        Xp, yp = X.copy(), y.copy()
        Xp[k], yp[k] = -X[k], -y[k]
        assert abs(quality_scores([Dataset(Xp, yp)], previous, candidate, clip)[0] - base) <= sens


def test_private_ranges_sensitivity_is_never_below_the_square_root():
    assert Fraction(math.sqrt(6.0)) ** 2 < 6  # math.sqrt rounds to nearest: √(2d) at d = 3 would be too small
    X = np.random.default_rng(0).normal(size=(200, 3))
    for relation, factor in (("replace-one", 2), ("add-remove", 1)):
        ranges = estimate_ranges(X, Budget(1.0, 1e-5, relation), rng=0)
        ((event, _),) = ranges.budget.spent_before.entries(0)
        assert Fraction(event.sensitivity) ** 2 >= factor * 3


def test_prior_fallback_counts_are_exact_and_its_sqrt2_is_rounded_up():
    # the counts are integers (no float error); the double √2 it uses is above the real √2
    assert Fraction(prior_fallback.SENSITIVITY) ** 2 >= 2
