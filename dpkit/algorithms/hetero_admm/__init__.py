"""Heterogeneous-privacy ADMM: Wang, Ishii, Du, Cheng & Chen, "Privacy-preserving Distributed Machine
Learning via Local Randomization and ADMM Perturbation", IEEE Transactions on Signal Processing 2020
(arXiv:1908.01059).

:mod:`~dpkit.algorithms.hetero_admm.algorithm` (label randomization, then perturbed decentralised
ADMM), :mod:`~dpkit.algorithms.hetero_admm.privacy` (sensitivities, noise schedules, calibration),
:mod:`~dpkit.algorithms.hetero_admm.unbiased_loss` (the paper's unbiased modified loss) and
:mod:`~dpkit.algorithms.hetero_admm.audit_instances` (one server's published iterates as an audit instance).
"""

from dpkit.algorithms.hetero_admm.algorithm import train_hetero_admm

__all__ = ["train_hetero_admm"]
