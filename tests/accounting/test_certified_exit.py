"""No public ε or δ leaves dpkit's accounting without passing through :mod:`dpkit.accounting.certify`.

Two checks that fail when a new return path bypasses the certifying step:

* dynamic: every public query (every registered accountant and the tightest one, over every
  event it supports; the PLD's profile; calibration; filters; odometers; the closed forms) is
  run while :func:`~dpkit.accounting.certify.recording` is active, and each number it returns
  must be one the certifying step produced;
* static: every public function of :mod:`dpkit.accounting` whose return annotation is a float
  or a composition result is either marked certified or listed in :data:`NOT_A_GUARANTEE` with
  the reason it returns something other than an ε or δ.
"""

from __future__ import annotations

import importlib
import inspect
import math
import pkgutil

import numpy as np
import pytest

import dpkit.accounting as accounting
from dpkit.accounting import calibration, filters, odometers
from dpkit.accounting.analytic_gaussian import classic_gaussian_sigma, gaussian_delta, gaussian_epsilon, gaussian_sigma
from dpkit.accounting.approx_dp import (
    advanced_composition,
    basic_composition,
    optimal_homogeneous_composition,
    optimal_homogeneous_delta,
)
from dpkit.accounting.certify import UncertifiableError, certify, certify_array, recording
from dpkit.accounting.events import (
    ExponentialMechanismEvent,
    GaussianEvent,
    LaplaceEvent,
    PoissonSampledEvent,
    PureDPEvent,
    RandomizedResponseEvent,
    SparseVectorEvent,
    compose,
    repeat,
)
from dpkit.accounting.gdp import gdp_mu_for, gdp_mu_to_delta, gdp_mu_to_epsilon
from dpkit.accounting.pld import PLDAccountant
from dpkit.accounting.rdp import rdp_to_delta, rdp_to_epsilon
from dpkit.accounting.registry import ACCOUNTANTS
from dpkit.accounting.shuffling import shuffle_delta, shuffle_epsilon
from dpkit.accounting.tightest import TightestAccountant
from dpkit.accounting.zcdp import rho_for, zcdp_to_delta, zcdp_to_epsilon

EVENTS = [
    GaussianEvent(2.0),
    LaplaceEvent(1.0),
    RandomizedResponseEvent(0.5, 4),
    PureDPEvent(0.3),
    ExponentialMechanismEvent(0.7),
    SparseVectorEvent(0.5, 0.5),
    PoissonSampledEvent(GaussianEvent(1.0), 0.01),
    compose(GaussianEvent(3.0), LaplaceEvent(2.0)),
]

NOT_A_GUARANTEE = {
    # Rényi divergences, zCDP parameters and their building blocks: inputs of a conversion, which certifies
    **{name: "an RDP/zCDP parameter, converted to (ε, δ) by a certified conversion" for name in (
        "rdp_gaussian", "rdp_laplace", "rdp_randomized_response", "rdp_pure_dp", "rdp_zcdp", "rdp_objective_perturbation",
        "rdp_discrete_laplace", "rdp_poisson_subsampled_gaussian", "rdp_poisson_subsampled_laplace",
        "rdp_sampled_without_replacement", "interpolate_integer_curve", "rho_randomized_response", "rho_pure_dp",
        "rho_laplace", "rdp_bounded_range", "rho_bounded_range", "event_rdp", "event_rho", "rdp_shuffled",
        "rdp_laplace_sparse_vector", "rdp_gaussian_sparse_vector", "rho_laplace_sparse_vector",
        "rho_gaussian_sparse_vector", "ding_approx_dp_to_zcdp", "log_a_poisson_subsampled_gaussian",
        "amplified_pure_epsilon", "truncated_negative_binomial_gamma", "check_order",
        "rdp_random_allocation_add", "rdp_random_allocation_remove", "rdp_random_allocation_gaussian",
        "rdp_sampled_without_replacement_gaussian")},
    "gaussian_log_delta": "log δ, the analytic Gaussian's internal scale (gaussian_delta certifies δ)",
    "direct_work": "a count of multiply-adds (the PLD's choice between direct convolution and FFT)",
    "squared_multiplier_upper": "(Δ/σ)² rounded up, an input of μ",
    "gaussian_mu_upper": "μ rounded up, an input of the GDP curve",
    "log_binomial_upper": "a combinatorial constant of the sparse vector's range term",
    "bounded_range_delta": "the PLD's internal δ of one bounded-range use, composed before it is reported",
    "bounded_range_composition_delta": "the PLD's internal bounded-range composition (reported through the accountant)",
    "bounded_range_composition_epsilon": "the PLD's internal bounded-range composition (reported through the accountant)",
    "chernoff_epsilon": "the tilted PLD's internal starting point (reported through the accountant)",
    "tilted_epsilon": "the tilted PLD's internal bound (reported through the accountant)",
    "clone_range": "the shuffling bound's internal support of the clone count (shuffle_delta certifies δ)",
    "check_target_delta": "validation",
    "check_target_epsilon": "validation",
    "round_up": "a float step used inside computations",
    "round_outward": "the certifying step's own rounding",
    "certify": "the certifying step",
    "approx_parameters": "(ε, δ) of one step, a term of the filters' and odometers' sums (their totals are certified)",
    "float_up": "a rational rounded up to the next float, used inside computations",
    "gaussian_mu_squared": "(Δ/σ)² of a Gaussian step, a term of the Gaussian-DP filter's μ²",
    "gdp_delta": "the one μ-GDP curve, rounded outward by its own error bound either way; gdp_mu_to_delta certifies its "
                 "upper end for accounting and the audit takes its lower end",
    "gdp_log_delta": "log δ of the μ-GDP curve, its internal scale",
    "log_delta_with_error": "log δ of the μ-GDP curve and its error bound, an internal scale",
    "tilted_delta": "the tilted PLD's internal δ (reported through the accountant)",
    "epsilon_at": "the RDP conversion at one order, minimised by rdp_to_epsilon (which certifies)",
    "log_delta_at": "log δ of the RDP conversion at one order, minimised by rdp_to_delta (which certifies)",
    "epsilon_lower_bound": "the RDP accountant's internal lower end (reported through the accountant, rounded inward)",
    "minimise_over_orders": "the order search of the RDP conversion (its callers certify)",
    "safe_up": "a relative safety margin applied inside the RDP conversion",
    "pure_epsilon": "ε∞ of an event, an input of the without-replacement RDP bound",
    "tail_cut": "grid indices and the tail masses a PLD truncation moves to the safe side",
}


def _public_functions():
    for info in pkgutil.walk_packages(accounting.__path__, "dpkit.accounting."):
        module = importlib.import_module(info.name)
        for name, function in inspect.getmembers(module, inspect.isfunction):
            if name.startswith("_") or function.__module__ != module.__name__:
                continue
            yield module.__name__, name, function


def test_every_public_function_returning_a_number_is_certified_or_explained():
    unexplained = []
    for module, name, function in _public_functions():
        annotation = str(inspect.signature(function).return_annotation)
        if not any(t in annotation for t in ("float", "CompositionResult")):
            continue
        if not getattr(function, "_dpkit_certified", False) and name not in NOT_A_GUARANTEE:
            unexplained.append(f"{module}.{name}")
    assert not unexplained, f"public functions returning a number without the certifying step: {unexplained}"


def _queries():
    """(label, thunk) for every accountant query over every supported event."""
    for name, cls in sorted(ACCOUNTANTS.items()) + [("tightest", TightestAccountant)]:
        for event in EVENTS:
            if not cls().supports(event):
                continue
            yield f"{name}-{type(event).__name__}-get_epsilon", lambda c=cls, e=event: c().compose(e, 3).get_epsilon(1e-6).epsilon
            yield f"{name}-{type(event).__name__}-get_delta", lambda c=cls, e=event: c().compose(e, 3).get_delta(1.0).delta
    yield "pld-delta_curve", lambda: PLDAccountant().compose(GaussianEvent(2.0), 10).delta_curve(np.linspace(0, 4, 9))
    yield "pld-delta_curve-optimistic", lambda: PLDAccountant().compose(LaplaceEvent(1.0), 2).delta_curve(
        np.array([0.5, 1.0]), pessimistic=False)
    yield "pld-epsilon_at_profile_grid", lambda: PLDAccountant().compose(GaussianEvent(2.0), 10).epsilon_at_profile_grid(1e-5)
    yield "calibrate", lambda: calibration.calibrate_gaussian_sigma(1.0, 1e-5, accountant="rdp").epsilon
    yield "dpsgd_epsilon", lambda: calibration.dpsgd_epsilon(0.01, 1.0, 100, 1e-5).epsilon
    yield "renyi_filter", lambda: filters.RenyiFilter.from_target(3.0, 1e-5, 8.0).epsilon(1e-5)
    yield "zcdp_filter", lambda: filters.ZCDPFilter(0.1).epsilon(1e-5)
    yield "gdp_filter", lambda: filters.GaussianDPFilter(0.5).epsilon(1e-5)
    yield "approx_filter", lambda: filters.ApproxDPFilter(1.0, 1e-5).guarantee
    for cls, args in ((odometers.BasicOdometer, (1e-5,)), (odometers.RenyiOdometer, (1e-5,)),
                      (odometers.ZCDPOdometer, (1e-5,)), (odometers.GaussianDPOdometer, (1e-5,))):
        def run(cls=cls, args=args):
            odometer = cls(*args)
            odometer.spend(GaussianEvent(3.0) if cls is not odometers.BasicOdometer else PureDPEvent(0.1))
            return odometer.guarantee().epsilon
        yield cls.__name__, run
    yield "gaussian_delta", lambda: gaussian_delta(1.0, 1.0)
    yield "gaussian_epsilon", lambda: gaussian_epsilon(1.0, 1e-5)
    yield "gaussian_sigma", lambda: gaussian_sigma(1.0, 1e-5)
    yield "classic_gaussian_sigma", lambda: classic_gaussian_sigma(0.5, 1e-5)
    yield "gdp_mu_to_delta", lambda: gdp_mu_to_delta(1.0, 1.0)
    yield "gdp_mu_to_epsilon", lambda: gdp_mu_to_epsilon(1.0, 1e-5)
    yield "gdp_mu_for", lambda: gdp_mu_for(1.0, 1e-5)
    yield "zcdp_to_delta", lambda: zcdp_to_delta(0.5, 3.0)
    yield "zcdp_to_epsilon", lambda: zcdp_to_epsilon(0.5, 1e-5)
    yield "rho_for", lambda: rho_for(1.0, 1e-5)
    yield "rdp_to_epsilon", lambda: rdp_to_epsilon([2.0, 4.0], [0.5, 1.0], 1e-5)[0]
    yield "rdp_to_delta", lambda: rdp_to_delta([2.0, 4.0], [0.5, 1.0], 3.0)[0]
    yield "basic_composition", lambda: basic_composition(0.1, 1e-6, 10).epsilon
    yield "advanced_composition", lambda: advanced_composition(0.1, 1e-6, 10, 1e-5).delta
    yield "optimal_homogeneous_composition", lambda: optimal_homogeneous_composition(0.1, 0.0, 10, 1e-5).epsilon
    yield "optimal_homogeneous_delta", lambda: optimal_homogeneous_delta(0.1, 0.0, 10, 0.5)
    yield "shuffle_delta", lambda: shuffle_delta(1.0, 2.0, 1000)
    yield "shuffle_epsilon", lambda: shuffle_epsilon(1e-6, 2.0, 1000)


QUERIES = list(_queries())


@pytest.mark.parametrize("label,thunk", QUERIES, ids=[q[0] for q in QUERIES])
def test_every_public_number_leaves_through_the_certifying_step(label, thunk):
    with recording() as seen:
        value = thunk()
    values = value if isinstance(value, tuple) else (value,)
    for v in values:
        if isinstance(v, np.ndarray):
            assert any(s is v for s in seen), f"{label}: the curve did not pass through certify_array"
        else:
            assert any(isinstance(s, float) and s == v for s in seen), f"{label}: {v!r} did not pass through certify"


def test_the_step_rounds_outward_refuses_nan_and_never_returns_a_false_zero():
    x = 0.5708046995596506
    assert certify(x) > x and certify(x, upper=False) < x
    assert certify(0.0) > 0.0 and certify(0.0, kind="delta") > 0.0  # a release is never free
    assert certify(0.0, noop=True) == 0.0
    assert certify(math.inf) == math.inf and certify(3.0, kind="delta") == 1.0
    with pytest.raises(UncertifiableError):
        certify(math.nan)
    with pytest.raises(UncertifiableError):
        certify_array([0.1, math.nan])
    curve = certify_array([0.0, 0.1, 1.0])
    assert curve[0] > 0.0 and curve[1] > 0.1 and curve[2] == 1.0


def test_an_infinite_answer_carries_its_reason():
    result = PLDAccountant().compose(GaussianEvent(1e-200)).get_epsilon(1e-5)
    assert result.epsilon == math.inf and any("inf" in note for note in result.notes)
