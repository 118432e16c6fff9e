"""Vectorised, seeded privacy mechanisms; each exposes the privacy event it spends.

See :mod:`dpkit.mechanisms.base` for the shared contract (``event``, ``sample(value, size,
rng)``, ``as_audit_callable()``) and ``docs/mechanisms.md`` for which mechanism to pick.

Modules: ``laplace``, ``gaussian``, ``discrete`` (exact CKS 2020 samplers), ``snapping``
(Mironov 2012), ``float_safe`` (the default, exactly rounded Laplace and Gaussian noise),
``exact_comparison`` (the sparse vector's and noisy max's decisions on the exact reals),
``float_sensitivity`` (sensitivities that cover a computed sum's rounding),
``randomized_response``, ``selection`` (noisy max, exponential mechanism,
permute-and-flip), ``sparse_vector`` (SVT family), ``erm`` (objective/output perturbation,
Ding et al. 2020's σ_i1 and σ_i2), ``dual_noise`` (ℓ2-Laplace noise, Zhang & Zhu 2016's DVP calibration).
"""

from dpkit.mechanisms.base import Mechanism
from dpkit.mechanisms.discrete import (
    DiscreteGaussianMechanism,
    DiscreteLaplaceMechanism,
    bernoulli_exp,
    sample_discrete_gaussian,
    sample_discrete_laplace,
)
from dpkit.mechanisms.dual_noise import (
    DVPCalibration,
    GaussianObjectiveNoise,
    L2LaplaceMechanism,
    L2LaplaceObjectiveNoise,
    dvp_calibration,
    sample_l2_laplace,
)
from dpkit.mechanisms.erm import (
    ApproximateMinimizerNoise,
    GaussianObjectivePerturbation,
    ObjectivePerturbation,
    ding_min_regularization,
    ding_objective_sigma,
    output_perturbation,
    output_perturbation_sensitivity,
    uniform_objective_noise,
)
from dpkit.mechanisms.ledger import PrivacyLedger
from dpkit.mechanisms.gaussian import GaussianMechanism, zcdp_sigma
from dpkit.mechanisms.laplace import LaplaceMechanism, laplace_scale
from dpkit.mechanisms.randomized_response import (
    BinaryRandomizedResponse,
    RandomizedResponse,
    binary_rr_epsilon,
    flip_probability,
    grr_epsilon,
    modified_logistic_loss,
    modified_logistic_loss_derivative,
    unbiased_label_loss,
)
from dpkit.mechanisms.selection import ExponentialMechanism, PermuteAndFlip, ReportNoisyMax
from dpkit.mechanisms.snapping import SnappingMechanism
from dpkit.mechanisms.sparse_vector import (
    AboveThreshold,
    GaussianSparseVector,
    NumericSparse,
    SparseVector,
    SparseVectorWithGap,
    svt_budget_split,
)

__all__ = [
    "AboveThreshold",
    "ApproximateMinimizerNoise",
    "BinaryRandomizedResponse",
    "DVPCalibration",
    "DiscreteGaussianMechanism",
    "DiscreteLaplaceMechanism",
    "ExponentialMechanism",
    "GaussianMechanism",
    "GaussianSparseVector",
    "GaussianObjectiveNoise",
    "GaussianObjectivePerturbation",
    "L2LaplaceMechanism",
    "L2LaplaceObjectiveNoise",
    "LaplaceMechanism",
    "Mechanism",
    "NumericSparse",
    "ObjectivePerturbation",
    "PermuteAndFlip",
    "PrivacyLedger",
    "RandomizedResponse",
    "ReportNoisyMax",
    "SnappingMechanism",
    "SparseVector",
    "SparseVectorWithGap",
    "bernoulli_exp",
    "ding_min_regularization",
    "ding_objective_sigma",
    "binary_rr_epsilon",
    "dvp_calibration",
    "flip_probability",
    "grr_epsilon",
    "laplace_scale",
    "modified_logistic_loss",
    "modified_logistic_loss_derivative",
    "output_perturbation",
    "output_perturbation_sensitivity",
    "sample_discrete_gaussian",
    "sample_discrete_laplace",
    "sample_l2_laplace",
    "svt_budget_split",
    "uniform_objective_noise",
    "unbiased_label_loss",
    "zcdp_sigma",
]
