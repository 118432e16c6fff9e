"""Library adapters: claims read from the libraries, seed bridging detected, OpenDP's float Laplace
passes and diffprivlib's Laplace (a naive float sampler; Haney et al. 2022) is refuted from its outputs
alone. Refutations are one-sided Clopper–Pearson bounds at confidence 0.95 on fresh outputs."""

from __future__ import annotations

import numpy as np
import pytest

from dpkit.audit import audit
from dpkit.audit.libraries import seed_reproducible

pytestmark = pytest.mark.compare


def _case(cases, name):
    return next(c for c in cases if c.name.startswith(name))


def test_seed_reproducible_tells_a_bridged_rng_from_an_ignored_one():
    assert seed_reproducible(lambda db, n, rng: rng.random(n), [0.0])
    own = np.random.default_rng()
    assert not seed_reproducible(lambda db, n, rng: own.random(n), [0.0])


def test_opendp_claim_from_privacy_map_and_float_laplace_passes():
    pytest.importorskip("opendp")
    from dpkit.audit.libraries import opendp_cases

    case = _case(opendp_cases(), "make_laplace (float")
    assert case.claimed_epsilon == 1.0  # map(d_in=1) of scale 1
    assert not seed_reproducible(case.mechanism, case.pairs[0][0])  # OpenDP's own CSPRNG ignores rng
    r = audit(case.mechanism, case.pairs, case.claimed_epsilon, samples=40_000, rng=0, float_events=True,
              answer=case.answer)  # float bits and the lattice relative to the sum: OpenDP snaps, so no leak
    assert not r.violation
    # positive control: the same audit of the same Laplace (true epsilon 1) refutes a claim of 1/4
    assert audit(case.mechanism, case.pairs, 0.25, samples=40_000, rng=0, float_events=True).violation


def test_diffprivlib_laplace_is_refuted_from_outputs_alone():
    pytest.importorskip("diffprivlib")
    from dpkit.audit.libraries import diffprivlib_cases

    case = _case(diffprivlib_cases(), "mechanisms.Laplace")
    assert seed_reproducible(case.mechanism, case.pairs[0][0])  # random_state bridged from rng
    r = audit(case.mechanism, case.pairs, case.claimed_epsilon, case.claimed_delta, samples=100_000, rng=0,
              float_events=True, answer=case.answer)
    assert r.violation and r.witness["event"]["family"] in ("float bits", "float lattice")


def test_pipeline_dp_claim_from_budget_accountant_and_count_passes():
    pytest.importorskip("pipeline_dp")
    from dpkit.audit.libraries import pipeline_dp_cases

    case = _case(pipeline_dp_cases(), "DPEngine COUNT")
    assert (case.claimed_epsilon, case.claimed_delta) == (1.0, 0.0)  # the whole budget went to the one COUNT
    low, high = case.pairs[0]
    assert len(high) == len(low) + 1 and high.max() == 1.0  # add/remove one privacy unit at the extreme record
    assert not seed_reproducible(case.mechanism, low)  # its noise ignores rng
    r = audit(case.mechanism, case.pairs, case.claimed_epsilon, samples=20_000, rng=0)
    assert not r.violation


def test_pipeline_dp_sum_with_a_halved_claim_is_refuted():
    pytest.importorskip("pipeline_dp")
    from dpkit.audit.libraries import pipeline_dp_cases

    case = _case(pipeline_dp_cases(), "DPEngine SUM")
    r = audit(case.mechanism, case.pairs, case.claimed_epsilon / 2, samples=20_000, rng=0)
    assert r.violation


def test_diffprivlib_linear_regression_unnoised_quadratic_term_is_refuted_from_values():
    """The X_i^2 term of diffprivlib's functional-mechanism objective gets sensitivity
    max(|l|, |l|)^2 = 0 for a lower bound l = 0, so the coefficient's noise scales with 1/sum x^2."""
    pytest.importorskip("diffprivlib")
    from dpkit.audit.libraries import diffprivlib_cases

    case = _case(diffprivlib_cases(), "models.LinearRegression")
    assert not case.float_events  # values only: a refutation here is not a float leak
    r = audit(case.mechanism, case.pairs, case.claimed_epsilon, samples=5_000, rng=0, float_bits=False)
    assert r.violation
