"""Privacy-loss-distribution accounting with certified two-sided bounds.

Layers (after dp_accounting's ``pld`` package): :mod:`.pmf` (discretised loss mass functions),
:mod:`.mechanisms` (per-mechanism losses and their pessimistic/optimistic discretisation),
:mod:`.algebra` (FFT composition and self-composition), :mod:`.tilted` (composition at tiny δ by
exponential tilting), :mod:`.bounded_range` and :mod:`.shuffling` (losses of the exponential
mechanism and of shuffling), :mod:`.accountant` (events → results).
"""

from dpkit.accounting.pld.accountant import PLDAccountant, TargetWidthError
from dpkit.accounting.pld.algebra import compose, compose_all, self_compose
from dpkit.accounting.pld.bounded_range import (
    BoundedRangeLoss,
    bounded_range_composition_delta,
    bounded_range_composition_epsilon,
    bounded_range_delta,
)
from dpkit.accounting.pld.mechanisms import (
    AtomLoss,
    GaussianLoss,
    GridTooLargeError,
    LaplaceLoss,
    PrivacyLoss,
    SubsampledLoss,
    WithoutReplacementLoss,
    approx_dp_loss,
    discrete_gaussian_loss,
    discrete_laplace_loss,
    discretise,
    randomized_response_loss,
)
from dpkit.accounting.pld.pmf import LossPmf, truncate
from dpkit.accounting.pld.tilted import tilted_epsilon

__all__ = [
    "PLDAccountant",
    "LossPmf",
    "PrivacyLoss",
    "GaussianLoss",
    "LaplaceLoss",
    "AtomLoss",
    "SubsampledLoss",
    "WithoutReplacementLoss",
    "BoundedRangeLoss",
    "bounded_range_delta",
    "bounded_range_composition_delta",
    "bounded_range_composition_epsilon",
    "GridTooLargeError",
    "TargetWidthError",
    "randomized_response_loss",
    "approx_dp_loss",
    "discrete_laplace_loss",
    "discrete_gaussian_loss",
    "discretise",
    "compose",
    "compose_all",
    "self_compose",
    "truncate",
    "tilted_epsilon",
]
