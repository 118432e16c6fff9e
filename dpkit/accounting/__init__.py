"""Privacy accounting: events, accountants and calibration. Imports nothing from the rest of dpkit.

This namespace is the curated public API: events and their combinators, the accountants and
their result, calibration, the analytic Gaussian mechanism, the DP-SGD helpers, privacy
filters and the odometer, neighbouring relations, errors and warnings. Everything else
(conversions such as :func:`dpkit.accounting.zcdp.zcdp_to_epsilon`, composition theorems in
:mod:`dpkit.accounting.approx_dp`, GDP trade-off curves in :mod:`dpkit.accounting.gdp`, the
accountant registry :mod:`dpkit.accounting.registry`, ...) is imported from its module.

Modules: ``events`` (what happened), ``base`` (ledger, results, errors), one module per view
(``zcdp``, ``rdp``, ``pld``, ``gdp``, ``approx_dp``), ``analytic_gaussian``, ``calibration``,
``filters`` and ``odometers`` (adaptive composition) and ``registry`` (accountants by name).
"""

from dpkit.accounting.analytic_gaussian import AnalyticGaussianAccountant, gaussian_delta, gaussian_epsilon, gaussian_sigma
from dpkit.accounting.approx_dp import ApproxDPAccountant
from dpkit.accounting.base import (
    Accountant,
    AccountingResult,
    ApproximationWarning,
    DPKitWarning,
    PaperRuleWarning,
    UnsupportedEventError,
)
from dpkit.accounting.calibration import CalibrationResult, calibrate, dpsgd_epsilon, dpsgd_max_steps, dpsgd_sigma
from dpkit.accounting.events import (
    ApproxDPEvent,
    ComposedEvent,
    DiscreteGaussianEvent,
    DiscreteLaplaceEvent,
    ExponentialMechanismEvent,
    GaussianEvent,
    GaussianSparseVectorEvent,
    LaplaceEvent,
    ParallelComposedEvent,
    PoissonSampledEvent,
    PrivacyEvent,
    PureDPEvent,
    RandomizedResponseEvent,
    RepeatAndSelectEvent,
    SampledWithoutReplacementEvent,
    SelfComposedEvent,
    ShuffledEvent,
    SparseVectorEvent,
    TreeAggregationEvent,
    ZCDPEvent,
    compose,
    repeat,
)
from dpkit.accounting.filters import ApproxDPFilter, GaussianDPFilter, RenyiFilter, ZCDPFilter
from dpkit.accounting.gdp import GDPAccountant
from dpkit.accounting.neighbouring import NeighbouringRelation
from dpkit.accounting.odometers import BasicOdometer, GaussianDPOdometer, OdometerGuarantee, RenyiOdometer, ZCDPOdometer
from dpkit.accounting.pld import PLDAccountant
from dpkit.accounting.rdp import RDPAccountant
from dpkit.accounting.shuffling import shuffle_delta, shuffle_epsilon
from dpkit.accounting.tightest import TightestAccountant
from dpkit.accounting.zcdp import ZCDPAccountant

__all__ = [
    # events and combinators
    "PrivacyEvent",
    "GaussianEvent",
    "LaplaceEvent",
    "DiscreteGaussianEvent",
    "DiscreteLaplaceEvent",
    "RandomizedResponseEvent",
    "ExponentialMechanismEvent",
    "SparseVectorEvent",
    "GaussianSparseVectorEvent",
    "TreeAggregationEvent",
    "RepeatAndSelectEvent",
    "ShuffledEvent",
    "PureDPEvent",
    "ApproxDPEvent",
    "ZCDPEvent",
    "PoissonSampledEvent",
    "SampledWithoutReplacementEvent",
    "ComposedEvent",
    "SelfComposedEvent",
    "ParallelComposedEvent",
    "compose",
    "repeat",
    # neighbouring relations
    "NeighbouringRelation",
    # accountants and their result
    "Accountant",
    "AccountingResult",
    "RDPAccountant",
    "ZCDPAccountant",
    "PLDAccountant",
    "GDPAccountant",
    "AnalyticGaussianAccountant",
    "ApproxDPAccountant",
    "TightestAccountant",
    # calibration and the analytic Gaussian mechanism
    "calibrate",
    "CalibrationResult",
    "gaussian_sigma",
    "gaussian_epsilon",
    "gaussian_delta",
    "shuffle_epsilon",
    "shuffle_delta",
    "dpsgd_sigma",
    "dpsgd_epsilon",
    "dpsgd_max_steps",
    # adaptive composition
    "ApproxDPFilter",
    "GaussianDPFilter",
    "RenyiFilter",
    "ZCDPFilter",
    "BasicOdometer",
    "RenyiOdometer",
    "ZCDPOdometer",
    "GaussianDPOdometer",
    "OdometerGuarantee",
    # errors and warnings
    "UnsupportedEventError",
    "DPKitWarning",
    "ApproximationWarning",
    "PaperRuleWarning",
]
