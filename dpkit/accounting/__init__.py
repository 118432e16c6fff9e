"""Privacy accounting: events, accountants and calibration. Imports nothing from the rest of dpkit.

Modules: ``events`` (what happened), ``base`` (ledger, results, errors), one module per view
(``zcdp``, ``rdp``, ``pld``, ``gdp``, ``approx_dp``), ``analytic_gaussian``, ``calibration``,
``filters`` (adaptive composition) and ``registry`` (accountants by name).
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
    LaplaceEvent,
    ParallelComposedEvent,
    PoissonSampledEvent,
    PrivacyEvent,
    PureDPEvent,
    RandomizedResponseEvent,
    SampledWithoutReplacementEvent,
    SelfComposedEvent,
    SparseVectorEvent,
    ZCDPEvent,
    compose,
    event_from_dict,
    repeat,
)
from dpkit.accounting.neighbouring import ADD_REMOVE, REPLACE_ONE, NeighbouringRelation
from dpkit.accounting.registry import make_accountant
