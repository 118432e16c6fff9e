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

from dpkit.accounting.base import (
    Accountant,
    AccountingResult,
    ApproximationWarning,
    DPKitWarning,
    PaperRuleWarning,
    UnsupportedEventError,
)
from dpkit.accounting.events import (
    ApproxDPEvent,
    ComposedEvent,
    DiscreteGaussianEvent,
    DiscreteLaplaceEvent,
    ExponentialMechanismEvent,
    GaussianEvent,
    GaussianSparseVectorEvent,
    LaplaceEvent,
    NonPrivateEvent,
    ParallelComposedEvent,
    PoissonSampledEvent,
    RandomAllocationEvent,
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
from dpkit.accounting.neighbouring import NeighbouringRelation

_LAZY = {
    "AnalyticGaussianAccountant": "dpkit.accounting.analytic_gaussian",
    "gaussian_delta": "dpkit.accounting.analytic_gaussian",
    "gaussian_epsilon": "dpkit.accounting.analytic_gaussian",
    "gaussian_sigma": "dpkit.accounting.analytic_gaussian",
    "ApproxDPAccountant": "dpkit.accounting.approx_dp",
    "CalibrationResult": "dpkit.accounting.calibration",
    "accountant_factory": "dpkit.accounting.calibration",
    "calibrate": "dpkit.accounting.calibration",
    "dpsgd_epsilon": "dpkit.accounting.calibration",
    "dpsgd_max_steps": "dpkit.accounting.calibration",
    "dpsgd_sigma": "dpkit.accounting.calibration",
    "ApproxDPFilter": "dpkit.accounting.filters",
    "GaussianDPFilter": "dpkit.accounting.filters",
    "RenyiFilter": "dpkit.accounting.filters",
    "ZCDPFilter": "dpkit.accounting.filters",
    "GDPAccountant": "dpkit.accounting.gdp",
    "BasicOdometer": "dpkit.accounting.odometers",
    "GaussianDPOdometer": "dpkit.accounting.odometers",
    "OdometerGuarantee": "dpkit.accounting.odometers",
    "RenyiOdometer": "dpkit.accounting.odometers",
    "ZCDPOdometer": "dpkit.accounting.odometers",
    "PLDAccountant": "dpkit.accounting.pld",
    "RDPAccountant": "dpkit.accounting.rdp",
    "shuffle_delta": "dpkit.accounting.shuffling",
    "shuffle_epsilon": "dpkit.accounting.shuffling",
    "TightestAccountant": "dpkit.accounting.tightest",
    "ZCDPAccountant": "dpkit.accounting.zcdp",
}
"""Where the accountants, calibration, filters and odometers live: imported on first use (PEP 562),
so that importing an event or one accountant does not import every accountant (and scipy.stats)."""


def __getattr__(name: str) -> object:
    if name not in _LAZY:
        raise AttributeError(f"module 'dpkit.accounting' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(_LAZY[name]), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})


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
    "NonPrivateEvent",
    "ApproxDPEvent",
    "ZCDPEvent",
    "PoissonSampledEvent",
    "RandomAllocationEvent",
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
    "accountant_factory",
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
