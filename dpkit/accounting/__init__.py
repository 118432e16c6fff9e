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
from dpkit.accounting.rdp import RdpAccountant, rdp_to_delta, rdp_to_epsilon
from dpkit.accounting.zcdp import ZCDPAccountant, paper_000_approx_dp_to_zcdp, rho_for, zcdp_to_delta, zcdp_to_epsilon
from dpkit.accounting.approx_dp import (
    ApproxDPAccountant,
    advanced_composition,
    basic_composition,
    optimal_homogeneous_composition,
)
from dpkit.accounting.analytic_gaussian import (
    AnalyticGaussianAccountant,
    classic_gaussian_sigma,
    gaussian_delta,
    gaussian_epsilon,
    gaussian_log_delta,
    gaussian_sigma,
)
from dpkit.accounting.calibration import (
    CalibrationResult,
    calibrate,
    calibrate_gaussian_sigma,
    dpsgd_epsilon,
    dpsgd_max_steps,
    dpsgd_sigma,
)
from dpkit.accounting.pld import PLDAccountant
from dpkit.accounting.gdp import (
    GDPAccountant,
    gaussian_tradeoff,
    gdp_mu_for,
    gdp_mu_to_delta,
    gdp_mu_to_epsilon,
    tradeoff_curve,
)
from dpkit.accounting.filters import ApproxDPFilter, GaussianDPFilter, RenyiFilter, ZCDPFilter
from dpkit.accounting.odometers import BasicOdometer, OdometerGuarantee
