"""Privacy-loss-distribution accounting with certified two-sided bounds.

Layers (after dp_accounting's ``pld`` package): :mod:`.pmf` (discretised loss mass functions),
:mod:`.mechanisms` (per-mechanism losses and their pessimistic/optimistic discretisation),
:mod:`.algebra` (FFT composition and self-composition), :mod:`.accountant` (events → results).
"""

from dpkit.accounting.pld.accountant import PLDAccountant
from dpkit.accounting.pld.algebra import compose, compose_all, self_compose
from dpkit.accounting.pld.mechanisms import (
    AtomLoss,
    GaussianLoss,
    GridTooLargeError,
    LaplaceLoss,
    PrivacyLoss,
    SubsampledLoss,
    approx_dp_loss,
    discrete_gaussian_loss,
    discrete_laplace_loss,
    discretise,
    randomized_response_loss,
)
from dpkit.accounting.pld.pmf import LossPmf, truncate

__all__ = [
    "PLDAccountant",
    "LossPmf",
    "PrivacyLoss",
    "GaussianLoss",
    "LaplaceLoss",
    "AtomLoss",
    "SubsampledLoss",
    "GridTooLargeError",
    "randomized_response_loss",
    "approx_dp_loss",
    "discrete_laplace_loss",
    "discrete_gaussian_loss",
    "discretise",
    "compose",
    "compose_all",
    "self_compose",
    "truncate",
]
