"""The gallery's float-sum case: OpenDP's clipped float sum on Casacuberta-style neighbours (CCS 2022).

One replaced record moves OpenDP's computed sum by far more than the records' range U − L; OpenDP's
map adds the sum's rounding error, so its claim holds, while the same noise at the naive sensitivity
U − L is refuted on the same pair (the positive control)."""

from __future__ import annotations

import numpy as np
import pytest

from dpkit.audit import audit
from dpkit.mechanisms.float_sensitivity import interval_sum_sensitivity

pytestmark = pytest.mark.compare


def test_opendp_float_sum_covers_its_rounding_and_the_naive_sensitivity_does_not():
    pytest.importorskip("opendp")
    import opendp.prelude as dp

    from dpkit.audit.libraries import opendp_float_sum_cases

    (case,) = opendp_float_sum_cases()
    low, high = case.pairs[0]
    assert len(low) == len(high) and np.count_nonzero(low != high) == 1
    assert np.all((2.0**40 <= low) & (low <= 2.0**40 + 1)) and np.all((2.0**40 <= high) & (high <= 2.0**40 + 1))
    moved = abs(case.answer(low) - case.answer(high))
    assert moved >= 4.0  # U − L = 1: the naive replace-one sensitivity is exceeded
    assert moved <= interval_sum_sensitivity(len(low), 2.0**40, 2.0**40 + 1)  # dpkit's bound covers it too
    assert case.claimed_epsilon == pytest.approx(1.0)
    r = audit(case.mechanism, case.pairs, case.claimed_epsilon, case.claimed_delta, samples=case.small_samples,
              rng=0, float_events=case.float_events, float_bits=case.float_events, answer=case.answer)
    assert not r.violation
    naive = dp.m.make_laplace(dp.vector_domain(dp.atom_domain(T=float, nan=False)), dp.l1_distance(T=float), scale=1.0)
    refuted = audit(lambda db, n, rng: np.asarray(naive([case.answer(db)] * n), dtype=float), case.pairs, 1.0,
                    samples=10_000, rng=0, float_events=False, float_bits=False)
    assert refuted.violation
